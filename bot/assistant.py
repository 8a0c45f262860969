"""``ask(question, history=None) -> Answer``: the deterministic pipeline every surface calls.

question (+ earlier user turns) -> ``bot.parse`` -> resolved setup -> ``bot.calc.estimate`` ->
``bot.advise`` -> evidence (stored simulations, forum claims, docs) -> ``bot.render`` -> Answer.

No network, no GPU, no LLM: answers come from the calculator, the stored benchmark results and
the corpus in git. ``answer_for_setup`` is the same pipeline for a setup edited directly (the
Gradio setup panel). The optional LLM path (``bot.llm``) wraps this function, never replaces it.
"""

from __future__ import annotations

import functools
import logging
import re

from bot.advise import Advice, advise
from bot.answer import Answer, Citation, Recommendation
from bot.parse import ESSENTIAL, Parsed, parse_conversation
from bot.render import (
    AnswerParts,
    ForumItem,
    Scenario,
    fmt,
    howto_snippet,
    reason_text,
    render_markdown,
    untraceable_numbers,
)
from bot.setup import ResolvedSetup, SetupError, TrainingSetup, check_setup, resolve_setup
from bot.strategies import TRAINING_STRATEGIES

log = logging.getLogger(__name__)

DESIGN_FIELDS = ("model", "params_b", "gpu", "gpu_memory_gb", "gpu_count", "gpus_per_node", "nodes",
                 "intra_node_link", "inter_node_link", "inter_node_gbps", "precision", "optimizer",
                 "finetune", "seq_len", "micro_batch", "activation_checkpointing", "cpu_ram_gb")

# When the GPU is not stated we compute for these common cards (conditional guidance); the first
# one also fills ``numbers``. When the GPU count is not stated we assume one node of eight.
SCENARIO_GPUS = ("A100 80GB SXM", "A100 40GB SXM", "RTX 4090 24GB")
DEFAULT_GPU_COUNT = 8
MAX_FORUM_ITEMS = 4


# --------------------------------------------------------------------------------------------
# Entry points
# --------------------------------------------------------------------------------------------


def ask(question: str, history=None) -> Answer:
    """Answer ``question`` in its language; ``history`` is the conversation so far (strings or
    ``{"role", "content"}`` messages; only user turns are read). Never raises on user input."""
    parsed = parse_conversation(question, history)
    try:
        return answer_parsed(parsed)
    except Exception:  # a bug must not take a surface down; the log has the traceback
        log.exception("ask() failed; answering with an apology")
        lang = parsed.language
        text = ("出了点问题，暂时无法回答这个问题。" if lang == "zh"
                else "Something went wrong while answering; please try again or rephrase.")
        return Answer(language=lang, recommendation=Recommendation(strategy="none", confidence="low"),
                      text=text)


def answer_for_setup(setup: TrainingSetup, language: str = "en", *, missing: list[str] | None = None,
                     with_knowledge: bool = True) -> Answer:
    """The answer for a setup given directly (no parsing), e.g. from the Gradio setup panel."""
    fields = {k for k, v in setup.model_dump().items() if v is not None}
    parsed = Parsed(setup=setup, language="zh" if language == "zh" else "en",
                    problems=check_setup(setup),
                    missing=missing if missing is not None else _missing_from_fields(fields))
    return answer_parsed(parsed, with_knowledge=with_knowledge)


def _missing_from_fields(fields: set[str]) -> list[str]:
    out = []
    if not fields & {"params_b", "model"}:
        out.append("params_b")
    if not fields & {"gpu_memory_gb", "gpu"}:
        out.append("gpu_memory_gb")
    if "gpu_count" not in fields and not {"nodes", "gpus_per_node"} <= fields:
        out.append("gpu_count")
    return out


# --------------------------------------------------------------------------------------------
# The pipeline
# --------------------------------------------------------------------------------------------


class _Citations:
    """Numbers citations in order of first use; the same source is cited once."""

    def __init__(self) -> None:
        self.items: list[Citation] = []

    def add(self, id: str, kind: str, title: str, url: str | None = None, quote: str | None = None) -> int:
        for c in self.items:
            if c.id == id and (c.quote == quote or kind == "doc"):
                return c.n
        n = len(self.items) + 1
        self.items.append(Citation(n=n, id=id, kind=kind, title=title, url=url, quote=quote))
        return n

    def quotes(self) -> list[str]:
        return [f"{c.quote or ''} {c.title}" for c in self.items]


def answer_parsed(parsed: Parsed, *, with_knowledge: bool = True) -> Answer:
    lang = parsed.language
    notices = list(parsed.notices)
    if parsed.injection:
        notices.append("injection")
    setup_fields = {k: v for k, v in parsed.setup.model_dump().items() if k in DESIGN_FIELDS}

    if parsed.empty:
        parts = AnswerParts(language=lang, kind="empty", notices=notices)
        return _finish(parts, "out_of_scope", Citation_list=[], questions=list(ESSENTIAL), setup={})
    if not parsed.on_topic:
        parts = AnswerParts(language=lang, kind="out_of_scope", notices=notices)
        return _finish(parts, "out_of_scope", Citation_list=[], questions=[], setup={})
    if parsed.problems:
        return _invalid_answer(parsed.problems, parsed, setup_fields, notices)
    if parsed.unknown_model:
        notices.append("unknown_model")

    cites = _Citations()
    if "params_b" in parsed.missing:
        return _general_answer(parsed, notices, cites, with_knowledge)

    gpu_unknown = "gpu_memory_gb" in parsed.missing
    try:
        resolved = resolve_setup(parsed.setup, default_gpu=SCENARIO_GPUS[0] if gpu_unknown else None,
                                 default_gpu_count=DEFAULT_GPU_COUNT)
    except SetupError as err:
        return _invalid_answer(err.problems, parsed, setup_fields, notices)

    from bot.calc import estimate

    est = estimate(resolved)
    advice = advise(resolved, est)
    numbers = est.numbers()
    setup = {k: v for k, v in resolved.setup.model_dump().items() if k in DESIGN_FIELDS}
    calc_n = cites.add("calc", "calc", _t(lang, "shardwise 显存/通信计算器", "shardwise memory/comm calculator"),
                       None, calc_quote(resolved))
    parts = AnswerParts(language=lang, setup=setup, assumed=list(resolved.assumed), advice=advice,
                        numbers=numbers, calc_cite=calc_n, notices=notices)

    if gpu_unknown:
        parts.scenarios = _scenarios(parsed.setup, resolved, cites)
        strategies = {sc.strategy for sc in parts.scenarios}
        advice.confidence = "low" if len(strategies) > 1 else "medium"

    _bench_evidence(resolved, advice, parts, cites)
    _measured_runs(resolved, advice, parts, cites)
    if with_knowledge:
        _knowledge_evidence(resolved, advice, parts, cites)
    parts.howto = howto_snippet(advice.strategy, resolved)

    questions = list(parsed.missing)
    if resolved.nodes > 1 and parsed.setup.inter_node_link is None and parsed.setup.inter_node_gbps is None:
        questions.append("inter_node_link")
    parts.questions = questions
    return _finish(parts, advice.strategy, Citation_list=cites.items, questions=questions, setup=setup,
                   missing=questions, confidence=advice.confidence, alternatives=advice.alternatives,
                   why=[w for w in (reason_text(r, parts) for r in advice.reasons) if w])


def _invalid_answer(problems: list, parsed, setup_fields: dict, notices: list[str]) -> Answer:
    """Invalid or contradictory values: say what is wrong, ask about those fields, recommend nothing."""
    asked = list(dict.fromkeys(p.field for p in problems if p.field in DESIGN_FIELDS))
    parts = AnswerParts(language=parsed.language, kind="invalid", setup=setup_fields,
                        problems=[(p.field, p.message) for p in problems], questions=asked, notices=notices)
    return _finish(parts, "none", Citation_list=[], questions=asked, setup=setup_fields,
                   missing=parsed.missing, confidence="low")


def _finish(parts: AnswerParts, strategy: str, *, Citation_list: list[Citation], questions: list[str],
            setup: dict, missing: list[str] | None = None, confidence: str = "high",
            alternatives: list[str] | None = None, why: list[str] | None = None) -> Answer:
    parts.questions = questions
    text = render_markdown(parts)
    return Answer(
        language=parts.language, setup=setup, missing=list(missing or []),
        recommendation=Recommendation(strategy=strategy, alternatives=list(alternatives or []),
                                      confidence=confidence, why=list(why or [])),
        numbers=dict(parts.numbers), citations=list(Citation_list), questions=list(questions), text=text,
    )


def _t(lang: str, zh: str, en: str) -> str:
    return zh if lang == "zh" else en


def calc_quote(resolved: ResolvedSetup) -> str:
    """The calc citation's quote: every input the figures depend on, in one line."""
    s = resolved.setup
    model = resolved.model
    if model.approximate:  # a bare size: the calculator uses an inferred Llama-style shape
        name = f"generic {fmt(s.params_b or model.params_b)}B model (approximate shape,"
    else:
        name = model.name
    gpu = resolved.gpu.name if resolved.gpu else f"{fmt(resolved.gpu_memory_gb)} GB GPU"
    if resolved.nodes > 1:
        where = (f"{resolved.nodes} nodes x {resolved.gpus_per_node} x {gpu}, {resolved.intra_node_link} "
                 f"in a node, {resolved.inter_node_link} {fmt(resolved.inter_node_gbps)} Gb/s between nodes")
    else:
        where = f"{resolved.gpu_count} x {gpu}, {resolved.intra_node_link}"
    ft = {"full": "full fine-tune", "lora": f"LoRA rank {s.lora_rank}", "qlora": f"QLoRA rank {s.lora_rank}"}
    parts = [f"{name} {fmt(model.params_b)}B params" + (")" if model.approximate else ""), where, s.precision, _optimizer_name(s.optimizer),
             ft.get(s.finetune or "full", s.finetune), f"seq {s.seq_len}", f"micro-batch {s.micro_batch}",
             "activation checkpointing" if s.activation_checkpointing else "no activation checkpointing"]
    if s.cpu_ram_gb:
        parts.append(f"{fmt(s.cpu_ram_gb)} GB CPU RAM")
    return ", ".join(str(p) for p in parts)


def _optimizer_name(opt: str | None) -> str:
    return {"adamw": "AdamW", "sgd": "SGD momentum", "adam8bit": "8-bit Adam"}.get(opt or "", str(opt))


# --------------------------------------------------------------------------------------------
# Evidence
# --------------------------------------------------------------------------------------------


def _scenarios(setup: TrainingSetup, primary: ResolvedSetup, cites: _Citations) -> list[Scenario]:
    """The decision on common cards, each with its own calc citation (quote carries the figures)."""
    from bot.calc import estimate
    from bot.catalog import lookup_gpu

    out = []
    for name in SCENARIO_GPUS:
        gpu = lookup_gpu(name)
        try:
            resolved = resolve_setup(setup.model_copy(update={"gpu": gpu.name}),
                                     default_gpu_count=DEFAULT_GPU_COUNT)
        except SetupError:
            continue
        est = estimate(resolved)
        adv = advise(resolved, est)
        ddp, fs = est.memory["ddp"], est.memory["fsdp_full_shard"]
        quote = (f"{calc_quote(resolved)}: DDP {fmt(ddp.total_gib)} GiB per GPU "
                 f"({'fits' if ddp.fits else 'does not fit'}), FSDP full shard {fmt(fs.total_gib)} GiB "
                 f"({'fits' if fs.fits else 'does not fit'}), usable {fmt(ddp.usable_gib)} GiB")
        n = cites.add("calc", "calc", f"shardwise calculator: {gpu.name}", None, quote)
        out.append(Scenario(memory_gb=gpu.memory_gb, gpu_count=resolved.gpu_count, strategy=adv.strategy,
                            ddp_total=ddp.total_gib, ddp_fits=bool(ddp.fits), shard_total=fs.total_gib,
                            shard_fits=bool(fs.fits), cite=n))
    return out


def _bench_evidence(resolved: ResolvedSetup, advice: Advice, parts: AnswerParts, cites: _Citations) -> None:
    """A stored simulation of the recommended strategy, when one matches (never runs one inline)."""
    if advice.strategy not in TRAINING_STRATEGIES:
        return
    try:
        from bot.bench.simulate import SimConfig
        from bot.bench.store import ResultStore

        store = ResultStore()
        found = store.find_simulation(SimConfig.from_resolved(resolved, advice.strategy))
    except Exception as err:  # no store yet, an unsimulatable config, an older store format
        log.debug("no stored simulation: %s", err)
        return
    if not found:
        return
    run_id = getattr(found, "run_id", None) or getattr(found, "id", None)
    peak = getattr(found, "peak_gib", None)
    if peak is None and isinstance(getattr(found, "result", None), dict):
        peak = found.result.get("peak_gib")
    if not run_id or peak is None:
        return
    try:
        stored = store.get(str(run_id))
        quote = stored.summary() if stored else None
    except Exception:
        quote = None
    quote = quote or f"simulated per-GPU peak {fmt(peak)} GiB ({advice.strategy})"
    parts.bench_cite = cites.add(str(run_id), "bench", f"stored simulation {run_id}", None, quote)
    parts.bench_peak = float(peak)


def _measured_runs(resolved: ResolvedSetup, advice: Advice, parts: AnswerParts, cites: _Citations) -> None:
    """Recorded runs of this very model (real CPU runs, or imports from a cluster) for DDP and the
    recommended strategy: their measured peaks, each cited by run id with the store's summary."""
    if resolved.model.approximate or advice.strategy not in TRAINING_STRATEGIES:
        return
    try:
        from bot.bench.store import ResultStore

        store = ResultStore()
        found = {}
        for strategy in dict.fromkeys(("ddp", advice.strategy)):
            runs = [r for kind in ("import", "run")
                    for r in store.find_runs(model=resolved.model.name, strategy=strategy, kind=kind)
                    if isinstance(r.figures.get("peak_gib"), (int, float))]
            if runs:
                found[strategy] = runs[0]
    except Exception as err:
        log.debug("no stored runs: %s", err)
        return
    for strategy, run in found.items():
        n = cites.add(run.id, "bench", f"recorded {run.kind} {run.id}", None, run.summary())
        parts.measured.append((strategy, float(run.figures["peak_gib"]), n))


_VERDICT_ORDER = {"contradicted": 0, "misleading": 1, "supported": 2, "unverifiable": 3}
_TOPIC_ORDER = {"communication": 0, "memory": 1, "terminology": 2, "speed": 3}
_PER_TOPIC = 2  # at most this many claims on one topic, so the section covers several


def _claim_matches(applies: dict, setup: TrainingSetup | None, params_b: float | None) -> bool:
    """Whether a claim speaks about this setup: same model size (within 30%), same fine-tuning mode."""
    size = applies.get("params_b")
    if size and params_b and abs(float(size) - params_b) / params_b > 0.3:
        return False
    if setup is not None and applies.get("finetune") and (setup.finetune or "full") != applies["finetune"]:
        return False
    return True


def _relevant_claims(setup: TrainingSetup | None, params_b: float | None):
    """(answer, claim) pairs worth showing: one per answer, wrong claims first, topics mixed."""
    from bot.knowledge.corpus import load_forum

    # The forum's communication claims compare full fine-tuning; with (Q)LoRA DDP syncs only the
    # adapters' gradients, so their verdicts next to this setup's figures would mislead.
    # On one GPU nothing is sharded: claims comparing DDP's and FSDP's memory or traffic are moot.
    adapters = setup is not None and setup.finetune in ("lora", "qlora")
    single = setup is not None and setup.gpu_count == 1
    picked = []
    for answer in load_forum():
        for claim in answer.claims:
            if (adapters or single) and claim.topic == "communication" or single and claim.topic != "terminology":
                continue
            if _claim_matches(claim.applies_to or {}, setup, params_b):
                picked.append((answer, claim))
    picked.sort(key=lambda ac: (_VERDICT_ORDER.get(ac[1].verdict, 9), _TOPIC_ORDER.get(ac[1].topic, 5)))
    out, seen, topics = [], set(), {}
    for answer, claim in picked:
        if answer.id in seen or topics.get(claim.topic, 0) >= _PER_TOPIC:
            continue
        seen.add(answer.id)
        topics[claim.topic] = topics.get(claim.topic, 0) + 1
        out.append((answer, claim))
    return out


def _short(quote: str, limit: int = 60) -> str:
    """A claim quote short enough for one line; still a verbatim prefix of the corpus text."""
    if len(quote) <= limit:
        return quote
    cut = quote[:limit]
    stop = max(cut.rfind(ch) for ch in "，,。；;")
    return cut[:stop] if stop > 20 else cut


def _forum_correction(claim, parts: AnswerParts, cites: _Citations) -> str:
    """What the claim amounts to for *this* setup: the calculator's figure for communication and
    memory claims (with the doc behind the verdict); else the corpus's correction when every
    figure in it traces to a cited doc sentence; else nothing."""
    lang = parts.language
    c = f" [{parts.calc_cite}]" if parts.calc_cite else ""
    doc_ids = [s for s in (claim.verdict_source or []) if s.startswith("doc-")]
    if parts.numbers and claim.topic in ("communication", "memory"):
        doc_n = _cite_doc_for(doc_ids[0], "1.5" if claim.topic == "communication" else "16", cites) \
            if doc_ids else None
        d = f" [{doc_n}]" if doc_n else ""
        if claim.topic == "communication":
            vs = fmt(parts.numbers["comm.fsdp_full_shard.vs_ddp"])
            # The doc counts elements (1.5x); the calculator counts time with this setup's dtypes
            # (DDP reduces fp32 gradients under AMP), so the two differ: say which is which.
            doc_quote = cites.items[doc_n - 1].quote or "" if doc_n else ""
            if "1.5x" in doc_quote:
                return _t(lang, f"按元素数，全分片是 DDP 的 1.5 倍{d}；对这个配置（算上数据类型），FSDP 全分片每步的"
                                f"通信时间是 DDP 的 {vs} 倍{c}。",
                          f"Counted in elements full shard moves 1.5x DDP's volume{d}; for this setup, with its "
                          f"dtypes, FSDP full shard's communication takes {vs}x DDP's time per step{c}.")
            return _t(lang, f"对这个配置，FSDP 全分片每步的通信时间是 DDP 的 {vs} 倍{c}{d}。",
                      f"For this setup FSDP full shard's communication takes {vs}x DDP's time per step{c}{d}.")
        ddp = fmt(parts.numbers["memory.ddp.total_gib"])
        fs = fmt(parts.numbers["memory.fsdp_full_shard.total_gib"])
        use = fmt(parts.numbers["memory.ddp.usable_gib"])
        return _t(lang, f"对这个配置，DDP 每卡约 {ddp} GiB，FSDP 全分片每卡约 {fs} GiB，可用 {use} GiB{c}{d}。",
                  f"For this setup DDP needs about {ddp} GiB per GPU and FSDP full shard about {fs} GiB, "
                  f"of {use} GiB usable{c}{d}.")
    text = claim.correct_zh if lang == "zh" else claim.correct
    # The first sentence carries the general point; later ones work an example (often for 7B)
    # that would read as a figure for this setup.
    text = re.split(r"(?<=。)|(?<=\.)\s", text or "", maxsplit=1)[0].strip()
    if not text or not doc_ids:
        return ""
    doc_n = _cite_doc_for(doc_ids[0], text, cites, require_all=True)
    if doc_n is None or untraceable_numbers(text, parts.numbers, parts.setup, cites.quotes()):
        return ""
    return text.rstrip() + f" [{doc_n}]"


def _cite_doc_for(doc_id: str, text: str, cites: _Citations, require_all: bool = False) -> int | None:
    """Cite ``doc_id`` with a verbatim sentence holding the figures of ``text`` (else, unless
    ``require_all``, its first sentence)."""
    try:
        from bot.knowledge.corpus import get_entry
        doc = get_entry(doc_id)
    except Exception:
        return None
    sentences = [s for s in complete_sentences(doc.text) + _line_pieces(doc.text) if len(s) > 20]
    figures = re.findall(r"\d+(?:\.\d+)?", text)
    best = None
    for sentence in sentences:
        if figures and all(f in sentence for f in figures):
            best = sentence
            break
        if best is None and (not require_all or not figures):
            best = sentence
    if best is None:
        return None
    return cites.add(doc.id, "doc", doc.title, doc.url, best[:300])


def _knowledge_evidence(resolved: ResolvedSetup, advice: Advice, parts: AnswerParts, cites: _Citations) -> None:
    try:
        claims = _relevant_claims(resolved.setup, resolved.setup.params_b or resolved.model.params_b)
    except Exception as err:
        log.warning("forum corpus unavailable: %s", err)
        claims = []
    for answer, claim in claims[:MAX_FORUM_ITEMS]:
        quote = _short(claim.quote)
        n = cites.add(answer.id, "forum", answer.title, answer.url, quote)
        parts.forum.append(ForumItem(answer_id=answer.id, quote=quote, verdict=claim.verdict, cite=n))
        parts.forum[-1].correction = _forum_correction(claim, parts, cites)
    for doc_n in _doc_citations(advice.strategy, parts.language, cites):
        parts.doc_cites.append(doc_n)


_DOC_QUERIES = {
    "ddp": ("DDP gradient all-reduce bucket replica", ("all-reduce", "replica", "bucket")),
    "fsdp_full_shard": ("FSDP full shard all-gather reduce-scatter memory per GPU",
                        ("all-gather", "reduce-scatter", "shard")),
    "fsdp_shard_grad_op": ("SHARD_GRAD_OP reshard_after_forward ZeRO-2", ("reshard", "SHARD_GRAD_OP", "ZeRO")),
    "fsdp_hybrid_shard": ("HSDP hybrid shard replicate across nodes", ("HSDP", "hybrid", "replicate")),
    "fsdp_full_shard_offload": ("FSDP CPU offload host memory", ("offload", "CPU")),
    "none": ("LoRA QLoRA memory fine-tuning", ("LoRA", "adapter")),
}


# Docs that mention strategies only in passing (the FAQ about the word "MCP" in a question lists
# "LoRA/QLoRA" among what to ask): never the background for a recommendation.
_NOT_BACKGROUND = ("doc-mcp-ambiguity",)


def _doc_citations(strategy: str, language: str, cites: _Citations, limit: int = 2) -> list[int]:
    return [cites.add(doc_id, "doc", title, url, quote) for doc_id, title, url, quote in
            _doc_sources(strategy, language)[:limit]]


@functools.lru_cache(maxsize=32)
def _doc_sources(strategy: str, language: str = "en") -> tuple[tuple[str, str, str, str], ...]:
    """The docs behind a strategy's "why": fixed queries, so searched once per process. BM25 only:
    the queries are keyword lists, and it spares ``ask`` the embedding model (cold start)."""
    query, keywords = _DOC_QUERIES.get(strategy, _DOC_QUERIES["fsdp_full_shard"])
    try:
        from bot.knowledge.corpus import corpus_text

        hits = _keyword_searcher().search(query, k=6, kinds=("doc",), mode="bm25")
        hits = sorted(hits, key=lambda h: h.lang != language)  # the answer's language first, stable
    except Exception as err:
        log.warning("knowledge search unavailable: %s", err)
        return ()
    out = []
    for hit in hits:
        if hit.id in _NOT_BACKGROUND:
            continue
        try:
            body = corpus_text(hit.id)
        except Exception:
            continue
        quote = _sentence_with(body, keywords)
        if quote:
            out.append((hit.id, hit.title, hit.url, quote))
    return tuple(out)


@functools.lru_cache(maxsize=1)
def _keyword_searcher():
    """The knowledge module's searcher over the corpus chunks, BM25 only (no model, no index)."""
    from bot.knowledge.index import corpus_chunks
    from bot.knowledge.search import Searcher

    return Searcher(corpus_chunks(), None)


# Docs are hard-wrapped markdown and a quote must be verbatim, so a quote is a whole sentence that
# lies within one line: it starts where a sentence starts and ends with its full stop. Splitting
# skips abbreviations ("sec. 7", "e.g. 7B") so a quote never stops at one.
_SENTENCE_END = re.compile(r"(?<=[.!?])(?<!\bsec\.)(?<!\be\.g\.)(?<!\bi\.e\.)(?<!\bvs\.)(?<!\bFig\.)\s+|"
                           r"(?<=[。！？])\s*(?=\S)")
_ENDS_SENTENCE = re.compile(r"[.。!?！？][*_\"')）」]*$")


def complete_sentences(body: str) -> list[str]:
    """The whole sentences of a markdown document's prose lines (no headings, lists, tables, code)."""
    out: list[str] = []
    lines = body.splitlines()
    if lines and lines[0].strip() == "---":  # front matter
        end = next((i for i, line in enumerate(lines[1:], 1) if line.strip() == "---"), 0)
        lines = lines[end + 1:]
    fenced, starts_sentence = False, True
    for raw in lines:
        line = raw.strip()
        if line.startswith("```"):
            fenced, starts_sentence = not fenced, True
            continue
        if fenced or not line or line.startswith(("#", "|")):
            starts_sentence = True
            continue
        if line.startswith(("-", "*", ">")) or re.match(r"\d+\.\s", line) or raw[:1].isspace():
            starts_sentence = bool(_ENDS_SENTENCE.search(line))  # list items and their wrapped lines
            continue
        pieces = [p.strip().lstrip("*_ ") for p in _SENTENCE_END.split(line) if p.strip().lstrip("*_ ")]
        for i, piece in enumerate(pieces):
            first_ok = (i > 0 or starts_sentence) and not piece.startswith(("(", "（", "["))
            if first_ok and _ENDS_SENTENCE.search(piece):
                out.append(piece)
        starts_sentence = bool(_ENDS_SENTENCE.search(line))
    return out


def _line_pieces(body: str) -> list[str]:
    """Fallback when no whole sentence fits: the sentence pieces of prose lines (may be partial),
    those that look like a sentence's start (not lower case) first."""
    out = []
    for line in body.splitlines():
        line = line.strip()
        if line and not line.startswith(("#", "|", "```", "-", "*", ">")):
            out.extend(p.strip() for p in _SENTENCE_END.split(line) if p.strip()[:1] not in ("", "(", "[", "（"))
    return sorted(out, key=lambda p: p[:1].islower())


def _sentence_with(body: str, keywords: tuple[str, ...]) -> str | None:
    for sentences in (complete_sentences(body), _line_pieces(body)):
        for sentence in sentences:
            if any(k.lower() in sentence.lower() for k in keywords) and 30 <= len(sentence) <= 300:
                return sentence
    return None


def _general_answer(parsed: Parsed, notices: list[str], cites: _Citations, with_knowledge: bool) -> Answer:
    """No model size: the rule of thumb, the forum and the docs, and the questions that decide it."""
    lang = parsed.language
    parts = AnswerParts(language=lang, kind="general", notices=notices)
    setup = {k: v for k, v in parsed.setup.model_dump().items() if k in DESIGN_FIELDS}
    parts.setup = setup
    if with_knowledge:
        try:
            for answer, claim in _relevant_claims(None, None)[:MAX_FORUM_ITEMS]:
                quote = _short(claim.quote)
                n = cites.add(answer.id, "forum", answer.title, answer.url, quote)
                item = ForumItem(answer_id=answer.id, quote=quote, verdict=claim.verdict, cite=n)
                item.correction = _forum_correction(claim, parts, cites)
                parts.forum.append(item)
        except Exception as err:
            log.warning("forum corpus unavailable: %s", err)
        parts.doc_cites = _doc_citations("fsdp_full_shard", lang, cites)
    questions = list(parsed.missing)
    return _finish(parts, "ddp", Citation_list=cites.items, questions=questions, setup=setup,
                   missing=questions, confidence="low", alternatives=["fsdp_full_shard", "fsdp_hybrid_shard"])
