"""An in-memory vector store: the English chunks and their vectors in a list, searched by dot product.

What ``SHARDWISE_VECTOR_STORE=memory`` gives :func:`bot.knowledge.search.default_searcher` instead
of the chromadb index: nothing on disk, no chromadb import, built in milliseconds with the hashed
embedding (:data:`bot.knowledge.embeddings.HASHED_MODEL`). The unit tests run on it
(tests/conftest.py); users get the chromadb index, which answers :meth:`MemoryStore.nearest` the
same way (:meth:`bot.knowledge.index.IndexStore.nearest`).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

from bot.knowledge.chunks import Chunk
from bot.knowledge.embeddings import embed, model_setting

STORE_ENV = "SHARDWISE_VECTOR_STORE"
STORES = ("chroma", "memory")


def store_setting() -> str:
    """``SHARDWISE_VECTOR_STORE``: "chroma" (the default, on disk or a server) or "memory"."""
    value = os.environ.get(STORE_ENV, "").strip().lower() or "chroma"
    if value not in STORES:
        raise ValueError(f"{STORE_ENV}={value!r}: use one of {', '.join(STORES)}")
    return value


@dataclass(frozen=True)
class MemoryStore:
    """Unit vectors of the English chunks (the ones the dense path reads), in chunk order."""

    ids: tuple[str, ...]
    kinds: tuple[str, ...]
    vectors: tuple[tuple[float, ...], ...]
    model: str
    location: str = "memory"

    @classmethod
    def build(cls, chunks: Sequence[Chunk], model: str | None = None) -> MemoryStore:
        model = model or model_setting()
        english = [c for c in chunks if c.text_lang == "en"]
        vectors = embed([c.text for c in english], model)
        return cls(tuple(c.id for c in english), tuple(c.kind for c in english),
                   tuple(tuple(v) for v in vectors), model)

    def nearest(self, vector: Sequence[float], k: int, kinds: Sequence[str]) -> list[str]:
        """Ids of the ``k`` chunks of ``kinds`` closest to ``vector`` (cosine of unit vectors =
        dot product), closest first; ties keep chunk order."""
        scored = [(-sum(a * b for a, b in zip(vector, v, strict=True)), i)
                  for i, v in enumerate(self.vectors) if self.kinds[i] in kinds]
        return [self.ids[i] for _, i in sorted(scored)[:k]]
