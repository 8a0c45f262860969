"""Evidence: everything an answer may cite, built once per question (the second pipeline stage).

``build_evidence(parsed) -> Evidence`` resolves the setup once and computes, with the calculator:
- the estimate for the setup as asked;
- every variant the advice may cite: activation checkpointing flipped; DDP with
  ``gradient_as_bucket_view=True`` and fused AdamW; the same node count without the slow link
  (one node alone, for multi-node setups); more GPUs (the inverse search over GPU counts);
  LoRA/QLoRA when full fine-tuning cannot fit;
- each configuration's throughput (tokens/s per GPU at the largest micro-batch that fits, up to
  ``MB_TARGET``), which the decision ranks;
- stored simulations and recorded runs that match, retrieved passages for the question itself
  (the hybrid search) and the forum claims that apply to this setup.

Nothing downstream calls the calculator again: ``bot.decide`` is a pure function of this record,
and the answer composer reads figures from ``Evidence.numbers()``, whose keys the renderer binds
to each printed figure. Variant keys carry a prefix: ``ckpt.memory.ddp.total_gib``.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from bot.core.setup import ResolvedSetup, SetupError, TrainingSetup, resolve_setup
from bot.fix_search import count_layout, fixes_for
from bot.parallel_evidence import (
    ladder_plan,
    parallel_numbers,
    past_fsdp,
    plan_row_numbers,
    plan_rows,
    stated_plan,
)
from bot.strategies import TRAINING_STRATEGIES

if TYPE_CHECKING:  # pragma: no cover
    from bot.calc import Estimate
    from bot.parse import Parsed

log = logging.getLogger(__name__)

# When the GPU is not stated we compute for these common cards (conditional guidance); the first
# one also fills ``numbers``. When the GPU count is not stated we assume one node of eight.
SCENARIO_GPUS = ("A100 80GB SXM", "A100 40GB SXM", "RTX 4090 24GB")
DEFAULT_GPU_COUNT = 8
# an unstated GPU count is answered per count (one node's worth) while the answer asks for it
SCENARIO_COUNTS = (1, 2, 4, 8)
# Throughput is compared at the largest micro-batch that fits, up to this many sequences (or the
# stated micro-batch when larger): past a few sequences the step is compute-bound and a larger
# micro-batch changes the global batch the user chose more than it changes tokens/s.
MB_TARGET = 8
# GPU counts tried by the inverse search ("how many GPUs do I need?").
CAPACITY_COUNTS = (1, 2, 4, 8, 16, 24, 32, 48, 64, 96, 128, 192, 256, 512, 1024)
MAX_PASSAGES = 3
MAX_CLAIMS = 4

# Variant names: the changes each makes to the asked setup (see ``_variant_changes``).
BASE = ""
CKPT = "ckpt"  # activation checkpointing flipped (on when asked off, off when asked on)
BUCKET_FUSED = "bucket_fused"  # DDP gradient_as_bucket_view=True + fused AdamW
BUCKET_FUSED_CKPT = "bucket_fused+ckpt"
SINGLE_NODE = "single_node"  # multi-node only: one node of the same GPUs
LORA = "lora"
QLORA = "qlora"
LORA_CKPT = "lora+ckpt"
QLORA_CKPT = "qlora+ckpt"
OPT8 = "quantized_adam"  # full fine-tune with an 8-bit AdamW (bitsandbytes) in place of fp32 moments


@dataclass(frozen=True)
class Config:
    """One configuration the decision can weigh: a strategy on the asked setup or on a variant."""

    strategy: str
    variant: str  # BASE or a variant name
    fits: bool  # at the asked micro-batch (the calculator's ``fits``, host-RAM rule included)
    total_gib: float
    usable_gib: float
    max_micro_batch: int
    step_seconds: float  # at the asked micro-batch
    vs_ddp: float  # communication time relative to DDP
    throughput_mb: int  # the micro-batch tokens/s is measured at (0 when not even 1 fits)
    tokens_per_s_per_gpu: float  # at ``throughput_mb``; 0 when not even micro-batch 1 fits
    comm_share: float  # communication's share of the step at the asked micro-batch (0..1)
    # the stated host RAM, not the GPU, rules this row out (CPU offload: its GPU side fits)
    host_ram_short: bool = False

    def key(self, kind: str, name: str) -> str:
        """The ``numbers`` key of one of this configuration's figures."""
        return variant_key(self.variant, f"{kind}.{self.strategy}.{name}")


def variant_key(variant: str, key: str) -> str:
    return f"{variant}.{key}" if variant else key


@dataclass
class Variant:
    name: str
    changes: dict[str, Any]
    resolved: ResolvedSetup
    estimate: Estimate


@dataclass(frozen=True)
class StoredFigure:
    """A stored simulation or recorded run that matches the setup (cited by its run id)."""

    run_id: str
    kind: str  # "simulation" | "run" | "import"
    strategy: str
    peak_gib: float
    summary: str


@dataclass
class Scenario:
    """The decision on a common card when the user did not say which GPU."""

    gpu: str
    memory_gb: float
    gpu_count: int
    resolved: ResolvedSetup
    estimate: Estimate


@dataclass
class Capacity:
    """The inverse search: the fewest GPUs (of ``CAPACITY_COUNTS``) at which a strategy fits."""

    gpu_count: int | None  # None when none of the counts tried fits
    strategy: str | None
    checkpointing: bool  # it needs activation checkpointing at that count
    gpus_per_node: int
    nodes: int
    tried: tuple[int, ...]
    numbers: dict[str, float | int | bool] = field(default_factory=dict)  # that count's estimate
    chunked_loss: bool = False  # it also needs a chunked cross-entropy (long context, large vocab)
    # the stated TP/CP/PP degrees the count was searched under (FSDP over the rest); empty: pure DP
    plan_degrees: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class DocSentence:
    """A knowledge doc's sentence an answer quotes beside a forum verdict."""

    doc_id: str
    title: str
    url: str | None
    sentence: str


@dataclass(frozen=True)
class ClaimDocs:
    """For one forum claim: the doc sentence with the 1.5x volume ratio (communication claims)
    and the one holding every figure of the correction's first sentence."""

    ratio: DocSentence | None = None
    correction: DocSentence | None = None


@dataclass
class Evidence:
    parsed: Parsed
    language: str
    question: str = ""
    resolved: ResolvedSetup | None = None
    estimate: Estimate | None = None
    problems: list[Any] = field(default_factory=list)  # bot.core.setup.Problem, when the setup is invalid
    variants: dict[str, Variant] = field(default_factory=dict)
    configs: list[Config] = field(default_factory=list)
    scenarios: list[Scenario] = field(default_factory=list)  # the card unstated: one per common card
    count_scenarios: list[Scenario] = field(default_factory=list)  # the count unstated: one per count
    # card sizes listed as alternatives ("40GB or 80GB A100"): one per size (note memory_alternatives)
    size_scenarios: list[Scenario] = field(default_factory=list)
    # cards or GPU counts listed as alternatives ("A100 or H100", "4 or 8 GPUs"): one line each
    # (notes card_alternatives, count_alternatives)
    card_scenarios: list[Scenario] = field(default_factory=list)
    listed_count_scenarios: list[Scenario] = field(default_factory=list)
    capacity: Capacity | None = None
    stored: list[StoredFigure] = field(default_factory=list)
    passages: list[Any] = field(default_factory=list)  # bot.knowledge.answering.Passage
    claims: list[Any] = field(default_factory=list)  # bot.knowledge.answering.ApplicableClaim
    inference: Any = None  # bot.calc.inference.InferenceEstimate for out-of-scope serving questions
    # the same model with quantized weights (dtype -> InferenceEstimate): int8 and int4 (AWQ/GPTQ)
    inference_quantized: dict[str, Any] = field(default_factory=dict)
    gpu_unknown: bool = False
    claim_docs: dict[str, ClaimDocs] = field(default_factory=dict)  # claim id -> doc sentences it may quote
    # troubleshooting: the diagnosis playbook's entries that match the symptoms, best first
    playbook: list[Any] = field(default_factory=list)  # bot.knowledge.playbook.PlaybookMatch
    # the message reports a failure in a run (an error, an OOM, a kill, a hang, "slower than"),
    # whatever its intent reads as: the answer diagnoses it first (bot.knowledge.playbook.reports_failure)
    failure_reported: bool = False
    failure_kind: str | None = None  # oom | host_ram | slow | error (bot.knowledge.playbook.failure_kind)
    # a failure named only as one to avoid or to ask about ("will DDP OOM?", "不想爆显存")
    failure_hypothetical: bool = False
    # what the question's text already states, read with the playbook's signals (bot.knowledge.
    # playbook: facts_given, stated_number(s)): the facts a diagnosis must not ask for again, and
    # the figures a lead says (num_workers, cpu_cores, stated_requirement_gb, gpu_counts)
    given: frozenset[str] = frozenset()
    stated: dict[str, Any] = field(default_factory=dict)
    # a damaged result store moved aside while reading the stored runs: said, so a missing
    # citation of a stored run is explained (bot.bench.store.damage_notices)
    store_notices: list[str] = field(default_factory=list)
    # a plan beyond FSDP (TP/CP/PP, bot.calc.parallel_ladder.suggest_plan) for a large multi-GPU
    # or long-context setup, when the ladder climbs past FSDP + checkpointing
    parallel: Any = None
    # the ladder's result whenever it was computed (a large setup, or a question that asks about
    # TP/CP/PP), also when it stays at FSDP: the direct answer to "should we add TP?" quotes it
    parallel_checked: Any = None
    # beside a stated TP/CP/PP plan: each data-parallel strategy on the data-parallel group it
    # leaves, the model split as stated (bot.parallel_evidence.plan_rows; PlanRow each)
    plan_rows: list[Any] = field(default_factory=list)
    # no model named, the cards known: the largest model each fine-tuning method fits on them
    # (bot.sizing.size_limits), the answer to "what can I train on 2x 3090?"
    sizes: Any = None
    # nothing GPU-resident fits as asked: the cheapest combination of changes that fits
    # (bot.fix_search.FixSearch; its ``fix`` None when no combination does)
    fixes: Any = None

    @property
    def asks_about_tpu(self) -> bool:
        """The question is about TPUs or JAX, where XLA sharding, not DDP/FSDP, is the tool."""
        words = {w.lower() for w in self.question.replace("/", " ").split()}
        return bool({"tpu", "jax"} & words) or "TPU" in self.question

    def config(self, strategy: str, variant: str = BASE) -> Config | None:
        return next((c for c in self.configs if c.strategy == strategy and c.variant == variant), None)

    def numbers(self) -> dict[str, float | int | bool]:
        """Every figure the answer may print, flat (DESIGN.md keys; variants prefixed)."""
        out: dict[str, float | int | bool] = {}
        if self.estimate is not None:
            out.update(self.estimate.numbers())
        for name, variant in self.variants.items():
            for key, value in variant.estimate.numbers().items():
                out[variant_key(name, key)] = value
        for c in self.configs:
            if c.tokens_per_s_per_gpu:
                out[c.key("throughput", "tokens_per_s_per_gpu")] = round(c.tokens_per_s_per_gpu, 1)
                out[c.key("throughput", "micro_batch")] = c.throughput_mb
            out[c.key("comm", "share_of_step_pct")] = round(100 * c.comm_share)
        if self.capacity is not None:
            out.update(self.capacity.numbers)
        out.update(parallel_numbers(self.parallel_checked, self.resolved))
        out.update(plan_row_numbers(self.plan_rows))
        if self.sizes is not None:
            out.update(self.sizes.numbers())
        if self.fixes is not None:
            out.update(self.fixes.numbers)
        if self.inference is not None:
            out.update(self.inference.numbers())
        for dtype, est in self.inference_quantized.items():
            out[f"inference.{dtype}.weights_gib"] = round(est.weights_gib, 4)
            out[f"inference.{dtype}.total_gib"] = round(est.total_gib, 4)
        return out


# --------------------------------------------------------------------------------------------
# Building
# --------------------------------------------------------------------------------------------


def build_evidence(parsed: Parsed, *, question: str = "", with_knowledge: bool = True) -> Evidence:
    """All the evidence for ``parsed`` (``question``: the asked text, for retrieval); computes
    nothing twice. Raises only on internal bugs."""
    ev = Evidence(parsed=parsed, language=parsed.language, question=question)
    if parsed.empty or not parsed.on_topic or parsed.intent == "out_of_scope":  # decided out of scope
        if parsed.intent == "out_of_scope" or not parsed.on_topic:
            ev.inference = _inference(parsed)
            if ev.inference is not None:
                ev.inference_quantized = _inference_quantized(parsed)
        return ev
    if parsed.problems:
        ev.problems = list(parsed.problems)
        return ev
    if with_knowledge:
        _knowledge(ev, parsed.setup)
    _failure_kind(ev)
    ev.playbook = _playbook(ev)
    if "params_b" in parsed.missing:
        if parsed.intent in ("capacity", "recommend") and not parsed.observed.oom and not ev.failure_reported:
            from bot.sizing import size_limits

            ev.sizes = size_limits(parsed.setup)
        return ev

    ev.gpu_unknown = "gpu_memory_gb" in parsed.missing
    try:
        default_gpu = SCENARIO_GPUS[0] if ev.gpu_unknown else None
        spec = getattr(parsed, "model_spec", None)
        if spec is not None:  # a pasted config.json: its real shape, not a generic model of its size
            from bot.calc import resolve_with_model

            resolved = resolve_with_model(parsed.setup, spec, default_gpu=default_gpu,
                                          default_gpu_count=DEFAULT_GPU_COUNT)
        else:
            resolved = resolve_setup(parsed.setup, default_gpu=default_gpu, default_gpu_count=DEFAULT_GPU_COUNT)
    except SetupError as err:
        ev.problems = list(err.problems)
        return ev
    _computed(ev, resolved)
    ev.playbook = _playbook(ev)  # again, with what the calculator found (the cards too small)
    if with_knowledge:
        _claims(ev, resolved)
    return ev


def evidence_for_resolved(resolved: ResolvedSetup, estimate: Estimate | None = None,
                          language: str = "en") -> Evidence:
    """The calculator evidence for an already resolved setup (no parsing, no knowledge): what the
    advisor shim and the tools use."""
    from bot.parse import Parsed

    parsed = Parsed(setup=resolved.setup, language=language)
    ev = Evidence(parsed=parsed, language=language)
    _computed(ev, resolved, estimate)
    return ev


def _computed(ev: Evidence, resolved: ResolvedSetup, est: Estimate | None = None) -> None:
    from bot.calc import estimate

    ev.resolved = resolved
    ev.estimate = est if est is not None else estimate(resolved)
    for name, changes in _variant_changes(resolved).items():
        variant = _variant(resolved, changes)
        if variant is not None:
            ev.variants[name] = Variant(name, changes, variant, estimate(variant))
    ev.configs = _configs(ev)
    listed = next((n.values.get("sizes") for n in getattr(ev.parsed, "notes", []) if n.code == "memory_alternatives"), None)
    if listed:
        ev.size_scenarios = _size_scenarios(resolved, [float(x) for x in listed])
    notes = {n.code: n.values for n in getattr(ev.parsed, "notes", [])}
    # links the person did not state follow the card (an L40S box has no NVLink, an A800 one has);
    # a listed count is computed as one node of that many GPUs, as the per-count lines are: the
    # lines print memory, which the node layout does not change
    links = {k: None for k in ("intra_node_link", "inter_node_link", "inter_node_gbps")
             if getattr(ev.parsed.setup, k, None) is None}
    if "card_alternatives" in notes:
        # links left at their default follow the card (an L40S box has no NVLink, an A800 one has)
        ev.card_scenarios = _listed_scenarios(resolved, [{"gpu": g, "gpu_memory_gb": None, **links}
                                                         for g in notes["card_alternatives"]["cards"]])
    if "count_alternatives" in notes:
        ev.listed_count_scenarios = _listed_scenarios(resolved, [{"gpu_count": c, "nodes": 1, "gpus_per_node": c}
                                                                 for c in notes["count_alternatives"]["counts"]])
    if ev.gpu_unknown:
        ev.scenarios = _scenarios(ev.parsed.setup, resolved)
    elif "gpu_count" in resolved.assumed and ev.parsed.intent != "capacity":
        ev.count_scenarios = _count_scenarios(resolved)
    fits_as_asked = any(c.fits for c in ev.configs if c.variant in (BASE, CKPT) and c.strategy != "fsdp_full_shard_offload")
    if ev.parsed.intent == "capacity" or not fits_as_asked:
        ev.capacity = capacity_search(resolved)
    if not fits_as_asked:  # nothing GPU-resident fits: the cheapest combination of changes that does
        ev.fixes = fixes_for(resolved)
    ev.stored = _stored(resolved)
    ev.store_notices = _store_notices(ev.language)
    # the plan the person stated (TP/CP/PP degrees), else the ladder's: computed for a large setup
    # or a question about an axis, shown when it goes past FSDP (bot.parallel_evidence)
    stated = stated_plan(resolved)
    checked = stated if stated is not None else ladder_plan(resolved, asked=bool(ev.parsed.asked_axes))
    ev.parallel = checked if stated is not None or past_fsdp(checked) else None
    # kept (with its figures) only where an answer says something about it
    ev.parallel_checked = checked if ev.parsed.asked_axes or ev.parallel is not None else None
    ev.plan_rows = plan_rows(resolved, stated) if stated is not None else []


def _variant_changes(resolved: ResolvedSetup) -> dict[str, dict[str, Any]]:
    """The variants worth computing for this setup (each a few field changes)."""
    s = resolved.setup
    ckpt = not bool(s.activation_checkpointing)
    out: dict[str, dict[str, Any]] = {CKPT: {"activation_checkpointing": ckpt}}
    if resolved.gpu_count > 1 and not (s.ddp_bucket_view and s.optimizer_impl == "fused"):
        out[BUCKET_FUSED] = {"ddp_bucket_view": True, "optimizer_impl": "fused"}
        out[BUCKET_FUSED_CKPT] = {**out[BUCKET_FUSED], "activation_checkpointing": ckpt}
    if resolved.nodes > 1:
        out[SINGLE_NODE] = {"nodes": 1, "gpus_per_node": resolved.gpus_per_node,
                            "gpu_count": resolved.gpus_per_node, "inter_node_link": None,
                            "inter_node_gbps": None}
    if (s.finetune or "full") == "full" and (s.optimizer or "adamw") == "adamw":
        # the cheapest fix that keeps full fine-tuning: 8-bit Adam moments (LlamaFactory#4199's
        # maintainer: optim paged_adamw_8bit)
        out[OPT8] = {"optimizer": "adam8bit", "optimizer_impl": None}
    # the cheaper fine-tuning modes: LoRA and QLoRA for a full fine-tune, QLoRA (a 4-bit base)
    # for LoRA — each the fix when the asked mode cannot fit
    cheaper = {"full": (LORA, QLORA), "lora": (QLORA,)}.get(s.finetune or "full", ())
    for name in cheaper:
        # the base's storage dtype follows the mode (a LoRA base in bf16 becomes QLoRA's nf4)
        out[name] = {"finetune": name, "base_dtype": None}
        if not s.activation_checkpointing:
            out[f"{name}+ckpt"] = {**out[name], "activation_checkpointing": True}
    return out


def _variant(resolved: ResolvedSetup, changes: dict[str, Any]) -> ResolvedSetup | None:
    setup = resolved.setup.model_copy(update=changes)
    try:
        return _same_model(resolve_setup(setup), resolved)
    except SetupError:
        return None


def _same_model(new: ResolvedSetup, old: ResolvedSetup) -> ResolvedSetup:
    """A variant (other GPUs, checkpointing, ...) keeps the model it varies: a model read from a
    config.json is not in the catalog, so re-resolving alone would make it a generic one."""
    from dataclasses import replace

    return new if new.model is old.model else replace(new, model=old.model)


def _configs(ev: Evidence) -> list[Config]:
    """Every (variant, strategy) row with its throughput at the largest micro-batch that fits."""
    from bot.calc import estimate
    from bot.calc.memory import host_ram_fits

    assert ev.resolved is not None and ev.estimate is not None
    out: list[Config] = []
    runs = [(BASE, ev.resolved, ev.estimate)]
    runs += [(name, v.resolved, v.estimate) for name, v in ev.variants.items()
             if name in (CKPT, BUCKET_FUSED, BUCKET_FUSED_CKPT)]
    for name, resolved, est in runs:
        mb = resolved.setup.micro_batch or 1
        strategies = [s for s in TRAINING_STRATEGIES if resolved.nodes > 1 or s != "fsdp_hybrid_shard"]
        if name in (BUCKET_FUSED, BUCKET_FUSED_CKPT):
            strategies = ["ddp"]  # the bucket view is a DDP option
        at_mb: dict[int, Estimate] = {mb: est}
        for s in strategies:
            mem, comm = est.memory[s], est.comm[s]
            step = est.time[s]
            # a configuration that fits only below the asked micro-batch keeps the global batch
            # with gradient accumulation: its throughput is measured at the micro-batch it takes
            best = min(mem.max_micro_batch, max(mb, MB_TARGET)) if mem.fits else mem.max_micro_batch
            tps = 0.0
            if best:
                if best not in at_mb:
                    at_mb[best] = estimate(_with_mb(resolved, best))
                # the calculator's own figure: tokens of every accumulated micro-batch per step
                speed = at_mb[best].throughput.get(s)
                tps = speed.tokens_per_s_per_gpu if speed is not None else 0.0
            share = min(1.0, comm.seconds_per_step / step) if step > 0 else 0.0
            ram = resolved.setup.cpu_ram_gb  # unknown RAM never rules a row out (host_ram_fits)
            ram_short = ram is not None and mem.reserved_gib <= mem.usable_gib and not host_ram_fits(mem.host_ram_gib, ram)
            out.append(Config(strategy=s, variant=name, fits=bool(mem.fits), total_gib=mem.total_gib,
                              usable_gib=mem.usable_gib, max_micro_batch=mem.max_micro_batch, step_seconds=step,
                              vs_ddp=comm.vs_ddp, throughput_mb=best, tokens_per_s_per_gpu=tps,
                              comm_share=share, host_ram_short=ram_short))
    return out


def _with_mb(resolved: ResolvedSetup, mb: int) -> ResolvedSetup:
    from dataclasses import replace

    return replace(resolved, setup=resolved.setup.model_copy(update={"micro_batch": mb}))


def _scenarios(setup: TrainingSetup, asked: ResolvedSetup) -> list[Scenario]:
    from bot.calc import estimate
    from bot.catalog import lookup_gpu

    out = []
    for name in SCENARIO_GPUS:
        gpu = lookup_gpu(name)
        try:
            resolved = _same_model(resolve_setup(setup.model_copy(update={"gpu": gpu.name}),
                                                 default_gpu_count=DEFAULT_GPU_COUNT), asked)
        except SetupError:
            continue
        out.append(Scenario(gpu=gpu.name, memory_gb=gpu.memory_gb, gpu_count=resolved.gpu_count,
                            resolved=resolved, estimate=estimate(resolved)))
    return out


def _size_scenarios(asked: ResolvedSetup, sizes: list[float]) -> list[Scenario]:
    """The same setup on each card size the question lists ("40GB or 80GB A100"): the catalog card of
    the named family at that size (a size it is not sold in gets no line)."""
    from bot.calc import estimate
    from bot.catalog import list_gpus
    from bot.understand.spans import card_family

    family = card_family(asked.gpu.name) if asked.gpu else None
    out = []
    for size in sizes:
        same = next((g.name for g in list_gpus() if family and card_family(g.name) == family
                     and abs(float(g.memory_gb) - size) <= 0.5), None)
        if same is None:  # a size the named family is not sold in: no line (its citation names a card)
            continue
        try:
            resolved = _same_model(resolve_setup(asked.setup.model_copy(update={"gpu": same, "gpu_memory_gb": size}),
                                                 default_gpu_count=asked.gpu_count), asked)
        except SetupError:
            continue
        out.append(Scenario(gpu=same, memory_gb=resolved.gpu_memory_gb, gpu_count=resolved.gpu_count,
                            resolved=resolved, estimate=estimate(resolved)))
    return out


def _listed_scenarios(asked: ResolvedSetup, changes: list[dict[str, Any]]) -> list[Scenario]:
    """The same setup once per alternative the question lists (a card, a GPU count)."""
    from bot.calc import estimate

    out = []
    for change in changes:
        try:
            resolved = _same_model(resolve_setup(asked.setup.model_copy(update=change),
                                                 default_gpu_count=change.get("gpu_count") or asked.gpu_count), asked)
        except SetupError:
            continue
        name = resolved.gpu.name if resolved.gpu else f"{resolved.gpu_memory_gb:g} GB GPU"
        out.append(Scenario(gpu=name, memory_gb=resolved.gpu_memory_gb, gpu_count=resolved.gpu_count,
                            resolved=resolved, estimate=estimate(resolved)))
    return out


def _count_scenarios(asked: ResolvedSetup) -> list[Scenario]:
    """The same setup on 1, 2, 4 and 8 of its GPUs (one node), for an answer whose count is unstated."""
    from bot.calc import estimate

    out = []
    for count in SCENARIO_COUNTS:
        try:
            resolved = _same_model(resolve_setup(asked.setup.model_copy(update={
                "gpu_count": count, "nodes": 1, "gpus_per_node": count}), default_gpu_count=count), asked)
        except SetupError:
            continue
        name = resolved.gpu.name if resolved.gpu else f"{resolved.gpu_memory_gb:g} GB GPU"
        out.append(Scenario(gpu=name, memory_gb=resolved.gpu_memory_gb, gpu_count=count,
                            resolved=resolved, estimate=estimate(resolved)))
    return out


# A count the capacity search names must fit with this margin (the decision's ``MARGIN``): a fit
# within the estimate's error is no answer to "how many GPUs do I need?".
FIT_MARGIN = 0.9


def capacity_search(resolved: ResolvedSetup) -> Capacity:
    """The fewest GPUs at which a GPU-resident strategy fits at the asked micro-batch: first as
    asked, else with activation checkpointing, else (with the standard loss) also with a chunked
    cross-entropy. Nodes of 8 beyond 8 GPUs (the link as stated, or the default for the link kind).

    The last tier is for long contexts: sharding divides the model state by the GPU count but no
    GPU count divides one sequence's activations, and at 32k tokens with a 152k vocabulary the
    logits and their fp32 cross-entropy buffers alone take about 37 GiB per GPU (Qwen2.5-32B;
    ``bot.calc.memory`` "loss"). Computing the loss in chunks keeps one chunk's upcast at a time."""
    from bot.calc import estimate

    s = resolved.setup
    per_node_max = max(resolved.gpus_per_node, 8) if resolved.nodes > 1 else 8
    planned = _plan_capacity(resolved, per_node_max) if stated_degrees(resolved) else None
    if planned is not None:
        return planned
    tried: list[int] = []
    for count in CAPACITY_COUNTS:
        update = count_layout(resolved, count)
        if update is None:
            continue
        per_node, nodes = update["gpus_per_node"], update["nodes"]
        tried.append(count)
        tiers: list[tuple[bool, str | None]] = [(False, None), (True, None)] if not s.activation_checkpointing \
            else [(True, None)]
        if (s.loss_impl or "standard") == "standard":
            tiers.append((True, "chunked"))
        for ckpt, loss in tiers:
            changes: dict[str, Any] = {**update, "activation_checkpointing": ckpt or s.activation_checkpointing}
            if loss:
                changes["loss_impl"] = loss
            try:
                r = _same_model(resolve_setup(s.model_copy(update=changes)), resolved)
            except SetupError:
                continue
            est = estimate(r)
            for strategy in ("ddp", "fsdp_shard_grad_op", "fsdp_full_shard", "fsdp_hybrid_shard"):
                if strategy == "fsdp_hybrid_shard" and nodes == 1:
                    continue
                mem = est.memory[strategy]
                if mem.fits and mem.total_gib <= FIT_MARGIN * mem.usable_gib:
                    nums = {variant_key("capacity", k): v for k, v in est.numbers().items()
                            if k.startswith(("memory.", "time."))}
                    nums["capacity.gpu_count"] = count
                    return Capacity(count, strategy, ckpt and not s.activation_checkpointing, per_node, nodes,
                                    tuple(tried), nums, chunked_loss=loss is not None)
    return Capacity(None, None, False, per_node_max, 0, tuple(tried))


def stated_degrees(resolved: ResolvedSetup) -> dict[str, int]:
    """The setup's model-parallel degrees above 1 ({"tp": 8, "pp": 2}); empty for pure DP."""
    s = resolved.setup
    degrees = {"tp": s.tensor_parallel, "cp": s.context_parallel, "pp": s.pipeline_parallel}
    return {axis: int(d or 1) for axis, d in degrees.items() if (d or 1) > 1}


def plan_counts(unit: int, per_node_max: int) -> list[int]:
    """``CAPACITY_COUNTS`` each rounded up to a GPU count a plan of ``unit`` = tp x cp x pp GPUs
    per data-parallel rank can run on: a multiple of ``unit`` (torchtitan's ParallelDims: the
    degrees multiply to the world size), and, past one node, whole nodes as well (a multiple of
    lcm(unit, GPUs per node)); one node may hold fewer GPUs (``count_layout``). Sorted, no repeats."""
    from math import lcm

    out: set[int] = set()
    for count in CAPACITY_COUNTS:
        step = unit if count <= per_node_max and unit <= per_node_max else lcm(unit, per_node_max)
        out.add(-(-count // step) * step)
    return sorted(out)


def _plan_capacity(resolved: ResolvedSetup, per_node_max: int) -> Capacity | None:
    """The capacity search under a stated TP/CP/PP plan: the fewest GPUs, a multiple of the plan's
    tp x cp x pp in whole nodes (``plan_counts``), at which the plan with FSDP over the remaining
    data-parallel ranks fits with ``FIT_MARGIN`` (bot.parallel_evidence.stated_plan computes it),
    first as asked, then with activation checkpointing, then also a chunked cross-entropy. Pure DP at these counts is not what the
    person runs, so it is not searched. None when the plan cannot be built at any count (TP not
    dividing the heads, say): the degrees are then only named, and the pure-DP search answers."""
    s = resolved.setup
    degrees = stated_degrees(resolved)
    unit = 1
    for d in degrees.values():
        unit *= d
    tried: list[int] = []
    built = False  # the plan could be built at some count (its degrees suit the model and batch)
    for count in plan_counts(unit, per_node_max):
        update = count_layout(resolved, count)
        if update is None:
            continue
        tried.append(count)
        tiers: list[tuple[bool, str | None]] = [(False, None), (True, None)] if not s.activation_checkpointing \
            else [(True, None)]
        if (s.loss_impl or "standard") == "standard":
            tiers.append((True, "chunked"))  # as the pure-DP search: a long local sequence's logits
        for ckpt, loss in tiers:
            changes: dict[str, Any] = {**update, "activation_checkpointing": ckpt or s.activation_checkpointing}
            if loss:
                changes["loss_impl"] = loss
            try:
                r = _same_model(resolve_setup(s.model_copy(update=changes)), resolved)
            except SetupError:
                continue
            # re-resolving the filled-in setup reads every default as stated; keep what was assumed
            # (an unstated micro-batch may be raised to fill the pipeline, as for the asked count)
            r = replace(r, assumed=tuple(a for a in resolved.assumed if a not in changes))
            plan = stated_plan(r)
            mem = getattr(plan, "memory", None)
            built = built or mem is not None
            if mem is None or not (mem.fits and mem.reserved_gib <= FIT_MARGIN * mem.usable_gib):
                continue
            nums: dict[str, float | int | bool] = {
                "capacity.gpu_count": count,
                "capacity.memory.fsdp_full_shard.total_gib": round(mem.total_gib, 2),
                "capacity.memory.fsdp_full_shard.usable_gib": round(mem.usable_gib, 2),
                "capacity.parallel.dp_shard": int(plan.plan.degrees.get("dp_shard", 1)),
            }
            nums.update({f"capacity.parallel.{axis}": d for axis, d in degrees.items()})
            return Capacity(count, "fsdp_full_shard", ckpt and not s.activation_checkpointing,
                            update["gpus_per_node"], update["nodes"], tuple(tried), nums,
                            chunked_loss=loss is not None, plan_degrees=degrees)
    if not built:
        return None
    return Capacity(None, None, False, per_node_max, 0, tuple(tried), plan_degrees=degrees)


def _store_notices(language: str) -> list[str]:
    try:
        from bot.bench.store import damage_notices

        return list(damage_notices(language))
    except Exception as err:  # noqa: BLE001  (a notice must never stop an answer)
        log.debug("no store notices: %s", err)
        return []


def _stored(resolved: ResolvedSetup) -> list[StoredFigure]:
    """Stored simulations (any strategy) and recorded runs of this model, cited by run id."""
    out: list[StoredFigure] = []
    try:
        from bot.bench.simulate import SimConfig
        from bot.bench.store import ResultStore

        store: Any = ResultStore()  # (its find_runs annotation names the class's own ``list``)
    except Exception as err:  # no store yet, or an older format: no stored figures
        log.debug("no result store: %s", err)
        return out
    for strategy in TRAINING_STRATEGIES:
        try:
            found = store.find_simulation(SimConfig.from_resolved(resolved, strategy))
        except Exception as err:  # an unsimulatable config
            log.debug("no stored simulation for %s: %s", strategy, err)
            continue
        if not found:
            continue
        run_id = getattr(found, "run_id", None) or getattr(found, "id", None)
        peak = getattr(found, "peak_gib", None)
        if peak is None and isinstance(getattr(found, "result", None), dict):
            peak = found.result.get("peak_gib")
        if not run_id or peak is None:
            continue
        try:
            stored = store.get(str(run_id))
            summary = stored.summary() if stored else ""
        except Exception:
            summary = ""
        out.append(StoredFigure(str(run_id), "simulation", strategy, float(peak),
                                summary or f"simulated per-GPU peak {float(peak):.2f} GiB ({strategy})"))
    if resolved.model.approximate:
        return out
    for strategy in TRAINING_STRATEGIES:
        try:
            runs = [r for kind in ("import", "run") for r in store.find_runs(model=resolved.model.name,
                                                                               strategy=strategy, kind=kind)
                    if isinstance(r.figures.get("peak_gib"), int | float)]
        except Exception as err:
            log.debug("no stored runs: %s", err)
            break
        if runs:
            run = runs[0]
            out.append(StoredFigure(run.id, run.kind, strategy, float(run.figures["peak_gib"]), run.summary()))
    return out


# --------------------------------------------------------------------------------------------
# Knowledge
# --------------------------------------------------------------------------------------------


def _knowledge(ev: Evidence, setup: TrainingSetup) -> None:
    """Passages for the question itself (every answer goes through the hybrid search)."""
    question = ev.question
    try:
        from bot.knowledge.answering import retrieve_passages

        ev.passages = list(retrieve_passages(question or " ".join(ev.parsed.topics), language=ev.language,
                                             topics=list(ev.parsed.topics), setup=setup, k=MAX_PASSAGES,
                                             params_b=_model_size(ev.parsed)))
    except Exception as err:  # a broken index must not take the answer down; the log says why
        log.warning("passage retrieval failed: %s", err)
        ev.passages = []
    if "params_b" in ev.parsed.missing:  # no setup: the claims are judged conditionally
        _claims(ev, None)


def _model_size(parsed: Parsed) -> float | None:
    """The model's size in billions as the question gives it (stated, a pasted config, or a
    catalog name), before the setup is resolved; None when unknown."""
    from bot.catalog import UnknownNameError, lookup_model

    if parsed.setup.params_b:
        return float(parsed.setup.params_b)
    spec = getattr(parsed, "model_spec", None)
    if spec is not None:
        return float(spec.params_b)
    try:
        return float(lookup_model(parsed.setup.model).params_b) if parsed.setup.model else None
    except UnknownNameError:
        return None


# A troubleshooting answer leads with at most this many causes (issue 25: "the two or three causes
# that match its symptoms, ranked"); an entry needs a matched symptom in the person's words.
PLAYBOOK_CAUSES = 3


def _failure_kind(ev: Evidence) -> None:
    """What the message reports failing in the person's run (``failure_kind``): the words of a
    kill, an OOM, a slowdown or an error, else an OOM the reader found in a log; a failure named
    only as one to avoid or to ask about is none (``failure_hypothetical``)."""
    question = ev.question or ""
    try:
        from bot.knowledge.playbook import failure_kind, hypothetical_only

        kind, hypothetical = failure_kind(question), hypothetical_only(question)
    except Exception as err:  # the signals are data in the repo: a broken file must not stop an answer
        log.warning("playbook signals unavailable: %s", err)
        kind, hypothetical = None, False
    if getattr(ev.parsed.observed, "oom", False) and kind in (None, "slow", "error") and not hypothetical:
        kind = "oom"
    ev.failure_kind, ev.failure_reported, ev.failure_hypothetical = kind, kind is not None, hypothetical
    try:
        from bot.knowledge.playbook import facts_given, stated_number, stated_numbers

        ev.given = facts_given(question)
        ev.stated = {key: stated_number(question, key) for key in ("num_workers", "cpu_cores", "stated_requirement_gb")}
        ev.stated["gpu_counts"] = stated_numbers(question, "gpu_counts")
    except Exception as err:  # the signals are data in the repo: a broken file must not stop an answer
        log.warning("playbook signals unavailable: %s", err)


def states_exceed_card(ev: Evidence) -> bool | None:
    """Whether the model states alone (weights, gradients, optimizer state) exceed each card's
    usable memory even sharded over every GPU (FULL_SHARD; the one GPU's DDP row on one card):
    the card is too small for this model whatever the strategy or batch. None when the card or the
    count is a default, not the person's (then nothing is said about the person's cards)."""
    r, est = ev.resolved, ev.estimate
    if r is None or est is None or ev.gpu_unknown or "gpu_count" in r.assumed or "gpu" in r.assumed:
        return None
    mem = est.memory["fsdp_full_shard" if r.gpu_count > 1 else "ddp"]
    return mem.params_gib + mem.grads_gib + mem.optimizer_gib > mem.usable_gib


def _playbook(ev: Evidence) -> list[Any]:
    """The playbook entries matching the symptoms of a troubleshooting question or of a run that
    failed (none for other questions), with the facts the calculator adds once it has run."""
    parsed = ev.parsed
    if parsed.intent != "troubleshoot" and not ev.failure_reported:
        return []
    try:
        from dataclasses import replace

        from bot.knowledge.playbook import COMPUTED_TRIGGERS, match_playbook, query_from_parsed

        query = query_from_parsed(parsed, ev.question or "")
        r = ev.resolved
        if r is not None:
            gpu_stated = not ev.gpu_unknown and "gpu" not in r.assumed
            # the card too small matters to a run that ran out of GPU memory (not to a slow one)
            exceed = states_exceed_card(ev) if ev.failure_kind == "oom" else None
            query = replace(query, states_exceed_card=exceed,
                            intra_node_link=query.intra_node_link or (r.intra_node_link if gpu_stated else None),
                            multi_node=True if r.nodes > 1 else query.multi_node)
        matches = match_playbook(query, limit=0)
    except Exception as err:  # the playbook is data in the repo: a broken file must not stop an answer
        log.warning("playbook unavailable: %s", err)
        return []
    # an entry no symptom of this text names is dropped before the cut, so entries surfacing on
    # context triggers alone (an OOM mid-run) never push a named cause out of the first three
    named = [m for m in matches if m.matched_symptoms or COMPUTED_TRIGGERS & set(m.matched_triggers)]
    return named[:PLAYBOOK_CAUSES]


def _claims(ev: Evidence, resolved: ResolvedSetup | None) -> None:
    try:
        from bot.knowledge.answering import applicable_claims

        ev.claims = list(applicable_claims(resolved, topics=list(ev.parsed.topics), language=ev.language,
                                           limit=MAX_CLAIMS))
    except Exception as err:
        log.warning("forum claims unavailable: %s", err)
        ev.claims = []
    for claim in ev.claims:  # the doc sentences a verdict may quote, found here so compose reads no corpus
        ev.claim_docs[claim.claim_id] = ClaimDocs(
            ratio=doc_sentence_for(claim.doc_ids, ["1.5x"]) if claim.topic == "communication" else None,
            correction=doc_sentence_for(claim.doc_ids, None, text=first_sentence(claim.correction or "")))


def first_sentence(text: str) -> str:
    """A correction's first sentence (the part a forum verdict quotes)."""
    return re.split(r"(?<=。)|(?<=\.)\s", text.strip(), maxsplit=1)[0].strip()


def doc_sentence_for(doc_ids: list[str], figures: list[str] | None, text: str = "") -> DocSentence | None:
    """The first sentence of the first doc in ``doc_ids`` holding every figure (``figures``, or
    those printed in ``text``); None when no doc has one."""
    from bot.figures import numbers_in_text

    if figures is None:
        figures = [m.printed for m in numbers_in_text(text)]
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
                return DocSentence(doc.id, doc.title, doc.url, sentence[:300])
    return None


def _inference(parsed: Parsed) -> Any:
    """Weights + KV cache for an inference/serving question that names a model (else None): one
    the reader tagged as inference, or any out-of-scope question that names a model size ("how
    much memory to run Qwen-72B?" is a serving question even without the word)."""
    def said_now(name: str) -> bool:  # stated in this question, not carried from an earlier turn
        source = getattr((parsed.provenance or {}).get(name), "source", None)
        return bool(getattr(parsed.setup, name, None)) and source != "history"

    named = said_now("model") or said_now("params_b")
    if "inference" not in parsed.topics and not (parsed.intent == "out_of_scope" and named):
        return None
    try:
        from bot.calc.inference import inference_estimate
    except ImportError:
        return None
    try:
        return inference_estimate(parsed.setup)
    except (SetupError, ValueError) as err:
        log.debug("no inference estimate: %s", err)
        return None


# Weight-only quantization people serve with: int8 (LLM.int8, SmoothQuant) and int4 (AWQ, GPTQ);
# the KV cache stays 16-bit (bot.calc.inference).
QUANTIZED_DTYPES = ("int8", "int4")


def _inference_quantized(parsed: Parsed) -> dict[str, Any]:
    """The serving estimate with int8 and int4 weights (the fix people reach for first)."""
    try:
        from bot.calc.inference import inference_estimate

        return {dtype: inference_estimate(parsed.setup, dtype=dtype) for dtype in QUANTIZED_DTYPES}
    except (ImportError, SetupError, ValueError) as err:
        log.debug("no quantized inference estimate: %s", err)
        return {}
