""""More GPUs, the same memory per GPU" (LlamaFactory#350, #3841, #5972): the answer says what
sharding divides and what it never does, with the setup's own figures when there is a setup."""

from __future__ import annotations

import pytest

from bot.assistant import ask
from bot.parse import parse_conversation
from bot.understand.intent import topics_of


@pytest.mark.parametrize("text", [
    "多卡的时候每个GPU占用的显存，和单卡训练时一致，即显存没有因为分割而变小",  # LlamaFactory#350
    "我用zero3阶段，分多张卡，按理来说，卡越多，每一张卡上占用的显存更少。但是实际上增加卡的数量，每一张卡的显存占用不变。",  # #3841
    "LoRA finetuning 单卡和多卡内存消耗几乎一样",  # #5972
    "With ZeRO-3 on 4 GPUs the memory usage per GPU does not decrease compared to 1 GPU",
    "adding more GPUs gives the same memory per GPU, why?",
    "I am using FSDP to replace DDP, but FSDP consumes the same amount of memory as DPP",  # fairscale#1050
    "FSDP training requires more memory than DataParallel one",  # fairscale#1163
    "why my GPU memory usage will be lower than FSDP mode when I am using DP mode?",  # pytorch#108976
    "FSDP比DDP还占显存，为什么",
])
def test_the_symptom_is_read(text):
    assert "memory_not_divided" in topics_of(text)


@pytest.mark.parametrize("text", [
    "DDP or FSDP for a 7B model on 8x A100 80GB?",
    "显存不够怎么办，8张A100 40G全参微调13B",
    "两台机器比一台还慢",
    "Does FSDP use less memory than DDP for a 13B model?",
    "FSDP is slower than DDP on 8 GPUs",
])
def test_other_questions_are_not_read_as_it(text):
    assert "memory_not_divided" not in topics_of(text)


def test_one_gpu_as_the_comparison_is_not_the_setup():
    assert parse_conversation("多卡的时候每个GPU占用的显存，和单卡训练时一致", []).setup.gpu_count is None
    assert parse_conversation("单卡4090能跑7B的LoRA吗", []).setup.gpu_count == 1


def test_with_a_setup_the_answer_gives_the_sharded_weights_and_the_activations():
    q = ("lora微调，我用zero3阶段，增加卡的数量，每一张卡的显存占用不变。用fsdp 4张卡跑baichuan2-7b lora微调")
    a = ask(q)
    assert (a.sections.direct_answer or "").startswith("加卡能分掉的是模型状态，分不掉激活值")  # it leads
    assert a.numbers["memory.fsdp_full_shard.activations_gib"] > 0
    act = a.numbers["memory.fsdp_full_shard.activations_gib"]
    assert f"激活值约 {act:g} GiB" in a.text or f"激活值约 {round(act, 2):g} GiB" in a.text
    assert "ZeRO-1/2（SHARD_GRAD_OP）只分片梯度和优化器状态" in a.text  # LoRA: ZeRO-2 saves almost nothing


def test_without_a_setup_it_answers_first_and_shows_no_table_notice():
    a = ask("您好，我用了zero2，多卡的时候每个GPU占用的显存和单卡训练时一致，即显存没有因为分割而变小。")
    assert a.sections.direct_answer is not None
    assert a.sections.direct_answer.startswith("分片（ZeRO、FSDP）切的是模型状态，不切激活值")
    assert not any("下表" in n for n in a.sections.notices)  # the DeepSpeed-layout notice names a table


def test_fsdp_against_ddp_names_the_wrapping_and_leaves_lora_out():
    # fairscale#1050: the maintainer's causes include no nested wrapping (the whole model one unit);
    # nothing in the question is about ZeRO-1/2 or adapters, so that sentence is not said.
    a = ask("FSDP consumes the same amount of memory as DPP, why? I am using FSDP to replace DDP, but I find "
            "that the memory consumption is the same.")
    first = a.sections.headline or ""
    assert first.startswith("Sharding (ZeRO, FSDP) divides the model state, not the activations")
    assert "auto_wrap_policy" in first and "one unit" in first
    assert "LoRA" not in first
