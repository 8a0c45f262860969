"""The simulator's fused cross-entropy (``loss_impl="fused"``): the emulation computes the same loss
and gradient as ``F.cross_entropy``, and its simulated peak agrees with the calculator's fused term."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from bot.bench.simulate import SimConfig, SimError, fused_loss_fn, simulate_batch
from bot.calc import estimate_setup
from bot.core.setup import TrainingSetup


def test_fused_loss_emulation_is_cross_entropy():
    torch.manual_seed(0)
    logits = torch.randn(2, 48, 97, dtype=torch.float64, requires_grad=True)
    labels = torch.randint(0, 97, (2, 48))
    fused = fused_loss_fn(logits, labels, blocks=5)  # 96 rows in uneven blocks
    fused.backward()
    grad = logits.grad.clone()
    logits.grad = None
    reference = F.cross_entropy(logits.flatten(0, 1), labels.flatten())
    reference.backward()
    assert fused.item() == pytest.approx(reference.item(), rel=1e-6)  # logsumexp in fp32
    assert torch.allclose(grad, logits.grad, atol=1e-7)


def test_fused_loss_is_a_simulated_option():
    cfg = SimConfig(model="gpt2", gpu_count=2, strategy="ddp", seq_len=128, loss_impl="fused")
    assert cfg.normalized().loss_impl == "fused"
    assert cfg.key("2.x") != SimConfig(model="gpt2", gpu_count=2, strategy="ddp", seq_len=128).key("2.x")
    with pytest.raises(SimError, match="loss_impl"):
        SimConfig(model="gpt2", gpu_count=2, strategy="ddp", loss_impl="liger").normalized()


@pytest.mark.slow
def test_fused_loss_against_the_calculator():
    # Llama-3.2-1B (128k vocabulary: the logits term matters), 8 GPUs, FSDP, seq 1024, micro-batch 2;
    # docs/calc.md: simulate / calc 7.237 / 7.120 GiB fused, 8.584 / 8.588 standard (~30 s)
    base = dict(gpu_count=8, seq_len=1024, micro_batch=2, precision="bf16-mixed")
    opts = [dict(loss_impl="fused"), dict(loss_impl="standard")]
    sims = simulate_batch([SimConfig(model="llama3.2-1b", strategy="fsdp_full_shard", **base, **o) for o in opts])
    for o, sim in zip(opts, sims, strict=True):
        assert not isinstance(sim, Exception), sim
        calc = estimate_setup(TrainingSetup(model="llama3.2-1b", gpu_memory_gb=80, **base, **o))
        assert calc.memory["fsdp_full_shard"].total_gib == pytest.approx(sim.peak_gib, rel=0.03), o
    assert sims[0].peak_gib < sims[1].peak_gib - 1.0  # the fused loss drops the fp32 logits
