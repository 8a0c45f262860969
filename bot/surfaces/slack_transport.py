"""Slack plumbing below the bot's logic: what is checked before bolt sees a request, how replies
are delivered once, and the HTTP server's bounds. ``bot.surfaces.slack_app`` uses all of it.

What it owns:
- ``verify_request``/``check_payload``: the signature is computed over the raw bytes (slack_sdk's
  verifier decodes the body first and raises on non-UTF-8), then the body must be UTF-8 and have
  the shape bolt expects (a JSON object; an ``event`` that is an object; a message event with a
  channel and ts). Anything else is a 4xx with one short reason.
- ``SeenKeys``: event ids, messages and signed slash commands already answered, in a small SQLite
  file so a restart inside Slack's five-minute retry window does not answer them again.
- ``slack_retry_handlers``: slack_sdk's retry hooks for 429 (Retry-After, with a bounded default
  when it is missing or unparsable, e.g. ``nan``), 5xx (1/2/4 s) and connections that failed before
  the request was sent. A connection dropped *after* the request went out is never retried blindly:
  ``deliver`` looks for its own delivery id in the thread first; a response_url post is not retried.
- ``BoundedWSGIServer``: a threaded WSGI server with a cap on concurrent connections (503 beyond
  it) and a deadline per connection (header and body reads included), so slow clients cannot
  hold threads.

Slack's rules used here: https://docs.slack.dev/authentication/verifying-requests-from-slack
(HMAC-SHA256 of ``v0:{timestamp}:{body}``), https://docs.slack.dev/apis/web-api/rate-limits
(429 + Retry-After), https://docs.slack.dev/apis/events-api/#retries (retries within 5 minutes),
https://docs.slack.dev/messaging/message-metadata (``metadata`` on chat.postMessage, returned by
conversations.replies with ``include_all_metadata``).
"""

from __future__ import annotations

import hashlib
import hmac
import http.client
import json
import logging
import math
import secrets as secrets_module
import socket
import sqlite3
import threading
import time
from collections import OrderedDict
from pathlib import Path
from socketserver import ThreadingMixIn
from typing import Any
from urllib.error import URLError
from urllib.parse import parse_qs
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer

log = logging.getLogger("shardwise.slack")

MAX_TIMESTAMP_SKEW = 300  # Slack's own rule: refuse requests older than five minutes
SEEN_TTL = 2 * MAX_TIMESTAMP_SKEW  # Slack retries within 5 minutes; a replay after 10 is stale anyway

_sleep = time.sleep  # tests may replace it


# ---------------------------------------------------------------------------------------------
# Requests: signature over raw bytes, then the body's shape
def verify_request(body: bytes, timestamp: str | None, signature: str | None, signing_secret: str,
                   now: float | None = None) -> tuple[int, str] | None:
    """None when the request is Slack's, else (HTTP status, reason): 400 for a malformed
    timestamp, 401 for a missing, stale or wrong signature. Works on bytes: nothing is decoded."""
    if not timestamp or not signature:
        return 401, "unsigned"
    if not (timestamp.isascii() and timestamp.isdigit()) or len(timestamp) > 12:
        return 400, "malformed timestamp"
    if abs((time.time() if now is None else now) - int(timestamp)) > MAX_TIMESTAMP_SKEW:
        return 401, "stale timestamp"
    if len(signature) > 100 or not signature.isascii():
        return 401, "bad signature"
    base = b"v0:" + timestamp.encode("ascii") + b":" + body
    expected = "v0=" + hmac.new(signing_secret.encode(), base, hashlib.sha256).hexdigest()
    if not hmac.compare_digest(expected.encode(), signature.encode("ascii")):
        return 401, "bad signature"
    return None


_MESSAGE_EVENTS = ("app_mention", "message")


def check_payload(body: bytes, content_type: str) -> str | None:
    """None when bolt can read ``body``; else a short reason (the request gets a 400)."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        return "body is not UTF-8"
    if content_type.startswith("application/json"):
        try:
            payload = json.loads(text)
        except ValueError:
            return "body is not JSON"
    else:  # slash commands and interactivity: a form, maybe with a JSON `payload`
        form = parse_qs(text)
        if "payload" not in form:
            return None
        try:
            payload = json.loads(form["payload"][0])
        except ValueError:
            return "payload is not JSON"
    return check_payload_object(payload)


def check_payload_object(payload: Any) -> str | None:
    """None when bolt can dispatch ``payload`` (an HTTP body's JSON or a Socket Mode envelope's
    ``payload``); else a short reason. Bolt's middleware reads ``event`` as a dict and a message's
    channel, ts and text as strings: anything else raises inside bolt."""
    if not isinstance(payload, dict):
        return "body is not a JSON object"
    if payload.get("type") == "event_callback":
        event = payload.get("event")
        if not isinstance(event, dict):
            return "event is not an object"
        if event.get("type") in _MESSAGE_EVENTS:
            if not all(isinstance(event.get(k), str) and event.get(k) for k in ("channel", "ts")):
                return "message event without channel or ts"
            if not isinstance(event.get("text", ""), str):
                return "message text is not a string"
    return None


# ---------------------------------------------------------------------------------------------
class RecentKeys:
    """A thread-safe in-memory set of recently seen keys with a TTL and a size bound."""

    def __init__(self, ttl_seconds: float = 3600.0, max_size: int = 10_000):
        self.ttl, self.max_size = ttl_seconds, max_size
        self._seen: OrderedDict[str, float] = OrderedDict()
        self._lock = threading.Lock()

    def seen_before(self, key: str) -> bool:
        """True if ``key`` was added within the TTL; otherwise record it and return False."""
        now = time.monotonic()
        with self._lock:
            while self._seen and (len(self._seen) > self.max_size
                                  or next(iter(self._seen.values())) < now - self.ttl):
                self._seen.popitem(last=False)
            if key in self._seen:
                return True
            self._seen[key] = now
            return False


class SeenKeys:
    """``RecentKeys`` kept in SQLite at ``path`` (wall-clock times, so they survive a restart);
    rows older than ``ttl_seconds`` are pruned on every write. Keys are stored hashed. A file
    that cannot be used (damaged, read-only) is logged once and the set falls back to memory."""

    def __init__(self, path: Path | str, ttl_seconds: float = SEEN_TTL):
        self.path, self.ttl = Path(path), ttl_seconds
        self._lock = threading.Lock()
        self._memory: RecentKeys | None = None
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, timeout=5, check_same_thread=False)
            with self._db:
                self._db.execute("CREATE TABLE IF NOT EXISTS seen (key TEXT PRIMARY KEY, at REAL NOT NULL)")
                self._db.execute("CREATE INDEX IF NOT EXISTS seen_at ON seen(at)")
        except (sqlite3.DatabaseError, OSError) as err:
            self._fall_back(err)

    def _fall_back(self, err: Exception) -> None:
        log.warning("seen-event store %s unusable (%s); remembering events in memory only",
                    self.path.name, type(err).__name__)
        self._memory = RecentKeys(self.ttl)

    def seen_before(self, key: str) -> bool:
        """True if ``key`` was recorded within the TTL (by this process or an earlier one)."""
        if self._memory is not None:
            return self._memory.seen_before(key)
        digest = hashlib.sha256(key.encode()).hexdigest()
        now = time.time()
        with self._lock:
            try:
                with self._db:
                    self._db.execute("DELETE FROM seen WHERE at < ?", (now - self.ttl,))
                    cursor = self._db.execute("INSERT OR IGNORE INTO seen (key, at) VALUES (?, ?)",
                                              (digest, now))
                    return cursor.rowcount == 0
            except sqlite3.DatabaseError as err:
                self._fall_back(err)
        return self._memory.seen_before(key) if self._memory is not None else False


# ---------------------------------------------------------------------------------------------
# Delivery through slack_sdk's retry handlers
DEFAULT_RETRY_AFTER = 1.0  # Retry-After missing or unusable ("nan", "soon", negative)
MAX_RETRY_AFTER = 30.0  # never hold a worker thread longer than this per attempt
BACKOFF_SECONDS = (1.0, 2.0, 4.0)
SERVER_ERRORS = (500, 502, 503, 504)
BLOCK_ERRORS = ("invalid_blocks", "invalid_blocks_format", "invalid_attachments")
REQUEST_TIMEOUT = 15  # seconds for one Web API / response_url call
DELIVERY_EVENT = "shardwise_reply"  # metadata event_type carrying the delivery id


def retry_after_seconds(values: Any) -> float:
    """Retry-After as a bounded, finite number of seconds (``DEFAULT_RETRY_AFTER`` if unusable)."""
    value = values[0] if isinstance(values, (list, tuple)) and values else values
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        return DEFAULT_RETRY_AFTER
    if not math.isfinite(seconds) or seconds < 0:
        return DEFAULT_RETRY_AFTER
    return min(seconds, MAX_RETRY_AFTER)


def slack_retry_handlers():
    """The retry handlers every Slack client here uses (WebClient and response_url alike)."""
    from slack_sdk.http_retry import ConnectionErrorRetryHandler, RateLimitErrorRetryHandler, RetryHandler

    class BoundedRateLimitHandler(RateLimitErrorRetryHandler):
        # slack_sdk's own handler does int(Retry-After) and raises on "nan"; the reply was lost
        def prepare_for_next_attempt(self, *, state, request, response=None, error=None):
            headers = {k.lower(): v for k, v in (response.headers if response else {}).items()}
            wait = retry_after_seconds(headers.get("retry-after"))
            log.info("Slack rate limit (429); retrying in %.1f s", wait)
            state.next_attempt_requested = True
            _sleep(wait)
            state.increment_current_attempt()

    class ServerErrorBackoffHandler(RetryHandler):
        def _can_retry(self, *, state, request, response=None, error=None):
            return response is not None and response.status_code in SERVER_ERRORS

        def prepare_for_next_attempt(self, *, state, request, response=None, error=None):
            wait = BACKOFF_SECONDS[min(state.current_attempt, len(BACKOFF_SECONDS) - 1)]
            log.info("Slack answered %s; retrying in %.1f s", response.status_code if response else "?", wait)
            state.next_attempt_requested = True
            _sleep(wait)
            state.increment_current_attempt()

    class UnsentRequestRetryHandler(ConnectionErrorRetryHandler):
        # urllib wraps errors raised while connecting/sending in URLError; a reset or timeout
        # while waiting for the answer comes raw, and then Slack may have accepted the post.
        def _can_retry(self, *, state, request, response=None, error=None):
            return response is None and isinstance(error, URLError)

    return [UnsentRequestRetryHandler(max_retry_count=2), BoundedRateLimitHandler(max_retry_count=3),
            ServerErrorBackoffHandler(max_retry_count=len(BACKOFF_SECONDS))]


def _ambiguous(err: BaseException) -> bool:
    # sent, but no answer came back (reset, timeout, truncated reply): Slack may have posted it
    return not isinstance(err, URLError) and isinstance(err, (OSError, http.client.HTTPException))


def _posted(client, channel: str, thread_ts: str | None, delivery_id: str) -> bool | None:
    """Whether the thread holds our message with ``delivery_id``; None when it cannot be read."""
    if not thread_ts:
        return None
    try:
        response = client.conversations_replies(channel=channel, ts=thread_ts, include_all_metadata=True,
                                                limit=200)
    except Exception as err:  # noqa: BLE001  (a missing history scope, the network again)
        log.warning("could not check whether the reply was posted (%s)", type(err).__name__)
        return None
    for message in response.get("messages", []):
        payload = (message.get("metadata") or {}).get("event_payload") or {}
        if payload.get("delivery_id") == delivery_id:
            return True
    return False


def deliver(client, **kwargs) -> bool | None:
    """``chat.postMessage`` once: True when Slack accepted it, False when it refused or the
    request never went out, None when the connection dropped after sending and the thread could
    not tell (then nothing more is posted, so the reply cannot appear twice)."""
    from slack_sdk.errors import SlackApiError

    delivery_id = secrets_module.token_hex(8)
    kwargs.setdefault("metadata", {"event_type": DELIVERY_EVENT, "event_payload": {"delivery_id": delivery_id}})
    for _ in range(3):  # the message, then plain text or one retry after a confirmed loss
        try:
            client.chat_postMessage(**kwargs)
            return True
        except SlackApiError as err:
            error = err.response.get("error")
            if error in BLOCK_ERRORS and kwargs.get("blocks"):
                log.warning("Slack refused the blocks (%s); sending plain text", error)
                kwargs.pop("blocks")
                continue
            log.warning("chat.postMessage failed (%s %s)", err.response.status_code, error)
            return False
        except Exception as err:  # noqa: BLE001
            if not _ambiguous(err):
                log.warning("chat.postMessage failed (%s)", type(err).__name__)
                return False
            posted = _posted(client, kwargs.get("channel", ""), kwargs.get("thread_ts"), delivery_id)
            log.warning("chat.postMessage lost its answer (%s); in the thread: %s", type(err).__name__,
                        {True: "yes", False: "no", None: "unknown"}[posted])
            if posted is not False:
                return None if posted is None else True
    return False


def respond_once(response_url: str, message: dict) -> bool | None:
    """A response_url post with the same retry handlers: True, False (refused or never sent), or
    None when the connection dropped after sending (not retried: Slack may have posted it)."""
    from slack_sdk.webhook import WebhookClient

    client = WebhookClient(url=response_url, timeout=REQUEST_TIMEOUT, retry_handlers=slack_retry_handlers(),
                           logger=logging.getLogger("shardwise.slack.webhook"))
    message = dict(message)
    for _ in range(2):
        try:
            response = client.send_dict(message)
        except Exception as err:  # noqa: BLE001
            if _ambiguous(err):
                log.warning("response_url lost its answer (%s); not posting again", type(err).__name__)
                return None
            log.warning("response_url failed (%s)", type(err).__name__)
            return False
        if 200 <= response.status_code < 300:
            return True
        if message.get("blocks") and any(e in (response.body or "") for e in BLOCK_ERRORS):
            log.warning("Slack refused the blocks; sending plain text")
            message.pop("blocks")
            continue
        log.warning("response_url failed (%s)", response.status_code)
        return False
    return False


# ---------------------------------------------------------------------------------------------
# The HTTP server: bounded connections, bounded time per connection
MAX_CLIENTS = 64
CONNECTION_SECONDS = 10.0  # headers + body + the ack (bolt acks within Slack's 3 s)
RECV_SECONDS = 5.0  # one read from the socket


class _QuietHandler(WSGIRequestHandler):
    timeout = RECV_SECONDS  # StreamRequestHandler applies it to the socket

    def log_message(self, format, *args):  # noqa: A002  (stdlib signature)
        log.debug("%s %s", self.address_string(), format % args)


class BoundedWSGIServer(ThreadingMixIn, WSGIServer):
    """One thread per connection, at most ``max_clients`` at once (others get 503 at once), each
    closed after ``connection_seconds`` whatever it is doing (a client sending its headers one
    byte at a time included)."""

    daemon_threads = True
    request_queue_size = 128  # a burst is accepted (and refused with 503 past the cap), not left in SYN retries
    max_clients = MAX_CLIENTS
    connection_seconds = CONNECTION_SECONDS

    def server_activate(self) -> None:
        super().server_activate()
        self._slots = threading.BoundedSemaphore(self.max_clients)
        self._open: dict[socket.socket, float] = {}
        self._open_lock = threading.Lock()
        self._refused = 0

    def process_request(self, request, client_address):
        if not self._slots.acquire(blocking=False):
            self._refused += 1
            if self._refused in (1, 10, 100) or self._refused % 1000 == 0:  # a flood logs a few lines
                log.warning("Slack endpoint busy: %d connections open; refused %d so far",
                            self.max_clients, self._refused)
            try:
                request.sendall(b"HTTP/1.0 503 Service Unavailable\r\nContent-Length: 0\r\n"
                                b"Retry-After: 1\r\nConnection: close\r\n\r\n")
            except OSError:
                pass
            self.shutdown_request(request)
            return
        with self._open_lock:
            self._open[request] = time.monotonic() + self.connection_seconds
        try:
            super().process_request(request, client_address)
        except Exception:
            self._forget(request)
            raise

    def process_request_thread(self, request, client_address):
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._forget(request)

    def _forget(self, request) -> None:
        with self._open_lock:
            if self._open.pop(request, None) is not None:
                self._slots.release()

    def service_actions(self) -> None:
        # serve_forever calls this every poll interval: close connections past their deadline
        now = time.monotonic()
        with self._open_lock:
            expired = [s for s, deadline in self._open.items() if deadline < now]
        for sock in expired:
            log.warning("closed a Slack connection still open after %.0f s", self.connection_seconds)
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def handle_error(self, request, client_address):
        # socketserver prints a traceback; a reset or timed-out client is one line
        import sys

        err = sys.exc_info()[1]
        log.info("Slack connection from %s ended: %s", client_address[0], type(err).__name__)


def make_bounded_server(host: str, port: int, application, *, max_clients: int = MAX_CLIENTS,
                        connection_seconds: float = CONNECTION_SECONDS) -> BoundedWSGIServer:
    """``BoundedWSGIServer`` serving ``application``; ``port=0`` picks a free one."""
    server_class = type("SlackWSGIServer", (BoundedWSGIServer,),
                        {"max_clients": max_clients, "connection_seconds": connection_seconds})
    server = server_class((host, port), _QuietHandler)
    server.set_app(application)
    return server
