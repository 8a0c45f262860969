"""What each ``TrainingSetup`` field means, in one place, for every tool schema (MCP, LangChain).

``FIELD_DOCS`` holds each field's description and unit; ``tool_fields()`` turns
``TrainingSetup``'s own fields (names, types, allowed values) plus ``bot.core.setup.LIMITS`` (ranges)
and these docs into pydantic field definitions for a tool's argument model. Tool arguments are
strict: ``gpu_count: true`` or ``activation_checkpointing: "yes"`` are errors, not 1 and True;
strings have a length limit; numbers must be finite. Adding a field to ``TrainingSetup`` without
a line here fails ``tests/test_mcp.py`` (every field needs a description).

One tool input is not a setup field: ``hf_config``, the model as a Hugging Face ``config.json`` (a
path to the file or its folder, the JSON text or object, or a Hub id). ``estimate_tool_fields()``
adds it to the setup fields for both ``estimate_memory`` schemas (MCP and LangChain);
``read_config_input()`` reads it with the reader ``shardwise calc --config`` uses
(``bot.catalog.hf_config``: the data-dir cache for Hub ids, the offline message), and
``model_report()``/``card_report()`` say which model and card a result was computed for (a model
read from a config, with total and active parameters; a card the catalog lacks, marked).
"""

from __future__ import annotations

from typing import Annotated, Any, NamedTuple, Optional, Union, cast, get_args

from pydantic import Field
from pydantic.fields import FieldInfo

from bot.core.errors import UserError

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
    "fsdp_root": ("FSDP root unit (embeddings, final norm, LM head): resharded after forward and gathered again "
                  "for the head's backward, kept gathered through backward, or split into units of their own.", ""),
    "reshard_after_forward": ("FSDP2 reshard_after_forward for the blocks: true, false, or a group size k "
                              "(blocks kept sharded over k GPUs between forward and backward).", ""),
    "optimizer_in_backward": ("The optimizer steps each parameter inside backward and frees its gradient at once "
                              "(torchtune optimizer_in_bwd).", ""),
    "paged_optimizer": ("Optimizer state in CUDA managed memory, paged to host RAM under pressure (bitsandbytes "
                        "PagedAdamW/PagedAdamW8bit).", ""),
    "engine": ("Whose sharding runs: pytorch (FSDP, the default) or deepspeed (SHARD_GRAD_OP is then ZeRO-2: every "
               "16-bit weight on each GPU, fp32 master weights in the optimizer, gradient copies at the step).", ""),
    # issue 26 (numbers engineer)
    "tf32": ("fp32 matmuls on TF32 tensor cores (allow_tf32 / set_float32_matmul_precision('high')); PyTorch's "
             "default is off, so fp32 runs at the CUDA-core fp32 rate.", ""),
    "grad_sync": ("FSDP2 gradient sync under gradient accumulation: every micro-step (the default) or only the last "
                  "(set_requires_gradient_sync(False): an unsharded gradient per GPU until the sync).", ""),
    "attn_implementation": ("Attention kernel: eager (keeps the s x s scores), sdpa or flash_attention_2; default: "
                            "what transformers picks for the model (eager for Gemma-2 and BLOOM).", ""),
    "expandable_segments": ("PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (fewer bytes reserved beyond the "
                            "allocated peak); default off, PyTorch's default allocator.", ""),
    "torch_version": ("The PyTorch release the run uses (e.g. 2.5); from 2.10 F.rms_norm runs fused on CUDA, "
                      "which saves less for PyTorch-native blocks. Default: the calculator's (2.13).", ""),
    "model_code": ("Whose code runs a Llama-family block: pytorch (torch.nn.RMSNorm, the default) or transformers "
                   "(Hugging Face's LlamaDecoderLayer, which keeps fewer bytes per token).", ""),
    "lora_dropout": ("PEFT's lora_dropout probability (default 0): above 0 each adapter keeps a dropped copy "
                     "of its input for backward.", ""),
    "logits_kept": ("The training loop keeps the model output's logits through backward: fp32 (transformers "
                    "before v4.46) or 16bit; default: dropped before backward, as HF Trainer does.", ""),
    "tensor_parallel": ("Tensor-parallel degree, if any: the answer computes the stated plan (FSDP over the rest); the "
                        "strategy table still assumes pure data parallelism.", "ranks"),
    "pipeline_parallel": ("Pipeline-parallel degree, if any: the answer computes the stated plan (FSDP over the rest); the "
                        "strategy table still assumes pure data parallelism.", "stages"),
    "context_parallel": ("Context-parallel degree, if any: the answer computes the stated plan (FSDP over the rest); the "
                        "strategy table still assumes pure data parallelism.", "ranks"),
    # not a TrainingSetup field: the model as a config.json (TOOL_ONLY_FIELDS)
    "hf_config": ("The model as a Hugging Face config.json instead of model/params_b: a path to the file or "
               "its folder (on the server's machine), the JSON text or object itself, or a Hub id like "
               "'Qwen/Qwen3-30B-A3B' (config only, cached; offline only a cached one). Parameters come "
               "from the architecture (MoE: total and active).", ""),
}

# Tool inputs beyond TrainingSetup's fields (read by ``read_config_input``).
# Named hf_config, not config: LangChain's StructuredTool passes its RunnableConfig to the tool as
# ``config`` and would overwrite an argument of that name (langchain_core.tools.structured._run).
CONFIG_FIELD = "hf_config"
TOOL_ONLY_FIELDS = (CONFIG_FIELD,)
# A config.json is a few KB (large label maps reach tens of KB); pasted text beyond this is not one.
MAX_CONFIG_CHARS = 100_000
MAX_SOURCE_CHARS = 120  # a path or Hub id is named back in results and errors up to this length
MAX_ERROR_LINE = 300  # a config error is one line of at most this (MCP cuts its errors to 200)


def describe(name: str) -> str:
    """A field's description with its unit, as a schema shows it."""
    text, unit = FIELD_DOCS[name]
    return f"{text} Unit: {unit}." if unit else text


def tool_fields(*, strict: bool = True) -> dict[str, tuple[Any, FieldInfo]]:
    """``{name: (annotation, FieldInfo)}`` for every ``TrainingSetup`` field, optional (default
    None), with description, unit, range (``bot.core.setup.LIMITS``), string length limit and strict
    types. Raises KeyError naming a field that has no entry in ``FIELD_DOCS``."""
    from bot.core.setup import LIMITS, TrainingSetup

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


def config_field(*, strict: bool = True) -> tuple[Any, FieldInfo]:
    """``(annotation, FieldInfo)`` of the ``hf_config`` input: text (a path, a Hub id or the JSON
    itself, at most ``MAX_CONFIG_CHARS``) or a JSON object; optional."""
    text = Annotated[str, Field(strict=strict, min_length=1, max_length=MAX_CONFIG_CHARS)]
    annotation: Any = Optional[Union[text, dict[str, Any]]]  # noqa: UP007,UP045  (built at run time)
    return annotation, cast(FieldInfo, Field(default=None, description=describe(CONFIG_FIELD)))


def estimate_tool_fields(*, strict: bool = True) -> dict[str, tuple[Any, FieldInfo]]:
    """The arguments of an ``estimate_memory`` tool: every ``TrainingSetup`` field
    (``tool_fields``) plus ``hf_config``."""
    return {**tool_fields(strict=strict), CONFIG_FIELD: config_field(strict=strict)}


class ConfigInputError(UserError, ValueError):
    """An ``hf_config`` input that cannot be used; the message is one short line saying why."""


class ConfigInput(NamedTuple):
    """A tool's ``hf_config`` input, read: the model, where it came from, the config dict."""

    spec: Any  # bot.catalog.ModelSpec
    source: str
    data: dict[str, Any]


def read_config_input(config: Any, *, model: str | None = None, params_b: float | None = None):
    """``(ModelSpec, source)`` for a tool's ``hf_config`` input (``load_config_input``)."""
    read = load_config_input(config, model=model, params_b=params_b)
    return read.spec, read.source


def load_config_input(config: Any, *, model: str | None = None, params_b: float | None = None) -> ConfigInput:
    """A tool's ``hf_config`` input through the reader of ``shardwise calc --config`` and ``bench
    simulate --config`` (``bot.catalog.hf_config.read_hf_config``): a file or folder path, JSON
    text or object, or a Hub id (fetched config-only and cached in the data dir; offline: "no
    network: paste the config.json or pass --config PATH"). ``source`` names where the config came
    from without echoing pasted text. Raises ``ConfigInputError``."""
    from bot.catalog.hf_config import ConfigError, read_hf_config

    if model or params_b:  # the CLI's rule: one way to name the model
        raise ConfigInputError("pass either hf_config or model/params_b, not both")
    if isinstance(config, dict):
        source = "a JSON object"
    elif isinstance(config, str) and config.strip().startswith(("{", "[")):
        source = "pasted JSON"
    elif isinstance(config, str) and len(config) <= MAX_SOURCE_CHARS and config.isprintable():
        source = config.strip()  # a path or a Hub id: worth naming back
    else:
        source = "the hf_config text"  # never echo a huge or binary value back
    try:
        spec, data = read_hf_config(config)
    except ConfigError as err:
        raise ConfigInputError(_one_line(f"hf_config: {err}")) from None
    except (ValueError, OSError) as err:  # unreadable file, a config of an unknown shape (as the CLI)
        reason = err.strerror if isinstance(err, OSError) and err.strerror else type(err).__name__
        raise ConfigInputError(_one_line(f"hf_config: cannot read {source}: {reason}")) from None
    return ConfigInput(spec, source, data)


def _one_line(text: str, limit: int = MAX_ERROR_LINE) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def model_report(spec: Any, source: str) -> dict[str, Any]:
    """What a tool says about a model read from a config: name, kind, total and active
    parameters (they differ for MoE), whether the count is approximate, and its caveats."""
    return {"source": source, "name": spec.name, "kind": spec.kind, "params": spec.params,
            "params_b": round(spec.params_b, 3), "active_params": spec.active_params,
            "active_params_b": round(spec.active_params_b, 3), "approximate": bool(spec.approximate),
            "caveats": list(spec.caveats)}


def card_report(resolved: Any) -> dict[str, Any]:
    """The card a result was computed for. A card the catalog lacks is accepted with its stated
    memory (``bot.catalog.custom_gpu``) and marked: ``in_catalog`` false, ``approximate`` true,
    and a note that its compute and link figures are placeholders."""
    from bot.catalog import list_gpus

    gpu = resolved.gpu
    if gpu is None:  # only gpu_memory_gb was given
        return {"name": None, "memory_gb": resolved.gpu_memory_gb, "in_catalog": False, "approximate": True,
                "backend": None, "note": "no GPU named: memory as stated; compute and link figures are defaults"}
    in_catalog = any(g.name == gpu.name for g in list_gpus())
    return {"name": gpu.name, "memory_gb": resolved.gpu_memory_gb, "in_catalog": in_catalog,
            "approximate": bool(gpu.approximate), "backend": gpu.backend, "note": gpu.notes or ""}
