"""``evals/bench_reliability.py``'s parts still run against the code they measure.

The bench is too long for the unit run, so an interface it calls can drift unseen: its MCP part
called ``build_mcp_server(search_fn=...)`` after that argument was gone and reported a crashed
part. Here the in-process parts run small: the fuzz's per-chunk work and tally, the MCP
simulation checks on a fake simulation, and the Socket Mode envelopes. No subprocess, no model.
"""

from __future__ import annotations

import math

from evals import reliability_hardening as hardening
from evals.bench_reliability import Row
from evals.reliability_fuzz import SAMPLES, Tally, fuzz_chunk, fuzz_questions


def test_a_fuzz_chunk_reads_and_answers_every_kind_of_question():
    questions = list(enumerate(fuzz_questions(20, big=0)))  # one of each of the 20 kinds
    tally = fuzz_chunk(questions)
    assert tally.read == tally.answered == 20
    assert tally.counts == {"exceptions": 0, "unusable_text": 0, "negative_setup": 0}
    assert tally.non_finite == tally.bad_json == tally.errors == 0
    assert tally.retrieved == 2  # every 10th index
    assert len(tally.answer_s) == len(tally.parse_cpu_s) == 20 and tally.cpu_s > 0


def test_tallies_add_up_and_keep_a_few_samples():
    parts = []
    for i in range(5):
        part = Tally(read=10, answered=9, cpu_s=1.5, answer_s=[0.1] * 9, parse_cpu_s=[0.01] * 10)
        part.note("exceptions", f"q{i}")
        parts.append(part)
    total = Tally()
    for part in parts:
        total.merge(part)
    assert (total.read, total.answered, total.counts["exceptions"]) == (50, 45, 5)
    assert math.isclose(total.cpu_s, 7.5) and len(total.answer_s) == 45
    assert total.exceptions == [f"q{i}" for i in range(SAMPLES)]


def test_the_mcp_simulation_checks_run_and_pass():
    rows = hardening.mcp_rows(orphan=False)
    assert [r.area for r in rows] == ["mcp"] * 4
    assert all(isinstance(r, Row) and r.ok for r in rows), [(r.what, r.figure) for r in rows]


def test_the_socket_mode_check_runs_and_passes():
    row = hardening.socket_mode_row(1)
    assert row.ok, row.figure
    assert row.figure.startswith("5 acknowledged, 5 log lines, 0 tracebacks")
