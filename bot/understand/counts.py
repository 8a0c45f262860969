"""Count tokens every reading rule shares: the markers that stand for a card or a model name, the
pattern of a count (digits, a small Chinese numeral, an English number word) and its value.

``bot.understand.reader`` replaces card and model names with marker runs before the prose rules run
(``GPU``/``MODEL``), so a name's digits are never read as a count; ``COUNT`` never starts inside a name.
"""

from __future__ import annotations

import re

GPU = "Ǥ"
MODEL = "Ḿ"
G = GPU + "+"

CN_DIGITS = {"零": 0, "〇": 0, "一": 1, "二": 2, "两": 2, "俩": 2, "三": 3, "四": 4, "五": 5, "六": 6,
             "七": 7, "八": 8, "九": 9, "双": 2, "单": 1}
EN_NUMBER_WORDS = {"one": 1, "single": 1, "a single": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
                   "seven": 7, "eight": 8, "nine": 9, "ten": 10, "twelve": 12, "sixteen": 16, "thirty-two": 32,
               "sixty-four": 64}
EN_WORDS = "|".join(sorted(EN_NUMBER_WORDS, key=len, reverse=True))
# A count: digits, a small Chinese numeral (两, 十六) or an English word; never glued to a name.
# A Chinese numeral may follow a Latin name or path ("belle.py两张卡"): only digits are glued to one.
COUNT = (r"(?:(?<![A-WYZa-wyz0-9_.同第每])|(?<=[A-Za-z0-9_.])(?=[零〇一二两俩三四五六七八九十双]))(?=[-\d零〇一二两俩三四五六七八九十双单oOsStTfFeEnNaA])(-?\d{1,12}|[零〇一二两俩三四五六七八九十双]{1,3}|" + EN_WORDS + r")(?![\d]|\.\d)")


def to_int(token: str) -> int | None:
    """The value of a count token ("8", "十六", "two"); None for anything else."""
    token = token.strip().lower()
    if re.fullmatch(r"-?\d{1,12}", token):
        return int(token)
    if token in EN_NUMBER_WORDS:
        return EN_NUMBER_WORDS[token]
    if not token or any(ch not in CN_DIGITS and ch != "十" for ch in token):
        return None
    if "十" in token:
        tens, _, ones = token.partition("十")
        return (CN_DIGITS.get(tens, 1) if tens else 1) * 10 + (CN_DIGITS.get(ones, 0) if ones else 0)
    value = 0
    for ch in token:
        value = value * 10 + CN_DIGITS[ch]
    return value
