"""Which index generations a new build removes first (issue 30: five killed ``ingest --rebuild``
runs left five half-built generations): those whose writer is gone, never the live one, never
one a running process is still writing. Plain folders here, but bot.knowledge.index imports chromadb: an integration test."""

from __future__ import annotations

import os
import subprocess
import sys

from bot.knowledge.index import _WRITING, _LocalBackend, _process_identity


def _generation(root, name, writer: str | None = None):
    (root / name).mkdir(parents=True)
    (root / name / "chroma.sqlite3").write_bytes(b"x" * 100)
    if writer is not None:
        (root / f"{_WRITING}{name}").write_text(writer)


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_a_build_removes_generations_whose_writer_is_gone(tmp_path):
    dead = _dead_pid()
    own = _process_identity(os.getpid())
    assert own is not None and _process_identity(dead) is None
    (tmp_path / "CURRENT").write_text("g100\n")
    _generation(tmp_path, "g100")  # live
    _generation(tmp_path, "g090")  # the previous one, finished: kept one more round for open readers
    _generation(tmp_path, "g110", writer=f"{dead} 12345")  # killed mid-build
    _generation(tmp_path, "g111", writer=f"{os.getpid()} 1")  # a recycled pid: not the process that wrote it
    _generation(tmp_path, "g112", writer="")  # a marker cut short by the kill
    _generation(tmp_path, "g120", writer=own)  # being written right now
    removed = _LocalBackend(tmp_path).remove_abandoned()
    assert sorted(removed) == ["g110", "g111", "g112"]
    assert sorted(p.name for p in tmp_path.iterdir() if p.is_dir()) == ["g090", "g100", "g120"]
    assert sorted(p.name for p in tmp_path.glob(f"{_WRITING}*")) == [f"{_WRITING}g120"]


def test_the_current_generation_is_never_removed_even_with_a_stale_marker(tmp_path):
    (tmp_path / "CURRENT").write_text("g200\n")
    _generation(tmp_path, "g200", writer=f"{_dead_pid()} 1")
    assert _LocalBackend(tmp_path).remove_abandoned() == []
    assert (tmp_path / "g200").is_dir()


def test_marking_and_unmarking(tmp_path):
    backend = _LocalBackend(tmp_path)
    backend.start_writing("g300")
    assert (tmp_path / f"{_WRITING}g300").read_text() == _process_identity(os.getpid())
    _generation(tmp_path, "g300")
    assert backend.remove_abandoned() == []  # our own build, still running
    backend.done_writing("g300")
    backend.done_writing("g300")  # twice is fine
    assert not (tmp_path / f"{_WRITING}g300").exists()
