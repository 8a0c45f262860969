"""The eval gate in test form: ``python -m evals run`` over every cases file with the real bot
(each file's ratcheted pass count, and the gold set's pass rate and margin over the baselines,
``evals.harness.gold_gate``). CI runs the gate as its own step with the report as an artifact,
so its integration step leaves this test out (``-m "slow and not evalgate"``): the gate runs once."""

from __future__ import annotations

import importlib.util

import pytest
from click.testing import CliRunner

from evals.cli import eval_command

pytestmark = [
    pytest.mark.evalgate,
    pytest.mark.skipif(importlib.util.find_spec("bot.assistant") is None,
                       reason="bot.assistant (bot.ask) is not built yet"),
]


def test_every_cases_file_holds_its_ratchet_and_the_gold_set_its_gate(tmp_path):
    result = CliRunner().invoke(eval_command, ["--out", str(tmp_path / "evals")])
    assert result.exit_code == 0, result.output[-6000:]
    assert "ratchet gate: PASS" in result.output
