"""The capacity search ("how many GPUs?") under a stated TP/CP/PP plan: the count is a multiple of
tp x cp x pp, in whole nodes past one node, and the plan (FSDP over the rest) is what must fit
(issue 29, brief N1 item 2). Phrasings of our own, both languages."""

from __future__ import annotations

import pytest

from bot import ask
from bot.capacity_evidence import capacity_search, plan_counts
from bot.core.setup import TrainingSetup, resolve_setup


def test_plan_counts_round_up_to_the_degrees_and_to_whole_nodes():
    assert plan_counts(4, 8)[:4] == [4, 8, 16, 24]
    assert plan_counts(16, 8)[0] == 16
    assert plan_counts(12, 8)[:3] == [24, 48, 72]  # lcm(12, 8): 12 GPUs would be a node and a half
    assert all(c % 64 == 0 for c in plan_counts(64, 8))


@pytest.mark.parametrize("fields,unit", [
    (dict(model="llama3.1-70b", gpu="H100", gpu_count=32, nodes=4, tensor_parallel=8, pipeline_parallel=2,
          seq_len=8192), 16),
    (dict(model="llama3.1-70b", gpu="H100", gpu_count=16, tensor_parallel=4, pipeline_parallel=3, seq_len=4096), 12),
    (dict(model="llama3.1-8b", gpu="H100", gpu_count=8, context_parallel=4, seq_len=65536), 4),
])
def test_the_count_found_runs_the_stated_plan(fields, unit):
    cap = capacity_search(resolve_setup(TrainingSetup(**fields)))
    assert cap.gpu_count is not None and cap.plan_degrees
    assert cap.gpu_count % unit == 0
    assert cap.gpu_count <= 8 or cap.gpu_count % 8 == 0
    assert all(c % unit == 0 for c in cap.tried)
    mem, usable = cap.numbers["capacity.memory.fsdp_full_shard.total_gib"], \
        cap.numbers["capacity.memory.fsdp_full_shard.usable_gib"]
    assert mem <= usable
    assert cap.numbers["capacity.parallel.dp_shard"] * unit == cap.gpu_count


def test_without_degrees_the_search_is_pure_data_parallel():
    cap = capacity_search(resolve_setup(TrainingSetup(model="llama3.1-8b", gpu="A100 80GB", gpu_count=8)))
    assert not cap.plan_degrees and cap.gpu_count in (1, 2, 4, 8)


ASKED = [  # (question, tp x cp x pp)
    ("How many H100 80GB GPUs do I need for a Llama-3-70B full fine-tune at seq 8192 with TP=8 and PP=2?", 16),
    ("We will launch Llama-3-70B full training with --tensor-model-parallel-size 4 "
     "--pipeline-model-parallel-size 3 at seq 4096: what is the minimum number of H100s?", 12),
    ("Minimum GPU count for Llama-3.1-8B, sequence length 65536, on H100s with context parallel 4?", 4),
    ("Llama-3-70B 全参微调，序列 4096，张量并行 4，流水线并行 3，需要多少张 H100？", 12),
    ("用 TP=8、PP=2 全参训练 Llama-3-70B，序列长度 8192，最少要几张 H100 80GB？", 16),
    ("Llama-3.1-8B 序列长度 65536，上下文并行 4，H100 最少需要几张卡？", 4),
]


@pytest.mark.parametrize("question,unit", ASKED)
def test_how_many_gpus_under_a_stated_plan(question, unit):
    answer = ask(question)
    keys = {f.key: f.printed for f in answer.figures}
    count = int(keys["capacity.gpu_count"])
    assert count % unit == 0 and (count <= 8 or count % 8 == 0)
    assert "capacity.parallel.dp_shard" in keys  # the plan's data-parallel group is said
    assert int(keys["capacity.parallel.dp_shard"]) * unit == count


def test_degrees_the_model_cannot_take_fall_back_to_the_pure_dp_search():
    # TP 3 divides none of Llama-3.1-8B's 32 query heads: no count builds the plan
    cap = capacity_search(resolve_setup(TrainingSetup(model="llama3.1-8b", gpu="A100 80GB", gpu_count=8,
                                                      tensor_parallel=3)))
    assert not cap.plan_degrees and cap.gpu_count is not None


def test_a_long_local_sequence_under_cp_may_need_the_chunked_loss():
    # 32k local tokens x a 128k vocabulary: the standard loss's fp32 logits do not fit beside the rest
    cap = capacity_search(resolve_setup(TrainingSetup(model="llama3.1-8b", gpu="H100", gpu_count=8,
                                                      context_parallel=4, seq_len=131072)))
    assert cap.plan_degrees == {"cp": 4} and cap.gpu_count is not None and cap.gpu_count % 4 == 0
    assert cap.chunked_loss


def test_the_answer_names_the_plan_and_the_chunked_loss():
    answer = ask("How many H100s for Llama-3.1-8B full fine-tune, sequence length 131072, context parallel 4?")
    direct = answer.sections.direct_answer or ""
    assert "context parallel" in direct and "chunked cross-entropy" in direct
