"""The harness: cases files are validated with clear messages, runs survive a crashing bot, the
baselines vote as documented, and the CLI runs end to end on a small file with the real bot."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from bot.answer import Answer, Recommendation
from evals.baselines import baseline_strategies, forum_vote
from evals.cli import eval_command, main
from evals.harness import GOLD_CASES, CaseFileError, load_cases, run_cases
from evals.report import markdown_report, summarize

GOOD_LINE = {"id": "a", "turns": ["GPT-2 on 8x 4090, DDP or FSDP?"],
             "expect": {"language": "en", "strategy": ["ddp"], "numbers": {"memory.ddp.fits": True}}}


def write_cases(tmp_path: Path, lines: list) -> Path:
    path = tmp_path / "cases.jsonl"
    path.write_text("\n".join(x if isinstance(x, str) else json.dumps(x, ensure_ascii=False) for x in lines) + "\n",
                    encoding="utf-8")
    return path


def test_the_gold_set_loads_and_is_balanced():
    cases = load_cases(GOLD_CASES)
    assert len(cases) >= 60
    languages = [c.expect.language for c in cases]
    assert languages.count("zh") == languages.count("en")
    outcomes = {s for c in cases for s in (c.expect.strategy or [])}
    assert outcomes >= {"ddp", "fsdp_full_shard", "fsdp_shard_grad_op", "fsdp_hybrid_shard",
                        "fsdp_full_shard_offload", "none", "out_of_scope"}
    assert any(len(c.turns) > 1 for c in cases)


@pytest.mark.parametrize("line, message", [
    ("{not json", ":2: not valid JSON"),
    ('["a list"]', ":2: expected a JSON object"),
    ({"id": "b", "turns": []}, ":2: turns: must hold at least one question"),
    ({"id": "b"}, ":2: turns: Field required"),
    ({"id": "b", "turns": ["q"], "expect": {"strategy": ["fsdp"]}}, "expect.strategy: ['fsdp'] not strategy ids"),
    ({"id": "b", "turns": ["q"], "expect": {"strategies": ["ddp"]}}, "expect.strategies: Extra inputs"),
    ({"id": "b", "turns": ["q"], "expect": {"numbers": {"memory.ddp.total": [1, 2]}}}, "not a DESIGN.md number key"),
    ({"id": "b", "turns": ["q"], "expect": {"numbers": {"memory.ddp.total_gib": [30, 10]}}}, "low > high"),
    ({"id": "b", "turns": ["q"], "expect": {"numbers": {"memory.ddp.total_gib": "big"}}}, "true/false or [low, high]"),
    ({"id": "b", "turns": ["q"], "expect": {"numbers": {"memory.ddp.fits": [0, 1]}}}, "takes true or false"),
    ({"id": "b", "turns": ["q"], "expect": {"language": "fr"}}, "expect.language: must be 'zh' or 'en'"),
    ({"id": "b", "turns": ["q"], "expect": {"cite_kinds": ["blog"]}}, "not citation kinds"),
    ({"id": "b", "turns": ["q"], "expect": {"asks": ["vram"]}}, "not setup field names"),
    ({"id": "a", "turns": ["q"]}, ":2: duplicate id 'a' (first on line 1)"),
])
def test_a_bad_line_is_rejected_with_file_line_and_field(tmp_path, line, message):
    path = write_cases(tmp_path, [GOOD_LINE, line])
    with pytest.raises(CaseFileError) as err:
        load_cases(path)
    assert str(path) in str(err.value)
    assert message in str(err.value)


def test_empty_and_missing_files_are_rejected(tmp_path):
    with pytest.raises(CaseFileError, match="no cases"):
        load_cases(write_cases(tmp_path, ["", "  "]))
    with pytest.raises(CaseFileError, match="no such cases file"):
        load_cases(tmp_path / "nope.jsonl")


def test_every_bad_line_is_counted(tmp_path):
    with pytest.raises(CaseFileError, match=r"and 1 more bad lines"):
        load_cases(write_cases(tmp_path, ["{", GOOD_LINE, "[]"]))


def test_cli_rejects_a_bad_cases_file_with_exit_2(tmp_path):
    path = write_cases(tmp_path, [GOOD_LINE, {"id": "b", "turns": ["q"], "expect": {"strategy": ["zero3"]}}])
    result = CliRunner().invoke(eval_command, ["--cases", str(path), "--out", str(tmp_path / "out")])
    assert result.exit_code == 2
    assert "cases.jsonl:2: expect.strategy: ['zero3'] not strategy ids" in result.output.replace("\n", "")


def test_a_crashing_bot_fails_the_case_and_the_run_goes_on(tmp_path):
    cases = load_cases(write_cases(tmp_path, [GOOD_LINE, dict(GOOD_LINE, id="b")]))
    calls = []

    def ask(question, history=None):
        calls.append(question)
        if len(calls) == 1:
            raise RuntimeError("boom")
        return Answer(language="en", recommendation=Recommendation(strategy="ddp"),
                      numbers={"memory.ddp.fits": True}, text="DDP.")

    run = run_cases(cases, ask, baselines=False)
    assert [r.passed for r in run.results] == [False, True]
    assert "ask raised RuntimeError: boom" in run.results[0].error
    summary = summarize(run, min_pass=0.9)
    assert summary["gate"] == "fail" and summary["pass_rate"] == 0.5
    assert "ask raised RuntimeError" in markdown_report(summary)


def test_history_is_the_earlier_turns(tmp_path):
    cases = load_cases(write_cases(tmp_path, [{"id": "f", "turns": ["first", "second", "third"]}]))
    seen = {}

    def ask(question, history=None):
        seen.update(question=question, history=history)
        return Answer(language="en", recommendation=Recommendation(strategy="ddp"), text="ok")

    run_cases(cases, ask, baselines=False)
    assert seen == {"question": "third", "history": ["first", "second"]}


def test_forum_vote_rules():
    never = lambda: None  # noqa: E731
    assert forum_vote("fsdp", "", {}, never) == "fsdp"
    assert forum_vote("depends", "depends on GPU count", {}, never) is None
    assert forum_vote("depends", "ddp if a full replica fits (claims >=40 GB cards)", {"gpu_memory_gb": 80}, never) == "ddp"
    assert forum_vote("depends", "ddp if a full replica fits (claims >=40 GB cards)", {"gpu_memory_gb": 24}, never) == "fsdp"
    assert forum_vote("depends", "ddp first; fsdp if ddp runs out of memory", {}, lambda: False) == "fsdp"
    assert forum_vote("depends", "ddp first; fsdp if ddp runs out of memory", {}, lambda: True) == "ddp"
    assert forum_vote("depends", "ddp first; fsdp if ddp runs out of memory", {}, never) is None


def test_forum_majority_counts_votes_and_ties_go_to_fsdp(monkeypatch):
    import evals.baselines as baselines

    stances = (("forum-01", "ddp", ""), ("forum-02", "fsdp", ""),
               ("forum-03", "depends", "ddp if a full replica fits (claims >=40 GB cards)"),
               ("forum-04", "depends", "ddp first; fsdp if ddp runs out of memory"),
               ("forum-05", "none", ""))
    monkeypatch.setattr(baselines, "_forum_stances", lambda: stances)
    monkeypatch.setattr(baselines, "ddp_fits", lambda setup: setup.get("params_b", 0) < 1)
    small = {"params_b": 0.124, "gpu_memory_gb": 80.0}  # ddp, fsdp, ddp (>=40), ddp (fits): 3-1
    assert baselines.forum_majority(small) == "ddp"
    assert baselines.forum_majority({"params_b": 70, "gpu_memory_gb": 80.0}) == "fsdp_full_shard"  # 2-2 tie
    assert baselines.forum_majority({"params_b": 0.124, "gpu_memory_gb": 24.0}) == "fsdp_full_shard"  # 2-2


def test_baselines_on_the_real_thread():
    large = {"model": "Llama-2-70B", "gpu": "A100 80GB SXM", "gpu_memory_gb": 80.0, "gpu_count": 8}
    picks = baseline_strategies(large)
    assert picks["always_ddp"] == "ddp" and picks["always_fsdp"] == "fsdp_full_shard"
    assert picks["forum_majority"] == "fsdp_full_shard"  # nobody in the thread would run 70B under DDP


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("bot.assistant") is None,
                    reason="bot.assistant (bot.ask) is not built yet")
def test_end_to_end_with_the_real_bot(tmp_path):
    path = write_cases(tmp_path, [
        {"id": "zh-7b", "turns": ["7B模型全参微调，8张A100 40G，DDP还是FSDP？"],
         "expect": {"language": "zh", "strategy": ["fsdp_full_shard"], "numbers": {"memory.ddp.fits": False},
                    "cite_kinds": ["calc"]}},
        {"id": "en-gpt2", "turns": ["Training GPT-2 small on 8x RTX 4090: DDP or FSDP?"],
         "expect": {"language": "en", "strategy": ["ddp"], "numbers": {"memory.ddp.fits": True}}},
        {"id": "en-oos", "turns": ["Write me a poem about autumn."],
         "expect": {"language": "en", "strategy": ["out_of_scope"], "forbid": ["OPENAI_API_KEY"]}},
    ])
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["run", "--cases", str(path), "--out", str(out), "--json", "--min-pass", "0"])
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert summary["cases"] == 3 and summary["errors"] == 0
    by_id = {r["id"]: r for r in summary["results"]}
    assert by_id["zh-7b"]["metrics"]["strategy"]["passed"] is True
    assert by_id["en-gpt2"]["metrics"]["strategy"]["passed"] is True
    assert by_id["en-oos"]["metrics"]["strategy"]["passed"] is True
    assert {"always_ddp", "always_fsdp", "forum_majority"} <= set(summary["baselines"])
    assert "Bot vs baselines" in (out / "report.md").read_text(encoding="utf-8")
    # the gate: an impossible threshold exits 1
    again = CliRunner().invoke(main, ["run", "--cases", str(path), "--out", str(out), "--min-pass", "1.0",
                                      "--no-baselines"])
    assert again.exit_code in (0, 1)
    assert (again.exit_code == 1) == (summary["pass_rate"] < 1.0)


# --------------------------------------------------------------------------------------------
# The real-thread expectations (intent, status, setup, mentions), every cases file, the ratchet
# --------------------------------------------------------------------------------------------


def _answer(**changes):
    data = dict(language="en", recommendation=Recommendation(strategy="ddp"), text="Turn on gradient checkpointing.",
                setup={"params_b": 7.0, "gpu_count": 8, "finetune": "full"}, intent="troubleshoot",
                status="ok")
    data.update(changes)
    return Answer(**data)


def test_intent_status_setup_and_mentions_pass_and_fail(tmp_path):
    from evals.metrics import run_metrics

    line = {"id": "r", "turns": ["x"], "expect": {"intent": "troubleshoot", "status": "ok",
                                                   "setup": {"params_b": 7, "gpu_count": 8, "finetune": "full",
                                                             "nodes": None},
                                                   "mentions": ["checkpointing", "重计算"]}}
    case = load_cases(write_cases(tmp_path, [line]))[0]
    good = {m.name: m.passed for m in run_metrics(case, _answer())}
    assert good["intent"] is good["status"] is good["setup"] is good["mentions"] is True
    bad = {m.name: m for m in run_metrics(case, _answer(intent="recommend", status="needs_info",
                                                        setup={"params_b": 7.5, "gpu_count": 8, "nodes": 2},
                                                        text="Use FSDP."))}
    assert bad["intent"].passed is False and "'troubleshoot'" in bad["intent"].detail
    assert bad["status"].passed is False
    assert bad["setup"].passed is False and "params_b" in bad["setup"].detail and "finetune" in bad["setup"].detail
    assert "nodes: expected unset" in bad["setup"].detail
    assert bad["mentions"].passed is False


@pytest.mark.parametrize("expect, message", [
    ({"intent": "chat"}, "expect.intent: 'chat' is not an intent"),
    ({"status": "fine"}, "expect.status: 'fine' is not a status"),
    ({"setup": {"gpus": 8}}, "expect.setup: ['gpus'] not setup field names"),
    ({"mentions": []}, "expect.mentions: mentions must list at least one"),
])
def test_new_keys_are_validated(tmp_path, expect, message):
    with pytest.raises(CaseFileError) as err:
        load_cases(write_cases(tmp_path, [{"id": "a", "turns": ["q"], "expect": expect}]))
    assert message in str(err.value)


def test_every_cases_file_is_found_gold_first(tmp_path):
    from evals.harness import case_files

    for name in ("zz.jsonl", "gold.jsonl", "a_threads.jsonl", "notes.md"):
        (tmp_path / name).write_text("", encoding="utf-8")
    assert [p.name for p in case_files(tmp_path)] == ["gold.jsonl", "a_threads.jsonl", "zz.jsonl"]
    assert GOLD_CASES in case_files()


def test_ratchet_gate_fails_on_a_regression_and_only_goes_up(tmp_path):
    from evals.harness import load_baseline, raise_baseline, ratchet_gate

    path = tmp_path / "baseline.json"
    assert load_baseline(path) == {}
    raise_baseline({"gold.jsonl": 88, "threads.jsonl": 10}, path)
    ok, lines = ratchet_gate({"gold.jsonl": 87, "threads.jsonl": 12}, load_baseline(path))
    assert not ok and "gold.jsonl: 87 passed, baseline 88: REGRESSED" in lines
    raise_baseline({"gold.jsonl": 80, "threads.jsonl": 12}, path)  # never lowers
    assert load_baseline(path) == {"gold.jsonl": 88, "threads.jsonl": 12}
    ok, _ = ratchet_gate({"gold.jsonl": 88, "threads.jsonl": 12, "new.jsonl": 0}, load_baseline(path))
    assert ok


def test_the_committed_baseline_names_real_files():
    from evals.harness import BASELINE_FILE, case_files, load_baseline

    names = {p.name for p in case_files()}
    baseline = load_baseline(BASELINE_FILE)
    assert baseline and set(baseline) <= names and baseline.get("gold.jsonl", 0) >= 80


def test_cli_gate_fails_below_the_ratchet(tmp_path, monkeypatch):
    """The gate's failing path: a bot that answers nothing right exits 1 against the baseline."""
    import evals.cli as cli

    cases_dir = tmp_path / "cases"
    cases_dir.mkdir()
    write_cases(cases_dir, [GOOD_LINE]).rename(cases_dir / "gold.jsonl")
    (cases_dir / "baseline.json").write_text('{"gold.jsonl": 1}', encoding="utf-8")
    monkeypatch.setattr(cli, "case_files", lambda: [cases_dir / "gold.jsonl"])
    monkeypatch.setattr(cli, "load_baseline", lambda: {"gold.jsonl": 1})

    def wrong(question, history=None):
        return Answer(language="en", recommendation=Recommendation(strategy="fsdp_full_shard"), text="FSDP.")

    monkeypatch.setattr(cli, "default_ask", lambda: wrong)
    result = CliRunner().invoke(main, ["run", "--out", str(tmp_path / "out"), "--no-baselines"])
    assert result.exit_code == 1, result.output
    assert "REGRESSED" in result.output and "ratchet gate: FAIL" in result.output

    def right(question, history=None):
        return Answer(language="en", recommendation=Recommendation(strategy="ddp"),
                      numbers={"memory.ddp.fits": True}, text="DDP.")

    monkeypatch.setattr(cli, "default_ask", lambda: right)
    result = CliRunner().invoke(main, ["run", "--out", str(tmp_path / "out"), "--no-baselines"])
    assert result.exit_code == 0, result.output


def _gold_summary(**changes):
    summary = {"errors": 0, "pass_rate": 0.97,
               "baselines": {"bot": {"strategy_rate": 0.95}, "always_ddp": {"strategy_rate": 0.4},
                             "always_fsdp": {"strategy_rate": 0.5}, "forum_majority": {"strategy_rate": 0.6}}}
    summary.update(changes)
    return summary


def test_the_gold_gate_needs_no_errors_the_pass_rate_and_a_margin_over_every_baseline():
    from evals.harness import gold_gate

    assert gold_gate(_gold_summary(), 0.95)[0]
    assert not gold_gate(_gold_summary(errors=1), 0.95)[0]
    assert not gold_gate(_gold_summary(pass_rate=0.94), 0.95)[0]
    close = _gold_summary()
    close["baselines"]["forum_majority"]["strategy_rate"] = 0.8  # 0.95 is not more than 0.2 above
    ok, lines = gold_gate(close, 0.95)
    assert not ok and any("forum_majority" in line for line in lines)
    assert gold_gate(_gold_summary(baselines={}), 0.95)[0]  # --no-baselines: the margin is not scored
