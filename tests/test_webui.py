"""The chat page's pieces without a server: input handling, escaping, sources, chart, setup panel.

The browser, ``gradio_client`` and load tests are in ``test_webui_live.py``.
"""

from __future__ import annotations

import io
import warnings

import pytest

from bot import webui
from bot.answer import Answer, Citation, Recommendation

COMPONENTS = ("params_gib", "grads_gib", "optimizer_gib", "activations_gib", "buffers_gib")


def _answer(language="en", capacity=80.0, **extra) -> Answer:
    """A hand-made answer with a known breakdown, to check how the page draws it."""
    breakdown = {"ddp": (12.6, 12.6, 50.2, 6.0, 1.5), "fsdp_full_shard": (1.6, 1.6, 6.3, 6.0, 3.1)}
    numbers: dict = {}
    for strategy, values in breakdown.items():
        numbers.update({f"memory.{strategy}.{k}": v for k, v in zip(COMPONENTS, values, strict=True)})
        numbers[f"memory.{strategy}.total_gib"] = round(sum(values), 2)
    data = dict(language=language, setup={"model": "Llama-2-7B", "gpu_memory_gb": capacity, "gpu_count": 8},
                recommendation=Recommendation(strategy="fsdp_full_shard"), numbers=numbers,
                citations=[Citation(n=1, id="forum-06", kind="forum", title="Answer <6>",
                                    url="https://example.org/t?a=1&b=2", quote='He said "<b>FSDP</b>"\nline 2')],
                text="Use **FSDP** [1].")
    data.update(extra)
    return Answer(**data)


# -- input ------------------------------------------------------------------------------------


@pytest.mark.parametrize("raw", ["", "   \n\t ", None])
def test_empty_message_gets_a_notice_and_no_question(raw):
    text, notice = webui.prepare_message(raw)
    assert text == ""
    assert "question" in notice


def test_huge_paste_is_cut_with_a_notice_giving_both_sizes():
    raw = "DDP or FSDP for a 7B model? " + "x" * 100_000
    text, notice = webui.prepare_message(raw)
    assert len(text) == webui.MAX_MESSAGE_CHARS
    assert text.startswith("DDP or FSDP for a 7B model?")
    assert f"{len(raw):,}" in notice and f"{webui.MAX_MESSAGE_CHARS:,}" in notice
    shown = webui.echo(raw)
    assert len(shown) < webui.ECHO_CHARS + 40 and "chars]" in shown


def test_chinese_paste_notice_is_chinese():
    _, notice = webui.prepare_message("7B模型用DDP还是FSDP？" * 2000)
    assert "字符" in notice


def test_ordinary_message_passes_unchanged():
    assert webui.prepare_message("  DDP or FSDP?  ") == ("DDP or FSDP?", None)


def test_user_markup_becomes_visible_text():
    shown = webui.echo('<img src=x onerror="alert(1)"><script>window.x=1</script>')
    assert "<" not in shown and "&lt;script&gt;" in shown


def test_answer_text_markup_is_inert_but_code_is_kept():
    md = "model <img src=x onerror=alert(1)> and `a<b` and\n```python\nif x < 3: pass\n```\n"
    out = webui.inert_markdown(md)
    assert "<img" not in out and "&lt;img" in out
    assert "`a<b`" in out and "if x < 3" in out


# -- sources ----------------------------------------------------------------------------------


def test_sources_are_details_entries_with_every_field_escaped():
    html = webui.sources_html(_answer().citations)
    assert html.count("<details") == 1 and "<summary>[1] Answer &lt;6&gt;" in html
    assert "forum-06" in html and "&lt;b&gt;FSDP&lt;/b&gt;" in html and "<b>FSDP" not in html
    assert 'href="https://example.org/t?a=1&amp;b=2"' in html
    assert "\n" not in html  # a blank line would break markdown's raw-HTML block


def test_non_http_urls_are_not_links():
    cite = Citation(n=2, id="x", kind="doc", title="t", url="javascript:alert(1)")
    html = webui.sources_html([cite])
    assert "href" not in html and "javascript:alert(1)" in html


def test_answer_markdown_puts_notice_text_and_sources_in_order():
    md = webui.answer_markdown(_answer(), notice="cut <here>")
    assert md.index("cut &lt;here&gt;") < md.index("Use **FSDP** [1].") < md.index("<details")


def test_api_markdown_has_no_html():
    md = webui.answer_plain_markdown(_answer())
    assert "<details" not in md and "[1] Answer <6> (forum: forum-06)" in md


# -- chart ------------------------------------------------------------------------------------


def _bars(fig):
    ax = fig.axes[0]
    return ax, [c for c in ax.containers]


def test_chart_stacks_each_component_and_draws_capacity_from_zero():
    answer = _answer()
    fig = webui.memory_figure(answer)
    ax, containers = _bars(fig)
    assert len(containers) == 5  # params, grads, optimizer, activations, buffers
    ddp_top = sum(c.patches[0].get_height() for c in containers)
    assert ddp_top == pytest.approx(answer.numbers["memory.ddp.total_gib"])
    assert containers[2].patches[0].get_height() == pytest.approx(50.2)  # optimizer, DDP
    assert containers[2].patches[0].get_y() == pytest.approx(12.6 + 12.6)  # stacked on params+grads
    assert ax.get_ylim()[0] == 0
    assert ax.get_ylim()[1] > answer.numbers["memory.ddp.total_gib"]
    capacity_lines = [ln for ln in ax.get_lines() if list(ln.get_ydata()) == [80.0, 80.0]]
    assert capacity_lines
    ticks = [t.get_text() for t in ax.get_xticklabels()]
    assert ticks[0] == "DDP" and "★" in ticks[1]


def test_chart_notes_a_far_bigger_card_instead_of_flattening_the_bars():
    answer = _answer(capacity=1024.0)
    ax = webui.memory_figure(answer).axes[0]
    assert ax.get_ylim()[1] < 2 * answer.numbers["memory.ddp.total_gib"]
    assert not [ln for ln in ax.get_lines() if list(ln.get_ydata()) == [1024.0, 1024.0]]
    assert any("1024 GiB" in t.get_text() for t in ax.texts)


def test_chart_in_chinese_renders_without_missing_glyphs():
    if webui.cjk_font() is None:
        pytest.skip("no CJK font installed (Debian: fonts-noto-cjk); the chart falls back to English")
    fig = webui.memory_figure(_answer(language="zh"))
    assert "每卡" in fig.axes[0].get_title()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # matplotlib warns "Glyph ... missing from font(s)"
        fig.savefig(io.BytesIO(), format="png")


def test_no_chart_without_memory_numbers():
    answer = _answer(numbers={}, recommendation=Recommendation(strategy="out_of_scope"))
    assert webui.memory_figure(answer) is None


# -- setup panel ------------------------------------------------------------------------------


def test_panel_round_trip_drops_sizes_a_catalog_entry_defines():
    values = webui.panel_values({"model": "Llama-2-13B", "params_b": 6.74, "gpu": "A100 80GB SXM",
                                 "gpu_memory_gb": 80, "gpu_count": 16.0, "nodes": 2.0, "seq_len": 4096.0,
                                 "activation_checkpointing": True, "precision": "bf16-mixed"})
    setup = webui.setup_from_panel(values)
    assert setup.model == "Llama-2-13B" and setup.params_b is None  # the old 7B size must not stick
    assert setup.gpu_memory_gb is None and setup.gpu == "A100 80GB SXM"
    assert setup.gpu_count == 16 and isinstance(setup.gpu_count, int) and setup.seq_len == 4096
    assert setup.activation_checkpointing is True


def test_panel_keeps_size_when_no_model_is_chosen():
    values = webui.panel_values({"params_b": 30.0, "gpu_memory_gb": 48.0, "gpu_count": 4})
    setup = webui.setup_from_panel(values)
    assert setup.params_b == 30.0 and setup.gpu_memory_gb == 48.0 and setup.model is None


def test_panel_rejects_wrong_types_with_a_validation_error():
    from pydantic import ValidationError

    values = webui.panel_values({"precision": "fp8-magic"})
    with pytest.raises(ValidationError):
        webui.setup_from_panel(values)


def test_reanswer_with_bad_panel_value_says_so_without_crashing():
    values = webui.panel_values({"precision": "fp8-magic", "gpu_count": 8})
    outputs = webui.reanswer([], webui.new_session(), *values)
    chat = outputs[0]
    assert chat[-1]["role"] == "assistant" and "invalid" in chat[-1]["content"]


def test_empty_message_through_the_handler_adds_a_notice_only():
    chat, session, cleared, *_ = webui.respond("   ", [], webui.new_session())
    assert [m["role"] for m in chat] == ["assistant"] and "question" in chat[0]["content"]
    assert session["questions"] == [] and cleared == ""


def test_simulate_before_any_question_asks_for_one():
    chat, _ = webui.simulate([], webui.new_session(), progress=lambda *a, **k: None)
    assert "Ask a question first" in chat[-1]["content"]


def test_page_builds_with_the_chat_api():
    demo = webui.build_demo()
    names = [d.api_name for d in demo.fns.values() if d.api_name]
    assert "chat" in names


def test_changing_the_gpu_makes_link_and_memory_follow_it():
    from bot.assistant import answer_for_setup
    from bot.setup import TrainingSetup

    first = answer_for_setup(TrainingSetup(params_b=1.0, gpu="A100 80GB SXM", gpu_count=8))
    assert first.setup["intra_node_link"] == "nvlink" and first.setup["gpu_memory_gb"] == 80
    session = {"questions": [], "answer": first.model_dump()}
    values = webui.panel_values({**first.setup, "gpu": "RTX 4090 24GB"})  # only the dropdown changed
    outputs = webui.reanswer([], session, *values)
    setup = outputs[1]["answer"]["setup"]
    assert setup["gpu"] == "RTX 4090 24GB"
    assert setup["intra_node_link"] == "pcie" and setup["gpu_memory_gb"] == 24


def test_a_link_changed_in_the_same_edit_as_the_gpu_is_kept():
    previous = {"gpu": "RTX 4090 24GB", "gpu_memory_gb": 24, "intra_node_link": "pcie", "gpu_count": 8}
    edited = webui.panel_values({**previous, "gpu": "A100 80GB PCIe", "intra_node_link": "nvlink"})
    followed = dict(zip(webui.PANEL_FIELDS, webui.follow_gpu(edited, previous), strict=True))
    assert followed["intra_node_link"] == "nvlink" and followed["gpu_memory_gb"] is None
    same_gpu = webui.panel_values({**previous, "intra_node_link": "nvlink"})
    assert webui.follow_gpu(same_gpu, previous) == same_gpu  # no GPU change: nothing is touched
