"""The DTensor TP x FSDP2 simulator (bot/bench/simulate_tp.py) against the TP calculator."""

from __future__ import annotations

import pytest

from bot.bench.simulate import SimError
from bot.bench.simulate_tp import TPSimConfig, simulate_tp


@pytest.mark.parametrize("cfg, words", [
    (TPSimConfig("Llama-2-7B", dp=2, tp=3), "divide the heads"),
    (TPSimConfig("Llama-2-7B", dp=2, tp=2, seq_len=2049), "divisible by tp"),
    (TPSimConfig("Mixtral-8x7B", dp=2, tp=2), "dense Llama"),
    (TPSimConfig("Llama-2-7B", dp=0, tp=2), ">= 1"),
])
def test_configs_the_simulator_cannot_run_are_refused_before_it_starts(cfg, words):
    with pytest.raises(SimError, match=words):
        cfg.check()


@pytest.mark.slow
def test_tp_simulation_matches_the_calculator_on_a_2d_mesh():
    from evals.bench_tp_simulator import calculated, loss_parallel_surplus_gib

    cfgs = [TPSimConfig("Llama-2-7B", dp=2, tp=2, seq_len=2048, micro_batch=2),
            TPSimConfig("Llama-2-7B", dp=2, tp=2, seq_len=2048, micro_batch=2, sequence_parallel=False)]
    results = simulate_tp(cfgs)
    for cfg, sim in zip(cfgs, results, strict=True):
        assert not isinstance(sim, SimError), sim
        # TP x FSDP: each GPU owns 1/(dp x tp) of the fp32 weights (norms replicated over TP)
        assert sim.params_gib == pytest.approx(6.74e9 * 4 / 4 / 2**30, rel=0.01)
        calc = calculated(cfg)
        # the simulator runs a local cross-entropy for loss parallelism (see simulate_tp)
        calc_gib = calc.total_gib - loss_parallel_surplus_gib(cfg)
        assert abs(calc_gib - sim.peak_gib) / sim.peak_gib <= 0.05  # issue 29's target
    # sequence parallelism saves activation memory on the same mesh
    assert results[0].peak_gib < results[1].peak_gib
