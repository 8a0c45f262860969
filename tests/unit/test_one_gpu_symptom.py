""""It uses only one GPU" is a symptom (what the run does), not the GPU count: the count stays
unstated (asked), never 1 presented as read. "I only have one GPU" is the count. (First-contact
batch 2026-12-01b's class 1; phrasings of our own, both languages.)"""

from __future__ import annotations

import pytest

from bot.parse import parse_conversation

SYMPTOM = [
    "My training only uses one GPU even though the server has several, how do I use all of them?",
    "Why does the script run on just a single GPU? I want DDP across my cards.",
    "The job concentrates on a single GPU while the others stay idle.",
    "Only one GPU is busy during training, the rest show 0% utilisation.",
    "训练的时候只用了一张卡，其他卡都空着，怎么用上多卡？",
    "为什么只有一张卡在跑？我想用 DDP 多卡训练。",
    "代码好像只在单卡上跑，怎么改成多卡？",
]
CAPACITY = [
    ("I only have one GPU, a 4090: can I fine-tune a 7B model with LoRA?", 1),
    ("我只有一张卡（4090），能 LoRA 微调 7B 吗？", 1),
    ("Training Llama-2-7B with LoRA on a single A100 80GB: DDP or FSDP?", 1),
]


@pytest.mark.parametrize("text", SYMPTOM)
def test_a_one_gpu_symptom_is_not_a_count(text):
    parsed = parse_conversation(text)
    assert parsed.setup.gpu_count != 1 or parsed.provenance.get("gpu_count") is None, parsed.setup


@pytest.mark.parametrize("text,count", CAPACITY)
def test_one_gpu_owned_is_a_count(text, count):
    assert parse_conversation(text).setup.gpu_count == count
