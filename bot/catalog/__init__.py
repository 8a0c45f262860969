"""Model and accelerator catalogs (``bot.catalog``): what a question's model and card names mean.

- ``models``: ``ModelSpec`` (dense decoders, MoE, encoders, encoder-decoders, approximate
  VLM/diffusion/vision/speech entries), the catalog (data: ``models.json``), ``lookup_model``,
  ``resolve_model`` (entry and/or family for a name), ``lookup_family``, ``generic_model``.
- ``names``: lookup keys, Chinese family names, the size written in a name, ``UnknownNameError``
  (its ``family`` is set when the family is known but the size is not).
- ``accelerators``: ``GPUSpec`` (memory, bf16, peaks, links, vendor, backend), ``lookup_gpu``,
  ``custom_gpu`` for a card the catalog lacks.
- ``hf_config``: ``model_from_hf_config`` (a config.json file, folder, pasted JSON or Hub id).
- ``kernel_defaults``: the kernels the frameworks run when a setup names none: attention per
  architecture (``default_attn_implementation``, ``sdpa_supported``) and RMSNorm per PyTorch release
  (``default_norm_impl``); read by ``bot.core.setup`` and ``bot.calc``.

This was one module, ``bot/catalog.py``; everything it exported is re-exported here.
"""

from bot.catalog.accelerators import (
    GPUSpec,
    custom_gpu,
    gpu_names,
    list_gpus,
    lookup_gpu,
)
from bot.catalog.models import (
    EXPERT_PARALLEL_NOTE,
    ModelFamily,
    ModelMatch,
    ModelSpec,
    approximate_model,
    family_names,
    generic_model,
    list_families,
    list_models,
    lookup_family,
    lookup_model,
    model_names,
    resolve_model,
)
from bot.catalog.names import UnknownNameError

__all__ = [
    "EXPERT_PARALLEL_NOTE", "GPUSpec", "ModelFamily", "ModelMatch", "ModelSpec", "UnknownNameError", "approximate_model",
    "custom_gpu", "family_names", "generic_model", "gpu_names", "list_families", "list_gpus", "list_models",
    "lookup_family", "lookup_gpu", "lookup_model", "model_names", "resolve_model",
]
