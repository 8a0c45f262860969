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

import math
from dataclasses import dataclass

from bot.calc.memory import (
    NF4_BYTES_PER_PARAM,
    PRECISIONS,
    active_intermediate,
    linear_params_per_layer,
    lora_params,
    reshard_group,
)
from bot.catalog import GPUSpec, ModelSpec
from bot.catalog.accelerators import FP32_FALLBACK_RATIO, fp32_tflops

# Fraction of a link's nominal per-direction speed that NCCL's bus bandwidth reaches in practice
# (nccl-tests all_reduce_perf on A100 NVLink3 reports ~230 of 300 GB/s; PCIe rings are worse;
# RDMA NICs run close to line rate). https://github.com/NVIDIA/nccl-tests/blob/master/doc/PERFORMANCE.md
BUS_EFFICIENCY = {"nvlink": 0.8, "pcie": 0.7, "network": 0.9}
# Per-GPU nominal intra-node speeds when the GPU is unknown or the stated link differs from its
# catalog link: NVLink 3 (A100) and PCIe Gen4 x16, GB/s per direction.
DEFAULT_INTRA_GB_S = {"nvlink": 300.0, "pcie": 32.0}

# Model FLOPs utilization for GPUs with no calibration (see HFU_BY_GENERATION): PaLM reports 46%
# MFU for its 540B run and ~30-40% for GPT-3/Megatron-class training (Chowdhery et al. 2022,
# https://arxiv.org/abs/2204.02311 sec. 4.1 and appendix B); 0.4 is the middle.
MFU = 0.4
# Hardware FLOPs utilisation (HFU: model FLOPs + recomputed FLOPs, over peak) by GPU generation,
# fitted to published FSDP runs (evals/published.jsonl rows marked "fit": fms-fsdp / PyTorch blog
# "Maximizing training throughput using PyTorch FSDP" A100 and H100 tables, torchtitan's A100
# Llama 2/3 tables). Those sources count MFU without the recompute (PaLM's 6N + 12 L h s), and
# their HFU with it: A100 runs reach MFU 0.57 with no checkpointing and HFU 0.59-0.67 with it, so
# the recompute is charged as extra hardware FLOPs at the HFU, never as model FLOPs at an MFU.
# HFU grows with model size (bigger matmuls): + HFU_SIZE_SLOPE per decade of parameters from 7B.
# (hopper 0.36 until 2026-12-02: the refit asks 0.365 since the attention core is timed apart, issue 29)
HFU_BY_GENERATION = {"ampere": 0.595, "hopper": 0.365}  # python -m evals.bench_published --refit
HFU_SIZE_SLOPE = 0.14
# LoRA/QLoRA steps gain less from size: no weight-gradient GEMMs (6N hardware FLOPs per token with
# recompute against a full fine-tune's 8N), the rest of the step (norms, pointwise, adapters, the
# frozen base's gathers) weighs more, so bigger matmuls lift the step less. Fitted (issue 26, N2) on the
# shape of the `fit` rows from Qwen's README profiling table, A100-SXM4-80G LoRA at 7B, 14B and 72B,
# seq 2048-8192 (https://github.com/QwenLM/Qwen/blob/e8e15962d897714944773cca57fa2e460a3655e8/README.md,
# "Profiling of Memory and Speed"): the slope that leaves no size trend in their errors, the base held
# (python -m evals.bench_published --refit). The full fine-tune base applies to both.
# 0.075 until 2026-12-02; 0.085 since the attention core is timed apart (the 72B rows' attention no
# longer rides the size slope, so the refit's shape asks for a little more; issue 29)
HFU_SIZE_SLOPE_LORA = 0.085
HFU_BOUNDS = (0.15, 0.75)
# The smallest model among the rows the slope was fitted on (Llama 2 7B, 6.74 B parameters: fms-fsdp
# and the PyTorch blog's 7B rows). Below it the slope is not extrapolated (issue 26: at 1B it gave an
# H100 0.27, where a 2023 MPT-1B run measured 0.42): smaller models take the 7B utilisation.
HFU_FITTED_MIN_PARAMS = 6.74e9
# torch.compile's speed-up of the step outside the attention core (fused pointwise and norm
# kernels; SDPA's kernel is left as it is, ``compute_parts``): torchtitan Llama 3.1 8B on 8 H100,
# 5,762 -> 6,667 tokens/s/GPU (docs/performance.md table 1; the 128-GPU table 3 is held out), a
# whole-step ratio of 1.157 with the attention core (21 % of that step) not sped up: 1.198 on the
# rest (1.157 on the whole step until 2026-12-02, issue 29). Fitted on the fit row torchtitan-h100-8gpu-2.
COMPILE_SPEEDUP = 1.198
# float8 linears (torchao): the block matmuls run this much faster than in bf16 (fitted to the same
# table 1, 6,667 -> 8,532, with the linears' share of the FLOPs outside the attention core; table 3
# and the H200 runs held out). 1.43 while the attention core was timed with the rest.
FLOAT8_LINEAR_SPEEDUP = 1.447
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
    # run options (issue 14), PyTorch defaults
    checkpointing_policy: str | None = None
    checkpoint_every: int = 1
    torch_compile: bool = False
    grad_accum_steps: int = 1
    lora_targets: str = "attention"
    float8: bool = False
    mfu: float | None = None  # the user's MFU: replaces the calibrated HFU model
    # FSDP2 reshard_after_forward for the blocks: None/True, False, or an int group size k
    reshard_after_forward: bool | int | None = None
    tf32: bool = False  # fp32 matmuls on TF32 tensor cores (off: PyTorch's default)
    grad_sync: str = "every_micro_step"  # FSDP2 reduce-scatter every micro-step, or the last only
    base_dtype: str | None = None  # the frozen base under LoRA ("nf4": bitsandbytes 4-bit, as QLoRA)

    @property
    def policy(self) -> str:
        if not self.activation_checkpointing:
            return "none"
        return self.checkpointing_policy or "full"


# NVIDIA cards of the sm80 kernel class besides the A100/A800: GA10x Ampere (sm_86) and Ada (sm_89).
# PyTorch's cuBLAS bf16 GEMMs and FlashAttention-2 run the same mma.sync kernels on sm_80, sm_86 and
# sm_89 (FlashAttention-2 README: "Ampere, Ada, or Hopper GPUs", with Hopper's wgmma/TMA kernels only
# in FlashAttention-3, https://github.com/Dao-AILab/flash-attention), so what a training step reaches
# of the card's peak depends on the same kernels as on an A100 ...
SM80_CLASS_PREFIXES = ("A10 ", "A10G", "A40", "RTX A6000", "RTX A5000", "RTX 30", "RTX 40", "L4 ", "L40")
# ... provided the card balances matmul and memory-bound work (norms, pointwise, optimizer) like the
# A100s do: dense bf16 peak per byte of memory bandwidth within 25 % of the A100s' range (A100 80GB
# SXM 153 FLOP/B, A100 40GB 201 FLOP/B). RTX 4090: 164; RTX A6000: 202; L40S: 419 and RTX 3090: 76
# (GeForce Ampere runs fp32-accumulate matmuls at half rate) fall outside and keep the flat MFU.
SM80_FLOPS_PER_BYTE = (153 / 1.25, 201 * 1.25)


def gpu_generation(gpu: GPUSpec | None) -> str | None:
    """The calibration family of a GPU: 'ampere' (A100/A800, and the sm80-class cards above whose
    FLOP/B balance is the A100s'), 'hopper' (H100/H200/H800), else None."""
    if gpu is None:
        return None
    if gpu.name.startswith(("A100", "A800")):
        return "ampere"
    if gpu.name.startswith(("H100", "H200", "H800")):
        return "hopper"
    if gpu.name.startswith(SM80_CLASS_PREFIXES) and gpu.hbm_tb_s > 0:
        flops_per_byte = gpu.bf16_tflops / gpu.hbm_tb_s
        if SM80_FLOPS_PER_BYTE[0] <= flops_per_byte <= SM80_FLOPS_PER_BYTE[1]:
            return "ampere"
    return None


def links(inputs: CommInputs) -> Links:
    """Effective bus bandwidths. ``inter_node_gbps`` is a node's total NIC speed in Gb/s (bits)."""
    link = inputs.intra_node_link
    if inputs.gpu is not None and inputs.gpu.intra_link == link:
        nominal = inputs.gpu.intra_link_gb_s
    elif link == "pcie" and inputs.gpu is not None and inputs.gpu.host_pcie_gb_s:
        nominal = inputs.gpu.host_pcie_gb_s  # an NVLink card run over its host bus (V100: Gen3)
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
        gather = model.params * prec.compute
        if inputs.float8:  # torchao float8 all-gather: block matmul weights travel in 1 byte
            gather -= model.n_layers * linear_params_per_layer(model) * (prec.compute - 1)
        return _Payload(gather=gather, grads=model.params * prec.reduce)
    adapters = lora_params(model, inputs.lora_rank, inputs.lora_targets)
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
    trainable = model.params if inputs.finetune == "full" else lora_params(model, inputs.lora_rank,
                                                                             inputs.lora_targets)
    return trainable * prec.grad


def comm_bytes_and_seconds(inputs: CommInputs, strategy: str, part: str = "all") -> tuple[float, float]:
    """(bus bytes per GPU per step, seconds) for ``strategy``; see the module docstring. ``part``:
    "all", or only the weights' all-gathers ("gather") or only the gradients' reduction ("grads")."""
    n, g, m = inputs.gpu_count, inputs.gpus_per_node, inputs.nodes
    if n <= 1:
        return 0.0, 0.0
    bw = links(inputs)
    # A flat ring over several nodes runs at the slower of the intra link and the node's NICs:
    # NCCL spreads its rings over all NICs, so each node's traffic crosses at the NIC total.
    flat_gb_s = bw.intra_gb_s if m == 1 else min(bw.intra_gb_s, bw.node_nic_gb_s)
    pay = _payload(inputs)
    if part == "gather":
        pay = _Payload(gather=pay.gather, grads=0.0)
    elif part == "grads":
        pay = _Payload(gather=0.0, grads=pay.grads)
    frac = (n - 1) / n

    if strategy == "ddp":
        bus = 2 * frac * _ddp_grad_bytes(inputs)  # ring all-reduce of all gradients
        return bus, bus / (flat_gb_s * 1e9)
    rak = inputs.reshard_after_forward
    if strategy in ("fsdp_full_shard", "fsdp_full_shard_offload") and rak is False:
        strategy = "fsdp_shard_grad_op"  # blocks kept gathered: no all-gather in backward
    if strategy in ("fsdp_full_shard", "fsdp_full_shard_offload"):
        # all-gather in forward + all-gather again in backward + reduce-scatter of gradients
        # (ZeRO-3: 1.5x DDP's volume, https://arxiv.org/abs/1910.02054 sec. 7.2.2)
        k = reshard_group(rak)
        if k and k < n:
            # reshard_after_forward=k: the backward all-gather runs inside groups of k ranks
            # (FSDP2 docs: "the all-gather in backward [is] over a smaller world size"), over the
            # intra-node link when k fits in a node.
            fwd = frac * pay.gather + frac * pay.grads
            bwd = (k - 1) / k * pay.gather
            bwd_gb_s = bw.intra_gb_s if k <= g else flat_gb_s
            return fwd + bwd, fwd / (flat_gb_s * 1e9) + bwd / (bwd_gb_s * 1e9)
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


def peak_tflops(gpu: GPUSpec | None, precision: str, tf32: bool = False) -> float:
    """Dense matmul peak for the compute dtype: the bf16 tensor-core rate for 16-bit compute. fp32
    runs on the CUDA cores (A100: 19.5 TFLOP/s) because PyTorch leaves TF32 off for matmuls by
    default; with ``tf32`` on, at the TF32 tensor rate, half the bf16 one (A100: 156 vs 312).
    Sources beside ``bot.catalog.accelerators.FP32_TFLOPS``."""
    if gpu is None:
        peak = DEFAULT_PEAK_TFLOPS
        return peak / 2 if precision == "fp32" and tf32 else peak / FP32_FALLBACK_RATIO if precision == "fp32" else peak
    if precision == "fp32":
        return fp32_tflops(gpu, tf32)
    return gpu.bf16_tflops


def active_params(model: ModelSpec) -> float:
    """Parameters one token passes through: ``active_params`` for mixture-of-experts models
    (the catalog's field), all parameters for dense ones."""
    return float(getattr(model, "active_params", None) or model.params)


def matmul_params(model: ModelSpec) -> float:
    """Active parameters that do matmuls: without the input embedding, a table lookup (as
    torchtitan's ``num_flop_per_token`` counts); a tied embedding is also the LM head, so it stays."""
    n = active_params(model)
    return n if model.tied_embeddings else n - model.vocab * model.hidden


def model_flops_per_token(inputs: CommInputs) -> float:
    """Model FLOPs per token as MFU counts them: 6N + 12 L h s (PaLM appendix B,
    https://arxiv.org/abs/2204.02311: 2N forward + 4N backward for the matmuls, plus attention's
    12 L H Q T, H*Q = hidden); LoRA skips the frozen weights' gradients (4N). No recompute."""
    model = inputs.model
    n = matmul_params(model)
    attn_fwd = 4 * model.n_layers * model.hidden * inputs.seq_len
    weight_grads = 2 * n if inputs.finetune == "full" else 0.0
    return 2 * n + attn_fwd + 2 * n + weight_grads + 2 * attn_fwd


def recompute_flops_per_token(inputs: CommInputs) -> float:
    """FLOPs checkpointing adds per token: the forward of each checkpointed block again (full:
    every block; every_k: one block in k; Korthikanti et al. 2022 https://arxiv.org/abs/2205.05198
    sec. 5), or for torchtitan's selective-op policy only the matmuls whose outputs it does not
    save (Llama: k, o and w3 of q,k,v,o,w1,w3,w2; SDPA is saved, not recomputed)."""
    model = inputs.model
    policy = inputs.policy
    block_matmuls = linear_params_per_layer(model)
    scale = active_params(model) / model.params  # MoE: a token recomputes only its experts
    block_fwd = 2 * block_matmuls * scale + 4 * model.hidden * inputs.seq_len
    if policy == "full":
        return model.n_layers * block_fwd
    if policy == "every_k":
        return math.ceil(model.n_layers / max(1, inputs.checkpoint_every)) * block_fwd
    if policy == "selective_op":
        h, i, kv = model.hidden, active_intermediate(model), model.kv_dim
        unsaved = (h * kv + h * h + h * i) if model.arch == "llama" else (h * h + h * h + i * h)
        return model.n_layers * 2 * unsaved * scale
    return 0.0


def flops_per_token(inputs: CommInputs) -> float:
    """Hardware FLOPs per token: model FLOPs plus the recomputed forward of checkpointing."""
    return model_flops_per_token(inputs) + recompute_flops_per_token(inputs)


def hfu(inputs: CommInputs) -> float | None:
    """Calibrated hardware FLOPs utilisation for this GPU generation and model size (the size slope
    of a full fine-tune, or LoRA/QLoRA's own), or None for GPUs without published runs to fit (then
    MFU applies to model FLOPs)."""
    generation = gpu_generation(inputs.gpu)
    if generation is None:
        return None
    size = max(active_params(inputs.model), HFU_FITTED_MIN_PARAMS) / 7e9
    slope = HFU_SIZE_SLOPE if inputs.finetune == "full" else HFU_SIZE_SLOPE_LORA
    value = HFU_BY_GENERATION[generation] + slope * math.log10(size)
    return min(HFU_BOUNDS[1], max(HFU_BOUNDS[0], value))


def size_free_hfu(inputs: CommInputs) -> float | None:
    """The calibrated HFU without its size term: the generation's value at the 7B reference."""
    generation = gpu_generation(inputs.gpu)
    if generation is None:
        return None
    return min(HFU_BOUNDS[1], max(HFU_BOUNDS[0], HFU_BY_GENERATION[generation]))


def float8_time_factor(inputs: CommInputs) -> float:
    """Fraction of the non-attention compute time left when the block matmuls run in float8:
    their share of the model FLOPs outside the attention core runs FLOAT8_LINEAR_SPEEDUP faster
    (the LM head stays bf16, as torchao's converter skips the output layer; the attention core is
    not a linear and is timed apart, ``compute_parts``). Without a calibrated GPU the core is not
    timed apart and stays in the share's denominator."""
    if not inputs.float8:
        return 1.0
    model = inputs.model
    linear = model.n_layers * linear_params_per_layer(model) * (6 if inputs.finetune == "full" else 4)
    outside = model_flops_per_token(inputs)
    if not inputs.mfu and hfu(inputs) is not None:
        outside -= 12 * model.n_layers * model.hidden * inputs.seq_len
    share = min(1.0, linear / max(outside, 1.0))
    return (1 - share) + share / FLOAT8_LINEAR_SPEEDUP


def attention_flops_per_token(inputs: CommInputs) -> float:
    """The attention core's share of ``flops_per_token`` (QK^T and PV): PaLM's 12 L h s for the
    forward and backward (https://arxiv.org/abs/2204.02311 appendix B), plus 4 h s for each block
    whose forward checkpointing recomputes (full: every block; every_k: one in k; torchtitan's
    selective-op policy saves SDPA's output, so none)."""
    model = inputs.model
    block_fwd = 4 * model.hidden * inputs.seq_len
    policy = inputs.policy
    if policy == "full":
        recomputed = model.n_layers
    elif policy == "every_k":
        recomputed = math.ceil(model.n_layers / max(1, inputs.checkpoint_every))
    else:
        recomputed = 0
    return (3 * model.n_layers + recomputed) * block_fwd


def compute_parts(inputs: CommInputs) -> tuple[float, float]:
    """(seconds of everything but the attention core, seconds of the attention core) for one
    micro-batch's forward + backward on one GPU; ``compute_seconds`` is their sum.

    With a user MFU, or on a GPU without calibration, all FLOPs run at one utilisation (the
    attention part is 0). On calibrated GPUs the attention core runs at the calibration's
    size-free HFU, without torch.compile's gain and without float8, and only the rest at the
    size-scaled, compiled, float8 rate:
    - the HFU's growth with the parameter count (HFU_SIZE_SLOPE, "bigger matmuls run closer to
      peak") is a property of the weight matmuls, whose shapes grow with the model; it was fitted
      on rows where attention is a small share of the FLOPs (seq 2k-8k). The attention kernel's
      shape is set by the head dimension and the sequence, not by the parameter count
      (FlashAttention-2 tiles each head separately, https://arxiv.org/abs/2307.08691 sec. 3), so a
      405B model's attention does not run at its 0.61 but at the 7B reference's 0.365 (H100);
    - torch.compile fuses the pointwise and norm kernels around the matmuls and leaves SDPA's
      kernel as it is, and torchao's float8 converts nn.Linear only (SDPA is not a linear), so
      both factors (COMPILE_SPEEDUP, FLOAT8_LINEAR_SPEEDUP, fitted on the rest) skip the core.
    At 128k-256k tokens attention is 80-90 % of the FLOPs and this is most of the step."""
    tokens = inputs.micro_batch * inputs.seq_len
    peak = peak_tflops(inputs.gpu, inputs.precision, inputs.tf32) * 1e12
    if inputs.mfu:
        return tokens * model_flops_per_token(inputs) / (peak * inputs.mfu), 0.0
    calibrated = hfu(inputs)
    utilisation = calibrated or MFU
    if inputs.torch_compile:
        # compile speeds the step up, but no step runs above the utilisation ceiling: the bound
        # applies to the achieved HFU, after the speed-up (before, a calibrated 0.73 at 70B on an
        # A100 became 0.85 with compile, above every published A100 run).
        utilisation = min(HFU_BOUNDS[1], max(utilisation, utilisation * COMPILE_SPEEDUP))
    core_utilisation = size_free_hfu(inputs) if calibrated else None
    attention = attention_flops_per_token(inputs) if core_utilisation else 0.0
    rest = tokens * (flops_per_token(inputs) - attention) / (peak * utilisation) * float8_time_factor(inputs)
    core = tokens * attention / (peak * core_utilisation) if core_utilisation else 0.0
    return rest + dequant_seconds(inputs), core


def compute_seconds(inputs: CommInputs) -> float:
    """One micro-batch's forward + backward on one GPU. With a user MFU: model FLOPs / (peak x
    MFU). Otherwise hardware FLOPs (recompute included) / (peak x calibrated HFU) on calibrated
    GPUs, the attention core at the size-free HFU (``compute_parts``), or model FLOPs + recompute
    at the generic MFU elsewhere; then torch.compile's and float8's speed-ups."""
    return sum(compute_parts(inputs))


def dequant_seconds(inputs: CommInputs) -> float:
    """Memory-bound time of a 4-bit base's dequantisation in one micro-batch (QLoRA). bitsandbytes'
    training matmul dequantises the whole weight before each use: ``MatMul4Bit.forward`` runs
    ``linear(A, dequantize_4bit(B, quant_state).to(A.dtype).t())`` and its backward
    ``matmul(grad_output, dequantize_4bit(B, ctx.state).to(grad_output.dtype).t())``
    (bitsandbytes/autograd/_functions.py,
    https://github.com/bitsandbytes-foundation/bitsandbytes/blob/0.43.0/bitsandbytes/autograd/_functions.py),
    so each block matmul weight is read packed (``NF4_BYTES_PER_PARAM``) and written in the compute
    dtype once in forward, once in backward, and once more when the block is recomputed. Charged at
    the card's HBM bandwidth, the lower bound (no fitted efficiency); it is independent of the
    tokens per micro-batch, so it matters only for small micro-batches."""
    if inputs.finetune != "qlora" and inputs.base_dtype != "nf4":
        return 0.0
    if inputs.finetune == "full" or inputs.gpu is None or not inputs.gpu.hbm_tb_s:
        return 0.0
    model = inputs.model
    linear = linear_params_per_layer(model)
    recomputed = {"full": 1.0, "none": 0.0}.get(inputs.policy)
    if inputs.policy == "every_k":
        recomputed = math.ceil(model.n_layers / max(1, inputs.checkpoint_every)) / model.n_layers
    elif inputs.policy == "selective_op":  # only the matmuls the policy does not save (recompute_flops_per_token)
        h, i, kv = model.hidden, active_intermediate(model), model.kv_dim
        unsaved = (h * kv + h * h + h * i) if model.arch == "llama" else (2 * h * h + i * h)
        recomputed = min(1.0, unsaved / linear)
    passes = 2 + (recomputed or 0.0)
    weights = model.n_layers * linear
    traffic = passes * weights * (NF4_BYTES_PER_PARAM + PRECISIONS[inputs.precision].compute)
    return traffic / (inputs.gpu.hbm_tb_s * 1e12)


def offload_seconds(inputs: CommInputs) -> float:
    """Extra, non-overlapped time of CPU offload: PCIe copies of the shard and the CPU optimizer."""
    prec = PRECISIONS[inputs.precision]
    model = inputs.model
    n = inputs.gpu_count
    trainable = model.params if inputs.finetune == "full" else lora_params(model, inputs.lora_rank,
                                                                             inputs.lora_targets)
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


def optimizer_step_seconds(inputs: CommInputs, strategy: str, compute: float, comm: float) -> float:
    """Seconds per optimizer step over ``grad_accum_steps`` micro-batches. ``comm`` is the
    strategy's communication per optimizer step (``comm_estimate``). DDP under ``no_sync()``
    all-reduces once, overlapped with the last micro-batch's backward
    (https://pytorch.org/docs/stable/generated/torch.nn.parallel.DistributedDataParallel.html#no_sync);
    FSDP all-gathers (and by default reduce-scatters) every micro-batch, each overlapped with
    that micro-batch's compute."""
    accum = max(1, inputs.grad_accum_steps)
    if strategy == "ddp":
        return (accum - 1) * compute + step_seconds(compute, comm)
    return accum * step_seconds(compute, comm / accum)


def comm_estimate(inputs: CommInputs, strategy: str, ddp_seconds: float) -> CommEstimate:
    """Communication per optimizer step: FSDP's collectives repeat for every accumulated
    micro-batch, DDP's all-reduce happens once (``no_sync``)."""
    bus, seconds = comm_bytes_and_seconds(inputs, strategy)
    accum = max(1, inputs.grad_accum_steps)
    if strategy != "ddp" and accum > 1 and inputs.grad_sync == "last_micro_step":
        # set_requires_gradient_sync(False): all-gathers every micro-step, one gradient reduction
        gather_bus, gather_s = comm_bytes_and_seconds(inputs, strategy, "gather")
        grads_bus, grads_s = comm_bytes_and_seconds(inputs, strategy, "grads")
        bus, seconds = accum * gather_bus + grads_bus, accum * gather_s + grads_s
    elif strategy != "ddp":
        bus, seconds = bus * accum, seconds * accum
    if ddp_seconds > 0:
        ratio = seconds / ddp_seconds
    else:
        ratio = 1.0
    return CommEstimate(gb_per_step=bus / 1e9, seconds_per_step=seconds, vs_ddp=ratio)
