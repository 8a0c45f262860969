"""The calculator: per-GPU memory, communication and step time for every training strategy.

    from bot.calc import estimate, estimate_setup
    est = estimate(resolved)             # resolved: bot.core.setup.ResolvedSetup
    est.memory["fsdp_full_shard"].total_gib, est.comm["ddp"].gb_per_step, est.time["ddp"]
    est.numbers()                        # {"memory.ddp.total_gib": ..., "time.ddp.step_seconds": ...}

Formulas live in ``memory.py`` (memory) and ``comm.py`` (communication, compute, overlap); this
module only assembles them. No torch import: an estimate takes well under a millisecond.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import Any

from bot.calc.comm import (
    MFU,
    CommEstimate,
    CommInputs,
    comm_bytes_and_seconds,
    comm_estimate,
    compute_parts,
    hfu,
    links,
    model_flops_per_token,
    offload_seconds,
    optimizer_step_seconds,
    peak_tflops,
    size_free_hfu,
)
from bot.calc.memory import (
    GIB,
    HEADROOM_FIXED_GIB,
    HEADROOM_FRACTION,
    MemoryEstimate,
    MemoryInputs,
    deepspeed_fp32_grad_copy_bytes,
    deepspeed_layout,
    host_ram_fits,
    lora_params,
    memory_estimate,
    reserved_fraction,
)
from bot.catalog import ModelSpec
from bot.catalog.kernel_defaults import default_attn_implementation, default_norm_impl
from bot.core.setup import ResolvedSetup, TrainingSetup, resolve_setup
from bot.strategies import TRAINING_STRATEGIES

__all__ = ["CommEstimate", "Estimate", "MemoryEstimate", "Throughput", "estimate", "estimate_setup",
           "host_ram_fits"]


@dataclass(frozen=True)
class Throughput:
    """Speed of one strategy: tokens per second per GPU and the model FLOPs utilisation it means."""

    tokens_per_s_per_gpu: float
    mfu: float  # model FLOPs (6N + 12 L h s, no recompute) / (step time x bf16 dense peak)


@dataclass(frozen=True)
class Estimate:
    """Memory, communication and step time for every strategy in ``TRAINING_STRATEGIES``."""

    memory: dict[str, MemoryEstimate]
    comm: dict[str, CommEstimate]
    time: dict[str, float]  # seconds per optimizer step: compute + non-overlapped comm (+ offload)
    inputs: dict[str, Any]  # the resolved inputs, quoted by the answer's calc citation
    resolved: ResolvedSetup
    throughput: dict[str, Throughput] = field(default_factory=dict)
    # What the setup asks for that the calculator does not model (named, never silently dropped).
    not_modelled: list[str] = field(default_factory=list)
    # When SHARD_GRAD_OP has DeepSpeed ZeRO-2's layout: the fp32 copy of one GPU's gradient
    # partition its optimizer step makes (bot.calc.memory.deepspeed_fp32_grad_copy_bytes), GiB.
    zero2_fp32_grad_copy_gib: float | None = None

    def numbers(self) -> dict[str, float | int | bool]:
        """Flat dict keyed ``memory.<strategy>.<field>``, ``comm.<strategy>.<field>``,
        ``time.<strategy>.step_seconds`` (DESIGN.md), plus ``memory.<s>.reserved_gib``,
        ``time.<s>.tokens_per_s_per_gpu`` and ``time.<s>.mfu``. Floats rounded to 4 decimals."""
        out: dict[str, float | int | bool] = {}
        for strategy in TRAINING_STRATEGIES:
            for kind, record in (("memory", self.memory[strategy]), ("comm", self.comm[strategy])):
                for f in fields(record):
                    out[f"{kind}.{strategy}.{f.name}"] = _clean(getattr(record, f.name))
            out[f"time.{strategy}.step_seconds"] = _clean(self.time[strategy])
            if strategy in self.throughput:
                speed = self.throughput[strategy]
                out[f"time.{strategy}.tokens_per_s_per_gpu"] = _clean(speed.tokens_per_s_per_gpu)
                out[f"time.{strategy}.mfu"] = _clean(speed.mfu)
        if self.zero2_fp32_grad_copy_gib is not None:
            out["memory.fsdp_shard_grad_op.zero2_fp32_grad_copy_gib"] = _clean(self.zero2_fp32_grad_copy_gib)
        return out


def _clean(value: Any) -> Any:
    """A record's field for ``numbers()``: floats rounded to 4 decimals, ints and bools as they are."""
    return round(value, 4) if isinstance(value, float) else value


# Run options the calculator cannot express; each one stated is named in ``not_modelled``.
NOT_MODELLED_NOTICE = {
    "tensor_parallel": "tensor parallelism (weights split inside a layer)",
    "context_parallel": "context/sequence parallelism",
    "pipeline_parallel": "pipeline parallelism",
}


def not_modelled(setup: TrainingSetup) -> list[str]:
    """Named notices for what this setup states but the calculator does not model: a tensor,
    context or pipeline parallel degree > 1 (``TrainingSetup.tensor_parallel`` etc.) is named
    here rather than silently ignored."""
    notes = []
    for name, text in NOT_MODELLED_NOTICE.items():
        degree = getattr(setup, name, None)
        if degree and degree > 1:
            notes.append(f"{text}, degree {degree}, is not modelled: the figures assume pure data "
                         "parallelism over all the GPUs")
    return notes


def _mem_inputs(resolved: ResolvedSetup) -> MemoryInputs:
    setup = resolved.setup
    return MemoryInputs(
        model=resolved.model, gpu_memory_gb=resolved.gpu_memory_gb, gpu_count=resolved.gpu_count,
        gpus_per_node=resolved.gpus_per_node, precision=resolved.precision, optimizer=resolved.optimizer,
        finetune=resolved.finetune, lora_rank=resolved.lora_rank, seq_len=resolved.seq_len,
        micro_batch=resolved.micro_batch, activation_checkpointing=bool(setup.activation_checkpointing),
        cpu_ram_gb=setup.cpu_ram_gb, optimizer_impl=setup.optimizer_impl or "foreach",
        ddp_bucket_view=bool(setup.ddp_bucket_view), checkpointing_policy=setup.checkpointing_policy,
        checkpoint_every=setup.checkpoint_every or 1, torch_compile=bool(setup.torch_compile),
        loss_impl=setup.loss_impl or "standard", grad_accum_steps=setup.grad_accum_steps or 1,
        lora_targets=setup.lora_targets or "attention", base_dtype=setup.base_dtype,
        float8=bool(setup.float8), norm_impl=setup.norm_impl or default_norm_impl(setup.torch_version, setup.model_code),
        fsdp_root=setup.fsdp_root or "resharded", reshard_after_forward=setup.reshard_after_forward,
        optimizer_in_backward=bool(setup.optimizer_in_backward), paged_optimizer=bool(setup.paged_optimizer),
        engine=setup.engine or "pytorch", grad_sync=setup.grad_sync or "every_micro_step",
        attn_implementation=setup.attn_implementation, expandable_segments=bool(setup.expandable_segments),
        model_code=setup.model_code or "pytorch", lora_dropout=setup.lora_dropout or 0.0,
        logits_kept=setup.logits_kept,
    )


def _comm_inputs(resolved: ResolvedSetup) -> CommInputs:
    setup = resolved.setup
    return CommInputs(
        model=resolved.model, gpu=resolved.gpu, gpu_count=resolved.gpu_count,
        gpus_per_node=resolved.gpus_per_node, nodes=resolved.nodes,
        intra_node_link=resolved.intra_node_link, inter_node_gbps=resolved.inter_node_gbps,
        precision=resolved.precision, finetune=resolved.finetune, lora_rank=resolved.lora_rank,
        seq_len=resolved.seq_len, micro_batch=resolved.micro_batch,
        activation_checkpointing=bool(setup.activation_checkpointing),
        checkpointing_policy=setup.checkpointing_policy, checkpoint_every=setup.checkpoint_every or 1,
        torch_compile=bool(setup.torch_compile), grad_accum_steps=setup.grad_accum_steps or 1,
        lora_targets=setup.lora_targets or "attention", float8=bool(setup.float8), mfu=setup.mfu,
        reshard_after_forward=setup.reshard_after_forward, tf32=bool(setup.tf32),
        grad_sync=setup.grad_sync or "every_micro_step", base_dtype=setup.base_dtype,
    )


def estimate(resolved: ResolvedSetup) -> Estimate:
    """Estimate every strategy for a resolved setup (see ``bot.core.setup.resolve_setup``)."""
    setup = resolved.setup
    model = resolved.model
    mem_in, comm_in = _mem_inputs(resolved), _comm_inputs(resolved)
    memory = {s: memory_estimate(mem_in, s) for s in TRAINING_STRATEGIES}
    _, ddp_seconds = comm_bytes_and_seconds(comm_in, "ddp")
    comm = {s: comm_estimate(comm_in, s, ddp_seconds) for s in TRAINING_STRATEGIES}
    rest_seconds, core_seconds = compute_parts(comm_in)
    compute = rest_seconds + core_seconds
    time = {s: optimizer_step_seconds(comm_in, s, compute, comm[s].seconds_per_step) for s in TRAINING_STRATEGIES}
    time["fsdp_full_shard_offload"] += offload_seconds(comm_in)
    accum = setup.grad_accum_steps or 1
    tokens_per_step = resolved.micro_batch * resolved.seq_len * accum  # per GPU
    peak = peak_tflops(resolved.gpu, resolved.precision, bool(setup.tf32))
    flops = model_flops_per_token(comm_in)
    throughput = {}
    for s, seconds in time.items():
        tps = tokens_per_step / seconds if seconds > 0 else 0.0
        throughput[s] = Throughput(tokens_per_s_per_gpu=tps, mfu=tps * flops / (peak * 1e12))

    bw = links(comm_in)
    gpu = resolved.gpu
    targets = setup.lora_targets or "attention"
    trainable = model.params if setup.finetune == "full" else lora_params(model, resolved.lora_rank, targets)
    calibrated = hfu(comm_in)
    inputs = {
        "model": model.name, "params": model.params, "params_b": round(model.params_b, 3),
        "model_approximate": model.approximate, "model_source": model.source_url,
        "n_layers": model.n_layers, "hidden": model.hidden, "intermediate": model.intermediate,
        "n_heads": model.n_heads, "n_kv_heads": model.n_kv_heads, "vocab": model.vocab,
        "trainable_params": trainable,
        "gpu": gpu.name if gpu else None, "gpu_source": gpu.source_url if gpu else None,
        "gpu_memory_gb": resolved.gpu_memory_gb, "gpu_count": resolved.gpu_count,
        "nodes": resolved.nodes, "gpus_per_node": resolved.gpus_per_node,
        "intra_node_link": resolved.intra_node_link, "intra_bus_gb_s": round(bw.intra_gb_s, 2),
        "inter_node_link": resolved.inter_node_link, "inter_node_gbps": resolved.inter_node_gbps,
        "node_nic_bus_gb_s": round(bw.node_nic_gb_s, 2),
        "precision": setup.precision, "optimizer": setup.optimizer, "finetune": setup.finetune,
        "lora_rank": setup.lora_rank if setup.finetune != "full" else None,
        "seq_len": setup.seq_len, "micro_batch": setup.micro_batch,
        "activation_checkpointing": bool(setup.activation_checkpointing),
        "checkpointing_policy": setup.checkpointing_policy if setup.activation_checkpointing else None,
        "checkpoint_every": setup.checkpoint_every if setup.checkpointing_policy == "every_k" else None,
        "optimizer_impl": setup.optimizer_impl, "ddp_bucket_view": setup.ddp_bucket_view,
        "torch_compile": setup.torch_compile, "loss_impl": setup.loss_impl,
        "grad_accum_steps": accum, "global_batch": resolved.micro_batch * accum * resolved.gpu_count,
        "lora_targets": setup.lora_targets, "base_dtype": setup.base_dtype, "float8": setup.float8,
        "lora_dropout": setup.lora_dropout, "logits_kept": setup.logits_kept,
        "norm_impl": setup.norm_impl, "cpu_ram_gb": setup.cpu_ram_gb, "engine": setup.engine or "pytorch",
        "peak_tflops": peak, "peak_tflops_assumed": gpu is None,
        "mfu": setup.mfu if setup.mfu else MFU,
        "mfu_source": "stated" if setup.mfu else ("calibrated HFU" if calibrated else "default"),
        "hfu": round(calibrated, 4) if calibrated and not setup.mfu else None,
        "compute_seconds": round(compute, 4),
        # the attention core's part of it, timed at the size-free HFU (comm.compute_parts; 0 under a
        # stated MFU or on an uncalibrated GPU)
        "attention_core_seconds": round(core_seconds, 4),
        "attention_core_hfu": size_free_hfu(comm_in) if core_seconds > 0 else None,
        # model FLOPs / (compute time x peak): the MFU of the compute alone, before communication
        "compute_mfu": round(resolved.micro_batch * resolved.seq_len * flops / (compute * peak * 1e12), 4)
        if compute > 0 else None,
        "headroom": f"{HEADROOM_FIXED_GIB:g} GiB + {HEADROOM_FRACTION:.0%} of capacity",
        "reserved_model": f"allocated + {reserved_fraction(mem_in):.0%} of activations and buffers",
        "assumed": list(resolved.assumed),
    }
    zero2_copy = (deepspeed_fp32_grad_copy_bytes(mem_in) / GIB
                  if deepspeed_layout(mem_in, "fsdp_shard_grad_op") else None)
    return Estimate(memory=memory, comm=comm, time=time, inputs=inputs, resolved=resolved,
                    throughput=throughput, not_modelled=not_modelled(setup), zero2_fp32_grad_copy_gib=zero2_copy)


def estimate_setup(setup: TrainingSetup, default_gpu: str | None = None,
                   default_gpu_count: int | None = None, model_spec: ModelSpec | None = None) -> Estimate:
    """Resolve ``setup`` (raises ``bot.core.setup.SetupError`` listing every problem) and estimate it.

    ``model_spec``: a model the catalog lacks, e.g. read from a Hugging Face config.json
    (``bot.catalog.hf_config.model_from_hf_config``); it replaces ``setup.model``/``params_b``."""
    if model_spec is None:
        return estimate(resolve_setup(setup, default_gpu=default_gpu, default_gpu_count=default_gpu_count))
    return estimate(resolve_with_model(setup, model_spec, default_gpu=default_gpu,
                                       default_gpu_count=default_gpu_count))


def resolve_with_model(setup: TrainingSetup, model_spec: ModelSpec, default_gpu: str | None = None,
                       default_gpu_count: int | None = None) -> ResolvedSetup:
    """``resolve_setup`` with the model given as a shape: resolve the rest of the setup around
    its parameter count, then put the real shape in (so GQA, q width, experts and vocabulary are
    the config's, not a generic model's of that size)."""
    sized = setup.model_copy(update={"model": None, "params_b": round(model_spec.params_b, 3)})
    resolved = resolve_setup(sized, default_gpu=default_gpu, default_gpu_count=default_gpu_count)
    data = resolved.setup
    if ("seq_len" in resolved.assumed and model_spec.arch != "llama"
            and (data.seq_len or 0) > model_spec.max_positions):
        # An assumed length must fit the model's learned position table (resolve_setup's rule).
        data = data.model_copy(update={"seq_len": model_spec.max_positions})
    assumed = tuple(a for a in resolved.assumed if a != "attn_implementation")
    if data.attn_implementation is None and default_attn_implementation(model_spec) == "eager":
        assumed += ("attn_implementation",)  # the config's architecture runs eagerly in transformers
    return replace(resolved, model=model_spec, setup=data, assumed=assumed)
