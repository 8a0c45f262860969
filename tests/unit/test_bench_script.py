"""bench script / import: the generated launcher really runs here; imports are validated."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bot.bench.script import (
    ImportRejected,
    ScriptConfig,
    check_script_config,
    import_result,
    sbatch_file,
    torchrun_commands,
)
from bot.bench.store import ResultStore
from bot.bench.worker import content_hash
from bot.env import free_port

REPO = Path(__file__).resolve().parents[2]


def test_multi_node_scripts_use_c10d_rendezvous_and_the_packaged_worker():
    cfg = ScriptConfig(model="llama2-7b", strategies=("ddp", "fsdp_hybrid_shard"), nodes=4, gpus_per_node=8)
    text = torchrun_commands(cfg)
    assert text.count("-m torch.distributed.run") == 2
    assert "--nnodes=4" in text and "--nproc-per-node=8" in text and "--rdzv-backend=c10d" in text
    assert "--rdzv-endpoint=$MASTER_ADDR:29500" in text and "MASTER_ADDR:?" in text
    assert "-m bot.bench.worker --model Llama-2-7B --strategy fsdp_hybrid_shard" in text
    batch = sbatch_file(cfg)
    assert "#SBATCH --nodes=4" in batch and "#SBATCH --gpus-per-node=8" in batch
    assert "#SBATCH --ntasks-per-node=1" in batch
    assert batch.count("srun ") == 2 and '--rdzv-endpoint="$head_node:29500"' in batch
    assert "scontrol show hostnames" in batch
    assert '"shardwise-results/$SLURM_JOB_ID-ddp.json"' in batch
    subprocess.run(["bash", "-n"], input=text, text=True, check=True)  # valid shell syntax
    subprocess.run(["bash", "-n"], input=batch, text=True, check=True)


@pytest.mark.parametrize("overrides, message", [
    (dict(model="gpt-9000"), "unknown model"),
    (dict(strategies=("zero3",)), "unknown strategy"),
    (dict(nodes=0), "nodes"),
    (dict(gpus_per_node=1000), "gpus_per_node"),
    (dict(strategies=("fsdp_hybrid_shard",), nodes=1), "across nodes"),
    (dict(python="python; rm -rf /"), None),  # hostile text is quoted, not refused
])
def test_bad_script_configs(overrides, message):
    cfg = ScriptConfig(**{"model": "tiny", **overrides})
    if message is None:
        text = torchrun_commands(cfg)
        assert "'python; rm -rf /' -m torch.distributed.run" in text
        return
    with pytest.raises(ValueError, match=message):
        check_script_config(cfg)


@pytest.fixture(scope="module")
def result_file(tmp_path_factory) -> Path:
    """Run the generated single-node script for real (tiny model, 2 CPU ranks, DDP)."""
    out = tmp_path_factory.mktemp("cluster")
    cfg = ScriptConfig(model="tiny", strategies=("ddp",), nodes=1, gpus_per_node=2, steps=1, warmup=2,
                       seq_len=32, micro_batch=1, precision="fp32", python=sys.executable,
                       results_dir=str(out / "results"), port=free_port())
    script = out / "run.sh"
    script.write_text(torchrun_commands(cfg))
    env = {**os.environ, "PYTHONPATH": str(REPO), "GLOO_SOCKET_IFNAME": "lo", "OMP_NUM_THREADS": "1"}
    done = subprocess.run(["bash", str(script)], env=env, cwd=out, capture_output=True, text=True,
                          timeout=300, start_new_session=True)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "shardwise bench import" in done.stdout
    return out / "results" / "ddp.json"


@pytest.mark.slow
def test_the_generated_script_runs_and_its_result_imports_once(result_file, tmp_path):
    store = ResultStore(tmp_path / "b.sqlite")
    data = json.loads(result_file.read_text())
    assert data["config"]["strategy"] == "ddp" and data["config"]["nproc"] == 2
    run_id, existed = import_result(result_file, store)
    assert not existed
    stored = store.get(run_id)
    assert stored.kind == "import" and stored.source == "ddp.json" and stored.model == "tiny"
    assert stored.figures["losses"] == data["figures"]["losses"]
    assert import_result(result_file, store) == (run_id, True)  # the same file is stored once


def _write(tmp_path: Path, data, name="r.json") -> Path:
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return path


def _rehash(data: dict) -> dict:
    data["sha256"] = content_hash(data)
    return data


@pytest.mark.slow
@pytest.mark.parametrize("mutate, reason", [
    (lambda d: d["figures"].update(peak_gib=1.0), "content hash mismatch"),
    (lambda d: d.pop("sha256"), "no content hash"),
    (lambda d: d.update(schema="other/9"), "unknown schema"),
    (lambda d: _rehash(d) if d["figures"].update(step_seconds=-1.0) is None else d, "step_seconds"),
    (lambda d: _rehash(d) if d["figures"].update(losses=[float("nan")]) is None else d, "finite"),
    (lambda d: _rehash(d) if d["figures"].update(peak_gib="lots") is None else d, "peak_gib"),
    (lambda d: _rehash(d) if d["config"].update(strategy="magic") is None else d, "unknown strategy"),
    (lambda d: _rehash(d) if d["config"].update(model="gpt-17") is None else d, "unknown model"),
    (lambda d: _rehash(d) if d["config"].update(nproc=0) is None else d, "nproc"),
    (lambda d: _rehash(d) if d.update(status="failed") is None else d, "status"),
])
def test_tampered_or_invalid_results_are_rejected_with_the_reason(result_file, tmp_path, mutate, reason):
    data = json.loads(result_file.read_text())
    mutate(data)
    with pytest.raises(ImportRejected, match=reason):
        import_result(_write(tmp_path, data), ResultStore(tmp_path / "b.sqlite"))


@pytest.mark.parametrize("content, reason", [
    ("{not json", "not valid JSON"),
    ("[1, 2]", "not a JSON object"),
    ("", "not valid JSON"),
])
def test_malformed_files_are_rejected(tmp_path, content, reason):
    with pytest.raises(ImportRejected, match=reason):
        import_result(_write(tmp_path, content), ResultStore(tmp_path / "b.sqlite"))


def test_missing_binary_and_huge_files_are_rejected(tmp_path):
    store = ResultStore(tmp_path / "b.sqlite")
    with pytest.raises(ImportRejected, match="cannot read"):
        import_result(tmp_path / "absent.json", store)
    binary = tmp_path / "bin.json"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(ImportRejected, match="UTF-8"):
        import_result(binary, store)
    huge = tmp_path / "huge.json"
    huge.write_text(" " * (6 * 2**20))
    with pytest.raises(ImportRejected, match="at most"):
        import_result(huge, store)
    assert store.list() == []
