"""What a printed figure measures: its unit's kind, and the answer's values of that kind.

The LLM guard (``bot.assistant.llm_guard.check_llm_text``) already refuses a figure whose value is nowhere in the
answer (``bot.render.untraceable_numbers``). An answer carries hundreds of values, so a wrong
figure can still share its value with an unrelated one: "DDP needs 8 GiB" where 8 is the GPU
count, "a step takes 40 s" where 40 is the card's memory. Here a figure written with a unit
("8 GiB", "0.51 s", "57%", "8 张", "2 nodes", "100 Gbps", "7B") must equal a value of the same
kind: a ``numbers`` key of that kind (by its name: ``*_gib`` memory, ``*seconds*`` time, ``*_pct``
and ``mfu`` percent, ``tokens_per_s*`` throughput), a setup field of that kind (``gpu_memory_gb``,
``gpu_count``, ``nodes``, ``params_b``, ...; the digits of a setup string such as "A100 40GB SXM"
by their own units), or a figure of that kind in a cited quote or the user's own turns.

Figures are read as ``bot.figures.numbers_in_text`` reads them (code blocks, URLs, markers, list
numbers and names such as "A100" or "Llama-2-7B" are not figures) and matched with its rounding
rule: equal to the precision printed ("25.36" is 25.355..25.365, "8" is 7.5..8.5). A figure with
no unit, or a unit not listed here, is left to the value check. GiB and GB are one kind (the
answer's own text writes both); nothing is converted but milliseconds to seconds.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from bot.figures import (
    _TOKEN,
    reading_lines,
)

# unit as written (lower-cased) -> (kind, factor to the kind's values: 1 ms = 0.001 s)
UNITS: dict[str, tuple[str, float]] = {
    **{u: ("memory", 1.0) for u in ("gib", "gb", "g", "mib", "mb", "tib", "tb", "gigabytes", "gigabyte")},
    **{u: ("time", 1.0) for u in ("s", "sec", "secs", "second", "seconds", "秒")},
    "ms": ("time", 0.001), "毫秒": ("time", 0.001),
    **{u: ("percent", 1.0) for u in ("%", "percent")},
    **{u: ("gpus", 1.0) for u in ("gpu", "gpus", "card", "cards", "device", "devices", "张", "卡", "块")},
    **{u: ("nodes", 1.0) for u in ("node", "nodes", "machine", "machines", "节点", "台")},
    **{u: ("params", 1.0) for u in ("b", "billion")},
    **{u: ("bandwidth", 1.0) for u in ("gbps", "gb/s", "gbit/s", "gbit")},
    **{u: ("throughput", 1.0) for u in ("tokens/s", "tok/s", "tokens/sec")},
}
# setup field -> kind (the others hold no unit a figure could be written in)
SETUP_KINDS = {"gpu_memory_gb": "memory", "cpu_ram_gb": "memory", "gpu_count": "gpus", "gpus_per_node": "gpus",
               "nodes": "nodes", "params_b": "params", "inter_node_gbps": "bandwidth"}
_LEADING_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_NAMED_SIZE = re.compile(r"(?<![\d.])(\d+(?:\.\d+)?)[bB](?![A-Za-z])")  # the size in a model's name
_NEXT_WORD = re.compile(r"\s?([A-Za-z][A-Za-z/]*|%|[\u4e00-\u9fff]{1,2})")


@dataclass(frozen=True)
class UnitFigure:
    """A figure printed with a unit: its digits, value, decimals shown, unit and kind."""

    printed: str
    value: float
    decimals: int
    unit: str
    kind: str
    factor: float


def _unit(word: str) -> tuple[str, float] | None:
    word = word.lower()
    if word in UNITS:
        return UNITS[word]
    if not word.isascii():  # "8张卡": the first character is the unit
        return UNITS.get(word[0])
    if "/" in word:  # "25.36 GiB/GPU": a memory figure per GPU ("Gb/s" is listed whole)
        return UNITS.get(word.split("/", 1)[0])
    return None


def unit_figures(text: str) -> list[UnitFigure]:
    """The figures in ``text`` written with a known unit, glued ("40GB", "8张", "57%") or after
    one space ("25.36 GiB", "0.51 s", "8 GPUs")."""
    out: list[UnitFigure] = []
    for line in reading_lines(text):
        for token in _TOKEN.finditer(line):
            word = token.group(0)
            if not word[0].isdigit():
                continue  # a name (A100, Llama-2-7B), as numbers_in_text reads it
            number = _LEADING_NUMBER.match(word)
            if number is None:
                continue
            rest = word[number.end():]
            if not rest:
                following = _NEXT_WORD.match(line, token.end())
                rest = following.group(1) if following else ""
            unit = _unit(rest) if rest else None
            if unit is None:
                continue
            printed = number.group(0)
            decimals = len(printed.split(".")[1]) if "." in printed else 0
            out.append(UnitFigure(printed, float(printed), decimals, rest, unit[0], unit[1]))
    return out


def key_kind(key: str) -> str | None:
    """The kind of a ``numbers`` key's value, from its last part's name (None: no unit)."""
    last = key.rsplit(".", 1)[-1]
    if "gib" in last or last.endswith("_gb") or last.startswith("gb_"):
        return "memory"
    if "tokens_per_s" in last:
        return "throughput"
    if "seconds" in last or last.endswith("_s"):
        return "time"
    if last.endswith("_pct"):
        return "percent"
    if last in ("gpu_count", "gpus", "gpus_per_node") or last.endswith("_gpus"):  # capacity.gpu_count: "16 GPUs"
        return "gpus"
    if last == "nodes" or last.endswith("_nodes"):
        return "nodes"
    if last == "params_b":
        return "params"
    if last.endswith("gbps"):
        return "bandwidth"
    return None


def kind_values(numbers: dict, setup: dict, quotes: list[str]) -> dict[str, list[float]]:
    """kind -> every value of that kind the answer holds (``numbers``, setup, quotes, turns)."""
    values: dict[str, list[float]] = {}

    def add(kind: str, value: float) -> None:
        values.setdefault(kind, []).append(abs(float(value)))

    for key, value in numbers.items():
        if isinstance(value, bool) or not isinstance(value, int | float):
            continue
        kind = key_kind(key)
        if kind:
            add(kind, value)
        if key.rsplit(".", 1)[-1] == "mfu":  # a fraction, printed as a percentage
            add("percent", value * 100)
    for name, value in setup.items():
        if isinstance(value, bool) or value is None:
            continue
        if isinstance(value, int | float) and name in SETUP_KINDS:
            add(SETUP_KINDS[name], value)
        elif isinstance(value, str):
            for fig in unit_figures(value):
                add(fig.kind, fig.value * fig.factor)
            for size in _NAMED_SIZE.findall(value):  # "Qwen2.5-72B" is a 72B model (72.7 counted)
                add("params", float(size))
    for quote in quotes:
        for fig in unit_figures(quote or ""):
            add(fig.kind, fig.value * fig.factor)
    return values


def wrong_unit_figures(text: str, numbers: dict, setup: dict, quotes: list[str]) -> list[str]:
    """Figures in ``text`` whose unit's kind holds no value equal to them ("8 GiB" when no memory
    figure is 8), as printed with their unit."""
    sources = kind_values(numbers, setup, quotes)
    bad = []
    for fig in unit_figures(text):
        # untraceable_numbers' rule: half the last printed digit, at least 0.0051 with decimals
        tolerance = max(0.5 * 10 ** -fig.decimals + 1e-9, 0.0051 if fig.decimals else 0.0) * fig.factor
        value = fig.value * fig.factor
        if not any(abs(value - v) <= tolerance for v in sources.get(fig.kind, ())):
            bad.append(f"{fig.printed} {fig.unit}")
    return bad
