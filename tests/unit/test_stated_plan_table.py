"""Beside a stated TP/CP/PP plan the strategy table is pure data parallelism over every GPU, and its
title says so with the plan's own figure (issue 29, brief N1 item 1). Phrasings of our own, both
languages; a full stop right after a degree ("... PP=2.") still reads it."""

from __future__ import annotations

import pytest

from bot import ask
from bot.parse import parse_conversation

STATED = [  # (question, tp, pp, language)
    ("Llama-3-70B full fine-tune on 4 nodes of 8x H100, seq 8192, TP=8 PP=2. DDP or FSDP?", 8, 2, "en"),
    ("Qwen2.5-72B full training on 2 nodes of 8 A800 80GB with --tensor-model-parallel-size 4, seq 4096: "
     "which data-parallel strategy for the rest?", 4, 1, "en"),
    ("Our Llama-3-70B run keeps tensor parallel 8 inside each node on 32 H100s at seq 8192; "
     "is FSDP right over the remaining ranks?", 8, 1, "en"),
    ("Llama-3-70B 全参微调，4 台 8 卡 H100，序列长度 8192，TP=8，PP=2，DDP 还是 FSDP？", 8, 2, "zh"),
    ("Qwen2.5-72B 全参训练，16 张 A800，张量并行 4 路，序列 4096，剩下的用哪种数据并行？", 4, 1, "zh"),
    ("32 张 H100 训练 Llama-3-70B，张量并行 8，流水线并行 2，seq 8192，FSDP 还是 DDP？", 8, 2, "zh"),
]


@pytest.mark.parametrize("question,tp,pp,lang", STATED)
def test_the_table_beside_a_stated_plan_says_it_is_pure_data_parallel(question, tp, pp, lang):
    answer = ask(question)
    assert answer.language == lang and answer.sections.table
    title = answer.sections.table_title
    assert title, "a stated plan must retitle the pure-DP table"
    assert title in answer.text  # the markdown prints it above the rows
    keys = {f.key: f.printed for f in answer.figures if f.key.startswith("parallel.")}
    gpus = int(keys["parallel.gpus"])
    assert int(keys["parallel.tp"]) == tp
    assert ("parallel.pp" in keys) == (pp > 1)
    # the rows are every GPU's data parallelism; the plan's data-parallel group is what is left
    assert int(keys["parallel.dp_shard"]) == gpus // (tp * pp)
    assert ("纯数据并行" if lang == "zh" else "pure data parallelism") in title


@pytest.mark.parametrize("question", [
    "Llama-3-70B full fine-tune on 4 nodes of 8x H100, seq 8192. DDP or FSDP?",
    "Llama-3-70B 全参微调，4 台 8 卡 H100，序列长度 8192，DDP 还是 FSDP？",
])
def test_no_stated_plan_keeps_the_plain_title(question):
    answer = ask(question)
    assert answer.sections.table and answer.sections.table_title is None


@pytest.mark.parametrize("text,axis,degree", [
    ("70B on 32 H100, TP=8 PP=2.", "pipeline_parallel", 2),
    ("We run CP=2. Sequences are 128k tokens on 16 H100.", "context_parallel", 2),
    ("The launch uses TP 4. Is that enough?", "tensor_parallel", 4),
    ("32 张 H100，TP=8 PP=2.", "pipeline_parallel", 2),
])
def test_a_degree_before_a_full_stop_is_read(text, axis, degree):
    assert getattr(parse_conversation(text).setup, axis) == degree


def test_a_decimal_is_not_a_degree():
    assert parse_conversation("TP 2.5 on 8 GPUs").setup.tensor_parallel is None
