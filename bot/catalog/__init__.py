"""Model and accelerator catalogs (``bot.catalog``): what a question's model and card names mean.

- ``models``: ``ModelSpec`` (dense decoders, MoE, encoders, encoder-decoders, approximate
  VLM/diffusion entries), the catalog, ``lookup_model``, ``generic_model``.
- ``accelerators``: ``GPUSpec`` (memory, bf16, peaks, links, vendor, backend), ``lookup_gpu``,
  ``custom_gpu`` for a card the catalog lacks.
- ``hf_config``: ``model_from_hf_config`` (a config.json file, folder, pasted JSON or Hub id).

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
    ModelSpec,
    approximate_model,
    generic_model,
    list_models,
    lookup_model,
    model_names,
)
from bot.catalog.names import UnknownNameError

__all__ = [
    "EXPERT_PARALLEL_NOTE", "GPUSpec", "ModelSpec", "UnknownNameError", "approximate_model", "custom_gpu", "generic_model",
    "gpu_names", "list_gpus", "list_models", "lookup_gpu", "lookup_model", "model_names",
]
