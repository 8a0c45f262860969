"""Model states: bytes per parameter, gradient and optimizer state for each precision, optimizer and
fine-tuning mode, and the shape helpers they need (which matmuls a block has, what LoRA trains).

The ZeRO paper's "model states" (Rajbhandari et al. 2020, https://arxiv.org/abs/1910.02054 sec. 3.1):
16 B/param for mixed-precision AdamW; LoRA/QLoRA's trainable adapters and frozen 4-bit base; the
optimizer step's temporaries. ``bot/calc/memory.py`` assembles these into the peak moments.
"""

from __future__ import annotations

from dataclasses import dataclass

from bot.catalog import ModelSpec

# 4-bit NormalFloat storage with double quantization: 4 bits + 8-bit absmax per 64 weights
# + fp32 second-level constants per 256 blocks = 4 + 8/64 + 32/(64*256) bits
# (QLoRA, Dettmers et al. 2023, https://arxiv.org/abs/2305.14314 sec. 3 "Double Quantization").
NF4_BYTES_PER_PARAM = (4 + 8 / 64 + 32 / (64 * 256)) / 8
# Default LoRA targets (PEFT's common choice for Llama): the four attention projections;
# "all_linear" adds the MLP's matmuls (PEFT target_modules="all-linear", QLoRA's choice).
LORA_TARGETS = ("q", "k", "v", "o")
# "all_linear_but_o": q, k, v and the MLP without o_proj (Answer.AI's fsdp_qlora train.py default
# lora_target_modules "k_proj", "q_proj", "v_proj", "up_proj", "down_proj", "gate_proj").
LORA_TARGET_SETS = {"attention": LORA_TARGETS, "all_linear": ("q", "k", "v", "o", "gate", "up", "down"),
                    "all_linear_but_o": ("q", "k", "v", "gate", "up", "down")}
BASE_DTYPE_BYTES = {"fp32": 4.0, "bf16": 2.0, "nf4": NF4_BYTES_PER_PARAM}


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
