"""The Slack bot with the real ``bot.ask``: its reply is the rendering of the same Answer that
``shardwise ask --json`` prints for the same question (and the same thread history)."""

from __future__ import annotations

import json

import pytest

from bot.strategies import label
from bot.surfaces.slack_app import answer_message, build_slack_app, full_answer_message
from tests.slack_mock import BOT_USER_ID, SlackMock, event_body, mention, post, running_bot

pytestmark = pytest.mark.slow

TOKEN = "xoxb-3333-4444-realasktoken"
SECRET = "real-ask-signing-secret-0123456789"
CHANNEL = "C0000002"


@pytest.fixture
def slack():
    with SlackMock() as mock:
        yield mock


@pytest.fixture
def bot_url(slack):
    # ask_fn=None: the default, bot.ask (no LLM is configured in tests)
    app = build_slack_app(token=TOKEN, signing_secret=SECRET, api_url=slack.api_url)
    with running_bot(app) as url:
        yield url


def test_mention_reply_is_the_rendered_answer_of_bot_ask(slack, bot_url):
    from bot import ask

    question = "DDP or FSDP for Llama-2-7B on 8x A100 40GB?"
    assert post(bot_url, event_body(mention(question, CHANNEL), "EvReal1"), secret=SECRET)[0] == 200
    reply = slack.wait_for("chat.postMessage", timeout=180)[0].params
    expected = ask(question)
    rendered = answer_message(expected, secrets=[TOKEN])
    assert reply["text"] == rendered["text"]
    assert reply["blocks"] == rendered["blocks"]
    # the bold headline names the recommended strategy (confidence and alternatives may follow)
    assert f"*Recommendation: {label(expected.recommendation.strategy)}" in json.dumps(reply["blocks"])
    total = expected.numbers["memory.ddp.total_gib"]
    assert f"{total:.1f}" in json.dumps(reply["blocks"])  # the table shows the answer's own numbers
    # the folded sections follow as the next reply in the thread: forum claims with their verdicts
    full = slack.wait_for("chat.postMessage", count=2, timeout=60)[1].params
    assert full["blocks"] == full_answer_message(expected, secrets=[TOKEN])["blocks"]
    assert "verdict:" in json.dumps(full["blocks"]) and full.get("thread_ts")


def test_thread_follow_up_is_answered_with_the_thread_as_history(slack, bot_url):
    from bot import ask

    root = "1700000100.000100"
    first = "7B 模型，8 张 A100 40GB，用 DDP 还是 FSDP？"
    slack.add_thread_message(CHANNEL, root, f"<@{BOT_USER_ID}> {first}", ts=root)
    slack.add_thread_message(CHANNEL, root, "*建议: FSDP 全分片*", ts="1700000101.000100", bot=True)
    follow_up = "那换成 80GB 的卡呢？"
    event = mention(follow_up, CHANNEL, ts="1700000102.000100", thread_ts=root)
    assert post(bot_url, event_body(event, "EvReal2"), secret=SECRET)[0] == 200
    reply = slack.wait_for("chat.postMessage", timeout=180)[0].params
    expected = ask(follow_up, history=[{"role": "user", "content": first},
                                       {"role": "assistant", "content": "*建议: FSDP 全分片*"}])
    assert expected.setup.get("gpu_memory_gb") == 80 or "80" in str(expected.setup.get("gpu"))
    assert expected.setup.get("gpu_count") == 8  # from the earlier turn: the history was used
    assert reply["blocks"] == answer_message(expected, secrets=[TOKEN])["blocks"]
