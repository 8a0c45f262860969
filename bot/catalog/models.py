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
- approximate entries (vision-language, diffusion, vision backbones, speech, bare sizes): a
  declared parameter count on a generic Llama-style shape, marked ``approximate``.

The entries are data, ``bot/catalog/models.json`` (loaded once): every entry carries the URL of
the config its shape comes from and the parameter count its publisher gives. Lookups accept the
names people type (``llama3 8b instruct``, ``Qwen/Qwen2.5-7B-Instruct``, ``internlm2-chat-20b``,
``千问2.5-7B``, ``7b``), resolve a family and the size written in the name, return the family
alone when the size is missing (``resolve_model``), and suggest close names when nothing matches
(name rules: ``bot.catalog.names``).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, fields, replace
from importlib import resources
from typing import Literal

from bot.catalog.names import (
    UnknownNameError,
    build_families,
    norm_key,
    set_zh_names,
    size_billions,
    split_name,
    suggest,
)

Arch = Literal["llama", "gpt2", "opt", "t5"]

# What answers about MoE models should say about expert parallelism (issue 13), in our words.
EXPERT_PARALLEL_NOTE = (
    "Expert parallelism is outside DDP and FSDP: under FSDP every GPU holds 1/N of every expert "
    "and all-gathers a MoE block's experts in full (all of them, not only the active ones) for its "
    "forward and backward. Expert parallelism (Megatron, DeepSpeed-MoE, torchtitan) places whole "
    "experts on different GPUs and routes tokens to them with all-to-all: no expert all-gathers and "
    "per-GPU expert memory of experts/EP x expert size, at the cost of all-to-all traffic and load "
    "imbalance. These estimates do not model it.")
Kind = Literal["decoder", "moe", "encoder", "encoder_decoder", "vlm", "diffusion", "vision", "audio"]


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
# The catalog: entries are data (models.json, loaded once); the code here only reads them
# --------------------------------------------------------------------------------------------


def _cfg(repo: str) -> str:
    return f"https://huggingface.co/{repo}/blob/main/config.json"


def _siglip_params(hidden: int = 1152, layers: int = 27, inter: int = 4304, patch: int = 14,
                   image: int = 896) -> int:
    """A SigLIP vision tower (Gemma 3's, https://huggingface.co/google/gemma-3-4b-pt config
    ``vision_config``): patch embedding, learned positions, biased ViT blocks, post-norm."""
    block = 4 * (hidden * hidden + hidden) + 2 * hidden * inter + inter + hidden + 4 * hidden
    return 3 * patch * patch * hidden + hidden + (image // patch) ** 2 * hidden + layers * block + 2 * hidden


def _gemma3_vision(text_hidden: int) -> int:
    # vision tower + Gemma 3's projector (an RMSNorm on the vision width and a projection matrix)
    return _siglip_params() + 1152 + 1152 * text_hidden


# Parts a data entry names by formula rather than by a typed-in count ("extra_params": "...").
_EXTRA_FORMULAS = {"gemma3_vision": _gemma3_vision}

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



_SPEC_FIELDS = {f.name for f in fields(ModelSpec)}
_ENTRY_KEYS = {"name", "shape", "arch", "repo", "source", "published", "aliases", "preset", "approx_b", "kind",
               "notes", "extra_params"}


def _entry(raw: dict, presets: dict[str, dict]) -> ModelSpec:
    """One models.json entry -> ModelSpec. ``shape`` is [layers, hidden, ffn, heads, kv heads,
    vocab]; ``repo`` a Hugging Face repo (its config.json is the source, the repo an alias);
    ``preset`` a named group of shared fields; ``approx_b`` a params-only entry (approximate)."""
    unknown = set(raw) - _ENTRY_KEYS - _SPEC_FIELDS
    if unknown:
        raise ValueError(f"models.json entry {raw.get('name')!r}: unknown keys {sorted(unknown)}")
    repo = raw.get("repo")
    source = raw.get("source") or (_cfg(repo) if repo else "")
    aliases = tuple(([repo] if repo else []) + list(raw.get("aliases", ())))
    if "approx_b" in raw:
        return approximate_model(raw["name"], raw["approx_b"], raw["kind"], source_url=source, aliases=aliases,
                                 notes=raw.get("notes", ""))
    extra = {**presets.get(raw.get("preset", ""), {}),
             **{k: v for k, v in raw.items() if k in _SPEC_FIELDS and k not in ("name", "arch", "aliases")}}
    if isinstance(extra.get("extra_params"), str):
        extra["extra_params"] = _EXTRA_FORMULAS[extra["extra_params"]](raw["shape"][1])
    extra.setdefault("family", "llama")
    layers, hidden, ffn, heads, kv, vocab = raw["shape"]
    return ModelSpec(raw["name"], raw.get("arch", "llama"), layers, hidden, ffn, heads, kv, vocab,
                     published_params_b=raw.get("published"), source_url=source, aliases=aliases, **extra)


def _with_chinese_names(spec: ModelSpec, zh_names: dict[str, str]) -> ModelSpec:
    """``spec`` with its name also written with each Chinese family name whose Latin word begins
    it ("Qwen2.5-7B" -> "千问2.5-7B", "通义千问2.5-7B"), so that a reader scanning text for the
    catalog's names finds the Chinese spelling too. Names only, never a new entry."""
    extra = [zh + spec.name[len(word):] for zh, word in zh_names.items()
             if spec.name.lower().startswith(word) and not spec.name[len(word):len(word) + 1].isalpha()]
    return replace(spec, aliases=(*spec.aliases, *extra)) if extra else spec


def _load() -> tuple[list[ModelSpec], dict]:
    data = json.loads(resources.files("bot.catalog").joinpath("models.json").read_text(encoding="utf-8"))
    presets = data.get("presets", {})
    # the Chinese names people write as a product name in front of a version ("千问2.5-7B")
    zh = {name: data["zh_names"][name] for name in data.get("zh_name_prefixes", [])}
    return [_with_chinese_names(_entry(raw, presets), zh) for raw in data["models"]], data


_MODELS, _DATA = _load()
set_zh_names(_DATA.get("zh_names", {}))


# --------------------------------------------------------------------------------------------
# Lookup: exact names and aliases, then a family and the size written in the name
# --------------------------------------------------------------------------------------------

_norm = norm_key  # the lookup key (kept under its old name for callers and tests)


@dataclass(frozen=True)
class ModelFamily:
    """A model family as people name it ("InternLM2", "Qwen2.5-Coder"): the sizes the catalog
    has, each the catalog entry of that shape (an alias when it is another entry's shape)."""

    name: str
    members: tuple[tuple[str, str], ...]  # (size as written, "7B"; catalog name), smallest first

    @property
    def sizes(self) -> tuple[str, ...]:
        return tuple(size for size, _ in self.members)

    def member(self, size: str) -> ModelSpec | None:
        name = dict(self.members).get(size)
        return _BY_NAME[name] if name else None

    def describe(self) -> str:
        return f"{self.name} ({', '.join(self.sizes)})"


_MODEL_INDEX: dict[str, ModelSpec] = {}
for _m in _MODELS:
    for _key in (_m.name, *_m.aliases):
        if _norm(_key):
            _MODEL_INDEX.setdefault(_norm(_key), _m)
_BY_NAME = {m.name: m for m in _MODELS}
_FAMILY_INDEX: dict[str, ModelFamily] = {}
_records = build_families(((m.name, m.aliases, m.params_b) for m in _MODELS), _DATA.get("family_aliases", {}))
_seen: dict[int, ModelFamily] = {}
for _key, _rec in _records.items():
    if id(_rec) not in _seen:
        _seen[id(_rec)] = ModelFamily(_rec.name, tuple(sorted(_rec.members.items(), key=lambda kv: size_billions(kv[0]))))
    _FAMILY_INDEX[_key] = _seen[id(_rec)]

_BARE_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([bm])\s*(?:params?|parameters?)?\s*$", re.I)


@dataclass(frozen=True)
class ModelMatch:
    """What a model name resolves to: ``model`` when the catalog has it; ``family`` when the
    family is known (with or without the size); both None for a name the catalog cannot place."""

    model: ModelSpec | None
    family: ModelFamily | None


def list_models() -> list[ModelSpec]:
    return list(_MODELS)


def list_families() -> list[ModelFamily]:
    """Every family the catalog's names make, once each (by display name)."""
    return list({id(f): f for f in _FAMILY_INDEX.values()}.values())


def model_names() -> dict[str, str]:
    """Every name and alias a user may type -> the catalog name (for the parser)."""
    out: dict[str, str] = {}
    for m in _MODELS:
        for key in (m.name, *m.aliases):
            out.setdefault(key, m.name)
    return out


def family_names() -> dict[str, str]:
    """Every family key (normalised, as ``names.norm_key`` makes it) -> the family's name, and the
    Chinese family words ``names.latin`` rewrites (for a reader that scans text for families)."""
    return {key: fam.name for key, fam in _FAMILY_INDEX.items()}


def lookup_family(name: str) -> ModelFamily | None:
    """The family ``name`` belongs to ("internlm2", "InternLM2 20B", "书生·浦语2"), else None."""
    parts = split_name(name)
    return _FAMILY_INDEX.get(parts.family_key) if parts else _FAMILY_INDEX.get(_norm(name))


def resolve_model(name: str) -> ModelMatch:
    """A catalog entry by name or alias, else by family and the size written in the name
    ("internlm2-chat-20b", "Yi-1.5-34B", "千问2.5 7B"); a family without a (known) size gives the
    family alone; a name the catalog cannot place gives neither."""
    key = _norm(name)
    if key in _MODEL_INDEX:
        exact = _MODEL_INDEX[key]
        return ModelMatch(exact, lookup_family(name) or lookup_family(exact.name))
    parts = split_name(name)
    family = _FAMILY_INDEX.get(parts.family_key) if parts else None
    if family is None and parts is None:
        family = _FAMILY_INDEX.get(key)
    model = family.member(parts.size) if family and parts and parts.size else None
    return ModelMatch(model, family)


def lookup_model(name: str) -> ModelSpec:
    """Find a catalog model by name, alias or family and size; a bare size ("7b", "350M") gives a
    generic shape. Raises ``UnknownNameError`` (with ``family`` set when the family is known)."""
    match = resolve_model(name)
    if match.model is not None:
        return match.model
    bare = _BARE_SIZE.match(name)
    if bare:
        size = float(bare.group(1)) / (1000 if bare.group(2).lower() == "m" else 1)
        if size > 0:
            return generic_model(size)
    key = _norm(name)
    hint = ("For a model the catalog lacks, pass its Hugging Face config.json (--config PATH, or "
            "paste it) or its parameter count.")
    if match.family is not None:
        hint = f"{match.family.name} comes in {', '.join(match.family.sizes)}: which size? " + hint
    raise UnknownNameError("model", name, suggest(key, _MODEL_INDEX, lambda m: m.name), hint=hint,
                           family=match.family)
