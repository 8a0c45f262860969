"""A problem worded by the message catalogs (``bot.core.setup.Problem.worded``, ``problem.*`` in
bot/answer/messages/{en,zh}.yaml): its English ``message`` (errors, logs, the CLI) is the catalog's
English sentence, and an answer says it in the answer's language (``bot.render.problem_text``) --
a Chinese answer never carries the English sentence. Covered: a card without bf16 asked for bf16
(bot.core.setup.check_setup) and a figure the question gives twice that no reading settles
(bot.understand.contradictions.roles_and_contradictions)."""

from __future__ import annotations

import re

import pytest

from bot.catalog import lookup_gpu
from bot.core.setup import Problem, TrainingSetup, check_setup
from bot.render import problem_text
from bot.understand import Contradiction
from bot.understand.contradictions import roles_and_contradictions
from bot.understand.prose_reading import ProseReading
from bot.understand.reader import Reading

_LATIN_WORDS = re.compile(r"[A-Za-z]{4,}")


def _latin_words(text: str, allowed: set[str]) -> set[str]:
    """Words of four or more Latin letters in ``text`` that are not names it must print."""
    return {w for w in _LATIN_WORDS.findall(text) if w not in allowed}


@pytest.mark.parametrize("card", ["V100 32GB SXM2", "T4 16GB", "RTX 2080 Ti 11GB"])
@pytest.mark.parametrize("precision", ["bf16-mixed", "bf16"])
def test_a_card_without_bf16_is_one_worded_problem_in_both_languages(card, precision):
    gpu = lookup_gpu(card)
    problems = [p for p in check_setup(TrainingSetup(model="llama2-7b", gpu=card, gpu_count=8, precision=precision))
                if p.field == "precision"]
    assert len(problems) == 1
    p = problems[0]
    assert p.key == "no_bf16"
    # the English sentence the CLI and the logs print, unchanged by the move to the catalog
    assert p.message == f"{gpu.name} has no bf16 support; use fp16-mixed or fp32"
    en = problem_text(p.field, p.message, "en", p.key, p.values)
    zh = problem_text(p.field, p.message, "zh", p.key, p.values)
    assert en.endswith(f"{gpu.name} has no bf16 support; use fp16-mixed or fp32")
    assert gpu.name in zh and "bf16" in zh and "support" not in zh
    assert not _latin_words(zh, set(_LATIN_WORDS.findall(gpu.name)))


def test_a_card_with_bf16_has_no_precision_problem():
    assert not [p for p in check_setup(TrainingSetup(model="llama2-7b", gpu="A100 80GB SXM", gpu_count=8,
                                                     precision="bf16-mixed")) if p.field == "precision"]


def _unsettled(field: str, values: tuple, spans: tuple) -> Reading:
    """A reading whose prose found ``field`` twice and settled on neither (no field read)."""
    out = Reading(text=" ".join(map(str, spans)))
    prose = ProseReading()
    prose.contradictions = [(field, values, spans)]

    class _Cfg:
        observed: dict = {}

    roles_and_contradictions(out, prose, [], _Cfg(), [], out.text)
    return out


@pytest.mark.parametrize("field, values, spans, en_shown, zh_shown", [
    ("params_b", (7.0, 70.0), ("7B", "70B"), "7 and 70", "7 和 70"),
    ("finetune", ("lora", "full"), ("LoRA", "全参"), "lora and full", "lora 和 full"),
    ("seq_len", (2048, 4096), ("2048", "4096"), "2048 and 4096", "2048 和 4096"),
])
def test_a_figure_given_twice_and_unsettled_is_asked_in_the_answers_language(field, values, spans, en_shown, zh_shown):
    out = _unsettled(field, values, spans)
    assert [c.field for c in out.contradictions] == [field]
    (p,) = out.problems
    assert isinstance(p, Problem) and p.key == "said_both" and p.field == field
    assert p.message == f"the question says both {en_shown}; which one is it?"
    en = problem_text(p.field, p.message, "en", p.key, p.values)
    zh = problem_text(p.field, p.message, "zh", p.key, p.values)
    assert en.endswith(f"the question says both {en_shown}; which one is it?")
    assert zh_shown in zh and "question" not in zh and "which" not in zh


def test_a_settled_contradiction_is_a_note_not_a_problem():
    out = Reading(text="7B 70B", fields={"params_b": 7.0})
    prose = ProseReading()
    prose.contradictions = [("params_b", (7.0, 70.0), ("7B", "70B"))]

    class _Cfg:
        observed: dict = {}

    roles_and_contradictions(out, prose, [], _Cfg(), [], out.text)
    assert not out.problems
    assert [n.code for n in out.notes] == ["contradiction_computed"]
    assert out.contradictions == [Contradiction("params_b", (7.0, 70.0), ("7B", "70B"))]


def test_an_unworded_problem_is_said_as_before():
    """Problems without a catalog key keep their message, after the field's name."""
    assert problem_text("seq_len", "must be positive", "en") == "The sequence length must be positive."
