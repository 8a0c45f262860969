"""Passage selection (bot.knowledge.answering.select_passages, issue 25): the relevance threshold,
no serving text in a training answer, the zh twin for a Chinese answer and no English paragraphs
there, and the kind taken from the corpus (a forum post is never a doc). BM25 weights only: no
embedding model or index is built."""

from __future__ import annotations

import pytest

from bot.knowledge import answering
from bot.knowledge.answering import (
    Passage,
    asks_about_serving,
    relevance,
    select_passages,
    twin_id,
)


@pytest.fixture(autouse=True)
def _bm25_only(monkeypatch):
    monkeypatch.setattr(answering, "_searcher", answering._keyword)


def _cand(entry_id: str, quote: str, rel: float, kind: str = "doc", lang: str = "en") -> Passage:
    return Passage(id=entry_id, kind=kind, title=entry_id, url="https://example.org", quote=quote,
                   score=0.1, lang=lang, relevance=rel)


SERVING_EN = _cand("doc-serving-large-models", "vLLM reserves GPU memory for the KV cache.", 0.9)
SERVING_ZH = _cand("doc-serving-large-models-zh", "vLLM 预先占用显存给 KV cache。", 0.9, lang="zh")
HSDP_EN = _cand("doc-hsdp", "HSDP splits the GPUs into groups (usually one group per node).", 0.9)
ZERO_EN = _cand("doc-zero-stages", "Stages 1 and 2 move the same volume as plain data parallelism.", 0.9)


@pytest.mark.parametrize("question,lang", [
    ("How much memory does training a 7B model with FSDP need?", "en"),
    ("GRPO with vLLM rollouts on the same GPUs runs out of memory", "en"),
    ("7B模型训练需要多少显存", "zh"),
    ("强化学习训练时vLLM生成占了多少显存", "zh"),
])
def test_a_training_question_never_quotes_the_serving_corpus(question, lang):
    picked = select_passages([SERVING_EN, SERVING_ZH, HSDP_EN], question=question, language=lang, k=3,
                             threshold=0.0)
    assert not {p.id for p in picked} & {"doc-serving-large-models", "doc-serving-large-models-zh"}


@pytest.mark.parametrize("question,topics", [
    ("How many GPUs do I need to serve a 72B model?", ()),
    ("部署72B模型推理要几张卡", ()),
    ("anything", ("inference",)),
])
def test_a_serving_question_may(question, topics):
    assert asks_about_serving(question, topics)
    picked = select_passages([SERVING_EN], question=question, language="en", topics=topics, threshold=0.0)
    assert [p.id for p in picked] == ["doc-serving-large-models"]


def test_parsed_topics_decide_over_words():
    assert not asks_about_serving("How many GPUs to serve it?", ("oom",))


@pytest.mark.parametrize("question", ["HSDP是什么，怎么分组", "多机训练能不能只在节点内分片", "HYBRID_SHARD 怎么用"])
def test_a_chinese_answer_quotes_the_zh_twin_and_no_english_paragraph(question):
    picked = select_passages([HSDP_EN, ZERO_EN], question=question, language="zh", k=3, threshold=0.0)
    assert all(p.lang == "zh" for p in picked)
    assert "doc-zero-stages" not in {p.id for p in picked}  # replaced by its zh twin
    if picked:
        assert picked[0].id == "doc-hsdp-zh"
        from bot.knowledge.corpus import corpus_text

        assert picked[0].quote in corpus_text("doc-hsdp-zh")


def test_an_english_doc_without_a_zh_twin_is_left_out_of_a_chinese_answer(monkeypatch):
    monkeypatch.setattr(answering, "twin_id", lambda entry_id, language: None)
    for question in ("ZeRO的阶段是什么", "stage 2 是什么意思", "ZeRO-3 和 FULL_SHARD 一样吗"):
        assert select_passages([ZERO_EN], question=question, language="zh", threshold=0.0) == []
    assert select_passages([ZERO_EN], question="what are the ZeRO stages", language="en", threshold=0.0)


def test_an_english_answer_prefers_the_en_twin():
    zh = _cand("doc-hsdp-zh", "HSDP把GPU按节点分组。", 0.9, lang="zh")
    picked = select_passages([zh], question="what does HSDP shard across nodes", language="en", threshold=0.0)
    assert picked and picked[0].id == "doc-hsdp" and picked[0].lang == "en"


def test_twin_ids():
    assert twin_id("doc-hsdp", "zh") == "doc-hsdp-zh"
    assert twin_id("doc-hsdp-zh", "en") == "doc-hsdp"
    assert twin_id("doc-zero-stages", "zh") == "doc-zero-stages-zh"
    assert twin_id("doc-no-such-doc", "zh") is None
    assert twin_id("forum-09", "en") is None


@pytest.mark.parametrize("rel,kept", [(0.02, False), (0.07, False), (0.08, True), (0.25, True), (0.8, True)])
def test_the_best_passage_needs_the_floor(rel, kept):
    """The retriever's best admissible passage needs TOP_PASSAGE_FLOOR (a long question covers a
    small share of the right doc's words); a quote sharing almost none of them is dropped."""
    cand = _cand("doc-zero-stages", "Stages 1 and 2 move the same volume.", rel)
    picked = select_passages([cand], question="what are ZeRO stages", language="en")
    assert bool(picked) == kept


@pytest.mark.parametrize("first,second,kept", [(0.8, 0.3, True), (0.8, 0.24, False), (0.3, 0.16, True),
                                               (0.3, 0.14, False), (0.12, 0.08, True), (0.12, 0.07, False)])
def test_the_others_need_half_the_best_and_at_most_the_threshold(first, second, kept):
    a = _cand("doc-zero-stages", "Stages 1 and 2 move the same volume.", first)
    b = _cand("doc-hsdp", "HSDP shards inside a node and replicates across nodes.", second)
    picked = select_passages([a, b], question="what are ZeRO stages", language="en")
    assert ("doc-hsdp" in [p.id for p in picked]) == kept


def test_relevance_is_the_covered_share_of_the_question():
    own = answering._own_weights(answering._keyword(), "FSDP gradient accumulation no_sync")
    full = relevance(own, "FSDP skips the gradient sync inside no_sync during accumulation.")
    none = relevance(own, "vLLM reserves GPU memory for the KV cache.")
    assert 0.5 < full <= 1.0 and none == 0.0
    assert relevance((), "anything") == 0.0


def test_kind_comes_from_the_corpus():
    p = answering._passage("forum-09", "我之前试过", 0.1, 0.9)
    assert p.kind == "forum" and p.lang == "zh"
    d = answering._passage("doc-hsdp", "HSDP splits the GPUs into groups (usually one group per node).", 0.1, 0.9)
    assert d.kind == "doc" and d.url.startswith("https://")
