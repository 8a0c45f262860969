"""The load benchmark's browsers run at the niceness it asks for, across scheduling autogroups.

Playwright starts Chromium in a session of its own; with ``sched_autogroup_enabled`` a session is
a scheduling group weighed equal to the server's whatever its threads' niceness, so the wrapper
must nice the group too (evals/bench_web_load.py, ``chromium_executable``). Here the wrapper
runs ``cat`` instead of Chromium, in a new session as Playwright does, and ``cat`` reports its own
niceness and its autogroup's.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

AUTOGROUP = Path("/proc/sys/kernel/sched_autogroup_enabled")


def _run_in_new_session(wrapper: str, *args: str) -> str:
    return subprocess.run([wrapper, *args], capture_output=True, text=True, check=True,
                          start_new_session=True, timeout=30).stdout


def test_wrapper_nices_the_browser_process(tmp_path):
    from evals.bench_web_load import chromium_executable  # imports the page (gradio)

    wrapper = chromium_executable(7, tmp_path, browser=shutil.which("cat") or "/bin/cat")
    stat = _run_in_new_session(wrapper, "/proc/self/stat")
    fields = stat.rsplit(")", 1)[1].split()
    assert int(fields[16]) == min(19, os.getpriority(os.PRIO_PROCESS, 0) + 7)  # field 19: nice (nice -n adds)


@pytest.mark.skipif(not AUTOGROUP.exists() or AUTOGROUP.read_text().strip() != "1",
                    reason="the kernel schedules without autogroups")
def test_wrapper_nices_the_browser_session_autogroup(tmp_path):
    from evals.bench_web_load import chromium_executable  # imports the page (gradio)

    wrapper = chromium_executable(7, tmp_path, browser=shutil.which("cat") or "/bin/cat")
    line = _run_in_new_session(wrapper, "/proc/self/autogroup")
    # A process in the root autogroup (a container's init session, as on CI) reads the file as
    # empty: the kernel prints a line only for a session's own group (kernel/sched/autogroup.c).
    mine = Path("/proc/self/autogroup").read_text().strip() or "(root group)"
    assert re.search(r"nice 7\b", line), line
    assert line.split()[0] != mine.split()[0]  # its own session's group, not ours, was niced
    assert "nice 7" not in mine
