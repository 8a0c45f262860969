"""The transformers-built simulation runs the attention transformers itself picks (issue 26): SDPA where
the model class supports it, eager for Gemma-2 (soft-capping), as the calculator's default assumes."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from bot.bench.hf_model import build_hf_model  # noqa: E402
from bot.catalog.hf_config import model_from_hf_config  # noqa: E402
from bot.catalog.kernel_defaults import default_attn_implementation  # noqa: E402

COMMON = {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 1, "num_attention_heads": 4,
          "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 256}


@pytest.mark.parametrize("config", [{"model_type": "llama", **COMMON}, {"model_type": "qwen2", **COMMON},
                                    {"model_type": "gemma2", **COMMON}])
def test_the_simulated_attention_is_the_calculators_default(config):
    with torch.device("meta"):
        wrapper = build_hf_model(config)
    assert wrapper.model.config._attn_implementation == default_attn_implementation(model_from_hf_config(config))
