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
