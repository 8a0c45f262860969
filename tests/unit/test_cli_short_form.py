"""``shardwise ask`` prints the short form unless ``--full`` (issue 25): the answer, the setup and
the table, and a line naming ``--full``; with it, why and what would change it. The pipeline is
replaced by an answer composed from the real calculator without knowledge (no index)."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from bot.compose import compose
from bot.core.setup import TrainingSetup, resolve_setup
from bot.decide import decide
from bot.evidence import evidence_for_resolved
from bot.surfaces.ask_cli import ask


@pytest.fixture(params=["en", "zh"])
def composed(request, monkeypatch):
    ev = evidence_for_resolved(resolve_setup(TrainingSetup(model="Llama-2-7B", gpu="A100 40GB SXM", gpu_count=8)),
                               language=request.param)
    answer = compose(ev, decide(ev))
    monkeypatch.setattr("bot.surfaces.llm.answer", lambda question, history=None, use_llm=None: answer)
    return answer


def test_the_short_form_by_default_and_everything_with_full(composed):
    runner = CliRunner()
    short = runner.invoke(ask, ["7B on 8 A100 40GB?"], terminal_width=200)
    full = runner.invoke(ask, ["7B on 8 A100 40GB?", "--full"], terminal_width=200)
    assert short.exit_code == 0 and full.exit_code == 0, short.output + full.output
    reason = composed.sections.reasons[0][:25]
    assert reason not in short.output and reason in full.output.replace("\n", " ")
    assert "shardwise ask --full" in " ".join(short.output.split())  # the short form says how to see the rest
    assert len(short.output) < len(full.output)
