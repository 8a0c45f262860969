"""A message that reports a symptom of the asker's own run and asks for help is ``troubleshoot``
(evals/cases/README.md, "Intent labels"), in both languages: a slowdown given as a ratio or as no
gain from more GPUs, a hang at some epoch with a way to locate it asked, memory uneven across cards
with one card jumping until it crashes, memory that grows over epochs past the limit, and host RAM
(a process killed, a server-sized RAM figure), which is in scope. The kept classes stay: "which /
DDP or FSDP / should I" is recommend, "how much / how many" capacity, no setup concept, serving
out of scope. Phrasings are our own (never a batch's sentences)."""

from __future__ import annotations

import pytest

from bot.parse import parse_conversation


def intent(text: str) -> str:
    return parse_conversation(text).intent


# (a) slower with DDP / twice as slow / no gain from more GPUs, then "is there a correct way?"
SLOWDOWN = [
    "With DDP on two GPUs my epoch takes twice as long as on one GPU. Is there a right way to do this?",
    "Using DistributedDataParallel my training runs at about half the speed of a single card; what is the correct way?",
    "Moving from one GPU to three with DDP gave no throughput gain at all. Is there a proper way to launch it?",
    "用两张卡跑DDP比单卡慢了一倍，请问正确的做法是什么？",
    "三张卡DDP训练速度没有提升，有正确的配置方式吗？",
    "我用DDP之后每个epoch反而慢了两倍，有没有正确的用法？",
]
# (b) a hang at some epoch, a way to locate it asked
HANG = [
    "My training freezes at epoch 3 every time with DDP on 4 GPUs. Can you suggest a way to find the cause?",
    "The run hangs after a few epochs on 8 GPUs, no error printed. How can I locate the problem?",
    "Training gets stuck at epoch 12 with FSDP and the GPUs sit at 100%. Any method to debug this?",
    "用4张卡DDP训练，跑了几个epoch之后就卡住不动了，可以提供定位问题的方法吗？",
    "多卡训练若干轮后程序不动了，有什么定位的办法吗？",
    "FSDP训练到第5个epoch就卡死，没有报错，该怎么排查？",
]
# (c) memory uneven across cards, one card jumps and the run crashes
SPIKE = [
    "On my FSDP run one GPU's memory suddenly shoots up and the process dies while the others stay low. How do I handle this?",
    "GPU memory differs a lot between my 8 cards, then one of them spikes and crashes the job. What should I do?",
    "Each card shows very different memory with DDP and card 3 suddenly jumps until it crashes. Why?",
    "用DDP训练时每张卡显存相差很多，某张卡突然暴涨导致崩溃，怎么解决？",
    "8卡训练时各卡显存差别很大，其中一张卡突然飙升然后程序挂了，这是为什么？",
    "FSDP训练中有一张卡显存突然暴涨导致进程崩溃，有什么定位的方法？",
]
# (d) memory that grows over epochs past the limit, "why?"
GROWTH = [
    "Memory on my GPUs creeps up epoch after epoch and after a few epochs it runs out. What is causing this?",
    "My FSDP training's memory keeps growing each epoch until it goes over the 80GB limit. Why is that?",
    "GPU memory is plainly not being allocated well on 4 A100s: after several epochs it exceeds the limit. Why?",
    "训练几个epoch后显存一直上涨直到超过上限，这是什么原因？",
    "FSDP训练时显存每个epoch都在持续增长，跑几轮就超出上限，为什么会这样？",
    "4张A100用DDP训练，显存分配明显不合理，几个epoch后就超过上限，为什么？",
]
# (e) host memory: a run's RAM figure or the process killed for RAM (troubleshoot, not out of scope)
HOST_RAM = [
    "CPU virtual memory used = 150GB and right after that the failure happens. What is going on?",
    "Host RAM climbs past 120 GB and then my process gets killed. Why?",
    "System memory grows to 200GB and the job is killed by the OOM killer, how do I fix it?",
    "内存占用到200多G进程被杀，怎么回事？",
    "主机内存一直涨到120G，最后进程被系统kill掉了，为什么？",
    "程序跑着跑着内存占用到300多G然后被杀掉了，有什么办法？",
]


@pytest.mark.parametrize("text", SLOWDOWN + HANG + SPIKE + GROWTH + HOST_RAM)
def test_a_symptom_of_the_askers_run_with_help_asked_is_troubleshooting(text):
    assert intent(text) == "troubleshoot"


@pytest.mark.parametrize("text, expected", [
    ("I have 4 A100 80GB and want to fine-tune a 7B model, should I use DDP or FSDP?", "recommend"),
    ("Which strategy is best for training Llama 7B on 2 H100s?", "recommend"),
    ("8张4090微调13B，用DDP还是FSDP？", "recommend"),
    ("How much memory do I need to fully fine-tune a 13B model with FSDP?", "capacity"),
    ("How many GPUs do I need for a 30B model with ZeRO-3?", "capacity"),
    ("全参微调70B需要多少张A100？", "capacity"),
    ("What is the difference between DDP and FSDP?", "concept"),
    ("Why does FSDP use less memory than DDP?", "concept"),
    ("FSDP和DDP的原理有什么区别？", "concept"),
    ("How do I serve Llama 70B with vLLM on 4 GPUs?", "out_of_scope"),
    ("用vllm部署72B模型需要几张卡？", "out_of_scope"),
    # a desktop's RAM, no run of a training job: still not ours
    ("My laptop has 16GB RAM and Chrome uses 12GB, why?", "out_of_scope"),
    ("我的电脑内存16G，打开浏览器就很卡，为什么？", "out_of_scope"),
    ("内存条哪个牌子好？", "out_of_scope"),
    # frozen weights are no hang
    ("GRPO on Qwen2-7B with a frozen reference model on 8x H100, FSDP?", "recommend"),
    ("LoRA on a 13B model with the vision tower frozen, 2x A100 80GB, DDP or FSDP?", "recommend"),
])
def test_the_kept_classes_stay(text, expected):
    assert intent(text) == expected
