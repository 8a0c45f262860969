"""A damaged ``bench.sqlite`` (issue 30): found, moved aside to a timestamped file, said so, and
the store keeps serving; ``bench list`` and ``bench show`` never print a traceback."""

from __future__ import annotations

import json
import os
import time

import pytest
from click.testing import CliRunner

from bot.bench import store as store_module
from bot.bench.store import ResultStore, damage_notices


def _filled(path, runs: int = 7) -> ResultStore:
    store = ResultStore(path)
    for n in range(runs):
        store.add("run", {"model": "tiny", "strategy": "ddp", "nproc": 2, "n": n, "pad": "x" * 2000},
                  {"peak_gib": 0.1 * n, "step_seconds": 0.5})
    assert len(store.list()) == runs
    return store


def _truncate_half(path):
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _overwrite_header(path):
    data = path.read_bytes()
    path.write_bytes(b"this is not sqlite at all " * 4 + data[104:])


def _empty(path):
    path.write_bytes(b"")
    old = time.time() - 60  # emptied a while ago (a brand-new 0-byte file is one being created)
    os.utime(path, (old, old))


def _scribble_pages(path):
    data = bytearray(path.read_bytes())
    for start in range(4096, len(data), 4096):  # every page after the first: its b-tree header
        data[start:start + 64] = b"\xa5" * 64
    path.write_bytes(bytes(data))


DAMAGE = {"truncated to half": _truncate_half, "header overwritten": _overwrite_header,
          "truncated to 0 bytes": _empty, "pages overwritten": _scribble_pages}


@pytest.fixture(autouse=True)
def fresh_notices(monkeypatch):
    monkeypatch.setattr(store_module, "_notices", [])
    monkeypatch.setattr(store_module, "_checked", {})


@pytest.mark.parametrize("how", list(DAMAGE))
def test_damage_found_on_open_is_moved_aside_and_the_store_keeps_serving(tmp_path, how):
    path = tmp_path / "bench.sqlite"
    _filled(path)
    DAMAGE[how](path)
    store = ResultStore(path)  # no exception
    assert store.list() == []
    moved = sorted(tmp_path.glob("bench.sqlite.damaged-*"))
    assert len(moved) == 1 and (moved[0].stat().st_size == 0) == (how == "truncated to 0 bytes")
    notices = damage_notices()
    assert len(notices) == 1 and moved[0].name in notices[0] and "damaged" in notices[0]
    assert moved[0].name in damage_notices("zh")[0] and "损坏" in damage_notices("zh")[0]
    run_id = store.add("run", {"model": "tiny", "strategy": "ddp"}, {"peak_gib": 1.0})
    assert store.get(run_id) is not None and ResultStore(path).get(run_id) is not None
    assert len(damage_notices()) == 1  # the new file is sound: nothing more moved


@pytest.mark.parametrize("how", ["truncated to half", "header overwritten", "pages overwritten"])
def test_damage_after_opening_is_found_on_the_next_read_or_write(tmp_path, how):
    path = tmp_path / "bench.sqlite"
    store = _filled(path)
    DAMAGE[how](path)
    assert store.find_runs(model="tiny") == [] and store.get("run-000000000000") is None
    assert store.add("run", {"model": "tiny", "strategy": "ddp"}, {"peak_gib": 2.0}).startswith("run-")
    assert len(list(tmp_path.glob("bench.sqlite.damaged-*"))) == 1 and len(damage_notices()) == 1


def test_a_store_being_created_by_another_process_is_not_moved(tmp_path):
    path = tmp_path / "bench.sqlite"
    path.write_bytes(b"")  # what sqlite3.connect leaves before the first write
    assert ResultStore(path).list() == [] and not list(tmp_path.glob("*.damaged-*")) and damage_notices() == []


def test_a_sound_store_is_left_alone(tmp_path):
    path = tmp_path / "bench.sqlite"
    _filled(path, 3)
    assert len(ResultStore(path).list()) == 3 and ResultStore(path).list()[0].figures["step_seconds"] == 0.5
    assert damage_notices() == [] and not list(tmp_path.glob("*.damaged-*"))


@pytest.mark.parametrize("how", list(DAMAGE))
@pytest.mark.parametrize("command", [["list"], ["list", "--json"], ["show", "run-abc"]])
def test_bench_cli_says_so_without_a_traceback(tmp_path, monkeypatch, how, command):
    from bot.bench import cli as bench_cli
    from bot.surfaces.cli import main

    monkeypatch.setenv("SHARDWISE_DATA_DIR", str(tmp_path))
    monkeypatch.setattr(bench_cli, "_SHOWN_NOTICES", set())
    _filled(tmp_path / "bench.sqlite")
    DAMAGE[how](tmp_path / "bench.sqlite")
    out = CliRunner().invoke(main, ["bench", *command])
    assert out.exception is None or isinstance(out.exception, SystemExit), out.exception
    assert "Traceback" not in out.output and "Traceback" not in out.stderr
    assert "notice: The benchmark result store was damaged" in out.stderr
    if command == ["list", "--json"]:
        assert json.loads(out.stdout) == []
    elif command == ["list"]:
        assert out.exit_code == 0 and "no stored results" in out.stdout
    else:
        assert out.exit_code == 2 and "no stored result" in out.output
