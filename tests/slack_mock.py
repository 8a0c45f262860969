"""A local stand-in for Slack's Web API on 127.0.0.1, for tests (Slack itself is out of reach).

It answers the few methods the bot calls (``auth.test``, ``chat.postMessage``,
``conversations.replies``) plus ``POST /response/<id>`` for slash-command ``response_url``s, and
records every call so a test can assert what the bot sent. ``post`` sends what Slack would send
to the bot (signed requests) and ``running_bot`` serves a bot app on a free local port. Threads are stored per
``(channel, thread_ts)``: a test seeds earlier turns with ``add_thread_message`` and the bot's own
``chat.postMessage`` replies are appended, as Slack would. ``FakeSocketClient`` is what Socket
Mode would deliver: slack_sdk's client logic with no WebSocket (``bot.surfaces.slack_socket``'s guard mixed in).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import socket
import threading
import time
import urllib.error
import urllib.request
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs

DROP = -1  # a fault status: Slack accepts the call, then the connection drops before the answer
BOT_USER_ID = "UBOT0001"
BOT_ID = "BBOT0001"
TEAM_ID = "T0000001"


@dataclass
class Call:
    method: str  # "auth.test", "chat.postMessage", "response" (a response_url post), ...
    params: dict
    authorization: str | None = None
    faulted: bool = False  # answered with a queued fault (see SlackMock.faults)
    at: float = 0.0  # time.monotonic() when it arrived


@dataclass
class SlackMock:
    """Start with ``with SlackMock() as slack:``; point the bot at ``slack.api_url``."""

    calls: list[Call] = field(default_factory=list)
    threads: dict[tuple[str, str], list[dict]] = field(default_factory=dict)
    failing: dict[str, str] = field(default_factory=dict)  # method -> Slack error code to answer with
    # method -> queued one-shot faults: (HTTP status, body, headers), consumed one per call; e.g.
    # (429, {"ok": False, "error": "ratelimited"}, {"Retry-After": "1"}) or (503, "<html>...", {});
    # (DROP, {}, {}) performs the call (the message is posted) and closes the connection unanswered
    faults: dict[str, list[tuple[int, dict | str, dict]]] = field(default_factory=dict)
    _cond: threading.Condition = field(default_factory=threading.Condition)
    _ts: int = 0

    def __enter__(self) -> SlackMock:
        mock = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep test output quiet
                pass

            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length).decode()
                if self.headers.get_content_type() == "application/json":
                    params = json.loads(raw or "{}")
                else:
                    params = {k: v[0] for k, v in parse_qs(raw).items()}
                if self.path.startswith("/api/"):
                    method = self.path[len("/api/"):].split("?")[0]
                elif self.path.startswith("/response/"):
                    method = "response"
                else:
                    self.send_error(404)
                    return
                fault = mock._next_fault(method)
                if fault is not None and fault[0] == DROP:
                    mock._record(method, params, self.headers.get("Authorization"))
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                if fault is not None:
                    mock._record(method, params, self.headers.get("Authorization"), faulted=True)
                    status, payload, headers = fault
                    data = (payload if isinstance(payload, str) else json.dumps(payload)).encode()
                    self.send_response(status)
                    for key, value in headers.items():
                        self.send_header(key, value)
                    self.send_header("Content-Type", "text/html" if isinstance(payload, str)
                                     else "application/json; charset=utf-8")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return
                body = mock._record(method, params, self.headers.get("Authorization"))
                data = json.dumps(body).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json; charset=utf-8")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    @property
    def api_url(self) -> str:
        """What ``SLACK_API_URL`` / ``WebClient(base_url=...)`` takes (trailing slash required)."""
        return self.base_url + "/api/"

    def response_url(self, name: str = "cmd1") -> str:
        return f"{self.base_url}/response/{name}"

    def next_ts(self) -> str:
        with self._cond:
            self._ts += 1
            return f"{int(time.time())}.{self._ts:06d}"

    def add_thread_message(self, channel: str, thread_ts: str, text: str, user: str = "UHUMAN01",
                           ts: str | None = None, bot: bool = False) -> dict:
        message = {"type": "message", "text": text, "ts": ts or self.next_ts(), "thread_ts": thread_ts}
        if bot:
            message.update(user=BOT_USER_ID, bot_id=BOT_ID)
        else:
            message["user"] = user
        with self._cond:
            self.threads.setdefault((channel, thread_ts), []).append(message)
        return message

    def _next_fault(self, method: str):
        with self._cond:
            queue = self.faults.get(method)
            return queue.pop(0) if queue else None

    def _record(self, method: str, params: dict, authorization: str | None, faulted: bool = False) -> dict:
        with self._cond:
            self.calls.append(Call(method, params, authorization, faulted, time.monotonic()))
            self._cond.notify_all()
        if faulted:
            return {}
        if method in self.failing:
            return {"ok": False, "error": self.failing[method]}
        if method == "auth.test":
            return {"ok": True, "url": "https://example.slack.com/", "team": "Test", "user": "shardwise",
                    "team_id": TEAM_ID, "user_id": BOT_USER_ID, "bot_id": BOT_ID}
        if method == "chat.postMessage":
            ts = self.next_ts()
            thread_ts = params.get("thread_ts")
            if thread_ts:
                message = self.add_thread_message(params["channel"], thread_ts, params.get("text", ""), ts=ts,
                                                  bot=True)
                if params.get("metadata"):  # Slack returns it with include_all_metadata
                    message["metadata"] = params["metadata"]
            return {"ok": True, "channel": params.get("channel"), "ts": ts,
                    "message": {"text": params.get("text"), "ts": ts}}
        if method == "conversations.replies":
            with self._cond:
                messages = list(self.threads.get((params.get("channel"), params.get("ts")), []))
            if not params.get("include_all_metadata"):
                messages = [{k: v for k, v in m.items() if k != "metadata"} for m in messages]
            return {"ok": True, "messages": messages, "has_more": False}
        if method == "response":
            return {"ok": True}
        return {"ok": False, "error": "unknown_method"}

    def calls_to(self, method: str) -> list[Call]:
        with self._cond:
            return [c for c in self.calls if c.method == method]

    def delivered(self, method: str = "chat.postMessage") -> list[Call]:
        """Calls of ``method`` that Slack accepted (not answered with a queued fault)."""
        return [c for c in self.calls_to(method) if not c.faulted]

    def wait_for(self, method: str, count: int = 1, timeout: float = 20.0) -> list[Call]:
        """Block until ``count`` calls of ``method`` arrived (or time out); return them."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                found = [c for c in self.calls if c.method == method]
                left = deadline - time.monotonic()
                if len(found) >= count or left <= 0:
                    return found
                self._cond.wait(left)


# ---------------------------------------------------------------------------------------------
# What Slack sends: signed requests to the bot's HTTP endpoint.
class RecordingAsk:
    """A fake ``ask`` for the bot's tests: records each question (thread-safe) and answers DDP."""

    def __init__(self):
        self.calls: list[str] = []
        self.lock = threading.Lock()

    def __call__(self, question, history=None):
        from bot.answer import Answer, Recommendation

        with self.lock:
            self.calls.append(question)
        return Answer(language="en", setup={}, recommendation=Recommendation(strategy="ddp", why=["fits [1]"]),
                      text=f"**Use DDP** for: {question}")


def sign(body: str, timestamp: int, secret: str) -> str:
    """Slack's request signature (https://docs.slack.dev/authentication/verifying-requests-from-slack)."""
    base = f"v0:{timestamp}:{body}".encode()
    return "v0=" + hmac.new(secret.encode(), base, hashlib.sha256).hexdigest()


def post(url: str, body: str, *, secret: str, content_type: str = "application/json",
         timestamp: int | None = None, signature: str | None = "auto",
         headers: dict | None = None) -> tuple[int, str]:
    """POST ``body`` like Slack does (signed with ``secret`` unless ``signature`` says otherwise);
    returns (status, response body)."""
    timestamp = int(time.time()) if timestamp is None else timestamp
    request = urllib.request.Request(url, data=body.encode(), method="POST")
    request.add_header("Content-Type", content_type)
    request.add_header("X-Slack-Request-Timestamp", str(timestamp))
    if signature == "auto":
        signature = sign(body, timestamp, secret)
    if signature is not None:
        request.add_header("X-Slack-Signature", signature)
    for key, value in (headers or {}).items():
        request.add_header(key, value)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()


def event_body(event: dict, event_id: str = "Ev0001") -> str:
    return json.dumps({"token": "legacy", "team_id": TEAM_ID, "api_app_id": "A1", "type": "event_callback",
                       "event_id": event_id, "event_time": int(time.time()), "event": event})


def mention(text: str, channel: str, ts: str = "1700000000.000100", thread_ts: str | None = None) -> dict:
    event = {"type": "app_mention", "user": "UHUMAN01", "text": f"<@{BOT_USER_ID}> {text}", "ts": ts,
             "channel": channel, "event_ts": ts}
    if thread_ts:
        event["thread_ts"] = thread_ts
    return event


@contextmanager
def running_bot(app):
    """Serve a bolt app from ``bot.surfaces.slack_app`` on 127.0.0.1 (free port); yields its events URL."""
    from bot.surfaces.slack_app import EVENTS_PATH, make_http_server

    server = make_http_server(app, "127.0.0.1", 0)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}{EVENTS_PATH}"
    finally:
        server.shutdown()
        server.server_close()


# ---------------------------------------------------------------------------------------------
# What Socket Mode delivers: envelopes through slack_sdk's own client logic, no connection.
class _Inline:
    """A client's worker pool run inline: every effect of a frame is done when ``receive`` returns."""

    def submit(self, fn, *args, **kwargs):
        fn(*args, **kwargs)


def fake_socket_client():
    """A Socket Mode client running slack_sdk's ``BaseSocketModeClient`` code (the message queue,
    the listeners, ``SocketModeRequest``) behind ``bot.surfaces.slack_socket.EnvelopeGuard``, with no
    WebSocket: frames go in with ``receive(frame)``, what it sends back lands in ``sent``."""
    import logging
    from queue import Queue

    from slack_sdk.socket_mode.client import BaseSocketModeClient

    from bot.surfaces.slack_socket import EnvelopeGuard

    class FakeSocketClient(EnvelopeGuard, BaseSocketModeClient):
        def __init__(self):
            self.logger = logging.getLogger("tests.fake_socket_client")
            self.message_queue = Queue()
            self.message_listeners = []
            self.socket_mode_request_listeners = []
            self.message_workers = _Inline()
            self.closed = False
            self.sent: list[dict] = []

        def is_connected(self) -> bool:
            return True

        def send_message(self, message: str) -> None:
            self.sent.append(json.loads(message))

        def receive(self, frame: str) -> None:
            self.enqueue_message(frame)
            while not self.message_queue.empty():
                self.process_message()

    return FakeSocketClient()


def socket_envelope(payload, kind: str = "events_api", envelope_id: str | None = "env-1", **extra) -> str:
    """A Socket Mode envelope as Slack frames it (https://docs.slack.dev/apis/events-api/using-socket-mode)."""
    return json.dumps({"type": kind, "envelope_id": envelope_id, "payload": payload,
                       "accepts_response_payload": False, **extra})
