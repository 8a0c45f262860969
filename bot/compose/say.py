"""Figure binding over the message catalogs: ``Say`` renders a catalog message with every
figure bound to its key; ``Citations`` numbers the sources in order of first use."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from typing import Any

import jinja2

from bot.answer import (
    Citation,
)
from bot.answer.catalog import ConfigView, MissingFigure, Numbers, SetupView, render, strict
from bot.evidence import (
    BUCKET_FUSED,
    BUCKET_FUSED_CKPT,
    CKPT,
    Config,
)
from bot.render import (
    fmt,
)
from bot.strategies import label, short_label

log = logging.getLogger(__name__)



LINK_NAMES = {"ethernet": "Ethernet", "infiniband": "InfiniBand", "nvlink": "NVLink", "pcie": "PCIe"}
VARIANT_WORDS = {CKPT: "ckpt", BUCKET_FUSED: "bucket_fused", BUCKET_FUSED_CKPT: "bucket_fused_ckpt"}


class Citations:
    """Numbers citations in order of first use; the same source is cited once."""

    def __init__(self) -> None:
        self.items: list[Citation] = []

    def add(self, id: str, kind: str, title: str, url: str | None = None, quote: str | None = None) -> int:
        for c in self.items:
            if c.id == id and (c.quote == quote or kind == "doc" and not quote):
                return c.n
        n = len(self.items) + 1
        self.items.append(Citation(n=n, id=id, kind=kind, title=title, url=url or None, quote=quote))  # type: ignore[arg-type]
        return n


_SLOT = re.compile("\x01([^\x02]*)\x02([^\x03]*)\x03")


class Say:
    """Renders catalog messages whose every figure is bound to a key: each figure is first
    written as a slot holding its key and its printed value; ``msg`` strips the slots and records
    the keys in text order (``figure_keys``, keyed by the finished sentence)."""

    def __init__(self, lang: str, numbers: dict[str, Any], setup: dict[str, Any], calc: int | None) -> None:
        self.lang, self.numbers, self.setup, self.calc = lang, numbers, setup, calc
        self.figure_keys: dict[str, list[str]] = {}

    @staticmethod
    def val(value: Any, key: str) -> str:
        return f"\x01{key}\x02{fmt(value)}\x03"

    def c(self) -> str:
        return f" [{self.calc}]" if self.calc else ""

    def view(self, c: Config) -> ConfigView:
        return ConfigView(c, self.numbers, self.val, {"name": config_name(c, self.lang),
                                                      "label": label(c.strategy, self.lang),
                                                      "short": short_label(c.strategy, self.lang)})

    def word(self, key: str, /, **context: Any) -> str:
        """A catalog phrase with no figures (a label, a connective)."""
        return render(self.lang, key, context)

    def raw(self, key: str, /, **context: Any) -> str:
        """A clause for another message (its figures still in slots, so the outer sentence binds
        them in order); a Config passed in ``context`` is seen by the template as a ConfigView."""
        ctx: dict[str, Any] = {"c": self.c(), "num": Numbers(self.numbers, self.val),
                               "setup": SetupView(self.setup, self.val)}
        for k, v in context.items():
            ctx[k] = self.view(v) if isinstance(v, Config) else v
        return render(self.lang, key, ctx)

    def msg(self, key: str, /, **context: Any) -> str:
        """The sentence ``key`` in the answer's language, its figures bound and recorded.
        Raises MissingFigure (or jinja2.UndefinedError) when a figure it prints is missing."""
        text = self.raw(key, **context)
        keys = [m.group(1) for m in _SLOT.finditer(text)]
        plain = _SLOT.sub(lambda m: m.group(2), text)
        if keys:
            self.figure_keys[plain] = keys
        return plain


def sentence(make: Callable[[], str], what: str) -> str:
    """One sentence, or "" when a figure it needs is missing (logged; raised under strict)."""
    try:
        return make()
    except (MissingFigure, jinja2.UndefinedError) as e:
        if strict():
            raise
        log.warning("sentence %s dropped: %s", what, e)
        return ""


def config_name(c: Config, lang: str) -> str:
    name = label(c.strategy, lang)
    if c.variant in VARIANT_WORDS:
        name += " + " + render(lang, f"words.variant.{VARIANT_WORDS[c.variant]}", {})
    return name


def capacity_needs(cap: Any, say: Say) -> str:
    """What the capacity count needs besides the GPUs, as a phrase ("" when nothing)."""
    degrees = getattr(cap, "plan_degrees", None) or {}
    if degrees:  # searched under the stated TP/CP/PP plan: the count is a multiple of its degrees
        plan = say.raw("capacity_needs.plan", tp="tp" in degrees, cp="cp" in degrees, pp="pp" in degrees,
                       ckpt=bool(cap.checkpointing) and not cap.chunked_loss)
        return plan + (say.word("capacity_needs.chunked_loss") if cap.chunked_loss else "")
    if cap.chunked_loss:  # bot.calc.memory.loss_bytes_per_logit: a fused kernel (Liger's) needs less than chunked
        return say.word("capacity_needs.chunked_loss")
    if cap.checkpointing:
        return say.word("capacity_needs.checkpointing")
    return ""


def figure_count(text: str) -> int:
    from bot.figures import numbers_in_text

    return len(numbers_in_text(text))
