"""Bad values on the command line: exit 2 with a message, never a traceback (issue 17, defect 8).

Exit codes follow click: 2 is a usage error (a bad value), 1 a failure while running.
"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from bot.cli import main


def invoke(*args: str):
    return CliRunner().invoke(main, list(args))


@pytest.mark.parametrize("question", ["", "   "])
def test_ask_empty_question_is_a_usage_error(question):
    result = invoke("ask", question)
    assert result.exit_code == 2 and "empty" in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)


def test_ask_with_a_long_digit_run_prints_a_clean_message_and_valid_json():
    result = invoke("ask", "--no-llm", "--json", f"{'9' * 2000}B model on {'9' * 400} A100")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)  # strict JSON: no Infinity
    assert data["status"] in ("ok", "needs_info", "invalid", "error")
    assert "Traceback" not in result.output


def test_ask_catches_a_rendering_failure_into_one_line(monkeypatch):
    from bot import llm

    monkeypatch.setattr(llm, "answer", lambda *a, **k: (_ for _ in ()).throw(OverflowError("too big")))
    result = invoke("ask", "--no-llm", "DDP or FSDP?")
    assert result.exit_code == 1 and "could not answer (OverflowError)" in result.output
    assert "Traceback" not in result.output
