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
    # no GPU-resident row fits; the combined search's cheapest fit is offload, said with its host RAM
    ("Is it possible to fully fine-tune Llama-2-70B on 2x RTX 4090?", "No, not as asked"),
    ("llama2 7B/13B 全参微调，4张A100 40G 够吗", "够："),
])
def test_can_i_is_answered_yes_or_no_first(question, first):
    answer = ask(question)
    assert answer.sections.direct_answer.startswith(first)
    if first.startswith(("Yes", "够")):  # the configuration named fits by the answer's own table
        chosen = next(r for r in answer.sections.table if r.chosen)
        assert chosen.fits


def test_tokens_per_second_counts_every_accumulated_micro_batch():
    """A step with 8 accumulated micro-batches moves 8x the tokens: tokens/s per GPU must not drop 8x."""
    one = ask("Qwen2.5-14B full fine-tune on 8x A800 80GB, seq 4096, micro-batch 4, activation checkpointing on")
    eight = ask("Qwen2.5-14B full fine-tune on 8x A800 80GB, seq 4096, micro-batch 4, activation checkpointing on, "
                "gradient_accumulation_steps: 8")
    assert eight.setup["grad_accum_steps"] == 8
    key = "time.fsdp_full_shard.tokens_per_s_per_gpu"  # the calculator's figure at the asked micro-batch
    assert eight.numbers[key] > 0.8 * one.numbers[key]

    def row(answer):  # the table's figure (the decision's weighing)
        return next(r for r in answer.sections.table if r.strategy == "fsdp_full_shard" and r.fits)
    assert row(eight).tokens_per_s_per_gpu > 0.8 * row(one).tokens_per_s_per_gpu
