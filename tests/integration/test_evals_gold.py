"""The gold set with the real bot: the pass rate holds the gate and the bot beats every baseline.

This is the CI gate in test form (the whole set runs in about 10-20 s once the knowledge index
exists). ``python -m evals run`` gives the same figures with a per-case report.
"""

from __future__ import annotations

import importlib.util

import pytest

from evals.harness import (
    DEFAULT_MIN_PASS,
    GOLD_CASES,
    case_files,
    default_ask,
    load_baseline,
    load_cases,
    ratchet_gate,
    run_cases,
)
from evals.report import summarize

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(importlib.util.find_spec("bot.assistant") is None,
                       reason="bot.assistant (bot.ask) is not built yet"),
]


def test_gold_set_passes_the_gate_and_beats_the_baselines():
    run = run_cases(load_cases(GOLD_CASES), default_ask(), cases_file=str(GOLD_CASES))
    summary = summarize(run, DEFAULT_MIN_PASS)
    failures = "\n".join(f"{f['id']} {f['metric']}: {f['detail'][:200]}" for f in summary["failures"])
    assert summary["errors"] == 0, failures
    assert summary["pass_rate"] >= DEFAULT_MIN_PASS, failures
    bot = summary["baselines"]["bot"]["strategy_rate"]
    for name in ("always_ddp", "always_fsdp", "forum_majority"):
        assert bot > summary["baselines"][name]["strategy_rate"] + 0.2, (name, summary["baselines"])


def test_every_cases_file_holds_its_ratcheted_pass_count():
    """The CI gate: no cases file passes fewer cases than evals/cases/baseline.json records."""
    ask = default_ask()
    passed = {}
    failures = []
    for path in case_files():
        run = run_cases(load_cases(path), ask, cases_file=str(path), baselines=False)
        passed[path.name] = sum(r.passed for r in run.results)
        failures += [f"{path.name}:{r.case.id} {f.name}: {f.detail[:120]}" for r in run.results for f in r.failures]
    ok, lines = ratchet_gate(passed, load_baseline())
    assert ok, "\n".join(lines + failures[:40])

