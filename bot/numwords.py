"""Numbers written as words, in English and Chinese: "one hundred and twenty-three", "一百二十三".

The LLM guard (``bot.assistant.llm_guard``) reads these so a figure cannot slip past the digit check by being
spelled out. ``spelled_numbers(text)`` returns each spelled figure's value; a lone small word
("one option", "two strategies", "一个") is not a figure unless a unit follows it (GiB, GPUs, 张,
倍...), so ordinary prose does not trip the guard. Scale words (billion, 亿, 万) give the full value;
callers that compare with ``params_b`` also try the value in billions (``as_billions``).
Bounded work: the scan is one regex pass over the text, runs longer than 64 words are cut.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_EN_UNITS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15,
    "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19,
}
_EN_TENS = {"twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70,
            "eighty": 80, "ninety": 90}
_EN_SCALES = {"thousand": 1e3, "million": 1e6, "billion": 1e9, "trillion": 1e12}
_EN_WORDS = {**_EN_UNITS, **_EN_TENS, "hundred": 100, **_EN_SCALES}
_EN_ALL = sorted([*_EN_WORDS, "point", "and", "a"], key=len, reverse=True)
# A run of number words joined by spaces, hyphens or "and" (e.g. "one hundred and twenty-three").
_EN_RUN = re.compile(
    r"(?<![A-Za-z])(?:" + "|".join(_EN_ALL) + r")(?:[\s-]+(?:" + "|".join(_EN_ALL) + r"))*(?![A-Za-z])",
    re.IGNORECASE)
_UNIT_AFTER = re.compile(
    r"\s*(?:gib|gb|gigabytes?|tb|mb|gpus?|cards?|nodes?|ranks?|processes|%|percent|times|x\b|"
    r"seconds?|s/step|tokens|params|parameters|layers|steps|张|卡|块|个|倍|秒|台|节点|层|步|亿|万)",
    re.IGNORECASE)

_ZH_DIGITS = {"零": 0, "〇": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7,
              "八": 8, "九": 9}
_ZH_SMALL = {"十": 10, "百": 100, "千": 1000}
_ZH_BIG = {"万": 1e4, "亿": 1e8}
_ZH_RUN = re.compile(r"[零〇一二两三四五六七八九十百千万亿]+(?:点[零〇一二三四五六七八九]+)?")
# Words where 一/万/千 are not figures (一些 some, 一般 usually, 统一 unified, 万一 in case...).
_ZH_IDIOMS = ("一些", "一般", "一起", "一致", "一样", "一下", "一定", "一直", "一旦", "唯一", "统一", "之一",
              "进一步", "一边", "万一", "千万", "一方面", "一句", "一点", "第一", "一种", "一个问题", "一次性")


@dataclass(frozen=True)
class Spelled:
    text: str
    value: float
    scaled: bool  # a scale word (billion/亿/万) was part of it


def _en_value(words: list[str]) -> float | None:
    total, current, seen = 0.0, 0.0, False
    decimals: list[int] | None = None
    for word in words:
        if word in ("and", "a"):
            if word == "a" and seen:
                return None
            if word == "a":
                current = 1.0  # "a hundred"
            continue
        if word == "point":
            decimals = []
            continue
        if decimals is not None:
            if word not in _EN_UNITS or _EN_UNITS[word] > 9:
                return None
            decimals.append(_EN_UNITS[word])
            continue
        seen = True
        if word in _EN_UNITS:
            current += _EN_UNITS[word]
        elif word in _EN_TENS:
            current += _EN_TENS[word]
        elif word == "hundred":
            current = (current or 1) * 100
        elif word in _EN_SCALES:
            total += (current or 1) * _EN_SCALES[word]
            current = 0
    if not seen:
        return None
    value = total + current
    if decimals:
        value += float("0." + "".join(str(d) for d in decimals))
    return value


def _zh_value(run: str) -> float | None:
    whole, _, frac = run.partition("点")
    total, section, digit, last_big = 0.0, 0.0, None, 0.0
    for ch in whole:
        if ch in _ZH_DIGITS:
            # "二零二四" style reads digit by digit
            digit = _ZH_DIGITS[ch] if digit is None else digit * 10 + _ZH_DIGITS[ch]
        elif ch in _ZH_SMALL:
            section += (digit if digit is not None else 1) * _ZH_SMALL[ch]
            digit = None
        else:  # 万 / 亿
            big = _ZH_BIG[ch]
            part = section + (digit or 0)
            if last_big and big > last_big:  # 一万亿: the big unit scales everything before it
                total = (total + part) * big
            else:
                total += (part or 1) * big
            section, digit, last_big = 0.0, None, big
    value = total + section + (digit or 0)
    if frac:
        value += float("0." + "".join(str(_ZH_DIGITS[c]) for c in frac))
    return value


def spelled_numbers(text: str, limit: int = 2000) -> list[Spelled]:
    """Figures written in words in ``text`` (at most ``limit`` of them)."""
    found: list[Spelled] = []
    for match in _EN_RUN.finditer(text):
        words = [w.lower() for w in re.split(r"[\s-]+", match.group(0)) if w][:64]
        while words and words[-1] in ("and", "a", "point"):
            words.pop()
        while words and words[0] in ("and", "point"):
            words.pop(0)
        if not words or words == ["a"]:
            continue
        value = _en_value(words)
        if value is None:
            continue
        significant = [w for w in words if w not in ("and", "a")]
        unit_follows = bool(_UNIT_AFTER.match(text, match.end()))
        if len(significant) == 1 and value <= 10 and not unit_follows:
            continue  # "one option", "two strategies": prose, not a figure
        found.append(Spelled(match.group(0), value, any(w in _EN_SCALES for w in words)))
        if len(found) >= limit:
            return found
    for match in _ZH_RUN.finditer(text):
        run = match.group(0)[:64]
        start = match.start()
        context = text[max(0, start - 2): match.end() + 3]
        if any(idiom in context for idiom in _ZH_IDIOMS) and not any(c in run for c in "十百千亿"):
            continue
        unit_follows = bool(_UNIT_AFTER.match(text, match.end()))
        if len(run) == 1 and run in _ZH_DIGITS and not unit_follows:
            continue  # 一 alone: "a", "one", part of a word
        if len(run) == 1 and run in "万千百十" and not unit_follows:
            continue
        value = _zh_value(run)
        if value is None:
            continue
        found.append(Spelled(run, value, any(c in run for c in "万亿")))
        if len(found) >= limit:
            break
    return found


def candidate_values(item: Spelled) -> list[float]:
    """The values a spelled figure may stand for: itself, and in billions when it has a scale word
    ("seven billion" parameters is ``params_b`` 7)."""
    values = [item.value]
    if item.scaled:
        values += [item.value / 1e9, item.value / 1e6]
    return values
