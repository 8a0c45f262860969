"""Diagnosis benchmark (issue 25): does a troubleshooting answer's FIRST sentence name the cause?

Cases: ``evals/diagnosis_own.jsonl``, the project's own troubleshooting questions (half Chinese),
written for the failure classes of the first-contact batches (evals/first_contact.md), never a
thread's own sentences. Each row: ``id``, ``class``, ``lang``, ``question`` and ``cause``, the
playbook entry ids (``knowledge/playbook``) an engineer would name first; ``needs-facts`` stands
for "nothing to diagnose yet: the first sentence asks for the one or two facts that decide it".

Judging is mechanical, from the answer itself: the first sentence of ``Answer.text`` (the same
splitter as the first-contact runs, ``evals.first_contact.first_sentence``) names a cause when it
carries the citation marker of that playbook entry (``[n]`` whose citation id is the entry's id);
it is ``needs-facts`` when it opens with the catalog's diagnosis-needs phrase. Anything else (a
notice, a retrieved passage, a recommendation, the generic "it depends" opener) names no cause.
A lenient figure is printed beside it: the first sentence quotes the expected entry's cause text
and the entry is cited somewhere in the answer (how the answers looked before the lead sentence
carried its own citation).

    python -m evals.bench_diagnosis [--json] [--show-misses]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter, defaultdict
from pathlib import Path

CASES = Path(__file__).with_name("diagnosis_own.jsonl")
NEEDS_FACTS = "needs-facts"


def load(path: Path = CASES) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _needs_lead(lang: str) -> str | None:
    from bot.answer.catalog import render

    try:
        return render(lang, "words.diagnose_needs_lead", {}).strip()
    except KeyError:  # a bot without the diagnosis-needs message
        return None


def lead_cause(answer) -> tuple[str, str]:
    """(the cause the answer's first sentence names, that sentence): a playbook id, ``needs-facts``
    or ``none``."""
    from evals.first_contact import first_sentence

    sentence = first_sentence(answer.text)
    by_n = {c.n: c.id for c in answer.citations}
    for n in re.findall(r"\[(\d+)\]", sentence):
        cid = by_n.get(int(n), "")
        if cid.startswith("pb-"):
            return cid, sentence
    lead = _needs_lead(answer.language)
    if lead and sentence.lstrip("*> ").startswith(lead):
        return NEEDS_FACTS, sentence
    return "none", sentence


def quoted_cause(answer, sentence: str) -> str:
    """The lenient reading (the figure before this benchmark's fixes): the playbook entry whose
    gist or cause text the first sentence quotes, cited anywhere in the answer; ``none`` otherwise."""
    from bot.knowledge.playbook import get_entry

    for c in answer.citations:
        if not c.id.startswith("pb-"):
            continue
        try:
            entry = get_entry(c.id)
        except KeyError:
            continue
        if any(words[:40] and words[:40] in sentence
               for words in (entry.text("gist", answer.language), entry.text("cause", answer.language))):
            return c.id
    return "none"


def run(cases: list[dict]) -> dict:
    import bot
    from bot.env import configure_runtime

    configure_runtime(threads=1)
    rows = []
    for case in cases:
        answer = bot.ask(case["question"])
        got, sentence = lead_cause(answer)
        quoted = quoted_cause(answer, sentence) if got == "none" else got
        rows.append({"id": case["id"], "class": case["class"], "lang": case["lang"], "expected": case["cause"],
                     "got": got, "ok": got in case["cause"], "quoted_ok": quoted in case["cause"], "intent": answer.intent, "status": answer.status,
                     "first_sentence": sentence})
    by_class: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    by_lang: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for r in rows:
        for table, key in ((by_class, r["class"]), (by_lang, r["lang"])):
            table[key][0] += r["ok"]
            table[key][1] += 1
    ok = sum(r["ok"] for r in rows)
    return {"cases": len(rows), "matched": ok, "quoted_matched": sum(r["quoted_ok"] for r in rows), "accuracy": round(ok / len(rows), 3) if rows else 0.0,
            "by_class": {k: f"{a}/{b}" for k, (a, b) in sorted(by_class.items())},
            "by_lang": {k: f"{a}/{b}" for k, (a, b) in sorted(by_lang.items())},
            "lead_causes": dict(Counter(r["got"] for r in rows).most_common()), "rows": rows}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true", help="print the whole result as JSON")
    ap.add_argument("--show-misses", action="store_true", help="print each miss with its first sentence")
    args = ap.parse_args(argv)
    result = run(load())
    if args.json:
        print(json.dumps(result, ensure_ascii=False, indent=1))
        return 0
    print(f"first sentence names the expected cause: {result['matched']}/{result['cases']} "
          f"({100 * result['accuracy']:.0f} %); lenient (the first sentence quotes the entry's gist or cause, "
          f"cited anywhere): {result['quoted_matched']}/{result['cases']}")
    print("by language: " + ", ".join(f"{k} {v}" for k, v in result["by_lang"].items()))
    for k, v in result["by_class"].items():
        print(f"  {k:<16} {v}")
    print("first-sentence causes: " + ", ".join(f"{k} {v}" for k, v in result["lead_causes"].items()))
    if args.show_misses:
        for r in result["rows"]:
            if not r["ok"]:
                print(f"- {r['id']} [{r['intent']}/{r['status']}] expected {r['expected'][0]}, got {r['got']}: "
                      f"{r['first_sentence'][:160]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
