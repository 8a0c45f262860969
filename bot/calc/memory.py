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
from dataclasses import dataclass, replace

from bot.calc.attention import attn_implementation, scores_bytes_per_s2_per_head, softcap_bytes_per_logit
from bot.catalog import ModelSpec

GIB = 2**30

# Headroom kept free on each GPU, outside what PyTorch's caching allocator reserves: the CUDA
# context + cuBLAS workspaces (~0.5-0.9 GiB) and NCCL communicator buffers (~0.3-0.6 GiB),
# https://pytorch.org/docs/stable/notes/cuda.html#memory-management , plus a small safety margin
# of the card. "fits" compares the allocator's *reserved* peak (below) with what is left.
HEADROOM_FIXED_GIB = 1.0
HEADROOM_FRACTION = 0.0
# Reserved vs allocated. The caching allocator keeps freed blocks cached (reserved) and can only
# reuse a block for a request of at most its size; blocks over 1 MiB come from 2 MiB-rounded
# segments and large requests get their own segments, so tensors of changing sizes that come and
# go every step (activations, gathered weights, loss temporaries) leave cached gaps: reserved >
# allocated (https://pytorch.org/docs/stable/notes/cuda.html#memory-management; with
# PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True segments grow in place and the gap shrinks,
# https://pytorch.org/docs/stable/notes/cuda.html#optimizing-memory-usage-with-pytorch-cuda-alloc-conf).
# Model: reserved = allocated peak + RESERVED_TRANSIENT_FRACTION x the transient part of the
# peak (activations + buffers); the persistent states are allocated once and pack tightly.
# Two fractions, by allocator mode (issue 26 re-examined the single 0.17 on the fit rows,
# ``python -m evals.bench_published --refit``):
# - with PYTORCH_CUDA_ALLOC_CONF="expandable_segments:True", which torchtitan's launcher sets
#   (run_llama_train.sh), the rows the 0.17 came from: torchtitan's three 8 x H100 fit rows imply
#   0.11, 0.11, 0.20 (median 0.11), and its A100 Llama 2 13B no-checkpointing run, which worked,
#   allows at most 0.173: 0.11;
# - with PyTorch's default allocator no fit row has a reserved measurement; the working fit rows
#   (fms-fsdp's and the PyTorch blog's Llama 2 7B) bound it at 0.268, so the previous 0.17 stays.
#   Default-allocator test rows imply 0.14 (llm-foundry MPT-3B, a bound) to 0.91 (Answer.AI's
#   FSDP+QLoRA runs); this project's one-rank H200 runs (docs/calc.md) 0.09-0.91.
RESERVED_TRANSIENT_FRACTION = 0.11
RESERVED_TRANSIENT_FRACTION_DEFAULT_ALLOCATOR = 0.17
# Host RAM a node keeps for the OS, the data loader and pinned staging buffers under CPU offload.
HOST_HEADROOM_FRACTION = 0.10

MAX_MICRO_BATCH = 65_536  # bot.core.setup.LIMITS["micro_batch"] upper bound

# DeepSpeed's default reduce_bucket_size, 5e8 elements (https://www.deepspeed.ai/docs/config-json/,
# "ZeRO optimizations"): the gradient bucket ``backward()`` allocates when contiguous_gradients is
# on, the default (deepspeed/runtime/zero/stage_1_and_2.py at commit cde57d29,
# ``DeepSpeedZeroOptimizer.backward``).
DEEPSPEED_REDUCE_BUCKET = 5e8

# 4-bit NormalFloat storage with double quantization: 4 bits + 8-bit absmax per 64 weights
# + fp32 second-level constants per 256 blocks = 4 + 8/64 + 32/(64*256) bits
# (QLoRA, Dettmers et al. 2023, https://arxiv.org/abs/2305.14314 sec. 3 "Double Quantization").
NF4_BYTES_PER_PARAM = (4 + 8 / 64 + 32 / (64 * 256)) / 8
# Default LoRA targets (PEFT's common choice for Llama): the four attention projections;
# "all_linear" adds the MLP's matmuls (PEFT target_modules="all-linear", QLoRA's choice).
LORA_TARGETS = ("q", "k", "v", "o")
LORA_TARGET_SETS = {"attention": LORA_TARGETS, "all_linear": ("q", "k", "v", "o", "gate", "up", "down")}
BASE_DTYPE_BYTES = {"fp32": 4.0, "bf16": 2.0, "nf4": NF4_BYTES_PER_PARAM}
# DistributedDataParallel(bucket_cap_mb=25), PyTorch's default: it sets how many gradient buckets
# there are, not their total size (the memory model counts one bucket copy of every gradient).
DDP_BUCKET_CAP_MB = 25

# Cross entropy on fp32-upcast logits (bot/bench/model.py loss_fn, as Hugging Face does):
# at its backward, log_softmax's saved fp32 output (4 B/logit) plus the fp32 gradients of the
# log-probs and of the logits (8 B/logit) are alive together; this is larger than the forward
# moment (16-bit logits + fp32 copy + fp32 log-probs = 10 B/logit).
LOSS_SAVED_BYTES_PER_LOGIT = 4
LOSS_TEMP_BYTES_PER_LOGIT = 8
# Chunked cross-entropy (torchtune's CEWithChunkedOutputLoss: 8 chunks) upcasts one chunk at a
# time, but autograd still keeps every chunk's fp32 log-probs: only the temporaries shrink.
LOSS_CHUNKS = 8
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
    # CPU offload: host RAM one node needs for its GPUs' shards; a paged optimizer: its state, which
    # the driver may page out to host RAM (``paged_state_bytes``); else 0
    host_ram_gib: float
    # What the caching allocator reserves at the peak (>= total_gib, the allocated peak; the
    # module's RESERVED_TRANSIENT_FRACTION); "fits" compares this with usable_gib.
    reserved_gib: float = 0.0


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


def optimizer_step_temp_bytes_per_param(optimizer: str, precision: Precision, impl: str = "foreach") -> float:
    """Temporaries of one optimizer step, per trainable parameter, for the whole-list
    implementations. torch's foreach AdamW (the CUDA default) materialises a parameter-sized list
    for the denominator sqrt(v)+eps (torch/optim/adamw.py ``_multi_tensor_adamw``); the fused
    AdamW kernel (``fused=True``) updates each element in registers, no temporaries
    (``_fused_adamw``); the for-loop implementation makes one parameter's temporary at a time
    (see ``optimizer_step_temp_bytes``). Foreach SGD updates in place; bitsandbytes' 8-bit Adam
    is one fused kernel. https://pytorch.org/docs/stable/optim.html#algorithms"""
    if optimizer != "adamw" or impl in ("fused", "forloop"):
        return 0.0
    return precision.param


def optimizer_step_temp_bytes(optimizer: str, precision: Precision, impl: str, trainable: float,
                              largest_tensor: float) -> float:
    """Bytes of the optimizer step's temporaries on one unsharded replica: a full parameter-sized
    list for foreach AdamW, one tensor's worth (the largest) for the for-loop AdamW, none when fused."""
    if optimizer == "adamw" and impl == "forloop":
        return largest_tensor * precision.param
    return trainable * optimizer_step_temp_bytes_per_param(optimizer, precision, impl)


# ---------------------------------------------------------------------------------------------
# Model shape helpers
# ---------------------------------------------------------------------------------------------


def active_intermediate(model: ModelSpec) -> int:
    """MLP width one token passes through: the catalog's ``active_intermediate`` for MoE models
    (routed + shared experts), ``intermediate`` for dense ones (getattr: older specs lack it)."""
    return int(getattr(model, "active_intermediate", None) or model.intermediate)


def linear_params_per_layer(model: ModelSpec) -> int:
    """Weights of the matmuls in one block (what QLoRA quantizes; norms and biases stay 16 bit)."""
    h, i, kv, q = model.hidden, model.intermediate, model.kv_dim, model.q_dim
    if model.arch == "llama":
        # q, o: h x q_dim (n_heads x head_dim); k, v: h x kv; SwiGLU gate/up/down. MoE: every
        # expert's three matrices, the shared experts' and the router's (h x E).
        attn = 2 * h * q + 2 * h * kv
        if model.is_moe:
            widths = model.n_experts * model.moe_intermediate + model.n_shared_experts * model.moe_intermediate
            return attn + 3 * h * (widths + model.shared_expert_intermediate) + h * model.n_experts
        return attn + 3 * h * i
    return 2 * h * h + 2 * h * q + 2 * h * i  # GPT-2/OPT: q,o h x q_dim, k,v h x h; fc1/fc2 h x i


def lora_shapes(model: ModelSpec) -> dict[str, tuple[int, int]]:
    """(in, out) of each matmul LoRA can target in one block; q and o are n_heads x head_dim wide
    (q_dim: 2 x hidden for Qwen3-30B-A3B, less than hidden for Gemma 2), as the checkpoints' q_proj
    and o_proj are (transformers' Qwen3Attention, GemmaAttention)."""
    h, kv, i, q = model.hidden, model.kv_dim, model.intermediate, model.q_dim
    shapes = {"q": (h, q), "k": (h, kv), "v": (h, kv), "o": (q, h)}
    if model.arch == "llama":
        shapes.update(gate=(h, i), up=(h, i), down=(i, h))
    else:  # GPT-2/OPT: fc1 (h -> i) and fc2 (i -> h); "gate" has no counterpart
        shapes.update(up=(h, i), down=(i, h))
    return shapes


def lora_params(model: ModelSpec, rank: int, targets: str = "attention") -> int:
    """Trainable LoRA parameters: A (r x in) + B (out x r) on each targeted matmul of every block
    (Hu et al. 2021, https://arxiv.org/abs/2106.09685 sec. 4); ``targets`` "attention" (q,k,v,o)
    or "all_linear" (plus the MLP's matmuls)."""
    shapes = lora_shapes(model)
    names = [t for t in LORA_TARGET_SETS[targets] if t in shapes]
    if model.is_moe:
        # MoE: "all-linear" reaches every expert's gate/up/down, each h x moe_intermediate, and
        # the shared experts and the router (h x E), since transformers 4.x builds each of them as
        # an nn.Linear and PEFT's "all-linear" excludes only the output layer
        # (https://huggingface.co/docs/peft/developer_guides/lora "all-linear").
        attn = sum(rank * (shapes[t][0] + shapes[t][1]) for t in names if t in ("q", "k", "v", "o"))
        mlp_names = [t for t in names if t in ("gate", "up", "down")]
        widths = [model.moe_intermediate] * model.n_experts
        widths += [model.moe_intermediate] * model.n_shared_experts
        widths += [model.shared_expert_intermediate] if model.shared_expert_intermediate else []
        mlp = sum(len(mlp_names) * rank * (model.hidden + w) for w in widths)
        router = rank * (model.hidden + model.n_experts) if mlp_names else 0
        return model.n_layers * (attn + mlp + router)
    return model.n_layers * sum(rank * (shapes[t][0] + shapes[t][1]) for t in names)


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
    compiled: bool = False  # torch.compile: Inductor fuses pointwise chains (see below)
    lora_targets: str = "attention"
    fused_norm: bool = False  # a fused norm kernel saves its input and rstd, no fp32 internals
    # whose model code runs the block: "pytorch" (bot/bench/model.py: F.rms_norm, rotary per block,
    # the SDPA output copied for o_proj) or "transformers" (Hugging Face's LlamaDecoderLayer)
    model_code: str = "pytorch"


def block_activation_bytes_per_token(model: ModelSpec, mode: ActivationMode) -> float:
    """Bytes one block saves for backward, per token, counted tensor by tensor as
    ``bot/bench/model.py`` builds the block (checked with saved-tensor hooks; docs/calc.md).

    Korthikanti et al. 2022 (https://arxiv.org/abs/2205.05198 sec. 4.1, eq. 2) count
    sbh(34 + 5as/h) per layer for GPT with stored attention scores and dropout; we adapt it to
    SDPA/flash attention (no s x s scores: only q, k, v, the output and a fp32 logsumexp per head),
    no dropout, SwiGLU, GQA (k, v expanded to all heads before SDPA), RMSNorm's fp32 internals.
    h hidden, q = n_h x d the attention width (q_dim: 2h for Qwen3-30B-A3B, < h for Gemma 2),
    i intermediate, c compute bytes, n_h heads, d head dim:

    llama, pure dtype: 2 norms x (fp32 input + fp32 normalised = 8h, rstd 4 B) + norm outputs 2ch
      + RoPE cos/sin 2dc + q, k, v (expanded to n_h heads), SDPA output 4cq + logsumexp 4 n_h
      + o's input copy cq + SwiGLU gate out, silu out, up out, product 4ic
                                                          = 16h + 2ch + 5cq + 8 + 2dc + 4n_h + 4ic
    llama, autocast: norm outputs stay fp32 and q,k,v,gate,up each save a bf16 cast (5 x 2h)
                                                                = 26h + 10q + 8 + 4d + 4n_h + 8i
    gpt2/opt, pure: 2 LayerNorms x (input ch + mean/rstd 2c + output ch) + q,k,v,out 4cq
      + logsumexp 4 n_h + MLP (GELU: input and output 2ic; ReLU saves only its output: ic)
    gpt2/opt, autocast: LayerNorm inputs fp32 4h + 8 B each, casts 4 x 2h, q,k,v,out 8q
    frozen (LoRA): norms save fp32 input + rstd, norm output saved once for the q/k/v adapters,
      frozen MLP matmuls save no inputs, each adapter saves its r-wide intermediate.
    Plus the per-architecture parts (``extra_block_bytes_per_token``): q/k norms (Qwen3,
    Gemma 3), the sandwich norms (Gemma 2/3) and the routed-expert path of an MoE block.
    """
    # MoE: a token's activations go through the experts it is routed to (active_intermediate)
    h, i, c = model.hidden, active_intermediate(model), mode.compute
    d, heads, q = model.head_dim, model.n_heads, model.q_dim
    lse = 4 * heads
    targets = LORA_TARGET_SETS[mode.lora_targets]
    adapters = len(targets) * mode.lora_rank * c
    # LoRA on the MLP: the adapters on gate/up reuse the saved norm output; down's adapter needs
    # its own input (the i-wide SwiGLU/GELU product), which a frozen down matmul would not save.
    mlp_adapter_input = i * c if "down" in targets else 0
    if mode.compiled and not mode.autocast and not mode.frozen:
        return compiled_block_bytes_per_token(model, c)
    extra = extra_block_bytes_per_token(model, mode)
    if model.arch == "llama":
        rope = 2 * d * c
        # Each RMSNorm: eager PyTorch saves the fp32 copy of its input and the fp32 normalised
        # tensor (8h) + rstd; a fused kernel saves its (compute-dtype) input + rstd.
        norm_internal = (c * h + 4) if mode.fused_norm else (8 * h + 4)
        if mode.frozen:
            frozen_norm = (c * h + 4) if mode.fused_norm else (4 * h + 4)
            return (2 * frozen_norm + c * h + rope + 4 * c * q + lse + c * q + 3 * i * c + adapters
                    + mlp_adapter_input + extra)
        if mode.autocast:
            return 26 * h + 10 * q + 8 + 4 * d + lse + 8 * i + extra
        if mode.model_code == "transformers" and not mode.fused_norm:
            # transformers' LlamaRMSNorm keeps the fp32 input (4h) and rstd, then casts the normalised
            # tensor to the compute dtype before the weight multiply, which saves it (ch); cos/sin are
            # computed once per forward (shared by the blocks); o_proj reads the SDPA output in place.
            # Measured: tests/unit/test_calc_model_code.py (saved-tensor hooks on LlamaDecoderLayer).
            hf_norm = 4 * h + 4 + c * h
            return 2 * hf_norm + 2 * c * h + 2 * c * q + 2 * c * model.kv_dim + lse + 4 * i * c + extra
        return 2 * norm_internal + 2 * c * h + 5 * c * q + rope + lse + 4 * i * c + extra
    mlp_saved = 2 if model.arch == "gpt2" else 1  # GELU saves input and output, ReLU its output
    if mode.frozen:
        return 3 * c * h + 4 * c * q + 4 * c + lse + i * c + adapters + mlp_adapter_input + extra
    if mode.autocast:
        return 16 * h + 8 * q + 16 + lse + 2 * mlp_saved * i + extra
    return 4 * c * h + 4 * c * q + 4 * c + lse + mlp_saved * i * c + extra


def extra_block_bytes_per_token(model: ModelSpec, mode: ActivationMode) -> float:
    """Per-token saved bytes of the block parts only some architectures have, counted on
    ``bot/bench/model.py``'s block with saved-tensor hooks (every term below matched the hooks'
    count exactly for Qwen3-0.6B, Qwen3-30B-A3B, Gemma-2-2B, Gemma-3-1B, Mixtral-8x7B and
    Qwen1.5-MoE-A2.7B in bf16, fp32 and autocast; docs/calc.md "MoE and attention width").

    q/k norms (Qwen3, Gemma 3: RMSNorm over each head's q and k, https://huggingface.co/Qwen/Qwen3-8B
    config ``head_dim``; transformers' Qwen3Attention): an eager RMSNorm saves the fp32 copy of its
    input and the fp32 normalised tensor plus a fp32 rstd per row (one row per head): 8q + 4 n_h
    for q and 8 kv + 4 n_kv for k; a fused kernel saves its input (c per value) + rstd; frozen (no
    weight gradient) the fp32 input + rstd.

    Sandwich norms (Gemma 2/3, ``norms_per_layer`` 4): each extra RMSNorm on a branch output
    saves what a block norm saves (8h + 4 eager; ch + 4 fused; 4h + 4 frozen).

    Routed experts (``bot/bench/model.py`` ``MoE``: top-k routing with the token copies laid out
    for one grouped matmul, as torchtitan's and megablocks' grouped GEMMs do,
    https://arxiv.org/abs/2211.15841 sec. 5; Mixtral's routing, https://arxiv.org/abs/2401.04088
    sec. 2.1), beyond the dense MLP of width k x moe_intermediate the calculator already counts:
      - each token's k dispatched copies, saved as the grouped matmul's input: k h c;
      - the k expert outputs, saved by the routing-weight multiply for the weights' gradient: k h c;
      - the router's fp32 softmax output 4E, top-k indices 8k (int64), the renormalisation's
        saved fp32 top-k values and their sum 4k + 4, and the cast routing weights k c.
      Under autocast (fp32 residual) the copies are fp32 and each of the two grouped matmuls saves
      its own bf16 cast (2 x 2kh), the router saves a cast of its input (2h) instead of the dense
      gate/up's two (4h), and the routing weights stay fp32 (4k). Frozen (LoRA): the expert matmuls
      save no inputs, the routing-weight multiply still saves the expert outputs.
      Qwen-MoE's gated shared expert: the sigmoid gate's output and the shared expert's output
      saved by their product (ch + c; autocast: a cast of the input 2h + 2h + 2).
    The simulator lays the copies out as E equal groups of ceil(Tk/E) rows; the padding (< E rows
    a micro-batch) is left out. Leading dense layers (DeepSeek's first_k_dense) are counted as MoE.
    """
    h, c, q, kv = model.hidden, mode.compute, model.q_dim, model.kv_dim
    total = 0.0
    if model.qk_norm:
        rows = model.n_heads + model.n_kv_heads
        if mode.fused_norm:
            total += c * (q + kv) + 4 * rows
        elif mode.frozen:
            total += 4 * (q + kv) + 4 * rows
        else:
            total += 8 * (q + kv) + 4 * rows
    extra_norms = max(0, model.norms_per_layer - 2)
    if extra_norms:
        per_norm = (c * h + 4) if mode.fused_norm else (4 * h + 4) if mode.frozen else (8 * h + 4)
        total += extra_norms * per_norm
    if model.is_moe:
        k, e = model.experts_per_token, model.n_experts
        router = 4 * e + 8 * k + 4 * k + 4  # softmax out, top-k indices, top-k values + their sum
        gated_shared = bool(model.shared_expert_intermediate)
        if mode.autocast:
            dense_casts = 0 if (gated_shared or model.n_shared_experts) else 4 * h
            total += 2 * h - dense_casts + 4 * k * h + 2 * k * h + router + 4 * k
            if gated_shared:
                total += 4 * h + 2
        elif mode.frozen:
            total += k * h * c + router + k * c + (c * h + c if gated_shared else 0)
        else:
            total += 2 * k * h * c + router + k * c + (c * h + c if gated_shared else 0)
    return total


def compiled_block_bytes_per_token(model: ModelSpec, c: int) -> float:
    """A block under torch.compile (Inductor, default min-cut partitioner): pointwise chains are
    fused and cheap intermediates recomputed in backward instead of saved
    (https://pytorch.org/docs/stable/torch.compiler.html; the partitioner's rematerialisation,
    torch/_functorch/partitioners.py ``min_cut_rematerialization_partition``). What stays saved:
    each norm's input + rstd, the q/k/v SDPA reads and its output + logsumexp, and the MLP's two
    i-wide matmul outputs (SwiGLU's silu and product, GELU's output, are recomputed).
    Llama: 2 (ch + 4) + 3cq + cq + 4n_h + 2ic.  GPT-2/OPT: 2 (ch + 8) + 4cq + 4n_h + ic
    (q = n_h x d, the attention width). The architecture parts (q/k and sandwich norms as fused
    norms; the MoE routing copies, which sit beside matmuls Inductor does not fuse) are added as
    ``extra_block_bytes_per_token`` counts them; not checked against a compiled run."""
    h, i, heads, q = model.hidden, active_intermediate(model), model.n_heads, model.q_dim
    extra = extra_block_bytes_per_token(model, ActivationMode(compute=c, autocast=False, frozen=False,
                                                              fused_norm=True))
    if model.arch == "llama":
        return 2 * (c * h + 4) + 4 * c * q + 4 * heads + 2 * i * c + extra
    return 2 * (c * h + 8) + 4 * c * q + 4 * heads + i * c + extra


def selective_op_bytes_per_token(model: ModelSpec, mode: ActivationMode) -> float:
    """What torchtitan's per-op selective checkpointing keeps of a block (its ``_save_list``
    policy: the outputs of every other matmul and of SDPA are saved, everything else is recomputed;
    https://github.com/pytorch/torchtitan/blob/main/torchtitan/models/llama3/infra/parallelize.py
    ``_apply_ac_to_transformer_block``). Llama's matmuls run q, k, v, o, w1, w3, w2, so q, v, w1
    and w2 are saved; plus the SDPA output + fp32 logsumexp and the checkpoint's input:
    c (h + q + kv + q + i + h) + 4 n_h with q = n_h x d the attention width (q and the SDPA
    output are q wide). MoE blocks (``bot/bench/model.py``): the policy counts plain matmuls, so
    of q, k, v, o and the router it saves q, v and the router's logits (E wide); the experts'
    batched matmuls (w2's output among them) are recomputed: c (h + q + kv + q + E) + 4 n_h (not
    checked against a simulated run)."""
    h, i, c, kv, q = model.hidden, active_intermediate(model), mode.compute, model.kv_dim, model.q_dim
    lse = 4 * model.n_heads
    if model.arch == "llama":
        if model.is_moe:
            return c * (h + 2 * q + kv + model.n_experts) + lse
        return c * (2 * h + 2 * q + kv + i) + lse
    return c * (2 * h + 2 * q + i) + lse  # GPT-2/OPT: q, v, fc1 out (every other of q,k,v,o,fc1,fc2)


def attention_scores_bytes(model: ModelSpec, seq: int, compute: int, implementation: str | None = None) -> float:
    """Bytes one block saves for the attention probabilities of one sequence when attention runs
    eagerly (``ModelSpec.eager_attention``): the softmax's fp32 output and its cast to the compute
    dtype, a x s x s each (Korthikanti et al. 2022, https://arxiv.org/abs/2205.05198 sec. 4.1,
    count the same s x s terms as 5as/h per token; measured on transformers' BloomAttention with
    saved-tensor hooks: 6 bytes per head per s^2 in bf16, tests/test_calc_eager_attention.py).
    Zero for SDPA/flash attention, which keeps only a logsumexp per head and token. ``implementation``:
    the run's attention (None: transformers' default for the architecture, bot/calc/attention.py)."""
    return model.n_heads * seq * seq * scores_bytes_per_s2_per_head(
        model, compute, attn_implementation(model, implementation))


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


def loss_bytes_per_logit(inputs: MemoryInputs, compute: int) -> tuple[float, float, float]:
    """(saved for backward, temporaries at the loss's backward, the logits' gradient) per logit.

    standard: F.cross_entropy on fp32-upcast logits (module constants above). torch.compile of
      the model does not change it: ``torch.compile(model)`` leaves a loss computed outside the
      model eager (torchtitan compiled only the blocks until Feb 2025);
    chunked: the upcast and its temporaries happen one of LOSS_CHUNKS chunks at a time, the fp32
      log-probs of every chunk stay saved (torchtune CEWithChunkedOutputLoss);
    chunked + torch.compile: torchtune compiles each chunk's upcast + cross-entropy whenever the
      model is compiled (torchtune/training/_compile.py ``compile_loss``, at commit 30b8519e; the
      loss's docstring: "The CE and upcasting have to be compiled together"). Inductor's partition
      then saves the 16-bit logits chunk and a fp32 max/logsumexp per row instead of fp32
      log-probs (checked with saved-tensor hooks on a compiled ``F.cross_entropy(x.float(), y)``
      on CPU: one bf16 tensor of the logits' size, shared with the input, and two (rows, 1) fp32);
      at its backward only one chunk's gradient is new;
    fused: one fused cross-entropy kernel over the materialised logits (a torch.compile'd loss as
      torchtitan builds it since Feb 2025, Liger's fused CrossEntropy): it keeps the 16-bit
      logits and a fp32 logsumexp per row, and its backward writes the logits' 16-bit gradient
      directly, with no fp32 buffer. Measured (calc engineer 3, CPU Inductor, torch 2.13, 8192 x
      32,000 bf16 logits, resident-memory sampling): a compiled ``F.cross_entropy(x.float(), y)``
      holds 0.00 B/logit beyond its input after forward and peaks at 2.00 B/logit (the gradient)
      in backward; the eager one holds 4.00 and peaks at 12.00 (this module's 4 + 8). The GPU
      kernel is the same fusion (one Triton kernel reading the logits and the logsumexp).
      Fused *linear* + cross-entropy kernels that never materialise the logits (Cut
      Cross-Entropy, https://arxiv.org/abs/2411.09009) need less still; counting them as "fused"
      overestimates, the safe side for "fits".
    """
    if inputs.loss_impl == "fused":
        return float(compute), float(compute), float(compute)
    if inputs.loss_impl == "chunked" and inputs.torch_compile:
        return float(compute), compute / LOSS_CHUNKS, float(compute)
    if inputs.loss_impl == "chunked":
        return LOSS_SAVED_BYTES_PER_LOGIT, LOSS_TEMP_BYTES_PER_LOGIT / LOSS_CHUNKS, compute
    return LOSS_SAVED_BYTES_PER_LOGIT, LOSS_TEMP_BYTES_PER_LOGIT, compute


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
                          model_code=inputs.model_code)
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


def usable_gib(gpu_memory_gb: float) -> float:
    """GPU memory the caching allocator may reserve: capacity minus the CUDA context, NCCL's
    buffers and a safety margin (HEADROOM_FIXED_GIB + HEADROOM_FRACTION of the card)."""
    return max(0.0, gpu_memory_gb * (1 - HEADROOM_FRACTION) - HEADROOM_FIXED_GIB)


def host_ram_fits(needed_gib: float, cpu_ram_gb: float | None) -> bool:
    """The one host-RAM rule (used by the calculator and the advice): a node's CPU-offloaded
    shards fit when they need at most (1 - HOST_HEADROOM_FRACTION) = 90% of its RAM; the rest is
    the OS, the data loader workers and the pinned staging buffers of the host<->device copies.
    Unknown RAM (None) is not held against the setup."""
    if cpu_ram_gb is None:
        return True
    return needed_gib <= cpu_ram_gb * (1 - HOST_HEADROOM_FRACTION)


def max_micro_batch(candidates: list[Phase], usable_bytes: float) -> int:
    """Largest b with every phase's reserved bytes (fixed + b * per_sample, see
    ``Phase.reserved``) <= usable; closed form per phase."""
    best = MAX_MICRO_BATCH
    for phase in candidates:
        room = usable_bytes - phase.reserved_fixed
        if phase.reserved_per_sample <= 0:
            if room < 0:
                return 0
            continue
        best = min(best, math.floor(room / phase.reserved_per_sample))
        if best < 1:
            return 0
    while best > 1 and any(ph.reserved(best) > usable_bytes for ph in candidates):  # float rounding
        best -= 1
    return best


def reserved_fraction(inputs: MemoryInputs) -> float:
    """The share of the transient bytes the caching allocator keeps reserved on top of the
    allocated peak: smaller with expandable segments (see RESERVED_TRANSIENT_FRACTION)."""
    return RESERVED_TRANSIENT_FRACTION if inputs.expandable_segments else RESERVED_TRANSIENT_FRACTION_DEFAULT_ALLOCATOR


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
