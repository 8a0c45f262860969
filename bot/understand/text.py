"""Text preparation before any rule runs: printable characters, ASCII digits, a bounded length.

Every rule in ``bot.understand`` reads the output of ``prepare``: full-width characters become
ASCII ("８卡Ａ１００" reads like "8卡A100"), digits of other scripts are blanked (a number the user
did not type in ASCII or full-width is never turned into one they did not write), runs of more
than ``MAX_DIGITS`` digits are blanked with a problem instead of becoming a huge or infinite
figure, and the text is capped at ``MAX_CHARS`` so parse time has a fixed bound.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field

from bot.core.setup import Problem

# Per turn: the reader's cost is linear in what it reads, so what it reads is capped (with a
# "truncated" notice). A setup, its config and the OOM line fit well within 4,000 characters;
# the longest question in evals/parse_corpus.jsonl is 549.
MAX_CHARS = 4000
MAX_HISTORY_CHARS = 6000  # all earlier turns together, newest first
MAX_HISTORY_TURNS = 40
MAX_DIGITS = 12       # 999,999,999,999 is already absurd for any setup field

# The quick test the surfaces use to pick a label or message language before any parsing (the
# answer's language is the one rule in bot.core.language, which also defines CJK): any
# common (unified) ideograph at all.
_IDEOGRAPH = re.compile(r"[\u4e00-\u9fff]")


def looks_chinese(text: str | None) -> bool:
    """True when the text holds any common Chinese character (the surfaces' quick test)."""
    return _IDEOGRAPH.search(text or "") is not None


_FULLWIDTH = {code: code - 0xFEE0 for code in range(0xFF01, 0xFF5F)}
_LONG_DIGITS = re.compile(rf"\d{{{MAX_DIGITS + 1},}}")
# What replaces text a stage consumed or refused: not whitespace, so no rule's "\s*" bridges it
# ("seq <refused digits> 7B" must not read as seq 7).
GAP = "\u2591"
# Sign-free ASCII number: a minus only counts when it does not join two words ("A100-40G" is 40).
NUM = r"(?<![A-Za-z0-9_.ǤḾ])(-?\d+(?:\.\d+)?)"
UNSIGNED = r"(?<![A-Za-z0-9_.\-ǤḾ])(\d+(?:\.\d+)?)"


@dataclass
class Prepared:
    text: str
    notices: list[str] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)  # worded by the message catalogs


def _char(ch: str) -> str:
    if ch in "\n\t":
        return ch
    if not ch.isprintable():
        return " "
    if ch.isdigit() and not ("0" <= ch <= "9"):
        return " "  # Arabic-Indic, Devanagari, superscripts...: never read as a number
    return ch


_TABLE: dict[int, str] = {}  # character -> its replacement, filled as characters are first seen


def clean(text: str) -> str:
    """Printable text with ASCII digits; full-width forms folded to ASCII; same length as input
    after the full-width fold (so spans stay valid). One ``str.translate`` pass: linear."""
    text = text.translate(_FULLWIDTH).replace("\u3000", " ")
    if not (text.isascii() and text.isprintable()):
        for ch in set(text):
            code = ord(ch)
            if code not in _TABLE:
                repl = _char(ch)
                if len(_TABLE) < 200_000:
                    _TABLE[code] = repl
        text = text.translate(_TABLE)
    return text


def prepare(text: object, limit: int = MAX_CHARS) -> Prepared:
    """Cleaned, capped text plus what was cut or refused (never raises)."""
    raw = text if isinstance(text, str) else ("" if text is None else str(text))
    out = Prepared(text="")
    if len(raw) > limit:
        raw = raw[:limit]
        out.notices.append("truncated")
    cleaned = clean(raw)
    if runs := list(_LONG_DIGITS.finditer(cleaned)):
        if any(_stands_as_value(cleaned, m) for m in runs):
            out.problems.append(Problem.of("question", "long_number", digits=MAX_DIGITS))
        # a job id, a timestamp, a hash: ignored, and the question stays answerable
        out.notices.append("long_number_ignored")
        cleaned = _LONG_DIGITS.sub(lambda m: GAP * len(m.group(0)), cleaned)
    out.text = cleaned
    return out


# A long digit run where a setup value would stand: a unit, a card or a count word right after it
# ("9999...B model", "on 1000...0 A100", "999... GPUs"), or a setting's name right before it.
_VALUE_AFTER = re.compile(r"\s*(?:[x×*]\s*)?(?:b|bn|billion|m|g|gb|gib|t|tb|k|张|块|卡|台|个|亿|gpus?|cards?|nodes?|"
                          r"machines?|tokens?|params?|[A-Za-z]{1,3}\d{2,4})(?![a-z])", re.I | re.A)
_VALUE_BEFORE = re.compile(r"(?:seq(?:uence)?[_ ]?(?:len(?:gth)?)?|batch(?:[_ ]size)?|gpus?|nodes?|cards?|rank|lr|"
                           r"on|with|[=:：])\s*$", re.I | re.A)


def _stands_as_value(text: str, run: re.Match) -> bool:
    return bool(_VALUE_AFTER.match(text, run.end()) or _VALUE_BEFORE.search(text[max(0, run.start() - 24): run.start()]))


def blank(text: str, spans: list[tuple[int, int]], fill: str = "") -> str:
    """``text`` with each span overwritten by ``fill`` (length kept, so later spans stay valid)."""
    if not spans:
        return text
    fill = fill or GAP
    chars = list(text)
    for start, end in spans:
        for i in range(max(0, start), min(len(chars), end)):
            if chars[i] != "\n":
                chars[i] = fill
    return "".join(chars)


def is_cjk(ch: str) -> bool:
    return "\u3400" <= ch <= "\u9fff" or "\uf900" <= ch <= "\ufaff"


def strip_accents(text: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))


def origin(span: str, marked: str, text: str) -> str:
    """The original text behind a span read from the marked copy (same length, same place)."""
    span = span.strip()
    if not span:
        return ""
    i = marked.find(span)
    if i < 0 and " " in span:
        # a prose rule read across words it had blanked ("4096 两台机器 A100" -> "4096      ǤǤǤǤ"):
        # blanks stand for any character at the same place
        m = re.search("".join("." if ch == " " else re.escape(ch) for ch in span), marked, re.S)
        i = m.start() if m else -1
    found = span if i < 0 else text[i: i + len(span)]
    return gap_free(found)


def gap_free(span: str) -> str:
    """The part of a span the user wrote: text a stage consumed or refused (the gap) is cut out."""
    if GAP not in span:
        return span.strip()
    parts = [p.strip() for p in re.split(GAP + "+", span) if p.strip()]
    with_digit = [p for p in parts if re.search(r"\d", p)]
    return (with_digit or parts or [""])[-1]
