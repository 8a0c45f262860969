"""Activations: the bytes a decoder block, the final norm and the loss save for backward, per token,
counted tensor by tensor (checked with saved-tensor hooks; docs/calc.md "Activations").

Korthikanti et al. 2022 (https://arxiv.org/abs/2205.05198 sec. 4.1) adapted to SDPA/flash attention,
GQA, SwiGLU, MoE routing, torch.compile's partition and the checkpointing policies' saved sets; the
eager attention scores (bot/calc/attention.py) and the cross-entropy's bytes per logit.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from bot.calc.attention import attn_implementation, scores_bytes_per_s2_per_head
from bot.calc.states import LORA_TARGET_SETS, active_intermediate, lora_shapes
from bot.catalog import ModelSpec

if TYPE_CHECKING:
    from bot.calc.memory import MemoryInputs

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
    # PEFT's LoRA with lora_dropout > 0: each adapter reads a dropped copy of its input
    # (``lora_dropout_bytes_per_token``)
    lora_dropout: bool = False


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
                    + mlp_adapter_input + extra + lora_dropout_bytes_per_token(model, mode))
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
        return (3 * c * h + 4 * c * q + 4 * c + lse + i * c + adapters + mlp_adapter_input + extra
                + lora_dropout_bytes_per_token(model, mode))
    if mode.autocast:
        return 16 * h + 8 * q + 16 + lse + 2 * mlp_saved * i + extra
    return 4 * c * h + 4 * c * q + 4 * c + lse + mlp_saved * i * c + extra


def lora_dropout_bytes_per_token(model: ModelSpec, mode: ActivationMode) -> float:
    """What LoRA dropout adds to a frozen block, per token. PEFT's LoRA layer computes
    ``base_layer(x) + lora_B(lora_A(dropout(x))) * scaling`` (peft/tuners/lora/layer.py ``Linear.forward``,
    https://github.com/huggingface/peft/blob/v0.10.0/src/peft/tuners/lora/layer.py); with
    ``lora_dropout`` > 0 the dropout is an ``nn.Dropout``, whose forward makes a new tensor and keeps
    its boolean mask for backward (``aten::native_dropout`` returns the output and a bool mask,
    1 byte per element), and ``lora_A`` saves that dropped copy, not ``x``. So each targeted matmul
    keeps (c + 1) bytes per input element, in = its input width; and the inputs the frozen formula
    counts only because an adapter reads them (the first norm's output for q/k/v, ``c h``; the
    MLP product for ``down``, ``c i``) are no longer saved by anyone (a frozen matmul saves no
    input). With ``lora_dropout`` 0 (PEFT's default) the dropout is ``nn.Identity``: nothing."""
    if not (mode.frozen and mode.lora_dropout):
        return 0.0
    c, shapes = mode.compute, lora_shapes(model)
    targets = [t for t in LORA_TARGET_SETS[mode.lora_targets] if t in shapes]
    dropped = sum((c + 1) * shapes[t][0] for t in targets)
    replaced = c * model.hidden + (active_intermediate(model) * c if "down" in targets else 0)
    return dropped - replaced


def kept_logits_bytes_per_logit(logits_kept: str | None, compute: int) -> float:
    """Bytes per logit of the model's output logits when the training loop keeps the output alive
    through backward: transformers' causal LMs before v4.46 upcast the whole logits to fp32 and
    return them (``logits = logits.float()`` before the loss in ``LlamaForCausalLM.forward``,
    https://github.com/huggingface/transformers/blob/v4.38.2/src/transformers/models/llama/modeling_llama.py),
    and a loop that holds ``output`` until after the step (Answer.AI's fsdp_qlora train.py at 27ce87d:
    ``output = model(...)``, backward, step, then ``output = None`` "so more memory frees up before the
    next forward pass") keeps those 4 bytes per logit through every backward moment. The loss's own
    log-probabilities are counted as before. "16bit": the output logits in the compute dtype
    (transformers from v4.46). None: the loop lets the output go before backward (HF Trainer's
    ``compute_loss`` returns only the loss): nothing."""
    if logits_kept == "fp32":
        return 4.0
    if logits_kept == "16bit":
        return float(compute)
    return 0.0


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
    the run's attention (None: transformers' default for the architecture, bot/catalog/kernel_defaults.py)."""
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
