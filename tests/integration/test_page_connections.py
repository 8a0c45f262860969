"""The page's connection bounds on a real socket (uvicorn on 127.0.0.1 with the page's guarded
protocol and body limit, a tiny app behind them): a 100 MB body is refused with 413 without the
server's memory growing, slow heads are closed after their deadline, and the number of slow
connections held at once is capped while other clients keep being answered (issue 30)."""

from __future__ import annotations

import socket
import threading
import time

import pytest

from bot.env import free_port
from bot.surfaces.web.guard import BodyLimit, guarded_protocol

pytestmark = pytest.mark.slow


async def _app(scope, receive, send):
    if scope["type"] == "lifespan":
        while True:
            kind = (await receive())["type"]
            await send({"type": kind + ".complete"})
            if kind == "lifespan.shutdown":
                return
    body = b""
    if scope["method"] == "POST":
        body = (await receive())["body"]
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
    await send({"type": "http.response.body", "body": b"got %d" % len(body)})


@pytest.fixture(scope="module")
def server():
    import uvicorn

    protocol = guarded_protocol()
    saved = protocol.head_timeout, protocol.max_waiting
    protocol.head_timeout, protocol.max_waiting = 1.5, 40
    port = free_port()
    config = uvicorn.Config(BodyLimit(_app), host="127.0.0.1", port=port, http=protocol, log_level="warning",
                            limit_concurrency=1000)
    srv = uvicorn.Server(config)
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not srv.started and time.monotonic() < deadline:
        time.sleep(0.05)
    yield port, protocol
    srv.should_exit = True
    thread.join(10)
    protocol.head_timeout, protocol.max_waiting = saved


def _request(port: int, raw: bytes, timeout: float = 5.0) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(raw)
        out = b""
        while chunk := s.recv(65536):
            out += chunk
            if b"\r\n\r\n" in out and (b"got " in out or b"detail" in out):
                break
        return out


def _rss(pid: str = "self") -> int:
    """Resident memory in bytes (Linux ``/proc``)."""
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmRSS:"))


def test_a_100_mb_question_is_refused_and_memory_stays(server):
    port, _ = server
    before = _rss()
    started = time.monotonic()
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(b"POST /gradio_api/call/chat HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  b"Content-Length: 100000000\r\n\r\n")
        block = b"x" * 1_000_000
        try:
            for _ in range(100):
                s.sendall(block)
        except OSError:
            pass  # the server answered and closed: the rest is never read
        reply = s.recv(65536)
    assert reply.startswith(b"HTTP/1.1 413"), reply[:200]
    assert time.monotonic() - started < 10
    # chunked (no declared length): cut at the limit
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(b"POST /gradio_api/call/chat HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
        chunk = b"%x\r\n" % 1_000_000 + b"y" * 1_000_000 + b"\r\n"
        try:
            for _ in range(100):
                s.sendall(chunk)
        except OSError:
            pass
        reply = s.recv(65536)
    assert reply.startswith(b"HTTP/1.1 413"), reply[:200]
    assert _rss() - before < 30_000_000, (before, _rss())
    # an ordinary question still gets through
    body = b'{"data": ["DDP or FSDP?"]}'
    head = b"POST /q HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(body)
    assert b"got %d" % len(body) in _request(port, head + body)


def test_slow_heads_are_closed_and_capped_while_others_are_answered(server):
    port, protocol = server
    slow = []
    for _ in range(150):
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n")  # a head never finished
        slow.append(s)
    time.sleep(0.3)
    assert len(protocol.waiting) <= protocol.max_waiting
    t = time.monotonic()
    assert b"got 0" in _request(port, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    assert time.monotonic() - t < 2.0
    time.sleep(protocol.head_timeout + 1.0)
    closed = 0
    for s in slow:
        s.settimeout(0.5)
        try:
            closed += s.recv(10) == b""
        except (ConnectionResetError, BrokenPipeError):
            closed += 1
        except TimeoutError:
            pass
        s.close()
    assert closed == len(slow), f"{len(slow) - closed} slow connections still held"
    assert len(protocol.waiting) <= 1


def test_a_kept_alive_connection_gets_a_new_deadline(server):
    port, protocol = server
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        assert b"got 0" in s.recv(65536)
        s.sendall(b"GET / HTTP/1.1\r\n")  # the next head, never finished
        started = time.monotonic()
        assert s.recv(100) == b""
        assert time.monotonic() - started < protocol.head_timeout + 2
