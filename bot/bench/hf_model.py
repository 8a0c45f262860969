"""The real ``transformers`` model for a Hugging Face config, wrapped for simulate.

``bench simulate --config`` (and catalog entries ``bot.bench.model`` cannot build: encoders, T5,
latent attention, vision-language models) build the model ``transformers`` would build for the
config, on whatever device and fake-tensor mode the caller set up: no weights are read or
allocated. The wrapper gives simulate what it needs from any architecture: ``layers`` (the blocks
FSDP wraps one by one, found through the model's own ``_no_split_modules``), and
``forward(tokens) -> logits`` for a causal LM, a masked LM (logits at every position) or an
encoder-decoder (the decoder reads the same length as the encoder).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import cast

import torch
from torch import nn

ENCODER_TYPES = {"bert", "roberta", "xlm-roberta", "camembert"}
SEQ2SEQ_TYPES = {"t5", "mt5", "umt5"}


class HFTrainModel(nn.Module):
    """A transformers model with the interface ``bot.bench.model.Decoder`` has for simulate."""

    def __init__(self, model: nn.Module, kind: str):
        super().__init__()
        self.model, self.kind = model, kind
        names = set(getattr(model, "_no_split_modules", None) or [])
        # Blocks to shard one by one, leaving out any that holds the input embeddings: a tied LM
        # head shares that weight, and FSDP wants tied weights in one unit (the root).
        # a transformers PreTrainedModel method (nn.Module's __getattr__ types it as Tensor | Module)
        embed = cast(Callable[[], nn.Module], model.get_input_embeddings)()
        self.layers = [m for m in model.modules() if type(m).__name__ in names
                       and not any(sub is embed for sub in m.modules())]
        if not self.layers:
            raise ValueError(f"{type(model).__name__} names no blocks (_no_split_modules) to wrap")
        self.checkpoint_blocks = False

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        if self.kind == "seq2seq":
            return self.model(input_ids=tokens, decoder_input_ids=tokens, use_cache=False).logits
        if self.kind == "masked":
            return self.model(input_ids=tokens).logits
        return self.model(input_ids=tokens, use_cache=False).logits


def transformers_config(config: dict):
    """A ``transformers`` config object from a config.json dict (no remote code is run)."""
    import transformers

    # torch_dtype / dtype: the dtype the checkpoint was saved in, not the one training holds its
    # parameters in (bf16-mixed keeps fp32 masters); simulate sets the training dtype as the default.
    data = {k: v for k, v in config.items()
            if not k.startswith("_") and k not in ("architectures", "auto_map", "torch_dtype", "dtype")}
    model_type = data.pop("model_type", None)
    if not model_type:
        raise ValueError("config has no model_type")
    aliases = {"baichuan": "llama", "yi": "llama", "chatglm": None}
    if model_type in aliases:
        if aliases[model_type] is None:
            raise ValueError("ChatGLM configs need trust_remote_code; the catalog's ChatGLM3-6B entry "
                             "simulates as the equivalent GLM config")
        model_type = aliases[model_type]
    try:
        return model_type, transformers.AutoConfig.for_model(model_type, **data)
    except ValueError as err:
        raise ValueError(f"transformers {transformers.__version__} does not know model_type "
                         f"{model_type!r} ({err})") from None


def _attention_for(model_type: str) -> str:
    """``sdpa`` when transformers' model class for ``model_type`` supports it, else ``eager``."""
    import transformers

    classes = [getattr(transformers, name, None) for name in _model_class_names(model_type)]
    supported = [getattr(cls, "_supports_sdpa", True) for cls in classes if cls is not None]
    return "sdpa" if all(supported) else "eager"


def _model_class_names(model_type: str) -> list[str]:
    """The causal-LM class names transformers maps ``model_type`` to (empty when it has none)."""
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    name = MODEL_FOR_CAUSAL_LM_MAPPING_NAMES.get(model_type)
    return [name] if isinstance(name, str) else list(name or [])


def build_hf_model(config: dict, *, checkpoint_blocks: bool = False) -> HFTrainModel:
    """The model for ``config`` in the current default dtype and device, ready to train."""
    import transformers

    model_type, conf = transformers_config(config)
    if hasattr(conf, "use_cache"):
        conf.use_cache = False
    # Attention dropout: on GPUs the flash / memory-efficient SDPA kernels apply it inside the
    # kernel (saving an RNG state, not a mask), but on CPU, where simulate runs, SDPA with dropout
    # falls back to the math path and keeps the s x s probabilities, which a GPU run never holds.
    # Simulate what the GPU does: no attention dropout (hidden-state dropout stays).
    for name in ("attention_probs_dropout_prob", "attention_dropout", "attn_pdrop"):
        if getattr(conf, name, None):
            setattr(conf, name, 0.0)
    # The attention transformers itself picks (bot/catalog/kernel_defaults.py assumes the same): SDPA where the
    # model class supports it (no s x s scores kept), eager where it does not (Gemma-2's soft-capping:
    # ``_supports_sdpa = False``; the eager path keeps the probabilities, as on a GPU).
    conf._attn_implementation = _attention_for(model_type)
    # from_config builds in config.dtype when it has one (transformers modeling_utils _from_config:
    # dtype = kwargs.pop("dtype", config.dtype)); build in the caller's default dtype instead, the
    # training dtype, so a bf16 checkpoint config under bf16-mixed simulates fp32 master weights.
    dtype = {"dtype": torch.get_default_dtype()}
    if model_type in SEQ2SEQ_TYPES:
        model, kind = transformers.AutoModelForSeq2SeqLM.from_config(conf, **dtype), "seq2seq"
    elif model_type in ENCODER_TYPES:
        model, kind = transformers.AutoModelForMaskedLM.from_config(conf, **dtype), "masked"
    else:
        try:
            model, kind = transformers.AutoModelForCausalLM.from_config(conf, **dtype), "causal"
        except ValueError:
            model, kind = transformers.AutoModelForImageTextToText.from_config(conf, **dtype), "causal"
    model.train()
    wrapper = HFTrainModel(model, kind)
    if checkpoint_blocks:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        wrapper.checkpoint_blocks = True
    return wrapper
