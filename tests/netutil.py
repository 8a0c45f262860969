"""Loopback helpers shared by tests that start servers: waiting for a port to listen.
``free_port`` itself lives in ``bot.env`` and is re-exported here."""

from __future__ import annotations

import socket
import subprocess
import time

from bot.env import free_port  # noqa: F401  (re-exported for tests)


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
