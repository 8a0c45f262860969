"""evals/bench_calc_speed.py's own sanity check holds: the closed-form maximum micro-batch equals a
one-at-a-time search over the same (reserved) memory model, run options included (issue 26)."""

from __future__ import annotations

from bot.core.setup import TrainingSetup, resolve_setup
from evals.bench_calc_speed import SETUPS, closed_form_mismatches


def test_closed_form_matches_the_naive_search_on_the_benchmark_setups():
    assert closed_form_mismatches([resolve_setup(s) for s in SETUPS]) == []


def test_closed_form_matches_with_run_options_that_move_memory():
    setups = [TrainingSetup(model="llama3.1-8b", gpu="h100", gpu_count=8, optimizer_impl="fused",
                            ddp_bucket_view=True, seq_len=4096),
              TrainingSetup(model="llama2-13b", gpu="a100-80gb", gpu_count=8, activation_checkpointing=True,
                            checkpointing_policy="selective_op", grad_accum_steps=4)]
    assert closed_form_mismatches([resolve_setup(s) for s in setups]) == []
