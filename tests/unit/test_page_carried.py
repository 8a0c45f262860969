"""Settings carried from earlier messages are shown marked (answer and panel), never as typed,
whatever the reader calls them ("history" or "carried"); absent provenance shows nothing."""

from __future__ import annotations

import pytest

from bot.answer import Answer, Recommendation, Sections, SetupItem
from bot.surfaces.web import answer_view as view
from tests.lazy import lazy_module

panel = lazy_module("bot.surfaces.web.panel")  # gradio: imported by the first test that uses it


def _answer(source: str, language: str = "en") -> Answer:
    # model_construct: "carried" is the reader's coming name for "history", not yet in the contract
    items = [SetupItem.model_construct(field="model", value="Mistral-7B", source="stated", span="Mistral-7B"),
             SetupItem.model_construct(field="finetune", value="lora", source=source, span=None),
             SetupItem.model_construct(field="seq_len", value=8192, source=source, span=None),
             SetupItem.model_construct(field="precision", value="bf16-mixed", source="assumed", span=None)]
    return Answer.model_construct(language=language, status="ok", intent="recommend", missing=[], questions=[],
                  numbers={}, citations=[], text="", figures=[], setup={"model": "Mistral-7B", "finetune": "lora", "seq_len": 8192,
                                            "precision": "bf16-mixed"},
                  provenance={i.field: i.source for i in items},
                  recommendation=Recommendation(strategy="ddp"),
                  sections=Sections.model_construct(**{**Sections().model_dump(), "headline": "h", "setup_read": items}))


@pytest.mark.parametrize("source", ["history", "carried"])
@pytest.mark.parametrize(("language", "label", "names"), [
    ("en", "Carried from earlier messages", ("fine-tune mode lora", "sequence length 8192")),
    ("zh", "沿用前面消息的设置", ("微调方式 lora", "序列长度 8192")),
])
def test_carried_fields_are_named_apart_from_what_was_typed(source, language, label, names):
    answer = _answer(source, language)
    markup = view.answer_html(answer, answer_id="x1")
    carried = markup[markup.index("sw-carried-line"):]
    assert label in carried and all(n in carried for n in names), carried[:300]
    setup_line = markup[markup.index("sw-setup-line"):markup.index("sw-carried-line")]
    assert "lora" not in setup_line and "8192" not in setup_line, setup_line
    sources = view.field_sources(answer)
    assert panel.carried_fields(sources) == ["finetune", "seq_len"]
    marks = {name: u for name, u in zip(panel.PANEL_FIELDS, panel.panel_updates(answer, sources), strict=True)}
    assert marks["seq_len"]["elem_classes"] == ["sw-carried"] and marks["precision"]["elem_classes"] == ["sw-assumed"]
    assert ("沿用" if language == "zh" else "Drop carried settings") in panel.panel_note(answer, sources)


def test_no_provenance_no_carried_line():
    answer = _answer("stated")
    assert "sw-carried-line" not in view.answer_html(answer)
    assert panel.carried_fields(view.field_sources(answer)) == []


@pytest.mark.parametrize(("hub_id", "language", "words"), [
    ("meta-llama/Llama-3.1-8B", "en", "not in this machine's Hub cache"),
    ("Qwen/Qwen2.5-7B", "zh", "Hub 缓存里没有"),
    ("mistralai/Mistral-7B-v0.3", "en", "paste its config.json"),
])
def test_a_hub_id_missing_offline_says_where_it_looked(hub_id, language, words):
    from bot.catalog.hf_config import OFFLINE_MESSAGE, ConfigError

    message = panel.model_box_error(ConfigError(OFFLINE_MESSAGE), hub_id, language)
    assert words in message and hub_id in message and "--config" not in message
    other = panel.model_box_error(ValueError("that is not a config.json (over 2 MB)"), "{...}", language)
    assert "over 2 MB" in other
