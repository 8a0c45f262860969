"""``ingest --rebuild`` killed midway, several times in a row (issue 30): each new build first
removes the generation the killed one left, so at most one unfinished generation is on disk."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

KILLED_BUILD = """
import os, signal, sys
from pathlib import Path
from bot.knowledge import index
from bot.knowledge.index import Chunk

def killed(store, chunks, progress):  # the process dies while embedding, as a SIGKILL would leave it
    os.kill(os.getpid(), signal.SIGKILL)

index._add_chunks = killed
index.ingest(chunks=[], rebuild=True, root=Path(sys.argv[1]))
"""


@pytest.mark.slow
def test_repeatedly_killed_rebuilds_leave_at_most_one_unfinished_generation(tmp_path):
    root = tmp_path / "index"
    sizes = []
    for _ in range(4):
        done = subprocess.run([sys.executable, "-c", KILLED_BUILD, str(root)], cwd=Path(__file__).resolve().parents[2],
                              env={**os.environ, "HF_HUB_OFFLINE": "1"}, capture_output=True, timeout=300)
        assert done.returncode == -9, done.stderr.decode()[-2000:]
        sizes.append(len([p for p in root.iterdir() if p.is_dir() and p.name.startswith("g")]))
    assert sizes == [1, 1, 1, 1]
