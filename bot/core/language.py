"""The one language rule for answers: "zh" when Chinese characters are at least as many as
English words, else "en" (one Chinese character carries about as much as one English word:
"7B模型，8张A100，DDP还是FSDP" is Chinese, "is 显存 the same as VRAM?" is English). The reader,
the eval harness and every surface use it; retrieval keeps its own looser test for mixed queries
(``bot.knowledge.glossary.detect_language``), which only chooses a search path."""

from __future__ import annotations


def answer_language(text: str | None) -> str:
    from bot.understand.reader import detect_language  # the rule's one implementation

    return detect_language(text or "")
