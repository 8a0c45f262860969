"""Reader classes of first-contact batch k ("Failures, by class" 1, 2, 3 and 5): the card that works
beside the run's count, launch lines with one process over visible devices, a reference count from
another project, alternatives weighed that are not the run's method, and the intent of an OOM report
with "should I use X?", a sufficiency question, a term in a paper and a per-card batch question."""

from __future__ import annotations

import pytest

from bot.understand.reader import read_turn


def gpu_count(question: str):
    return read_turn(question).fields.get("gpu_count")


@pytest.mark.parametrize(("question", "total"), [
    ("四张卡跑DDP，只有一张卡在工作", 4),
    ("用4块3090训练，结果只有一块在用", 4),
    ("6张卡只有一个有利用率，其他都是0", 6),
    ("三块卡训练只有一块在计算", 3),
    ("8张卡训练时只有两张在跑", 8),
    ("Only one of my 4 cards is used during training", 4),
    ("Only one of the 8 GPUs is busy while training", 8),
    ("just one of our 2 GPUs shows any load", 2),
])
def test_the_card_that_works_beside_the_count_is_no_count(question, total):
    assert gpu_count(question) == total


@pytest.mark.parametrize(("question", "used"), [
    ("服务器有8张卡，只能用其中一张", 1),
    ("8张卡其中只用了2张", 2),
    ("I only use one of the 8 GPUs on this server", 1),
])
def test_a_subset_the_run_uses_is_still_its_count(question, used):
    assert gpu_count(question) == used


@pytest.mark.parametrize(("question", "visible"), [
    ("CUDA_VISIBLE_DEVICES=0,1,2 torchrun --nproc_per_node=1 finetune.py runs very slowly", 3),
    ("I launch with CUDA_VISIBLE_DEVICES=2,3 torchrun --nproc_per_node 1 main.py and only one card is busy", 2),
    ("Why is `CUDA_VISIBLE_DEVICES=0,1,2,3 python -m torch.distributed.launch --nproc_per_node=1 run.py` slow?", 4),
    ("执行 CUDA_VISIBLE_DEVICES=0,1 torchrun --nproc_per_node=1 sft.py 训练很慢", 2),
    ("用 CUDA_VISIBLE_DEVICES=4,5,6 torchrun --nproc_per_node 1 pretrain.py 启动，为什么只有一张卡在跑？", 3),
    ("启动命令是CUDA_VISIBLE_DEVICES=0,1,2,3 python -m torch.distributed.run --nproc_per_node=1 main.py，速度没变化", 4),
])
def test_one_process_over_visible_devices_is_one_node(question, visible):
    turn = read_turn(question)
    fields = turn.fields
    assert (fields.get("gpu_count"), fields.get("nodes") or 1, fields.get("gpus_per_node")) == (visible, 1, None), fields
    assert "one_process_visible_devices" in [n.code for n in turn.notes]


@pytest.mark.parametrize(("question", "method"), [
    ("Our full fine-tune of 7B on 4 A100s is slow; one alternative we weigh is using LoRA", "full"),
    ("We train Mistral 7B on 2 A6000s and are thinking of switching to QLoRA", None),
    ("Pretraining 1B on 8 GPUs OOMs, we're considering moving to LoRA", "full"),
    ("全参微调13B在4张A100上太慢，准备改用LoRA", "full"),
    ("两张3090训练7B，我打算换成QLoRA", None),
    ("8卡训练Qwen 14B，也想过干脆用LoRA", None),
])
def test_an_alternative_considered_is_not_the_method(question, method):
    assert read_turn(question).fields.get("finetune") == method


@pytest.mark.parametrize("question", ["I do LoRA on 7B with 2 GPUs, FSDP or DDP?", "用LoRA微调7B，两张4090，用DDP还是FSDP？"])
def test_a_stated_lora_run_stays_lora(question):
    assert read_turn(question).fields.get("finetune") == "lora"
