"""Batch f classes 7 (counts and nodes) and 8 (capacity intent), in phrasings of our own, both
languages: the failing run's machines x GPUs, nodes with GPUs each, a single-node launch beside
"two machines", one card named beside a question about someone else's run, and "must it be several
cards / is one enough" read as capacity."""

from __future__ import annotations

import pytest
from _helpers import lead_of

from bot.parse import parse_conversation


def counts(text: str) -> tuple:
    s = parse_conversation(text).setup
    return s.nodes, s.gpus_per_node, s.gpu_count


# (a) the failing run's machines x GPUs, the working one an observation
@pytest.mark.parametrize("text,expected", [
    ("Training is fine on 2 nodes x 4 GPUs but it hangs with 3 nodes x 4.", (3, 4, 12)),
    ("Our job is stuck on 4x8 A100 but worked on 2x8 A100.", (4, 8, 32)),
    ("With 3 servers x 8 cards everything works, with 6 servers x 8 cards NCCL times out.", (6, 8, 48)),
    ("3台x8卡可以跑，6台x8卡一直hang", (6, 8, 48)),
    ("两个节点x4卡没问题，换成4个节点x4卡就超时了", (4, 4, 16)),
    ("2机x4卡训练正常，但是3机x4卡就卡死", (3, 4, 12)),
])
def test_the_failing_grid_is_the_setup(text, expected):
    assert counts(text) == expected


# (b) N nodes with M GPUs each
@pytest.mark.parametrize("text,expected", [
    ("We train on 3 H100 nodes (4 GPUs each) and see low throughput.", (3, 4, 12)),
    ("2 DGX nodes with 8 GPUs each, the NCCL init never returns", (2, 8, 16)),
    ("five A100 servers, each with 8 GPUs, the run is slow", (5, 8, 40)),
    ("3个节点（每个节点8卡）NCCL超时", (3, 8, 24)),
    ("2台机器(每台4张A100)训练很慢", (2, 4, 8)),
    ("4台服务器(每台2卡)跑FSDP报错", (4, 2, 8)),
])
def test_nodes_with_gpus_each(text, expected):
    assert counts(text) == expected


# (c) "two machines" contradicted by a launch that runs on one node
@pytest.mark.parametrize("text,expected", [
    ("I have two A40 boxes; torchrun --standalone --nproc_per_node=2 train.py OOMs", (1, 2, 2)),
    ("Two L40S servers; I launch with torchrun --nnodes=1 --nproc_per_node=4 train.py and it OOMs", (1, 4, 4)),
    ("We have 2 servers with 4 A100 each. torchrun --nproc_per_node=4 --standalone train.py hangs", (1, 4, 4)),
    ("两台A100服务器，用 torchrun --nproc_per_node=2 train.py 启动，显存不够", (1, 2, 2)),
    ("两台4090主机，python -m torch.distributed.run --standalone --nproc_per_node 2 train.py 报OOM", (1, 2, 2)),
    ("三台机器，torchrun --nnodes 1 --nproc_per_node 8 train.py 卡住", (1, 8, 8)),
])
def test_a_single_node_launch_is_one_node(text, expected):
    assert counts(text) == expected


@pytest.mark.parametrize("text", [
    "两台机器，torchrun --nnodes=2 --node_rank=0 --master_addr=10.0.0.1 --nproc_per_node=8 train.py 卡住",
    "Two servers: torchrun --nnodes 2 --nproc_per_node 8 --rdzv_endpoint host:29500 train.py hangs",
])
def test_a_multi_node_launch_keeps_its_nodes(text):
    assert counts(text) == (2, 8, 16)


# (d) one card named once, beside a question about someone else's run
@pytest.mark.parametrize("text,gpu", [
    ("My RTX 3090 runs out of memory at batch size 1. What GPUs did you use for the paper?", "RTX 3090"),
    ("I tried it on my A6000 and hit OOM. Which cards did the authors train on?", "A6000"),
    ("my L4 ran out of memory; how many GPUs did you train with?", "L4"),
    ("我的4090爆显存了，作者用了几张卡？", "4090"),
    ("在一张A100 40G上OOM，论文里用的是多少卡？", "A100"),
    ("单卡A100 40G能复现吗？你们用了几张卡？", "A100"),
])
def test_one_named_card_is_one_gpu(text, gpu):
    p = parse_conversation(text)
    assert p.setup.gpu_count == 1 and gpu in p.setup.gpu
    assert p.provenance["gpu_count"].source == "stated"


def test_an_oom_logs_total_capacity_is_the_cards_memory():
    p = parse_conversation("Fine-tuning a diffusion model on 2 GPUs. RuntimeError: CUDA out of memory. Tried to allocate "
                           "1.50 GiB (GPU 0; 23.69 GiB total capacity; 21.2 GiB already allocated; 500 MiB free)")
    assert p.setup.gpu_memory_gb == 24 and p.provenance["gpu_memory_gb"].source == "log"


# class 8: a quantity of cards asked is capacity; choosing a strategy stays recommend
@pytest.mark.parametrize("text", [
    "Must it run on several cards, or is one 4090 enough for LoRA on Qwen2-7B?",
    "Can it only run on multiple GPUs? I have one A100.",
    "Does training this model require more than one GPU?",
    "Is a single GPU enough to fine-tune Mistral 7B?",
    "How much GPU memory does full fine-tuning of a 7B model need?",
    "这个模型必须多卡吗？我只有一张3090",
    "微调Qwen2-7B一定要多卡吗？",
    "只能多卡训练吗？",
    "全参微调7B，一张A100 80G卡够吗？",
    "单卡4090够不够LoRA微调7B？",
    "LoRA微调Qwen2-7B需要多少显存？",
])
def test_cards_needed_is_capacity(text):
    assert parse_conversation(text).intent == "capacity"


@pytest.mark.parametrize("text", [
    "DDP or FSDP for 8x A100 with Llama 13B?",
    "Should I use FSDP for Llama 13B on 4 A100s?",
    "我该用DDP还是FSDP？8张4090",
    "4张A100微调13B，用哪种策略？",
])
def test_choosing_a_strategy_stays_recommend(text):
    assert parse_conversation(text).intent == "recommend"


# class 3: more cards did not help with an OOM, the model not sized by the catalog: data parallelism
# keeps a whole copy on every card (no retrieval: the playbook and the calculator are local)
NO_POOL = "pb-dp-does-not-pool-memory"


@pytest.mark.parametrize("question", [
    "My pose estimation network OOMs on a single Titan RTX, and spreading it over 4 of them with DDP made no difference. Why?",
    "Even with batch_size=1 per GPU the image generator still goes out of memory on all of the cards of my 4x A5000 server.",
    "The super-resolution model runs out of memory on every GPU; adding more GPUs doesn't help. What can I do?",
    "训练超分模型单卡OOM，换成更多卡也还是爆显存，怎么回事？",
    "每张卡都爆显存，batch size调到1了还是OOM，用的是4张2080Ti跑姿态估计",
    "无论用多少张卡这个生成模型都会OOM，多卡也还是显存不足",
])
def test_more_cards_not_helping_leads_with_no_pooling(question):
    got, sentence = lead_of(question)
    assert got == NO_POOL, sentence


@pytest.mark.parametrize("question", [
    "My DDP run OOMs only on GPU 0 while the other cards stay almost empty",
    "单卡训练这个模型显存不够，用什么策略？",
])
def test_other_ooms_do_not_lead_with_no_pooling(question):
    assert lead_of(question)[0] != NO_POOL


@pytest.mark.parametrize("question", [
    "Full fine-tuning Llama-2-13B on 4x RTX 3090 with DDP, batch size 1, still CUDA out of memory; adding more GPUs did not help.",
    "Qwen2.5-14B full fine-tune OOMs on each of the 4 A10 24GB cards, no matter how many GPUs I add.",
    "Batch size is 1 and a full fine-tune of Llama-2-13B still runs out of memory on every card of my 2x 4090.",
    "全参微调Llama-2-13B，4张3090用DDP，batch size设为1还是OOM，加卡也没用",
    "Qwen2.5-14B全参微调，4张A10 24G每张卡都爆显存，多卡也还是OOM",
    "用2张4090全参微调Llama-2-13B，每张卡都爆显存，再加卡也还是OOM",
])
def test_a_sized_model_gets_the_computed_card_lead(question):
    got, sentence = lead_of(question)
    assert got == "pb-card-too-small" and "GiB" in sentence, sentence
