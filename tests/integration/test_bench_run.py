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
    (dict(timeout=-1), "timeout"),
    (dict(timeout=0), "timeout"),
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
    proc = subprocess.Popen([sys.executable, "-m", "bot.surfaces.cli", "bench", "run", "--strategies", "ddp",
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


# ---------------------------------------------------------------------------------------------
# Kills from outside: no rank outlives its run, the message names the rank that died (issue 17)
LONG = dict(model="tiny", nproc=2, steps=1000, warmup=2, seq_len=32, micro_batch=1, timeout=180)


def _start_in_thread(store):
    import threading

    errors: list[BaseException] = []

    def go():
        try:
            run_benchmark(RunConfig(strategies=("ddp",), **LONG), store=store, force=True)
        except BaseException as err:  # noqa: BLE001  (handed to the test)
            errors.append(err)

    thread = threading.Thread(target=go, daemon=True)
    thread.start()
    return thread, errors


def _wait_for_ranks(root: Path, count: int = 2, timeout: float = 120.0) -> tuple[Path, dict[int, int]]:
    from bot.bench.run import live_ranks

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for workdir in root.glob("bench-runs/*/ddp"):
            ranks = live_ranks(workdir)
            if len(ranks) == count:
                return workdir, ranks
        time.sleep(0.2)
    raise AssertionError("the ranks never started")


def _launcher_pid(workdir: Path) -> int:
    from bot.bench.run import launcher_pid

    pid = launcher_pid(workdir)
    assert pid is not None, "no torchrun launcher found"
    return pid


def _no_rank_left(marker: str, wait: float = 15.0) -> bool:
    deadline = time.monotonic() + wait
    while _workers_running(marker) and time.monotonic() < deadline:
        time.sleep(0.3)
    return not _workers_running(marker)


@pytest.mark.slow
@pytest.mark.parametrize("victim", [1, 0])
def test_killing_a_rank_names_that_rank_and_its_log(tmp_path, monkeypatch, victim):
    import os
    import signal

    monkeypatch.setenv("SHARDWISE_DATA_DIR", str(tmp_path))
    thread, errors = _start_in_thread(ResultStore(tmp_path / "b.sqlite"))
    workdir, ranks = _wait_for_ranks(tmp_path)
    time.sleep(1.0)  # into the training loop
    os.kill(ranks[victim], signal.SIGKILL)
    thread.join(120)
    assert errors and isinstance(errors[0], BenchError), errors
    err = errors[0]
    assert err.rank == victim and f"rank {victim} failed: it was killed by signal 9" in str(err)
    assert f"/{victim}/stderr.log" in str(err)  # where its log is
    # the tail is that rank's own stderr, not torchrun's failure summary
    assert f"rank {victim}: started" in err.log_tail and "Root Cause" not in err.log_tail
    assert _no_rank_left(str(tmp_path))


@pytest.mark.slow
@pytest.mark.parametrize("sig", ["SIGTERM", "SIGINT"])
def test_stopping_the_launcher_is_reported_as_the_launcher_stopped_not_a_rank_failure(tmp_path, monkeypatch, sig):
    import os
    import signal

    monkeypatch.setenv("SHARDWISE_DATA_DIR", str(tmp_path))
    thread, errors = _start_in_thread(ResultStore(tmp_path / "b.sqlite"))
    workdir, _ = _wait_for_ranks(tmp_path)
    time.sleep(1.0)
    os.kill(_launcher_pid(workdir), getattr(signal, sig))
    stopped = time.monotonic()
    thread.join(120)
    # the ranks stop when told, not after torchrun's 30 s shutdown grace and a SIGKILL (SIGINT did)
    assert time.monotonic() - stopped < 25
    assert errors and isinstance(errors[0], BenchError), errors
    err = errors[0]
    first_line = str(err).splitlines()[0]
    assert f"the torchrun launcher was stopped ({sig}) from outside" in first_line
    assert "no rank failed" in first_line and "rank 0 failed" not in str(err) and err.rank is None
    assert _no_rank_left(str(tmp_path), wait=10)


@pytest.mark.slow
def test_killing_the_launcher_leaves_no_orphan_rank(tmp_path, monkeypatch):
    import os
    import signal

    monkeypatch.setenv("SHARDWISE_DATA_DIR", str(tmp_path))
    thread, errors = _start_in_thread(ResultStore(tmp_path / "b.sqlite"))
    workdir, _ = _wait_for_ranks(tmp_path)
    os.kill(_launcher_pid(workdir), signal.SIGKILL)
    thread.join(120)
    assert errors and "the torchrun launcher was killed (SIGKILL)" in str(errors[0])
    assert _no_rank_left(str(tmp_path), wait=10)


@pytest.mark.slow
def test_sigkill_of_the_caller_leaves_no_orphan(tmp_path):
    # SIGKILL cannot be caught: the launcher follows its parent (PR_SET_PDEATHSIG) and the ranks
    # follow the launcher.
    import os
    import signal
    import subprocess
    import sys

    env = {**os.environ, "SHARDWISE_DATA_DIR": str(tmp_path)}
    proc = subprocess.Popen([sys.executable, "-m", "bot.surfaces.cli", "bench", "run", "--strategies", "ddp",
                             "--steps", "1000", "--seq-len", "32", "--micro-batch", "1", "--timeout", "300"],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait_for_ranks(tmp_path)
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
        assert _no_rank_left(str(tmp_path), wait=20)
        # the launcher dies with its parent (PR_SET_PDEATHSIG) but may still be tearing down: allow it
        # the same grace the ranks get, then nothing that names this run may be left
        assert _no_process_naming(str(tmp_path), wait=20)
    finally:
        proc.kill()


def _no_process_naming(text: str, wait: float) -> bool:
    import time

    deadline = time.monotonic() + wait
    while True:
        alive = [p for p in Path("/proc").glob("[0-9]*/cmdline") if text in _cmdline(p)]
        if not alive or time.monotonic() > deadline:
            return not alive
        time.sleep(0.2)


def _cmdline(path: Path) -> str:
    try:
        return path.read_bytes().decode(errors="replace")
    except OSError:
        return ""
