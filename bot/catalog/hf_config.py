"""Models from Hugging Face ``config.json`` files, and catalog models as such configs.

``model_from_hf_config(source)`` reads a config from
- a dict, or JSON text pasted into the chat,
- a path to a ``config.json`` or to a folder holding one,
- a Hub id (``meta-llama/Llama-3.1-8B``), fetched config-only through ``huggingface_hub`` and
  cached in the data dir; offline (this project sets ``HF_HUB_OFFLINE=1`` unless the user set it
  to 0) an id that is not cached is refused with a message saying what to do instead,
and turns it into a ``ModelSpec`` whose parameter count follows from the architecture.

``hf_config_for(spec)`` is the other direction: the config ``transformers`` needs to build a
catalog model (used by ``bench simulate`` and by the tests that check our counts against the
real ``transformers`` modules).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from bot.catalog.models import Kind, ModelSpec, lookup_model
from bot.core.errors import UserError

OFFLINE_MESSAGE = "no network: paste the config.json or pass --config PATH"
# Hub repo ids: "org/name" (or a bare legacy name like "gpt2"); no spaces, no path separators beyond one.
_HUB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,95}/[A-Za-z0-9][A-Za-z0-9._-]{0,95}$")
MAX_CONFIG_BYTES = 2_000_000  # a config.json is a few KB; refuse anything that is clearly not one


class ConfigError(UserError, ValueError):
    """A config that cannot be read or understood; the message says why and what to do."""


# --------------------------------------------------------------------------------------------
# Loading: dict, JSON text, file, folder, Hub id
# --------------------------------------------------------------------------------------------


def config_cache_dir() -> Path:
    from bot.env import data_dir

    path = data_dir() / "hf-configs"
    path.mkdir(parents=True, exist_ok=True)
    return path


def _parse_json(text: str, where: str) -> dict:
    if len(text) > MAX_CONFIG_BYTES:
        raise ConfigError(f"{where} is {len(text):,} bytes; a config.json is a few KB")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        raise ConfigError(f"{where} is not valid JSON ({err.msg} at line {err.lineno})") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{where} is JSON but not an object with config fields")
    return data


def fetch_hub_config(repo_id: str, *, revision: str | None = None) -> dict:
    """``config.json`` of a Hub repo, config only (no weights), cached under the data dir.

    The Hub is reached only when ``huggingface_hub`` is not in offline mode (``HF_HUB_OFFLINE=0``
    set by the user); ``HF_ENDPOINT`` points it at a mirror. Offline, a cached copy is used if
    there is one; otherwise ``ConfigError(OFFLINE_MESSAGE)``."""
    from huggingface_hub import constants, hf_hub_download
    from huggingface_hub.errors import (
        EntryNotFoundError,
        GatedRepoError,
        LocalEntryNotFoundError,
        RepositoryNotFoundError,
    )

    offline = constants.is_offline_mode()
    try:
        path = hf_hub_download(repo_id, "config.json", revision=revision, cache_dir=config_cache_dir(),
                               local_files_only=offline, endpoint=os.environ.get("HF_ENDPOINT") or None,
                               etag_timeout=10)
    except GatedRepoError:
        raise ConfigError(f"{repo_id} is gated on the Hub: accept its licence and log in "
                          "(huggingface-cli login), or paste its config.json") from None
    except RepositoryNotFoundError:
        raise ConfigError(f"no Hub repo {repo_id!r} (or it is private)") from None
    except LocalEntryNotFoundError:  # (a subclass of EntryNotFoundError: catch it first)
        # Offline with nothing cached, or the connection failed.
        raise ConfigError(OFFLINE_MESSAGE) from None
    except EntryNotFoundError:
        raise ConfigError(f"{repo_id} has no config.json (not a transformers model?)") from None
    except OSError as err:  # connection refused, DNS, timeouts (httpx errors subclass OSError here)
        raise ConfigError(f"{OFFLINE_MESSAGE} ({type(err).__name__})") from None
    except Exception as err:  # noqa: BLE001  huggingface_hub raises httpx errors for network trouble
        if "offline" in str(err).lower() or "connect" in type(err).__name__.lower():
            raise ConfigError(OFFLINE_MESSAGE) from None
        raise ConfigError(f"could not fetch {repo_id}'s config.json: {type(err).__name__}: {err}") from None
    return _parse_json(Path(path).read_text(encoding="utf-8"), f"{repo_id}'s config.json")


def load_hf_config(source: dict | str | os.PathLike) -> tuple[dict, str]:
    """``(config, where)`` for a dict, JSON text, a file or folder path, or a Hub id."""
    if isinstance(source, dict):
        return source, "the config"
    if isinstance(source, os.PathLike):
        source = os.fspath(source)
    if not isinstance(source, str) or not source.strip():
        raise ConfigError("empty config: pass a config.json path, its JSON text or a Hub id")
    text = source.strip()
    if text.startswith(("{", "[")):
        return _parse_json(text, "the pasted config"), "the pasted config"
    path = Path(text).expanduser()
    if path.is_dir():
        path = path / "config.json"
        if not path.is_file():
            raise ConfigError(f"{text} has no config.json")
    if path.is_file():
        if path.stat().st_size > MAX_CONFIG_BYTES:
            raise ConfigError(f"{path} is {path.stat().st_size:,} bytes; a config.json is a few KB")
        return _parse_json(path.read_text(encoding="utf-8", errors="replace"), str(path)), str(path)
    if _HUB_ID.match(text):
        return fetch_hub_config(text), f"https://huggingface.co/{text}/blob/main/config.json"
    if "/" in text or text.endswith(".json"):
        raise ConfigError(f"no file {text}")
    raise ConfigError(f"{text!r} is neither a config.json file or folder, JSON text, nor a Hub id (org/name)")


# --------------------------------------------------------------------------------------------
# Config -> ModelSpec
# --------------------------------------------------------------------------------------------

# transformers' defaults for tie_word_embeddings where a config leaves it out (each family's
# configuration_*.py); PretrainedConfig's own default is True.
_UNTIED_BY_DEFAULT = {"llama", "mistral", "mixtral", "qwen2", "qwen2_moe", "qwen3", "qwen3_moe", "phi3",
                      "deepseek_v2", "deepseek_v3", "glm", "glm4", "chatglm", "baichuan", "yi", "internlm2"}
_LLAMA_LIKE = {"llama", "mistral", "yi", "baichuan", "phi3", "internlm2", "granite", "olmo2", "cohere",
               "starcoder2_llama", "qwen2", "qwen3", "gemma", "gemma2", "gemma3_text", "glm", "glm4",
               "mixtral", "qwen2_moe", "qwen3_moe", "deepseek_v2", "deepseek_v3"}


def _need(cfg: dict, *keys: str) -> Any:
    for key in keys:
        if cfg.get(key) is not None:
            return cfg[key]
    raise ConfigError(f"config has no {' / '.join(keys)}")


def _pos_int(value: Any, key: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1 or value > 10_000_000:
        raise ConfigError(f"config field {key} = {value!r} is not a plausible positive integer")
    return value


def _vit_params(vision: dict) -> int:
    """A ViT vision tower (SigLIP/CLIP-style config: hidden, layers, MLP width, patch, image)."""
    h = _pos_int(_need(vision, "hidden_size"), "vision hidden_size")
    i = _pos_int(_need(vision, "intermediate_size"), "vision intermediate_size")
    layers = _pos_int(_need(vision, "num_hidden_layers"), "vision num_hidden_layers")
    patch, image = int(vision.get("patch_size", 14)), int(vision.get("image_size", 224))
    block = 4 * (h * h + h) + 2 * h * i + i + h + 4 * h
    return 3 * patch * patch * h + h + (image // patch) ** 2 * h + layers * block + 2 * h


def model_from_hf_config(source: dict | str | os.PathLike, name: str | None = None) -> ModelSpec:
    """A ``ModelSpec`` from a Hugging Face config (see ``load_hf_config`` for the sources).
    Raises ``ConfigError`` with a clear message for anything it cannot read."""
    return read_hf_config(source, name)[0]


def read_hf_config(source: dict | str | os.PathLike, name: str | None = None) -> tuple[ModelSpec, dict]:
    """``(spec, config)``: the model and the config dict it was read from. The spec is named
    ``name``, else the config's ``_name_or_path``, the Hub id, or the folder holding the file."""
    cfg, where = load_hf_config(source)
    source_url = where if where.startswith("http") else ""
    label = name or cfg.get("_name_or_path") or None
    if not label and source_url:  # https://huggingface.co/{org}/{name}/blob/main/config.json
        label = "/".join(source_url.split("/")[3:5])
    archs = cfg.get("architectures")
    if not label and isinstance(archs, list) and archs and isinstance(archs[0], str):
        # what the config says it is (transformers writes the class, e.g. LlamaForCausalLM); the folder
        # a saved config sits in is often a run artefact (checkpoint-500, a snapshot hash)
        label = f"{archs[0]} ({cfg.get('model_type') or 'config.json'})"
    elif not label and where not in ("the pasted config", "the config"):
        label = Path(where).parent.name or None  # the folder a config.json sits in, as a last resort
    try:
        return _spec_from_config(cfg, label, source_url), cfg
    except ConfigError:
        raise
    except (TypeError, ValueError, KeyError, ZeroDivisionError) as err:
        raise ConfigError(f"could not read {where}: {type(err).__name__}: {err}") from None


def _spec_from_config(cfg: dict, label: str | None, source_url: str) -> ModelSpec:
    mt = str(cfg.get("model_type") or "").lower()
    label = label or f"{mt or 'model'} (from config.json)"
    # ModelSpec keyword arguments every family shares
    common: dict[str, Any] = dict(source_url=source_url or "config.json supplied by the user", family=mt)

    # Vision-language wrappers: the language model in text_config plus a vision tower.
    if isinstance(cfg.get("text_config"), dict) and mt not in ("t5",):
        text = dict(cfg["text_config"])
        text.setdefault("model_type", "gemma3_text" if mt == "gemma3" else text.get("model_type", "llama"))
        if mt == "gemma3":
            text.setdefault("vocab_size", 262208)
            text.setdefault("tie_word_embeddings", True)
        inner = _spec_from_config(text, label, source_url)
        vision = cfg.get("vision_config") or {}
        extra, exact = 0, mt == "gemma3"
        if vision:
            try:
                extra = _vit_params(vision)
            except ConfigError:
                extra, exact = 0, False
            v_hidden = int(vision.get("hidden_size", 0))
            if mt == "gemma3":  # projector: an RMSNorm on the vision width and a projection matrix
                extra += v_hidden + v_hidden * inner.hidden
            else:
                extra += v_hidden * inner.hidden  # a one-matrix projector at least (approximate)
        from dataclasses import replace

        return replace(inner, name=label, kind="vlm", family=mt, extra_params=extra,
                       extra_params_note="vision tower + projector" + ("" if exact else " (approximate)"),
                       approximate=inner.approximate or not exact,
                       notes="vision-language model: vision activations are not modelled")

    if mt == "gpt2":
        h = _pos_int(_need(cfg, "n_embd", "hidden_size"), "n_embd")
        return ModelSpec(label, "gpt2", _pos_int(_need(cfg, "n_layer", "num_hidden_layers"), "n_layer"), h,
                         int(cfg.get("n_inner") or 4 * h), _pos_int(_need(cfg, "n_head"), "n_head"),
                         int(cfg["n_head"]), _pos_int(_need(cfg, "vocab_size"), "vocab_size"),
                         tied_embeddings=True, max_positions=int(cfg.get("n_positions", 1024)), **common)
    if mt == "opt":
        h = _pos_int(_need(cfg, "hidden_size"), "hidden_size")
        if int(cfg.get("word_embed_proj_dim", h)) != h:
            raise ConfigError("OPT configs with word_embed_proj_dim != hidden_size (opt-350m) are not modelled")
        heads = _pos_int(_need(cfg, "num_attention_heads"), "num_attention_heads")
        return ModelSpec(label, "opt", _pos_int(_need(cfg, "num_hidden_layers"), "num_hidden_layers"), h,
                         _pos_int(_need(cfg, "ffn_dim"), "ffn_dim"), heads, heads,
                         _pos_int(_need(cfg, "vocab_size"), "vocab_size"),
                         tied_embeddings=bool(cfg.get("tie_word_embeddings", True)),
                         max_positions=int(cfg.get("max_position_embeddings", 2048)), **common)
    if mt == "mpt":
        h = _pos_int(_need(cfg, "d_model"), "d_model")
        heads = _pos_int(_need(cfg, "n_heads"), "n_heads")
        no_bias = bool(cfg.get("no_bias", True))
        return ModelSpec(label, "gpt2", _pos_int(_need(cfg, "n_layers"), "n_layers"), h,
                         int(cfg.get("expansion_ratio", 4)) * h, heads, heads,
                         _pos_int(_need(cfg, "vocab_size"), "vocab_size"), tied_embeddings=True,
                         max_positions=int(cfg.get("max_seq_len", 2048)), position_table=0,
                         attn_bias=not no_bias, mlp_bias=not no_bias, norm_bias=not no_bias, **common)
    if mt == "bloom":
        # BLOOM (transformers BloomConfig): ALiBi, no position table, a LayerNorm after the
        # embeddings, biased GELU blocks four times as wide, tied output embeddings
        h = _pos_int(_need(cfg, "hidden_size", "n_embed"), "hidden_size")
        heads = _pos_int(_need(cfg, "n_head", "num_attention_heads"), "n_head")
        return ModelSpec(label, "gpt2", _pos_int(_need(cfg, "n_layer", "num_hidden_layers"), "n_layer"), h, 4 * h,
                         heads, heads, _pos_int(_need(cfg, "vocab_size"), "vocab_size"), tied_embeddings=True,
                         max_positions=int(cfg.get("seq_length", 2048)), position_table=0, embed_norm=True,
                         eager_attention=True, **common)
    if mt in ("gpt_neox", "gpt_bigcode", "starcoder2"):
        return _gpt_like(cfg, mt, label, common)
    if mt in ("bert", "roberta", "xlm-roberta", "camembert"):
        h = _pos_int(_need(cfg, "hidden_size"), "hidden_size")
        heads = _pos_int(_need(cfg, "num_attention_heads"), "num_attention_heads")
        positions = int(cfg.get("max_position_embeddings", 512))
        return ModelSpec(label, "gpt2", _pos_int(_need(cfg, "num_hidden_layers"), "num_hidden_layers"), h,
                         _pos_int(_need(cfg, "intermediate_size"), "intermediate_size"), heads, heads,
                         _pos_int(_need(cfg, "vocab_size"), "vocab_size"), max_positions=positions,
                         kind="encoder", type_vocab=int(cfg.get("type_vocab_size", 2)), pooler=True,
                         embed_norm=True, position_table=positions, **common)
    if mt in ("t5", "mt5", "umt5"):
        h = _pos_int(_need(cfg, "d_model"), "d_model")
        heads = _pos_int(_need(cfg, "num_heads"), "num_heads")
        enc = _pos_int(_need(cfg, "num_layers"), "num_layers")
        dec = int(cfg.get("num_decoder_layers") or enc)
        proj = str(cfg.get("feed_forward_proj", "relu"))
        return ModelSpec(label, "t5", enc + dec, h, _pos_int(_need(cfg, "d_ff"), "d_ff"), heads, heads,
                         _pos_int(_need(cfg, "vocab_size"), "vocab_size"),
                         tied_embeddings=bool(cfg.get("tie_word_embeddings", True)), max_positions=512,
                         kind="encoder_decoder", n_decoder_layers=dec,
                         relative_buckets=int(cfg.get("relative_attention_num_buckets", 32)),
                         attn_head_dim=int(cfg.get("d_kv", h // heads)), gated_mlp=proj.startswith("gated"),
                         attn_bias=False, mlp_bias=False, norm_bias=False, **common)
    if mt == "chatglm":
        h = _pos_int(_need(cfg, "hidden_size"), "hidden_size")
        heads = _pos_int(_need(cfg, "num_attention_heads"), "num_attention_heads")
        kv = int(cfg.get("multi_query_group_num", heads)) if cfg.get("multi_query_attention") else heads
        return ModelSpec(label, "llama", _pos_int(_need(cfg, "num_layers"), "num_layers"), h,
                         _pos_int(_need(cfg, "ffn_hidden_size"), "ffn_hidden_size"), heads, kv,
                         _pos_int(_need(cfg, "padded_vocab_size", "vocab_size"), "padded_vocab_size"),
                         qkv_bias=bool(cfg.get("add_qkv_bias", False)),
                         attn_head_dim=int(cfg.get("kv_channels", h // heads)),
                         max_positions=int(cfg.get("seq_length", 8192)), **common)
    return _llama_like(cfg, mt, label, common)


def _gpt_like(cfg: dict, mt: str, label: str, common: dict) -> ModelSpec:
    """Biased LayerNorm blocks with a plain GELU MLP: GPT-NeoX/Pythia (rotary, untied head),
    GPT-BigCode/StarCoder (multi-query attention, learned positions), StarCoder2 (GQA, rotary)
    (transformers' configuration_gpt_neox.py, configuration_gpt_bigcode.py, configuration_starcoder2.py)."""
    if mt == "gpt_bigcode":
        h = _pos_int(_need(cfg, "n_embd", "hidden_size"), "n_embd")
        heads = _pos_int(_need(cfg, "n_head", "num_attention_heads"), "n_head")
        positions = int(cfg.get("n_positions", 1024))
        return ModelSpec(label, "gpt2", _pos_int(_need(cfg, "n_layer", "num_hidden_layers"), "n_layer"), h,
                         int(cfg.get("n_inner") or 4 * h), heads, 1 if cfg.get("multi_query", True) else heads,
                         _pos_int(_need(cfg, "vocab_size"), "vocab_size"),
                         tied_embeddings=bool(cfg.get("tie_word_embeddings", True)), max_positions=positions, **common)
    h = _pos_int(_need(cfg, "hidden_size"), "hidden_size")
    heads = _pos_int(_need(cfg, "num_attention_heads"), "num_attention_heads")
    kv = int(cfg.get("num_key_value_heads") or heads) if mt == "starcoder2" else heads
    bias = bool(cfg.get("use_bias", True) if mt == "starcoder2" else cfg.get("attention_bias", True))
    return ModelSpec(label, "gpt2", _pos_int(_need(cfg, "num_hidden_layers"), "num_hidden_layers"), h,
                     _pos_int(cfg.get("intermediate_size") or 4 * h, "intermediate_size"), heads, kv,
                     _pos_int(_need(cfg, "vocab_size"), "vocab_size"),
                     tied_embeddings=bool(cfg.get("tie_word_embeddings", mt == "starcoder2")),
                     max_positions=int(cfg.get("max_position_embeddings") or 2048), position_table=0,
                     attn_bias=bias, mlp_bias=bias, **common)


def _llama_like(cfg: dict, mt: str, label: str, common: dict) -> ModelSpec:
    """Llama-family decoders (dense and MoE): the keys every such config shares, then each
    family's differences (biases, norms, experts, latent attention)."""
    required = ("hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size")
    missing = [k for k in required if cfg.get(k) is None]
    if missing:
        subject = f"model_type {mt!r}" if mt else "this config"
        raise ConfigError(f"cannot read {subject}: no {', '.join(missing)}. Supported: Llama-style "
                          "decoders (Llama, Mistral, Qwen, Gemma, Phi-3, GLM, Yi, Baichuan), MoE "
                          "(Mixtral, Qwen-MoE, DeepSeek-V2/V3), GPT-2, OPT, MPT, BERT/RoBERTa, T5")
    h = _pos_int(cfg["hidden_size"], "hidden_size")
    layers = _pos_int(cfg["num_hidden_layers"], "num_hidden_layers")
    heads = _pos_int(cfg["num_attention_heads"], "num_attention_heads")
    kv = _pos_int(cfg.get("num_key_value_heads") or heads, "num_key_value_heads")
    vocab = _pos_int(cfg["vocab_size"], "vocab_size")
    inter = _pos_int(cfg.get("intermediate_size") or cfg.get("moe_intermediate_size") or 4 * h,
                     "intermediate_size")
    head_dim = cfg.get("head_dim")
    tied = bool(cfg.get("tie_word_embeddings", mt not in _UNTIED_BY_DEFAULT))
    attention_bias = bool(cfg.get("attention_bias", False))
    fields: dict[str, Any] = dict(
        tied_embeddings=tied, max_positions=int(cfg.get("max_position_embeddings") or 4096),
        attn_head_dim=int(head_dim) if head_dim and int(head_dim) != h // heads else None,
        mlp_bias=bool(cfg.get("mlp_bias", False)),
    )
    notes = []
    if mt in ("qwen2", "qwen2_moe"):
        fields["qkv_bias"] = True
    elif mt in ("glm", "glm4"):
        fields["qkv_bias"] = bool(cfg.get("attention_bias", True))
    else:
        fields["attn_bias"] = attention_bias
    if mt in ("gemma2", "gemma3_text", "glm4"):
        fields["norms_per_layer"] = 4
    if mt in ("qwen3", "qwen3_moe", "gemma3_text"):
        fields["qk_norm"] = True
    if mt not in _LLAMA_LIKE:
        notes.append(f"model_type {mt or '(none)'!r} is not one we know: read as a Llama-style block "
                     "(gated MLP, RMSNorm); check the parameter count against the model card")

    kind: Kind = "decoder"
    n_experts = int(cfg.get("num_local_experts") or cfg.get("num_experts") or cfg.get("n_routed_experts") or 0)
    if n_experts:
        kind = "moe"
        fields.update(n_experts=n_experts, experts_per_token=_pos_int(_need(cfg, "num_experts_per_tok"),
                                                                      "num_experts_per_tok"))
        if mt == "mixtral":
            fields["moe_intermediate"] = inter
        else:
            fields["moe_intermediate"] = _pos_int(_need(cfg, "moe_intermediate_size"), "moe_intermediate_size")
        fields["shared_expert_intermediate"] = int(cfg.get("shared_expert_intermediate_size") or 0)
        fields["n_shared_experts"] = int(cfg.get("n_shared_experts") or 0)
        dense = int(cfg.get("first_k_dense_replace") or 0)
        step = int(cfg.get("decoder_sparse_step") or cfg.get("moe_layer_freq") or 1)
        only_dense = set(cfg.get("mlp_only_layers") or [])
        dense_layers = {n for n in range(layers) if n < dense or n in only_dense or (step > 1 and (n + 1) % step)}
        if dense_layers and max(dense_layers) >= len(dense_layers):
            notes.append("dense layers are not all first; counted as if they were (same total)")
        fields["first_k_dense"] = len(dense_layers)
    if cfg.get("kv_lora_rank"):
        fields.update(kv_lora_rank=int(cfg["kv_lora_rank"]), q_lora_rank=int(cfg.get("q_lora_rank") or 0),
                      qk_nope_head_dim=int(_need(cfg, "qk_nope_head_dim")),
                      qk_rope_head_dim=int(_need(cfg, "qk_rope_head_dim")),
                      v_head_dim=int(_need(cfg, "v_head_dim")))
    return ModelSpec(label, "llama", layers, h, inter, heads, kv, vocab, kind=kind, notes="; ".join(notes),
                     **fields, **common)


# --------------------------------------------------------------------------------------------
# ModelSpec -> config (for transformers)
# --------------------------------------------------------------------------------------------

# Families transformers has no class for, built with an equivalent one (same parameter count).
_EQUIVALENT = {"baichuan": "llama", "yi": "llama", "chatglm": "glm", "": "llama"}


def hf_config_for(spec: ModelSpec | str) -> dict:
    """The ``config.json`` content ``transformers`` builds ``spec`` from. Baichuan and Yi become
    Llama, ChatGLM becomes GLM (same tensors, same count). Raises ``ConfigError`` for entries
    whose architecture is not modelled (approximate VLM/diffusion, bare sizes)."""
    if isinstance(spec, str):
        spec = lookup_model(spec)
    if spec.declared_params is not None or (spec.approximate and spec.kind != "vlm"):
        raise ConfigError(f"{spec.name} has no modelled architecture (approximate entry)")
    mt = _EQUIVALENT.get(spec.family, spec.family)
    if spec.arch == "gpt2" and spec.family in ("gpt2", ""):
        return {"model_type": "gpt2", "n_embd": spec.hidden, "n_layer": spec.n_layers, "n_head": spec.n_heads,
                "n_inner": spec.intermediate, "n_positions": spec.max_positions, "vocab_size": spec.vocab,
                "tie_word_embeddings": True}
    if mt == "opt":
        return {"model_type": "opt", "hidden_size": spec.hidden, "num_hidden_layers": spec.n_layers,
                "ffn_dim": spec.intermediate, "num_attention_heads": spec.n_heads,
                "max_position_embeddings": spec.max_positions, "vocab_size": spec.vocab,
                "word_embed_proj_dim": spec.hidden, "do_layer_norm_before": True}
    if mt == "mpt":
        return {"model_type": "mpt", "d_model": spec.hidden, "n_layers": spec.n_layers, "n_heads": spec.n_heads,
                "expansion_ratio": spec.intermediate // spec.hidden, "vocab_size": spec.vocab,
                "max_seq_len": spec.max_positions, "no_bias": not spec.has_attn_bias}
    if mt == "bloom":
        return {"model_type": "bloom", "hidden_size": spec.hidden, "n_layer": spec.n_layers, "n_head": spec.n_heads,
                "vocab_size": spec.vocab}
    if mt == "gpt_bigcode":
        return {"model_type": mt, "n_embd": spec.hidden, "n_layer": spec.n_layers, "n_head": spec.n_heads,
                "n_inner": spec.intermediate, "n_positions": spec.max_positions, "vocab_size": spec.vocab,
                "multi_query": spec.n_kv_heads == 1, "tie_word_embeddings": spec.tied_embeddings}
    if mt in ("gpt_neox", "starcoder2"):
        out = {"model_type": mt, "hidden_size": spec.hidden, "num_hidden_layers": spec.n_layers,
               "num_attention_heads": spec.n_heads, "intermediate_size": spec.intermediate, "vocab_size": spec.vocab,
               "max_position_embeddings": spec.max_positions, "tie_word_embeddings": spec.tied_embeddings}
        if mt == "starcoder2":
            out.update(num_key_value_heads=spec.n_kv_heads, use_bias=spec.has_attn_bias)
        else:
            out["attention_bias"] = spec.has_attn_bias
        return out
    if mt in ("bert", "roberta"):
        return {"model_type": mt, "hidden_size": spec.hidden, "num_hidden_layers": spec.n_layers,
                "num_attention_heads": spec.n_heads, "intermediate_size": spec.intermediate,
                "vocab_size": spec.vocab, "max_position_embeddings": spec.positions,
                "type_vocab_size": spec.type_vocab}
    if mt == "t5":
        enc = spec.n_layers - spec.n_decoder_layers
        return {"model_type": "t5", "d_model": spec.hidden, "d_kv": spec.head_dim, "d_ff": spec.intermediate,
                "num_layers": enc, "num_decoder_layers": spec.n_decoder_layers, "num_heads": spec.n_heads,
                "vocab_size": spec.vocab, "relative_attention_num_buckets": spec.relative_buckets,
                "feed_forward_proj": "gated-gelu" if spec.is_gated else "relu",
                "tie_word_embeddings": spec.tied_embeddings}
    text: dict[str, Any] = {
        "model_type": mt, "hidden_size": spec.hidden, "num_hidden_layers": spec.n_layers,
        "intermediate_size": spec.intermediate, "num_attention_heads": spec.n_heads,
        "num_key_value_heads": spec.n_kv_heads, "vocab_size": spec.vocab, "head_dim": spec.head_dim,
        "tie_word_embeddings": spec.tied_embeddings, "max_position_embeddings": spec.max_positions,
    }
    if mt in ("llama", "mistral", "qwen3", "qwen3_moe", "gemma", "gemma2", "gemma3_text", "gemma3",
              "mixtral", "phi3", "deepseek_v2", "deepseek_v3"):
        text["attention_bias"] = bool(spec.attn_bias)
    if mt in ("glm", "glm4"):
        text["attention_bias"] = spec.qkv_bias
        text["partial_rotary_factor"] = 0.5
        text["pad_token_id"] = None
    if mt == "llama":
        text["mlp_bias"] = bool(spec.mlp_bias)
    if spec.is_moe:
        if mt == "mixtral":
            text.update(num_local_experts=spec.n_experts, num_experts_per_tok=spec.experts_per_token,
                        intermediate_size=spec.moe_intermediate)
        elif mt in ("qwen2_moe", "qwen3_moe"):
            text.update(num_experts=spec.n_experts, num_experts_per_tok=spec.experts_per_token,
                        moe_intermediate_size=spec.moe_intermediate, decoder_sparse_step=1, mlp_only_layers=[],
                        shared_expert_intermediate_size=spec.shared_expert_intermediate)
        elif mt in ("deepseek_v2", "deepseek_v3"):
            text.update(n_routed_experts=spec.n_experts, num_experts_per_tok=spec.experts_per_token,
                        moe_intermediate_size=spec.moe_intermediate, n_shared_experts=spec.n_shared_experts,
                        first_k_dense_replace=spec.first_k_dense, moe_layer_freq=1,
                        kv_lora_rank=spec.kv_lora_rank, q_lora_rank=spec.q_lora_rank or None,
                        qk_nope_head_dim=spec.qk_nope_head_dim, qk_rope_head_dim=spec.qk_rope_head_dim,
                        v_head_dim=spec.v_head_dim, head_dim=spec.qk_rope_head_dim,
                        n_group=1, topk_group=1)
    if mt == "gemma3":
        text["model_type"] = "gemma3_text"
        return {"model_type": "gemma3", "text_config": text,
                "vision_config": {"model_type": "siglip_vision_model", "hidden_size": 1152,
                                  "intermediate_size": 4304, "num_hidden_layers": 27, "num_attention_heads": 16,
                                  "patch_size": 14, "image_size": 896, "vision_use_head": False}}
    return text
