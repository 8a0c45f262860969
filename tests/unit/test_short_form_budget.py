"""The short form's prose budget (issue 25: ~600 characters in English, ~350 in Chinese above the
table): the direct answer's first sentence always stays with its figures; the sentences after it
are shown while the prose fits and folded ("More on what you asked") past it, in order; the setup
line is the table's caption, under it. Troubleshooting questions in our own words, both languages,
answered by the pipeline on the test fakes (hashed embedding, in-memory store)."""

from __future__ import annotations

import pytest

import bot.compose as compose_module
from bot import ask
from bot.compose import _within_budget
from bot.knowledge.playbook import get_entry
from bot.render import SHORT_PROSE_CHARS
from evals.bench_answers import prose_above_table


def test_within_budget_keeps_the_first_and_the_order():
    assert _within_budget(["a" * 50, "b" * 10, "c" * 10], 55) == (["a" * 50], ["b" * 10, "c" * 10])
    assert _within_budget(["a" * 50, "b" * 10, "c" * 10], 70) == (["a" * 50, "b" * 10, "c" * 10], [])
    # once one is folded, a later short one is folded too (the order is the order asked)
    assert _within_budget(["a" * 10, "b" * 50, "c" * 1], 30) == (["a" * 10], ["b" * 50, "c" * 1])
    assert _within_budget(["a" * 99], 5) == (["a" * 99], [])  # the first always stays
    assert _within_budget(["a" * 99], 5, keep_first=False) == ([], ["a" * 99])


QUESTIONS = [
    ("en", "Our ZeRO-3 run of a 13B model on 8x A100 40GB runs out of memory at the first step. Why?"),
    ("en", "FSDP on 4x RTX 4090 fine-tuning Llama-2-7B is slower than DDP was, what is wrong?"),
    ("en", "Full fine-tune of Qwen2.5-7B on 8 A800 80GB hits CUDA out of memory after a few hours; how do I fix it?"),
    ("zh", "13B 全参微调，8张A100 40G，用 ZeRO-3 第一步就爆显存，为什么？"),
    ("zh", "4张4090 用 FSDP 训练 Llama-2-7B，比 DDP 还慢，怎么回事？"),
    ("zh", "8卡 A800 80G 全参微调 Qwen2.5-7B，跑了几个小时之后显存溢出，怎么解决？"),
]


@pytest.mark.parametrize("lang, question", QUESTIONS)
def test_the_prose_above_the_table_keeps_to_the_budget(lang, question):
    answer = ask(question)
    assert answer.language == lang
    sec = answer.sections
    budget = SHORT_PROSE_CHARS[lang]
    prose = prose_above_table(answer.text)
    if len(prose) > budget:  # only the first sentence and the headline may carry it over
        assert len(prose) <= len(sec.direct_answer or "") + len(sec.headline) + 20, prose
    for folded in sec.direct_more:  # folded, not dropped
        assert folded not in answer.text and folded in answer.full_text
    if sec.direct_answer:
        assert sec.direct_answer in answer.text
    if sec.table:  # the setup line is the table's caption
        setup = "Setup: " if lang == "en" else "配置："
        title = "**Per-GPU memory and speed" if lang == "en" else "**每卡显存与速度"
        assert answer.text.index(title) < answer.text.index(setup)


@pytest.mark.parametrize("lang, question", [QUESTIONS[0], QUESTIONS[3]])
def test_a_small_budget_folds_every_sentence_after_the_first(lang, question, monkeypatch):
    whole = ask(question)
    monkeypatch.setattr(compose_module, "SHORT_PROSE_CHARS", {"en": 1, "zh": 1})
    small = ask(question)
    assert small.sections.direct_more, "the question's answer has several sentences"
    first = small.sections.direct_answer
    assert first and whole.sections.direct_answer.startswith(first)
    assert first in small.text
    # every figure of the first sentence is in the short form's figures, bound as in the whole answer
    keys = small.sections.figure_keys.get(first, [])
    short_keys = [f.key for f in small.figures]
    assert all(k in short_keys for k in keys)
    monkeypatch.setattr(compose_module, "SHORT_PROSE_CHARS", {"en": 100_000, "zh": 100_000})
    # nothing past the budget is folded; only what the full answer alone carries is (the first
    # cause in full, behind the gist that leads)
    big = ask(question)
    causes = [get_entry(c.id).text("cause", lang) for c in big.citations if c.id.startswith("pb-")]
    assert all(any(cause in x for cause in causes) for x in big.sections.direct_more), big.sections.direct_more
