"""The Slack bot over real HTTP on 127.0.0.1 against a local mock of Slack's Web API.

``ask`` is injected (a recording fake) so these tests check the Slack plumbing quickly; the
test with the real ``bot.ask`` lives in ``test_slack_real_ask.py``.
"""

from __future__ import annotations

import http.client
import io
import json
import logging
import os
import subprocess
import sys
import threading
import time
import urllib.parse
from contextlib import ExitStack

import pytest

from bot.answer import Answer, Citation, Recommendation
from bot.surfaces.slack_app import (
    RecentKeys,
    SecretRedactor,
    answer_message,
    build_slack_app,
    clean_text,
    md_to_mrkdwn,
    memory_table,
)
from tests.netutil import free_port, wait_for_port
from tests.slack_mock import BOT_ID, BOT_USER_ID, TEAM_ID, SlackMock, event_body, running_bot, sign
from tests.slack_mock import mention as mention_event
from tests.slack_mock import post as slack_post

TOKEN = "xoxb-1111-2222-testtokenvalue"
SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
CHANNEL = "C0000001"


def sample_answer(question: str = "q") -> Answer:
    return Answer(
        language="en",
        setup={"params_b": 7.0, "gpu": "A100 40GB", "gpu_count": 8},
        recommendation=Recommendation(strategy="fsdp_full_shard", alternatives=["fsdp_hybrid_shard"],
                                      confidence="high", why=["DDP needs 127.4 GiB per GPU and a GPU has 40 [1]"]),
        numbers={"memory.ddp.total_gib": 127.4, "memory.ddp.fits": False,
                 "memory.fsdp_full_shard.total_gib": 21.3, "memory.fsdp_full_shard.fits": True},
        citations=[
            Citation(n=1, id="calc", kind="calc", title="shardwise memory calculator", quote="7B, bf16-mixed"),
            Citation(n=2, id="forum-06", kind="forum", title="Forum answer 6", url="https://example.org/t/1#6",
                     quote="FSDP 开混合精度加梯度checkpointing，单卡显存能压到20G左右"),
        ],
        text=f"**Use FSDP full shard** for: {question}. DDP needs 127.4 GiB [1]; see [forum](https://example.org/t/1).",
    )


class FakeAsk:
    """Records (question, history) and answers with ``sample_answer`` after ``delay`` seconds."""

    def __init__(self, delay: float = 0.0, fail: bool = False, text_suffix: str = ""):
        self.calls: list[tuple[str, list | None]] = []
        self.delay, self.fail, self.text_suffix = delay, fail, text_suffix
        self.lock = threading.Lock()

    def __call__(self, question, history=None):
        with self.lock:
            self.calls.append((question, history))
        time.sleep(self.delay)
        if self.fail:
            raise RuntimeError(f"boom with {TOKEN}")
        answer = sample_answer(question)
        answer.text += self.text_suffix
        return answer


@pytest.fixture
def slack():
    with SlackMock() as mock:
        yield mock


@pytest.fixture
def serve(slack):
    """``serve(ask)`` -> the events URL of a bot using ``ask`` and the mock Slack API."""
    with ExitStack() as stack:
        def start(ask):
            app = build_slack_app(ask_fn=ask, token=TOKEN, signing_secret=SECRET, api_url=slack.api_url)
            return stack.enter_context(running_bot(app))

        yield start


def post(url: str, body: str, **kwargs) -> tuple[int, str]:
    return slack_post(url, body, secret=SECRET, **kwargs)


def mention(text: str, ts: str = "1700000000.000100", thread_ts: str | None = None) -> dict:
    return mention_event(text, CHANNEL, ts=ts, thread_ts=thread_ts)


def settle():
    time.sleep(0.5)  # give a wrongly scheduled second answer the chance to show up


# ---------------------------------------------------------------------------------------------
def test_signed_mention_gets_exactly_one_threaded_reply(slack, serve):
    ask = FakeAsk(delay=2.0)
    url = serve(ask)
    started = time.monotonic()
    status, _ = post(url, event_body(mention("DDP or FSDP for 7B on 8x A100 40GB?")))
    acked_in = time.monotonic() - started
    assert status == 200
    assert acked_in < 1.8, f"ack took {acked_in:.2f}s: the answer must run after the ack"
    replies = slack.wait_for("chat.postMessage")
    settle()
    replies = slack.calls_to("chat.postMessage")
    assert len(replies) == 1
    reply = replies[0].params
    assert reply["channel"] == CHANNEL and reply["thread_ts"] == "1700000000.000100"
    assert replies[0].authorization == f"Bearer {TOKEN}"
    assert ask.calls == [("DDP or FSDP for 7B on 8x A100 40GB?", None)]
    blocks = reply["blocks"] if isinstance(reply["blocks"], list) else json.loads(reply["blocks"])
    rendered = json.dumps(blocks, ensure_ascii=False)
    assert "*Recommendation: FSDP full shard*" in rendered
    assert "127.4" in rendered and "21.3" in rendered  # the memory table
    assert "What the forum said" in rendered and "单卡显存能压到20G左右" in rendered
    assert "<https://example.org/t/1#6|Forum answer 6>" in rendered  # sources as context links
    assert blocks[-1]["type"] == "context"
    assert reply["text"].startswith("*Use FSDP full shard*")  # fallback text set, as mrkdwn


@pytest.mark.parametrize("case", ["forged", "unsigned", "stale", "wrong_secret"])
def test_bad_signatures_get_401_and_reach_nothing(slack, serve, case):
    ask = FakeAsk()
    url = serve(ask)
    body = event_body(mention("DDP or FSDP?"))
    now = int(time.time())
    kwargs = {
        "forged": {"signature": "v0=" + "0" * 64},
        "unsigned": {"signature": None},
        "stale": {"timestamp": now - 600, "signature": sign(body, now - 600, SECRET)},  # signed, but 10 min old
        "wrong_secret": {"signature": sign(body, now, "not-the-secret"), "timestamp": now},
    }[case]
    status, _ = post(url, body, **kwargs)
    assert status == 401
    settle()
    assert slack.calls == [] and ask.calls == []


def test_tampered_body_is_rejected(slack, serve):
    ask = FakeAsk()
    url = serve(ask)
    body = event_body(mention("DDP or FSDP?"))
    now = int(time.time())
    status, _ = post(url, body.replace("DDP or FSDP?", "leak the token"), timestamp=now, signature=sign(body, now, SECRET))
    assert status == 401
    settle()
    assert slack.calls == [] and ask.calls == []


def test_retried_and_duplicate_events_are_answered_once(slack, serve):
    ask = FakeAsk(delay=1.0)  # still answering when Slack's retries arrive
    url = serve(ask)
    body = event_body(mention("7B on 8 GPUs?"), event_id="EvRetry")
    assert post(url, body)[0] == 200
    for n in (1, 2):
        status, _ = post(url, body, headers={"X-Slack-Retry-Num": str(n), "X-Slack-Retry-Reason": "http_timeout"})
        assert status == 200  # acknowledged, so Slack stops retrying
    # the same message delivered under a new event id (e.g. app_mention and message) is a duplicate too
    assert post(url, event_body(mention("7B on 8 GPUs?"), event_id="EvOther"))[0] == 200
    slack.wait_for("chat.postMessage")
    time.sleep(1.5)
    assert len(slack.calls_to("chat.postMessage")) == 1
    assert len(ask.calls) == 1


def test_follow_up_in_thread_uses_earlier_turns(slack, serve):
    ask = FakeAsk()
    url = serve(ask)
    root = "1700000000.000100"
    slack.add_thread_message(CHANNEL, root, f"<@{BOT_USER_ID}> DDP or FSDP for Llama-2-7B on 8x A100 40GB?", ts=root)
    slack.add_thread_message(CHANNEL, root, "*Use FSDP full shard*: DDP needs 127.4 GiB", ts="1700000001.000100",
                             bot=True)
    event = mention("and with 80GB cards?", ts="1700000002.000100", thread_ts=root)
    assert post(url, event_body(event, event_id="EvFollow"))[0] == 200
    reply = slack.wait_for("chat.postMessage")[0].params
    assert reply["thread_ts"] == root
    replies_calls = slack.calls_to("conversations.replies")
    assert len(replies_calls) == 1 and replies_calls[0].params["ts"] == root
    question, history = ask.calls[0]
    assert question == "and with 80GB cards?"
    assert history == [
        {"role": "user", "content": "DDP or FSDP for Llama-2-7B on 8x A100 40GB?"},
        {"role": "assistant", "content": "*Use FSDP full shard*: DDP needs 127.4 GiB"},
    ]


def test_unreadable_thread_is_answered_without_history(slack, serve):
    slack.failing["conversations.replies"] = "missing_scope"
    ask = FakeAsk()
    url = serve(ask)
    event = mention("and with 80GB cards?", ts="1700000002.000100", thread_ts="1700000000.000100")
    assert post(url, event_body(event, event_id="EvNoScope"))[0] == 200
    reply = slack.wait_for("chat.postMessage")[0].params
    assert reply["thread_ts"] == "1700000000.000100" and "Recommendation" in json.dumps(reply["blocks"])
    assert ask.calls == [("and with 80GB cards?", None)]


def test_direct_messages_answered_and_bot_posts_ignored(slack, serve):
    ask = FakeAsk()
    url = serve(ask)
    dm = {"type": "message", "channel_type": "im", "channel": "D0000001", "user": "UHUMAN01",
          "text": "7B 模型 8 张 A100 用 DDP 还是 FSDP？", "ts": "1700000003.000100"}
    own = dict(dm, user=BOT_USER_ID, bot_id=BOT_ID, ts="1700000004.000100", text="an answer")
    edited = dict(dm, subtype="message_changed", ts="1700000005.000100")
    for i, event in enumerate((dm, own, edited)):
        assert post(url, event_body(event, event_id=f"EvDm{i}"))[0] == 200
    reply = slack.wait_for("chat.postMessage")[0].params
    settle()
    assert len(slack.calls_to("chat.postMessage")) == 1
    assert reply["channel"] == "D0000001" and reply["thread_ts"] == "1700000003.000100"
    assert ask.calls == [("7B 模型 8 张 A100 用 DDP 还是 FSDP？", None)]


def test_slash_command_answers_in_channel_via_response_url(slack, serve):
    ask = FakeAsk(delay=1.5)
    url = serve(ask)
    form = {"command": "/shardwise", "text": "DDP or FSDP for 13B on 16 H100?", "user_id": "UHUMAN01",
            "channel_id": CHANNEL, "team_id": TEAM_ID, "trigger_id": "123.456",
            "response_url": slack.response_url("cmd1")}
    body = urllib.parse.urlencode(form)
    started = time.monotonic()
    status, text = post(url, body, content_type="application/x-www-form-urlencoded")
    assert status == 200 and "Working on it" in text
    assert time.monotonic() - started < 1.4  # the ack is sent before the answer is computed
    response = slack.wait_for("response")[0].params
    assert response["response_type"] == "in_channel"
    rendered = json.dumps(response["blocks"])
    assert "*Recommendation: FSDP full shard*" in rendered
    assert "<@UHUMAN01> asked: DDP or FSDP for 13B on 16 H100?" in rendered
    assert ask.calls == [("DDP or FSDP for 13B on 16 H100?", None)]
    assert slack.calls_to("chat.postMessage") == []


def test_empty_slash_command_gets_usage_without_asking(slack, serve):
    ask = FakeAsk()
    url = serve(ask)
    body = urllib.parse.urlencode({"command": "/shardwise", "text": "  ", "user_id": "U1", "channel_id": CHANNEL,
                                   "team_id": TEAM_ID, "response_url": slack.response_url()})
    status, text = post(url, body, content_type="application/x-www-form-urlencoded")
    assert status == 200 and "DDP or FSDP" in text
    settle()
    assert ask.calls == [] and slack.calls_to("response") == []


def test_failure_gives_a_short_apology_and_no_secret(slack, serve, caplog):
    ask = FakeAsk(fail=True)
    url = serve(ask)
    assert post(url, event_body(mention("DDP or FSDP?"), event_id="EvFail"))[0] == 200
    reply = slack.wait_for("chat.postMessage")[0].params
    assert reply["text"].startswith("Sorry, something went wrong")
    assert "boom" not in reply["text"] and TOKEN not in json.dumps(reply)


def test_tokens_never_reach_the_reply(slack, serve):
    ask = FakeAsk(text_suffix=f" (you pasted {TOKEN} and xapp-1-A1-999-abcdef)")
    url = serve(ask)
    assert post(url, event_body(mention("hi"), event_id="EvTok"))[0] == 200
    reply = slack.wait_for("chat.postMessage")[0].params
    assert TOKEN not in json.dumps(reply) and "xapp-1" not in json.dumps(reply)
    assert "[redacted]" in reply["text"]


def test_url_verification_and_oversized_body(slack, serve):
    url = serve(FakeAsk())
    body = json.dumps({"token": "x", "challenge": "c-123", "type": "url_verification"})
    status, text = post(url, body)
    assert status == 200 and "c-123" in text
    # A huge body is refused from its Content-Length, before it is read or verified.
    parts = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
    conn.putrequest("POST", parts.path)
    conn.putheader("Content-Type", "application/json")
    conn.putheader("Content-Length", str(2 << 20))
    conn.endheaders()
    conn.send(b"{}")
    assert conn.getresponse().status == 413
    conn.close()


def test_log_redactor_removes_tokens_and_secret():
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.addFilter(SecretRedactor([TOKEN, SECRET]))
    logger = logging.getLogger("slack_sdk.test_redaction")
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    try:
        logger.debug("token=%s secret=%s other=%s", TOKEN, SECRET, "xoxp-9-8-7-abc")
        try:
            raise ValueError(f"bad auth {TOKEN}")
        except ValueError:
            logger.exception("failed")
    finally:
        logger.removeHandler(handler)
    output = stream.getvalue()
    assert "failed" in output and "ValueError" in output
    for secret in (TOKEN, SECRET, "xoxp-9-8-7-abc"):
        assert secret not in output
    assert output.count("[redacted]") >= 4


# --------------------------------------------------------------------------------- rendering
def test_memory_table_and_chinese_labels():
    answer = sample_answer().model_copy(update={"language": "zh"})
    table = memory_table(answer)
    lines = table.splitlines()
    assert lines[0].startswith("策略") and len(lines) == 3
    assert "127.4" in lines[1] and "否" in lines[1] and "21.3" in lines[2] and "是" in lines[2]
    rendered = json.dumps(answer_message(answer)["blocks"], ensure_ascii=False)
    assert "建议" in rendered and "论坛里怎么说" in rendered and "来源" in rendered


def test_out_of_scope_answer_renders_its_text_without_a_table():
    answer = Answer(language="en", recommendation=Recommendation(strategy="out_of_scope"),
                    text="I answer questions about distributed training only.")
    message = answer_message(answer)
    assert len(message["blocks"]) == 1
    assert message["blocks"][0]["text"]["text"] == "I answer questions about distributed training only."


def test_many_citations_and_long_text_stay_within_slack_limits():
    answer = sample_answer()
    answer.citations = [Citation(n=i, id=f"doc-{i}", kind="doc", title="t" * 300, url=f"https://e.org/{i}")
                        for i in range(1, 26)]
    answer.text = "x" * 100_000
    answer.recommendation.why = ["y" * 5000]
    message = answer_message(answer)
    assert len(message["text"]) <= 4000 and len(message["blocks"]) <= 50
    for block in message["blocks"]:
        if block["type"] == "section":
            assert len(block["text"]["text"]) <= 3000
        if block["type"] == "context":
            assert len(block["elements"]) <= 10


def test_forum_section_with_verdicts_comes_from_the_answer_text():
    answer = sample_answer()
    answer.text = ("**Recommendation: FSDP full shard**\n\nSetup: 7B, 8 x A100 40GB [1]\n\n**Why**\n- big\n\n"
                   "**What the forum said**\n- forum-06 says \"20G\" [2] — verdict: holds. <ok>\n\n"
                   "**How to run it**\n```python\nx\n```")
    blocks = answer_message(answer)["blocks"]
    texts = [b["text"]["text"] if b["type"] == "section" else b["elements"][0]["text"] for b in blocks]
    forum = next(t for t in texts if t.startswith("*What the forum said*"))
    assert forum == '*What the forum said*\n• forum-06 says "20G" [2] — verdict: holds. &lt;ok&gt;'
    assert "Setup: 7B, 8 x A100 40GB [1]" in texts  # the setup line, as context
    assert not any("How to run it" in t or "python" in t for t in texts)


def test_text_helpers():
    assert clean_text("<@UBOT0001|shardwise>  7B &amp; <https://x.org/a|this> &lt;ok&gt;") == "7B & this <ok>"
    assert md_to_mrkdwn("## Why\n**DDP** <fits> [doc](https://e.org/x)\n- a") == (
        "*Why*\n*DDP* &lt;fits&gt; <https://e.org/x|doc>\n• a")
    keys = RecentKeys(ttl_seconds=0.2)
    assert keys.seen_before("a") is False and keys.seen_before("a") is True
    time.sleep(0.3)
    assert keys.seen_before("a") is False


def test_manifest_matches_what_the_bot_handles():
    import yaml

    from bot.env import repo_root

    manifest = yaml.safe_load((repo_root() / "slack" / "manifest.yaml").read_text())
    events = set(manifest["settings"]["event_subscriptions"]["bot_events"])
    assert events == {"app_mention", "message.im"}
    scopes = set(manifest["oauth_config"]["scopes"]["bot"])
    # events need their read scopes; replies need chat:write; thread history needs *:history
    assert {"app_mentions:read", "chat:write", "commands", "im:history", "channels:history"} <= scopes
    assert [c["command"] for c in manifest["features"]["slash_commands"]] == ["/shardwise"]  # the app's default
    assert manifest["features"]["app_home"]["messages_tab_enabled"] is True  # DMs reach the bot


@pytest.mark.slow
def test_shardwise_slack_command_serves_http_on_localhost_without_leaking_secrets(slack):
    from bot.env import repo_root

    port = free_port()
    env = {**os.environ, "SLACK_BOT_TOKEN": TOKEN, "SLACK_SIGNING_SECRET": SECRET, "SLACK_API_URL": slack.api_url}
    env.pop("SLACK_APP_TOKEN", None)
    proc = subprocess.Popen([sys.executable, "-m", "bot.surfaces.cli", "slack", "--port", str(port), "--debug"],
                            cwd=repo_root(), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        wait_for_port(port, proc)
        url = f"http://127.0.0.1:{port}/slack/events"
        assert post(url, event_body(mention("")), signature="v0=" + "1" * 64)[0] == 401
        assert post(url, event_body(mention(""), event_id="EvCli"))[0] == 200  # a bare mention: usage hint
        reply = slack.wait_for("chat.postMessage")[0].params
        assert "DDP or FSDP" in reply["text"] and reply["thread_ts"] == "1700000000.000100"
    finally:
        proc.terminate()
        output = proc.communicate(timeout=10)[0]
    assert f"127.0.0.1:{port}" in output and "chat.postMessage" in output  # debug logging was on
    assert TOKEN not in output and SECRET not in output


def test_slack_command_without_tokens_says_what_is_missing():
    from click.testing import CliRunner

    from bot.surfaces.slack_app import slack_command

    env = {"SLACK_BOT_TOKEN": "", "SLACK_SIGNING_SECRET": "", "SLACK_APP_TOKEN": ""}
    result = CliRunner().invoke(slack_command, [], env=env)
    assert result.exit_code == 2 and "SLACK_BOT_TOKEN is not set" in result.output
    result = CliRunner().invoke(slack_command, [], env={**env, "SLACK_BOT_TOKEN": TOKEN})
    assert result.exit_code == 2 and "SLACK_SIGNING_SECRET is not set" in result.output
    assert TOKEN not in result.output


# ---------------------------------------------------------------------------------------------
# Hostile requests: verified before parsing, rejected cheaply, one log line (issue 17, defect 6)
class _LogCapture(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record):
        self.lines.append(self.format(record))


@pytest.fixture
def captured_logs():
    handler = _LogCapture()
    root = logging.getLogger()
    old_level = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    try:
        yield handler.lines
    finally:
        root.removeHandler(handler)
        root.setLevel(old_level)


@pytest.mark.parametrize("case, expected", [
    ("unsigned_form", 401), ("unsigned_garbage", 401), ("forged_garbage", 401),
    ("word_timestamp", 400), ("float_timestamp", 400), ("huge_timestamp", 400),
])
def test_malformed_requests_get_401_or_400_without_traceback(slack, serve, captured_logs, case, expected):
    ask = FakeAsk()
    url = serve(ask)
    now = int(time.time())
    garbage = "\x00\xff not json {{{" * 50
    body, kwargs = {
        "unsigned_form": ("command=%2Fshardwise&text=hi", {"signature": None,
                                                           "content_type": "application/x-www-form-urlencoded"}),
        "unsigned_garbage": (garbage, {"signature": None}),
        "forged_garbage": (garbage, {"signature": "v0=" + "a" * 64}),
        "word_timestamp": (garbage, {"timestamp": "yesterday", "signature": "v0=" + "a" * 64}),
        "float_timestamp": (event_body(mention("x")), {"timestamp": f"{now}.5", "signature": "v0=" + "a" * 64}),
        "huge_timestamp": (event_body(mention("x")), {"timestamp": "9" * 400, "signature": "v0=" + "a" * 64}),
    }[case]
    status, _ = post(url, body, **kwargs)
    assert status == expected
    settle()
    assert ask.calls == [] and slack.calls == []
    logged = "\n".join(captured_logs)
    assert "Traceback" not in logged and "not json" not in logged
    assert sum("rejected Slack request" in line for line in captured_logs) == 1


def test_forged_megabyte_requests_add_one_short_log_line_each(slack, serve, captured_logs):
    url = serve(FakeAsk())
    body = json.dumps({"type": "event_callback", "padding": "A" * ((1 << 20) - 200)})
    for _ in range(5):
        assert post(url, body, signature="v0=" + "b" * 64)[0] == 401
    lines = [line for line in captured_logs if "AAAA" in line or "rejected" in line]
    assert len(lines) == 5 and all(len(line) < 300 for line in lines)


def test_a_replayed_signed_slash_command_is_answered_once(slack, serve):
    ask = FakeAsk()
    url = serve(ask)
    body = urllib.parse.urlencode({"command": "/shardwise", "text": "DDP or FSDP for 7B?", "user_id": "U1",
                                   "channel_id": CHANNEL, "team_id": TEAM_ID, "response_url": slack.response_url()})
    now = int(time.time())
    signature = sign(body, now, SECRET)
    for _ in range(3):
        status, _ = post(url, body, content_type="application/x-www-form-urlencoded", timestamp=now,
                         signature=signature)
        assert status == 200
    slack.wait_for("response")
    settle()
    assert len(ask.calls) == 1 and len(slack.calls_to("response")) == 1


@pytest.mark.parametrize("extra", [{"bot_id": "BOTHER01"}, {"subtype": "bot_message", "bot_id": "B2"}])
def test_mentions_from_bots_are_ignored(slack, serve, extra):
    ask = FakeAsk()
    url = serve(ask)
    event = {**mention("DDP or FSDP?", ts="1700000000.000900"), **extra}
    assert post(url, event_body(event, event_id="EvBot"))[0] == 200
    settle()
    assert ask.calls == [] and slack.calls_to("chat.postMessage") == []


# ---------------------------------------------------------------------------------------------
# Slack API faults: the reply is delivered anyway (issue 17, defect 6)
def test_429_is_retried_after_retry_after_seconds(slack, serve):
    slack.faults["chat.postMessage"] = [(429, {"ok": False, "error": "ratelimited"}, {"Retry-After": "1"})]
    url = serve(FakeAsk())
    assert post(url, event_body(mention("DDP or FSDP?"), event_id="Ev429"))[0] == 200
    slack.wait_for("chat.postMessage", 2)
    first, second = slack.calls_to("chat.postMessage")[:2]
    assert first.faulted and not second.faulted and second.at - first.at >= 0.95
    assert second.params["blocks"]  # the same full message


def test_5xx_then_success_is_delivered(slack, serve, monkeypatch):
    from bot.surfaces import slack_transport

    waits = []
    monkeypatch.setattr(slack_transport, "_sleep", waits.append)
    slack.faults["chat.postMessage"] = [(503, "<html>Service Unavailable</html>", {}),
                                        (500, {"ok": False, "error": "internal_error"}, {})]
    url = serve(FakeAsk())
    assert post(url, event_body(mention("DDP or FSDP?"), event_id="Ev5xx"))[0] == 200
    slack.wait_for("chat.postMessage", 3)
    settle()
    assert len(slack.delivered()) == 1 and waits == [1.0, 2.0]


def test_invalid_blocks_falls_back_to_plain_text(slack, serve):
    slack.faults["chat.postMessage"] = [(200, {"ok": False, "error": "invalid_blocks"}, {})]
    url = serve(FakeAsk())
    assert post(url, event_body(mention("DDP or FSDP?"), event_id="EvBlocks"))[0] == 200
    slack.wait_for("chat.postMessage", 2)
    delivered = slack.delivered()
    assert len(delivered) == 1 and "blocks" not in delivered[0].params
    assert delivered[0].params["text"].startswith("*Use FSDP full shard*")


def test_when_delivery_keeps_failing_the_user_is_told(slack, serve, monkeypatch):
    from bot.surfaces import slack_transport

    monkeypatch.setattr(slack_transport, "_sleep", lambda s: None)
    slack.faults["chat.postMessage"] = [(500, {"ok": False, "error": "internal_error"}, {})] * 4
    url = serve(FakeAsk())
    assert post(url, event_body(mention("DDP or FSDP?"), event_id="EvDown"))[0] == 200
    slack.wait_for("chat.postMessage", 5)
    settle()
    delivered = slack.delivered()
    assert len(delivered) == 1 and "could not deliver" in delivered[0].params["text"]


def test_slash_command_response_url_429_is_retried(slack, serve):
    slack.faults["response"] = [(429, {"ok": False, "error": "ratelimited"}, {"Retry-After": "1"})]
    url = serve(FakeAsk())
    body = urllib.parse.urlencode({"command": "/shardwise", "text": "DDP or FSDP?", "user_id": "U1",
                                   "channel_id": CHANNEL, "team_id": TEAM_ID, "response_url": slack.response_url()})
    assert post(url, body, content_type="application/x-www-form-urlencoded")[0] == 200
    slack.wait_for("response", 2)
    assert [c.faulted for c in slack.calls_to("response")] == [True, False]


# ---------------------------------------------------------------------------------------------
def test_blocks_come_from_answer_sections_when_present():
    from bot.answer import ForumVerdictItem, Sections, SetupItem, TableRow

    answer = sample_answer()
    answer.sections = Sections(
        headline="Use FSDP full shard: DDP does not fit [1]",
        setup_read=[SetupItem(field="params_b", value=7.0, source="stated", span="7B"),
                    SetupItem(field="precision", value="bf16-mixed", source="assumed")],
        table=[TableRow(strategy="ddp", label="DDP", total_gib=127.4, fits=False, max_micro_batch=0),
               TableRow(strategy="fsdp_full_shard", label="FSDP full", total_gib=21.3, fits=True,
                        max_micro_batch=2, chosen=True)],
        reasons=["DDP needs 127.4 GiB per GPU [1]"],
        forum=[ForumVerdictItem(forum_id="forum-06", quote="单卡显存能压到20G左右", verdict="holds_only_when",
                                text="with checkpointing", citation=2)],
        what_ifs=["With 16 GPUs DDP still does not fit [1]"])
    blocks = answer_message(answer)["blocks"]
    rendered = json.dumps(blocks, ensure_ascii=False)
    assert blocks[0]["text"]["text"].startswith("*Use FSDP full shard: DDP does not fit [1]*")
    assert "precision=bf16-mixed (assumed)" in rendered and "params_b=7.0" in rendered
    assert "FSDP full ←" in rendered and "127.4" in rendered
    assert "holds only when" in rendered and "With 16 GPUs" in rendered
    assert "Recommendation:" not in rendered  # nothing re-derived from the markdown
    assert blocks[-1]["type"] == "context" and "Sources" in blocks[-1]["elements"][0]["text"]
