"""Bad values on the command line: exit 2 with a message, never a traceback (issue 17, defect 8).

Exit codes follow click: 2 is a usage error (a bad value), 1 a failure while running.
"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from bot.surfaces.cli import main


def invoke(*args: str):
    return CliRunner().invoke(main, list(args))


@pytest.mark.parametrize("question", ["", "   "])
def test_ask_empty_question_is_a_usage_error(question):
    result = invoke("ask", question)
    assert result.exit_code == 2 and "empty" in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)


def test_ask_with_a_long_digit_run_prints_a_clean_message_and_valid_json():
    result = invoke("ask", "--no-llm", "--json", f"{'9' * 2000}B model on {'9' * 400} A100")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)  # strict JSON: no Infinity
    assert data["status"] in ("ok", "needs_info", "invalid", "error")
    assert "Traceback" not in result.output


def test_ask_catches_a_rendering_failure_into_one_line(monkeypatch):
    from bot.surfaces import llm

    monkeypatch.setattr(llm, "answer", lambda *a, **k: (_ for _ in ()).throw(OverflowError("too big")))
    result = invoke("ask", "--no-llm", "DDP or FSDP?")
    assert result.exit_code == 1 and "could not answer (OverflowError)" in result.output
    assert "Traceback" not in result.output


# ---------------------------------------------------------------------------------------------
# bench: a bad value exits 2 (a failure while running exits 1)
@pytest.mark.parametrize("args, message", [
    (("simulate", "--model", "tiny", "--gpus", "2", "--strategy", ""), "at least one strategy"),
    (("simulate", "--model", "tiny", "--gpus", "2", "--strategy", " , "), "at least one strategy"),
    (("simulate", "--model", "tiny", "--gpus", "2", "--strategy", "zero3"), "unknown strategy"),
    (("simulate", "--model", "llama-99b", "--gpus", "8"), "unknown model"),
    (("simulate", "--model", "tiny", "--gpus", "0"), "gpu_count"),
    (("run", "--timeout", "-1"), "--timeout"),
    (("run", "--timeout", "0"), "--timeout"),
    (("run", "--strategies", ""), "at least one strategy"),
    (("run", "--nproc", "99"), "at most"),
    (("run", "--model", "llama2-70b"), "too large"),
    (("show", "run-doesnotexist"), "no stored result"),
    (("script", "--model", "tiny", "--nodes", "0"), "nodes"),
    (("script", "--model", "nope-model"), "unknown model"),
    (("script", "--model", "tiny", "--strategies", ""), "at least one strategy"),
])
def test_bench_bad_values_exit_2_with_a_message(args, message, tmp_path, monkeypatch):
    monkeypatch.setenv("SHARDWISE_DATA_DIR", str(tmp_path))
    result = invoke("bench", *args)
    assert result.exit_code == 2, (result.exit_code, result.output)
    assert message in result.output and "Traceback" not in result.output


def test_bench_import_of_a_bad_file_exits_2(tmp_path, monkeypatch):
    monkeypatch.setenv("SHARDWISE_DATA_DIR", str(tmp_path))
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    result = invoke("bench", "import", str(bad))
    assert result.exit_code == 2 and "rejected" in result.output


# ---------------------------------------------------------------------------------------------
# store: identical concurrent simulations store one row
def _add_same_simulation(path: str) -> str:
    from bot.bench.store import ResultStore

    return ResultStore(path).add("simulate", {"model": "tiny", "strategy": "ddp", "gpu_count": 2},
                                 {"peak_gib": 1.0}, hash_="same-config-hash")


def test_identical_concurrent_simulations_store_one_row(tmp_path):
    from concurrent.futures import ProcessPoolExecutor

    from bot.bench.store import ResultStore

    path = str(tmp_path / "b.sqlite")
    ResultStore(path)  # schema first, so the workers race on the insert only
    with ProcessPoolExecutor(6) as pool:
        ids = list(pool.map(_add_same_simulation, [path] * 12))
    rows = ResultStore(path).list(kind="simulate")
    assert len(rows) == 1 and set(ids) == {rows[0].id}


def test_failed_rows_and_real_runs_are_not_merged(tmp_path):
    from bot.bench.store import ResultStore

    store = ResultStore(tmp_path / "b.sqlite")
    a = store.add("run", {"model": "tiny"}, {"step_seconds": 1.0}, hash_="h")
    b = store.add("run", {"model": "tiny"}, {"step_seconds": 1.1}, hash_="h")  # measured again
    c = store.add("simulate", {"model": "tiny"}, {}, hash_="s", status="failed", error="x")
    d = store.add("simulate", {"model": "tiny"}, {}, hash_="s", status="failed", error="x")
    assert len({a, b, c, d}) == 4


# ---------------------------------------------------------------------------------------------
@pytest.mark.slow  # imports chromadb (bot.knowledge.index): not in the unit run, which never loads it
def test_index_lock_that_is_a_directory_is_a_clean_error(tmp_path):
    from bot.knowledge.index import IndexUnavailable, _backend

    backend = _backend(tmp_path / "index")
    (tmp_path / "index" / ".lock").mkdir(parents=True)
    with pytest.raises(IndexUnavailable, match="is a directory"):
        with backend.writer_lock():
            pass
