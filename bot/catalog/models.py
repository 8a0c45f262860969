"""Model catalog: architectures as shapes, parameter counts derived from the shape, never typed in.

A ``ModelSpec`` describes one of
- ``decoder``: dense decoder-only transformers. ``arch="llama"`` is the gated-MLP (SwiGLU/GeGLU)
  RMSNorm family (Llama, Mistral, Qwen, Gemma, Phi-3, Baichuan, GLM, Yi) with GQA, optional q/k/v
  biases, q/k norms, extra norms (Gemma 2/3) and a head size that need not be hidden/heads;
  ``arch="gpt2"``/``"opt"`` is the biased LayerNorm family with learned positions (MPT too, with
  its biases switched off).
- ``moe``: the same attention with routed experts (Mixtral, Qwen-MoE, Qwen3-MoE, DeepSeek-V2 with
  multi-head latent attention); ``params`` is the total, ``active_params`` what one token uses.
- ``encoder`` (BERT/RoBERTa) and ``encoder_decoder`` (T5): counted exactly; memory estimates treat
  their blocks like GPT-2 blocks (see docs/catalog.md).
- approximate entries (vision-language, diffusion, bare sizes): a declared parameter count on a
  generic Llama-style shape, marked ``approximate``.

Every entry carries the URL of the config its shape comes from and the parameter count its
publisher gives. Lookups accept the names people type (``llama3 8b instruct``,
``Qwen/Qwen2.5-7B-Instruct``, ``7b``) and suggest close names when nothing matches.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from typing import Literal

from bot.catalog.names import UnknownNameError, suggest

Arch = Literal["llama", "gpt2", "opt", "t5"]

# What answers about MoE models should say about expert parallelism (issue 13), in our words.
EXPERT_PARALLEL_NOTE = (
    "Expert parallelism is outside DDP and FSDP: under FSDP every GPU holds 1/N of every expert "
    "and all-gathers a MoE block's experts in full (all of them, not only the active ones) for its "
    "forward and backward. Expert parallelism (Megatron, DeepSpeed-MoE, torchtitan) places whole "
    "experts on different GPUs and routes tokens to them with all-to-all: no expert all-gathers and "
    "per-GPU expert memory of experts/EP x expert size, at the cost of all-to-all traffic and load "
    "imbalance. These estimates do not model it.")
Kind = Literal["decoder", "moe", "encoder", "encoder_decoder", "vlm", "diffusion"]


@dataclass(frozen=True)
class ModelSpec:
    """A transformer's shape. ``params`` is computed from it (``declared_params`` only for
    approximate entries whose architecture is not modelled)."""

    name: str
    arch: Arch  # block family the calculator and bench model know (see module docstring)
    n_layers: int  # transformer blocks (encoder-decoder: encoder + decoder blocks)
    hidden: int
    intermediate: int  # dense MLP width (MoE: the dense layers' width, if any)
    n_heads: int
    n_kv_heads: int
    vocab: int
    tied_embeddings: bool = False
    qkv_bias: bool = False  # Qwen2 family, GLM-4: bias on q/k/v projections only
    max_positions: int = 4096  # learned position table size (gpt2/opt/bert); informational otherwise
    published_params_b: float | None = None
    source_url: str = ""
    aliases: tuple[str, ...] = ()
    approximate: bool = False  # shape not the real one (bare sizes, VLM/diffusion entries)
    # --- added with issue 13 (defaults reproduce the original three families) ---------------
    kind: Kind = "decoder"
    family: str = ""  # Hugging Face model_type ("qwen3_moe", "bert", ...)
    attn_head_dim: int | None = None  # head size when it is not hidden / n_heads (Gemma, Qwen3)
    gated_mlp: bool | None = None  # 3-matrix SwiGLU/GeGLU MLP; default: arch == "llama"
    attn_bias: bool | None = None  # bias on q, k, v and o; default: gpt2/opt/bert
    mlp_bias: bool | None = None  # bias on the MLP matrices; default: as attn_bias
    norm_bias: bool | None = None  # LayerNorm with a bias; default: gpt2/opt
    norms_per_layer: int = 2  # Gemma 2/3 and GLM-4-0414 have four (pre/post attention and MLP)
    qk_norm: bool = False  # RMSNorm over each head's q and k (Qwen3, Gemma 3)
    position_table: int | None = None  # learned position rows; default gpt2: max_positions, opt: +2
    type_vocab: int = 0  # BERT's token-type (segment) embeddings
    pooler: bool = False  # BERT's pooler (h x h + bias), counted in its published size
    embed_norm: bool = False  # LayerNorm after the embeddings (BERT)
    # The transformers implementation computes attention eagerly and keeps the s x s scores for
    # backward (BLOOM: ALiBi has no SDPA path there); see bot.calc.memory.attention_scores_bytes
    eager_attention: bool = False
    # MoE (Mixtral, Qwen-MoE, DeepSeek-V2): experts of width moe_intermediate
    n_experts: int = 0
    experts_per_token: int = 0
    moe_intermediate: int = 0
    n_shared_experts: int = 0  # DeepSeek: shared experts of width moe_intermediate
    shared_expert_intermediate: int = 0  # Qwen2-MoE: one shared expert of this width, gated
    first_k_dense: int = 0  # DeepSeek first_k_dense_replace: leading layers with a dense MLP
    # Multi-head latent attention (DeepSeek-V2, https://arxiv.org/abs/2405.04434 sec. 2.1)
    kv_lora_rank: int = 0
    q_lora_rank: int = 0
    qk_nope_head_dim: int = 0
    qk_rope_head_dim: int = 0
    v_head_dim: int = 0
    # Encoder-decoder (T5): decoder blocks (of n_layers) and relative-position buckets
    n_decoder_layers: int = 0
    relative_buckets: int = 0
    # Parts not modelled block by block (a VLM's vision tower), counted in ``params``
    extra_params: int = 0
    extra_params_note: str = ""
    declared_params: int | None = None  # approximate entries: the published total
    published_active_b: float | None = None  # MoE: the publisher's "activated" figure
    notes: str = ""

    # --- derived shape ------------------------------------------------------------------------
    @property
    def head_dim(self) -> int:
        return self.attn_head_dim or self.hidden // self.n_heads

    @property
    def q_dim(self) -> int:
        return self.n_heads * self.head_dim

    @property
    def kv_dim(self) -> int:
        return self.n_kv_heads * self.head_dim

    @property
    def is_gated(self) -> bool:
        return self.arch == "llama" if self.gated_mlp is None else self.gated_mlp

    @property
    def has_attn_bias(self) -> bool:
        if self.attn_bias is not None:
            return self.attn_bias
        return self.arch in ("gpt2", "opt") and self.family not in ("mpt",)

    @property
    def has_mlp_bias(self) -> bool:
        return self.has_attn_bias if self.mlp_bias is None else self.mlp_bias

    @property
    def has_norm_bias(self) -> bool:
        return self.arch in ("gpt2", "opt") if self.norm_bias is None else self.norm_bias

    @property
    def positions(self) -> int:
        """Rows of the learned position table (0 for rotary/ALiBi/relative positions)."""
        if self.position_table is not None:
            return self.position_table
        return {"gpt2": self.max_positions, "opt": self.max_positions + 2}.get(self.arch, 0)

    @property
    def active_intermediate(self) -> int:
        """MLP width one token passes through in a block: ``intermediate`` for dense models; for
        MoE the routed experts it uses plus the shared ones (what activations and FLOPs scale with)."""
        if not self.is_moe:
            return self.intermediate
        return (self.experts_per_token + self.n_shared_experts) * self.moe_intermediate + self.shared_expert_intermediate

    @property
    def is_moe(self) -> bool:
        return self.n_experts > 0

    @property
    def uses_mla(self) -> bool:
        return self.kv_lora_rank > 0

    # --- parameter counts -----------------------------------------------------------------------
    def _norm(self) -> int:
        return self.hidden * (2 if self.has_norm_bias else 1)

    def attention_params(self) -> int:
        """One self-attention: projections, biases, q/k norms (or MLA's low-rank factors)."""
        h = self.hidden
        if self.uses_mla:
            # MLA: q (optionally low-rank), a shared compressed kv of kv_lora_rank plus a rope key,
            # its norm, the up-projection to per-head keys/values, and the output projection
            # (DeepSeek-V2 config fields; https://arxiv.org/abs/2405.04434 eq. 9-14).
            qk = self.qk_nope_head_dim + self.qk_rope_head_dim
            if self.q_lora_rank:
                q = h * self.q_lora_rank + self.q_lora_rank + self.q_lora_rank * self.n_heads * qk
            else:
                q = h * self.n_heads * qk
            kv = (h * (self.kv_lora_rank + self.qk_rope_head_dim) + self.kv_lora_rank
                  + self.kv_lora_rank * self.n_heads * (self.qk_nope_head_dim + self.v_head_dim))
            return q + kv + self.n_heads * self.v_head_dim * h
        q, kv = self.q_dim, self.kv_dim
        total = 2 * h * q + 2 * h * kv  # q and o: h x q_dim; k and v: h x kv_dim (GQA)
        if self.has_attn_bias:
            total += q + 2 * kv + h
        elif self.qkv_bias:
            total += q + 2 * kv
        if self.qk_norm:
            total += 2 * self.head_dim
        return total

    def mlp_params(self, width: int | None = None) -> int:
        """One MLP of ``width`` (default ``intermediate``): gated 3 matrices, plain 2."""
        h, i = self.hidden, self.intermediate if width is None else width
        if self.is_gated:
            return 3 * h * i + ((2 * i + h) if self.has_mlp_bias else 0)
        return 2 * h * i + ((i + h) if self.has_mlp_bias else 0)

    def moe_params(self, active: bool = False) -> int:
        """One MoE layer's experts, router and shared experts (``active``: what one token uses)."""
        experts = self.experts_per_token if active else self.n_experts
        total = self.n_experts * self.hidden  # the router (a bias-free linear h -> n_experts)
        total += experts * self.mlp_params(self.moe_intermediate)
        if self.n_shared_experts:
            total += self.mlp_params(self.n_shared_experts * self.moe_intermediate)
        if self.shared_expert_intermediate:
            total += self.mlp_params(self.shared_expert_intermediate) + self.hidden  # + its gate
        return total

    def dense_layer_params(self) -> int:
        return self.attention_params() + self.mlp_params() + self.norms_per_layer * self._norm()

    def moe_layer_params(self, active: bool = False) -> int:
        return self.attention_params() + self.moe_params(active) + self.norms_per_layer * self._norm()

    def _t5_blocks(self) -> tuple[int, int]:
        """(encoder block, decoder block): the decoder adds cross-attention and its norm."""
        enc = self.attention_params() + self.mlp_params() + 2 * self._norm()
        return enc, enc + self.attention_params() + self._norm()

    def layer_params(self) -> int:
        """Parameters in one transformer block (MoE: a MoE block; T5: a decoder block), the
        unit FSDP wraps."""
        if self.kind == "encoder_decoder":
            return self._t5_blocks()[1]
        if self.is_moe:
            return self.moe_layer_params()
        return self.dense_layer_params()

    def embedding_params(self) -> int:
        """Everything outside the repeated blocks: token (and position, type) embeddings, final
        norm(s), the LM head when untied, BERT's embedding norm and pooler, T5's relative biases."""
        h = self.hidden
        total = self.vocab * h + self.positions * h + self.type_vocab * h
        if self.kind != "encoder":  # BERT-style encoders are post-norm: no final norm
            total += self._norm() * (2 if self.kind == "encoder_decoder" else 1)
        if self.kind in ("decoder", "moe", "encoder_decoder", "vlm") and not self.tied_embeddings:
            total += self.vocab * h
        if self.embed_norm:
            total += self._norm()
        if self.pooler:
            total += h * h + h
        if self.relative_buckets:
            total += 2 * self.relative_buckets * self.n_heads  # first encoder and decoder block
        return total

    def _block_total(self, active: bool = False) -> int:
        if self.kind == "encoder_decoder":
            enc, dec = self._t5_blocks()
            return (self.n_layers - self.n_decoder_layers) * enc + self.n_decoder_layers * dec
        if self.is_moe:
            dense = self.first_k_dense
            return dense * self.dense_layer_params() + (self.n_layers - dense) * self.moe_layer_params(active)
        return self.n_layers * self.dense_layer_params()

    @property
    def params(self) -> int:
        """Total parameters (every expert of a MoE)."""
        if self.declared_params is not None:
            return self.declared_params
        return self._block_total() + self.embedding_params() + self.extra_params

    @property
    def params_b(self) -> float:
        return self.params / 1e9

    @property
    def active_params(self) -> int:
        """Parameters one token passes through: ``params`` for dense models; for MoE the shared
        parts plus ``experts_per_token`` routed experts per MoE layer (embeddings and LM head
        included, as Mixtral's and Qwen3's cards count them)."""
        if not self.is_moe or self.declared_params is not None:
            return self.params
        return self._block_total(active=True) + self.embedding_params() + self.extra_params

    @property
    def active_params_b(self) -> float:
        return self.active_params / 1e9

    def largest_unit_params(self) -> int:
        """The biggest FSDP unit when each block is wrapped: a block or the embedding/head."""
        embed = self.vocab * self.hidden
        return max(self.layer_params(), embed)

    def describe(self) -> str:
        """One line for answers: size, kind and the caveats that apply."""
        size = f"{self.params_b:.3g}B parameters"
        if self.is_moe:
            size = f"{self.params_b:.3g}B total, {self.active_params_b:.3g}B active per token (MoE)"
        if self.approximate:
            size += " (approximate: shape not modelled)"
        return f"{self.name}: {size}"

    @property
    def caveats(self) -> tuple[str, ...]:
        """What an answer about this model should say besides the numbers."""
        out = []
        if self.is_moe:
            out.append(EXPERT_PARALLEL_NOTE)
        if self.declared_params is not None:
            out.append(f"{self.name} is a {self.kind} model: memory for weights, gradients and optimizer "
                       "state follows from its published parameter count; activations are approximated "
                       "by a decoder of the same size.")
        elif self.kind in ("encoder", "encoder_decoder"):
            out.append("Encoder blocks are estimated like GPT-2 blocks (biased attention, plain MLP); "
                       "the simulator builds the real model.")
        if self.extra_params:
            out.append(f"{self.extra_params / 1e6:.0f}M parameters are a {self.extra_params_note}; "
                       "its activations are not modelled.")
        if self.notes:
            out.append(self.notes)
        return tuple(out)


# --------------------------------------------------------------------------------------------
# The catalog
# --------------------------------------------------------------------------------------------


def _cfg(repo: str) -> str:
    return f"https://huggingface.co/{repo}/blob/main/config.json"


def _dense(name: str, repo: str, layers: int, hidden: int, inter: int, heads: int, kv: int, vocab: int,
           published: float, *aliases: str, **extra) -> ModelSpec:
    """A llama-family dense decoder entry (source = the repo's config.json)."""
    extra.setdefault("family", "llama")
    return ModelSpec(name, "llama", layers, hidden, inter, heads, kv, vocab, published_params_b=published,
                     source_url=_cfg(repo), aliases=(repo, *aliases), **extra)


def _siglip_params(hidden: int = 1152, layers: int = 27, inter: int = 4304, patch: int = 14,
                   image: int = 896) -> int:
    """A SigLIP vision tower (Gemma 3's, https://huggingface.co/google/gemma-3-4b-pt config
    ``vision_config``): patch embedding, learned positions, biased ViT blocks, post-norm."""
    block = 4 * (hidden * hidden + hidden) + 2 * hidden * inter + inter + hidden + 4 * hidden
    return 3 * patch * patch * hidden + hidden + (image // patch) ** 2 * hidden + layers * block + 2 * hidden


def _gemma3_vision(text_hidden: int) -> int:
    # vision tower + Gemma 3's projector (an RMSNorm on the vision width and a projection matrix)
    return _siglip_params() + 1152 + 1152 * text_hidden


_LLAMA32 = dict(family="llama", tied_embeddings=True, max_positions=131072)
_QWEN2 = dict(family="qwen2", qkv_bias=True, max_positions=32768)
_QWEN3 = dict(family="qwen3", attn_head_dim=128, qk_norm=True, max_positions=40960)
_QWEN3_MOE = {**_QWEN3, "family": "qwen3_moe"}
_GEMMA2 = dict(family="gemma2", tied_embeddings=True, norms_per_layer=4, max_positions=8192)
_GEMMA3 = dict(tied_embeddings=True, norms_per_layer=4, qk_norm=True, attn_head_dim=256, max_positions=131072)
_PHI3 = dict(family="phi3", max_positions=4096)

_MODELS: list[ModelSpec] = [
    # --- Llama 2 / 3.x (Meta) -----------------------------------------------------------------
    _dense("Llama-2-7B", "meta-llama/Llama-2-7b-hf", 32, 4096, 11008, 32, 32, 32000, 6.74,
           "llama2-7b", "llama2 7b", "llama-7b", "llama-2-7b-chat"),
    _dense("Llama-2-13B", "meta-llama/Llama-2-13b-hf", 40, 5120, 13824, 40, 40, 32000, 13.0,
           "llama2-13b", "llama-13b", "llama2 13b"),
    _dense("Llama-2-70B", "meta-llama/Llama-2-70b-hf", 80, 8192, 28672, 64, 8, 32000, 69.0,
           "llama2-70b", "llama-70b", "llama2 70b"),
    _dense("Llama-3.1-8B", "meta-llama/Llama-3.1-8B", 32, 4096, 14336, 32, 8, 128256, 8.03,
           "llama3.1-8b", "llama-3-8b", "llama3-8b", "meta-llama-3.1-8b", "llama31-8b", "llama3 8b",
           "meta-llama/Meta-Llama-3-8B", "meta-llama-3-8b", "llama-3.1-8b-instruct", "llama 3 8b", "llama3.1 8b",
           max_positions=131072),
    _dense("Llama-3.1-70B", "meta-llama/Llama-3.1-70B", 80, 8192, 28672, 64, 8, 128256, 70.6,
           "llama3.1-70b", "llama-3-70b", "llama3-70b", "meta-llama-3.1-70b", "llama3 70b",
           "meta-llama/Meta-Llama-3-70B", "meta-llama-3-70b", "llama 3 70b", max_positions=131072),
    _dense("Llama-3.3-70B", "meta-llama/Llama-3.3-70B-Instruct", 80, 8192, 28672, 64, 8, 128256, 70.6,
           "llama3.3-70b", "llama-3.3-70b-instruct", "llama 3.3 70b", "llama33-70b", max_positions=131072),
    _dense("Llama-3.1-405B", "meta-llama/Llama-3.1-405B", 126, 16384, 53248, 128, 8, 128256, 406.0,
           "llama3.1-405b", "llama-405b", "llama3-405b", "llama 3.1 405b", "llama-3-405b",
           max_positions=131072),
    _dense("Llama-3.2-1B", "meta-llama/Llama-3.2-1B", 16, 2048, 8192, 32, 8, 128256, 1.24,
           "llama3.2-1b", "llama-3.2-1b-instruct", "llama 3.2 1b", "llama32-1b", attn_head_dim=64,
           **_LLAMA32),
    _dense("Llama-3.2-3B", "meta-llama/Llama-3.2-3B", 28, 3072, 8192, 24, 8, 128256, 3.21,
           "llama3.2-3b", "llama-3.2-3b-instruct", "llama 3.2 3b", "llama32-3b", attn_head_dim=128,
           **_LLAMA32),
    # --- Mistral ------------------------------------------------------------------------------
    _dense("Mistral-7B", "mistralai/Mistral-7B-v0.1", 32, 4096, 14336, 32, 8, 32000, 7.24,
           "mistral-7b-v0.1", "mistral7b", "mistral", "mistral-7b-instruct", "mistral 7b",
           family="mistral", max_positions=32768),
    _dense("Mistral-Nemo-12B", "mistralai/Mistral-Nemo-Base-2407", 40, 5120, 14336, 32, 8, 131072, 12.2,
           "mistral-nemo", "mistral nemo", "nemo-12b", "mistral-nemo-instruct-2407", "mistral-nemo-12b",
           attn_head_dim=128, family="mistral", max_positions=131072),
    _dense("Mistral-Small-24B", "mistralai/Mistral-Small-24B-Base-2501", 40, 5120, 32768, 32, 8, 131072, 23.6,
           "mistral-small", "mistral small", "mistral-small-24b", "mistral-small-24b-instruct-2501",
           "mistral-small-3", attn_head_dim=128, family="mistral", max_positions=32768),
    _dense("Mistral-Small-22B", "mistralai/Mistral-Small-Instruct-2409", 56, 6144, 16384, 48, 8, 32768, 22.2,
           "mistral-small-2409", "mistral-small-22b", family="mistral", max_positions=32768),
    # --- Qwen 1.5 / 2 / 2.5 / 3 (Alibaba) -------------------------------------------------------
    _dense("Qwen1.5-7B", "Qwen/Qwen1.5-7B", 32, 4096, 11008, 32, 32, 151936, 7.72,
           "qwen1.5 7b", "qwen1.5-7b-chat", **_QWEN2),
    _dense("Qwen1.5-14B", "Qwen/Qwen1.5-14B", 40, 5120, 13696, 40, 40, 152064, 14.2,
           "qwen1.5 14b", "qwen1.5-14b-chat", **_QWEN2),
    # Qwen (1): "Qwen-14B" is this model (14.2B), not Qwen2.5-14B; its config's intermediate_size
    # 27392 covers both SwiGLU branches (13696 each)
    _dense("Qwen-14B", "Qwen/Qwen-14B", 40, 5120, 13696, 40, 40, 152064, 14.2,
           "qwen-14b", "qwen14b", "qwen 14b", "qwen-14b-chat", **{**_QWEN2, "max_positions": 8192}),
    _dense("Qwen2.5-0.5B", "Qwen/Qwen2.5-0.5B", 24, 896, 4864, 14, 2, 151936, 0.494,
           "qwen2.5 0.5b", "qwen2-0.5b", "qwen2.5-0.5b-instruct", tied_embeddings=True, **_QWEN2),
    _dense("Qwen2.5-1.5B", "Qwen/Qwen2.5-1.5B", 28, 1536, 8960, 12, 2, 151936, 1.54,
           "qwen2.5 1.5b", "qwen2-1.5b", "qwen2.5-1.5b-instruct", tied_embeddings=True, **_QWEN2),
    _dense("Qwen2.5-3B", "Qwen/Qwen2.5-3B", 36, 2048, 11008, 16, 2, 151936, 3.09,
           "qwen2.5 3b", "qwen2.5-3b-instruct", tied_embeddings=True, **_QWEN2),
    _dense("Qwen2.5-7B", "Qwen/Qwen2.5-7B", 28, 3584, 18944, 28, 4, 152064, 7.62,
           "qwen2.5 7b", "qwen-7b", "qwen2-7b", "qwen7b", "qwen2 7b", "qwen2.5-7b-instruct",
           **{**_QWEN2, "max_positions": 131072}),
    _dense("Qwen2.5-14B", "Qwen/Qwen2.5-14B", 48, 5120, 13824, 40, 8, 152064, 14.8,
           "qwen2.5 14b", "qwen2.5-14b-instruct", **{**_QWEN2, "max_positions": 131072}),
    _dense("Qwen2.5-32B", "Qwen/Qwen2.5-32B", 64, 5120, 27648, 40, 8, 152064, 32.8,
           "qwen2.5 32b", "qwen-32b", "qwen2.5-32b-instruct", "qwq-32b", **{**_QWEN2, "max_positions": 131072}),
    _dense("Qwen2.5-72B", "Qwen/Qwen2.5-72B", 80, 8192, 29568, 64, 8, 152064, 72.7,
           "qwen2.5 72b", "qwen-72b", "qwen72b", "qwen2-72b", "qwen2.5-72b-instruct",
           **{**_QWEN2, "max_positions": 131072}),
    _dense("Qwen3-0.6B", "Qwen/Qwen3-0.6B", 28, 1024, 3072, 16, 8, 151936, 0.596,
           "qwen3 0.6b", "qwen3-0.6b-base", tied_embeddings=True, **_QWEN3),
    _dense("Qwen3-1.7B", "Qwen/Qwen3-1.7B", 28, 2048, 6144, 16, 8, 151936, 1.72,
           "qwen3 1.7b", "qwen3-1.7b-base", tied_embeddings=True, **_QWEN3),
    _dense("Qwen3-4B", "Qwen/Qwen3-4B", 36, 2560, 9728, 32, 8, 151936, 4.02,
           "qwen3 4b", "qwen3-4b-base", tied_embeddings=True, **_QWEN3),
    _dense("Qwen3-8B", "Qwen/Qwen3-8B", 36, 4096, 12288, 32, 8, 151936, 8.19,
           "qwen3 8b", "qwen3-8b-base", **_QWEN3),
    _dense("Qwen3-14B", "Qwen/Qwen3-14B", 40, 5120, 17408, 40, 8, 151936, 14.8,
           "qwen3 14b", "qwen3-14b-base", **_QWEN3),
    _dense("Qwen3-32B", "Qwen/Qwen3-32B", 64, 5120, 25600, 64, 8, 151936, 32.8,
           "qwen3 32b", **_QWEN3),
    # --- Gemma (Google): GeGLU MLP, tied embeddings, 4 norms per block from Gemma 2 on --------------
    _dense("Gemma-2-2B", "google/gemma-2-2b", 26, 2304, 9216, 8, 4, 256000, 2.61,
           "gemma2-2b", "gemma 2 2b", "gemma-2-2b-it", attn_head_dim=256, **_GEMMA2),
    _dense("Gemma-2-9B", "google/gemma-2-9b", 42, 3584, 14336, 16, 8, 256000, 9.24,
           "gemma2-9b", "gemma 2 9b", "gemma-2-9b-it", attn_head_dim=256, **_GEMMA2),
    _dense("Gemma-2-27B", "google/gemma-2-27b", 46, 4608, 36864, 32, 16, 256000, 27.2,
           "gemma2-27b", "gemma 2 27b", "gemma-2-27b-it", attn_head_dim=128, **_GEMMA2),
    _dense("Gemma-3-1B", "google/gemma-3-1b-pt", 26, 1152, 6912, 4, 1, 262144, 1.00,
           "gemma3-1b", "gemma 3 1b", "gemma-3-1b-it", "gemma-3-1b", family="gemma3_text", **_GEMMA3),
    _dense("Gemma-3-4B", "google/gemma-3-4b-pt", 34, 2560, 10240, 8, 4, 262208, 4.30,
           "gemma3-4b", "gemma 3 4b", "gemma-3-4b-it", "gemma-3-4b", family="gemma3", kind="vlm",
           extra_params=_gemma3_vision(2560), extra_params_note="SigLIP vision tower + projector", **_GEMMA3),
    _dense("Gemma-3-12B", "google/gemma-3-12b-pt", 48, 3840, 15360, 16, 8, 262208, 12.2,
           "gemma3-12b", "gemma 3 12b", "gemma-3-12b-it", "gemma-3-12b", family="gemma3", kind="vlm",
           extra_params=_gemma3_vision(3840), extra_params_note="SigLIP vision tower + projector", **_GEMMA3),
    _dense("Gemma-3-27B", "google/gemma-3-27b-pt", 62, 5376, 21504, 32, 16, 262208, 27.4,
           "gemma3-27b", "gemma 3 27b", "gemma-3-27b-it", "gemma-3-27b", family="gemma3", kind="vlm",
           extra_params=_gemma3_vision(5376), extra_params_note="SigLIP vision tower + projector",
           **{**_GEMMA3, "attn_head_dim": 128}),
    # --- Phi (Microsoft) ------------------------------------------------------------------------
    _dense("Phi-3-mini", "microsoft/Phi-3-mini-4k-instruct", 32, 3072, 8192, 32, 32, 32064, 3.82,
           "phi3-mini", "phi-3-mini-4k", "phi-3.5-mini", "phi3.5-mini", "phi-3-mini-128k-instruct",
           "phi-3.5-mini-instruct", **_PHI3),
    _dense("Phi-3-medium", "microsoft/Phi-3-medium-4k-instruct", 40, 5120, 17920, 40, 10, 32064, 14.0,
           "phi3-medium", "phi-3-medium-4k", "phi-3-medium-128k-instruct", **_PHI3),
    _dense("Phi-4", "microsoft/phi-4", 40, 5120, 17920, 40, 10, 100352, 14.7,
           "phi4", "phi 4", "phi-4-14b", **{**_PHI3, "max_positions": 16384}),
    # --- Yi (01.AI), Baichuan 2, GLM-4 -------------------------------------------------------------
    _dense("Yi-6B", "01-ai/Yi-6B", 32, 4096, 11008, 32, 4, 64000, 6.06, "yi 6b", "yi-6b-chat"),
    _dense("Yi-1.5-9B", "01-ai/Yi-1.5-9B", 48, 4096, 11008, 32, 4, 64000, 8.83,
           "yi1.5-9b", "yi 1.5 9b", "yi-1.5-9b-chat"),
    _dense("Yi-34B", "01-ai/Yi-34B", 60, 7168, 20480, 56, 8, 64000, 34.4, "yi 34b", "yi-34b-chat",
           "yi-1.5-34b"),
    _dense("Baichuan2-7B", "baichuan-inc/Baichuan2-7B-Base", 32, 4096, 11008, 32, 32, 125696, 7.51,
           "baichuan2 7b", "baichuan2-7b-chat", family="baichuan"),
    # Baichuan (1): "baichuan-7B" is this model (7,000,559,616 parameters, its README), not Baichuan2-7B
    _dense("Baichuan-7B", "baichuan-inc/Baichuan-7B", 32, 4096, 11008, 32, 32, 64000, 7.0,
           "baichuan-7b", "baichuan 7b", "baichuan7b", family="baichuan", max_positions=4096),
    _dense("Baichuan2-13B", "baichuan-inc/Baichuan2-13B-Base", 40, 5120, 13696, 40, 40, 125696, 13.9,
           "baichuan2 13b", "baichuan2-13b-chat", "baichuan-13b", family="baichuan",
           notes="ALiBi positions instead of rotary (same parameter count)"),
    _dense("GLM-4-9B", "THUDM/glm-4-9b-hf", 40, 4096, 13696, 32, 2, 151552, 9.40,
           "glm4-9b", "glm-4-9b-chat", "glm 4 9b", "glm-4", "chatglm4-9b", family="glm", qkv_bias=True,
           attn_head_dim=128, max_positions=131072),
    _dense("ChatGLM3-6B", "THUDM/chatglm3-6b", 28, 4096, 13696, 32, 2, 65024, 6.24,
           "chatglm3", "chatglm3 6b", "chatglm-6b", family="chatglm", qkv_bias=True, attn_head_dim=128,
           max_positions=8192),
    # --- Mixture of experts ---------------------------------------------------------------------
    _dense("Mixtral-8x7B", "mistralai/Mixtral-8x7B-v0.1", 32, 4096, 14336, 32, 8, 32000, 46.7,
           "mixtral", "mixtral 8x7b", "mixtral-8x7b-instruct-v0.1", "mixtral-8x7b-instruct", kind="moe",
           family="mixtral", n_experts=8, experts_per_token=2, moe_intermediate=14336,
           published_active_b=12.9, max_positions=32768),
    _dense("Mixtral-8x22B", "mistralai/Mixtral-8x22B-v0.1", 56, 6144, 16384, 48, 8, 32768, 141.0,
           "mixtral 8x22b", "mixtral-8x22b-instruct-v0.1", kind="moe", family="mixtral", n_experts=8,
           experts_per_token=2, moe_intermediate=16384, published_active_b=39.0, max_positions=65536),
    _dense("Qwen1.5-MoE-A2.7B", "Qwen/Qwen1.5-MoE-A2.7B", 24, 2048, 5632, 16, 16, 151936, 14.3,
           "qwen1.5-moe", "qwen-moe", "qwen1.5-moe-a2.7b-chat", "qwen2-moe", kind="moe", family="qwen2_moe",
           qkv_bias=True, n_experts=60, experts_per_token=4, moe_intermediate=1408,
           shared_expert_intermediate=5632, published_active_b=2.7, max_positions=8192),
    _dense("Qwen3-30B-A3B", "Qwen/Qwen3-30B-A3B", 48, 2048, 6144, 32, 4, 151936, 30.5,
           "qwen3 30b", "qwen3-30b", "qwen3 30b a3b", "qwen3-30b-a3b-instruct-2507", "qwen3-moe",
           kind="moe", n_experts=128, experts_per_token=8, moe_intermediate=768,
           published_active_b=3.3, **_QWEN3_MOE),
    _dense("Qwen3-235B-A22B", "Qwen/Qwen3-235B-A22B", 94, 4096, 12288, 64, 4, 151936, 235.0,
           "qwen3 235b", "qwen3-235b", "qwen3 235b a22b", "qwen3-235b-a22b-instruct-2507", kind="moe",
           n_experts=128, experts_per_token=8, moe_intermediate=1536,
           published_active_b=22.0, **_QWEN3_MOE),
    _dense("DeepSeek-V2-Lite", "deepseek-ai/DeepSeek-V2-Lite", 27, 2048, 10944, 16, 16, 102400, 15.7,
           "deepseek-v2-lite", "deepseek v2 lite", "deepseek-v2-lite-chat", kind="moe", family="deepseek_v2",
           n_experts=64, experts_per_token=6, moe_intermediate=1408, n_shared_experts=2, first_k_dense=1,
           kv_lora_rank=512, qk_nope_head_dim=128, qk_rope_head_dim=64, v_head_dim=128,
           published_active_b=2.4, max_positions=163840,
           notes="DeepSeek's 2.4B activated leaves out the input embedding table"),
    # --- MPT, OPT, GPT-2 ------------------------------------------------------------------------
    ModelSpec("MPT-7B", "gpt2", 32, 4096, 16384, 32, 32, 50432, tied_embeddings=True, max_positions=2048,
              position_table=0, published_params_b=6.65, source_url=_cfg("mosaicml/mpt-7b"), family="mpt",
              aliases=("mosaicml/mpt-7b", "mpt 7b", "mpt-7b-instruct", "mpt7b"),
              notes="ALiBi positions, no biases, LayerNorm without bias", norm_bias=False),
    ModelSpec("OPT-6.7B", "opt", 32, 4096, 16384, 32, 32, 50272, tied_embeddings=True,
              max_positions=2048, published_params_b=6.66, source_url=_cfg("facebook/opt-6.7b"), family="opt",
              aliases=("opt-6.7b", "opt6.7b", "facebook/opt-6.7b")),
    ModelSpec("GPT-2", "gpt2", 12, 768, 3072, 12, 12, 50257, tied_embeddings=True,
              max_positions=1024, published_params_b=0.124, source_url=_cfg("openai-community/gpt2"),
              family="gpt2", aliases=("gpt2-small", "gpt2-124m", "gpt-2-small", "openai-community/gpt2")),
    ModelSpec("GPT-2 Medium", "gpt2", 24, 1024, 4096, 16, 16, 50257, tied_embeddings=True,
              max_positions=1024, published_params_b=0.355, source_url=_cfg("openai-community/gpt2-medium"),
              family="gpt2", aliases=("gpt2-medium", "gpt2-355m", "openai-community/gpt2-medium")),
    ModelSpec("GPT-2 Large", "gpt2", 36, 1280, 5120, 20, 20, 50257, tied_embeddings=True,
              max_positions=1024, published_params_b=0.774, source_url=_cfg("openai-community/gpt2-large"),
              family="gpt2", aliases=("gpt2-large", "gpt2-774m", "openai-community/gpt2-large")),
    ModelSpec("GPT-2 XL", "gpt2", 48, 1600, 6400, 25, 25, 50257, tied_embeddings=True,
              max_positions=1024, published_params_b=1.56, source_url=_cfg("openai-community/gpt2-xl"),
              family="gpt2", aliases=("gpt2-xl", "gpt2-1.5b", "gpt-2-xl", "openai-community/gpt2-xl"),
              notes="sold as 1.5B; the checkpoint holds 1.558B"),
    # --- BLOOM: ALiBi (no position table), a LayerNorm after the embeddings, biased GELU blocks, and a
    # 250,880-token vocabulary whose logits decide the activations at any micro-batch above one.
    # Published counts from the model cards (e.g. https://huggingface.co/bigscience/bloom-7b1:
    # 7,069,016,064 parameters); the computed ones match them exactly.
    ModelSpec("BLOOM-560M", "gpt2", 24, 1024, 4096, 16, 16, 250880, tied_embeddings=True, max_positions=2048,
              position_table=0, embed_norm=True, eager_attention=True, published_params_b=0.559, source_url=_cfg("bigscience/bloom-560m"),
              family="bloom", aliases=("bigscience/bloom-560m", "bloom-560m", "bloomz-560m", "bloom 560m")),
    ModelSpec("BLOOM-1B7", "gpt2", 24, 2048, 8192, 16, 16, 250880, tied_embeddings=True, max_positions=2048,
              position_table=0, embed_norm=True, eager_attention=True, published_params_b=1.722, source_url=_cfg("bigscience/bloom-1b7"),
              family="bloom", aliases=("bigscience/bloom-1b7", "bloom-1b7", "bloomz-1b7", "bloom 1b7")),
    ModelSpec("BLOOM-3B", "gpt2", 30, 2560, 10240, 32, 32, 250880, tied_embeddings=True, max_positions=2048,
              position_table=0, embed_norm=True, eager_attention=True, published_params_b=3.003, source_url=_cfg("bigscience/bloom-3b"),
              family="bloom", aliases=("bigscience/bloom-3b", "bloom-3b", "bloomz-3b", "bloom 3b")),
    ModelSpec("BLOOM-7B1", "gpt2", 30, 4096, 16384, 32, 32, 250880, tied_embeddings=True, max_positions=2048,
              position_table=0, embed_norm=True, eager_attention=True, published_params_b=7.069, source_url=_cfg("bigscience/bloom-7b1"),
              family="bloom", aliases=("bigscience/bloom-7b1", "bloom-7b1", "bloomz-7b1", "bloom 7b", "bloom-7b",
                                       "bloomz-7b1-mt", "7b bloom", "7b1 bloom"),
              notes="'7b bloom' as DeepSpeedExamples#411 writes it"),
    ModelSpec("BLOOM-176B", "gpt2", 70, 14336, 57344, 112, 112, 250880, tied_embeddings=True, max_positions=2048,
              position_table=0, embed_norm=True, eager_attention=True, published_params_b=176.247, source_url=_cfg("bigscience/bloom"),
              family="bloom", aliases=("bigscience/bloom", "bloom-176b", "bloom 176b", "bloomz", "bloom")),
    # --- Encoders and encoder-decoders (exact counts; memory treats blocks GPT-2-like) -------------
    ModelSpec("BERT-base", "gpt2", 12, 768, 3072, 12, 12, 30522, max_positions=512, kind="encoder",
              family="bert", type_vocab=2, pooler=True, embed_norm=True, position_table=512,
              published_params_b=0.1095, source_url=_cfg("google-bert/bert-base-uncased"),
              aliases=("bert-base-uncased", "bert-base-cased", "bert base", "bert", "google-bert/bert-base-uncased",
                       "bert-base-chinese")),
    ModelSpec("BERT-large", "gpt2", 24, 1024, 4096, 16, 16, 30522, max_positions=512, kind="encoder",
              family="bert", type_vocab=2, pooler=True, embed_norm=True, position_table=512,
              published_params_b=0.335, source_url=_cfg("google-bert/bert-large-uncased"),
              aliases=("bert-large-uncased", "bert-large-cased", "bert large", "google-bert/bert-large-uncased"),
              notes="the BERT paper rounds it to 340M"),
    ModelSpec("RoBERTa-base", "gpt2", 12, 768, 3072, 12, 12, 50265, max_positions=514, kind="encoder",
              family="roberta", type_vocab=1, pooler=True, embed_norm=True, position_table=514,
              published_params_b=0.125, source_url=_cfg("FacebookAI/roberta-base"),
              aliases=("roberta-base", "roberta base", "roberta", "FacebookAI/roberta-base")),
    ModelSpec("RoBERTa-large", "gpt2", 24, 1024, 4096, 16, 16, 50265, max_positions=514, kind="encoder",
              family="roberta", type_vocab=1, pooler=True, embed_norm=True, position_table=514,
              published_params_b=0.355, source_url=_cfg("FacebookAI/roberta-large"),
              aliases=("roberta-large", "roberta large", "FacebookAI/roberta-large")),
    ModelSpec("T5-base", "t5", 24, 768, 3072, 12, 12, 32128, tied_embeddings=True, max_positions=512,
              kind="encoder_decoder", family="t5", n_decoder_layers=12, relative_buckets=32,
              gated_mlp=False, attn_bias=False, mlp_bias=False, norm_bias=False,
              published_params_b=0.223, source_url=_cfg("google-t5/t5-base"),
              aliases=("t5-base", "t5 base", "google-t5/t5-base"), notes="the T5 paper rounds it to 220M"),
    ModelSpec("T5-large", "t5", 48, 1024, 4096, 16, 16, 32128, tied_embeddings=True, max_positions=512,
              kind="encoder_decoder", family="t5", n_decoder_layers=24, relative_buckets=32,
              gated_mlp=False, attn_bias=False, mlp_bias=False, norm_bias=False,
              published_params_b=0.738, source_url=_cfg("google-t5/t5-large"),
              aliases=("t5-large", "t5 large", "google-t5/t5-large"), notes="the T5 paper rounds it to 770M"),
    # A few-million-parameter Llama-shaped model for real CPU benchmark runs and tests.
    ModelSpec("tiny", "llama", 2, 256, 688, 4, 4, 8192, max_positions=512, family="llama",
              source_url="https://github.com/pytorch/torchtitan (debug model idea; shape is ours)",
              aliases=("tiny-llama", "debug")),
]

# Typical (layers, hidden) pairs for Llama-style models by size, used to infer a shape for a
# bare parameter count. Sizes from the Llama 2/3 and GPT-3 papers
# (https://arxiv.org/abs/2307.09288 table 1, https://arxiv.org/abs/2005.14165 table 2.1).
_TYPICAL_SHAPES = [
    (0.125, 12, 768), (0.35, 24, 1024), (0.76, 24, 1536), (1.3, 24, 2048), (2.7, 32, 2560),
    (7.0, 32, 4096), (13.0, 40, 5120), (34.0, 48, 8192), (70.0, 80, 8192), (175.0, 96, 12288),
    (405.0, 126, 16384), (1000.0, 160, 25600),
]


def generic_model(params_b: float) -> ModelSpec:
    """An approximate Llama-style shape for a bare parameter count (e.g. "a 7B model").

    Hidden size comes from the nearest typical size (log scale); the layer count is then solved
    so the total matches ``params_b``. Good for memory estimates (within a few %), not a real
    checkpoint.
    """
    if not params_b > 0:
        raise ValueError("params_b must be positive")
    _, _, hidden = min(_TYPICAL_SHAPES, key=lambda s: abs(math.log(s[0] / params_b)))
    vocab = 32000
    heads = max(1, hidden // 128)
    kv_heads = heads if hidden <= 5120 else 8
    # SwiGLU width: 8/3*h (Llama 2 7B/13B); 3.5*h for the 70B-class shapes (Llama 2 70B config).
    ratio = 3.5 if hidden >= 8192 else 8 / 3
    intermediate = int(math.ceil(hidden * ratio / 256) * 256)
    probe = ModelSpec("generic", "llama", 1, hidden, intermediate, heads, kv_heads, vocab)
    target = params_b * 1e9
    while hidden > 64 and target < probe.embedding_params() + probe.layer_params():
        hidden //= 2  # a tiny model: shrink until one layer plus embeddings fits the budget
        heads, kv_heads = max(1, hidden // 64), max(1, hidden // 64)
        intermediate = int(math.ceil(hidden * 8 / 3 / 64) * 64)
        probe = ModelSpec("generic", "llama", 1, hidden, intermediate, heads, kv_heads, vocab)
    layers = max(1, round((target - probe.embedding_params()) / probe.layer_params()))
    label = f"{params_b:g}B" if params_b >= 1 else f"{params_b * 1000:g}M"
    return replace(probe, name=f"generic {label} (approximate shape)", n_layers=layers,
                   published_params_b=None, approximate=True, family="llama",
                   source_url="https://arxiv.org/abs/2307.09288")


def approximate_model(name: str, params_b: float, kind: Kind, *, source_url: str, aliases: tuple[str, ...] = (),
                      notes: str = "") -> ModelSpec:
    """A model whose architecture is not modelled (a VLM, a diffusion network): its published
    parameter count on a generic Llama-style shape, marked approximate. Weights, gradients and
    optimizer state follow from the count exactly; activations are a decoder's of that size."""
    shape = generic_model(params_b)
    return replace(shape, name=name, kind=kind, family=kind, published_params_b=params_b,
                   declared_params=round(params_b * 1e9), source_url=source_url, aliases=aliases,
                   notes=notes or "approximate: parameter count from the publisher, activations of a "
                                  "same-size decoder")


_MODELS += [
    approximate_model("Qwen2-VL-7B", 8.29, "vlm", source_url=_cfg("Qwen/Qwen2-VL-7B-Instruct"),
                      aliases=("Qwen/Qwen2-VL-7B-Instruct", "qwen2-vl-7b-instruct", "qwen2 vl 7b")),
    approximate_model("Qwen2.5-VL-7B", 8.29, "vlm", source_url=_cfg("Qwen/Qwen2.5-VL-7B-Instruct"),
                      aliases=("Qwen/Qwen2.5-VL-7B-Instruct", "qwen2.5-vl-7b-instruct", "qwen2.5 vl 7b")),
    approximate_model("LLaVA-1.5-7B", 7.06, "vlm", source_url=_cfg("llava-hf/llava-1.5-7b-hf"),
                      aliases=("llava-hf/llava-1.5-7b-hf", "llava-1.5-7b", "llava 7b", "llava")),
    approximate_model("SDXL UNet", 2.57, "diffusion",
                      source_url="https://huggingface.co/stabilityai/stable-diffusion-xl-base-1.0/blob/main/unet/config.json",
                      aliases=("sdxl", "stable-diffusion-xl", "stable diffusion xl", "sdxl-base-1.0")),
    approximate_model("Stable Diffusion 1.5 UNet", 0.86, "diffusion",
                      source_url="https://huggingface.co/stable-diffusion-v1-5/stable-diffusion-v1-5/blob/main/unet/config.json",
                      aliases=("sd1.5", "sd 1.5", "stable-diffusion-v1-5", "stable diffusion 1.5")),
    approximate_model("FLUX.1-dev", 11.9, "diffusion",
                      source_url="https://huggingface.co/black-forest-labs/FLUX.1-dev/blob/main/transformer/config.json",
                      aliases=("flux", "flux.1", "flux1-dev", "flux.1 dev", "black-forest-labs/FLUX.1-dev",
                               "flux.1-kontext-dev", "flux kontext")),
]


# --------------------------------------------------------------------------------------------
# Lookup
# --------------------------------------------------------------------------------------------

_SUFFIXES = re.compile(r"([-_ .](instruct|chat|it|hf|base|pt|pretrained))+$")


def _norm(text: str) -> str:
    """A lookup key: lower case, no organisation prefix, no -instruct/-chat/-hf/-base suffix."""
    text = text.lower().strip()
    if "/" in text:
        text = text.rsplit("/", 1)[1]
    text = _SUFFIXES.sub("", text)
    text = re.sub(r"^meta[-_ ]", "", text)
    return re.sub(r"[^a-z0-9.]", "", text)


_MODEL_INDEX: dict[str, ModelSpec] = {}
for _m in _MODELS:
    for _key in (_m.name, *_m.aliases):
        _MODEL_INDEX.setdefault(_norm(_key), _m)

_BARE_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([bm])\s*(?:params?|parameters?)?\s*$", re.I)


def list_models() -> list[ModelSpec]:
    return list(_MODELS)


def model_names() -> dict[str, str]:
    """Every name and alias a user may type -> the catalog name (for the parser)."""
    out: dict[str, str] = {}
    for m in _MODELS:
        for key in (m.name, *m.aliases):
            out.setdefault(key, m.name)
    return out


def lookup_model(name: str) -> ModelSpec:
    """Find a catalog model by name or alias; a bare size ("7b", "350M") gives a generic shape."""
    key = _norm(name)
    if key in _MODEL_INDEX:
        return _MODEL_INDEX[key]
    bare = _BARE_SIZE.match(name)
    if bare:
        size = float(bare.group(1)) / (1000 if bare.group(2).lower() == "m" else 1)
        if size > 0:
            return generic_model(size)
    hint = ("For a model the catalog lacks, pass its Hugging Face config.json (--config PATH, or "
            "paste it) or its parameter count.")
    raise UnknownNameError("model", name, suggest(key, _MODEL_INDEX, lambda m: m.name), hint=hint)
