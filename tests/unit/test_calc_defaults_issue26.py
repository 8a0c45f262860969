"""Defaults that are what people run (issue 26): fp32 without TF32, H100 memory variants, DGX-class NICs."""

from __future__ import annotations

import pytest

from bot.calc import estimate_setup
from bot.core.setup import TrainingSetup, check_setup, resolve_setup

SPEED = "fsdp_full_shard"


def _tps(**kw) -> float:
    return estimate_setup(TrainingSetup(model="llama2-7b", gpu_count=8, **kw)).throughput[SPEED].tokens_per_s_per_gpu


@pytest.mark.parametrize("gpu, fp32_peak", [("a100-80gb", 19.5), ("h100", 67.0), ("a100-40gb", 19.5)])
def test_fp32_runs_at_the_non_tensor_core_peak_unless_tf32_is_stated(gpu, fp32_peak):
    plain = _tps(gpu=gpu, precision="fp32")
    tf32 = _tps(gpu=gpu, precision="fp32", tf32=True)
    bf16 = _tps(gpu=gpu, precision="bf16-mixed")
    assert plain < tf32 / 4  # PyTorch's default allow_tf32=False for matmuls: no tensor cores
    assert plain < bf16 / 8
    est = estimate_setup(TrainingSetup(model="llama2-7b", gpu=gpu, gpu_count=8, precision="fp32"))
    assert est.inputs["peak_tflops"] == pytest.approx(fp32_peak)
    assert "tf32" in est_assumed(gpu)


def est_assumed(gpu: str) -> tuple[str, ...]:
    return resolve_setup(TrainingSetup(model="llama2-7b", gpu=gpu, gpu_count=8, precision="fp32")).assumed


def test_tf32_is_not_assumed_for_16_bit_runs():
    assert "tf32" not in resolve_setup(TrainingSetup(model="llama2-7b", gpu="h100", gpu_count=8)).assumed


@pytest.mark.parametrize("memory", [94, 96])
def test_h100_memory_variants_can_be_entered(memory):
    setup = TrainingSetup(model="llama3.1-8b", gpu="h100", gpu_memory_gb=memory, gpu_count=8)
    assert check_setup(setup) == []  # no contradiction
    resolved = resolve_setup(setup)
    assert resolved.gpu.memory_gb == memory and resolved.gpu.bf16_tflops == 989
    assert resolved.gpu_memory_gb == memory


@pytest.mark.parametrize("gpu, memory", [("h100", 120), ("a100-80gb", 96), ("h100", 40)])
def test_other_memory_sizes_still_contradict_the_card(gpu, memory):
    problems = check_setup(TrainingSetup(model="llama3.1-8b", gpu=gpu, gpu_memory_gb=memory, gpu_count=8))
    assert [p.field for p in problems] == ["gpu_memory_gb"]


@pytest.mark.parametrize("gpu, per_gpu_gbps", [("h100", 400), ("h200", 400), ("a100-80gb", 200), ("a100-40gb", 200)])
def test_an_8_gpu_dgx_class_node_defaults_to_8_nics(gpu, per_gpu_gbps):
    resolved = resolve_setup(TrainingSetup(model="llama2-7b", gpu=gpu, gpu_count=16, nodes=2, gpus_per_node=8))
    assert resolved.inter_node_gbps == 8 * per_gpu_gbps
    assert "inter_node_gbps" in resolved.assumed


@pytest.mark.parametrize("kw", [dict(gpu="4090", gpus_per_node=8), dict(gpu="h100", gpus_per_node=4),
                                dict(gpu="h100", gpus_per_node=8, inter_node_link="ethernet")])
def test_other_nodes_keep_the_single_link_default(kw):
    nodes = 2
    resolved = resolve_setup(TrainingSetup(model="llama2-7b", gpu_count=nodes * kw["gpus_per_node"], nodes=nodes,
                                           **kw))
    assert resolved.inter_node_gbps in (200.0, 25.0)


def test_a_stated_nic_speed_wins():
    resolved = resolve_setup(TrainingSetup(model="llama2-7b", gpu="h100", gpu_count=16, nodes=2, gpus_per_node=8,
                                           inter_node_gbps=800))
    assert resolved.inter_node_gbps == 800
