"""Model and GPU catalogs: architectures (parameter counts derived from shape) and GPU specs.

Every entry carries the URL its figures come from. Lookups accept the names people type
(``llama2-7b``, ``Llama-2-7b-hf``, ``7b``, ``A100 80G``, ``4090``) and suggest close names when
nothing matches.
"""

from __future__ import annotations

import difflib
import math
import re
from dataclasses import dataclass, field, replace
from typing import Literal


class UnknownNameError(LookupError):
    """An unknown model or GPU name; ``suggestions`` holds the closest catalog names."""

    def __init__(self, kind: str, name: str, suggestions: list[str]):
        self.kind, self.name, self.suggestions = kind, name, suggestions
        hint = f" Did you mean: {', '.join(suggestions)}?" if suggestions else ""
        super().__init__(f"unknown {kind} {name!r}.{hint}")


# --------------------------------------------------------------------------------------------
# Models
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ModelSpec:
    """A decoder-only transformer's shape; ``params`` is computed from it, never typed in."""

    name: str
    arch: Literal["llama", "gpt2", "opt"]
    n_layers: int
    hidden: int
    intermediate: int
    n_heads: int
    n_kv_heads: int
    vocab: int
    tied_embeddings: bool = False
    qkv_bias: bool = False  # Qwen2 family: bias on q/k/v projections
    max_positions: int = 4096  # learned position table size (gpt2/opt); informational for llama
    published_params_b: float | None = None
    source_url: str = ""
    aliases: tuple[str, ...] = ()
    approximate: bool = False  # True for the generic "N B parameters" entry

    @property
    def head_dim(self) -> int:
        return self.hidden // self.n_heads

    @property
    def kv_dim(self) -> int:
        return self.n_kv_heads * self.head_dim

    def layer_params(self) -> int:
        """Parameters in one transformer block."""
        h, i, kv = self.hidden, self.intermediate, self.kv_dim
        if self.arch == "llama":
            # Llama: q,o are h x h; k,v are h x kv_dim (GQA); SwiGLU MLP has 3 matrices h x i;
            # two RMSNorm weights. https://arxiv.org/abs/2307.09288 (Llama 2, sec. 2.2)
            attn = 2 * h * h + 2 * h * kv
            if self.qkv_bias:
                attn += h + 2 * kv
            return attn + 3 * h * i + 2 * h
        # GPT-2 / OPT: biased q,k,v,o and a 2-matrix GELU/ReLU MLP, two LayerNorms (weight+bias).
        # https://huggingface.co/docs/transformers/model_doc/gpt2 , /model_doc/opt
        attn = 4 * h * h + 4 * h
        mlp = 2 * h * i + i + h
        return attn + mlp + 4 * h

    def embedding_params(self) -> int:
        """Token embedding, learned positions, final norm and (untied) LM head."""
        h = self.hidden
        total = self.vocab * h
        if self.arch == "llama":
            total += h  # final RMSNorm
        else:
            offset = 2 if self.arch == "opt" else 0  # OPT's position table has a +2 offset
            total += (self.max_positions + offset) * h + 2 * h  # positions + final LayerNorm
        if not self.tied_embeddings:
            total += self.vocab * h
        return total

    @property
    def params(self) -> int:
        return self.n_layers * self.layer_params() + self.embedding_params()

    @property
    def params_b(self) -> float:
        return self.params / 1e9

    def largest_unit_params(self) -> int:
        """The biggest FSDP unit when each block is wrapped: a block or the embedding/head."""
        embed = self.vocab * self.hidden
        return max(self.layer_params(), embed)


_LLAMA2 = "https://huggingface.co/meta-llama/Llama-2-7b-hf/blob/main/config.json"
_MODELS: list[ModelSpec] = [
    ModelSpec("Llama-2-7B", "llama", 32, 4096, 11008, 32, 32, 32000, published_params_b=6.74,
              source_url=_LLAMA2, aliases=("llama2-7b", "llama-2-7b-hf", "llama2 7b", "llama-7b")),
    ModelSpec("Llama-2-13B", "llama", 40, 5120, 13824, 40, 40, 32000, published_params_b=13.0,
              source_url="https://huggingface.co/meta-llama/Llama-2-13b-hf/blob/main/config.json",
              aliases=("llama2-13b", "llama-2-13b-hf", "llama-13b")),
    ModelSpec("Llama-2-70B", "llama", 80, 8192, 28672, 64, 8, 32000, published_params_b=69.0,
              source_url="https://huggingface.co/meta-llama/Llama-2-70b-hf/blob/main/config.json",
              aliases=("llama2-70b", "llama-2-70b-hf", "llama-70b")),
    ModelSpec("Llama-3.1-8B", "llama", 32, 4096, 14336, 32, 8, 128256, published_params_b=8.03,
              source_url="https://huggingface.co/meta-llama/Llama-3.1-8B/blob/main/config.json",
              aliases=("llama3.1-8b", "llama-3-8b", "llama3-8b", "meta-llama-3.1-8b", "llama31-8b")),
    ModelSpec("Llama-3.1-70B", "llama", 80, 8192, 28672, 64, 8, 128256, published_params_b=70.6,
              source_url="https://huggingface.co/meta-llama/Llama-3.1-70B/blob/main/config.json",
              aliases=("llama3.1-70b", "llama-3-70b", "llama3-70b", "meta-llama-3.1-70b")),
    ModelSpec("Mistral-7B", "llama", 32, 4096, 14336, 32, 8, 32000, published_params_b=7.24,
              max_positions=32768,
              source_url="https://huggingface.co/mistralai/Mistral-7B-v0.1/blob/main/config.json",
              aliases=("mistral-7b-v0.1", "mistral7b", "mistral")),
    ModelSpec("Qwen2.5-7B", "llama", 28, 3584, 18944, 28, 4, 152064, qkv_bias=True,
              published_params_b=7.62, max_positions=131072,
              source_url="https://huggingface.co/Qwen/Qwen2.5-7B/blob/main/config.json",
              aliases=("qwen2.5 7b", "qwen-7b", "qwen2-7b", "qwen7b", "qwen2.5-7b-instruct")),
    ModelSpec("Qwen2.5-14B", "llama", 48, 5120, 13824, 40, 8, 152064, qkv_bias=True,
              published_params_b=14.7, max_positions=131072,
              source_url="https://huggingface.co/Qwen/Qwen2.5-14B/blob/main/config.json",
              aliases=("qwen2.5 14b", "qwen-14b", "qwen14b", "qwen2.5-14b-instruct")),
    ModelSpec("Qwen2.5-72B", "llama", 80, 8192, 29568, 64, 8, 152064, qkv_bias=True,
              published_params_b=72.7, max_positions=131072,
              source_url="https://huggingface.co/Qwen/Qwen2.5-72B/blob/main/config.json",
              aliases=("qwen2.5 72b", "qwen-72b", "qwen72b", "qwen2.5-72b-instruct")),
    ModelSpec("OPT-6.7B", "opt", 32, 4096, 16384, 32, 32, 50272, tied_embeddings=True,
              max_positions=2048, published_params_b=6.7,
              source_url="https://huggingface.co/facebook/opt-6.7b/blob/main/config.json",
              aliases=("opt-6.7b", "opt6.7b", "facebook/opt-6.7b")),
    ModelSpec("GPT-2", "gpt2", 12, 768, 3072, 12, 12, 50257, tied_embeddings=True,
              max_positions=1024, published_params_b=0.124,
              source_url="https://huggingface.co/openai-community/gpt2/blob/main/config.json",
              aliases=("gpt2-small", "gpt2-124m", "gpt-2-small")),
    ModelSpec("GPT-2 Medium", "gpt2", 24, 1024, 4096, 16, 16, 50257, tied_embeddings=True,
              max_positions=1024, published_params_b=0.355,
              source_url="https://huggingface.co/openai-community/gpt2-medium/blob/main/config.json",
              aliases=("gpt2-medium", "gpt2-355m")),
    ModelSpec("GPT-2 Large", "gpt2", 36, 1280, 5120, 20, 20, 50257, tied_embeddings=True,
              max_positions=1024, published_params_b=0.774,
              source_url="https://huggingface.co/openai-community/gpt2-large/blob/main/config.json",
              aliases=("gpt2-large", "gpt2-774m")),
    ModelSpec("GPT-2 XL", "gpt2", 48, 1600, 6400, 25, 25, 50257, tied_embeddings=True,
              max_positions=1024, published_params_b=1.5,
              source_url="https://huggingface.co/openai-community/gpt2-xl/blob/main/config.json",
              aliases=("gpt2-xl", "gpt2-1.5b", "gpt-2-xl")),
    # A few-million-parameter Llama-shaped model for real CPU benchmark runs and tests.
    ModelSpec("tiny", "llama", 2, 256, 688, 4, 4, 8192, max_positions=512,
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
                   published_params_b=None, approximate=True,
                   source_url="https://arxiv.org/abs/2307.09288")


def _norm(text: str) -> str:
    text = text.lower().strip()
    for noise in ("meta-llama/", "mistralai/", "qwen/", "facebook/", "openai-community/", "-hf",
                  "-base"):
        text = text.replace(noise, "")
    return re.sub(r"[^a-z0-9.]", "", text)


_MODEL_INDEX: dict[str, ModelSpec] = {}
for _m in _MODELS:
    for _key in (_m.name, *_m.aliases):
        _MODEL_INDEX[_norm(_key)] = _m

_BARE_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([bm])\s*(?:params?|parameters?)?\s*$", re.I)


def list_models() -> list[ModelSpec]:
    return list(_MODELS)


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
    close = difflib.get_close_matches(key, list(_MODEL_INDEX), n=5, cutoff=0.6)
    names = list(dict.fromkeys(_MODEL_INDEX[c].name for c in close))[:3]
    raise UnknownNameError("model", name, names)


# --------------------------------------------------------------------------------------------
# GPUs
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GPUSpec:
    """One GPU model. Link bandwidth is per GPU, per direction, in GB/s (10^9 bytes)."""

    name: str
    memory_gb: float  # nominal card size as marketed (80 for an "80GB" card)
    bf16_tflops: float  # dense (no sparsity) bf16 tensor-core peak; fp16 where bf16 is absent
    hbm_tb_s: float
    intra_link: Literal["nvlink", "pcie"]
    intra_link_name: str
    intra_link_gb_s: float
    supports_bf16: bool = True
    source_url: str = ""
    aliases: tuple[str, ...] = field(default_factory=tuple)

    @property
    def memory_gib(self) -> float:
        """Usable bytes as GiB. Cards sold as "80GB" hold 80 GiB of HBM (nvidia-smi: 81920 MiB)."""
        return self.memory_gb


_A100 = "https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf"
_H100 = "https://www.nvidia.com/en-us/data-center/h100/"
_GPUS: list[GPUSpec] = [
    GPUSpec("A100 40GB SXM", 40, 312, 1.555, "nvlink", "NVLink 3 (600 GB/s total)", 300, source_url=_A100,
            aliases=("a100-40gb", "a100 40g", "a100-40g", "a100 40", "a100-sxm4-40gb")),
    GPUSpec("A100 80GB SXM", 80, 312, 2.039, "nvlink", "NVLink 3 (600 GB/s total)", 300, source_url=_A100,
            aliases=("a100-80gb", "a100 80g", "a100", "a100-sxm4-80gb", "a100 80")),
    GPUSpec("A100 80GB PCIe", 80, 312, 1.935, "pcie", "PCIe Gen4 x16", 32, source_url=_A100,
            aliases=("a100-80gb-pcie", "a100 pcie")),
    GPUSpec("H100 80GB SXM", 80, 989, 3.35, "nvlink", "NVLink 4 (900 GB/s total)", 450, source_url=_H100,
            aliases=("h100", "h100-80gb", "h100 sxm", "h100-sxm", "h100 80g", "h100-sxm5-80gb")),
    GPUSpec("H100 80GB PCIe", 80, 756, 2.0, "pcie", "PCIe Gen5 x16", 64, source_url=_H100,
            aliases=("h100-pcie", "h100 pcie", "h100-80gb-pcie")),
    GPUSpec("H200 141GB SXM", 141, 989, 4.8, "nvlink", "NVLink 4 (900 GB/s total)", 450,
            source_url="https://www.nvidia.com/en-us/data-center/h200/",
            aliases=("h200", "h200-141gb", "h200 141g", "h200 sxm")),
    GPUSpec("A10 24GB", 24, 125, 0.6, "pcie", "PCIe Gen4 x16", 32,
            source_url="https://www.nvidia.com/en-us/data-center/products/a10-gpu/",
            aliases=("a10", "a10-24gb", "a10 24g")),
    GPUSpec("V100 16GB SXM2", 16, 125, 0.9, "nvlink", "NVLink 2 (300 GB/s total)", 150, supports_bf16=False,
            source_url="https://images.nvidia.com/content/technologies/volta/pdf/volta-v100-datasheet-update-us-1165301-r5.pdf",
            aliases=("v100-16gb", "v100 16g", "v100-16g")),
    GPUSpec("V100 32GB SXM2", 32, 125, 0.9, "nvlink", "NVLink 2 (300 GB/s total)", 150, supports_bf16=False,
            source_url="https://images.nvidia.com/content/technologies/volta/pdf/volta-v100-datasheet-update-us-1165301-r5.pdf",
            aliases=("v100", "v100-32gb", "v100 32g", "v100-32g")),
    GPUSpec("L40S 48GB", 48, 362, 0.864, "pcie", "PCIe Gen4 x16", 32,
            source_url="https://www.nvidia.com/en-us/data-center/l40s/",
            aliases=("l40s", "l40s-48gb", "l40s 48g")),
    GPUSpec("RTX 4090 24GB", 24, 165.2, 1.008, "pcie", "PCIe Gen4 x16 (no P2P)", 32,
            source_url="https://images.nvidia.com/aem-dam/Solutions/geforce/ada/nvidia-ada-gpu-architecture.pdf",
            aliases=("4090", "rtx4090", "rtx 4090", "geforce rtx 4090", "4090 24g")),
    GPUSpec("RTX 3090 24GB", 24, 71, 0.936, "pcie", "PCIe Gen4 x16", 32,
            source_url="https://images.nvidia.com/aem-dam/en-zz/Solutions/geforce/ampere/pdf/NVIDIA-ampere-GA102-GPU-Architecture-Whitepaper-V1.pdf",
            aliases=("3090", "rtx3090", "rtx 3090", "geforce rtx 3090", "3090 24g")),
    GPUSpec("A800 80GB SXM", 80, 312, 2.039, "nvlink", "NVLink 3, export variant (400 GB/s total)", 200,
            source_url="https://www.nvidia.cn/data-center/a800/",
            aliases=("a800", "a800-80gb", "a800 80g")),
    GPUSpec("H800 80GB SXM", 80, 989, 3.35, "nvlink", "NVLink 4, export variant (400 GB/s total)", 200,
            source_url="https://www.nvidia.cn/data-center/h800/",
            aliases=("h800", "h800-80gb", "h800 80g")),
]


def _gpu_norm(text: str) -> str:
    text = text.lower()
    for noise in ("nvidia", "geforce", "tesla"):
        text = text.replace(noise, "")
    text = re.sub(r"(\d)\s*gb\b", r"\1g", text)
    return re.sub(r"[^a-z0-9]", "", text)


_GPU_INDEX: dict[str, GPUSpec] = {}
for _g in _GPUS:
    for _key in (_g.name, *_g.aliases):
        _GPU_INDEX[_gpu_norm(_key)] = _g


def list_gpus() -> list[GPUSpec]:
    return list(_GPUS)


def lookup_gpu(name: str) -> GPUSpec:
    """Find a GPU by name or alias (``a100-80gb``, ``A100 80G``, ``4090``)."""
    key = _gpu_norm(name)
    if key in _GPU_INDEX:
        return _GPU_INDEX[key]
    close = difflib.get_close_matches(key, list(_GPU_INDEX), n=5, cutoff=0.6)
    names = list(dict.fromkeys(_GPU_INDEX[c].name for c in close))[:3]
    raise UnknownNameError("GPU", name, names)
