"""The kernels the frameworks run when a setup names none (reference data, issue 28).

One home for two framework defaults that ``bot.core.setup`` (checking and resolving a setup, listing
what it assumed) and ``bot.calc`` (what the kernels keep for backward) both read:

- Attention, per architecture: ``attn_implementation`` is one of ``eager``, ``sdpa`` or
  ``flash_attention_2``. Not stated, it is what transformers picks: SDPA where the model class
  supports it (``_supports_sdpa = True``), eager otherwise (transformers
  ``PreTrainedModel._check_and_adjust_attn_implementation``,
  https://github.com/huggingface/transformers/blob/main/src/transformers/modeling_utils.py; flash
  needs the flash-attn package and must be asked for).
- RMSNorm, per PyTorch release and model code: ``default_norm_impl`` (fused ``F.rms_norm`` for
  PyTorch-native blocks from ``FUSED_RMS_NORM_SINCE``, eager otherwise).
"""

from __future__ import annotations

from bot.catalog.models import ModelSpec

IMPLEMENTATIONS = ("eager", "sdpa", "flash_attention_2")

# Families whose transformers model has no SDPA path, with the reason the source gives:
# Gemma-2: transformers/models/gemma2/modeling_gemma2.py ``_supports_sdpa = False  # sdpa does not
# support softcapping`` (eager, or flash_attention_2 / flex, which apply the soft-cap in the kernel).
# Entries whose eager scores carry a bias SDPA cannot take (BLOOM's ALiBi) say so per model instead:
# ``ModelSpec.eager_attention`` (models.json).
NO_SDPA_FAMILIES = {"gemma2": "Gemma-2 (attention logit soft-capping)"}


def sdpa_supported(model: ModelSpec) -> bool:
    """Whether transformers has an SDPA path for this architecture."""
    return not model.eager_attention and model.family not in NO_SDPA_FAMILIES


def default_attn_implementation(model: ModelSpec) -> str:
    """What transformers runs when the user names nothing: sdpa where supported, else eager."""
    return "sdpa" if sdpa_supported(model) else "eager"


# The PyTorch release the calculator describes when a setup states none (the project's torch).
CALCULATOR_TORCH = "2.13"
# From this release on, F.rms_norm on a CUDA tensor whose weight has the input's dtype runs the fused
# kernel aten::_fused_rms_norm (PR https://github.com/pytorch/pytorch/pull/153666; its CUDA dispatch,
# torch/include/ATen/ops/_fused_rms_norm_cuda_dispatch.h, and the sm90/sm100 override registered in
# torch/_native/ops/norm/rmsnorm_impl.py register_rmsnorm_overrides, torch 2.13). Its autograd node saves
# the input, the weight and rstd only (FusedRmsNormBackward0: input_, weight_, result1_ in
# torch/include/torch/csrc/autograd/generated/Functions.h), where the composite (CPU, and every release
# before) keeps the fp32 copy of the input and the fp32 normalised tensor. 2.10 is the earliest release
# the evidence shows it running as the default: FusedRmsNormBackward0 as nn.RMSNorm's grad_fn on CUDA with
# torch 2.10.0.dev (https://github.com/pytorch/pytorch/issues/167308); earlier 2.8/2.9 builds may have it
# too, and for them the eager count is the larger, safe-side figure.
FUSED_RMS_NORM_SINCE = (2, 10)


def torch_release(version: str | None) -> tuple[int, int]:
    """(major, minor) of a PyTorch version string ("2.5", "2.13.0+cu130"); None: CALCULATOR_TORCH."""
    parts = (version or CALCULATOR_TORCH).split("+")[0].split(".")
    digits = ["".join(ch for ch in part if ch.isdigit()) for part in parts[:2]]
    if len(digits) < 2 or not digits[0]:  # unreadable: check_setup reports it; the calculator's own
        return torch_release(CALCULATOR_TORCH)
    return int(digits[0]), int(digits[1] or 0)


def default_norm_impl(torch_version: str | None, model_code: str | None) -> str:
    """The norm kernel a run uses when the setup names none: "fused" for blocks stated to be PyTorch-native
    (``model_code="pytorch"``: ``F.rms_norm``, torchtitan) on a release from FUSED_RMS_NORM_SINCE, else "eager".
    Transformers' LlamaRMSNorm is its own Python code (``hidden_states.to(torch.float32)`` ...
    ``self.weight * hidden_states.to(input_dtype)``), which no torch release fuses, so ``"transformers"`` stays
    eager. Unstated code stays eager too: an unknown stack is most often transformers' (the reader states
    ``model_code`` where the text shows the stack), and for it the fused count would be 12h - 6h - 4d bytes per
    token and block below what runs, the unsafe side of "fits"; the eager count is above both."""
    if model_code != "pytorch":
        return "eager"
    return "fused" if torch_release(torch_version) >= FUSED_RMS_NORM_SINCE else "eager"
