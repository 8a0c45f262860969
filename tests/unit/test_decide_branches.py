"""The decision ladder (``bot.decide.decide`` over ``bot.evidence.evidence_for_resolved``), one test per branch, each checked
against the calculator's facts. The ladder itself (throughput, tolerance, checkpointing before
offload) is tested in tests/unit/test_decide.py.

Each case first asserts the memory facts that make it that branch (so a calculator change that
moves a case to another branch fails loudly here rather than silently testing something else).
"""

from __future__ import annotations

import pytest

from bot.calc import estimate
from bot.core.setup import TrainingSetup, resolve_setup
from bot.decide import MARGIN, decide
from bot.evidence import evidence_for_resolved


def run(**fields):
    resolved = resolve_setup(TrainingSetup(**fields))
    est = estimate(resolved)
    return resolved, est, decide(evidence_for_resolved(resolved, est))


def test_ddp_when_a_replica_fits_with_margin():
    _, est, adv = run(model="GPT-2", gpu="A100 80GB SXM", gpu_count=8)
    ddp = est.memory["ddp"]
    assert ddp.fits and ddp.total_gib <= MARGIN * ddp.usable_gib
    assert adv.strategy == "ddp" and adv.confidence == "high"
    codes = [r.code for r in adv.what_ifs]
    assert "ddp_mb_limit" in codes  # "if you need micro-batch above N, DDP runs out"


def test_lora_7b_fits_ddp():
    _, est, adv = run(model="Llama-2-7B", gpu="A100 80GB SXM", gpu_count=8, finetune="lora")
    assert est.memory["ddp"].fits
    assert adv.strategy == "ddp"


def test_a_sharded_strategy_when_ddp_does_not_fit():
    _, est, adv = run(model="Llama-2-7B", gpu="A100 40GB SXM", gpu_count=8)
    assert not est.memory["ddp"].fits and est.memory["fsdp_full_shard"].fits
    assert adv.strategy in ("fsdp_full_shard", "fsdp_shard_grad_op")
    assert {r.code for r in adv.reasons} >= {"ddp_too_big", "throughput"}
    assert "lora_ddp_fits" in {r.code for r in adv.what_ifs}


def test_shard_grad_op_on_pcie_when_it_fits_with_margin():
    _, est, adv = run(model="Llama-2-7B", gpu="A100 80GB PCIe", gpu_count=8)
    sgo = est.memory["fsdp_shard_grad_op"]
    assert not est.memory["ddp"].fits and sgo.fits and sgo.total_gib <= MARGIN * sgo.usable_gib
    assert adv.strategy == "fsdp_shard_grad_op"
    assert "fsdp_full_shard" in adv.alternatives


def test_nvlink_equal_throughput_prefers_the_simpler_shard_grad_op():
    # Issue 12: FULL_SHARD used to be picked on NVLink although SHARD_GRAD_OP fits with margin
    # and is as fast; the ladder now prefers SHARD_GRAD_OP within the tolerance and says so.
    _, est, adv = run(model="Llama-2-7B", gpu="A100 80GB SXM", gpu_count=8)
    assert est.memory["fsdp_shard_grad_op"].fits
    assert adv.strategy == "fsdp_shard_grad_op"


def test_hsdp_across_a_slow_link():
    _, est, adv = run(model="Llama-2-13B", gpu="A100 80GB SXM", nodes=2, gpus_per_node=8,
                      inter_node_link="ethernet", inter_node_gbps=25)
    assert est.memory["fsdp_hybrid_shard"].fits
    assert adv.strategy == "fsdp_hybrid_shard"
    assert "slow_inter_node" in {r.code for r in adv.reasons}


def test_fast_link_shards_across_nodes_and_mentions_hsdp():
    _, est, adv = run(model="Llama-2-13B", gpu="A100 80GB SXM", nodes=2, gpus_per_node=8,
                      inter_node_link="infiniband", inter_node_gbps=200)
    assert adv.strategy in ("fsdp_full_shard", "fsdp_shard_grad_op")
    assert "hsdp_if_slow" in {r.code for r in adv.what_ifs}


def _offload_only():
    """13B full fine-tune on two 24 GB cards with checkpointing: only offload fits on the GPU."""
    return dict(model="Llama-2-13B", gpu="RTX 4090 24GB", gpu_count=2, activation_checkpointing=True)


def test_offload_when_only_offload_fits():
    _, est, adv = run(**_offload_only(), cpu_ram_gb=1024)
    assert not est.memory["fsdp_full_shard"].fits and est.memory["fsdp_full_shard_offload"].fits
    assert est.memory["fsdp_full_shard_offload"].host_ram_gib <= 1024
    assert adv.strategy == "fsdp_full_shard_offload"
    assert "only_offload" in {r.code for r in adv.reasons}


def test_none_when_host_ram_is_too_small_for_offload():
    _, est, adv = run(**_offload_only(), cpu_ram_gb=16)
    assert est.memory["fsdp_full_shard_offload"].host_ram_gib > 16
    assert adv.strategy == "none"
    assert "host_ram_short" in {r.code for r in adv.reasons}


def test_none_lists_what_to_change():
    _, est, adv = run(model="Llama-2-70B", gpu="RTX 4090 24GB", gpu_count=8)
    assert not any(m.fits for m in est.memory.values())
    assert adv.strategy == "none" and adv.alternatives == []
    codes = {r.code for r in adv.what_ifs}
    assert codes & {"finetune_fits", "more_gpus", "checkpointing_fits"}, codes


def test_a_huge_micro_batch_becomes_a_smaller_one_with_gradient_accumulation():
    # Issue 12's ladder: gradient accumulation keeps the user's global batch; nothing fits at
    # micro-batch 4096, but a GPU-resident strategy fits at a smaller one (before any offload).
    _, est, adv = run(model="Llama-2-7B", gpu="A100 80GB SXM", gpu_count=8, finetune="lora", micro_batch=4096)
    assert not any(m.fits for m in est.memory.values())
    assert adv.strategy in ("ddp", "fsdp_shard_grad_op", "fsdp_full_shard")
    assert "accumulate" in {r.code for r in adv.reasons}


def test_single_gpu():
    _, est, adv = run(model="Llama-2-7B", gpu="RTX 4090 24GB", gpu_count=1, finetune="qlora")
    assert est.memory["ddp"].fits
    assert adv.strategy == "ddp" and adv.reasons[0].code == "single_gpu"


@pytest.mark.parametrize("fields", [
    dict(params_b=7, gpu_memory_gb=80, gpu_count=8),
    dict(params_b=1, gpu_memory_gb=24, gpu_count=2),
    dict(params_b=70, gpu_memory_gb=141, gpu_count=16, nodes=2, inter_node_link="ethernet", inter_node_gbps=100),
    dict(params_b=13, gpu_memory_gb=40, gpu_count=4, micro_batch=8),
])
def test_recommendation_always_fits(fields):
    """Whatever the branch, the recommended configuration (the setup as asked, or the variant the
    advice names: checkpointing, bucket view + fused AdamW) fits at the user's micro-batch."""
    from bot.evidence import evidence_for_resolved

    resolved, est, adv = run(**fields)
    ev = evidence_for_resolved(resolved, est)
    if adv.strategy != "none":
        chosen = ev.config(adv.strategy, adv.variant)
        assert chosen is not None and chosen.max_micro_batch >= 1
        if "accumulate" not in {r.code for r in adv.reasons}:  # else a smaller micro-batch, said so
            assert chosen.fits and chosen.max_micro_batch >= (resolved.setup.micro_batch or 1)
    for alt in adv.alternatives:
        assert any(c.fits or ("accumulate" in {r.code for r in adv.reasons} and c.max_micro_batch >= 1)
                   for c in ev.configs if c.strategy == alt)
