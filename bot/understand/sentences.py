"""Sentences of a message and whether one asks something: the splitting every reading rule shares.

The intent rules (``bot.understand.intent``), the scope rules (``bot.understand.scope``) and the
asked axes (``bot.understand.asked_axes``) read a message sentence by sentence; this module owns
where a sentence ends (Chinese and English stops, line breaks, a "还是说 ..." continuation kept
with the question before it) and what makes a sentence a question (a question mark, 吗/呢, an
interrogative such as 多少/为什么/how/which, "I would like to know ...").
"""

from __future__ import annotations

import re

_I = re.I | re.A

# "另外几张卡" / "其他几块" / "剩下几台" say "the other few", never "how many"
# "另外几张卡" / "其他几块" / "剩下几台" say "the other few", never "how many"
NOT_OTHERS = r"(?<!另外)(?<!其他)(?<!其余)(?<!剩下)(?<!别的)"
_SENTENCE_END = re.compile(r"(?<=[。！？!?；;\n])|(?<=\.)(?=\s|$)")
QUESTION = re.compile(r"[?？]|[吗呢么嘛]\s*[。.!！)）]*\s*$|多少|多大|" + NOT_OTHERS + r"(?:几张|几台|几块|几个)|为什么|为啥|怎么|如何|哪|是否|能否|可否|"
                       r"有没有|什么|请问|求教|想问|想了解|想知道|问一下|"
                       r"^\s*(?:how|what|which|why|can|could|should|is|are|does|do|did|would|will|any)\b|"
                       r"\bi (?:would like|want|'d like) to (?:know|ask)|\bi(?:'m| am)? wonder(?:ing)?|could you|please (?:share|tell|advise)|"
                       r"(?:have|got) a question about|想问一下|咨询|\bi(?:'m| am) curious|\bcurious (?:why|about|whether|if)|"
                       r"不明白|不理解|搞不懂|想不通|\b(?:help(?:ful)?|useful|great|nice|good) to know\b|"
                       r"\b(?:would|'d) (?:love|like) to know\b|\bappreciate (?:knowing|to know)\b", _I)


_CONTINUES = re.compile(r"^\s*(?:还是说|还是|或者|or\b|\(?or is)", _I)


def sentences_of(text: str) -> list[str]:
    """The sentences of a message (Chinese and English stops, line breaks); a continuation such as
    "还是说72B只能lora方式微调？" stays with the question before it."""
    out: list[str] = []
    for piece in _SENTENCE_END.split(text):
        piece = piece.strip()
        if not piece:
            continue
        if out and _CONTINUES.match(piece):
            out[-1] = out[-1] + " " + piece
        else:
            out.append(piece)
    return out


def is_question(sentence: str) -> bool:
    """The sentence asks something (a question mark, a question word or particle, either language)."""
    return bool(QUESTION.search(sentence))
