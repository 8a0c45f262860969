"""A NaN loss on a multi-GPU launch is the run's problem, in scope (batch l class 1).

A loss that will not fall is a model's quality and out of scope; the same NaN under
``accelerate launch --multi_gpu``, torchrun or "多卡训练" is a training-system fault to troubleshoot.
Phrasings are this test's own.
"""

import pytest

from bot.parse import parse_conversation


def _intent(text: str) -> str:
    return parse_conversation(text).intent


@pytest.mark.parametrize("text", [
    "With accelerate launch --multi_gpu --num_processes 4 the loss becomes nan after a few hundred steps, why?",
    "torchrun --nproc_per_node=8 train.py: loss is nan from step 1, single GPU is fine. How to fix?",
    "Multi-GPU training gives loss=nan while one GPU trains normally. What is wrong?",
    "多卡训练时 loss 变成 nan，单卡正常，怎么回事？",
    "用 accelerate launch --multi_gpu 跑，loss 一直是 nan，怎么解决？",
    "单机多卡 loss nan 了，应该查什么？",
])
def test_nan_on_a_multi_gpu_launch_is_troubleshooting(text):
    assert _intent(text) == "troubleshoot", text


@pytest.mark.parametrize("text", [
    "My loss does not decrease after 10 epochs, the model's answers are poor. Any tips?",
    "模型效果不好，loss 不降，怎么调参？",
])
def test_a_loss_that_does_not_fall_stays_out_of_scope(text):
    assert _intent(text) == "out_of_scope", text


@pytest.mark.parametrize("text", [
    "4 GPUs, multi-GPU fine-tuning: the loss is not decreasing and the model is useless afterwards.",
    "单机多卡微调，loss 一直不降，效果很差。",
    "Training on several GPUs the model does not converge: 不收敛. Ideas?",
])
def test_a_loss_that_does_not_fall_on_several_gpus_stays_quality(text):
    assert _intent(text) == "out_of_scope", text
