""""What can I train on 2x 3090?" — cards named, no model: the answer leads with the largest model
each method fits (bot.sizing), its figures the calculator's and its citation recomputed
(evals/metrics.py). Phrasings of our own, both languages."""

from __future__ import annotations

import pytest

from bot import ask
from bot.core.setup import TrainingSetup
from bot.sizing import METHODS, SIZES, size_limits
from evals.harness import Case
from evals.metrics import check_calc_citations, check_number_traceability


@pytest.mark.parametrize("question,count", [
    ("我有两张3090，能训练多大的模型？", 2),
    ("What's the biggest model I can fine-tune on 4x A100 40GB?", 4),
    ("8张V100 32G 能全参微调吗？", 8),
    ("With a single RTX 4090, what size of LLM can I train?", 1),
    ("手上有 4 张 A800 80G，最大能训多大的模型？", 4),
])
def test_cards_without_a_model_get_the_largest_size_per_method(question, count):
    answer = ask(question)
    n = answer.numbers
    assert n["sizes.gpu_count"] == count
    full, lora, qlora = (n.get(f"sizes.{m}.max_params_b") for m in METHODS)
    assert qlora is not None and lora is not None and (full or 0) <= lora <= qlora  # the methods' order holds
    # the first paragraph after the reader's notes (quoted "> ..." lines) is the sizes sentence
    first = next(p for p in answer.text.strip().split("\n\n") if not p.startswith(">"))
    assert f"{qlora:g}B" in first and "QLoRA" in first, first
    assert "params_b" in answer.questions  # the model is still asked for, for exact figures
    case = Case(id="t", turns=[question])
    assert check_calc_citations(case, answer).passed, check_calc_citations(case, answer).detail
    assert check_number_traceability(case, answer).passed, check_number_traceability(case, answer).detail


def test_a_wrong_size_figure_is_caught_by_the_citation_check():
    answer = ask("What's the biggest model I can fine-tune on 4x A100 40GB?")
    answer.numbers["sizes.lora.max_params_b"] = 999.0
    assert not check_calc_citations(Case(id="t", turns=["q"]), answer).passed


def test_more_memory_never_lowers_a_limit():
    small = size_limits(TrainingSetup(gpu="RTX 3090", gpu_count=2))
    big = size_limits(TrainingSetup(gpu="A100 80GB", gpu_count=8))
    assert small is not None and big is not None
    for a, b in zip(small.limits, big.limits, strict=True):
        assert (a.max_params_b or 0) <= (b.max_params_b or 0)
        if a.max_params_b is not None:
            assert a.max_params_b in SIZES and a.total_gib <= a.usable_gib


@pytest.mark.parametrize("setup", [TrainingSetup(gpu="RTX 3090"), TrainingSetup(gpu_count=4)])
def test_nothing_is_computed_without_both_card_and_count(setup):
    assert size_limits(setup) is None
