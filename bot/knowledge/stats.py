"""Counts that describe the corpus (reported in docs/knowledge.md; a test keeps them in step)."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from bot.knowledge import calc_tags
from bot.knowledge.corpus import all_claims, load_docs, load_forum
from bot.knowledge.sentences import quotable_units

_URL = re.compile(r"https?://[^\s)>\]]+")


@dataclass(frozen=True)
class CorpusStats:
    docs: int
    docs_by_lang: dict[str, int]
    doc_statements: int  # quotable sentences and one-line list items in the docs
    forum_answers: int
    claims: int
    verdicts: dict[str, int]
    conditioned_claims: int  # claims whose verdict carries a condition
    sources: int  # distinct URLs cited by the docs (front matter and inline)
    calc_tags: int
    topics: dict[str, int] = field(default_factory=dict)  # claims per question topic


def corpus_stats(root=None) -> CorpusStats:
    docs = load_docs(root)
    claims = all_claims(root)
    urls: set[str] = set()
    for doc in docs:
        urls.update(u.rstrip(".,;") for u in doc.urls)
        urls.update(u.rstrip(".,;") for u in _URL.findall(doc.text))
    topics = Counter(t for c in claims for t in c.topics)
    return CorpusStats(
        docs=len(docs), docs_by_lang=dict(Counter(d.lang for d in docs)),
        doc_statements=sum(len(quotable_units(d.text)) for d in docs),
        forum_answers=len(load_forum(root)), claims=len(claims),
        verdicts=dict(Counter(c.verdict for c in claims)),
        conditioned_claims=sum(1 for c in claims if c.condition),
        sources=len(urls), calc_tags=len(calc_tags.check_docs(root)), topics=dict(topics),
    )
