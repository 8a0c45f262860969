"""A plain-torch decoder built from a ``bot.catalog.ModelSpec`` (the shape, not a checkpoint).

Used by simulate (inside ``FakeTensorMode``: no memory is allocated) and by the real benchmark
worker. Two block kinds cover the dense decoders and Llama-style MoE of the catalog (``supports``
says which; encoders, T5, latent attention and vision towers are built from their Hugging Face
config with ``transformers`` instead, see ``bot/bench/hf_model.py``):

- ``llama``: pre-norm RMSNorm, attention with grouped-query K/V heads (GQA) and rotary positions,
  SwiGLU MLP (Llama 2 paper https://arxiv.org/abs/2307.09288 sec. 2.2; GQA
  https://arxiv.org/abs/2305.13245). Qwen2 adds a bias on q/k/v (``qkv_bias``), Qwen3 and
  Gemma 3 q/k norms, Gemma 2/3 a second norm after each branch; MoE blocks replace the MLP with
  routed experts (``MoE``).
- ``gpt2`` / ``opt``: pre-norm LayerNorm, biased attention, learned positions, GELU (GPT-2) or
  ReLU (OPT) MLP (https://huggingface.co/docs/transformers/model_doc/gpt2, .../opt).

Attention uses ``F.scaled_dot_product_attention`` (causal), which on GPUs runs the flash or
memory-efficient kernel and never stores the s x s score matrix; on CPU the fused flash kernel
has the same memory shape. Parameter count equals ``ModelSpec.params`` exactly (a test pins it).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.checkpoint import checkpoint

from bot.bench.archs import supports
from bot.catalog import ModelSpec

__all__ = ["Decoder", "MoE", "build_model", "check_seq_len", "chunked_loss_fn", "loss_fn", "supports"]

# Checkpointing policies (issue 14, calc engineer): "full" = every block; "every_k" = every k-th
# block (fms-fsdp's ac_handler); "selective_op" = torchtitan's per-op policy, which saves the
# outputs of every other matmul and of SDPA in each block and recomputes everything else.
CHECKPOINT_POLICIES = ("full", "every_k", "selective_op")


def _selective_op_context():
    """torchtitan's op-level selective checkpointing policy for one block
    (torchtitan/models/llama3/infra/parallelize.py ``_apply_ac_to_transformer_block``): a fresh
    matmul count per block; SDPA outputs saved; every other matmul saved."""
    from functools import partial

    from torch.utils.checkpoint import CheckpointPolicy, create_selective_checkpoint_contexts

    aten = torch.ops.aten
    sdpa = {getattr(aten, name).default for name in (
        "_scaled_dot_product_flash_attention", "_scaled_dot_product_efficient_attention",
        "_scaled_dot_product_flash_attention_for_cpu") if hasattr(aten, name)}
    counts = {"forward": 0, "recompute": 0}

    def policy(ctx, func, *args, **kwargs):
        mode = "recompute" if ctx.is_recompute else "forward"
        if func in (aten.mm.default, aten.addmm.default):
            counts[mode] += 1
            keep = counts[mode] % 2 == 1  # the 1st, 3rd, 5th, ... matmul of the block
            return CheckpointPolicy.MUST_SAVE if keep else CheckpointPolicy.PREFER_RECOMPUTE
        return CheckpointPolicy.MUST_SAVE if func in sdpa else CheckpointPolicy.PREFER_RECOMPUTE

    return create_selective_checkpoint_contexts(partial(policy))


class RMSNorm(nn.Module):
    # Root-mean-square norm (https://arxiv.org/abs/1910.07467), as in Llama.
    def __init__(self, dim: int, eps: float = 1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.rms_norm(x, (x.shape[-1],), self.weight, self.eps)


def _rotary(x: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
    # Rotary position embedding, RoFormer https://arxiv.org/abs/2104.09864 eq. 34 (half-split form).
    half = x.shape[-1] // 2
    inv_freq = 1.0 / (10000.0 ** (torch.arange(half, device=x.device, dtype=torch.float32) / half))
    angles = positions.float()[:, None] * inv_freq[None, :]  # (seq, half)
    cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1)


class Attention(nn.Module):
    def __init__(self, spec: ModelSpec):
        super().__init__()
        h, q_dim, kv = spec.hidden, spec.q_dim, spec.kv_dim
        qkv_bias = spec.has_attn_bias or spec.qkv_bias
        self.n_heads, self.n_kv_heads, self.head_dim = spec.n_heads, spec.n_kv_heads, spec.head_dim
        self.rotary = spec.arch == "llama"
        self.q = nn.Linear(h, q_dim, bias=qkv_bias)
        self.k = nn.Linear(h, kv, bias=qkv_bias)
        self.v = nn.Linear(h, kv, bias=qkv_bias)
        self.o = nn.Linear(q_dim, h, bias=spec.has_attn_bias)
        # Qwen3 / Gemma 3: RMSNorm over each head's q and k before rotary.
        self.q_norm = RMSNorm(spec.head_dim) if spec.qk_norm else None
        self.k_norm = RMSNorm(spec.head_dim) if spec.qk_norm else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, _ = x.shape
        q = self.q(x).view(b, s, self.n_heads, self.head_dim)
        k = self.k(x).view(b, s, self.n_kv_heads, self.head_dim)
        if self.q_norm is not None and self.k_norm is not None:  # both or neither (qk_norm)
            q, k = self.q_norm(q), self.k_norm(k)
        q, k = q.transpose(1, 2), k.transpose(1, 2)
        v = self.v(x).view(b, s, self.n_kv_heads, self.head_dim).transpose(1, 2)
        if self.rotary:
            positions = torch.arange(s, device=x.device)
            q, k = _rotary(q, positions), _rotary(k, positions)
        if self.n_kv_heads != self.n_heads:  # GQA: each K/V head serves n_heads / n_kv_heads queries
            repeat = self.n_heads // self.n_kv_heads
            k, v = k.repeat_interleave(repeat, dim=1), v.repeat_interleave(repeat, dim=1)
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.o(out.transpose(1, 2).reshape(b, s, -1))


class MLP(nn.Module):
    def __init__(self, spec: ModelSpec, width: int | None = None):
        super().__init__()
        h, i = spec.hidden, spec.intermediate if width is None else width
        bias = spec.has_mlp_bias
        self.swiglu = spec.is_gated
        if self.swiglu:  # SwiGLU, https://arxiv.org/abs/2002.05202 eq. 6 (GeGLU has the same tensors)
            self.gate = nn.Linear(h, i, bias=bias)
            self.up = nn.Linear(h, i, bias=bias)
            self.down = nn.Linear(i, h, bias=bias)
        else:
            self.up = nn.Linear(h, i, bias=bias)
            self.down = nn.Linear(i, h, bias=bias)
            self.act = nn.ReLU() if spec.arch == "opt" else nn.GELU(approximate="tanh")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.swiglu:
            return self.down(F.silu(self.gate(x)) * self.up(x))
        return self.down(self.act(self.up(x)))


class MoE(nn.Module):
    """Routed experts (Mixtral / Qwen-MoE style) with optional shared experts.

    The experts' weights are stacked (E x out x in) and run as one batched matmul over a
    perfectly balanced dispatch: each token's top-k copies are laid out as E equal groups of
    ceil(T k / E) rows. Real routing is data dependent (its group sizes vary step to step), which
    fake tensors cannot follow; the balanced layout has the same parameters, the same saved
    activations and FLOPs as a balanced grouped GEMM (the torchtitan/megablocks way), though it
    does not send each token to the experts its router picked. Shared experts see every token.
    """

    def __init__(self, spec: ModelSpec):
        super().__init__()
        h, mi, e = spec.hidden, spec.moe_intermediate, spec.n_experts
        self.k, self.n_experts = spec.experts_per_token, e
        self.router = nn.Linear(h, e, bias=False)
        self.w_gate = nn.Parameter(torch.empty(e, mi, h))
        self.w_up = nn.Parameter(torch.empty(e, mi, h))
        self.w_down = nn.Parameter(torch.empty(e, h, mi))
        for weight in (self.w_gate, self.w_up, self.w_down):
            nn.init.normal_(weight, std=0.02)
        shared = spec.n_shared_experts * mi + spec.shared_expert_intermediate
        self.shared = MLP(spec, shared) if shared else None
        self.shared_gate = nn.Linear(h, 1, bias=False) if spec.shared_expert_intermediate else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shape = x.shape
        flat = x.reshape(-1, shape[-1])
        tokens = flat.shape[0]
        probs = F.softmax(self.router(flat).float(), dim=-1)
        weights, _ = torch.topk(probs, self.k, dim=-1)  # (T, k)
        weights = (weights / weights.sum(-1, keepdim=True)).to(x.dtype)
        rows = tokens * self.k
        per_expert = -(-rows // self.n_experts)
        dispatched = flat.repeat_interleave(self.k, dim=0)
        if per_expert * self.n_experts != rows:
            dispatched = F.pad(dispatched, (0, 0, 0, per_expert * self.n_experts - rows))
        grouped = dispatched.view(self.n_experts, per_expert, -1)
        hidden = F.silu(torch.bmm(grouped, self.w_gate.transpose(1, 2))) * torch.bmm(grouped, self.w_up.transpose(1, 2))
        out = torch.bmm(hidden, self.w_down.transpose(1, 2)).reshape(-1, shape[-1])[:rows]
        out = (out.view(tokens, self.k, -1) * weights[..., None]).sum(1)
        if self.shared is not None:
            shared = self.shared(flat)
            if self.shared_gate is not None:
                shared = torch.sigmoid(self.shared_gate(flat)) * shared
            out = out + shared
        return out.view(shape)


def _norm(spec: ModelSpec, dim: int | None = None) -> nn.Module:
    dim = dim or spec.hidden
    if spec.arch in ("llama", "t5"):
        return RMSNorm(dim)
    return nn.LayerNorm(dim, bias=spec.has_norm_bias)


class Block(nn.Module):
    def __init__(self, spec: ModelSpec, dense: bool = True):
        super().__init__()
        self.attn_norm, self.attn = _norm(spec), Attention(spec)
        self.mlp_norm, self.mlp = _norm(spec), (MLP(spec) if dense else MoE(spec))
        # Gemma 2/3: a second norm on each branch's output ("sandwich" norms).
        sandwich = spec.norms_per_layer == 4
        self.post_attn_norm = _norm(spec) if sandwich else None
        self.post_mlp_norm = _norm(spec) if sandwich else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        a = self.attn(self.attn_norm(x))
        x = x + (self.post_attn_norm(a) if self.post_attn_norm is not None else a)
        m = self.mlp(self.mlp_norm(x))
        return x + (self.post_mlp_norm(m) if self.post_mlp_norm is not None else m)


class Decoder(nn.Module):
    """Embedding, ``n_layers`` blocks, final norm, LM head. ``layers`` is what FSDP wraps per block."""

    def __init__(self, spec: ModelSpec):
        super().__init__()
        self.spec = spec
        self.checkpoint_blocks = False
        self.checkpoint_policy = "full"  # one of CHECKPOINT_POLICIES, used when checkpoint_blocks
        self.checkpoint_every = 1
        self.embed = nn.Embedding(spec.vocab, spec.hidden)
        self.position_offset = 2 if spec.arch == "opt" else 0  # OPT's learned positions start at index 2
        self.positions = nn.Embedding(spec.positions, spec.hidden) if spec.positions else None
        dense = spec.first_k_dense if spec.is_moe else spec.n_layers
        self.layers = nn.ModuleList(Block(spec, dense=n < dense) for n in range(spec.n_layers))
        self.norm = _norm(spec)
        self.head = nn.Linear(spec.hidden, spec.vocab, bias=False)
        if spec.tied_embeddings:
            self.head.weight = self.embed.weight

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        x = self.embed(tokens)
        if self.positions is not None:
            pos = torch.arange(tokens.shape[1], device=tokens.device) + self.position_offset
            x = x + self.positions(pos)[None]
        for n, block in enumerate(self.layers):
            policy = self.checkpoint_policy
            if (self.checkpoint_blocks and torch.is_grad_enabled()
                    and (policy != "every_k" or n % max(1, self.checkpoint_every) == 0)):
                if policy == "selective_op":
                    x = checkpoint(block, x, use_reentrant=False, context_fn=_selective_op_context)
                else:
                    # Per-block activation checkpointing: keep only each block's input, recompute the
                    # rest in backward (https://arxiv.org/abs/1604.06174).
                    x = checkpoint(block, x, use_reentrant=False)
            else:
                x = block(x)
        return self.head(self.norm(x))


def build_model(spec: ModelSpec, *, checkpoint_blocks: bool = False, checkpoint_policy: str = "full",
                checkpoint_every: int = 1) -> Decoder:
    """The decoder for ``spec`` in the current default dtype and device (no weights loaded).
    Raises ``ValueError`` for specs ``supports`` refuses."""
    why = supports(spec)
    if why:
        raise ValueError(f"{spec.name}: {why}")
    if checkpoint_policy not in CHECKPOINT_POLICIES:
        raise ValueError(f"checkpoint_policy {checkpoint_policy!r} is not one of {', '.join(CHECKPOINT_POLICIES)}")
    model = Decoder(spec)
    model.checkpoint_blocks = checkpoint_blocks
    model.checkpoint_policy, model.checkpoint_every = checkpoint_policy, checkpoint_every
    return model


def loss_fn(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Next-token cross entropy in fp32 (as Hugging Face causal LMs do: logits are upcast)."""
    return F.cross_entropy(logits.float().flatten(0, 1), labels.flatten())


def chunked_loss_fn(logits: torch.Tensor, labels: torch.Tensor, chunks: int = 8) -> torch.Tensor:
    """The same loss computed over ``chunks`` slices of the sequence, each upcast on its own
    (torchtune's CEWithChunkedOutputLoss): the fp32 copies exist one chunk at a time."""
    total = logits.new_zeros((), dtype=torch.float32)
    for part, target in zip(logits.chunk(chunks, dim=1), labels.chunk(chunks, dim=1), strict=True):
        total = total + F.cross_entropy(part.float().flatten(0, 1), target.flatten(), reduction="sum")
    return total / labels.numel()


def check_seq_len(spec: ModelSpec, seq_len: int) -> None:
    """Learned position tables (GPT-2, OPT) cannot go past ``max_positions``."""
    if spec.positions and seq_len > spec.max_positions:
        raise ValueError(f"{spec.name} has learned positions up to {spec.max_positions}; "
                         f"seq_len {seq_len} is longer")
