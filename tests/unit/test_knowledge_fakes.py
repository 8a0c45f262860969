"""The unit run's knowledge fakes (tests/conftest.py): the hashed bag-of-words embedding and the
in-memory store, and that fast tests get them while the users' defaults stay the real ones."""

from __future__ import annotations

import math
import os
import subprocess
import sys

import pytest

from bot.knowledge import embeddings, search
from bot.knowledge.chunks import chunk_entries
from bot.knowledge.corpus import Doc, ForumAnswer
from bot.knowledge.memory_store import MemoryStore, store_setting

TINY = [
    ForumAnswer(id="forum-01", text="7B模型的话，FSDP更省显存，DDP速度更快。",
                text_en="For a 7B model FSDP saves GPU memory and DDP is faster.",
                title="forum-01: FSDP saves memory", url="https://example.com/t#1"),
    Doc(id="doc-ring", title="Ring all-reduce", lang="en", urls=["https://example.com/nccl"],
        text="NCCL ring all-reduce sends 2(n-1)/n times the buffer per GPU.\n"),
    Doc(id="doc-hsdp", title="Hybrid sharding", lang="en", urls=["https://example.com/hsdp"],
        text="HSDP shards inside a node and replicates across nodes.\n"),
]


def test_fast_tests_run_on_the_fakes_and_users_get_the_real_components(knowledge_backend, monkeypatch):
    assert knowledge_backend == "fake"
    assert embeddings.model_setting() == embeddings.HASHED_MODEL and store_setting() == "memory"
    monkeypatch.delenv("SHARDWISE_EMBEDDING_MODEL")
    monkeypatch.delenv("SHARDWISE_VECTOR_STORE")
    assert embeddings.model_setting() == embeddings.DEFAULT_MODEL and store_setting() == "chroma"


def test_a_bad_store_setting_is_named():
    env = {**os.environ, "SHARDWISE_VECTOR_STORE": "redis"}
    done = subprocess.run([sys.executable, "-c", "from bot.knowledge.memory_store import store_setting; store_setting()"],
                          env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode != 0 and "SHARDWISE_VECTOR_STORE='redis'" in done.stderr and "memory" in done.stderr


@pytest.mark.parametrize("text", ["FSDP saves GPU memory", "ring all-reduce, 2(n-1)/n", "显存 FSDP 8x A100"])
def test_the_hashed_vector_is_a_deterministic_unit_vector(text):
    vector = embeddings.hashed_vector(text)
    assert len(vector) == embeddings.HASHED_DIMENSIONS and math.isclose(sum(v * v for v in vector), 1.0)
    code = f"from bot.knowledge.embeddings import hashed_vector; print(hashed_vector({text!r}))"
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                           env={**os.environ, "PYTHONHASHSEED": "123"})
    assert other.stdout.strip() == str(vector)  # the same in another process (crc32, not hash())
    assert embeddings.embed([text]) == [vector]  # what embed() gives under the fake setting


def test_no_words_no_direction():
    assert embeddings.hashed_vector("。，！") == [0.0] * embeddings.HASHED_DIMENSIONS


def test_the_memory_store_ranks_english_chunks_by_shared_words():
    chunks = chunk_entries(TINY)
    store = MemoryStore.build(chunks)
    assert all(i.endswith(("#en0", "#0")) for i in store.ids)  # the Chinese original is BM25's only
    vector = embeddings.embed(["which shards inside a node?"])[0]
    assert store.nearest(vector, 1, ("forum", "doc")) == ["doc-hsdp#0"]
    assert store.nearest(vector, 5, ("forum",)) == ["forum-01#en0"]
    assert store.nearest(vector, 0, ("doc",)) == []


def test_the_searcher_fuses_bm25_and_the_memory_store():
    chunks = chunk_entries(TINY)
    searcher = search.Searcher(chunks, MemoryStore.build(chunks))
    hits = searcher.search("How does ring all-reduce scale per GPU?", k=2)
    assert hits[0].id == "doc-ring"
    dense = searcher.search("How does ring all-reduce scale per GPU?", k=3, mode="dense")
    assert dense and dense[0].id == "doc-ring"
    assert searcher.search("FSDP更省显存", k=1, mode="bm25")[0].id == "forum-01"


def test_the_process_searcher_is_kept_per_setting():
    fake = search.default_searcher()
    assert isinstance(fake.store, MemoryStore) and search.default_searcher() is fake
    # keyed by (embedding model, store): a run that switches to the real ones builds those anew
    assert search._defaults[(embeddings.HASHED_MODEL, "memory")] is fake
