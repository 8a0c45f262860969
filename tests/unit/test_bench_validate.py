"""The validation kit (bot/bench/validate.py, ``shardwise bench validate``)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from bot.bench import validate as kit
from bot.bench.cli import bench
from bot.bench.run import RunReport
from bot.bench.store import ResultStore


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_grid_lists_multiply_and_scalars_stay(tmp_path):
    grid = kit.load_grid(write(tmp_path, "g.toml", 'model = "tiny"\nseq_len = [64, 128]\nmicro_batch = [1, 2]\n'
                                                   "activation_checkpointing = [false, true]\nsteps = 1\n"))
    points = grid.points()
    assert len(points) == 8
    assert {(p.seq_len, p.micro_batch, p.activation_checkpointing) for p in points} == {
        (s, m, c) for s in (64, 128) for m in (1, 2) for c in (False, True)}
    assert all(p.steps == 1 and p.model == "tiny" for p in points)
    as_json = kit.load_grid(write(tmp_path, "g.json", json.dumps({"model": "tiny", "strategies": "ddp"})))
    assert as_json.strategies == ("ddp",)


@pytest.mark.parametrize("text, expected", [
    ('model = "tiny"\nbatch = 3\n', "unknown key(s) batch"),
    ('model = "tiny"\nseq_len = ["long"]\n', "seq_len must be int"),
    ('model = "tiny"\nmicro_batch = []\n', "micro_batch is an empty list"),
    ('model = "no-such-model"\n', "unknown model"),
    ('model = "tiny"\nstrategies = ["zero9"]\n', "unknown strategy zero9"),
    ('model = "tiny"\nnproc = 999\n', "CPU cores"),
    ("model = \n", "not valid TOML"),
])
def test_bad_grids_are_refused_before_anything_runs(tmp_path, text, expected):
    with pytest.raises(kit.GridError) as err:
        kit.load_grid(write(tmp_path, "bad.toml", text))
    assert expected in str(err.value)


def test_cli_bad_grid_exits_2(tmp_path):
    result = CliRunner().invoke(bench, ["validate", "--config", str(write(tmp_path, "bad.toml", "nproc = 0\n"))])
    assert result.exit_code == 2 and "nproc" in result.output


def _fake_result(strategy: str, cuda: bool) -> dict:
    config = {"model": "Llama-2-7B", "strategy": strategy, "nproc": 8, "nodes": 1,
              "device": "cuda" if cuda else "cpu", "seq_len": 2048, "micro_batch": 1,
              "precision": "bf16-mixed" if cuda else "fp32", "activation_checkpointing": False}
    hardware = {"gpu": "NVIDIA A100-SXM4-80GB", "cuda": "12.4", "nccl": "2.21.5", "gpu_memory_gib": 79.1} \
        if cuda else {"cpu": "x86_64"}
    return {"config": config, "hardware": hardware, "torch_version": "2.13.0",
            "figures": {"peak_gib": 25.0, "peak_reserved_gib": 27.0 if cuda else None, "tokens_per_s": 8 * 3000.0,
                        "step_seconds": 0.68, "peak_source": "torch.cuda.max_memory_allocated"}}


def test_comparisons_put_calculator_and_measurement_side_by_side(tmp_path, monkeypatch):
    # run_benchmark is the real-run machinery (tested in test_bench_run.py); here it returns what a
    # GPU run would, so the comparison logic is checked without GPUs.
    def fake_run(point, store=None, force=False):
        results = {s: _fake_result(s, cuda=True) for s in point.strategies}
        return RunReport(run_ids={s: f"run-{s}" for s in point.strategies}, results=results, loss_check={"ok": True})

    monkeypatch.setattr(kit, "run_benchmark", fake_run)
    grid = kit.Grid(model="llama2-7b", strategies=("fsdp_full_shard",), nproc=8, seq_len=(2048,),
                    micro_batch=(1,), simulate=False)
    rows = kit.validate(grid, store=ResultStore(tmp_path / "r.db"))
    assert len(rows) == 1
    row = rows[0]
    assert row.measured["reserved_gib"] == 27.0 and row.measured["tokens_per_s_per_gpu"] == 3000.0
    assert row.versions == {"torch": "2.13.0", "cuda": "12.4", "nccl": "2.21.5", "device": "NVIDIA A100-SXM4-80GB"}
    assert row.calc["reserved_gib"] >= row.calc["allocated_gib"] > 0
    assert row.calc["tokens_per_s_per_gpu"] > 0
    errors = row.errors()
    assert set(errors) == {"calc_allocated", "calc_reserved", "calc_tokens_per_s"}
    assert errors["calc_allocated"] == pytest.approx(100 * (row.calc["allocated_gib"] - 25.0) / 25.0)
    table = kit.format_table(rows)
    assert "NCCL 2.21.5" in table and "run-fsdp_full_shard" in table
    assert row.notes == []  # "NVIDIA A100-SXM4-80GB" (the worker's GPU name) is found in the catalog


@pytest.mark.slow
def test_a_real_cpu_grid_point_with_gloo(tmp_path, monkeypatch):
    monkeypatch.setenv("SHARDWISE_DATA_DIR", str(tmp_path))
    grid_file = write(tmp_path, "grid.toml", 'model = "tiny"\nstrategies = ["fsdp_full_shard"]\nnproc = 2\n'
                                            "seq_len = 64\nmicro_batch = 1\nsteps = 1\nwarmup = 2\n")
    result = CliRunner().invoke(bench, ["validate", "--config", str(grid_file), "--json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.output)
    assert len(rows) == 1
    row = rows[0]
    assert row["measured"]["allocated_gib"] > 0 and row["measured"]["reserved_gib"] is None  # CPU
    assert row["calc"]["allocated_gib"] > 0 and row["simulate"]["peak_gib"] > 0
    assert row["versions"]["torch"].startswith("2.")
    stored = ResultStore(tmp_path / "results.db") if (tmp_path / "results.db").exists() else ResultStore()
    assert stored.get(row["run_id"]) is not None  # the run is in the results store
