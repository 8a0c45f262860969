"""Figures in answer text: the one number tokenizer the renderer and the eval metrics share.

``numbers_in_text(text)`` lists the figures a reader sees (digits, and numbers spelled out in
words when ``bot.numwords`` is available); the renderer binds each to the key it renders
(``Answer.figures``) and ``evals/metrics.py`` checks value and key with the same reading.
``value_words(value, lang)`` writes a value a user gave for an answer's text without ``inf``,
``nan``, an exponent or a minus sign ("minus 8", "an impossibly large number").
"""

from __future__ import annotations

import math
import re
import unicodedata
from dataclasses import dataclass

# "[3]", "[1, 2]", "[1][2]", "[1，2]": citation markers. Markdown links "[text](url)" have text.
_MARKER_GROUP = re.compile(r"\[(\d+(?:\s*[,，、]\s*\d+)*)\](?!\()")


_FENCE_OPEN = re.compile(r"^\s{0,3}(`{3,}|~{3,})")
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(?:\d+(?:\.\d+)*\.?\s+)?")
_LIST_NUMBER = re.compile(r"^(\s*(?:[-*+>]\s+)?)\d+(?:[.)]\s+|、\s*)")
_URL = re.compile(r"(?:https?://|www\.)\S+")
_LINK_TARGET = re.compile(r"\]\([^)]*\)")
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")
_TOKEN = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._\-]*[A-Za-z0-9%])?")
_TIMES = re.compile(r"(?<=\d)[xX×*](?=\d)")
_NUMBER = re.compile(r"(?<![A-Za-z0-9.])\d+(?:\.\d+)?")
_ANY_NUMBER = re.compile(r"\d+(?:\.\d+)?")


def reading_form(text: str) -> str:
    """``text`` as figures are read from it: NFKC (full-width digits are ASCII), with a full-width
    comma kept a clause separator ("batch_size为1，744G" is 1 and 744, never 1744)."""
    return unicodedata.normalize("NFKC", text.replace("\uff0c", ", "))


def strip_code_blocks(text: str) -> str:
    """The text without fenced code blocks (```...``` or ~~~...~~~; an unclosed fence runs to the end)."""
    out: list[str] = []
    fence: str | None = None
    for line in text.split("\n"):
        opened = _FENCE_OPEN.match(line)
        if fence is None and opened:
            fence = opened.group(1)[0] * 3
            continue
        if fence is not None:
            if line.strip().startswith(fence):
                fence = None
            continue
        out.append(line)
    return "\n".join(out)


@dataclass(frozen=True)
class NumberMention:
    """A figure printed in the answer: its digits as printed, value, decimals shown, and line."""

    printed: str
    value: float
    decimals: int
    context: str


def reading_lines(text: str) -> list[str]:
    """The lines of ``text`` as figures are read from them: code blocks, headings' marks, list
    numbers, link targets, URLs, citation markers and thousands separators taken out."""
    out = []
    for raw_line in strip_code_blocks(reading_form(text)).split("\n"):
        line = _HEADING.sub("", raw_line)
        line = _LIST_NUMBER.sub(r"\1", line)
        line = _LINK_TARGET.sub("]", line)
        line = _URL.sub(" ", line)
        line = _MARKER_GROUP.sub(" ", line)
        out.append(_THOUSANDS.sub("", line))
    return out


def numbers_in_text(text: str) -> list[NumberMention]:
    """The figures in answer text that need a source.

    Ignored: fenced code blocks (the how-to snippet), URLs and link targets, citation markers
    ``[n]``, list numbering ("1. ", "2) ", "3、"), section numbers in headings ("## 2.1 Why"), and
    names that contain digits: any token that starts with a letter ("A100", "H200", "fp16",
    "bf16", "FSDP2", "ZeRO-3", "Llama-2-7B", "Qwen2.5-7B", "forum-06", "run-12"), and digits glued
    behind letters inside a token ("8xA100" counts 8, not 100).
    Counted: every other digit run, with its unit glued on or not ("7B", "40GB", "12.6 GiB",
    "1.5x", "15%", "8张", "单卡40G", "14-16GB" is 14 and 16, "2x8" is 2 and 8, "10,000" is 10000).
    Chinese characters separate tokens; full-width digits are read as ASCII (NFKC).
    """
    mentions: list[NumberMention] = []
    for line in reading_lines(text):
        for token in _TOKEN.finditer(line):
            word = token.group(0)
            if not word[0].isdigit():
                continue  # a name: A100, fp16, Llama-2-7B, ZeRO-3, forum-06
            word = _TIMES.sub(" ", word)
            for match in _NUMBER.finditer(word):
                printed = match.group(0)
                decimals = len(printed.split(".")[1]) if "." in printed else 0
                mentions.append(NumberMention(printed, float(printed), decimals,
                                              _context(line, token.start(), len(token.group(0)))))
    return mentions


def _context(text: str, start: int, length: int, width: int = 30) -> str:
    left = max(0, start - width)
    return text[left:start + length + width].strip().replace("\n", " ")


# ---------------------------------------------------------------------------------------------
# A value as words a reader can use: never "inf", "nan" or "1e+30" (issue 30)
HUGE = 1e15  # beyond this a figure is no count anyone means; printed digits would be noise
TINY = 1e-4  # below this (and above 0) a size or fraction is no real setting
_VALUE_WORDS = {
    "nan": ("not a number", "不是一个数"),
    "inf": ("infinity", "无穷大"),
    "-inf": ("minus infinity", "负无穷大"),
    "huge": ("an impossibly large number", "一个大得不可能的数"),
    "-huge": ("minus an impossibly large number", "负的、大得不可能的数"),
    "tiny": ("a vanishingly small number", "一个小得可以忽略的数"),
    "-tiny": ("minus a vanishingly small number", "负的、小得可以忽略的数"),
}
_MINUS = ("minus ", "负 ")
# Python's own spellings as figures: "inf", "-inf", "nan" (lowercase, standing alone: prose such as
# "the inf/NaN check" names the values, it prints none), and :g/:e exponents ("1e+30", "2.5e-07")
UNUSABLE_FIGURE = re.compile(r"(?<![\w/])[+-]?(?:inf|nan)(?![\w/])|\d(?:\.\d+)?[eE][+-]\d+")
_INLINE_CODE = re.compile(r"`[^`\n]*`")


def plain_figure(value: float) -> str:
    """A finite, ordinary magnitude as people write it: ``10,000,000``, ``0.5``, ``0.0025``."""
    value = float(value)
    if value.is_integer():
        return f"{int(value):,}"
    text = f"{value:.6f}".rstrip("0").rstrip(".")
    return text if text not in ("0", "-0") else f"{value:.2g}"


def value_words(value: float, lang: str = "en") -> str:
    """``value`` as words and plain digits for an answer's text, in ``lang`` (``en``/``zh``):
    "minus 8", "infinity", "not a number", "an impossibly large number" (|x| >= 10^15), "a
    vanishingly small number" (0 < |x| < 10^-4). Never ``inf``, ``nan``, an exponent or a sign."""
    zh = 1 if lang == "zh" else 0
    value = float(value)
    if math.isnan(value):
        return _VALUE_WORDS["nan"][zh]
    sign = "-" if value < 0 else ""
    size = abs(value)
    if math.isinf(size):
        return _VALUE_WORDS[sign + "inf"][zh]
    if size >= HUGE:
        return _VALUE_WORDS[sign + "huge"][zh]
    if 0 < size < TINY:
        return _VALUE_WORDS[sign + "tiny"][zh]
    return (_MINUS[zh] if sign else "") + plain_figure(size)


def read_value_words(words: str) -> float | None:
    """The value ``value_words(..., "en")`` wrote (a representative one for the word forms), or None."""
    words = words.strip().rstrip(".")
    for key, (en, _) in _VALUE_WORDS.items():
        if words == en:
            return {"nan": math.nan, "inf": math.inf, "-inf": -math.inf, "huge": HUGE, "-huge": -HUGE,
                    "tiny": TINY / 10, "-tiny": -TINY / 10}[key]
    negative = words.startswith(_MINUS[0])
    digits = words[len(_MINUS[0]):] if negative else words
    try:
        number = float(digits.replace(",", ""))
    except ValueError:
        return None
    return -number if negative else number


def unusable_figures(text: str) -> list[str]:
    """The ``inf``/``nan``/exponent forms in ``text`` (what no answer may print)."""
    return [m.group(0) for m in UNUSABLE_FIGURE.finditer(_INLINE_CODE.sub(" ", strip_code_blocks(text)))]
