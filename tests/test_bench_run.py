"""Real torchrun benchmarks on this CPU: DDP vs FSDP losses, faults, queueing, refusals."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from bot.bench.run import BenchError, RunConfig, check_config, run_benchmark, run_lock
from bot.bench.store import ResultStore

# Small enough to keep each torchrun launch to a few seconds of compute.
QUICK = dict(model="tiny", nproc=2, steps=1, warmup=2, seq_len=64, micro_batch=1, timeout=240)


def _workers_running(marker: str) -> list[str]:
    """Command lines of live rank processes mentioning ``marker`` (our run's unique data path)."""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            text = cmdline.read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if marker in text and "bot.bench.worker" in text and "torch.distributed.run" not in text:
            found.append(text)
    return found


@pytest.mark.slow
def test_ddp_and_fsdp_train_to_the_same_losses_and_are_stored(tmp_path):
    store = ResultStore(tmp_path / "b.sqlite")
    report = run_benchmark(RunConfig(strategies=("ddp", "fsdp_full_shard"), **QUICK), store=store)
    assert report.loss_check["ok"] and report.loss_check["reference"] == "ddp"
    ddp, fsdp = (report.results[s]["figures"] for s in ("ddp", "fsdp_full_shard"))
    assert len(ddp["losses"]) == 3 and all(8 < loss < 10 for loss in ddp["losses"])
    assert fsdp["losses"] == pytest.approx(ddp["losses"], rel=1e-4)
    # FSDP holds a quarter.. half of DDP's training state per rank on 2 ranks
    assert fsdp["peak_gib"] < ddp["peak_gib"]
    assert ddp["step_seconds"] > 0 and ddp["tokens_per_s"] > 0 and ddp["comm_seconds_per_step"] > 0
    stored = store.get(report.run_ids["fsdp_full_shard"])
    assert stored.kind == "run" and stored.status == "ok" and stored.hardware["world_size"] == 2
    assert stored.figures["loss_check"]["ok"]
    again = run_benchmark(RunConfig(strategies=("ddp", "fsdp_full_shard"), **QUICK), store=store)
    assert again.cached == ["ddp", "fsdp_full_shard"] and again.run_ids == report.run_ids


@pytest.mark.slow
def test_a_crashing_rank_is_named_with_its_log_and_nothing_stays_running(tmp_path, monkeypatch):
    from bot.env import data_dir

    store = ResultStore(tmp_path / "b.sqlite")
    monkeypatch.setenv("SHARDWISE_BENCH_FAULT", "crash:1:0")
    waited = []
    # Hold the run lock first: the run must queue behind it, not interleave.
    lock_held = threading.Event()
    release = threading.Event()

    def holder():
        with run_lock():
            lock_held.set()
            release.wait(30)

    thread = threading.Thread(target=holder)
    thread.start()
    lock_held.wait(10)
    timer = threading.Timer(2.0, release.set)
    timer.start()
    start = time.monotonic()
    with pytest.raises(BenchError) as info:
        run_benchmark(RunConfig(strategies=("ddp",), **QUICK), store=store, force=True,
                      progress=lambda message, fraction: waited.append(message))
    thread.join()
    assert waited[0] == "waiting for another benchmark run to finish"
    assert time.monotonic() - start >= 2.0
    err = info.value
    assert err.rank == 1 and "rank 1 failed" in str(err)
    assert "injected crash on rank 1" in err.log_tail
    assert not _workers_running(str(data_dir()))
    assert store.find_runs(model="tiny") == []  # the failed run is not served as a result
    assert [r.status for r in store.list()] == ["failed"]


@pytest.mark.slow
def test_a_hanging_rank_hits_the_timeout_and_every_process_is_reaped(tmp_path, monkeypatch):
    from bot.env import data_dir

    store = ResultStore(tmp_path / "b.sqlite")
    monkeypatch.setenv("SHARDWISE_BENCH_FAULT", "hang:0:0")
    start = time.monotonic()
    with pytest.raises(BenchError, match="timed out after 12 s"):
        run_benchmark(RunConfig(strategies=("fsdp_full_shard",), **{**QUICK, "timeout": 12}), store=store)
    assert time.monotonic() - start < 60
    assert not _workers_running(str(data_dir()))
    assert store.find_runs() == []


@pytest.mark.parametrize("overrides, message", [
    (dict(model="llama2-7b"), "too large to run on this CPU"),
    (dict(nproc=64), "at most"),
    (dict(nproc=0), "nproc"),
    (dict(strategies=("zero9",)), "unknown strategy"),
    (dict(strategies=()), "unknown strategy"),
    (dict(model="nonsense-model"), "unknown model"),
    (dict(steps=-1), "steps"),
    (dict(warmup=1), "warmup"),
    (dict(model="gpt2", seq_len=5000), "learned positions"),
])
def test_configs_this_machine_cannot_run_are_refused_before_starting(overrides, message):
    with pytest.raises(BenchError, match=message):
        check_config(RunConfig(**{**QUICK, **overrides}))


@pytest.mark.slow
def test_stopping_the_caller_reaps_every_rank(tmp_path):
    # SIGTERM to `shardwise bench run` (Ctrl-C takes the same path): no rank may outlive it.
    import os
    import signal
    import subprocess
    import sys

    env = {**os.environ, "SHARDWISE_DATA_DIR": str(tmp_path)}
    proc = subprocess.Popen([sys.executable, "-m", "bot.cli", "bench", "run", "--strategies", "ddp",
                             "--steps", "1000", "--seq-len", "32", "--micro-batch", "1", "--timeout", "300"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 120
    while len(_workers_running(str(tmp_path))) < 2 and time.monotonic() < deadline:
        time.sleep(0.5)
    assert len(_workers_running(str(tmp_path))) == 2, "the ranks never started"
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(60) != 0
    deadline = time.monotonic() + 15
    while _workers_running(str(tmp_path)) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not _workers_running(str(tmp_path))
    assert ResultStore(tmp_path / "bench.sqlite").find_runs() == []
