"""The chat page in a child process, for the live page tests: ``start_subprocess`` runs ``app.py``
on a 127.0.0.1 port and returns once the page answers (its answering workers may still be warming
up: the first question waits for them). Test support, not product code (it used to live in
``bot/surfaces/webui.py``); ``evals/bench_web_load.py`` has its own starter, which can also start the page
at another git ref."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from bot.env import repo_root, wait_until_served


def start_subprocess(port: int, host: str = "127.0.0.1", env: dict[str, str] | None = None,
                     timeout: float = 300.0, log_path: str | None = None) -> subprocess.Popen[bytes]:
    """Run ``app.py`` in a child process and wait until the page answers (tests, load benchmark).

    A fresh interpreter, not a fork: the parent may already hold torch threads.
    """
    out = open(log_path, "ab") if log_path else subprocess.DEVNULL  # noqa: SIM115
    proc = subprocess.Popen([sys.executable, str(repo_root() / "app.py"), "--host", host, "--port", str(port)],
                            cwd=str(repo_root()), env={**os.environ, **(env or {})},
                            stdout=out, stderr=subprocess.STDOUT)
    try:
        wait_until_served(proc, f"http://{host}:{port}/", timeout, log_path)
    except BaseException:
        proc.kill()
        raise
    return proc


@contextlib.contextmanager
def served_page(port: int, log_path: Path, artifact: Path) -> Iterator[subprocess.Popen]:
    """``app.py`` on ``port`` for a test module: stopped afterwards (killed if it does not stop),
    its log kept as ``artifact`` for a failing run's post-mortem."""
    proc = start_subprocess(port, timeout=600, log_path=str(log_path))
    try:
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(20)
        except Exception:  # noqa: BLE001
            proc.kill()
        artifact.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(log_path, artifact)
