"""Batch e catalog gaps (first_contact.md class 14): current workstation and data-center cards,
card names typed with one slip, and model families the catalog lacked (CPM, VoxCPM, ...)."""

from __future__ import annotations

import pytest

from bot.catalog import UnknownNameError, lookup_gpu, lookup_model
from bot.parse import parse_conversation

CARDS = [  # (how people write it, catalog card, memory GB)
    ("RTX 5880 Ada", "RTX 5880 Ada 48GB", 48), ("5880 Ada", "RTX 5880 Ada 48GB", 48),
    ("RTX 5000 Ada", "RTX 5000 Ada 32GB", 32), ("RTX 4500 Ada", "RTX 4500 Ada 24GB", 24),
    ("RTX 4000 Ada", "RTX 4000 Ada 20GB", 20), ("L20", "L20 48GB", 48),
    ("RTX PRO 6000 Blackwell", "RTX PRO 6000 Blackwell 96GB", 96), ("RTX PRO 6000", "RTX PRO 6000 Blackwell 96GB", 96),
    ("GB200", "GB200 186GB", 186), ("MI325X", "MI325X 256GB", 256), ("MI210", "MI210 64GB", 64),
    ("RTX A5000", "RTX A5000 24GB", 24), ("A4000", "RTX A4000 16GB", 16),
    # already present, checked so a rename cannot drop them
    ("L40S", "L40S 48GB", 48), ("H20", "H20 96GB", 96), ("H800", "H800 80GB SXM", 80), ("A800", "A800 80GB SXM", 80),
    ("B200", "B200 180GB", 180), ("MI300X", "MI300X 192GB", 192), ("Gaudi3", "Gaudi 3 128GB", 128),
]


@pytest.mark.parametrize("written,name,memory", CARDS)
def test_current_cards_are_in_the_catalog_with_a_source(written, name, memory):
    card = lookup_gpu(written)
    assert card.name == name and card.memory_gb == memory
    assert card.source_url.startswith("https://")


def _setup(question: str) -> dict:
    return {k: v for k, v in parse_conversation(question).setup.model_dump().items() if v is not None}


@pytest.mark.parametrize("question,count", [
    ("4x RTX 5880 Ada, full fine-tune of a 7B model: DDP or FSDP?", 4),
    ("We have two RTX 5880 Ada cards for LoRA on a 13B model", 2),
    ("8 x 5880 Ada (48 GB each) in one box, which strategy?", 8),
    ("我们有4张RTX 5880 Ada，全参微调7B用什么策略？", 4),
    ("两张 5880 Ada 显卡，LoRA 训练 13B 模型", 2),
    ("单机8卡 RTX 5880 Ada，训练7B", 8),
])
def test_rtx_5880_ada_is_read_as_the_card_with_its_count(question, count):
    s = _setup(question)
    assert s["gpu"] == "RTX 5880 Ada 48GB" and s["gpu_memory_gb"] == 48 and s["gpu_count"] == count


@pytest.mark.parametrize("question,card", [
    ("8 x A00 40G, full fine-tune of a 7B model, DDP or FSDP?", "A100 40GB SXM"),   # a digit left out, the size decides
    ("4 A10O 80G cards, LoRA on Llama-2-13B", "A100 80GB SXM"),                       # a letter O for a zero
    ("two H1OO for a 7B full fine-tune", "H100 80GB SXM"),
    ("8张A00 40G，全参微调7B模型", "A100 40GB SXM"),
    ("4张A10O 80G 训练7B模型", "A100 80GB SXM"),
    ("两张H1OO，全参微调Qwen2.5-7B", "H100 80GB SXM"),
])
def test_a_card_typed_with_one_slip_is_read_with_a_note(question, card):
    p = parse_conversation(question)
    assert p.setup.gpu == card
    assert any(n.code == "card_typo" and n.values["name"] == card for n in p.notes)


@pytest.mark.parametrize("question", [
    "A00 80G x 4, full fine-tune of a 13B model",  # A100 or A800: both have an 80 GB card
    "4 x A00 80GB cards for a 7B LoRA",
    "4张A00 80G，训练13B模型",
])
def test_a_slip_with_several_readings_is_asked_not_picked(question):
    p = parse_conversation(question)
    assert p.setup.gpu is None and p.setup.gpu_memory_gb == 80  # computed on the written size
    note = next(n for n in p.notes if n.code == "card_typo_options")
    assert {"A100 80GB SXM", "A800 80GB SXM"} <= set(note.values["options"])


@pytest.mark.parametrize("question", [
    "an A10 24GB for LoRA on a 7B model", "we use bf16 and fp32 with zero3 on 8 A100",
    "version v10 of the script, 4 x A100 80GB", "单卡A10 24G 微调7B",
])
def test_real_cards_and_other_tokens_are_not_read_as_typos(question):
    p = parse_conversation(question)
    assert not any(n.code.startswith("card_typo") for n in p.notes)


MODELS = [  # (name as written, published size in billions)
    ("CPM-2", 11.0), ("cpm2", 11.0), ("CPM-1", 2.6), ("CPM-Generate", 2.6), ("cpm-bee-10b", 10.0),
    ("VoxCPM2", 2.0), ("openbmb/VoxCPM-0.5B", 0.5), ("Aquila2-34B", 34.0), ("starcoderbase-7b", 7.0),
    ("santacoder", 1.1), ("CodeQwen1.5-7B", 7.25), ("GLM-130B", 130.0), ("XVERSE-13B", 13.0),
    ("Skywork-13B-base", 13.0), ("TeleChat-7B", 7.0), ("Orion-14B-Chat", 14.0), ("intfloat/e5-large", 0.335),
    # families issue 24 lists, present before: a rename must not drop them
    ("chatglm2-6b", None), ("internlm2-chat-7b", None), ("minicpm-v-2.6", None), ("yi-34b", None),
    ("deepseek-r1-distill-qwen-7b", None), ("qwen2.5-coder-7b", None), ("llava-1.5-7b", None), ("mpt-30b", None),
    ("falcon-40b", None), ("pythia-6.9b", None), ("opt-6.7b", None), ("bloom-7b1", None), ("t5-11b", None),
]


@pytest.mark.parametrize("name,size", MODELS)
def test_model_families_are_in_the_catalog(name, size):
    spec = lookup_model(name)
    if size is not None:
        assert spec.params_b == pytest.approx(size, rel=0.02)


def test_an_unknown_name_is_still_refused():
    with pytest.raises(UnknownNameError):
        lookup_model("zorblax-9000")


@pytest.mark.parametrize("question,model", [
    ("Fine-tune CPM-2 on 8 V100 32G with model parallel 8: how much memory per card?", "CPM-2"),
    ("VoxCPM2 fine-tuning on 4 RTX 4090 runs out of memory", "VoxCPM2"),
    ("Can I train SantaCoder on a single T4?", "SantaCoder"),
    ("CPM-2 用 8 张 V100 训练需要多大显存？", "CPM-2"),
    ("用 VoxCPM2 微调，两张4090 够吗", "VoxCPM2"),
    ("MiniCPM-2B 在一张3090上能全参微调吗", "MiniCPM-2B"),
])
def test_the_new_models_are_read_from_questions(question, model):
    p = parse_conversation(question)
    assert p.setup.model == model
