"""What each ``TrainingSetup`` field means, in one place, for every tool schema (MCP, LangChain).

``FIELD_DOCS`` holds each field's description and unit; ``tool_fields()`` turns
``TrainingSetup``'s own fields (names, types, allowed values) plus ``bot.setup.LIMITS`` (ranges)
and these docs into pydantic field definitions for a tool's argument model. Tool arguments are
strict: ``gpu_count: true`` or ``activation_checkpointing: "yes"`` are errors, not 1 and True;
strings have a length limit; numbers must be finite. Adding a field to ``TrainingSetup`` without
a line here fails ``tests/test_mcp.py`` (every field needs a description).
"""

from __future__ import annotations

from typing import Annotated, Any, Optional, Union, cast, get_args

from pydantic import Field
from pydantic.fields import FieldInfo

# Longest accepted names: catalog names are short ("Llama-2-7B", "A100 40GB SXM"); anything longer
# is not a name, and refusing it early keeps errors and logs short.
MAX_NAME_CHARS = 200

# field -> (description, unit or ""). Units: GB = 10^9 bytes (how cards and RAM are sold),
# GiB = 2^30 bytes (what the calculator reports), Gb/s = 10^9 bits per second.
FIELD_DOCS: dict[str, tuple[str, str]] = {
    "model": ("Catalog model name ('Llama-2-7B', 'Qwen2.5-14B', 'GPT-2') or a size like '7b'.", ""),
    "params_b": ("Model parameters in billions, if no model name is given.", "billion parameters"),
    "gpu": ("GPU name ('A100 40GB', 'H100', 'RTX 4090').", ""),
    "gpu_memory_gb": ("Memory of one GPU, if no GPU name is given.", "GB"),
    "gpu_count": ("Total GPUs (world size) across all nodes.", "GPUs"),
    "gpus_per_node": ("GPUs in each node.", "GPUs"),
    "nodes": ("Number of nodes (machines).", "nodes"),
    "intra_node_link": ("Link between the GPUs inside a node.", ""),
    "inter_node_link": ("Network between nodes; 'none' for a single node.", ""),
    "inter_node_gbps": ("Network bandwidth of one NODE (all its NICs together), not per GPU.", "Gb/s"),
    "precision": ("Training precision: bf16-mixed/fp16-mixed (fp32 master weights), pure bf16, or fp32.", ""),
    "optimizer": ("Optimizer: adamw (two fp32 moments), sgd (momentum), adam8bit (8-bit moments).", ""),
    "finetune": ("What trains: every weight (full), LoRA adapters, or QLoRA (4-bit base + adapters).", ""),
    "seq_len": ("Tokens per sequence.", "tokens"),
    "micro_batch": ("Sequences per GPU per forward/backward pass.", "sequences"),
    "activation_checkpointing": ("Recompute activations in backward instead of storing them.", ""),
    "cpu_ram_gb": ("Host RAM of one node (for CPU offload).", "GB"),
    "lora_rank": ("LoRA rank r (LoRA/QLoRA only).", ""),
    "optimizer_impl": ("torch.optim implementation of the optimizer step (PyTorch's default: foreach).", ""),
    "ddp_bucket_view": ("DDP gradient_as_bucket_view=True (gradients live in the buckets; default False).", ""),
    "checkpointing_policy": ("Which activations are recomputed: every block (full), every k-th block "
                             "(every_k), or selected ops.", ""),
    "checkpoint_every": ("k for checkpointing_policy 'every_k': checkpoint every k-th block.", "blocks"),
    "torch_compile": ("The model is wrapped in torch.compile.", ""),
    "loss_impl": ("Cross-entropy over the logits: standard, fused, or chunked (never the full logits).", ""),
    "grad_accum_steps": ("Micro-batches accumulated per optimizer step.", "micro-batches"),
    "lora_targets": ("Which linears get LoRA adapters.", ""),
    "base_dtype": ("dtype of the frozen base weights under LoRA/QLoRA.", ""),
    "float8": ("torchao float8 linears and float8 all-gathers.", ""),
    "mfu": ("Model FLOPs utilisation you assert for the step-time estimate.", "fraction 0..1"),
    "norm_impl": ("RMSNorm/LayerNorm kernel: eager PyTorch ops or one fused kernel (saves less for backward).", ""),
    "tensor_parallel": ("Tensor-parallel degree, if any (not modelled: named in the answer's notices).", "ranks"),
    "pipeline_parallel": ("Pipeline-parallel degree, if any (not modelled: named in the answer's notices).", "stages"),
    "context_parallel": ("Context-parallel degree, if any (not modelled: named in the answer's notices).", "ranks"),
}


def describe(name: str) -> str:
    """A field's description with its unit, as a schema shows it."""
    text, unit = FIELD_DOCS[name]
    return f"{text} Unit: {unit}." if unit else text


def tool_fields(*, strict: bool = True) -> dict[str, tuple[Any, FieldInfo]]:
    """``{name: (annotation, FieldInfo)}`` for every ``TrainingSetup`` field, optional (default
    None), with description, unit, range (``bot.setup.LIMITS``), string length limit and strict
    types. Raises KeyError naming a field that has no entry in ``FIELD_DOCS``."""
    from bot.setup import LIMITS, TrainingSetup

    out: dict[str, tuple[Any, FieldInfo]] = {}
    for name, info in TrainingSetup.model_fields.items():
        if name not in FIELD_DOCS:
            raise KeyError(f"TrainingSetup.{name} has no description in bot.fields.FIELD_DOCS")
        args = [a for a in get_args(info.annotation) if a is not type(None)] or [info.annotation]
        base = args[0] if len(args) == 1 else Union[tuple(args)]  # noqa: UP007  (built at run time)
        constraints: dict[str, Any] = {}
        if base in (int, float, bool, str):
            constraints["strict"] = strict  # no "8" -> 8, no true -> 1, no "yes" -> True
        if base in (int, float) and name in LIMITS:
            constraints["ge"], constraints["le"] = LIMITS[name]
        if base is str:
            constraints["max_length"] = MAX_NAME_CHARS
        if base is float:
            constraints["allow_inf_nan"] = False
        inner = Annotated[base, Field(**constraints)] if constraints else base
        annotation: Any = Optional[inner]  # noqa: UP045  (a type built at run time)
        # Field() is typed as returning its default (for ``x: int = Field(...)``); it is a FieldInfo.
        out[name] = (annotation, cast(FieldInfo, Field(default=None, description=describe(name))))
    return out
