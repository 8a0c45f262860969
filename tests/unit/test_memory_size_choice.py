"""A choice between two memory sizes asks how much memory the run needs: capacity (batch l class 5).

Phrasings are this test's own, not a first-contact question's.
"""

import pytest

from bot.parse import parse_conversation


@pytest.mark.parametrize("text", [
    "Should I pretrain a 1B model with 40G or 80G A100s?",
    "For fine-tuning Llama-2-13B, 40GB or 80GB A100, which do I need?",
    "Is a 24GB vs 48GB card the right pick for LoRA on a 7B?",
    "用40G还是80G的A100来预训练7B模型？",
    "微调13B需要A100 40G还是80G？",
    "全参训练3B，选24G还是48G的卡？",
])
def test_two_memory_sizes_asked_is_capacity(text):
    assert parse_conversation(text).intent == "capacity", text


@pytest.mark.parametrize("text", [
    "I have 8 A100 80GB. DDP or FSDP for a 7B model?",
    "两台机器各8张A100 80G，用ZeRO-2还是ZeRO-3？",
])
def test_one_size_with_a_strategy_choice_stays_recommend(text):
    assert parse_conversation(text).intent == "recommend", text
