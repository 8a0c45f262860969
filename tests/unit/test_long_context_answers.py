"""A long-context full fine-tune that fits nowhere as asked (simplescaling/s1#106: "qwen2.5-32B
can not fine tuning on 80GB A100 in max_seq_length=32768 ... 2 * 80 GB A100"; the maintainer:
"16 * 80 GB H100 is recommended"), answered as an expert would: how many GPUs, with what; no
sentence that says nothing, no placeholder for a fact the user never gave, no figure computed
for another model."""

from __future__ import annotations

import pytest

from bot.assistant import ask
from bot.capacity_evidence import capacity_search
from bot.core.setup import TrainingSetup, resolve_setup
from bot.decide import decide
from bot.evidence import build_evidence
from bot.knowledge.answering import best_quote
from bot.parse import parse_conversation

S1_106 = ("qwen2.5-32B can not fine tuning on 80GB A100 in max_seq_length=32768\n"
          "I am trying to train the qwen2.5-32B on 2 * 80 GB A100, but I can't train it without FSDP.  "
          "It's always out of memory!!! I can't understand if this training method is avaliable on "
          "16 * 80 GB H100 without FSDP?")


@pytest.fixture(scope="module")
def s1_answer():
    return ask(S1_106)


def test_the_gpu_count_that_fits_needs_a_chunked_loss_at_32k_tokens():
    resolved = resolve_setup(TrainingSetup(model="Qwen2.5-32B", gpu="A100 80GB SXM", gpu_count=2, seq_len=32768))
    cap = capacity_search(resolved)
    assert cap.gpu_count == 16 and cap.strategy == "fsdp_full_shard"  # the maintainer's count
    assert cap.checkpointing and cap.chunked_loss
    # already chunked: no further tier, and the count is the same
    chunked = resolve_setup(TrainingSetup(model="Qwen2.5-32B", gpu="A100 80GB SXM", gpu_count=2, seq_len=32768,
                                          loss_impl="chunked"))
    again = capacity_search(chunked)
    assert again.gpu_count == 16 and not again.chunked_loss


def test_the_answer_names_the_count_and_what_it_needs(s1_answer):
    text = s1_answer.full_text
    assert "With 16 of these GPUs with activation checkpointing and a chunked cross-entropy" in text
    assert s1_answer.numbers["capacity.gpu_count"] == 16


def test_no_empty_knob_sentence_and_no_placeholder_for_unstated_ram(s1_answer):
    text = s1_answer.full_text
    assert "gradient_as_bucket_view=True plus fused AdamW" not in text  # it saves nothing here
    assert " ? GB" not in text and "your ?" not in text
    ev = build_evidence(parse_conversation(S1_106, []), question=S1_106, with_knowledge=False)
    d = decide(ev)
    assert "host_ram_short" not in {r.code for r in d.reasons}  # the RAM was never given
    ram = parse_conversation(S1_106 + " The node has 128 GB of CPU RAM.", [])
    d_ram = decide(build_evidence(ram, with_knowledge=False))
    assert ram.setup.cpu_ram_gb == 128
    # with RAM stated, the offload row is still ruled out by the GPU, not by the RAM
    assert "host_ram_short" not in {r.code for r in d_ram.reasons}


def test_host_ram_short_still_said_when_the_stated_ram_is_what_says_no():
    q = "Full fine-tune Llama-2-70B on 8x A100 80GB, seq 2048, activation checkpointing on, 256 GB CPU RAM per node"
    d = decide(build_evidence(parse_conversation(q, []), with_knowledge=False))
    assert "host_ram_short" in {r.code for r in d.reasons}, [r.code for r in d.reasons]


def test_a_figure_computed_for_another_model_size_is_not_quoted():
    weights = {"fp32": 1.0, "master": 1.0, "adamw": 1.0, "moments": 1.0, "ddp": 1.0, "card": 1.0}
    quote_7b = best_quote("doc-gpu-specs", weights, params_b=7.0)
    assert "104.3 GiB" in quote_7b  # the docs compute it for 7B: quoted for a 7B question
    assert "104.3 GiB" not in best_quote("doc-gpu-specs", weights, params_b=32.76)
    assert "104.3 GiB" in best_quote("doc-gpu-specs", weights)  # size unknown: kept


def test_one_gpu_per_node_reads_in_the_singular():
    q = ("torchrun --nnodes=1 --nproc_per_node=1 train.py --model_name_or_path models/llama-13b-hf/ "
         "--bf16 True --per_device_train_batch_size 1 on 1* A100(80G), CUDA out of memory")
    text = ask(q).full_text
    assert "1 GPU per node" in text and "1 GPUs" not in text


def test_a_multi_node_slowdown_on_an_assumed_link_is_said_as_conditional():
    # torchtitan#676: 70B on 4 nodes of 8 H200, no link given
    a = ask("Very low wps with H200 Gpus. I am running the multinode_trainer.slurm (llama3_70b.toml) on 4 nodes "
            "that have 32 H200 Gpus. However, wps is only around ~200. Any ideas what can cause this slowness?")
    direct = a.sections.direct_answer or ""
    assert direct.startswith("If the link between nodes is the assumed InfiniBand"), direct
    # stated, the same figure is said plainly
    b = ask("Llama-3-70B on 4 nodes x 8 H200, InfiniBand 3200 Gb/s per node. Two nodes are slower than one, why?")
    assert "assumed" not in (b.sections.direct_answer or "")


def test_the_capacity_count_fits_with_the_decisions_margin():
    # Qwen3#201 "lora微调72b模型需要多少2台8xA100 80G够吗": 2 cards fit FULL_SHARD + checkpointing
    # only at ~96% of usable memory, inside the estimate's error; the answer names 4
    from bot.capacity_evidence import FIT_MARGIN

    resolved = resolve_setup(TrainingSetup(params_b=72, gpu="A100 80GB SXM", gpu_count=16, nodes=2, gpus_per_node=8,
                                           finetune="lora"))
    cap = capacity_search(resolved)
    assert cap.gpu_count == 4 and cap.checkpointing
    key = f"capacity.memory.{cap.strategy}"
    assert cap.numbers[f"{key}.total_gib"] <= FIT_MARGIN * cap.numbers[f"{key}.usable_gib"]
