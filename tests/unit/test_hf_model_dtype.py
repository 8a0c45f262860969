"""``bench simulate --config`` builds the model in the training dtype, not the config's ``torch_dtype``
(issue 26): under bf16-mixed the parameters are fp32 master weights even when the config says bf16."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from bot.bench.hf_model import build_hf_model  # noqa: E402

TINY = {"model_type": "llama", "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
        "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 256}


@pytest.mark.parametrize("key, value", [("torch_dtype", "bfloat16"), ("dtype", "bfloat16"), ("torch_dtype", "float16")])
@pytest.mark.parametrize("default", [torch.float32, torch.bfloat16])
def test_the_default_dtype_wins_over_the_configs(key, value, default):
    old = torch.get_default_dtype()
    torch.set_default_dtype(default)
    try:
        with torch.device("meta"):
            model = build_hf_model({**TINY, key: value})
    finally:
        torch.set_default_dtype(old)
    assert {p.dtype for p in model.parameters()} == {default}
