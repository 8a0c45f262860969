"""Which model-parallel axes a question asks about: "should we add tensor parallel?", "要不要上流水线并行",
"is context parallelism worth it at 128k?".

This module owns ``asked_parallel_axes``. An axis counts as *asked* only in a question sentence
(``bot.understand.intent.is_question``); an axis in a statement ("we run TP=8") is part of the setup
and is the reader's to read as a degree. The answer then says yes or no for each axis asked, with
the plan's figure (``bot.decide`` ``ASKED_PARALLEL``). Axis names follow torchtitan's
``[parallelism]`` section: tp (tensor), cp (context: the sequence split, which DeepSpeed-Ulysses and
ring attention also do), pp (pipeline).
"""

from __future__ import annotations

import re

from bot.understand.sentences import is_question, sentences_of

# One pattern per axis, both languages. "sequence parallel" is counted as the sequence split (CP):
# Ulysses-style sequence parallelism divides the sequence as CP does; Megatron's SP rides on TP
# (torchtitan always pairs them) and is asked about with TP's words.
_AXIS_WORDS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("tp", re.compile(r"tensor[\s_-]*(?:model[\s_-]*)?parallel(?:ism|ize|ization)?|\bTP\b|\btp\s*[=:]?\s*\d|"
                      r"张量并行|张量切分", re.I)),
    ("cp", re.compile(r"context[\s_-]*parallel(?:ism)?|sequence[\s_-]*parallel(?:ism)?|ring[\s_-]*attention|ulysses|"
                      r"\bCP\b|上下文并行|序列并行|环形注意力", re.I)),
    ("pp", re.compile(r"pipeline[\s_-]*(?:model[\s_-]*)?parallel(?:ism)?|\bPP\b|\bpp\s*[=:]?\s*\d|流水线并行|管道并行", re.I)),
)
# "2D/3D parallelism", "model parallelism", "FSDP or something else?": every axis is in question
_ANY_AXIS = re.compile(r"\b[23]\s*-?\s*d\s*parallel(?:ism)?|model[\s_-]*parallel(?:ism)?|"
                       r"(?:beyond|besides|other than|more than|instead of)\s+(?:just\s+)?(?:fsdp|zero)|"
                       r"(?:fsdp|zero[\s-]*\d?)\s+(?:or|vs\.?)\s+(?:something|anything)\s+else|"
                       r"[23]\s*[dD]\s*并行|模型并行|混合并行", re.I)
AXES = ("tp", "cp", "pp")


def asked_parallel_axes(text: str) -> tuple[str, ...]:
    """The axes a question sentence of ``text`` asks about, in torchtitan's order (tp, cp, pp);
    all three when it asks about model parallelism in general; () when none is asked."""
    asked: set[str] = set()
    for sentence in sentences_of(text):
        if not is_question(sentence):
            continue
        if _ANY_AXIS.search(sentence):
            asked.update(AXES)
        asked.update(axis for axis, pattern in _AXIS_WORDS if pattern.search(sentence))
    return tuple(axis for axis in AXES if axis in asked)
