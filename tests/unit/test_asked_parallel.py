""""Should we add tensor parallelism?" gets a yes or no first, with the ladder's per-GPU figure
(issue 29: the decision step and the torchtitan how-to). Phrasings of our own, both languages."""

from __future__ import annotations

import tomllib

import pytest

from bot import ask
from bot.parse import parse_conversation
from bot.understand.asked_axes import asked_parallel_axes

ASKED = [
    ("Should we add tensor parallelism on top of FSDP?", ("tp",)),
    ("Is TP worth it for a 70B run on 4 nodes?", ("tp",)),
    ("Do we need tensor-parallel inside each node?", ("tp",)),
    ("要不要在 FSDP 之外再加张量并行？", ("tp",)),
    ("有必要开张量并行吗", ("tp",)),
    ("Would context parallelism help at 128k tokens?", ("cp",)),
    ("Is ring attention or Ulysses needed for 200k sequences?", ("cp",)),
    ("序列并行需要上吗？", ("cp",)),
    ("Do we need pipeline parallelism for 405B?", ("pp",)),
    ("流水线并行有没有必要？", ("pp",)),
    ("Should I go for 3D parallelism here?", ("tp", "cp", "pp")),
    ("FSDP or something else for this size?", ("tp", "cp", "pp")),
    ("要用模型并行吗？", ("tp", "cp", "pp")),
]
STATED = [  # an axis in a statement is the setup, not a question about it
    "We train with tensor parallel 4 and FSDP over the rest.",
    "Our run uses TP=8 and PP=2 on 16 nodes. It is slow.",
    "我们用了张量并行 4 路训练 70B。",
]


@pytest.mark.parametrize("text,axes", ASKED)
def test_an_axis_asked_about_is_read(text, axes):
    assert asked_parallel_axes(text) == axes


@pytest.mark.parametrize("text", STATED)
def test_an_axis_stated_is_not_a_question(text):
    assert asked_parallel_axes(text) == ()


def _first_sentence(text: str) -> str:
    return text.strip().split("\n")[0]


@pytest.mark.parametrize("question,lang", [
    ("Full fine-tune Llama-3-70B on 4 nodes of 8x H100 80GB, seq 8192. Should we add tensor parallelism?", "en"),
    ("Llama-3-70B full fine-tuning, 32 H100 80GB (4 nodes x 8), 8k sequences: do we need TP?", "en"),
    ("4 台 8 卡 H100 80G 全参微调 Llama-3-70B，序列长度 8192，要不要上张量并行？", "zh"),
])
def test_tensor_parallel_not_needed_is_a_no_with_the_figure(question, lang):
    answer = ask(question)
    first = _first_sentence(answer.text)
    assert first.startswith("No" if lang == "en" else "不需要"), first
    n = answer.numbers
    assert n["parallel.tp"] == 1 and n["parallel.total_gib"] <= n["parallel.usable_gib"]
    assert f"{n['parallel.total_gib']:g}" in answer.text.replace(",", "")
    # the sentence says what would make TP worth it: the smallest global batch FSDP alone runs
    assert n["parallel.tokens_per_step"] == n["parallel.dp"] * 8192


@pytest.mark.parametrize("question,lang", [
    ("Full fine-tune Llama-3.1-405B on 16 nodes of 8x H100 80GB, seq 8192. Should we add tensor parallelism?", "en"),
    ("405B full fine-tune on 128 H100 80GB (16 nodes), 8k context: is TP needed?", "en"),
    ("16 台 8x H100 80G 全参微调 Llama-3.1-405B，seq 8192，需要张量并行吗？", "zh"),
])
def test_tensor_parallel_needed_is_a_yes_and_the_plan_is_recommended(question, lang):
    answer = ask(question)
    n = answer.numbers
    assert n["parallel.tp"] > 1 and n["parallel.total_gib"] <= n["parallel.usable_gib"]
    first = _first_sentence(answer.text)
    assert first.startswith("Yes" if lang == "en" else "需要"), first
    # nothing in the DDP/FSDP table fits, so the headline is the plan, not "nothing fits"
    assert ("Recommendation: FSDP" if lang == "en" else "推荐：FSDP") in answer.full_text
    assert "nothing fits" not in answer.full_text.split("\n\n")[1]
    toml_item = next(h for h in answer.sections.howto if h.language == "toml")
    degrees = tomllib.loads(toml_item.code)["parallelism"]
    product = (degrees["data_parallel_replicate_degree"] * degrees["data_parallel_shard_degree"]
               * degrees["tensor_parallel_degree"] * degrees["context_parallel_degree"]
               * degrees["pipeline_parallel_degree"])
    assert product == 128 and degrees["tensor_parallel_degree"] == n["parallel.tp"]
    launch = next(h for h in answer.sections.howto if h.language == "bash" and "torchtitan.train" in h.code)
    assert "--nnodes=16" in launch.code and f"--parallelism.tensor_parallel_degree={n['parallel.tp']}" in launch.code


@pytest.mark.parametrize("question", [
    "LoRA on Llama-3-8B with 200k-token sequences on 40 x A100 80GB. Is context parallelism worth it?",
    "Llama-3-8B LoRA, sequences of 200k tokens, 40 A100 80GB GPUs: do we need sequence parallelism?",
    "Llama-3-8B 做 LoRA，200k 上下文，40 张 A100 80G，要不要上序列并行？",
])
def test_a_long_sequence_hears_yes_to_context_parallelism(question):
    answer = ask(question)
    assert answer.numbers["parallel.cp"] > 1
    assert _first_sentence(answer.text).startswith(("Yes", "需要"))


@pytest.mark.parametrize("text,seq", [
    ("LoRA on Llama-3-8B with 200k-token sequences on 40 x A100 80GB", 204_800),
    ("Llama-3-8B, sequences of 128k tokens, 8 A100", 131_072),
    ("Mistral-7B, samples of 16k tokens, 4x A6000", 16_384),
    ("Qwen2-7B 全参微调，每条样本 32k token，8张A100", 32_768),
    ("8B 模型 128k 上下文 LoRA 8卡 A100", 131_072),
])
def test_sequence_length_written_as_tokens_per_sequence(text, seq):
    assert parse_conversation(text).setup.seq_len == seq


def test_a_sample_count_is_not_a_sequence_length():
    assert parse_conversation("Llama-2-7B, 8 GPUs, 1000 samples").setup.seq_len is None
