"""What the page says next to the setup panel about how the setup was read (issue 27): a model
the catalog computed with in place of the one written (Qwen2 -> Qwen2.5) is said there, not only
in the download; a value read from a pasted log or config is shown with the text it came from;
and a log's per-step memory figure is never shown as the host's RAM unless the reader says so.

Fake answers (the page shows whatever the reader put in ``sections.setup_read``); the live page
is checked in ``tests/integration/test_page_agrees.py``.
"""

from __future__ import annotations

import pytest

from bot import tools
from bot.answer import Answer, Recommendation, Sections, SetupItem
from bot.surfaces.web import answer_view as view
from bot.surfaces.web import panel


def _answer(items: list[SetupItem], language: str = "en") -> Answer:
    setup = {i.field: i.value for i in items}
    return Answer(language=language, setup=setup, recommendation=Recommendation(strategy="fsdp_full_shard"),
                  sections=Sections(headline="h", setup_read=items))


def _model(written: str, entry: str, language: str = "en") -> Answer:
    return _answer([SetupItem(field="model", value=entry, source="stated", span=written),
                    SetupItem(field="gpu_count", value=8, source="stated", span="8x")], language)


@pytest.mark.parametrize(("written", "entry"), [
    ("Qwen2-7B", "Qwen2.5-7B"), ("qwen2 7b", "Qwen2.5-7B"), ("通义千问2-7B", "Qwen2.5-7B"),
    ("Meta-Llama-3-8B", "Llama-3.1-8B"), ("llama3 8b", "Llama-3.1-8B"), ("vicuna-7b", "Llama-2-7B"),
])
def test_a_model_computed_in_place_of_another_is_said_next_to_the_setup(written, entry):
    assert tools.model_stand_in(written, entry)
    note = panel.panel_note(_model(written, entry), {})
    assert written.split()[0] in note.replace("\\", "") and entry in note.replace("\\", ""), note
    assert "in its place" in note
    zh = panel.panel_note(_model(written, entry, "zh"), {})
    assert "代替计算" in zh and entry in zh.replace("\\", ""), zh


@pytest.mark.parametrize(("written", "entry"), [
    ("Qwen/Qwen2.5-7B-Instruct", "Qwen2.5-7B"), ("llama2 7b", "Llama-2-7B"), ("Llama-2-7b-hf", "Llama-2-7B"),
    ("千问2.5-7B", "Qwen2.5-7B"), ("Mistral-7B-Instruct-v0.3", "Mistral-7B"), ("gpt2-xl", "GPT-2 XL"),
])
def test_the_same_model_written_differently_is_no_substitution(written, entry):
    assert not tools.model_stand_in(written, entry)
    assert panel.stand_in_note(_model(written, entry)) == ""


def test_a_written_name_is_shown_as_text_not_markup():
    note = panel.stand_in_note(_model("Qwen2-7B**<img src=x>**", "Qwen2.5-7B"))
    assert "<img" not in note and "&lt;img" in note and "\\*\\*" in note


@pytest.mark.parametrize(("language", "origin"), [("en", "Read from your log"), ("zh", "从你贴的日志读到")])
def test_a_value_read_from_a_log_is_shown_with_the_log_text(language, origin):
    items = [SetupItem(field="gpu_count", value=8, source="log", span="world_size=8"),
             SetupItem(field="seq_len", value=4096, source="log", span="--max_seq_len 4096"),
             SetupItem(field="micro_batch", value=2, source="stated", span="batch 2")]
    note = panel.panel_note(_answer(items, language), {})
    assert origin in note and "world\\_size=8" in note and "--max\\_seq\\_len 4096" in note, note
    assert "batch 2" not in note  # only what came from the log


@pytest.mark.parametrize("log", ["step 120 loss 2.31 mem=61.2GiB", "iter 50 | mem 61.2 GiB | lr 3e-4",
                                 "显存占用 mem=61.2GiB，第 120 步"])
def test_a_log_memory_figure_the_reader_kept_out_of_the_setup_is_not_host_ram(log):
    """Whatever the reader makes of a per-step memory figure (an observation of the run), the page
    shows host RAM only when the setup has it: no "CPU RAM 61.2" line, chip or note."""
    items = [SetupItem(field="model", value="Llama-2-7B", source="stated", span="Llama-2-7B"),
             SetupItem(field="gpu_count", value=8, source="stated", span="8x")]
    answer = _answer(items)
    shown = view.answer_html(answer) + panel.panel_note(answer, view.field_sources(answer))
    assert "61.2" not in shown and "CPU RAM" not in shown and "内存" not in shown
    stated = _answer([*items, SetupItem(field="cpu_ram_gb", value=512, source="stated", span="512 GB RAM")])
    assert "CPU RAM 512" in view.stated_html(stated)  # host RAM a user states is shown as such


def test_precisions_come_from_the_registry_tool():
    setup = {"model": "Llama-2-7B", "gpu": "A100 80GB", "gpu_count": 8, "nodes": None}
    columns = tools.estimate_precisions(setup, ("bf16-mixed", "fp32"))
    assert set(columns) == {"bf16-mixed", "fp32"}
    for precision, numbers in columns.items():
        direct = tools.estimate_memory(**tools.setup_arguments({**setup, "precision": precision})).numbers
        assert numbers == direct
    # a card without bf16: those columns are left out, the others kept
    v100 = tools.estimate_precisions({**setup, "gpu": "V100 32GB"}, ("bf16-mixed", "fp16-mixed"))
    assert "fp16-mixed" in v100
