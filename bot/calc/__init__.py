"""The calculator: per-GPU memory, communication and step time for every training strategy.

    from bot.calc import estimate, estimate_setup
    est = estimate(resolved)             # resolved: bot.setup.ResolvedSetup
    est.memory["fsdp_full_shard"].total_gib, est.comm["ddp"].gb_per_step, est.time["ddp"]
    est.numbers()                        # {"memory.ddp.total_gib": ..., "time.ddp.step_seconds": ...}

Formulas live in ``memory.py`` (memory) and ``comm.py`` (communication, compute, overlap); this
module only assembles them. No torch import: an estimate takes well under a millisecond.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from bot.calc.comm import (
    MFU,
    CommEstimate,
    CommInputs,
    comm_bytes_and_seconds,
    comm_estimate,
    compute_seconds,
    links,
    offload_seconds,
    peak_tflops,
    step_seconds,
)
from bot.calc.memory import (
    HEADROOM_FIXED_GIB,
    HEADROOM_FRACTION,
    MemoryEstimate,
    MemoryInputs,
    lora_params,
    memory_estimate,
)
from bot.setup import ResolvedSetup, TrainingSetup, resolve_setup
from bot.strategies import TRAINING_STRATEGIES

__all__ = ["CommEstimate", "Estimate", "MemoryEstimate", "estimate", "estimate_setup"]


@dataclass(frozen=True)
class Estimate:
    """Memory, communication and step time for every strategy in ``TRAINING_STRATEGIES``."""

    memory: dict[str, MemoryEstimate]
    comm: dict[str, CommEstimate]
    time: dict[str, float]  # step seconds: compute + non-overlapped communication (+ offload)
    inputs: dict  # the resolved inputs, quoted by the answer's calc citation
    resolved: ResolvedSetup

    def numbers(self) -> dict[str, float | int | bool]:
        """Flat dict keyed ``memory.<strategy>.<field>``, ``comm.<strategy>.<field>``,
        ``time.<strategy>.step_seconds`` (DESIGN.md). Floats rounded to 4 decimals."""
        out: dict[str, float | int | bool] = {}
        for strategy in TRAINING_STRATEGIES:
            for kind, record in (("memory", self.memory[strategy]), ("comm", self.comm[strategy])):
                for f in fields(record):
                    out[f"{kind}.{strategy}.{f.name}"] = _clean(getattr(record, f.name))
            out[f"time.{strategy}.step_seconds"] = _clean(self.time[strategy])
        return out


def _clean(value):
    return round(value, 4) if isinstance(value, float) else value


def estimate(resolved: ResolvedSetup) -> Estimate:
    """Estimate every strategy for a resolved setup (see ``bot.setup.resolve_setup``)."""
    setup = resolved.setup
    model = resolved.model
    mem_in = MemoryInputs(
        model=model, gpu_memory_gb=resolved.gpu_memory_gb, gpu_count=resolved.gpu_count,
        gpus_per_node=resolved.gpus_per_node, precision=setup.precision, optimizer=setup.optimizer,
        finetune=setup.finetune, lora_rank=setup.lora_rank, seq_len=setup.seq_len,
        micro_batch=setup.micro_batch, activation_checkpointing=bool(setup.activation_checkpointing),
        cpu_ram_gb=setup.cpu_ram_gb,
    )
    comm_in = CommInputs(
        model=model, gpu=resolved.gpu, gpu_count=resolved.gpu_count, gpus_per_node=resolved.gpus_per_node,
        nodes=resolved.nodes, intra_node_link=resolved.intra_node_link,
        inter_node_gbps=resolved.inter_node_gbps, precision=setup.precision, finetune=setup.finetune,
        lora_rank=setup.lora_rank, seq_len=setup.seq_len, micro_batch=setup.micro_batch,
        activation_checkpointing=bool(setup.activation_checkpointing),
    )
    memory = {s: memory_estimate(mem_in, s) for s in TRAINING_STRATEGIES}
    _, ddp_seconds = comm_bytes_and_seconds(comm_in, "ddp")
    comm = {s: comm_estimate(comm_in, s, ddp_seconds) for s in TRAINING_STRATEGIES}
    compute = compute_seconds(comm_in)
    time = {s: step_seconds(compute, comm[s].seconds_per_step) for s in TRAINING_STRATEGIES}
    time["fsdp_full_shard_offload"] += offload_seconds(comm_in)

    bw = links(comm_in)
    gpu = resolved.gpu
    trainable = model.params if setup.finetune == "full" else lora_params(model, setup.lora_rank)
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
        "cpu_ram_gb": setup.cpu_ram_gb,
        "peak_tflops": peak_tflops(gpu, setup.precision), "peak_tflops_assumed": gpu is None,
        "mfu": MFU, "compute_seconds": round(compute, 4),
        "headroom": f"{HEADROOM_FIXED_GIB:g} GiB + {HEADROOM_FRACTION:.0%} of capacity",
        "assumed": list(resolved.assumed),
    }
    return Estimate(memory=memory, comm=comm, time=time, inputs=inputs, resolved=resolved)


def estimate_setup(setup: TrainingSetup, default_gpu: str | None = None,
                   default_gpu_count: int | None = None) -> Estimate:
    """Resolve ``setup`` (raises ``bot.setup.SetupError`` listing every problem) and estimate it."""
    return estimate(resolve_setup(setup, default_gpu=default_gpu, default_gpu_count=default_gpu_count))
