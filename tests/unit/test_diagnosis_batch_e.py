"""Issue 25, first-contact batch e (evals/first_contact.md, classes 15-18 and 21): the FIRST
sentence of a troubleshooting answer names the cause the question's own facts point to, in
phrasings of our own (en and zh), never the threads' words. No retrieval (``with_knowledge=False``):
the playbook is YAML in the repository and the calculator is pure, so these stay fast."""

from __future__ import annotations

import pytest
from _helpers import answer_offline, lead_of

from bot.parse import parse_conversation
from evals.bench_diagnosis import NEEDS_FACTS, lead_cause

OVERSUBSCRIBE, LOADER_RAM, STARVED = ("pb-dataloader-workers-oversubscribe", "pb-dataloader-workers-host-ram",
                                      "pb-dataloader-starves-gpu")
STEP_TIME, BELOW_REQUIREMENT = "pb-throughput-per-device", "pb-card-below-stated-requirement"

CASES = {
    # 18: num_workers is per process, GPUs x workers above the cores
    OVERSUBSCRIBE: [
        "I launch torchrun on 8 GPUs with num_workers=16 in each dataloader and the box has 32 cores; training crawls",
        "Our 4-GPU DDP job uses 24 workers per process on a 48 vCPU VM and it is much slower than expected, why?",
        "With --workers 12 on each of 8 A100s (64 CPU cores in total) every step is slow, what's wrong?",
        "8卡训练，dataloader的num_workers设成了16，机器只有32核，训练特别慢",
        "4张卡DDP，每个进程 num_workers=20，服务器一共40个CPU核，训练很慢，为什么？",
        "八卡训练时 workers 设为 12，CPU 只有 48 核，速度比预期慢很多，怎么办",
    ],
    # 18: the loader's workers run the host out of RAM
    LOADER_RAM: [
        "DataLoader worker (pid 4242) is killed by signal: Killed after a few minutes on my 4-GPU run with num_workers 12",
        "Training on 2 GPUs dies with 'DataLoader worker exited unexpectedly' at the start of the first epoch",
        "My 8-GPU job gets SIGKILL once the epoch starts; each rank uses 16 dataloader workers and the host has 64 GB RAM",
        "四卡训练时报 DataLoader worker exited unexpectedly，num_workers设的是8",
        "两张卡训练，刚开始第一个epoch就被kill了，dataloader 的 num_workers 是 16，内存只有 32G",
        "多卡训练时 DataLoader 的 worker 被杀（killed by signal），怎么解决？",
    ],
    # 18: the data pipeline starves the GPUs
    STARVED: [
        "GPU utilization stays around 30% while training on 4 A100s, how can I raise it?",
        "nvidia-smi shows low GPU utilization during my 8-GPU DDP training, any way to improve it?",
        "The GPUs sit idle between steps and the data loading seems to be the bottleneck, what should I change?",
        "4张A100训练时GPU利用率只有30%左右，怎么提高？",
        "8卡训练GPU利用率忽高忽低，有什么办法提升？",
        "训练时显卡利用率很低，数据加载好像是瓶颈，该怎么优化？",
    ],
    # 21: the same time per step on more cards is the speed-up
    STEP_TIME: [
        "Training on 2 GPUs and on 4 GPUs takes the same time per iteration, why is 4 GPUs not faster?",
        "Each step takes 1.2 s with 1 GPU and also 1.2 s with 8 GPUs under DDP; where is my speed-up?",
        "My iteration time did not change going from two cards to four cards with the same per-GPU batch, is DDP working?",
        "用2张卡和4张卡训练，每个step的时间一样，为什么没有加速？",
        "单卡和8卡DDP每步耗时差不多，多卡为什么没有变快？",
        "两张卡和四张卡的每个迭代时间相同，是不是多卡没起作用？",
    ],
    # 16: a per-card requirement the project states, above the cards
    BELOW_REQUIREMENT: [
        "The repo says it needs 80GB per GPU; I have 4x RTX 4090 24GB and get CUDA out of memory, what can I do?",
        "I have 8 RTX 3090 cards and training runs out of memory; the authors say it requires 80GB per GPU. Why?",
        "The model card says 48GB of GPU memory is needed; my 2x RTX 3090 24GB run out of memory",
        "项目说需要40G显存，我用4张3090 24G还是显存不足",
        "官方说至少要80G的卡，我用8张4090训练就爆显存了，怎么办？",
        "我两张3090跑就OOM，作者说需要80G显存，是什么原因？",
        "作者在80G的A100上测试的，我两张3090跑就OOM，是什么原因？",
        "The authors tested on 80 GB A100s, and on my 8 RTX 3090 training runs out of memory. Why?",
    ],
}


@pytest.mark.parametrize(("expected", "question"), [(k, q) for k, qs in CASES.items() for q in qs])
def test_the_first_sentence_names_the_cause(expected, question):
    got, sentence = lead_of(question)
    assert got == expected, sentence


def test_every_class_has_three_phrasings_in_each_language():
    for questions in CASES.values():
        zh = [q for q in questions if any("\u4e00" <= ch <= "\u9fff" for ch in q)]
        assert len(zh) >= 3 and len(questions) - len(zh) >= 3


# 18: the two worker causes are told apart by the numbers: workers that fit the cores are no oversubscription
@pytest.mark.parametrize("question", [
    "8 GPUs, num_workers=2 per process, 64 cores, GPU utilization is only 20%, how to improve it?",
    "4 GPUs with 4 workers each on a 96-core machine and GPU utilization is low, how can I increase it?",
    "8卡训练，每个进程num_workers=2，机器有64核，GPU利用率只有20%，怎么提高？",
    "四卡训练 num_workers=4，CPU 有 96 核，GPU 利用率很低，怎么提升？",
])
def test_workers_within_the_cores_are_not_oversubscription(question):
    got, sentence = lead_of(question)
    assert got == STARVED, sentence


@pytest.mark.parametrize(("text", "expected"), [
    ("8 GPUs, num_workers=16, 32 cores", True),
    ("8 GPUs, num_workers=2, 64 cores", False),
    ("8卡，num_workers设为16，机器32核", True),
    ("4卡，每个进程 num_workers=4，CPU有96核", False),
])
def test_workers_oversubscribe_is_computed_from_the_numbers(text, expected):
    from bot.knowledge.playbook import PlaybookQuery, derive_facts

    gpus = 8 if text.startswith("8") else 4
    assert derive_facts(PlaybookQuery(text=text, gpu_count=gpus)).workers_oversubscribe is expected


# 16: a card at or above the stated figure is not "below the requirement"
@pytest.mark.parametrize("question", [
    "The repo says it needs 40GB per GPU; I have 4x A100 80GB and still get CUDA out of memory at the first step",
    "项目说需要40G显存，我用4张A100 80G，第一步就显存不足",
    "README says 24GB of VRAM is required; on my H100 80GB it OOMs at the first step",
])
def test_cards_above_the_stated_requirement_are_not_below_it(question):
    got, sentence = lead_of(question)
    assert got != BELOW_REQUIREMENT, sentence


@pytest.mark.parametrize(("text", "gb"), [
    ("the repo says it needs 80GB per GPU", 80.0),
    ("tested on 80 GB A100s", 80.0),
    ("at least 40GB of VRAM is required", 40.0),
    ("项目说需要40G显存", 40.0),
    ("官方说至少要80G的卡", 80.0),
    ("作者在80G的A100上测试的", 80.0),
    ("the machine needs 64 GB of RAM", None),
    ("需要64G内存", None),
])
def test_the_stated_requirement_is_read_per_card_never_host_ram(text, gb):
    from bot.knowledge.playbook import stated_number

    assert stated_number(text, "stated_requirement_gb") == gb


# 15: low utilisation asked "how to improve" is troubleshooting; a quantity asked stays capacity
@pytest.mark.parametrize(("question", "intent"), [
    ("GPU utilization is very low during training on 8 GPUs, how can I improve it?", "troubleshoot"),
    ("My GPU usage fluctuates between 0 and 40% on 4 cards, is there a way to improve it?", "troubleshoot"),
    ("Training on 2 A100s shows low GPU utilization, how do I increase it?", "troubleshoot"),
    ("多卡训练GPU利用率很低，有什么办法提高吗？", "troubleshoot"),
    ("4卡训练利用率只有40%，怎么提升？", "troubleshoot"),
    ("训练时GPU利用率上不去，如何优化？", "troubleshoot"),
    ("I get OOM on 2x RTX 3090 fine-tuning Qwen-14B, how many GPUs do I need?", "capacity"),
    ("Full fine-tuning 13B on one A100 40GB runs out of memory; how much GPU memory do I need?", "capacity"),
    ("Llama-2-13B OOMs on 4x RTX 4090, what is the minimum number of GPUs for a full fine-tune?", "capacity"),
    ("2张3090微调14B报显存溢出，需要多少张卡？", "capacity"),
    ("单张A100 40G全参微调13B爆显存了，需要多大显存？", "capacity"),
    ("4张4090训练13B显存不足，最少需要几张卡？", "capacity"),
])
def test_the_intent_of_low_utilisation_and_of_a_quantity_after_an_oom(question, intent):
    assert parse_conversation(question).intent == intent


# 17: what the question gives is never asked for again
@pytest.mark.parametrize(("question", "never"), [
    ("Training on 4 A100 with NVLink is slow at 2000 tokens/s, what is wrong?", ("linked", "tokens/s")),
    ("My run on 2 nodes over InfiniBand is slow, 3.5 s per step, what should I check?", ("linked", "time per step")),
    ("Launched with torchrun --nproc_per_node 4 train.py, the job crashes, what is wrong?", ("launch command",)),
    ("训练很慢，8张卡之间是NVLink，每秒 1500 tokens/s，怎么排查？", ("怎么连", "tokens/s")),
    ("用 torchrun --nproc_per_node 8 train.py 启动后报错，怎么办", ("启动命令",)),
    ("多卡训练报错 RuntimeError: NCCL communicator was aborted，用的是 accelerate launch，怎么排查？", ("启动命令", "报错信息")),
])
def test_the_ask_never_names_a_fact_the_question_gives(question, never):
    got, sentence = lead_of(question)
    if got == NEEDS_FACTS:
        assert not any(word in sentence for word in never), sentence


@pytest.mark.parametrize(("question", "words"), [
    ("Training on 4 A100 with NVLink is slow at 2000 tokens/s, what is wrong?", "num_workers"),
    ("训练很慢，8张卡之间是NVLink，每秒 1500 tokens/s，怎么排查？", "num_workers"),
    ("用 torchrun --nproc_per_node 8 train.py 启动后报错，怎么办", "报错信息"),
    ("Launched with torchrun --nproc_per_node 4 train.py, the job crashes, what is wrong?", "error message"),
])
def test_the_ask_names_what_is_still_missing(question, words):
    got, sentence = lead_of(question)
    assert got == NEEDS_FACTS and words in sentence, sentence


# 16, 18, 21: where the question gives the numbers, the lead says them (bound, traceable)
@pytest.mark.parametrize(("question", "expected", "figures"), [
    ("I launch torchrun on 8 GPUs with num_workers=16 in each dataloader and the box has 32 cores; training crawls",
     OVERSUBSCRIBE, ("8 GPUs", "128 loader processes", "32 CPU cores", "about 3 per process")),
    ("4张卡DDP，每个进程 num_workers=20，服务器一共40个CPU核，训练很慢，为什么？",
     OVERSUBSCRIBE, ("4 张卡", "80 个加载进程", "40 个 CPU 核", "约 9 个")),
    ("The repo says it needs 80GB per GPU; I have 4x RTX 4090 24GB and get CUDA out of memory, what can I do?",
     BELOW_REQUIREMENT, ("The 80 GB", "24 GB")),
    ("项目说需要40G显存，我用4张3090 24G还是显存不足", BELOW_REQUIREMENT, ("40 GB", "24 GB")),
    ("Each step takes 1.2 s with 1 GPU and also 1.2 s with 8 GPUs under DDP; where is my speed-up?",
     STEP_TIME, ("8 GPUs process 8x the samples per step of 1", "8x the throughput")),
    ("两张卡和四张卡的每个迭代时间相同，是不是多卡没起作用？", STEP_TIME, ("4 张卡每步处理的样本是 2 张卡的 2 倍", "吞吐")),
])
def test_the_lead_says_the_questions_own_figures(question, expected, figures):
    from evals.harness import Case
    from evals.metrics import check_number_traceability

    answer = answer_offline(question)
    got, sentence = lead_cause(answer)
    assert got == expected, sentence
    assert all(f in sentence for f in figures), sentence
    result = check_number_traceability(Case(id="t", turns=[question]), answer)
    assert result.passed, result.detail


@pytest.mark.parametrize(("question", "never"), [
    ("On 4 nodes our step time is ten times what it is on one node, why?", STEP_TIME),
    ("Two servers over Ethernet: the iteration time got much longer than on a single machine, what's wrong?", STEP_TIME),
    ("两台机器训练时 step time 比单机慢很多，为什么？", STEP_TIME),
    ("Only GPU 0 shows any utilization, the other 3 GPUs stay at 0%; what's wrong?", STARVED),
    ("4卡训练只有一张卡在跑，其他卡利用率是0%，怎么回事？", STARVED),
    ("Training with GPU utilization at 100% on every card is slow; 8 cards, what should I check?", STARVED),
])
def test_the_new_causes_stay_out_of_other_symptoms(question, never):
    """A step that got slower is not the step-time reading; one busy GPU is the launcher; busy GPUs
    are not starved."""
    got, sentence = lead_of(question)
    assert got != never, sentence
