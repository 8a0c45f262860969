"""Tensor / pipeline / context parallel degrees read from launch lines, configs and prose (issue 29),
into the setup fields the plan uses; a degree weighed in a question is not the setup."""

from __future__ import annotations

import pytest

from bot.parse import parse_conversation
from bot.understand.degrees import read_degrees


def degrees(text: str) -> dict:
    s = parse_conversation(text).setup
    return {k: v for k, v in (("tp", s.tensor_parallel), ("pp", s.pipeline_parallel), ("cp", s.context_parallel)) if v}


@pytest.mark.parametrize("text,expected", [
    # Megatron-LM / NeMo launch lines
    ("torchrun --nnodes 2 --nproc_per_node 8 pretrain_gpt.py --tensor-model-parallel-size 4 "
     "--pipeline-model-parallel-size 2 --num-layers 40\nOOM at step 1 on 16 H100, why?", {"tp": 4, "pp": 2}),
    ("python train.py --context-parallel-size 2 --tensor-model-parallel-size 8 --seq-length 32768\n"
     "A 70B model on 32 H800: how much memory per GPU?", {"tp": 8, "cp": 2}),
    # torchtitan TOML
    ("[parallelism]\ndata_parallel_replicate_degree = 1\ndata_parallel_shard_degree = -1\n"
     "tensor_parallel_degree = 4\npipeline_parallel_degree = 2\ncontext_parallel_degree = 1\n\n"
     "Llama 3 70B on 4 nodes of 8 H100: does this plan fit?", {"tp": 4, "pp": 2, "cp": 1}),
    # short flags and keys, DeepSpeed-Ulysses, verl's training side
    ("deepspeed train.py --tp 2 --zero_stage 1 on 8 A100 80G, 13B full fine-tune, is it slow because of TP?", {"tp": 2}),
    ("sequence_parallel_size: 4\nQwen2.5-7B LoRA on 8x A100 80G with 128k samples OOMs. Any fix?", {"cp": 4}),
    ("actor_rollout_ref.actor.ulysses_sequence_parallel_size=2 actor_rollout_ref.rollout.tensor_model_parallel_size=4\n"
     "GRPO Qwen2.5-7B on 8 H100 runs out of memory", {"cp": 2}),
    ("python -m verl.trainer.main_ppo actor_rollout_ref.rollout.tensor_model_parallel_size=2 "
     "actor_rollout_ref.actor.ulysses_sequence_parallel_size=4\nPPO on 8 A100 80G with Qwen2.5-14B OOMs", {"cp": 4}),
    # the axis name as the key
    ("Megatron-DeepSpeed run:\ntensor_parallelism: 4\npipeline_parallelism: 2\nA 13B model, how many A100 80G do we need?",
     {"tp": 4, "pp": 2}),
    ("tensor_parallel=2 context_parallel=2 on 8 H100 for Llama-3-8B at 128k tokens: does it fit?", {"tp": 2, "cp": 2}),
    # compact prose
    ("We train a 70B model on 64 H100 with TP=8 and PP=2; the step is slow. How to speed it up?", {"tp": 8, "pp": 2}),
    ("8xA100 80G, 13B, tp4pp2: per-GPU memory?", {"tp": 4, "pp": 2}),
    ("Megatron TP2 PP4 on 16 A800 for a 13B model with seq 4096, how much memory do we need?", {"tp": 2, "pp": 4}),
    # sentences, both languages
    ("We run 8-way tensor parallel inside each node and 4-way pipeline parallelism across 4 nodes of H100, 175B model.",
     {"tp": 8, "pp": 4}),
    ("我们用 16 张 A800 训练 Qwen2.5-72B，张量并行 4 路，流水线并行 2 路，显存还是不够，怎么办？", {"tp": 4, "pp": 2}),
    ("32 卡 H100 训 70B，张量并行度为 8，上下文并行 2，序列长度 64k，每卡显存多少？", {"tp": 8, "cp": 2}),
    ("8 卡 A100 做 7B 长文本 LoRA，序列并行 4，为什么还是 OOM？", {"cp": 4}),
])
def test_stated_degrees_are_read(text, expected):
    assert degrees(text) == expected


@pytest.mark.parametrize("text", [
    "Full fine-tune of a 70B model on 4 nodes of 8x H100, FSDP today. Should we add TP=8?",
    "70B on 32 H100 with FSDP: or would tensor parallel degree 4 be better?",
    "我们 8 卡 H100 训 Llama-3-70B，TP=8 会不会更好？",
    "32 张 A800 训 72B，要不要开张量并行 4 路？",
    "Would PP 2 help on 8 A100 for a 30B model?",
])
def test_a_degree_being_weighed_is_not_the_setup(text):
    assert degrees(text) == {}
    parsed = parse_conversation(text)
    assert parsed.setup.gpu_count in (8, 32)


@pytest.mark.parametrize("text", [
    "cp 4 copies of the dataset to the 4 GPUs before training a 1B model",
    "A 7B LoRA on 2 RTX 4090 with seq 4096 (pp 2 in the paper table is another run)",  # no parallel context word
    "vLLM LLM(model='Qwen2.5-72B', rollout.tensor_model_parallel_size=4)",  # an engine's degree, not training's
    "PPO on 16 A100: 8 GPUs for the actor, 8 for vllm engines with tp_size=2 each. How many nodes?",
    "GRPO 用 8 张 H100，推理引擎 tensor_parallel_size=4，训练用 FSDP，显存够吗？",
])
def test_not_a_training_degree(text):
    got = degrees(text)
    assert "cp" not in got and "tp" not in got


def test_a_degree_is_never_a_gpu_count_or_a_size():
    parsed = parse_conversation("Llama-3-70B on 4 nodes x 8 H100, TP 8, PP 4: how much memory per GPU?")
    assert parsed.setup.gpu_count == 32
    assert parsed.setup.tensor_parallel == 8 and parsed.setup.pipeline_parallel == 4
    assert parsed.setup.model == "Llama-3.1-70B"


def test_torchtitan_world_size_from_the_degrees():
    text = ("[parallelism]\ndata_parallel_shard_degree = 4\ndata_parallel_replicate_degree = 2\n"
            "tensor_parallel_degree = 2\n\nLlama 3 8B on H100s, is this a good split?")
    parsed = parse_conversation(text)
    assert parsed.setup.gpu_count == 16  # 2 x 4 x 2
    assert parsed.provenance["gpu_count"].source == "config"
    assert read_degrees(text).world_size() == 16


def test_provenance_quotes_the_text():
    parsed = parse_conversation("16 H100, --tensor-model-parallel-size 8, 70B full fine-tune, which strategy?")
    prov = parsed.provenance["tensor_parallel"]
    assert prov.source == "config" and "8" in prov.span and "tensor-model-parallel-size" in prov.span


@pytest.mark.parametrize("first,follow_up,field,degree", [
    ("Llama-3-70B full fine-tune on 32 H100, memory per GPU?", "what if TP=4?", "tensor_parallel", 4),
    ("Llama-3-70B 全参，32 张 H100，每卡显存多少？", "换成张量并行 8 路呢？", "tensor_parallel", 8),
    ("Qwen2.5-72B on 4 nodes of 8 A800, which strategy?", "And if we add pipeline parallelism of 2?", "pipeline_parallel", 2),
])
def test_a_follow_up_what_if_changes_the_degree(first, follow_up, field, degree):
    parsed = parse_conversation(follow_up, [first])
    assert getattr(parsed.setup, field) == degree
    assert parsed.provenance[field].source == "stated"
    assert parsed.setup.gpu_count == 32  # the rest of the setup is kept


def test_a_weighed_degree_in_a_first_message_is_not_the_setup_even_with_history_empty():
    assert parse_conversation("Llama-3-70B full fine-tune on 32 H100. Should we add TP=8?").setup.tensor_parallel is None
