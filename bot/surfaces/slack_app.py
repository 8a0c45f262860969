"""The Slack bot: ``bot.ask`` where teams talk. No logic of its own beyond Slack plumbing.

What it owns:
- ``build_slack_app``: a slack_bolt ``App`` answering ``app_mention`` events, direct messages and
  the ``/shardwise <question>`` slash command. Replies go in a thread; a follow-up inside a
  thread sends the thread's earlier messages (``conversations.replies``) to ``ask`` as history.
- ``answer_message`` / ``full_answer_message`` (``bot.surfaces.slack_blocks``, re-exported): an ``Answer``
  as Block Kit from its structured ``sections``, the short form as the reply and the folded
  sections as the next reply in the thread (the older text-based layout when an answer has none),
  each with a plain-text fallback.
- Slack's delivery rules: acknowledge within 3 s and answer on a worker thread (bolt's
  ``process_before_response=False``); a retried or duplicated event is answered once (its
  ``event_id`` and the message's channel+ts in ``SeenKeys``: SQLite under the data dir for
  ``shardwise slack``, so a restart inside Slack's retry window does not answer again).
- Hostile requests: ``wsgi_app`` verifies the signature over the raw bytes before anything parses
  the body (401 for unsigned, forged or stale requests, 400 for a malformed timestamp or a body
  bolt cannot read, 413 over 1 MiB), logs one line per rejection (never the body), and drops a
  replayed signed slash command. The server caps concurrent connections and the time each may
  take (``bot.surfaces.slack_transport``).
- Delivery (``bot.surfaces.slack_transport``): slack_sdk's retry handlers (429 with a bounded Retry-After,
  5xx backoff); a post whose connection dropped after sending is never re-sent blindly, so a
  reply cannot appear twice; a plain-text resend on invalid_blocks; the user is told when Slack
  refused the answer.
- Secrets: ``bot.env``'s one ``SecretRedactor`` strips tokens and keys from every log line and
  from outgoing text. Mentions and messages from bots are ignored (no bot-to-bot loops).
- ``shardwise slack``: Socket Mode when ``SLACK_APP_TOKEN`` is set (``bot.surfaces.slack_socket``: each
  envelope is checked before bolt sees it; a malformed one is acknowledged, logged in one line
  and dropped), else HTTP on ``--host/--port``
  through a small bounded WSGI server (bolt's own dev server would bind every interface).

Slack's block and text limits are applied in ``bot.surfaces.slack_blocks``.
"""

from __future__ import annotations

import hashlib
import html
import io
import json
import logging
import os
import re
import secrets as secrets_module
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import click

from bot.answer import Answer
from bot.answer.catalog import wording
from bot.env import REDACTED, SecretRedactor, configure_runtime, install_redaction, redact  # noqa: F401
from bot.surfaces.slack_blocks import (  # noqa: F401  (re-exported: tests import them from here)
    _LABELS,
    SECTION_LIMIT,
    TEXT_LIMIT,
    answer_blocks,
    answer_message,
    full_answer_message,
    has_full_answer,
    md_to_mrkdwn,
    memory_table,
    sections_blocks,
    sections_table,
    text_section,
)
from bot.surfaces.slack_transport import (  # noqa: F401  (re-exported: tests and evals import them from here)
    CONNECTION_SECONDS,
    MAX_CLIENTS,
    REQUEST_TIMEOUT,
    SEEN_TTL,
    BoundedWSGIServer,
    RecentKeys,
    SeenKeys,
    check_payload,
    deliver,
    make_bounded_server,
    respond_once,
    slack_retry_handlers,
    verify_request,
)
from bot.understand.text import looks_chinese

log = logging.getLogger("shardwise.slack")

AskFn = Callable[..., Answer]  # ask(question, history=None) -> Answer

EVENTS_PATH = "/slack/events"
MAX_BODY_BYTES = 1 << 20  # Slack payloads are a few KB; refuse anything huge before reading it
MAX_QUESTION_CHARS = 8000

# ---------------------------------------------------------------------------------------------
# Secrets never leave the process: bot.env's one redactor (log records and outgoing text).
def install_log_redaction(secrets: Iterable[str] = ()) -> SecretRedactor:
    """The process's ``SecretRedactor`` on every logger and handler (see ``bot.env``)."""
    return install_redaction(secrets)


# ---------------------------------------------------------------------------------------------
# Slack text -> question, thread -> history
_MENTION = re.compile(r"<@[A-Z0-9]+(?:\|[^>]*)?>")
_SLACK_LINK = re.compile(r"<((?:https?|mailto):[^>|]+)(?:\|([^>]*))?>")


def clean_text(text: str) -> str:
    """A Slack message as plain text: mentions removed, links unwrapped, entities decoded."""
    text = _MENTION.sub("", text or "")
    text = _SLACK_LINK.sub(lambda m: m.group(2) or m.group(1), text)
    return html.unescape(text).strip()


def thread_history(client, channel: str, thread_ts: str, before_ts: str, bot_user_id: str | None,
                   limit: int = 50) -> list[dict[str, str]]:
    """The thread's messages before ``before_ts`` as ``[{"role", "content"}]`` (oldest first)."""
    response = client.conversations_replies(channel=channel, ts=thread_ts, limit=limit)
    turns: list[dict[str, str]] = []
    for message in response.get("messages", []):
        if float(message.get("ts", 0)) >= float(before_ts) or message.get("subtype") not in (None, "bot_message"):
            continue
        from_bot = bool(message.get("bot_id")) or (bot_user_id and message.get("user") == bot_user_id)
        content = clean_text(message.get("text", ""))
        if content:
            turns.append({"role": "assistant" if from_bot else "user", "content": content})
    return turns


def _language(question: str) -> str:
    return "zh" if looks_chinese(question) else "en"


# The bot's own lines are the catalogs' slack.* (error, usage, undelivered, working), in the
# question's language.
def _error_text(question: str) -> str:
    return wording(_language(question), "slack.error")


def _usage_text(language: str = "en") -> str:
    return wording(language, "slack.usage")


# ---------------------------------------------------------------------------------------------
# Delivery: bot.surfaces.slack_transport (slack_sdk's retry handlers, once-only posts).


def _undelivered_text(question: str) -> str:
    return wording(_language(question), "slack.undelivered")


# ---------------------------------------------------------------------------------------------
def default_ask(question: str, history=None) -> Answer:
    """The same answer as ``shardwise ask`` (``bot.surfaces.llm.answer``: the LLM when configured)."""
    from bot.surfaces.llm import answer

    return answer(question, history)


def build_slack_app(*, ask_fn: AskFn | None = None, token: str | None = None,
                    signing_secret: str | None = None, api_url: str | None = None,
                    slash_command: str = "/shardwise", dedupe: RecentKeys | SeenKeys | None = None,
                    socket_mode: bool = False):
    """The bolt App. ``ask_fn`` defaults to ``default_ask`` (imported on first question).

    ``token``/``signing_secret``/``api_url`` default to ``SLACK_BOT_TOKEN``,
    ``SLACK_SIGNING_SECRET`` and ``SLACK_API_URL``. No network call happens here: the bot's own
    user id comes from ``auth.test`` on the first request (bolt caches it).
    """
    from slack_bolt import App, BoltResponse
    from slack_sdk import WebClient

    token = token or os.environ.get("SLACK_BOT_TOKEN")
    signing_secret = signing_secret or os.environ.get("SLACK_SIGNING_SECRET")
    api_url = api_url or os.environ.get("SLACK_API_URL")
    if not token:
        raise click.UsageError("SLACK_BOT_TOKEN is not set (the bot token, xoxb-...)")
    if not signing_secret:
        if not socket_mode:  # bolt would verify against an empty key, which anyone can forge
            raise click.UsageError("SLACK_SIGNING_SECRET is not set (needed to verify Slack's requests)")
        signing_secret = secrets_module.token_hex(32)  # Socket Mode skips signatures; HTTP stays shut
    secrets = [token, signing_secret, os.environ.get("SLACK_APP_TOKEN", "")]
    dedupe = dedupe or RecentKeys(ttl_seconds=SEEN_TTL)
    if api_url and not api_url.endswith("/"):
        api_url += "/"

    # slack_sdk's retry handlers (bot.surfaces.slack_transport): 429 with a bounded Retry-After, 5xx backoff,
    # and connection errors only when the request never went out (no duplicate posts)
    client_options: dict[str, Any] = {"token": token, "timeout": REQUEST_TIMEOUT,
                                      "retry_handlers": slack_retry_handlers()}
    client = WebClient(base_url=api_url, **client_options) if api_url else WebClient(**client_options)
    # bolt logs a rejected request's whole body at INFO; our WSGI layer rejects before bolt runs,
    # and bolt's own logger stays at WARNING so nothing it logs can carry a request body.
    bolt_log = logging.getLogger("shardwise.slack.bolt")
    bolt_log.setLevel(logging.WARNING)
    app = App(signing_secret=signing_secret, client=client, token_verification_enabled=False,
              process_before_response=False, name="shardwise", logger=bolt_log)
    if not socket_mode:
        setattr(app, "shardwise_signing_secret", signing_secret)  # noqa: B010  (wsgi_app verifies before bolt parses)
    setattr(app, "shardwise_seen", dedupe)  # noqa: B010  (wsgi_app drops replayed slash commands with it)

    def answer(question: str, history: list[dict[str, str]] | None) -> Answer:
        return (ask_fn or default_ask)(question[:MAX_QUESTION_CHARS], history=history or None)

    @app.middleware
    def drop_duplicates(body, payload, next):
        # Slack redelivers an event when it saw no 200 within 3 s (X-Slack-Retry-Num), and one
        # message can reach us under two event ids (two subscriptions matching it). Answer it once.
        if body.get("type") == "event_callback":
            if payload.get("bot_id") or payload.get("subtype") == "bot_message":
                return BoltResponse(status=200, body="")  # another bot (or us): two bots could loop
            keys = [f"event:{body.get('event_id')}"] if body.get("event_id") else []
            if payload.get("ts") and payload.get("channel"):
                keys.append(f"msg:{payload['channel']}:{payload['ts']}")
            seen = [dedupe.seen_before(k) for k in keys]  # record every key, even after a hit
            if any(seen):
                log.info("duplicate event %s ignored", body.get("event_id"))
                return BoltResponse(status=200, body="")
        return next()

    def reply_in_thread(event: dict, client, context) -> None:
        channel, ts = event.get("channel"), event.get("ts")
        if not (isinstance(channel, str) and isinstance(ts, str)):  # Socket Mode skips wsgi_app's check
            log.warning("ignored a message event without channel or ts")
            return
        thread_ts = event.get("thread_ts") or ts
        question = clean_text(event.get("text", ""))
        if not question:
            deliver(client, channel=channel, thread_ts=thread_ts, text=_usage_text())
            return
        history = None
        if event.get("thread_ts") and event["thread_ts"] != ts:  # a follow-up inside a thread
            try:
                history = thread_history(client, channel, thread_ts, ts, context.bot_user_id)
            except Exception:  # e.g. a missing *:history scope: answer the message on its own
                log.warning("could not read thread %s in %s; answering without it", thread_ts, channel,
                            exc_info=True)
        full: dict[str, Any] | None = None
        try:
            answered = answer(question, history)
            message = answer_message(answered, secrets=secrets)
            full = full_answer_message(answered, secrets=secrets)
        except Exception:
            log.exception("answering a message failed")
            message = {"text": _error_text(question)}
        posted = deliver(client, channel=channel, thread_ts=thread_ts, unfurl_links=False,
                         unfurl_media=False, **message)
        if posted is False:
            # Refused after the retries: one short plain line, so the user is not left waiting.
            # (None: the post may have gone through; a second message could be a duplicate.)
            deliver(client, channel=channel, thread_ts=thread_ts, text=_undelivered_text(question))
        elif posted and full is not None:  # the short form is the reply; the rest follows it in the thread
            deliver(client, channel=channel, thread_ts=thread_ts, unfurl_links=False, unfurl_media=False, **full)

    @app.event("app_mention")
    def on_mention(event, client, context):
        if event.get("bot_id") or event.get("subtype") == "bot_message":
            return  # mentioned by another bot: answering could start a loop
        reply_in_thread(event, client, context)

    @app.event("message")
    def on_message(event, client, context):
        # Only direct messages from people: channel messages reach us as app_mention; edits,
        # joins and bot posts carry a subtype or bot_id.
        if event.get("channel_type") != "im" or event.get("subtype") or event.get("bot_id"):
            return
        reply_in_thread(event, client, context)

    @app.command(slash_command)
    def on_command(ack, command):
        question = clean_text(command.get("text", "") if isinstance(command.get("text"), str) else "")
        language = _language(question)
        response_url = command.get("response_url")
        if not question or not isinstance(response_url, str):
            ack(text=_usage_text(language))
            return
        ack(text=wording(language, "slack.working"))
        # The answer goes back through response_url (valid 30 min, works in channels the bot has
        # not joined), posted in_channel so the team sees it.
        try:
            answered = answer(question, None)
            message = answer_message(answered, asked_by=command.get("user_id"), question=question,
                                     secrets=secrets, hint="full_hint_ephemeral")
            full = full_answer_message(answered, secrets=secrets)
        except Exception:
            log.exception("answering a slash command failed")
            respond_once(response_url, {"response_type": "ephemeral", "text": _error_text(question)})
            return
        posted = respond_once(response_url, {"response_type": "in_channel", "replace_original": False, **message})
        if posted is False:
            respond_once(response_url, {"response_type": "ephemeral", "text": _undelivered_text(question)})
        elif posted and full is not None:
            # the channel sees the short form; the asker gets the rest, shown to them only
            respond_once(response_url, {"response_type": "ephemeral", "replace_original": False, **full})

    return app


# ---------------------------------------------------------------------------------------------
REPLAY_TTL = SEEN_TTL  # signed slash commands and events are remembered this long


def _reject(start_response, status: str, reason: str, environ: dict, length: int):
    # One line per rejected request, never the body (bolt logs the whole body at INFO).
    log.warning("rejected Slack request: %s (%d bytes from %s)", reason, max(length, 0),
                environ.get("REMOTE_ADDR", "?"))
    body = json.dumps({"error": reason}).encode()
    start_response(status, [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
    return [body]


def wsgi_app(app, signing_secret: str | None = None, replays: RecentKeys | SeenKeys | None = None):
    """bolt's WSGI adapter on ``/slack/events`` behind a body-size limit, a signature check over
    the raw bytes, a check of the body's shape (``check_payload``), and a replay filter for slash
    commands (Slack signs a command once; the same signed request arriving again is an attacker
    or a proxy replaying it). Every refusal is a 4xx and one log line."""
    from slack_bolt.adapter.wsgi import SlackRequestHandler

    handler = SlackRequestHandler(app, path=EVENTS_PATH)
    signing_secret = signing_secret or getattr(app, "shardwise_signing_secret", None)
    replays = replays or getattr(app, "shardwise_seen", None) or RecentKeys(ttl_seconds=REPLAY_TTL)

    def application(environ, start_response):
        try:
            length = int(environ.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = -1
        if length < 0 or length > MAX_BODY_BYTES:
            return _reject(start_response, "413 Payload Too Large", "payload too large", environ, length)
        if environ.get("REQUEST_METHOD") != "POST" or not signing_secret:
            return handler(environ, start_response)
        timestamp = environ.get("HTTP_X_SLACK_REQUEST_TIMESTAMP")
        signature = environ.get("HTTP_X_SLACK_SIGNATURE")
        if not timestamp or not signature:  # cheapest rejection: the body is never read
            return _reject(start_response, "401 Unauthorized", "unsigned", environ, length)
        try:
            body = environ["wsgi.input"].read(length) if length else b""
        except OSError as err:  # the client stalled past the read timeout or went away
            return _reject(start_response, "408 Request Timeout", f"body not received ({type(err).__name__})",
                           environ, length)
        problem = verify_request(body, timestamp, signature, signing_secret)
        if problem:
            status = "400 Bad Request" if problem[0] == 400 else "401 Unauthorized"
            return _reject(start_response, status, problem[1], environ, length)
        content_type = environ.get("CONTENT_TYPE", "")
        malformed = check_payload(body, content_type)
        if malformed:
            return _reject(start_response, "400 Bad Request", malformed, environ, length)
        if not content_type.startswith("application/json"):
            key = "signed:" + hashlib.sha256(f"{signature}:{timestamp}:".encode() + body).hexdigest()
            if replays.seen_before(key):
                log.warning("replayed signed request ignored (%d bytes)", length)
                start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", "0")])
                return [b""]
        environ["wsgi.input"] = io.BytesIO(body)
        try:
            return handler(environ, start_response)
        except Exception as err:  # noqa: BLE001  (a signed but malformed body: one line, no traceback)
            return _reject(start_response, "400 Bad Request", f"unreadable body ({type(err).__name__})",
                           environ, length)

    return application


def make_http_server(app, host: str = "127.0.0.1", port: int = 3000, *, max_clients: int = MAX_CLIENTS,
                     connection_seconds: float = CONNECTION_SECONDS) -> BoundedWSGIServer:
    """A threaded WSGI server for the app (``port=0`` picks a free one); call ``serve_forever``.
    At most ``max_clients`` connections at once, each closed after ``connection_seconds``."""
    return make_bounded_server(host, port, wsgi_app(app), max_clients=max_clients,
                               connection_seconds=connection_seconds)


def seen_store_path() -> Path:
    """Where ``shardwise slack`` remembers the events it answered (survives a restart)."""
    from bot.env import data_dir

    return data_dir() / "slack_seen.sqlite"



@click.command(name="slack")
@click.option("--host", default="127.0.0.1", show_default=True, help="HTTP mode: interface to bind.")
@click.option("--port", default=3000, show_default=True, type=int, help="HTTP mode: port.")
@click.option("--debug", is_flag=True, help="Verbose logs (secrets are still redacted).")
def slack_command(host: str, port: int, debug: bool) -> None:
    """Run the Slack bot: Socket Mode if SLACK_APP_TOKEN is set, else HTTP on --host/--port.

    Needs SLACK_BOT_TOKEN, plus SLACK_SIGNING_SECRET in HTTP mode. SLACK_API_URL overrides the
    Web API base URL (proxies, tests).
    """
    app_token = os.environ.get("SLACK_APP_TOKEN")
    # threads, logging, offline switches and the secret redactor, as every entry point does
    configure_runtime(threads=1, level=logging.DEBUG if debug else logging.INFO)
    if app_token:
        from bot.surfaces.slack_socket import (
            GuardedSocketModeHandler,  # a malformed envelope: acked, one line
        )

        app = build_slack_app(socket_mode=True, dedupe=SeenKeys(seen_store_path()))
        log.info("shardwise Slack bot: Socket Mode")
        GuardedSocketModeHandler(app, app_token).start()
        return
    server = make_http_server(build_slack_app(dedupe=SeenKeys(seen_store_path())), host, port)
    log.info("shardwise Slack bot: HTTP on http://%s:%d%s", host, server.server_port, EVENTS_PATH)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
