"""FSDP2 gradient accumulation with and without a reduce-scatter every micro-step (issue 26).

``set_requires_gradient_sync(False)`` on the micro-steps before the last (verl, torchtitan's
``--training.gradient_accumulation_steps`` with no sync) keeps every parameter's unsharded gradient, in
the reduce dtype, on each GPU until the sync step; the default syncs every micro-step."""

from __future__ import annotations

import pytest

from bot.calc import estimate_setup
from bot.calc.memory import GIB
from bot.core.setup import TrainingSetup, resolve_setup

FSDP = ("fsdp_full_shard", "fsdp_shard_grad_op", "fsdp_hybrid_shard")


def _est(**kw):
    base = dict(model="llama3.1-8b", gpu="h100", gpu_count=8, grad_accum_steps=4, seq_len=4096,
                activation_checkpointing=True)
    return estimate_setup(TrainingSetup(**{**base, **kw}))


@pytest.mark.parametrize("strategy", FSDP)
@pytest.mark.parametrize("precision, reduce_bytes", [("bf16-mixed", 4), ("fp32", 4), ("bf16", 2)])
def test_no_sync_keeps_an_unsharded_gradient_in_the_reduce_dtype(strategy, precision, reduce_bytes):
    every = _est(precision=precision).memory[strategy]
    last = _est(precision=precision, grad_sync="last_micro_step").memory[strategy]
    params = 8.03e9
    added = (last.total_gib - every.total_gib) * GIB
    assert added == pytest.approx(reduce_bytes * params * (1 - 1 / 8), rel=0.08)


def test_no_sync_changes_nothing_without_accumulation():
    one = _est(grad_accum_steps=1)
    other = _est(grad_accum_steps=1, grad_sync="last_micro_step")
    for s in FSDP:
        assert one.memory[s].total_gib == other.memory[s].total_gib


def test_no_sync_reduce_scatters_once_per_optimizer_step():
    every, last = _est(), _est(grad_sync="last_micro_step")
    for s in FSDP:
        assert last.comm[s].gb_per_step < every.comm[s].gb_per_step
    assert last.comm["ddp"].gb_per_step == every.comm["ddp"].gb_per_step


def test_the_mode_is_stated_as_assumed_only_when_accumulating():
    assert "grad_sync" in resolve_setup(TrainingSetup(model="llama3.1-8b", gpu="h100", gpu_count=8,
                                                      grad_accum_steps=4)).assumed
    assert "grad_sync" not in resolve_setup(TrainingSetup(model="llama3.1-8b", gpu="h100", gpu_count=8)).assumed
