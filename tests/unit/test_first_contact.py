"""First-contact ledger: the batch files' shape and the per-field verdicts (no bot, no model)."""

from evals.first_contact import CORE_FIELDS, all_right, batch_files, first_sentence, load_batch, score_setup
from evals.harness import case_files

GOLD = {"setup": {**{k: None for k in CORE_FIELDS}, "gpu": "A100", "gpu_memory_gb": 40, "params_b": 7.0},
        "intent": "recommend", "thread_kind": "question"}


def test_every_batch_row_has_gold_for_every_core_field_and_half_of_each_round_is_chinese():
    files = batch_files()
    assert files, "no first-contact batch"
    rounds: dict[str, list[dict]] = {}  # a round = the batches collected on one date (issue 24: half Chinese)
    for path in files:
        rows = load_batch(path)
        assert len({r["id"] for r in rows}) == len(rows)
        rounds.setdefault(path.stem.removeprefix("first_contact_")[:10], []).extend(rows)
        for r in rows:
            assert set(CORE_FIELDS) <= set(r["gold"]["setup"]), r["id"]
            if r["gold"]["thread_kind"] == "troubleshooting":
                assert r["gold"].get("resolution"), r["id"]
    for day, rows in rounds.items():
        assert sum(r["lang"] == "zh" for r in rows) * 2 >= len(rows), day


def test_first_contact_batches_stay_out_of_the_ratchet():
    assert not [p for p in case_files() if p.name.startswith("first_contact_")]


def test_verdicts_right_wrong_missed_invented_assumed():
    got = {"gpu": "A100 40GB", "gpu_memory_gb": 80, "precision": "bf16-mixed", "finetune": "full"}
    prov = {"gpu": "stated", "gpu_memory_gb": "stated", "precision": "assumed", "finetune": "stated"}
    v = score_setup(GOLD, got, prov, missing=[])
    assert v["gpu"] == "right" and v["gpu_memory_gb"] == "wrong" and v["params_b"] == "missed"
    assert v["precision"] == "assumed" and v["finetune"] == "invented"
    assert not all_right(v)


def test_an_unstated_count_used_without_asking_is_a_silent_default_and_asking_is_not():
    got = {"gpu": "A100", "gpu_memory_gb": 40, "params_b": 6.74, "gpu_count": 8}
    silent = score_setup(GOLD, got, {"gpu_count": "assumed"}, missing=[])
    assert "silent_count_default" in silent and not all_right(silent)
    asked = score_setup(GOLD, got, {"gpu_count": "assumed"}, missing=["gpu_count"])
    assert "silent_count_default" not in asked and all_right(asked)


def test_first_sentence_in_both_languages():
    assert first_sentence("用 DDP。原因如下") == "用 DDP。"
    assert first_sentence("Use ZeRO-3. Then...") == "Use ZeRO-3."


def test_rows_convert_to_harness_cases_with_its_expectation_keys():
    from evals.first_contact import to_case

    for path in batch_files():
        for row in load_batch(path):
            case = to_case(row)  # validated by the harness's own model: a bad key would raise
            assert case.expect.intent == row["gold"]["intent"] and case.expect.language == row["lang"]
            scored = row["gold"]["intent"] != "out_of_scope"  # out-of-scope rows score the intent only
            if scored and row["gold"]["setup"].get("params_b") and "params_b" not in row["gold"].get("ignore", []):
                low, high = case.expect.setup["params_b"]
                assert low < row["gold"]["setup"]["params_b"] < high


def test_only_batches_the_ledger_records_as_frozen_count_as_recorded(tmp_path):
    from evals.first_contact import recorded_batches

    ledger = tmp_path / "first_contact.md"
    ledger.write_text("## Batch 2026-12-01a (recorded, frozen)\n## Batch 2026-12-01b: gold written, not yet run\n",
                      encoding="utf-8")
    assert recorded_batches(ledger) == {"2026-12-01a"}
    assert recorded_batches(tmp_path / "missing.md") == set()
