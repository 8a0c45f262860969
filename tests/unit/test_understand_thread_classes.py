"""Reading classes the real-thread gold cases (evals/cases/gold_threads.jsonl) exposed: one test per
class, each with phrasings beyond the thread that found it (the rule covers the class, not one text)."""

from __future__ import annotations

import pytest

from bot.parse import parse_conversation


def setup_of(text: str, history: list[str] | None = None):
    return parse_conversation(text, history).setup


# --- counts: one card in the person's own words is one GPU; never a silent default ------------------

@pytest.mark.parametrize("text", [
    "I'm trying to finetune Llama2 70B using a NVIDIA A100 with 80Gb, but I get OOM",
    "I am running it on a 7B model. I have A100 80GB. I guess this will fit onto the GPU right?",
    "I'm running RoCM(RX 5600XT, 8GB of Vram) with 16GB of Ram backing it",
    "fine-tuning Mistral-7B on an H100, which strategy?",
])
def test_one_card_named_in_the_singular_is_one_gpu(text):
    parsed = parse_conversation(text)
    assert parsed.setup.gpu_count == 1 and parsed.provenance["gpu_count"].span in text


@pytest.mark.parametrize("text", [
    "Should I use FSDP for a 13B model on H100s?",
    "I have A100 GPUs, 7B full fine-tune",
    "We have a A100 cluster for 70B",
])
def test_plural_or_cluster_cards_are_not_one_gpu(text):
    assert setup_of(text).gpu_count is None


def test_a_worded_single_gpu_beside_a_figure_is_the_comparison():
    s = setup_of("I tried with 8 x A40 each 48GB. A single GPU can handle 5000 tokens but with 8 of them it fails at 6000")
    assert s.gpu_count == 8
    assert setup_of("a single GPU can handle 5000 max tokens but with 8 A40s it fails").gpu_count == 8


@pytest.mark.parametrize("text, total, nodes, per_node", [
    ("two 8 A100 Server have a slower speed than one 8 A100 Server. Now I have another 8 A100 machine", 16, 2, 8),
    ("3 8 H100 nodes, 70B full", 24, 3, 8),
    ("on a single node with 4x Nvidia A40 GPUs", 4, 1, 4),
])
def test_nodes_of_n_cards_give_the_total(text, total, nodes, per_node):
    s = setup_of(text)
    assert (s.gpu_count, s.nodes or 1, s.gpus_per_node) == (total, nodes, per_node)


def test_a_grid_after_a_machine_count_is_nodes_times_cards():
    s = setup_of("4* 8 *A800", ["全量微调 72B 需要多少资源呢", "4台 A800 机器，用给定的 zero3，OOM"])
    assert (s.gpu_count, s.nodes, s.gpus_per_node) == (32, 4, 8)


# --- card memory ----------------------------------------------------------------------------------

@pytest.mark.parametrize("text, memory", [
    ("GPT-Neo 2.8B with zero_stage=2 on 4 A10G GPUs", 24),   # "A10G" is a card, not a 10 GB A10
    ("a NVIDIA A100 with 80Gb", 80),                         # a Gb figure attached to a card is memory
    ("Llama 2 70b lora on 8*a-100 (80gb)", 80),              # "a-100" is an A100
])
def test_card_memory_from_the_card_as_written(text, memory):
    s = setup_of(text)
    assert s.gpu_memory_gb == memory and s.inter_node_gbps is None


def test_the_users_card_size_wins_over_the_nearest_catalog_card():
    parsed = parse_conversation("一张H100显卡，96G显存，全参数微调Qwen 32B")
    assert parsed.setup.gpu_memory_gb == 96 and not parsed.problems


def test_a_consumer_card_the_catalog_lacks_is_a_card_not_figures():
    parsed = parse_conversation("I'm running RoCM(RX 5600XT, 8GB of Vram), flan-t5-large")
    assert parsed.unknown_gpu and parsed.setup.gpu_memory_gb == 8
    assert all("5600" not in p.span for k, p in parsed.provenance.items() if k == "gpu_memory_gb")


def test_a_follow_up_naming_the_link_keeps_the_card_size():
    s = setup_of("有NVlink，4卡没机会的话8卡有机会吗", ["请问4张A800-40G能进行Qwen2VL 72B的Lora微调吗"])
    assert s.gpu_memory_gb == 40 and s.intra_node_link == "nvlink"
    s = setup_of("那么13B用32G显存能微调吗？", ["如果是4个没有NVLink的V100（32G显存），能微调吗？"])
    assert s.intra_node_link == "pcie" and s.gpu_count == 4


# --- host RAM -------------------------------------------------------------------------------------

@pytest.mark.parametrize("text, ram", [
    ("CPU: Xeon E5-2630 v2 but limited to 16GB as this is what the instance has.\nGPU: 4x A40", 16),
    ("内存：256G\n显卡：8张4090", 256),
    ("lora on 8*a-100 (80gb) with 1T memory", 1024),
    ("8x H100 and 2TB of memory on the node", 2048),
])
def test_host_ram_from_labels_and_sizes_no_card_has(text, ram):
    assert setup_of(text).cpu_ram_gb == ram


# --- method and negation --------------------------------------------------------------------------

@pytest.mark.parametrize("text, method", [
    ("What I actually meant was a full fine-tuning, but not specifically Lora or QLora.", "full"),
    ("How many A100s to tune 13B ( full parameter )? lora is not the best option for a new language", "full"),
    ("Chinese-Alpaca-Plus-13B继续做peft微调需要多少显存？", "lora"),
    ("LoRA plugin: plugins = BitsandbytesPrecision('nf4-dq', torch.bfloat16), Llama 2 70B", "qlora"),
    ("LoRA with load_in_4bit on a 7B", "qlora"),
    ("LoRA is the best option for us, 7B on 2 4090s", "lora"),
])
def test_method_with_negations_and_library_names(text, method):
    assert setup_of(text).finetune == method


# --- model identity and size ----------------------------------------------------------------------

@pytest.mark.parametrize("text, model, size", [
    ("全参数微调 baichuan-7b 模型至少需要多少显存资源？", "Baichuan-7B", 7.0),
    ("想了解全量Qwen-14B需要多少显存", "Qwen-14B", 14.2),
    ("Qwen2.5-14B LoRA on 2 4090s", "Qwen2.5-14B", 14.8),
    ("Baichuan2-7B full on 8 A100", "Baichuan2-7B", 7.5),
])
def test_first_generation_names_are_their_own_models(text, model, size):
    from bot.catalog import lookup_model

    s = setup_of(text)
    assert s.model == model and abs(lookup_model(s.model).params_b - size) / size < 0.01


@pytest.mark.parametrize("text, history, size", [
    ("SW: Model with 9708M total params, 262M largest layer params.\n全参微调, 4 * A100-SXM4-40GB", None, 9.708),
    ("我尝试将7B的模型压缩到5.7B，在单卡上进行微调还是会OOM", ["全参量微调7B模型需要多少显存？"], 5.7),
    ("we pruned it down to 3.2B and it still OOMs on one 4090", None, 3.2),
])
def test_the_size_actually_trained(text, history, size):
    assert setup_of(text, history).params_b == size


def test_a_hedged_size_beside_a_named_model_is_a_rule_of_thumb():
    s = setup_of("全参微调qwen-2.5-32b OOM？我看了硬件配置，30b左右全参半精度不是300g就够了")
    assert s.model == "Qwen2.5-32B" and s.params_b is None


# --- sequence length ------------------------------------------------------------------------------

@pytest.mark.parametrize("text, seq", [
    ("Llama3-70B 8K全参数微调需要多少张A100 80G的卡？", 8192),
    ("Qwen2.5-7B 32k LoRA on 8 H100", 32768),
    ("我的序列长度是512.", 512),
    ("seq len 4096.", 4096),
])
def test_sequence_length_after_a_model_or_before_a_full_stop(text, seq):
    assert setup_of(text).seq_len == seq


# --- language across a conversation ---------------------------------------------------------------

def test_a_turn_of_figures_only_keeps_the_conversations_language():
    history = ["全量微调 72B 需要多少资源呢", "4台 A800 机器，用给定的 zero3，OOM"]
    assert parse_conversation("4* 8 *A800", history).language == "zh"
    assert parse_conversation("8x H100", ["我有一个7B模型要全参微调"]).language == "zh"
    # a sentence of the person's own decides: they switched language
    assert parse_conversation("what about 8x H100 then?", ["我有一个7B模型要全参微调"]).language == "en"


def test_two_cards_joined_by_and_are_not_one_gpu():
    assert setup_of("fine-tune 7B on a 4090 and a 3090").gpu_count is None
    assert setup_of("Can the fine-tuning of the 7B model be done on an A100 40G? I tried with an A100").gpu_count == 1
