"""An answer reaches the browser in four events (issue 27, the main-thread freeze): the text in
the chat first, then the chart, then the panel with its note, then the how-to, simulate, link and
downloads, so no single browser task has to render them all; the how-to's code is rendered only
while its section is open; and the chart is built so Plotly draws it once (no automargin redraw).

Read from the Blocks app's event graph and the handlers, no server or browser; the browser check
of the same structure is in ``tests/integration/test_page_agrees.py`` and the figures in
``evals/bench_web_load.py --long-tasks``.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from bot.answer import Answer, HowTo, Recommendation, Sections, TableRow
from bot.surfaces import webui
from bot.surfaces.web import chart
from bot.surfaces.web.conversation import Conversation


@pytest.fixture(scope="module")
def events():
    demo = webui.build_demo()
    return {i: f for i, f in demo.fns.items()}


def _ids(fn) -> set[str]:
    return {getattr(o, "elem_id", None) or "" for o in fn.outputs}


def _followers(events, index: int) -> list:
    return [f for f in events.values() if f.trigger_after == index]


def test_every_answer_event_puts_only_the_text_in_the_chat_first(events):
    answers = [(i, f) for i, f in events.items() if getattr(f.fn, "__name__", "") == "process"]
    assert len(answers) >= 6  # ask, Enter, example, re-answer, upload, drop, every panel field, link
    for index, fn in answers:
        assert _ids(fn) == {"sw-chat"}, _ids(fn)
        chart_step = [f for f in _followers(events, index) if getattr(f.fn, "__name__", "") == "show_chart"]
        assert len(chart_step) == 1
        assert _ids(chart_step[0]) == {"sw-chart", "sw-chart-note"}
        chart_index = next(i for i, f in events.items() if f is chart_step[0])
        panel = [f for f in _followers(events, chart_index) if getattr(f.fn, "__name__", "") == "show_panel"]
        assert len(panel) == 1
        assert {"sw-f-model", "sw-f-gpu", "sw-missing-note", "sw-drop-carried"} <= _ids(panel[0])
        panel_index = next(i for i, f in events.items() if f is panel[0])
        details = [f for f in _followers(events, panel_index) if getattr(f.fn, "__name__", "") == "show_details"]
        assert len(details) == 1
        assert {"sw-sim-note", "sw-downloads", "sw-howto-code"} <= _ids(details[0])
        # No step does two of the chart, the panel and the notes (nor the chat again).
        assert not {"sw-chart", "sw-chat", "sw-missing-note"} & _ids(details[0])
        assert not {"sw-chart", "sw-chat", "sw-downloads", "sw-howto-code"} & _ids(panel[0])


def _answer(model: str = "Llama-2-7B") -> Answer:
    numbers = {f"memory.ddp.{k}": 1.0 for k in chart.COMPONENTS} | {"memory.ddp.total_gib": 5.0}
    row = TableRow(strategy="ddp", label="DDP", total_gib=5.0, chosen=True, keys={"total_gib": "memory.ddp.total_gib"})
    return Answer(language="en", setup={"model": model, "gpu_memory_gb": 80.0, "gpu_count": 8},
                  recommendation=Recommendation(strategy="ddp"), numbers=numbers, sections=Sections(table=[row]))


def test_each_step_shows_an_answer_once():
    """A second ``process`` (another event found the tab's worker busy) or a repeated event does
    not redraw the chart or refill the panel for the same answer; a new answer does."""
    conv = Conversation(key="k")
    conv.answer, conv.answer_id = _answer().model_dump(), "x1"
    assert webui._latest(conv, "chart") is not None
    assert webui._latest(conv, "chart") is None
    assert webui._latest(conv, "panel") is not None  # each step on its own
    assert webui._latest(conv, "panel") is None
    assert webui._latest(conv, "details") is not None
    conv.answer, conv.answer_id = _answer("Llama-2-13B").model_dump(), "x2"
    assert webui._latest(conv, "chart").setup["model"] == "Llama-2-13B"


@pytest.mark.parametrize("names", [
    ["DDP<br>150.6 GiB", "FSDP full<br>+ checkpointing ★<br>30.3 GiB"],
    ["DDP<br>155.1 GiB", "FSDP 梯度分片 ★<br>37.0 GiB"],
    ["HSDP<br>+ checkpointing ★<br>30.3 GiB", "FSDP offload<br>23.6 GiB"],
])
def test_the_left_margin_holds_the_longest_name_without_plotly_measuring(names):
    # Widths Chromium drew with Plotly's automargin (px): the margin must hold them.
    drawn = {"+ checkpointing ★": 104.2, "FSDP 梯度分片 ★": 94.9, "FSDP offload": 71.9}
    longest = max((w for text, w in drawn.items() if any(text in n for n in names)), default=60)
    margin = chart.tick_margin(names)
    assert longest + 10 <= margin <= longest + 40, (margin, longest)


def test_the_chart_needs_one_drawing():
    fig = chart.plotly_figure(_answer())
    assert fig.layout.yaxis.automargin is False
    assert fig.layout.margin.l == chart.tick_margin(list(fig.data[0].y))


def _with_howto(code: str) -> Answer:
    answer = _answer()
    answer.sections.howto = [HowTo(title="Launch", language="bash", code=code)]
    return answer


@pytest.mark.parametrize("code", ["torchrun --nproc_per_node 8 train.py", "accelerate launch train.py",
                                  "python -m torch.distributed.run --nnodes 2 train.py"])
def test_the_howto_is_rendered_only_while_its_section_is_open(code):
    request = SimpleNamespace(session_hash=f"howto-{hash(code)}")
    conv = webui.store.reset(request.session_hash)
    conv.answer, conv.answer_id = _with_howto(code).model_dump(), "x1"
    assert webui.detail_outputs(conv, _with_howto(code))[0] == ""  # closed: no code to render
    assert code in webui.show_howto(request)  # opened: the latest answer's code
    assert code in webui.detail_outputs(conv, _with_howto(code))[0]  # and each answer's while open
    webui.hide_howto(request)
    assert webui.detail_outputs(conv, _with_howto(code))[0] == ""


def test_the_howto_opened_before_any_answer_is_empty_and_a_new_chat_keeps_it_open():
    request = SimpleNamespace(session_hash="howto-before")
    webui.store.reset(request.session_hash)
    assert webui.show_howto(request) == ""
    outputs = webui.new_conversation(request)
    assert len(outputs) == 2 + webui.N_PANEL_STEP + webui.N_DETAILS
    assert webui.store.get(request.session_hash).howto_open
