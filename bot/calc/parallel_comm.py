"""Communication per axis, the pipeline bubble and step time of a parallel plan.

This module owns ``plan_comm_time``: for each axis of a ``ParallelPlan`` the bytes one GPU moves
per optimizer step, the link they run over (``ParallelPlan.crosses_nodes``: TP inside a node on
NVLink, PP and the outer data-parallel axes across nodes) and the seconds they take; the pipeline
bubble of the schedule; and the step time and tokens/s per GPU. The link model (bus bandwidths,
the nccl-tests convention, compute from FLOPs at the calibrated utilisation, overlap) is
``bot/calc/comm.py``'s, imported.

Which communication overlaps compute: FSDP's all-gathers/reduce-scatters (prefetched) and ring
attention's K/V passes (each step overlaps the attention of the chunk at hand, Liu et al. 2023,
https://arxiv.org/abs/2310.01889 sec. 3) overlap, as ``comm.step_seconds`` counts; TP's
collectives sit between dependent matmuls and are exposed (Korthikanti et al. 2022,
https://arxiv.org/abs/2205.05198 sec. 4.2.2) unless async TP overlaps them with the matmul
(Wang et al. 2022, https://arxiv.org/abs/2105.05720; torchtitan ``enable_async_tensor_parallel``);
pipeline sends are small and counted exposed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from bot.calc.comm import (
    EXPOSED_FRACTION,
    HFU_BOUNDS,
    HFU_SIZE_SLOPE,
    CommInputs,
    compute_parts,
    hfu,
    links,
    model_flops_per_token,
    peak_tflops,
    step_seconds,
)
from bot.calc.memory import PRECISIONS, lora_params
from bot.calc.parallel import RING_ACCUM_BYTES, ParallelPlan, PlanError

if TYPE_CHECKING:
    from bot.core.setup import ResolvedSetup

# Bubble relative to the ideal (bubble-free) compute time, per schedule. GPipe and 1F1B:
# (pp - 1) / m (Narayanan et al. 2021, https://arxiv.org/abs/2104.04473 sec. 2.2.1: the bubble
# fraction of the total is (pp - 1) / (m + pp - 1)); interleaved with v chunks per rank:
# (pp - 1) / (v m) (sec. 2.2.2). Zero-bubble schedules (Qi et al. 2023,
# https://arxiv.org/abs/2401.10241): ZB-H1 cuts 1F1B's bubble to about a third by splitting the
# backward into input and weight gradients (sec. 3); ZB-V reaches near zero only when the
# forward, input-gradient and weight-gradient passes take equal time, so the ZB-H1 third is
# charged to both (the conservative side).
ZERO_BUBBLE_SHARE = 1 / 3


@dataclass(frozen=True)
class AxisComm:
    """Communication of one axis per optimizer step, on one GPU."""

    axis: str  # "tp", "cp", "pp", "fsdp" (FSDP over dp_shard x cp), "dp_replicate" (HSDP)
    link: str  # "nvlink" / "pcie" (inside a node) or "network"
    gb_per_step: float  # bus bytes / 1e9 (nccl-tests convention)
    bus_gb_s: float  # bandwidth one group of this axis sees
    seconds: float
    overlapped: bool  # hidden behind compute (up to comm.EXPOSED_FRACTION) or on the critical path


@dataclass(frozen=True)
class PlanTime:
    """Step time of a plan: compute, the pipeline bubble, each axis's communication."""

    axes: tuple[AxisComm, ...]
    compute_seconds: float  # one GPU's share of its replica's forward + backward, no bubble
    bubble_ratio: float  # pipeline idle time / ideal compute time
    bubble_fraction: float  # pipeline idle time / (ideal + idle): (pp-1)/(m+pp-1) for 1F1B
    step_seconds: float
    tokens_per_s_per_gpu: float
    mfu: float  # model FLOPs (6N + 12 L h s) / (step x dense peak), per GPU

    @property
    def by_axis(self) -> dict[str, AxisComm]:
        return {a.axis: a for a in self.axes}


def comm_inputs(setup: ResolvedSetup | CommInputs) -> CommInputs:
    if isinstance(setup, CommInputs):
        return setup
    from bot.calc import _comm_inputs  # private there; one adapter for both calculators

    return _comm_inputs(setup)


def tp_utilisation_scale(inputs: CommInputs, tp: int) -> float:
    """How much of comm.py's calibrated utilisation a TP rank keeps. The calibration grows with
    the model's size because bigger matmuls run closer to peak (comm.HFU_SIZE_SLOPE per decade);
    under TP each GPU multiplies 1/tp-wide slices, so its utilisation is taken at the size
    divided by tp (a stated MFU, or a GPU without calibration, is left as it is)."""
    if tp <= 1 or inputs.mfu:
        return 1.0
    base = hfu(inputs)
    if base is None:
        return 1.0
    sliced = min(HFU_BOUNDS[1], max(HFU_BOUNDS[0], base - HFU_SIZE_SLOPE * math.log10(tp)))
    return sliced / base


def bubble_ratio(schedule: str, pp: int, m: int, v: int) -> float:
    """Pipeline idle time over ideal compute time (see ZERO_BUBBLE_SHARE's sources)."""
    if pp <= 1:
        return 0.0
    if m < 1:
        raise PlanError("a pipeline needs at least one micro-batch")
    base = (pp - 1) / m
    if schedule in ("GPipe", "1F1B"):
        return base
    if schedule in ("Interleaved1F1B", "LoopedBFS"):
        return base / v
    if schedule == "InterleavedZeroBubble":
        return base / v * ZERO_BUBBLE_SHARE
    if schedule == "ZBVZeroBubble":
        return base * ZERO_BUBBLE_SHARE
    raise PlanError(f"unknown pipeline schedule {schedule!r}")


def axis_bandwidth(plan: ParallelPlan, axis: str, inputs: CommInputs) -> tuple[str, float]:
    """(link, bus GB/s one group of ``axis`` sees). Inside a node: the intra-node link. Across
    nodes: a node's NICs shared by the groups of this axis with members on the node (a flat
    ring: all of them; one GPU per node per group: 1/gpus_per_node each), never above the
    intra-node link (comm.py's flat-ring rule)."""
    bw = links(inputs)
    g = inputs.gpus_per_node
    if not plan.crosses_nodes(axis, g) or inputs.nodes <= 1:
        return inputs.intra_node_link, bw.intra_gb_s
    share = bw.node_nic_gb_s / plan.groups_per_node(axis, g)
    return "network", min(bw.intra_gb_s, share)


def plan_comm_time(setup: ResolvedSetup | CommInputs, plan: ParallelPlan) -> PlanTime:
    """Communication per axis, bubble and step time of ``setup`` under ``plan``.

    ``setup.micro_batch`` is the local batch of one data-parallel rank; gradient accumulation
    repeats it ``grad_accum_steps`` times. FSDP with PP gathers once per step (torchtitan does not
    reshard a stage after forward) and reduce-scatters once (PyTorch's pipelining syncs gradients
    on the last micro-batch); FSDP alone gathers twice and reduce-scatters every micro-batch."""
    inputs = comm_inputs(setup)
    if plan.world_size != inputs.gpu_count:
        raise PlanError(f"the plan is for {plan.world_size} GPUs, the setup has {inputs.gpu_count}")
    model = inputs.model
    prec = PRECISIONS[inputs.precision]
    c = prec.compute
    tp, cp, pp, v = plan.tp, plan.cp, plan.pp, plan.virtual_stages
    accum = max(1, inputs.grad_accum_steps)
    local_batch = inputs.micro_batch
    m = (plan.pp_microbatches or pp * v) if pp > 1 else 1
    mbs = max(1, local_batch // m)
    s_local = inputs.seq_len / cp
    layers = model.n_layers / pp  # per rank, on average
    recompute = 1 if inputs.activation_checkpointing and inputs.policy in ("full", "every_k") else 0
    full = inputs.finetune == "full"

    axes: list[AxisComm] = []

    def add(axis: str, bus_bytes: float, overlapped: bool, link_axis: str | None = None) -> None:
        link, gb_s = axis_bandwidth(plan, link_axis or axis, inputs)
        seconds = bus_bytes / (gb_s * 1e9) if gb_s > 0 else 0.0
        axes.append(AxisComm(axis=axis, link=link, gb_per_step=bus_bytes / 1e9, bus_gb_s=gb_s,
                             seconds=seconds, overlapped=overlapped))

    if tp > 1:
        # Per layer and micro-batch: forward 2 all-gathers + 2 reduce-scatters (SP) or 2
        # all-reduces (no SP) of the s x b x h activations, backward the same, the forward again
        # under full recomputation (Korthikanti et al. 2022 sec. 4.2.2: same volume with or
        # without SP). Bus bytes per collective: (t-1)/t x S for AG/RS, twice for all-reduce.
        activation = s_local * local_batch * model.hidden * c
        per_layer = (4 * (1 + recompute) + 4) * (tp - 1) / tp * activation
        logits_and_embed = 2 * (tp - 1) / tp * s_local * local_batch * model.hidden * c
        add("tp", accum * (layers * per_layer + logits_and_embed), overlapped=plan.async_tp)
    if cp > 1:
        # Ring attention as torch runs it (bot.calc.parallel, ``ring_attention_bytes_per_element``):
        # k and v expanded to the query heads; the forward (again when recomputed) and the
        # backward all-gather the other cp - 1 chunks of K/V, and the backward passes the fp32
        # dK/dV round the ring once per step (cp sends).
        kv = 2 * model.q_dim / tp * s_local * local_batch
        per_layer = (cp - 1) * kv * c * (1 + recompute + 1) + cp * kv * RING_ACCUM_BYTES
        add("cp", accum * layers * per_layer, overlapped=True)
    if pp > 1:
        # One activation forward and one gradient backward per micro-batch per chunk boundary.
        boundary = s_local * mbs * model.hidden * c / (tp if plan.sequence_parallel else 1)
        add("pp", accum * m * v * 2 * boundary, overlapped=False)
    shard = plan.fsdp_shard
    rank_params = model.params / (tp * pp)
    trainable = rank_params if full else lora_params(model, inputs.lora_rank, inputs.lora_targets) / (tp * pp)
    gather = rank_params * (1 if inputs.float8 and full else c)
    grads = trainable * prec.reduce
    if shard > 1:
        frac = (shard - 1) / shard
        if pp > 1 or not plan.reshard_after_forward:
            # one all-gather per micro-batch: the blocks stay gathered from forward to backward
            # (under PP torchtitan never reshards after forward; SHARD_GRAD_OP without PP)
            bus = accum * (frac * gather + frac * grads)
        else:
            bus = accum * (2 * frac * gather + frac * grads)
        # FSDP's group is dp_shard x cp; its outermost member axis sets the link it crosses.
        add("fsdp", bus, overlapped=True, link_axis="dp_shard" if plan.dp_shard > 1 else "cp")
    if plan.dp_replicate > 1:
        r = plan.dp_replicate
        add("dp_replicate", 2 * (r - 1) / r * grads / shard, overlapped=True)

    # Compute: the replica's forward + backward (recompute, compile, float8 included), shared
    # by its tp x cp x pp GPUs; attention FLOPs use the full sequence (comm.py's counting). TP's
    # narrower slices lower the utilisation of the weight matmuls only: TP splits the heads, and
    # each head's attention kernel keeps its shape (comm.compute_parts times the core apart).
    replica = replace(inputs, micro_batch=local_batch, grad_accum_steps=1)
    matmuls, attention = compute_parts(replica)
    compute = accum * (matmuls / tp_utilisation_scale(inputs, tp) + attention) / plan.model_parallel
    if pp > 1:
        # The pipeline runs at the pace of the rank with the most layers (uneven splits).
        compute *= math.ceil(model.n_layers / (pp * v)) * v / (model.n_layers / pp)
    ratio = bubble_ratio(plan.pp_schedule, pp, m, v)
    pipeline = compute * (1 + ratio)
    hidden = sum(a.seconds for a in axes if a.overlapped)
    exposed = sum(a.seconds for a in axes if not a.overlapped)
    step = step_seconds(pipeline, hidden) + exposed
    tokens = accum * local_batch * inputs.seq_len / plan.model_parallel
    tps = tokens / step if step > 0 else 0.0
    peak = peak_tflops(inputs.gpu, inputs.precision) * 1e12
    mfu = tps * model_flops_per_token(inputs) / peak
    return PlanTime(axes=tuple(axes), compute_seconds=compute, bubble_ratio=ratio,
                    bubble_fraction=ratio / (1 + ratio), step_seconds=step, tokens_per_s_per_gpu=tps, mfu=mfu)


__all__ = ["EXPOSED_FRACTION", "AxisComm", "PlanTime", "axis_bandwidth", "bubble_ratio", "plan_comm_time"]
