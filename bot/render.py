"""Answer parts -> markdown (zh/en), the how-to snippet, and the number-traceability check.

Every figure written here is read from the calculator's ``numbers``, from the setup, or from a
cited quote, and printed with at most two decimals (``fmt``), so the eval harness can trace it.
Sentences never contain derived numbers of their own; a what-if says "twice as many GPUs", not
a count we did not compute. Fenced code (the how-to snippet) is exempt from tracing and keeps to
the setup's own numbers (nproc = GPUs per node, nnodes = nodes).

``untraceable_numbers`` is the check itself; the LLM guard (``bot.llm``) and the tests use it.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field

from bot.advise import Advice, Reason
from bot.answer import Citation
from bot.strategies import TRAINING_STRATEGIES, label, short_label

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


# How figures are read (the same rules as the eval harness, evals/metrics.py): fenced code and
# citation markers are skipped; a token that starts with a letter is a name (A100, bf16,
# forum-12, Llama-2-7B), not a figure; "8x" and "2x8" count their digits.
_FENCED = re.compile(r"```.*?```", re.S)
_MARKER = re.compile(r"\[(\d+)\]")
_TOKEN = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._\-]*[A-Za-z0-9%])?")
_DIGITS = re.compile(r"(?<![A-Za-z0-9.])\d+(?:\.\d+)?")


def prose(text: str) -> str:
    """``text`` without fenced code blocks and citation markers (what the tracer reads)."""
    return _MARKER.sub(" ", _FENCED.sub(" ", text))


def numbers_in(text: str) -> list[float]:
    values = []
    for token in _TOKEN.finditer(prose(unicodedata.normalize("NFKC", text))):
        word = token.group(0)
        if word[0].isdigit():
            word = re.sub(r"(?<=\d)[xX×*](?=\d)", " ", word)
            values.extend(float(m.group(0)) for m in _DIGITS.finditer(word))
    return values


def _sources(numbers: dict, setup: dict, quotes: list[str]) -> list[float]:
    values: list[float] = []
    for value in list(numbers.values()) + list(setup.values()):
        if isinstance(value, bool) or value is None:
            continue
        if isinstance(value, (int, float)):
            values.append(abs(float(value)))
        elif isinstance(value, str):
            values.extend(float(x) for x in re.findall(r"\d+(?:\.\d+)?", value))
    for quote in quotes:
        values.extend(float(x) for x in re.findall(r"\d+(?:\.\d+)?", quote or ""))
    return values


def untraceable_numbers(text: str, numbers: dict, setup: dict, quotes: list[str]) -> list[float]:
    """Numbers in ``text`` (outside code and markers) found neither in ``numbers``, the setup nor a
    cited quote (or a citation title). Tolerance: 0.005, what printing two decimals rounds away."""
    sources = _sources(numbers, setup, quotes)
    bad = []
    for value in numbers_in(text):
        if not any(abs(value - s) <= 0.0051 for s in sources):
            bad.append(value)
    return bad


def dangling_markers(text: str, citations: list[Citation]) -> list[int]:
    known = {c.n for c in citations}
    return sorted({int(m) for m in _MARKER.findall(_FENCED.sub(" ", text)) if int(m) not in known})


# --------------------------------------------------------------------------------------------
# What the renderer is given
# --------------------------------------------------------------------------------------------


@dataclass
class Scenario:
    """A what-if computed for a common card when the user did not say which GPU (conditional)."""

    memory_gb: float
    gpu_count: int
    strategy: str
    ddp_total: float
    ddp_fits: bool
    shard_total: float
    shard_fits: bool
    cite: int


@dataclass
class ForumItem:
    answer_id: str
    quote: str
    verdict: str
    cite: int
    correction: str = ""  # a sentence in the answer's language, already traceable, with markers


@dataclass
class AnswerParts:
    language: str
    kind: str = "answer"  # answer | general | out_of_scope | empty | invalid
    setup: dict = field(default_factory=dict)
    assumed: list[str] = field(default_factory=list)
    advice: Advice | None = None
    numbers: dict = field(default_factory=dict)
    calc_cite: int | None = None
    bench_cite: int | None = None
    bench_peak: float | None = None
    doc_cites: list[int] = field(default_factory=list)
    measured: list[tuple[str, float, int]] = field(default_factory=list)  # (strategy, peak GiB, cite)
    scenarios: list[Scenario] = field(default_factory=list)
    forum: list[ForumItem] = field(default_factory=list)
    questions: list[str] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)  # truncated | injection | unknown_model | ...
    problems: list[tuple[str, str]] = field(default_factory=list)  # (field, message)
    howto: str = ""


def _t(lang: str, zh: str, en: str) -> str:
    return zh if lang == "zh" else en


def _m(n: int | None) -> str:
    return f" [{n}]" if n else ""


# --------------------------------------------------------------------------------------------
# Sentences
# --------------------------------------------------------------------------------------------


def _num(parts: AnswerParts, strategy: str, key: str, kind: str = "memory") -> str:
    value = parts.numbers.get(f"{kind}.{strategy}.{key}")
    return fmt(value) if value is not None else "?"


def reason_text(reason: Reason, parts: AnswerParts) -> str:
    """One reason or what-if, in the answer's language, with its citation marker."""
    lang, c = parts.language, _m(parts.calc_cite)
    s = reason.values.get("strategy", "")
    name = label(s, lang) if s else ""
    tot, use = _num(parts, s, "total_gib"), _num(parts, s, "usable_gib")
    mb = _num(parts, s, "max_micro_batch")
    vs, gb = _num(parts, s, "vs_ddp", "comm"), _num(parts, s, "gb_per_step", "comm")
    t = _num(parts, s, "step_seconds", "time")
    cap = fmt(parts.setup.get("gpu_memory_gb") or 0)
    code = reason.code
    if code == "ddp_fits":
        return _t(lang, f"完整副本放得下：DDP 每卡约 {tot} GiB，可用 {use} GiB，最大 micro-batch {mb}{c}。",
                  f"A full replica fits: DDP needs about {tot} GiB per GPU of {use} GiB usable, "
                  f"up to micro-batch {mb}{c}.")
    if code == "ddp_too_big":
        if parts.setup.get("gpu_count") == 1:
            return ""  # one GPU: no replicas; "nothing_fits" says it does not fit
        if parts.numbers.get("memory.ddp.fits"):
            need = fmt(reason.values.get("need_mb", 1))
            return _t(lang, f"DDP 只能跑到 micro-batch {mb}，而你要 {need}{c}。",
                      f"DDP fits only up to micro-batch {mb}, and you asked for {need}{c}.")
        if parts.setup.get("finetune") in ("lora", "qlora"):  # the base is frozen: no grads, no Adam
            return _t(lang, f"DDP 每张卡都放一份完整的模型（冻结的基座权重加适配器）：每卡约 {tot} GiB，"
                            f"超过 {cap} GB 卡上可用的 {use} GiB{c}。",
                      f"DDP keeps a full copy of the model (the frozen base weights plus the adapters) on "
                      f"every GPU: about {tot} GiB per GPU, more than the {use} GiB usable on each {cap} GB "
                      f"card{c}.")
        # Say where the total goes beyond the textbook states: at the peak, PyTorch DDP's default
        # gradient buckets (a second copy of the grads) and the optimizer step's temporaries.
        buffers = parts.numbers.get("memory.ddp.buffers_gib") or 0
        extra_zh = extra_en = ""
        if buffers >= 1:
            b = fmt(buffers)
            extra_zh = f"（其中约 {b} GiB 是临时缓冲：DDP 默认的梯度桶副本、优化器一步的临时张量等）"
            extra_en = (f" (of which about {b} GiB are temporary buffers: DDP's default gradient-bucket "
                        f"copy, the optimizer step's temporaries and the like)")
        return _t(lang, f"DDP 每张卡都放一份完整的参数、梯度和优化器状态：每卡约 {tot} GiB{extra_zh}，"
                        f"超过 {cap} GB 卡上可用的 {use} GiB{c}。",
                  f"DDP keeps a full copy of parameters, gradients and optimizer state on every GPU: "
                  f"about {tot} GiB per GPU{extra_en}, more than the {use} GiB usable on each {cap} GB "
                  f"card{c}.")
    if code == "single_gpu":
        return _t(lang, "只有一张卡时没有东西可分片，DDP/FSDP 的选择只在多卡时才有意义。",
                  "With a single GPU there is nothing to shard across; DDP vs FSDP only matters with "
                  "several GPUs.")
    if code == "slow_inter_node":
        link = _LINK_NAMES.get(parts.setup.get("inter_node_link") or "", parts.setup.get("inter_node_link") or "")
        gbps = fmt(parts.setup.get("inter_node_gbps") or 0)
        fs_t = _num(parts, "fsdp_full_shard", "step_seconds", "time")
        return _t(lang, f"节点之间是 {link}（{gbps} Gb/s），比机内慢得多：HSDP 只在机内分片（每卡约 {tot} GiB，"
                        f"放得下），跨机只做分片梯度的 all-reduce；估计每步 {t} 秒，全分片跨机约 {fs_t} 秒{c}。",
                  f"The nodes are joined by {link} at {gbps} Gb/s, much slower than inside a node: HSDP "
                  f"shards within each node (about {tot} GiB per GPU, fits) and only all-reduces the "
                  f"sharded gradients across nodes; est. {t} s per step vs {fs_t} s for full shard "
                  f"across all GPUs{c}.")
    if code == "comm_least":
        fs_vs = _num(parts, "fsdp_full_shard", "vs_ddp", "comm")
        return _t(lang, f"DDP 通信最少：FSDP 全分片每步的通信时间是 DDP 的 {fs_vs} 倍{c}；放得下就不必分片。",
                  f"DDP communicates the least: FSDP full shard's communication takes {fs_vs}x DDP's time "
                  f"per step{c}; "
                  f"when a replica fits there is no need to shard.")
    if code == "shard_fits":
        return _t(lang, f"{name} 放得下：每卡约 {tot} GiB（可用 {use} GiB），最大 micro-batch {mb}{c}。",
                  f"{name} fits: about {tot} GiB per GPU of {use} GiB usable, up to micro-batch {mb}{c}.")
    if code == "comm_cost":
        # ``vs_ddp`` is a ratio of communication *time*; at about 1x sharding costs nothing extra.
        if float(parts.numbers.get(f"comm.{s}.vs_ddp", 2.0) or 2.0) <= 1.05:
            return _t(lang, f"通信不比 DDP 多：每步约 {gb} GB，通信时间与 DDP 相当（{vs}x），估计每步 {t} 秒{c}。",
                      f"Communication costs no more than DDP's: about {gb} GB per step, {vs}x DDP's "
                      f"communication time, est. {t} s per step{c}.")
        return _t(lang, f"代价是通信：每步约 {gb} GB，通信时间是 DDP 的 {vs} 倍，估计每步 {t} 秒{c}。",
                  f"The price is communication: about {gb} GB per step, {vs}x DDP's communication time, "
                  f"est. {t} s per step{c}.")
    if code == "ddp_tight":
        d_tot, d_use = _num(parts, "ddp", "total_gib"), _num(parts, "ddp", "usable_gib")
        return _t(lang, f"DDP 勉强放得下（{d_tot} / {d_use} GiB），余量太小，容易 OOM{c}。",
                  f"DDP would just fit ({d_tot} of {d_use} GiB), too little margin to be safe{c}.")
    if code == "only_offload":
        host = _num(parts, s, "host_ram_gib")
        return _t(lang, f"只有把参数、梯度和优化器状态卸载到 CPU 才放得下：每卡约 {tot} GiB，"
                        f"每台机器需要约 {host} GiB 主机内存{c}；速度会明显变慢。",
                  f"Only CPU offload of parameters, gradients and optimizer state fits: about {tot} GiB "
                  f"per GPU, and each node needs about {host} GiB of host RAM{c}; expect much slower steps.")
    if code == "host_ram_short":
        host = _num(parts, s, "host_ram_gib")
        ram = fmt(parts.setup.get("cpu_ram_gb") or 0)
        return _t(lang, f"CPU 卸载需要每台机器约 {host} GiB 主机内存，超过你的 {ram} GB{c}。",
                  f"CPU offload would need about {host} GiB of host RAM per node, more than your {ram} GB{c}.")
    if code == "nothing_fits" and s == "ddp" and parts.setup.get("gpu_count") == 1:
        # one GPU: "DDP" is just the model on that card; say it once, without naming a strategy
        return _t(lang, f"这张卡放不下：需要约 {tot} GiB，可用 {use} GiB{c}。",
                  f"It does not fit on this card: about {tot} GiB needed, {use} GiB usable{c}.")
    if code == "nothing_fits":
        return _t(lang, f"即使 {name}，每卡也要约 {tot} GiB，超过可用的 {use} GiB{c}。",
                  f"Even with {name}, each GPU needs about {tot} GiB, more than the {use} GiB usable{c}.")
    # What would change the decision
    if code == "ddp_mb_limit":
        fs_mb = _num(parts, "fsdp_full_shard", "max_micro_batch")
        return _t(lang, f"如果需要 micro-batch 超过 {mb}，DDP 会 OOM；那时换 FSDP 全分片（最多 {fs_mb}）{c}。",
                  f"If you need a micro-batch above {mb}, DDP runs out of memory; switch to FSDP full "
                  f"shard then (fits up to {fs_mb}){c}.")
    if code == "shard_mb_limit":
        return _t(lang, f"{name} 最大 micro-batch 是 {mb}{c}；更大就开激活检查点、加卡或用梯度累积。",
                  f"{name} fits up to micro-batch {mb}{c}; beyond that turn on activation checkpointing, "
                  f"add GPUs or accumulate gradients.")
    if code == "lora_ddp_fits":
        return _t(lang, "如果改用 LoRA（只训练适配器），DDP 就放得下了（按同样的计算）。",
                  "With LoRA instead of full fine-tuning (only the adapters train), DDP would fit "
                  "(same calculation).")
    if code == "finetune_fits":
        mode = {"lora": "LoRA", "qlora": "QLoRA"}[reason.values["finetune"]]
        if reason.values.get("checkpointing"):
            return _t(lang, f"改用 {mode} 并打开激活检查点：{name} 就放得下。",
                      f"Switch to {mode} and turn on activation checkpointing: then {name} fits.")
        return _t(lang, f"改用 {mode}：{name} 就放得下。", f"Switch to {mode}: then {name} fits.")
    if code == "checkpointing_fits":
        return _t(lang, f"打开激活检查点（重计算）：{name} 就放得下。",
                  f"Turn on activation checkpointing: then {name} fits.")
    if code == "smaller_mb":
        return _t(lang, "把 micro-batch 降下来，用梯度累积补足全局 batch。",
                  "Lower the micro-batch and use gradient accumulation for the global batch.")
    if code == "more_gpus":
        factor = reason.values.get("factor", 2)
        zh = {2: "两倍", 4: "四倍", 8: "八倍"}.get(factor, "更多")
        en = {2: "twice", 4: "four times", 8: "eight times"}.get(factor, "more")
        if reason.values.get("checkpointing"):
            return _t(lang, f"GPU 数量增加到现在的{zh}并打开激活检查点：{name} 就放得下。",
                      f"With {en} as many GPUs and activation checkpointing, {name} fits.")
        return _t(lang, f"GPU 数量增加到现在的{zh}：{name} 就放得下。",
                  f"With {en} as many GPUs, {name} fits.")
    if code == "hsdp_if_slow":
        return _t(lang, "如果节点间网络慢（以太网），改用 HSDP：分片流量留在机内，跨机只同步梯度。",
                  "If the link between nodes is slow (Ethernet), use HSDP: sharding traffic stays inside "
                  "each node, only gradients cross nodes.")
    if code == "fast_link_full_shard":
        return _t(lang, "如果节点间换成 InfiniBand 这样的快网络，跨所有卡全分片也可以。",
                  "With a fast inter-node link such as InfiniBand, full shard across all GPUs also works.")
    return ""


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
}


def question_text(field_name: str, lang: str) -> str:
    zh, en = _QUESTIONS.get(field_name, (field_name, field_name))
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


def problem_text(field_name: str, message: str, lang: str) -> str:
    zh, en = _FIELD_NAMES.get(field_name, (field_name, field_name))
    if "must be positive" in message:
        return _t(lang, f"{zh}必须是正数。", f"The {en} must be positive.")
    if "outside the plausible range" in message:
        return _t(lang, f"{zh}超出了合理范围，请确认一下。", f"The {en} is outside any plausible range; please check it.")
    # Drop figures the user did not write (a catalog size, a product) so the text stays traceable.
    message = re.sub(r"\s*\([^)]*\d[^)]*\)|\s*=\s*\d+(?:\.\d+)?", "", message)
    return _t(lang, f"{zh}：{message}", f"{en}: {message}")


# --------------------------------------------------------------------------------------------
# Markdown
# --------------------------------------------------------------------------------------------


def _table(parts: AnswerParts) -> str:
    lang = parts.language
    head = _t(lang, "| 策略 | 每卡显存 (GiB) | 可用 (GiB) | 放得下 | 最大 micro-batch | 通信时间 vs DDP | 估计每步 (秒) |",
              "| strategy | per-GPU GiB | usable GiB | fits | max micro-batch | comm time vs DDP | est. step (s) |")
    rows = [head, "|---|---:|---:|:---:|---:|---:|---:|"]
    yes, no = _t(lang, "是", "yes"), _t(lang, "否", "no")
    for s in TRAINING_STRATEGIES:
        if f"memory.{s}.total_gib" not in parts.numbers:
            continue
        if s == "fsdp_hybrid_shard" and (parts.setup.get("nodes") or 1) <= 1:
            continue  # HSDP on one node is FULL_SHARD
        rows.append(f"| {short_label(s, lang)} | {_num(parts, s, 'total_gib')} | {_num(parts, s, 'usable_gib')} | "
                    f"{yes if parts.numbers.get(f'memory.{s}.fits') else no} | "
                    f"{_num(parts, s, 'max_micro_batch')} | {_num(parts, s, 'vs_ddp', 'comm')}x | "
                    f"{_num(parts, s, 'step_seconds', 'time')} |")
    return "\n".join(rows)


def _setup_line(parts: AnswerParts) -> str:
    lang, s = parts.language, parts.setup
    bits = []
    if s.get("model"):
        bits.append(str(s["model"]))
    if s.get("params_b") is not None:
        bits.append(_t(lang, f"{fmt(s['params_b'])}B 参数", f"{fmt(s['params_b'])}B params"))
    gpu = s.get("gpu") or _t(lang, f"{fmt(s.get('gpu_memory_gb') or 0)} GB 显卡", f"{fmt(s.get('gpu_memory_gb') or 0)} GB GPU")
    if s.get("gpu_count"):
        nodes = s.get("nodes") or 1
        if nodes > 1:
            bits.append(_t(lang, f"{nodes} 台机器 × 每台 {s.get('gpus_per_node')} 张 {gpu}",
                           f"{nodes} nodes x {s.get('gpus_per_node')} {gpu}"))
        else:
            bits.append(f"{s['gpu_count']} x {gpu}")
    if s.get("precision"):
        bits.append(str(s["precision"]))
    if s.get("optimizer"):
        bits.append({"adamw": "AdamW", "sgd": "SGD", "adam8bit": "8-bit Adam"}.get(s["optimizer"], s["optimizer"]))
    ft = s.get("finetune")
    if ft:
        bits.append({"full": _t(lang, "全参微调", "full fine-tune"), "lora": "LoRA", "qlora": "QLoRA"}[ft])
    if s.get("seq_len"):
        bits.append(_t(lang, f"序列长度 {s['seq_len']}", f"seq {s['seq_len']}"))
    if s.get("micro_batch"):
        bits.append(f"micro-batch {s['micro_batch']}")
    if s.get("activation_checkpointing"):
        bits.append(_t(lang, "激活检查点", "activation checkpointing"))
    text = _t(lang, "配置：", "Setup: ") + _t(lang, "，", ", ").join(bits)
    assumed = [a for a in parts.assumed if a != "intra_node_link"
               and not (a == "lora_rank" and s.get("finetune") == "full")]
    if assumed:
        names = {"optimizer": ("优化器", "optimizer"), "finetune": ("微调方式", "fine-tuning mode"),
                 "activation_checkpointing": ("激活检查点", "activation checkpointing"), **_FIELD_NAMES}
        listed = _t(lang, "、", ", ").join(_t(lang, *names.get(a, (a, a))) for a in assumed)
        text += _t(lang, f"（未说明、按默认值假设：{listed}）", f" (not stated, defaults assumed: {listed})")
    return text + _m(parts.calc_cite)


# Examples carry no digits of their own (names like A100-40GB are not figures), so they trace.
_EXAMPLE_ZH = "Llama-2-7B 全参微调，八张 A100-40GB，用 DDP 还是 FSDP？"
_EXAMPLE_EN = "Llama-2-7B full fine-tune on eight A100-40GB: DDP or FSDP?"


_LINK_NAMES = {"ethernet": "Ethernet", "infiniband": "InfiniBand", "nvlink": "NVLink", "pcie": "PCIe"}


def render_markdown(parts: AnswerParts) -> str:
    """The answer text in ``parts.language``; citation markers ``[n]`` refer to the citations."""
    lang = parts.language
    out: list[str] = []
    for notice in parts.notices:
        if notice != "earlier_setup_kept":
            out.append(f"> {notice_text(notice, lang)}")
    if parts.kind == "empty":
        out.append(_t(lang, f"请提一个关于分布式训练的问题，例如：“{_EXAMPLE_ZH}”",
                      f"Please ask a question about distributed training, e.g. \"{_EXAMPLE_EN}\""))
        return "\n\n".join(out)
    if parts.kind == "out_of_scope":
        out.append(_t(lang, "这个问题不在我能回答的范围内。我只回答 PyTorch 分布式训练（DDP、FSDP、HSDP、"
                            f"显存、通信）相关的问题，例如：“{_EXAMPLE_ZH}”",
                      "That is outside what I can help with. I answer questions about PyTorch distributed "
                      f"training (DDP, FSDP, HSDP, GPU memory, communication), for example: \"{_EXAMPLE_EN}\""))
        if "earlier_setup_kept" in parts.notices:
            out.append(_t(lang, "你之前说的训练配置我还记着，可以接着问，比如：“换成两台机器呢？”",
                          "I still have the setup from earlier in this conversation; you can ask a follow-up "
                          "about it, e.g. \"what about two nodes?\""))
        return "\n\n".join(out)
    if parts.kind == "invalid":
        out.append(_t(lang, "**这个配置有问题，先修正再计算：**", "**This setup has problems; fix them and I will compute:**"))
        out.extend(f"- {problem_text(f, m, lang)}" for f, m in parts.problems)
        if parts.questions:
            out.append(_t(lang, "**请补充：**", "**Please tell me:**"))
            out.extend(f"- {question_text(q, lang)}" for q in parts.questions)
        return "\n\n".join(out)

    advice = parts.advice
    if parts.kind == "general" or advice is None:
        out.append(_t(lang, "**结论取决于模型大小和显存：完整副本放得下就用 DDP（通信最少、最简单），"
                            "放不下就用 FSDP 全分片；多机且机间网络慢时用 HSDP。**",
                      "**It depends on model size and GPU memory: DDP when a full replica fits (least "
                      "communication, simplest), FSDP full shard when it does not; HSDP across nodes on a "
                      "slow link.**"))
    else:
        conf = {"high": ("高", "high"), "medium": ("中", "medium"), "low": ("低", "low")}[advice.confidence]
        name = label(advice.strategy, lang)
        if advice.strategy == "none":
            out.append(_t(lang, f"**结论：按现在的配置哪种策略都放不下**（置信度：{conf[0]}）。",
                          f"**Verdict: nothing fits as asked** (confidence: {conf[1]})."))
        else:
            alts = _t(lang, "、", ", ").join(label(a, lang) for a in advice.alternatives)
            alt_text = _t(lang, f"；备选：{alts}", f"; alternatives: {alts}") if alts else ""
            out.append(_t(lang, f"**推荐：{name}**（置信度：{conf[0]}{alt_text}）",
                          f"**Recommendation: {name}** (confidence: {conf[1]}{alt_text})"))
        if parts.setup:
            out.append(_setup_line(parts))

    if parts.scenarios:
        out.append(_t(lang, "**不知道你的显卡，按常见的卡分别算了一下：**",
                      "**You did not say which GPU, so here it is for common cards:**"))
        lines = []
        for sc in parts.scenarios:
            yes = _t(lang, "放得下", "fits")
            no = _t(lang, "放不下", "does not fit")
            lines.append(_t(
                lang,
                f"- {sc.gpu_count} × {fmt(sc.memory_gb)} GB：DDP 每卡约 {fmt(sc.ddp_total)} GiB，"
                f"{yes if sc.ddp_fits else no}；FSDP 全分片每卡约 {fmt(sc.shard_total)} GiB，"
                f"{yes if sc.shard_fits else no} → {label(sc.strategy, lang)} [{sc.cite}]",
                f"- {sc.gpu_count} x {fmt(sc.memory_gb)} GB: DDP needs about {fmt(sc.ddp_total)} GiB per GPU, "
                f"{yes if sc.ddp_fits else no}; FSDP full shard about {fmt(sc.shard_total)} GiB, "
                f"{yes if sc.shard_fits else no} -> {label(sc.strategy, lang)} [{sc.cite}]"))
        out.append("\n".join(lines))

    if parts.numbers and parts.kind == "answer":
        out.append(_t(lang, "**每卡显存与速度（估算）**", "**Per-GPU memory and speed (estimated)**") +
                   _m(parts.calc_cite) + "\n\n" + _table(parts))

    if advice is not None and parts.kind == "answer":
        why = [reason_text(r, parts) for r in advice.reasons]
        if parts.bench_cite and parts.bench_peak is not None:
            why.append(_t(lang, f"已存的模拟结果：{label(advice.strategy, lang)} 每卡峰值 "
                                f"{fmt(parts.bench_peak)} GiB [{parts.bench_cite}]。",
                          f"A stored simulation measured a per-GPU peak of {fmt(parts.bench_peak)} GiB "
                          f"for {label(advice.strategy, lang)} [{parts.bench_cite}]."))
        for strategy, peak, n in parts.measured:
            why.append(_t(lang, f"这个模型的实测记录：{label(strategy, lang)} 每卡（每进程）峰值 {fmt(peak)} GiB [{n}]。",
                          f"A recorded run of this model: {label(strategy, lang)} peaked at {fmt(peak)} GiB "
                          f"per rank [{n}]."))
        if parts.doc_cites:
            refs = " ".join(f"[{n}]" for n in parts.doc_cites)
            why.append(_t(lang, f"原理见文档 {refs}。", f"Background in the docs {refs}."))
        out.append(_t(lang, "**为什么**", "**Why**") + "\n" + "\n".join(f"- {w}" for w in why if w))
        changes = [reason_text(r, parts) for r in advice.changes]
        if changes:
            out.append(_t(lang, "**什么会改变结论**", "**What would change it**") + "\n" +
                       "\n".join(f"- {c}" for c in changes if c))
    elif parts.doc_cites:
        out.append(_t(lang, "原理见文档 ", "Background in the docs ") + " ".join(f"[{n}]" for n in parts.doc_cites))

    if parts.forum:
        lines = []
        for item in parts.forum:
            v = _VERDICTS.get(item.verdict, (item.verdict, item.verdict))
            line = _t(lang, f"- {item.answer_id} 说「{item.quote}」[{item.cite}] — 判定：{v[0]}。",
                      f"- {item.answer_id} says \"{item.quote}\" [{item.cite}] — verdict: {v[1]}.")
            if item.correction:
                line += _t(lang, "", " ") + item.correction
            lines.append(line)
        heading = _t(lang, "**论坛里怎么说**", "**What the forum said** (quotes in the thread's original Chinese)")
        out.append(heading + "\n" + "\n".join(lines))

    if parts.howto:
        out.append(_t(lang, "**怎么跑**", "**How to run it**") + "\n\n" + parts.howto)

    if parts.questions:
        out.append(_t(lang, "**还需要知道**", "**To be precise I need**") + "\n" +
                   "\n".join(f"- {question_text(q, lang)}" for q in parts.questions))
    return "\n\n".join(out)


def notice_text(notice: str, lang: str) -> str:
    return {
        "truncated": _t(lang, "问题太长，只读了开头部分。", "Your message was very long; only its beginning was read."),
        "injection": _t(lang, "消息里要求我忽略规则或透露内部信息（提示词、密钥、环境变量）的部分不会执行；"
                              "下面只回答训练配置的问题。",
                        "Parts of the message asking me to ignore my rules or reveal internal information "
                        "(prompts, keys, environment) are not followed; I only answer the training question."),
        "unknown_model": _t(lang, "没认出这个模型名，按参数量估算。", "I did not recognise the model name; "
                            "the estimate uses its parameter count."),
        "problems_ignored": _t(lang, "有的数字不合理，已忽略。", "Some values were implausible and were ignored."),
    }.get(notice, notice)


# --------------------------------------------------------------------------------------------
# How to run it (a snippet the web page and Slack reuse)
# --------------------------------------------------------------------------------------------


def howto_snippet(strategy: str, resolved) -> str:
    """A short FSDP2 or DDP snippet and the torchrun command for ``strategy`` on ``resolved``.

    Code only: the eval harness ignores fenced blocks, and the only numbers in the command are the
    setup's own (``--nnodes`` = nodes, ``--nproc_per_node`` = GPUs per node).
    """
    if strategy not in TRAINING_STRATEGIES:
        return ""
    setup = resolved.setup
    nodes, per_node = resolved.nodes, resolved.gpus_per_node
    dtype = {"bf16-mixed": "torch.bfloat16", "fp16-mixed": "torch.float16"}.get(setup.precision or "")
    lines = ["```python", "import os", "import torch", "import torch.distributed as dist"]
    if strategy == "ddp":
        lines += [
            "from torch.nn.parallel import DistributedDataParallel as DDP",
            "",
            'dist.init_process_group("nccl")',
            'local_rank = int(os.environ["LOCAL_RANK"])',
            "torch.cuda.set_device(local_rank)",
            "model = DDP(build_model().cuda(), device_ids=[local_rank])",
        ]
        if dtype:
            lines.append(f"# forward under torch.autocast(\"cuda\", dtype={dtype})")
        if setup.precision == "fp16-mixed":
            lines.append("# fp16 needs loss scaling: torch.amp.GradScaler")
    else:
        imports = ["fully_shard", "MixedPrecisionPolicy"]
        if strategy == "fsdp_full_shard_offload":
            imports.append("CPUOffloadPolicy")
        lines += [f"from torch.distributed.fsdp import {', '.join(imports)}"]
        if strategy == "fsdp_hybrid_shard":
            lines.append("from torch.distributed.device_mesh import init_device_mesh")
        lines += ["", 'dist.init_process_group("nccl")',
                  'torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))',
                  'model = build_model()  # on "meta" or CPU; fully_shard moves it to the GPU']
        kwargs = []
        if dtype:
            lines.append(f"mp = MixedPrecisionPolicy(param_dtype={dtype}, reduce_dtype=torch.float32)")
            kwargs.append("mp_policy=mp")
        if strategy == "fsdp_hybrid_shard":
            lines.append(f'mesh = init_device_mesh("cuda", ({nodes}, {per_node}), '
                         'mesh_dim_names=("replicate", "shard"))  # replicate across nodes, shard inside')
            kwargs.append("mesh=mesh")
        if strategy == "fsdp_shard_grad_op":
            kwargs.append("reshard_after_forward=False  # SHARD_GRAD_OP")
        if strategy == "fsdp_full_shard_offload":
            kwargs.append("offload_policy=CPUOffloadPolicy()")
        joined = ", ".join(kwargs)
        lines += ["for block in model.layers:  # one FSDP unit per transformer block",
                  f"    fully_shard(block{', ' + joined if joined else ''})",
                  f"fully_shard(model{', ' + joined if joined else ''})"]
    if setup.precision == "fp16-mixed" and strategy != "ddp":
        lines.append("# fp16 needs loss scaling: torch.amp.GradScaler")
    if setup.activation_checkpointing:
        lines.append("# activation checkpointing: wrap each block with torch.utils.checkpoint before sharding")
    lines += ["```", "", "```bash"]
    if nodes > 1:
        lines.append(f"torchrun --nnodes {nodes} --nproc_per_node {per_node} --rdzv_backend c10d "
                     "--rdzv_endpoint $MASTER_ADDR:$MASTER_PORT train.py")
    else:
        lines.append(f"torchrun --standalone --nproc_per_node {per_node} train.py")
    lines.append("```")
    return "\n".join(lines)
