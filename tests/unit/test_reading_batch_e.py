"""Reading classes seen failing at first contact in batch 2026-12-02e (issue 24), each as a rule
tested in phrasings of our own in both languages (never a thread's words):

7  the failing run's count ("with 1 GPU it takes 20GB, with 2 it runs out" is about the 2);
8  machines x GPUs each, with the informal words people use for a node (boxes, workstations, 电脑);
11 parallel degrees written in words ("模型并行度为8", "model parallel size 8", "TP degree 4");
12 a card's memory the reader did not give is assumed, never stated (answer provenance);
13 an unstated count is asked, even in a capacity question that asks about memory;
19 host RAM written as the machine's "memory" / 内存;
20 a per-card phrase ("单张卡只有16G") on a run over several cards is memory, not a count of 1.
"""

from __future__ import annotations

import pytest

from bot.parse import parse_conversation
from bot.understand.degrees import read_degrees


def _setup(text: str) -> dict:
    return {k: v for k, v in parse_conversation(text).setup.model_dump().items() if v is not None}


# --- 7: the failing run's count ---------------------------------------------------------------

@pytest.mark.parametrize(("text", "count"), [
    ("Fine-tuning a 7B with LoRA: on 1 GPU it uses 20GB, but with 2 GPUs it runs out of memory", 2),
    ("When I train on a single GPU it takes up 14GB; when I switch to 4 GPUs there is not enough memory. 7B", 4),
    ("On 2 GPUs there is not enough memory, yet on one GPU memory usage is only 30GB. 13B model", 2),
    ("单卡占用18G，双卡就显存不足了，7B", 2),
    ("用4张卡显存不够，用1张卡只占用了20G，模型13B", 4),
    ("一张卡的时候用了15G显存，两张卡反而OOM", 2),
    ("换成8张卡就爆显存，单卡时显存占用只有30G", 8),
])
def test_the_failing_run_count_is_the_setup(text: str, count: int) -> None:
    parsed = parse_conversation(text)
    assert parsed.setup.gpu_count == count
    assert parsed.observed.worked_gpu_count == 1  # the working run is an observation


def test_a_run_that_measures_memory_and_fails_is_not_a_working_run() -> None:
    # both a measurement and a failure in one clause: no role split, the one count is the run's
    assert _setup("With 2 GPUs it uses 70GB per card and OOMs")["gpu_count"] == 2


# --- 8: machines x GPUs each ------------------------------------------------------------------

@pytest.mark.parametrize(("text", "nodes", "per_node"), [
    ("I have 2 boxes and every box has 4 gpus, 13B model", 2, 4),
    ("two workstations with 4 GPUs each, 7B", 2, 4),
    ("2 computers, every computer has 2 gpus", 2, 2),
    ("four machines, each of them has 8 A100s", 4, 8),
    ("we have two modes and every mode has two gpus", 2, 2),
    ("两个服务器，每个服务器上2块GPU，训练7B", 2, 2),
    ("两台电脑各两张卡，13B", 2, 2),
    ("3台工作站，每台工作站装了两张4090", 3, 2),
    ("两台机器各有4块A100", 2, 4),
])
def test_machines_times_gpus_each(text: str, nodes: int, per_node: int) -> None:
    s = _setup(text)
    assert (s.get("nodes"), s.get("gpus_per_node"), s.get("gpu_count")) == (nodes, per_node, nodes * per_node)


# --- 11: parallel degrees in words -------------------------------------------------------------

@pytest.mark.parametrize(("text", "field", "degree"), [
    ("模型并行度为8，训练13B", "tensor_parallel", 8),
    ("我们的模型并行度是 2 ，数据并行度是 4", "tensor_parallel", 2),
    ("模型并行大小设为4", "tensor_parallel", 4),
    ("流水线模型并行度为2", "pipeline_parallel", 2),
    ("model parallel size 8 with Megatron", "tensor_parallel", 8),
    ("the model-parallel degree is 2", "tensor_parallel", 2),
    ("TP degree 4 on one node", "tensor_parallel", 4),
    ("PP size of 2", "pipeline_parallel", 2),
    ("pipeline model parallel size 4", "pipeline_parallel", 4),
])
def test_degrees_written_in_words(text: str, field: str, degree: int) -> None:
    read = read_degrees(text)
    assert read.fields.get(field) == degree
    assert len(read.fields) == 1  # "pipeline model parallel" is never also a tensor degree


@pytest.mark.parametrize("text", ["Does FSDP support model parallel?", "用模型并行 2张卡", "模型并行和数据并行有什么区别"])
def test_model_parallel_without_a_degree_is_no_degree(text: str) -> None:
    assert read_degrees(text).fields == {}


def test_a_model_parallel_degree_asked_about_is_weighed() -> None:
    read = read_degrees("should I use model parallel size 4?")
    assert read.fields == {} and read.weighed["tensor_parallel"][0] == 4


# --- 19: host RAM written as the machine's memory ----------------------------------------------

@pytest.mark.parametrize(("text", "ram"), [
    ("my machine has 64g of memory and a 4090", 64),
    ("the server has 256GB memory, 8 A100", 256),
    ("my machine has a total of 33.6g of memory, 2 GPUs", 33.6),
    ("Our box has 128 GB of RAM; 4x 3090", 128),
    ("服务器的内存是128G，4张A100", 128),
    ("电脑只有32G内存，显卡4090", 32),
    ("这台机器64G的内存，两张3090", 64),
])
def test_host_memory_is_cpu_ram(text: str, ram: float) -> None:
    s = _setup(text)
    assert s.get("cpu_ram_gb") == ram
    assert s.get("gpu_memory_gb") != ram


@pytest.mark.parametrize(("text", "card"), [
    ("my GPU has 24g of memory", 24),
    ("the server's GPUs have 80GB memory each", 80),
    ("机器上每张卡显存24G", 24),
])
def test_a_card_memory_on_a_machine_stays_the_card(text: str, card: float) -> None:
    s = _setup(text)
    assert s.get("gpu_memory_gb") == card and "cpu_ram_gb" not in s


# --- 20: a per-card phrase on a run over several cards ------------------------------------------

@pytest.mark.parametrize(("text", "memory"), [
    ("单张卡只有16G，想用多张卡加载7B模型", 16),
    ("单卡24G，多卡训练13B怎么设置", 24),
    ("每张卡只有12G，多张卡能跑7B LoRA吗", 12),
    ("a single card only has 16GB, so I want to train 7B on multiple GPUs", 16),
    ("one GPU is 24G; training 13B across several GPUs", 24),
    ("each of my cards has 16GB, multi-gpu training for 7B", 16),
])
def test_per_card_memory_is_not_a_count_of_one(text: str, memory: float) -> None:
    parsed = parse_conversation(text)
    assert parsed.setup.gpu_memory_gb == memory
    assert parsed.setup.gpu_count is None  # unstated: asked, never 1


@pytest.mark.parametrize(("text", "count"), [
    ("单卡24G能训练7B吗", 1),                      # no several-cards word: one card
    ("a single card has 24GB, can I train 7B?", 1),
    ("单张卡只有16G，用4张卡", 4),                   # a number written beside it
    ("单卡只有11G，单机8卡，7B", 8),
])
def test_per_card_phrase_keeps_a_written_or_single_count(text: str, count: int) -> None:
    assert parse_conversation(text).setup.gpu_count == count


# --- 12 / 13: provenance of derived fields, and the count asked --------------------------------

def _answer(text: str):
    from bot.assistant import ask

    return ask(text)


@pytest.mark.parametrize("text", [
    "How much memory does a full fine-tune of a 70B model take?",
    "全参微调70B需要多少显存？",
    "Full fine-tuning a 13B: should I pick DDP or FSDP?",
    "13B全参微调，用DDP还是FSDP？",
])
def test_an_assumed_card_and_count_are_assumed_and_the_count_is_asked(text: str) -> None:
    answer = _answer(text)
    prov = dict(answer.provenance)
    assert prov.get("gpu") == "assumed"
    assert prov.get("gpu_memory_gb") == "assumed"  # the default card's memory is not stated
    assert prov.get("gpu_count") == "assumed"
    assert prov.get("gpus_per_node") == "assumed" and prov.get("nodes") == "assumed"
    assert "gpu_count" in answer.missing  # no silent 8


@pytest.mark.parametrize("text", [
    "I want to full fine-tune a 7B model on 4 A100s, DDP or FSDP?",
    "4张A100全参微调7B，DDP还是FSDP？",
    "4 x H100 for a 13B LoRA: which strategy?",
])
def test_a_card_sold_in_several_sizes_keeps_its_memory_assumed(text: str) -> None:
    prov = dict(_answer(text).provenance)
    assert prov.get("gpu") == "stated"
    assert prov.get("gpu_memory_gb") == "assumed"
    assert prov.get("gpu_count") == "stated"


@pytest.mark.parametrize("text", [
    "I want to full fine-tune a 7B model on 4 A100 80GB cards, DDP or FSDP?",
    "4张A100 40G全参微调7B，DDP还是FSDP？",
])
def test_a_written_size_is_stated(text: str) -> None:
    assert dict(_answer(text).provenance).get("gpu_memory_gb") == "stated"


@pytest.mark.parametrize("text", [
    "How many A100s do I need to fully fine-tune a 70B model?",
    "全参微调70B需要几张A100？",
    "For a 34B full fine-tune, how many H100 cards would I need?",
])
def test_a_question_that_asks_the_count_is_answered_not_asked(text: str) -> None:
    assert "gpu_count" not in _answer(text).missing


@pytest.mark.parametrize(("text", "count"), [
    ("my 80G card runs out of memory with a 13B model", 1),
    ("training 7B on a single H100", 1),
    ("both of my GPUs run out of memory with 13B", 2),
    ("dual A6000s for a 13B LoRA", 2),
    ("我只有一张卡，24G，7B能全参吗", 1),
    ("手上一块A100，训练13B", 1),
    ("两张卡都爆显存了，13B", 2),
    ("双卡4090训练7B", 2),
])
def test_a_count_the_words_imply_is_read_not_defaulted(text: str, count: int) -> None:
    parsed = parse_conversation(text)
    assert parsed.setup.gpu_count == count and "gpu_count" not in parsed.missing
