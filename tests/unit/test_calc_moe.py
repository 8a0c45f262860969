"""MoE and attention-width activation terms (bot/calc/memory.py) against saved-tensor hooks on
the block bot/bench/model.py builds: the calculator's bytes per token must equal what autograd
actually keeps, for shrunken Qwen3-MoE / Qwen3 / Gemma-2 / Qwen-MoE shapes, in bf16, fp32 and
autocast."""

from __future__ import annotations

import dataclasses

import pytest
import torch
from torch._subclasses.fake_tensor import FakeTensorMode

from bot.bench.model import Block
from bot.calc.memory import ActivationMode, block_activation_bytes_per_token, lora_params
from bot.catalog import lookup_model

MODES = {"bf16": (torch.bfloat16, False, 2), "fp32": (torch.float32, False, 4), "autocast": (torch.float32, True, 2)}


def _saved_bytes(spec, seq: int, dtype: torch.dtype, autocast: bool) -> int:
    """Bytes of the distinct non-parameter storages one block's forward saves for backward."""
    old = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        with FakeTensorMode(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
            block = Block(spec, dense=not spec.is_moe)
            params = {p.untyped_storage()._cdata for p in block.parameters()}
            seen: dict[int, int] = {}

            def pack(t):
                key = t.untyped_storage()._cdata
                if key not in params:
                    seen.setdefault(key, t.untyped_storage().nbytes())
                return t

            x = torch.randn(1, seq, spec.hidden, requires_grad=True)
            with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
                block(x)
    finally:
        torch.set_default_dtype(old)
    return sum(seen.values())


def _per_token(spec, dtype, autocast) -> float:
    return (_saved_bytes(spec, 64, dtype, autocast) - _saved_bytes(spec, 32, dtype, autocast)) / 32


SHAPES = {
    # q_dim = 2 x hidden, q/k norms, 16 experts top-4 (the Qwen3-30B-A3B layout, shrunk)
    "qwen3_moe": dataclasses.replace(lookup_model("Qwen3-30B-A3B"), hidden=64, n_heads=8, n_kv_heads=2,
                                     attn_head_dim=16, n_experts=16, experts_per_token=4, moe_intermediate=32),
    # dense Qwen3: q_dim = 2 x hidden, q/k norms
    "qwen3_dense": dataclasses.replace(lookup_model("Qwen3-0.6B"), hidden=64, n_heads=8, n_kv_heads=4,
                                       attn_head_dim=16, intermediate=96),
    # Gemma 2: q_dim < hidden, four norms per block
    "gemma2": dataclasses.replace(lookup_model("Gemma-2-2B"), hidden=72, n_heads=4, n_kv_heads=2,
                                  attn_head_dim=16, intermediate=96),
    # Qwen-MoE: gated shared expert
    "qwen_moe": dataclasses.replace(lookup_model("Qwen1.5-MoE-A2.7B"), hidden=64, n_heads=4, n_kv_heads=4,
                                    n_experts=8, experts_per_token=2, moe_intermediate=32,
                                    shared_expert_intermediate=64),
}


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("shape", list(SHAPES))
def test_block_bytes_equal_saved_tensors(shape, mode):
    spec = SHAPES[shape]
    dtype, autocast, c = MODES[mode]
    calc = block_activation_bytes_per_token(spec, ActivationMode(compute=c, autocast=autocast, frozen=False))
    assert calc == pytest.approx(_per_token(spec, dtype, autocast), abs=0.5)


def test_moe_terms_scale_with_experts_per_token():
    # The routed copies (2 k h c) grow with k even at a fixed active MLP width k x moe_intermediate.
    base = SHAPES["qwen3_moe"]
    wide = dataclasses.replace(base, experts_per_token=8, moe_intermediate=16)
    mode = ActivationMode(compute=2, autocast=False, frozen=False)
    grow = block_activation_bytes_per_token(wide, mode) - block_activation_bytes_per_token(base, mode)
    assert grow == 2 * 4 * base.hidden * 2 + (12 + 2) * 4


def test_lora_params_use_attention_width():
    spec = lookup_model("Qwen3-30B-A3B")  # q_dim 4096 = 2 x hidden 2048, kv 512
    h, q, kv, r = spec.hidden, spec.q_dim, spec.kv_dim, 16
    assert q == 2 * h
    assert lora_params(spec, r, "attention") == spec.n_layers * r * ((h + q) + 2 * (h + kv) + (q + h))
    # all-linear reaches every expert (gate/up/down) and the router
    per_expert = 3 * r * (h + spec.moe_intermediate)
    expected = spec.n_layers * (r * ((h + q) + 2 * (h + kv) + (q + h)) + spec.n_experts * per_expert
                                + r * (h + spec.n_experts))
    assert lora_params(spec, r, "all_linear") == expected


def test_compiled_chunked_loss_saves_the_16_bit_logits_not_fp32_log_probs():
    # torchtune compiles each chunk's upcast + cross-entropy when the model is compiled
    # (training/_compile.py compile_loss): the saved bytes per logit drop from 4 (fp32 log-probs)
    # to the compute size (the bf16 logits chunk); at the backward only one chunk's 16-bit gradient is
    # new (a compiled cross-entropy keeps no fp32 buffer: measured, docs/calc.md).
    from bot.calc.memory import LOSS_CHUNKS, MemoryInputs, loss_bytes_per_logit

    base = dict(model=lookup_model("Llama-3.1-8B"), gpu_memory_gb=24, gpu_count=1, gpus_per_node=1,
                precision="bf16", optimizer="adamw", finetune="lora", lora_rank=8, seq_len=2048, micro_batch=2,
                activation_checkpointing=True, cpu_ram_gb=None, loss_impl="chunked")
    assert loss_bytes_per_logit(MemoryInputs(**base), 2) == (4, 8 / LOSS_CHUNKS, 2)
    assert loss_bytes_per_logit(MemoryInputs(**base, torch_compile=True), 2) == (2.0, 2 / LOSS_CHUNKS, 2.0)
