"""The chat page's pieces without a server: input handling, escaping, sources, chart, setup panel.

The browser, ``gradio_client`` and load tests are in ``test_webui_live.py``.
"""

from __future__ import annotations

import io
import warnings

import pytest

from bot.answer import Answer, Citation, Recommendation
from tests.lazy import lazy_module

webui = lazy_module("bot.surfaces.webui")  # gradio: imported by the first test that uses it

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
    assert "&lt;b&gt;FSDP&lt;/b&gt;" in html and "<b>FSDP" not in html
    assert "forum-06" not in html and ">forum<" in html  # no internal id; the kind in words
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
    assert ticks[0].startswith("DDP") and "★" in ticks[1]


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


def test_empty_number_fields_are_unknown_not_zero():
    values = webui.panel_values({})
    assert all(v in ("", None, False) for v in values)
    assert [values[webui.PANEL_FIELDS.index(f)] for f in webui.NUMBER_FIELDS] == [""] * len(webui.NUMBER_FIELDS)
    data, problems = webui.read_panel(values)
    assert problems == [] and all(data[f] is None for f in webui.NUMBER_FIELDS)


def test_unreadable_numbers_get_a_message_each():
    values = webui.panel_values({})
    values[webui.PANEL_FIELDS.index("gpu_count")] = "eight"
    values[webui.PANEL_FIELDS.index("seq_len")] = "10.5"
    _, problems = webui.read_panel(values)
    assert len(problems) == 2 and "not a number" in problems[0] and "whole number" in problems[1]


def test_an_edit_sends_only_stated_and_changed_fields():
    # The answer showed assumed precision/seq_len; the user changes only the GPU count.
    shown = {"model": "GPT-2 XL", "gpu": "RTX 4090 24GB", "gpu_memory_gb": 24.0, "gpu_count": 4, "nodes": 1,
             "intra_node_link": "pcie", "inter_node_link": "none", "precision": "bf16-mixed",
             "seq_len": 1024, "micro_batch": 1, "activation_checkpointing": False}
    stated = {"model": "GPT-2 XL", "gpu": "RTX 4090 24GB", "gpu_count": 4}
    values = webui.panel_values({**shown, "gpu_count": 16, "nodes": 2})
    data, changed, problems = webui.edited_setup(values, stated, shown)
    assert problems == [] and set(changed) == {"gpu_count", "nodes"}
    # "none" was the one-node link: with two nodes it is assumed again (InfiniBand), never kept.
    assert data == {"model": "GPT-2 XL", "gpu": "RTX 4090 24GB", "gpu_count": 16, "nodes": 2}


def test_nothing_changed_means_no_edit():
    shown = {"model": "GPT-2 XL", "gpu_count": 4}
    values = webui.panel_values(shown)
    _, changed, _ = webui.edited_setup(values, {"model": "GPT-2 XL"}, shown)
    assert changed == []


def test_panel_rejects_wrong_types_with_a_validation_error():
    from pydantic import ValidationError

    values = webui.panel_values({"precision": "fp8-magic"})
    with pytest.raises(ValidationError):
        webui.setup_from_panel(values)


def test_page_builds_with_the_chat_api():
    demo = webui.build_demo()
    names = [d.api_name for d in demo.fns.values() if d.api_name]
    assert "chat" in names


def test_a_changed_gpu_drops_the_memory_and_link_it_defines_unless_changed_too():
    shown = {"gpu": "RTX 4090 24GB", "gpu_memory_gb": 24, "intra_node_link": "pcie", "gpu_count": 8}
    stated = dict(shown)
    values = webui.panel_values({**shown, "gpu": "A100 80GB PCIe", "intra_node_link": "nvlink"})
    data, _, _ = webui.edited_setup(values, stated, shown)
    assert data["intra_node_link"] == "nvlink" and "gpu_memory_gb" not in data
    values = webui.panel_values({**shown, "gpu": "A100 80GB SXM"})
    data, _, _ = webui.edited_setup(values, stated, shown)
    assert "intra_node_link" not in data and "gpu_memory_gb" not in data


# -- messages and answers -------------------------------------------------------------------------


def test_user_markdown_and_images_stay_text():
    from bot.surfaces.web.answer_view import user_html

    shown = user_html("![t](http://example.com/x.png)\n# Heading **b** <img src=x>")
    assert "<img" not in shown and "&lt;img" in shown and "![t](http://example.com/x.png)" in shown
    assert "\n" not in shown and "<br>" in shown  # one line: markdown never reads it
    assert 'lang="en"' in shown and 'lang="zh-CN"' in user_html("7B模型用DDP还是FSDP？")


def test_answer_html_collapses_long_parts_and_names_assumed_fields():
    from bot.answer import HowTo, Sections, SetupItem, TableRow
    from bot.surfaces.web.answer_view import answer_html

    sections = Sections(
        headline="**Use FSDP** [1]", table=[TableRow(strategy="ddp", label="DDP", total_gib=34.8, fits=False),
                                           TableRow(strategy="fsdp_full_shard", label="FSDP", total_gib=7.3,
                                                    fits=True, chosen=True)],
        setup_read=[SetupItem(field="model", value="GPT-2 XL", source="stated"),
                    SetupItem(field="seq_len", value=1024, source="assumed"),
                    SetupItem(field="precision", value="bf16-mixed", source="assumed")],
        reasons=["DDP does not fit [1]."], howto=[HowTo(title="Run", language="bash", code="torchrun a\n\nb")])
    out = answer_html(_answer(sections=sections), answer_id="x9")
    assert out.index("Use FSDP") < out.index("sw-assumed-line") < out.index("<table")
    assert "sequence length 1024</span>" in out and "precision bf16-mixed</span>" in out
    assert "Setup: model GPT-2 XL</p>" in out
    assert '<details class="sw-more sw-howto-part"><summary>How to run it' in out
    assert "sw-sources-part" in out and "\n" not in out and "torchrun a&#10;&#10;b" in out
    assert 'lang="en"' in out and "sw-a-x9" in out


def test_answer_html_falls_back_to_text_with_forum_and_howto_collapsed():
    from bot.surfaces.web.answer_view import answer_html

    text = ("**Recommendation: FSDP**\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n**What the forum said**\n- x [2]\n\n"
            "**How to run it**\n\n```bash\ntorchrun x\n```")
    out = answer_html(_answer(text=text, language="zh"), stated={"model"})
    assert out.index("Recommendation") < out.index("<table") < out.index("<details class=\"sw-more")
    assert out.count('class="sw-more sw-fallback-part"') == 2 and 'lang="zh-CN"' in out


def test_share_link_round_trip_keeps_only_valid_stated_fields():
    from bot.surfaces.web.share import setup_from_query, setup_query

    q = setup_query({"model": "GPT-2 XL", "gpu_count": 4, "activation_checkpointing": True}, "zh")
    assert q.startswith("?model=GPT-2+XL&gpu_count=4&activation_checkpointing=on")
    from urllib.parse import parse_qsl

    data, lang, question = setup_from_query(dict(parse_qsl(q[1:])) | {"precision": "fp8-magic"})
    assert data == {"model": "GPT-2 XL", "gpu_count": 4, "activation_checkpointing": True}
    assert lang == "zh" and question is None


def test_conversation_answers_in_order_and_ignores_a_double_submit():
    from bot.surfaces.web.conversation import Conversation, Exchange

    conv = Conversation()
    assert conv.add(Exchange(kind="ask", user_html="a", payload=None, raw="a"))
    assert not conv.add(Exchange(kind="ask", user_html="a", payload=None, raw="a"))  # double click
    assert conv.add(Exchange(kind="ask", user_html="b", payload=None, raw="b"))
    token = conv.claim()
    assert token is not None and conv.claim() is None  # one worker per tab
    first = conv.next_pending(token)
    first.answer_html = "A"
    conv.add(Exchange(kind="ask", user_html="c", payload=None, raw="c"))  # sent while answering
    second = conv.next_pending(token)
    assert second.user_html == "b"
    second.answer_html = "B"
    conv.next_pending(token).answer_html = "C"
    assert conv.next_pending(token) is None and conv.claim() is not None
    assert [m["content"] for m in conv.messages()] == ["a", "A", "b", "B", "c", "C"]


def test_plotly_chart_has_hover_with_gib_and_source_and_readable_ticks():
    fig = webui.plotly_figure(_answer())
    assert len(fig.data) >= 5
    assert "GiB" in fig.data[0].hovertemplate and "source" in fig.data[0].hovertemplate
    assert fig.layout.xaxis.tickfont.size >= 12 and fig.layout.yaxis.tickfont.size >= 12
    assert "82.9 GiB" in fig.data[0].y[0]  # each total sits beside its bar's name, not on the capacity line
    assert "recommended" in webui.chart_summary(_answer())


# -- the model box: Hub id or config.json --------------------------------------------------------

LLAMA_CONFIG = {"model_type": "llama", "hidden_size": 4096, "intermediate_size": 11008, "num_hidden_layers": 32,
                "num_attention_heads": 32, "num_key_value_heads": 32, "vocab_size": 32000,
                "max_position_embeddings": 4096, "tie_word_embeddings": False}


def test_model_box_takes_pasted_config_json_and_never_a_server_path(tmp_path):
    import json

    spec = webui.model_from_box(json.dumps(LLAMA_CONFIG))
    assert spec is not None and 6.5 < spec.params_b < 7.0  # Llama-2-7B's shape
    data = {"model": "{...}", "gpu_count": 8}
    note = webui.apply_model_config(data, spec)
    assert "model" not in data and data["params_b"] == round(spec.params_b, 3) and "B parameters" in note
    secret = tmp_path / "config.json"
    secret.write_text(json.dumps(LLAMA_CONFIG))
    assert webui.model_from_box(str(secret)) is None  # a path typed on the page is not read
    assert webui.model_from_box("Llama-2-7B") is None  # catalog names stay names


def test_model_box_hub_id_offline_says_what_to_do(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("SHARDWISE_DATA_DIR", str(tmp_path))
    with pytest.raises(Exception) as err:
        webui.model_from_box("some-org/never-cached-model")
    assert "config" in str(err.value).lower()


def test_strategy_by_precision_table_comes_from_the_calculator():
    from bot.assistant import answer_for_setup
    from bot.calc import estimate
    from bot.core.setup import TrainingSetup, resolve_setup

    answer = answer_for_setup(TrainingSetup(model="GPT-2 XL", gpu="RTX 4090 24GB", gpu_count=4), "en",
                              with_knowledge=False)
    table, quote = webui.precision_table(answer)
    fp32 = estimate(resolve_setup(TrainingSetup(model="GPT-2 XL", gpu="RTX 4090 24GB", gpu_count=4,
                                                precision="fp32", seq_len=answer.setup["seq_len"]))).numbers()
    assert f"{fp32['memory.ddp.total_gib']:.1f}" in table
    assert "<th>fp32</th>" in table and "<th>bf16-mixed</th>" in table and "fp32" in quote


def test_howto_comes_from_the_answer_sections_only():
    from bot.answer import HowTo, Sections

    answer = _answer(sections=Sections(headline="x", howto=[HowTo(title="Launch", language="bash",
                                                                   code="torchrun --nproc_per_node 8 train.py")]))
    assert "torchrun --nproc_per_node 8 train.py" in webui.howto_code(answer)
    assert "Fill in" in webui.howto_code(_answer())  # no sections.howto: nothing is recomputed


def test_assumed_line_folds_run_options_and_leaves_lora_out_of_full_fine_tunes():
    from bot.answer import SetupItem
    from bot.assistant import answer_for_setup
    from bot.core.setup import TrainingSetup
    from bot.surfaces.web.answer_view import assumed_html, field_sources

    answer = answer_for_setup(TrainingSetup(model="GPT-2 XL", gpu="RTX 4090 24GB", gpu_count=4), "en")
    read = [i for i in answer.sections.setup_read if i.field not in ("lora_rank", "torch_compile")]
    read += [SetupItem(field="lora_rank", value=16, source="assumed"),
             SetupItem(field="torch_compile", value=False, source="assumed")]
    answer = answer.model_copy(update={"sections": answer.sections.model_copy(update={"setup_read": read})})
    line = assumed_html(answer, field_sources(answer))
    head, _, folded = line.partition("<details")
    assert "precision bf16-mixed" in head and "micro-batch" in head  # the setup's own fields first
    assert "torch.compile off" in folded and "run option" in folded  # named, folded
    assert "LoRA rank" not in line  # a full fine-tune has no LoRA rank
    lora = answer.model_copy(update={"setup": {**answer.setup, "finetune": "lora"}})
    assert "LoRA rank 16" in assumed_html(lora, field_sources(lora))


def test_run_options_are_edited_in_the_panel_and_reach_the_calculator():
    """Issue 14: the page's setup panel carries the run options (fused AdamW, torch.compile, ...)."""
    from bot.assistant import answer_for_setup
    from bot.core.setup import TrainingSetup

    shown = {"model": "Llama-2-7B", "gpu": "A100 80GB SXM", "gpu_count": 8, "optimizer_impl": "foreach",
             "torch_compile": False, "ddp_bucket_view": False, "grad_accum_steps": 1}
    stated = {"model": "Llama-2-7B", "gpu": "A100 80GB SXM", "gpu_count": 8}
    values = webui.panel_values({**shown, "optimizer_impl": "fused", "ddp_bucket_view": True, "grad_accum_steps": 4})
    data, changed, problems = webui.edited_setup(values, stated, shown)
    assert problems == [] and set(changed) == {"optimizer_impl", "ddp_bucket_view", "grad_accum_steps"}
    answer = answer_for_setup(TrainingSetup(**data), language="en")
    assert answer.setup["optimizer_impl"] == "fused" and answer.setup["ddp_bucket_view"] is True
    assert answer.setup["grad_accum_steps"] == 4
    # an unreadable step count is a message, not a crash
    bad = webui.panel_values({**shown, "grad_accum_steps": 1})
    bad[webui.PANEL_FIELDS.index("grad_accum_steps")] = "four"
    assert webui.read_panel(bad)[1]


def test_a_panel_edit_and_a_share_link_keep_the_frameworks_assumed_checkpointing():
    """LlamaFactory turns activation checkpointing on by default: the answer assumes it, and an
    edit of another field (or a colleague opening the share link) must not silently turn it off."""
    from urllib.parse import parse_qsl

    from bot.assistant import answer_for_setup
    from bot.core.setup import TrainingSetup
    from bot.surfaces.web.conversation import Conversation, Exchange
    from bot.surfaces.web.share import framework_from_query, setup_from_query, setup_query

    conv = Conversation()
    question = "LlamaFactory, finetuning_type: full, Qwen2.5-7B on 4 x A100 40GB, cutoff_len: 2048. DDP or FSDP?"
    first = webui.run_exchange(conv, Exchange(kind="ask", user_html="", payload=(question, None), raw=question))
    assert first is not None and first.setup["activation_checkpointing"] is True
    assert conv.framework == "llamafactory" and "activation_checkpointing" not in conv.stated

    values = webui.panel_values({**conv.shown, "gpu_count": 8})
    data, changed, _ = webui.edited_setup(values, conv.stated, conv.shown)
    assert changed == ["gpu_count"] and "activation_checkpointing" not in data
    edited = webui.run_exchange(conv, Exchange(kind="edit", user_html="", payload={"setup": data, "language": "en"}))
    assert edited is not None and edited.setup["gpu_count"] == 8
    assert edited.setup["activation_checkpointing"] is True
    assert "LlamaFactory turns it on" in edited.text
    assert webui.view.field_sources(edited, set(conv.stated))["activation_checkpointing"] == "assumed"

    # the share link names the framework; opening it assumes the same default
    params = dict(parse_qsl(setup_query(conv.stated, "en", None, conv.framework)[1:]))
    assert framework_from_query(params) == "llamafactory"
    assert framework_from_query({"framework": "something-else"}) is None
    shared, _, _ = setup_from_query(params)
    assert "activation_checkpointing" not in shared
    opened = answer_for_setup(TrainingSetup(**shared), "en", framework=framework_from_query(params))
    assert opened.setup["activation_checkpointing"] is True and opened.numbers == edited.numbers

    # the user turns it off in the panel: that is their value, not the framework's
    off = webui.panel_values({**conv.shown, "activation_checkpointing": False})
    data, changed, _ = webui.edited_setup(off, conv.stated, conv.shown)
    unchecked = webui.run_exchange(conv, Exchange(kind="edit", user_html="", payload={"setup": data, "language": "en"}))
    assert unchecked is not None and unchecked.setup["activation_checkpointing"] is False
