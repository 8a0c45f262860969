"""Communication volume, compute time and step time (bot/calc/comm.py)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.calc import estimate_setup
from bot.calc.comm import BUS_EFFICIENCY, EXPOSED_FRACTION, HFU_BY_GENERATION, HFU_SIZE_SLOPE, step_seconds
from bot.catalog import lookup_model
from bot.core.setup import TrainingSetup
from bot.strategies import TRAINING_STRATEGIES

P7 = lookup_model("llama2-7b").params


def est(**kw):
    data = {"model": "llama2-7b", "gpu": "a100-80gb", "gpu_count": 8, **kw}
    return estimate_setup(TrainingSetup(**data))


def test_ddp_ring_all_reduce_volume():
    # 2(N-1)/N x gradient bytes; AMP gradients are fp32 (nccl-tests PERFORMANCE.md bus bytes)
    assert est().comm["ddp"].gb_per_step == pytest.approx(2 * 7 / 8 * P7 * 4 / 1e9)


@pytest.mark.parametrize("precision", ["fp32", "bf16"])
@pytest.mark.parametrize("gpus", [2, 8, 64])
def test_full_shard_moves_1_5x_ddp_when_dtypes_match(precision, gpus):
    e = est(precision=precision, gpu_count=gpus)
    full, ddp = e.comm["fsdp_full_shard"], e.comm["ddp"]
    assert full.gb_per_step / ddp.gb_per_step == pytest.approx(1.5)
    assert full.vs_ddp == pytest.approx(1.5)
    # SHARD_GRAD_OP skips the backward all-gather: same volume as DDP
    assert e.comm["fsdp_shard_grad_op"].vs_ddp == pytest.approx(1.0)


def test_mixed_precision_gathers_in_bf16_and_reduces_in_fp32():
    # FSDP2 MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=fp32) vs DDP's fp32 all-reduce:
    # (2 + 2 + 4) / (2 x 4) = 1.0 for full shard, (2 + 4) / 8 = 0.75 for SHARD_GRAD_OP
    e = est()
    assert e.comm["fsdp_full_shard"].vs_ddp == pytest.approx(1.0)
    assert e.comm["fsdp_shard_grad_op"].vs_ddp == pytest.approx(0.75)


def test_one_gpu_communicates_nothing():
    e = est(gpu_count=1)
    for s in TRAINING_STRATEGIES:
        assert e.comm[s].gb_per_step == 0 and e.comm[s].seconds_per_step == 0 and e.comm[s].vs_ddp == 1.0


def test_seconds_use_the_bus_bandwidth_of_the_link():
    e = est()
    nvlink = 300 * BUS_EFFICIENCY["nvlink"]  # A100 NVLink 3: 300 GB/s per direction
    assert e.comm["ddp"].seconds_per_step == pytest.approx(e.comm["ddp"].gb_per_step / nvlink)
    pcie = est(intra_node_link="pcie")
    assert pcie.comm["ddp"].seconds_per_step > 5 * e.comm["ddp"].seconds_per_step


def test_multi_node_flat_ring_runs_at_the_node_nic_speed():
    e = est(gpu_count=16, nodes=2, inter_node_link="ethernet", inter_node_gbps=100)
    nic = 100 / 8 * BUS_EFFICIENCY["network"]
    assert e.comm["ddp"].seconds_per_step == pytest.approx(e.comm["ddp"].gb_per_step / nic)


def test_hsdp_beats_flat_full_shard_over_slow_ethernet():
    e = est(gpu_count=16, nodes=2, inter_node_link="ethernet", inter_node_gbps=25)
    assert e.comm["fsdp_hybrid_shard"].seconds_per_step < e.comm["fsdp_full_shard"].seconds_per_step
    assert e.comm["fsdp_hybrid_shard"].seconds_per_step < e.comm["ddp"].seconds_per_step
    # on one node HSDP is full shard
    one = est()
    assert one.comm["fsdp_hybrid_shard"] == one.comm["fsdp_full_shard"]


def test_lora_all_reduces_only_adapters_but_fsdp_still_gathers_the_base():
    e = est(finetune="lora")
    assert e.comm["ddp"].gb_per_step < 0.2
    assert e.comm["fsdp_full_shard"].vs_ddp > 50


def test_compute_time_is_model_plus_recompute_flops_at_the_calibrated_hfu():
    # A100 is calibrated: hardware FLOPs (6N + 12 L h s, N without the input embedding, plus the
    # recomputed forward when checkpointing) at HFU_BY_GENERATION["ampere"] + size slope.
    e = est()
    model = lookup_model("llama2-7b")
    tokens = 2048
    n = P7 - model.vocab * model.hidden
    flops = tokens * (6 * n + 12 * model.n_layers * model.hidden * 2048)
    hfu = HFU_BY_GENERATION["ampere"] + HFU_SIZE_SLOPE * math.log10(P7 / 7e9)
    assert e.inputs["compute_seconds"] == pytest.approx(flops / (312e12 * hfu), rel=2e-3)
    ckpt = est(activation_checkpointing=True)
    assert ckpt.inputs["compute_seconds"] / e.inputs["compute_seconds"] == pytest.approx(4 / 3, rel=0.02)


def test_uncalibrated_gpu_uses_the_generic_mfu_and_a_stated_mfu_wins():
    # L40S: an Ada card whose peak per byte of bandwidth (419 FLOP/B) is far from the A100s'
    e = est(gpu="l40s", gpu_count=1, finetune="qlora")
    assert e.inputs["mfu_source"] == "default" and e.inputs["hfu"] is None
    stated = est(mfu=0.5)
    assert stated.inputs["mfu_source"] == "stated"
    # with a stated MFU the reported MFU of a compute-bound single GPU is that MFU
    one = est(mfu=0.5, gpu_count=1)
    assert one.throughput["ddp"].mfu == pytest.approx(0.5, rel=1e-3)


def test_step_time_overlaps_comm_with_compute():
    assert step_seconds(1.0, 0.5) == pytest.approx(1.0 + EXPOSED_FRACTION * 0.5)
    assert step_seconds(0.5, 2.0) == pytest.approx(2.0 + EXPOSED_FRACTION * 0.5)
    e = est()
    for s in TRAINING_STRATEGIES:
        assert e.time[s] >= max(e.inputs["compute_seconds"], e.comm[s].seconds_per_step)


def test_offload_is_slower_than_full_shard():
    e = est()
    assert e.time["fsdp_full_shard_offload"] > e.time["fsdp_full_shard"]


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 4096), st.sampled_from(["bf16-mixed", "bf16", "fp32"]))
def test_ddp_volume_grows_towards_twice_the_gradients(gpus, precision):
    e = est(gpu_count=gpus, precision=precision)
    grad_gb = P7 * (2 if precision == "bf16" else 4) / 1e9
    assert grad_gb <= e.comm["ddp"].gb_per_step < 2 * grad_gb


def test_numbers_are_flat_and_keyed_by_the_contract():
    numbers = est().numbers()
    for s in TRAINING_STRATEGIES:
        for f in ("params_gib", "grads_gib", "optimizer_gib", "activations_gib", "buffers_gib", "total_gib",
                  "fits", "max_micro_batch", "usable_gib", "host_ram_gib"):
            assert f"memory.{s}.{f}" in numbers
        for f in ("gb_per_step", "seconds_per_step", "vs_ddp"):
            assert f"comm.{s}.{f}" in numbers
        assert f"time.{s}.step_seconds" in numbers
    for s in TRAINING_STRATEGIES:
        for key in (f"memory.{s}.reserved_gib", f"time.{s}.tokens_per_s_per_gpu", f"time.{s}.mfu"):
            assert key in numbers
    assert len(numbers) == 5 * (11 + 3 + 3)
    assert numbers["memory.ddp.fits"] is False and isinstance(numbers["memory.ddp.max_micro_batch"], int)
    assert all(isinstance(v, (int, float, bool)) for v in numbers.values())


def test_an_nvlink_card_without_nvlink_runs_at_its_own_host_bus():
    """V100s "without NVLink" share PCIe Gen3 (16 GB/s per direction), not the Gen4 default."""
    from bot.calc import _comm_inputs
    from bot.calc.comm import links
    from bot.core.setup import TrainingSetup, resolve_setup

    def bus(gpu: str) -> float:
        resolved = resolve_setup(TrainingSetup(model="Llama-2-13B", gpu=gpu, gpu_count=4, intra_node_link="pcie"))
        return links(_comm_inputs(resolved)).intra_gb_s

    assert bus("V100 32GB") == pytest.approx(bus("A100 80GB") / 2)


# --- the attention core timed apart (issue 29: long-context throughput) ---------------------------

def _parts(**kw):
    from bot.calc import _comm_inputs
    from bot.calc.comm import compute_parts

    inputs = _comm_inputs(est(**kw).resolved)
    return inputs, compute_parts(inputs)


def test_the_attention_core_runs_at_the_size_free_hfu_whatever_the_model_size():
    # QK^T and PV: 12 L h s per token, plus 4 h s per block full checkpointing recomputes, at the
    # generation's base HFU; the rest at base + the size slope (a 70B model: about 0.50 on an H100)
    for model in ("llama3.1-8b", "llama3.1-70b", "llama3.1-405b"):
        inputs, (rest, core) = _parts(model=model, gpu="h100", gpu_count=64, seq_len=32768,
                                      activation_checkpointing=True)
        spec = lookup_model(model)
        flops = 32768 * (12 + 4) * spec.n_layers * spec.hidden * 32768
        assert core == pytest.approx(flops / (989e12 * HFU_BY_GENERATION["hopper"]), rel=1e-3), model
        assert rest > 0


def test_compile_and_float8_speed_up_the_rest_only():
    from bot.calc.comm import COMPILE_SPEEDUP

    kw = {"model": "llama3.1-8b", "gpu": "h100", "seq_len": 65536, "activation_checkpointing": True}
    _, (rest, core) = _parts(**kw)
    _, (rest_c, core_c) = _parts(**kw, torch_compile=True)
    _, (rest_f, core_f) = _parts(**kw, torch_compile=True, float8=True)
    assert core_c == pytest.approx(core) and core_f == pytest.approx(core)  # SDPA's kernel is left alone
    assert rest / rest_c == pytest.approx(COMPILE_SPEEDUP, rel=1e-3)
    assert rest_f < rest_c


def test_the_core_is_most_of_a_long_sequence_and_little_of_a_short_one():
    shares = {}
    for seq in (2048, 8192, 131072):
        _, (rest, core) = _parts(model="llama3.1-8b", gpu="h100", seq_len=seq, activation_checkpointing=True)
        shares[seq] = core / (rest + core)
    assert shares[2048] < 0.1 < shares[8192] < 0.4 < 0.8 < shares[131072]


def test_a_stated_mfu_or_an_uncalibrated_gpu_times_everything_at_one_rate():
    _, (rest, core) = _parts(mfu=0.5)
    assert core == 0.0 and rest > 0
    _, (rest, core) = _parts(gpu="l40s", gpu_count=1, finetune="qlora")
    assert core == 0.0 and rest > 0


def test_tensor_parallel_slices_lower_the_rest_not_the_core():
    # TP splits the heads: each head's attention kernel keeps its shape (parallel_comm's compute)
    from bot.calc.parallel import plan_for
    from bot.calc.parallel_comm import plan_comm_time, tp_utilisation_scale

    inputs, (rest, core) = _parts(model="llama3.1-70b", gpu="h100", gpu_count=64, nodes=8, seq_len=32768,
                                  activation_checkpointing=True)
    for tp in (2, 8):
        timing = plan_comm_time(inputs, plan_for(64, tp=tp))
        expected = (rest / tp_utilisation_scale(inputs, tp) + core) / tp
        assert timing.compute_seconds == pytest.approx(expected, rel=1e-6)
        assert timing.compute_seconds < (rest + core) / tp_utilisation_scale(inputs, tp) / tp


def test_the_estimate_reports_the_attention_core_it_timed_apart():
    long = est(model="llama3.1-8b", gpu="h100", seq_len=65536, activation_checkpointing=True).inputs
    assert 0.5 * long["compute_seconds"] < long["attention_core_seconds"] < long["compute_seconds"]
    assert long["attention_core_hfu"] == HFU_BY_GENERATION["hopper"]
    stated = est(mfu=0.4).inputs
    assert stated["attention_core_seconds"] == 0 and stated["attention_core_hfu"] is None
