"""Slack shows the short form first (issue 25 "every surface shows the short form first"): the
reply is the answer, the setup, the table and what is still needed; the folded sections (why,
what would change it, passages, forum verdicts, how to run it) follow as the next reply in the
thread (a slash command: a message shown to the asker only), within Slack's limits. Answers are
composed from the real calculator without knowledge (no index); the Slack API is the local mock."""

from __future__ import annotations

import json
from contextlib import ExitStack

import pytest

from bot.compose import compose
from bot.core.setup import TrainingSetup, resolve_setup
from bot.decide import decide
from bot.evidence import evidence_for_resolved
from bot.surfaces.slack_app import answer_message, build_slack_app, full_answer_message, has_full_answer
from tests.slack_mock import SlackMock, event_body, running_bot
from tests.slack_mock import mention as mention_event
from tests.slack_mock import post as slack_post

TOKEN = "xoxb-1111-2222-testtokenvalue"
SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
CHANNEL = "C0000001"

SETUPS = [dict(model="Llama-2-7B", gpu="A100 40GB SXM", gpu_count=8),
          dict(params_b=13, gpu="RTX 4090 24GB", gpu_count=1, cpu_ram_gb=64),
          dict(model="Llama-2-13B", gpu="A100 80GB SXM", gpu_count=16, gpus_per_node=8, nodes=2)]


def composed(lang: str, fields: dict):
    ev = evidence_for_resolved(resolve_setup(TrainingSetup(**fields)), language=lang)
    return compose(ev, decide(ev))


def texts(blocks: list[dict]) -> str:
    return json.dumps(blocks, ensure_ascii=False)


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("fields", SETUPS)
def test_the_reply_is_the_short_form_and_the_rest_is_its_own_message(lang, fields):
    answer = composed(lang, fields)
    assert has_full_answer(answer)
    short, full = answer_message(answer), full_answer_message(answer)
    assert full is not None
    head = short["blocks"][0]["text"]["text"]
    assert answer.sections.headline.split("[")[0].strip("*").strip()[:30] in head
    rendered, rest = texts(short["blocks"]), texts(full["blocks"])
    for reason in answer.sections.reasons:  # the reasons are folded: in the second message only
        assert reason[:40] not in rendered and reason[:40] in rest
    for what_if in answer.sections.what_ifs:
        assert what_if[:40] not in rendered
    assert ("next reply" in rendered) if lang == "en" else ("下一条回复" in rendered)
    assert ("Full answer" in rest) if lang == "en" else ("完整回答" in rest)
    for message in (short, full):  # Slack's limits: 50 blocks, 3000 chars a section, 4000 of text
        assert len(message["blocks"]) <= 50 and len(message["text"]) <= 4000
        for block in message["blocks"]:
            if block["type"] == "section":
                assert len(block["text"]["text"]) <= 3000
            else:
                assert len(block["elements"]) <= 10


def test_the_short_form_cites_only_the_sources_it_uses():
    answer = composed("en", SETUPS[0])
    short = texts(answer_message(answer)["blocks"])
    for c in answer.citations:
        if f"[{c.n}]" not in answer.text:
            assert (c.url or c.title) not in short or c.title in answer.text


@pytest.fixture
def slack():
    with SlackMock() as mock:
        yield mock


def test_a_mention_gets_the_short_form_then_the_full_answer_in_the_thread(slack):
    answer = composed("en", SETUPS[1])

    def ask(question, history=None):
        return answer

    app = build_slack_app(ask_fn=ask, token=TOKEN, signing_secret=SECRET, api_url=slack.api_url)
    with ExitStack() as stack:
        url = stack.enter_context(running_bot(app))
        status, _ = slack_post(url, event_body(mention_event("13B on one 4090?", CHANNEL, ts="1700000000.000200")),
                               secret=SECRET)
        assert status == 200
        slack.wait_for("chat.postMessage", 2)
    first, second = (c.params for c in slack.calls_to("chat.postMessage")[:2])
    assert first["thread_ts"] == second["thread_ts"] == "1700000000.000200"
    blocks = [json.loads(p["blocks"]) if isinstance(p["blocks"], str) else p["blocks"] for p in (first, second)]
    assert answer.sections.reasons[0][:40] not in texts(blocks[0])
    assert answer.sections.reasons[0][:40] in texts(blocks[1])


def test_an_answer_without_folded_sections_is_one_reply():
    answer = composed("en", SETUPS[0]).model_copy(update={"full_text": ""})
    assert not has_full_answer(answer) and full_answer_message(answer) is None
