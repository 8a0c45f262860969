"""Helpers the unit tests share (imported as ``_helpers``: pytest puts tests/unit on the path).

The troubleshooting tests ask one thing of an answer: does its FIRST sentence name the cause the
question's facts point to (issue 25)? ``answer_offline`` answers one message without retrieval
(the playbook and the calculator are local, so the lead does not depend on the search index), and
``lead_of`` reads the cause that answer's first sentence cites (``evals.bench_diagnosis.lead_cause``:
a playbook id, ``needs-facts`` or ``none``, with the sentence).
"""

from __future__ import annotations

from typing import Any

import pytest

from bot.assistant import answer_parsed
from bot.knowledge.playbook import match_playbook
from bot.parse import parse_conversation
from evals.bench_diagnosis import lead_cause


def answer_offline(question: str, *, with_knowledge: bool = False) -> Any:
    """The answer to ``question`` as a single message; no passages unless ``with_knowledge``."""
    return answer_parsed(parse_conversation(question), question=question, with_knowledge=with_knowledge)


def lead_of(question: str) -> tuple[str, str]:
    """(the cause the answer's first sentence names, that sentence) for ``question``."""
    return lead_cause(answer_offline(question))


def playbook_named(text: str) -> list[str]:
    """The playbook entries whose symptoms ``text`` matches, best first (what an answer would lead with)."""
    parsed = parse_conversation(text)
    return [m.id for m in match_playbook(parsed, text=text, limit=0) if m.matched_symptoms]


def entry_cases(cases: dict[str, list[str]]) -> list[Any]:
    """``pytest.param(entry_id, text)`` for every phrasing of every entry, with readable ids."""
    return [pytest.param(entry_id, text, id=f"{entry_id}-{i}") for entry_id, texts in cases.items()
            for i, text in enumerate(texts)]
