"""Consumer and data-center cards people train on that the catalog lacked (first-contact batches a/b:
2080 Ti, 3060, 5070 not recognised), written the way people write them, in both languages."""

from __future__ import annotations

import pytest

from bot.catalog import lookup_gpu
from bot.catalog.accelerators import FP32_TFLOPS, fp32_tflops, list_gpus
from bot.parse import parse_conversation

NEW_CARDS = {
    "RTX 2080 Ti 11GB": 11, "RTX 3060 12GB": 12, "RTX 3080 12GB": 12, "RTX 4060 Ti 16GB": 16,
    "RTX 4080 16GB": 16, "RTX 5070 12GB": 12, "RTX 5070 Ti 16GB": 16, "RTX 5080 16GB": 16,
    "A30 24GB": 24, "L40 48GB": 48, "RTX 6000 Ada 48GB": 48,
}


@pytest.mark.parametrize("name,memory", sorted(NEW_CARDS.items()))
def test_new_card_has_memory_and_a_source(name, memory):
    card = lookup_gpu(name)
    assert card.memory_gb == memory
    assert card.source_url.startswith("https://")
    assert card.bf16_tflops > 0 and card.hbm_tb_s > 0
    # without a tabulated fp32 rate the calculator falls back to bf16/16, far below a GeForce card's
    assert FP32_TFLOPS[name] > 0


def test_turing_has_no_bf16_and_no_tf32():
    card = lookup_gpu("2080ti")
    assert not card.supports_bf16
    assert card.default_precision == "fp16-mixed"
    assert fp32_tflops(card, tf32=True) == fp32_tflops(card, tf32=False)


@pytest.mark.parametrize("written,expected", [
    ("2080ti", "RTX 2080 Ti 11GB"), ("2080 Ti", "RTX 2080 Ti 11GB"), ("RTX 2080Ti", "RTX 2080 Ti 11GB"),
    ("3060", "RTX 3060 12GB"), ("3060 12G", "RTX 3060 12GB"), ("RTX3060", "RTX 3060 12GB"),
    ("5070", "RTX 5070 12GB"), ("5070 Ti", "RTX 5070 Ti 16GB"), ("4060ti 16G", "RTX 4060 Ti 16GB"),
    ("3080 12G", "RTX 3080 12GB"), ("3080", "RTX 3080 10GB"), ("a30", "A30 24GB"),
])
def test_lookup_by_how_people_write_it(written, expected):
    assert lookup_gpu(written).name == expected


def test_names_unique():
    names = [g.name for g in list_gpus()]
    assert len(names) == len(set(names))


@pytest.mark.parametrize("question,gpu,count", [
    ("实验室有三台机器，每台两块2080ti(11G)，能微调一个3B的模型吗？", "RTX 2080 Ti 11GB", 6),
    ("手上只有一张 3060 12G，做 1.5B 的 LoRA 够不够？", "RTX 3060 12GB", 1),
    ("两张5070能不能用FSDP把7B模型切开训练？", "RTX 5070 12GB", 2),
    ("We have four 2080 Ti cards; can we fine-tune a 1B model with DDP?", "RTX 2080 Ti 11GB", 4),
    ("Would 2x RTX 3060 be enough to LoRA a 7B model?", "RTX 3060 12GB", 2),
    ("Planning to buy 3 x RTX 5070 for FSDP training of a 3B model, is that sensible?", "RTX 5070 12GB", 3),
])
def test_reader_finds_the_card_and_its_memory(question, gpu, count):
    setup = parse_conversation(question).setup
    assert setup.gpu == gpu
    assert setup.gpu_memory_gb == NEW_CARDS[gpu]
    assert setup.gpu_count == count
