"""The memory calculator (bot/calc/memory.py) through ``bot.calc.estimate``."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.calc import estimate, estimate_setup
from bot.calc.memory import (
    GIB,
    HEADROOM_FIXED_GIB,
    HEADROOM_FRACTION,
    ActivationMode,
    MemoryEstimate,
    block_activation_bytes_per_token,
    lora_params,
    model_states_bytes,
    usable_gib,
)
from bot.catalog import lookup_model
from bot.core.setup import SetupError, TrainingSetup, resolve_setup
from bot.strategies import TRAINING_STRATEGIES

LLAMA7 = dict(model="llama2-7b", gpu="a100-80gb")


def est(**kw):
    data = {**LLAMA7, "gpu_count": 8, **kw}
    return estimate_setup(TrainingSetup(**data))


# --- ZeRO anchors: mixed-precision AdamW model states are 16 B/param -------------------------


def test_zero_anchor_16_bytes_per_param():
    model = lookup_model("llama2-7b")
    assert model_states_bytes(model, "bf16-mixed", "adamw") == 16 * model.params
    assert model_states_bytes(model, "fp32", "adamw") == 16 * model.params
    assert model_states_bytes(model, "bf16", "adamw") == 8 * model.params


def test_ddp_model_states_llama2_7b_is_100_4_gib():
    m = est().memory["ddp"]
    assert round(m.params_gib + m.grads_gib + m.optimizer_gib, 1) == 100.4
    assert not m.fits  # plus buckets and step temporaries: far beyond 80 GB


def test_full_shard_model_states_over_8_gpus_is_12_55_gib():
    # With checkpointing the peak is the optimizer step, where all sharded states are alive.
    m = est(activation_checkpointing=True).memory["fsdp_full_shard"]
    assert round(m.params_gib + m.grads_gib + m.optimizer_gib, 2) == 12.55
    model = lookup_model("llama2-7b")
    assert round(model_states_bytes(model, "bf16-mixed", "adamw") / 8 / GIB, 2) == 12.55


# --- structure ---------------------------------------------------------------------------------


def test_every_strategy_has_an_estimate_and_parts_sum_to_total():
    e = est()
    assert set(e.memory) == set(TRAINING_STRATEGIES)
    for s, m in e.memory.items():
        assert isinstance(m, MemoryEstimate)
        parts = m.params_gib + m.grads_gib + m.optimizer_gib + m.activations_gib + m.buffers_gib
        assert parts == pytest.approx(m.total_gib), s
        assert min(parts, m.params_gib, m.grads_gib, m.activations_gib, m.buffers_gib) >= 0
        assert m.fits == (m.total_gib <= m.usable_gib)


def test_headroom_is_documented_constant():
    assert usable_gib(80) == pytest.approx(80 * (1 - HEADROOM_FRACTION) - HEADROOM_FIXED_GIB)
    assert usable_gib(1) == 0.0


def test_simulator_anchor_llama2_7b_full_shard():
    # bot/bench/simulate.py (FSDP2 under FakeTensorMode) measured 24.47 GiB and 15.69 GiB with
    # per-block checkpointing for this setup (torch 2.13); the calculator must stay close.
    assert est().memory["fsdp_full_shard"].total_gib == pytest.approx(24.47, rel=0.03)
    assert est(activation_checkpointing=True).memory["fsdp_full_shard"].total_gib == pytest.approx(15.69, rel=0.03)


def test_block_activations_match_the_tensor_count_of_bot_bench_model():
    # Counted with saved-tensor hooks on bot/bench/model.Block (bf16, Llama-2-7B): 211,592 B/token.
    model = lookup_model("llama2-7b")
    assert block_activation_bytes_per_token(model, ActivationMode(2, False, False)) == 211_592
    # under DDP + autocast (fp32 residual stream, per-matmul bf16 casts): 236,168 B/token
    assert block_activation_bytes_per_token(model, ActivationMode(2, True, False)) == 236_168


def test_hsdp_on_one_node_equals_full_shard_and_shards_less_across_nodes():
    one = est().memory
    assert one["fsdp_hybrid_shard"] == one["fsdp_full_shard"]
    two = est(gpu_count=16, nodes=2).memory
    assert two["fsdp_hybrid_shard"].params_gib == pytest.approx(2 * two["fsdp_full_shard"].params_gib)
    assert two["fsdp_hybrid_shard"].total_gib > two["fsdp_full_shard"].total_gib


def test_shard_grad_op_holds_the_gathered_model():
    e = est().memory
    assert e["fsdp_shard_grad_op"].total_gib > e["fsdp_full_shard"].total_gib
    # the whole model gathered in bf16 (2 B/param) is in its buffers
    assert e["fsdp_shard_grad_op"].buffers_gib > 2 * lookup_model("llama2-7b").params / GIB


# --- finetune modes, precision, optimizers --------------------------------------------------


@pytest.mark.parametrize("strategy", ["ddp", "fsdp_full_shard"])
def test_lora_and_qlora_need_less_than_full_finetune(strategy):
    full = est().memory[strategy].total_gib
    lora = est(finetune="lora").memory[strategy].total_gib
    qlora = est(finetune="qlora").memory[strategy].total_gib
    assert qlora < lora < full


def test_lora_trainable_params_from_shapes():
    # r * (in + out) on q, k, v, o of each of 32 blocks (Llama-2-7B: all 4096 x 4096): 16.8M at r=16
    assert lora_params(lookup_model("llama2-7b"), 16) == 32 * 4 * 16 * (4096 + 4096)
    e = est(finetune="lora", lora_rank=64)
    assert e.inputs["trainable_params"] == lora_params(lookup_model("llama2-7b"), 64)


def test_lora_on_one_gpu_fits_a_7b_model_in_24gb_but_full_finetune_does_not():
    lora = estimate_setup(TrainingSetup(model="llama2-7b", gpu="4090", gpu_count=1, finetune="qlora"))
    full = estimate_setup(TrainingSetup(model="llama2-7b", gpu="4090", gpu_count=1))
    assert lora.memory["ddp"].fits
    assert not full.memory["ddp"].fits and full.memory["ddp"].max_micro_batch == 0


def test_qlora_base_is_about_half_a_byte_per_param():
    m = estimate_setup(TrainingSetup(model="llama2-70b", gpu="a100-80gb", gpu_count=1, finetune="qlora",
                                     optimizer="adam8bit")).memory["ddp"]
    params = lookup_model("llama2-70b").params
    # NF4 blocks (~0.516 B/param) + 16-bit embeddings/head: between 0.5 and 0.6 B/param overall
    assert 0.5 * params / GIB < m.params_gib < 0.6 * params / GIB


def test_optimizers_order_adamw_sgd_adam8bit():
    totals = {o: est(optimizer=o, activation_checkpointing=True).memory["fsdp_full_shard"].optimizer_gib
              for o in ("adamw", "sgd", "adam8bit")}
    assert totals["adamw"] == pytest.approx(2 * totals["sgd"])
    assert totals["adam8bit"] == pytest.approx(totals["adamw"] / 4, rel=0.01)


def test_pure_bf16_halves_model_states():
    mixed = est(activation_checkpointing=True).memory["fsdp_full_shard"]
    pure = est(activation_checkpointing=True, precision="bf16").memory["fsdp_full_shard"]
    assert pure.params_gib == pytest.approx(mixed.params_gib / 2)


def test_fp32_activations_are_larger():
    assert est(precision="fp32").memory["fsdp_full_shard"].activations_gib > \
        est().memory["fsdp_full_shard"].activations_gib


def test_checkpointing_cuts_activations():
    plain = est(seq_len=4096).memory["fsdp_full_shard"]
    ckpt = est(seq_len=4096, activation_checkpointing=True).memory["fsdp_full_shard"]
    assert ckpt.total_gib < plain.total_gib
    assert ckpt.max_micro_batch > plain.max_micro_batch


# --- CPU offload ----------------------------------------------------------------------------


def test_offload_uses_less_gpu_memory_than_full_shard_and_reports_host_ram():
    e = est().memory
    off = e["fsdp_full_shard_offload"]
    assert off.total_gib < e["fsdp_full_shard"].total_gib
    assert off.params_gib == off.optimizer_gib == 0
    # host RAM per node: the 8 GPUs' shards of 16 B/param = the whole model states
    assert off.host_ram_gib == pytest.approx(16 * lookup_model("llama2-7b").params / GIB, rel=0.01)
    assert all(e[s].host_ram_gib == 0 for s in TRAINING_STRATEGIES if s != "fsdp_full_shard_offload")


def test_offload_does_not_fit_when_host_ram_is_too_small():
    small = est(cpu_ram_gb=64).memory["fsdp_full_shard_offload"]
    assert not small.fits and small.max_micro_batch == 0
    big = est(cpu_ram_gb=512).memory["fsdp_full_shard_offload"]
    assert big.fits and big.max_micro_batch >= 1


# --- max_micro_batch and monotonicity (property tests) ---------------------------------------

MODELS = ["llama2-7b", "llama3.1-8b", "gpt2", "opt-6.7b", "qwen2.5-7b", "llama2-13b", "tiny"]
setups = st.fixed_dictionaries({
    "model": st.sampled_from(MODELS),
    "gpu": st.sampled_from(["a100-80gb", "h100", "4090", "a10", "h200"]),
    "seq_len": st.sampled_from([256, 512, 1024]),
    "precision": st.sampled_from(["bf16-mixed", "bf16", "fp32"]),
    "optimizer": st.sampled_from(["adamw", "sgd", "adam8bit"]),
    "finetune": st.sampled_from(["full", "lora", "qlora"]),
    "activation_checkpointing": st.booleans(),
})


@settings(max_examples=60, deadline=None)
@given(setups, st.integers(1, 6), st.integers(1, 8))
def test_more_gpus_never_raise_full_shard_memory(setup, log_gpus, micro_batch):
    small = estimate_setup(TrainingSetup(**setup, gpu_count=2 ** (log_gpus - 1), micro_batch=micro_batch))
    big = estimate_setup(TrainingSetup(**setup, gpu_count=2 ** log_gpus, micro_batch=micro_batch))
    for s in ("fsdp_full_shard", "fsdp_shard_grad_op"):
        assert big.memory[s].total_gib <= small.memory[s].total_gib + 1e-9


@settings(max_examples=60, deadline=None)
@given(setups, st.integers(1, 64), st.integers(1, 32))
def test_larger_micro_batch_never_lowers_memory(setup, gpus, micro_batch):
    a = estimate_setup(TrainingSetup(**setup, gpu_count=gpus, micro_batch=micro_batch))
    b = estimate_setup(TrainingSetup(**setup, gpu_count=gpus, micro_batch=micro_batch + 1))
    for s in TRAINING_STRATEGIES:
        assert b.memory[s].total_gib >= a.memory[s].total_gib


@settings(max_examples=40, deadline=None)
@given(setups, st.integers(1, 64))
def test_max_micro_batch_is_the_largest_that_fits(setup, gpus):
    base = estimate_setup(TrainingSetup(**setup, gpu_count=gpus))
    for s in TRAINING_STRATEGIES:
        best = base.memory[s].max_micro_batch
        if best == 0:
            assert not base.memory[s].fits
            continue
        at = estimate_setup(TrainingSetup(**setup, gpu_count=gpus, micro_batch=best))
        assert at.memory[s].fits
        if best < 65_536:
            over = estimate_setup(TrainingSetup(**setup, gpu_count=gpus, micro_batch=best + 1))
            assert not over.memory[s].fits


def test_estimate_takes_a_resolved_setup():
    resolved = resolve_setup(TrainingSetup(model="gpt2", gpu_memory_gb=16, gpu_count=2))
    e = estimate(resolved)
    assert e.resolved is resolved
    assert e.inputs["model"] == "GPT-2" and e.inputs["gpu"] is None and e.inputs["peak_tflops_assumed"]


def test_estimate_setup_raises_setup_error_with_every_problem():
    with pytest.raises(SetupError) as err:
        estimate_setup(TrainingSetup(model="llama2-7b", gpu="a100", gpu_count=-1, seq_len=0))
    assert {p.field for p in err.value.problems} == {"gpu_count", "seq_len"}


def test_checkpointing_drops_autocast_weight_casts_under_ddp():
    # bot/bench/simulate.py: generic 1B, 4 GPUs, DDP + autocast, seq 4096, mb 4, checkpointing: 23.39 GiB
    e = estimate_setup(TrainingSetup(model="1b", gpu="h200", gpu_count=4, seq_len=4096, micro_batch=4,
                                     activation_checkpointing=True))
    assert e.memory["ddp"].total_gib == pytest.approx(23.39, rel=0.03)
