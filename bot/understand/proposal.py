"""An LLM's proposed setup, checked against the text: a field is kept only where the text says it.

The optional LLM path (``bot.surfaces.llm``) lets a model propose a setup through a tool call. A model can
invent a figure ("64 GPUs" for "7B model on A100 80G"), so a proposed value is accepted only when

- the deterministic reader found the same value (within rounding): the reader's provenance stands;
- or the reader found nothing for that field and the value occurs in the user's own text as a span
  of the right kind (digits and units normalised: "80G" is 80 GB of memory, "8张"/"8x"/"eight
  GPUs" is a count of 8, "七十亿" is 7B parameters, "8K" is a sequence length of 8192 or 8000);
- or it is derived from a catalog entity named in the text (``params_b`` of a named model,
  ``gpu_memory_gb`` of a named card of one size), or it names that entity (``model``, ``gpu``).

Everything else is rejected with a reason and never used for numbers; the answer asks for it.
Hostile values (negative, NaN, inf, huge, wrong type) are rejected the same way, never raised.
``check_llm_setup`` does the work; ``accept_llm_setup`` is its (setup, rejected) form.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

from bot.catalog import UnknownNameError, list_gpus, lookup_gpu, lookup_model
from bot.core.setup import LIMITS, TrainingSetup
from bot.fields import TOOL_ONLY_FIELDS
from bot.numwords import spelled_numbers
from bot.understand import Provenance
from bot.understand.spans import card_family, find_gpus, find_models, model_params_b

MAX_TEXT = 20_000  # the question and the earlier turns; more is not scanned (bounded work)

# --- what a number written in the text can stand for ----------------------------------------
# One pass over the text: a figure, an optional scale/unit after it, or a count sign before it.
_NUMBER = re.compile(
    r"(?:(?P<pre>[x×*]\s?)|(?<![A-Za-z\d.]))(?P<num>\d{1,9}(?:\.\d{1,4})?)(?![\d])"
    r"\s?(?P<unit>billion|million|trillion|gib|gb|tb|g(?![a-z])|b(?![a-z])|m(?![a-z])|t(?![a-z])|k(?![a-z])|亿|千亿|万|"
    r"张|卡|块|台|个|节点|x(?![a-z0-9])|×|\*|%|gbps|gb/s|gbit/s|g/s)?",
    re.I)
# "8 GPUs", "8 of our in-house cards": a count word within three words after the figure
_COUNT_WORD_AFTER = re.compile(r"\s?(?:[A-Za-z][A-Za-z-]{0,20}\s){0,3}(?:gpus?|cards?|devices?|nodes?|machines?|servers?|hosts?|ranks?|workers?|"
                               r"processes|accelerators?|npus?|张|卡|块|台|个|节点|机器)", re.I)
_COUNT_KEY_BEFORE = re.compile(r"(?:nproc[_-]per[_-]node|nnodes|num[_-]?gpus|n[_-]?gpus|gpu[_-]?num|world[_-]?size|"
                               r"num[_-]?nodes|num_processes|gpus?|nodes?)[\"']?\s*[:=\s]\s*$", re.I)
_MEMORY_UNITS = {"gb", "gib", "g"}
_COUNT_UNITS = {"张", "卡", "块", "台", "个", "节点", "x", "×", "*"}
_RATE_UNITS = {"gbps", "gb/s", "gbit/s", "g/s"}

# Numeric fields and the kind of span that supports them.
_COUNT_FIELDS = ("gpu_count", "gpus_per_node", "nodes")
_PLAIN_FIELDS = ("seq_len", "micro_batch", "lora_rank", "checkpoint_every", "grad_accum_steps", "tensor_parallel",
                 "pipeline_parallel", "context_parallel", "inter_node_gbps")

# Words that name a choice for the literal/bool fields (the value must be named, not negated).
_WORDS: dict[tuple[str, Any], str] = {
    ("precision", "bf16-mixed"): r"bf16|bfloat16", ("precision", "bf16"): r"bf16|bfloat16",
    ("precision", "fp16-mixed"): r"fp16|float16|half|amp", ("precision", "fp32"): r"fp32|float32|full precision|单精度",
    ("optimizer", "adamw"): r"adamw?|adam_torch", ("optimizer", "sgd"): r"sgd",
    ("optimizer", "adam8bit"): r"8[- ]?bit|adamw_bnb|bnb|paged_adamw",
    ("finetune", "full"): r"full(?:[- ]?(?:fine-?tun|param|sft|train)\w*)|全参|全量|finetuning_type:\s*full",
    ("finetune", "lora"): r"(?<!q)lora", ("finetune", "qlora"): r"qlora",
    ("intra_node_link", "nvlink"): r"nvlink|nvswitch|sxm", ("intra_node_link", "pcie"): r"pcie",
    ("inter_node_link", "infiniband"): r"infiniband|\bib\b|roce|rdma", ("inter_node_link", "ethernet"): r"ethernet|以太网|tcp",
    ("activation_checkpointing", True): r"checkpointing|gradient_checkpointing|重计算|激活检查点",
    ("torch_compile", True): r"torch\.compile|torch_compile|compile",
    ("optimizer_impl", "fused"): r"fused", ("optimizer_impl", "foreach"): r"foreach",
    ("base_dtype", "nf4"): r"nf4|4[- ]?bit", ("lora_targets", "all_linear"): r"all[-_ ]linear|all_linear",
}
_NEGATION = re.compile(r"(?:(?:\bno|\bnot|\bwithout|\bw/o|\bnever|n't|\boff|\bdisabled?|\bfalse)\b|不用|不要|没有|没用|不是|关闭|关掉|不开|禁用)"
                       r"[\s:=\w-]{0,12}$", re.I)
_NEGATION_AFTER = re.compile(r"^[\s\"':=]{0,4}(?:false|off|disabled|0\b|关|否)", re.I)

ESSENTIAL_GROUPS = {"params_b": ("params_b", "model"), "gpu_memory_gb": ("gpu_memory_gb", "gpu"),
                    "gpu_count": ("gpu_count", "nodes", "gpus_per_node")}


@dataclass(frozen=True)
class Figure:
    value: float
    unit: str  # "params" | "memory" | "count" | "rate" | "plain" | "k" | "percent"
    span: str


@dataclass
class ProposalCheck:
    """What survived: ``setup`` is the reader's setup plus the accepted proposals, ``filled`` the
    fields the proposal added, ``rejected`` field -> reason, ``provenance`` for every field."""

    setup: TrainingSetup
    filled: dict[str, Any] = field(default_factory=dict)
    rejected: dict[str, str] = field(default_factory=dict)
    provenance: dict[str, Provenance] = field(default_factory=dict)


def _close(a: float, b: float, rel: float = 0.01) -> bool:
    return abs(a - b) <= max(rel * abs(b), 0.005)


def figures(text: str) -> list[Figure]:
    """Every figure the text writes, with the kind of quantity its unit (or neighbours) make it."""
    text = text[:MAX_TEXT]
    out: list[Figure] = []
    for m in _NUMBER.finditer(text):
        try:
            value = float(m.group("num"))
        except ValueError:
            continue
        unit = (m.group("unit") or "").lower()
        span = m.group(0).strip()
        if unit in ("b", "billion"):
            out.append(Figure(value, "params", span))
        elif unit in ("m", "million"):
            out.append(Figure(value / 1000, "params", span))
        elif unit in ("t", "trillion"):
            out.append(Figure(value * 1000, "params", span))
        elif unit == "亿":
            out.append(Figure(value / 10, "params", span))
        elif unit == "千亿":
            out.append(Figure(value * 100, "params", span))
        elif unit in _MEMORY_UNITS:
            out.append(Figure(value, "memory", span))
        elif unit == "tb":
            out.append(Figure(value * 1000, "memory", span))
        elif unit in _RATE_UNITS:
            out.append(Figure(value, "rate", span))
        elif unit == "%":
            out.append(Figure(value / 100, "percent", span))
        elif unit == "k":
            out += [Figure(value * 1024, "k", span), Figure(value * 1000, "k", span)]
        elif unit == "万":
            out.append(Figure(value * 1e4, "plain", span))
        elif unit in _COUNT_UNITS or m.group("pre") or _COUNT_KEY_BEFORE.search(text[max(0, m.start() - 24): m.start()]):
            out.append(Figure(value, "count", span))
        elif word := _COUNT_WORD_AFTER.match(text, m.end()):
            out.append(Figure(value, "count", text[m.start(): word.end()].strip()))
        else:
            out.append(Figure(value, "plain", span))
    for item in spelled_numbers(text, limit=200):
        end = text.find(item.text) + len(item.text)
        if item.scaled and item.value >= 1e6:
            out.append(Figure(item.value / 1e9, "params", item.text))
        elif after := _COUNT_WORD_AFTER.match(text, end):
            out.append(Figure(item.value, "count", item.text + after.group(0)))
        else:
            out.append(Figure(item.value, "plain", item.text))
    return out


def reason_text(reason: str, zh: bool) -> str:
    """A rejection reason in the answer's language (the reasons above are written in English)."""
    if not zh:
        return reason
    if reason == "not stated in the question":
        return "问题里没有写"
    if reason.startswith("disagrees with "):
        return "与原文读到的值不一致（" + reason[len("disagrees with "):].replace(" read from ", "，来自 ") + "）"
    if reason == "not a setup field":
        return "不是配置字段"
    return "数值无效（" + reason + "）"


def _support(name: str, value: Any, text: str, figs: list[Figure]) -> str | None:
    """The span of ``text`` that states ``value`` for field ``name``, or None."""
    if name == "model":
        try:
            wanted = lookup_model(str(value)).name
        except UnknownNameError:
            return None
        return next((m.raw for m in find_models(text[:MAX_TEXT]) if m.name == wanted), None)
    if name == "gpu":
        try:
            card = lookup_gpu(str(value))
        except UnknownNameError:
            return None
        for m in find_gpus(text[:MAX_TEXT]):
            if m.name == card.name:
                return m.raw
            if m.name and card_family(m.name) == card_family(card.name) and m.memory_gb is None and \
                    len({g.memory_gb for g in list_gpus() if card_family(g.name) == card_family(card.name)}) == 1:
                return m.raw
        return None
    if name == "params_b":
        hit = next((f.span for f in figs if f.unit == "params" and _close(f.value, value)), None)
        if hit:
            return hit
        for m in find_models(text[:MAX_TEXT]):  # a named model's catalog size
            size = model_params_b(m.name) if m.name else None
            if size and _close(size, value, rel=0.06):
                return m.raw
        return None
    if name == "gpu_memory_gb":
        hit = next((f.span for f in figs if f.unit == "memory" and _close(f.value, value)), None)
        if hit:
            return hit
        for m in find_gpus(text[:MAX_TEXT]):  # a named card of one size
            sizes = {g.memory_gb for g in list_gpus() if m.name and card_family(g.name) == card_family(m.name)}
            known = m.memory_gb if m.memory_gb is not None else (next(iter(sizes)) if len(sizes) == 1 else None)
            if known is not None and _close(float(known), value, rel=0.03):
                return m.raw
        return None
    if name == "cpu_ram_gb":
        return next((f.span for f in figs if f.unit == "memory" and _close(f.value, value)), None)
    if name in _COUNT_FIELDS:
        return next((f.span for f in figs if f.unit == "count" and _close(f.value, value)), None)
    if name == "seq_len":
        return next((f.span for f in figs if f.unit in ("plain", "k", "count") and _close(f.value, value)), None)
    if name == "inter_node_gbps":
        return next((f.span for f in figs if f.unit in ("rate", "plain") and _close(f.value, value)), None)
    if name == "mfu":
        return next((f.span for f in figs if (f.unit == "percent" or (f.unit == "plain" and f.value < 1))
                     and _close(f.value, value)), None)
    if name in _PLAIN_FIELDS:
        return next((f.span for f in figs if f.unit in ("plain", "count") and _close(f.value, value)), None)
    pattern = _WORDS.get((name, value))
    if pattern is None:
        return None
    scanned = text[:MAX_TEXT]
    for word in re.finditer(pattern, scanned, re.I):
        negated = bool(_NEGATION.search(scanned[max(0, word.start() - 24): word.start()])) or \
            bool(_NEGATION_AFTER.match(scanned[word.end(): word.end() + 10]))
        if not negated:
            return word.group(0)
    return None


def _valid(name: str, value: Any) -> str | None:
    """Why ``value`` can never be a value of field ``name`` (None when it can)."""
    if name not in TrainingSetup.model_fields:
        return "not a setup field"
    if isinstance(value, bool) and name in LIMITS:
        return "not a number"
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if isinstance(value, float) and not math.isfinite(value):
            return "not a finite number"
        if name in LIMITS:
            low, high = LIMITS[name]
            if not low <= value <= high:
                return f"outside the plausible range {low:g}..{high:g}"
    try:
        TrainingSetup(**{name: value})
    except Exception:  # noqa: BLE001 - pydantic's error for a wrong type or literal
        return "not a valid value"
    return None


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b or a == b and type(a) is type(b)
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return _close(float(a), float(b))
    if isinstance(a, str) and isinstance(b, str):
        return a.strip().lower() == b.strip().lower()
    return a == b


def check_llm_setup(proposed: TrainingSetup | dict, parsed, text: str) -> ProposalCheck:
    """Check each proposed field (see the module docstring). ``proposed`` may be a raw dict of tool
    arguments: each field is validated alone, so one hostile value does not hide the others."""
    raw = proposed.model_dump() if isinstance(proposed, TrainingSetup) else dict(proposed or {})
    current = parsed.setup.model_dump()
    provenance = dict(getattr(parsed, "provenance", {}) or {})
    text = text if isinstance(text, str) else str(text or "")
    figs = figures(text)
    filled: dict[str, Any] = {}
    rejected: dict[str, str] = {}
    for name, value in raw.items():
        if value is None:
            continue
        name = str(name)
        if name in TOOL_ONLY_FIELDS:  # the model as a config.json: the reader reads a pasted config itself
            continue
        why = _valid(name, value)
        if why:
            rejected[name] = why
            continue
        value = getattr(TrainingSetup(**{name: value}), name)  # pydantic's coercion ("8" -> 8)
        read = current.get(name)
        if read is None and name in ("nodes", "gpus_per_node") and current.get("gpu_count") and \
                current.get("nodes") is None and current.get("gpus_per_node") is None and \
                value == (1 if name == "nodes" else current["gpu_count"]):
            continue  # "8 x A100" read as one node of 8: the proposal restates it, adds nothing
        if read is None and name == "params_b" and current.get("model"):
            size = model_params_b(current["model"])  # the reader named the model: its size is the catalog's
            if size is None or not _close(size, float(value), rel=0.06):
                rejected[name] = f"disagrees with {current['model']} ({size:g}B)" if size else "the model is named"
            continue  # agreeing: the catalog's exact size stands, not the LLM's rounding
        if read is not None:
            if not _same(read, value):
                span = provenance[name].span if name in provenance else ""
                rejected[name] = f"disagrees with {read} read from `{span}`" if span else f"disagrees with {read}"
            continue  # agreeing with the reader: the reader's value and provenance stand
        span = _support(name, value, text, figs)
        if span is None:
            rejected[name] = "not stated in the question"
            continue
        filled[name] = value
        provenance[name] = Provenance("stated", span, 0.7)
    try:
        setup = parsed.setup.merged(TrainingSetup(**filled))
    except Exception:  # noqa: BLE001 - defensive: fields validated one by one may still clash
        setup, filled = parsed.setup, {}
    return ProposalCheck(setup=setup, filled=filled, rejected=rejected,
                         provenance={k: v for k, v in provenance.items() if getattr(setup, k, None) is not None})


def accept_llm_setup(proposed: TrainingSetup | dict, parsed, question_and_history_text: str
                     ) -> tuple[TrainingSetup, dict[str, str]]:
    """(the setup to compute with: the reader's plus the accepted proposals, rejected field -> reason)."""
    check = check_llm_setup(proposed, parsed, question_and_history_text)
    return check.setup, check.rejected


def essential_rejections(check: ProposalCheck) -> list[str]:
    """Essential fields (``params_b``, ``gpu_memory_gb``, ``gpu_count``) whose proposal was
    rejected and which the setup still lacks: the answer must ask for them."""
    out = []
    s = check.setup
    for essential, group in ESSENTIAL_GROUPS.items():
        if not any(k in check.rejected for k in group):
            continue
        have = any(getattr(s, k) is not None for k in group) if essential != "gpu_count" else (
            s.gpu_count is not None or (s.nodes is not None and s.gpus_per_node is not None))
        if essential == "gpu_memory_gb" and s.gpu_memory_gb is None and s.gpu is not None:
            sizes = {g.memory_gb for g in list_gpus() if card_family(g.name) == card_family(s.gpu)}
            have = len(sizes) == 1
        if not have:
            out.append(essential)
    return out
