"""Hybrid search over the forum and docs: BM25 over jieba tokens + dense vectors, fused by rank.

``search(query, k=5, kinds=("forum", "doc")) -> list[Hit]`` is what the bot, the CLI and the
evals call. How a query is answered:

1. Clean it: control characters become spaces, whitespace collapses, it is cut at
   :data:`MAX_QUERY_CHARS`. An empty query returns ``[]`` (the CLI turns that into a message).
2. Detect its language (:func:`bot.knowledge.glossary.detect_language`) and route it:
   - zh: BM25 reads the query plus the glossary's English terms; the dense path reads the query
     bridged into English (MiniLM cannot read Chinese). BM25 weighs more.
   - en: the dense path reads the query as is; BM25 reads it plus the glossary's Chinese terms, so
     the original forum text matches too. Equal weights.
3. Each path ranks chunks; chunks collapse to their entry (best rank wins); a weighted reciprocal
   rank fusion (Cormack et al., SIGIR 2009, https://plg.uwaterloo.ca/~gvcormac/cormacksigir09-rrf.pdf)
   orders the entries. ``Hit.score`` is that fused score: comparable within one query only.

Why not LangChain's ``EnsembleRetriever`` (langchain_classic): it returns documents without their
fused scores (``Hit.score`` needs them), gives every retriever the same query text (ours differ by
path), and fixes weights per instance (ours depend on the query's language). BM25 is
``rank_bm25.BM25Okapi`` over jieba tokens (k1 = 1.5, b = 0.75, its defaults); the dense path asks
a vector store for the nearest English chunks: the chromadb index
(:class:`bot.knowledge.index.IndexStore`), or with ``SHARDWISE_VECTOR_STORE=memory`` an in-memory
one (:class:`bot.knowledge.memory_store.MemoryStore`, what the unit tests use).

Document text is data: it is matched and returned, never interpreted.

Threads: the model, the vector store and the BM25 index live in one lazily built
:class:`Searcher`, created once per (embedding model, store) setting under a lock; queries only
read it.
"""

from __future__ import annotations

import logging
import re
import threading
import unicodedata
import warnings
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Protocol

from bot.knowledge import embeddings, glossary
from bot.knowledge.chunks import Chunk

log = logging.getLogger(__name__)

MAX_QUERY_CHARS = 2000
KINDS = ("forum", "doc")
CANDIDATES = 30  # chunks each path ranks before fusion (the corpus has a few hundred)
RRF_C = 10  # small: with a few hundred chunks the top ranks carry the signal
# (bm25 weight, dense weight) by query language; measured in evals/bench_retrieval.py
WEIGHTS = {"zh": (0.7, 0.3), "en": (0.5, 0.5)}


@dataclass(frozen=True)
class Hit:
    id: str  # corpus entry id: "forum-06", "doc-fsdp2"
    kind: str  # "forum" | "doc"
    title: str
    url: str
    score: float  # fused rank score, higher is better; compare within one query only
    lang: str  # the entry's language ("zh" for forum answers)
    text: str  # forum: the whole verbatim original; doc: the matching passage (verbatim slice)

    def to_dict(self) -> dict:
        return asdict(self)


# --------------------------------------------------------------------------------------------
# Text handling
# --------------------------------------------------------------------------------------------

_STOPWORDS = frozenset(
    "a an the and or of to in on for with is are was be it this that what which how do does i my me we "
    "you your can should would if vs than then at by as from about use using there so but not no get "
    "的 了 是 我 你 他 在 和 也 就 都 有 吗 呢 吧 啊 这 那 一个 还是 还 要 用 跑 上 会 能 个 让 把 得 着 过 "
    "说 想 其实 比较 如果 但 但是 不过 因为 所以 什么 怎么 可以 一下".split()
)
_WORD = re.compile(r"\w", re.UNICODE)
_jieba_lock = threading.Lock()
_jieba_ready = False


def _jieba():
    global _jieba_ready
    import jieba

    with _jieba_lock:
        if not _jieba_ready:
            from bot.env import configure_jieba

            configure_jieba()
            jieba.initialize()
            for word in glossary.jieba_words():
                jieba.add_word(word)
            _jieba_ready = True
    return jieba


def _normalize(token: str) -> str:
    token = token.lower()
    if re.fullmatch(r"\d+(\.\d+)?gb?", token):  # "40GB", "40G" and "40g" are the same card
        return token.rstrip("b")
    if not (token.isascii() and token.isalpha() and len(token) > 3):
        return token
    # A deliberately tiny English stemmer, applied alike to documents and queries, so that
    # shards/sharded/sharding meet shard and sequences/sequence meet sequenc.
    if token.endswith("ies") and len(token) > 4:
        token = token[:-3] + "y"
    elif token.endswith("es") and token[:-2].endswith(("ch", "sh", "x", "ss")):
        token = token[:-2]
    elif token.endswith("s") and (not token.endswith(("ss", "us", "is")) or token in ("gpus", "cpus", "tpus")):
        token = token[:-1]
    for suffix in ("ing", "ed"):
        if token.endswith(suffix) and len(token) - len(suffix) >= 4:
            token = token[: -len(suffix)]
            break
    if token.endswith("e") and len(token) > 4:
        token = token[:-1]
    return token


def tokenize(text: str) -> list[str]:
    """BM25 tokens for both languages: jieba's search-mode cut (which also splits English on
    spaces and punctuation), lowercased, light English stemming, stopwords and punctuation out."""
    tokens = []
    for raw in _jieba().cut_for_search(text):
        token = raw.strip()
        if not token or not _WORD.search(token):
            continue
        token = _normalize(token)
        if token not in _STOPWORDS:
            tokens.append(token)
    return tokens


def clean_query(query: str) -> str:
    """Control and format characters out, whitespace collapsed, cut to MAX_QUERY_CHARS."""
    if not isinstance(query, str):
        raise TypeError(f"query must be a string, got {type(query).__name__}")
    query = query[: MAX_QUERY_CHARS * 4]  # bound the work below on a huge paste
    chars = (" " if unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Co") else ch for ch in query)
    return re.sub(r"\s+", " ", "".join(chars)).strip()[:MAX_QUERY_CHARS]


# --------------------------------------------------------------------------------------------
# The searcher
# --------------------------------------------------------------------------------------------


def _dense_text(query: str, lang: str, bridge: bool) -> str:
    """A cleaned query as the English embedding model should see it: Chinese through the
    glossary (MiniLM reads most Chinese characters as [UNK])."""
    return glossary.to_english(query) if bridge and lang == "zh" else query


def _embeddable(text: str) -> bool:
    """Whether the English model has anything to read: no letter or digit, no dense search."""
    return re.search(r"[A-Za-z0-9]", text) is not None


class VectorStore(Protocol):
    """What the dense path needs of a store (chromadb's :class:`bot.knowledge.index.IndexStore`,
    or :class:`bot.knowledge.memory_store.MemoryStore`)."""

    @property
    def model(self) -> str:  # the embedding model setting its vectors were made with
        ...

    def nearest(self, vector: Sequence[float], k: int, kinds: Sequence[str]) -> list[str]: ...


@dataclass(frozen=True)
class _Ranked:
    entry_id: str
    chunk: Chunk


class Searcher:
    """BM25 over every chunk, dense search over the English chunks, and the fusion.

    ``store=None`` means BM25 only (the embedding model or the index could not be loaded).
    """

    def __init__(self, chunks: list[Chunk], store: VectorStore | None) -> None:
        from rank_bm25 import BM25Okapi

        if not chunks:
            raise ValueError("cannot search an empty corpus")
        self.chunks = {c.id: c for c in chunks}
        self.store = store
        self._bm25_ids = [c.id for c in chunks]
        self.bm25 = BM25Okapi([tokenize(c.text) for c in chunks])

    @property
    def idf(self) -> dict[str, float]:
        """token -> BM25 idf over every chunk (rare words weigh more)."""
        return dict(self.bm25.idf)

    # -- the two paths ------------------------------------------------------------------------

    def _bm25(self, query: str, kinds: Sequence[str]) -> list[_Ranked]:
        # Only chunks that share a token with the query (score > 0): a zero is not a match.
        scores = self.bm25.get_scores(tokenize(query))
        order = sorted(range(len(scores)), key=lambda i: scores[i], reverse=True)
        ranked = []
        for i in order[: CANDIDATES * 2]:
            chunk = self.chunks[self._bm25_ids[i]]
            if scores[i] > 0 and chunk.kind in kinds:
                ranked.append(_Ranked(chunk.entry_id, chunk))
        return ranked[:CANDIDATES]

    def _dense(self, query: str, kinds: Sequence[str]) -> list[_Ranked]:
        if self.store is None or not _embeddable(query):
            return []
        try:
            vector = embeddings.embed_queries([query], self.store.model)[0]
            found = self.store.nearest(vector, CANDIDATES, kinds)
        except Exception as err:  # a damaged store must not take the bot down: BM25 still answers
            log.warning("dense search failed (%s: %s); using BM25 only for this query", type(err).__name__, err)
            return []
        return [_Ranked(self.chunks[i].entry_id, self.chunks[i]) for i in found if i in self.chunks]

    # -- fusion -------------------------------------------------------------------------------

    def search(self, query: str, k: int = 5, kinds: Sequence[str] = KINDS, *, mode: str = "hybrid",
               bridge: bool = True) -> list[Hit]:
        """Ranked hits (see the module docstring). ``mode``: "hybrid", "bm25" or "dense";
        ``bridge=False`` turns the glossary off (both used by the retrieval benchmark)."""
        if isinstance(kinds, str):
            kinds = (kinds,)
        unknown = set(kinds) - set(KINDS)
        if unknown:
            raise ValueError(f"unknown kinds {sorted(unknown)}; use any of {KINDS}")
        if mode not in ("hybrid", "bm25", "dense"):
            raise ValueError(f"mode must be hybrid, bm25 or dense, got {mode!r}")
        query = clean_query(query)
        if not query or k <= 0:
            return []
        lang = glossary.detect_language(query)
        if not bridge:
            bm25_query = query
        elif lang == "zh":
            bm25_query = " ".join([query, *glossary.english_terms(query)])
        else:
            bm25_query = " ".join([query, *glossary.chinese_terms(query)])
        dense_query = _dense_text(query, lang, bridge)
        bm25_weight, dense_weight = WEIGHTS[lang]
        lists: list[tuple[float, list[_Ranked]]] = []
        if mode in ("hybrid", "bm25"):
            lists.append((bm25_weight if mode == "hybrid" else 1.0, self._bm25(bm25_query, kinds)))
        if mode in ("hybrid", "dense"):
            lists.append((dense_weight if mode == "hybrid" else 1.0, self._dense(dense_query, kinds)))
        return self._fuse(lists, k)

    def dense_query(self, query: str) -> str | None:
        """The text the dense half of :meth:`search` embeds for ``query`` (None: no dense search),
        so a caller can embed many questions in one batch beforehand
        (:func:`bot.knowledge.embeddings.embed_queries`)."""
        query = clean_query(query) if isinstance(query, str) else ""
        if self.store is None or not query:
            return None
        text = _dense_text(query, glossary.detect_language(query), True)
        return text if _embeddable(text) else None

    def _fuse(self, lists: list[tuple[float, list[_Ranked]]], k: int) -> list[Hit]:
        scores: dict[str, float] = {}
        best: dict[str, tuple[float, Chunk]] = {}  # entry -> (its best contribution, that chunk)
        for weight, ranked in lists:
            seen: set[str] = set()
            rank = 0
            for item in ranked:
                if item.entry_id in seen:  # one entry, one rank per list: its best chunk's
                    continue
                seen.add(item.entry_id)
                rank += 1
                contribution = weight / (RRF_C + rank)
                scores[item.entry_id] = scores.get(item.entry_id, 0.0) + contribution
                if contribution > best.get(item.entry_id, (-1.0, None))[0]:
                    best[item.entry_id] = (contribution, item.chunk)
        ordered = sorted(scores, key=lambda e: (-scores[e], e))[:k]
        return [self._hit(best[e][1], scores[e]) for e in ordered]

    def _hit(self, chunk: Chunk, score: float) -> Hit:
        if chunk.kind == "forum":
            passage = self.chunks[f"{chunk.entry_id}#zh"].passage  # always the verbatim original
        else:
            passage = chunk.passage
        return Hit(id=chunk.entry_id, kind=chunk.kind, title=chunk.title, url=chunk.url,
                   score=round(score, 5), lang=chunk.lang, text=passage)


# --------------------------------------------------------------------------------------------
# The process-wide searcher
# --------------------------------------------------------------------------------------------

_defaults: dict[tuple[str, str], Searcher] = {}  # (embedding model, store) -> its searcher
_default_lock = threading.Lock()


def _open_store(chunks: list[Chunk]) -> VectorStore:
    from bot.knowledge.memory_store import MemoryStore, store_setting

    if store_setting() == "memory":
        return MemoryStore.build(chunks)
    from bot.knowledge.embeddings import load_model
    from bot.knowledge.index import ensure_index

    load_model()
    return ensure_index(chunks)


def default_searcher() -> Searcher:
    """Built once per process (per embedding model and store setting): corpus chunks, the vector
    store (the chromadb index, built/repaired if needed; or the in-memory one), the model.

    If the embedding model or the index cannot be loaded, search still works with BM25 only, and
    a warning says so.
    """
    from bot.knowledge.memory_store import store_setting

    key = (embeddings.model_setting(), store_setting())
    found = _defaults.get(key)
    if found is not None:
        return found
    with _default_lock:
        if key not in _defaults:
            from bot.knowledge.chunks import corpus_chunks

            chunks = corpus_chunks()
            store = None
            try:
                store = _open_store(chunks)
            except Exception as err:  # no model, a broken chroma, a full disk: degrade, don't crash
                message = f"dense search unavailable ({type(err).__name__}: {err}); using BM25 only"
                warnings.warn(message, RuntimeWarning, stacklevel=3)
            _defaults[key] = Searcher(chunks, store)
    return _defaults[key]


def reset() -> None:
    """Forget the process-wide searchers (after an ingest in the same process, or in tests)."""
    global _keyword
    with _default_lock:
        _defaults.clear()
        _keyword = None


def search(query: str, k: int = 5, kinds: Sequence[str] = KINDS, *, mode: str = "hybrid") -> list[Hit]:
    """Top ``k`` corpus entries for ``query`` (zh or en), best first, one hit per entry.

    Returns ``[]`` for an empty or whitespace-only query; queries over MAX_QUERY_CHARS are cut.
    Raises ValueError only for a bad ``kinds`` or ``mode``.
    """
    return default_searcher().search(query, k=k, kinds=kinds, mode=mode)


_keyword: Searcher | None = None


def keyword_searcher() -> Searcher:
    """A BM25-only searcher over the corpus chunks: no embedding model, no index, built in well
    under a second. For fixed keyword queries, and the fallback when the hybrid one cannot load."""
    global _keyword
    if _keyword is None:
        with _default_lock:
            if _keyword is None:
                from bot.knowledge.chunks import corpus_chunks

                _keyword = Searcher(corpus_chunks(), None)
    return _keyword
