"""The attention implementation a run uses and what it keeps for backward (issue 26).

Torch-free. ``attn_implementation`` (a setup field; a config's ``attn_implementation``) is one of
``eager``, ``sdpa`` or ``flash_attention_2``; not stated, it is transformers' default for the
architecture, reference data whose one home is ``bot.catalog.kernel_defaults`` (read here and by
``bot.core.setup``). SDPA and flash keep a logsumexp per head and token, no s x s scores; eager
keeps the attention probabilities, and Gemma-2's soft-capping keeps one more s x s tensor.
"""

from __future__ import annotations

from bot.catalog import ModelSpec
from bot.catalog.kernel_defaults import default_attn_implementation

# Gemma-2 caps its attention scores and its output logits with tanh (Gemma2Config
# attn_logit_softcapping 50.0, final_logit_softcapping 30.0): x / cap, tanh, x * cap. tanh saves its
# output for backward (d tanh = 1 - tanh^2), one tensor of the compute dtype per score / per logit.
SOFTCAP_FAMILIES = ("gemma2",)


def attn_implementation(model: ModelSpec, stated: str | None) -> str:
    return stated or default_attn_implementation(model)


def softcapped(model: ModelSpec) -> bool:
    return model.family in SOFTCAP_FAMILIES


def scores_bytes_per_s2_per_head(model: ModelSpec, compute: int, implementation: str) -> float:
    """Bytes one block keeps per head per s^2 of one sequence. Eager (transformers'
    ``eager_attention_forward``): the softmax's fp32 output (4) and its cast to the compute dtype,
    which the scores-times-values matmul saves (c; none in fp32, where the cast is a no-op); with
    soft-capping, tanh's output too (c). Measured with saved-tensor hooks on BLOOM and Gemma-2 blocks
    (tests/test_calc_eager_attention.py, tests/unit/test_calc_attention_impl.py). SDPA/flash: 0."""
    if implementation != "eager":
        return 0.0
    cast = compute if compute != 4 else 0
    return 4 + cast + (compute if softcapped(model) else 0)


def softcap_bytes_per_logit(model: ModelSpec, compute: int) -> float:
    """Bytes per output logit the final soft-cap's tanh keeps (Gemma-2), in the compute dtype."""
    return float(compute) if softcapped(model) else 0.0
