"""First-contact batches: real questions whose gold was written before the bot saw them.

A batch file (``evals/cases/first_contact_<date><letter>.jsonl``) holds one question per line:
``id``, ``url``, ``lang``, ``question`` (the asker's words only), ``gold`` and ``note``. ``gold`` has
``setup`` (every field of :data:`CORE_FIELDS`, ``null`` = not stated, plus any other stated field),
``intent`` (the convention of ``evals/cases/README.md``), ``thread_kind`` (``troubleshooting`` when
the thread settled on a fix, ``question``, ``out_of_scope``), ``resolution`` / ``resolution_by``
where the thread has one, ``strategy`` (strategy ids the resolution implies), ``ignore`` (fields
too ambiguous to score) and ``model`` (the model named, for reading).

Scoring per stated field: right, wrong (another value), missed (not read). Per unstated field:
invented (reported as read from the text: provenance stated/config/log/history) or assumed (a
default marked assumed). A *silent count default* is an unstated, unignored ``gpu_count`` the answer
uses without asking for it. Out-of-scope rows score the intent only. Whether the answer's first
sentence matches a troubleshooting thread's resolution is judged by a person reading both; the
judgements live in ``evals/first_contact.md``, not here.

    python -m evals.first_contact run FILE [--out results.json]   # ask the bot once per question
    python -m evals.first_contact score FILE                      # parse only (no answers), fast
A batch is frozen once recorded: never edit a recorded batch's gold to match an answer.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from evals.bench_parse import same

CASES_DIR = Path(__file__).resolve().parent / "cases"
CORE_FIELDS = ("params_b", "gpu", "gpu_memory_gb", "gpu_count", "nodes", "precision", "finetune", "seq_len",
               "micro_batch")
READ_SOURCES = ("stated", "config", "log", "history")  # a value presented as the user's


def batch_files(directory: Path = CASES_DIR) -> list[Path]:
    """Every first-contact batch, oldest first (the names sort by date, then letter)."""
    return sorted(Path(directory).glob("first_contact_*.jsonl"))


LEDGER = Path(__file__).resolve().parent / "first_contact.md"


def recorded_batches(ledger: Path = LEDGER) -> set[str]:
    """Batch ids the ledger records as run and frozen (a ``## Batch <id>`` heading saying "frozen").

    Figures for a batch that is written but not yet run are withheld, so nobody tunes to it."""
    try:
        lines = ledger.read_text(encoding="utf-8").splitlines()
    except OSError:
        return set()
    return {line.split()[2] for line in lines
            if line.startswith("## Batch ") and len(line.split()) > 2 and "frozen" in line.lower()}


def load_batch(path: Path | str) -> list[dict]:
    rows = []
    for n, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        row = json.loads(line)
        missing = {"id", "url", "lang", "question", "gold"} - set(row)
        if missing or not {"setup", "intent", "thread_kind"} <= set(row["gold"]):
            raise ValueError(f"{path}:{n}: a first-contact row needs id, url, lang, question, gold.setup/intent/thread_kind")
        rows.append(row)
    return rows




def score_setup(gold: dict, got: dict, provenance: dict, missing: list[str]) -> dict:
    """Per-field verdicts for one answer (or parse): field -> right|wrong|missed|invented|assumed|ok."""
    setup, ignore = gold["setup"], set(gold.get("ignore", []))
    verdicts: dict[str, str] = {}
    for key in sorted(set(CORE_FIELDS) | set(setup)):
        if key in ignore:
            continue
        want, value, source = setup.get(key), got.get(key), provenance.get(key)
        if key == "nodes" and want is None and value == 1:
            value = None  # one node is what an unstated node count means
        if want is not None:
            if value is None:
                verdicts[key] = "missed"
            elif key == "nodes" or key not in CORE_FIELDS:
                verdicts[key] = "right" if value == want or same(key, want, value) else "wrong"
            else:
                verdicts[key] = "right" if same(key, want, value) else "wrong"
        elif value is not None:
            verdicts[key] = "invented" if source in READ_SOURCES else "assumed"
    if (setup.get("gpu_count") is None and "gpu_count" not in ignore and got.get("gpu_count") is not None
            and "gpu_count" not in missing):
        verdicts["silent_count_default"] = f"{got.get('gpu_count')} ({provenance.get('gpu_count')})"
    return verdicts


def all_right(verdicts: dict) -> bool:
    return not any(v in ("wrong", "missed", "invented") for k, v in verdicts.items() if k != "silent_count_default") \
        and "silent_count_default" not in verdicts


def first_sentence(text: str) -> str:
    import re

    text = re.sub(r"\s+", " ", text or "").strip()
    # Latin stops need a space after them ("3.5 GiB" is not an end); CJK stops do not
    match = re.search(r"(.+?(?:[.!?](?=\s|$)|[。！？]))", text)
    return (match.group(1) if match else text)[:400]


def answer_row(row: dict, answer: Any, seconds: float) -> dict:
    gold = row["gold"]
    out = {"id": row["id"], "lang": row["lang"], "intent_gold": gold["intent"], "intent": answer.intent,
           "status": answer.status, "seconds": round(seconds, 2), "thread_kind": gold["thread_kind"],
           "setup": {k: v for k, v in answer.setup.items() if v is not None},
           "provenance": dict(answer.provenance), "missing": list(answer.missing),
           "strategy": answer.recommendation.strategy, "strategy_gold": gold.get("strategy"),
           "headline": answer.sections.headline, "first_sentence": first_sentence(answer.text),
           "resolution": gold.get("resolution"), "chars": len(answer.text)}
    if gold["intent"] != "out_of_scope":
        out["fields"] = score_setup(gold, answer.setup, answer.provenance, answer.missing)
    return out


def summarize(results: list[dict]) -> dict:
    counts: dict[str, dict[str, int]] = {}
    scored = [r for r in results if "fields" in r]
    for r in scored:
        for key, verdict in r["fields"].items():
            if key == "silent_count_default":
                continue
            counts.setdefault(key, {}).setdefault(verdict, 0)
            counts[key][verdict] += 1
    per_field = {k: {"right": c.get("right", 0), "stated": c.get("right", 0) + c.get("wrong", 0) + c.get("missed", 0),
                     "wrong": c.get("wrong", 0), "missed": c.get("missed", 0), "invented": c.get("invented", 0),
                     "assumed": c.get("assumed", 0)} for k, c in sorted(counts.items())}
    return {
        "questions": len(results), "setup_scored": len(scored),
        "all_fields_right": sum(all_right(r["fields"]) for r in scored),
        "intent_right": sum(r["intent"] == r["intent_gold"] for r in results),
        "silent_count_defaults": [r["id"] for r in scored if "silent_count_default" in r["fields"]],
        "per_field": per_field,
        "intent_confusion": sorted(f"{r['intent_gold']}->{r['intent']}" for r in results if r["intent"] != r["intent_gold"]),
    }


def run(path: Path, out: Path | None) -> dict:
    from bot.assistant import ask

    rows = load_batch(path)
    results = []
    for row in rows:
        t0 = time.perf_counter()
        answer = ask(row["question"])
        results.append(answer_row(row, answer, time.perf_counter() - t0))
        print(f"{row['id']}: {results[-1]['intent']} {results[-1].get('fields', {})}", file=sys.stderr)
    report = {"batch": path.name, "summary": summarize(results), "results": results}
    if out:
        out.write_text(json.dumps(report, ensure_ascii=False, indent=1), encoding="utf-8")
    return report


def parse_figures(path: Path) -> dict:
    """The reader alone (``bot.parse``), no answers: what ``evals.bench_parse`` prints per batch."""
    from bot.parse import parse_conversation
    from bot.understand.spans import model_params_b

    results = []
    for row in load_batch(path):
        parsed = parse_conversation(row["question"])
        setup = {k: v for k, v in parsed.setup.model_dump().items() if v is not None}
        provenance = {k: p.source for k, p in parsed.provenance.items()}
        if "model" in setup and "params_b" not in setup and (size := model_params_b(setup["model"])):
            # a named catalog model carries its count, as in the answers (answer.setup) and in
            # evals.bench_parse.predicted: the reader alone is scored the same way
            setup["params_b"], provenance["params_b"] = size, provenance.get("model")
        missing = list(getattr(parsed, "missing", []) or [])
        r = {"id": row["id"], "intent_gold": row["gold"]["intent"], "intent": parsed.intent}
        if row["gold"]["intent"] != "out_of_scope":
            r["fields"] = score_setup(row["gold"], setup, provenance, missing)
        results.append(r)
    return summarize(results)


def to_case(row: dict) -> Any:
    """The row as a harness case (``evals/harness.py``): language, intent, the stated setup fields
    (numbers as ranges: a named model's count within 15%, a card's memory within 5%) and the
    strategies the resolution implies, so ``run_cases`` can score it with the gold files' metrics."""
    from bot.strategies import ZERO_TO_STRATEGY
    from evals.harness import Case

    gold, ignore = row["gold"], set(row["gold"].get("ignore", []))
    setup: dict[str, Any] = {}
    for key, value in gold["setup"].items():
        if value is None or key in ignore or key == "gpu":  # card names are matched by family, not string
            continue
        if key == "strategy":  # the strategy the asker runs now: gold for the reading, not a Setup field
            continue
        if key == "params_b":
            value = [round(value * 0.85, 3), round(value * 1.15, 3)]
        elif key == "gpu_memory_gb":
            value = [round(value * 0.95, 2), round(value * 1.05, 2)]
        setup[key] = value
    expect: dict[str, Any] = {"language": row["lang"], "intent": gold["intent"]}
    if setup and gold["intent"] != "out_of_scope":
        expect["setup"] = setup
    if gold.get("strategy"):
        # gold written in DeepSpeed's terms names the FSDP strategy that shards the same states
        expect["strategy"] = list(dict.fromkeys(
            ZERO_TO_STRATEGY[int(s.rsplit("zero", 1)[1])] if s.startswith("deepspeed_zero") else s
            for s in gold["strategy"]))
    return Case.model_validate({"id": row["id"], "turns": [row["question"]], "expect": expect,
                                "tags": ["first-contact", gold["thread_kind"]], "note": row["url"]})


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("command", choices=("run", "score"))
    ap.add_argument("file", type=Path)
    ap.add_argument("--out", type=Path, default=None, help="write every answer's verdicts as JSON here")
    args = ap.parse_args(argv)
    if args.command == "run":
        report = run(args.file, args.out)["summary"]
    else:
        report = parse_figures(args.file)
    print(json.dumps(report, ensure_ascii=False, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
