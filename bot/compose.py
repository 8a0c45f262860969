"""Answer composition: (evidence, decision) -> the structured ``Answer`` (the fourth stage).

This module words the decision in the answer's language and fills ``Answer.sections``: headline
(the asked question first, then the recommendation), direct answer, the setup as read with each
field's provenance, the table of configurations weighed (each cell bound to its ``numbers`` key),
reasons, what-ifs, passages, forum verdicts, how-to and questions; plus ``status``, ``intent``,
``provenance``, ``numbers`` and ``citations``. Every figure a sentence prints goes through
``Say.num``/``Say.field``, which records the key it comes from (``Sections.figure_keys``); the
renderer (``bot.render``) lays the sections out and emits ``Answer.figures`` in text order.

It reads the evidence only: no calculator call here.
"""

from __future__ import annotations

import re
from typing import Any

from bot.answer import (
    Answer,
    Citation,
    ForumVerdictItem,
    HowTo,
    Recommendation,
    Sections,
    SetupItem,
    TableRow,
)
from bot.decide import (
    TOLERANCE,
    ZERO_TO_STRATEGY,
    Decision,
    Reason,
    checkpointing_on,
    deepspeed_user,
    fits_with_margin,
    passages_shown,
)
from bot.evidence import BUCKET_FUSED, BUCKET_FUSED_CKPT, CKPT, Config, Evidence, variant_key
from bot.render import (
    field_name_text,
    fmt,
    multi_model_text,
    notice_text,
    problem_text,
    question_text,
    render_markdown,
)
from bot.strategies import label, optimizer_label, short_label

DESIGN_FIELDS = ("model", "params_b", "gpu", "gpu_memory_gb", "gpu_count", "gpus_per_node", "nodes",
                 "intra_node_link", "inter_node_link", "inter_node_gbps", "precision", "optimizer",
                 "finetune", "seq_len", "micro_batch", "activation_checkpointing", "cpu_ram_gb")
_LINK_NAMES = {"ethernet": "Ethernet", "infiniband": "InfiniBand", "nvlink": "NVLink", "pcie": "PCIe"}
_VARIANT_LABELS = {
    CKPT: ("激活检查点", "checkpointing"),
    BUCKET_FUSED: ("bucket view + fused AdamW", "bucket view + fused AdamW"),
    BUCKET_FUSED_CKPT: ("bucket view + fused + 检查点", "bucket view + fused + ckpt"),
}


def _t(lang: str, zh: str, en: str) -> str:
    return zh if lang == "zh" else en


class Citations:
    """Numbers citations in order of first use; the same source is cited once."""

    def __init__(self) -> None:
        self.items: list[Citation] = []

    def add(self, id: str, kind: str, title: str, url: str | None = None, quote: str | None = None) -> int:
        for c in self.items:
            if c.id == id and (c.quote == quote or kind == "doc" and not quote):
                return c.n
        n = len(self.items) + 1
        self.items.append(Citation(n=n, id=id, kind=kind, title=title, url=url or None, quote=quote))  # type: ignore[arg-type]
        return n


_SLOT = re.compile("\x01([^\x02]*)\x02([^\x03]*)\x03")


class Say:
    """Writes sentences whose every figure is bound to a key (``numbers`` key, ``setup.<field>``,
    ``cite.<n>``): each figure is first written as a slot holding its key and its printed value;
    ``done`` keeps the answer's language, strips the slots and records the keys in text order."""

    def __init__(self, lang: str, numbers: dict[str, Any], setup: dict[str, Any], calc: int | None) -> None:
        self.lang, self.numbers, self.setup, self.calc = lang, numbers, setup, calc
        self.figure_keys: dict[str, list[str]] = {}

    @staticmethod
    def val(value: Any, key: str) -> str:
        return f"\x01{key}\x02{fmt(value)}\x03"

    def num(self, key: str) -> str:
        value = self.numbers.get(key)
        if value is None or isinstance(value, bool):
            return "?"
        return self.val(value, key)

    def cfg(self, c: Config | None, kind: str, name: str) -> str:
        return self.num(c.key(kind, name)) if c is not None else "?"

    def field(self, name: str) -> str:
        value = self.setup.get(name)
        if value is None:
            return "?"
        if isinstance(value, int | float) and not isinstance(value, bool):
            return self.val(value, f"setup.{name}")
        return str(value)

    def c(self) -> str:
        return f" [{self.calc}]" if self.calc else ""

    def done(self, zh: str, en: str) -> str:
        text = _t(self.lang, zh, en)
        keys = [m.group(1) for m in _SLOT.finditer(text)]
        plain = _SLOT.sub(lambda m: m.group(2), text)
        if keys:
            self.figure_keys[plain] = keys
        return plain


def config_name(c: Config, lang: str) -> str:
    name = label(c.strategy, lang)
    if c.variant in _VARIANT_LABELS:
        name += f" + {_VARIANT_LABELS[c.variant][0 if lang == 'zh' else 1]}"
    return name


# --------------------------------------------------------------------------------------------
# Entry
# --------------------------------------------------------------------------------------------


def compose(ev: Evidence, d: Decision) -> Answer:
    """The Answer for ``ev`` decided as ``d``; ``text`` is rendered from the sections."""
    lang = ev.language
    parsed = ev.parsed
    cites = Citations()
    numbers: dict[str, Any] = ev.numbers() if ev.resolved is not None or ev.inference is not None else {}
    if ev.resolved is not None:  # DESIGN's fields, then every run option that is set (the calc
        # citation is verified by recomputing from this setup, so nothing it used may be missing)
        setup = {k: v for k, v in ev.resolved.setup.model_dump().items()
                 if k in DESIGN_FIELDS or v is not None}
    else:
        setup = {k: v for k, v in parsed.setup.model_dump().items() if k in DESIGN_FIELDS and v is not None}
    if ev.inference is not None:
        setup = dict(ev.inference.setup())
    if ev.resolved is not None:
        numbers["decision.tolerance_pct"] = round(TOLERANCE * 100)
    calc_n = None
    if ev.resolved is not None:
        calc_n = cites.add("calc", "calc", _t(lang, "shardwise 显存/通信计算器", "shardwise memory/comm calculator"),
                           None, calc_quote(ev.resolved))
    say = Say(lang, numbers, setup, calc_n)
    sec = Sections()
    # the DeepSpeed-layout notice describes the table's rows: none without a computed setup
    sec.notices = [notice_text(n, lang) for n in _notices(parsed) if n != "earlier_setup_kept"
                   and not (n == "deepspeed_layout" and ev.resolved is None)]
    if ev.resolved is not None and getattr(ev.resolved.model, "is_moe", False):
        sec.notices.append(notice_text("moe_expert_parallel", lang))
    if ev.resolved is not None and getattr(ev.resolved.model, "eager_attention", False):
        sec.notices.append(notice_text("eager_attention", lang))
    if parsed.observed.models or "multi_model_rl" in parsed.topics:
        sec.notices.append(multi_model_text(parsed.observed.models, lang))

    if d.status == "out_of_scope" or parsed.empty:
        _out_of_scope(ev, d, say, sec, cites)
    elif d.status == "invalid":
        sec.headline = _t(lang, "这个配置有问题，先修正再计算。", "This setup has problems; fix them and I will compute.")
        sec.reasons = [problem_text(p.field, p.message, lang) for p in ev.problems]
    elif ev.resolved is None:
        _without_setup(ev, d, say, sec, cites)
    else:
        _with_setup(ev, d, say, sec, cites)

    if passages_shown(ev):
        _passages(ev, sec, cites)
    _forum(ev, d, say, sec, cites)
    sec.questions = [question_text(q, lang) for q in d.questions]
    sec.figure_keys = {**say.figure_keys, **sec.figure_keys}
    provenance = _provenance(ev)
    sec.setup_read = _setup_read(ev, setup, provenance)
    why = list(sec.reasons)
    answer = Answer(
        status=d.status, intent=d.intent, language="zh" if lang == "zh" else "en", setup=setup,  # type: ignore[arg-type]
        provenance=provenance, missing=list(d.questions),
        recommendation=Recommendation(strategy=d.strategy, alternatives=list(d.alternatives),
                                      confidence=d.confidence, why=why),  # type: ignore[arg-type]
        numbers=numbers, citations=cites.items, questions=list(d.questions), sections=sec,
    )
    return render_markdown(answer)


def _setup_read(ev: Evidence, setup: dict[str, Any], provenance: dict[str, Any]) -> list[SetupItem]:
    """Every setup field the answer used, where it came from and the text it was read from (the
    answer's "Read: ... from `...`" line). Run options left at PyTorch's defaults are assumed."""
    spans = ev.parsed.provenance or {}
    assumed = set(ev.resolved.assumed) if ev.resolved is not None else set()
    items = []
    for k, v in setup.items():
        if v is None or not isinstance(v, str | int | float | bool):
            continue
        source = provenance.get(k) or ("assumed" if k in assumed else "stated")
        span = getattr(spans.get(k), "span", None) if source != "assumed" else None
        items.append(SetupItem(field=k, value=v, source=source, span=span or None))
    return items


def _notices(parsed: Any) -> list[str]:
    out = list(parsed.notices)
    if parsed.injection:
        out.append("injection")
    if parsed.unknown_model:
        out.append("unknown_model")
    return out


def _provenance(ev: Evidence) -> dict[str, Any]:
    """Field -> where its value came from: the parser's provenance, else assumed (a default of
    ``resolve_setup``), else stated (said, or derived from what was said: a GPU's memory)."""
    out: dict[str, Any] = {}
    for name, p in (ev.parsed.provenance or {}).items():
        source = getattr(p, "source", p)
        if name in DESIGN_FIELDS and source in ("stated", "config", "log", "history", "assumed"):
            out[name] = source
    if ev.resolved is not None:
        for name in ev.resolved.assumed:
            if name in DESIGN_FIELDS:
                out[name] = "assumed"
        for name in DESIGN_FIELDS:
            if getattr(ev.resolved.setup, name, None) is not None:
                out.setdefault(name, "stated")
    return out


def _capacity_needs(cap: Any) -> tuple[str, str]:
    """What the capacity count needs besides the GPUs, as (zh, en) phrases ("" when nothing)."""
    if cap.chunked_loss:
        # bot.calc.memory.loss_bytes_per_logit: a fused kernel (Liger's) needs less than chunked
        return ("（打开激活检查点，并分块计算交叉熵：logits 一段一段升到 fp32，如 torchtune 的 "
                "CEWithChunkedOutputLoss；Liger 的融合 kernel 更省）",
                " with activation checkpointing and a chunked cross-entropy (the logits upcast to fp32 a "
                "chunk at a time, as torchtune's CEWithChunkedOutputLoss does; a fused kernel such as "
                "Liger's needs less still)")
    if cap.checkpointing:
        return "（打开激活检查点）", " with activation checkpointing"
    return "", ""


def calc_quote(resolved: Any) -> str:
    """The calc citation's quote: every input the figures depend on, in one line."""
    s = resolved.setup
    model = resolved.model
    if model.approximate:  # a bare size: the calculator uses an inferred Llama-style shape
        name = f"generic {fmt(s.params_b or model.params_b)}B model (approximate shape,"
    else:
        name = model.name
    gpu = resolved.gpu.name if resolved.gpu else f"{fmt(resolved.gpu_memory_gb)} GB GPU"
    if resolved.nodes > 1:
        where = (f"{resolved.nodes} nodes x {resolved.gpus_per_node} x {gpu}, {resolved.intra_node_link} "
                 f"in a node, {resolved.inter_node_link} {fmt(resolved.inter_node_gbps)} Gb/s between nodes")
    else:
        where = f"{resolved.gpu_count} x {gpu}, {resolved.intra_node_link}"
    ft = {"full": "full fine-tune", "lora": f"LoRA rank {s.lora_rank}", "qlora": f"QLoRA rank {s.lora_rank}"}
    opt = optimizer_label(s.optimizer)
    parts = [f"{name} {fmt(model.params_b)}B params" + (")" if model.approximate else ""), where, s.precision, opt,
             ft.get(s.finetune or "full", s.finetune), f"seq {s.seq_len}", f"micro-batch {s.micro_batch}",
             "activation checkpointing" if s.activation_checkpointing else "no activation checkpointing"]
    if s.cpu_ram_gb:
        parts.append(f"{fmt(s.cpu_ram_gb)} GB CPU RAM")
    return ", ".join(str(p) for p in parts)


# --------------------------------------------------------------------------------------------
# The three shapes of answer
# --------------------------------------------------------------------------------------------

# No figures of their own (spelled-out ones count too), so the examples always trace.
_EXAMPLE_ZH = "Llama-2-7B 全参微调，用 A100-40GB 多卡训练，DDP 还是 FSDP？"
_EXAMPLE_EN = "Llama-2-7B full fine-tune on several A100-40GB cards: DDP or FSDP?"


def _out_of_scope(ev: Evidence, d: Decision, say: Say, sec: Sections, cites: Citations) -> None:
    lang = ev.language
    if ev.parsed.empty:
        sec.headline = _t(lang, f"请提一个关于分布式训练的问题，例如：“{_EXAMPLE_ZH}”",
                          f"Please ask a question about distributed training, e.g. \"{_EXAMPLE_EN}\"")
        return
    topics = set(ev.parsed.topics)
    tpu = {"tpu", "jax"} & {w.lower() for w in ev.question.replace("/", " ").split()} or "TPU" in ev.question
    if ev.inference is not None and not tpu:
        inf = ev.inference
        n = cites.add("calc", "calc", _t(lang, "shardwise 推理显存估算", "shardwise inference memory estimate"),
                      None, inf.quote())
        say.calc = n
        sec.headline = _t(lang, "这是推理/部署的问题，不是 DDP/FSDP 训练的选择。",
                          "This is an inference/serving question, not a DDP/FSDP training choice.")
        sec.direct_answer = say.done(
            f"粗算：权重 {say.num('inference.weights_gib')} GiB（{inf.dtype}），KV cache {say.num('inference.kv_cache_gib')}"
            f" GiB（上下文 {say.num('inference.context_len')}，batch {say.num('inference.batch')}），合计约 "
            f"{say.num('inference.total_gib')} GiB{say.c()}。",
            f"Roughly: weights {say.num('inference.weights_gib')} GiB ({inf.dtype}), KV cache "
            f"{say.num('inference.kv_cache_gib')} GiB (context {say.num('inference.context_len')}, batch "
            f"{say.num('inference.batch')}), about {say.num('inference.total_gib')} GiB in all{say.c()}.")
        quant = ev.inference_quantized
        if "int8" in quant and "int4" in quant:
            sec.reasons.append(say.done(
                f"只量化权重时：int8 权重约 {say.num('inference.int8.weights_gib')} GiB（合计约 "
                f"{say.num('inference.int8.total_gib')} GiB），int4（AWQ、GPTQ）约 {say.num('inference.int4.weights_gib')} GiB"
                f"（合计约 {say.num('inference.int4.total_gib')} GiB）{say.c()}；推理引擎的激活和工作区另算。",
                f"With weight-only quantization: int8 weights about {say.num('inference.int8.weights_gib')} GiB "
                f"(about {say.num('inference.int8.total_gib')} GiB in all), INT4 (AWQ, GPTQ) about "
                f"{say.num('inference.int4.weights_gib')} GiB (about {say.num('inference.int4.total_gib')} GiB in "
                f"all){say.c()}; the engine's activations and workspace come on top."))
        sec.reasons.append(_t(lang, "单卡放不下时先考虑量化权重（int8/int4，如 AWQ、GPTQ），或用张量并行（tensor parallelism）把权重切到"
                                    "几张卡上（vLLM 的 --tensor-parallel-size）；部署用 vLLM、SGLang、TensorRT-LLM 这类推理引擎，"
                                    "而不是 DDP/FSDP（它们是训练用的，每张卡各跑一份或按训练步分片）。",
                              "When it does not fit a single GPU, quantize the weights (int8/int4: AWQ, GPTQ) or split them "
                              "across GPUs with tensor parallelism (vLLM's --tensor-parallel-size), and serve with an "
                              "inference engine (vLLM, SGLang, TensorRT-LLM), not DDP/FSDP, which are training tools."))
        return
    if "inference" in topics:
        sec.headline = _t(lang, "这是推理/部署的问题，DDP/FSDP 是训练用的。单卡放不下时先量化权重（int8/int4，如 AWQ），或用张量并行，部署用 vLLM、"
                                "SGLang 这类推理引擎；告诉我模型和上下文长度，我可以估算权重和 KV cache。",
                          "This is about inference/serving; DDP and FSDP are for training. When a model does not "
                          "fit a single GPU quantize the weights (int8/int4, e.g. AWQ) or use tensor parallelism, and serve "
                          "with an engine such as vLLM or SGLang; "
                          "name the model and context length and I will size the weights and KV cache.")
        return
    if tpu:
        sec.headline = _t(lang, "TPU/JAX 上不用 DDP/FSDP：用 XLA 的分片（JAX 的 jax.sharding / pjit，或 PyTorch/XLA "
                                "的 SPMD 与 FSDP 封装）。",
                          "On TPU/JAX the tool is XLA sharding, not DDP/FSDP: jax.sharding / pjit in JAX, or "
                          "PyTorch/XLA's SPMD and its FSDP wrapper.")
        return
    sec.headline = _t(lang, "这个问题不在我能回答的范围内。我只回答 PyTorch 分布式训练（DDP、FSDP、HSDP、显存、通信）"
                            f"相关的问题，例如：“{_EXAMPLE_ZH}”",
                      "That is outside what I can help with. I answer questions about PyTorch distributed training "
                      f"(DDP, FSDP, HSDP, GPU memory, communication), for example: \"{_EXAMPLE_EN}\"")
    if "earlier_setup_kept" in ev.parsed.notices:
        sec.reasons.append(_t(lang, "你之前说的训练配置我还记着，可以接着问，比如：“换成多台机器呢？”",
                              "I still have the setup from earlier in this conversation; you can ask a follow-up "
                              "about it, e.g. \"what about several nodes?\""))


def _without_setup(ev: Evidence, d: Decision, say: Say, sec: Sections, cites: Citations) -> None:
    lang = ev.language
    direct = [_direct_text(ev, d, r, say, cites) for r in d.direct]
    direct = [x for x in direct if x]
    if direct:  # answered: the first sentence leads (the headline), the rest come before it once
        sec.direct_answer = _joined(direct[1:] if d.status == "ok" else direct, say)
    sec.headline = direct[0] if direct and d.status == "ok" else _t(
        lang, "结论取决于模型大小和显存：完整副本放得下就用 DDP（最简单），放不下就用 FSDP 分片；多机且机间网络慢时用 HSDP。"
              "告诉我模型和显卡，我按你的配置算。",
        "It depends on model size and GPU memory: DDP when a full replica fits (simplest), FSDP sharding when it "
        "does not; HSDP across nodes on a slow link. Tell me the model and GPUs and I will compute it for your setup.")


def _joined(sentences: list[str], say: Say) -> str | None:
    """Sentences shown as one paragraph, its figures still bound: the paragraph's keys are its
    sentences' keys in order (the renderer binds a paragraph as a whole)."""
    if not sentences:
        return None
    text = " ".join(sentences)
    if len(sentences) > 1:
        say.figure_keys[text] = [k for x in sentences for k in say.figure_keys.get(x, [])]
    return text


def _with_setup(ev: Evidence, d: Decision, say: Say, sec: Sections, cites: Citations) -> None:
    lang = ev.language
    direct = [x for x in (_direct_text(ev, d, r, say, cites) for r in d.direct) if x]
    sec.direct_answer = _joined(direct, say)
    conf = {"high": ("高", "high"), "medium": ("中", "medium"), "low": ("低", "low")}[d.confidence]
    if d.strategy == "none":
        rec = _t(lang, f"结论：按现在的配置哪种策略都放不下（置信度：{conf[0]}）。",
                 f"Verdict: nothing fits as asked (confidence: {conf[1]}).")
    else:
        name = config_name(d.chosen, lang) if d.chosen is not None else label(d.strategy, lang)
        alts = _t(lang, "、", ", ").join(label(a, lang) for a in d.alternatives)
        alt_text = _t(lang, f"；备选：{alts}", f"; alternatives: {alts}") if alts else ""
        rec = _t(lang, f"推荐：{name}（置信度：{conf[0]}{alt_text}）", f"Recommendation: {name} (confidence: {conf[1]}{alt_text})")
    sec.headline = rec  # the renderer prints the direct answer first, then this
    sec.table = [_row(c, d, lang) for c in d.rows]
    sec.reasons = [x for x in (_reason_text(ev, d, r, say) for r in d.reasons) if x]
    for fig in ev.stored:
        if fig.strategy not in (d.strategy, "ddp"):
            continue
        n = cites.add(fig.run_id, "bench", _t(lang, f"已存结果 {fig.run_id}", f"stored {fig.kind} {fig.run_id}"),
                      None, fig.summary)
        peak = say.val(fig.peak_gib, f"cite.{n}")
        if fig.kind == "simulation":
            sec.reasons.append(say.done(
                f"已存的模拟结果：{label(fig.strategy, lang)} 每卡峰值 {peak} GiB [{n}]。",
                f"A stored simulation measured a per-GPU peak of {peak} GiB for {label(fig.strategy, lang)} [{n}]."))
        else:
            sec.reasons.append(say.done(
                f"这个模型的实测记录：{label(fig.strategy, lang)} 每卡（每进程）峰值 {peak} GiB [{n}]。",
                f"A recorded run of this model: {label(fig.strategy, lang)} peaked at {peak} GiB per rank [{n}]."))
    sec.what_ifs = [x for x in (_reason_text(ev, d, r, say) for r in d.what_ifs) if x]
    if ev.scenarios:
        sec.reasons = _scenario_lines(ev, say, cites) + sec.reasons
    sec.howto = _howto(ev, d)


def _howto(ev: Evidence, d: Decision) -> list[HowTo]:
    from bot.howto import SnippetSpec, snippets

    r = ev.resolved
    if r is None or d.chosen is None:
        return []
    spec = SnippetSpec(strategy=d.strategy, nodes=r.nodes, gpus_per_node=r.gpus_per_node,
                       precision=r.setup.precision, checkpointing=checkpointing_on(ev, d.chosen),
                       bucket_view=d.chosen.variant in (BUCKET_FUSED, BUCKET_FUSED_CKPT),
                       device_type=_device(r)[0], backend=_device(r)[1])
    return snippets(spec, deepspeed=deepspeed_user(ev), language=ev.language)


def howto_for(strategy: str, resolved: Any, *, deepspeed: bool = False, language: str = "en") -> list[HowTo]:
    """How-to items for a strategy on a resolved setup (the web page's panel)."""
    from bot.howto import SnippetSpec, snippets

    device_type, backend = _device(resolved)
    spec = SnippetSpec(strategy=strategy, nodes=resolved.nodes, gpus_per_node=resolved.gpus_per_node,
                       precision=resolved.setup.precision, checkpointing=bool(resolved.setup.activation_checkpointing),
                       device_type=device_type, backend=backend)
    return snippets(spec, deepspeed=deepspeed, language=language)


def _device(resolved: Any) -> tuple[str, str]:
    """The card's torch device and collective backend for the how-to (Ascend: npu + hccl, ...)."""
    gpu = getattr(resolved, "gpu", None)
    return (getattr(gpu, "device_type", "cuda") or "cuda", getattr(gpu, "backend", "nccl") or "nccl")


def _row(c: Config, d: Decision, lang: str) -> TableRow:
    keys = {"total_gib": c.key("memory", "total_gib"), "usable_gib": c.key("memory", "usable_gib"),
            "fits": c.key("memory", "fits"), "max_micro_batch": c.key("memory", "max_micro_batch"),
            "vs_ddp": c.key("comm", "vs_ddp"), "step_seconds": c.key("time", "step_seconds")}
    if c.tokens_per_s_per_gpu:
        keys["tokens_per_s_per_gpu"] = c.key("throughput", "tokens_per_s_per_gpu")
    name = short_label(c.strategy, lang)
    if c.variant in _VARIANT_LABELS:
        name += f" + {_VARIANT_LABELS[c.variant][0 if lang == 'zh' else 1]}"
    return TableRow(strategy=c.strategy, variant=c.variant, label=name, total_gib=c.total_gib, usable_gib=c.usable_gib,
                    fits=c.fits, max_micro_batch=c.max_micro_batch, vs_ddp=c.vs_ddp, step_seconds=c.step_seconds,
                    tokens_per_s_per_gpu=round(c.tokens_per_s_per_gpu, 1) if c.tokens_per_s_per_gpu else None,
                    chosen=c is d.chosen, keys=keys)


def _scenario_lines(ev: Evidence, say: Say, cites: Citations) -> list[str]:
    lang = ev.language
    lines = [_t(lang, "不知道你的显卡，按常见的卡分别算了一下：", "You did not say which GPU, so here it is for common cards:")]
    for sc in ev.scenarios:
        mem = sc.estimate.memory
        ddp, fs = mem["ddp"], mem["fsdp_full_shard"]
        pick = next((s for s in ("ddp", "fsdp_full_shard") if mem[s].fits), "none")
        quote = (f"{calc_quote(sc.resolved)}: DDP {fmt(ddp.total_gib)} GiB per GPU "
                 f"({'fits' if ddp.fits else 'does not fit'}), FSDP full shard {fmt(fs.total_gib)} GiB "
                 f"({'fits' if fs.fits else 'does not fit'}), usable {fmt(ddp.usable_gib)} GiB")
        n = cites.add("calc", "calc", f"shardwise calculator: {sc.gpu}", None, quote)
        yes, no = _t(lang, "放得下", "fits"), _t(lang, "放不下", "does not fit")
        k = f"cite.{n}"
        count, mem_gb = say.val(sc.gpu_count, k), say.val(sc.memory_gb, k)
        dt, ft = say.val(ddp.total_gib, k), say.val(fs.total_gib, k)
        lines.append(say.done(
            f"{count} × {mem_gb} GB：DDP 每卡约 {dt} GiB，{yes if ddp.fits else no}；"
            f"FSDP 全分片每卡约 {ft} GiB，{yes if fs.fits else no} → {label(pick, lang)} [{n}]",
            f"{count} x {mem_gb} GB: DDP needs about {dt} GiB per GPU, "
            f"{yes if ddp.fits else no}; FSDP full shard about {ft} GiB, {yes if fs.fits else no} "
            f"-> {label(pick, lang)} [{n}]"))
    return lines


# --------------------------------------------------------------------------------------------
# Wording: reasons and what-ifs
# --------------------------------------------------------------------------------------------


def _ran_name(v: dict[str, Any], lang: str) -> str:
    """The strategy that ran out of memory, in the user's words (the ZeRO stage they ran)."""
    if v.get("stage") is not None:
        short = short_label(v["strategy"], lang)
        return f"ZeRO-{v['stage']}（即 {short}）" if lang == "zh" else f"ZeRO-{v['stage']} (i.e. {short})"
    return label(v["strategy"], lang)


def _oom_followup(ev: Evidence, r: Reason, say: Say) -> str:
    """After a reported OOM: what else it rules out, and what the estimate cannot explain."""
    lang, c, v = ev.language, say.c(), r.values
    name = _ran_name(v, lang)
    if r.code == "oom_dominated":
        others = ("、" if lang == "zh" else ", ").join(short_label(s, lang) for s in v["others"])
        return say.done(f"同样的设置下，{others} 每卡要的显存不比 {name} 少：激活一样，模型状态切得更少。所以同样会 OOM，也不推荐。",
                        f"With the same settings, {others} {'needs' if len(v['others']) == 1 else 'need'} at "
                        f"least as much per GPU as {name}: the same activations, less of the model state sharded. "
                        f"{'It' if len(v['others']) == 1 else 'They'} would run out too, so "
                        f"{'it is' if len(v['others']) == 1 else 'they are'} not recommended either.")
    cfg = v["config"]
    tot, use = say.cfg(cfg, "memory", "total_gib"), say.cfg(cfg, "memory", "usable_gib")
    assumed = [f for f in v["assumed"] if say.setup.get(f) is not None]
    if assumed:
        zh = "、".join(f"{field_name_text(f, 'zh')} {say.field(f)}" for f in assumed)
        en = " and ".join(f"{field_name_text(f, 'en')} {say.field(f)}" for f in assumed)
        ckpt_off = not say.setup.get("activation_checkpointing")
        return say.done(f"按这里假设的{zh}，{name} 每卡只要约 {tot} GiB（可用 {use} GiB）{c}，不该 OOM：实际跑的更大。"
                        f"激活随序列长度和 micro-batch 增长，加卡也分不掉；告诉我实际的值"
                        + ("，或先开激活检查点。" if ckpt_off else "。"),
                        f"At the assumed {en}, {name} needs only about {tot} GiB per GPU of {use} GiB{c} and "
                        f"should not run out: the real run was bigger. Activations grow with sequence length and "
                        f"micro-batch and no GPU count divides them; tell me the real values"
                        + (", or turn on activation checkpointing first." if ckpt_off else "."))
    ckpt_off = not say.setup.get("activation_checkpointing")
    return say.done(f"按你给的配置 {name} 每卡只要约 {tot} GiB（可用 {use} GiB）{c}，不该 OOM：多出来的显存不在这个估算里"
                    f"（注意力若存下完整的分数矩阵、个别超长样本、评估时更大的 batch、同卡上的其他进程、显存碎片），"
                    f"先看 OOM 报错里已分配和保留的数字" + ("；开激活检查点能去掉大部分激活，无论是哪种原因都是最稳的第一步。" if ckpt_off else "。"),
                    f"As you describe it, {name} needs only about {tot} GiB per GPU of {use} GiB{c} and should "
                    f"not run out: the rest is outside this estimate (an attention that stores its full score "
                    f"matrix, an unusually long sample, a bigger eval batch, another process on the card, "
                    f"fragmentation); read the allocated and reserved figures in the OOM message first"
                    + ("; activation checkpointing removes most activations whatever the cause, the safest first "
                       "step." if ckpt_off else "."))


def _reason_text(ev: Evidence, d: Decision, r: Reason, say: Say) -> str:  # noqa: C901 (one branch per code)
    lang, c = ev.language, say.c()
    v = r.values
    cfg: Config | None = v.get("config")
    code = r.code
    if code == "single_gpu":
        return say.done("只有单卡时没有东西可分片，DDP/FSDP 的选择只在多卡时才有意义。",
                        "With a single GPU there is nothing to shard across; DDP vs FSDP only matters with several GPUs.")
    if cfg is None and code not in ("lora_ddp_fits", "finetune_fits", "capacity", "link_assumed", "observed_oom",
                                    "oom_dominated", "optimizer_8bit"):
        return ""
    if code == "ddp_fits":
        assert cfg is not None
        return say.done(f"完整副本放得下：DDP 每卡约 {say.cfg(cfg, 'memory', 'total_gib')} GiB，可用 "
                        f"{say.cfg(cfg, 'memory', 'usable_gib')} GiB，最大 micro-batch {say.cfg(cfg, 'memory', 'max_micro_batch')}{c}。",
                        f"A full replica fits: DDP needs about {say.cfg(cfg, 'memory', 'total_gib')} GiB per GPU of "
                        f"{say.cfg(cfg, 'memory', 'usable_gib')} GiB usable, up to micro-batch "
                        f"{say.cfg(cfg, 'memory', 'max_micro_batch')}{c}.")
    if code == "ddp_too_big":
        assert cfg is not None
        if cfg.max_micro_batch >= 1 and not cfg.fits:
            return say.done(f"DDP 只能跑到 micro-batch {say.cfg(cfg, 'memory', 'max_micro_batch')}，而你要 "
                            f"{say.field('micro_batch')}{c}。",
                            f"DDP fits only up to micro-batch {say.cfg(cfg, 'memory', 'max_micro_batch')}, and you "
                            f"asked for {say.field('micro_batch')}{c}.")
        tot, use = say.cfg(cfg, "memory", "total_gib"), say.cfg(cfg, "memory", "usable_gib")
        if (say.setup.get("finetune") or "full") in ("lora", "qlora"):
            return say.done(f"DDP 每张卡都放一份完整的模型（冻结的基座权重加适配器）：每卡约 {tot} GiB，超过可用的 {use} GiB{c}。",
                            f"DDP keeps a full copy of the model (the frozen base weights plus the adapters) on every "
                            f"GPU: about {tot} GiB per GPU, more than the {use} GiB usable{c}.")
        buf = say.numbers.get(cfg.key("memory", "buffers_gib"), 0) or 0
        extra_zh = extra_en = ""
        if buf >= 1:
            b = say.cfg(cfg, "memory", "buffers_gib")
            extra_zh = f"（其中约 {b} GiB 是临时缓冲：DDP 默认的梯度桶副本、优化器一步的临时张量等）"
            extra_en = (f" (of which about {b} GiB are temporary buffers: DDP's default gradient-bucket copy, "
                        f"the optimizer step's temporaries and the like)")
        return say.done(f"DDP 每张卡都放一份完整的参数、梯度和优化器状态：每卡约 {tot} GiB{extra_zh}，超过可用的 {use} GiB{c}。",
                        f"DDP keeps a full copy of parameters, gradients and optimizer state on every GPU: about "
                        f"{tot} GiB per GPU{extra_en}, more than the {use} GiB usable{c}.")
    if code == "throughput":
        assert cfg is not None
        name = config_name(cfg, lang)
        fits_zh = f"{name} 放得下（每卡约 {say.cfg(cfg, 'memory', 'total_gib')} GiB，可用 {say.cfg(cfg, 'memory', 'usable_gib')} GiB）"
        fits_en = (f"{name} fits (about {say.cfg(cfg, 'memory', 'total_gib')} GiB per GPU of "
                   f"{say.cfg(cfg, 'memory', 'usable_gib')} GiB usable)")
        speed_zh = (f"micro-batch {say.cfg(cfg, 'throughput', 'micro_batch')} 时每卡约 "
                    f"{say.cfg(cfg, 'throughput', 'tokens_per_s_per_gpu')} tokens/s{c}")
        speed_en = (f"about {say.cfg(cfg, 'throughput', 'tokens_per_s_per_gpu')} tokens/s per GPU at micro-batch "
                    f"{say.cfg(cfg, 'throughput', 'micro_batch')}{c}")
        if v.get("among") == "checkpointing":
            return say.done(f"{fits_zh}，在开激活检查点的方案里估计吞吐最高：{speed_zh}；不开检查点的行按估算更快，但这个估算已经少算过一次真实峰值。",
                            f"{fits_en}, the fastest of the rows with activation checkpointing: {speed_en}; the rows "
                            f"without it are faster by the estimate, but the estimate has already missed a real "
                            f"peak once.")
        if v.get("among") == "headroom":
            return say.done(f"{fits_zh}，留的余量最大：{speed_zh}。",
                            f"{fits_en} with the most headroom: {speed_en}.")
        return say.done(
            f"{name} 放得下（每卡约 {say.cfg(cfg, 'memory', 'total_gib')} GiB，可用 {say.cfg(cfg, 'memory', 'usable_gib')} "
            f"GiB），估计吞吐最高：micro-batch {say.cfg(cfg, 'throughput', 'micro_batch')} 时每卡约 "
            f"{say.cfg(cfg, 'throughput', 'tokens_per_s_per_gpu')} tokens/s{c}。",
            f"{name} fits (about {say.cfg(cfg, 'memory', 'total_gib')} GiB per GPU of "
            f"{say.cfg(cfg, 'memory', 'usable_gib')} GiB usable) with the best estimated throughput: about "
            f"{say.cfg(cfg, 'throughput', 'tokens_per_s_per_gpu')} tokens/s per GPU at micro-batch "
            f"{say.cfg(cfg, 'throughput', 'micro_batch')}{c}.")
    if code == "simpler_within_tolerance":
        assert cfg is not None
        fast: Config = v["faster"]
        return say.done(f"{config_name(fast, lang)} 估计每卡 {say.cfg(fast, 'throughput', 'tokens_per_s_per_gpu')} tokens/s，"
                        f"与之相差不到 {say.num('decision.tolerance_pct')}%，所以选更简单的{c}。",
                        f"{config_name(fast, lang)} is estimated at {say.cfg(fast, 'throughput', 'tokens_per_s_per_gpu')}"
                        f" tokens/s per GPU, within {say.num('decision.tolerance_pct')}% of it, so the simpler one is "
                        f"preferred{c}.")
    if code == "comm_least":
        assert cfg is not None
        fs = ev.config("fsdp_full_shard")
        vs = say.cfg(fs, "comm", "vs_ddp") if fs else "?"
        return say.done(f"DDP 通信最少：FSDP 全分片每步的通信时间是 DDP 的 {vs} 倍{c}；放得下就不必分片。",
                        f"DDP communicates the least: FSDP full shard's communication takes {vs}x DDP's time per "
                        f"step{c}; when a replica fits there is no need to shard.")
    if code == "comm_cost":
        assert cfg is not None
        vs_value = cfg.vs_ddp
        if vs_value <= 1.05:
            return say.done(f"通信不比 DDP 多：每步约 {say.cfg(cfg, 'comm', 'gb_per_step')} GB，通信时间是 DDP 的 "
                            f"{say.cfg(cfg, 'comm', 'vs_ddp')} 倍，估计每步 {say.cfg(cfg, 'time', 'step_seconds')} 秒{c}。",
                            f"Communication costs no more than DDP's: about {say.cfg(cfg, 'comm', 'gb_per_step')} GB "
                            f"per step, {say.cfg(cfg, 'comm', 'vs_ddp')}x DDP's communication time, est. "
                            f"{say.cfg(cfg, 'time', 'step_seconds')} s per step{c}.")
        return say.done(f"代价是通信：每步约 {say.cfg(cfg, 'comm', 'gb_per_step')} GB，通信时间是 DDP 的 "
                        f"{say.cfg(cfg, 'comm', 'vs_ddp')} 倍，估计每步 {say.cfg(cfg, 'time', 'step_seconds')} 秒{c}。",
                        f"The price is communication: about {say.cfg(cfg, 'comm', 'gb_per_step')} GB per step, "
                        f"{say.cfg(cfg, 'comm', 'vs_ddp')}x DDP's communication time, est. "
                        f"{say.cfg(cfg, 'time', 'step_seconds')} s per step{c}.")
    if code == "slow_inter_node":
        assert cfg is not None
        link = _LINK_NAMES.get(str(say.setup.get("inter_node_link")), str(say.setup.get("inter_node_link")))
        fs = ev.config("fsdp_full_shard")
        return say.done(f"节点之间是 {link}（{say.field('inter_node_gbps')} Gb/s），比机内慢得多：HSDP 只在机内分片，"
                        f"跨机只做梯度 all-reduce；估计每步 {say.cfg(cfg, 'time', 'step_seconds')} 秒，全分片跨机约 "
                        f"{say.cfg(fs, 'time', 'step_seconds')} 秒{c}。",
                        f"The nodes are joined by {link} at {say.field('inter_node_gbps')} Gb/s, much slower than "
                            f"inside a node: HSDP shards within each node and only all-reduces gradients across "
                            f"nodes; est. {say.cfg(cfg, 'time', 'step_seconds')} s per step vs "
                            f"{say.cfg(fs, 'time', 'step_seconds')} s for full shard across all GPUs{c}.")
    if code == "accumulate":
        assert cfg is not None
        return say.done(f"你要的 micro-batch {say.field('micro_batch')} 放不下，{label(cfg.strategy, lang)} 最多到 "
                        f"{say.cfg(cfg, 'memory', 'max_micro_batch')}：用这个 micro-batch 加梯度累积，保持全局 batch 不变{c}。",
                        f"Micro-batch {say.field('micro_batch')} does not fit; {label(cfg.strategy, lang)} fits up to "
                        f"{say.cfg(cfg, 'memory', 'max_micro_batch')}: use that with gradient accumulation to keep "
                        f"your global batch{c}.")
    if code == "observed_oom":
        name = _ran_name(v, lang)
        if cfg is not None and not cfg.fits:  # the estimate says the same: worth saying with its figure
            why_zh = (f"估算也是如此：每卡约 {say.cfg(cfg, 'memory', 'total_gib')} GiB，可用 "
                      f"{say.cfg(cfg, 'memory', 'usable_gib')} GiB{c}")
            why_en = (f"the estimate agrees: about {say.cfg(cfg, 'memory', 'total_gib')} GiB per GPU of "
                      f"{say.cfg(cfg, 'memory', 'usable_gib')} GiB usable{c}")
        else:
            why_zh, why_en = "估算没覆盖到实际的峰值", "the estimate missed the real peak"
        if v.get("any_checkpointing"):
            return say.done(f"你报告 {name} 已经 OOM，又没说当时有没有开激活检查点，所以 {name} 开不开检查点都不推荐（{why_zh}）。",
                            f"You report {name} running out of memory and did not say whether activation "
                            f"checkpointing was on, so {name} is not recommended with or without it ({why_en}).")
        return say.done(f"你报告 {name} 已经 OOM，所以不再推荐原样的 {name}（{why_zh}）。",
                        f"You report {name} running out of memory, so it is not recommended as it was ({why_en}).")
    if code in ("oom_dominated", "oom_unexplained"):
        return _oom_followup(ev, r, say)
    if code == "thin_after_oom":
        assert cfg is not None
        return say.done(f"{config_name(cfg, lang)} 按估算只是勉强放得下（{say.cfg(cfg, 'memory', 'total_gib')} / "
                        f"{say.cfg(cfg, 'memory', 'usable_gib')} GiB，没有余量）{c}；你已经实际 OOM 过，这点差距在估算误差之内，"
                        f"所以不推荐它。",
                        f"{config_name(cfg, lang)} fits only without a margin by the estimate "
                        f"({say.cfg(cfg, 'memory', 'total_gib')} of {say.cfg(cfg, 'memory', 'usable_gib')} GiB){c}; "
                        f"you already hit a real out-of-memory error, and a gap that small is within the estimate's "
                        f"error, so it is not recommended.")
    if code == "tight":
        assert cfg is not None
        return say.done(f"余量很小（{say.cfg(cfg, 'memory', 'total_gib')} / {say.cfg(cfg, 'memory', 'usable_gib')} GiB），"
                        f"容易 OOM{c}。",
                        f"The margin is thin ({say.cfg(cfg, 'memory', 'total_gib')} of "
                        f"{say.cfg(cfg, 'memory', 'usable_gib')} GiB), so an allocator spike can OOM{c}.")
    if code in ("needs_checkpointing", "checkpointing_faster"):
        assert cfg is not None
        base: Config | None = v.get("base")
        name = label(cfg.strategy, lang)
        if code == "needs_checkpointing" and base is not None:
            return say.done(f"先开激活检查点（比 CPU 卸载快得多）：不开时 {name} 每卡要 {say.cfg(base, 'memory', 'total_gib')} GiB，"
                            f"开了只要 {say.cfg(cfg, 'memory', 'total_gib')} GiB{c}。",
                            f"Turn on activation checkpointing first (much faster than CPU offload): without it "
                            f"{name} needs {say.cfg(base, 'memory', 'total_gib')} GiB per GPU, with it "
                            f"{say.cfg(cfg, 'memory', 'total_gib')} GiB{c}.")
        return say.done(f"开激活检查点后能用更大的 micro-batch（{say.cfg(cfg, 'throughput', 'micro_batch')}），重计算的代价"
                        f"被抵消{c}。",
                        f"With activation checkpointing a larger micro-batch fits "
                        f"({say.cfg(cfg, 'throughput', 'micro_batch')}), which outweighs the recomputation{c}.")
    if code == "bucket_fused":
        assert cfg is not None
        base = v.get("base")
        if base is None:
            return ""
        return say.done(f"DDP 设 gradient_as_bucket_view=True 并用 fused AdamW：每卡从 {say.cfg(base, 'memory', 'total_gib')}"
                        f" GiB 降到 {say.cfg(cfg, 'memory', 'total_gib')} GiB{c}。",
                        f"DDP with gradient_as_bucket_view=True and fused AdamW: {say.cfg(base, 'memory', 'total_gib')}"
                        f" GiB per GPU drops to {say.cfg(cfg, 'memory', 'total_gib')} GiB{c}.")
    if code == "only_offload":
        assert cfg is not None
        return say.done(f"只有把参数、梯度和优化器状态卸载到 CPU 才放得下：每卡约 {say.cfg(cfg, 'memory', 'total_gib')} GiB，"
                        f"每台机器需要约 {say.cfg(cfg, 'memory', 'host_ram_gib')} GiB 主机内存{c}；速度会明显变慢。",
                        f"Only CPU offload of parameters, gradients and optimizer state fits: about "
                        f"{say.cfg(cfg, 'memory', 'total_gib')} GiB per GPU, and each node needs about "
                        f"{say.cfg(cfg, 'memory', 'host_ram_gib')} GiB of host RAM{c}; expect much slower steps.")
    if code == "host_ram_short":
        assert cfg is not None
        return say.done(f"CPU 卸载需要每台机器约 {say.cfg(cfg, 'memory', 'host_ram_gib')} GiB 主机内存，你的 "
                        f"{say.field('cpu_ram_gb')} GB 不够（要留出系统和数据加载的余量）{c}。",
                        f"CPU offload would need about {say.cfg(cfg, 'memory', 'host_ram_gib')} GiB of host RAM per "
                        f"node; your {say.field('cpu_ram_gb')} GB is not enough once the OS and data loaders get "
                        f"their share{c}.")
    if code == "nothing_fits":
        assert cfg is not None
        if cfg.strategy == "ddp" and (ev.resolved and ev.resolved.gpu_count == 1):
            return say.done(f"这张卡放不下：需要约 {say.cfg(cfg, 'memory', 'total_gib')} GiB，可用 "
                            f"{say.cfg(cfg, 'memory', 'usable_gib')} GiB{c}。",
                            f"It does not fit on this card: about {say.cfg(cfg, 'memory', 'total_gib')} GiB needed, "
                            f"{say.cfg(cfg, 'memory', 'usable_gib')} GiB usable{c}.")
        return say.done(f"即使 {config_name(cfg, lang)}，每卡也要约 {say.cfg(cfg, 'memory', 'total_gib')} GiB，超过可用的 "
                        f"{say.cfg(cfg, 'memory', 'usable_gib')} GiB{c}。",
                        f"Even with {config_name(cfg, lang)}, each GPU needs about {say.cfg(cfg, 'memory', 'total_gib')}"
                        f" GiB, more than the {say.cfg(cfg, 'memory', 'usable_gib')} GiB usable{c}.")
    return _what_if_text(ev, d, r, say)


def _what_if_text(ev: Evidence, d: Decision, r: Reason, say: Say) -> str:  # noqa: C901
    lang, c = ev.language, say.c()
    v = r.values
    cfg: Config | None = v.get("config")
    code = r.code
    if code == "knob_flips":
        assert cfg is not None
        base: Config = v["base"]
        knob = {CKPT: ("激活检查点", "activation checkpointing"),
                BUCKET_FUSED: ("gradient_as_bucket_view=True + fused AdamW", "gradient_as_bucket_view=True + fused AdamW")
                }.get(cfg.variant, (cfg.variant, cfg.variant))
        on = not (cfg.variant == CKPT and not checkpointing_on(ev, cfg))
        verb_zh, verb_en = ("打开", "With") if on else ("关掉", "Without")
        name = label(cfg.strategy, lang)
        thin = cfg.fits and not fits_with_margin(cfg)  # said, so it does not read as a clean fit
        state_zh = ("勉强放得下（没有余量）" if thin else "放得下") if cfg.fits else "放不下"
        state_en = ("fits, without a margin" if thin else "fits") if cfg.fits else "no longer fits"
        return say.done(f"{verb_zh}{knob[0]}：{name} 每卡 {say.cfg(base, 'memory', 'total_gib')} → "
                        f"{say.cfg(cfg, 'memory', 'total_gib')} GiB，{state_zh}{c}。",
                        f"{verb_en} {knob[1]}, {name} goes from {say.cfg(base, 'memory', 'total_gib')} to "
                        f"{say.cfg(cfg, 'memory', 'total_gib')} GiB per GPU and {state_en}{c}.")
    if code == "ddp_mb_limit":
        assert cfg is not None
        shard: Config | None = v.get("shard")
        return say.done(f"如果需要 micro-batch 超过 {say.cfg(cfg, 'memory', 'max_micro_batch')}，DDP 会 OOM；那时换 FSDP "
                        f"全分片（最多 {say.cfg(shard, 'memory', 'max_micro_batch') if shard else '?'}）{c}。",
                        f"If you need a micro-batch above {say.cfg(cfg, 'memory', 'max_micro_batch')}, DDP runs out of "
                        f"memory; switch to FSDP full shard then (fits up to "
                        f"{say.cfg(shard, 'memory', 'max_micro_batch') if shard else '?'}){c}.")
    if code == "shard_mb_limit":
        assert cfg is not None
        # checkpointing is only offered when this row runs without it
        more_zh, more_en = (("加卡或用梯度累积", "add GPUs or accumulate gradients") if checkpointing_on(ev, cfg)
                            else ("开激活检查点、加卡或用梯度累积",
                                  "turn on activation checkpointing, add GPUs or accumulate gradients"))
        return say.done(f"{label(cfg.strategy, lang)} 最大 micro-batch 是 {say.cfg(cfg, 'memory', 'max_micro_batch')}{c}；"
                        f"更大就{more_zh}。",
                        f"{label(cfg.strategy, lang)} fits up to micro-batch {say.cfg(cfg, 'memory', 'max_micro_batch')}"
                        f"{c}; beyond that {more_en}.")
    if code == "lora_ddp_fits":
        return say.done(f"如果改用 LoRA（只训练适配器），DDP 每卡约 {say.num('lora.memory.ddp.total_gib')} GiB，放得下{c}。",
                        f"With LoRA instead of full fine-tuning (only the adapters train), DDP needs about "
                        f"{say.num('lora.memory.ddp.total_gib')} GiB per GPU and fits{c}.")
    if code == "finetune_fits":
        mode = {"lora": "LoRA", "qlora": "QLoRA"}[v["finetune"]]
        key = variant_key(v["variant"], f"memory.{v['strategy']}.total_gib")
        name = label(v["strategy"], lang)
        if v.get("checkpointing"):
            return say.done(f"改用 {mode} 并打开激活检查点：{name} 每卡约 {say.num(key)} GiB，放得下{c}。",
                            f"Switch to {mode} with activation checkpointing: {name} needs about {say.num(key)} GiB "
                            f"per GPU and fits{c}.")
        return say.done(f"改用 {mode}：{name} 每卡约 {say.num(key)} GiB，放得下{c}。",
                        f"Switch to {mode}: {name} needs about {say.num(key)} GiB per GPU and fits{c}.")
    if code == "optimizer_8bit":
        key = variant_key(v["variant"], f"memory.{v['strategy']}.total_gib")
        now = f"memory.{v['strategy']}.total_gib"
        name = label(v["strategy"], lang)
        verdict_zh, verdict_en = ("，放得下", " and fits") if v["fits"] else ("，仍放不下", ", still too much")
        # no digits outside the bound figures ("8-bit" would read as a figure): the optimizer's names
        return say.done(f"换成 bitsandbytes 的量化 AdamW（optim: adamw_8bit 或 paged_adamw_8bit，仍是全参微调）：{name} 每卡从 "
                        f"{say.num(now)} GiB 降到约 {say.num(key)} GiB{verdict_zh}{c}。",
                        f"Use bitsandbytes' quantized AdamW (optim adamw_8bit or paged_adamw_8bit, still full "
                        f"fine-tuning): {name} drops from {say.num(now)} GiB per GPU to about {say.num(key)} GiB"
                        f"{verdict_en}{c}.")
    if code == "capacity":
        cap = v["capacity"]
        name = label(cap.strategy, lang)
        ck_zh, ck_en = _capacity_needs(cap)
        return say.done(f"加到 {say.num('capacity.gpu_count')} 张同样的卡{ck_zh}：{name} 每卡约 "
                        f"{say.num(f'capacity.memory.{cap.strategy}.total_gib')} GiB，放得下{c}。",
                        f"With {say.num('capacity.gpu_count')} of these GPUs{ck_en}, {name} needs about "
                        f"{say.num(f'capacity.memory.{cap.strategy}.total_gib')} GiB per GPU and fits{c}.")
    if code == "smaller_mb":
        return say.done("把 micro-batch 降下来，用梯度累积补足全局 batch。",
                        "Lower the micro-batch and use gradient accumulation for the global batch.")
    if code == "single_node":
        assert cfg is not None
        s = v["single_strategy"]
        if not v["single_fits"]:
            return say.done(f"单机放不下（{label(s, lang)} 每卡 {say.num(f'single_node.memory.{s}.total_gib')} GiB），"
                            f"所以确实需要多机{c}。",
                            f"A single node does not fit ({label(s, lang)} needs "
                            f"{say.num(f'single_node.memory.{s}.total_gib')} GiB per GPU), so the nodes are needed{c}.")
        return say.done(f"和单机比：单机 {label(s, lang)} 每步 {say.num(f'single_node.time.{s}.step_seconds')} 秒，"
                        f"多机方案每步 {say.cfg(cfg, 'time', 'step_seconds')} 秒{c}；每步时间差不多甚至更长时，多机只是在等网络。",
                        f"Compared with a single node: {label(s, lang)} there takes "
                        f"{say.num(f'single_node.time.{s}.step_seconds')} s per step, the multi-node setup "
                        f"{say.cfg(cfg, 'time', 'step_seconds')} s{c}; when a step is not much shorter, the extra "
                        f"nodes mostly wait on the network.")
    if code == "comm_heavy":
        assert cfg is not None
        return say.done(f"通信占每步约 {say.cfg(cfg, 'comm', 'share_of_step_pct')}%{c}：用梯度累积（多个 micro-batch 才同步一次，"
                        f"FSDP 下用 no_sync / set_requires_gradient_sync(False)）可以少同步。",
                        f"Communication is about {say.cfg(cfg, 'comm', 'share_of_step_pct')}% of the step{c}: "
                        f"accumulate gradients to sync less often (no_sync in DDP, "
                        f"set_requires_gradient_sync(False) in FSDP2).")
    if code == "link_assumed":
        link = _LINK_NAMES.get(str(v.get("link")), str(v.get("link")))
        return say.done(f"节点间带宽按默认的 {link} {say.field('inter_node_gbps')} Gb/s 算的，它决定了上面的结论：告诉我实际的网络。",
                        f"The link between nodes was assumed to be {link} at {say.field('inter_node_gbps')} Gb/s (a "
                        f"default), and it drives this verdict: tell me yours.")
    if code == "hsdp_if_slow":
        return say.done("如果节点间网络慢（以太网），改用 HSDP：分片流量留在机内，跨机只同步梯度。",
                        "If the link between nodes is slow (Ethernet), use HSDP: sharding traffic stays inside each "
                        "node, only gradients cross nodes.")
    if code == "fast_link_full_shard":
        return say.done("如果节点间换成 InfiniBand 这样的快网络，跨所有卡全分片也可以。",
                        "With a fast inter-node link such as InfiniBand, full shard across all GPUs also works.")
    return ""


# --------------------------------------------------------------------------------------------
# The question asked
# --------------------------------------------------------------------------------------------



def _compare_text(v: dict[str, Any], say: Say, lang: str, c: str) -> str:
    """"A or B?" answered for this setup: the winner, with throughput, memory and communication."""
    a, b = v["pair"]
    winner = v["winner"]
    if winner is None:
        return say.done(f"{label(a, lang)} 和 {label(b, lang)} 按这个配置都放不下{c}。",
                        f"Neither {label(a, lang)} nor {label(b, lang)} fits this setup as asked{c}.")
    other = b if winner == a else a
    wc: Config | None = v["a"] if winner == a else v["b"]
    oc: Config | None = v["b"] if winner == a else v["a"]
    if wc is None:
        return ""
    if oc is None:
        return say.done(f"选 {label(winner, lang)}：{label(other, lang)} 放不下，{label(winner, lang)} 每卡约 "
                        f"{say.cfg(wc, 'memory', 'total_gib')} GiB{c}。",
                        f"{label(winner, lang)}: {label(other, lang)} does not fit, {label(winner, lang)} needs "
                        f"about {say.cfg(wc, 'memory', 'total_gib')} GiB per GPU{c}.")
    return say.done(f"选 {label(winner, lang)}：估计每卡 {say.cfg(wc, 'throughput', 'tokens_per_s_per_gpu')} tokens/s，"
                    f"{label(other, lang)} 是 {say.cfg(oc, 'throughput', 'tokens_per_s_per_gpu')}；每卡显存 "
                    f"{say.cfg(wc, 'memory', 'total_gib')} 对 {say.cfg(oc, 'memory', 'total_gib')} GiB，通信时间是 DDP 的 "
                    f"{say.cfg(wc, 'comm', 'vs_ddp')} 倍对 {say.cfg(oc, 'comm', 'vs_ddp')} 倍{c}。",
                    f"{label(winner, lang)}: an estimated {say.cfg(wc, 'throughput', 'tokens_per_s_per_gpu')} "
                    f"tokens/s per GPU vs {say.cfg(oc, 'throughput', 'tokens_per_s_per_gpu')} for "
                    f"{label(other, lang)}; {say.cfg(wc, 'memory', 'total_gib')} vs "
                    f"{say.cfg(oc, 'memory', 'total_gib')} GiB per GPU, communication "
                    f"{say.cfg(wc, 'comm', 'vs_ddp')}x vs {say.cfg(oc, 'comm', 'vs_ddp')}x DDP's time{c}.")


def _asked_text(v: dict[str, Any], say: Say, lang: str, c: str) -> str:
    """"Should I use X?" answered yes or no first, with X's best configuration beside the pick."""
    asked, best, chosen = label(v["asked"], lang), v["best"], v["chosen"]
    if v["verdict"] == "no_fit":
        base: Config | None = v["base"]
        if base is None:
            return ""
        return say.done(f"不行：{asked} 按这个配置放不下（每卡约 {say.cfg(base, 'memory', 'total_gib')} GiB，可用 "
                        f"{say.cfg(base, 'memory', 'usable_gib')} GiB）{c}。",
                        f"No: {asked} does not fit this setup (about {say.cfg(base, 'memory', 'total_gib')} GiB per "
                        f"GPU of {say.cfg(base, 'memory', 'usable_gib')} GiB usable){c}.")
    mine, pick = config_name(best, lang), config_name(chosen, lang)
    if v["verdict"] == "yes":
        return say.done(f"是的：{mine} 就是这里的推荐，估计每卡 {say.cfg(best, 'throughput', 'tokens_per_s_per_gpu')} "
                        f"tokens/s，每卡显存约 {say.cfg(best, 'memory', 'total_gib')} GiB{c}。",
                        f"Yes: {mine} is the pick here, an estimated {say.cfg(best, 'throughput', 'tokens_per_s_per_gpu')} "
                        f"tokens/s per GPU at about {say.cfg(best, 'memory', 'total_gib')} GiB per GPU{c}.")
    if v["verdict"] == "close":
        return say.done(f"可以，但不必：{mine} 估计每卡 {say.cfg(best, 'throughput', 'tokens_per_s_per_gpu')} tokens/s，"
                        f"和推荐的 {pick}（{say.cfg(chosen, 'throughput', 'tokens_per_s_per_gpu')}）相差不到 "
                        f"{say.num('decision.tolerance_pct')}%，所以选更简单的那个{c}。",
                        f"You can, but it buys little: {mine} is estimated at "
                        f"{say.cfg(best, 'throughput', 'tokens_per_s_per_gpu')} tokens/s per GPU, within "
                        f"{say.num('decision.tolerance_pct')}% of the recommended {pick} "
                        f"({say.cfg(chosen, 'throughput', 'tokens_per_s_per_gpu')}), so the simpler one is preferred{c}.")
    return say.done(f"不建议：{mine} 放得下，但估计每卡只有 {say.cfg(best, 'throughput', 'tokens_per_s_per_gpu')} tokens/s，"
                    f"推荐的 {pick} 是 {say.cfg(chosen, 'throughput', 'tokens_per_s_per_gpu')}{c}。",
                    f"No: {mine} fits but is estimated at {say.cfg(best, 'throughput', 'tokens_per_s_per_gpu')} tokens/s "
                    f"per GPU, against {say.cfg(chosen, 'throughput', 'tokens_per_s_per_gpu')} for the recommended "
                    f"{pick}{c}.")


def _direct_text(ev: Evidence, d: Decision, r: Reason, say: Say, cites: Citations) -> str:  # noqa: C901
    lang, c = ev.language, say.c()
    v = r.values
    code = r.code
    if code == "compare":
        return _compare_text(v, say, lang, c)
    if code == "asked_strategy":
        return _asked_text(v, say, lang, c)
    if code == "feasible":
        fit: Config | None = v["chosen"]
        if fit is None:
            return say.done("不够：按这个配置哪种策略都放不下，见下面的改法。",
                            "No: nothing fits this setup as asked; see what would change it below.")
        return say.done(f"够：{config_name(fit, lang)} 放得下，每卡约 {say.cfg(fit, 'memory', 'total_gib')} GiB（可用 "
                        f"{say.cfg(fit, 'memory', 'usable_gib')} GiB）{c}。",
                        f"Yes: {config_name(fit, lang)} fits, about {say.cfg(fit, 'memory', 'total_gib')} GiB per GPU "
                        f"of {say.cfg(fit, 'memory', 'usable_gib')} GiB usable{c}.")
    if code == "log_zero2_step":
        row: Config | None = v.get("config")
        if row is None:
            return ""
        asked, copy = say.val(v["asked"], "turn"), say.num("memory.fsdp_shard_grad_op.zero2_fp32_grad_copy_gib")
        return say.done(f"日志里失败的那次分配（Tried to allocate {asked} GiB）正是 ZeRO-2 在 optimizer step 时给本卡梯度分区做的 "
                        f"fp32 副本（{copy} GiB）{c}：ZeRO-2 每张卡都存全部半精度权重，这一步每卡约 "
                        f"{say.cfg(row, 'memory', 'total_gib')} GiB，超过可用的 {say.cfg(row, 'memory', 'usable_gib')} GiB{c}。",
                        f"The allocation that failed in your log (Tried to allocate {asked} GiB) is ZeRO-2's fp32 copy "
                        f"of this GPU's gradient partition, made at the optimizer step ({copy} GiB){c}: ZeRO-2 keeps "
                        f"every half-precision weight on each GPU, so that step needs about {say.cfg(row, 'memory', 'total_gib')} "
                        f"GiB per GPU, more than the {say.cfg(row, 'memory', 'usable_gib')} GiB usable{c}.")
    if code == "need_checkpointing":
        without: Config | None = v["without"]
        withc: Config | None = v["with"]
        if v["needed"] and withc is not None:
            return say.done(f"需要：不开激活检查点哪种策略都放不下；开了以后 {config_name(withc, lang)} 每卡约 "
                            f"{say.cfg(withc, 'memory', 'total_gib')} GiB，放得下{c}。",
                            f"Yes: without activation checkpointing nothing fits; with it "
                            f"{label(withc.strategy, lang)} needs about {say.cfg(withc, 'memory', 'total_gib')} GiB "
                            f"per GPU and fits{c}.")
        if without is not None:
            return say.done(f"不需要：不开激活检查点 {config_name(without, lang)} 每卡约 "
                            f"{say.cfg(without, 'memory', 'total_gib')} GiB 就放得下（可用 "
                            f"{say.cfg(without, 'memory', 'usable_gib')} GiB）{c}；只有想用更大的 micro-batch 时才开。",
                            f"No: without activation checkpointing {config_name(without, lang)} needs about "
                            f"{say.cfg(without, 'memory', 'total_gib')} GiB per GPU of "
                            f"{say.cfg(without, 'memory', 'usable_gib')} GiB usable{c}; turn it on only to fit a "
                            f"larger micro-batch.")
        return say.done("开不开激活检查点都放不下，见下面的改法。",
                        "Checkpointing alone does not make it fit; see what would change it below.")
    if code == "capacity_answer":
        cap = v["capacity"]
        if cap.gpu_count is None:
            return say.done("试到最多的卡数也放不下（即使打开激活检查点、分块计算交叉熵）：需要 LoRA/QLoRA、更短的序列或更大显存的卡。",
                            "Even the largest GPU count tried does not fit (with activation checkpointing and a "
                            "chunked cross-entropy too): it needs LoRA/QLoRA, shorter sequences or larger GPUs.")
        ck_zh, ck_en = _capacity_needs(cap)
        return say.done(f"至少需要 {say.num('capacity.gpu_count')} 张这样的卡{ck_zh}：{label(cap.strategy, lang)} 每卡约 "
                        f"{say.num(f'capacity.memory.{cap.strategy}.total_gib')} GiB{c}。",
                        f"At least {say.num('capacity.gpu_count')} of these GPUs{ck_en}: {label(cap.strategy, lang)} "
                        f"needs about {say.num(f'capacity.memory.{cap.strategy}.total_gib')} GiB per GPU there{c}.")
    if code == "ddp_knobs":
        knob: Config = v["config"]
        base: Config | None = v.get("base")
        if base is None:
            return ""
        verdict_zh = "就放得下" if knob.fits and not base.fits else ("仍放不下" if not knob.fits else "余量更大")
        verdict_en = "and it fits" if knob.fits and not base.fits else ("and it still does not fit" if not knob.fits
                                                                       else "for more headroom")
        return say.done(f"DDP 的 gradient_as_bucket_view=True 加 fused AdamW 去掉梯度桶副本和优化器临时张量：每卡 "
                        f"{say.cfg(base, 'memory', 'total_gib')} → {say.cfg(knob, 'memory', 'total_gib')} GiB，{verdict_zh}{c}。",
                        f"DDP's gradient_as_bucket_view=True plus fused AdamW remove the gradient-bucket copy and the "
                        f"optimizer temporaries: {say.cfg(base, 'memory', 'total_gib')} -> "
                        f"{say.cfg(knob, 'memory', 'total_gib')} GiB per GPU, {verdict_en}{c}.")
    if code == "why_fsdp_slower":
        fs: Config | None = v["fsdp"]
        ddp: Config | None = v["ddp"]
        if fs is None or ddp is None:
            return ""
        return say.done(f"FSDP 每步多出参数 all-gather：通信时间是 DDP 的 {say.cfg(fs, 'comm', 'vs_ddp')} 倍，估计每步 "
                        f"{say.cfg(fs, 'time', 'step_seconds')} 秒对 DDP 的 {say.cfg(ddp, 'time', 'step_seconds')} 秒{c}；"
                        f"micro-batch 小、没有按 block 包装或预取时，这部分通信盖不住。",
                        f"FSDP adds parameter all-gathers every step: {say.cfg(fs, 'comm', 'vs_ddp')}x DDP's "
                        f"communication time, est. {say.cfg(fs, 'time', 'step_seconds')} s per step vs "
                        f"{say.cfg(ddp, 'time', 'step_seconds')} s for DDP{c}; with a small micro-batch, no per-block "
                        f"wrapping or no prefetch that traffic is not hidden behind compute.")
    if code == "why_multi_node_slow":
        cfg: Config = v["config"]
        if v.get("link_assumed"):
            link = _LINK_NAMES.get(say.field("inter_node_link"), say.field("inter_node_link"))
            return say.done(f"如果机间网络是假设的 {link} {say.field('inter_node_gbps')} Gb/s（每台机器合计；告诉我你的实际网络），"
                            f"通信会占每步约 {say.cfg(cfg, 'comm', 'share_of_step_pct')}%（每步 "
                            f"{say.cfg(cfg, 'time', 'step_seconds')} 秒）{c}；多机变慢通常就慢在这里。",
                            f"If the link between nodes is the assumed {link} at {say.field('inter_node_gbps')} Gb/s "
                            f"per node (tell me yours), communication would be about "
                            f"{say.cfg(cfg, 'comm', 'share_of_step_pct')}% of a {say.cfg(cfg, 'time', 'step_seconds')} s "
                            f"step{c}: that is where a multi-node slowdown usually comes from.")
        return say.done(f"慢在通信：通信占每步约 {say.cfg(cfg, 'comm', 'share_of_step_pct')}%（每步 "
                        f"{say.cfg(cfg, 'time', 'step_seconds')} 秒）{c}。",
                        f"It is the communication: about {say.cfg(cfg, 'comm', 'share_of_step_pct')}% of a "
                        f"{say.cfg(cfg, 'time', 'step_seconds')} s step{c}.")
    if code == "zero_mapping":
        stage = v.get("stage")
        strategy = v.get("strategy")
        parts_zh, parts_en = [], []
        if stage is not None and stage in ZERO_TO_STRATEGY:
            mapped = ZERO_TO_STRATEGY[stage]
            parts_zh.append(f"ZeRO-{stage} 对应 {label(mapped, lang)}" + ("（ZeRO-1 只分片优化器状态，FSDP 没有完全一样的模式）"
                                                                         if stage == 1 else ""))
            parts_en.append(f"ZeRO-{stage} corresponds to {label(mapped, lang)}" + (
                " (ZeRO-1 shards only the optimizer state; FSDP has no exact match)" if stage == 1 else ""))
        if strategy and strategy in ("ddp", "fsdp_shard_grad_op", "fsdp_full_shard", "fsdp_hybrid_shard",
                                     "fsdp_full_shard_offload"):
            zero = {"ddp": "ZeRO-0", "fsdp_shard_grad_op": "ZeRO-2", "fsdp_full_shard": "ZeRO-3",
                    "fsdp_hybrid_shard": "ZeRO-3 + hpZ", "fsdp_full_shard_offload": "ZeRO-3 + offload"}[strategy]
            plain_zh, plain_en = ("，即不分片的普通数据并行", ", plain data parallelism without sharding") \
                if strategy == "ddp" else ("", "")
            parts_zh.append(f"用 DeepSpeed 的话推荐 {zero}（配置见下{plain_zh}）")
            parts_en.append(f"in DeepSpeed terms the recommendation is {zero} (config below{plain_en})")
        if not parts_zh:
            parts_zh.append("DeepSpeed 的 ZeRO-2 对应 FSDP 的 SHARD_GRAD_OP，ZeRO-3 对应 FULL_SHARD，ZeRO 的 offload 对应 FSDP 的 CPU 卸载")
            parts_en.append("DeepSpeed ZeRO-2 corresponds to FSDP SHARD_GRAD_OP, ZeRO-3 to FULL_SHARD, and ZeRO "
                            "offload to FSDP CPU offload")
        en = "; ".join(parts_en)
        return say.done("；".join(parts_zh) + "。", en[:1].upper() + en[1:] + ".")
    if code == "memory_not_divided":
        adapters = v.get("finetune") in ("lora", "qlora")
        mode = "QLoRA" if v.get("finetune") == "qlora" else "LoRA"
        sharded: Config | None = v.get("config")
        lora_zh = (f"{mode} 下 ZeRO-1/2（SHARD_GRAD_OP）只分片梯度和优化器状态，它们只属于很小的适配器，冻结的基座权重每卡一份，所以比 DDP "
                   f"几乎省不了；ZeRO-3（FULL_SHARD）才把基座权重也切开。" if adapters else
                   "ZeRO-1/2（SHARD_GRAD_OP）不切参数；用 LoRA 时梯度和优化器状态只属于很小的适配器，它们几乎省不了显存。")
        lora_en = (f"With {mode}, ZeRO-1/2 (SHARD_GRAD_OP) shards only gradients and optimizer state, which belong to "
                   f"the small adapters, while every GPU keeps the whole frozen base, so it saves almost nothing over "
                   f"DDP; ZeRO-3 (FULL_SHARD) shards the base weights too." if adapters else
                   "ZeRO-1/2 (SHARD_GRAD_OP) never shards the parameters; under LoRA the gradients and optimizer "
                   "state it shards belong to the small adapters and save almost nothing.")
        if not v.get("zero", True):
            lora_zh = lora_en = ""
        cache_zh = ("监控里看到的占用还包括 PyTorch 缓存分配器留着的缓存（reserved）。没有逐层包装（FSDP1 没设 auto_wrap_policy，"
                    "FSDP2 没有逐个 block 调 fully_shard）时整个模型是一个单元，一次 all-gather 全部参数，峰值就和不分片一样。")
        cache_en = ("The usage a monitor shows also includes the PyTorch caching allocator's reserved cache. Without "
                    "nested wrapping (no auto_wrap_policy in FSDP1, no fully_shard per block in FSDP2) the whole "
                    "model is one unit, all-gathered at once, so the peak holds every parameter as if unsharded.")
        if sharded is not None:
            return say.done(
                f"加卡能分掉的是模型状态，分不掉激活值：这里 FSDP 全分片（ZeRO-3）每卡参数约 "
                f"{say.cfg(sharded, 'memory', 'params_gib')} GiB，激活值约 {say.cfg(sharded, 'memory', 'activations_gib')} GiB，"
                f"激活是每张卡为自己的 micro-batch 存的，卡再多也不变{c}。{lora_zh}{cache_zh}",
                f"More GPUs divide the model state, not the activations: here FSDP full shard (ZeRO-3) holds about {say.cfg(sharded, 'memory', 'params_gib')} GiB "
                f"of parameters per GPU but about {say.cfg(sharded, 'memory', 'activations_gib')} GiB of activations, "
                f"which each GPU keeps for its own micro-batch whatever the GPU count{c}. {lora_en + ' ' if lora_en else ''}{cache_en}")
        return say.done(
            f"分片（ZeRO、FSDP）切的是模型状态，不切激活值：每张卡为自己的 micro-batch 存激活，卡再多也不变，序列长、micro-batch "
            f"大时它占大头。{lora_zh}{cache_zh}",
            f"Sharding (ZeRO, FSDP) divides the model state, not the activations: each GPU keeps the activations "
            f"of its own micro-batch whatever the GPU count, and at long sequences or a large micro-batch they "
            f"dominate. {lora_en + ' ' if lora_en else ''}{cache_en}")
    if code == "lora_sharding_gain":
        mode = "QLoRA" if v.get("finetune") == "qlora" else "LoRA"
        return say.done(f"{mode} 下 ZeRO-3/FULL_SHARD 比 ZeRO-2/SHARD_GRAD_OP 多分片的只有冻结的基座权重；梯度和优化器状态只属于很小的适配器，"
                        f"而激活值两者都不分片：micro-batch 大、序列长时激活占大头，两者的显存就差不多。监控里看到的占用还包括 PyTorch "
                        f"缓存分配器留着的缓存（reserved），比实际分配的多。",
                        f"With {mode}, all ZeRO-3/FULL_SHARD shards beyond ZeRO-2/SHARD_GRAD_OP is the frozen base "
                        f"weights: gradients and optimizer state belong to the small adapters, and neither shards "
                        f"activations, which dominate at a large micro-batch or a long sequence, so the two use about "
                        f"the same memory. The usage a monitor shows also includes the PyTorch caching allocator's "
                        f"cache (reserved), more than what is allocated.")
    if code == "from_passages":
        passages = v["passages"]
        if not passages:
            return ""
        p = passages[0]
        n = cites.add(p.id, p.kind, p.title, p.url, p.quote)
        line = f"{p.quote} [{n}]"
        count = _figure_count(p.quote)
        if count:
            say.figure_keys[line] = [f"cite.{n}"] * count
        return line
    return ""


def _figure_count(text: str) -> int:
    from bot.figures import numbers_in_text

    return len(numbers_in_text(text))


# --------------------------------------------------------------------------------------------
# Knowledge: passages and forum verdicts
# --------------------------------------------------------------------------------------------


def _passages(ev: Evidence, sec: Sections, cites: Citations) -> None:
    for p in ev.passages:
        n = cites.add(p.id, p.kind, p.title, p.url, p.quote)
        line = f"{p.quote} [{n}]"
        if line in (sec.direct_answer or "") or line in (sec.headline or "") or any(line in x for x in sec.passages):
            continue
        from bot.figures import numbers_in_text

        count = len(numbers_in_text(p.quote))
        if count:
            sec.figure_keys[line] = [f"cite.{n}"] * count
        sec.passages.append(line)


_VERDICT_WORDS = {
    "supported": ("成立", "holds"), "contradicted": ("不成立", "does not hold"),
    "unverifiable": ("无法核实", "cannot be checked"), "misleading": ("有误导", "misleading"),
    "holds_only_when": ("有条件成立", "holds only when"),
}


def _forum(ev: Evidence, d: Decision, say: Say, sec: Sections, cites: Citations) -> None:
    """Each applicable claim with its verdict; a claim whose condition this setup does not meet
    (or does not state) is shown as "depends on X". Communication and memory claims are checked
    against this setup's own figures; other corrections keep their first sentence when a doc
    sentence holds every figure in it."""
    lang = ev.language
    sep = "" if lang == "zh" else " "
    for claim in ev.claims:
        n = cites.add(claim.forum_id, "forum", claim.title or claim.forum_id, claim.url or None, claim.quote)
        words = _VERDICT_WORDS.get(claim.verdict, (claim.verdict, claim.verdict))
        judgement = getattr(claim, "judgement", "judged")
        applies = bool(getattr(claim, "applies", True)) and judgement in ("judged", "holds", "does_not_hold")
        note = str(getattr(claim, "condition_note", "") or "")
        if not applies or judgement in ("holds", "does_not_hold"):
            # the claim judged against its condition: the knowledge layer's wording; the condition's
            # figures are in the forum citation's title, so they are bound to it
            cond = claim.condition or _t(lang, "配置", "the setup")
            text = (note.rstrip("。.") + _t(lang, "。", ".")) if note else _t(lang, f"取决于：{cond}。", f"depends on {cond}.")
            from bot.figures import numbers_in_text

            count = len(numbers_in_text(text))
            if count:
                say.figure_keys[text] = [f"cite.{n}"] * count
        else:
            text = say.done(f"判定：{words[0]}。", f"verdict: {words[1]}.")
            extra = _claim_check(ev, claim, say, cites)
            if extra:
                keys = say.figure_keys.get(extra, [])
                text = text + sep + extra
                if keys:
                    say.figure_keys[text] = keys
        sec.forum.append(ForumVerdictItem(forum_id=claim.forum_id, quote=claim.quote,
                                          verdict=claim.verdict if claim.verdict in _VERDICT_WORDS else "unverifiable",  # type: ignore[arg-type]
                                          condition=claim.condition or None, text=text, citation=n))


def _claim_check(ev: Evidence, claim: Any, say: Say, cites: Citations) -> str:
    c = say.c()
    topic = getattr(claim, "topic", "")
    if topic == "communication":
        doc_n = _cite_doc_for(claim.doc_ids, "1.5x", cites)
        fs = ev.config("fsdp_full_shard") if ev.estimate is not None else None
        d = f" [{doc_n}]" if doc_n else ""
        general_zh = f"按元素数，全分片是 DDP 的 {say.val(1.5, f'cite.{doc_n}')} 倍{d}" if doc_n else ""
        general_en = f"Counted in elements full shard moves {say.val(1.5, f'cite.{doc_n}')}x DDP's volume{d}" \
            if doc_n else ""
        if fs is not None:
            vs = say.cfg(fs, "comm", "vs_ddp")
            zh = (general_zh + "；" if general_zh else "") + f"对这个配置（算上数据类型），FSDP 全分片每步的通信时间是 DDP 的 {vs} 倍{c}。"
            en = (general_en + "; " if general_en else "") + (f"for this setup, with its dtypes, FSDP full shard's "
                                                              f"communication takes {vs}x DDP's time per step{c}.")
            return say.done(zh, en[:1].upper() + en[1:])
        if doc_n:
            return say.done(general_zh + "。", general_en + ".")
        return ""
    if topic == "memory" and ev.estimate is not None:
        ddp, fs = ev.config("ddp"), ev.config("fsdp_full_shard")
        if ddp is not None and fs is not None:
            return say.done(f"对这个配置，DDP 每卡约 {say.cfg(ddp, 'memory', 'total_gib')} GiB，FSDP 全分片每卡约 "
                            f"{say.cfg(fs, 'memory', 'total_gib')} GiB，可用 {say.cfg(ddp, 'memory', 'usable_gib')} GiB{c}。",
                            f"For this setup DDP needs about {say.cfg(ddp, 'memory', 'total_gib')} GiB per GPU and FSDP "
                            f"full shard about {say.cfg(fs, 'memory', 'total_gib')} GiB, of "
                            f"{say.cfg(ddp, 'memory', 'usable_gib')} GiB usable{c}.")
    first = re.split(r"(?<=。)|(?<=\.)\s", (claim.correction or "").strip(), maxsplit=1)[0].strip()
    if not first:
        return ""
    from bot.figures import numbers_in_text

    count = len(numbers_in_text(first))
    doc_n = _cite_doc_for(claim.doc_ids, first, cites)
    if doc_n is None and count:
        return ""
    line = first + (f" [{doc_n}]" if doc_n else "")
    if count:
        say.figure_keys[line] = [f"cite.{doc_n}"] * count
    return line


def _cite_doc_for(doc_ids: list[str], text: str, cites: Citations) -> int | None:
    """Cite the first doc with a verbatim sentence holding every figure of ``text``."""
    from bot.figures import numbers_in_text

    figures = [m.printed for m in numbers_in_text(text)] if text != "1.5x" else ["1.5x"]
    try:
        from bot.knowledge.corpus import get_entry
        from bot.knowledge.sentences import complete_sentences, line_pieces
    except ImportError:
        return None
    for doc_id in doc_ids:
        try:
            doc = get_entry(doc_id)
        except Exception:
            continue
        for sentence in complete_sentences(doc.text) + line_pieces(doc.text):
            if len(sentence) > 20 and (not figures or all(re.search(rf"(?<![\d.]){re.escape(f)}(?![\d.]\d)", sentence)
                                                          for f in figures)):
                return cites.add(doc.id, "doc", doc.title, doc.url, sentence[:300])
    return None
