"""Default wording (zh/en) for the reader's notes and contradictions (``bot.understand.ReadNote``,
``bot.understand.Contradiction``), so an answer can say what was read and ask one question.

Wording is data: one template per code and language, filled from the note's values. Every figure
in a template is a value the person wrote (or the name's size), never one computed here, so the
answer's traceability check holds. The answer layer decides where these go.
"""

from __future__ import annotations

from bot.understand import Contradiction, ReadNote

_NOTES: dict[str, tuple[str, str]] = {
    "size_from_name": ("模型不在目录里：参数量 {params_b:g}B 是从名字 `{name}` 读出的。",
                       "The model is not in the catalog: {params_b:g}B was read from the name `{name}`."),
    "moe_from_name": ("`{name}` 按名字里的 `{span}` 算作 {experts} 个专家的 MoE：共享注意力和嵌入，总参数约 {params_b:g}B。",
                      "`{name}` is read from `{span}` as a mixture of {experts} experts sharing attention and "
                      "embeddings: about {params_b:g}B parameters in total."),
    "active_from_name": ("`{name}`：名字写的是总参数 {params_b:g}B、每个 token 激活 {active_b:g}B；显存按总参数算。",
                         "`{name}`: the name says {params_b:g}B in total, {active_b:g}B active per token; memory "
                         "counts all {params_b:g}B."),
    "model_unsized": ("`{name}` 不在目录里，名字里也没有参数量：它有多少参数？",
                      "`{name}` is not in the catalog and its name carries no size: how many parameters does it have?"),
    "count_implied": ("卡数按 `{span}` 读作 {count}。", "The GPU count is read as {count} from `{span}`."),
    "count_superseded": ("卡数按后来写的 `{later_span}`（{later}）计算；前面的 `{earlier_span}`（{earlier}）是之前的配置。",
                         "The GPU count is the later one, `{later_span}` ({later}); the earlier `{earlier_span}` ({earlier}) "
                         "is taken as the previous setup."),
    "count_baseline": ("`{span}` 是拿来比较的单卡，不是你这次用的卡数。",
                       "`{span}` is the single GPU the run is compared with, not the GPU count of your run."),
    "count_rest_plus_one": ("卡数按 `{span}` 加上单独提到的那张读作 {count}。",
                            "The GPU count is read as {count}: `{span}` plus the one named on its own."),
    "count_summed": ("`{span}` 是两种卡，卡数按合计 {count} 张计算。",
                     "`{span}` names two kinds of card: the GPU count is their sum, {count}."),
    "machines_tried": ("`{span}` 是在几台机器上分别试过，不是多机训练。",
                       "`{span}` is the run tried on several machines in turn, not a multi-node run."),
    "count_subset": ("卡数按这次用的 {used} 张计算（`{span}`），不是机器上全部的 {total} 张。",
                     "The GPU count is the {used} the run uses (`{span}`), not all {total} on the machine."),
    "count_fallback": ("`{span}` 是不行时的备选，不是现在的卡数：按前面写的配置计算。",
                       "`{span}` is the fallback you are weighing, not your current GPU count: computed for the setup "
                       "written first."),
    "count_per_process": ("`{span}` 说的是每个进程一张卡，不是一共几张卡。",
                          "`{span}` says each process has one GPU, not how many GPUs there are."),
    "count_from_device_list": ("卡数 {count} 是按设备编号 `{span}` 数出来的；不是的话请告诉我用几张卡。",
                               "The GPU count {count} is counted from the device list `{span}`; if the run uses "
                               "another number of GPUs, say how many."),
    "used_not_capacity": ("`{span}` 是运行时用掉的显存，不是卡的容量。",
                          "`{span}` is what the run used, not the card's memory."),
    "aside_hardware": ("`{span}` 是另外的硬件，没有算进这次训练。",
                       "`{span}` is other hardware; it is not counted as this run's."),
    "others_setup": ("`{span}` 说的是别人的配置，没有当成你的。", "`{span}` describes someone else's setup, not yours."),
    "alternative_weighed": ("`{span}` 是在考虑的备选，不是现在的配置。",
                            "`{span}` is an alternative you are weighing, not the current setup."),
    "method_asked": ("`{span}` 是在问选哪种微调方式，下面两种都会说到。",
                     "`{span}` asks which fine-tuning method to use; the answer covers both."),
    "failed_run_setup": ("按失败的那次运行（{failed}）计算；能跑的那次（{worked}）不是要解决的。",
                         "Computed for the run that failed ({failed}); the one that works ({worked}) is not the problem."),
    "failed_run_count": ("按失败的那次运行（`{failed_span}`）计算；能跑的那次（`{worked_span}`）只当作观察到的情况。",
                         "Computed for the run that fails (`{failed_span}`); the one that works (`{worked_span}`) is "
                         "taken as an observation, not the setup."),
    "memory_alternatives": ("问题里列了几种显存（{sizes} GB）：表格按最小的那种计算（它放得下的大卡也放得下）。",
                            "The question lists several card sizes ({sizes} GB): the table is for the smallest (what "
                            "fits it fits the larger ones too)."),
    "inference_in_training": ("`{span}` 是训练过程中的推理（评估或训练前的试跑），按训练问题回答。",
                              "`{span}` is inference inside the training run (evaluation, or a check before "
                              "training), so this is answered as a training question."),
    "one_process": ("`{span}`：每个节点只有一个进程，它看到节点上所有的卡，不是每卡一个 DDP/FSDP 进程。",
                    "`{span}`: one process per node sees all of its GPUs; that is not one DDP/FSDP rank per GPU."),
    "new_setup": ("这是新的配置：沿用了之前的 {carried}；之前的 {dropped} 没有沿用。",
                  "This is a new setup: kept from earlier: {carried}; not kept: {dropped}."),
    "condensed": ("消息很长（{chars} 个字符）：重复的日志行和堆栈帧略去后读了全文的要点。",
                  "Your message was long ({chars} characters): repeated log lines and stack frames were skipped "
                  "and the rest was read."),
    "inference_quoted": ("`{span}` 说的是推理，你问的是训练：按训练问题回答。",
                         "`{span}` is about inference; the question asks about training, so it is answered as a "
                         "training question."),
    "family_sized_as_written": ("`{name}` 没写具体尺寸：按写明的 {params_b:g}B 计算。",
                                "`{name}` is named without its size: computed for the {params_b:g}B written."),
    "card_alternatives": ("`{span}`：列了几种卡，表格按第一种（{first}）计算，下面每种各算一行。",
                          "`{span}` lists several cards: the table is for the first ({first}), with a line for each below."),
    "count_alternatives": ("`{span}`：列了几种卡数，表格按最少的计算（它放得下，更多卡也放得下），下面每种各算一行。",
                           "`{span}` lists several GPU counts: the table is for the fewest (what fits it fits more GPUs "
                           "too), with a line for each below."),
    "card_typo": ("`{span}` 不是目录里的卡名，按 {name} 读（只差一个字符）；不是的话请告诉我型号。",
                  "`{span}` is not a card name the catalog knows; it was read as the {name} (one character "
                  "off). If that is wrong, say which card."),
    "card_typo_options": ("`{span}` 不是目录里的卡名，可能是 {options}：是哪一种？",
                          "`{span}` is not a card name the catalog knows; it could be {options}: which one is it?"),
}

_CONTRADICTION: dict[str, tuple[str, str]] = {
    "params_b": ("问题里同时写了 {a} 和 {b}：模型是哪一个？", "The question says both {a} and {b}: which model is it?"),
    "gpu_memory_gb": ("问题里同时写了 {a} 和 {b}：每张卡的显存是多少？",
                      "The question says both {a} and {b}: how much memory does each GPU have?"),
    "finetune": ("问题里同时写了 {a} 和 {b}：是哪种微调？", "The question says both {a} and {b}: which kind of fine-tuning is it?"),
    "gpu_count": ("问题里同时写了 {a} 和 {b}：用几张卡？", "The question says both {a} and {b}: how many GPUs does the run use?"),
}


# The one question a contradiction computed on one reading ends with (note ``contradiction_computed``)
_WHICH: dict[str, tuple[str, str]] = {
    "params_b": ("模型是哪一个？", "which model is it?"),
    "gpu_memory_gb": ("每张卡实际有多少显存？", "how much memory does each GPU really have?"),
    "finetune": ("是哪种微调？", "which kind of fine-tuning is it?"),
    "gpu_count": ("用几张卡？", "how many GPUs does the run use?"),
}
_COMPUTED = ("问题里同时写了 `{a}` 和 `{b}`：下面按 {value} 计算；{which}",
             "The question says both `{a}` and `{b}`: computed for {value}; {which}")


def note_text(note: ReadNote, lang: str) -> str:
    """The note in ``lang`` ("zh" or "en"); the code itself when it has no wording."""
    if note.code == "contradiction_computed":
        zh, en = _WHICH.get(str(note.values.get("field")), ("是哪一个？", "which one is it?"))
        values = {**note.values, "which": zh if lang == "zh" else en}
        return _COMPUTED[0 if lang == "zh" else 1].format(**{k: ("-" if v in ("", None) else v) for k, v in values.items()})
    zh, en = _NOTES.get(note.code, (note.code, note.code))
    values = {k: (", ".join(str(x) for x in v) if isinstance(v, list | tuple) else v) for k, v in note.values.items()}
    values = {k: (v if v not in ("", None) else "-") for k, v in values.items()}
    try:
        return (zh if lang == "zh" else en).format(**values)
    except (KeyError, ValueError):
        return note.code


def contradiction_question(c: Contradiction, lang: str) -> str:
    """One question that asks which of two readings holds, quoting what the person wrote."""
    zh, en = _CONTRADICTION.get(c.field, ("问题里同时写了 {a} 和 {b}：是哪一个？", "The question says both {a} and {b}: which is it?"))
    a, b = (c.spans + ("", ""))[:2] if c.spans else (c.values + ("", ""))[:2]
    return (zh if lang == "zh" else en).format(a=f"`{str(a).strip()}`", b=f"`{str(b).strip()}`")
