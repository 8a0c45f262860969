"""The LLM path's setup proposal, checked against the text and answered (issue 28: pipeline, not surface).

The LLM surface (``bot.surfaces.llm``) lets an agent propose a setup through the ``estimate_memory``
tool. ``read_for_llm`` reads the conversation once for that path (the reading the proposal is
checked against, and whether any user turn is closed to an LLM: hostile text, or nothing to read);
``with_proposal`` checks each proposed field against the text (``bot.understand.proposal``: a
field is used only where the reader found the same value or the user's text states it), answers
again with what was accepted, names what was filled or rejected in notices, and asks with
``status="needs_info"`` when an essential field (model size, card memory, GPU count) was rejected.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, replace
from typing import Any

from bot.answer import Answer
from bot.answer.catalog import render
from bot.assistant import answer_parsed
from bot.core.setup import check_setup
from bot.parse import Parsed, parse_conversation, parse_turn, user_turns
from bot.parse import _missing as parse_missing
from bot.render import question_text, render_markdown
from bot.understand.proposal import check_llm_setup, essential_rejections, reason_text

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class LlmReading:
    """The conversation as the LLM path reads it: the parse of the whole conversation, the user's
    earlier turns, and whether an LLM may read it at all."""

    parsed: Parsed
    earlier_turns: list[str]
    closed: bool  # hostile text in the question or an earlier user turn, or nothing to read


def read_for_llm(question: str, history: Any = None) -> LlmReading:
    """Read the conversation once for the LLM path. Hostile text in any earlier user turn closes it
    too: the agent reads the whole history."""
    parsed = parse_conversation(question, history)
    earlier = user_turns(history)
    earlier_injection = any(parse_turn(turn)[1].injection for turn in earlier)
    return LlmReading(parsed, earlier, bool(parsed.injection or earlier_injection or parsed.empty))


def _rejection_notice(rejected: dict[str, str], lang: str) -> str:
    """One line naming each rejected proposal and why, in the answer's language."""
    items = render(lang, "llm.separator", {}).join(
        render(lang, "llm.rejected_item", {"name": name, "reason": reason_text(reason, lang == "zh")})
        for name, reason in sorted(rejected.items()))
    return render(lang, "llm.rejected", {"items": items})


def _filled_notice(filled: dict, provenance: dict, lang: str) -> str:
    """One line naming each field the LLM filled and the span of the question that states it."""
    items = render(lang, "llm.separator", {}).join(
        render(lang, "llm.filled_item", {"name": name, "value": value, "span": provenance[name].span})
        for name, value in filled.items() if name in provenance)
    return render(lang, "llm.filled", {"items": items})


def with_proposal(question: str, reading: LlmReading, draft: Answer, proposal: dict
                  ) -> tuple[Answer, list[str], list[str]]:
    """The answer after checking the LLM's proposed setup against the text (``accept_llm_setup``):
    accepted fields the reader missed are computed with (provenance: the span that states them);
    rejected ones are named in a notice and, when essential and still missing, asked for with
    ``status="needs_info"``. Returns (answer, the notices it added, essential fields to ask for)."""
    parsed = reading.parsed
    text = "\n".join([*reading.earlier_turns, question])
    try:
        check = check_llm_setup(proposal, parsed, text)
    except Exception:  # noqa: BLE001 - a bug in the check must cost the proposal, never the answer
        log.exception("checking the LLM's setup proposal failed; proposal ignored")
        return draft, [], []
    if check.rejected:
        log.warning("LLM setup proposal rejected: %s", check.rejected)
    if not check.filled and not check.rejected:
        return draft, [], []
    lang = "zh" if parsed.language == "zh" else "en"
    fields = {k: v for k, v in check.setup.model_dump().items() if v is not None}
    reading_problems = [p for p in parsed.problems if p not in check_setup(parsed.setup)]
    added = ([_filled_notice(check.filled, check.provenance, lang)] if check.filled else []) + \
        ([_rejection_notice(check.rejected, lang)] if check.rejected else [])
    notices = list(parsed.notices) + added
    updated = replace(parsed, setup=check.setup, provenance=check.provenance, missing=parse_missing(fields),
                      problems=reading_problems + check_setup(check.setup), notices=notices)
    result = answer_parsed(updated, question=question)
    essential = essential_rejections(check)
    ask_for = [f for f in essential if f not in result.questions]
    if essential and result.status == "ok":  # computed for assumed scenarios: still ask first
        result = _needs_info(result, ask_for, essential)
    return result, added, essential


# How ``bot.compose`` writes the confidence in its headline ("(confidence: high", "（置信度：高").
_HEADLINE_CONFIDENCE = re.compile(r"(\(confidence: |（置信度：)(high|medium|高|中)")


def _needs_info(result: Answer, ask_for: list[str], essential: list[str]) -> Answer:
    """``result`` as ``needs_info``: an essential field the LLM invented is asked for, and the figures
    computed for the assumed value are shown with low confidence (Answer and headline alike)."""
    sections = result.sections.model_copy(update={
        "headline": _HEADLINE_CONFIDENCE.sub(lambda m: m.group(1) + ("低" if m.group(1).startswith("（") else "low"),
                                             result.sections.headline or "") or result.sections.headline,
        "questions": [*result.sections.questions, *(question_text(q, result.language) for q in ask_for)]})
    updated = result.model_copy(update={
        "status": "needs_info", "questions": [*result.questions, *ask_for], "sections": sections,
        "missing": list(dict.fromkeys([*result.missing, *essential])),
        "recommendation": result.recommendation.model_copy(update={"confidence": "low"})})
    return render_markdown(updated)
