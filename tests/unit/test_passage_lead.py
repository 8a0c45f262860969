"""Which passage may open an answer (bot.knowledge.answering.select_passages): one in the answer's
language, and a doc tagged with a topic the reader found opens it whatever its share of a long
question's words (gold_threads torchtune2402: a Chinese forum post opened an English FSDP2 answer once
the doc's share fell under the floor by an index change)."""

from __future__ import annotations

from bot.knowledge.answering import Passage, select_passages


def _p(entry_id: str, lang: str, kind: str, relevance: float) -> Passage:
    return Passage(id=entry_id, kind=kind, title=entry_id, url="https://example.org", quote=f"{entry_id} quote",
                   score=0.1, lang=lang, relevance=relevance)


CANDIDATES = [_p("doc-hsdp", "en", "doc", 0.05), _p("forum-09", "zh", "forum", 0.45)]


def test_a_doc_on_the_questions_topic_opens_the_answer_and_the_other_language_follows():
    out = select_passages(CANDIDATES, question="", language="en", topics=("hybrid_shard",))
    assert [p.id for p in out] == ["doc-hsdp", "forum-09"]


def test_without_the_topic_a_low_doc_is_dropped_and_the_other_language_never_opens():
    assert select_passages(CANDIDATES, question="", language="en", topics=()) == []


def test_a_passage_in_the_answers_language_opens_as_before():
    out = select_passages([_p("forum-09", "zh", "forum", 0.45)], question="", language="zh", topics=())
    assert [p.id for p in out] == ["forum-09"]
