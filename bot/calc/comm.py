"""Communication volume, link speeds and step time for every training strategy.

This module owns: bytes each GPU moves per optimizer step (collectives in nccl-tests' bus-bandwidth
convention), which link they cross, compute time from FLOPs and an MFU, and how the two overlap.

Bus-bandwidth convention (https://github.com/NVIDIA/nccl-tests/blob/master/doc/PERFORMANCE.md):
for a payload of S bytes over n ranks, a ring all-reduce moves 2(n-1)/n * S per rank, an
all-gather or reduce-scatter (S = the full, unsharded size) moves (n-1)/n * S per rank. Dividing
those "bus bytes" by the bus bandwidth (close to the link's per-direction speed) gives the time,
independent of n. GB here means 10^9 bytes (network convention), GiB 2^30.
"""

from __future__ import annotations

from dataclasses import dataclass

from bot.calc.memory import NF4_BYTES_PER_PARAM, PRECISIONS, linear_params_per_layer, lora_params
from bot.catalog import GPUSpec, ModelSpec

# Fraction of a link's nominal per-direction speed that NCCL's bus bandwidth reaches in practice
# (nccl-tests all_reduce_perf on A100 NVLink3 reports ~230 of 300 GB/s; PCIe rings are worse;
# RDMA NICs run close to line rate). https://github.com/NVIDIA/nccl-tests/blob/master/doc/PERFORMANCE.md
BUS_EFFICIENCY = {"nvlink": 0.8, "pcie": 0.7, "network": 0.9}
# Per-GPU nominal intra-node speeds when the GPU is unknown or the stated link differs from its
# catalog link: NVLink 3 (A100) and PCIe Gen4 x16, GB/s per direction.
DEFAULT_INTRA_GB_S = {"nvlink": 300.0, "pcie": 32.0}

# Model FLOPs utilization assumed for compute time. PaLM reports 46% MFU for its 540B run and
# ~30-40% for GPT-3/Megatron-class training (Chowdhery et al. 2022, https://arxiv.org/abs/2204.02311
# sec. 4.1 and appendix B); torchtitan's FSDP2 Llama 3 runs report a similar 35-45% range on H100
# (Liang et al. 2024, https://arxiv.org/abs/2410.06511 sec. 3). 0.4 is the middle of both.
MFU = 0.4
# When the GPU is unknown (only its memory size stated) we assume an A100-class 312 TFLOP/s.
DEFAULT_PEAK_TFLOPS = 312.0

# Fraction of the overlapped part of communication that stays exposed: the first all-gather before
# forward, the last bucket/reduce-scatter after backward, and SM contention from NCCL kernels.
# A modelling choice (documented in docs/calc.md), not a measurement.
EXPOSED_FRACTION = 0.1

# CPU offload: sharded params cross PCIe host->device for each all-gather and grads device->host
# once; pinned-memory copies reach ~70% of PCIe's nominal speed.
# https://pytorch.org/docs/stable/distributed.fsdp.fully_shard.html (CPUOffloadPolicy)
# PyTorch's CPU AdamW: about 1 s per billion parameters per process, an order-of-magnitude figure
# from ZeRO-Offload's CPU-Adam comparison (Ren et al. 2021, https://arxiv.org/abs/2101.06840 sec. 5.1).
CPU_OPTIMIZER_SECONDS_PER_BPARAM = 1.0


@dataclass(frozen=True)
class CommEstimate:
    """Per-GPU communication of one strategy for one optimizer step."""

    gb_per_step: float  # bytes sent per GPU per step / 1e9 (bus bytes)
    seconds_per_step: float  # time those collectives take if nothing overlaps them
    vs_ddp: float  # seconds_per_step / DDP's (1.0 when neither communicates)


@dataclass(frozen=True)
class Links:
    """Bus bandwidths in GB/s that collectives see."""

    intra_gb_s: float  # inside a node (NVLink or PCIe), per GPU
    node_nic_gb_s: float  # one node's inter-node bandwidth (all its NICs); 0 on one node


@dataclass(frozen=True)
class CommInputs:
    model: ModelSpec
    gpu: GPUSpec | None
    gpu_count: int
    gpus_per_node: int
    nodes: int
    intra_node_link: str
    inter_node_gbps: float
    precision: str
    finetune: str
    lora_rank: int
    seq_len: int
    micro_batch: int
    activation_checkpointing: bool


def links(inputs: CommInputs) -> Links:
    """Effective bus bandwidths. ``inter_node_gbps`` is a node's total NIC speed in Gb/s (bits)."""
    link = inputs.intra_node_link
    if inputs.gpu is not None and inputs.gpu.intra_link == link:
        nominal = inputs.gpu.intra_link_gb_s
    else:
        nominal = DEFAULT_INTRA_GB_S[link]
    intra = nominal * BUS_EFFICIENCY[link]
    nic = inputs.inter_node_gbps / 8 * BUS_EFFICIENCY["network"] if inputs.nodes > 1 else 0.0
    return Links(intra_gb_s=intra, node_nic_gb_s=nic)


@dataclass(frozen=True)
class _Payload:
    """Whole-model bytes each collective carries."""

    gather: float  # weights all-gathered (compute dtype; NF4 for a QLoRA base)
    grads: float  # trainable gradients reduced (reduce dtype)


def _payload(inputs: CommInputs) -> _Payload:
    prec = PRECISIONS[inputs.precision]
    model = inputs.model
    if inputs.finetune == "full":
        return _Payload(gather=model.params * prec.compute, grads=model.params * prec.reduce)
    adapters = lora_params(model, inputs.lora_rank)
    if inputs.finetune == "qlora":
        quantized = model.n_layers * linear_params_per_layer(model)
        base = quantized * NF4_BYTES_PER_PARAM + (model.params - quantized) * prec.compute
    else:
        base = model.params * prec.compute
    return _Payload(gather=base + adapters * prec.compute, grads=adapters * prec.reduce)


def _ddp_grad_bytes(inputs: CommInputs) -> float:
    # DDP all-reduces gradients in their stored dtype: fp32 under AMP, bf16 in pure bf16.
    prec = PRECISIONS[inputs.precision]
    model = inputs.model
    trainable = model.params if inputs.finetune == "full" else lora_params(model, inputs.lora_rank)
    return trainable * prec.grad


def comm_bytes_and_seconds(inputs: CommInputs, strategy: str) -> tuple[float, float]:
    """(bus bytes per GPU per step, seconds) for ``strategy``; see the module docstring."""
    n, g, m = inputs.gpu_count, inputs.gpus_per_node, inputs.nodes
    if n <= 1:
        return 0.0, 0.0
    bw = links(inputs)
    # A flat ring over several nodes runs at the slower of the intra link and the node's NICs:
    # NCCL spreads its rings over all NICs, so each node's traffic crosses at the NIC total.
    flat_gb_s = bw.intra_gb_s if m == 1 else min(bw.intra_gb_s, bw.node_nic_gb_s)
    pay = _payload(inputs)
    frac = (n - 1) / n

    if strategy == "ddp":
        bus = 2 * frac * _ddp_grad_bytes(inputs)  # ring all-reduce of all gradients
        return bus, bus / (flat_gb_s * 1e9)
    if strategy in ("fsdp_full_shard", "fsdp_full_shard_offload"):
        # all-gather in forward + all-gather again in backward + reduce-scatter of gradients
        # (ZeRO-3: 1.5x DDP's volume, https://arxiv.org/abs/1910.02054 sec. 7.2.2)
        bus = 2 * frac * pay.gather + frac * pay.grads
        return bus, bus / (flat_gb_s * 1e9)
    if strategy == "fsdp_shard_grad_op":
        # parameters stay gathered from forward to backward: one all-gather + reduce-scatter
        # (ZeRO-2-like volume, https://arxiv.org/abs/1910.02054 sec. 7.2.1)
        bus = frac * pay.gather + frac * pay.grads
        return bus, bus / (flat_gb_s * 1e9)
    if strategy == "fsdp_hybrid_shard":
        # Shard within a node (g ranks), then all-reduce each GPU's gradient shard (1/g of the
        # grads) with its peers on the other m nodes. The g concurrent all-reduces share the
        # node's NICs, so each sees node_nic / g.
        # https://pytorch.org/docs/stable/distributed.fsdp.fully_shard.html (2-D mesh: replicate, shard)
        frac_g = (g - 1) / g
        intra = 2 * frac_g * pay.gather + frac_g * pay.grads
        seconds = intra / (bw.intra_gb_s * 1e9) if g > 1 else 0.0
        inter = 2 * (m - 1) / m * pay.grads / g if m > 1 else 0.0
        if inter:
            seconds += inter / (bw.node_nic_gb_s / g * 1e9)
        return intra + inter, seconds
    raise ValueError(f"unknown strategy {strategy!r}")


def peak_tflops(gpu: GPUSpec | None, precision: str) -> float:
    """Dense tensor-core peak for the compute dtype. fp32 runs as TF32 on Ampere and later, half
    the bf16 rate (A100 datasheet: 156 vs 312 TFLOP/s); V100 has no TF32 (15.7 vs 125 fp16)."""
    peak = gpu.bf16_tflops if gpu is not None else DEFAULT_PEAK_TFLOPS
    if precision == "fp32":
        return peak / 8 if gpu is not None and gpu.name.startswith("V100") else peak / 2
    return peak


def flops_per_token(inputs: CommInputs) -> float:
    """Training FLOPs per token: 6N + 12 L h s (PaLM, https://arxiv.org/abs/2204.02311 appendix B:
    2N forward + 4N backward for the matmuls, plus attention's 12 L H Q T, H*Q = hidden).
    LoRA skips the frozen weights' gradients (4N instead of 6N); checkpointing recomputes the
    forward once more (+2N + 4 L h s, i.e. ~8N in total as in https://arxiv.org/abs/2205.05198 sec. 5)."""
    model = inputs.model
    n = model.params
    attn_fwd = 4 * model.n_layers * model.hidden * inputs.seq_len
    forward = 2 * n + attn_fwd
    weight_grads = 2 * n if inputs.finetune == "full" else 0.0
    backward = 2 * n + weight_grads + 2 * attn_fwd
    recompute = forward if inputs.activation_checkpointing else 0.0
    return forward + backward + recompute


def compute_seconds(inputs: CommInputs) -> float:
    """One micro-batch's forward + backward on one GPU at the assumed MFU."""
    tokens = inputs.micro_batch * inputs.seq_len
    return tokens * flops_per_token(inputs) / (peak_tflops(inputs.gpu, inputs.precision) * 1e12 * MFU)


def offload_seconds(inputs: CommInputs) -> float:
    """Extra, non-overlapped time of CPU offload: PCIe copies of the shard and the CPU optimizer."""
    prec = PRECISIONS[inputs.precision]
    model = inputs.model
    n = inputs.gpu_count
    trainable = model.params if inputs.finetune == "full" else lora_params(model, inputs.lora_rank)
    shard_params = model.params / n
    pcie_gb_s = (inputs.gpu.intra_link_gb_s if inputs.gpu is not None and inputs.gpu.intra_link == "pcie"
                 else DEFAULT_INTRA_GB_S["pcie"]) * BUS_EFFICIENCY["pcie"]
    # Two host->device copies of the param shard (forward and backward all-gather) + one
    # device->host copy of the gradient shard. Prefetch overlaps part of it; we count it all.
    pcie_bytes = 2 * shard_params * prec.param + trainable / n * prec.grad
    return pcie_bytes / (pcie_gb_s * 1e9) + trainable / n / 1e9 * CPU_OPTIMIZER_SECONDS_PER_BPARAM


def step_seconds(compute: float, comm: float) -> float:
    """Step time with communication overlapped by compute: the longer of the two, plus an exposed
    fraction of the shorter (see EXPOSED_FRACTION). FSDP prefetches the next all-gather during the
    current unit's compute and DDP all-reduces buckets during backward
    (https://pytorch.org/docs/stable/notes/ddp.html, FSDP2 docs above)."""
    return max(compute, comm) + EXPOSED_FRACTION * min(compute, comm)


def comm_estimate(inputs: CommInputs, strategy: str, ddp_seconds: float) -> CommEstimate:
    bus, seconds = comm_bytes_and_seconds(inputs, strategy)
    if ddp_seconds > 0:
        ratio = seconds / ddp_seconds
    else:
        ratio = 1.0
    return CommEstimate(gb_per_step=bus / 1e9, seconds_per_step=seconds, vs_ddp=ratio)
