"""The metrics: each one a plain function over (case, answer) returning a :class:`MetricResult`.

A metric says ``passed=True``/``False`` with an explanation a person can act on (expected vs got),
or ``passed=None`` when it does not apply (the case states no such expectation). The harness runs
every metric in :data:`METRICS` on every case; a case passes when no metric failed.

Expectation metrics (from the case's ``expect``): ``language``, ``strategy``, ``numbers``,
``cite_kinds``, ``asks``, ``forbid``, ``intent``, ``status``, ``setup``, ``mentions``. Integrity metrics (on every answer, whatever the case says):
``citation_integrity`` and ``number_traceability``. The rules and tolerances are written out in
``docs/evals.md``; the tokenizer below is the part most worth reading before changing anything.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from bot.answer import Answer
    from evals.harness import Case


@dataclass(frozen=True)
class MetricResult:
    """One metric on one case. ``passed`` is None when the metric does not apply."""

    name: str
    passed: bool | None
    detail: str = ""


def _na(name: str, why: str = "no expectation") -> MetricResult:
    return MetricResult(name, None, why)


# --------------------------------------------------------------------------------------------
# Language
# --------------------------------------------------------------------------------------------

def detect_language(text: str) -> str:
    """'zh' when Chinese characters are at least as many as English words, else 'en' — the bot's own
    rule (``bot.core.answer_language``), imported so the harness and the bot never disagree.

    Counting characters against words (not characters against characters) is deliberate: one
    Chinese character carries about as much as one English word, so "7B模型，8张A100，DDP还是FSDP"
    (7 characters, 2 words) is Chinese and "is 显存 the same as VRAM?" (2 characters, 4 words)
    is English.
    """
    from bot.core import answer_language

    return answer_language(text)


def check_language(case: Case, answer: Answer) -> MetricResult:
    """The answer is labelled, and written, in the case's language (or the question's, detected).

    "Written in": the text minus code blocks and minus verbatim forum quotes (an English answer
    may quote the Chinese forum) is detected as the same language.
    """
    expected = case.expect.language or detect_language(case.turns[-1])
    source = "expected" if case.expect.language else "detected from the question"
    if answer.language != expected:
        return MetricResult("language", False, f"{source} {expected!r}, answer.language is {answer.language!r}")
    prose = strip_code_blocks(answer.text)
    for citation in answer.citations:
        if citation.quote:
            prose = prose.replace(citation.quote, " ")
    written = detect_language(prose) if prose.strip() else expected
    if written != expected:
        return MetricResult("language", False, f"{source} {expected!r}, but the text reads as {written!r}")
    return MetricResult("language", True, f"{expected} ({source})")


# --------------------------------------------------------------------------------------------
# Expectations
# --------------------------------------------------------------------------------------------


def check_strategy(case: Case, answer: Answer) -> MetricResult:
    allowed = case.expect.strategy
    if allowed is None:
        return _na("strategy")
    got = answer.recommendation.strategy
    if got in allowed:
        return MetricResult("strategy", True, got)
    return MetricResult("strategy", False, f"expected one of {allowed}, got {got!r}")


def check_numbers(case: Case, answer: Answer) -> MetricResult:
    """Each expected key equals a boolean, or lies in an inclusive ``[low, high]`` range."""
    expected = case.expect.numbers
    if not expected:
        return _na("numbers")
    problems, good = [], []
    for key, want in expected.items():
        if key not in answer.numbers:
            problems.append(f"{key}: expected {_show(want)}, absent from answer.numbers")
            continue
        got = answer.numbers[key]
        if isinstance(want, bool):
            ok = isinstance(got, bool) and got == want
        else:
            low, high = want
            ok = not isinstance(got, bool) and isinstance(got, int | float) and low <= got <= high
        (good if ok else problems).append(f"{key}: expected {_show(want)}, got {got!r}")
    if problems:
        return MetricResult("numbers", False, "; ".join(problems))
    return MetricResult("numbers", True, "; ".join(good))


def _show(want: Any) -> str:
    if isinstance(want, bool):
        return str(want).lower()
    return f"[{want[0]:g}, {want[1]:g}]"


def check_cite_kinds(case: Case, answer: Answer) -> MetricResult:
    kinds = case.expect.cite_kinds
    if not kinds:
        return _na("cite_kinds")
    have = {c.kind for c in answer.citations}
    missing = [k for k in kinds if k not in have]
    if missing:
        return MetricResult("cite_kinds", False, f"expected citations of kinds {kinds}, none of {missing}; "
                                                 f"cited kinds: {sorted(have) or 'none'}")
    return MetricResult("cite_kinds", True, f"cited {sorted(have)}")


def check_asks(case: Case, answer: Answer) -> MetricResult:
    asks = case.expect.asks
    if not asks:
        return _na("asks")
    missing = [f for f in asks if f not in answer.questions]
    if missing:
        return MetricResult("asks", False, f"expected questions about {asks}, missing {missing}; "
                                           f"answer.questions = {answer.questions}")
    return MetricResult("asks", True, f"asks {asks}")


def _whole(answer: Answer) -> str:
    """The whole answer (the short form plus its folded sections); the short form where the
    answer has no other (an LLM-phrased answer)."""
    return getattr(answer, "full_text", "") or answer.text


def check_forbid(case: Case, answer: Answer) -> MetricResult:
    """None of the forbidden strings appears in the text (exact, case-sensitive substring)."""
    forbid = case.expect.forbid
    if not forbid:
        return _na("forbid")
    whole = _whole(answer)
    found = [s for s in forbid if s in whole]
    if found:
        snippets = [_context(whole, whole.index(s), len(s)) for s in found]
        return MetricResult("forbid", False, f"forbidden text present: {found} ({'; '.join(snippets)})")
    return MetricResult("forbid", True, f"none of {len(forbid)} forbidden strings")


def check_intent(case: Case, answer: Answer) -> MetricResult:
    want = case.expect.intent
    if want is None:
        return _na("intent")
    got = getattr(answer, "intent", None)
    return MetricResult("intent", got == want, f"expected {want!r}, got {got!r}")


def check_status(case: Case, answer: Answer) -> MetricResult:
    want = case.expect.status
    if want is None:
        return _na("status")
    got = getattr(answer, "status", None)
    return MetricResult("status", got == want, f"expected {want!r}, got {got!r}")


SETUP_TOLERANCE = 0.02  # a number read from text matches within 2% (7B vs 6.74B is not a match)


def _same_value(want: Any, got: Any) -> bool:
    if isinstance(want, bool) or isinstance(got, bool):
        return want is got or (isinstance(want, bool) and isinstance(got, bool) and want == got)
    # [low, high]: an inclusive range, for values a source states loosely ("13B" for 13.9B, an
    # "80G" card that a CUDA log reports as 79.35 GiB).
    if (isinstance(want, list | tuple) and len(want) == 2
            and all(isinstance(x, int | float) and not isinstance(x, bool) for x in want)):
        return isinstance(got, int | float) and want[0] <= got <= want[1]
    if isinstance(want, int | float) and isinstance(got, int | float):
        return abs(got - want) <= SETUP_TOLERANCE * max(abs(want), 1e-9)
    if isinstance(want, str) and isinstance(got, str):
        return want.strip().lower() == got.strip().lower()
    return bool(want == got)


def check_setup_read(case: Case, answer: Answer) -> MetricResult:
    """Each expected setup field has that value in ``answer.setup`` (``null`` = not set)."""
    want = case.expect.setup
    if not want:
        return _na("setup")
    problems = []
    for name, value in want.items():
        got = answer.setup.get(name)
        if value is None:
            if got is not None:
                problems.append(f"{name}: expected unset, got {got!r}")
        elif got is None or not _same_value(value, got):
            problems.append(f"{name}: expected {value!r}, got {got!r}")
    if problems:
        return MetricResult("setup", False, "; ".join(problems))
    return MetricResult("setup", True, f"{len(want)} fields as expected")


def check_mentions(case: Case, answer: Answer) -> MetricResult:
    """At least one of the expected strings appears in the text (case-insensitive)."""
    want = case.expect.mentions
    if not want:
        return _na("mentions")
    text = _whole(answer).lower()
    found = [m for m in want if m.lower() in text]
    if found:
        return MetricResult("mentions", True, f"mentions {found[0]!r}")
    return MetricResult("mentions", False, f"none of {want} in the text")


# --------------------------------------------------------------------------------------------
# Citation integrity
# --------------------------------------------------------------------------------------------

# "[3]", "[1, 2]", "[1][2]", "[1，2]": citation markers. Markdown links "[text](url)" have text.
_MARKER_GROUP = re.compile(r"\[(\d+(?:\s*[,，、]\s*\d+)*)\](?!\()")
_ELLIPSIS = re.compile(r"\s*(?:\.\.\.|…+)\s*")


def citation_markers(text: str) -> list[int]:
    """Every ``n`` referenced as ``[n]`` in the text outside fenced code blocks, in order."""
    numbers: list[int] = []
    for group in _MARKER_GROUP.finditer(strip_code_blocks(text)):
        numbers.extend(int(n) for n in re.findall(r"\d+", group.group(1)))
    return numbers


@dataclass(frozen=True)
class Sources:
    """Where citations are checked: the corpus text of an id, and whether a bench run exists.

    ``corpus_text(id)`` raises KeyError for an unknown id; ``bench_run_exists(id)`` returns None
    when no benchmark store can be opened (the citation then cannot be verified, which fails).
    """

    corpus_text: Callable[[str], str]
    bench_run_exists: Callable[[str], bool | None]


def default_sources() -> Sources:
    from bot.knowledge.corpus import corpus_text

    def bench_run_exists(run_id: str) -> bool | None:
        try:
            from bot.bench.store import ResultStore

            return ResultStore().get(run_id) is not None
        except Exception:  # no store module, or a store that cannot be opened: unverifiable
            return None

    return Sources(corpus_text=corpus_text, bench_run_exists=bench_run_exists)


def quote_in_text(quote: str, text: str) -> bool:
    """A quote is verbatim when it is a substring of the text; an ellipsis ("...", "…") inside a
    quote stands for omitted text, so its pieces must appear in order."""
    pieces = [p for p in _ELLIPSIS.split(quote.strip()) if p]
    if not pieces:
        return False
    position = 0
    for piece in pieces:
        found = text.find(piece, position)
        if found < 0:
            return False
        position = found + len(piece)
    return True


def check_citation_integrity(case: Case, answer: Answer, sources: Sources | None = None) -> MetricResult:
    """Every [n] resolves; forum/doc quotes are verbatim in the corpus; bench ids are stored runs."""
    sources = sources or default_sources()
    problems: list[str] = []
    numbers = [c.n for c in answer.citations]
    duplicates = sorted({n for n in numbers if numbers.count(n) > 1})
    if duplicates:
        problems.append(f"citation numbers used twice: {duplicates}")
    dangling = sorted((set(citation_markers(answer.text)) | set(citation_markers(_whole(answer)))) - set(numbers))
    if dangling:
        problems.append(f"markers with no citation: {', '.join(f'[{n}]' for n in dangling)} "
                        f"(citations are {sorted(numbers) or 'none'})")
    for c in answer.citations:
        if c.kind in ("forum", "doc"):
            try:
                text = sources.corpus_text(c.id)
            except KeyError:
                problems.append(f"[{c.n}] {c.kind} id {c.id!r} is not in the corpus")
                continue
            if c.quote and not quote_in_text(c.quote, text):
                problems.append(f"[{c.n}] quote is not verbatim in {c.id}: {c.quote[:80]!r}")
        elif c.kind == "bench":
            exists = sources.bench_run_exists(c.id)
            if exists is None:
                problems.append(f"[{c.n}] bench run {c.id!r} cannot be verified (no benchmark store)")
            elif not exists:
                problems.append(f"[{c.n}] bench run {c.id!r} is not in the result store")
    if problems:
        return MetricResult("citation_integrity", False, "; ".join(problems))
    return MetricResult("citation_integrity", True, f"{len(answer.citations)} citations, "
                                                    f"{len(set(citation_markers(answer.text)))} markers resolve")


# --------------------------------------------------------------------------------------------
# Number traceability
# --------------------------------------------------------------------------------------------

from bot.figures import (  # noqa: E402  (the tokenizer the renderer shares)
    _ANY_NUMBER,
    _THOUSANDS,
    NumberMention,
    _context,
    numbers_in_text,
    reading_form,
    strip_code_blocks,
)


def _numbers_in_value(value: Any) -> Iterable[float]:
    """Every figure inside a value, leniently: numbers, and every digit run inside strings."""
    if isinstance(value, bool) or value is None:
        return
    if isinstance(value, int | float):
        if math.isfinite(value):
            yield float(value)
    elif isinstance(value, str):
        text = _THOUSANDS.sub("", reading_form(value))
        for match in _ANY_NUMBER.finditer(text):
            yield float(match.group(0))
    elif isinstance(value, dict):
        for item in value.values():
            yield from _numbers_in_value(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _numbers_in_value(item)


def traceable_values(case: Case, answer: Answer) -> list[float]:
    """What a printed figure may come from: ``numbers``, the setup (numbers and the digits inside
    its strings, e.g. "RTX 4090 24GB"), every cited quote and title, and the user's own turns (an
    answer may repeat what was asked, e.g. "you wrote -8 GPUs")."""
    values: list[float] = []
    values.extend(_numbers_in_value(answer.numbers))
    values.extend(_numbers_in_value(answer.setup))
    for c in answer.citations:
        values.extend(_numbers_in_value([c.quote or "", c.title]))
    values.extend(_numbers_in_value(list(case.turns)))
    return values


def matches(mention: NumberMention, values: Iterable[float]) -> bool:
    """Equal after rounding to the precision printed: "12.6" matches 12.55..12.65, "100" matches
    99.5..100.5 (both ends inclusive, so either rounding direction at the half is accepted).
    The sign is ignored ("-8" in the text is 8, as the tokenizer reads it)."""
    tolerance = 0.5 * 10 ** -mention.decimals
    return any(abs(abs(v) - mention.value) <= tolerance + 1e-9 * max(1.0, abs(v)) for v in values)


def key_values(key: str, case: Case, answer: Answer) -> list[float] | None:
    """The values a figure bound to ``key`` may print: a ``numbers`` key's value, a setup field's
    value (``setup.<field>``, digits inside strings too), a citation's quote and title
    (``cite.<n>``), or the user's turns (``turn``). None when the key names nothing."""
    if key.startswith("setup."):
        name = key.removeprefix("setup.")
        return list(_numbers_in_value(answer.setup[name])) if name in answer.setup else None
    if key.startswith("cite."):
        n = key.removeprefix("cite.")
        cited = next((c for c in answer.citations if str(c.n) == n), None)
        return list(_numbers_in_value([cited.quote or "", cited.title])) if cited else None
    if key == "turn":
        return list(_numbers_in_value(list(case.turns)))
    if key in answer.numbers:
        return list(_numbers_in_value(answer.numbers[key]))
    return None


def check_number_traceability(case: Case, answer: Answer) -> MetricResult:
    """Every figure in the short form and in the full answer has a source (``_traceability``)."""
    result = _traceability(case, answer)
    full = getattr(answer, "full_text", "")
    if not result.passed or not full or full == answer.text or not hasattr(answer, "model_copy"):
        return result
    whole = _traceability(case, answer.model_copy(update={"text": full, "figures": answer.full_figures}))
    if not whole.passed:
        return MetricResult("number_traceability", False, "full answer: " + whole.detail)
    return MetricResult("number_traceability", True, f"{result.detail}; full answer: {whole.detail}")


def _traceability(case: Case, answer: Answer) -> MetricResult:
    """Every figure in the text has a source. When the answer binds its figures to keys
    (``Answer.figures``, emitted by the renderer in text order), each printed figure must be the
    one bound at its position and equal the value of its key: swapping two figures in the text,
    or binding a figure to the wrong key, fails. Unbound figures (and answers without bindings,
    e.g. LLM-phrased ones) are traced by value against every source. Numbers spelled out in words
    with a unit ("twelve GiB", "八张") are traced by value too."""
    mentions = numbers_in_text(answer.text)
    figures = list(getattr(answer, "figures", []) or [])
    values = traceable_values(case, answer)
    problems: list[str] = []
    if figures and len(figures) != len(mentions):
        problems.append(f"the answer binds {len(figures)} figures but its text prints {len(mentions)}")
    elif figures:
        for i, (m, f) in enumerate(zip(mentions, figures, strict=True)):
            if f.printed != m.printed:
                problems.append(f"figure {i + 1} prints {m.printed!r} where {f.printed!r} ({f.key}) was rendered, "
                                f"in “{m.context}”")
                continue
            if f.key == "unbound":
                if not matches(m, values):
                    problems.append(f"{m.printed!r} has no source, in “{m.context}”")
                continue
            bound = key_values(f.key, case, answer)
            if bound is None:
                problems.append(f"{m.printed!r} is bound to {f.key!r}, which names no source")
            elif not matches(m, bound):
                problems.append(f"{m.printed!r} is bound to {f.key!r} = {bound[:3]}, in “{m.context}”")
    else:
        problems += [f"{m.printed!r} has no source, in “{m.context}”" for m in mentions if not matches(m, values)]
    for spelled in _spelled(_without_user_quotes(_without_corpus_quotes(answer), list(case.turns))):
        printed, candidates = spelled
        if not any(abs(abs(v) - c) <= 1e-6 * max(1.0, c) for c in candidates for v in values):
            problems.append(f"spelled-out figure {printed!r} has no source")
    if problems:
        shown = "; ".join(problems[:8])
        more = f" (+{len(problems) - 8} more)" if len(problems) > 8 else ""
        return MetricResult("number_traceability", False, f"{len(problems)} of {len(mentions)} figures: {shown}{more}")
    bound = sum(1 for f in figures if f.key != "unbound")
    return MetricResult("number_traceability", True, f"all {len(mentions)} figures traced ({bound} bound to keys)")


# A quote's sentences (Latin stops before a space, CJK stops anywhere, as evals.first_contact splits them)
_QUOTE_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])")


def _without_corpus_quotes(answer: Answer) -> str:
    """The answer text minus its verbatim forum/doc quotes: a number word inside a cited sentence
    ("放进一张80 GB的卡") is the source's own wording, sourced by the citation itself. A quote's
    sentences count one by one, since an answer may print some of them apart (a diagnosis prints a
    playbook entry's check and fix after its own gist, and the entry's cause in the full answer)."""
    text = answer.text
    for c in getattr(answer, "citations", None) or []:
        if getattr(c, "kind", "") in ("forum", "doc") and getattr(c, "quote", None):
            text = text.replace(c.quote, " ")
            for sentence in _QUOTE_SENTENCE_END.split(c.quote):
                if sentence.strip():
                    text = text.replace(sentence.strip(), " ")
    return text


_INLINE_CODE = re.compile(r"`([^`\n]+)`")


def _without_user_quotes(text: str, turns: list[str]) -> str:
    """``text`` minus inline-code spans that quote the user verbatim (the read-back line's
    "from `70亿参数`"): a number word there is the user's own, sourced by the turn itself."""
    said = " ".join(" ".join(t.split()) for t in turns)

    def drop(m: re.Match[str]) -> str:
        inner = m.group(1).rstrip("…").replace("'", "`")
        return " " if inner and (inner in said or m.group(1).rstrip("…") in said) else m.group(0)

    return _INLINE_CODE.sub(drop, text)


def _spelled(text: str) -> list[tuple[str, list[float]]]:
    try:
        from bot.numwords import candidate_values, spelled_numbers
    except ImportError:  # pragma: no cover
        return []
    prose = strip_code_blocks(text)
    return [(item.text if hasattr(item, "text") else str(item.value), candidate_values(item))
            for item in spelled_numbers(prose)]


def check_calc_citations(case: Case, answer: Answer) -> MetricResult:
    """Calc citations are recomputed from ``answer.setup``: every figure in a calc quote (and every
    calculator number the answer carries) must be what the calculator gives for that setup (for
    a "shardwise calculator: <GPU>" citation, for that GPU). An invented figure appended to a calc
    quote fails here, although the text's tracer would find it in the quote."""
    calc = [c for c in answer.citations if c.kind == "calc"]
    if not calc:
        return _na("calc_citations", "no calc citation")
    sized = [c for c in calc if c.title.startswith(SIZES_TITLE)]
    if sized:  # "largest model on N x GPU" (bot.sizing): recomputed from the cards alone
        problems = _sizes_problems(answer, sized)
        calc = [c for c in calc if c not in sized]
        if problems or not calc:
            return MetricResult("calc_citations", not problems,
                                "; ".join(problems[:6]) or f"{len(sized)} size citations recomputed")
    inference = any(k.startswith("inference.") for k in answer.numbers)
    # answer.setup may carry both a catalog model and its size; the model name is what was
    # resolved, so recomputing without the size is the same reading of the same setup
    readings = [answer.setup]
    if answer.setup.get("model") and answer.setup.get("params_b") is not None:
        readings.append({k: v for k, v in answer.setup.items() if k != "params_b"})
    first_problems: list[str] | None = None
    for setup in readings:
        problems = _calc_problems(answer, calc, setup, inference)
        if not problems:
            return MetricResult("calc_citations", True, f"{len(calc)} calc citations recomputed")
        first_problems = first_problems or problems
    return MetricResult("calc_citations", False, "; ".join((first_problems or [])[:6]))


SIZES_TITLE = "shardwise calculator: largest model on "


def _sizes_problems(answer: Answer, cited: list[Any]) -> list[str]:
    """Every ``sizes.*`` number and every figure of a sizes quote is bot.sizing's for the cards."""
    from bot.core.setup import TrainingSetup
    from bot.sizing import size_limits

    fields = {k: v for k, v in answer.setup.items() if k in TrainingSetup.model_fields and v is not None}
    try:
        limits = size_limits(TrainingSetup(**fields))
    except Exception as err:  # noqa: BLE001  (the citation cannot be verified)
        return [f"cannot recompute the size limits for answer.setup: {err}"]
    if limits is None:
        return ["size limits cited, but answer.setup has no cards to compute them for"]
    want = limits.numbers()
    problems = [f"numbers[{k!r}] = {v} but bot.sizing gives {want.get(k)}" for k, v in answer.numbers.items()
                if k.startswith("sizes.") and want.get(k) != v]
    values = list(_numbers_in_value(want)) + list(_numbers_in_value(limits.quote()))
    for c in cited:
        for match in _ANY_NUMBER.finditer(_THOUSANDS.sub("", unicodedata.normalize("NFKC", (c.quote or "") + " " + c.title))):
            printed = match.group(0)
            mention = NumberMention(printed, float(printed), len(printed.split(".")[1]) if "." in printed else 0, "")
            if not matches(mention, values):
                problems.append(f"[{c.n}] sizes quote figure {printed!r} is not bot.sizing's for these cards")
    return problems


def _calc_problems(answer: Answer, calc: list[Any], setup: dict[str, Any], inference: bool) -> list[str]:
    try:
        base = _recomputed_inference(setup) if inference else _recomputed(setup)
    except Exception as err:  # the setup cannot be recomputed: the citation cannot be verified
        return [f"cannot recompute the calculator for answer.setup: {err}"]
    problems: list[str] = []
    for key, value in answer.numbers.items():
        if key in base.numbers and not isinstance(value, bool) and isinstance(value, int | float):
            want = base.numbers[key]
            if isinstance(want, int | float) and abs(float(want) - float(value)) > 1e-3 * max(1.0, abs(float(want))):
                problems.append(f"numbers[{key!r}] = {value} but the calculator gives {want}")
    for c in calc:
        ref = base
        gpu = c.title.split("shardwise calculator: ", 1)[1] if "shardwise calculator: " in c.title else None
        if gpu:
            # "<GPU>": the same setup on another card; "<N> x <GPU>": on N of its cards, one node
            count = re.match(r"(\d+) x (.+)$", gpu)
            # links left at their default follow the card (a 4090 node has no 8 x 200 Gb/s NICs)
            defaults = {k: None for k, src in (getattr(answer, "provenance", {}) or {}).items()
                        if src == "assumed" and k in ("intra_node_link", "inter_node_link", "inter_node_gbps")}
            where = ({"gpu_count": int(count.group(1)), "nodes": 1, "gpus_per_node": int(count.group(1))}
                     if count else {"gpu": gpu, "gpu_memory_gb": None, **defaults})
            try:
                ref = _recomputed({**setup, **where})
            except Exception as err:
                problems.append(f"[{c.n}] cannot recompute for {gpu}: {err}")
                continue
        for match in _ANY_NUMBER.finditer(_THOUSANDS.sub("", unicodedata.normalize("NFKC", c.quote or ""))):
            printed = match.group(0)
            mention = NumberMention(printed, float(printed), len(printed.split(".")[1]) if "." in printed else 0, "")
            if not matches(mention, ref.values):
                problems.append(f"[{c.n}] calc quote figure {printed!r} is not the calculator's for this setup")
    return problems


def _recomputed_inference(setup: dict[str, Any]) -> _Recomputed:
    from bot.calc.inference import inference_estimate
    from bot.core.setup import TrainingSetup

    fields = {k: v for k, v in setup.items() if k in TrainingSetup.model_fields and v is not None}
    est = inference_estimate(TrainingSetup(**fields))
    numbers = est.numbers()
    values = list(_numbers_in_value(numbers)) + list(_numbers_in_value(setup)) + list(_numbers_in_value(est.quote()))
    return _Recomputed(numbers, values)


@dataclass(frozen=True)
class _Recomputed:
    numbers: dict[str, Any]
    values: list[float]


def _recomputed(setup: dict[str, Any]) -> _Recomputed:
    """The calculator's figures (and its quoted inputs) for ``setup``: what the pipeline computed."""
    from bot.compose import calc_quote
    from bot.core.setup import TrainingSetup, resolve_setup
    from bot.evidence import evidence_for_resolved

    fields = {k: v for k, v in setup.items() if k in TrainingSetup.model_fields and v is not None}
    resolved = resolve_setup(TrainingSetup(**fields))
    ev = evidence_for_resolved(resolved)
    numbers = ev.numbers()
    values = list(_numbers_in_value(numbers)) + list(_numbers_in_value(setup))
    values += list(_numbers_in_value(calc_quote(resolved)))
    for sc_gpu in (resolved.gpu.name if resolved.gpu else "",):
        values += list(_numbers_in_value(sc_gpu))
    return _Recomputed(numbers, values)


# --------------------------------------------------------------------------------------------

EXPECTATION_METRICS = ("language", "strategy", "numbers", "cite_kinds", "asks", "forbid", "intent", "status",
                       "setup", "mentions")
INTEGRITY_METRICS = ("citation_integrity", "number_traceability", "calc_citations")
METRIC_NAMES = EXPECTATION_METRICS + INTEGRITY_METRICS


def run_metrics(case: Case, answer: Answer, sources: Sources | None = None) -> list[MetricResult]:
    """Every metric on one answer, in :data:`METRIC_NAMES` order."""
    return [
        check_language(case, answer),
        check_strategy(case, answer),
        check_numbers(case, answer),
        check_cite_kinds(case, answer),
        check_asks(case, answer),
        check_forbid(case, answer),
        check_intent(case, answer),
        check_status(case, answer),
        check_setup_read(case, answer),
        check_mentions(case, answer),
        check_citation_integrity(case, answer, sources),
        check_number_traceability(case, answer),
        check_calc_citations(case, answer),
    ]
