"""Answer downloads made on request (``bot.surfaces.web.downloads``): the links name the tab and its
latest answer; each file is the answer's own content; a stale, foreign or odd link gets a clear
404 text, never another answer's file."""

from __future__ import annotations

import json

import pytest

from bot.assistant import ask
from bot.surfaces.web import downloads
from bot.surfaces.web.conversation import Store

QUESTION = "DDP or FSDP for Mistral-7B on 4x A100 40GB with micro-batch 2?"


@pytest.fixture(scope="module")
def answer():
    return ask(QUESTION)


@pytest.fixture()
def store(answer):
    store = Store()
    conv = store.get("tab123abc")
    conv.answer, conv.answer_id = answer.model_dump(), "x7"
    return store


def test_links_name_the_tab_and_the_answer(answer):
    md = downloads.links_markdown("tab123abc", "x7", answer)
    for name in downloads.FILES:
        assert f"(download/tab123abc/x7/{name})" in md
    assert downloads.links_markdown(None, "x7", answer) == ""
    assert downloads.links_markdown("../etc", "x7", answer) == ""


def test_no_chart_links_without_a_chart():
    concept = ask("What is gradient bucketing in DDP?")
    md = downloads.links_markdown("tab123abc", "x1", concept)
    assert "shardwise-answer.md" in md and "shardwise-chart" not in md
    with pytest.raises(downloads.NotAvailable, match="no memory chart"):
        downloads.render_file(concept.model_dump(), "shardwise-chart.png")


def test_each_file_is_the_answers_own(store, answer):
    dump = downloads.lookup(store, "tab123abc", "x7", "shardwise-answer.json")
    assert json.loads(downloads.render_file(dump, "shardwise-answer.json")) == json.loads(
        json.dumps(answer.model_dump()))
    md = downloads.render_file(dump, "shardwise-answer.md").decode()
    assert "Mistral-7B" in md and "micro-batch 2" in md
    assert downloads.render_file(dump, "shardwise-chart.png").startswith(b"\x89PNG")
    assert downloads.render_file(dump, "shardwise-chart.svg").lstrip().startswith(b"<?xml")


@pytest.mark.parametrize(("session", "answer_id", "name", "says"), [
    ("tab123abc", "x6", "shardwise-answer.md", "earlier answer"),
    ("othertab", "x7", "shardwise-answer.md", "conversation is gone"),
    ("tab123abc", "x7", "../../etc/passwd", "no such file"),
    ("tab123abc", "x7", "shardwise-answer.exe", "no such file"),
    ("tab 123", "x7", "shardwise-answer.md", "not a download link"),
])
def test_bad_links_say_why(store, session, answer_id, name, says):
    with pytest.raises(downloads.NotAvailable, match=says):
        downloads.lookup(store, session, answer_id, name)
    assert store.find("othertab") is None  # a link never creates a conversation
