"""A stated TP/CP/PP degree is computed as the person's plan (bot.parallel_evidence), never dropped
for pure data parallelism (issue 29)."""

from __future__ import annotations

import pytest

from bot.core.setup import TrainingSetup, resolve_setup
from bot.parallel_evidence import is_stated, parallel_numbers, parallel_plan, stated_plan
from bot.parse import parse_conversation


def resolved(**fields):
    return resolve_setup(TrainingSetup(**fields))


def test_a_stated_tp_degree_is_the_plan():
    r = resolved(model="llama3.1-70b", gpu="H100", gpu_count=32, nodes=4, tensor_parallel=8, seq_len=8192)
    plan = parallel_plan(r)
    assert is_stated(plan)
    assert plan.plan.degrees["tp"] == 8 and plan.plan.degrees["dp_shard"] == 4
    nums = parallel_numbers(plan)
    assert nums["parallel.tp"] == 8 and nums["parallel.dp_shard"] == 4
    assert nums["parallel.total_gib"] > 0
    assert plan.toml["parallelism"]["tensor_parallel_degree"] == 8


def test_tp_lowers_the_per_gpu_memory_against_the_ladders_fsdp_rung():
    base = dict(model="llama3.1-70b", gpu="H100", gpu_count=32, nodes=4, seq_len=8192, activation_checkpointing=True)
    with_tp = stated_plan(resolved(**base, tensor_parallel=8))
    with_tp2 = stated_plan(resolved(**base, tensor_parallel=2))
    assert with_tp.memory.activations_gib < with_tp2.memory.activations_gib


def test_no_stated_degree_is_no_stated_plan():
    assert stated_plan(resolved(model="llama3.1-8b", gpu="A100", gpu_count=8)) is None
    assert stated_plan(resolved(model="llama3.1-8b", gpu="A100", gpu_count=8, tensor_parallel=1)) is None


def test_an_unstated_micro_batch_is_raised_to_fill_the_pipeline_and_said():
    r = resolved(model="qwen2.5-72b", gpu="A800", gpu_count=16, tensor_parallel=4, pipeline_parallel=2)
    plan = stated_plan(r)
    assert plan is not None and plan.plan.degrees["pp"] == 2
    assert parallel_numbers(plan)["parallel.local_batch"] == 2


def test_degrees_that_do_not_divide_the_gpus_give_no_plan_and_no_crash():
    assert stated_plan(resolved(model="llama3.1-8b", gpu="A100", gpu_count=8, tensor_parallel=3)) is None


@pytest.mark.parametrize("question", [
    "Llama-3-70B full fine-tune on 4 nodes of 8x H100 with TP=8, seq 8192: memory per GPU?",
    "32 张 H100 全参训练 Llama-3-70B，张量并行 8 路，序列长度 8192，每卡显存多少？",
    "torchrun --nnodes 4 --nproc_per_node 8 train.py --tensor-model-parallel-size 8 --seq-length 8192\n"
    "Llama-3-70B full fine-tune on H100s, does it fit?",
])
def test_from_the_question_to_the_plan(question):
    r = resolve_setup(parse_conversation(question).setup)
    plan = parallel_plan(r)
    assert is_stated(plan) and plan.plan.degrees["tp"] == 8 and r.gpu_count == 32
