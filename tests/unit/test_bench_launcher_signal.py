"""Reading torchrun's log for the signal the launcher itself received (issue 30: a SIGTERM to the
launcher was reported as rank 0 failing)."""

from __future__ import annotations

import pytest

from bot.bench.run import BenchError, launcher_signal


@pytest.mark.parametrize("log, expected", [
    ("[W] Received 15 death signal, shutting down workers\n", 15),
    ("Traceback ...\ntorch.distributed.elastic.multiprocessing.api.SignalException: Process 4242 got signal: 2\n", 2),
    ("WARNING Received 1 death signal, shutting down workers\nSignalException: Process 7 got signal: 1", 1),
    ("Root Cause (first observed failure):\n  rank      : 1 (local_rank: 1)\n  exitcode  : -9 (pid: 9)\n", None),
    ("", None),
])
def test_launcher_signal_is_read_from_its_own_words(tmp_path, log, expected):
    (tmp_path / "torchrun.log").write_text(log)
    assert launcher_signal(tmp_path) == expected


def test_no_log_means_no_signal(tmp_path):
    assert launcher_signal(tmp_path / "missing") is None


def test_a_launcher_error_is_headed_as_torchrun_log_not_as_a_rank():
    assert "--- torchrun log tail ---" in str(BenchError("stopped", rank=None, log_tail="x"))
    assert "--- rank 1 log tail ---" in str(BenchError("failed", rank=1, log_tail="rank 1: step 3/9"))
