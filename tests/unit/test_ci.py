"""``.ci/run`` and the README agree: the README's one test command is a step of CI, the integration
tests are their own step, the eval gate runs once, and the log ends with pytest's summary. The
step helpers are run here on stand-in commands (exit 5 from pytest, no test selected, is a pass)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CI = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _commands(script: str) -> list[str]:
    return [line.strip() for line in script.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def test_the_readmes_one_test_command_is_a_ci_step():
    blocks = re.findall(r"```bash\n(.*?)```", README, flags=re.S)
    commands = [line for block in blocks for line in block.splitlines() if "pytest" in line]
    assert commands == ['.venv/bin/python -m pytest -q -m "not slow"']
    assert any(line.endswith(commands[0]) and line.startswith("pytest_step unit") for line in _commands(CI))


def test_integration_is_its_own_step_the_eval_gate_runs_once_and_pytest_closes_the_log():
    lines = _commands(CI)
    assert sum("-m evals run" in line for line in lines) == 1
    # the slow tests split in two steps that together select every slow test but the gate's
    assert any(line.startswith("pytest_step integration ") and '-m "slow and not evalgate and not simulation"' in line
               for line in lines)
    assert any(line.startswith("pytest_step integration-sim ") and '-m "slow and simulation and not evalgate"' in line
               for line in lines)
    # the integration summary is kept in a file and printed last: nothing but exits after it
    printed = [i for i, line in enumerate(lines) if line == "cat artifacts/integration.txt"]
    assert len(printed) == 1
    assert lines[printed[0] + 1:] == ['[ "$integration" -eq 0 ] || exit "$integration"', 'exit "$gate"']
    # integration starts before waiting for the simulation tests (they ran beside the unit tests)
    order = [next(i for i, line in enumerate(lines) if key in line)
             for key in ("scripts/install.sh", "ruff check", "mypy", "shardwise ingest", 'pytest -q -m "not slow"',
                         'wait "$mypy_pid"', "-m evals run",
                         '-m "slow and not evalgate and not simulation"', 'wait "$sim_pid"',
                         "cat artifacts/integration-sim.txt", "cat artifacts/integration.txt")]
    assert order == sorted(order)


def _helpers(tmp_path: Path) -> str:
    body = CI[CI.index("timed() {"):CI.index("if ! command -v chromium")]
    return f'set -euo pipefail\nTIMINGS={tmp_path}/t.txt\n{body}'


def _run(tmp_path: Path, script: str) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-c", _helpers(tmp_path) + script], capture_output=True, text=True, timeout=30)


def test_pytest_exit_5_passes_and_a_failure_stops_the_run(tmp_path):
    assert _run(tmp_path, 'pytest_step a bash -c "exit 5"; echo after').stdout.strip() == "after"
    failed = _run(tmp_path, 'pytest_step b bash -c "exit 1"; echo after')
    assert failed.returncode == 1 and "after" not in failed.stdout
    assert "a  0 s (exit 5)" in (tmp_path / "t.txt").read_text()


def test_a_failed_eval_gate_is_remembered_not_lost(tmp_path):
    done = _run(tmp_path, 'gate=0; timed evals bash -c "exit 3" || gate=$?; echo "gate=$gate"')
    assert done.stdout.strip() == "gate=3"


def test_a_background_step_is_timed_and_its_failure_is_seen_by_wait(tmp_path):
    done = _run(tmp_path, 'timed bg bash -c "sleep 0.2; exit 4" & pid=$!; rc=0; wait "$pid" || rc=$?; echo "rc=$rc"')
    assert done.stdout.strip() == "rc=4" and re.search(r"^bg  \d+ s \(exit 4\)$", (tmp_path / "t.txt").read_text(), re.M)
