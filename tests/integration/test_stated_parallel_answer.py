"""End to end (the knowledge index, the whole pipeline): a stated tensor/pipeline degree shows in the
setup line and the answer computes that plan (issue 29), in both languages."""

from __future__ import annotations

import pytest


@pytest.mark.slow
@pytest.mark.parametrize("question,setup_bit,plan_words", [
    ("Full fine-tune Llama-3-70B on 4 nodes of 8x H100 with TP=8, seq 8192, bf16. How much memory per GPU?",
     "TP 8", "Your stated plan: tensor parallelism 8"),
    ("我们用 16 张 A800 训练 Qwen2.5-72B 全参，张量并行 4 路，流水线并行 2 路，应该用什么策略？",
     "TP 4，PP 2", "按你给的并行方案：机内张量并行 4、流水线并行 2"),
])
def test_a_stated_degree_is_shown_and_computed(question, setup_bit, plan_words):
    from bot import ask

    answer = ask(question)
    assert setup_bit in answer.full_text
    assert plan_words in answer.full_text
    assert answer.numbers["parallel.tp"] in (4, 8)
