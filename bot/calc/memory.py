"""Per-GPU peak memory for every training strategy, assembled from the terms of three modules.

This module owns the peak moments and the layouts that decide them: FSDP's all-gathered units and
reduce-scatter buffers (root layouts, ``reshard_after_forward``), DDP's gradient buckets and
autocast's weight cache, DeepSpeed ZeRO-2's layout, the optimizer step, CPU offload and paged state.
The terms come from ``bot/calc/states.py`` (bytes of parameters, gradients and optimizer state per
precision/optimizer/fine-tuning mode), ``bot/calc/activations.py`` (what blocks, the final norm and
the loss save for backward) and ``bot/calc/reserves.py`` (headroom, the caching allocator's reserved
share, host RAM, the largest micro-batch that fits: closed form, every term is linear in it).

How the peak is found: one training step passes through a few moments where memory can peak;
each is a ``Phase`` (bytes by kind, split into a fixed part and a per-sample part), and the peak
is the largest phase. The phases, per strategy, are
- ``loss_backward``: every block's saved activations plus the loss's fp32 temporaries;
- ``head_backward``: the same, with the root unit (embeddings + LM head) re-gathered;
- ``block_backward``: a block's backward: its unsharded gradient and reduce buffers, the next
  block prefetched, the activations of the blocks not yet processed;
- ``optimizer_step``: all gradients and the optimizer's temporaries, activations freed.
This mirrors what ``bot/bench/simulate.py`` measures (FSDP2 + a fake process group, no gradient
accumulation, ``zero_grad(set_to_none=True)``), so gradients are only counted where they exist.
See docs/calc.md for the derivation and the comparison against the simulator.

Conventions: GiB = 2**30 bytes; every figure is per GPU unless its name says otherwise.
Mixed precision is PyTorch's: fp32 parameters (the "master weights") and gradients, bf16/fp16
compute; FSDP2 ``MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=fp32)``; DDP + autocast.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from bot.calc.activations import (
    BLOCK_BACKWARD_TEMP_FRACTION,
    LOSS_CHUNKS,
    LOSS_SAVED_BYTES_PER_LOGIT,
    LOSS_TEMP_BYTES_PER_LOGIT,
    ActivationMode,
    attention_scores_bytes,
    block_activation_bytes_per_token,
    block_input_bytes_per_token,
    compiled_block_bytes_per_token,
    extra_block_bytes_per_token,
    final_norm_bytes_per_token,
    kept_logits_bytes_per_logit,
    lora_dropout_bytes_per_token,
    loss_bytes_per_logit,
    selective_op_bytes_per_token,
)
from bot.calc.attention import softcap_bytes_per_logit
from bot.calc.reserves import (
    HEADROOM_FIXED_GIB,
    HEADROOM_FRACTION,
    HOST_HEADROOM_FRACTION,
    MAX_MICRO_BATCH,
    RESERVED_TRANSIENT_FRACTION,
    RESERVED_TRANSIENT_FRACTION_DEFAULT_ALLOCATOR,
    host_ram_fits,
    max_micro_batch,
    reserved_fraction,
    usable_gib,
)
from bot.calc.states import (
    BASE_DTYPE_BYTES,
    LORA_TARGET_SETS,
    LORA_TARGETS,
    NF4_BYTES_PER_PARAM,
    PRECISIONS,
    Precision,
    active_intermediate,
    linear_params_per_layer,
    lora_params,
    lora_shapes,
    model_states_bytes,
    optimizer_bytes_per_param,
    optimizer_step_temp_bytes,
    optimizer_step_temp_bytes_per_param,
    root_params,
)
from bot.catalog import ModelSpec

# The terms live in bot/calc/states.py (params, grads, optimizer), bot/calc/activations.py and
# bot/calc/reserves.py (headroom, allocator, host RAM); they are re-exported here so that
# ``from bot.calc.memory import ...`` keeps naming every memory figure in one place.
__all__ = [
    "BASE_DTYPE_BYTES", "BLOCK_BACKWARD_TEMP_FRACTION", "DDP_BUCKET_CAP_MB", "DEEPSPEED_REDUCE_BUCKET", "GIB",
    "HEADROOM_FIXED_GIB", "HEADROOM_FRACTION", "HOST_HEADROOM_FRACTION", "LORA_TARGETS", "LORA_TARGET_SETS",
    "LOSS_CHUNKS", "LOSS_SAVED_BYTES_PER_LOGIT", "LOSS_TEMP_BYTES_PER_LOGIT", "MAX_MICRO_BATCH",
    "NF4_BYTES_PER_PARAM", "PRECISIONS", "RESERVED_TRANSIENT_FRACTION",
    "RESERVED_TRANSIENT_FRACTION_DEFAULT_ALLOCATOR", "ActivationMode", "MemoryEstimate", "MemoryInputs", "Phase",
    "Precision", "active_intermediate", "attention_scores_bytes", "block_activation_bytes_per_token",
    "block_input_bytes_per_token", "compiled_block_bytes_per_token", "deepspeed_fp32_grad_copy_bytes",
    "deepspeed_layout", "extra_block_bytes_per_token", "final_norm_bytes_per_token", "fsdp_root_buffers",
    "host_ram_fits", "kept_logits_bytes_per_logit", "linear_params_per_layer", "loss_bytes_per_logit",
    "lora_dropout_bytes_per_token", "lora_params", "lora_shapes",
    "max_micro_batch", "memory_estimate", "model_states_bytes", "optimizer_bytes_per_param",
    "optimizer_step_phase", "optimizer_step_temp_bytes", "optimizer_step_temp_bytes_per_param",
    "paged_state_bytes", "phases", "reserved_fraction", "reserved_phases", "reshard_group", "root_params",
    "selective_op_bytes_per_token", "usable_gib",
]

GIB = 2**30

# DeepSpeed's default reduce_bucket_size, 5e8 elements (https://www.deepspeed.ai/docs/config-json/,
# "ZeRO optimizations"): the gradient bucket ``backward()`` allocates when contiguous_gradients is
# on, the default (deepspeed/runtime/zero/stage_1_and_2.py at commit cde57d29,
# ``DeepSpeedZeroOptimizer.backward``).
DEEPSPEED_REDUCE_BUCKET = 5e8
# DistributedDataParallel(bucket_cap_mb=25), PyTorch's default: it sets how many gradient buckets
# there are, not their total size (the memory model counts one bucket copy of every gradient).
DDP_BUCKET_CAP_MB = 25


@dataclass(frozen=True)
class MemoryEstimate:
    """Peak memory of one strategy on one GPU, in GiB, and whether it fits. The parts are what
    is alive at the peak moment; they sum to ``total_gib``."""

    params_gib: float  # parameters this GPU owns (sharded under FSDP; fp32 master under mixed)
    grads_gib: float  # gradients alive at the peak (all of them only if the peak is the step)
    optimizer_gib: float  # optimizer states this GPU owns
    activations_gib: float  # tensors saved for backward at the peak, at micro_batch
    buffers_gib: float  # temporaries: all-gathered params, reduce buffers, DDP buckets, casts
    total_gib: float
    fits: bool
    max_micro_batch: int  # largest micro-batch that fits; 0 if even 1 does not
    usable_gib: float  # GPU capacity minus headroom
    # CPU offload: host RAM one node needs for its GPUs' shards; a paged optimizer: its state, which
    # the driver may page out to host RAM (``paged_state_bytes``); else 0
    host_ram_gib: float
    # What the caching allocator reserves at the peak (>= total_gib, the allocated peak; the
    # module's RESERVED_TRANSIENT_FRACTION); "fits" compares this with usable_gib.
    reserved_gib: float = 0.0


# ---------------------------------------------------------------------------------------------
# Phases
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Phase:
    """Bytes alive at one moment of a step: fixed parts, plus parts that scale with the samples."""

    name: str
    params: float
    grads: float
    optimizer: float
    buffers: float
    activations_per_sample: float = 0.0
    buffers_per_sample: float = 0.0
    # share of the transient bytes the caching allocator keeps cached on top (reserved_fraction())
    reserved_fraction: float = RESERVED_TRANSIENT_FRACTION

    def total(self, micro_batch: int) -> float:
        return self.fixed + micro_batch * self.per_sample

    def reserved(self, micro_batch: int) -> float:
        """What the caching allocator holds at this moment: allocated + a fraction of the
        transient bytes (``reserved_fraction``). Linear in the micro-batch."""
        return self.reserved_fixed + micro_batch * self.reserved_per_sample

    @property
    def reserved_fixed(self) -> float:
        return self.fixed + self.reserved_fraction * self.buffers

    @property
    def reserved_per_sample(self) -> float:
        return self.per_sample * (1 + self.reserved_fraction)

    @property
    def fixed(self) -> float:
        return self.params + self.grads + self.optimizer + self.buffers

    @property
    def per_sample(self) -> float:
        return self.activations_per_sample + self.buffers_per_sample


@dataclass(frozen=True)
class MemoryInputs:
    """Everything the memory model needs, taken from a ResolvedSetup."""

    model: ModelSpec
    gpu_memory_gb: float
    gpu_count: int
    gpus_per_node: int
    precision: str
    optimizer: str
    finetune: str
    lora_rank: int
    seq_len: int
    micro_batch: int
    activation_checkpointing: bool
    cpu_ram_gb: float | None
    # The run options (issue 14); defaults are PyTorch's (bot/core/setup.py RUN_OPTION_DEFAULTS).
    optimizer_impl: str = "foreach"
    ddp_bucket_view: bool = False
    checkpointing_policy: str | None = None  # None: "full" when activation_checkpointing is on
    checkpoint_every: int = 1
    torch_compile: bool = False
    loss_impl: str = "standard"
    grad_accum_steps: int = 1
    grad_sync: str = "every_micro_step"  # FSDP2: reduce-scatter every micro-step, or the last only
    attn_implementation: str | None = None  # eager / sdpa / flash_attention_2; None: transformers' default
    expandable_segments: bool = False  # PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (off: PyTorch's default)
    model_code: str = "pytorch"  # whose block code: "pytorch" (bot/bench/model.py) or "transformers"
    lora_targets: str = "attention"
    lora_dropout: float = 0.0  # PEFT's LoraConfig(lora_dropout=...); 0 = PEFT's default, nn.Identity
    # the model output's logits kept alive by the loop through backward: "fp32" | "16bit" | None
    logits_kept: str | None = None
    base_dtype: str | None = None  # frozen base under LoRA; None: compute dtype (nf4 for QLoRA)
    float8: bool = False
    norm_impl: str = "eager"
    # FSDP layout beyond one unit per block (issue 14; see ``fsdp_root_buffers``):
    # fsdp_root "resharded" | "kept" | "split"; reshard_after_forward for the blocks: True (None),
    # False, or an int k, the group size the blocks are resharded to after forward.
    fsdp_root: str = "resharded"
    reshard_after_forward: bool | int | None = None
    # The optimizer steps each parameter inside backward (``optimizer_step_phase``) / keeps its
    # state in CUDA managed memory outside PyTorch's allocator (``paged_state_bytes``).
    optimizer_in_backward: bool = False
    paged_optimizer: bool = False
    # "deepspeed": DeepSpeed ZeRO-2's layout for SHARD_GRAD_OP where ``deepspeed_layout`` says
    # it applies.
    engine: str = "pytorch"

    @property
    def policy(self) -> str:
        """none | full | every_k | selective_op"""
        if not self.activation_checkpointing:
            return "none"
        return self.checkpointing_policy or "full"


def phases(inputs: MemoryInputs, strategy: str) -> tuple[list[Phase], float]:
    """The candidate peak moments of ``strategy`` and the host bytes one GPU's offload needs."""
    prec = PRECISIONS[inputs.precision]
    model, c, s = inputs.model, PRECISIONS[inputs.precision].compute, inputs.seq_len
    full = inputs.finetune == "full"
    layer, root, linear = model.layer_params(), root_params(model), linear_params_per_layer(model)
    accumulating = inputs.grad_accum_steps > 1

    # --- model states, whole model -------------------------------------------------------
    opt_per_param = optimizer_bytes_per_param(inputs.optimizer, prec)
    unit_used: float  # bytes of one block's weights as its matmuls use them
    root_used: float  # the same for the root unit (embeddings, final norm, LM head)
    params: float  # bytes of the stored parameters, whole model
    if full:
        trainable = model.params
        params = model.params * prec.param
        # Weights as matmuls use them (gathered by FSDP, cast by autocast): compute dtype; with
        # torchao's float8 all-gather the block matmul weights travel and sit gathered in 1 byte
        # (https://github.com/pytorch/ao/tree/main/torchao/float8, enable_fsdp_float8_all_gather).
        per_linear_used = 1 if inputs.float8 else c
        unit_used, root_used = linear * per_linear_used + (layer - linear) * c, root * c
        largest = max(layer - linear, model.vocab * model.hidden, model.hidden * model.intermediate)
    else:
        # LoRA/QLoRA: the frozen base in base_dtype (compute dtype unless stated; QLoRA stores
        # block matmuls in NF4: embeddings, norms and the LM head stay 16 bit:
        # https://huggingface.co/docs/peft/main/en/developer_guides/quantization). Adapters train
        # in the param dtype.
        trainable = lora_params(model, inputs.lora_rank, inputs.lora_targets)
        base = inputs.base_dtype or ("nf4" if inputs.finetune == "qlora" else None)
        per_linear = BASE_DTYPE_BYTES[base] if base else c
        per_other = BASE_DTYPE_BYTES[base] if base == "fp32" else c
        unit_used = linear * per_linear + (layer - linear) * per_other + trainable / model.n_layers * c
        root_used = root * per_other
        params = model.n_layers * unit_used + root_used - trainable * c + trainable * prec.param
        largest = max(lora_shapes(model)[t][0] * inputs.lora_rank for t in lora_shapes(model))
    grads = trainable * prec.grad
    optimizer = trainable * opt_per_param
    step_temp = optimizer_step_temp_bytes(inputs.optimizer, prec, inputs.optimizer_impl, trainable, largest)
    unit_trainable = trainable / model.n_layers if not full else layer
    # FSDP2 produces a unit's unsharded gradient in param_dtype, then copies it to reduce_dtype
    # for the reduce-scatter (https://pytorch.org/docs/stable/distributed.fsdp.fully_shard.html).
    unit_grad_buffers = unit_trainable * (c + prec.reduce)
    # QLoRA dequantizes one weight matrix at a time to 16 bit for its matmul.
    quantized = inputs.finetune == "qlora" or inputs.base_dtype == "nf4"
    dequant = c * model.hidden * max(model.intermediate, model.hidden) if quantized and not full else 0.0

    # --- activations per sample ---------------------------------------------------------------
    mode = ActivationMode(compute=c, autocast=(strategy == "ddp" and prec.mixed and full),
                          frozen=not full, lora_rank=inputs.lora_rank, compiled=inputs.torch_compile,
                          lora_targets=inputs.lora_targets, fused_norm=inputs.norm_impl == "fused",
                          model_code=inputs.model_code, lora_dropout=inputs.lora_dropout > 0)
    per_block = (block_activation_bytes_per_token(model, mode) * s
                 + attention_scores_bytes(model, s, c, inputs.attn_implementation))
    fn = final_norm_bytes_per_token(model, mode) * s
    kept_input = block_input_bytes_per_token(model, mode) * s
    n_layers = model.n_layers
    policy = inputs.policy
    if policy == "full":
        # Per-block checkpointing keeps each block's input; a block's tensors are recomputed just
        # before its backward (Chen et al. 2016, https://arxiv.org/abs/1604.06174).
        at_loss = n_layers * kept_input + fn
        in_block = at_loss + per_block * (1 + BLOCK_BACKWARD_TEMP_FRACTION)
    elif policy == "every_k":
        # Every k-th block checkpointed, the others keep all their tensors (fms-fsdp's
        # ac_handler; https://pytorch.org/blog/maximizing-training/ "checkpoint every n blocks").
        n_ckpt = math.ceil(n_layers / max(1, inputs.checkpoint_every))
        at_loss = n_ckpt * kept_input + (n_layers - n_ckpt) * per_block + fn
        in_block = at_loss + per_block * (1 + BLOCK_BACKWARD_TEMP_FRACTION) - kept_input
    elif policy == "selective_op":
        # torchtitan's op-level policy: each block keeps its saved matmul/SDPA outputs and input;
        # in backward one block is rematerialised in full.
        sac = (selective_op_bytes_per_token(model, mode) + block_input_bytes_per_token(model, mode)) * s
        at_loss = n_layers * sac + fn
        in_block = at_loss - sac + per_block * (1 + BLOCK_BACKWARD_TEMP_FRACTION)
    else:
        at_loss = n_layers * per_block + fn
        in_block = (n_layers - 1 + BLOCK_BACKWARD_TEMP_FRACTION) * per_block + fn
    logits = model.vocab * s
    saved_pl, temp_pl, grad_pl = loss_bytes_per_logit(inputs, c)
    saved_pl += softcap_bytes_per_logit(model, c)  # Gemma-2's final tanh soft-cap keeps its output
    loss_saved, loss_temp, logit_grad = saved_pl * logits, temp_pl * logits, grad_pl * logits
    # The output logits a loop keeps through backward sit beside every backward moment's tensors.
    kept = kept_logits_bytes_per_logit(inputs.logits_kept, c) * logits
    at_loss, in_block = at_loss + kept, in_block + kept

    host = 0.0
    if strategy == "ddp":
        # DDP's reducer keeps flat bucket buffers covering every gradient (DDP_BUCKET_CAP_MB sets
        # their count, not their total); with gradient_as_bucket_view=True the gradients *are*
        # views into those buckets, so the second copy disappears
        # (https://pytorch.org/docs/stable/generated/torch.nn.parallel.DistributedDataParallel.html).
        buckets = grads if inputs.gpu_count > 1 else 0.0
        # Autocast caches the 16-bit copy of each fp32 weight a matmul uses and the matmul saves it
        # for backward (https://pytorch.org/docs/stable/amp.html): block matmuls + the LM head.
        # With per-block checkpointing a block's saved casts are dropped with its other tensors and
        # re-made when it is recomputed: only the head's and one block's stay.
        cast_blocks = {"full": 1, "selective_op": 1}.get(policy, n_layers)
        if policy == "every_k":
            cast_blocks = n_layers - math.ceil(n_layers / max(1, inputs.checkpoint_every)) + 1
        cast = (cast_blocks * linear + model.vocab * model.hidden) * c if mode.autocast else 0.0
        cast += trainable * c if (prec.mixed and not full) else 0.0
        persist = dict(params=params, optimizer=0.0 if inputs.paged_optimizer else optimizer)
        host = paged_state_bytes(inputs, optimizer)
        # Gradient accumulation (no_sync): every gradient stays alive across the micro-batches.
        # With bucket view they live in the buckets (already counted).
        held = grads if accumulating and not (inputs.ddp_bucket_view and buckets) else 0.0
        step_buckets = 0.0 if inputs.ddp_bucket_view else buckets
        out = [
            Phase("loss_backward", grads=held, buffers=buckets + cast + dequant, **persist,
                  activations_per_sample=at_loss + loss_saved, buffers_per_sample=loss_temp),
            Phase("block_backward", grads=max(held, unit_trainable * prec.grad),
                  buffers=buckets + cast + dequant, **persist, activations_per_sample=in_block),
        ]
        if optimizer_step_phase(inputs):
            out.append(Phase("optimizer_step", grads=0.0 if (inputs.ddp_bucket_view and buckets) else grads,
                             buffers=(buckets if inputs.ddp_bucket_view else step_buckets) + step_temp,
                             **persist))
        return out, host

    if deepspeed_layout(inputs, strategy):
        # DeepSpeed ZeRO-2 with 16-bit training (ZeRO paper, Rajbhandari et al. 2020,
        # https://arxiv.org/abs/1910.02054 sec. 5.1, P_os+g: 2 bytes/param of 16-bit weights on
        # every rank, and 1/N of the 16-bit gradients and of the K = 12 bytes/param of fp32
        # master weights + Adam moments).
        shard = inputs.gpu_count
        weights = model.params * c
        master_and_states = trainable * (opt_per_param + 4) / shard
        grad_part = trainable * c / shard
        # The gradient bucket of reduce_bucket_size elements, allocated at the start of backward.
        bucket = min(DEEPSPEED_REDUCE_BUCKET, trainable) * c
        # The step flattens this rank's 16-bit gradient partition and converts the flat copy to
        # fp32 for the master weights, both alive at once (``self.flatten(averaged_gradients[i])
        # .to(fp32)`` in deepspeed/runtime/zero/stage_1_and_2.py ``step``, commit cde57d29).
        # LlamaFactory issue 1158's log shows it: 13.9B on 4 GPUs, "Tried to allocate 12.94 GiB"
        # (the fp32 copy, 4 B x 13.9e9 / 4) with "77.65 GiB already allocated" (2 B x 13.9e9 +
        # 16 B x 13.9e9 / 4, the flat 16-bit copy included): docs/calc.md "DeepSpeed ZeRO-2".
        step_copies = grad_part + deepspeed_fp32_grad_copy_bytes(inputs)
        held = grad_part if accumulating else 0.0
        persist = dict(params=weights, optimizer=master_and_states)
        out = [
            Phase("loss_backward", grads=held, buffers=bucket, **persist,
                  activations_per_sample=at_loss + loss_saved, buffers_per_sample=loss_temp),
            Phase("head_backward", grads=held, buffers=bucket, **persist,
                  activations_per_sample=at_loss, buffers_per_sample=logit_grad),
            # one block's 16-bit gradients, before they are copied into the bucket
            Phase("block_backward", grads=max(held, grad_part), buffers=bucket + unit_trainable * c, **persist,
                  activations_per_sample=in_block),
            Phase("optimizer_step", grads=grad_part, buffers=step_copies, **persist),
        ]
        return out, 0.0

    # FSDP family. HSDP shards inside a node (shard group = gpus_per_node) and replicates across
    # nodes; on one node it is full shard (https://pytorch.org/docs/stable/distributed.fsdp.fully_shard.html).
    if strategy in ("fsdp_full_shard", "fsdp_shard_grad_op", "fsdp_full_shard_offload"):
        shard = inputs.gpu_count
    elif strategy == "fsdp_hybrid_shard":
        shard = inputs.gpus_per_node
    else:
        raise ValueError(f"unknown strategy {strategy!r}")
    p, g, o = params / shard, grads / shard, optimizer / shard
    unit_grad_shard = unit_trainable * prec.grad / shard
    if strategy == "fsdp_full_shard_offload":
        # CPUOffloadPolicy keeps sharded params, grads and optimizer state in host RAM and steps
        # the optimizer there; the GPU holds only units in flight and activations.
        host = p + g + o
        p = g = o = unit_grad_shard = 0.0
    elif inputs.paged_optimizer:
        host, o = paged_state_bytes(inputs, o), 0.0
    # FSDP2 reduce-scatters every micro-batch by default and accumulates into the sharded
    # gradients, which stay alive through the following micro-batches.
    held = g if accumulating else 0.0
    if accumulating and inputs.grad_sync == "last_micro_step":
        # set_requires_gradient_sync(False): no reduce-scatter until the last micro-batch; each
        # parameter's unsharded gradient is kept, upcast to the reduce dtype, on every GPU
        # (torch/distributed/fsdp/_fully_shard/_fsdp_param.py to_accumulated_grad_if_needed:
        # unsharded_accumulated_grad = grad.to(reduce_dtype)), not sharded by the group.
        held = trainable * prec.reduce

    rak = inputs.reshard_after_forward
    if strategy == "fsdp_shard_grad_op" or rak is False:
        # reshard_after_forward=False: every unit stays gathered from its forward to its backward,
        # so the whole model is unsharded in compute dtype during backward (ZeRO-2-like).
        gathered = model.n_layers * unit_used + root_used
        root_loss = root_head = root_block = 0.0
        block_extra = unit_grad_buffers
    else:
        # reshard_after_forward=True on the blocks: during a block's backward that block is
        # gathered, the next one prefetched, and its gradient is in flight. An int k keeps each
        # block sharded over k ranks between its forward and its backward (FSDP2 docs,
        # https://pytorch.org/docs/stable/distributed.fsdp.fully_shard.html reshard_after_forward:
        # "the world size to reshard to after forward"): 1/k of every block stays on the GPU.
        group = reshard_group(rak)
        gathered = model.n_layers * unit_used / group if group else 0.0
        root_loss, root_head, root_block = fsdp_root_buffers(inputs, root_used)
        block_extra = root_block + 2 * unit_used + unit_grad_buffers
    persist = dict(params=p, optimizer=o)
    out = [
        Phase("loss_backward", grads=held, buffers=gathered + root_loss + dequant, **persist,
              activations_per_sample=at_loss + loss_saved, buffers_per_sample=loss_temp),
        Phase("head_backward", grads=held, buffers=gathered + root_head + dequant, **persist,
              activations_per_sample=at_loss, buffers_per_sample=logit_grad),
        Phase("block_backward", grads=max(held, unit_grad_shard), buffers=gathered + block_extra + dequant,
              **persist, activations_per_sample=in_block),
    ]
    if inputs.fsdp_root == "split" and strategy != "fsdp_shard_grad_op" and rak is not False:
        # The embedding unit is gathered for its own backward, last: all-gather buffer + unsharded
        # copy, and (full fine-tune) its unsharded gradient + the reduce-scatter copy; the blocks'
        # activations are gone by then.
        embed_used = model.vocab * model.hidden * (root_used / max(root, 1))
        embed_grads = model.vocab * model.hidden * (c + prec.reduce) if full else 0.0
        out.append(Phase("embedding_backward", grads=held, buffers=2 * embed_used + embed_grads, **persist))
    if strategy != "fsdp_full_shard_offload" and optimizer_step_phase(inputs):
        out.append(Phase("optimizer_step", grads=g, buffers=step_temp / shard, **persist))
    return out, host


def deepspeed_layout(inputs: MemoryInputs, strategy: str) -> bool:
    """Whether ``strategy``'s figures follow DeepSpeed ZeRO-2's layout rather than FSDP's: the
    engine is DeepSpeed, the strategy is SHARD_GRAD_OP (ZeRO-2's counterpart) on more than one
    GPU, and the run is what the layout covers: full fine-tuning, 16-bit mixed precision, AdamW or
    SGD stepping after backward, nothing paged. ZeRO-2 keeps every 16-bit weight on every GPU and
    copies the gradient partition at the step, which FSDP's SHARD_GRAD_OP does not (a published
    log matches it, docs/calc.md). ZeRO-3 keeps FSDP FULL_SHARD's figures: the two shard the same
    states, and the measurement at hand (LlamaFactory issue 6999: 32B on 7 x 80 GB ran out of
    memory) agrees with FSDP's figure and not with a ZeRO-3 step by sub-groups. DDP, HSDP and CPU
    offload keep PyTorch's layout whatever the engine."""
    return (inputs.engine == "deepspeed" and strategy == "fsdp_shard_grad_op"
            and inputs.gpu_count > 1 and inputs.finetune == "full" and PRECISIONS[inputs.precision].mixed
            and inputs.optimizer in ("adamw", "sgd") and not inputs.paged_optimizer
            and not inputs.optimizer_in_backward)


def deepspeed_fp32_grad_copy_bytes(inputs: MemoryInputs) -> float:
    """ZeRO-2's fp32 copy of one GPU's gradient partition, made at the optimizer step for the fp32
    master weights: 4 bytes x the trainable parameters / the GPUs (see ``phases``). It is the
    allocation an out-of-memory error at a ZeRO-2 step asks for."""
    trainable = inputs.model.params if inputs.finetune == "full" else 0
    return 4.0 * trainable / max(1, inputs.gpu_count)


def optimizer_step_phase(inputs: MemoryInputs) -> bool:
    """Whether a step moment with every gradient alive exists. With the optimizer in backward
    (torchtune's ``optimizer_in_bwd``; PyTorch's tutorial "How to save memory by fusing the
    optimizer step into the backward pass", ``Tensor.register_post_accumulate_grad_hook``,
    https://pytorch.org/tutorials/intermediate/optimizer_step_in_backward_tutorial.html) each
    parameter is stepped and its gradient freed as soon as the gradient is complete, so the
    gradients never coexist: the peak is a backward moment (one block's gradients), and the
    step's temporaries are one tensor's. It needs the whole gradient at once, so no gradient
    accumulation (``bot.core.setup.check_setup`` refuses the combination)."""
    return not inputs.optimizer_in_backward


def paged_state_bytes(inputs: MemoryInputs, optimizer_bytes: float) -> float:
    """Optimizer state a paged optimizer keeps outside PyTorch's allocator (bitsandbytes'
    ``Paged*`` optimizers: ``bitsandbytes.functional.get_paged`` allocates CUDA managed memory
    with ``cget_managed_ptr`` and wraps it with ``torch.frombuffer``; tensors over 1e5 elements).
    ``torch.cuda.max_memory_allocated/reserved`` never count it and the driver pages it to host
    RAM when the GPU is full, so it is left out of the GPU peak and reported as host RAM (its
    worst case: all of it paged out). The slow-down of paging is not modelled."""
    return optimizer_bytes if inputs.paged_optimizer else 0.0


def reshard_group(value: bool | int | None) -> int | None:
    """The group size of an int ``reshard_after_forward``; None for True/False/None (a bool is an
    int in Python, so it is ruled out first)."""
    if isinstance(value, bool) or value is None or value < 2:
        return None
    return value


def fsdp_root_buffers(inputs: MemoryInputs, root_used: float) -> tuple[float, float, float]:
    """Bytes of the root FSDP unit (embeddings, final norm, LM head) gathered at the loss's
    backward, the head's backward and a block's backward, by ``inputs.fsdp_root``:

    - "resharded": ``fully_shard(model, reshard_after_forward=True)`` in current PyTorch: the root
      is resharded after forward, all-gathered again for the head's backward (all-gather buffer +
      unsharded copy, 2x) and stays gathered until the root's post-backward at the very end
      (the layout ``bot/bench/simulate.py`` runs);
    - "kept": the root is never resharded after forward, so it stays gathered (1x) from forward
      to the end of backward and is not all-gathered again: ``reshard_after_forward=None`` in
      current PyTorch, and every root in the 2024 releases, whose ``FSDPState._lazy_init`` set the
      root's ``post_forward_mesh_info = None`` unconditionally ("do not reshard after forward
      since for training, the parameters would be freed and all-gathered immediately",
      torch/distributed/_composable/fsdp/_fsdp_state.py at pytorch commit 005da465);
    - "split": the embeddings and the LM head are FSDP units of their own (torchtune's
      ``custom_sharded_layers: ['tok_embeddings', 'output']``, recipes/configs/llama3_1/70B_full.yaml
      at torchtune commit 30b8519e): the root keeps only the final norm; the head is gathered for
      its backward (2x the head alone) and resharded after it, so no embedding or head weights
      are gathered during the blocks' backward (the embeddings' own moment is a separate phase).
    """
    model = inputs.model
    if inputs.fsdp_root == "kept":
        return root_used, root_used, root_used
    if inputs.fsdp_root == "split":
        head_share = 1.0 if model.tied_embeddings else model.vocab * model.hidden / max(root_params(model), 1)
        return 0.0, 2 * root_used * head_share, 0.0
    return 0.0, 2 * root_used, root_used


def reserved_phases(inputs: MemoryInputs, strategy: str) -> tuple[list[Phase], float]:
    """``phases`` with the allocator's reserved fraction of this run set on each."""
    candidates, host = phases(inputs, strategy)
    fraction = reserved_fraction(inputs)
    return [replace(ph, reserved_fraction=fraction) for ph in candidates], host


def memory_estimate(inputs: MemoryInputs, strategy: str) -> MemoryEstimate:
    """Peak per-GPU memory of ``strategy`` for ``inputs`` (see the module docstring): the parts
    of the allocated peak, the reserved peak, and whether the reserved peak fits the card."""
    candidates, host_per_gpu = reserved_phases(inputs, strategy)
    b = inputs.micro_batch
    peak = max(candidates, key=lambda ph: ph.total(b))
    reserved = max(ph.reserved(b) for ph in candidates)
    usable = usable_gib(inputs.gpu_memory_gb)
    usable_bytes = usable * GIB
    counts_host = strategy == "fsdp_full_shard_offload" or inputs.paged_optimizer
    host_gib = host_per_gpu * inputs.gpus_per_node / GIB if counts_host else 0.0
    host_ok = host_ram_fits(host_gib, inputs.cpu_ram_gb)
    total = peak.total(b)
    return MemoryEstimate(
        params_gib=peak.params / GIB, grads_gib=peak.grads / GIB, optimizer_gib=peak.optimizer / GIB,
        activations_gib=b * peak.activations_per_sample / GIB,
        buffers_gib=(peak.buffers + b * peak.buffers_per_sample) / GIB,
        total_gib=total / GIB, fits=host_ok and reserved <= usable_bytes,
        max_micro_batch=max_micro_batch(candidates, usable_bytes) if host_ok else 0,
        usable_gib=usable, host_ram_gib=host_gib, reserved_gib=reserved / GIB,
    )
