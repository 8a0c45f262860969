"""The forum claims an answer may correct or qualify: :func:`applicable_claims` picks the claims of
the forum corpus (``knowledge/forum``) relevant to the question's topics and judges each only
against a setup that meets the claim's condition (:mod:`bot.knowledge.conditions`); with no setup,
or a setup silent on what the condition needs, the claim "depends on X" (``ApplicableClaim``).
Called once per question by the evidence stage (``bot.corpus_evidence.add_claims``); the passages
beside them are :mod:`bot.knowledge.answering`'s.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from bot.knowledge import conditions
from bot.knowledge.answering import TOPIC_HINTS

# Claim topics (the forum corpus's own tags) that speak to each question topic; used for claims
# that carry no ``topics`` of their own.
_CLAIM_TOPICS: dict[str, tuple[str, ...]] = {
    "fsdp1_vs_fsdp2": ("version",),
    "shard_grad_op_vs_full_shard": ("terminology", "sharding"),
    "zero_vs_fsdp": ("terminology",),
    "hybrid_shard": ("interconnect",),
    "ddp_memory_knobs": ("memory",),
    "oom": ("memory",),
    "how_many_gpus": ("memory",),
    "fsdp_slower_than_ddp": ("speed", "communication"),
    "multi_node_slow": ("interconnect", "communication"),
    "communication": ("communication",),
    "mixed_precision": ("mixed-precision",),
    "activation_checkpointing": (),
}
_DEFAULT_CLAIM_TOPICS = ("memory", "communication")  # the thread's own question: DDP or FSDP?


@dataclass(frozen=True)
class ApplicableClaim:
    """A forum claim, judged for this setup (or marked as depending on what the setup lacks)."""

    forum_id: str  # "forum-03"
    claim_id: str  # "forum-03-c1"
    quote: str  # verbatim substring of the forum answer
    verdict: str  # corpus verdict: supported | holds_only_when | misleading | contradicted | unverifiable
    condition: str  # the claim's condition in the answer's language ("" when unconditional), no prefix
    applies: bool  # the setup meets the condition (False also when the setup does not say)
    correction: str  # the correct statement in the answer's language (figures from the corpus sources)
    doc_ids: list[str]  # docs the verdict rests on
    # "judged": the verdict applies to this setup; "holds" / "does_not_hold": a holds_only_when claim
    # checked against this setup; "depends": no setup, or it lacks facts the condition needs.
    judgement: str = "judged"
    condition_data: dict[str, Any] = field(default_factory=dict)
    title: str = ""
    url: str = ""
    topic: str = ""
    calc_checked: bool = False  # the verdict also rests on the calculator
    assumed: tuple[str, ...] = ()  # condition keys decided by assumed (default) setup values

    @property
    def condition_note(self) -> str:
        """What to print beside the claim: "depends on: X", "holds only when X", "not for this
        setup: holds only when X", or "" when the verdict applies as is."""
        lang = "zh" if any("\u4e00" <= ch <= "\u9fff" for ch in self.condition) else "en"
        if not self.condition:
            return ""
        if self.judgement == "depends":
            return conditions.depends_text(self.condition_data, lang)
        if self.judgement == "does_not_hold":
            return f"对这个配置不成立：仅当{self.condition}时成立" if lang == "zh" else \
                f"does not hold for this setup: holds only when {self.condition}"
        if self.judgement == "holds":
            return f"对这个配置成立（仅当{self.condition}）" if lang == "zh" else \
                f"holds for this setup (only when {self.condition})"
        return ""


_ORDER = {"contradicted": 0, "does_not_hold": 0, "misleading": 1, "holds_only_when": 2, "holds": 2,
          "supported": 3, "unverifiable": 4}
_PER_TOPIC = 2  # at most this many claims on one corpus topic, so the list covers several


def applicable_claims(setup: Any = None, *, topics: Sequence[str] = (), language: str = "en",
                      limit: int = 4) -> list[ApplicableClaim]:
    """Forum claims relevant to ``topics`` (and the setup), each judged only where it applies.

    - A claim whose condition the setup meets: ``applies=True``, its verdict and correction.
    - A "holds_only_when" claim whose condition the setup fails: ``applies=False``,
      ``judgement="does_not_hold"`` (the claim is wrong for this setup; the correction says why).
    - Any other claim whose condition the setup fails: left out (not judged against it).
    - No setup, or one silent on a fact the condition needs: ``applies=False``,
      ``judgement="depends"``; ``condition_note`` = "depends on: ..." (``condition`` is the bare
      condition text, for renderers that add their own wording).
    Order: wrong claims first, then conditional ones, then right ones (within each, those judged
    for this setup before those that depend on it); one claim per forum answer; at most two per
    corpus topic."""
    from bot.knowledge.corpus import load_forum

    lang = "zh" if language == "zh" else "en"
    wanted = [t for t in (topics or ()) if t in TOPIC_HINTS]
    known, _ = conditions.facts(setup)
    picked: list[tuple[tuple, ApplicableClaim]] = []
    for answer in load_forum():
        for claim in answer.claims:
            if not _relevant(claim, wanted, known):
                continue
            judged = _judge(answer, claim, setup, lang)
            if judged is None:
                continue
            key = _ORDER.get(judged.judgement if judged.judgement in _ORDER else claim.verdict, 5)
            # wrong or conditional claims first: they are what the answer must correct or qualify
            picked.append(((key, judged.judgement == "depends", len(picked)), judged))
    picked.sort(key=lambda pair: pair[0])
    out: list[ApplicableClaim] = []
    answers: set[str] = set()
    per_topic: dict[str, int] = {}
    for _, item in picked:
        if item.forum_id in answers or per_topic.get(item.topic, 0) >= _PER_TOPIC:
            continue
        answers.add(item.forum_id)
        per_topic[item.topic] = per_topic.get(item.topic, 0) + 1
        out.append(item)
        if len(out) >= max(0, limit):
            break
    return out


def _relevant(claim, wanted: list[str], known: dict[str, Any]) -> bool:
    if wanted:
        if claim.topics:
            if not set(claim.topics) & set(wanted):
                return False
        elif not any(claim.topic in _CLAIM_TOPICS.get(t, ()) for t in wanted):
            return False
    elif claim.topic not in _DEFAULT_CLAIM_TOPICS:
        return False
    # A claim about a model of a given size (7B) speaks about models near that size only.
    size, params_b = claim.applies_to.get("params_b"), known.get("params_b")
    if size and params_b and abs(float(size) - float(params_b)) / float(params_b) > 0.3:
        return False
    # On one GPU nothing is sharded or synchronised: DDP-vs-FSDP memory and traffic claims are moot.
    if known.get("gpu_count") == 1 and claim.topic != "terminology":
        return False
    return True


def _judge(answer, claim, setup: Any, lang: str) -> ApplicableClaim | None:
    outcome = conditions.evaluate(claim.condition, setup) if setup is not None else None
    if not claim.condition:
        judgement, applies = "judged", True
    elif outcome is None or outcome.met is None:
        judgement, applies = "depends", False
    elif outcome.met:
        judgement, applies = ("holds" if claim.verdict == "holds_only_when" else "judged"), True
    elif claim.verdict == "holds_only_when":
        judgement, applies = "does_not_hold", False
    else:
        return None  # the verdict speaks about setups unlike this one
    condition_text = conditions.describe(claim.condition, lang)
    # The citation's title names the claim's condition, so a figure in the condition ("at least 8
    # GPUs") traces to the cited corpus entry like any other figure.
    title = f"{answer.title} ({claim.id}: {condition_text})" if condition_text else answer.title
    return ApplicableClaim(
        forum_id=answer.id, claim_id=claim.id, quote=claim.quote, verdict=claim.verdict,
        condition=condition_text, applies=applies,
        correction=claim.correct_zh if lang == "zh" else claim.correct,
        doc_ids=[s for s in claim.verdict_source if s.startswith("doc-")], judgement=judgement,
        condition_data=dict(claim.condition), title=title, url=answer.url, topic=claim.topic,
        calc_checked="calc" in claim.verdict_source,
        assumed=tuple(outcome.assumed) if outcome is not None and outcome.met is not None else (),
    )
