"""The Answer: what ``bot.ask`` returns and every surface renders (JSON contract in DESIGN.md).

``Answer.model_dump()`` is the DESIGN.md object: status, intent, language, setup, missing,
recommendation, numbers, citations, questions, text, plus ``sections`` — the structured parts
(headline, setup as read, table rows, reasons, what-ifs, forum verdicts, how-to, questions) that
every renderer reads. Renderers (markdown, Slack blocks, the page) never recompute: they read
``sections`` and ``numbers``. This module only holds the data.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

CitationKind = Literal["forum", "doc", "calc", "bench"]
Confidence = Literal["high", "medium", "low"]
# ok: a recommendation or a concept answer; needs_info: essential facts missing (``questions``);
# invalid: the setup contradicts itself or is impossible; out_of_scope: not DDP/FSDP training;
# error: an internal failure (logged with its traceback), never dressed up as a recommendation.
Status = Literal["ok", "needs_info", "invalid", "out_of_scope", "error"]
Intent = Literal["recommend", "concept", "troubleshoot", "capacity", "out_of_scope"]
# Where a setup field's value came from: the user's prose, a pasted config or command line, an
# error log, an earlier turn, or an assumption of ours (a default, always shown as assumed).
FieldSource = Literal["stated", "config", "log", "history", "carried", "assumed"]
Verdict = Literal["supported", "holds_only_when", "misleading", "contradicted", "unverifiable"]


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


class SetupItem(BaseModel):
    """One setup field as the answer used it, and where its value came from."""

    field: str  # a TrainingSetup field name (DESIGN.md)
    value: str | float | int | bool
    source: FieldSource
    span: str | None = None  # the text it was read from ("--cutoff_len 1536"); None when assumed


class TableRow(BaseModel):
    """One configuration the decision weighed (a strategy, optionally with a variant)."""

    strategy: str  # strategy id
    variant: str = ""  # "" for the setup as asked, else e.g. "ckpt", "bucket_view+fused"
    label: str  # display name in the answer's language
    total_gib: float | None = None
    reserved_gib: float | None = None
    usable_gib: float | None = None
    fits: bool | None = None
    max_micro_batch: int | None = None
    vs_ddp: float | None = None  # communication volume relative to DDP
    step_seconds: float | None = None
    tokens_per_s_per_gpu: float | None = None
    chosen: bool = False
    # column name -> the ``numbers`` key its figure comes from (traceability binds value and key)
    keys: dict[str, str] = Field(default_factory=dict)


class ForumVerdictItem(BaseModel):
    """A forum claim judged against this setup (or conditioned when the setup does not decide it)."""

    forum_id: str
    quote: str  # verbatim from the forum answer
    verdict: Verdict
    condition: str | None = None  # "holds only when ..." / "depends on ..."
    text: str = ""  # the judgement in the answer's language, with [n] markers
    citation: int | None = None  # the [n] of the forum answer


class HowTo(BaseModel):
    title: str
    language: Literal["python", "bash", "json", "yaml", "toml", "text"] = "python"
    code: str


class Sections(BaseModel):
    """The answer's parts, in the answer's language; every string may carry ``[n]`` markers."""

    headline: str = ""  # first line: answers the question asked, then the recommendation
    direct_answer: str | None = None  # yes/no, which of two options, why slow, how many GPUs
    # the direct answer's further sentences in the full answer only (shown folded, in order): those
    # only it carries (a diagnosis's full cause behind its gist), then those past the short form's budget
    direct_more: list[str] = Field(default_factory=list)
    setup_read: list[SetupItem] = Field(default_factory=list)
    table: list[TableRow] = Field(default_factory=list)
    # the table's title when it is not the setup as asked: beside a stated TP/CP/PP plan the rows
    # are pure data parallelism over every GPU, and the title says so (None: the default title)
    table_title: str | None = None
    # beside a stated TP/CP/PP plan: each data-parallel strategy on the data-parallel group the plan
    # leaves (bot.parallel_evidence.plan_rows), printed above the pure-DP table, and its title
    plan_table: list[TableRow] = Field(default_factory=list)
    plan_table_title: str | None = None
    reasons: list[str] = Field(default_factory=list)
    what_ifs: list[str] = Field(default_factory=list)  # each knob that would flip a verdict
    passages: list[str] = Field(default_factory=list)  # retrieved, cited passages that answer it
    forum: list[ForumVerdictItem] = Field(default_factory=list)
    howto: list[HowTo] = Field(default_factory=list)
    questions: list[str] = Field(default_factory=list)  # human-readable questions to the user
    notices: list[str] = Field(default_factory=list)  # truncation, unknown model, not modelled...
    # sentence -> the source key of each figure it prints, in order (``numbers`` key, "setup.<field>",
    # "cite.<n>" or "turn"); the renderer turns these into ``Answer.figures`` in text order.
    figure_keys: dict[str, list[str]] = Field(default_factory=dict)


class FigureRef(BaseModel):
    """One figure printed in ``Answer.text``, in order, and the key its value comes from."""

    printed: str
    key: str


class Answer(BaseModel):
    status: Status = "ok"
    intent: Intent = "recommend"
    language: Literal["zh", "en"]
    setup: dict[str, Any] = Field(default_factory=dict)
    # field name -> where it came from (FieldSource); fields absent here were not used
    provenance: dict[str, FieldSource] = Field(default_factory=dict)
    missing: list[str] = Field(default_factory=list)
    recommendation: Recommendation
    # Flat keys: memory.<strategy>.<field>, comm.<strategy>.<field>, time.<strategy>.<field>
    numbers: dict[str, float | int | bool] = Field(default_factory=dict)
    citations: list[Citation] = Field(default_factory=list)
    questions: list[str] = Field(default_factory=list)
    sections: Sections = Field(default_factory=Sections)
    # the short form (DESIGN.md): the first sentence answers what was asked, a few lines of prose,
    # the table and what is still needed; ``full_text`` adds the folded sections (why, what would
    # change it, the setup as read, passages, forum verdicts, how to run it)
    text: str = ""
    # every figure in ``text`` (outside code), in order, bound to its source key (traceability)
    figures: list[FigureRef] = Field(default_factory=list)
    full_text: str = ""
    full_figures: list[FigureRef] = Field(default_factory=list)
