"""The renderer's labels are data (issue 28, "wording is data"): the table's header, the section
headings, the setup and read-back lines, the questions, field names, notices and run-option
labels come from the message catalogs (``render.*``), in both languages, and bot/render.py
writes none of them itself."""

from __future__ import annotations

from pathlib import Path

import pytest

import bot.render as render_module
from bot.answer.catalog import catalog, check_catalogs
from bot.compose import compose
from bot.core.setup import TrainingSetup, resolve_setup
from bot.decide import decide
from bot.evidence import evidence_for_resolved
from bot.render import field_name_text, notice_text, question_text

SOURCE = Path(render_module.__file__).read_text(encoding="utf-8")


def test_the_catalogs_agree_and_render_py_writes_no_label():
    assert check_catalogs() == []
    for label in ("| strategy |", "| 策略 |", "**Why**", "**为什么**", "**What would change it**", "每卡显存与速度",
                  "How big is the model", "模型多大", "配置：", "读到：", "Run options assumed",
                  "Your message was very long", "gradient_as_bucket_view on", "no gradient accumulation"):
        assert label not in SOURCE, label


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_questions_fields_and_notices_come_from_the_catalog(lang):
    messages = catalog(lang)
    for key, text in messages.items():
        if key.startswith("render.question.") and "{{" not in text:
            assert question_text(key.removeprefix("render.question."), lang) == text
        if key.startswith("render.field."):
            assert field_name_text(key.removeprefix("render.field."), lang) == text
        if key.startswith("render.notice."):
            assert notice_text(key.removeprefix("render.notice."), lang) == text
    asked = question_text("some_new_field", lang)  # a field without its own question still gets one
    assert "some new field" in asked
    assert notice_text("a_new_notice", lang) == "a_new_notice"


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_an_answer_prints_the_catalogs_headings(lang):
    ev = evidence_for_resolved(resolve_setup(TrainingSetup(model="Llama-2-7B", gpu="A100 40GB SXM", gpu_count=8)),
                               language=lang)
    answer = compose(ev, decide(ev))
    messages = catalog(lang)
    assert messages["render.table_title"] in answer.text
    assert messages["render.table_head"] in answer.text
    assert messages["render.setup.prefix"] in answer.text
    assert messages["render.why"] in answer.full_text and messages["render.why"] not in answer.text
    assert messages["render.folded"] in answer.text
