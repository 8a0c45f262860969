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

Two siblings own parts of the record: ``bot.capacity_evidence`` the inverse search over GPU counts
(``Evidence.capacity``) and ``bot.corpus_evidence`` what the repository's knowledge adds (passages,
forum claims and the doc sentences they quote, the diagnosis playbook's matches); the plan past
FSDP is ``bot.parallel_evidence``'s.

Nothing downstream calls the calculator again: ``bot.decide`` is a pure function of this record,
and the answer composer reads figures from ``Evidence.numbers()``, whose keys the renderer binds
to each printed figure. Variant keys carry a prefix: ``ckpt.memory.ddp.total_gib``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from bot.capacity_evidence import Capacity, capacity_search
from bot.core.setup import ResolvedSetup, SetupError, TrainingSetup, resolve_setup
from bot.corpus_evidence import (
    ClaimDocs,
    add_claims,
    add_passages,
    playbook_matches,
    read_failure,
)
from bot.fix_search import fixes_for
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
    claims: list[Any] = field(default_factory=list)  # bot.knowledge.forum_claims.ApplicableClaim
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
    failure_hang: bool = False  # the failure is a run that stops moving (bot.knowledge.playbook.reports_hang)
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
    read_failure(ev)
    ev.playbook = playbook_matches(ev)
    if with_knowledge:  # after the failure and the playbook: they decide which claims may open (passage_asker)
        add_passages(ev, parsed.setup)
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
    ev.playbook = playbook_matches(ev)  # again, with what the calculator found (the cards too small)
    if with_knowledge:
        add_claims(ev, resolved)
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
# Serving (out of scope): weights + KV cache
# --------------------------------------------------------------------------------------------


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
