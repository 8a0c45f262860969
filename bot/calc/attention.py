"""The attention implementation a run uses and what it keeps for backward (issue 26).

Torch-free. ``attn_implementation`` (a setup field; a config's ``attn_implementation``) is one of
``eager``, ``sdpa`` or ``flash_attention_2``. Not stated, it is what transformers picks for the
architecture: SDPA where the model class supports it (``_supports_sdpa = True``), eager otherwise
(transformers ``PreTrainedModel._check_and_adjust_attn_implementation``; flash needs the flash-attn
package and must be asked for). SDPA and flash keep a logsumexp per head and token, no s x s scores;
eager keeps the attention probabilities, and Gemma-2's soft-capping keeps one more s x s tensor.
"""

from __future__ import annotations

from bot.catalog import ModelSpec

IMPLEMENTATIONS = ("eager", "sdpa", "flash_attention_2")

# Families whose transformers model has no SDPA path, with the reason the source gives:
# Gemma-2: transformers/models/gemma2/modeling_gemma2.py ``_supports_sdpa = False  # sdpa does not
# support softcapping`` (eager, or flash_attention_2 / flex, which apply the soft-cap in the kernel);
# BLOOM: ALiBi is added to the eager scores (ModelSpec.eager_attention, bot/calc/memory.py).
NO_SDPA_FAMILIES = {"gemma2": "Gemma-2 (attention logit soft-capping)"}

# Gemma-2 caps its attention scores and its output logits with tanh (Gemma2Config
# attn_logit_softcapping 50.0, final_logit_softcapping 30.0): x / cap, tanh, x * cap. tanh saves its
# output for backward (d tanh = 1 - tanh^2), one tensor of the compute dtype per score / per logit.
SOFTCAP_FAMILIES = ("gemma2",)


def sdpa_supported(model: ModelSpec) -> bool:
    """Whether transformers has an SDPA path for this architecture."""
    return not model.eager_attention and model.family not in NO_SDPA_FAMILIES


def default_attn_implementation(model: ModelSpec) -> str:
    """What transformers runs when the user names nothing: sdpa where supported, else eager."""
    return "sdpa" if sdpa_supported(model) else "eager"


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
