"""Answer -> markdown (zh/en): the layout of ``Answer.sections``, and the figure bindings.

``render_markdown(answer)`` reads only ``answer.sections`` (and the citations' numbers for
markers): it never computes a figure. While laying the sections out it emits ``Answer.figures``:
every figure printed in the text (outside code), in order, with the key it renders
(``Sections.figure_keys`` for prose, ``TableRow.keys`` for table cells, ``setup.<field>`` for
the setup line). ``evals/metrics.py`` checks value and key with the same tokenizer
(``bot.figures.numbers_in_text``).

Also here: ``fmt`` (how every figure is printed), the question/notice/problem wording, and
``untraceable_numbers`` (the LLM guard's check).
"""

from __future__ import annotations

import re

from bot.answer import Answer, Citation, FigureRef, TableRow
from bot.figures import _MARKER_GROUP, _THOUSANDS, numbers_in_text, strip_code_blocks
from bot.strategies import finetune_label, optimizer_label

# --------------------------------------------------------------------------------------------
# Numbers
# --------------------------------------------------------------------------------------------


def fmt(value) -> str:
    """A number as the answer prints it: integers as is, floats with at most two decimals."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return str(value)
    text = f"{float(value):.2f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def prose(text: str) -> str:
    """``text`` without fenced code blocks and citation markers (what the tracer reads)."""
    return _MARKER_GROUP.sub(" ", strip_code_blocks(text))


def numbers_in(text: str) -> list[float]:
    return [m.value for m in numbers_in_text(text)]


def _sources(numbers: dict, setup: dict, quotes: list[str]) -> list[float]:
    values: list[float] = []
    for value in list(numbers.values()) + list(setup.values()):
        if isinstance(value, bool) or value is None:
            continue
        if isinstance(value, int | float):
            values.append(abs(float(value)))
        elif isinstance(value, str):
            values.extend(float(x) for x in re.findall(r"\d+(?:\.\d+)?", _THOUSANDS.sub("", value)))
    for quote in quotes:  # "10,000x" in a quote is 10000, as the tokenizer reads it in the text
        values.extend(float(x) for x in re.findall(r"\d+(?:\.\d+)?", _THOUSANDS.sub("", quote or "")))
    return values


def untraceable_numbers(text: str, numbers: dict, setup: dict, quotes: list[str]) -> list[float]:
    """Numbers in ``text`` (outside code and markers) found neither in ``numbers``, the setup nor a
    cited quote (or a citation title). Tolerance: half the last printed digit."""
    sources = _sources(numbers, setup, quotes)
    bad = []
    for m in numbers_in_text(text):
        tolerance = 0.5 * 10 ** -m.decimals + 1e-9
        if not any(abs(m.value - v) <= max(tolerance, 0.0051 if m.decimals else tolerance) for v in sources):
            bad.append(m.value)
    return bad


def dangling_markers(text: str, citations: list[Citation]) -> list[int]:
    known = {c.n for c in citations}
    found = [int(n) for g in _MARKER_GROUP.finditer(strip_code_blocks(text)) for n in re.findall(r"\d+", g.group(1))]
    return sorted({n for n in found if n not in known})


def _t(lang: str, zh: str, en: str) -> str:
    return zh if lang == "zh" else en


_QUESTIONS = {
    "params_b": ("模型多大（参数量，或模型名）？", "How big is the model (parameter count or model name)?"),
    "gpu_memory_gb": ("每张 GPU 多少显存（或者什么型号）？", "How much memory does each GPU have (or which GPU)?"),
    "gpu_count": ("一共几张 GPU、几台机器？", "How many GPUs, on how many nodes?"),
    "inter_node_link": ("机器之间用什么互联（InfiniBand 还是以太网，多少 Gb/s）？",
                        "What links the nodes (InfiniBand or Ethernet, how many Gb/s)?"),
    "micro_batch": ("每卡 micro-batch 要多大？", "What micro-batch per GPU do you need?"),
    # the rest are asked only when the stated value was rejected (negative, absurd, contradictory)
    "model": ("是哪个模型（名字或参数量）？", "Which model is it (name or parameter count)?"),
    "gpu": ("是什么 GPU（型号或每卡显存）？", "Which GPU is it (model or memory per GPU)?"),
    "nodes": ("一共几台机器？", "How many nodes (machines)?"),
    "gpus_per_node": ("每台机器几张 GPU？", "How many GPUs per node?"),
    "seq_len": ("序列长度是多少 token？", "What sequence length (tokens)?"),
    "precision": ("用什么精度（bf16 混合精度、fp16、fp32）？", "Which precision (bf16 mixed, fp16, fp32)?"),
    "optimizer": ("用什么优化器（AdamW、SGD、8-bit Adam）？", "Which optimizer (AdamW, SGD, 8-bit Adam)?"),
    "finetune": ("全参微调、LoRA 还是 QLoRA？", "Full fine-tune, LoRA or QLoRA?"),
    "lora_rank": ("LoRA 的 rank 是多少？", "What LoRA rank?"),
    "activation_checkpointing": ("开不开激活检查点？", "Is activation checkpointing on?"),
    "intra_node_link": ("机器内 GPU 之间是 NVLink 还是 PCIe？", "NVLink or PCIe between GPUs in a node?"),
    "inter_node_gbps": ("节点间带宽多少 Gb/s？", "How many Gb/s between nodes?"),
    "cpu_ram_gb": ("每台机器多少 CPU 内存（GB）？", "How much host RAM per node (GB)?"),
    "optimizer_impl": ("AdamW 用的是 foreach、fused 还是 for-loop 实现？", "Which AdamW implementation (foreach, fused, for-loop)?"),
    "ddp_bucket_view": ("DDP 开了 gradient_as_bucket_view 吗？", "Is DDP's gradient_as_bucket_view on?"),
    "checkpointing_policy": ("激活检查点是全部、每隔 k 层还是选择性（selective op）？",
                             "Which checkpointing policy (every block, every k-th block, selective op)?"),
    "checkpoint_every": ("每隔几层做一次激活检查点？", "Checkpoint every how many blocks?"),
    "torch_compile": ("用了 torch.compile 吗？", "Is torch.compile on?"),
    "loss_impl": ("交叉熵是普通实现、fused 还是分块（chunked）？", "Which cross-entropy implementation (standard, fused, chunked)?"),
    "grad_accum_steps": ("梯度累积几步？", "How many gradient accumulation steps?"),
    "lora_targets": ("LoRA 加在注意力层还是所有线性层？", "LoRA on the attention projections or all linear layers?"),
    "base_dtype": ("冻结的基座权重是什么精度（fp32、bf16、nf4）？", "Which dtype are the frozen base weights (fp32, bf16, nf4)?"),
    "float8": ("用了 float8 训练吗？", "Is float8 training on?"),
    "mfu": ("实测 MFU（模型 FLOPs 利用率）是多少？", "What MFU (model FLOPs utilisation) do you measure?"),
}


def question_text(field_name: str, lang: str) -> str:
    words = field_name.replace("_", " ")
    zh, en = _QUESTIONS.get(field_name, (f"{words} 是什么？", f"What is your {words}?"))
    return _t(lang, zh, en)


_VERDICTS = {
    "supported": ("成立", "holds"),
    "contradicted": ("不成立", "does not hold"),
    "unverifiable": ("无法核实", "cannot be checked"),
    "misleading": ("有误导", "misleading"),
}

_FIELD_NAMES = {
    "params_b": ("参数量", "parameter count"), "gpu_memory_gb": ("单卡显存", "GPU memory"),
    "gpu_count": ("GPU 数量", "GPU count"), "gpus_per_node": ("每台机器的 GPU 数", "GPUs per node"),
    "nodes": ("机器数", "node count"), "inter_node_gbps": ("节点间带宽", "inter-node bandwidth"),
    "inter_node_link": ("节点间互联", "inter-node link"),
    "seq_len": ("序列长度", "sequence length"), "micro_batch": ("micro-batch", "micro-batch"),
    "cpu_ram_gb": ("CPU 内存", "CPU RAM"), "lora_rank": ("LoRA rank", "LoRA rank"),
    "model": ("模型", "model"), "gpu": ("GPU 型号", "GPU"), "precision": ("精度", "precision"),
}


def field_name_text(field_name: str, lang: str) -> str:
    """A setup field's name as the answer says it ("序列长度" / "sequence length")."""
    zh, en = _FIELD_NAMES.get(field_name, (field_name, field_name))
    return _t(lang, zh, en)


def _given_words(message: str, lang: str) -> str:
    """", not minus 8" / "（问题里是负 8）" from a ``bot.core.setup`` message ending "got <value in words>"."""
    from bot.figures import read_value_words, value_words

    found = re.search(r"got (.+)$", message)
    value = read_value_words(found.group(1)) if found else None
    if value is None:
        return ""
    return _t(lang, f"（问题里是{value_words(value, 'zh')}）", f"; the question gives {value_words(value, 'en')}")


def problem_text(field_name: str, message: str, lang: str) -> str:
    zh, en = _FIELD_NAMES.get(field_name, (field_name, field_name))
    given = _given_words(message, lang)  # the bad value in words ("minus 8", "infinity"), as bot.core.setup wrote it
    if "must be positive" in message or "must be a finite number" in message:
        return _t(lang, f"{zh}必须是正数{given}。", f"The {en} must be positive{given}.")
    if message == "is not a number":
        return _t(lang, f"{zh}必须是一个数（问题里写的不是数）。", f"The {en} must be a number (the question's is not).")
    if "outside the plausible range" in message:
        return _t(lang, f"{zh}超出了合理范围，请确认一下。", f"The {en} is outside any plausible range; please check it.")
    # Drop figures the user did not write (a catalog size, a product) so the text stays traceable.
    message = re.sub(r"\s*\([^)]*\d[^)]*\)|\s*=\s*\d+(?:\.\d+)?", "", message)
    return _t(lang, f"{zh}：{message}", f"{en}: {message}")


_ROLES = {"actor": ("actor（策略模型，训练）", "the actor (the policy, trained)"),
          "critic": ("critic（价值模型，训练）", "the critic (the value model, trained)"),
          "reference": ("reference（参考模型，冻结）", "the reference model (frozen)"),
          "reward": ("reward（奖励模型，冻结）", "the reward model (frozen)")}


def multi_model_text(roles: tuple[str, ...], lang: str) -> str:
    """What a multi-model job's answer computed and what it did not (PPO/GRPO/DPO): only the
    roles the job has are named (DPO has a policy and a frozen reference, no critic)."""
    named: list[str] = [r for r in _ROLES if r in roles] or list(_ROLES)
    listed = ("、" if lang == "zh" else ", ").join(_ROLES[r][0 if lang == "zh" else 1] for r in named)
    frozen = [r for r in ("reference", "reward") if r in named]
    zh, en = [f"这是多模型的 RL 任务（{listed}）。上面的数字只算了一个被训练的模型（actor）"], \
        [f"This is a multi-model RL job ({listed}). The figures above cover one trained model (the actor)"]
    if "critic" in named:
        zh.append("；critic 也要训练，也需要自己的参数、梯度和优化器状态")
        en.append("; the critic is trained too and needs its own parameters, gradients and optimizer state")
    if frozen:
        zh.append("；" + " 和 ".join(frozen) + " 模型是冻结的，只占权重（和前向的激活）")
        en.append("; the frozen " + " and ".join(frozen) + " model" + ("s hold" if len(frozen) > 1 else " holds")
                  + " only weights (and forward activations)")
    zh.append("。这些都没有算进上面的表；它们放在同一批卡上时，显存要把这几个模型加起来算。")
    en.append(". None of them is in the table: when they share the GPUs, add them up.")
    return _t(lang, "".join(zh), "".join(en))


def notice_text(notice: str, lang: str) -> str:
    return {
        "truncated": _t(lang, "问题太长，只读了开头部分。", "Your message was very long; only its beginning was read."),
        "condensed": _t(lang, "消息很长：重复的日志行、堆栈帧和进度条已略去，开头、结尾、问题和带数字的行都读了。",
                        "Your message was long: repeated log lines, stack frames and progress bars were skipped; its "
                        "beginning, its end, the question and the lines with figures were read."),
        "injection": _t(lang, "消息里要求我忽略规则或透露内部信息（提示词、密钥、环境变量）的部分不会执行；"
                              "下面只回答训练配置的问题。",
                        "Parts of the message asking me to ignore my rules or reveal internal information "
                        "(prompts, keys, environment) are not followed; I only answer the training question."),
        "unknown_model": _t(lang, "没认出这个模型名，按参数量估算。", "I did not recognise the model name; "
                            "the estimate uses its parameter count."),
        "problems_ignored": _t(lang, "有的数字不合理，已忽略。", "Some values were implausible and were ignored."),
        "history_truncated": _t(lang, "对话很长，只读了最近的几轮。", "The conversation was long; only its latest turns were read."),
        "long_number_ignored": _t(lang, "有一个位数过多的数字，已忽略。", "A number with too many digits was ignored."),
        "model_from_config": _t(lang, "模型按粘贴的 config.json 的结构计算（层数、注意力宽度、词表），不是同等参数量的通用模型。",
                                "The model is computed from the pasted config.json (its layers, attention width "
                                "and vocabulary), not as a generic model of its size."),
        "larger_of_two_sizes": _t(lang, "问题里提到了几个尺寸，下面按最大的那个计算（小的需要的显存更少）。",
                                  "You named several sizes of the model; the figures below are for the largest "
                                  "(the smaller ones need less)."),
        "framework_checkpointing": _t(lang, "按 LlamaFactory 的默认值假设开启了激活检查点（gradient checkpointing；"
                                            "配置里 `disable_gradient_checkpointing: true` 才会关掉）。",
                                      "Activation checkpointing is assumed on: LlamaFactory turns it on unless the "
                                      "config sets `disable_gradient_checkpointing: true`."),
        "command_checkpointing_off": _t(lang, "粘贴的启动命令里没有开激活检查点的参数（如 --gradient_checkpointing），"
                                              "按 HF Trainer 和 DeepSpeed 示例脚本的默认值假设没开。",
                                        "The pasted command has no checkpointing flag (such as --gradient_checkpointing), "
                                        "so activation checkpointing is assumed off, the default of the HF Trainer and "
                                        "the DeepSpeed example scripts."),
        "deepspeed_layout": _t(lang, "你用的是 DeepSpeed：下表 FSDP 梯度分片一行按 ZeRO-2 的显存布局计算（全参、混合精度："
                                     "每卡存全部半精度权重，fp32 主权重、Adam 状态和半精度梯度按卡切分，optimizer step 时"
                                     "再把本卡的梯度分区拷成一份半精度扁平副本和一份 fp32 副本）；全分片一行即 ZeRO-3，"
                                     "两者切分的状态相同。",
                               "You run DeepSpeed: for full fine-tuning in mixed precision the FSDP shard grad-op "
                               "row below is computed with ZeRO-2's memory layout (every half-precision weight on each "
                               "GPU; the fp32 master weights, Adam moments and half-precision gradients sharded; and at "
                               "the optimizer step a flat half-precision and an fp32 copy of this GPU's gradient "
                               "partition); the full shard row stands for ZeRO-3, which shards the same states."),
        # bot.catalog.models.EXPERT_PARALLEL_NOTE, shortened for answers
        "eager_attention": _t(
            lang, "这个模型在 transformers 里用 eager 注意力（BLOOM 的 ALiBi 没有 SDPA/flash 实现），每层为反向存下完整的 "
                  "s×s 注意力概率（softmax 的 fp32 输出和它的 16 位副本），激活随序列长度平方增长；表里已经算进去了。",
            "This model runs eager attention in transformers (BLOOM's ALiBi has no SDPA/flash path), so every "
            "block keeps the full s x s attention probabilities for backward (the softmax's fp32 output and its "
            "16-bit copy): "
            "activations grow with the square of the sequence length. The table counts them."),
        "moe_expert_parallel": _t(
            lang, "这是 MoE 模型：专家并行不属于 DDP/FSDP。FSDP 下每张卡存每个专家的 1/N，前向和反向时把整层的"
                  "全部专家（不只是被激活的）all-gather 回来；专家并行（Megatron、DeepSpeed-MoE、torchtitan）把整个专家"
                  "放在不同的卡上、用 all-to-all 路由 token，省掉专家的 all-gather，代价是 all-to-all 通信和负载不均。"
                  "这里的估算没有建模专家并行。",
            "This is a mixture-of-experts model: expert parallelism is outside DDP and FSDP. Under FSDP every "
            "GPU holds a shard of every expert and all-gathers all of a block's experts (not only the active "
            "ones) for forward and backward; expert parallelism (Megatron, DeepSpeed-MoE, torchtitan) places "
            "whole experts on different GPUs and routes tokens with all-to-all instead, trading the expert "
            "all-gathers for all-to-all traffic and load imbalance. These estimates do not model it."),
    }.get(notice, notice)


# --------------------------------------------------------------------------------------------
# Markdown
# --------------------------------------------------------------------------------------------

_SETUP_NAMES = {"optimizer": ("优化器", "optimizer"), "finetune": ("微调方式", "fine-tuning mode"),
                "activation_checkpointing": ("激活检查点", "activation checkpointing"), **_FIELD_NAMES}


class _Out:
    """Collects the text's blocks and the key of every figure in them, in order."""

    def __init__(self, keys: dict[str, list[str]]) -> None:
        self.blocks: list[str] = []
        self.figures: list[FigureRef] = []
        self.keys = keys
        self.parts: list[tuple[str, str, list[FigureRef]]] = []  # (kind, text, its figures)
        self._mark = 0

    def bind(self, piece: str, keys: list[str] | None = None) -> str:
        mentions = numbers_in_text(piece)
        keys = keys if keys is not None else self.keys.get(piece, [])
        if len(keys) != len(mentions):  # not bound by the composer: the metric traces it by value
            keys = ["unbound"] * len(mentions)
        self.figures += [FigureRef(printed=m.printed, key=k) for m, k in zip(mentions, keys, strict=True)]
        return piece

    def block(self, text: str, kind: str = "folded") -> None:
        """A block of the answer: ``kind`` is "short" (in the short form too) or "folded"; the
        figures bound since the previous block are this block's."""
        self.blocks.append(text)
        self.parts.append((kind, text, self.figures[self._mark:]))
        self._mark = len(self.figures)

    def form(self, kinds: set[str]) -> tuple[str, list[FigureRef]]:
        chosen = [(t, f) for k, t, f in self.parts if k in kinds and t]
        return "\n\n".join(t for t, _ in chosen), [x for _, f in chosen for x in f]


# The short form's prose above the table (DESIGN.md, issue 25): about 600 characters in English,
# 350 in Chinese; the notices that do not fit are folded with the other sections.
SHORT_PROSE_CHARS = {"en": 600, "zh": 350}


def _setup_line(answer: Answer, out: _Out) -> str:
    """"Setup: ..." from ``answer.setup``; every figure is bound to the field it prints."""
    lang, s = answer.language, answer.setup
    bits: list[tuple[str, str]] = []  # (text, field its figures come from)
    if s.get("model"):
        bits.append((str(s["model"]), "model"))
    if s.get("params_b") is not None:
        bits.append((_t(lang, f"{fmt(s['params_b'])}B 参数", f"{fmt(s['params_b'])}B params"), "params_b"))
    gpu, gpu_field = (str(s["gpu"]), "gpu") if s.get("gpu") else (
        _t(lang, f"{fmt(s.get('gpu_memory_gb') or 0)} GB 显卡", f"{fmt(s.get('gpu_memory_gb') or 0)} GB GPU"),
        "gpu_memory_gb")
    if s.get("gpu_count"):
        nodes = s.get("nodes") or 1
        if nodes > 1:
            bits += [(_t(lang, f"{nodes} 台机器 × 每台", f"{nodes} nodes x"), "nodes"),
                     (_t(lang, f"{s.get('gpus_per_node')} 张", f"{s.get('gpus_per_node')}"), "gpus_per_node"),
                     (gpu, gpu_field)]
        else:
            bits += [(f"{s['gpu_count']} x", "gpu_count"), (gpu, gpu_field)]
    if s.get("precision"):
        bits.append((str(s["precision"]), "precision"))
    if s.get("optimizer"):
        bits.append((optimizer_label(s["optimizer"]), "optimizer"))
    ft = s.get("finetune")
    if ft:
        bits.append((finetune_label(ft, lang), "finetune"))
    if s.get("seq_len"):
        bits.append((_t(lang, f"序列长度 {s['seq_len']}", f"seq {s['seq_len']}"), "seq_len"))
    if s.get("micro_batch"):
        bits.append((f"micro-batch {s['micro_batch']}", "micro_batch"))
    if s.get("activation_checkpointing"):
        bits.append((_t(lang, "激活检查点", "activation checkpointing"), "activation_checkpointing"))
    for axis, field in (("TP", "tensor_parallel"), ("CP", "context_parallel"), ("PP", "pipeline_parallel")):
        if (s.get(field) or 1) > 1:  # a stated degree is shown, never dropped (issue 29)
            bits.append((f"{axis} {s[field]}", field))
    keys = [f"setup.{f}" for text, f in bits for _ in numbers_in_text(text)]
    joined: list[str] = []
    for text, _field in bits:  # "8 x" and "3 张" run into the GPU name; the rest are comma-separated
        glue = " " if joined and joined[-1].endswith((" x", "张", "每台")) else _t(lang, "，", ", ")
        joined.append((glue if joined else "") + text)
    text = _t(lang, "配置：", "Setup: ") + "".join(joined)
    assumed = [i.field for i in answer.sections.setup_read if i.source == "assumed"
               and i.field not in ("intra_node_link",) + _RUN_OPTIONS]
    if assumed:
        listed = _t(lang, "、", ", ").join(_t(lang, *_SETUP_NAMES.get(a, (a, a))) for a in assumed)
        text += _t(lang, f"（未说明、按默认值假设：{listed}）", f" (not stated, defaults assumed: {listed})")
    calc = next((c.n for c in answer.citations if c.kind == "calc"), None)
    text += f" [{calc}]" if calc else ""
    return out.bind(text, keys)


# Run options (issue 14): left at PyTorch's defaults unless the user set them; the answer names them.
_RUN_OPTIONS = ("optimizer_impl", "ddp_bucket_view", "checkpointing_policy", "checkpoint_every", "torch_compile",
                "loss_impl", "grad_accum_steps", "lora_targets", "base_dtype", "float8", "mfu", "norm_impl",
                "lora_rank", "tensor_parallel", "pipeline_parallel", "context_parallel", "tf32", "grad_sync",
                "attn_implementation")
# Read back in this order: what the answer depends on most first.
_READ_ORDER = ("model", "params_b", "gpu_count", "nodes", "gpus_per_node", "gpu", "gpu_memory_gb", "finetune",
               "precision", "seq_len", "micro_batch", "grad_accum_steps", "activation_checkpointing", "optimizer",
               "optimizer_impl", "torch_compile", "lora_targets", "base_dtype", "intra_node_link",
               "inter_node_link", "inter_node_gbps", "cpu_ram_gb", "lora_rank")
_SPAN_CHARS = 60
_RUN_OPTION_LABELS = {
    ("optimizer_impl", "foreach"): ("AdamW foreach 实现", "foreach AdamW step"),
    ("optimizer_impl", "fused"): ("fused AdamW", "fused AdamW"),
    ("optimizer_impl", "forloop"): ("逐参数 for-loop AdamW", "for-loop AdamW step"),
    ("ddp_bucket_view", False): ("DDP 梯度桶副本（gradient_as_bucket_view 关）", "DDP bucket copy (gradient_as_bucket_view off)"),
    ("ddp_bucket_view", True): ("gradient_as_bucket_view 开", "gradient_as_bucket_view on"),
    ("torch_compile", False): ("不用 torch.compile", "no torch.compile"),
    ("torch_compile", True): ("torch.compile", "torch.compile"),
    ("loss_impl", "standard"): ("普通交叉熵", "standard cross-entropy"),
    ("loss_impl", "fused"): ("fused 交叉熵", "fused cross-entropy"),
    ("loss_impl", "chunked"): ("分块交叉熵", "chunked cross-entropy"),
    ("float8", False): ("不用 float8", "no float8"),
    ("float8", True): ("float8 线性层", "float8 linears"),
    ("norm_impl", "eager"): ("普通（eager）norm", "eager norms"),
    ("checkpointing_policy", "full"): ("每层都做激活检查点", "per-block checkpointing"),
    ("checkpointing_policy", "every_k"): ("每隔几层做激活检查点", "checkpointing every k-th block"),
    ("checkpointing_policy", "selective_op"): ("按算子选择性检查点", "selective per-op checkpointing"),
    ("engine", "deepspeed"): ("DeepSpeed ZeRO", "DeepSpeed ZeRO"),
    ("engine", "pytorch"): ("PyTorch FSDP", "PyTorch FSDP"),
    ("lora_targets", "attention"): ("LoRA 加在注意力投影", "LoRA on the attention projections"),
    ("lora_targets", "all_linear"): ("LoRA 加在所有线性层", "LoRA on all linear layers"),
    ("lora_targets", "all_linear_but_o"): ("LoRA 加在除 o_proj 外的所有线性层", "LoRA on every linear layer but o_proj"),
    ("base_dtype", "bf16"): ("冻结基座 bf16", "frozen base in bf16"),
    ("base_dtype", "fp32"): ("冻结基座 fp32", "frozen base in fp32"),
    ("base_dtype", "nf4"): ("冻结基座 NF4", "frozen base in NF4"),
    # PyTorch leaves allow_tf32 off for matmuls: fp32 runs at the non-tensor-core peak (bot.calc)
    ("tf32", False): ("fp32 矩阵乘不用 TF32（PyTorch 默认）", "no TF32 for fp32 matmuls (PyTorch's default)"),
    ("tf32", True): ("fp32 矩阵乘用 TF32", "TF32 for fp32 matmuls"),
    ("grad_sync", "every_micro_step"): ("每个 micro-step 都同步梯度", "gradients synced every micro-step"),
    ("grad_sync", "last_micro_step"): ("只在最后一个 micro-step 同步梯度（未分片梯度留到同步）",
                                       "gradients synced on the last micro-step only (unsharded until then)"),
    ("attn_implementation", "eager"): ("eager 注意力（存下完整分数矩阵）", "eager attention (the full score matrix is kept)"),
    ("attn_implementation", "sdpa"): ("SDPA 注意力", "SDPA attention"),
    ("attn_implementation", "flash_attention_2"): ("FlashAttention-2", "FlashAttention-2"),
}


def _value_label(field: str, value, lang: str) -> str:
    """How one setup value is named in the read-back line ("8 GPUs", "seq 4096", "torch.compile off")."""
    if field == "optimizer":
        return optimizer_label(value)
    if field == "finetune":
        return finetune_label(value, lang)
    templates = {
        "params_b": ("{v}B 参数", "{v}B parameters"), "gpu_count": ("{v} 张卡", "{v} GPUs"),
        "nodes": ("{v} 台机器", "{v} nodes"), "gpus_per_node": ("每台 {v} 张", "{v} GPUs per node"),
        "gpu_memory_gb": ("单卡 {v} GB", "{v} GB per card"), "seq_len": ("序列长度 {v}", "seq {v}"),
        "micro_batch": ("micro-batch {v}", "micro-batch {v}"), "grad_accum_steps": ("梯度累积 {v} 步", "gradient accumulation {v}"),
        "cpu_ram_gb": ("CPU 内存 {v} GB", "{v} GB host RAM"), "inter_node_gbps": ("节点间 {v} Gb/s", "{v} Gb/s between nodes"),
        "lora_rank": ("LoRA rank {v}", "LoRA rank {v}"), "checkpoint_every": ("每 {v} 层检查点", "checkpoint every {v} blocks"),
        "mfu": ("MFU {v}", "MFU {v}"), "tensor_parallel": ("张量并行 {v}", "tensor parallel {v}"),
        "pipeline_parallel": ("流水线并行 {v}", "pipeline parallel {v}"), "context_parallel": ("上下文并行 {v}", "context parallel {v}"),
    }
    named = _RUN_OPTION_LABELS.get((field, value))
    if named:
        return _t(lang, *named)
    if isinstance(value, bool):
        name = _t(lang, *_SETUP_NAMES.get(field, (field, field)))
        return f"{name} {_t(lang, '开' if value else '关', 'on' if value else 'off')}"
    if field == "grad_accum_steps" and value == 1:
        return _t(lang, "不做梯度累积", "no gradient accumulation")
    if field in ("gpu_count", "nodes", "gpus_per_node") and value == 1 and lang != "zh":
        return {"gpu_count": "1 GPU", "nodes": "1 node", "gpus_per_node": "1 GPU per node"}[field]
    if field in templates:
        return _t(lang, *templates[field]).format(v=fmt(value))
    if field in _SETUP_NAMES and field not in ("model", "gpu", "precision"):
        return f"{_t(lang, *_SETUP_NAMES[field])} {value}"
    return str(value)


def _read_line(answer: Answer, out: _Out, run_options: bool) -> str:
    """"Read: 8 GPUs, A100 40GB SXM from `8x A100 40GB`; seq 4096 from `--cutoff_len 4096`" (issue 11):
    what was read and the user's words it came from, so a wrong read is easy to correct; then,
    for a computed answer, the run options left at PyTorch's defaults (issue 14). Value figures
    are bound to their setup field, figures inside a quoted span to the user's turns."""
    lang = answer.language
    order = {f: i for i, f in enumerate(_READ_ORDER)}
    items = sorted(answer.sections.setup_read, key=lambda i: order.get(i.field, len(order)))
    groups: dict[str, list] = {}
    for item in items:
        if item.source != "assumed" and item.span:
            groups.setdefault(item.span, []).append(item)
    parts: list[str] = []
    keys: list[str] = []
    for span, group in groups.items():
        fields = {i.field for i in group}
        shown = [i for i in group if not (i.field == "params_b" and "model" in fields)
                 and not (i.field == "gpu_memory_gb" and "gpu" in fields)]
        labels = [_value_label(i.field, i.value, lang) for i in shown]
        for i, label in zip(shown, labels, strict=True):
            keys += [f"setup.{i.field}"] * len(numbers_in_text(label))
        quoted = " ".join(span.replace("`", "'").split())
        quoted = quoted if len(quoted) <= _SPAN_CHARS else quoted[:_SPAN_CHARS - 1] + "…"
        keys += ["turn"] * len(numbers_in_text(f"`{quoted}`"))
        source = {"config": _t(lang, "（配置）", " (config)"), "log": _t(lang, "（日志）", " (log)"),
                  "history": _t(lang, "（之前的消息）", " (earlier message)"),
                  "carried": _t(lang, "（沿用之前的配置）", " (kept from the earlier setup)")}.get(group[0].source, "")
        parts.append(_t(lang, "、", ", ").join(labels) + _t(lang, f" 来自 `{quoted}`", f" from `{quoted}`") + source)
    text = (_t(lang, "读到：", "Read: ") + _t(lang, "；", "; ").join(parts)) if parts else ""
    if run_options:
        defaults = [i for i in items if i.source == "assumed" and i.field in _RUN_OPTIONS
                    and not (i.field == "lora_rank" and answer.setup.get("finetune") not in ("lora", "qlora"))]
        labels = [_value_label(i.field, i.value, lang) for i in defaults]
        for i, label in zip(defaults, labels, strict=True):
            keys += [f"setup.{i.field}"] * len(numbers_in_text(label))
        if labels:
            text += (_t(lang, "。", ". ") if text else "") + _t(
                lang, "运行选项按 PyTorch 默认假设：", "Run options assumed at PyTorch's defaults: ") + \
                _t(lang, "、", ", ").join(labels)
    return out.bind(text, keys) if text else ""


def _cell(out: _Out, value, key: str | None, suffix: str = "") -> str:
    if value is None:
        return "-"
    text = fmt(value) + suffix
    out.figures.append(FigureRef(printed=fmt(value), key=key or "unbound"))
    return text


def _table(answer: Answer, out: _Out) -> str:
    lang = answer.language
    rows: list[TableRow] = answer.sections.table
    tps = any(r.tokens_per_s_per_gpu for r in rows)
    head = _t(lang, "| 策略 | 每卡显存 (GiB) | 可用 (GiB) | 放得下 | 最大 micro-batch | 通信时间 vs DDP | 估计每步 (秒) |",
              "| strategy | per-GPU GiB | usable GiB | fits | max micro-batch | comm time vs DDP | est. step (s) |")
    head += _t(lang, " 每卡 tokens/s |", " tokens/s per GPU |") if tps else ""
    lines = [head, "|---|---:|---:|:---:|---:|---:|---:|" + ("---:|" if tps else "")]
    yes, no = _t(lang, "是", "yes"), _t(lang, "否", "no")
    for r in rows:
        k = r.keys
        label = out.bind(r.label)  # a label may print a figure (the micro-batch a pick runs at)
        name = f"**{label}**" if r.chosen else label
        cells = [name, _cell(out, r.total_gib, k.get("total_gib")), _cell(out, r.usable_gib, k.get("usable_gib")),
                 yes if r.fits else no, _cell(out, r.max_micro_batch, k.get("max_micro_batch")),
                 _cell(out, r.vs_ddp, k.get("vs_ddp"), "x"), _cell(out, r.step_seconds, k.get("step_seconds"))]
        if tps:
            cells.append(_cell(out, r.tokens_per_s_per_gpu, k.get("tokens_per_s_per_gpu")))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _items(out: _Out, items: list[str]) -> str:
    return "\n".join(f"- {out.bind(x)}" for x in items if x)


def render_markdown(answer: Answer) -> Answer:
    """``answer`` with ``text`` (the short form: markdown in its language) and ``full_text`` (every
    section), and the figures of each, set from its sections."""
    lang, sec = answer.language, answer.sections
    out = _Out(sec.figure_keys)
    table = bool(sec.table and answer.setup)
    lead = [x for x in (sec.direct_answer, sec.headline) if x]
    budget = SHORT_PROSE_CHARS["zh" if lang == "zh" else "en"] - sum(len(x) for x in lead)
    for notice in sec.notices:  # a notice is in the short form while the prose stays short
        budget -= len(notice)
        out.block("> " + out.bind(notice), "short" if budget >= 0 else "folded")
    if sec.direct_answer:
        out.block(out.bind(sec.direct_answer), "short")
    if sec.headline:
        line = out.bind(sec.headline)
        out.block(f"**{line}**" if table else line, "short")
    if table:
        out.block(_setup_line(answer, out), "short")
    out.block(_read_line(answer, out, run_options=table))
    if answer.status == "invalid":
        out.block(_t(lang, "**这个配置有问题，先修正再计算：**", "**This setup has problems; fix them and I will compute:**")
                  if not sec.headline else "", "short")
        out.block(_items(out, sec.reasons), "short")
    elif sec.table:
        calc = next((c.n for c in answer.citations if c.kind == "calc"), None)
        out.block(_t(lang, "**每卡显存与速度（估算）**", "**Per-GPU memory and speed (estimated)**") +
                  (f" [{calc}]" if calc else "") + "\n\n" + _table(answer, out), "short")
        if sec.reasons:
            out.block(_t(lang, "**为什么**", "**Why**") + "\n" + _items(out, sec.reasons))
        if sec.what_ifs:
            out.block(_t(lang, "**什么会改变结论**", "**What would change it**") + "\n" + _items(out, sec.what_ifs))
    elif sec.reasons:  # no table: the reasons are the answer; the first ones stay in the short form
        out.block(_items(out, sec.reasons[:2]), "short")
        if sec.reasons[2:]:
            out.block(_items(out, sec.reasons[2:]))
    if sec.passages:
        # a forum post is never labelled as a doc: the heading names the kinds the passages cite
        cited = {c.kind for c in answer.citations if any(f"[{c.n}]" in p for p in sec.passages)}
        heading = (_t(lang, "**文档和论坛里怎么说**", "**From the docs and the forum**") if "forum" in cited
                   else _t(lang, "**文档里怎么说**", "**From the docs**"))
        # the passages are the short answer only when nothing else answers (a concept from the docs);
        # a troubleshooting answer leads with its causes and folds them
        passages_lead = not table and not sec.reasons and not sec.direct_answer and answer.intent != "troubleshoot"
        out.block(heading + "\n" + _items(out, sec.passages), "short" if passages_lead else "folded")
    if sec.forum:
        lines = []
        for item in sec.forum:
            quote = _t(lang, f"- {item.forum_id} 说「{item.quote}」[{item.citation}] — ",
                       f"- {item.forum_id} says \"{item.quote}\" [{item.citation}] — ")
            out.bind(quote, ["cite." + str(item.citation)] * len(numbers_in_text(quote)))
            lines.append(quote + out.bind(item.text))
        heading = _t(lang, "**论坛里怎么说**", "**What the forum said** (quotes in the thread's original Chinese)")
        out.block(heading + "\n" + "\n".join(lines))
    if sec.howto:
        from bot.howto import markdown

        out.block(_t(lang, "**怎么跑**", "**How to run it**") + "\n\n" + markdown(sec.howto))
    if sec.questions:
        out.block(_t(lang, "**还需要知道**", "**To be precise I need**") + "\n" + _items(out, sec.questions), "short")
    answer.full_text, answer.full_figures = out.form({"short", "folded"})
    answer.text, answer.figures = out.form({"short"})
    if answer.full_text != answer.text:  # say what is folded, so nobody takes the short form for all
        answer.text += "\n\n" + _t(lang, "*（原因、什么会改变结论、读到的配置、资料来源和运行方法见完整回答。）*",
                                     "*(Why, what would change it, the setup as read, sources and how to run it: "
                                     "see the full answer.)*")
    return answer


# --------------------------------------------------------------------------------------------
# How to run it (kept for the web page's panel; the generator is bot.howto)
# --------------------------------------------------------------------------------------------


def howto_snippet(strategy: str, resolved) -> str:
    """The FSDP2/DDP snippet and torchrun command for ``strategy`` on ``resolved``, as markdown."""
    from bot.howto import SnippetSpec, markdown, snippets

    spec = SnippetSpec(strategy=strategy, nodes=resolved.nodes, gpus_per_node=resolved.gpus_per_node,
                       precision=resolved.setup.precision,
                       checkpointing=bool(resolved.setup.activation_checkpointing))
    return markdown(snippets(spec))
