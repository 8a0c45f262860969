"""A plain-torch decoder built from a ``bot.catalog.ModelSpec`` (the shape, not a checkpoint).

Used by simulate (inside ``FakeTensorMode``: no memory is allocated) and by the real benchmark
worker. Two block kinds cover the catalog:

- ``llama``: pre-norm RMSNorm, attention with grouped-query K/V heads (GQA) and rotary positions,
  SwiGLU MLP (Llama 2 paper https://arxiv.org/abs/2307.09288 sec. 2.2; GQA
  https://arxiv.org/abs/2305.13245). Qwen2 adds a bias on q/k/v (``qkv_bias``).
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

from bot.catalog import ModelSpec


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
        h, kv = spec.hidden, spec.kv_dim
        llama = spec.arch == "llama"
        qkv_bias = spec.qkv_bias if llama else True
        self.n_heads, self.n_kv_heads, self.head_dim = spec.n_heads, spec.n_kv_heads, spec.head_dim
        self.rotary = llama
        self.q = nn.Linear(h, h, bias=qkv_bias)
        self.k = nn.Linear(h, kv, bias=qkv_bias)
        self.v = nn.Linear(h, kv, bias=qkv_bias)
        self.o = nn.Linear(h, h, bias=not llama)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, _ = x.shape
        q = self.q(x).view(b, s, self.n_heads, self.head_dim).transpose(1, 2)
        k = self.k(x).view(b, s, self.n_kv_heads, self.head_dim).transpose(1, 2)
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
    def __init__(self, spec: ModelSpec):
        super().__init__()
        h, i = spec.hidden, spec.intermediate
        self.swiglu = spec.arch == "llama"
        if self.swiglu:  # SwiGLU, https://arxiv.org/abs/2002.05202 eq. 6
            self.gate = nn.Linear(h, i, bias=False)
            self.up = nn.Linear(h, i, bias=False)
            self.down = nn.Linear(i, h, bias=False)
        else:
            self.up = nn.Linear(h, i)
            self.down = nn.Linear(i, h)
            self.act = nn.GELU(approximate="tanh") if spec.arch == "gpt2" else nn.ReLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.swiglu:
            return self.down(F.silu(self.gate(x)) * self.up(x))
        return self.down(self.act(self.up(x)))


class Block(nn.Module):
    def __init__(self, spec: ModelSpec):
        super().__init__()
        norm = (lambda: RMSNorm(spec.hidden)) if spec.arch == "llama" else (lambda: nn.LayerNorm(spec.hidden))
        self.attn_norm, self.attn = norm(), Attention(spec)
        self.mlp_norm, self.mlp = norm(), MLP(spec)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.attn_norm(x))
        return x + self.mlp(self.mlp_norm(x))


class Decoder(nn.Module):
    """Embedding, ``n_layers`` blocks, final norm, LM head. ``layers`` is what FSDP wraps per block."""

    def __init__(self, spec: ModelSpec):
        super().__init__()
        self.spec = spec
        self.checkpoint_blocks = False
        self.embed = nn.Embedding(spec.vocab, spec.hidden)
        if spec.arch != "llama":
            offset = 2 if spec.arch == "opt" else 0  # OPT's learned positions start at index 2
            self.positions = nn.Embedding(spec.max_positions + offset, spec.hidden)
            self.position_offset = offset
        self.layers = nn.ModuleList(Block(spec) for _ in range(spec.n_layers))
        self.norm = RMSNorm(spec.hidden) if spec.arch == "llama" else nn.LayerNorm(spec.hidden)
        self.head = nn.Linear(spec.hidden, spec.vocab, bias=False)
        if spec.tied_embeddings:
            self.head.weight = self.embed.weight

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        x = self.embed(tokens)
        if self.spec.arch != "llama":
            pos = torch.arange(tokens.shape[1], device=tokens.device) + self.position_offset
            x = x + self.positions(pos)[None]
        for block in self.layers:
            if self.checkpoint_blocks and torch.is_grad_enabled():
                # Per-block activation checkpointing: keep only each block's input, recompute the
                # rest in backward (https://arxiv.org/abs/1604.06174).
                x = checkpoint(block, x, use_reentrant=False)
            else:
                x = block(x)
        return self.head(self.norm(x))


def build_model(spec: ModelSpec, *, checkpoint_blocks: bool = False) -> Decoder:
    """The decoder for ``spec`` in the current default dtype and device (no weights loaded)."""
    model = Decoder(spec)
    model.checkpoint_blocks = checkpoint_blocks
    return model


def loss_fn(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Next-token cross entropy in fp32 (as Hugging Face causal LMs do: logits are upcast)."""
    return F.cross_entropy(logits.float().flatten(0, 1), labels.flatten())


def check_seq_len(spec: ModelSpec, seq_len: int) -> None:
    """Learned position tables (GPT-2, OPT) cannot go past ``max_positions``."""
    if spec.arch != "llama" and seq_len > spec.max_positions:
        raise ValueError(f"{spec.name} has learned positions up to {spec.max_positions}; "
                         f"seq_len {seq_len} is longer")
