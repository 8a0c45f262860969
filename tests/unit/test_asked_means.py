"""A can-I question that names one strategy as its means ("with plain DDP", "用 DDP") asks
about that strategy: the first sentence answers for it, not for whichever strategy fits."""

from __future__ import annotations

import pytest

from bot.understand.intent import asked_strategy, asks_feasibility

MEANS = [
    ("Is it possible to fine-tune a 3B model on two 3090s using vanilla DDP?", "ddp"),
    ("Could we run Mistral 7B full fine-tuning with just DDP on 8 L40S?", "ddp"),
    ("Can I pretrain a 1B model on four A10G cards via FSDP full shard?", "fsdp_full_shard"),
    ("Will it fit with ZeRO-3 on 4 x A100 40GB? 13B full fine-tune", "fsdp_full_shard"),
    ("四张 3090 能不能用纯 DDP 训一个 3B 的模型？", "ddp"),
    ("八卡 A800 可以采用 ZeRO-3 全参微调 34B 吗", "fsdp_full_shard"),
    ("两张 4090 能否通过 FSDP 练 7B 的 LoRA 呢？", "fsdp_full_shard"),
]


@pytest.mark.parametrize("text,strategy", MEANS)
def test_the_strategy_named_as_the_means_is_the_one_asked(text, strategy):
    assert asks_feasibility(text)
    assert asked_strategy(text) == strategy


@pytest.mark.parametrize("text", [
    "Can I fine-tune a 7B model on 2 x 4090?",  # no strategy named
    "Can I train on 8 GPUs? DDP or FSDP?",  # a comparison
    "两张 4090 能训 7B 吗？DDP 还是 FSDP？",
    "We use DDP today. Our 13B run OOMs on 8 x A100 40GB.",  # not a can-I question
])
def test_no_means_no_asked_strategy(text):
    assert asked_strategy(text) is None
