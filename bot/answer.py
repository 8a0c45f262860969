"""The Answer: what ``bot.ask`` returns and every surface renders (JSON contract in DESIGN.md).

``Answer.model_dump()`` is exactly the DESIGN.md object: language, setup, missing,
recommendation, numbers, citations, questions, text. Rendering (markdown, Slack blocks) lives in
``bot/render.py``; this module only holds the data.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

CitationKind = Literal["forum", "doc", "calc", "bench"]
Confidence = Literal["high", "medium", "low"]


class Citation(BaseModel):
    """A source behind figures in the text, referenced as ``[n]``.

    forum/doc: ``quote`` is verbatim text of that corpus entry. calc: ``quote`` states the inputs
    the calculator used. bench: ``id`` is the stored run id (``bench-...``).
    """

    n: int
    id: str
    kind: CitationKind
    title: str
    url: str | None = None
    quote: str | None = None


class Recommendation(BaseModel):
    strategy: str  # a strategy id from bot.strategies
    alternatives: list[str] = Field(default_factory=list)
    confidence: Confidence = "medium"
    why: list[str] = Field(default_factory=list)


class Answer(BaseModel):
    language: Literal["zh", "en"]
    setup: dict = Field(default_factory=dict)
    missing: list[str] = Field(default_factory=list)
    recommendation: Recommendation
    # Flat keys: memory.<strategy>.<field>, comm.<strategy>.<field>, time.<strategy>.step_seconds
    numbers: dict[str, float | int | bool] = Field(default_factory=dict)
    citations: list[Citation] = Field(default_factory=list)
    questions: list[str] = Field(default_factory=list)
    text: str = ""
