"""`shardwise bench ...` through click: JSON output, ids, clear errors."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from bot.surfaces.cli import main


def _run(*args: str):
    return CliRunner().invoke(main, ["bench", *args], catch_exceptions=False)


@pytest.mark.slow
def test_simulate_json_then_list_and_show_by_id():
    out = _run("simulate", "--model", "tiny", "--gpus", "2", "--strategy", "fsdp_full_shard",
               "--seq-len", "64", "--activation-checkpointing", "--json")
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert data["run_id"].startswith("run-") and data["config"]["activation_checkpointing"] is True
    parts = sum(data[k] for k in ("params_gib", "grads_gib", "optimizer_gib", "activations_gib", "buffers_gib"))
    assert parts == pytest.approx(data["peak_gib"])
    listed = _run("list", "--kind", "simulate")
    assert data["run_id"] in listed.output and "tiny fsdp_full_shard" in listed.output
    shown = _run("show", data["run_id"], "--json")
    assert json.loads(shown.output)["figures"]["peak_gib"] == data["peak_gib"]
    text = _run("simulate", "--model", "tiny", "--gpus", "2", "--seq-len", "64", "--activation-checkpointing")
    assert data["run_id"] in text.output and "peak" in text.output  # served from the store


@pytest.mark.parametrize("args, message", [
    (("simulate", "--model", "llama-99b", "--gpus", "8"), "unknown model"),
    (("simulate", "--model", "tiny", "--gpus", "-1"), "gpu_count"),
    (("simulate", "--model", "tiny", "--gpus", "2", "--strategy", "zero3"), "unknown strategy"),
    (("run", "--model", "llama2-70b"), "too large"),
    (("run", "--nproc", "99"), "at most"),
    (("show", "run-doesnotexist"), "no stored result"),
    (("script", "--model", "tiny", "--nodes", "0"), "nodes"),
])
def test_bad_input_gives_a_clear_message_and_a_nonzero_exit(args, message):
    out = _run(*args)
    assert out.exit_code != 0
    assert message in out.output


def test_script_writes_both_files(tmp_path):
    out = _run("script", "--model", "llama2-7b", "--nodes", "2", "--gpus-per-node", "8",
               "--out-dir", str(tmp_path))
    assert out.exit_code == 0, out.output
    assert (tmp_path / "shardwise-bench.sh").exists() and (tmp_path / "shardwise-bench.sbatch").exists()


def test_import_rejects_a_bad_file_and_exits_nonzero(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema": "shardwise.bench.result/1"}')
    out = CliRunner().invoke(main, ["bench", "import", str(bad)])
    assert out.exit_code == 2 and "no content hash" in out.output  # a bad value, like calc and search


@pytest.mark.slow  # a GPT-2 simulation (~10 s): the unit run stays in minutes (issue 28)
def test_gpt2_default_seq_len_is_capped_at_its_position_table(tmp_path):
    # `bench simulate --model gpt2` used to refuse its own default seq_len 2048 (GPT-2 has 1024 positions)
    out = _run("script", "--model", "gpt2", "--out-dir", str(tmp_path))
    assert out.exit_code == 0, out.output
    assert "--seq-len 1024" in "".join(p.read_text() for p in tmp_path.iterdir())
    out = _run("simulate", "--model", "gpt2", "--gpus", "2", "--strategy", "ddp", "--json")
    assert out.exit_code == 0, out.output
    assert json.loads(out.output)["config"]["seq_len"] == 1024
