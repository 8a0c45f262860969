"""Answers to questions that list alternatives or name a failing and a working run (issue 24; first-
contact batches c/d): never "This setup has problems", a line per listed card size, every figure
traceable and every calc citation recomputable. Phrasings of our own, both languages."""

from __future__ import annotations

import pytest

from bot import ask
from evals.harness import Case
from evals.metrics import check_calc_citations, check_number_traceability


def _checked(question: str):
    answer = ask(question)
    case = Case(id="t", turns=[question])
    assert check_number_traceability(case, answer).passed, check_number_traceability(case, answer).detail
    assert check_calc_citations(case, answer).passed, check_calc_citations(case, answer).detail
    return answer


@pytest.mark.parametrize("question", [
    "how many A100s does fine-tuning 7B, 32B LLMs take?",
    "全参微调 7B、32B 的模型分别要几张A100？",
    "either 13B or 34B, how many H100s do I need?",
])
def test_listed_model_sizes_are_answered_not_called_invalid(question):
    answer = _checked(question)
    assert answer.status != "invalid"


@pytest.mark.parametrize("question, sizes", [
    ("8xA100 (40GB) or 8xA100 (80GB) for Llama-2-13B full fine-tuning?", (40, 80)),
    ("Llama-2-7B 全参，8张A100 40G还是80G？", (40, 80)),
    ("Qwen2.5-7B LoRA，4张 A100，40G 或者 80G 都可以，用哪个策略？", (40, 80)),
])
def test_listed_card_sizes_get_a_line_each(question, sizes):
    answer = _checked(question)
    assert answer.status != "invalid"
    lines = [r for r in answer.sections.reasons if " GB" in r and ("DDP" in r)]
    for size in sizes:
        assert any(f"x {size} GB" in r or f"× {size} GB" in r for r in lines), answer.sections.reasons


@pytest.mark.parametrize("question, count", [
    ("Llama-2-7B LoRA works on 2 GPUs but OOMs on 4 A100 40GB, why?", 4),
    ("Qwen2.5-7B 全参微调，单卡 A100 80G 能跑，八卡就 OOM，为什么？", 8),
])
def test_the_failing_run_is_computed_and_the_note_says_so(question, count):
    answer = _checked(question)
    assert answer.setup["gpu_count"] == count
    assert any("`" in n and ("fail" in n or "失败" in n) for n in answer.sections.notices), answer.sections.notices
