"""A setup FSDP alone cannot carry gets the ladder's plan past it (issue 29): a long-context run
hears of context parallelism with the figure that forces it; a setup FSDP + checkpointing carries
gets no such line."""

from __future__ import annotations

import pytest

from bot.assistant import answer_for_setup
from bot.core.setup import TrainingSetup
from evals.consistency import contradictions


@pytest.mark.parametrize("lang,words", [("en", "context parallelism"), ("zh", "上下文并行")])
def test_a_long_context_run_hears_of_context_parallelism(lang, words):
    setup = TrainingSetup(model="Qwen2.5-32B", gpu="A100 80GB SXM", gpu_count=40, nodes=5, gpus_per_node=8,
                          finetune="lora", seq_len=204_800)
    answer = answer_for_setup(setup, lang, with_knowledge=False)
    line = next(x for x in answer.sections.what_ifs if words in x)
    assert answer.numbers["parallel.cp"] > 1 and answer.numbers["parallel.total_gib"] <= answer.numbers["parallel.usable_gib"]
    assert str(answer.numbers["parallel.cp"]) in line
    assert contradictions(answer) == []


@pytest.mark.parametrize("setup", [
    TrainingSetup(model="Llama-2-7B", gpu="A100 80GB SXM", gpu_count=8),
    TrainingSetup(model="Llama-2-13B", gpu="A100 80GB SXM", gpu_count=16, nodes=2, gpus_per_node=8),
    TrainingSetup(model="Qwen2.5-7B", gpu="H100 80GB SXM", gpu_count=4, seq_len=65_536),  # fewer than 8 GPUs
])
def test_no_plan_past_fsdp_where_it_is_not_needed(setup):
    answer = answer_for_setup(setup, "en", with_knowledge=False)
    assert not [k for k in answer.numbers if k.startswith("parallel.")]
