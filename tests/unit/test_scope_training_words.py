"""Scope: a training question stays in scope when an inference word is only part of another word, when it
names a paper beside the asker's own measured run, or when it asks about fine-tuning in Chinese beside
inference (first-contact batch i class 1: three training questions were answered as inference).
Phrasings are this file's own, not the threads'."""

from __future__ import annotations

import pytest

from bot.understand.scope import scope_of as _scope


@pytest.mark.parametrize("text", [
    "Fine-tuning VideoLLaMA2 on 4 A100s runs out of memory after a few epochs",
    "Training videollama3 with DDP on 8 GPUs: OOM at step 300, why?",
    "VideoLLaMA fine-tune on one 80GB card goes OOM in epoch 3 — what can I change?",
    "用 8 张 A100 微调 VideoLLaMA3，跑几个 epoch 后显存溢出",
    "videollama2 训练时爆显存，四张 A800，怎么办？",
    "VideoLLaMA 多卡微调 OOM，batch size 已经是 1 了",
])
def test_a_tool_name_inside_a_model_name_is_not_inference(text):
    assert _scope(text, has_setup=True) is None


@pytest.mark.parametrize("text", [
    "Running ollama on two GPUs: how do I split the model across them?",
    "用 ollama 在两张卡上跑模型，怎么分配显存？",
    "How many tokens per second should vLLM give on an H100?",
])
def test_inference_tools_named_as_words_stay_out_of_scope(text):
    assert _scope(text, has_setup=True) == "out_of_scope"


@pytest.mark.parametrize("text", [
    "Training ViT-B on 4 nodes over 25 Gbps Ethernet takes 12 min per epoch, twice the paper's figure. "
    "Is the network the bottleneck?",
    "Each epoch takes 9 minutes on 16 V100s across two machines while the paper reports 3; what interconnect "
    "did the paper use?",
    "With 2 nodes of 8 A100 the epoch time is 20 min against 8 in the paper. I wonder whether the 10GbE link "
    "is the limit.",
    "两台机器 16 张 V100 训练一个 epoch 要 10 分钟，论文里只要 3 分钟，是带宽瓶颈吗？",
    "8 个节点训练 ViT，每个 epoch 比论文里慢三倍，节点间只有万兆网，是网络的问题吗？",
    "多机训练速度只有论文里的一半，机间带宽 10Gbps，该怎么排查？",
])
def test_a_paper_beside_a_measured_run_is_the_askers_run(text):
    assert _scope(text, has_setup=True) is None


@pytest.mark.parametrize("text", [
    "推理和微调分别需要几张 A100？以 70B 模型为例",
    "13B 模型做 SFT 和推理各要多少显存？用 4090",
    "精调和推理大概需要多少卡，A800 80G",
    "预训练和推理分别要多少张 H100？",
])
def test_chinese_fine_tuning_beside_inference_is_in_scope(text):
    assert _scope(text, has_setup=True) is None
