"""Socket Mode at our boundary: a malformed envelope is acknowledged and dropped with one line.

What it owns:
- ``envelope_problem(raw)``: why a Socket Mode message (the WebSocket frame's text) cannot be
  dispatched, and its ``envelope_id`` when it has one. slack_sdk's client parses a frame and hands
  ``payload`` to bolt as the request body unchecked; bolt's middleware then reads ``event`` as a
  dict and a message's channel, ts and text as strings, so ``"event": null`` ends in a traceback
  and a 500 that is never acknowledged (Slack sends the envelope again, up to three times). Here
  a frame is checked before it is queued, with the HTTP endpoint's rules
  (``bot.surfaces.slack_transport.check_payload_object``) for an event's payload.
- ``EnvelopeGuard``: the check on a client's ``enqueue_message``: a malformed envelope is
  acknowledged when it has an ``envelope_id`` (so Slack does not resend it), logged in one line
  (the reason and the size, never the body) and dropped.
- ``GuardedSocketModeHandler``: bolt's built-in Socket Mode handler on a guarded client; a
  request bolt still fails on (an exception out of ``dispatch``) is acknowledged with one line.

Envelope shape: https://docs.slack.dev/apis/events-api/using-socket-mode (``type``,
``envelope_id``, ``payload``, ``accepts_response_payload``, ``retry_attempt``, ``retry_reason``).
"""

from __future__ import annotations

import json
import logging
from time import time
from typing import Any

from slack_bolt.adapter.socket_mode.base_handler import BaseSocketModeHandler
from slack_bolt.adapter.socket_mode.internals import run_bolt_app, send_response
from slack_sdk.socket_mode.builtin import SocketModeClient
from slack_sdk.socket_mode.response import SocketModeResponse

from bot.surfaces.slack_transport import check_payload_object

log = logging.getLogger("shardwise.slack")

# Envelope types Slack sends: the three that carry a request, and the connection's own.
REQUEST_TYPES = ("events_api", "slash_commands", "interactive")
CONNECTION_TYPES = ("hello", "disconnect")
_COMMAND_STRINGS = ("command", "text", "response_url", "user_id", "channel_id", "team_id", "trigger_id")


def _payload_problem(kind: str, payload: Any) -> str | None:
    if not isinstance(payload, dict):
        return "payload is not an object"
    if kind == "events_api":
        return check_payload_object(payload)
    if kind == "slash_commands":
        if not isinstance(payload.get("command"), str):
            return "slash command without a command"
        wrong = [k for k in _COMMAND_STRINGS if k in payload and not isinstance(payload[k], str)]
        return f"slash command field {wrong[0]} is not a string" if wrong else None
    if not isinstance(payload.get("type"), str):  # interactive: block_actions, view_submission, ...
        return "interaction without a type"
    return None


def envelope_problem(raw: Any) -> tuple[str | None, str | None]:
    """(why ``raw`` cannot be dispatched or None, its envelope_id or None)."""
    if not isinstance(raw, str):
        return "frame is not text", None
    try:
        message = json.loads(raw)
    except ValueError:
        return "envelope is not JSON", None
    if not isinstance(message, dict):
        return "envelope is not a JSON object", None
    envelope_id = message.get("envelope_id")
    envelope_id = envelope_id if isinstance(envelope_id, str) and envelope_id else None
    kind = message.get("type")
    if kind in CONNECTION_TYPES:
        return None, envelope_id
    if kind not in REQUEST_TYPES:
        return ("unknown envelope type" if isinstance(kind, str) else "envelope without a type"), envelope_id
    if envelope_id is None:
        return "envelope without an envelope_id", None
    retry = message.get("retry_attempt")
    if retry is not None and (isinstance(retry, bool) or not isinstance(retry, int)):
        return "retry_attempt is not a number", envelope_id
    if message.get("retry_reason") is not None and not isinstance(message.get("retry_reason"), str):
        return "retry_reason is not a string", envelope_id
    return _payload_problem(kind, message.get("payload")), envelope_id


def acknowledge(client: Any, envelope_id: str) -> None:
    """Slack's acknowledgement of one envelope (no payload); a failed send is one line."""
    try:
        client.send_socket_mode_response(SocketModeResponse(envelope_id=envelope_id))
    except Exception as err:  # noqa: BLE001  (the connection may be gone; Slack then resends)
        log.warning("could not acknowledge Socket Mode envelope (%s)", type(err).__name__)


class EnvelopeGuard:
    """Mixed in before a slack_sdk Socket Mode client class: checks each frame before it is
    queued for the listeners (``envelope_problem``)."""

    def enqueue_message(self, message: str) -> None:
        problem, envelope_id = envelope_problem(message)
        if problem:
            log.warning("dropped Socket Mode envelope: %s (%d chars%s)", problem,
                        len(message) if isinstance(message, str) else 0, ", acknowledged" if envelope_id else "")
            if envelope_id:
                acknowledge(self, envelope_id)
            return
        super().enqueue_message(message)  # type: ignore[misc]


class GuardedSocketModeClient(EnvelopeGuard, SocketModeClient):
    """slack_sdk's built-in Socket Mode client with the envelope check."""


class GuardedSocketModeHandler(BaseSocketModeHandler):
    """bolt's built-in ``SocketModeHandler`` on a ``GuardedSocketModeClient`` (or ``client``, a
    test's fake); ``start()`` connects and blocks, as bolt's does."""

    def __init__(self, app, app_token: str, *, client: Any = None, **client_options: Any):
        self.app = app
        self.app_token = app_token
        self.client = client or GuardedSocketModeClient(app_token=app_token, logger=app.logger,
                                                        web_client=app.client, proxy=app.client.proxy,
                                                        **client_options)
        self.client.socket_mode_request_listeners.append(self.handle)

    def handle(self, client, req) -> None:
        start = time()
        try:
            bolt_resp = run_bolt_app(self.app, req)
        except Exception as err:  # noqa: BLE001  (one line and an ack, not a traceback and a resend)
            log.warning("dropped Socket Mode envelope: bolt failed on it (%s), acknowledged", type(err).__name__)
            acknowledge(client, req.envelope_id)
            return
        send_response(client, req, bolt_resp, start)
