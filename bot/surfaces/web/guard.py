"""Bounds on what one HTTP client can hold of the page's server: the size of a request body
(refused with 413 before it is read), the time to send a body and a request head, and the
number of connections at once that have not yet sent a complete head (slow clients).

``BodyLimit`` is an ASGI middleware (it sees each request once its head has arrived).
``GuardedHttpToolsProtocol`` is uvicorn's HTTP protocol with a head timer and the cap on slow
connections: a connection that sends its head byte by byte never reaches the ASGI app, so only
the protocol can see it. ``guarded_uvicorn()`` makes Gradio's ``launch`` build its uvicorn server
with both (Gradio builds the ``uvicorn.Config`` itself and has no setting for either).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections import OrderedDict
from collections.abc import Iterator
from typing import Any

log = logging.getLogger(__name__)

# A question is cut to 4,000 characters (``webui.MAX_MESSAGE_CHARS``) and a panel edit is a few
# hundred bytes: 1 MB leaves room for any real message (a 50 KB log pasted whole included).
MAX_BODY_BYTES = 1_000_000
# A config.json upload: the page reads up to 2 MB of it (``MAX_CONFIG_BYTES``), plus multipart framing.
MAX_UPLOAD_BYTES = 2_200_000
# The whole body must arrive within this (a 1 MB body on a slow 1 Mb/s link takes 8 s).
BODY_TIMEOUT_SECONDS = 20.0
# A request head (request line and headers, a few hundred bytes) must arrive within this, on a
# new connection or after the previous response on a kept-alive one.
HEAD_TIMEOUT_SECONDS = 10.0
# Connections waiting for a complete head at once; beyond this the one waiting longest is closed.
MAX_WAITING_CONNECTIONS = 64
# All connections and requests at once (uvicorn's limit_concurrency; beyond it: 503).
MAX_CONNECTIONS = 1000


def _header(scope: dict, name: bytes) -> bytes | None:
    for key, value in scope.get("headers", ()):
        if key.lower() == name:
            return value
    return None


class BodyLimit:
    """ASGI middleware: refuses a body over its limit (413) without reading it when the client
    declared its length, and stops reading at the limit when it did not (chunked); a body that
    does not arrive within ``body_timeout`` gets 408. The body is read here, bounded, and handed
    on whole: the app never waits on a slow client."""

    def __init__(self, app, max_bytes: int = MAX_BODY_BYTES, upload_max_bytes: int = MAX_UPLOAD_BYTES,
                 body_timeout: float = BODY_TIMEOUT_SECONDS):
        self.app = app
        self.max_bytes = max_bytes
        self.upload_max_bytes = upload_max_bytes
        self.body_timeout = body_timeout

    def limit_for(self, path: str) -> int:
        return self.upload_max_bytes if path.rstrip("/").endswith("/upload") else self.max_bytes

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        limit = self.limit_for(scope.get("path", ""))
        length = _header(scope, b"content-length")
        chunked = b"chunked" in (_header(scope, b"transfer-encoding") or b"").lower()
        if length is not None:
            if not length.strip().isdigit():
                return await _refuse(send, 400, "Content-Length is not a number")
            if int(length) > limit:
                return await _refuse(send, 413, f"request body over {limit:,} bytes")
        elif not chunked:
            return await self.app(scope, receive, send)  # no body (GET, the event stream)
        body, problem = await self._read(receive, limit)
        if problem is not None:
            status, message = problem
            return await _refuse(send, status, message)
        sent = False

        async def replay():
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()  # after the body: the disconnect a streaming response waits for

        return await self.app(scope, replay, send)

    async def _read(self, receive, limit: int) -> tuple[bytes, tuple[int, str] | None]:
        parts, size = [], 0
        deadline = time.monotonic() + self.body_timeout
        while True:
            left = deadline - time.monotonic()
            try:
                message = await asyncio.wait_for(receive(), timeout=max(left, 0.001))
            except TimeoutError:
                return b"", (408, f"the request body did not arrive within {self.body_timeout:g} s")
            if message["type"] == "http.disconnect":
                return b"", (400, "the client went away mid-body")
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                return b"", (413, f"request body over {limit:,} bytes")
            parts.append(chunk)
            if not message.get("more_body", False):
                return b"".join(parts), None


async def _refuse(send, status: int, message: str) -> None:
    body = json.dumps({"detail": message}).encode()
    log.info("refused a request: %s %s", status, message)
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                            (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": body})


def _protocol_class():
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    waiting: OrderedDict[Any, None] = OrderedDict()  # connections without a complete head, oldest first

    class GuardedHttpToolsProtocol(HttpToolsProtocol):
        """uvicorn's protocol with a deadline for each request head and a cap on connections
        waiting for one (the longest waiting is closed first: a slow client, not a new user)."""

        head_timeout = HEAD_TIMEOUT_SECONDS
        max_waiting = MAX_WAITING_CONNECTIONS
        _head_timer: asyncio.TimerHandle | None = None

        def connection_made(self, transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._await_head()

        def _await_head(self) -> None:
            self._stop_waiting()
            self._head_timer = self.loop.call_later(self.head_timeout, self._head_late)
            waiting[self] = None
            while len(waiting) > self.max_waiting:
                oldest, _ = waiting.popitem(last=False)
                oldest._close_slow("too many connections waiting")

        def _stop_waiting(self) -> None:
            if self._head_timer is not None:
                self._head_timer.cancel()
                self._head_timer = None
            waiting.pop(self, None)

        def _head_late(self) -> None:
            self._head_timer = None
            self._close_slow(f"no request head within {self.head_timeout:g} s")

        def _close_slow(self, why: str) -> None:
            self._stop_waiting()
            if self.transport is not None and not self.transport.is_closing():
                log.info("closed a slow connection from %s: %s", self.client, why)
                self.transport.close()

        def on_headers_complete(self) -> None:
            self._stop_waiting()
            super().on_headers_complete()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.transport.is_closing() and not self.pipeline:
                self._await_head()  # the next request on this connection gets its own deadline

        def connection_lost(self, exc) -> None:
            self._stop_waiting()
            super().connection_lost(exc)

    GuardedHttpToolsProtocol.waiting = waiting  # type: ignore[attr-defined]  # for tests
    return GuardedHttpToolsProtocol


_PROTOCOL = None


def guarded_protocol():
    """The guarded protocol class (made once: its waiting list is shared by the server's connections)."""
    global _PROTOCOL
    if _PROTOCOL is None:
        _PROTOCOL = _protocol_class()
    return _PROTOCOL


@contextlib.contextmanager
def guarded_uvicorn() -> Iterator[None]:
    """While open, the uvicorn servers built (Gradio's ``launch`` builds one) use the guarded
    protocol and the connection cap. Only the ``uvicorn.Config`` that Gradio's server module
    uses is swapped, and put back on leaving."""
    import gradio.http_server as gradio_server
    import uvicorn

    original = uvicorn.Config
    protocol = guarded_protocol()

    class GuardedConfig(original):  # type: ignore[misc,valid-type]
        def __init__(self, *args, **kwargs):
            kwargs.setdefault("http", protocol)
            kwargs.setdefault("limit_concurrency", MAX_CONNECTIONS)
            super().__init__(*args, **kwargs)

    gradio_server.uvicorn.Config = GuardedConfig  # type: ignore[misc]
    try:
        yield
    finally:
        gradio_server.uvicorn.Config = original  # type: ignore[misc]
