"""The knowledge the answer pipeline calls for every question: the passages that answer it.

- :func:`retrieve_passages` sends the question (plus hints for its parsed topics and setup) through
  the hybrid chromadb + BM25 search (:mod:`bot.knowledge.search`) and returns, for the best
  entries, a quote that answers it: whole sentences copied verbatim from that entry, so every
  citation's quote is a substring of ``corpus_text(id)``.
- Passage selection (:func:`select_passages`, issue 25): a passage is kept only when its quote
  covers at least :data:`RELEVANCE_THRESHOLD` (per language) of the question's own weighted words (measured on
  the labelled set in ``evals/retrieval_queries.jsonl`` by ``python -m evals.bench_relevance``);
  serving/inference docs never appear in a training answer; a Chinese answer quotes the zh twin
  of an English doc (and drops English docs without one), an English answer the en twin of a zh
  doc; a passage's ``kind`` is the corpus entry's own (a forum post is never labelled a doc); a
  claim about another thread's setup (:mod:`bot.knowledge.case_claims`) opens an answer only where
  that setup or its topic matches the asker's, else it is quoted anew without its case sentences or
  follows a passage that may lead.
- The forum claims beside the passages are :mod:`bot.knowledge.forum_claims`'
  (:func:`~bot.knowledge.forum_claims.applicable_claims`).

Speed: the searcher (embedding model, chroma client, BM25) is built once per process and reused;
sentence splitting and tokenizing of each entry is cached; results are cached per question. If the
hybrid searcher cannot be built (no model, broken index) BM25 alone answers.
"""

from __future__ import annotations

import logging
import math
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from bot.knowledge import conditions, glossary
from bot.knowledge.sentences import quotable_units

log = logging.getLogger(__name__)

KINDS = ("doc", "forum")
MAX_QUOTE_CHARS = 360  # a quote is one or two sentences: enough to answer, short enough to read
MIN_QUOTE_CHARS = 30  # shorter "sentences" are headings in disguise ("Stage" is DeepSpeed's word.)
_CANDIDATES = 10  # search hits examined for a quotable sentence
_LINK_TARGET = re.compile(r"\]\([^)]*\)")
# A sentence that opens by pointing back ("这正是...", "This is why...") is quoted with the one before.
_ANAPHORA = re.compile(r"^(这|那|此|它|其|这些|因此|所以|This\b|That\b|These\b|Those\b|It\b|So\b|Thus\b)")


@dataclass(frozen=True)
class Passage:
    """A cited passage: ``quote`` is verbatim complete sentences of entry ``id``."""

    id: str  # "doc-hsdp", "forum-09"
    kind: str  # "doc" | "forum"
    title: str
    url: str
    quote: str
    score: float  # the search's fused score (comparable within one question only)
    lang: str = "en"  # the entry's language
    # Share of the question's own weighted words the quote covers, 0..1 (comparable across
    # questions; the selection threshold is RELEVANCE_THRESHOLD).
    relevance: float = 0.0


# --------------------------------------------------------------------------------------------
# Topic hints: words added to the query for each parsed topic (bot.understand.TOPICS)
# --------------------------------------------------------------------------------------------

TOPIC_HINTS: dict[str, tuple[str, str]] = {
    "fsdp1_vs_fsdp2": ("FSDP1 FSDP2 fully_shard FlatParameter DTensor per-parameter sharding",
                       "FSDP1 FSDP2 fully_shard 区别 DTensor"),
    "shard_grad_op_vs_full_shard": ("SHARD_GRAD_OP FULL_SHARD reshard_after_forward ZeRO-2 ZeRO-3",
                                    "SHARD_GRAD_OP FULL_SHARD reshard_after_forward ZeRO-2 ZeRO-3"),
    "zero_vs_fsdp": ("DeepSpeed ZeRO stage 1 2 3 offload ZeRO++ compared with FSDP",
                     "DeepSpeed ZeRO 阶段 offload 与 FSDP 对应"),
    "hybrid_shard": ("HYBRID_SHARD HSDP shard within node replicate across nodes",
                     "HYBRID_SHARD HSDP 混合分片 节点内分片 跨节点复制"),
    "activation_checkpointing": ("activation checkpointing recomputation activation memory",
                                 "激活检查点 重计算 激活值 显存"),
    "ddp_memory_knobs": ("gradient_as_bucket_view fused AdamW foreach temporaries DDP bucket memory",
                         "gradient_as_bucket_view fused AdamW foreach 临时 DDP 显存"),
    "fsdp_slower_than_ddp": ("why FSDP slower than DDP all-gather exposed prefetch wrap policy small micro-batch",
                             "FSDP 比 DDP 慢 原因 all-gather 预取 wrap 小批量"),
    "multi_node_slow": ("multi-node slow inter-node bandwidth NIC NCCL all-reduce",
                        "多机 慢 跨节点 带宽 网卡 NCCL"),
    "oom": ("out of memory OOM per-GPU memory", "显存 OOM 爆显存"),
    "memory_not_divided": ("per-GPU memory does not drop with more GPUs activations not sharded ZeRO-2 ZeRO-3 LoRA",
                           "加卡 每卡显存 不变 激活值 不分片 ZeRO-2 ZeRO-3 LoRA"),
    "grad_accumulation": ("gradient accumulation no_sync set_requires_gradient_sync micro-batch",
                          "梯度累积 no_sync set_requires_gradient_sync"),
    "cpu_offload": ("CPU offload host memory CPUOffload", "CPU offload 卸载 内存"),
    "lora": ("LoRA QLoRA adapters frozen base weights", "LoRA QLoRA 适配器 冻结"),
    "multi_model_rl": ("PPO GRPO policy reference reward critic models memory rollout",
                       "PPO GRPO 策略 参考模型 奖励模型 显存"),
    "moe": ("mixture of experts MoE expert parallel all-to-all", "MoE 专家并行 all-to-all"),
    "how_many_gpus": ("how many GPUs memory per GPU sharded model state", "需要 多少 卡 显存"),
    "communication": ("communication volume all-reduce all-gather reduce-scatter bytes",
                      "通信量 all-reduce all-gather reduce-scatter"),
    "mixed_precision": ("mixed precision bf16 fp16 param_dtype reduce_dtype GradScaler",
                        "混合精度 bf16 fp16 reduce_dtype"),
    "torch_compile": ("torch.compile FSDP use_orig_params compile", "torch.compile FSDP 编译"),
    "inference": ("inference serving KV cache", "推理 部署"),
}

# --------------------------------------------------------------------------------------------
# Passages
# --------------------------------------------------------------------------------------------


def retrieve_passages(question: str, *, language: str, topics: Sequence[str] = (), setup: Any = None,
                      k: int = 3, kinds: Sequence[str] = KINDS, params_b: float | None = None,
                      asker: Any = None) -> list[Passage]:
    """The ``k`` corpus passages that best answer ``question``, best first, one per entry.

    ``topics`` are parsed topic ids (bot.understand.TOPICS; unknown ones are ignored); ``setup``
    (TrainingSetup / ResolvedSetup / None) adds a few words (LoRA, multi-node). A quote is whole
    sentences of the entry, verbatim; an entry with no sentence sharing a term with the question
    is skipped. ``params_b`` (else the setup's size) keeps out sentences whose figure the docs
    compute for another model size (``best_quote``). ``asker`` (a
    :class:`bot.knowledge.case_claims.Asker`; by default read from the question, the topics and
    the size) decides which claims about another thread's setup may open (``select_passages``).
    Empty question and no topics -> ``[]``. Never raises on odd input."""
    if not isinstance(question, str) or k <= 0:
        return []
    kinds = tuple(kind for kind in kinds if kind in KINDS) or KINDS
    topic_key = tuple(dict.fromkeys(t for t in (topics or ()) if t in TOPIC_HINTS))
    size = params_b or conditions.facts(setup)[0].get("params_b")
    return list(_retrieve(question, "zh" if language == "zh" else "en", topic_key, _setup_words(setup),
                          int(k), kinds, float(size) if size else None, asker))


@lru_cache(maxsize=512)
def _retrieve(question: str, language: str, topics: tuple[str, ...], setup_words: str, k: int,
              kinds: tuple[str, ...], params_b: float | None = None, asker: Any = None) -> tuple[Passage, ...]:
    from bot.knowledge.search import clean_query

    question = clean_query(question)
    hints = " ".join(TOPIC_HINTS[t][1 if language == "zh" else 0] for t in topics)
    query = " ".join(p for p in (question, hints, setup_words) if p)
    if not query:
        return ()
    candidates = _candidates(question, query, hints, setup_words, kinds, language, params_b)
    if asker is None and question:
        from bot.knowledge.case_claims import asker_facts

        asker = asker_facts(question, topics=topics, params_b=params_b, setup_words=setup_words)
    return tuple(select_passages(candidates, question=question, language=language, topics=topics, k=k,
                                 params_b=params_b, hints=hints, setup_words=setup_words, asker=asker))


def _candidates(question: str, query: str, hints: str, setup_words: str, kinds: tuple[str, ...],
                language: str, params_b: float | None) -> list[Passage]:
    """Every ranked entry with a quotable sentence, best first, with its relevance (unfiltered)."""
    searcher = _searcher()
    hits = _ranked(searcher, question, query, kinds, language)
    weights = _query_weights(searcher, question, hints, setup_words)
    own = _own_weights(searcher, question or hints)  # topics alone: relevance to their hint words
    out: list[Passage] = []
    for hit in hits:
        quote = best_quote(hit.id, weights, params_b=params_b)
        if quote:
            out.append(_passage(hit.id, quote, hit.score, entry_relevance(own, hit.id, quote)))
    return out


def _passage(entry_id: str, quote: str, score: float, rel: float) -> Passage:
    """A Passage whose kind, title, url and language are the corpus entry's own."""
    from bot.knowledge.corpus import get_entry

    entry = get_entry(entry_id)
    return Passage(id=entry.id, kind=entry.kind, title=entry.title, url=entry.url, quote=quote,
                   score=score, lang=entry.lang, relevance=round(rel, 4))


# --------------------------------------------------------------------------------------------
# Passage selection: relevance threshold, serving corpus, language (issue 25)
# --------------------------------------------------------------------------------------------

# Chosen per answer language on evals/retrieval_queries.jsonl (python -m evals.bench_relevance
# --sweep): the cut that removes most labelled off-topic passages while keeping the gold ones.
# Measured with the rules below (96 queries, k = 3): off-topic passages en 14.6% -> 5.2%, zh 8.3%
# -> 2.2%, gold kept 95.8% in both; Chinese words are jieba tokens, so zh coverage runs lower.
RELEVANCE_THRESHOLD: dict[str, float] = {"en": 0.25, "zh": 0.2}
# The retriever's best admissible passage needs only this floor: relevance is the share of the
# question's words a quote covers, so a long real question covers a smaller share of the right doc
# (the gold threads' answering docs measure 0.09-0.18, the short labelled queries 0.25+); a quote
# sharing almost none of the question's words is still dropped.
TOP_PASSAGE_FLOOR = 0.08
# Corpus topics that mark a doc as serving/inference text (doc-serving-large-models and its twin).
SERVING_TOPICS = frozenset({"serving", "inference"})
# Without parsed topics, a question is about serving when it says so and not about training.
# Corpus topics that mark a doc as RL text (doc-rl-multi-model-memory and its twin): quoted only
# where the message names an RL method (a plain DDP hang or OOM was opened with the PPO doc).
RL_TOPICS = frozenset({"rl", "ppo", "grpo", "dpo", "rlhf"})
_SERVING_WORDS = re.compile(r"(?i)\bserv(e|ing)\b|\binference\b|\bdeploy|推理|部署|上线服务")
_TRAINING_WORDS = re.compile(r"(?i)train|fine-?tun|\bsft\b|\bppo\b|\bgrpo\b|\bdpo\b|rlhf|rollout|训练|微调|强化学习")


def asks_about_serving(question: str, topics: Sequence[str] = ()) -> bool:
    """Whether serving/inference passages may answer this question: the parsed topics say
    "inference", or (no topics parsed) the text asks about serving and not about training; and
    in both cases the message's subject is serving, not a training run that names inference in
    passing (bot.understand.intent.serving_subject): a training answer never quotes a serving doc,
    whatever topic an inference word added."""
    from bot.understand.scope import names_inference, serving_subject

    text = question or ""
    if topics:  # the text vetoes only where it names inference beside a training run
        return "inference" in topics and not (names_inference(text) and not serving_subject(text))
    return bool(_SERVING_WORDS.search(text)) and not _TRAINING_WORDS.search(text) and serving_subject(text)


def _is_serving(entry_id: str) -> bool:
    from bot.knowledge.corpus import get_entry

    entry = get_entry(entry_id)
    return bool(SERVING_TOPICS & set(getattr(entry, "topics", ()) or ()))


def _on_topic(entry_id: str, topics: Sequence[str]) -> bool:
    """Whether the entry is tagged with a topic the reader found in the question (corpus tags are
    written with hyphens, the reader's with underscores)."""
    from bot.knowledge.corpus import get_entry

    try:
        tags = {t.replace("-", "_") for t in getattr(get_entry(entry_id), "topics", ()) or ()}
    except KeyError:
        return False
    return bool(tags & set(topics))


def _is_rl(passage: Passage) -> bool:
    """An RL passage: its corpus entry is tagged with an RL topic, or its quote names an RL method."""
    from bot.knowledge.corpus import get_entry
    from bot.understand.intent import names_rl

    try:
        topics = set(getattr(get_entry(passage.id), "topics", ()) or ())
    except KeyError:
        topics = set()
    return bool(RL_TOPICS & topics) or names_rl(passage.quote)


def twin_id(entry_id: str, language: str) -> str | None:
    """The doc in ``language`` that shares ``entry_id``'s content ("doc-hsdp" <-> "doc-hsdp-zh"), if any."""
    from bot.knowledge.corpus import get_entry

    if not entry_id.startswith("doc-"):
        return None
    twin = entry_id + "-zh" if language == "zh" and not entry_id.endswith("-zh") else \
        entry_id[:-3] if language == "en" and entry_id.endswith("-zh") else None
    if twin is None:
        return None
    try:
        return get_entry(twin).id
    except KeyError:
        return None


def select_passages(candidates: Sequence[Passage], *, question: str, language: str, topics: Sequence[str] = (),
                    k: int = 3, params_b: float | None = None, hints: str = "", setup_words: str = "",
                    threshold: float | None = None, asker: Any = None) -> list[Passage]:
    """The passages an answer may quote, best first, at most ``k``:

    - serving/inference docs only when the question is about serving (:func:`asks_about_serving`);
    - RL passages (PPO, GRPO, reward models) only when the question names an RL method
      (:func:`bot.understand.intent.names_rl`): such a passage would open the answer otherwise;
    - a doc in the other language is replaced by its twin in the answer's language (quoted anew
      with the same query weights); a Chinese answer drops English docs without a twin;
    - only quotes whose relevance reaches ``threshold`` (default: RELEVANCE_THRESHOLD for the
      answer's language); one passage per entry;
    - with an ``asker`` (:func:`bot.knowledge.case_claims.asker_facts`), a claim about another
      thread's setup opens the answer only where :func:`~bot.knowledge.case_claims.may_lead` says
      it speaks to the asker; otherwise its entry is quoted anew without case sentences, and failing
      that the claim waits until a passage that may lead has opened (none: it is left out)."""
    language = "zh" if language == "zh" else "en"
    cut = RELEVANCE_THRESHOLD[language] if threshold is None else float(threshold)
    serving_ok = asks_about_serving(question, topics)
    from bot.understand.intent import names_rl

    rl_ok = names_rl(question) if question else names_rl(hints)
    out: list[Passage] = []
    seen: set[str] = set()
    waiting: list[Passage] = []  # case claims that may not open this answer, in rank order
    weights = own = None

    def query_weights():
        nonlocal weights, own
        if weights is None:
            searcher = _searcher()
            weights = _query_weights(searcher, question, hints, setup_words)
            own = _own_weights(searcher, question or hints)
        return weights, own or ()

    def bar_for(p: Passage) -> float:
        # the best passage sets the bar for the others: half its relevance (a long question's
        # share is low for every doc), never above the language's threshold nor below the floor;
        # a doc on a topic the reader found in the question opens an answer whatever its share
        if out:
            return min(cut, max(TOP_PASSAGE_FLOOR, 0.5 * out[0].relevance))
        return 0.0 if p.kind == "doc" and _on_topic(p.id, topics) else min(cut, TOP_PASSAGE_FLOOR)

    def add(p: Passage) -> bool:
        if p.id in seen or p.relevance < bar_for(p):
            return False
        seen.add(p.id)
        out.append(p)
        return True

    for cand in candidates:
        p = cand
        if not serving_ok and _is_serving(p.id):
            continue
        if not rl_ok and _is_rl(p):
            continue
        if p.kind == "doc" and p.lang != language:
            twin = twin_id(p.id, language)
            if twin is None and language == "zh":
                continue  # a Chinese answer has no English paragraphs
            if twin is not None:
                w, o = query_weights()
                quote = best_quote(twin, w, params_b=params_b)
                if not quote:
                    continue
                p = _passage(twin, quote, p.score, entry_relevance(o, twin, quote))
        if not out and p.lang != language:
            continue  # a passage in the other language may support an answer, never open it
        if not out and asker is not None and p.id not in seen and not _may_open(p, asker):
            # another thread's case that is not the asker's: the entry's general sentences may
            # still open (a doc quoted anew without its case sentences), the case itself only later
            general = _without_cases(p, query_weights, params_b) if p.kind == "doc" else None
            if general is None or not add(general):
                waiting.append(p)
            continue
        if not add(p):
            continue
        if len(out) == 1 and waiting:  # an answer has opened: the claims that waited may follow
            for held in waiting:
                if len(out) < k:
                    add(held)
            waiting.clear()
        if len(out) >= k:
            break
    return out[:k]


def _may_open(p: Passage, asker: Any) -> bool:
    from bot.knowledge.case_claims import case_setup, may_lead

    return may_lead(case_setup(p.id, p.kind, p.quote), asker)


def _without_cases(p: Passage, query_weights, params_b: float | None) -> Passage | None:
    """The passage's entry quoted anew from its sentences that report no case, or None."""
    from bot.knowledge.case_claims import case_setup

    weights, own = query_weights()
    quote = best_quote(p.id, weights, params_b=params_b,
                       avoid=lambda unit: case_setup(p.id, p.kind, unit) is not None)
    if not quote:
        return None
    return _passage(p.id, quote, p.score, entry_relevance(own, p.id, quote))


def retrieve_candidates(question: str, *, language: str, topics: Sequence[str] = (), setup: Any = None,
                        params_b: float | None = None) -> list[Passage]:
    """Every entry the search ranks for ``question`` that has a quotable sentence, with its
    relevance, before selection (the relevance eval compares these with the selected ones)."""
    from bot.knowledge.search import clean_query

    if not isinstance(question, str):
        return []
    lang = "zh" if language == "zh" else "en"
    topic_key = tuple(dict.fromkeys(t for t in (topics or ()) if t in TOPIC_HINTS))
    q = clean_query(question)
    hints = " ".join(TOPIC_HINTS[t][1 if lang == "zh" else 0] for t in topic_key)
    setup_words = _setup_words(setup)
    query = " ".join(p for p in (q, hints, setup_words) if p)
    if not query:
        return []
    size = params_b or conditions.facts(setup)[0].get("params_b")
    return _candidates(q, query, hints, setup_words, KINDS, lang, float(size) if size else None)


_SAME_LANGUAGE_BONUS = 1.3
_HINT_WEIGHT = 0.3  # the topic-hinted BM25 list against the question's own hybrid ranking (~1.0)


def _ranked(searcher, question: str, query: str, kinds: tuple[str, ...], language: str = "en"):
    """Entries ranked for the question: the hybrid search of the question as asked, plus a
    lighter BM25 list for the question with its topic and setup hints (hints must not drown
    the question's own words, and BM25 costs well under a millisecond)."""
    n = max(_CANDIDATES, 12)
    lists = []
    try:
        if question:
            lists.append((1.0, searcher.search(question, k=n, kinds=kinds)))
    except Exception as err:  # a damaged store: BM25 alone still answers
        log.warning("hybrid search failed (%s); using BM25 only", err)
        lists.append((1.0, _keyword().search(question, k=n, kinds=kinds, mode="bm25")))
    if query != question or not lists:
        lists.append((_HINT_WEIGHT if question else 1.0, _keyword().search(query, k=n, kinds=kinds, mode="bm25")))
    scores: dict[str, float] = {}
    first: dict[str, Any] = {}
    for weight, hits in lists:
        for rank, hit in enumerate(hits, 1):
            # reciprocal rank, as the search's own fusion (bot.knowledge.search.RRF_C)
            scores[hit.id] = scores.get(hit.id, 0.0) + weight / (10 + rank)
            first.setdefault(hit.id, hit)
    for entry, hit in first.items():
        if hit.kind == "doc" and hit.lang == language:  # a doc in the answer's language reads better
            scores[entry] *= _SAME_LANGUAGE_BONUS
    order = sorted(scores, key=lambda e: (-scores[e], e))
    return [first[e].__class__(**{**first[e].to_dict(), "score": round(scores[e], 5)}) for e in order]


def _setup_words(setup: Any) -> str:
    known, _ = conditions.facts(setup)
    words = []
    if known.get("finetune") in ("lora", "qlora"):
        words.append(str(known["finetune"]).replace("qlora", "QLoRA").replace("lora", "LoRA"))
    if known.get("multi_node"):
        words.append("multi-node inter-node")
    return " ".join(words)


_search_lock = threading.Lock()


def _searcher():
    """The process-wide hybrid searcher; the BM25 one if the hybrid cannot be built."""
    from bot.knowledge.search import default_searcher

    try:
        return default_searcher()
    except Exception as err:  # default_searcher degrades itself; this is belt and braces
        log.warning("hybrid searcher unavailable (%s); using BM25 only", err)
        return _keyword()


def _keyword():
    from bot.knowledge.search import keyword_searcher

    return keyword_searcher()


def prefetch_query_vectors(questions: Sequence[str]) -> int:
    """Embed the dense-search text of several questions in one batch before they are answered
    one by one (each answer then finds its vector cached); returns how many were embedded.
    Never raises: a failure only means each answer embeds its own question."""
    try:
        searcher = _searcher()
        texts = [t for q in questions if isinstance(q, str) and (t := searcher.dense_query(q))]
        if len(texts) < 2:  # one question gains nothing from a batch
            return 0
        from bot.knowledge.embeddings import embed_queries

        return len(embed_queries(texts))
    except Exception as err:  # noqa: BLE001
        log.warning("batched query embedding failed (%s); embedding one at a time", err)
        return 0


def warm_up() -> None:
    """Build the searcher and the sentence caches now (the first question then pays nothing)."""
    searcher = _searcher()
    from bot.knowledge.corpus import all_entries

    for entry in all_entries():
        _units(entry.text)
    _ = searcher


def _query_weights(searcher, question: str, hints: str, setup_words: str) -> dict[str, float]:
    """Token -> weight for choosing a sentence: the question's own words count fully, its glossary
    bridge (so an English question can pick a Chinese forum sentence and back) and topic hints
    count half. Weight = the BM25 index's idf of the token (rare words decide)."""
    idf = _idf(searcher)
    default = max(idf.values()) if idf else 1.0
    weights: dict[str, float] = {}
    bridge = " ".join([*glossary.english_terms(question), *glossary.chinese_terms(question)])
    for text, factor in ((question, 1.0), (bridge, 0.6), (hints, 0.5), (setup_words, 0.3)):
        for token in _tokens(text) if text else ():
            w = max(0.05, float(idf.get(token, default))) * factor
            weights[token] = max(weights.get(token, 0.0), w)
    return weights


def _own_weights(searcher, question: str) -> tuple[dict[str, float], dict[str, float]]:
    """The question's own words and, separately, their glossary bridge (the other language's
    terms), each token weighted by its idf: what :func:`relevance` measures coverage of."""
    idf = _idf(searcher)
    default = max(idf.values()) if idf else 1.0
    bridge = " ".join([*glossary.english_terms(question), *glossary.chinese_terms(question)])
    return tuple({t: max(0.05, float(idf.get(t, default))) for t in (_tokens(text) if text else ())}  # type: ignore[return-value]
                 for text in (question, bridge))


def entry_relevance(own: Any, entry_id: str, quote: str) -> float:
    """How well a quoted entry answers the question: the quote's coverage, or the mean of the
    quote's and the entry title's coverage when higher (a doc titled with the question's words
    is on topic even when its best sentence words things differently)."""
    from bot.knowledge.corpus import get_entry

    quote_cov = relevance(own, quote)
    try:
        title = get_entry(entry_id).title
    except KeyError:
        return quote_cov
    return max(quote_cov, (quote_cov + relevance(own, title)) / 2)


def relevance(own: Any, quote: str) -> float:
    """Share (0..1) of the question's weighted words that ``quote`` contains: the better of its
    own words and their glossary bridge (a zh question answered by an English sentence)."""
    if not own or not quote:
        return 0.0
    tokens = _tokens(_LINK_TARGET.sub("", quote))
    best = 0.0
    for weights in own:
        total = sum(weights.values())
        if total > 0:
            best = max(best, sum(w for t, w in weights.items() if t in tokens) / total)
    return best


def _idf(searcher) -> dict[str, float]:
    try:
        return searcher.idf
    except Exception:
        return {}


# Phrases that ask the same thing in a question and in a sentence ("放得下?" is answered by "放不下",
# "80G" by "80 GB"): rewritten to one form before a sentence is scored. Retrieval is unchanged.
_SAME_MEANING = (
    (re.compile(r"[放装塞][得不]下|放进|放得进"), " 放下 "),
    (re.compile(r"(?i)(\d+(?:\.\d+)?)\s?(?:GB|GiB|G)(?![A-Za-z])"), r" \1GB "),
    (re.compile(r"(?i)\b(?:doubles?|doubling|twice)\b|翻倍|两倍"), " double2x "),
    (re.compile(r"(?i)\bfits?\b|\bfitting\b"), " fit "),
)


@lru_cache(maxsize=8192)
def _tokens(text: str) -> frozenset[str]:
    # Cached: the same titles and quotes are scored against every question (jieba is the cost).
    from bot.knowledge.search import tokenize

    for pattern, replacement in _SAME_MEANING:
        text = pattern.sub(replacement, text)
    return frozenset(tokenize(text))


@lru_cache(maxsize=256)
def _units(text: str) -> tuple[tuple[str, frozenset[str]], ...]:
    """An entry's quotable sentences with their BM25 tokens (cached per entry text)."""
    # Link targets are not words of the sentence: they would only dilute its score.
    return tuple((unit, frozenset(_tokens(_LINK_TARGET.sub("", unit)))) for unit in quotable_units(text)
                 if MIN_QUOTE_CHARS <= len(unit) <= MAX_QUOTE_CHARS)


# A figure the docs compute for one model size is tagged with it ("... 104.3 GiB of model state.
# <!-- calc: states_gib params_b=7 ... -->", bot.knowledge.calc_tags).
_SIZED_TAG = re.compile(r"\s*<!--\s*calc:[^>]*?\bparams_b=(\d+(?:\.\d+)?)")
SIZE_TOLERANCE = 0.3  # the same threshold as a forum claim about a model size (_relevant)


def _other_size(text: str, unit: str, params_b: float | None) -> bool:
    """Whether the calc tag right after ``unit`` computes its figure for a model size more than
    SIZE_TOLERANCE away from ``params_b`` (False when either is unknown)."""
    at = text.find(unit)
    m = _SIZED_TAG.match(text, at + len(unit)) if at >= 0 and params_b else None
    return bool(m and params_b and abs(float(m.group(1)) - params_b) / params_b > SIZE_TOLERANCE)


def best_quote(entry_id: str, weights: dict[str, float], *, params_b: float | None = None,
               avoid: Any = None) -> str:
    """The verbatim sentence(s) of ``entry_id`` that share the most weight with the query.

    One sentence; the next one is appended (with the exact text between them) when it also
    matches and both fit in MAX_QUOTE_CHARS. "" when no sentence shares a term. With the user's
    model size ``params_b``, a sentence whose figure the docs compute for a size more than 30%
    away ("104.3 GiB of model state" for 7B, in an answer about 32B) is not quoted, nor a sentence
    for which ``avoid(sentence)`` is true (nor is one joined to the quote)."""
    from bot.knowledge.corpus import corpus_text

    try:
        text = corpus_text(entry_id)
    except KeyError:
        return ""
    units = _units(text)

    def skipped(unit: str) -> bool:
        return _other_size(text, unit, params_b) or bool(avoid is not None and avoid(unit))

    scored = []
    for i, (unit, tokens) in enumerate(units):
        if skipped(unit):
            continue
        score = sum(weights.get(t, 0.0) for t in tokens)
        if score > 0:
            # long sentences match more words by length alone; damp that a little
            scored.append((score / math.sqrt(1.0 + len(tokens) / 60.0), -i, i))
    if not scored:
        return ""
    _, _, best = max(scored)
    quote = units[best][0]
    if _ANAPHORA.match(quote) and best > 0:
        # "This is why ..." needs the sentence it points back to: quote both when they are adjacent
        prev = units[best - 1][0]
        start = text.find(quote)
        if start > 0 and text.rfind(prev, 0, start) >= 0 \
                and not (avoid is not None and avoid(prev)):
            gap = text[text.rfind(prev, 0, start) + len(prev):start]
            if gap in ("", " ") and len(prev) + len(gap) + len(quote) <= MAX_QUOTE_CHARS:
                return prev + gap + quote
    if best + 1 < len(units):
        nxt = units[best + 1][0]
        start = text.find(quote)
        joined_at = text.find(nxt, start + len(quote))
        after = text[start + len(quote):joined_at] if start >= 0 and joined_at >= 0 else None
        nxt_score = sum(weights.get(t, 0.0) for t in units[best + 1][1])
        if after is not None and after in ("", " ") and nxt_score > 0 and not skipped(nxt) \
                and len(quote) + len(after) + len(nxt) <= MAX_QUOTE_CHARS and len(quote) < 160:
            quote = quote + after + nxt
    return quote


def clear_caches() -> None:
    """Forget cached results (after editing the corpus in a running process, or in tests)."""
    _retrieve.cache_clear()
    _units.cache_clear()
