"""The reader's notes and contradictions in words (``bot.understand.ReadNote``,
``bot.understand.Contradiction``), so an answer can say what was read and ask one question.

Wording is data: ``read_note.<code>`` (and ``read_note.contradiction.<field>``,
``read_note.which.<field>``, ``read_note.computed``) in bot/answer/messages/{en,zh}.yaml, filled
from the note's values. Every figure in a template is a value the person wrote (or the name's size),
never one computed here, so the answer's traceability check holds. The answer layer decides where
these go.
"""

from __future__ import annotations

from typing import Any

import jinja2

from bot.answer.catalog import catalog, render
from bot.understand import Contradiction, ReadNote


def _key(lang: str, family: str, name: str) -> str:
    """``read_note.<family>.<name>``, or the family's ``other`` when the catalogs have no such key."""
    key = f"read_note.{family}.{name}"
    return key if key in catalog(lang) else f"read_note.{family}.other"


def note_text(note: ReadNote, lang: str) -> str:
    """The note in ``lang`` ("zh" or "en"); the code itself when it has no wording."""
    lang = "zh" if lang == "zh" else "en"
    if note.code == "contradiction_computed":
        which = render(lang, _key(lang, "which", str(note.values.get("field"))), {})
        computed = {k: ("-" if v in ("", None) else v) for k, v in {**note.values, "which": which}.items()}
        return render(lang, "read_note.computed", computed)
    if f"read_note.{note.code}" not in catalog(lang):
        return note.code
    values: dict[str, Any] = {k: (", ".join(str(x) for x in v) if isinstance(v, list | tuple) else v)
                              for k, v in note.values.items()}
    values = {k: (v if v not in ("", None) else "-") for k, v in values.items()}
    try:
        return render(lang, f"read_note.{note.code}", values)
    except (jinja2.UndefinedError, TypeError, ValueError):  # a value missing or not a number: the code
        return note.code


def contradiction_question(c: Contradiction, lang: str) -> str:
    """One question that asks which of two readings holds, quoting what the person wrote."""
    lang = "zh" if lang == "zh" else "en"
    a, b = (c.spans + ("", ""))[:2] if c.spans else (c.values + ("", ""))[:2]
    return render(lang, _key(lang, "contradiction", c.field), {"a": f"`{str(a).strip()}`", "b": f"`{str(b).strip()}`"})
