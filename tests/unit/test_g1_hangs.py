"""First-contact batch f, classes 1 and 5 (evals/first_contact.md): a hang at start-up or mid-run,
time lost between epochs, and a published batch that is an effective batch. Where the text shows
the run stuck or slow between epochs, the FIRST sentence names the matching cause (a playbook lead,
knowledge/playbook/part6-g1-hangs.yaml), never an ask for facts. Phrasings are ours (en and zh),
not any thread's words. No retrieval (``with_knowledge=False``), so these stay fast."""

from __future__ import annotations

import pytest
from _helpers import answer_offline, lead_of

from bot.knowledge.playbook import reports_failure
from bot.parse import parse_conversation
from evals.bench_diagnosis import NEEDS_FACTS, lead_cause

INIT, GLOO, COLLECTIVE = "pb-init-hang-rendezvous", "pb-gloo-backend-gpu", "pb-collective-hang-mid-run"
EPOCH, FIND_UNUSED, RANK0 = "pb-epoch-boundary-workers", "pb-ddp-find-unused-slow", "pb-rank0-epoch-end-work"
EFFECTIVE = "pb-effective-batch-accumulation"

CASES = {
    INIT: [
        "My two-GPU DDP script never gets past dist.init_process_group, it just sits there with no error",
        "On Windows 11 with 2 RTX 3080, torchrun launches but training is stuck before the first step and prints nothing",
        "The job freezes while initializing the process group; MASTER_ADDR is set to the head node's hostname",
        "双卡DDP训练一直卡在init_process_group，没有任何报错",
        "Windows 上用两张卡跑分布式训练，启动后就没反应了",
        "两台机器训练，初始化进程组的时候一直卡住，MASTER_PORT 设的是 29500",
    ],
    GLOO: [
        "We train on 16 nodes with backend='gloo' and every step takes forever, sometimes it looks completely stuck",
        "Our launcher uses the gloo backend for 4 A100 machines and the run hangs once we go past two nodes",
        "My distributed training with gloo on 8 GPUs is extremely slow, far below what I expected",
        "分布式后端用的是gloo，八台机器一起训练就卡住不动了",
        "用 gloo 后端 4 机 32 卡训练，速度特别慢，像卡住了一样",
        "我们 init 的时候 backend 写的 gloo，两个节点以上就 hang 住",
    ],
    COLLECTIVE: [
        "Training on 3 nodes with 8 H100 each freezes after about 2000 steps, GPU utilization stays at 100% and nothing is logged",
        "Our multi-node DDP run hangs at a random iteration after a few hours, no error until the NCCL timeout",
        "Two machines with 4 GPUs each: the job gets stuck in the middle of training and one rank seems to be waiting forever",
        "两台机器16张卡训练，跑了几个小时之后就卡住了，GPU利用率一直是100%",
        "多节点训练到一半就卡死了，日志不再输出，也没有报错",
        "四机32卡训练中途hang住，设了NCCL_DEBUG=INFO也看不出原因",
    ],
    EPOCH: [
        "Each epoch runs fast but there is a long pause between epochs on my 4-GPU DDP run, where does the time go?",
        "With 8 GPUs the steps are quick, yet every new epoch takes a minute to start, why is it so slow?",
        "My training wastes a lot of time at the start of each epoch with 16 dataloader workers per process",
        "4卡DDP训练，每个epoch之间要等很久才开始下一个，怎么回事？",
        "训练时每个epoch开始都要停顿一两分钟，GPU 空闲，速度很慢",
        "八卡训练 epoch 切换的时候特别慢，num_workers 设的是 8",
    ],
    FIND_UNUSED: [
        "DDP on 4 GPUs is much slower than expected, and the log says find_unused_parameters=True but no unused parameters were found",
        "I set find_unused_parameters=True in my DDP wrapper and each iteration got slower, why?",
        "Training slowed down after wrapping the model with DistributedDataParallel(find_unused_parameters=True) on 8 cards",
        "DDP开了find_unused_parameters=True以后训练变慢了很多",
        "8卡训练很慢，DDP 里设置了 find_unused_parameters=True，有影响吗",
        "用了 find_unused_parameters=True 之后每步都比单卡慢，是什么原因？",
    ],
    RANK0: [
        "After every epoch only rank 0 runs validation and saves a checkpoint, and the other GPUs sit idle until it finishes; training is slow",
        "At the end of each epoch the main process evaluates the model, the other ranks wait and sometimes the job hits the NCCL timeout",
        "Our 8-GPU run stalls for 15 minutes per epoch while rank 0 writes the checkpoint, then crashes with a watchdog timeout",
        "每个epoch结束后只在rank 0上做验证，其他卡都在等，训练很慢",
        "主进程每轮保存模型的时候，其他卡都在等待，最后报了超时",
        "四卡训练，0号卡在每个 epoch 末做评估，其余的卡闲着，整体速度变慢了",
    ],
    EFFECTIVE: [
        "The paper trains with batch size 64, but on my single RTX 4090 I get CUDA out of memory above batch 4",
        "The authors report a batch size of 256 on 8 GPUs; with the same setting my 4 A100s run out of memory",
        "The official config uses batch size 32 and I hit OOM on one 24GB card, how did they train it?",
        "论文里batch size是64，我用一张4090设成64就爆显存了",
        "作者说batch size用的是256，我8张3090照着设直接OOM",
        "官方配置里的 batch size 是 32，我单卡 24G 跑就显存不足，他们是怎么训练的？",
    ],
}


@pytest.mark.parametrize(("expected", "question"), [(k, q) for k, qs in CASES.items() for q in qs])
def test_the_first_sentence_names_the_cause(expected, question):
    got, sentence = lead_of(question)
    assert got == expected, sentence


@pytest.mark.parametrize("question", [q for k in (INIT, COLLECTIVE) for q in CASES[k]])
def test_a_hang_is_a_failure_and_never_answered_with_an_ask(question):
    assert reports_failure(question)
    got, sentence = lead_of(question)
    assert got != NEEDS_FACTS, sentence


@pytest.mark.parametrize("text", ["训练hang住了", "跑起来以后就没反应", "the run makes no progress after start-up",
                                  "nothing happens after the launcher starts"])
def test_stuck_words_without_an_english_boundary_report_a_failure(text):
    assert reports_failure(text)


@pytest.mark.parametrize("text", ["DDP 和 FSDP 哪个更适合 7B 全参微调？", "Which strategy for a 13B model on 8 A100?"])
def test_a_plain_strategy_question_reports_no_failure(text):
    assert not reports_failure(text)


def test_every_class_has_three_phrasings_in_each_language():
    for questions in CASES.values():
        zh = [q for q in questions if any("\u4e00" <= ch <= "\u9fff" for ch in q)]
        assert len(zh) >= 3 and len(questions) - len(zh) >= 3


# Each cause keeps to its own class: the neighbours it must not take over
NOT_THIS = [
    # Windows has no NCCL: a gloo hang there is the rendezvous, not the backend choice
    (GLOO, "On Windows 10 my two-GPU run with the gloo backend hangs right after launch"),
    (GLOO, "Windows上双卡用gloo后端训练，启动后一直卡住"),
    # a hang while the process group starts is not a collective out of step
    (COLLECTIVE, "Two machines, 8 GPUs each: the job is stuck in init_process_group and never trains"),
    (COLLECTIVE, "两台机器训练，一直卡在初始化进程组那一步"),
    # the errors about twice-ready or unused parameters are their own entries
    (FIND_UNUSED, "DDP with find_unused_parameters=True fails: Expected to have finished reduction in the prior iteration"),
    (FIND_UNUSED, "开了find_unused_parameters=True和梯度检查点，报错 marked ready twice"),
    # an OOM with no published batch named is not an effective-batch question
    (EFFECTIVE, "LoRA on a 7B model with batch 8 on one RTX 4090 gives CUDA out of memory at the first step"),
    (EFFECTIVE, "单张4090做7B的LoRA，batch设为8，第一步就爆显存"),
]


@pytest.mark.parametrize(("cause", "question"), NOT_THIS)
def test_a_neighbouring_failure_is_not_led_by_this_cause(cause, question):
    got, sentence = lead_of(question)
    assert got != cause, sentence


@pytest.mark.parametrize("question", [
    "Our 3-node run hangs after 1000 steps with no error and all GPUs at 100%",
    "两台机器训练跑了几个小时后卡住了，没有报错",
])
def test_a_hang_across_nodes_is_not_answered_with_the_communication_share(question):
    # the communication share per step answers a slow run, never a stuck one (bot.decide)
    answer = answer_offline(question)
    got, sentence = lead_cause(answer)
    assert got == COLLECTIVE, sentence
    text = answer.full_text if isinstance(answer.full_text, str) else answer.text
    assert "multi-node slowdown usually comes from" not in text and "It is the communication" not in text
    assert "多机变慢通常就慢在这里" not in text and "慢在通信" not in text


def test_a_paper_question_without_an_own_run_stays_out_of_scope_and_with_an_oom_is_read():
    from bot.understand.scope import scope_of as _scope

    assert _scope("论文里用了多少张卡训练？", has_setup=False) == "out_of_scope"
    assert _scope("按论文里的batch size 64训练，单卡直接显存不足", has_setup=True) is None


@pytest.mark.parametrize("text", ["其余的卡一直在等主进程", "rank 3 is waiting while the other ranks finished",
                                  "每个epoch之间停顿很久"])
def test_the_words_of_a_distributed_hang_are_on_topic(text):
    assert parse_conversation(text).intent != "out_of_scope"
