"""A pasted config's ``attn_implementation`` fills the setup field (issue 26)."""

from __future__ import annotations

import pytest

from bot.understand.config import read_config
from bot.understand.reader import read_turn


@pytest.mark.parametrize("text, expected", [
    ("attn_implementation: eager\nper_device_train_batch_size: 2", "eager"),
    ('{"_attn_implementation": "flash_attention_2", "hidden_size": 4096}', "flash_attention_2"),
    ("torchrun train.py --attn_implementation sdpa --per_device_train_batch_size 4", "sdpa"),
    ("attn_implementation = 'flash_attention_3'", "flash_attention_2"),
])
def test_the_config_key_is_read(text, expected):
    assert read_config(text).fields["attn_implementation"] == expected


@pytest.mark.parametrize("question", [
    "Gemma-2-9B on 8 H100s, my config:\nattn_implementation: eager\nDDP or FSDP?",
    "在 8 张 H100 上训练 Gemma-2-9B，配置：\nattn_implementation: eager\n该用 DDP 还是 FSDP？",
])
def test_the_reader_carries_it_into_the_setup_fields(question):
    assert read_turn(question).fields.get("attn_implementation") == "eager"


def test_an_unknown_value_is_not_taken():
    assert "attn_implementation" not in read_config("attn_implementation: magic").fields
