"""Issue 30's Slack defects on loopback: malformed bodies, unusable Retry-After, duplicate posts
after a dropped connection or a restart, and slow clients holding the HTTP endpoint.

The bot runs in this process against ``tests/slack_mock.py`` (a local stand-in for Slack's Web
API); ``ask`` is a fake, so these stay fast.
"""

from __future__ import annotations

import hashlib
import hmac
import http.client
import json
import logging
import socket
import threading
import time
import urllib.parse
from contextlib import ExitStack

import pytest

from bot.surfaces import slack_app
from tests.slack_mock import DROP, TEAM_ID, RecordingAsk, SlackMock, event_body, mention, running_bot, sign
from tests.slack_mock import post as slack_post

TOKEN = "xoxb-1111-2222-hardeningtoken"
SECRET = "0c5e9b8d2f1a4e7b9c3d5f7a1b3c5d7e"
CHANNEL = "C0000042"


class _Lines(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record):
        self.lines.append(self.format(record) + ("\nTraceback" if record.exc_info else ""))


@pytest.fixture
def logs():
    handler = _Lines()
    root = logging.getLogger()
    old = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    yield handler.lines
    root.removeHandler(handler)
    root.setLevel(old)


@pytest.fixture
def slack():
    with SlackMock() as mock:
        yield mock


@pytest.fixture
def bot(slack):
    """``bot(dedupe=None, **server_options)`` -> (events URL, ask) of a bot on the mock API."""
    with ExitStack() as stack:
        def start(dedupe=None, ask=None):
            ask = ask or RecordingAsk()
            app = slack_app.build_slack_app(ask_fn=ask, token=TOKEN, signing_secret=SECRET,
                                            api_url=slack.api_url, dedupe=dedupe)
            return stack.enter_context(running_bot(app)), ask

        yield start


def raw_post(url: str, body: bytes, headers: dict[str, str]) -> int:
    parts = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
    try:
        conn.request("POST", parts.path, body=body, headers=headers)
        return conn.getresponse().status
    finally:
        conn.close()


def signed_headers(body: bytes, content_type: str = "application/json") -> dict[str, str]:
    now = str(int(time.time()))
    digest = hmac.new(SECRET.encode(), b"v0:" + now.encode() + b":" + body, hashlib.sha256).hexdigest()
    return {"Content-Type": content_type, "X-Slack-Request-Timestamp": now, "X-Slack-Signature": "v0=" + digest}


def command_body(slack, text: str = "DDP or FSDP for 7B?", name: str = "cmd1") -> str:
    return urllib.parse.urlencode({"command": "/shardwise", "text": text, "user_id": "U1", "channel_id": CHANNEL,
                                   "team_id": TEAM_ID, "response_url": slack.response_url(name)})


def settle():
    time.sleep(0.6)


# ---------------------------------------------------------------------------------------------
# 1. malformed bodies: a 4xx and one short log line, never a traceback
NOT_UTF8 = b"\xff\xfe\xfa{\"type\": \"event_callback\"}\x80"
_no_channel = {k: v for k, v in mention("hi", CHANNEL).items() if k != "channel"}
MALFORMED = {
    "unsigned non-UTF-8 JSON": (NOT_UTF8, {"Content-Type": "application/json",
                                           "X-Slack-Request-Timestamp": str(int(time.time()))}),
    "unsigned non-UTF-8 form": (NOT_UTF8, {"Content-Type": "application/x-www-form-urlencoded"}),
    "signed non-UTF-8 JSON": (NOT_UTF8, "json"),
    "signed non-UTF-8 form": (b"command=%2Fshardwise&text=\xff\xfe", "form"),
    "signed event null": (json.dumps({"type": "event_callback", "event_id": "EvNull", "event": None}).encode(), "json"),
    "signed event a list": (json.dumps({"type": "event_callback", "event_id": "EvList", "event": [1]}).encode(), "json"),
    "signed mention without channel": (event_body(_no_channel, "EvNoChannel").encode(), "json"),
    "signed mention with numeric text": (event_body({**mention("x", CHANNEL), "text": 7}, "EvNum").encode(), "json"),
    "signed form with a broken payload": (b"payload=%7Bnot+json", "form"),
}


@pytest.mark.parametrize("case", list(MALFORMED))
def test_malformed_bodies_get_a_4xx_and_one_line(slack, bot, logs, case):
    url, ask = bot()
    body, headers = MALFORMED[case]
    if headers == "json":
        headers = signed_headers(body)
    elif headers == "form":
        headers = signed_headers(body, "application/x-www-form-urlencoded")
    status = raw_post(url, body, headers)
    assert 400 <= status < 500, status
    settle()
    assert ask.calls == [] and slack.calls_to("chat.postMessage") == []
    text = "\n".join(logs)
    assert "Traceback" not in text
    rejected = [line for line in logs if "rejected Slack request" in line]
    assert len(rejected) == 1 and len(rejected[0]) < 200


def test_signature_is_checked_on_bytes_before_decoding():
    body = NOT_UTF8
    headers = signed_headers(body)
    ts, sig = headers["X-Slack-Request-Timestamp"], headers["X-Slack-Signature"]
    assert slack_app.verify_request(body, ts, sig, SECRET) is None  # valid signature, undecodable body
    assert slack_app.verify_request(body + b"x", ts, sig, SECRET) == (401, "bad signature")
    assert slack_app.verify_request(body, ts, "v0=\u00e9" * 3, SECRET) == (401, "bad signature")


# ---------------------------------------------------------------------------------------------
# 2. a 429 whose Retry-After cannot be read is still retried, after a bounded default wait
@pytest.mark.parametrize("retry_after", ["nan", "soon", "-5", "inf", "", "1e999"])
def test_unusable_retry_after_still_retries_chat_post(slack, bot, monkeypatch, retry_after):
    from bot.surfaces import slack_transport

    waits: list[float] = []
    monkeypatch.setattr(slack_transport, "_sleep", waits.append)
    slack.faults["chat.postMessage"] = [(429, {"ok": False, "error": "ratelimited"}, {"Retry-After": retry_after})]
    url, _ = bot()
    assert slack_post(url, event_body(mention("DDP or FSDP?", CHANNEL), "Ev429" + retry_after), secret=SECRET)[0] == 200
    slack.wait_for("chat.postMessage", 2, timeout=10)
    settle()
    assert len(slack.delivered()) == 1
    assert waits == [slack_transport.DEFAULT_RETRY_AFTER]


@pytest.mark.parametrize("retry_after", ["nan", "later", "99999"])
def test_unusable_retry_after_still_retries_response_url(slack, bot, monkeypatch, retry_after):
    from bot.surfaces import slack_transport

    waits: list[float] = []
    monkeypatch.setattr(slack_transport, "_sleep", waits.append)
    slack.faults["response"] = [(429, {"ok": False, "error": "ratelimited"}, {"Retry-After": retry_after})]
    url, _ = bot()
    assert slack_post(url, command_body(slack), secret=SECRET, content_type="application/x-www-form-urlencoded")[0] == 200
    slack.wait_for("response", 2, timeout=10)
    settle()
    assert [c.faulted for c in slack.calls_to("response")] == [True, False]
    assert len(waits) == 1 and 0 < waits[0] <= slack_transport.MAX_RETRY_AFTER


# ---------------------------------------------------------------------------------------------
# 3. duplicates: a post Slack accepted whose answer was lost, and a replay after a restart
@pytest.mark.parametrize("where", ["mention", "thread follow-up", "direct message"])
def test_post_accepted_then_connection_dropped_is_not_posted_twice(slack, bot, where):
    slack.faults["chat.postMessage"] = [(DROP, {}, {})]
    url, ask = bot()
    event = {"mention": mention("7B on 8 GPUs?", CHANNEL, ts="1700000100.000100"),
             "thread follow-up": mention("and 16?", CHANNEL, ts="1700000101.000100", thread_ts="1700000100.000100"),
             "direct message": {"type": "message", "channel_type": "im", "user": "UHUMAN01", "text": "DDP?",
                                "ts": "1700000102.000100", "channel": "D0000001"}}[where]
    assert slack_post(url, event_body(event, "EvDrop" + where[:3]), secret=SECRET)[0] == 200
    slack.wait_for("chat.postMessage", 1, timeout=10)
    time.sleep(1.5)
    posts = slack.calls_to("chat.postMessage")
    assert len(posts) == 1, [p.params.get("text") for p in posts]
    assert "could not deliver" not in posts[0].params["text"]
    assert len(ask.calls) == 1


def test_post_lost_before_slack_accepted_it_is_sent_again(slack, bot, monkeypatch):
    # the same dropped connection, but the thread shows the message is not there: one more try
    original = slack._record

    def record_but_forget(method, params, authorization, faulted=False):
        body = original(method, params, authorization, faulted)
        if method == "chat.postMessage" and len(slack.calls_to(method)) == 1:
            with slack._cond:  # as if Slack had never stored it
                for messages in slack.threads.values():
                    messages[:] = [m for m in messages if "metadata" not in m]
        return body

    monkeypatch.setattr(slack, "_record", record_but_forget)
    slack.faults["chat.postMessage"] = [(DROP, {}, {})]
    url, _ = bot()
    assert slack_post(url, event_body(mention("DDP?", CHANNEL, ts="1700000200.000100"), "EvLost"),
                      secret=SECRET)[0] == 200
    slack.wait_for("chat.postMessage", 2, timeout=10)
    settle()
    assert len(slack.calls_to("chat.postMessage")) == 2
    assert len(slack.calls_to("conversations.replies")) == 1


def test_response_url_accepted_then_dropped_is_not_posted_twice(slack, bot):
    slack.faults["response"] = [(DROP, {}, {})]
    url, ask = bot()
    assert slack_post(url, command_body(slack), secret=SECRET, content_type="application/x-www-form-urlencoded")[0] == 200
    slack.wait_for("response", 1, timeout=10)
    time.sleep(1.5)
    assert len(slack.calls_to("response")) == 1 and len(ask.calls) == 1


def test_event_and_slash_command_replayed_after_a_restart_are_answered_once(slack, bot, tmp_path):
    path = tmp_path / "slack_seen.sqlite"
    event = event_body(mention("DDP or FSDP for 13B?", CHANNEL, ts="1700000300.000100"), "EvRestart")
    command = command_body(slack, "FSDP for 70B?", "restart")
    now = int(time.time())
    signed_event = sign(event, now, SECRET)
    signed_command = sign(command, now, SECRET)
    answered = []
    for _ in range(3):  # three bot processes in a row, each with a fresh store object on one file
        url, ask = bot(dedupe=slack_app.SeenKeys(path))
        assert slack_post(url, event, secret=SECRET, timestamp=now, signature=signed_event)[0] == 200
        assert slack_post(url, command, secret=SECRET, timestamp=now, signature=signed_command,
                          content_type="application/x-www-form-urlencoded")[0] == 200
        settle()
        answered.append(len(ask.calls))
    assert answered == [2, 0, 0]
    assert len(slack.calls_to("chat.postMessage")) == 1 and len(slack.calls_to("response")) == 1


def test_seen_keys_are_pruned_past_the_window_and_a_damaged_file_falls_back(tmp_path, logs):
    import sqlite3

    path = tmp_path / "seen.sqlite"
    seen = slack_app.SeenKeys(path, ttl_seconds=0.3)
    assert [seen.seen_before(k) for k in ("a", "b", "a")] == [False, False, True]
    time.sleep(0.4)
    assert seen.seen_before("c") is False  # writing prunes a and b
    assert sqlite3.connect(path).execute("SELECT COUNT(*) FROM seen").fetchone()[0] == 1
    assert seen.seen_before("a") is False  # outside the window: a new event
    broken = tmp_path / "broken.sqlite"
    broken.write_bytes(b"this is not a database" * 100)
    fallback = slack_app.SeenKeys(broken)
    assert [fallback.seen_before(k) for k in ("x", "x")] == [False, True]
    assert any("unusable" in line for line in logs) and not any("Traceback" in line for line in logs)


# ---------------------------------------------------------------------------------------------
# 4. slow clients: each connection has a deadline, and there is a cap on how many are open

def _closed_within(sock: socket.socket, seconds: float) -> bool:
    sock.settimeout(seconds)
    try:
        while sock.recv(1024):
            pass
        return True
    except (ConnectionResetError, BrokenPipeError):
        return True
    except TimeoutError:
        return False


@pytest.mark.parametrize("stall", ["headers", "body", "silent"])
def test_slow_clients_are_cut_off_and_capped(slack, stall):
    ask = RecordingAsk()
    app = slack_app.build_slack_app(ask_fn=ask, token=TOKEN, signing_secret=SECRET, api_url=slack.api_url)
    server = slack_app.make_http_server(app, "127.0.0.1", 0, max_clients=3, connection_seconds=1.0)
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    port = server.server_port
    threads_before = threading.active_count()
    body = event_body(mention("DDP?", CHANNEL, ts="1700000400.000100"), "EvSlow").encode()
    try:
        slow = []
        for _ in range(3):
            sock = socket.create_connection(("127.0.0.1", port), timeout=10)
            if stall == "headers":
                sock.sendall(b"POST /slack/events HTTP/1.1\r\nHost: x\r\n")
            elif stall == "body":
                headers = signed_headers(body)
                head = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
                sock.sendall(f"POST /slack/events HTTP/1.1\r\nHost: x\r\nContent-Length: {len(body)}\r\n{head}\r\n"
                             .encode() + body[:10])
            slow.append(sock)
        time.sleep(0.3)
        assert threading.active_count() - threads_before <= 3
        extra = socket.create_connection(("127.0.0.1", port), timeout=5)  # over the cap: refused at once
        extra.sendall(b"GET / HTTP/1.0\r\n\r\n")
        assert extra.recv(100).startswith(b"HTTP/1.0 503")
        extra.close()
        started = time.monotonic()
        assert all(_closed_within(s, 5.0) for s in slow)
        assert time.monotonic() - started < 4.0
        for s in slow:
            s.close()
        time.sleep(0.2)
        status = raw_post(f"http://127.0.0.1:{port}/slack/events", body, signed_headers(body))
        assert status == 200  # the slots came back
    finally:
        server.shutdown()
        server.server_close()
