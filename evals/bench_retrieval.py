"""Retrieval quality and speed: hit@5 and MRR for dense-only, BM25-only and hybrid, per language,
plus warm query latency and full ingest time.

    .venv/bin/python evals/bench_retrieval.py            # builds a fresh index in a temp data dir
    .venv/bin/python evals/bench_retrieval.py --json     # machine-readable

Queries and their gold ids are in ``evals/retrieval_queries.jsonl`` (a hit is any gold id in the
top 5). "dense" and "bm25" are each path alone on the raw query (no glossary); "hybrid -glossary"
is the fusion without the zh<->en bridge; "hybrid" is what ``search()`` does; "answering" is what
the answer path quotes: ``bot.knowledge.answering.retrieve_passages`` (hybrid search, then entries
without a sentence sharing a term with the question dropped), k = 5, no topic hints.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

QUERIES = Path(__file__).with_name("retrieval_queries.jsonl")
# (label, search mode, glossary bridge on)
CONFIGS = (("dense", "dense", False), ("bm25", "bm25", False), ("hybrid -glossary", "hybrid", False),
           ("hybrid", "hybrid", True))
TARGETS = {"hit@5": 0.95, "p50_ms": 50.0, "ingest_s": 60.0}


def load_queries(path: Path = QUERIES) -> list[dict]:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    for row in rows:
        assert row["lang"] in ("zh", "en") and row["gold"] and row["query"].strip(), row
    return rows


def score(searcher, queries: list[dict], mode: str, bridge: bool, k: int = 5) -> dict:
    """hit@k and MRR (reciprocal rank of the first gold id within the top k, else 0), by language."""
    out: dict = {}
    for lang in ("zh", "en", "all"):
        rows = [q for q in queries if lang == "all" or q["lang"] == lang]
        hits, rr, misses = 0, 0.0, []
        for q in rows:
            ids = [h.id for h in searcher.search(q["query"], k=k, mode=mode, bridge=bridge)]
            rank = next((i for i, hid in enumerate(ids, 1) if hid in q["gold"]), None)
            hits += rank is not None
            rr += 1 / rank if rank else 0.0
            if rank is None:
                misses.append(q["id"])
        out[lang] = {"n": len(rows), "hit@5": hits / len(rows), "mrr": rr / len(rows), "misses": misses}
    return out


class _Passages:
    """retrieve_passages behind the searcher interface score() and latency() use."""

    def __init__(self, queries: list[dict]) -> None:
        self.lang = {q["query"]: q["lang"] for q in queries}

    def search(self, query: str, k: int = 5, **_ignored):
        from bot.knowledge.answering import retrieve_passages

        return retrieve_passages(query, language=self.lang.get(query, "en"), topics=[], k=k)


def latency(searcher, queries: list[dict], rounds: int = 3) -> dict:
    searcher.search(queries[0]["query"])  # warm: model, jieba, chroma segments
    times = []
    for _ in range(rounds):
        for q in queries:
            started = time.perf_counter()
            searcher.search(q["query"], k=5)
            times.append((time.perf_counter() - started) * 1000)
    times.sort()
    return {"n": len(times), "p50_ms": statistics.median(times), "p95_ms": times[int(0.95 * (len(times) - 1))]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)

    scratch = tempfile.mkdtemp(prefix="shardwise-bench-")  # a fresh index, removed at the end
    os.environ["SHARDWISE_DATA_DIR"] = scratch
    try:
        return _run(args)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _run(args: argparse.Namespace) -> int:
    import torch

    torch.set_num_threads(1)  # what servers and tests use
    from bot.knowledge.embeddings import load_model
    from bot.knowledge.index import corpus_chunks, ensure_index, ingest
    from bot.knowledge.search import Searcher

    started = time.perf_counter()
    load_model()
    model_s = time.perf_counter() - started
    chunks = corpus_chunks()
    full = ingest(chunks, rebuild=True)
    noop = ingest(chunks)
    searcher = Searcher(chunks, ensure_index(chunks))
    queries = load_queries()
    results = {label: score(searcher, queries, mode, bridge) for label, mode, bridge in CONFIGS}
    speed = latency(searcher, queries)
    passages = _Passages(queries)
    results["answering"] = score(passages, queries, "hybrid", True)
    from bot.knowledge import answering

    answering._retrieve.cache_clear()  # time the search and quoting, not the per-question cache
    answering_speed = latency(passages, queries, rounds=1)
    report = {
        "queries": {"zh": sum(q["lang"] == "zh" for q in queries), "en": sum(q["lang"] == "en" for q in queries)},
        "quality": results, "latency": speed, "answering_latency": answering_speed,
        "ingest": {"model_load_s": model_s, "full_s": full.seconds, "entries": full.entries,
                   "chunks": full.chunks_embedded, "noop_s": noop.seconds},
        "load_average": os.getloadavg(), "cpus": os.cpu_count(),
    }
    if args.json:
        print(json.dumps(report, indent=2, ensure_ascii=False))
        return 0

    print(f"{len(queries)} queries ({report['queries']['zh']} zh, {report['queries']['en']} en), "
          f"{full.entries} entries, {full.chunks_embedded} chunks\n")
    print(f"{'':18} {'zh hit@5':>9} {'zh MRR':>7} {'en hit@5':>9} {'en MRR':>7} {'all hit@5':>10}")
    for label in [*(c[0] for c in CONFIGS), "answering"]:
        r = results[label]
        print(f"{label:18} {r['zh']['hit@5']:9.2f} {r['zh']['mrr']:7.2f} {r['en']['hit@5']:9.2f} "
              f"{r['en']['mrr']:7.2f} {r['all']['hit@5']:10.2f}")
    print(f"\nhybrid misses: {', '.join(results['hybrid']['all']['misses']) or 'none'}")
    print(f"warm query latency over {speed['n']} queries: p50 {speed['p50_ms']:.1f} ms, "
          f"p95 {speed['p95_ms']:.1f} ms (target p50 < {TARGETS['p50_ms']:.0f} ms)")
    print(f"full ingest: {full.seconds:.1f} s for {full.chunks_embedded} chunks (+ {model_s:.1f} s model load; "
          f"target < {TARGETS['ingest_s']:.0f} s); no-op re-ingest {noop.seconds:.2f} s")
    print(f"retrieve_passages (search + quote), one round: p50 {answering_speed['p50_ms']:.1f} ms, "
          f"p95 {answering_speed['p95_ms']:.1f} ms; answering misses: "
          f"{', '.join(results['answering']['all']['misses']) or 'none'}")
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"machine: {os.cpu_count()} CPUs, load average {load} (other work on the machine inflates timings)")
    met = all(results[kind][lang]["hit@5"] >= TARGETS["hit@5"] for kind in ("hybrid", "answering")
              for lang in ("zh", "en"))
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
