"""Every figure in a doc sits next to its source: a link in the same paragraph, or a calc tag.

A *figure* is a number written as prose (``16 bytes``, ``1.5x``, ``104.3 GiB``, ``每个参数16字节``),
not part of a name (``7B``, ``fp32``, ``ZeRO-3``, ``H100``) and not inside inline code. The unit
of sourcing is the paragraph for prose, each item for lists, and the table plus the paragraph
right after it for tables (where docs put a "Sources:" line). Headings and code blocks are
skipped. :func:`unsourced` returns the blocks that state a figure with neither a ``](http`` link
nor a ``<!-- calc: ... -->`` tag.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_FIGURE = re.compile(r"(?<![A-Za-z0-9_.\-/])\d+(?:[.,]\d+)*(?=x\b|[^A-Za-z0-9_]|$)")
_CODE = re.compile(r"`[^`]*`")
_LINK_TARGET = re.compile(r"\]\([^)]*\)")
_LIST_ITEM = re.compile(r"^\s*([-*+]|\d+\.)\s")
# Numbers that are labels, not figures: list numbering ("1. ", "**6. Gradient ...**"), ranks ("rank 0").
_NOT_FIGURES = re.compile(r"(?m)^\s*\d+\.\s|\*\*\d+\.|(?<![A-Za-z])rank \d+(?!\d)")


@dataclass(frozen=True)
class Unsourced:
    doc_id: str
    line: int
    text: str
    figures: tuple[str, ...]


def figures(text: str) -> list[str]:
    """The prose figures in ``text`` (inline code and link targets removed first)."""
    text = _LINK_TARGET.sub("]", _CODE.sub("", text))
    text = re.sub(r"<!--.*?-->", "", text)
    text = _NOT_FIGURES.sub(" ", text)
    return _FIGURE.findall(text)


def _sourced(text: str) -> bool:
    return "](http" in text or "<!-- calc:" in text


def _blocks(body: str) -> list[tuple[int, str, str]]:
    """(first line number, kind, text) for each paragraph / list item / table of a markdown body."""
    out: list[tuple[int, str, str]] = []
    lines = body.splitlines()
    i, fenced = 0, False
    while i < len(lines):
        line = lines[i]
        if line.strip().startswith("```"):
            fenced = not fenced
            i += 1
            continue
        if fenced or not line.strip() or line.lstrip().startswith("#"):
            i += 1
            continue
        start = i
        if line.lstrip().startswith("|"):
            while i < len(lines) and lines[i].lstrip().startswith("|"):
                i += 1
            out.append((start + 1, "table", "\n".join(lines[start:i])))
            continue
        if _LIST_ITEM.match(line):
            i += 1
            while i < len(lines) and lines[i].strip() and not _LIST_ITEM.match(lines[i]) \
                    and lines[i][:1].isspace():
                i += 1
            out.append((start + 1, "item", "\n".join(lines[start:i])))
            continue
        while i < len(lines) and lines[i].strip() and not _LIST_ITEM.match(lines[i]) \
                and not lines[i].lstrip().startswith(("|", "#", "```")):
            i += 1
        out.append((start + 1, "para", "\n".join(lines[start:i])))
    return out


def unsourced(doc_id: str, body: str) -> list[Unsourced]:
    """Blocks of ``body`` that state a figure without a source link or calc tag."""
    blocks = _blocks(body)
    out = []
    for n, (line, kind, text) in enumerate(blocks):
        found = figures(text)
        if not found or _sourced(text):
            continue
        if kind == "table":  # a table is sourced by the paragraph right after (or before) it
            neighbours = [blocks[k][2] for k in (n - 1, n + 1) if 0 <= k < len(blocks)]
            if any(_sourced(t) for t in neighbours):
                continue
        out.append(Unsourced(doc_id, line, text[:200], tuple(found)))
    return out


def check_docs(root=None) -> list[Unsourced]:
    from bot.knowledge.corpus import load_docs

    return [u for doc in load_docs(root) for u in unsourced(doc.id, doc.text)]
