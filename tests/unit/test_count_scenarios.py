"""An unstated GPU count is not computed silently as 8: the answer gives one line per count on
one node (1, 2, 4, 8 of the stated card), each bound to a calculator citation that recomputes,
and asks for the count. A stated or implied count gets no such lines."""

from __future__ import annotations

import pytest

from bot import ask
from evals.harness import Case
from evals.metrics import check_calc_citations

UNSTATED = [
    ("Llama-2-13B full fine-tune on A100 80GB cards: DDP or FSDP?", "en"),
    ("We want to fine-tune Qwen2.5-7B (full) on H100s; which strategy?", "en"),
    ("Mistral 7B full parameter training on L40S GPUs, what should we use?", "en"),
    ("用 A800 80G 全参微调 Qwen2.5-7B，用什么并行方式？", "zh"),
    ("想在 4090 上 LoRA 微调 Llama-2-13B，DDP 还是 FSDP？", "zh"),
]


@pytest.mark.parametrize("question,lang", UNSTATED)
def test_an_unstated_count_is_answered_per_count(question, lang):
    a = ask(question)
    assert a.language == lang
    assert a.provenance.get("gpu_count") == "assumed"
    titles = [c.title for c in a.citations if c.kind == "calc" and " x " in c.title]
    assert [t.split(": ", 1)[1].split(" x ")[0] for t in titles] == ["1", "2", "4", "8"]
    assert "gpu_count" in a.questions
    case = Case(id="t", turns=[question], expect={})
    assert check_calc_citations(case, a).passed, check_calc_citations(case, a).detail


@pytest.mark.parametrize("question", [
    "Llama-2-13B full fine-tune on 8x A100 80GB: DDP or FSDP?",
    "我只有一张 4090，能 LoRA 微调 7B 吗？",
    "两张 A100 80G 全参微调 Qwen2.5-7B 用什么？",
])
def test_a_stated_or_implied_count_gets_no_per_count_lines(question):
    a = ask(question)
    assert not [c for c in a.citations if c.kind == "calc" and " x " in c.title]
