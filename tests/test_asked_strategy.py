""""Should I use X?" (issue 12, the asked question first): yes or no, with X's best configuration
beside the recommended one, in both languages."""

from __future__ import annotations

import pytest

from bot import ask
from bot.understand.intent import asked_strategy


@pytest.mark.parametrize("text, strategy", [
    ("should I use HYBRID_SHARD for 13B on 2 nodes of 8 H100?", "fsdp_hybrid_shard"),
    ("Llama-2-7B全参微调，8张A100 80G，要不要用ZeRO-3？", "fsdp_full_shard"),
    ("Should we use CPU offload for Llama-2-7B on 8x A100 40GB?", "fsdp_full_shard_offload"),
    ("Do I need DDP here?", "ddp"),
    ("DDP or FSDP for Llama-2-7B?", None),  # a comparison, not a yes/no about one
    ("I use HSDP on 2 nodes and it is slow", None),  # reported, not asked
])
def test_the_one_strategy_a_yes_no_question_asks_about(text, strategy):
    assert asked_strategy(text) == strategy


def test_the_pick_is_a_yes():
    answer = ask("Should I use DDP for GPT-2 on 8x A100 80GB?")
    assert answer.recommendation.strategy == "ddp"
    assert answer.sections.direct_answer.startswith("Yes: DDP is the pick here")


def test_a_strategy_that_does_not_fit_is_a_no_with_its_figure():
    answer = ask("Should I use DDP for Llama-2-7B on 8x A100 40GB?")
    assert answer.numbers["memory.ddp.fits"] is False
    assert answer.sections.direct_answer.startswith("No: DDP does not fit")


def test_a_slower_strategy_is_a_no_with_both_throughputs():
    answer = ask("Should we use CPU offload for Llama-2-7B on 8x A100 40GB?")
    direct = answer.sections.direct_answer
    assert direct.startswith("No:") and "fits but is estimated at" in direct
    assert answer.recommendation.strategy != "fsdp_full_shard_offload"


def test_within_the_tolerance_it_says_the_simpler_one_is_preferred_in_chinese():
    answer = ask("Llama-2-7B全参微调，8张A100 80G，要不要用ZeRO-3？")
    assert answer.language == "zh"
    assert answer.sections.direct_answer.startswith(("可以，但不必", "是的", "不建议"))


@pytest.mark.parametrize("question, first", [
    ("Can I fine-tune Llama-2-7B on 8x A100 80GB?", "Yes: "),
    ("Is it possible to fully fine-tune Llama-2-70B on 2x RTX 4090?", "No: nothing fits"),
    ("llama2 7B/13B 全参微调，4张A100 40G 够吗", "够："),
])
def test_can_i_is_answered_yes_or_no_first(question, first):
    answer = ask(question)
    assert answer.sections.direct_answer.startswith(first)
    if first.startswith(("Yes", "够")):  # the configuration named fits by the answer's own table
        chosen = next(r for r in answer.sections.table if r.chosen)
        assert chosen.fits
