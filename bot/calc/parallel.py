"""Per-GPU memory of a multi-dimensional parallel plan: FSDP/HSDP x context x tensor x pipeline
(x expert) parallelism, in torchtitan's terms.

This module owns ``ParallelPlan`` (the degrees of torchtitan's ``ParallelDims``:
dp_replicate x dp_shard x cp x tp x pp = world size, checked where the plan is built) and
``plan_memory``: what one GPU holds under a plan. It reuses the model-shape and per-block
activation formulas of ``bot/calc/memory.py`` by import (one formula, one home) and adds only
how each parallel axis divides them:

- TP divides every block weight except the norms (torchtitan's TP plan: ColwiseParallel on
  wq/wk/wv/w1/w3, RowwiseParallel on wo/w2, the embedding row-wise over the vocabulary, the
  output layer column-wise with loss parallelism), and the activations inside the attention and
  MLP regions; with sequence parallelism also the norm and residual activations (Korthikanti et
  al. 2022, https://arxiv.org/abs/2205.05198 sec. 4.2, ``korthikanti_layer_bytes``).
- CP divides the sequence (each rank keeps s/cp tokens of every activation); ring attention adds
  its gathered K/V and fp32 gradient buffers (``ring_attention_bytes_per_element``). torchtitan shards FSDP over dp_shard x cp.
- PP keeps L/pp layers per rank and the activations of the micro-batches its schedule has in
  flight (``in_flight_chunks``); with FSDP, torchtitan does not reshard a stage after forward and
  PyTorch's pipelining keeps the gradients unsharded until the last micro-batch.
- EP divides the routed experts; FSDP/HSDP shard what is left over dp_shard (x cp).

Conventions as in memory.py: GiB = 2**30 bytes, figures per GPU, the reserved peak is allocated +
RESERVED_TRANSIENT_FRACTION of the transient part, "fits" compares it with ``usable_gib``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from bot.calc.memory import (
    BLOCK_BACKWARD_TEMP_FRACTION,
    GIB,
    PRECISIONS,
    RESERVED_TRANSIENT_FRACTION,
    ActivationMode,
    MemoryInputs,
    attention_scores_bytes,
    block_activation_bytes_per_token,
    block_input_bytes_per_token,
    final_norm_bytes_per_token,
    linear_params_per_layer,
    lora_params,
    loss_bytes_per_logit,
    optimizer_bytes_per_param,
    optimizer_step_temp_bytes,
    selective_op_bytes_per_token,
    usable_gib,
)
from bot.core.errors import UserError

if TYPE_CHECKING:
    from bot.catalog import ModelSpec
    from bot.core.setup import ResolvedSetup

# torchtitan's device-mesh order, outermost first (torchtitan/distributed/parallel_dims.py
# ``ParallelDims.build_mesh``: ["pp", "dp_replicate", "dp_shard", "cp", "tp"]): TP gets adjacent
# ranks (inside a node), PP the farthest apart.
MESH_ORDER = ("pp", "dp_replicate", "dp_shard", "cp", "tp")

# Pipeline schedules torchtitan accepts (``--parallelism.pipeline_parallel_schedule``, the classes
# of torch.distributed.pipelining.schedules) and how many model chunks each puts on a rank by
# default (torchtitan builds 2 stages per rank for the multi-stage schedules).
PP_SCHEDULES = {"GPipe": 1, "1F1B": 1, "Interleaved1F1B": 2, "LoopedBFS": 2,
                "InterleavedZeroBubble": 2, "ZBVZeroBubble": 2}
MULTI_STAGE = {"Interleaved1F1B", "LoopedBFS", "InterleavedZeroBubble", "ZBVZeroBubble"}

# Ring attention (Liu et al. 2023, https://arxiv.org/abs/2310.01889) as torch runs it for
# torchtitan (torch/distributed/tensor/experimental/_attention.py, ``_templated_ring_attention``
# and ``_templated_ring_attention_backward``; _context_parallel/_attention.py from torch 2.9; the
# defaults ``_ContextParallelOptions(convert_to_f32=True, rotate_method=ALL_GATHER)``, torchtitan's
# ``context_parallel_rotate_method = "allgather"``). CP shards the arguments of SDPA, and
# torchtitan's Llama expands k and v to every query head before SDPA (``repeat_kv`` in
# torchtitan/models/llama/model.py at the benchmark's commit 31a17bf), so every buffer is as wide
# as q (n_h x d / tp), not as the GQA k/v. While one block's backward runs, per element of the
# local expanded K (s/cp tokens x q width): the all-gathered K and V of the whole sequence (the
# ALL_GATHER rotater keeps one aggregated buffer, 2 cp c), the concatenated local K/V it sends
# (2 c), the fp32 accumulators of dq, dk, dv (3 x 4), one ring step's dq, dk, dv from the kernel
# (3 c) and the fp32 dK/dV passed round the ring (an ALL_TO_ALL rotater: the send and the receive
# buffer, 2 x 2 x 4). The forward's buffers (the gathered K/V, the merger's fp32 output) are
# fewer and are freed before the backward's.
RING_ACCUM_BYTES = 4  # convert_to_f32: the accumulators and the dK/dV in flight are fp32


def ring_attention_bytes_per_element(cp: int, c: float) -> float:
    """Bytes ring attention holds in one block's backward per element of the local, expanded K."""
    gathered_kv, sent_kv = 2 * cp * c, 2 * c
    grad_accumulators, step_grads = 3 * RING_ACCUM_BYTES, 3 * c
    grad_kv_ring = 2 * 2 * RING_ACCUM_BYTES
    return gathered_kv + sent_kv + grad_accumulators + step_grads + grad_kv_ring

# Loss parallelism (torch.distributed.tensor.parallel.loss_parallel, on by default in torchtitan
# with TP) computes the cross-entropy over vocabulary-sharded logits with extra fp32 temporaries:
# measured with real tensors on CPU (gloo, 2 ranks, torch 2.13, MemTracker, 512 x 4000 local bf16
# logits), its peak is 18 B per local logit against 14 for F.cross_entropy on the same local
# shard (both counting the 2-byte logits): 4 B per logit beyond memory.py's loss figures.
LOSS_PARALLEL_EXTRA_BYTES_PER_LOGIT = 4.0


class PlanError(UserError, ValueError):
    """A parallel plan that cannot run: degrees that do not multiply to the world size, a degree
    the model's shape cannot be split by, an unknown pipeline schedule. The message says which."""


@dataclass(frozen=True)
class ParallelPlan:
    """The degrees of a torchtitan run (``[parallelism]``), checked on construction.

    ``dp_shard`` is FSDP's shard degree, ``dp_replicate`` HSDP's replica degree (both 1: no data
    parallelism); ``ep`` borrows its ranks from dp_shard x cp as torchtitan does, so it is not a
    factor of the world size. ``sequence_parallel``: torchtitan always pairs TP with SP.
    ``pp_microbatches``: None = torchtitan's default, one per pipeline stage in the whole pipeline
    (pp x virtual stages: ``build_pipeline_schedule``, "if n_microbatches is None:
    n_microbatches = num_total_stages", torchtitan at 9dec370). ``pp_virtual_stages``: model chunks per rank,
    None = the schedule's default (``PP_SCHEDULES``)."""

    world_size: int
    dp_shard: int = 1
    dp_replicate: int = 1
    cp: int = 1
    tp: int = 1
    pp: int = 1
    ep: int = 1
    sequence_parallel: bool = True
    pp_schedule: str = "1F1B"
    pp_microbatches: int | None = None
    pp_virtual_stages: int | None = None
    async_tp: bool = False
    # FSDP2's reshard_after_forward on the blocks: False is ZeRO-2 / SHARD_GRAD_OP, each block stays
    # gathered from its forward to its backward (memory.py's fsdp_shard_grad_op); with PP torchtitan
    # never reshards after forward, so the flag only changes a plan without PP
    reshard_after_forward: bool = True

    def __post_init__(self) -> None:
        for name in ("world_size", "dp_shard", "dp_replicate", "cp", "tp", "pp", "ep"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise PlanError(f"{name} must be a whole number >= 1, got {value!r}")
        product = self.dp_replicate * self.dp_shard * self.cp * self.tp * self.pp
        if product != self.world_size:
            raise PlanError(f"dp_replicate x dp_shard x cp x tp x pp = {self.dp_replicate} x {self.dp_shard} x "
                            f"{self.cp} x {self.tp} x {self.pp} = {product}, not the world size {self.world_size}")
        if (self.dp_shard * self.cp) % self.ep:
            raise PlanError(f"ep {self.ep} must divide dp_shard x cp = {self.dp_shard * self.cp} "
                            "(torchtitan borrows the expert-parallel ranks from them)")
        if self.pp_schedule not in PP_SCHEDULES:
            raise PlanError(f"unknown pipeline schedule {self.pp_schedule!r}; one of {', '.join(PP_SCHEDULES)}")
        v = self.virtual_stages
        if v < 1:
            raise PlanError(f"pp_virtual_stages must be >= 1, got {v}")
        if self.pp_schedule in MULTI_STAGE and v < 2 and self.pp > 1:
            raise PlanError(f"{self.pp_schedule} puts several model chunks on each rank: pp_virtual_stages >= 2")
        if self.pp_schedule not in MULTI_STAGE and v != 1:
            raise PlanError(f"{self.pp_schedule} has one model chunk per rank: pp_virtual_stages must be 1")
        if self.pp_schedule == "ZBVZeroBubble" and v != 2:
            raise PlanError("ZBVZeroBubble's V shape has exactly 2 chunks per rank")
        if self.pp_microbatches is not None and self.pp > 1 and self.pp_microbatches < self.pp:
            raise PlanError(f"{self.pp_microbatches} micro-batches cannot fill {self.pp} pipeline stages: "
                            "use at least pp micro-batches")

    # --- derived facts ---------------------------------------------------------------------
    @property
    def virtual_stages(self) -> int:
        """Model chunks per pipeline rank (1 unless the schedule is multi-stage)."""
        if self.pp_virtual_stages is not None:
            return self.pp_virtual_stages
        return PP_SCHEDULES.get(self.pp_schedule, 1)

    @property
    def dp(self) -> int:
        """Data-parallel degree: how many model replicas see different samples."""
        return self.dp_replicate * self.dp_shard

    @property
    def fsdp_shard(self) -> int:
        """Ranks one parameter is sharded over: torchtitan's ``dp_shard_cp`` mesh."""
        return self.dp_shard * self.cp

    @property
    def model_parallel(self) -> int:
        """GPUs one data-parallel rank spans (tp x cp x pp): they share one sample stream."""
        return self.tp * self.cp * self.pp

    @property
    def degrees(self) -> dict[str, int]:
        return {"pp": self.pp, "dp_replicate": self.dp_replicate, "dp_shard": self.dp_shard,
                "cp": self.cp, "tp": self.tp}

    @property
    def mesh_shape(self) -> tuple[int, ...]:
        """The device mesh, outermost first, in ``MESH_ORDER`` (axes of size 1 kept)."""
        return tuple(self.degrees[a] for a in MESH_ORDER)

    @property
    def enabled_axes(self) -> tuple[str, ...]:
        return tuple(a for a in MESH_ORDER if self.degrees[a] > 1)

    def stride(self, axis: str) -> int:
        """Rank distance between neighbours on ``axis``: the product of the axes inside it."""
        inner = MESH_ORDER[MESH_ORDER.index(axis) + 1:]
        return math.prod(self.degrees[a] for a in inner)

    def crosses_nodes(self, axis: str, gpus_per_node: int) -> bool:
        """Whether a group of ``axis`` spans more than one node (ranks numbered node by node)."""
        size = self.degrees[axis]
        return size > 1 and size * self.stride(axis) > gpus_per_node

    def groups_per_node(self, axis: str, gpus_per_node: int) -> int:
        """How many distinct groups of ``axis`` have members on one node: they share its NICs
        when the axis crosses nodes (1: one ring uses all the node's NICs)."""
        return max(1, min(gpus_per_node, self.stride(axis)))

    def axes_across_nodes(self, gpus_per_node: int) -> tuple[str, ...]:
        return tuple(a for a in MESH_ORDER if self.crosses_nodes(a, gpus_per_node))


def plan_for(world_size: int, *, tp: int = 1, cp: int = 1, pp: int = 1, dp_replicate: int = 1,
             **options: object) -> ParallelPlan:
    """A plan with dp_shard inferred (torchtitan's ``data_parallel_shard_degree = -1``)."""
    rest = tp * cp * pp * dp_replicate
    if rest < 1 or world_size % rest:
        raise PlanError(f"tp x cp x pp x dp_replicate = {rest} does not divide the world size {world_size}")
    return ParallelPlan(world_size=world_size, dp_shard=world_size // rest, dp_replicate=dp_replicate,
                        cp=cp, tp=tp, pp=pp, **options)  # type: ignore[arg-type]


def plan_from_setup(resolved: ResolvedSetup, **options: object) -> ParallelPlan:
    """The plan a resolved setup states: its ``tensor_parallel``, ``context_parallel`` and
    ``pipeline_parallel`` degrees (1 when unstated), FSDP over the rest; HSDP's replicas are not
    a setup field. Raises ``PlanError`` when the degrees do not divide the GPU count."""
    setup = resolved.setup
    return plan_for(resolved.gpu_count, tp=setup.tensor_parallel or 1, cp=setup.context_parallel or 1,
                    pp=setup.pipeline_parallel or 1, **options)  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------------
# Korthikanti et al.'s per-layer activation count (the reference the block count is split by)
# ---------------------------------------------------------------------------------------------


def korthikanti_layer_bytes(s: int, b: int, h: int, a: int, t: int = 1, sp: bool = False,
                            selective: bool = False) -> float:
    """Activation bytes one GPT layer saves, 16-bit activations with dropout, from Korthikanti et
    al. 2022, "Reducing Activation Recomputation in Large Transformer Models",
    https://arxiv.org/abs/2205.05198 : s sequence, b micro-batch, h hidden, a heads, t TP degree.

    - eq. 1, no parallelism:                        s b h (34 + 5 a s / h)
    - eq. 2, tensor parallel (no SP):               s b h (10 + 24 / t + 5 a s / (h t))
    - eq. 4, tensor + sequence parallel:            s b h (34 / t + 5 a s / (h t))
    - sec. 5, selective recomputation (the s x s attention core recomputed), drops the 5as/h term:
      s b h (34 / t) with SP (s b h (10 + 24 / t) without).
    The 10 s b h TP leaves replicated are the two LayerNorms' inputs (4), the inputs of the
    first attention and MLP matmuls (4) and two dropout masks (2). Flash/SDPA attention keeps no
    s x s scores, so it behaves like the selective case."""
    scores = 0.0 if selective else 5 * a * s / h
    if sp:
        return s * b * h * (34 / t + scores / t)
    return s * b * h * (10 + 24 / t + scores / t)


# ---------------------------------------------------------------------------------------------
# Per-GPU memory
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PlanMemory:
    """What one GPU holds at its peak under a plan, GiB (the parts sum to ``total_gib``)."""

    params_gib: float
    grads_gib: float
    optimizer_gib: float
    activations_gib: float
    buffers_gib: float  # gathered weights, unsharded gradients, reduce copies, ring K/V, loss temps
    total_gib: float
    reserved_gib: float
    usable_gib: float
    fits: bool
    peak_stage: str  # "only" (no PP), "first" or "last" pipeline stage
    peak_moment: str  # "backward" or "optimizer_step"
    layers_on_rank: int
    microbatch_size: int  # samples per pipeline micro-batch (the local batch without PP)
    in_flight: float  # micro-batch x layer chunks of activations alive at the peak stage
    # the part of the peak that grows with the tokens a GPU holds: activations, the loss's
    # temporaries, ring attention's K/V, the pipeline's boundary buffers
    token_gib: float = 0.0


def memory_inputs(setup: ResolvedSetup | MemoryInputs) -> MemoryInputs:
    """The memory model's inputs from a resolved setup (or the inputs themselves)."""
    if isinstance(setup, MemoryInputs):
        return setup
    from bot.calc import _mem_inputs  # private there; one adapter for both calculators

    return _mem_inputs(setup)


def check_plan_fits_model(inputs: MemoryInputs, plan: ParallelPlan) -> None:
    """Degrees the model shape and the batch must be divisible by (torchtitan asserts the same
    when it builds the parallelisms). Raises ``PlanError`` naming the first that fails."""
    model = inputs.model
    if model.n_heads % plan.tp or model.n_kv_heads % plan.tp:
        raise PlanError(f"tp {plan.tp} must divide the attention heads ({model.n_heads}) and the "
                        f"key/value heads ({model.n_kv_heads}) of {model.name}")
    if plan.sequence_parallel and plan.tp > 1 and inputs.seq_len % plan.tp:
        raise PlanError(f"sequence parallelism splits the sequence over tp {plan.tp}: seq_len {inputs.seq_len} "
                        "is not divisible by it")
    if plan.cp > 1 and inputs.seq_len % (2 * plan.cp):
        # torchtitan's load-balanced CP cuts each sequence into 2 x cp chunks
        raise PlanError(f"context parallelism cuts the sequence into 2 x cp = {2 * plan.cp} chunks: "
                        f"seq_len {inputs.seq_len} is not divisible by it")
    chunks = plan.pp * plan.virtual_stages
    if plan.pp > 1 and model.n_layers < chunks:
        raise PlanError(f"{model.n_layers} layers cannot fill pp x virtual stages = {chunks} model chunks")
    if plan.ep > 1 and (not model.is_moe or model.n_experts % plan.ep):
        raise PlanError(f"ep {plan.ep} needs a mixture-of-experts model whose experts it divides "
                        f"({model.name}: {model.n_experts} experts)")
    if plan.pp > 1:
        m = microbatches(inputs, plan)
        if inputs.micro_batch % m:
            raise PlanError(f"the local batch {inputs.micro_batch} is not divisible into {m} pipeline micro-batches "
                            "(torchtitan's default: one per stage, pp x virtual stages)")


def microbatch_size(inputs: MemoryInputs, plan: ParallelPlan) -> int:
    """Samples per pipeline micro-batch: the local batch over the micro-batches (1 by default)."""
    if plan.pp == 1:
        return inputs.micro_batch
    return max(1, inputs.micro_batch // microbatches(inputs, plan))


def microbatches(inputs: MemoryInputs, plan: ParallelPlan) -> int:
    """Pipeline micro-batches per local batch (1 without PP)."""
    if plan.pp == 1:
        return 1
    return plan.pp_microbatches or plan.pp * plan.virtual_stages


def in_flight_chunks(schedule: str, pp: int, rank: int, m: int, v: int) -> float:
    """Micro-batches whose activations a pipeline rank holds at once, in units of the rank's
    full layer set (a chunk of a multi-stage rank counts 1/v).

    GPipe: all m forwards before any backward (Huang et al. 2019, https://arxiv.org/abs/1811.06965).
    1F1B: rank r runs pp - r warm-up forwards, then alternates (Narayanan et al. 2021,
      https://arxiv.org/abs/2104.04473 sec. 2.2.1): min(m, pp - r).
    Interleaved 1F1B (same paper sec. 2.2.2; Megatron's warm-up count
      (pp - r - 1) x 2 + (v - 1) x pp chunk forwards, +1 for the one being run), each chunk 1/v
      of the rank's layers; torchtitan's InterleavedZeroBubble and LoopedBFS are counted alike.
    ZBVZeroBubble (Qi et al. 2023, https://arxiv.org/abs/2401.10241 sec. 4 "ZB-V"): the V schedule
      keeps 1F1B's activation memory: min(m, pp - r) like 1F1B."""
    if pp == 1:
        return 1.0
    if schedule == "GPipe":
        return float(m)
    if schedule in ("1F1B", "ZBVZeroBubble"):
        return float(min(m, pp - rank))
    warmup = min(m * v, (pp - rank - 1) * 2 + (v - 1) * pp + 1)
    return warmup / v


def _layer_params_split(model: ModelSpec, tp: int, ep: int) -> tuple[float, float]:
    """(parameters of one block on one TP x EP rank, of which matmul weights). Norms stay
    replicated over TP (torchtitan: SequenceParallel on the norms); routed experts divide over
    EP and over TP (torchtitan's default expert TP = tp)."""
    layer = model.layer_params()
    norms = model.norms_per_layer * model.hidden * (2 if model.has_norm_bias else 1)
    linear = linear_params_per_layer(model)
    if model.is_moe and ep > 1:
        experts = model.n_experts * model.mlp_params(model.moe_intermediate)
        dense = layer - norms - experts
        return dense / tp + experts / (tp * ep) + norms, (linear - experts) / tp + experts / (tp * ep)
    return (layer - norms) / tp + norms, linear / tp


def block_bytes_per_token(inputs: MemoryInputs, plan: ParallelPlan, mode: ActivationMode) -> tuple[float, float]:
    """(bytes one block saves per token of the rank's sequence share, bytes it keeps under
    full checkpointing), split the way Korthikanti et al. split the layer (``korthikanti_layer_bytes``):
    the norm region (norm internals and outputs: the 10 sbh that TP alone leaves replicated) and
    the attention/MLP region, which TP divides. With SP the norm region is divided too, except
    that DTensor's SP all-gathers each norm's output before the first matmul and that matmul
    saves the gathered, full-sequence copy (torchtitan's PrepareModuleInput to Replicate before
    attention and feed_forward): ch per norm stays."""
    model, t = inputs.model, plan.tp
    c = mode.compute
    whole = block_activation_bytes_per_token(model, mode)
    norm_region = model.norms_per_layer * final_norm_bytes_per_token(model, mode)
    inside = whole - norm_region
    kept = block_input_bytes_per_token(model, mode)
    if t == 1:
        return whole, kept
    if plan.sequence_parallel:
        gathered = 2 * c * model.hidden  # the attention and MLP inputs, gathered over the sequence
        return (norm_region - gathered) / t + gathered + inside / t, kept / t
    return norm_region + inside / t, kept


def pipeline_buffers(inputs: MemoryInputs, plan: ParallelPlan, stage: str, mbs: int, m: int,
                     flight: float, c: int) -> float:
    """Bytes a pipeline rank keeps for its stage boundaries. PyTorch's pipelining stage makes a
    receive buffer per micro-batch up front, for the activations from the previous stage and for
    the gradients from the next one (torch/distributed/pipelining/stage.py: ``_prepare_forward_infra``
    creates ``args_recv_info`` for every micro-batch, ``_setup_backward_recv_info`` the
    ``grad_recv_info``, each with a buffer from ``_make_tensor_from_meta``), and keeps each in-flight
    micro-batch's stage output for its backward. A boundary tensor is one micro-batch's residual
    stream, sequence-sharded over tp under SP. On the first rank: stage 0 (gradients received
    only) and, interleaved, stages pp, 2pp, ... (both); on the last rank the mirror image."""
    if plan.pp == 1:
        return 0.0
    boundary = mbs * (inputs.seq_len // plan.cp) * inputs.model.hidden * c / (plan.tp if plan.sequence_parallel else 1)
    v = plan.virtual_stages
    receive_sides = 2 * v - 1  # every local stage receives both ways but the pipeline's end
    outputs = flight * v if stage == "first" else 0.0  # outputs kept until their backward
    return (receive_sides * m + outputs) * boundary


def plan_memory(setup: ResolvedSetup | MemoryInputs, plan: ParallelPlan, *,
                pp_schedule: str | None = None) -> PlanMemory:
    """Peak per-GPU memory of ``setup`` run under ``plan`` (``pp_schedule`` overrides the plan's).

    ``setup.micro_batch`` is the local batch of one data-parallel rank (torchtitan's
    ``local_batch_size``); with PP it is cut into ``plan.pp_microbatches`` micro-batches.
    The peak is the larger of the backward moment and the optimizer step, on the pipeline stage
    where it is largest (the first stage holds the most micro-batches, the last the loss)."""
    if pp_schedule is not None and pp_schedule != plan.pp_schedule:
        plan = replace(plan, pp_schedule=pp_schedule)
    inputs = memory_inputs(setup)
    if plan.world_size != inputs.gpu_count:
        raise PlanError(f"the plan is for {plan.world_size} GPUs, the setup has {inputs.gpu_count}")
    check_plan_fits_model(inputs, plan)
    stages = ("only",) if plan.pp == 1 else ("first", "last")
    results = [_stage_memory(inputs, plan, stage) for stage in stages]
    return max(results, key=lambda r: r.reserved_gib)


# The largest local batch ``max_local_batch`` tries (sequences per data-parallel rank).
MAX_LOCAL_BATCH = 1024


def max_local_batch(setup: ResolvedSetup | MemoryInputs, plan: ParallelPlan, limit: int = MAX_LOCAL_BATCH) -> int:
    """The largest local batch (sequences per data-parallel rank, torchtitan's ``local_batch_size``)
    whose ``plan_memory`` fits, up to ``limit``; 0 when even the smallest does not. Under PP the
    local batch is counted in whole multiples of the schedule's micro-batches (one per stage by
    default), the only sizes torchtitan runs. The peak grows with the batch, so doubling then
    bisection finds it in about 2 log2(limit) evaluations."""
    inputs = memory_inputs(setup)
    unit = (plan.pp_microbatches or plan.pp * plan.virtual_stages) if plan.pp > 1 else 1

    def fits(k: int) -> bool:  # k units of the local batch
        return plan_memory(replace(inputs, micro_batch=k * unit), plan).fits

    top = max(1, limit // unit)
    if not fits(1):
        return 0
    lo = 1
    while lo < top and fits(min(2 * lo, top)):
        lo = min(2 * lo, top)
    hi = min(2 * lo, top + 1)  # the first size known (or assumed past the limit) not to fit
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    return lo * unit


def _stage_memory(inputs: MemoryInputs, plan: ParallelPlan, stage: str) -> PlanMemory:
    model = inputs.model
    prec = PRECISIONS[inputs.precision]
    c = prec.compute
    full = inputs.finetune == "full"
    tp, pp, v = plan.tp, plan.pp, plan.virtual_stages
    s_local = inputs.seq_len // plan.cp  # tokens of each sequence this rank keeps

    # --- parameters on this rank -------------------------------------------------------------
    layers = math.ceil(model.n_layers / (pp * v)) * v  # the rank holding the most layers
    layer_p, layer_linear = _layer_params_split(model, tp, plan.ep)
    embed = model.vocab * model.hidden / tp  # torchtitan: embedding row-wise over the vocabulary
    head = 0.0 if model.tied_embeddings else model.vocab * model.hidden / tp  # output column-wise
    final_norm = model.hidden
    root = {"only": embed + head + final_norm, "first": embed, "last": head + final_norm}[stage]
    if model.tied_embeddings and stage == "last":
        root = embed + final_norm
    rank_params = layers * layer_p + root
    if full:
        trainable = rank_params
    else:
        trainable = lora_params(model, inputs.lora_rank, inputs.lora_targets) * layers / model.n_layers / tp
    shard = plan.fsdp_shard
    fsdp = shard > 1
    opt_per_param = optimizer_bytes_per_param(inputs.optimizer, prec)
    base_bytes = prec.param if full else c  # LoRA: the frozen base in compute dtype
    params = (rank_params - trainable) * base_bytes + trainable * prec.param
    params /= shard
    optimizer = trainable * opt_per_param / shard
    grads_sharded = trainable * prec.grad / shard

    # Weights as the matmuls use them (FSDP2 MixedPrecisionPolicy: param_dtype = compute;
    # torchao's float8 all-gather: block matmul weights in 1 byte).
    linear_bytes = 1 if (inputs.float8 and full) else c
    unit_used = layer_linear * linear_bytes + (layer_p - layer_linear) * c
    root_used = root * c
    unit_trainable = trainable / max(layers, 1)
    unit_grad_buffers = unit_trainable * (c + prec.reduce)  # unsharded grad + its reduce copy

    # --- FSDP buffers --------------------------------------------------------------------------
    if not fsdp:
        gathered = 0.0
        grads_backward = trainable * prec.grad  # every gradient accumulates in place
    elif pp > 1:
        # torchtitan: reshard_after_forward=False under PP, and PyTorch's pipelining stage calls
        # set_reshard_after_backward(False) / set_requires_gradient_sync(False) until the last
        # micro-batch (torch/distributed/pipelining/stage.py): the stage stays gathered in
        # compute dtype, its gradients accumulate unsharded in reduce dtype (FSDPParam
        # ``to_accumulated_grad_if_needed``: upcast when param and reduce dtypes differ).
        gathered = layers * unit_used + root_used
        grads_backward = trainable * prec.reduce + unit_trainable * c
    elif not plan.reshard_after_forward:
        # SHARD_GRAD_OP (ZeRO-2): every block stays gathered from its forward until its backward
        # reshards it, so the loss's backward sees all of them and the root gathered at once
        # (memory.py's fsdp_shard_grad_op phases); gradients are reduce-scattered block by block
        gathered = layers * unit_used + root_used
        grads_backward = unit_grad_buffers + (grads_sharded if inputs.grad_accum_steps > 1 else 0.0)
    else:
        # reshard_after_forward=True: one block gathered, the next prefetched, its gradient and
        # reduce-scatter copy in flight, the root gathered again for the head (memory.py phases).
        gathered = 2 * unit_used + root_used
        grads_backward = unit_grad_buffers + (grads_sharded if inputs.grad_accum_steps > 1 else 0.0)

    # --- activations ----------------------------------------------------------------------------
    mode = ActivationMode(compute=c, autocast=False, frozen=not full, lora_rank=inputs.lora_rank,
                          compiled=inputs.torch_compile, lora_targets=inputs.lora_targets,
                          fused_norm=inputs.norm_impl == "fused")
    per_tok, kept_tok = block_bytes_per_token(inputs, plan, mode)
    per_block = per_tok * s_local + attention_scores_bytes(model, s_local, c) / tp
    policy = inputs.policy
    if policy == "full":
        saved_layer = kept_tok * s_local
        recompute = per_block * (1 + BLOCK_BACKWARD_TEMP_FRACTION)
    elif policy == "selective_op":
        # torchtitan's op-level policy saves matmul and SDPA outputs; TP divides all of them
        # (the w2/wo outputs are reduce-scattered over the sequence under SP).
        saved_layer = (selective_op_bytes_per_token(model, mode) / tp + kept_tok) * s_local
        recompute = per_block * (1 + BLOCK_BACKWARD_TEMP_FRACTION) - saved_layer
    elif policy == "every_k":
        k = max(1, inputs.checkpoint_every)
        saved_layer = (kept_tok * s_local + (k - 1) * per_block) / k
        recompute = per_block * (1 + BLOCK_BACKWARD_TEMP_FRACTION)
    else:
        # no checkpointing: during a block's backward part of its own saved tensors are freed
        # (memory.py's (L - 1 + BLOCK_BACKWARD_TEMP_FRACTION) blocks)
        saved_layer = per_block
        recompute = per_block * (BLOCK_BACKWARD_TEMP_FRACTION - 1)
    mbs = microbatch_size(inputs, plan)
    m = microbatches(inputs, plan)
    rank = 0 if stage in ("only", "first") else pp - 1
    flight = in_flight_chunks(plan.pp_schedule, pp, rank, m, v)
    saved = flight * layers * saved_layer * mbs
    # Two backward moments, as memory.py's phases: the loss's backward (every block's saved
    # tensors, the final norm's, the logits' saved and temporary bytes; loss parallelism splits the
    # vocabulary over TP) and a block's backward (the logits are gone, one block recomputed).
    moments = [(saved + recompute * mbs, 0.0)]
    if stage in ("only", "last"):
        head = final_norm_bytes_per_token(model, mode) * s_local * mbs / (tp if plan.sequence_parallel else 1)
        saved_pl, temp_pl, _ = loss_bytes_per_logit(inputs, c)
        if tp > 1:
            temp_pl += LOSS_PARALLEL_EXTRA_BYTES_PER_LOGIT
        logits = model.vocab / tp * s_local * mbs
        moments.append((saved + head + saved_pl * logits, temp_pl * logits))
    activations, loss_temp = max(moments, key=lambda am: am[0] + am[1])
    # Ring attention's K/V in flight for the block being computed
    ring = (ring_attention_bytes_per_element(plan.cp, c) * model.q_dim / tp * s_local * mbs
            if plan.cp > 1 else 0.0)
    pipe = pipeline_buffers(inputs, plan, stage, mbs, m, flight, c)

    backward_buffers = gathered + ring + loss_temp + pipe
    backward_total = params + grads_backward + optimizer + activations + backward_buffers
    step_temp = optimizer_step_temp_bytes(inputs.optimizer, prec, inputs.optimizer_impl, trainable, 0.0) / shard
    step_grads = grads_sharded if fsdp else trainable * prec.grad
    step_buffers = step_temp + (gathered + pipe if pp > 1 else 0.0)
    step_total = params + optimizer + step_grads + step_buffers

    usable = usable_gib(inputs.gpu_memory_gb)
    if backward_total >= step_total:
        transient = activations + backward_buffers
        reserved = backward_total + RESERVED_TRANSIENT_FRACTION * transient
        return PlanMemory(params_gib=params / GIB, grads_gib=grads_backward / GIB, optimizer_gib=optimizer / GIB,
                          activations_gib=activations / GIB, buffers_gib=backward_buffers / GIB,
                          total_gib=backward_total / GIB, reserved_gib=reserved / GIB, usable_gib=usable,
                          fits=reserved / GIB <= usable, peak_stage=stage, peak_moment="backward",
                          layers_on_rank=layers, microbatch_size=mbs, in_flight=flight,
                          token_gib=(activations + loss_temp + ring + pipe) / GIB)
    reserved = step_total + RESERVED_TRANSIENT_FRACTION * step_buffers
    return PlanMemory(params_gib=params / GIB, grads_gib=step_grads / GIB, optimizer_gib=optimizer / GIB,
                      activations_gib=0.0, buffers_gib=step_buffers / GIB, total_gib=step_total / GIB,
                      reserved_gib=reserved / GIB, usable_gib=usable, fits=reserved / GIB <= usable,
                      peak_stage=stage, peak_moment="optimizer_step", layers_on_rank=layers,
                      microbatch_size=mbs, in_flight=flight, token_gib=pipe / GIB)
