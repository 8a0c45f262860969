"""The published multi-dimensional runs (evals/published_parallel.jsonl) and their scorer."""

from __future__ import annotations

import json

import pytest

from evals.bench_parallel import ROWS, evaluate_row, load_rows, summarise


def test_rows_carry_their_source_and_split():
    rows = load_rows()
    assert len({r["id"] for r in rows}) == len(rows)
    assert {r["source"]["repo"] for r in rows} >= {"pytorch/torchtitan", "NVIDIA-NeMo/Automodel"}
    for row in rows:
        assert row["source"]["url"].startswith("https://github.com/") and row["source"]["commit"]
        assert row["recorded"] == "2026-12-01" and row["quote"].strip()
    assert 3 * sum(r["split"] == "fit" for r in rows) <= len(rows)


def test_every_published_run_is_predicted_to_fit():
    results = [evaluate_row(r) for r in load_rows()]
    assert all(r["fits"] for r in results), [r["id"] for r in results if not r["fits"]]
    totals = summarise(results)
    assert totals["test_rows"] == sum(r["split"] == "test" for r in results)


def test_too_many_fit_rows_are_refused(tmp_path):
    rows = [json.loads(line) for line in ROWS.read_text().splitlines() if line.strip()]
    for row in rows[: len(rows) // 2 + 1]:
        row["split"] = "fit"
    path = tmp_path / "rows.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows))
    with pytest.raises(ValueError, match="at most a third"):
        load_rows(path)
