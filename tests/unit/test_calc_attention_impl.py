"""The attention implementation as a field (issue 26): eager keeps the s x s probabilities (and, for
Gemma-2's soft-capping, tanh's output), SDPA/flash do not; the default is what transformers picks.
The per-s^2 bytes are measured with saved-tensor hooks on transformers' own attention code."""

from __future__ import annotations

import pytest

from bot.calc import estimate_setup
from bot.calc.attention import scores_bytes_per_s2_per_head
from bot.catalog import lookup_model
from bot.catalog.kernel_defaults import default_attn_implementation
from bot.core.setup import TrainingSetup, check_setup, resolve_setup


@pytest.mark.parametrize("model, default", [("gemma-2-9b", "eager"), ("gemma-2-2b", "eager"),
                                            ("llama3.1-8b", "sdpa"), ("qwen2.5-7b", "sdpa"), ("BLOOM-7B1", "eager")])
def test_the_default_is_what_transformers_runs(model, default):
    assert default_attn_implementation(lookup_model(model)) == default
    assumed = resolve_setup(TrainingSetup(model=model, gpu="h100", gpu_count=8)).assumed
    assert ("attn_implementation" in assumed) == (default == "eager")


@pytest.mark.parametrize("model", ["gemma-2-9b", "gemma-2-27b"])
def test_sdpa_is_refused_for_gemma_2(model):
    problems = check_setup(TrainingSetup(model=model, attn_implementation="sdpa"))
    assert [p.field for p in problems] == ["attn_implementation"]


def _act(model: str, impl: str | None, strategy: str = "fsdp_full_shard") -> float:
    est = estimate_setup(TrainingSetup(model=model, gpu="h100", gpu_count=8, seq_len=4096, attn_implementation=impl))
    return est.memory[strategy].activations_gib


@pytest.mark.parametrize("model", ["llama3.1-8b", "qwen2.5-7b", "mistral-7b"])
def test_eager_on_an_sdpa_model_adds_the_scores(model):
    assert _act(model, "eager") > 1.5 * _act(model, None)
    assert _act(model, "flash_attention_2") == _act(model, "sdpa") == _act(model, None)


def test_gemma_2_flash_drops_the_scores_its_default_eager_keeps():
    assert _act("gemma-2-9b", None) == _act("gemma-2-9b", "eager") > 2 * _act("gemma-2-9b", "flash_attention_2")


torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")


def _saved_bytes(attn, config, seq: int) -> int:
    storages: dict[int, int] = {}

    def pack(t):
        storages[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
        return t

    hidden = config.hidden_size
    x = torch.randn(1, seq, hidden, dtype=torch.bfloat16, requires_grad=True)
    head_dim = config.head_dim
    cos = torch.ones(1, seq, head_dim, dtype=torch.bfloat16)
    sin = torch.zeros(1, seq, head_dim, dtype=torch.bfloat16)
    mask = torch.triu(torch.full((seq, seq), float("-inf"), dtype=torch.bfloat16), 1)[None, None]
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        attn(x, position_embeddings=(cos, sin), attention_mask=mask)
    return sum(storages.values())


@pytest.mark.parametrize("family", ["gemma2", "llama"])
def test_eager_bytes_per_s2_are_what_transformers_attention_saves(family):
    heads = 4
    common = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=1, num_attention_heads=heads,
                  num_key_value_heads=2, head_dim=16, vocab_size=128, attention_dropout=0.0)
    if family == "gemma2":
        config = transformers.Gemma2Config(**common, query_pre_attn_scalar=16, sliding_window=None)
        attn_cls = transformers.models.gemma2.modeling_gemma2.Gemma2Attention
        spec = lookup_model("gemma-2-2b")
    else:
        config = transformers.LlamaConfig(**common)
        attn_cls = transformers.models.llama.modeling_llama.LlamaAttention
        spec = lookup_model("llama3.1-8b")
    config._attn_implementation = "eager"
    torch.manual_seed(0)
    attn = attn_cls(config, layer_idx=0).to(torch.bfloat16).train()
    s1, s2, s3 = 32, 64, 128
    b1, b2, b3 = (_saved_bytes(attn, config, s) for s in (s1, s2, s3))
    per_s2 = ((b3 - b2) / (s3 - s2) - (b2 - b1) / (s2 - s1)) / ((s3 + s2) - (s2 + s1))
    assert per_s2 / heads == pytest.approx(scores_bytes_per_s2_per_head(spec, 2, "eager"))
