"""Batch e (first_contact.md classes 9 and 10): listed alternatives are not a contradiction, a real
contradiction in the asker's own text is computed on the per-card figure written and said in one
line with one question, and "inference" inside a training thread is a training question.
Phrasings of our own, both languages, none a thread's words."""

from __future__ import annotations

import pytest

from bot import ask
from bot.parse import parse_conversation
from evals.harness import Case
from evals.metrics import check_calc_citations, check_number_traceability


def _checked(question: str):
    answer = ask(question)
    case = Case(id="t", turns=[question])
    assert check_number_traceability(case, answer).passed, check_number_traceability(case, answer).detail
    assert check_calc_citations(case, answer).passed, check_calc_citations(case, answer).detail
    return answer


# --- 9b. a card named with a size it is not sold with: computed on the written per-card size --------

CARD_SIZE_CONTRADICTIONS = [
    ("My RTX 3090 only has 11GB, and I have 8 of them: can I do a full fine-tune of a 6B model?", 11),
    ("We run 4 x A100 24GB; LoRA on Llama-2-13B, DDP or FSDP?", 24),
    ("an H100 with 40GB here, two of them, 7B full fine-tune: which strategy?", 40),
    ("我的4090只有12G显存，两张卡，LoRA 微调 7B 用什么策略？", 12),
    ("8张A100 32G，全参微调 Qwen2.5-7B，DDP 还是 FSDP？", 32),
    ("3090显卡 4张，每张10G，训练 7B 模型够吗", 10),
]


@pytest.mark.parametrize("question,memory", CARD_SIZE_CONTRADICTIONS)
def test_a_card_with_a_size_it_is_not_sold_with_is_read_as_the_written_size(question, memory):
    parsed = parse_conversation(question)
    assert parsed.setup.gpu_memory_gb == memory and parsed.setup.gpu is None
    assert not parsed.problems
    assert [c.field for c in parsed.contradictions] == ["gpu_memory_gb"]
    assert [n.values["value"] for n in parsed.notes if n.code == "contradiction_computed"] == [f"{memory} GB"]


@pytest.mark.parametrize("question,memory", [CARD_SIZE_CONTRADICTIONS[i] for i in (0, 1, 3, 4)])
def test_the_contradiction_is_answered_with_one_line_and_one_question(question, memory):
    answer = _checked(question)
    assert answer.status != "invalid" and answer.setup["gpu_memory_gb"] == memory
    line = next(n for n in answer.sections.notices if f"{memory} GB" in n and "`" in n)
    assert line.endswith(("?", "？")) and line.count("?") + line.count("？") == 1
    assert line in answer.text  # in the short form, not folded away
    assert "this setup has problems" not in answer.text.lower() and "先修正再计算" not in answer.text


@pytest.mark.parametrize("question", [
    "a 12B model on -8 GPUs, A100 80GB",
    "7B模型，每卡显存 -80G",
    "Llama-2-7B, 70B params, 8 A100",  # the catalog's model and a size far from it stay a problem
])
def test_truly_unusable_values_still_get_a_clear_message(question):
    parsed = parse_conversation(question)
    assert parsed.problems


@pytest.mark.parametrize("question", [
    "Llama-2-7B, 8x A100 80GB, 单卡40G还是80G都行",
    "8 x H100 NVL 96GB, 34B LoRA",         # a variant within 3 % of the catalog's card
    "一张H100显卡，96G显存，全参数微调32B",
    "8x A100 40GB, Llama-2-13B full fine-tune",
])
def test_a_card_and_its_own_size_is_no_contradiction(question):
    parsed = parse_conversation(question)
    assert not any(n.code == "contradiction_computed" for n in parsed.notes)


# --- 10. "inference" in a quoted message, then a training question ----------------------------------

@pytest.mark.parametrize("question", [
    "The loader warns: \"this option is meant for inference only\". How can I train a 13B model on 4 GPUs?",
    "Docs say low_cpu_mem_usage is for inference. What should I use to fine-tune Llama-2-13B on several A100s?",
    "Got 'generation config is only used at inference time' in the log. How do I run full fine-tuning on two nodes?",
    "报了一个警告：该参数只用于推理。请问怎么用多张卡微调 13B 模型？",
    "文档里写着 device_map 仅限推理使用。那多卡训练 Qwen2.5-14B 应该怎么做？",
    "日志提示“推理模式下不支持梯度”。想问怎样在8张卡上全参微调7B？",
])
def test_an_inference_word_outside_the_question_leaves_a_training_question(question):
    parsed = parse_conversation(question)
    assert parsed.intent != "out_of_scope" and "inference" not in parsed.topics
    assert any(n.code == "inference_quoted" for n in parsed.notes)


@pytest.mark.parametrize("question", [
    "How do I serve a 70B model on 4 A100s for inference?",
    "What is the fastest way to run inference with Llama-2-13B on two 4090s?",
    "How much GPU memory does serving Qwen2.5-72B with vLLM need?",
    "怎么用两张4090部署 Qwen2.5-72B 做推理？",
    "推理的时候 7B 模型要多少显存？",
    "vLLM 多卡推理怎么设置 tensor_parallel_size？",
])
def test_a_question_about_inference_itself_stays_out_of_scope(question):
    assert parse_conversation(question).intent == "out_of_scope"


def test_the_quoted_inference_answer_is_a_training_answer():
    answer = _checked("device_map='auto' should be used for inference only. How do I train a 13B model on several GPUs?")
    assert answer.status != "out_of_scope"
    assert not any("vllm" in n.lower() for n in answer.sections.reasons)


# --- 9a. alternatives the asker benchmarked or weighs: never a contradiction ------------------------

@pytest.mark.parametrize("question,largest", [
    ("We benchmarked 12 billion, 6 billion and 2 billion parameter GPT models on one DGX node: TP or PP?", 12),
    ("our runs used 1.3 billion and 2.7 billion and 6.7 billion models; which strategy scales?", 6.7),
    ("We tried 3B, 7B and 14B models on 8 A100 80GB, which sharding should we use?", 14),
    ("我们比较了 7B、13B 和 34B 的模型，8 张 A100 80G 用 DDP 还是 FSDP？", 34),
    ("测过 1B、3B、8B 三个尺寸，在 4 张 H100 上怎么选并行策略？", 8),
    ("分别试了 6B 和 13B 两个模型，张量并行和流水线并行哪个快？", 13),
])
def test_listed_model_sizes_are_alternatives_not_a_contradiction(question, largest):
    parsed = parse_conversation(question)
    assert not parsed.problems and not parsed.contradictions
    assert parsed.setup.params_b == largest and "larger_of_two_sizes" in parsed.notices


@pytest.mark.parametrize("question", [
    "We benchmarked 10 billion, 4 billion and 1 billion params BERT on a DGX: is TP or PP faster?",
    "a 20B Bert on 8 A100 80GB, DDP or FSDP?",
    "一个 6B 的 bert 模型，8 张 A100 80G 用什么策略？",
])
def test_a_family_named_without_its_size_takes_the_size_written(question):
    parsed = parse_conversation(question)
    assert not parsed.problems and parsed.setup.model is None and parsed.setup.params_b
    assert any(n.code == "family_sized_as_written" for n in parsed.notes)
    assert ask(question).status != "invalid"


CARD_CHOICES = [
    ("Should we rent A100 or H100 for a full fine-tune of a 7B model on 8 GPUs?", {"A100", "H100"}),
    ("H100 vs H200 for LoRA on Llama-2-70B, 8 cards: which one and which strategy?", {"H100", "H200"}),
    ("4 GPUs: RTX 4090 or RTX 5880 Ada for a 13B LoRA?", {"RTX 4090", "RTX 5880 Ada"}),
    ("8 张卡全参微调 7B，A100 还是 H100？", {"A100", "H100"}),
    ("买 L40S 还是 A800？4 张卡训练 13B 模型 LoRA", {"L40S", "A800"}),
    ("两张卡，RTX 4090 或者 RTX 5880 Ada，跑 7B 全参够吗", {"RTX 4090", "RTX 5880 Ada"}),
]


@pytest.mark.parametrize("question,cards", CARD_CHOICES)
def test_listed_cards_get_a_line_each(question, cards):
    answer = _checked(question)
    assert answer.status != "invalid"
    listed = [r for r in answer.sections.reasons if "GiB" in r and any(r.startswith(c) for c in cards)]
    assert {c for c in cards if any(r.startswith(c + ",") or r.startswith(c + "，") for r in listed)} == cards, \
        answer.sections.reasons


COUNT_CHOICES = [
    ("Full fine-tune of a 7B model on 4 or 8 A100 80GB GPUs: DDP or FSDP?", (4, 8)),
    ("LoRA on Llama-2-13B with 2 or 4 cards of H100, which strategy?", (2, 4)),
    ("Is 8 vs 16 GPUs of A100 80GB worth it for a 13B full fine-tune?", (8, 16)),
    ("4张还是8张A100 80G训练13B模型，用DDP还是FSDP？", (4, 8)),
    ("用 2 张或者 4 张 4090 做 7B 的 LoRA，选什么策略？", (2, 4)),
    ("8卡还是16卡 H100 全参微调 34B？", (8, 16)),
]


@pytest.mark.parametrize("question,counts", COUNT_CHOICES)
def test_listed_gpu_counts_get_a_line_each(question, counts):
    parsed = parse_conversation(question)
    assert not parsed.contradictions and parsed.setup.gpu_count == counts[0]
    answer = _checked(question)
    lines = [r for r in answer.sections.reasons if "GiB" in r]
    for count in counts:
        assert any(r.startswith((f"{count} x ", f"{count} × ")) for r in lines), answer.sections.reasons
