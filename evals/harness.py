"""Load eval cases, ask the bot, score every answer: the harness behind ``python -m evals run``.

A cases file is JSONL, one case per line (format in ``evals/cases/README.md``)::

    {"id": "zh-7b-8xa100-40g", "turns": ["7B模型全参微调，8张A100 40G，DDP还是FSDP？"],
     "expect": {"language": "zh", "strategy": ["fsdp_full_shard"], "numbers": {...},
                "cite_kinds": ["calc"], "asks": ["gpu_memory_gb"], "forbid": ["sk-"]}}

``turns`` is one conversation: the last turn is asked with the earlier ones as history, and the
expectations apply to that answer. :func:`load_cases` validates every line and raises
:class:`CaseFileError` naming the file, the line and the field. :func:`run_cases` calls ``ask``
once per case, times it, runs every metric (``evals/metrics.py``) and the baselines
(``evals/baselines.py``) and returns a :class:`RunResult` that ``evals/report.py`` renders.
"""

from __future__ import annotations

import json
import re
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, get_args

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from bot.answer import Intent as AnswerIntent
from bot.answer import Status as AnswerStatus
from bot.core.setup import TrainingSetup
from bot.evidence import BUCKET_FUSED, BUCKET_FUSED_CKPT, CKPT, LORA, LORA_CKPT, OPT8, QLORA, QLORA_CKPT
from bot.strategies import ALL_STRATEGIES
from evals.metrics import METRIC_NAMES, MetricResult, Sources, run_metrics

CASES_DIR = Path(__file__).resolve().parent / "cases"
GOLD_CASES = CASES_DIR / "gold.jsonl"
# The gate's default for a single ``--cases FILE`` run: the pass rate the gold set reaches.
DEFAULT_MIN_PASS = 0.95
# The ratchet: for each cases file, the number of cases that passed when it was last raised
# (``python -m evals run --ratchet``). The gate fails when a file passes fewer; it never goes down
# by itself, so a regression cannot hide in a margin.
BASELINE_FILE = CASES_DIR / "baseline.json"

CITE_KINDS = ("forum", "doc", "calc", "bench")
INTENTS = get_args(AnswerIntent)
STATUSES = get_args(AnswerStatus)
SETUP_FIELDS = tuple(TrainingSetup.model_fields)
# DESIGN.md number keys: memory.<strategy>.<field>, comm.<strategy>.<field>, time.<strategy>.step_seconds
_STRATEGY = "|".join(ALL_STRATEGIES)
# A key may name one of the variants the answer weighed beside the setup as asked
# ("ckpt.memory.ddp.fits": the same setup with activation checkpointing flipped; bot.evidence).
_VARIANT = "|".join(re.escape(v) for v in (CKPT, BUCKET_FUSED, BUCKET_FUSED_CKPT, LORA, QLORA, LORA_CKPT, QLORA_CKPT, OPT8))
NUMBER_KEY = re.compile(
    rf"^(?:(?:{_VARIANT})\.)?(memory\.({_STRATEGY})\.(params_gib|grads_gib|optimizer_gib|activations_gib|buffers_gib|total_gib"
    rf"|fits|max_micro_batch|usable_gib|host_ram_gib)"
    rf"|comm\.({_STRATEGY})\.(gb_per_step|seconds_per_step|vs_ddp)"
    rf"|time\.({_STRATEGY})\.step_seconds"
    rf"|capacity\.gpu_count)$"
)


class CaseFileError(ValueError):
    """A cases file that cannot be used; the message names the file, line and field."""


class Expect(BaseModel):
    """What the answer to the last turn must satisfy. Every field is optional."""

    model_config = ConfigDict(extra="forbid")

    language: str | None = None
    strategy: list[str] | None = None
    numbers: dict[str, bool | tuple[float, float]] | None = None
    cite_kinds: list[str] | None = None
    asks: list[str] | None = None
    forbid: list[str] | None = None
    # Real-thread cases (evals/cases/*.jsonl beside gold.jsonl) also state what was understood
    # and how the answer was framed: the answer's ``intent`` and ``status``, setup fields as read
    # (field -> value; numbers within 2%), and ``mentions`` (at least one must appear in the text).
    intent: str | None = None
    status: str | None = None
    setup: dict[str, Any] | None = None
    mentions: list[str] | None = None

    @field_validator("intent")
    @classmethod
    def _intent(cls, value: str | None) -> str | None:
        if value is not None and value not in INTENTS:
            raise ValueError(f"{value!r} is not an intent (one of {', '.join(INTENTS)})")
        return value

    @field_validator("status")
    @classmethod
    def _status(cls, value: str | None) -> str | None:
        if value is not None and value not in STATUSES:
            raise ValueError(f"{value!r} is not a status (one of {', '.join(STATUSES)})")
        return value

    @field_validator("setup")
    @classmethod
    def _setup(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        bad = [k for k in value or {} if k not in SETUP_FIELDS]
        if bad:
            raise ValueError(f"{bad} not setup field names (one of {', '.join(SETUP_FIELDS)})")
        return value

    @field_validator("mentions")
    @classmethod
    def _mentions(cls, value: list[str] | None) -> list[str] | None:
        if value is not None and (not value or not all(s for s in value)):
            raise ValueError("mentions must list at least one non-empty string")
        return value

    @field_validator("language")
    @classmethod
    def _language(cls, value: str | None) -> str | None:
        if value is not None and value not in ("zh", "en"):
            raise ValueError(f"must be 'zh' or 'en', got {value!r}")
        return value

    @field_validator("strategy")
    @classmethod
    def _strategy(cls, value: list[str] | None) -> list[str] | None:
        if value is not None:
            if not value:
                raise ValueError("must list at least one strategy id")
            bad = [s for s in value if s not in ALL_STRATEGIES]
            if bad:
                raise ValueError(f"{bad} not strategy ids (one of {', '.join(ALL_STRATEGIES)})")
        return value

    @field_validator("numbers", mode="before")
    @classmethod
    def _numbers(cls, value: Any) -> Any:
        if value is None:
            return value
        if not isinstance(value, dict):
            raise ValueError("must be an object of DESIGN.md number keys")
        for key, want in value.items():
            if not NUMBER_KEY.match(key):
                raise ValueError(f"{key!r} is not a DESIGN.md number key ([<variant>.]memory.<strategy>.<field>, "
                                 "comm.<strategy>.<field>, time.<strategy>.step_seconds, capacity.gpu_count)")
            if isinstance(want, bool):
                continue
            ok = (isinstance(want, list) and len(want) == 2
                  and all(isinstance(x, int | float) and not isinstance(x, bool) for x in want))
            if not ok:
                raise ValueError(f"{key}: expected true/false or [low, high], got {want!r}")
            if want[0] > want[1]:
                raise ValueError(f"{key}: range [{want[0]}, {want[1]}] has low > high")
            if key.endswith(".fits"):
                raise ValueError(f"{key}: a fits key takes true or false, not a range")
        return value

    @field_validator("cite_kinds")
    @classmethod
    def _cite_kinds(cls, value: list[str] | None) -> list[str] | None:
        bad = [k for k in value or [] if k not in CITE_KINDS]
        if bad:
            raise ValueError(f"{bad} not citation kinds (one of {', '.join(CITE_KINDS)})")
        return value

    @field_validator("asks")
    @classmethod
    def _asks(cls, value: list[str] | None) -> list[str] | None:
        bad = [k for k in value or [] if k not in SETUP_FIELDS]
        if bad:
            raise ValueError(f"{bad} not setup field names (one of {', '.join(SETUP_FIELDS)})")
        return value

    @field_validator("forbid")
    @classmethod
    def _forbid(cls, value: list[str] | None) -> list[str] | None:
        if value is not None and not all(s for s in value):
            raise ValueError("forbidden strings must be non-empty")
        return value


class Case(BaseModel):
    """One conversation and what its last answer must satisfy.

    ``tags`` (e.g. "follow-up", "injection") and ``note`` are optional extras for people reading
    the file; any other top-level key is rejected so a typo never silently drops an expectation.
    """

    model_config = ConfigDict(extra="forbid")

    id: str
    turns: list[str]
    expect: Expect = Expect()
    tags: list[str] = []
    note: str = ""

    @field_validator("id")
    @classmethod
    def _id(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be empty")
        return value

    @field_validator("turns")
    @classmethod
    def _turns(cls, value: list[str]) -> list[str]:
        if not value:
            raise ValueError("must hold at least one question")
        return value

    @property
    def language(self) -> str:
        from evals.metrics import detect_language

        return self.expect.language or detect_language(self.turns[-1])


def load_cases(path: Path | str) -> list[Case]:
    """Read and validate a JSONL cases file. Blank lines are skipped.

    Raises :class:`CaseFileError` with ``file:line: field: problem`` for the first bad line (and a
    count of the others), for duplicate ids and for an empty file.
    """
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8-sig").split("\n")  # -sig: tolerate a BOM
    except FileNotFoundError:
        raise CaseFileError(f"{path}: no such cases file") from None
    except (OSError, UnicodeDecodeError) as err:
        raise CaseFileError(f"{path}: cannot read: {err}") from None
    cases: list[Case] = []
    errors: list[str] = []
    seen: dict[str, int] = {}
    for lineno, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"{path}:{lineno}"
        try:
            data = json.loads(line)
        except json.JSONDecodeError as err:
            errors.append(f"{where}: not valid JSON ({err.msg} at column {err.colno})")
            continue
        if not isinstance(data, dict):
            errors.append(f"{where}: expected a JSON object with id, turns, expect")
            continue
        try:
            case = Case.model_validate(data)
        except ValidationError as err:
            first = err.errors()[0]
            loc = ".".join(str(x) for x in first["loc"]) or "case"
            message = first["msg"].removeprefix("Value error, ")
            extra = f" (+{err.error_count() - 1} more problems)" if err.error_count() > 1 else ""
            errors.append(f"{where}: {loc}: {message}{extra}")
            continue
        if case.id in seen:
            errors.append(f"{where}: duplicate id {case.id!r} (first on line {seen[case.id]})")
            continue
        seen[case.id] = lineno
        cases.append(case)
    if errors:
        more = f"\n(and {len(errors) - 1} more bad lines)" if len(errors) > 1 else ""
        raise CaseFileError(errors[0] + more)
    if not cases:
        raise CaseFileError(f"{path}: no cases (expected one JSON object per line)")
    return cases


def case_files(directory: Path | str = CASES_DIR) -> list[Path]:
    """Every cases file (``*.jsonl``) in ``directory``, gold.jsonl first, then by name.

    First-contact batches (``first_contact_*.jsonl``, ``evals/first_contact.py``) are not cases
    files: they are frozen once recorded and measured once, so they stay out of the ratchet.
    """
    files = sorted(p for p in Path(directory).glob("*.jsonl") if not p.name.startswith("first_contact_"))
    return sorted(files, key=lambda p: (p.name != GOLD_CASES.name, p.name))


def load_baseline(path: Path | str = BASELINE_FILE) -> dict[str, int]:
    """File name -> required pass count; a missing or unreadable file means no requirement yet."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {str(k): int(v) for k, v in data.items() if isinstance(v, int) and not isinstance(v, bool)}


def ratchet_gate(passed_by_file: dict[str, int], baseline: dict[str, int]) -> tuple[bool, list[str]]:
    """Whether every file passes at least its baseline count, and one line per file saying so."""
    ok, lines = True, []
    for name, passed in passed_by_file.items():
        need = baseline.get(name, 0)
        good = passed >= need
        ok &= good
        lines.append(f"{name}: {passed} passed, baseline {need}: {'ok' if good else 'REGRESSED'}")
    return ok, lines


# The bot's strategy rate on the gold set must beat each fixed baseline's by more than this.
BASELINE_MARGIN = 0.2
BASELINE_NAMES = ("always_ddp", "always_fsdp", "forum_majority")


def gold_gate(summary: dict, min_pass: float = DEFAULT_MIN_PASS) -> tuple[bool, list[str]]:
    """The gold set's own gate (``summary`` is ``evals.report.summarize``'s for gold.jsonl): no
    case errors, a pass rate of at least ``min_pass``, and, when the baselines were scored, the
    bot's strategy rate above every baseline's by more than :data:`BASELINE_MARGIN`."""
    problems = []
    if summary["errors"]:
        problems.append(f"{summary['errors']} cases raised errors")
    if summary["pass_rate"] < min_pass:
        problems.append(f"pass rate {summary['pass_rate']:.4f} < {min_pass}")
    scored = summary.get("baselines") or {}
    bot = scored.get("bot", {}).get("strategy_rate")
    for name in BASELINE_NAMES:
        rate = scored.get(name, {}).get("strategy_rate")
        if bot is not None and rate is not None and not bot > rate + BASELINE_MARGIN:
            problems.append(f"strategy rate {bot} is not {BASELINE_MARGIN} above {name}'s {rate}")
    if problems:
        return False, [f"{GOLD_CASES.name}: {p}: FAILED" for p in problems]
    return True, [f"{GOLD_CASES.name}: pass rate {summary['pass_rate']:.4f} >= {min_pass}, no errors, above "
                  f"every baseline by > {BASELINE_MARGIN}: ok"]


def raise_baseline(passed_by_file: dict[str, int], path: Path | str = BASELINE_FILE) -> dict[str, int]:
    """Raise each file's baseline to its pass count now (never lower it) and write the file."""
    baseline = load_baseline(path)
    for name, passed in passed_by_file.items():
        baseline[name] = max(baseline.get(name, 0), passed)
    Path(path).write_text(json.dumps(dict(sorted(baseline.items())), indent=2) + "\n", encoding="utf-8")
    return baseline


# --------------------------------------------------------------------------------------------
# Running
# --------------------------------------------------------------------------------------------

AskFn = Callable[..., Any]  # ask(question, history=None) -> bot.answer.Answer


@dataclass
class CaseResult:
    case: Case
    answer: Any | None  # bot.answer.Answer, None when ask raised
    latency_s: float
    metrics: list[MetricResult]
    error: str | None = None
    baselines: dict[str, str] = field(default_factory=dict)  # baseline name -> strategy it picks

    @property
    def passed(self) -> bool:
        return self.error is None and all(m.passed is not False for m in self.metrics)

    @property
    def failures(self) -> list[MetricResult]:
        if self.error is not None:
            return [MetricResult("error", False, self.error)]
        return [m for m in self.metrics if m.passed is False]

    def metric(self, name: str) -> MetricResult | None:
        return next((m for m in self.metrics if m.name == name), None)


@dataclass
class RunResult:
    cases_file: str
    results: list[CaseResult]
    seconds: float
    baselines_on: bool = True

    @property
    def pass_rate(self) -> float:
        return sum(r.passed for r in self.results) / len(self.results) if self.results else 0.0


def run_case(case: Case, ask: AskFn, sources: Sources | None = None, baselines: bool = True) -> CaseResult:
    """Ask the last turn with the earlier turns as history; score the answer."""
    history = list(case.turns[:-1]) or None
    start = time.perf_counter()
    try:
        answer = ask(case.turns[-1], history=history)
    except Exception as err:  # a crash is a failed case, reported with its cause, never a stop
        latency = time.perf_counter() - start
        where = traceback.extract_tb(err.__traceback__)[-1]
        return CaseResult(case, None, latency, [], error=f"ask raised {type(err).__name__}: {err} "
                                                          f"(at {Path(where.filename).name}:{where.lineno})")
    latency = time.perf_counter() - start
    try:
        metrics = run_metrics(case, answer, sources)
    except Exception as err:  # e.g. an answer that is not an Answer
        return CaseResult(case, answer, latency, [], error=f"scoring failed: {type(err).__name__}: {err}")
    picks: dict[str, str] = {}
    if baselines:
        from evals.baselines import baseline_strategies

        picks = baseline_strategies(answer.setup)
    return CaseResult(case, answer, latency, metrics, baselines=picks)


def run_cases(cases: list[Case], ask: AskFn, *, cases_file: str = "", sources: Sources | None = None,
              baselines: bool = True, on_case: Callable[[CaseResult], None] | None = None) -> RunResult:
    """Run every case in order; ``on_case`` is called after each (the progress bar)."""
    start = time.perf_counter()
    results = []
    for case in cases:
        result = run_case(case, ask, sources, baselines)
        results.append(result)
        if on_case:
            on_case(result)
    return RunResult(cases_file, results, time.perf_counter() - start, baselines)


def default_ask() -> AskFn:
    """``bot.ask``; raises ImportError with a clear message when the bot is not built."""
    try:
        from bot.assistant import ask
    except ImportError as err:
        raise ImportError(f"bot.ask is not available ({err}); the harness needs bot/assistant.py") from err
    return ask


__all__ = ["BASELINE_FILE", "Case", "CaseFileError", "CaseResult", "Expect", "GOLD_CASES", "METRIC_NAMES",
           "RunResult", "case_files", "load_baseline", "load_cases", "raise_baseline", "ratchet_gate", "run_case",
           "run_cases"]
