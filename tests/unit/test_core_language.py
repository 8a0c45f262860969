"""The answer's language rule has one home, ``bot.core.language`` (issue 28): the reader, the parse
API and the eval harness all answer with it, and nothing else in ``bot/`` re-implements it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from bot.core import answer_language
from bot.core.language import CJK
from bot.parse import detect_language, parse_conversation
from evals.metrics import detect_language as harness_language

BOT = Path(__file__).resolve().parents[2] / "bot"

# Phrasings of no thread: Chinese with card and model names in it, English with a Chinese term in it,
# and names alone (which count as no words: "A100", "bf16", "Qwen2.5-14B" are not English).
CASES = [
    ("两台H100，每台8卡，训练Qwen2.5-14B用什么并行？", "zh"),
    ("我有4张4090，LoRA微调13B会不会爆显存", "zh"),
    ("bf16混合精度下ZeRO-3比DDP省多少", "zh"),
    ("单机8卡 A800 80G 全参微调", "zh"),
    ("does 梯度累积 change the memory on four L40S cards?", "en"),
    ("We train a 30B model on 16 H800s over RoCE; FSDP or HSDP?", "en"),
    ("how much memory for Mistral-7B with activation checkpointing", "en"),
    ("A100 bf16 Qwen2.5-14B", "en"),  # names only: no Chinese character, so English
    ("", "en"),
]


@pytest.mark.parametrize("text, lang", CASES)
def test_one_rule_everywhere(text, lang):
    assert answer_language(text) == lang
    assert detect_language(text) == lang
    assert harness_language(text) == lang
    if text:
        assert parse_conversation(text).language == lang


def test_none_is_english():
    assert answer_language(None) == "en"


def test_a_character_weighs_one_word():
    """The boundary: as many characters as words is Chinese, one word more is English."""
    assert answer_language("显存 is") == "zh"          # 2 characters, 1 word
    assert answer_language("显存 is it") == "zh"       # 2 characters, 2 words
    assert answer_language("显存 is it ok") == "en"    # 2 characters, 3 words
    assert answer_language("用 DDP") == "zh"           # an acronym of capitals is a word: 1 and 1


def _defines(path: Path, names: set[str]) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name in names]


def test_the_rule_and_its_character_class_are_defined_once():
    """``answer_language`` and the CJK character class are defined in bot/core/language.py only
    (``bot.parse.detect_language`` delegates; retrieval's own looser ``detect_language`` in
    bot/knowledge/glossary.py counts the same ``CJK``)."""
    core = BOT / "core" / "language.py"
    others = [p for p in BOT.rglob("*.py") if p != core]
    assert not [p for p in others if _defines(p, {"answer_language"})]
    assert not [str(p.relative_to(BOT)) for p in others if CJK.pattern in p.read_text(encoding="utf-8")]
    assert "answer_language" in ast.unparse(ast.parse((BOT / "parse.py").read_text(encoding="utf-8")))
