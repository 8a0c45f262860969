"""Questions embedded together (``bot.knowledge.embeddings.embed_queries``,
``answering.prefetch_query_vectors``): the same vectors as one at a time, found again by the
search's own ``embed_query``, the exact text the dense search embeds (English and Chinese), and
the same answers whether a worker's batch was prefetched or not."""

from __future__ import annotations

import numpy as np
import pytest

from bot.knowledge import answering, embeddings
from bot.knowledge import search as search_module

QUESTIONS = [
    "DDP or FSDP for Llama-2-7B on 4x A100 80GB with micro-batch 1?",
    "Can I train GPT-2 XL on 4x RTX 4090 24GB with plain DDP?",
    "FSDP full shard or hybrid shard for 2 nodes of 8x H100?",
]
ZH_QUESTION = "7B模型用8张A100，DDP和FSDP怎么选？显存够吗"


@pytest.fixture()
def fresh_cache(monkeypatch):
    monkeypatch.setattr(embeddings, "_query_vectors", type(embeddings._query_vectors)())
    answering._retrieve.cache_clear()
    yield embeddings._query_vectors
    answering._retrieve.cache_clear()


@pytest.fixture()
def encoded(monkeypatch):
    """Counts the texts that reach the model."""
    texts: list[str] = []
    real = embeddings.embed

    def counting(batch, model=None):
        texts.extend(batch)
        return real(batch, model)

    monkeypatch.setattr(embeddings, "embed", counting)
    return texts


def test_batched_vectors_match_single_ones_and_are_reused(fresh_cache, encoded):
    single = np.array([embeddings.embed([q])[0] for q in QUESTIONS])
    encoded.clear()
    batched = np.array(embeddings.embed_queries(QUESTIONS + QUESTIONS[:1]))
    assert encoded == QUESTIONS  # one batch, the repeated question embedded once
    assert (single * batched[:3]).sum(axis=1).min() > 0.9999
    assert np.array_equal(batched[0], batched[3])
    encoded.clear()
    assert embeddings.embed_queries([QUESTIONS[1]]) == [list(batched[1])]  # the search's path reads the cache
    assert encoded == []
    embeddings.embed_queries(["something not asked before"])
    assert encoded == ["something not asked before"]


def test_the_cache_stays_bounded(fresh_cache, monkeypatch):
    monkeypatch.setattr(embeddings, "QUERY_CACHE_SIZE", 4)
    embeddings.embed_queries([f"question {i}" for i in range(7)])
    kept = [text for _, text in embeddings._query_vectors]
    assert kept == [f"question {i}" for i in range(3, 7)]  # the oldest go first


@pytest.mark.parametrize("question", [QUESTIONS[0], ZH_QUESTION])
def test_dense_query_is_the_text_the_search_embeds(fresh_cache, encoded, question):
    searcher = search_module.default_searcher()
    expected = searcher.dense_query(question)
    if question == ZH_QUESTION:  # Chinese goes through the glossary: MiniLM reads it as [UNK]
        assert expected != question and "GPU memory" in expected
    else:
        assert expected == question
    encoded.clear()
    searcher.search(question, k=3)
    assert encoded == [expected]
    encoded.clear()
    searcher.search(question, k=3)  # the second search finds its vector cached
    assert encoded == []


@pytest.mark.parametrize("question", ["", "你好", "???"])
def test_dense_query_is_none_where_there_is_no_dense_search(question):
    assert search_module.default_searcher().dense_query(question) is None
    assert search_module.keyword_searcher().dense_query(QUESTIONS[0]) is None


def test_prefetched_answers_equal_answers_one_at_a_time(fresh_cache, encoded):
    from bot.surfaces.web.pool import chat_markdown, run_batch

    alone = [chat_markdown(q) for q in QUESTIONS + [ZH_QUESTION]]
    embeddings._query_vectors.clear()
    answering._retrieve.cache_clear()
    encoded.clear()
    together = run_batch([(chat_markdown, (q,)) for q in QUESTIONS + [ZH_QUESTION]])
    assert together == [(True, a) for a in alone]
    assert len(encoded) == 4 and len(set(encoded)) == 4  # one pass, nothing embedded again after it


def test_prefetch_never_raises(monkeypatch):
    def broken(texts, model=None):
        raise RuntimeError("model gone")

    monkeypatch.setattr(embeddings, "embed_queries", broken)
    assert answering.prefetch_query_vectors(QUESTIONS) == 0
    assert answering.prefetch_query_vectors([None, 3, ""]) == 0  # type: ignore[list-item]
