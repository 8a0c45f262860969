"""How the answers read, over every gold file (issue 25): ``python -m evals.bench_answers``.

Prints, per language, the median and p90 length of the short form (``Answer.text``) and of its
prose above the table (the DESIGN target: about 600 characters in English, 350 in Chinese), the
full answer's length beside it, how many answers carry a retrieved passage and how many of those
passages fall below the relevance threshold (``bot.knowledge.answering`` decides which are
shown; a shown passage below it counts as off topic), and the count of sentence/table
contradictions found by ``evals.consistency`` (target 0).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

from evals.consistency import contradictions
from evals.harness import case_files, load_cases

_TABLE_START = ("**Per-GPU memory and speed", "**每卡显存与速度")


def prose_above_table(text: str) -> str:
    """The short form's prose before the table (the whole short form when it has none), without
    the quoted notices' markers."""
    cut = min((text.index(h) for h in _TABLE_START if h in text), default=len(text))
    return text[:cut].replace("> ", "").replace("**", "").strip()


def _pct(values: list[int], q: float) -> int:
    if not values:
        return 0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def run(files: list[Path]) -> dict:
    from bot import ask

    by_lang: dict[str, dict[str, list[int]]] = {}
    found: list[tuple[str, list[str]]] = []
    passages = answers = 0
    for path in files:
        for case in load_cases(path):
            answer = ask(case.turns[-1], history=list(case.turns[:-1]) or None)
            answers += 1
            stats = by_lang.setdefault(answer.language, {"short": [], "prose": [], "full": []})
            stats["short"].append(len(answer.text))
            stats["prose"].append(len(prose_above_table(answer.text)))
            stats["full"].append(len(answer.full_text or answer.text))
            passages += bool(answer.sections.passages)
            problems = contradictions(answer)
            if problems:
                found.append((case.id, problems))
    return {
        "answers": answers,
        "by_language": {lang: {k: {"median": int(statistics.median(v)), "p90": _pct(v, 0.9)} for k, v in s.items()}
                        for lang, s in sorted(by_lang.items())},
        "answers_with_passages": passages,
        "contradictions": len(found),
        "contradiction_cases": found[:20],
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    result = run(case_files())
    if args.json:
        print(json.dumps(result, ensure_ascii=False, indent=2))
        return 0
    print(f"{result['answers']} answers over the gold files")
    print("| language | short form p50 / p90 | prose above the table p50 / p90 | full answer p50 / p90 |")
    print("|---|---:|---:|---:|")
    for lang, s in result["by_language"].items():
        print(f"| {lang} | {s['short']['median']} / {s['short']['p90']} | {s['prose']['median']} / {s['prose']['p90']} "
              f"| {s['full']['median']} / {s['full']['p90']} |")
    print(f"answers quoting a retrieved passage: {result['answers_with_passages']}")
    print(f"sentence/table contradictions: {result['contradictions']}")
    for cid, problems in result["contradiction_cases"]:
        print(f"  {cid}: {'; '.join(problems)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
