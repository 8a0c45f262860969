"""What the prose rules write into: ``ProseReading`` (fields, the text each was read from, what a
run observed, contradictions and notes), and the two primitives every rule uses: ``set_field``
(the first reading of a field wins) and ``search`` (ASCII-mode matching, so ``\\b`` falls between
Latin and CJK text). Shared by ``bot.understand.prose`` (sizes, memory, counts, links) and
``bot.understand.training_prose`` (precision, method, optimizer and the other training options).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field


@dataclass
class ProseReading:
    fields: dict = field(default_factory=dict)
    spans: dict = field(default_factory=dict)
    observed: dict = field(default_factory=dict)
    total_memory_gb: float | None = None
    total_span: str = ""
    card_explicit: bool = False  # the card size was written as such ("单卡40G", "16*80G", "each 48GB")
    larger_of_sizes: bool = False  # "7b/8b/9b": several sizes asked together, the largest kept
    # (field, (value, value), (span, span)): two readings of one field with nothing between them
    # that says which is the run's ("7B model, 70B model", "40GB 80GB", "LoRA full fine-tune")
    contradictions: list = field(default_factory=list)
    notes: list = field(default_factory=list)  # (code, values): roles the answer should say it read


def set_field(out: ProseReading, name: str, value, span: str) -> None:
    """Record ``name`` = ``value`` read from ``span`` unless a rule already read it."""
    if name not in out.fields and value is not None:
        out.fields[name] = value
        out.spans[name] = span.strip()


def search(pattern: str, text: str, flags: int = re.I | re.A) -> re.Match | None:
    # re.ASCII: \b then falls between "IB" and "网络", "用" and "bf16" (CJK are not \w in ASCII mode)
    return re.search(pattern, text, flags)
