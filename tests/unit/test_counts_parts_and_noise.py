"""Figures beside the run's count that are not its count: one card or rank named as a part of the run
("其中一个rank", "one of my 4 cards"), an operating system's version ("Windows 10 电脑"), a sequence
length before a node count ("seq 4096 2 nodes"); "one rank ... the other 3 GPUs" is four. And a NaN
loss that hangs the other ranks is the run's problem (troubleshooting), not the model's quality."""

from __future__ import annotations

import pytest

from bot.understand.reader import read_turn

COUNT_FIELDS = ("gpu_count", "gpus_per_node", "nodes")


def counts(question: str) -> dict:
    fields = read_turn(question).fields
    return {k: fields[k] for k in COUNT_FIELDS if fields.get(k) is not None}


@pytest.mark.parametrize(("question", "expected"), [
    ("四卡DDP训练，其中一个rank卡住了", {"gpu_count": 4}),
    ("8卡训练，其中一个进程挂了，怎么办？", {"gpu_count": 8}),
    ("六张4090上训练时其中一张卡显存特别高", {"gpu_count": 6}),
    ("one of my 4 cards is idle during training", {"gpu_count": 4}),
    ("On 8 A100s, one of the GPUs shows 0% utilisation", {"gpu_count": 8}),
    ("Training on 2 H100s: one of the processes dies at step 10", {"gpu_count": 2}),
    # a subset the run uses is still the run's count
    ("I only use one of the 8 GPUs on this server", {"gpu_count": 1}),
    ("服务器有8张卡，只能用其中一张", {"gpu_count": 1}),
    ("8张卡其中只用了2张", {"gpu_count": 2}),
])
def test_one_of_the_cards_is_a_part_not_the_count(question, expected):
    assert counts(question) == expected


@pytest.mark.parametrize(("question", "total"), [
    ("one rank crashes and the other 3 GPUs hang", 4),
    ("a single process hits NaN while the remaining 7 GPUs wait", 8),
    ("one worker dies and the other 5 cards keep spinning", 6),
    ("其中一个rank挂了，其余3张卡卡住", 4),
    ("某个进程报错退出，另外7张卡一直等待", 8),
    ("有一个rank出了NaN，剩下的5张卡都卡住了", 6),
])
def test_one_rank_beside_the_other_n_is_n_plus_one(question, total):
    assert counts(question).get("gpu_count") == total


@pytest.mark.parametrize(("question", "expected"), [
    ("Windows 10 电脑上两张3090训练报错", {"gpu_count": 2}),
    ("在win11机器上用2张4090跑DDP报错", {"gpu_count": 2}),
    ("CentOS 7 的两台机器做多机训练", {"nodes": 2}),
    ("Ubuntu 22.04 server with 4 A100s hangs at init", {"gpu_count": 4}),
    ("2 Windows 11 machines with one 3090 each", {"nodes": 2, "gpus_per_node": 1}),
    ("a Windows 10 PC with two RTX 4090s: can I use DDP?", {"gpu_count": 2}),
])
def test_an_operating_system_version_is_no_count(question, expected):
    assert counts(question) == expected


@pytest.mark.parametrize(("question", "nodes", "seq"), [
    ("7B seq 4096 2 nodes x 8 GPUs", 2, 4096),
    ("13B, seq_len=8192 4 nodes of 8 H100", 4, 8192),
    ("context 32k 2 machines with 8 GPUs each", 2, 32768),
    ("序列长度4096 两台8卡A100训练7B", 2, 4096),
    ("上下文 8k 三台机器每台8张H100", 3, 8192),
    ("长度2048 两台机器 每台4张卡", 2, 2048),
])
def test_a_length_before_a_node_count_is_the_length(question, nodes, seq):
    fields = read_turn(question).fields
    assert (fields.get("nodes"), fields.get("seq_len")) == (nodes, seq), fields


@pytest.mark.parametrize("question", [
    "四卡DDP训练，其中一个rank的loss变成nan后其他卡就卡住了，怎么办？",
    "8卡训练时loss出现nan，然后整个训练卡住不动，怎么排查？",
    "fp16训练loss变成nan，提示loss scaler溢出，多卡怎么处理？",
    "My loss becomes nan on one rank and the other 3 GPUs hang, why?",
    "Loss goes NaN on GPU 2 and the remaining ranks hang in all-reduce; what should I do?",
    "With fp16 on 8 V100s the loss turns NaN and the grad scaler keeps skipping steps; how do I fix it?",
])
def test_a_nan_that_stops_the_run_is_troubleshooting(question):
    assert read_turn(question).intent == "troubleshoot"


@pytest.mark.parametrize("question", [
    "微调后模型效果差，loss不降，怎么办？",
    "My loss is not decreasing after fine-tuning, why?",
    "训练完模型胡说八道，怎么回事？",
])
def test_a_model_that_learns_badly_stays_out_of_scope(question):
    assert read_turn(question).intent == "out_of_scope"


@pytest.mark.parametrize("question", [
    "开了 ZeRO-3 以后每卡显存和 ZeRO-2 时一样，是哪里不对？",
    "FSDP全分片后每卡显存没变，是哪儿设置得不对？",
    "我的DDP启动命令是哪里不对，为什么只用了一张卡？",
])
def test_what_is_wrong_in_chinese_is_troubleshooting(question):
    assert read_turn(question).intent == "troubleshoot"
