"""Which architectures the plain-torch model (``bot/bench/model.py``) builds exactly; the rest are
built from their Hugging Face config with ``transformers`` (``bot/bench/hf_model.py``).

Torch-free, so the simulate cache key and the CLI can ask without importing torch.
"""

from __future__ import annotations

from bot.catalog import ModelSpec

# Bump when the transformers-built simulation changes (its results are cached under this too).
HF_SIM_METHOD_VERSION = 4  # 2: attention dropout off (CPU SDPA would keep s x s probabilities);
# 3: built in the training dtype, not the config's torch_dtype; 4: eager attention where transformers has no SDPA


def supports(spec: ModelSpec) -> str | None:
    """None when ``bot.bench.model.build_model`` builds ``spec`` exactly; otherwise why not."""
    if spec.declared_params is not None:
        return "approximate entry: no architecture to build"
    if spec.kind in ("encoder", "encoder_decoder"):
        return f"{spec.kind} models are built with transformers"
    if spec.uses_mla:
        return "multi-head latent attention is built with transformers"
    if spec.extra_params:
        return "vision towers are built with transformers"
    if spec.embed_norm:
        return "a LayerNorm after the embeddings (BLOOM) is built with transformers"
    if spec.norms_per_layer not in (2, 4):
        return f"{spec.norms_per_layer} norms per block"
    return None
