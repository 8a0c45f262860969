"""docs/knowledge.md reports the corpus as it is: its counts are recomputed here."""

from __future__ import annotations

from bot.env import repo_root
from bot.knowledge.stats import corpus_stats


def test_knowledge_doc_counts_match_the_corpus():
    text = (repo_root() / "docs" / "knowledge.md").read_text(encoding="utf-8")
    s = corpus_stats()
    expected = [
        f"**{s.docs} docs** ({s.docs_by_lang.get('en', 0)} English, {s.docs_by_lang.get('zh', 0)} Chinese)",
        f"**{s.doc_statements} statements**", f"**{s.sources} sources**", f"**{s.calc_tags} calc tags**",
        f"**{s.forum_answers} answers**", f"**{s.claims} claims**, {s.conditioned_claims} of them with a condition",
        "**" + ", ".join(f"{s.verdicts.get(v, 0)} {v}" for v in
                         ("supported", "holds_only_when", "misleading", "contradicted", "unverifiable")) + "**",
    ]
    for phrase in expected:
        assert phrase in text, phrase


def test_every_question_topic_with_a_forum_claim_is_counted():
    s = corpus_stats()
    assert s.claims == sum(s.verdicts.values())
    assert {"oom", "communication", "fsdp_slower_than_ddp", "grad_accumulation"} <= set(s.topics)
