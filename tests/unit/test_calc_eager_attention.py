"""Models whose transformers implementation computes attention eagerly (BLOOM: ALiBi has no SDPA
path) keep the s x s attention probabilities for backward; the calculator counts them
(``bot.calc.memory.attention_scores_bytes``). Measured here with saved-tensor hooks on a small
BloomBlock, which is what made DeepSpeedExamples#411's batch 4 run out of memory."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from bot.calc import estimate_setup
from bot.calc.memory import attention_scores_bytes
from bot.catalog import lookup_model
from bot.catalog.hf_config import model_from_hf_config
from bot.core.setup import TrainingSetup

transformers = pytest.importorskip("transformers")


def _saved_bytes(block, hidden: int, heads: int, seq: int) -> int:
    """Bytes of the distinct storages one BloomBlock saves for backward on one sequence (bf16)."""
    from transformers.models.bloom.modeling_bloom import build_alibi_tensor

    storages: dict[int, int] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        storages[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
        return t

    x = torch.randn(1, seq, hidden, dtype=torch.bfloat16, requires_grad=True)
    alibi = build_alibi_tensor(torch.ones(1, seq), heads, torch.bfloat16)
    causal = torch.triu(torch.ones(seq, seq, dtype=torch.bool), 1)[None, None]
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        block(x, alibi=alibi, attention_mask=causal)
    return sum(storages.values())


def test_the_score_term_is_what_a_bloom_block_saves_per_s_squared():
    hidden, heads = 64, 4
    config = {"model_type": "bloom", "hidden_size": hidden, "n_layer": 1, "n_head": heads, "vocab_size": 128}
    spec = model_from_hf_config(config)
    assert spec.eager_attention
    torch.manual_seed(0)
    block = transformers.BloomForCausalLM(transformers.BloomConfig(**config)).to(torch.bfloat16).transformer.h[0]
    block.train()
    # saved(s) = weights + A*s + B*s^2: three lengths give B, the bytes per s^2
    s1, s2, s3 = 32, 64, 128
    b1, b2, b3 = (_saved_bytes(block, hidden, heads, s) for s in (s1, s2, s3))
    per_s2 = ((b3 - b2) / (s3 - s2) - (b2 - b1) / (s2 - s1)) / ((s3 + s2) - (s2 + s1))
    assert per_s2 * s2 * s2 == pytest.approx(attention_scores_bytes(spec, s2, 2))


def test_bloom_7b1_counts_the_scores_and_sdpa_models_do_not():
    setup = TrainingSetup(model="BLOOM-7B1", gpu="A100 80GB SXM", gpu_count=4, finetune="lora", seq_len=2048,
                          micro_batch=4, activation_checkpointing=False)
    eager = estimate_setup(setup)
    spec = lookup_model("BLOOM-7B1")
    sdpa = estimate_setup(setup, model_spec=replace(spec, eager_attention=False))
    scores_gib = 4 * spec.n_layers * attention_scores_bytes(spec, 2048, 2) / 2**30  # micro-batch 4, every block
    gap = eager.memory["ddp"].activations_gib - sdpa.memory["ddp"].activations_gib
    assert gap == pytest.approx(scores_gib, rel=0.02)
    assert scores_gib > 80  # ~88 GiB of probabilities: batch 4 cannot fit a 80 GB card, as the thread found
    assert not eager.memory["ddp"].fits
    assert attention_scores_bytes(lookup_model("Llama-2-7B"), 2048, 2) == 0
