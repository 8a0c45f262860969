"""Per-GPU peak memory for every training strategy, derived tensor by tensor.

This module owns the memory formulas: bytes per parameter for each precision/optimizer/finetune
mode, the activations a decoder block saves for backward, the temporaries each strategy holds
(FSDP's all-gathered units and reduce-scatter buffers, DDP's gradient buckets and autocast's
weight cache, the optimizer step's temporaries), the headroom kept free, and the largest
micro-batch that fits (closed form: every term is linear in the micro-batch).

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
from dataclasses import dataclass

from bot.catalog import ModelSpec

GIB = 2**30

# Headroom kept free on each GPU, not visible to torch.cuda.max_memory_allocated:
# the CUDA context + cuBLAS workspaces (~0.5-0.9 GiB) and NCCL communicator buffers
# (~0.3-0.6 GiB), https://pytorch.org/docs/stable/notes/cuda.html#memory-management ,
# plus a fraction for the caching allocator's fragmentation (reserved > allocated).
HEADROOM_FIXED_GIB = 1.5
HEADROOM_FRACTION = 0.05
# Host RAM a node keeps for the OS, the data loader and staging buffers under CPU offload.
HOST_HEADROOM_FRACTION = 0.10

MAX_MICRO_BATCH = 65_536  # bot.setup.LIMITS["micro_batch"] upper bound

# 4-bit NormalFloat storage with double quantization: 4 bits + 8-bit absmax per 64 weights
# + fp32 second-level constants per 256 blocks = 4 + 8/64 + 32/(64*256) bits
# (QLoRA, Dettmers et al. 2023, https://arxiv.org/abs/2305.14314 sec. 3 "Double Quantization").
NF4_BYTES_PER_PARAM = (4 + 8 / 64 + 32 / (64 * 256)) / 8
# Default LoRA targets (PEFT's common choice for Llama): the four attention projections.
LORA_TARGETS = ("q", "k", "v", "o")

# Cross entropy on fp32-upcast logits (bot/bench/model.py loss_fn, as Hugging Face does):
# at its backward, log_softmax's saved fp32 output (4 B/logit) plus the fp32 gradients of the
# log-probs and of the logits (8 B/logit) are alive together; this is larger than the forward
# moment (16-bit logits + fp32 copy + fp32 log-probs = 10 B/logit).
LOSS_SAVED_BYTES_PER_LOGIT = 4
LOSS_TEMP_BYTES_PER_LOGIT = 8
# During a block's backward, the gradients of its activations and its partly freed saved
# tensors amount to about half a block's saved activations (fit to bot/bench/simulate.py:
# 0.27 of a block in fp32, 0.72 in bf16 for Llama-2-7B).
BLOCK_BACKWARD_TEMP_FRACTION = 0.5


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
    host_ram_gib: float  # CPU offload only: host RAM one node needs for its GPUs' shards; else 0


@dataclass(frozen=True)
class Precision:
    """Bytes per element for each role a tensor plays under one precision setting."""

    param: int  # stored (master) parameters
    grad: int  # stored gradients
    compute: int  # activations and the unsharded weights used by matmuls
    reduce: int  # gradient communication (FSDP reduce_dtype; DDP all-reduces the grads)
    mixed: bool  # autocast / MixedPrecisionPolicy casts fp32 params to ``compute``


PRECISIONS = {
    # PyTorch AMP keeps fp32 params and grads; matmuls run in 16 bit
    # (https://pytorch.org/docs/stable/amp.html). FSDP2 reduces in fp32 (reduce_dtype=float32).
    "bf16-mixed": Precision(param=4, grad=4, compute=2, reduce=4, mixed=True),
    "fp16-mixed": Precision(param=4, grad=4, compute=2, reduce=4, mixed=True),
    "bf16": Precision(param=2, grad=2, compute=2, reduce=2, mixed=False),
    "fp32": Precision(param=4, grad=4, compute=4, reduce=4, mixed=False),
}


def optimizer_bytes_per_param(optimizer: str, precision: Precision) -> float:
    """Optimizer state bytes per trainable parameter.

    AdamW keeps two moments (exp_avg, exp_avg_sq) in the parameter dtype, SGD with momentum one
    buffer (https://pytorch.org/docs/stable/generated/torch.optim.AdamW.html). 8-bit Adam keeps
    both moments as 1 byte each with blockwise constants (Dettmers et al. 2022,
    https://arxiv.org/abs/2110.02861 sec. 2: block size 2048, one fp32 absmax per block).
    With fp32 master weights this gives the ZeRO paper's 4+4+8 = 16 B/param for mixed-precision
    Adam (Rajbhandari et al. 2020, https://arxiv.org/abs/1910.02054 sec. 3.1).
    """
    if optimizer == "adamw":
        return 2 * precision.param
    if optimizer == "sgd":
        return precision.param
    if optimizer == "adam8bit":
        return 2 * (1 + 4 / 2048)
    raise ValueError(f"unknown optimizer {optimizer!r}")


def optimizer_step_temp_bytes_per_param(optimizer: str, precision: Precision) -> float:
    """Temporaries of one optimizer step. torch's foreach AdamW (the CUDA default) materialises a
    parameter-sized list for the denominator sqrt(v)+eps
    (https://github.com/pytorch/pytorch/blob/main/torch/optim/adamw.py, _multi_tensor_adamw);
    foreach SGD updates in place; bitsandbytes' 8-bit Adam is one fused kernel."""
    return precision.param if optimizer == "adamw" else 0.0


# ---------------------------------------------------------------------------------------------
# Model shape helpers
# ---------------------------------------------------------------------------------------------


def linear_params_per_layer(model: ModelSpec) -> int:
    """Weights of the matmuls in one block (what QLoRA quantizes; norms and biases stay 16 bit)."""
    h, i, kv = model.hidden, model.intermediate, model.kv_dim
    if model.arch == "llama":
        return 2 * h * h + 2 * h * kv + 3 * h * i  # q,o: h x h; k,v: h x kv; SwiGLU gate/up/down
    return 4 * h * h + 2 * h * i  # GPT-2/OPT: q,k,v,o h x h; fc1/fc2 h x i


def lora_params(model: ModelSpec, rank: int) -> int:
    """Trainable LoRA parameters: A (r x in) + B (out x r) on q,k,v,o of every block
    (Hu et al. 2021, https://arxiv.org/abs/2106.09685 sec. 4)."""
    h, kv = model.hidden, model.kv_dim
    out_dims = {"q": h, "k": kv, "v": kv, "o": h}
    return model.n_layers * sum(rank * (h + out_dims[t]) for t in LORA_TARGETS)


def root_params(model: ModelSpec) -> int:
    """Parameters outside the blocks (embeddings, final norm, LM head): FSDP's root unit."""
    return model.embedding_params()


def model_states_bytes(model: ModelSpec, precision: str, optimizer: str) -> float:
    """Full fine-tune params + grads + optimizer state of the whole model (ZeRO's "model states";
    16 B/param for mixed-precision AdamW)."""
    prec = PRECISIONS[precision]
    return model.params * (prec.param + prec.grad + optimizer_bytes_per_param(optimizer, prec))


# ---------------------------------------------------------------------------------------------
# Activations
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ActivationMode:
    """How a block's tensors are typed. ``compute``: bytes of matmul inputs/outputs.
    ``autocast``: DDP + torch.autocast with fp32 weights, where the residual stream and norms stay
    fp32 and each matmul saves its own 16-bit cast of its input. ``frozen``: LoRA/QLoRA, where
    frozen matmuls and norms save nothing for weight gradients."""

    compute: int
    autocast: bool
    frozen: bool
    lora_rank: int = 0


def block_activation_bytes_per_token(model: ModelSpec, mode: ActivationMode) -> float:
    """Bytes one block saves for backward, per token, counted tensor by tensor as
    ``bot/bench/model.py`` builds the block (checked with saved-tensor hooks; docs/calc.md).

    Korthikanti et al. 2022 (https://arxiv.org/abs/2205.05198 sec. 4.1, eq. 2) count
    sbh(34 + 5as/h) per layer for GPT with stored attention scores and dropout; we adapt it to
    SDPA/flash attention (no s x s scores: only q, k, v, the output and a fp32 logsumexp per head),
    no dropout, SwiGLU, GQA (k, v expanded to all heads before SDPA), RMSNorm's fp32 internals.
    h hidden, i intermediate, c compute bytes, n_h heads, d head dim:

    llama, pure dtype: 2 norms x (fp32 input + fp32 normalised = 8h, rstd 4 B) + norm outputs 2ch
      + RoPE cos/sin 2dc + q, k, v, SDPA output 4ch + logsumexp 4 n_h + o's input copy ch
      + SwiGLU gate out, silu out, up out, product 4ic          = 16h + 7ch + 8 + 2dc + 4n_h + 4ic
    llama, autocast: norm outputs stay fp32 and q,k,v,gate,up each save a bf16 cast (5 x 2h)
                                                                = 36h + 8 + 4d + 4n_h + 8i
    gpt2/opt, pure: 2 LayerNorms x (input ch + mean/rstd 2c + output ch) + q,k,v,out 4ch
      + logsumexp 4 n_h + MLP (GELU: input and output 2ic; ReLU saves only its output: ic)
    gpt2/opt, autocast: LayerNorm inputs fp32 4h + 8 B each, casts 4 x 2h, q,k,v,out 8h
    frozen (LoRA): norms save fp32 input + rstd, norm output saved once for the q/k/v adapters,
      frozen MLP matmuls save no inputs, each adapter saves its r-wide intermediate.
    """
    h, i, c = model.hidden, model.intermediate, mode.compute
    d, heads = model.head_dim, model.n_heads
    lse = 4 * heads
    if model.arch == "llama":
        rope = 2 * d * c
        if mode.frozen:
            adapters = len(LORA_TARGETS) * mode.lora_rank * c
            return 2 * (4 * h + 4) + c * h + rope + 4 * c * h + lse + c * h + 3 * i * c + adapters
        if mode.autocast:
            return 36 * h + 8 + 4 * d + lse + 8 * i
        return 16 * h + 7 * c * h + 8 + rope + lse + 4 * i * c
    mlp_saved = 2 if model.arch == "gpt2" else 1  # GELU saves input and output, ReLU its output
    if mode.frozen:
        adapters = len(LORA_TARGETS) * mode.lora_rank * c
        return 7 * c * h + 4 * c + lse + i * c + adapters
    if mode.autocast:
        return 24 * h + 16 + lse + 2 * mlp_saved * i
    return 8 * c * h + 4 * c + lse + mlp_saved * i * c


def final_norm_bytes_per_token(model: ModelSpec, mode: ActivationMode) -> float:
    """The final norm before the LM head (same accounting as the block's norms)."""
    h, c = model.hidden, mode.compute
    if model.arch == "llama":
        return (8 * h + 4 + (2 * h if mode.autocast else c * h)) if not mode.frozen else 4 * h + 4 + c * h
    return (4 * h + 8 + 2 * h) if mode.autocast else 2 * c * h + 2 * c


def block_input_bytes_per_token(model: ModelSpec, mode: ActivationMode) -> int:
    """What per-block checkpointing keeps: the block input (fp32 residual under autocast)."""
    return model.hidden * (4 if mode.autocast else mode.compute)


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

    def total(self, micro_batch: int) -> float:
        return self.fixed + micro_batch * self.per_sample

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


def phases(inputs: MemoryInputs, strategy: str) -> tuple[list[Phase], float]:
    """The candidate peak moments of ``strategy`` and the host bytes one GPU's offload needs."""
    prec = PRECISIONS[inputs.precision]
    model, c, s = inputs.model, PRECISIONS[inputs.precision].compute, inputs.seq_len
    full = inputs.finetune == "full"
    layer, root, linear = model.layer_params(), root_params(model), linear_params_per_layer(model)

    # --- model states, whole model -------------------------------------------------------
    opt_per_param = optimizer_bytes_per_param(inputs.optimizer, prec)
    if full:
        trainable = model.params
        params = model.params * prec.param
        # Weights as matmuls use them (gathered by FSDP, cast by autocast): compute dtype.
        unit_used, root_used = layer * c, root * c
    else:
        # LoRA/QLoRA: base frozen in compute dtype; QLoRA stores block matmuls in NF4
        # (embeddings, norms and the LM head stay 16 bit:
        # https://huggingface.co/docs/peft/main/en/developer_guides/quantization). Adapters train
        # in the param dtype.
        trainable = lora_params(model, inputs.lora_rank)
        per_linear = NF4_BYTES_PER_PARAM if inputs.finetune == "qlora" else c
        unit_used = linear * per_linear + (layer - linear) * c + trainable / model.n_layers * c
        root_used = root * c
        params = model.n_layers * unit_used + root_used - trainable * c + trainable * prec.param
    grads = trainable * prec.grad
    optimizer = trainable * opt_per_param
    step_temp = trainable * optimizer_step_temp_bytes_per_param(inputs.optimizer, prec)
    unit_trainable = trainable / model.n_layers if not full else layer
    # FSDP2 produces a unit's unsharded gradient in param_dtype, then copies it to reduce_dtype
    # for the reduce-scatter (https://pytorch.org/docs/stable/distributed.fsdp.fully_shard.html).
    unit_grad_buffers = unit_trainable * (c + prec.reduce)
    # QLoRA dequantizes one weight matrix at a time to 16 bit for its matmul.
    dequant = c * model.hidden * max(model.intermediate, model.hidden) if inputs.finetune == "qlora" else 0.0

    # --- activations per sample ---------------------------------------------------------------
    mode = ActivationMode(compute=c, autocast=(strategy == "ddp" and prec.mixed and full),
                          frozen=not full, lora_rank=inputs.lora_rank)
    per_block = block_activation_bytes_per_token(model, mode) * s
    fn = final_norm_bytes_per_token(model, mode) * s
    if inputs.activation_checkpointing:
        # Per-block checkpointing keeps each block's input; a block's tensors are recomputed just
        # before its backward (Chen et al. 2016, https://arxiv.org/abs/1604.06174).
        kept = model.n_layers * block_input_bytes_per_token(model, mode) * s
        at_loss = kept + fn
        in_block = kept + fn + per_block * (1 + BLOCK_BACKWARD_TEMP_FRACTION)
    else:
        at_loss = model.n_layers * per_block + fn
        in_block = (model.n_layers - 1 + BLOCK_BACKWARD_TEMP_FRACTION) * per_block + fn
    logits = model.vocab * s
    loss_saved, loss_temp = LOSS_SAVED_BYTES_PER_LOGIT * logits, LOSS_TEMP_BYTES_PER_LOGIT * logits
    logit_grad = c * logits  # the LM head's input gradient comes back in compute dtype

    host = 0.0
    if strategy == "ddp":
        # DDP's reducer keeps flat bucket buffers covering every gradient (bucket_cap_mb=25 sets
        # their count, not their total) unless gradient_as_bucket_view=True
        # (https://pytorch.org/docs/stable/generated/torch.nn.parallel.DistributedDataParallel.html).
        buckets = grads if inputs.gpu_count > 1 else 0.0
        # Autocast caches the 16-bit copy of each fp32 weight a matmul uses and the matmul saves it
        # for backward (https://pytorch.org/docs/stable/amp.html): block matmuls + the LM head.
        # With per-block checkpointing a block's saved casts are dropped with its other tensors and
        # re-made when it is recomputed: only the head's and one block's stay.
        cast_blocks = 1 if inputs.activation_checkpointing else model.n_layers
        cast = (cast_blocks * linear + model.vocab * model.hidden) * c if mode.autocast else 0.0
        cast += trainable * c if (prec.mixed and not full) else 0.0
        persist = dict(params=params, optimizer=optimizer)
        return [
            Phase("loss_backward", grads=0.0, buffers=buckets + cast + dequant, **persist,
                  activations_per_sample=at_loss + loss_saved, buffers_per_sample=loss_temp),
            Phase("block_backward", grads=unit_trainable * prec.grad, buffers=buckets + cast + dequant,
                  **persist, activations_per_sample=in_block),
            Phase("optimizer_step", grads=grads, buffers=buckets + step_temp, **persist),
        ], host

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

    if strategy == "fsdp_shard_grad_op":
        # reshard_after_forward=False: every unit stays gathered from its forward to its backward,
        # so the whole model is unsharded in compute dtype during backward (ZeRO-2-like).
        gathered = model.n_layers * unit_used + root_used
        head_extra = 0.0
        block_extra = unit_grad_buffers
    else:
        # reshard_after_forward=True on the blocks and the root: the root (embeddings + head) is
        # all-gathered again for the head's backward (all-gather buffer + unsharded copy) and stays
        # gathered until the end of backward; during a block's backward that block is gathered, the
        # next one prefetched, and its gradient is in flight.
        gathered = 0.0
        head_extra = 2 * root_used
        block_extra = root_used + 2 * unit_used + unit_grad_buffers
    persist = dict(params=p, optimizer=o)
    out = [
        Phase("loss_backward", grads=0.0, buffers=gathered + dequant, **persist,
              activations_per_sample=at_loss + loss_saved, buffers_per_sample=loss_temp),
        Phase("head_backward", grads=0.0, buffers=gathered + head_extra + dequant, **persist,
              activations_per_sample=at_loss, buffers_per_sample=logit_grad),
        Phase("block_backward", grads=unit_grad_shard, buffers=gathered + block_extra + dequant, **persist,
              activations_per_sample=in_block),
    ]
    if strategy != "fsdp_full_shard_offload":
        out.append(Phase("optimizer_step", grads=g, buffers=step_temp / shard, **persist))
    return out, host


def usable_gib(gpu_memory_gb: float) -> float:
    """GPU memory a training process can allocate: capacity minus context and fragmentation."""
    return max(0.0, gpu_memory_gb * (1 - HEADROOM_FRACTION) - HEADROOM_FIXED_GIB)


def max_micro_batch(candidates: list[Phase], usable_bytes: float) -> int:
    """Largest b with every phase's fixed + b * per_sample <= usable (closed form per phase)."""
    best = MAX_MICRO_BATCH
    for phase in candidates:
        room = usable_bytes - phase.fixed
        if phase.per_sample <= 0:
            if room < 0:
                return 0
            continue
        best = min(best, math.floor(room / phase.per_sample))
        if best < 1:
            return 0
    while best > 1 and any(ph.total(best) > usable_bytes for ph in candidates):  # float rounding
        best -= 1
    return best


def memory_estimate(inputs: MemoryInputs, strategy: str) -> MemoryEstimate:
    """Peak per-GPU memory of ``strategy`` for ``inputs`` (see the module docstring)."""
    candidates, host_per_gpu = phases(inputs, strategy)
    b = inputs.micro_batch
    peak = max(candidates, key=lambda ph: ph.total(b))
    usable = usable_gib(inputs.gpu_memory_gb)
    usable_bytes = usable * GIB
    host_gib = host_per_gpu * inputs.gpus_per_node / GIB if strategy == "fsdp_full_shard_offload" else 0.0
    host_ok = inputs.cpu_ram_gb is None or host_gib <= inputs.cpu_ram_gb * (1 - HOST_HEADROOM_FRACTION)
    total = peak.total(b)
    return MemoryEstimate(
        params_gib=peak.params / GIB, grads_gib=peak.grads / GIB, optimizer_gib=peak.optimizer / GIB,
        activations_gib=b * peak.activations_per_sample / GIB,
        buffers_gib=(peak.buffers + b * peak.buffers_per_sample) / GIB,
        total_gib=total / GIB, fits=host_ok and total <= usable_bytes,
        max_micro_batch=max_micro_batch(candidates, usable_bytes) if host_ok else 0,
        usable_gib=usable, host_ram_gib=host_gib,
    )
