"""The Slack bot: ``bot.ask`` where teams talk. No logic of its own beyond Slack plumbing.

What it owns:
- ``build_slack_app``: a slack_bolt ``App`` answering ``app_mention`` events, direct messages and
  the ``/shardwise <question>`` slash command. Replies go in a thread; a follow-up inside a
  thread sends the thread's earlier messages (``conversations.replies``) to ``ask`` as history.
- ``answer_message``: an ``Answer`` rendered as Block Kit from its structured ``sections``
  (headline, setup as read, table, reasons, forum verdicts, what-ifs, how-to, questions; the older
  text-based layout when an answer has none) with a plain-text fallback.
- Slack's delivery rules: acknowledge within 3 s and answer on a worker thread (bolt's
  ``process_before_response=False``); a retried or duplicated event is answered once (its
  ``event_id`` and the message's channel+ts in ``SeenKeys``: SQLite under the data dir for
  ``shardwise slack``, so a restart inside Slack's retry window does not answer again).
- Hostile requests: ``wsgi_app`` verifies the signature over the raw bytes before anything parses
  the body (401 for unsigned, forged or stale requests, 400 for a malformed timestamp or a body
  bolt cannot read, 413 over 1 MiB), logs one line per rejection (never the body), and drops a
  replayed signed slash command. The server caps concurrent connections and the time each may
  take (``bot.slack_transport``).
- Delivery (``bot.slack_transport``): slack_sdk's retry handlers (429 with a bounded Retry-After,
  5xx backoff); a post whose connection dropped after sending is never re-sent blindly, so a
  reply cannot appear twice; a plain-text resend on invalid_blocks; the user is told when Slack
  refused the answer.
- Secrets: ``bot.env``'s one ``SecretRedactor`` strips tokens and keys from every log line and
  from outgoing text. Mentions and messages from bots are ignored (no bot-to-bot loops).
- ``shardwise slack``: Socket Mode when ``SLACK_APP_TOKEN`` is set (``bot.slack_socket``: each
  envelope is checked before bolt sees it; a malformed one is acknowledged, logged in one line
  and dropped), else HTTP on ``--host/--port``
  through a small bounded WSGI server (bolt's own dev server would bind every interface).

Slack's limits used below: https://docs.slack.dev/reference/block-kit/blocks (3000 chars per
section text, 10 context elements, 50 blocks) and https://docs.slack.dev/reference/methods/chat.postMessage
(text is truncated past 40,000 chars; 4,000 recommended).
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
import unicodedata
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import click

from bot.answer import Answer
from bot.env import REDACTED, SecretRedactor, configure_runtime, install_redaction, redact  # noqa: F401
from bot.render import question_text
from bot.slack_transport import (  # noqa: F401  (re-exported: tests and evals import them from here)
    CONNECTION_SECONDS,
    MAX_CLIENTS,
    MAX_TIMESTAMP_SKEW,
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
from bot.strategies import TRAINING_STRATEGIES, label
from bot.understand.text import looks_chinese

log = logging.getLogger("shardwise.slack")

AskFn = Callable[..., Answer]  # ask(question, history=None) -> Answer

EVENTS_PATH = "/slack/events"
MAX_BODY_BYTES = 1 << 20  # Slack payloads are a few KB; refuse anything huge before reading it
MAX_QUESTION_CHARS = 8000
SECTION_LIMIT = 3000
TEXT_LIMIT = 4000

# ---------------------------------------------------------------------------------------------
# Secrets never leave the process: bot.env's one redactor (log records and outgoing text).
def install_log_redaction(secrets: Iterable[str] = ()) -> SecretRedactor:
    """The process's ``SecretRedactor`` on every logger and handler (see ``bot.env``)."""
    return install_redaction(secrets)


# ---------------------------------------------------------------------------------------------
# Rendering: Answer -> Block Kit. Numbers come only from answer.numbers, as everywhere else.
# language -> label key -> text ("conf_values": confidence -> text)
_LABELS: dict[str, dict[str, Any]] = {
    "en": {"rec": "Recommendation", "conf": "confidence", "alt": "Alternatives",
           "mem": "Per-GPU memory (GiB)", "strategy": "strategy", "total": "GiB/GPU", "fits": "fits",
           "batch": "max mb", "step": "step s", "yes": "yes", "no": "no",
           "forum": "What the forum said", "change": "What would change it", "sources": "Sources", "questions": "To be more precise, tell me",
           "asked": "asked", "conf_values": {"high": "high", "medium": "medium", "low": "low"}},
    "zh": {"rec": "建议", "conf": "置信度", "alt": "备选",
           "mem": "每卡显存 (GiB)", "strategy": "策略", "total": "GiB/卡", "fits": "放得下",
           "batch": "最大mb", "step": "步时 s", "yes": "是", "no": "否",
           "forum": "论坛里怎么说", "change": "什么会改变结论", "sources": "来源", "questions": "补充这些信息可以更准确",
           "asked": "提问", "conf_values": {"high": "高", "medium": "中", "low": "低"}},
}


def _escape(text: str) -> str:
    # Slack mrkdwn control characters: https://docs.slack.dev/messaging/formatting-message-text
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


_MD_LINK = re.compile(r"\[([^\]]+)\]\((https?://[^)\s]+)\)")
_MD_BOLD = re.compile(r"\*\*(.+?)\*\*")
_MD_HEADING = re.compile(r"^#{1,6}\s+(.+)$", re.MULTILINE)
_MD_BULLET = re.compile(r"^[-*] ", re.MULTILINE)


def md_to_mrkdwn(markdown: str) -> str:
    """Answer.text (CommonMark) as Slack mrkdwn: escape, then bullets, links, bold and headings."""
    text = _MD_BULLET.sub("• ", _escape(markdown))
    text = _MD_LINK.sub(lambda m: f"<{m.group(2)}|{m.group(1)}>", text)
    text = _MD_BOLD.sub(r"*\1*", text)
    return _MD_HEADING.sub(r"*\1*", text)


def _section(text: str) -> dict:
    return {"type": "section", "text": {"type": "mrkdwn", "text": _clip(text, SECTION_LIMIT)}}


def _width(text: str) -> int:
    # CJK characters take two columns in a monospace font; ljust/rjust count them as one.
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def _ljust(text: str, width: int) -> str:
    return text + " " * max(0, width - _width(text))


def _rjust(text: str, width: int) -> str:
    return " " * max(0, width - _width(text)) + text


# Headings and the setup line written by bot/render.py (render_markdown), in both languages.
_FORUM_HEADINGS = ("What the forum said", "论坛里怎么说")
_CHANGE_HEADINGS = ("What would change it", "什么会改变结论")
_HEADING_LINE = re.compile(r"^\*\*(.+?)\*\*\s*$", re.MULTILINE)
_SETUP_LINE = re.compile(r"^(?:Setup: |配置：).+$", re.MULTILINE)


def text_section(markdown: str, headings: tuple[str, ...]) -> str | None:
    """The body under a ``**Heading**`` line of the answer text, up to the next heading."""
    found = [m for m in _HEADING_LINE.finditer(markdown)]
    for i, match in enumerate(found):
        if match.group(1).strip() in headings:
            end = found[i + 1].start() if i + 1 < len(found) else len(markdown)
            return markdown[match.end():end].strip() or None
    return None


def memory_table(answer: Answer) -> str | None:
    """A fixed-width per-GPU memory table from ``memory.<strategy>.*`` numbers, or None."""
    words = _LABELS[answer.language]
    nums = answer.numbers
    rows = [s for s in TRAINING_STRATEGIES if f"memory.{s}.total_gib" in nums]
    if not rows:
        return None
    has_batch = any(f"memory.{s}.max_micro_batch" in nums for s in rows)
    has_step = any(f"time.{s}.step_seconds" in nums for s in rows)
    names = {s: label(s, answer.language) for s in rows}
    width = max(_width(words["strategy"]), *(_width(n) for n in names.values()))
    columns = [(words["total"], 8), (words["fits"], 6)]
    if has_batch:
        columns.append((words["batch"], 7))
    if has_step:
        columns.append((words["step"], 7))
    lines = ["  ".join([_ljust(words["strategy"], width)] + [_rjust(name, w) for name, w in columns])]
    for s in rows:
        fits = nums.get(f"memory.{s}.fits")
        cells = [f"{float(nums[f'memory.{s}.total_gib']):.1f}",
                 words["yes"] if fits else words["no"] if fits is not None else "?"]
        if has_batch:
            mb = nums.get(f"memory.{s}.max_micro_batch")
            cells.append(str(int(mb)) if mb is not None else "-")
        if has_step:
            step = nums.get(f"time.{s}.step_seconds")
            cells.append(f"{float(step):.2f}" if step is not None else "-")
        lines.append("  ".join([_ljust(names[s], width)] + [_rjust(c, w) for c, (_, w) in zip(cells, columns, strict=True)]))
    return "\n".join(lines)


def _citation_link(citation) -> str:
    title = _escape(_clip(citation.title, 80))
    if citation.url and re.match(r"https?://", citation.url):
        return f"[{citation.n}] <{citation.url}|{title}>"
    # forum answers live in the seed thread (a "seed:" address, not a web page): name them
    return f"[{citation.n}] {title}" + (f" ({_escape(citation.id)})" if citation.kind == "bench" else "")


_SOURCE_WORDS = {"stated": ("stated", "已说明"), "config": ("from config", "来自配置"), "log": ("from log", "来自日志"),
                 "history": ("earlier", "前文"), "assumed": ("assumed", "默认假设")}
_VERDICT_WORDS = {"supported": ("holds", "成立"), "holds_only_when": ("holds only when", "仅在条件下成立"),
                  "misleading": ("misleading", "有误导"), "contradicted": ("contradicted", "不成立"),
                  "unverifiable": ("unverifiable", "无法验证")}


def _cell(value, digits: int = 1) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return f"{float(value):.{digits}f}" if isinstance(value, float) else str(value)


def sections_table(answer: Answer) -> str | None:
    """A fixed-width table from ``answer.sections.table`` (the rows the decision weighed)."""
    rows = answer.sections.table
    if not rows:
        return None
    words = _LABELS[answer.language]
    names = [r.label + (" ←" if r.chosen else "") for r in rows]
    width = max(_width(words["strategy"]), *(_width(n) for n in names))
    columns = [(words["total"], 8), (words["fits"], 6)]
    has_batch = any(r.max_micro_batch is not None for r in rows)
    has_step = any(r.step_seconds is not None for r in rows)
    if has_batch:
        columns.append((words["batch"], 7))
    if has_step:
        columns.append((words["step"], 7))
    lines = ["  ".join([_ljust(words["strategy"], width)] + [_rjust(name, w) for name, w in columns])]
    for name, r in zip(names, rows, strict=True):
        fits = "?" if r.fits is None else (words["yes"] if r.fits else words["no"])
        cells = [_cell(r.total_gib), fits]
        if has_batch:
            cells.append(_cell(r.max_micro_batch))
        if has_step:
            cells.append(_cell(r.step_seconds, 2))
        lines.append("  ".join([_ljust(name, width)] + [_rjust(c, w) for c, (_, w) in zip(cells, columns, strict=True)]))
    return "\n".join(lines)


def sections_blocks(answer: Answer) -> list[dict]:
    """Blocks from the answer's structured ``sections`` (bot/answer.py): nothing is scraped from
    the markdown and nothing recomputed; every string is the answer's own, in its language."""
    sec = answer.sections
    words = _LABELS[answer.language]
    zh = answer.language == "zh"
    blocks: list[dict] = []
    head = f"*{md_to_mrkdwn(sec.headline)}*"
    if sec.direct_answer:
        head += "\n" + md_to_mrkdwn(sec.direct_answer)
    blocks.append(_section(head))
    if sec.setup_read:
        items = [f"{_escape(i.field)}={_escape(str(i.value))}"
                 + (f" ({_SOURCE_WORDS[i.source][1 if zh else 0]})" if i.source == "assumed" else "")
                 for i in sec.setup_read]
        blocks.append({"type": "context", "elements": [
            {"type": "mrkdwn", "text": _clip(("配置：" if zh else "Setup: ") + ", ".join(items), 2000)}]})
    table = sections_table(answer)
    if table:
        blocks.append(_section(f"*{words['mem']}*\n```{table}```"))
    if sec.reasons:
        blocks.append(_section("\n".join(f"• {md_to_mrkdwn(r)}" for r in sec.reasons)))
    if sec.passages:
        blocks.append(_section("\n".join(f"> {md_to_mrkdwn(p)}" for p in sec.passages[:4])))
    if sec.forum:
        lines = []
        for item in sec.forum[:6]:
            verdict = _VERDICT_WORDS.get(item.verdict, (item.verdict, item.verdict))[1 if zh else 0]
            marker = f"[{item.citation}] " if item.citation else ""
            quote = _escape(_clip(" ".join(item.quote.split()), 200))
            lines.append(f"• {marker}> {quote}\n   _{verdict}_" + (f": {md_to_mrkdwn(item.text)}" if item.text else ""))
        blocks.append(_section(f"*{words['forum']}*\n" + "\n".join(lines)))
    if sec.what_ifs:
        blocks.append(_section(f"*{words['change']}*\n" + "\n".join(f"• {md_to_mrkdwn(w)}" for w in sec.what_ifs)))
    if sec.howto:
        howto = sec.howto[0]
        blocks.append(_section(f"*{_escape(howto.title)}*\n```{_clip(howto.code, SECTION_LIMIT - 200)}```"))
    if sec.questions:
        blocks.append(_section(f"*{words['questions']}*\n" + "\n".join(f"• {_escape(q)}" for q in sec.questions)))
    if sec.notices:
        blocks.append({"type": "context", "elements": [
            {"type": "mrkdwn", "text": _clip(md_to_mrkdwn(n), 2000)} for n in sec.notices[:10]]})
    return blocks


def answer_blocks(answer: Answer, *, asked_by: str | None = None, question: str | None = None) -> list[dict]:
    """Block Kit blocks for an Answer (see module docstring for the layout)."""
    if answer.sections.headline:  # the structured answer: render its parts, scrape nothing
        blocks: list[dict[str, Any]] = []
        if asked_by and question:
            blocks.append({"type": "context", "elements": [{"type": "mrkdwn", "text": _clip(
                f"<@{asked_by}> {_LABELS[answer.language]['asked']}: {_escape(question)}", 2000)}]})
        blocks += sections_blocks(answer)
        blocks += _source_blocks(answer)
        return blocks[:50]
    words = _LABELS[answer.language]
    rec = answer.recommendation
    blocks = []
    if asked_by and question:  # slash commands: others in the channel did not see the question
        blocks.append({"type": "context", "elements": [
            {"type": "mrkdwn", "text": _clip(f"<@{asked_by}> {words['asked']}: {_escape(question)}", 2000)}]})

    headline = rec.strategy in TRAINING_STRATEGIES or (rec.strategy == "none" and bool(rec.why))
    if headline:
        head = f"*{words['rec']}: {_escape(label(rec.strategy, answer.language))}*"
        if rec.strategy != "none":
            head += f"  ({words['conf']}: {words['conf_values'].get(rec.confidence, rec.confidence)})"
        lines = [head]
        if rec.alternatives:
            alts = ", ".join(label(a, answer.language) for a in rec.alternatives)
            lines.append(f"{words['alt']}: {_escape(alts)}")
        lines += [f"• {md_to_mrkdwn(why)}" for why in rec.why]
        blocks.append(_section("\n".join(lines)))
    else:  # out_of_scope / still asking / refused input: the answer's own text says what to do
        blocks.append(_section(md_to_mrkdwn(answer.text) or label(rec.strategy, answer.language)))

    setup_line = _SETUP_LINE.search(answer.text) if headline else None
    if setup_line:  # which setup (and which assumed defaults) the numbers are for
        blocks.append({"type": "context", "elements": [
            {"type": "mrkdwn", "text": _clip(md_to_mrkdwn(setup_line.group(0)), 2000)}]})

    table = memory_table(answer)
    if table:
        blocks.append(_section(f"*{words['mem']}*\n```{table}```"))

    forum_text = text_section(answer.text, _FORUM_HEADINGS) if headline else None
    if forum_text:  # with the verdict on each claim, as the answer text has it
        blocks.append(_section(f"*{words['forum']}*\n{md_to_mrkdwn(forum_text)}"))
    else:
        forum = [c for c in answer.citations if c.kind == "forum" and c.quote]
        if forum:
            quotes = [f"[{c.n}] > {_escape(_clip(' '.join((c.quote or '').split()), 280))}" for c in forum[:3]]
            blocks.append(_section(f"*{words['forum']}*\n" + "\n".join(quotes)))

    change_text = text_section(answer.text, _CHANGE_HEADINGS) if headline else None
    if change_text:
        blocks.append(_section(f"*{words['change']}*\n{md_to_mrkdwn(change_text)}"))

    if answer.questions and headline:  # otherwise the answer's text, shown above, asks them
        asks = "\n".join(f"• {_escape(question_text(q, answer.language))}" for q in answer.questions)
        blocks.append(_section(f"*{words['questions']}*\n{asks}"))

    blocks += _source_blocks(answer)
    return blocks[:50]


def _source_blocks(answer: Answer) -> list[dict]:
    words = _LABELS[answer.language]
    links = [_citation_link(c) for c in answer.citations]
    blocks = []
    for start in range(0, min(len(links), 40), 10):  # 10 elements per context block
        chunk = links[start:start + 10]
        if start == 0:
            chunk[0] = f"*{words['sources']}:* {chunk[0]}"
        blocks.append({"type": "context", "elements": [{"type": "mrkdwn", "text": _clip(t, 2000)}
                                                       for t in chunk]})
    return blocks


def answer_message(answer: Answer, *, asked_by: str | None = None, question: str | None = None,
                   secrets: Iterable[str] = ()) -> dict[str, Any]:
    """``{"text": fallback, "blocks": [...]}`` for chat.postMessage / response_url, secrets removed."""
    fallback = _clip(md_to_mrkdwn(answer.text) if answer.text else label(answer.recommendation.strategy,
                                                                         answer.language), TEXT_LIMIT)
    blocks = answer_blocks(answer, asked_by=asked_by, question=question)
    secrets = list(secrets)
    return {"text": redact(fallback, secrets), "blocks": _redact_blocks(blocks, secrets)}


def _redact_blocks(value: Any, secrets: list[str]) -> Any:
    if isinstance(value, str):
        return redact(value, secrets)
    if isinstance(value, list):
        return [_redact_blocks(v, secrets) for v in value]
    if isinstance(value, dict):
        return {k: _redact_blocks(v, secrets) for k, v in value.items()}
    return value


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


def _error_text(question: str) -> str:
    if looks_chinese(question):
        return "抱歉，回答这个问题时出错了。请换个说法再试一次。"
    return "Sorry, something went wrong while answering. Please try again or rephrase the question."


def _usage_text(language: str = "en") -> str:
    if language == "zh":
        return "问我一个分布式训练的问题，例如：`7B 模型，8 张 A100 40GB，用 DDP 还是 FSDP？`"
    return "Ask me a distributed-training question, e.g. `DDP or FSDP for a 7B model on 8x A100 40GB?`"


# ---------------------------------------------------------------------------------------------
# Delivery: bot.slack_transport (slack_sdk's retry handlers, once-only posts).


def _undelivered_text(question: str) -> str:
    if looks_chinese(question):
        return "抱歉，答案没能发送出来（Slack 暂时拒绝了消息）。请稍后再问一次。"
    return "Sorry, I could not deliver the answer (Slack refused the message). Please ask again in a minute."


# ---------------------------------------------------------------------------------------------
def default_ask(question: str, history=None) -> Answer:
    """The same answer as ``shardwise ask`` (``bot.llm.answer``: the LLM when configured)."""
    from bot.llm import answer

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

    # slack_sdk's retry handlers (bot.slack_transport): 429 with a bounded Retry-After, 5xx backoff,
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
        try:
            message = answer_message(answer(question, history), secrets=secrets)
        except Exception:
            log.exception("answering a message failed")
            message = {"text": _error_text(question)}
        if deliver(client, channel=channel, thread_ts=thread_ts, unfurl_links=False,
                   unfurl_media=False, **message) is False:
            # Refused after the retries: one short plain line, so the user is not left waiting.
            # (None: the post may have gone through; a second message could be a duplicate.)
            deliver(client, channel=channel, thread_ts=thread_ts, text=_undelivered_text(question))

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
        language = "zh" if looks_chinese(question) else "en"
        response_url = command.get("response_url")
        if not question or not isinstance(response_url, str):
            ack(text=_usage_text(language))
            return
        ack(text="正在计算…" if language == "zh" else "Working on it…")
        # The answer goes back through response_url (valid 30 min, works in channels the bot has
        # not joined), posted in_channel so the team sees it.
        try:
            message = answer_message(answer(question, None), asked_by=command.get("user_id"),
                                     question=question, secrets=secrets)
        except Exception:
            log.exception("answering a slash command failed")
            respond_once(response_url, {"response_type": "ephemeral", "text": _error_text(question)})
            return
        posted = respond_once(response_url, {"response_type": "in_channel", "replace_original": False, **message})
        if posted is False:
            respond_once(response_url, {"response_type": "ephemeral", "text": _undelivered_text(question)})

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
        from bot.slack_socket import GuardedSocketModeHandler  # a malformed envelope: acked, one line

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
