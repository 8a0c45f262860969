"""The answer's read-back line (issue 11): what was read, the user's words it came from, and the
run options assumed at PyTorch's defaults (issue 14). Every figure in it is bound and traceable."""

from __future__ import annotations

import pytest

from bot import ask
from bot.answer import Answer, Recommendation, Sections, SetupItem
from bot.render import render_markdown
from evals.harness import Case
from evals.metrics import check_number_traceability


def _read_line(answer: Answer) -> str:
    return next(line for line in answer.full_text.split("\n") if line.startswith(("Read:", "读到：")))


@pytest.fixture(scope="module")
def zh_config_answer():
    question = "用LlamaFactory全参微调Qwen2.5-7B，训练环境：4 * A800 80G\n--cutoff_len 1536\nper_device_train_batch_size: 2"
    return question, ask(question)


def test_the_read_line_quotes_the_users_words(zh_config_answer):
    question, answer = zh_config_answer
    line = _read_line(answer)
    assert "4 张卡 来自 `4 * A800 80G`" in line
    assert "序列长度 1536 来自 `--cutoff_len 1536`（配置）" in line
    for item in answer.sections.setup_read:  # a span is always the user's own text
        assert item.span is None or item.span in question


def test_run_options_left_at_defaults_are_named(zh_config_answer):
    _, answer = zh_config_answer
    assumed = {i.field for i in answer.sections.setup_read if i.source == "assumed"}
    assert {"optimizer_impl", "ddp_bucket_view", "torch_compile"} <= assumed
    line = _read_line(answer)
    assert "运行选项按 PyTorch 默认假设" in line and "AdamW foreach 实现" in line and "gradient_as_bucket_view 关" in line


def test_a_stated_option_is_read_not_assumed():
    answer = ask("Llama-2-7B full fine-tune on 8x A100 80GB with fused AdamW and torch.compile, seq 2048")
    read = {i.field: i for i in answer.sections.setup_read}
    assert read["optimizer_impl"].value == "fused" and read["optimizer_impl"].source != "assumed"
    assert "foreach AdamW step" not in answer.full_text


def test_every_figure_of_the_line_is_bound_and_traceable(zh_config_answer):
    question, answer = zh_config_answer
    result = check_number_traceability(Case(id="zh", turns=[question], expect={}), answer)
    assert result.passed, result.detail
    assert all(f.key != "unbound" for f in answer.figures if f.printed in ("1536", "4"))


def test_a_figure_bound_to_the_users_words_must_be_in_them(zh_config_answer):
    question, answer = zh_config_answer
    # the same answer checked against a question that never said 1536: the quoted span is not its
    result = check_number_traceability(Case(id="zh", turns=[question.replace("1536", "2048")], expect={}), answer)
    assert not result.passed


def test_hostile_spans_cannot_break_out_of_the_code_span():
    answer = Answer(language="en", setup={"seq_len": 4096}, recommendation=Recommendation(strategy="none"),
                    sections=Sections(setup_read=[
        SetupItem(field="seq_len", value=4096, source="stated", span="seq `4096` " + "x" * 200)]))
    line = _read_line(render_markdown(answer))
    assert line.count("`") == 2 and "…" in line and len(line) < 120


def test_without_a_computed_setup_only_what_was_read_is_shown():
    answer = ask("What is the difference between FSDP1 and FSDP2?")
    assert "Run options assumed" not in answer.full_text
