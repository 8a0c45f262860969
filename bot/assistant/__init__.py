"""``ask(question, history=None) -> Answer``: the deterministic pipeline every surface calls.

One direction, each stage a plain function over typed data:
question (+ earlier turns) -> ``bot.parse.parse_conversation`` (setup, intent, topics, provenance)
-> ``bot.evidence.build_evidence`` (estimates for the setup and every variant, stored runs,
passages, forum claims; built once) -> ``bot.decide.decide`` (pure) -> ``bot.compose.compose``
(structured sections) -> ``bot.render.render_markdown`` (text + figure bindings).

Status contract: an internal exception is ``status="error"`` (logged with its traceback), never a
strategy; no model size is ``needs_info`` (never a recommendation); an impossible setup is
``invalid``; off-topic is ``out_of_scope``. No network, no GPU, no LLM. ``answer_for_setup`` is
the same pipeline for a setup edited directly (the Gradio setup panel).
"""

from __future__ import annotations

import logging
from typing import Any

from bot.answer import Answer, Recommendation, Sections
from bot.compose import DESIGN_FIELDS, calc_quote, compose
from bot.core.setup import TrainingSetup, check_setup, usable_setup
from bot.decide import decide
from bot.evidence import DEFAULT_GPU_COUNT, SCENARIO_GPUS, build_evidence
from bot.parse import Parsed, framework_defaults, parse_conversation
from bot.render import render_markdown
from bot.understand import Observed, Provenance

log = logging.getLogger(__name__)

__all__ = ["DEFAULT_GPU_COUNT", "DESIGN_FIELDS", "SCENARIO_GPUS", "answer_for_setup", "answer_parsed", "ask",
           "calc_quote", "error_answer"]


def ask(question: str, history: Any = None) -> Answer:
    """Answer ``question`` in its language; ``history`` is the conversation so far (strings or
    ``{"role", "content"}`` messages; only user turns are read). Never raises on user input."""
    language = "en"
    try:
        parsed = parse_conversation(question, history)
        language = parsed.language
        return answer_parsed(parsed, question=question if isinstance(question, str) else "")
    except Exception:  # a bug must not take a surface down; the log has the traceback
        log.exception("ask() failed")
        return error_answer(language)


def error_answer(language: str) -> Answer:
    """An internal failure: ``status="error"``, no strategy dressed up as advice."""
    lang = "zh" if language == "zh" else "en"
    text = ("出了点问题，暂时无法回答这个问题（内部错误，已记录）。" if lang == "zh"
            else "Something went wrong while answering (an internal error, logged); please try again or rephrase.")
    return Answer(status="error", language=lang, recommendation=Recommendation(strategy="none", confidence="low"),
                  sections=Sections(headline=text), text=text)


def answer_for_setup(setup: TrainingSetup, language: str = "en", *, missing: list[str] | None = None,
                     with_knowledge: bool = True, framework: str | None = None) -> Answer:
    """The answer for a setup given directly (no parsing), e.g. from the Gradio setup panel.
    ``framework`` is the one the user's run uses ("llamafactory"): its defaults fill the fields
    the setup leaves unset, assumed and said, as they were for the question."""
    notices, provenance = [], {}
    for name, value, notice in framework_defaults(framework, setup.model_dump()):
        setup = setup.model_copy(update={name: value})
        notices.append(notice)
        provenance[name] = Provenance("assumed", "", 0.8)
    fields = {k for k, v in setup.model_dump().items() if v is not None}
    # the problems name every bad value in words; the setup shown as read keeps none of them
    parsed = Parsed(setup=usable_setup(setup), language="zh" if language == "zh" else "en", problems=check_setup(setup),
                    missing=missing if missing is not None else _missing_from_fields(fields),
                    notices=notices, provenance=provenance, observed=Observed(framework=framework))
    try:
        return answer_parsed(parsed, with_knowledge=with_knowledge)
    except Exception:
        log.exception("answer_for_setup() failed")
        return error_answer(language)


def answer_parsed(parsed: Parsed, *, question: str = "", with_knowledge: bool = True) -> Answer:
    """The pipeline after parsing: evidence -> decision -> structured answer -> markdown."""
    evidence = build_evidence(parsed, question=question, with_knowledge=with_knowledge)
    decision = decide(evidence)
    return compose(evidence, decision)


def _missing_from_fields(fields: set[str]) -> list[str]:
    out = []
    if not fields & {"params_b", "model"}:
        out.append("params_b")
    if not fields & {"gpu_memory_gb", "gpu"}:
        out.append("gpu_memory_gb")
    if "gpu_count" not in fields and not {"nodes", "gpus_per_node"} <= fields:
        out.append("gpu_count")
    return out


# kept for callers of the old module layout
_ = render_markdown
