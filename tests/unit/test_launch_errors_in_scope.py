"""Errors only a distributed launch raises are in scope with no other distributed word (batch l class 1).

The elastic agent's ChildFailedError wrapper and the rendezvous store's "Address already in use" come
with few other words; they were answered out_of_scope. (A message that is only the error line,
read as a log and blanked, is not covered yet.) A web server's errno 98 is not one of them.
Phrasings are this test's own, not any first-contact question's.
"""

import pytest

from bot.parse import parse_conversation


def _parsed(text: str):
    return parse_conversation(text)


@pytest.mark.parametrize("text", [
    "Starting the job I get RuntimeError: Address already in use, what now?",
    "The launcher dies with ChildFailedError and exitcode 1, how do I find the cause?",
    "Every time I start the job it fails at the rendezvous, MASTER_PORT is 29500. How do I fix it?",
    "c10d TCPStore complains, then RuntimeError: Address already in use. Any fix?",
    "跑到一半报 RuntimeError: Address already in use，怎么解决？",
    "启动后出现 ChildFailedError，是什么原因？",
    "设置了 MASTER_ADDR 以后 rendezvous 一直失败，怎么办？",
    "又报 EADDRINUSE 了，我该怎么改？",
])
def test_launch_errors_are_troubleshooting(text):
    parsed = _parsed(text)
    assert parsed.intent == "troubleshoot", (text, parsed.intent)
    assert parsed.on_topic


@pytest.mark.parametrize("text", [
    "My flask app says OSError: [Errno 98] Address already in use",
    "nginx 启动时报 Address already in use，怎么办？",
])
def test_a_web_server_port_stays_out_of_scope(text):
    assert _parsed(text).intent == "out_of_scope"
