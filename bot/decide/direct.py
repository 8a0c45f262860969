"""The direct answer: the reasons that answer what the question asked, before the table.

``direct_answer(ev, d)`` for a computed setup: a stated comparison ("DDP or FSDP?"), an asked strategy,
an asked parallel axis ("should we add TP?"), checkpointing, what the person's own OOM log shows
(``log_at_zero2_step``: the failed allocation is ZeRO-2's fp32 gradient copy), and for a
troubleshooting question the playbook's causes first (``bot.decide.diagnosis``).
``direct_without_setup(ev)`` for a question that states no setup. Pure, as the rest of
``bot.decide``: everything comes from the evidence and the decision. The ladder's parameters
(``TOLERANCE``, ``GPU_RESIDENT``, ...) stay in ``bot.decide``, read at call time (the package
imports this module).
"""

from __future__ import annotations

from bot.decide.diagnosis import ASKED_FIRST, SAID_BY_LEAD, diagnosing, needs_to_diagnose
from bot.decide.diagnosis import causes as _causes
from bot.decide.reasons import Code, Decision, Reason
from bot.evidence import BASE, BUCKET_FUSED, BUCKET_FUSED_CKPT, CKPT, SINGLE_NODE, Config, Evidence
from bot.parallel_evidence import is_stated

# An out-of-memory log's failed allocation this close to ZeRO-2's fp32 gradient copy is that copy.
LOG_ALLOCATION_MATCH = 0.02


def log_at_zero2_step(ev: Evidence) -> Reason | None:
    """The user's out-of-memory log failed allocating ZeRO-2's fp32 copy of one GPU's gradient
    partition: the run died at the optimizer step, with every 16-bit weight on each GPU
    (bot.calc.memory.deepspeed_fp32_grad_copy_bytes; docs/calc.md "DeepSpeed ZeRO-2")."""
    asked = ev.parsed.observed.tried_to_allocate_gib
    copy = ev.estimate.zero2_fp32_grad_copy_gib if ev.estimate is not None else None
    if not asked or not copy or abs(asked - copy) > LOG_ALLOCATION_MATCH * copy:
        return None
    return Reason(Code.LOG_ZERO2_STEP, {"asked": asked, "config": ev.config("fsdp_shard_grad_op")})


def _zero_or_adapters(ev: Evidence) -> bool:
    """Whether what ZeRO-1/2 leaves unsharded under LoRA is worth saying: the user runs DeepSpeed
    or adapters (a plain "FSDP uses as much memory as DDP" is about activations and wrapping)."""
    return deepspeed_user(ev) or ev.parsed.setup.finetune in ("lora", "qlora") or "lora" in ev.parsed.topics


def deepspeed_user(ev: Evidence) -> bool:
    obs = ev.parsed.observed
    return (obs.framework or "").lower() in ("deepspeed", "llamafactory", "ms-swift", "openrlhf") \
        or obs.zero_stage is not None or "zero_vs_fsdp" in ev.parsed.topics


# direct answers that name the failed allocation itself: no generic causes after them
_EXPLAINS_OOM = frozenset({"log_zero2_step"})


def direct_answer(ev: Evidence, d: Decision) -> list[Reason]:
    """The answer to what was asked: this setup's own figures (a computed diagnosis names the
    cause with numbers); where they say nothing about it, the playbook's causes for the symptoms.
    A diagnosis (``diagnosing``) leads with its causes, ranked, then the figures that support
    them; with no cause and no figure it asks for the facts that would decide it."""
    out = _direct_for_setup(ev, d)
    if not diagnosing(ev):
        return out or _causes(ev, d)  # after an OOM, a computed diagnosis is the cause with its numbers
    if any(r.code in _EXPLAINS_OOM for r in out):  # the user's own log names the cause
        return out
    causes = _causes(ev, d)
    if causes:
        lead = causes[0].values.get("lead", "")
        said = SAID_BY_LEAD.get(lead, frozenset())
        # DDP's knobs are asked only as a topic; after a DDP OOM they are added unasked
        asked = [r for r in out if r.code in ASKED_FIRST and r.code not in said
                 and (r.code != Code.DDP_KNOBS or "ddp_memory_knobs" in ev.parsed.topics)] if not lead else []
        return asked + causes + [r for r in out if r.code not in said and r not in asked]
    return out or [needs_to_diagnose(ev)]


def _direct_for_setup(ev: Evidence, d: Decision) -> list[Reason]:
    from bot.decide import COMM_HEAVY, GPU_RESIDENT, KNOB_MIN_SAVING, count_is_asked

    topics = set(ev.parsed.topics)
    out: list[Reason] = []
    if ev.parsed.asked_axes and ev.parallel_checked is not None and not is_stated(ev.parallel_checked) \
            and not count_is_asked(ev):
        out.append(_asked_parallel(ev))  # "should we add TP?": yes or no with the plan's figure, first
    compare = tuple(s for s in ev.parsed.compare if s in GPU_RESIDENT + ("fsdp_full_shard_offload",))
    if len(compare) == 2:
        if d.strategy in ("fsdp_shard_grad_op", "fsdp_hybrid_shard") and "fsdp_full_shard" in compare \
                and d.strategy not in compare:  # "DDP or FSDP?": FSDP means its best variant here
            compare = tuple(d.strategy if s == "fsdp_full_shard" else s for s in compare)
        out.append(_compare(ev, compare))
    asked = ev.parsed.asked_strategy if len(compare) != 2 else None
    if asked is not None and d.chosen is not None:
        out.append(_asked_strategy(ev, d, asked))
    if "activation_checkpointing" in topics:
        out.append(_need_checkpointing(ev))
    if ev.parsed.intent == "capacity" or "how_many_gpus" in topics:
        if ev.capacity is not None:
            out.append(Reason(Code.CAPACITY_ANSWER, {"capacity": ev.capacity}))
    obs = ev.parsed.observed
    # a ZeRO-2 run is not DDP, nor is a DeepSpeed run whose stage the question does not show
    ran_ddp = obs.fsdp_strategy in (None, "ddp") and obs.zero_stage in (None, 0) and not deepspeed_user(ev)
    if "ddp_memory_knobs" in topics or (obs.oom and d.strategy != "ddp" and ran_ddp):
        knob, base = ev.config("ddp", BUCKET_FUSED), ev.config("ddp")
        # said only when the knobs change the figure (at long context the peak is the activations,
        # before any bucket or optimizer temporary exists: "1398.37 -> 1398.37 GiB" says nothing)
        if knob is not None and base is not None and base.total_gib - knob.total_gib >= KNOB_MIN_SAVING * base.total_gib:
            out.append(Reason(Code.DDP_KNOBS, {"config": knob, "base": base}))
    if "memory_not_divided" in topics and several_gpus(ev):
        # "more GPUs, same memory per GPU": what sharding divides here and what it never does
        out.append(Reason(Code.MEMORY_NOT_DIVIDED, {"finetune": ev.resolved.setup.finetune if ev.resolved else None,
                                                 "config": ev.config("fsdp_full_shard"), "zero": _zero_or_adapters(ev)}))
    if "fsdp_slower_than_ddp" in topics:
        out.append(Reason(Code.WHY_FSDP_SLOWER, {"fsdp": ev.config("fsdp_full_shard"), "ddp": ev.config("ddp")}))
    if "multi_node_slow" in topics and d.chosen is not None:
        out.append(Reason(Code.WHY_MULTI_NODE_SLOW, {"config": d.chosen, "link_assumed": link_assumed(ev)}))
    # a run that hangs or errors across nodes is not slowed by its communication share (batch f class 1)
    if (ev.parsed.intent == "troubleshoot" and d.chosen is not None and not out and ev.failure_kind in (None, "slow")
            and ev.resolved is not None and ev.resolved.nodes > 1 and d.chosen.comm_share >= COMM_HEAVY):
        out.append(Reason(Code.WHY_MULTI_NODE_SLOW, {"config": d.chosen, "link_assumed": link_assumed(ev)}))  # across nodes
    if not out and ev.parsed.intent == "recommend" and ev.parsed.asks_if_fits:
        # "够吗?" / "Can I train it on this?": yes with the configuration that fits, or no
        out.append(Reason(Code.FEASIBLE, {"chosen": d.chosen if d.chosen is not None and d.chosen.fits else None}))
    if deepspeed_user(ev):
        out.append(Reason(Code.ZERO_MAPPING, {"strategy": d.strategy, "stage": ev.parsed.observed.zero_stage,
                                           "offload": ev.parsed.observed.zero_offload}))
    if (log := log_at_zero2_step(ev)) is not None:
        out.insert(0, log)  # what the user's own log shows comes first
    return out


def _compare(ev: Evidence, pair: tuple[str, ...]) -> Reason:
    from bot.decide import TOLERANCE, simplicity

    def best(s: str) -> Config | None:
        rows = [c for c in ev.configs if c.strategy == s and c.fits and c.variant in (BASE, CKPT)]
        return max(rows, key=lambda c: (c.variant == BASE, c.tokens_per_s_per_gpu)) if rows else None

    a, b = best(pair[0]), best(pair[1])
    if a is None and b is None:
        winner = None
    elif a is None or b is None:
        winner = pair[0] if b is None else pair[1]
    else:
        faster, slower = (a, b) if a.tokens_per_s_per_gpu >= b.tokens_per_s_per_gpu else (b, a)
        near = slower.tokens_per_s_per_gpu >= (1 - TOLERANCE) * faster.tokens_per_s_per_gpu
        winner = min((a, b), key=lambda c: simplicity(ev, c)).strategy if near else faster.strategy
    return Reason(Code.COMPARE, {"pair": pair, "winner": winner, "a": a, "b": b,
                              "a_base": ev.config(pair[0]), "b_base": ev.config(pair[1])})


def _asked_parallel(ev: Evidence) -> Reason:
    """"Should we add TP / CP / PP?": the ladder's answer (bot.calc.parallel_ladder). ``verdict``:
    yes (the plan adds an axis asked about), other (it adds another axis instead), no (FSDP with
    checkpointing fits, no model-parallel axis needed) or nothing (no plan fits)."""
    suggestion = ev.parallel_checked
    asked = ev.parsed.asked_axes
    plan = suggestion.plan
    added = tuple(axis for axis in ("tp", "cp", "pp") if plan is not None and plan.degrees.get(axis, 1) > 1)
    if plan is None:
        verdict = "nothing"
    elif set(added) & set(asked):
        verdict = "yes"
    elif added:
        verdict = "other"
    else:
        verdict = "no"
    return Reason(Code.ASKED_PARALLEL, {"axes": asked, "verdict": verdict, "added": added,
                                        "policy": suggestion.policy, "suggestion": suggestion})


def _asked_strategy(ev: Evidence, d: Decision, asked: str) -> Reason:
    """"Should I use X?": X's best fitting configuration against the recommended one. ``verdict``:
    yes (X is the pick), close (within TOLERANCE of it: the simpler one was preferred), slower,
    or no_fit."""
    from bot.decide import TOLERANCE

    fitting = [c for c in ev.configs if c.strategy == asked and c.fits and c.variant != SINGLE_NODE]
    best = max(fitting, key=lambda c: c.tokens_per_s_per_gpu, default=None)
    chosen = d.chosen
    if best is None:
        verdict = "no_fit"
    elif asked == d.strategy:
        verdict = "yes"
    elif chosen is not None and best.tokens_per_s_per_gpu >= (1 - TOLERANCE) * chosen.tokens_per_s_per_gpu:
        verdict = "close"
    else:
        verdict = "slower"
    return Reason(Code.ASKED_STRATEGY, {"asked": asked, "verdict": verdict, "best": best, "chosen": chosen,
                                     "base": ev.config(asked)})


def _need_checkpointing(ev: Evidence) -> Reason:
    from bot.decide import GPU_RESIDENT, checkpointing_on

    fits_without = [c for c in ev.configs if c.fits and c.strategy in GPU_RESIDENT and not checkpointing_on(ev, c)
                    and c.variant in (BASE, CKPT, BUCKET_FUSED, BUCKET_FUSED_CKPT)]
    fits_with = [c for c in ev.configs if c.fits and c.strategy in GPU_RESIDENT and checkpointing_on(ev, c)]
    if not fits_without and not fits_with:  # only offload can work: the same question for it
        offload = [c for c in ev.configs if c.strategy == "fsdp_full_shard_offload" and c.fits]
        fits_without = [c for c in offload if not checkpointing_on(ev, c)]
        fits_with = [c for c in offload if checkpointing_on(ev, c)]
    best_without = max(fits_without, key=lambda c: c.tokens_per_s_per_gpu, default=None)
    best_with = max(fits_with, key=lambda c: c.tokens_per_s_per_gpu, default=None)
    return Reason(Code.NEED_CHECKPOINTING, {"needed": best_without is None and best_with is not None,
                                         "without": best_without, "with": best_with})


def link_assumed(ev: Evidence) -> bool:
    """The inter-node link (kind or speed) is a default, not the user's: figures that hang on it
    are said as conditional."""
    r = ev.resolved
    return r is not None and r.nodes > 1 and bool({"inter_node_link", "inter_node_gbps"} & set(r.assumed))


def several_gpus(ev: Evidence) -> bool:
    """The resolved setup has more than one GPU (something to shard across)."""
    return ev.resolved is not None and ev.resolved.gpu_count > 1


def passages_shown(ev: Evidence) -> bool:
    """Whether the answer quotes the retrieved passages. Not for "how many GPUs?" without the
    model: it has no general answer, what retrieval found is off the point (s1 issue 59 got one
    on ZeRO-3's precision), and the answer asks for the model instead."""
    return bool(ev.passages) and not (ev.resolved is None and ev.parsed.intent == "capacity")


def direct_without_setup(ev: Evidence) -> list[Reason]:
    out = _causes(ev)
    if ev.sizes is not None:  # no model, the cards known: the largest model each method fits, first
        out.insert(0, Reason(Code.SIZE_LIMITS, {"sizes": ev.sizes}))
    if "memory_not_divided" in ev.parsed.topics:  # the asked question first, then what the docs say
        out.append(Reason(Code.MEMORY_NOT_DIVIDED, {"finetune": ev.parsed.setup.finetune, "config": None,
                                                 "zero": _zero_or_adapters(ev)}))
    if not out and diagnosing(ev):  # a failure nothing answers: what is needed, never a passage
        out.append(needs_to_diagnose(ev))
    if passages_shown(ev) and not out:  # a topic answered in its own words (or by its causes) needs no passage before it
        out.append(Reason(Code.FROM_PASSAGES, {"passages": ev.passages[:2]}))
    if deepspeed_user(ev):
        out.append(Reason(Code.ZERO_MAPPING, {"strategy": None, "stage": ev.parsed.observed.zero_stage,
                                           "offload": ev.parsed.observed.zero_offload}))
    sharded = {"fsdp_shard_grad_op", "fsdp_full_shard"}
    asks_sharding = sharded <= set(ev.parsed.compare) or "shard_grad_op_vs_full_shard" in ev.parsed.topics
    if asks_sharding and ev.parsed.setup.finetune in ("lora", "qlora") and "memory_not_divided" not in ev.parsed.topics:
        # with adapters, what FULL_SHARD adds over SHARD_GRAD_OP is sharding the frozen base only
        out.append(Reason(Code.LORA_SHARDING_GAIN, {"finetune": ev.parsed.setup.finetune}))
    return out
