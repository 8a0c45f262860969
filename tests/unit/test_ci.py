"""``.ci/run`` and the README agree: the README's one test command is a step of CI, the integration
tests are their own step, the eval gate runs once, and the log ends with pytest's summary. The
step helpers are run here on stand-in commands (exit 5 from pytest, no test selected, is a pass)."""

from __future__ import annotations

import ast
import itertools
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


def _slow_steps(lines: list[str]) -> dict[str, str]:
    """Each slow pytest step's name -> its marker expression."""
    steps = {}
    for line in lines:
        found = re.match(r'pytest_step (integration\S*) .*-m "([^"]+)"', line)
        if found:
            steps[found.group(1)] = found.group(2)
    return steps


def test_the_slow_steps_take_every_slow_test_but_the_gates_once():
    steps = _slow_steps(_commands(CI))
    assert set(steps) == {"integration", "integration-sim", "integration-noindex", "integration-page"}
    # tests/conftest.py gives a slow test at most one of the three markers (its modules are disjoint)
    from tests.conftest import NOINDEX, PAGE_MODULES, SIMULATION_MODULES

    groups = (SIMULATION_MODULES, set(NOINDEX), PAGE_MODULES)
    assert sum(map(len, groups)) == len(set().union(*groups))
    markers = ("simulation", "noindex", "page")
    for evalgate, marked in itertools.product((False, True), (None, *markers)):
        names = {"slow": True, "evalgate": evalgate, **{m: m == marked for m in markers}}
        taken = [step for step, expr in steps.items() if eval(expr, {}, names)]  # noqa: S307 (pytest's -m grammar)
        assert len(taken) == (0 if evalgate else 1), (names, taken)


def test_a_step_that_names_its_files_names_those_of_its_marker():
    lines = _commands(CI)
    for marker, variable in (("simulation", "sim_paths"), ("noindex", "noindex_paths"), ("page", "page_paths")):
        assert f'read -ra {variable} <<<"$(paths {marker})"' in lines
        step = next(line for line in lines if f'-m "slow and {marker} and not evalgate"' in line)
        follows = lines[lines.index(step) + 1] if step.endswith("\\") else step
        assert f'"${{{variable}[@]}}"' in follows, step


def test_every_module_and_test_named_for_a_step_exists():
    from tests.conftest import NOINDEX, PAGE_MODULES, SIMULATION_MODULES, ci_paths

    for step, stems in (("simulation", SIMULATION_MODULES), ("noindex", set(NOINDEX)), ("page", PAGE_MODULES)):
        assert {Path(p).stem for p in ci_paths(step)} == stems, step
    for path in ci_paths("noindex"):
        names = NOINDEX[Path(path).stem]
        if names:
            tree = ast.parse((ROOT / path).read_text(encoding="utf-8"))
            defined = {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
            assert names <= defined, (path, names - defined)


def test_the_gate_runs_once_before_what_reads_the_index_and_pytest_closes_the_log():
    lines = _commands(CI)
    assert sum("-m evals run" in line for line in lines) == 1
    # the integration summary is kept in a file and printed last: nothing but exits after it
    printed = [i for i, line in enumerate(lines) if line == "cat artifacts/integration.txt"]
    assert len(printed) == 1
    assert lines[printed[0] + 1:] == ['[ "$integration" -eq 0 ] || exit "$integration"', 'exit "$gate"']
    # install and ruff first; the index, then the gate on it, then the page (lane 2); the unit tests,
    # the noindex tests, the wait for the gate, then the integration tests that read the index
    # (lane 1); every background step waited for before the summaries
    order = [next(i for i, line in enumerate(lines) if key in line)
             for key in ("scripts/install.sh", "ruff check", "mypy", "shardwise ingest", "-m evals run",
                         '-m "slow and page', 'pytest -q -m "not slow"', 'wait "$mypy_pid"',
                         '-m "slow and noindex', 'while [ ! -e "$gate_done" ]',
                         '-m "slow and not evalgate and not simulation and not noindex and not page"',
                         'wait "$index_pid"', 'wait "$sim_pid"', "cat artifacts/integration-sim.txt",
                         "cat artifacts/integration-page.txt", "cat artifacts/integration.txt")]
    assert order == sorted(order)
    # the gate's status reaches lane 1 only once the gate has run: written after it, read before
    # the integration step
    gate_write = next(i for i, line in enumerate(lines) if line.startswith('echo "evals $rc" >"$gate_done.tmp"'))
    assert order[4] < gate_write < order[5]


def test_steps_that_write_have_data_dirs_of_their_own():
    lines = _commands(CI)
    for step in ("unit", "integration-sim", "integration-noindex", "integration-page"):
        line = next(line for line in lines if line.startswith(f"pytest_step {step} "))
        assert re.match(rf'pytest_step {step} "\$\{{\w+_env\[@\]\}}" ', line), line
    assert any(line.startswith('cp -a "$SHARDWISE_DATA_DIR/." "$page_dir/"') for line in lines)  # the page's copy


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
