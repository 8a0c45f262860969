"""evals/published.jsonl (published GPU measurements) and evals/bench_published.py."""

from __future__ import annotations

import pytest

from bot.core.setup import TrainingSetup
from evals.bench_published import evaluate, load_rows, main, meets_targets, select, summary


def test_at_least_25_rows_each_with_a_source_a_quote_and_a_measurement():
    rows = load_rows()
    assert len(rows) >= 25
    assert len({r["id"] for r in rows}) == len(rows)
    for row in rows:
        src = row["source"]
        assert (src.get("url") or "").startswith("https://")
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
    assert meets_targets(total)["inexpressible"]
    assert not total["oom_predicted_fit"]  # the published out-of-memory run is predicted not to fit
    # the rows the constants were fitted on meet issue 14's targets by construction
    fit = summary(select(results, "fit"))
    assert meets_targets(fit)["memory"] and meets_targets(fit)["throughput"] and meets_targets(fit)["fits"]


def test_the_test_rows_meet_what_they_meet_today():
    # issue 26's targets on the test rows (docs/calc.md, 2026-12-02): the throughput median <= 15 % and both
    # memory targets (median <= 10 %, worst <= 25 %) hold; the throughput worst and "no working run predicted
    # not to fit" do not yet (the xfail below). The bound is the target, not today's figure.
    test = summary(select(evaluate(load_rows()), "test"))
    assert test["throughput"]["median_abs_pct"] <= 15
    assert test["memory"]["median_abs_pct"] <= 10 and test["memory"]["worst_abs_pct"] <= 25


@pytest.mark.xfail(strict=True, reason="issue 26 not met on the test rows (docs/calc.md): throughput worst 37.1 % "
                                       "(Answer.AI's Mistral 7B at 24k context; MPT-125M +35 %, MPT-7B s4096 -33 %; "
                                       "the LoRA 70B+ rows are within 26 % since the LoRA size slope), "
                                       "llm-foundry's MPT-3B at 8192 x 3 predicted not to fit")
def test_the_test_rows_meet_every_issue_26_target():
    verdict = meets_targets(summary(select(evaluate(load_rows()), "test")))
    assert all(verdict.values()), verdict


def test_the_bench_prints_a_report(capsys):
    assert main([]) == 0
    out = capsys.readouterr().out
    assert "peer deepspeed" in out
    for part in ("fit rows", "test rows (no constant fitted on them)", "test rows from new sources",
                 "first contact on the new test rows"):
        assert part in out


def test_every_row_is_fit_or_test_and_fitted_metrics_only_on_fit_rows():
    rows = load_rows()
    assert {r["split"] for r in rows} == {"fit", "test"}
    for row in rows:
        assert (row["split"] == "fit") == bool(row.get("fit")), row["id"]


def test_at_least_15_new_test_rows_from_sources_not_used_before_with_their_first_contact():
    rows = load_rows()
    old_sources = {r["source"].get("repo") for r in rows if not r.get("recorded")}
    recorded = [r for r in rows if r.get("recorded")]
    assert len([r for r in recorded if r["split"] == "test"]) >= 15
    for row in recorded:  # every row added at first contact, fit or test, carries the figure taken before any change
        assert row["source"].get("repo") not in old_sources
        assert row["first_contact"]["date"] == row["recorded"]


def test_the_lora_fit_rows_are_recorded_before_the_slope_and_only_fit_the_slope():
    # issue 26 brief N2: LoRA rows added as `fit` rows for the LoRA size slope, each with its first-contact figure
    lora_fit = [r for r in load_rows() if r["split"] == "fit" and r["setup"].get("finetune") in ("lora", "qlora")]
    assert len(lora_fit) >= 3 and len({r["setup"]["model"] for r in lora_fit}) >= 2
    assert sum(1 for r in lora_fit if r["setup"]["model"].endswith("72B")) >= 3  # three runs at >= 30B
    for row in lora_fit:
        assert row["fit"] == ["lora_size_slope"]
        assert "throughput_error_pct" in row["first_contact"] and row["recorded"] == "2026-12-02"


def test_rows_that_ran_fsdp1_keep_the_root_gathered():
    # FSDP1 never frees the root unit's unsharded parameters after forward (torch/distributed/fsdp/
    # _runtime_utils.py _post_forward_reshard: "Do not free the root's parameters in the post-forward"):
    # the Composer (llm-foundry) and Answer.AI (fsdp_qlora train.py) test rows state fsdp_root "kept"
    fsdp1 = [r for r in load_rows() if r["source"].get("repo") in ("mosaicml/llm-foundry", "AnswerDotAI/fsdp_qlora")
             and r["strategy"].startswith("fsdp")]
    assert len(fsdp1) >= 30
    for row in fsdp1:
        assert row["setup"].get("fsdp_root") == "kept", row["id"]
