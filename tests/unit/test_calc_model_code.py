"""``model_code="transformers"``: a Llama block as Hugging Face transformers' modelling code runs it
(issue 26's independent cross-check). Its RMSNorm casts the normalised tensor to the compute dtype
before the weight multiply (4h fp32 input + c*h kept, not 8h fp32), the rotary cos/sin are computed
once per forward and shared by every block, and the SDPA output is read by o_proj without a copy:
24h + 8 + 4 n_h + 8i bytes per token in bf16, measured here with saved-tensor hooks."""

from __future__ import annotations

import pytest

from bot.calc.memory import ActivationMode, block_activation_bytes_per_token
from bot.catalog.hf_config import model_from_hf_config

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")


def _saved_per_token(cfg) -> float:
    from transformers.models.llama.modeling_llama import LlamaDecoderLayer, LlamaRotaryEmbedding

    layer = LlamaDecoderLayer(cfg, 0).to(torch.bfloat16).train()
    rotary = LlamaRotaryEmbedding(cfg)

    def saved(seq: int) -> int:
        storages: dict[int, int] = {}

        def pack(t):
            storages[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
            return t

        x = torch.randn(1, seq, cfg.hidden_size, dtype=torch.bfloat16, requires_grad=True)
        positions = torch.arange(seq)[None]
        cos, sin = rotary(x, positions)
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            layer(x, position_embeddings=(cos, sin), attention_mask=None, position_ids=positions)
        shared = {p.untyped_storage().data_ptr() for p in layer.parameters()}
        shared |= {cos.untyped_storage().data_ptr(), sin.untyped_storage().data_ptr()}  # one per forward
        return sum(n for ptr, n in storages.items() if ptr not in shared)

    return (saved(512) - saved(256)) / 256


@pytest.mark.parametrize("hidden, heads, kv, inter", [(256, 8, 8, 688), (256, 8, 2, 512), (384, 6, 3, 1024)])
def test_the_transformers_layout_is_what_a_llama_decoder_layer_saves(hidden, heads, kv, inter):
    config = {"model_type": "llama", "hidden_size": hidden, "intermediate_size": inter, "num_hidden_layers": 1,
              "num_attention_heads": heads, "num_key_value_heads": kv, "vocab_size": 128}
    cfg = transformers.LlamaConfig(**{k: v for k, v in config.items() if k != "model_type"})
    cfg._attn_implementation = "sdpa"
    spec = model_from_hf_config(config)
    mode = ActivationMode(compute=2, autocast=False, frozen=False, model_code="transformers")
    assert block_activation_bytes_per_token(spec, mode) == pytest.approx(_saved_per_token(cfg))
    # the calculator's default (PyTorch's F.rms_norm, bot/bench/model.py) keeps more
    assert block_activation_bytes_per_token(spec, ActivationMode(compute=2, autocast=False, frozen=False)) > \
        block_activation_bytes_per_token(spec, mode)
