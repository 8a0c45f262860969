"""Loopback helpers shared by tests that start servers: waiting for a port to listen, and the
prelude of a child process that meets an unreachable Hub on purpose (:data:`NO_HUB_RETRIES`).
``free_port`` itself lives in ``bot.env`` and is re-exported here."""

from __future__ import annotations

import socket
import subprocess
import time

from bot.env import free_port  # noqa: F401  (re-exported for tests)

# Code a test's child runs first when it reaches a Hub endpoint that refuses connections (a closed
# 127.0.0.1 port) on purpose: huggingface_hub retries a refused connection 5 times with backoff
# (1 + 2 + 4 + 8 + 8 s) when nothing is cached, and 23 s of each such test was that wait. With no
# retries it raises the same error at the first refusal, so what the product makes of it (the
# offline message, a cached config still served) is checked as before, without the wait. An
# attribute huggingface_hub no longer has fails the child loudly rather than doing nothing.
NO_HUB_RETRIES = (
    "from huggingface_hub.utils import _http as _hf_http\n"
    "_hf_backoff = _hf_http.http_backoff\n"
    "_hf_http.http_backoff = lambda *a, **k: _hf_backoff(*a, **{**k, 'max_retries': 0})\n"
)


def wait_for_port(port: int, proc: subprocess.Popen | None = None, timeout: float = 60.0) -> None:
    """Wait until something accepts connections on 127.0.0.1:``port``; fail early if ``proc`` died."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            if proc is not None and proc.poll() is not None:
                err = proc.stderr.read() if proc.stderr else ""
                raise AssertionError(f"server exited with {proc.returncode} before listening: {err}") from None
            time.sleep(0.2)
    raise AssertionError(f"nothing listens on 127.0.0.1:{port} after {timeout:g} s")
