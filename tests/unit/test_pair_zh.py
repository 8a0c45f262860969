""""双3090", "双路 A100", "双块4090": 双 straight before a card name is two of them (first-contact
batch b's class 2; phrasings of our own). "双精度" or "双机" is not."""

from __future__ import annotations

import pytest

from bot.parse import parse_conversation


@pytest.mark.parametrize("text", ["双3090 能不能全参微调 7B？", "我们用双路 A100 80G 训练 13B 的 LoRA，DDP 还是 FSDP？",
                                  "双块4090跑 Qwen2.5-7B LoRA 够吗", "dual 3090s for a 7B LoRA: DDP or FSDP?"])
def test_shuang_before_a_card_is_two(text):
    assert parse_conversation(text).setup.gpu_count == 2


@pytest.mark.parametrize("text", ["双机 8 卡 A100 训练 70B", "双精度训练 7B 模型用 A100 可以吗"])
def test_shuang_before_anything_else_is_not_a_pair(text):
    assert parse_conversation(text).setup.gpu_count != 2
