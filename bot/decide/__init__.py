"""The decision: a pure function of the evidence -> the recommendation, its reasons, what would
change it, and the direct answer to what was asked. The ladder is written out in docs/decision.md.

Among the configurations that fit with a margin (``MARGIN`` of usable memory) at the asked
micro-batch — DDP; DDP with ``gradient_as_bucket_view=True`` and fused AdamW; SHARD_GRAD_OP;
FULL_SHARD; HSDP across nodes; each with and without activation checkpointing — pick the best
estimated throughput (tokens/s per GPU at the largest micro-batch that fits), preferring the
simpler configuration (``SIMPLICITY``) within ``TOLERANCE``. CPU offload only when nothing
GPU-resident fits; LoRA/QLoRA and more GPUs are what-ifs when nothing fits.

No calculator calls and no I/O here: everything comes from ``bot.evidence.Evidence``. Reasons
are structured (``Reason(code, values)``); the composer words them with the figures' keys. The
direct answer to what was asked is ``bot.decide.direct``'s; a troubleshooting diagnosis is
``bot.decide.diagnosis``'s.
"""

from __future__ import annotations

from typing import Any

from bot.capacity_evidence import FIT_MARGIN
from bot.decide.direct import direct_answer, direct_without_setup
from bot.decide.reasons import PAYLOAD, Code, Decision, Reason  # noqa: F401 (re-exported)
from bot.evidence import (
    BASE,
    BUCKET_FUSED,
    BUCKET_FUSED_CKPT,
    CKPT,
    LORA,
    LORA_CKPT,
    OPT8,
    QLORA,
    QLORA_CKPT,
    SINGLE_NODE,
    Config,
    Evidence,
)
from bot.parallel_evidence import is_stated
from bot.strategies import STRATEGY_TO_ZERO, ZERO_TO_STRATEGY  # noqa: F401 (re-exported)

MARGIN = FIT_MARGIN  # a configuration "fits with a margin" at <= 90% of usable memory (allocator spikes)
TOLERANCE = 0.05  # configurations within 5% of the best throughput count as equally fast
COMFORT = 0.75  # below this share of usable memory the decision is clear-cut (high confidence)
SLOW_LINK_GBPS = 100.0  # inter-node links under this many Gb/s count as slow
COMM_HEAVY = 0.3  # communication above this share of the step is worth a what-if
# CPU offload is recommended with unknown host RAM only when a node needs at most this much
# (a typical workstation or small server); beyond it the answer asks for the RAM and says the need.
UNSTATED_HOST_RAM_GIB = 256.0
# DDP's memory knobs (bucket view + fused AdamW) are named only when they save at least this share
KNOB_MIN_SAVING = 0.01
# A troubleshooting answer names another playbook cause only when it scores at least this share of
# the best one (a cause matched by one stray word is not worth the reader's time)
RIVAL_CAUSE = 0.75

# Simpler first: the order the ladder prefers among equally fast configurations.
_STRATEGY_RANK = {"ddp": 0, "fsdp_shard_grad_op": 2, "fsdp_full_shard": 3, "fsdp_hybrid_shard": 4,
                  "fsdp_full_shard_offload": 20}
GPU_RESIDENT = ("ddp", "fsdp_shard_grad_op", "fsdp_full_shard", "fsdp_hybrid_shard")


def checkpointing_on(ev: Evidence, c: Config) -> bool:
    asked = bool(ev.resolved and ev.resolved.setup.activation_checkpointing)
    return asked != (c.variant in (CKPT, BUCKET_FUSED_CKPT))


def simplicity(ev: Evidence, c: Config) -> float:
    """Lower is simpler: strategy first, the bucket/fused options next, checkpointing last."""
    rank = _STRATEGY_RANK.get(c.strategy, 30) + (1 if c.variant in (BUCKET_FUSED, BUCKET_FUSED_CKPT) else 0)
    return rank + (5 if checkpointing_on(ev, c) and c.strategy != "fsdp_full_shard_offload" else 0)


# Topics a question can be about without any setup: how the strategies work and differ, answered
# from the docs (bot.understand.TOPICS). "DDP or FSDP for me?" and "do I need checkpointing?"
# are not among them: their answer depends on the model and the cards.
CONCEPT_TOPICS = frozenset({"fsdp1_vs_fsdp2", "shard_grad_op_vs_full_shard", "zero_vs_fsdp", "hybrid_shard",
                            "ddp_memory_knobs", "fsdp_slower_than_ddp", "grad_accumulation", "cpu_offload",
                            "communication", "mixed_precision", "torch_compile"})
_SETUP_FACTS = ("model", "params_b", "gpu", "gpu_memory_gb", "gpu_count", "nodes")


def answered_from_docs(ev: Evidence) -> bool:
    """A question that states no setup at all and asks how the strategies work (a concept topic,
    no "A or B for me?"): the docs answer it, whatever intent the reader gave it."""
    parsed = ev.parsed
    if parsed.compare:  # "A or B?" is answered for a setup: it still asks for one
        return False
    if parsed.intent == "concept":
        return True
    stated = any(getattr(parsed.setup, name, None) is not None for name in _SETUP_FACTS)
    return not stated and bool(CONCEPT_TOPICS & set(parsed.topics))


def fits_with_margin(c: Config) -> bool:
    return c.fits and c.total_gib <= MARGIN * c.usable_gib


def slow_link(ev: Evidence) -> bool:
    r = ev.resolved
    return bool(r and r.nodes > 1 and (r.inter_node_link == "ethernet" or r.inter_node_gbps < SLOW_LINK_GBPS))


def memory_share(c: Config) -> float:
    """The share of usable memory a configuration needs (1.0 when nothing is usable)."""
    return c.total_gib / c.usable_gib if c.usable_gib else 1.0


def pick(ev: Evidence, candidates: list[Config]) -> tuple[Config, Config | None]:
    """(chosen, rival): the simplest configuration within ``TOLERANCE`` of the fastest, and the
    fastest other configuration in that band (None when the chosen one stands alone)."""
    fastest = max(candidates, key=lambda c: (c.tokens_per_s_per_gpu, -simplicity(ev, c)))
    near = [c for c in candidates if c.tokens_per_s_per_gpu >= (1 - TOLERANCE) * fastest.tokens_per_s_per_gpu]
    chosen = min(near, key=lambda c: (simplicity(ev, c), -c.tokens_per_s_per_gpu))
    rivals = [c for c in near if c is not chosen and c.strategy != chosen.strategy]
    rival = max(rivals, key=lambda c: c.tokens_per_s_per_gpu) if rivals else None
    return chosen, rival


def decide(ev: Evidence) -> Decision:
    """The decision for ``ev`` (see the module docstring and docs/decision.md)."""
    parsed = ev.parsed
    intent = parsed.intent
    if parsed.empty:
        return Decision("needs_info", intent, "out_of_scope", confidence="low",
                        questions=list(parsed.missing) or ["params_b", "gpu_memory_gb", "gpu_count"])
    if not parsed.on_topic or intent == "out_of_scope":
        return Decision("out_of_scope", "out_of_scope", "out_of_scope", confidence="high")
    if ev.problems:
        return Decision("invalid", intent, "none", confidence="low",
                        questions=list(dict.fromkeys(p.field for p in ev.problems)))
    if ev.resolved is None:  # no model size: concept answers stand; a recommendation needs the setup
        concept = answered_from_docs(ev)
        # "A or B?" with no setup is answered for a setup: it depends, and the answer asks for it
        status = "ok" if (intent in ("concept", "troubleshoot") or concept) and (ev.passages or ev.playbook) \
            and not parsed.compare else "needs_info"
        questions = [] if concept and status == "ok" else _to_ask(parsed)
        return Decision(status, intent, "none", confidence="low", questions=questions,
                        direct=direct_without_setup(ev))
    d = _ladder(ev)
    d.intent = intent
    plan_fits = ev.parallel is not None and ev.parallel.memory is not None and ev.parallel.memory.fits
    if d.strategy == "none" and plan_fits and not _fix_cheaper_than_plan(ev, d):
        d.plan = ev.parallel  # FSDP alone does not fit; TP/CP/PP over it does
        # the plan's memory model is checked against torchtitan's published rows only (docs/calc.md)
        d.confidence = "medium"
    d.direct = direct_answer(ev, d)
    d.questions = _to_ask(parsed)
    if _offload_ram_unknown(ev, d) and "cpu_ram_gb" not in d.questions:
        d.questions.append("cpu_ram_gb")  # offload is the way it fits: the host RAM decides it
    for x in d.reasons:  # an OOM the estimate does not explain: ask what sizes the activations
        if x.code == Code.OOM_UNEXPLAINED:
            d.questions += [f for f in x.values["assumed"] if f not in d.questions]
    r = ev.resolved
    if r.nodes > 1 and parsed.setup.inter_node_link is None and parsed.setup.inter_node_gbps is None:
        d.questions.append("inter_node_link")
    return d


# A plan past FSDP (TP/CP/PP on the same GPUs) keeps full fine-tuning and the hardware but needs a
# model-parallel stack (torchtitan): it is preferred to any combination that changes what is
# trained (LoRA, QLoRA), offloads or buys GPUs, not to the cheap knobs up to 8-bit AdamW
# (bot.fix_search.CHANGE_RANK).
PLAN_AFTER_CHANGE = "optimizer_8bit"


def _fix_cheaper_than_plan(ev: Evidence, d: Decision) -> bool:
    from bot.fix_search import CHANGE_RANK

    fix = combined_fix(ev, d)
    return fix is not None and max(CHANGE_RANK[c] for c in fix.changes) <= CHANGE_RANK[PLAN_AFTER_CHANGE]


def combined_fix(ev: Evidence, d: Decision) -> Any:
    """The cheapest combination of changes that fits (bot.fix_search.Fix), worth saying when
    nothing GPU-resident fits as asked; None when there is none or the pick already is it (CPU
    offload chosen, and the cheapest fit is offload again)."""
    fix = ev.fixes.fix if ev.fixes is not None else None
    if fix is None or d.strategy not in ("none", "fsdp_full_shard_offload"):
        return None
    if d.strategy == "fsdp_full_shard_offload" and "offload" in fix.changes:
        return None
    return fix


def _offload_ram_unknown(ev: Evidence, d: Decision) -> bool:
    """CPU offload is how it fits (the pick, or the cheapest combination) and the host RAM, which
    decides whether offload works, was not stated."""
    if ev.resolved is None or ev.resolved.setup.cpu_ram_gb is not None:
        return False
    fix = combined_fix(ev, d)
    return d.strategy == "fsdp_full_shard_offload" or bool(fix is not None and fix.host_ram_unknown)


def _to_ask(parsed: Any) -> list[str]:
    """The setup fields to ask for: what is missing, except the GPU count when the count is what
    the question asks ("how many GPUs do I need?" is answered by the search, not asked back).
    A capacity question about something else ("how much memory does a 70B full fine-tune need?")
    still asks the count it was computed without: no silent default (first-contact batch e)."""
    missing = list(parsed.missing)
    if parsed.intent == "capacity" and _asks_count(parsed):
        missing = [f for f in missing if f != "gpu_count"]
    return missing


def _asks_count(parsed: Any) -> bool:
    """The question asks how many GPUs (or nodes) it takes, or whether some number of them is enough."""
    topics = set(getattr(parsed, "topics", []) or [])
    return "how_many_gpus" in topics


def count_is_asked(ev: Evidence) -> bool:
    """The GPU count is what the question asks and it was not stated ("how many H100s do I need
    with TP=8 and PP=2?"): the capacity search answers it, and no verdict is judged on the count
    assumed in its place (on the default 8 GPUs "no plan fits" while the answer is 32)."""
    return ev.resolved is not None and "gpu_count" in ev.resolved.assumed and _asks_count(ev.parsed) \
        and ev.capacity is not None


# --------------------------------------------------------------------------------------------
# The ladder
# --------------------------------------------------------------------------------------------


def _ladder(ev: Evidence) -> Decision:
    r = ev.resolved
    assert r is not None
    # on one GPU there is nothing to shard across: DDP's rows (plain training) are the candidates
    weighed = [c for c in ev.configs if c.strategy in GPU_RESIDENT and (r.gpu_count > 1 or c.strategy == "ddp")]
    reasons: list[Reason] = []
    ran = observed_run(ev)
    suspect: list[Config] = []
    unexplained = False  # the failed run's own row fits with a margin by the estimate
    if ran is not None:  # the user ran this and it ran out of memory: not recommended as it was
        failed = [c for c in weighed if c.strategy == ran and not (c.variant in (CKPT, BUCKET_FUSED_CKPT)
                                                                   and checkpointing_on(ev, c))]
        # When the user named the strategy (a log, a ZeRO stage) without saying whether activation
        # checkpointing was on, it may well have been (LlamaFactory, llama-recipes and the HF
        # Trainer recipes turn it on): its checkpointing variant is then only a fallback, after
        # every strategy the user has not tried.
        obs = ev.parsed.observed
        named = obs.fsdp_strategy in GPU_RESIDENT or obs.zero_stage in ZERO_TO_STRATEGY
        if named and ev.parsed.setup.activation_checkpointing is None:
            suspect = [c for c in weighed if c.strategy == ran and c not in failed]
        if failed:
            dominated = _dominated(ev, weighed, ran, failed)
            suspect += [c for c in _dominated(ev, weighed, ran, suspect) if c not in dominated]
            ran_as = {"strategy": ran, "stage": obs.zero_stage if obs.fsdp_strategy is None else None}
            as_ran = next((c for c in failed if c.variant == BASE), None)
            reasons.append(Reason(Code.OBSERVED_OOM, {**ran_as, "any_checkpointing": False, "config": as_ran}))
            spared = sorted({c.strategy for c in dominated if fits_with_margin(c)}, key=GPU_RESIDENT.index)
            if spared:
                reasons.append(Reason(Code.OOM_DOMINATED, {**ran_as, "others": spared}))
            unexplained = as_ran is not None and fits_with_margin(as_ran)
            if unexplained:
                reasons.append(Reason(Code.OOM_UNEXPLAINED, {**ran_as, "config": as_ran, "assumed": _assumed_size(ev)}))
            failed += dominated
            weighed = [c for c in weighed if c not in failed]

    def untried_first(rows: list[Config]) -> list[Config]:
        return [c for c in rows if c not in suspect] or rows

    with_margin = untried_first([c for c in weighed if fits_with_margin(c)])
    among: str | None = None  # how the candidates were narrowed before the throughput pick
    if unexplained:
        # The estimate already missed a real peak by a wide margin, most often in the activations
        # (an attention that stores its scores, a longer sample): checkpointing removes most of
        # them whatever the cause, so its rows go first.
        checkpointed = [c for c in with_margin if checkpointing_on(ev, c)]
        if checkpointed and len(checkpointed) < len(with_margin):
            with_margin, among = checkpointed, "checkpointing"
    tight = untried_first([c for c in weighed if c.fits and not fits_with_margin(c)])
    if suspect and with_margin and not set(with_margin) & set(suspect):
        reasons = [Reason(Code.OBSERVED_OOM, {**x.values, "any_checkpointing": True}) if x.code == Code.OBSERVED_OOM
                   else x for x in reasons]
    oom = bool(ev.parsed.observed.oom)
    if oom and not with_margin and tight:
        # The user already hit a real OOM: a fit with no margin is within the estimate's error,
        # so it is not recommended (shown in the table and the what-ifs instead).
        reasons.append(Reason(Code.THIN_AFTER_OOM, {"config": min(tight, key=memory_share)}))
        tight = []
    candidates = with_margin or tight
    accumulate = False
    if not candidates:
        # Nothing fits at the asked micro-batch: a smaller one plus gradient accumulation keeps
        # the global batch (before CPU offload, which is far slower), on one GPU as on many.
        candidates = [c for c in weighed if not c.fits and c.max_micro_batch >= 1]
        accumulate = bool(candidates)
    base_ddp = ev.config("ddp")
    assert base_ddp is not None
    d = Decision("ok", ev.parsed.intent, "none")

    if r.gpu_count == 1:
        reasons.append(Reason(Code.SINGLE_GPU))

    if candidates:
        all_suspect = bool(suspect) and set(candidates) <= set(suspect)
        if all_suspect:
            # Each may hit the same OOM as the run that failed: the most headroom goes first.
            chosen, rival, among = min(candidates, key=memory_share), None, "headroom"
        else:
            chosen, rival = pick(ev, candidates)
        d.strategy, d.variant, d.chosen = chosen.strategy, chosen.variant, chosen
        memory = _memory_reasons(ev, chosen, base_ddp)
        if chosen.strategy == ran or among:  # checkpointing is the fix for a real OOM, not a speed-up
            memory = [Reason(Code.NEEDS_CHECKPOINTING, x.values) if x.code == Code.CHECKPOINTING_FASTER else x for x in memory]
        reasons += memory
        reasons.append(Reason(Code.ACCUMULATE, {"config": chosen}) if accumulate
                       else Reason(Code.THROUGHPUT, {"config": chosen, "among": among}))
        if rival is not None:
            reasons.append(Reason(Code.SIMPLER_WITHIN_TOLERANCE, {"config": chosen, "faster": rival,
                                                               "tolerance": TOLERANCE}))
        if chosen.strategy == "ddp" and r.gpu_count > 1:
            if all(c.vs_ddp >= 1.0 for c in candidates if c.strategy != "ddp"):
                reasons.append(Reason(Code.COMM_LEAST, {"config": chosen}))
        elif chosen.strategy != "ddp":
            reasons.append(Reason(Code.COMM_COST, {"config": chosen}))
        if chosen.strategy == "fsdp_hybrid_shard" and slow_link(ev):
            reasons.append(Reason(Code.SLOW_INTER_NODE, {"config": chosen}))
        if not with_margin and not accumulate:
            reasons.append(Reason(Code.TIGHT, {"config": chosen}))
        ddp_choices = [c for c in candidates if c.strategy == chosen.strategy]
        # fastest first; a tie goes to the simpler strategy (a set's order changes between runs)
        others = sorted({c.strategy for c in candidates if c.strategy != chosen.strategy},
                        key=lambda s: (-max(c.tokens_per_s_per_gpu for c in candidates if c.strategy == s),
                                       _STRATEGY_RANK.get(s, 30)))
        d.alternatives = [] if all_suspect else others[:2]  # the others hold more: no fallback
        share = chosen.total_gib / chosen.usable_gib if chosen.usable_gib else 1.0
        d.confidence = ("high" if with_margin and share <= COMFORT and ddp_choices
                        else "medium" if with_margin else "low")
        if all_suspect or unexplained:
            d.confidence = "low" if d.confidence == "low" else "medium"  # a real OOM the estimate missed
        if ev.gpu_unknown:
            d.confidence = "low" if len({_scenario_pick(s) for s in ev.scenarios}) > 1 else "medium"
    else:
        host = ev.estimate.memory["fsdp_full_shard_offload"].host_ram_gib if ev.estimate else 0.0
        ram_known = r.setup.cpu_ram_gb is not None
        offload = [c for c in ev.configs if c.strategy == "fsdp_full_shard_offload" and c.fits
                   and c.variant in (BASE, CKPT) and (ram_known or host <= UNSTATED_HOST_RAM_GIB)]
        if offload:
            chosen = min(offload, key=lambda c: simplicity(ev, c))
            d.strategy, d.variant, d.chosen = chosen.strategy, chosen.variant, chosen
            reasons += _memory_reasons(ev, chosen, base_ddp)
            reasons.append(Reason(Code.ONLY_OFFLOAD, {"config": chosen}))
            d.confidence = "medium" if r.setup.cpu_ram_gb else "low"
        else:
            d.strategy, d.confidence = "none", "high"
            reasons += _memory_reasons(ev, None, base_ddp)
            biggest = ev.config("fsdp_full_shard", CKPT) or ev.config("fsdp_full_shard")
            reasons.append(Reason(Code.NOTHING_FITS, {"config": biggest if r.gpu_count > 1 else base_ddp}))
            if ev.fixes is not None and ev.fixes.fix is None:  # not even the changes tried together
                reasons.append(Reason(Code.NO_COMBINATION_FITS, {"tried": ev.fixes.tried}))
            off = [c for c in ev.configs if c.strategy == "fsdp_full_shard_offload" and c.variant in (BASE, CKPT)]
            short = [c for c in off if not c.fits and c.host_ram_short]
            if short:  # the GPU side fits: the calculator's host-RAM rule is what says no
                reasons.append(Reason(Code.HOST_RAM_SHORT, {"config": short[0]}))
    d.reasons = reasons
    d.rows = _rows(ev, d)
    d.what_ifs = _what_ifs(ev, d)
    return d


def _dominated(ev: Evidence, weighed: list[Config], ran: str, group: list[Config]) -> list[Config]:
    """Other strategies' rows that need at least as much per GPU as a row of ``group`` (the run
    that ran out of memory) with activation checkpointing set the same way. Activations do not
    depend on the strategy, and sharding less keeps more of the model states per GPU (ZeRO,
    https://arxiv.org/abs/1910.02054 sec. 5.1: stage 3 < 2 < 1 < DDP), so such a row would run out
    too, whatever the real sequence length and micro-batch were. Rows with checkpointing set the
    other way are not compared: their activations scale differently with what was assumed."""
    return [c for c in weighed if c.strategy != ran and c not in group
            and any(checkpointing_on(ev, c) == checkpointing_on(ev, f) and c.total_gib >= f.total_gib for f in group)]


def _assumed_size(ev: Evidence) -> list[str]:
    """The fields that size the activations and that the user did not state (assumed defaults)."""
    setup = ev.parsed.setup
    return [f for f in ("seq_len", "micro_batch") if getattr(setup, f) is None]


def observed_run(ev: Evidence) -> str | None:
    """The strategy the user reports running out of memory with (a log, a DeepSpeed stage, or
    plain training on one GPU), or None."""
    obs = ev.parsed.observed
    if not obs.oom:
        return None
    if obs.fsdp_strategy in GPU_RESIDENT:
        return obs.fsdp_strategy
    if obs.zero_stage in ZERO_TO_STRATEGY and not obs.zero_offload:
        return ZERO_TO_STRATEGY[obs.zero_stage]
    if ev.resolved is not None and ev.resolved.gpu_count == 1:
        return "ddp"
    return None


def _scenario_pick(s: Any) -> str:
    mem = s.estimate.memory
    return next((x for x in ("ddp", "fsdp_full_shard") if mem[x].fits), "none")


def _memory_reasons(ev: Evidence, chosen: Config | None, ddp: Config) -> list[Reason]:
    """Why DDP does or does not fit, and what the chosen configuration's variant changes."""
    out: list[Reason] = []
    r = ev.resolved
    assert r is not None
    if r.gpu_count > 1:  # on one GPU "nothing_fits" says it; there are no replicas
        out.append(Reason(Code.DDP_FITS if ddp.fits else Code.DDP_TOO_BIG, {"config": ddp}))
    if chosen is None or chosen.variant == BASE:
        return out
    base = ev.config(chosen.strategy)
    if chosen.variant in (CKPT, BUCKET_FUSED_CKPT) and checkpointing_on(ev, chosen):
        out.append(Reason(Code.NEEDS_CHECKPOINTING if base is not None and not base.fits else Code.CHECKPOINTING_FASTER,
                          {"config": chosen, "base": base}))
    if chosen.variant in (BUCKET_FUSED, BUCKET_FUSED_CKPT):
        out.append(Reason(Code.BUCKET_FUSED, {"config": chosen, "base": base}))
    return out


def flipped_base(ev: Evidence, c: Config) -> Config | None:
    """The as-asked row whose verdict the single knob of ``c`` (checkpointing flipped, or DDP's
    bucket view + fused AdamW) flips between fits and does not, or None. The one home of "this
    knob changes the verdict": the table shows such a row and the what-ifs word it."""
    if c.variant not in (CKPT, BUCKET_FUSED):
        return None
    base = ev.config(c.strategy)
    return base if base is not None and base.fits != c.fits else None


def _rows(ev: Evidence, d: Decision) -> list[Config]:
    """The table: every strategy as asked, plus each variant row that changes a verdict or is
    the one chosen."""
    rows = [c for c in ev.configs if c.variant == BASE]
    rows += [c for c in ev.configs if c.variant != BASE and (c is d.chosen or flipped_base(ev, c) is not None)]
    return rows


# --------------------------------------------------------------------------------------------
# What would change it
# --------------------------------------------------------------------------------------------


def _what_ifs(ev: Evidence, d: Decision) -> list[Reason]:
    r = ev.resolved
    assert r is not None
    # a plan past FSDP + checkpointing (TP in a node, CP, PP) comes first where the ladder climbs there
    # "should we add TP?" with a plan past FSDP: the direct answer states it (a stated plan is the what-if)
    said = bool(ev.parsed.asked_axes) and not is_stated(ev.parallel)
    out: list[Reason] = ([Reason(Code.PARALLEL_PLAN, {"suggestion": ev.parallel})]
                         if ev.parallel is not None and not said else [])
    fix = combined_fix(ev, d)
    if fix is not None:  # nothing fits as asked: the cheapest combination that does, first
        out.append(Reason(Code.COMBINED_FIX, {"fix": fix}))
    chosen = d.chosen
    # A strategy the user ran out of memory with, checkpointing unknown, is not recommended with
    # or without it (observed_oom): no what-if offers it back.
    ruled_out = {x.values["strategy"] for x in d.reasons if x.code == Code.OBSERVED_OOM and x.values["any_checkpointing"]}
    for c in d.rows:  # each knob that flips a verdict, with its figure
        base = flipped_base(ev, c)
        if base is not None and c is not d.chosen and c.strategy not in ruled_out:
            out.append(Reason(Code.KNOB_FLIPS, {"config": c, "base": base}))
    if chosen is not None and chosen.strategy == "ddp" and r.gpu_count > 1:
        out.append(Reason(Code.DDP_MB_LIMIT, {"config": chosen, "shard": ev.config("fsdp_full_shard", chosen.variant)
                                           or ev.config("fsdp_full_shard")}))
    if chosen is not None and chosen.strategy in ("fsdp_full_shard", "fsdp_shard_grad_op", "fsdp_hybrid_shard"):
        out.append(Reason(Code.SHARD_MB_LIMIT, {"config": chosen}))
        lora = ev.variants.get(LORA)
        if (r.setup.finetune or "full") == "full" and lora is not None and lora.estimate.memory["ddp"].fits:
            out.append(Reason(Code.LORA_DDP_FITS, {"variant": LORA}))
    if r.nodes > 1:
        out += _multi_node(ev, d)
    opt8 = ev.variants.get(OPT8)
    if opt8 is not None and (ev.parsed.observed.oom or d.strategy in ("none", "fsdp_full_shard_offload")):
        # after a real OOM or when nothing fits: 8-bit moments keep full fine-tuning, with its figure
        target = chosen.strategy if chosen is not None and chosen.strategy in GPU_RESIDENT else "fsdp_full_shard"
        if ev.estimate is not None and target in opt8.estimate.memory:
            out.append(Reason(Code.OPTIMIZER_8BIT, {"variant": OPT8, "strategy": target,
                                                 "fits": bool(opt8.estimate.memory[target].fits)}))
    if d.strategy in ("none", "fsdp_full_shard_offload"):
        out += _fixes(ev)
        if (r.setup.micro_batch or 1) > 1:
            out.append(Reason(Code.SMALLER_MB, {"config": ev.config("fsdp_full_shard")}))
    return out


def _multi_node(ev: Evidence, d: Decision) -> list[Reason]:
    r = ev.resolved
    assert r is not None
    out: list[Reason] = []
    chosen = d.chosen
    single = ev.variants.get(SINGLE_NODE)
    if chosen is not None and single is not None:
        s = chosen.strategy if chosen.strategy != "fsdp_hybrid_shard" else "fsdp_full_shard"
        out.append(Reason(Code.SINGLE_NODE, {"config": chosen, "single_strategy": s,
                                          "single_fits": bool(single.estimate.memory[s].fits)}))
    if chosen is not None and chosen.comm_share >= COMM_HEAVY:
        out.append(Reason(Code.COMM_HEAVY, {"config": chosen}))
    assumed = "inter_node_gbps" in r.assumed or "inter_node_link" in r.assumed
    if assumed and chosen is not None and (chosen.comm_share >= COMM_HEAVY or chosen.strategy == "fsdp_hybrid_shard"
                                            or slow_link(ev)):
        out.append(Reason(Code.LINK_ASSUMED, {"link": r.inter_node_link, "gbps": r.inter_node_gbps}))
    if chosen is not None and chosen.strategy != "fsdp_hybrid_shard" and not slow_link(ev):
        hsdp = ev.config("fsdp_hybrid_shard")
        if hsdp is not None and hsdp.fits:
            out.append(Reason(Code.HSDP_IF_SLOW, {"config": hsdp}))
    if chosen is not None and chosen.strategy == "fsdp_hybrid_shard":
        fs = ev.config("fsdp_full_shard")
        if fs is not None and fs.fits:
            out.append(Reason(Code.FAST_LINK_FULL_SHARD, {"config": fs}))
    return out


def _fixes(ev: Evidence) -> list[Reason]:
    """When nothing GPU-resident fits: LoRA/QLoRA (with checkpointing if needed), more GPUs."""
    r = ev.resolved
    assert r is not None
    out: list[Reason] = []
    if (r.setup.finetune or "full") in ("full", "lora"):
        for plain, with_ckpt in ((LORA, LORA_CKPT), (QLORA, QLORA_CKPT)):
            for name in (plain, with_ckpt):
                v = ev.variants.get(name)
                if v is None:
                    continue
                best = next((s for s in GPU_RESIDENT if (s != "fsdp_hybrid_shard" or r.nodes > 1)
                             and v.estimate.memory[s].fits), None)
                if best:
                    out.append(Reason(Code.FINETUNE_FITS, {"variant": name, "strategy": best,
                                                        "finetune": "lora" if name.startswith("lora") else "qlora",
                                                        "checkpointing": name.endswith("ckpt")}))
                    break
    cap = ev.capacity
    if cap is not None and cap.gpu_count is not None and cap.gpu_count > r.gpu_count:
        out.append(Reason(Code.CAPACITY, {"capacity": cap}))
    return out
