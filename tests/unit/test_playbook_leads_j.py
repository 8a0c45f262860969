"""Leads the playbook lacked at first-contact batch j (knowledge/playbook/part9-j-leads.yaml, class 4):
a PyTorch build without NCCL (Windows), a start-up stall at the logger's login menu (wandb), a ZeRO-3
run given another DeepSpeed config, and a NaN/inf loss on one rank that leaves the others waiting.
Each in three phrasings per language of this file's own (not the batch's words, nor those of
evals/diagnosis_own.jsonl); the message either reads as troubleshooting or reports a failure, so
the answer diagnoses first whatever its intent."""

from __future__ import annotations

import pytest
from _helpers import entry_cases, lead_of, playbook_named

from bot.knowledge.playbook import failure_kind, match_playbook
from bot.parse import parse_conversation

CASES = {
    "pb-windows-no-nccl": [
        "Trying DDP on my Windows 11 workstation with two RTX 3090s, torchrun exits with "
        "RuntimeError: Distributed package doesn't have NCCL built in. How do I fix this?",
        "init_process_group(backend='nccl') fails on Windows with two GPUs, it says NCCL is not available. What should I use?",
        "Multi-GPU training on Windows does not work: the launcher errors out right away about NCCL. Any workaround?",
        "在Windows 11上用两张4090跑DDP，torchrun一启动就报 RuntimeError: Distributed package doesn't have NCCL built in，怎么解决？",
        "win11 上多卡训练报错，说 nccl 不可用，是不是 windows 不支持？",
        "Windows系统下用torchrun做分布式训练直接报错，提示没有NCCL，有什么办法吗",
    ],
    "pb-logger-login-prompt-stall": [
        "After launching with torchrun on 4 GPUs the job sits for ten minutes at wandb init and never reaches the first step, no error at all.",
        "My HF Trainer run is stuck right after start, the last line printed is wandb: Enter your choice. Why does it hang?",
        "The run freezes right after launch: nothing after wandb.init, no traceback, GPUs at 0 % for 15 minutes.",
        "用 torchrun 启动八卡训练后卡在 wandb 初始化那里十多分钟，不报错也不往下走，怎么回事？",
        "deepspeed 启动以后一直停在 wandb 那一步，卡住不动，没有任何报错",
        "多卡训练开始前 wandb 要我输入选择，后台跑的时候就一直卡着，怎么关掉？",
    ],
    "pb-deepspeed-wrong-config-file": [
        "I switched to ZeRO-3 but memory per GPU is the same as with ZeRO-2, the log prints stage 2. What's wrong?",
        "deepspeed train.py --zero_stage 3 --deepspeed configs/ds_config.json on 4 A100s still OOMs, "
        "it looks like ZeRO-3 is not taking effect.",
        "My launch says stage 3 but I pass --deepspeed ds_zero2.json and the 13B model still OOMs on 8 cards; "
        "did I use the wrong deepspeed config?",
        "开了 ZeRO-3 但显存和 ZeRO-2 一样，日志里打印的是 stage 2，是哪里不对？",
        "用 deepspeed 跑 13B，命令里写了 --zero_stage 3，又传了 --deepspeed ds_config.json，结果还是 OOM，ZeRO-3 好像没生效",
        "四张 A100 上 ZeRO3 训练报错，后来发现 deepspeed 配置文件传错了，应该怎么确认用的是哪个 stage？",
    ],
    "pb-nan-loss-one-rank": [
        "DDP on 8 GPUs: rank 3's loss turns into NaN and then the other ranks hang until the NCCL timeout.",
        "With 4 GPUs training freezes after a few epochs; I found that one GPU logged an inf loss right before the hang.",
        "My loop skips the batch when it sees a non-finite loss, but under DDP with 2 GPUs that makes the job stuck forever.",
        "8卡训练时某张卡上的loss变成nan，然后其他卡就一直卡住，直到超时。",
        "四卡DDP训练，发现其中一个rank的loss是inf，之后训练就不动了",
        "我在遇到nan时跳过这个batch，结果多卡训练就卡死了，两张卡",
    ],
}


@pytest.mark.parametrize("entry_id,text", entry_cases(CASES))
def test_the_class_leads_and_the_answer_diagnoses(entry_id, text):
    parsed = parse_conversation(text)
    named = playbook_named(text)
    assert named[:1] == [entry_id], named
    # a troubleshooting question, or any message reporting a failure, is diagnosed first
    assert parsed.intent == "troubleshoot" or failure_kind(text) is not None, parsed.intent


@pytest.mark.parametrize("entry_id,text", [
    ("pb-windows-no-nccl", "On Windows 11 with 2 GPUs, torchrun fails: RuntimeError: Distributed package doesn't have NCCL built in"),
    ("pb-windows-no-nccl", "Windows 上两张卡用 torchrun 训练，报错说没有 NCCL，怎么办？"),
    ("pb-logger-login-prompt-stall", "Training on 4 GPUs is stuck at wandb init for 20 minutes, nothing else happens"),
    ("pb-logger-login-prompt-stall", "四卡训练启动后卡在 wandb 初始化，十几分钟没动静"),
    ("pb-deepspeed-wrong-config-file", "ZeRO-3 on 4 GPUs, but the DeepSpeed log prints zero_optimization stage 2. Why?"),
    ("pb-deepspeed-wrong-config-file", "4 张卡用 ZeRO-3，可是 deepspeed 日志里显示的 stage 是 2，为什么？"),
    ("pb-nan-loss-one-rank", "DDP with 4 GPUs: rank 2 logs an inf loss, then the other ranks hang until the NCCL timeout"),
    ("pb-nan-loss-one-rank", "四卡 DDP，其中一个 rank 出现 inf 之后，其他卡就卡住直到超时"),
])
def test_the_first_sentence_names_it(entry_id, text):
    assert lead_of(text)[0] == entry_id


@pytest.mark.parametrize("text", [
    pytest.param("8卡训练时某张卡的loss变成nan，然后其他卡就一直卡住，直到超时。", id="zh-loss-nan"),
    pytest.param("DDP on 4 GPUs: the loss becomes nan on rank 1 and the others hang", id="en-loss-nan"),
])
def test_a_nan_loss_beside_a_hang_is_troubleshooting(text):
    assert parse_conversation(text).intent != "out_of_scope"


def test_windows_10_is_no_count_of_machines():
    assert not parse_conversation("Windows 10 电脑上两张 3090 用 torchrun 跑 DDP 报错没有 NCCL").problems


@pytest.mark.parametrize("entry_id,text", [
    # a hang while the process group starts on Windows is still the rendezvous, not a missing backend
    ("pb-init-hang-rendezvous", "On Windows, DDP hangs forever in init_process_group with the gloo backend"),
    ("pb-init-hang-rendezvous", "Windows 下 init_process_group 一直卡住，用的是 gloo"),
    # a NaN on one card with no distributed run is fp16 overflow, not a rank out of step
    ("pb-fp16-nan-overflow", "Single GPU fp16 fine-tune: the loss is fine and then NaN loss appears, overflow detected"),
    ("pb-fp16-nan-overflow", "单卡 fp16 训练出现 overflow，loss scale 一直在降"),
])
def test_neighbouring_causes_keep_their_lead(entry_id, text):
    named = playbook_named(text)
    assert named[:1] == [entry_id], named


@pytest.mark.parametrize("text", [
    "4 张 3090 全量微调 7B，启动训练阶段非常缓慢，第一步之前等了很久",
    "On 4 RTX 3090s the start-up is slow: it takes minutes to launch before the first step",
    "8 张 4090 训练，启动的时候很慢，要十几分钟才开始",
])
def test_a_slow_start_is_not_the_pcie_link(text):
    parsed = parse_conversation(text)
    assert "pb-sharding-over-pcie" not in [m.id for m in match_playbook(parsed, text=text, limit=0)]


@pytest.mark.parametrize("text,kind", [
    ("RuntimeError: Distributed package doesn't have NCCL built in", "error"),
    ("torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp", "error"),
    ("启动训练以后卡了十几分钟才开始第一步", "error"),
    ("启动阶段非常缓慢", "slow"),
])
def test_the_failure_signals_read_an_exception_line_and_a_long_start(text, kind):
    assert failure_kind(text) == kind
