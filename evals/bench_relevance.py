"""Passage relevance (issue 25): the share of quoted passages that are off topic, before and after
the selection rules of ``bot.knowledge.answering.select_passages``.

    .venv/bin/python -m evals.bench_relevance            # uses $SHARDWISE_DATA_DIR's index (built if absent)
    .venv/bin/python -m evals.bench_relevance --json
    .venv/bin/python -m evals.bench_relevance --sweep    # off-topic share and gold kept per threshold

Labels come from ``evals/retrieval_queries.jsonl``: ``gold`` (entries that answer the query) and
``off_topic`` (entries judged off topic for it, by hand; a doc's twin shares its label); a serving doc in the passages of a
query whose gold has no serving doc is off topic too (a training question). "Before" is what
the answer path quoted until now: the first k ranked entries with a quotable sentence; "after"
is :func:`select_passages` (relevance threshold, no serving text in training answers, zh twins
for Chinese answers, kind from the corpus). A gold hit counts an entry or its twin.
"""

from __future__ import annotations

import argparse
import json
import sys

from evals.bench_retrieval import load_queries

K = 3  # what the answer quotes (bot.corpus_evidence.MAX_PASSAGES)


def _twin(entry_id: str) -> str:
    return entry_id[:-3] if entry_id.endswith("-zh") else entry_id + "-zh"


def _serving(entry_id: str) -> bool:
    from bot.knowledge.answering import _is_serving

    return _is_serving(entry_id)


def judge(query: dict, passages) -> dict:
    """Per query: passages off topic, English paragraphs in a Chinese answer, forum posts
    labelled as docs, and whether a gold entry (or its twin) is among the passages."""
    from bot.knowledge.corpus import get_entry

    gold = set(query["gold"]) | {_twin(g) for g in query["gold"]}
    # a twin says the same thing in the other language: off topic when its twin is
    labelled = set(query.get("off_topic", ())) | {_twin(o) for o in query.get("off_topic", ()) if o.startswith("doc-")}
    training = not any(_serving(g) for g in query["gold"] if g.startswith("doc-"))
    off = [p.id for p in passages if p.id in labelled or (training and _serving(p.id))]
    english = [p.id for p in passages if query["lang"] == "zh" and p.kind == "doc" and p.lang == "en"]
    mislabelled = [p.id for p in passages if p.kind != get_entry(p.id).kind]
    return {"n": len(passages), "off": off, "english_in_zh": english, "mislabelled": mislabelled,
            "gold_hit": any(p.id in gold for p in passages)}


def summarise(rows: list[dict]) -> dict:
    passages = sum(r["n"] for r in rows)
    return {
        "queries": len(rows), "passages": passages,
        "off_topic_share": sum(len(r["off"]) for r in rows) / max(passages, 1),
        "answers_with_off_topic": sum(bool(r["off"]) for r in rows) / max(len(rows), 1),
        "english_in_zh_answers": sum(len(r["english_in_zh"]) for r in rows),
        "forum_labelled_doc": sum(len(r["mislabelled"]) for r in rows),
        "gold_hit": sum(r["gold_hit"] for r in rows) / max(len(rows), 1),
        "empty_answers": sum(r["n"] == 0 for r in rows),
    }


def run(threshold: float | None = None) -> dict:
    from bot.knowledge.answering import RELEVANCE_THRESHOLD, retrieve_candidates, select_passages

    cut = threshold  # None: select_passages' per-language default
    before, after, sweep_inputs = [], [], []
    for q in load_queries():
        candidates = retrieve_candidates(q["query"], language=q["lang"])
        before.append(judge(q, candidates[:K]))
        after.append(judge(q, select_passages(candidates, question=q["query"], language=q["lang"], k=K,
                                              threshold=cut)))
        sweep_inputs.append((q, candidates))
    return {"threshold": RELEVANCE_THRESHOLD if cut is None else cut, "before": summarise(before), "after": summarise(after), "_inputs": sweep_inputs}


def sweep(inputs, thresholds=(0.0, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4)) -> list[dict]:
    from bot.knowledge.answering import select_passages

    out = []
    for cut in thresholds:
        rows = [judge(q, select_passages(c, question=q["query"], language=q["lang"], k=K, threshold=cut))
                for q, c in inputs]
        out.append({"threshold": cut, **summarise(rows)})
    return out


def _line(label: str, s: dict) -> str:
    return (f"{label:8} off-topic passages {s['off_topic_share']:6.1%}  answers with one {s['answers_with_off_topic']:6.1%}  "
            f"gold kept {s['gold_hit']:6.1%}  English in zh {s['english_in_zh_answers']:3}  "
            f"forum as doc {s['forum_labelled_doc']}  no passage {s['empty_answers']}  ({s['passages']} passages)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--sweep", action="store_true")
    args = parser.parse_args(argv)
    result = run()
    inputs = result.pop("_inputs")
    if args.sweep:
        result["sweep"] = sweep(inputs)
    if args.json:
        print(json.dumps(result, indent=2, ensure_ascii=False))
        return 0
    print(f"{result['before']['queries']} labelled queries, k = {K}, relevance threshold {result['threshold']}")
    print(_line("before", result["before"]))
    print(_line("after", result["after"]))
    for row in result.get("sweep", ()):
        print(_line(f"t={row['threshold']:.2f}", row))
    return 0


if __name__ == "__main__":
    sys.exit(main())
