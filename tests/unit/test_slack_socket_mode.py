"""Socket Mode envelopes at our boundary (issue 30: ``"event": null`` crashed inside slack_bolt).

A fake Socket Mode client (``tests.slack_mock.fake_socket_client``) runs slack_sdk's own client
logic (the message queue, the listeners, ``SocketModeRequest``) with no WebSocket: frames go in
through ``receive``, acknowledgements come out in ``sent``. The bot's Web API calls go to ``tests/slack_mock.py`` on 127.0.0.1; ``ask`` is a
fake. A malformed envelope must be acknowledged when it has an envelope_id (else Slack resends
it), logged in one line without its body, and never reach ``ask``; a good one is still answered.
"""

from __future__ import annotations

import json
import logging
import time

import pytest

from bot.surfaces.slack_app import build_slack_app
from bot.surfaces.slack_socket import GuardedSocketModeHandler, envelope_problem
from tests.slack_mock import RecordingAsk, SlackMock, fake_socket_client, mention, socket_envelope

TOKEN = "xoxb-3333-4444-sockettoken"
CHANNEL = "C0SOCKET1"


class _Lines(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record):
        self.lines.append(record.getMessage() + ("\nTraceback" if record.exc_info else ""))


@pytest.fixture
def logs():
    handler = _Lines()
    root = logging.getLogger()
    old = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    yield handler
    root.removeHandler(handler)
    root.setLevel(old)


@pytest.fixture
def socket_bot():
    with SlackMock() as slack:
        asked = RecordingAsk()
        app = build_slack_app(ask_fn=asked, token=TOKEN, api_url=slack.api_url, socket_mode=True)
        client = fake_socket_client()
        GuardedSocketModeHandler(app, "xapp-1-test", client=client)
        yield slack, client, asked


envelope = socket_envelope


def event_payload(event, event_id="EvS1") -> dict:
    return {"type": "event_callback", "team_id": "T1", "api_app_id": "A1", "event_id": event_id,
            "event_time": int(time.time()), "event": event}


def _no_channel():
    return {k: v for k, v in mention("hi", CHANNEL).items() if k != "channel"}


MALFORMED = {
    "event null": envelope(event_payload(None)),
    "event a string": envelope(event_payload("app_mention")),
    "event a list": envelope(event_payload([1, 2])),
    "mention without channel": envelope(event_payload(_no_channel())),
    "mention text a number": envelope(event_payload({**mention("x", CHANNEL), "text": 5})),
    "message ts null": envelope(event_payload({**mention("x", CHANNEL), "ts": None})),
    "payload null": envelope(None),
    "payload a list": envelope([{"type": "event_callback"}]),
    "payload a number": envelope(7),
    "slash command text a number": envelope({"command": "/shardwise", "text": 5, "response_url": "x"},
                                            kind="slash_commands"),
    "slash command without command": envelope({"text": "hi"}, kind="slash_commands"),
    "interaction without type": envelope({"actions": []}, kind="interactive"),
    "retry_attempt a string": envelope(event_payload(mention("x", CHANNEL)), retry_attempt="one"),
    "unknown envelope type": envelope({}, kind="surprise"),
    "type a number": envelope({}, kind=42),
}
NO_ENVELOPE_ID = {
    "no envelope_id": json.dumps({"type": "events_api", "payload": event_payload(mention("x", CHANNEL))}),
    "envelope_id null": envelope(event_payload(None), envelope_id=None),
    "not JSON": '{"type": "events_api", "envelope_id": ',
    "a JSON list": '[{"type": "events_api"}]',
    "a JSON string": '"events_api"',
}


@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_malformed_envelope_is_acknowledged_and_dropped_in_one_line(socket_bot, logs, name):
    slack, client, asked = socket_bot
    client.receive(MALFORMED[name])
    time.sleep(0.05)
    assert client.sent == [{"envelope_id": "env-1"}]  # acknowledged: Slack does not send it again
    dropped = [line for line in logs.lines if "dropped Socket Mode envelope" in line]
    assert len(dropped) == 1 and "acknowledged" in dropped[0]
    assert not [line for line in logs.lines if "Traceback" in line]
    assert not [line for line in logs.lines if "event_callback" in line or "/shardwise" in line]  # no body
    assert asked.calls == [] and slack.delivered() == []


@pytest.mark.parametrize("name", sorted(NO_ENVELOPE_ID))
def test_envelope_without_an_id_is_dropped_in_one_line(socket_bot, logs, name):
    slack, client, asked = socket_bot
    client.receive(NO_ENVELOPE_ID[name])
    assert client.sent == []  # nothing to acknowledge
    assert len([line for line in logs.lines if "dropped Socket Mode envelope" in line]) == 1
    assert not [line for line in logs.lines if "Traceback" in line]
    assert asked.calls == []


def test_a_good_mention_and_slash_command_are_still_answered(socket_bot, logs):
    slack, client, asked = socket_bot
    client.receive(envelope(event_payload(mention("DDP or FSDP for 7B?", CHANNEL, ts="1700000123.000100")),
                            envelope_id="env-good"))
    client.receive(envelope({"command": "/shardwise", "text": "7B 用 DDP 还是 FSDP？", "user_id": "U1",
                             "channel_id": CHANNEL, "team_id": "T1",
                             "response_url": slack.response_url("sock")}, kind="slash_commands",
                            envelope_id="env-cmd"))
    slack.wait_for("chat.postMessage", 1, timeout=10)
    slack.wait_for("response", 1, timeout=10)
    assert [m["envelope_id"] for m in client.sent] == ["env-good", "env-cmd"]
    assert sorted(asked.calls) == sorted(["DDP or FSDP for 7B?", "7B 用 DDP 还是 FSDP？"])
    assert "Use DDP" in slack.delivered()[0].params["text"]
    assert not [line for line in logs.lines if "dropped Socket Mode envelope" in line or "Traceback" in line]


def test_hello_and_disconnect_pass_the_check():
    assert envelope_problem(json.dumps({"type": "hello", "num_connections": 1})) == (None, None)
    assert envelope_problem(json.dumps({"type": "disconnect", "reason": "refresh_requested"})) == (None, None)


def test_bolt_failing_on_a_request_is_acknowledged_in_one_line(socket_bot, logs, monkeypatch):
    """A request that passes the check but still raises out of bolt's dispatch (a bolt bug, say):
    acknowledged with one line, not a traceback and a resend."""
    slack, client, asked = socket_bot
    monkeypatch.setattr("bot.surfaces.slack_socket.run_bolt_app", lambda app, req: (_ for _ in ()).throw(KeyError("x")))
    client.receive(envelope(event_payload(mention("hi", CHANNEL)), envelope_id="env-bolt"))
    assert client.sent == [{"envelope_id": "env-bolt"}]
    assert len([line for line in logs.lines if "bolt failed on it (KeyError)" in line]) == 1
    assert not [line for line in logs.lines if "Traceback" in line]


def test_the_real_client_class_carries_the_guard(logs):
    """``shardwise slack``'s handler builds slack_sdk's built-in client with the guard mixed in
    (no connection is opened here: ``connect`` is never called)."""
    from bot.surfaces.slack_socket import GuardedSocketModeClient

    app = build_slack_app(ask_fn=RecordingAsk(), token=TOKEN, api_url="http://127.0.0.1:9/api/", socket_mode=True)
    handler = GuardedSocketModeHandler(app, "xapp-1-test")
    try:
        assert isinstance(handler.client, GuardedSocketModeClient)
        assert handler.handle in handler.client.socket_mode_request_listeners
        handler.client.closed = True  # its queue worker stops: the good frame stays queued to look at
        handler.client.message_processor.shutdown()
        handler.client.enqueue_message(envelope(event_payload(None), envelope_id="env-real"))
        assert handler.client.message_queue.qsize() == 0  # dropped before the queue
        # no session to acknowledge on: one line says so, no traceback
        assert [line for line in logs.lines if "could not acknowledge" in line]
        handler.client.enqueue_message(envelope(event_payload(mention("hi", CHANNEL)), envelope_id="env-ok"))
        assert handler.client.message_queue.qsize() == 1
    finally:
        handler.client.close()
    assert not [line for line in logs.lines if "Traceback" in line]
