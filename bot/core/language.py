"""The one language rule for answers: "zh" when Chinese characters are at least as many as
English words, else "en" (one Chinese character carries about as much as one English word:
"7B模型，8张A100，DDP还是FSDP" is Chinese, "is 显存 the same as VRAM?" is English). The reader,
the eval harness and every surface use it; retrieval keeps its own looser test for mixed queries
(``bot.knowledge.glossary.detect_language``), which only chooses a search path.

This module is the rule's one home, with what it counts: ``CJK`` (Chinese characters, the one
definition, which the reader and retrieval count too) and ``EN_WORD`` (an English word: two or
more Latin letters standing alone, so "A100", "bf16", "--zero_stage" and "Llama-2" are not words).
"""

from __future__ import annotations

import re

# Chinese characters: CJK unified ideographs, extension A and the compatibility block.
CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
# An English word: not a piece of a card, model, path, flag or version name (letters glued to a
# digit, "-", "_", "." or "/" belong to a name, which says nothing about the asker's language).
EN_WORD = re.compile(r"(?<![A-Za-z0-9_\-./])[A-Za-z]{2,}(?![A-Za-z0-9_\-/])")


def answer_language(text: str | None) -> str:
    """"zh" when the text's Chinese characters are at least as many as its English words (and
    there is at least one), else "en"; no text at all is "en"."""
    text = text or ""
    cjk = len(CJK.findall(text))
    return "zh" if cjk > 0 and cjk >= len(EN_WORD.findall(text)) else "en"
