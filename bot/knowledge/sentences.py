"""Verbatim sentences from corpus text: what a citation may quote.

A citation's quote must appear verbatim in the cited entry (``corpus_text(id)``), and it should
read as a statement, not a fragment. Docs are hard-wrapped markdown, so a quote is a whole
sentence that lies within one line: it starts where a sentence starts and ends with its full stop.
Forum answers are single Chinese paragraphs split at 。！？ (and ; for long run-ons).

Moved here from ``bot/assistant.py`` so that retrieval (``bot.knowledge.answering``) and the
answer pipeline share one implementation.
"""

from __future__ import annotations

import re

# Splitting skips abbreviations ("sec. 7", "e.g. 7B") so a quote never stops at one.
_SENTENCE_END = re.compile(r"(?<=[.!?])(?<!\bsec\.)(?<!\be\.g\.)(?<!\bi\.e\.)(?<!\bvs\.)(?<!\bFig\.)(?<!\bfig\.)(?<!\bSec\.)(?<!\bEq\.)"
                           r"(?<!\bet al\.)(?<!\bapprox\.)(?<!\bno\.)\s+|"
                           r"(?<=[。！？；])\s*(?=\S)")
_COMMENT = re.compile(r"<!--.*?-->")
_BOLD_LEAD = re.compile(r"^\*\*[^*]{1,80}[.:。：]\*\*\s*")  # a paragraph's bold run-in heading
_LIST_ITEM = re.compile(r"^([-*+]|\d+\.)\s")
_ENDS_SENTENCE = re.compile(r"[.。!?！？；][*_\"')）」]*$")


def complete_sentences(body: str) -> list[str]:
    """The whole sentences of a markdown document's prose lines (no headings, lists, tables, code).

    Every returned string is a verbatim substring of ``body``."""
    out: list[str] = []
    lines = body.splitlines()
    if lines and lines[0].strip() == "---":  # front matter
        end = next((i for i, line in enumerate(lines[1:], 1) if line.strip() == "---"), 0)
        lines = lines[end + 1:]
    fenced, starts_sentence = False, True
    for raw in lines:
        line = raw.strip()
        if line.startswith("```"):
            fenced, starts_sentence = not fenced, True
            continue
        if fenced or not line or line.startswith(("#", "|", "<!--")):
            starts_sentence = True
            continue
        if line.startswith(">") or _LIST_ITEM.match(line) or raw[:1].isspace():
            starts_sentence = bool(_ENDS_SENTENCE.search(line))  # list items and their wrapped lines
            continue
        line = _COMMENT.sub("", line).rstrip()  # calc tags (bot.knowledge.calc_tags) are not prose
        line = _BOLD_LEAD.sub("", line)  # "**Gradient buckets.** Instead of ..." -> "Instead of ..."
        pieces = [p.strip() for p in _SENTENCE_END.split(line) if p.strip().strip("*_ ")]
        for i, piece in enumerate(pieces):
            first_ok = (i > 0 or starts_sentence) and not piece.startswith(("(", "（", "["))
            if first_ok and _ENDS_SENTENCE.search(piece):
                out.append(_strip_tags(piece))
        starts_sentence = bool(_ENDS_SENTENCE.search(line))
    return [s for s in out if s]


def list_items(body: str) -> list[str]:
    """Single-line bullet items that end like a sentence (without the bullet): docs state many
    facts as one-line list items, which are quotable on their own."""
    out = []
    for raw in body.splitlines():
        m = re.match(r"^\s*[-*]\s+(\S.*)$", raw)
        item = _COMMENT.sub("", m.group(1)).strip() if m else ""
        if item and _ENDS_SENTENCE.search(item):
            out.append(item)
    return [s for s in out if s]


def line_pieces(body: str) -> list[str]:
    """Fallback when no whole sentence fits: the sentence pieces of prose lines (may be partial),
    those that look like a sentence's start (not lower case) first."""
    out: list[str] = []
    for line in body.splitlines():
        line = line.strip()
        if line and not line.startswith(("#", "|", "```", ">", "<!--")) and not _LIST_ITEM.match(line):
            out.extend(p.strip() for p in _SENTENCE_END.split(line) if p.strip()[:1] not in ("", "(", "[", "（"))
    return sorted(out, key=lambda p: p[:1].islower())


def sentence_with(body: str, keywords: tuple[str, ...], *, min_len: int = 30, max_len: int = 300) -> str | None:
    """The first whole sentence (else sentence piece) mentioning any of ``keywords``."""
    for sentences in (complete_sentences(body), line_pieces(body)):
        for sentence in sentences:
            if any(k.lower() in sentence.lower() for k in keywords) and min_len <= len(sentence) <= max_len:
                return sentence
    return None


def quotable_units(body: str) -> list[str]:
    """Everything in ``body`` a quote may be: its complete sentences, then its one-line list items.
    Each is a verbatim substring of ``body``."""
    seen: dict[str, None] = {}
    for unit in (*complete_sentences(body), *list_items(body)):
        if unit in body:
            seen.setdefault(unit, None)
    return list(seen)


def _strip_tags(text: str) -> str:
    """Drop a trailing calc tag (``<!-- calc: ... -->``) that shares the line; the quote stays a
    verbatim prefix of the line."""
    cut = text.find("<!--")
    if cut < 0:
        return text
    head = text[:cut].rstrip()
    return head if _ENDS_SENTENCE.search(head) else ""
