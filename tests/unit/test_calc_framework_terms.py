"""Framework behaviours that move memory (issue 26, the numbers engineer): PEFT's LoRA dropout, the
model output's logits a training loop keeps through backward, and LoRA on every linear but o_proj.

Each was missing: Answer.AI's FSDP+QLoRA runs (evals/published.jsonl) use all three, and their
reserved memory came out 15-34 % under the published figures."""

from __future__ import annotations

import pytest

from bot.calc import _mem_inputs, estimate_setup
from bot.calc.activations import (
    ActivationMode,
    block_activation_bytes_per_token,
    lora_dropout_bytes_per_token,
)
from bot.calc.memory import GIB, lora_params, phases
from bot.calc.states import lora_shapes
from bot.catalog import lookup_model
from bot.core.setup import TrainingSetup, check_setup, resolve_setup

MODELS = ("llama2-7b", "mistral-7b", "qwen2.5-7b", "gpt2")


def lora_setup(**kw) -> TrainingSetup:
    base = dict(model="llama2-7b", gpu="a100-80gb", gpu_count=2, finetune="lora", lora_rank=64,
                lora_targets="all_linear_but_o", precision="bf16", seq_len=2048, micro_batch=4,
                activation_checkpointing=True)
    base.update(kw)
    return TrainingSetup(**base)


@pytest.mark.parametrize("name", MODELS)
def test_lora_dropout_keeps_a_dropped_copy_and_a_mask_per_adapter_input(name):
    model = lookup_model(name)
    c = 2
    plain = ActivationMode(compute=c, autocast=False, frozen=True, lora_rank=64, lora_targets="all_linear")
    dropped = ActivationMode(compute=c, autocast=False, frozen=True, lora_rank=64, lora_targets="all_linear",
                             lora_dropout=True)
    shapes = lora_shapes(model)
    targets = [t for t in ("q", "k", "v", "o", "gate", "up", "down") if t in shapes]
    inputs = sum(shapes[t][0] for t in targets)
    i = getattr(model, "active_intermediate", None) or model.intermediate
    expected = (c + 1) * inputs - c * model.hidden - c * i  # the shared inputs it replaces
    assert lora_dropout_bytes_per_token(model, dropped) == pytest.approx(expected)
    assert (block_activation_bytes_per_token(model, dropped) - block_activation_bytes_per_token(model, plain)
            == pytest.approx(expected))
    assert expected > 0


def test_no_dropout_is_peft_default_and_changes_nothing():
    without = estimate_setup(lora_setup())
    zero = estimate_setup(lora_setup(lora_dropout=0.0))
    some = estimate_setup(lora_setup(lora_dropout=0.1))
    s = "fsdp_full_shard"
    assert without.memory[s].total_gib == zero.memory[s].total_gib
    assert some.memory[s].total_gib > without.memory[s].total_gib


@pytest.mark.parametrize("bad", [1.0, 1.5, -0.1, float("nan")])
def test_a_dropout_outside_0_to_1_is_refused(bad):
    problems = check_setup(lora_setup(lora_dropout=bad))
    assert any(p.field == "lora_dropout" for p in problems)


def test_lora_dropout_on_a_full_fine_tune_is_a_contradiction():
    problems = check_setup(TrainingSetup(model="llama2-7b", gpu="a100-80gb", gpu_count=8, finetune="full",
                                         lora_dropout=0.1))
    assert [p.field for p in problems] == ["lora_dropout"]


@pytest.mark.parametrize(("name", "micro_batch"), [("llama2-7b", 1), ("llama2-7b", 6), ("mistral-7b", 12)])
def test_kept_fp32_logits_sit_in_every_backward_moment(name, micro_batch):
    setup = lora_setup(model=name, micro_batch=micro_batch)
    kept = setup.model_copy(update={"logits_kept": "fp32"})
    model = lookup_model(name)
    logits_bytes = 4 * model.vocab * setup.seq_len
    before = {p.name: p for p in phases(_mem_inputs(resolve_setup(setup)), "fsdp_full_shard")[0]}
    after = {p.name: p for p in phases(_mem_inputs(resolve_setup(kept)), "fsdp_full_shard")[0]}
    for moment in ("loss_backward", "head_backward", "block_backward"):
        grown = after[moment].activations_per_sample - before[moment].activations_per_sample
        assert grown == pytest.approx(logits_bytes)
    assert after["optimizer_step"].total(micro_batch) == before["optimizer_step"].total(micro_batch)
    peak_before = estimate_setup(setup).memory["fsdp_full_shard"].total_gib
    peak_after = estimate_setup(kept).memory["fsdp_full_shard"].total_gib
    assert peak_after - peak_before == pytest.approx(micro_batch * logits_bytes / GIB, rel=1e-6)


def test_16bit_kept_logits_take_the_compute_dtype():
    s = "fsdp_full_shard"
    none = estimate_setup(lora_setup()).memory[s].total_gib
    half = estimate_setup(lora_setup(logits_kept="16bit")).memory[s].total_gib
    full = estimate_setup(lora_setup(logits_kept="fp32")).memory[s].total_gib
    assert (full - none) == pytest.approx(2 * (half - none))


@pytest.mark.parametrize("name", MODELS)
def test_all_linear_but_o_trains_every_adapter_but_o_proj(name):
    model = lookup_model(name)
    r = 64
    q_in, q_out = lora_shapes(model)["o"]
    o_adapters = model.n_layers * r * (q_in + q_out)
    assert lora_params(model, r, "all_linear") - lora_params(model, r, "all_linear_but_o") == o_adapters


# --- QLoRA's dequantisation (bitsandbytes MatMul4Bit) -------------------------------------------


def _qlora(**kw) -> TrainingSetup:
    base = dict(model="llama2-70b", gpu="h100", gpu_count=4, finetune="qlora", lora_rank=64, precision="bf16",
                seq_len=2048, micro_batch=8, activation_checkpointing=True)
    base.update(kw)
    return TrainingSetup(**base)


@pytest.mark.parametrize(("name", "gpu"), [("llama2-70b", "h100"), ("llama2-7b", "4090"), ("mistral-7b", "a100-80gb")])
def test_qlora_dequantises_every_block_weight_in_forward_backward_and_recompute(name, gpu):
    from bot.calc import _comm_inputs
    from bot.calc.comm import dequant_seconds
    from bot.calc.memory import NF4_BYTES_PER_PARAM, linear_params_per_layer
    from bot.catalog import lookup_gpu

    model, card = lookup_model(name), lookup_gpu(gpu)
    weights = model.n_layers * linear_params_per_layer(model)
    per_pass = weights * (NF4_BYTES_PER_PARAM + 2) / (card.hbm_tb_s * 1e12)
    ckpt = _comm_inputs(resolve_setup(_qlora(model=name, gpu=gpu)))
    plain = _comm_inputs(resolve_setup(_qlora(model=name, gpu=gpu, activation_checkpointing=False)))
    assert dequant_seconds(ckpt) == pytest.approx(3 * per_pass)
    assert dequant_seconds(plain) == pytest.approx(2 * per_pass)
    lora = _comm_inputs(resolve_setup(_qlora(model=name, gpu=gpu, finetune="lora")))
    assert dequant_seconds(lora) == 0.0


def test_dequantisation_slows_a_small_micro_batch_more_than_a_large_one():
    s = "fsdp_full_shard"
    small = estimate_setup(_qlora(micro_batch=1)).throughput[s].tokens_per_s_per_gpu
    large = estimate_setup(_qlora(micro_batch=8)).throughput[s].tokens_per_s_per_gpu
    lora_small = estimate_setup(_qlora(micro_batch=1, finetune="lora")).throughput[s].tokens_per_s_per_gpu
    lora_large = estimate_setup(_qlora(micro_batch=8, finetune="lora")).throughput[s].tokens_per_s_per_gpu
    assert small / large < lora_small / lora_large
