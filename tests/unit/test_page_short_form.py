"""The page shows the short form first (issue 25): the headline, the direct answer, the table and
what is still needed in view; the reasons and what-ifs folded in one ``<details>`` with the other
long parts. Answers composed from the real calculator without knowledge (no index, no browser)."""

from __future__ import annotations

import re

import pytest

from bot.compose import compose
from bot.core.setup import TrainingSetup, resolve_setup
from bot.decide import decide
from bot.evidence import evidence_for_resolved
from bot.surfaces.web.answer_view import answer_html

SETUPS = [dict(model="Llama-2-7B", gpu="A100 40GB SXM", gpu_count=8),
          dict(params_b=13, gpu="RTX 4090 24GB", gpu_count=1, cpu_ram_gb=64),
          dict(model="Llama-2-13B", gpu="A100 80GB SXM", gpu_count=16, gpus_per_node=8, nodes=2)]


def composed(lang: str, fields: dict):
    ev = evidence_for_resolved(resolve_setup(TrainingSetup(**fields)), language=lang)
    return compose(ev, decide(ev))


def outside_details(markup: str) -> str:
    """The markup a reader sees before opening anything (every <details> body removed)."""
    while "<details" in markup:
        markup = re.sub(r"<details[^>]*>(?:(?!<details).)*?</details>", "", markup, flags=re.S)
    return markup


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("fields", SETUPS)
def test_reasons_and_what_ifs_are_folded_and_the_table_is_in_view(lang, fields):
    answer = composed(lang, fields)
    markup = answer_html(answer, answer_id="t1")
    seen = outside_details(markup)
    assert "<table" in seen and "sw-headline" in seen
    assert 'class="sw-more sw-full"' in markup
    first = answer.sections.reasons[0][:30]
    assert first not in seen and first in markup  # folded, not dropped
    for what_if in answer.sections.what_ifs:
        assert what_if[:30] not in seen
    if answer.sections.questions:
        assert "sw-h" in seen  # what is still needed stays in view


def test_without_a_table_the_first_reasons_are_the_answer():
    from bot.answer import Answer, Recommendation, Sections

    sections = Sections(headline="It depends", reasons=["first reason", "second reason", "third reason"],
                        what_ifs=["a what-if"])
    answer = Answer(language="en", recommendation=Recommendation(strategy="none"), sections=sections)
    seen = outside_details(answer_html(answer))
    assert "first reason" in seen and "second reason" in seen
    assert "third reason" not in seen and "a what-if" not in seen
