"""Contracts every layer shares (DESIGN.md's ``bot/core``): the one ``UserError`` base that every
user-facing error inherits, caught once per surface, and the one rule that picks an answer's
language. (``TrainingSetup``/``ResolvedSetup`` still live in ``bot/core/setup.py`` and the strategy
ids in ``bot/strategies.py``; they move here next.)"""

from bot.core.errors import UserError
from bot.core.language import answer_language

__all__ = ["UserError", "answer_language"]
