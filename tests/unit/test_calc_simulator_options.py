"""The run options the simulator covers (fused / for-loop AdamW, DDP bucket view): calculator and
simulator agree (bot/bench/simulate.py under FakeTensorMode, bot/calc)."""

from __future__ import annotations

import pytest

from bot.bench.simulate import SimConfig, SimError, simulate_batch
from bot.calc import estimate_setup
from bot.core.setup import TrainingSetup

OPTIONS = [{}, {"optimizer_impl": "fused"}, {"optimizer_impl": "forloop"}, {"ddp_bucket_view": True}]


def test_run_options_are_validated_and_leave_old_cache_keys_alone():
    base = SimConfig(model="gpt2", gpu_count=2, strategy="ddp", seq_len=128)
    assert base.key("2.x") == SimConfig(model="gpt2", gpu_count=2, strategy="ddp", seq_len=128,
                                        optimizer_impl="foreach", ddp_bucket_view=False).key("2.x")
    assert base.key("2.x") != SimConfig(model="gpt2", gpu_count=2, strategy="ddp", seq_len=128,
                                        optimizer_impl="fused").key("2.x")
    with pytest.raises(SimError, match="optimizer_impl"):
        SimConfig(model="gpt2", gpu_count=2, strategy="ddp", optimizer_impl="turbo").normalized()
    # bucket view is a DDP option: FSDP configs normalise it away (one cache entry)
    fsdp = SimConfig(model="gpt2", gpu_count=2, strategy="fsdp_full_shard", seq_len=128, ddp_bucket_view=True)
    assert fsdp.normalized().ddp_bucket_view is False


@pytest.mark.slow
def test_calculator_matches_the_simulator_for_optimizer_impl_and_bucket_view():
    cfgs = [SimConfig(model="gpt2", gpu_count=2, strategy="ddp", seq_len=256, micro_batch=2,
                      precision="bf16-mixed", **kw) for kw in OPTIONS]
    sims = simulate_batch(cfgs)
    for kw, sim in zip(OPTIONS, sims, strict=True):
        assert not isinstance(sim, Exception), sim
        calc = estimate_setup(TrainingSetup(model="gpt2", gpu_memory_gb=80, gpu_count=2, seq_len=256,
                                            micro_batch=2, precision="bf16-mixed", **kw)).memory["ddp"]
        assert calc.total_gib == pytest.approx(sim.peak_gib, rel=0.03), kw  # docs/calc.md: within 2.1 %
    # fused/for-loop AdamW and bucket view each drop a parameter-sized fp32 copy from the peak
    assert sims[1].peak_gib < sims[0].peak_gib and sims[3].peak_gib < sims[0].peak_gib


@pytest.mark.slow
def test_checkpointing_policies_and_chunked_loss_against_the_simulator():
    # generic 1B, 8 GPUs, FSDP full shard, bf16-mixed, seq 1024, micro-batch 2 (docs/calc.md table)
    opts = [dict(activation_checkpointing=True),
            dict(activation_checkpointing=True, checkpointing_policy="selective_op"),
            dict(activation_checkpointing=True, checkpointing_policy="every_k", checkpoint_every=2),
            dict(loss_impl="chunked")]
    base = dict(gpu_count=8, seq_len=1024, micro_batch=2, precision="bf16-mixed")
    sims = simulate_batch([SimConfig(model="1b", strategy="fsdp_full_shard", **base, **o) for o in opts])
    calcs = [estimate_setup(TrainingSetup(model="1b", gpu_memory_gb=80, **base, **o)).memory["fsdp_full_shard"]
             for o in opts]
    for o, sim, calc in zip(opts, sims, calcs, strict=True):
        assert not isinstance(sim, Exception), sim
        assert calc.total_gib == pytest.approx(sim.peak_gib, rel=0.08), o
    # both order the policies the same way: full < selective op < every 2nd block < none
    assert sims[0].peak_gib < sims[1].peak_gib < sims[2].peak_gib < sims[3].peak_gib
    assert calcs[0].total_gib < calcs[1].total_gib < calcs[2].total_gib < calcs[3].total_gib
