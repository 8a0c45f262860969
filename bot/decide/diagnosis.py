"""The diagnosis a troubleshooting answer leads with (issue 25): whether the answer diagnoses at
all (``diagnosing``), the playbook causes ranked with the lead the calculator can say in this
setup's figures (``causes``), and what to ask when nothing matches (``needs_to_diagnose``).

Pure like the rest of ``bot.decide``: everything comes from ``bot.evidence.Evidence`` (the
playbook matches, with the calculator's ``states_exceed_card`` among their triggers; what the
question's text already states, ``given``, and the figures it gives, ``stated``: the workers per
process and the cores, a per-card requirement, the card counts compared).
"""

from __future__ import annotations

from typing import Any

from bot.decide.reasons import Code, Decision, Reason
from bot.evidence import BASE, CKPT, Config, Evidence


def diagnosing(ev: Evidence) -> bool:
    """The answer diagnoses first: a troubleshooting question, or a message read as "which
    strategy?" (or as a concept outside the docs' topics) that reports a failure of the person's
    run (an OOM, an error, a kill, a slowdown: ``Evidence.failure_reported``). A capacity question,
    or a concept the docs answer, is answered as asked."""
    from bot.decide import CONCEPT_TOPICS

    intent = ev.parsed.intent
    if intent == "troubleshoot":  # unless the only failure named is one to avoid ("will DDP OOM?")
        return not ev.failure_hypothetical
    if not ev.failure_reported:
        return False
    # "why is FSDP slower than DDP?" is a concept with a topic the docs answer; a failure with no
    # such topic ("分布式训练跑不起来，是什么原因？") is a diagnosis whatever the intent reads as
    return intent == "recommend" or (intent == "concept" and not CONCEPT_TOPICS & set(ev.parsed.topics))


# Playbook entries whose first sentence the calculator can say with this setup's own figures
CARD_TOO_SMALL, NETWORK = "pb-card-too-small", "pb-multi-node-slow-link"
# ... and those said with the figures the question itself gives (batch e classes 16, 18, 21): the
# workers per process against the cores, the stated per-card memory against the card, the step
# time compared across two card counts
OVERSUBSCRIBE, BELOW_REQUIREMENT, STEP_TIME = ("pb-dataloader-workers-oversubscribe",
                                               "pb-card-below-stated-requirement", "pb-throughput-per-device")


def _most_frugal(ev: Evidence) -> Config | None:
    """The GPU-resident row that needs the least per GPU with activation checkpointing on (the
    one GPU's DDP row on one card): what "even fully sharded" means in figures."""
    from bot.decide import GPU_RESIDENT, checkpointing_on

    r = ev.resolved
    if r is None:
        return None
    rows = [c for c in ev.configs if c.strategy in GPU_RESIDENT and checkpointing_on(ev, c)
            and c.variant in (BASE, CKPT) and (r.gpu_count > 1 or c.strategy == "ddp")]
    return min(rows, key=lambda c: c.total_gib, default=None)


def causes(ev: Evidence, d: Decision | None = None) -> list[Reason]:
    """A troubleshooting question is answered with the causes its symptoms match, ranked (the
    diagnosis playbook, bot.knowledge.playbook), before any figure. Where the first cause is one
    the calculator can show for this setup (the cards too small for the model states, the link
    between nodes), it says it with the setup's figures (``lead``)."""
    from bot.decide import RIVAL_CAUSE
    from bot.decide.direct import link_assumed

    if not ev.playbook:
        return []
    best = ev.playbook[0].score  # the others only when they fit the symptoms nearly as well
    values: dict[str, Any] = {"matches": [m for m in ev.playbook if m.score >= RIVAL_CAUSE * best]}
    first = ev.playbook[0].id
    r = ev.resolved
    if first == CARD_TOO_SMALL and "states_exceed_card" in ev.playbook[0].matched_triggers:
        frugal = _most_frugal(ev)
        if frugal is not None and not frugal.fits:
            values.update(lead="card_too_small", config=frugal)
    elif first == NETWORK and r is not None and r.nodes > 1 and d is not None and d.chosen is not None:
        values.update(lead="network", config=d.chosen, link_assumed=link_assumed(ev))
    else:
        values.update(_stated_lead(ev, ev.playbook[0]))
    # the first cause (its gist, how to check and fix it) first; the rival causes after, their own
    # sentence, so a short form may fold them; the first cause in full last, for the full answer only
    return [Reason(Code.PLAYBOOK, values), Reason(Code.PLAYBOOK_OTHERS, {"matches": values["matches"]}),
            Reason(Code.PLAYBOOK_CAUSE, {"matches": values["matches"]})]


# What a diagnosis asks for when nothing matches, by the kind of failure, most decisive first: each
# fact with the ``facts_given`` names (bot.knowledge.playbook) that mean the question already says it.
# The answer asks for the first two the question lacks (issue 25, batch e class 17).
FACTS_TO_ASK: dict[str, tuple[tuple[str, frozenset[str]], ...]] = {
    "oom": (("when", frozenset({"oom_phase"})), ("setup", frozenset({"setup"})),
            ("message", frozenset({"oom_message"}))),
    "slow": (("link", frozenset({"link"})), ("speed", frozenset({"measured_speed"})),
             ("loader", frozenset({"workers"}))),
    "error": (("message", frozenset({"error_message", "no_error"})), ("command", frozenset({"launch_command"})),
              ("versions", frozenset())),
    # a run that stops moving: where each rank waits, how it was started, NCCL's own account
    "hang": (("where", frozenset({"hang_stack"})), ("command", frozenset({"launch_command"})),
             ("nccl", frozenset({"nccl_log"}))),
}


def _given(ev: Evidence) -> frozenset[str]:
    """What the question already states (the text's facts, and the setup the reader found)."""
    given = set(ev.given)
    s = ev.parsed.setup
    if s.params_b and (s.gpu or s.gpu_memory_gb) and s.gpu_count:
        given.add("setup")
    if s.intra_node_link or s.inter_node_link:
        given.add("link")
    return frozenset(given)


def _stated_lead(ev: Evidence, first: Any) -> dict[str, Any]:
    """The lead said with the question's own figures, where the first cause is one the numbers in
    the text decide ({} otherwise): ``lead`` names the message, ``figures`` its values."""
    stated, gpus = ev.stated, ev.parsed.setup.gpu_count
    if first.id == OVERSUBSCRIBE and "workers_oversubscribe" in first.matched_triggers and gpus:
        workers, cores = int(stated.get("num_workers") or 0), int(stated.get("cpu_cores") or 0)
        return {"lead": "workers", "figures": {
            "gpus": gpus, "workers": workers, "cores": cores, "loaders": gpus * workers,
            "per_gpu": max(1, cores // gpus - 1)}}  # one core per rank's own process
    if first.id == BELOW_REQUIREMENT and "requirement_exceeds_card" in first.matched_triggers:
        card = ev.parsed.setup.gpu_memory_gb
        if not card and ev.resolved is not None and "gpu" not in ev.resolved.assumed:
            card = ev.resolved.gpu_memory_gb
        required = stated.get("stated_requirement_gb")
        if card and required:
            return {"lead": "below_requirement", "figures": {"required_gb": required, "card_gb": card}}
    if first.id == STEP_TIME:
        counts = sorted(set(stated.get("gpu_counts") or ()))
        if len(counts) >= 2 and counts[0] >= 1:
            low, high = int(counts[0]), int(counts[-1])
            return {"lead": "step_time", "figures": {"low": low, "high": high, "scale": round(high / low, 2)}}
    return {}


def needs_to_diagnose(ev: Evidence) -> Reason:
    """No cause matches and nothing is computed: the one or two facts that would decide it, by
    the kind of failure reported (memory, speed, or an error), never one the question gives."""
    topics = set(ev.parsed.topics)
    kind = ev.failure_kind
    if ev.parsed.observed.oom or "oom" in topics or kind in ("oom", "host_ram"):
        kind = "oom"
    elif ev.failure_hang:
        kind = "hang"  # before "slow": a hang at an all-reduce names communication, and is no slowdown
    elif kind == "slow" or topics & {"multi_node_slow", "fsdp_slower_than_ddp", "communication"}:
        kind = "slow"
    else:
        kind = "error"
    given = _given(ev)
    missing = [name for name, said in FACTS_TO_ASK[kind] if not said & given]
    return Reason(Code.DIAGNOSE_NEEDS, {"kind": kind, "facts": tuple(missing[:2] or [FACTS_TO_ASK[kind][-1][0]])})


# direct answers the diagnosis's own lead sentence already says (with the same figures)
SAID_BY_LEAD = {"network": frozenset({Code.WHY_MULTI_NODE_SLOW})}
# Answers to the very question asked, computed from this setup ("would gradient_as_bucket_view fix
# my DDP OOM?", "should we add TP?", "A or B?", "do I need checkpointing?", "why are several nodes
# slow?"): they lead a diagnosis, the playbook's causes follow them. A cause the calculator says in
# this setup's figures (a ``lead``) still comes first, and says what these would.
ASKED_FIRST = frozenset({Code.ASKED_PARALLEL, Code.COMPARE, Code.ASKED_STRATEGY, Code.DDP_KNOBS,
                         Code.NEED_CHECKPOINTING, Code.WHY_MULTI_NODE_SLOW})
