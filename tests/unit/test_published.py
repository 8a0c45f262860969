"""evals/published.jsonl (published GPU measurements) and evals/bench_published.py."""

from __future__ import annotations

from bot.setup import TrainingSetup
from evals.bench_published import evaluate, load_rows, main, meets_targets, summary


def test_at_least_25_rows_each_with_a_source_a_quote_and_a_measurement():
    rows = load_rows()
    assert len(rows) >= 25
    assert len({r["id"] for r in rows}) == len(rows)
    for row in rows:
        src = row["source"]
        assert src.get("url", "").startswith("https://")
        assert src.get("commit") or "github.com" not in src["url"]
        assert row["quote"].strip()
        TrainingSetup(**row["setup"])  # every setup field is a real field
        measured = row["measured"]
        assert measured.get("memory_gib") or measured.get("tokens_per_s_per_gpu") or measured.get("oom")
        if measured.get("memory_gib"):
            assert measured["memory_kind"] in ("allocated", "reserved")


def test_every_expressible_row_is_estimated_and_the_fit_targets_hold():
    results = evaluate(load_rows())
    total = summary(results)
    assert total["memory"]["rows"] >= 10 and total["throughput"]["rows"] >= 25
    verdict = meets_targets(total)
    # no published working run predicted "does not fit", published OOMs predicted not to fit
    assert verdict["fits"], total["predicted_not_fit"] + total["oom_predicted_fit"]
    assert verdict["inexpressible"]
    held_out = summary(results, held_out_only=True)
    assert held_out["memory"]["rows"] < total["memory"]["rows"]  # some rows were fitted, the rest held out
    # issue 14's accuracy targets (median / worst abs. error: memory 10 / 25 %, throughput 15 / 30 %), on all
    # rows and on the held-out rows alone (docs/calc.md: 8.4 / 20.0 % and 3.5 / 25.4 % when this was added)
    for figures in (total, held_out):
        assert meets_targets(figures)["memory"], figures["memory"]
        assert meets_targets(figures)["throughput"], figures["throughput"]


def test_the_bench_prints_a_report(capsys):
    assert main([]) == 0
    out = capsys.readouterr().out
    assert "held-out rows only" in out and "peer deepspeed" in out
