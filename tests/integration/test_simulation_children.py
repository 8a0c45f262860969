"""A simulation's child process dies with whoever started it (issue 30: a child of a SIGKILLed MCP
server kept running 110 s). Real processes: a parent that starts a 7B simulation, killed with
SIGKILL while the child is in a long forward pass (a child that reports often would also die at
its next report, on the broken pipe; a 405B forward says nothing for tens of seconds)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

PARENT = """
import sys
from bot.bench.simulate import SimConfig, simulate_batch
print("started", flush=True)
simulate_batch([SimConfig(model=sys.argv[1], gpu_count=8, strategy="ddp")], timeout=600,
               progress=lambda message, fraction: print(message, flush=True))
"""


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[1]) == pid and fields[0] != "Z":
            found.append(int(entry.name))
    return found


def _simulation_child(pid: int) -> int | None:
    for child in _children(pid):
        try:
            cmdline = (Path("/proc") / str(child) / "cmdline").read_bytes()
        except OSError:
            continue
        if b"spawn_main" in cmdline and b"resource_tracker" not in cmdline:
            return child
    return None


def _alive(pid: int) -> bool:
    try:
        state = (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.slow
@pytest.mark.parametrize("model", ["Llama-3.1-405B"])
def test_the_child_exits_when_its_parent_is_killed(model):
    parent = subprocess.Popen([sys.executable, "-c", PARENT, model], cwd=Path(__file__).resolve().parents[2],
                              stdout=subprocess.PIPE, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    try:
        assert parent.stdout.readline().strip() == b"started"
        child = None
        deadline = time.monotonic() + 60
        while child is None and time.monotonic() < deadline:
            child = _simulation_child(parent.pid)
            time.sleep(0.2)
        assert child is not None, "no simulation child appeared"
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline:  # until the child is inside its first forward pass
            line = parent.stdout.readline()
            if not line or b"forward" in line:
                break
        assert b"forward" in line and _alive(child)
        time.sleep(0.5)
        parent.send_signal(signal.SIGKILL)
        parent.wait(10)
        killed_at = time.monotonic()
        while _alive(child) and time.monotonic() - killed_at < 10:
            time.sleep(0.1)
        assert not _alive(child), "the simulation outlived its parent"
        assert time.monotonic() - killed_at < 3.0
    finally:
        if parent.poll() is None:
            parent.kill()
