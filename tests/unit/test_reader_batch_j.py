"""The failure classes of first-contact batch j (evals/first_contact.md, "Batch 2026-12-02j", "Failures,
by class"), each in phrasings of our own, both languages, none of them a thread's words:

1. a model named in a pasted script (a path, a variable, a from_pretrained call) is read from the last
   meaningful segment of its path when the prose names none; a family name that holds a shorter catalog
   alias or a size word ("tinyllama", "starcoderbase-7b", "tiny-bert") is not read as that other entry;
2. an earlier run beside the one asked about is a reference: the setup is the run asked about, and the
   two runs' different models or cards are never a problem that stops the answer;
3. counts: "several/multiple/多张" cards is a count to ask (never one); one card "and the other N" is N + 1;
   a deepspeed --include localhost:... or CUDA_VISIBLE_DEVICES launch is one node of that many GPUs;
4. concept questions that state a setup (how batch size and learning rate follow the GPU count, one
   strategy's counterpart in the other library) are concepts; a strategy faster than another for the
   stated setup is a recommendation.
"""

from __future__ import annotations

import pytest

from bot.parse import parse_conversation
from bot.understand.spans import find_models, model_params_b


def codes(parsed) -> list[str]:
    return [n.code for n in parsed.notes]


def size_of(parsed) -> float | None:
    s = parsed.setup
    return s.params_b if s.params_b is not None else (model_params_b(s.model) if s.model else None)


# --- 1. a model named in a pasted script ---------------------------------------------------------------

@pytest.mark.parametrize("text, size", [
    ("MODEL=/nas/hf/Mistral-7B-v0.1\ntorchrun --nproc_per_node 4 sft.py --model $MODEL  OOM on 4 A100 80GB", 7.24),
    ("Launch line: python finetune.py --pretrained_model_path weights/llama-13b.bin --batch_size 4, on 2 A100 80GB, "
     "out of memory", 13.0),
    ("tok = AutoTokenizer.from_pretrained(path)\nmodel = AutoModelForCausalLM.from_pretrained("
     "'/home/u/ckpt/foo2_13b_sft/checkpoint-300') runs out of memory on 8 V100 32GB", 13.0),
    ("在4张3090上跑LoRA爆显存：\nCKPT=/data/models/Qwen2.5-7B-Instruct\n"
     "deepspeed --include localhost:0,1,2,3 train.py --model_name_or_path ${CKPT}", 7.62),
    ("两张A100 80G全参微调报OOM，命令：python run.py --base_model_path /mnt/llm/zeta2-6b/ --bf16", 6.0),
    ("用8张V100训练，脚本里写的是 model_dir = '/ckpt/Baichuan2-13B-Chat/step_2000'，显存不够怎么办", 13.9),
])
def test_a_model_in_a_pasted_script_is_read_from_its_path(text, size):
    parsed = parse_conversation(text)
    assert size_of(parsed) == pytest.approx(size, rel=0.05), parsed.setup
    assert "params_b" not in parsed.missing and not parsed.problems


@pytest.mark.parametrize("text, size", [
    ("pretraining tinyllama on two RTX 4090, DDP or FSDP?", 1.1),
    ("TinyLlama_v1.1 continued pretraining on 4 A6000s is slow", 1.1),
    ("LoRA on mistral-community/pixtral-12b with 4 A100 80GB, DDP or FSDP?", 12.4),
    ("在两张4090上预训练tinyllama，用DDP还是FSDP？", 1.1),
    ("用两张A100 80G微调 mistral-community/pixtral-12b，显存够吗？", 12.4),
    ("用8卡H100训练TinyLlama_v1.1，速度很慢", 1.1),
])
def test_a_family_name_holding_a_shorter_alias_is_its_own_family(text, size):
    parsed = parse_conversation(text)
    assert parsed.setup.model != "tiny"
    assert size_of(parsed) == pytest.approx(size, rel=0.05), parsed.setup


@pytest.mark.parametrize("text", [
    "tiny-bert distillation on 2 V100, DDP?",
    "Is a tiny model enough to try FSDP on 2 GPUs?",
    "deit_tiny on 8 GPUs, the utilisation is low",
    "tiny-bert蒸馏，2张V100，用DDP吗",
    "先用一个tiny模型在两张卡上试一下FSDP可以吗",
    "vit_tiny_patch16 在4张卡上训练，DDP还是FSDP",
])
def test_a_size_word_alone_or_joined_to_a_family_names_no_catalog_entry(text):
    parsed = parse_conversation(text)
    assert parsed.setup.model not in ("tiny", "BERT-base"), parsed.setup


@pytest.mark.parametrize("text, name", [
    ("mistral-community/pixtral-12b", "Pixtral-12B"),   # an organisation holding a family word
    ("/data/llama-2-7b/Qwen2.5-14B", "Qwen2.5-14B"),     # a folder before the model's own folder
    ("starcoderbase-1b", "StarCoderBase-1B"),            # "base" glued to the family is no release word
    ("TinyLlama_v1.1", "TinyLlama-1.1B"),
])
def test_the_longest_name_in_a_token_is_the_model(text, name):
    assert find_models(text)[0].name == name


# --- 2. an earlier run beside the one asked about -----------------------------------------------------

@pytest.mark.parametrize("text, want", [
    ("Last week a 1.5B fine-tune went fine on one H100 80GB; now I'm trying Llama-2-13B on 4 A100 40GB and it OOMs.",
     {"model": "Llama-2-13B", "gpu_memory_gb": 40, "gpu_count": 4}),
    ("Mistral-7B LoRA trained without issues on my two 3090s. Would Llama-2-13B LoRA fit on them?",
     {"model": "Llama-2-13B", "gpu": "RTX 3090 24GB", "gpu_count": 2}),
    ("I fine-tuned a 3B on an A6000 successfully, next I want a 14B on 2 H100 80GB. DDP or FSDP?",
     {"params_b": 14.0, "gpu_memory_gb": 80, "gpu_count": 2}),
    ("之前在一张A100 80G上微调3B模型没问题，现在想在4张4090上微调7B，用DDP还是FSDP？",
     {"params_b": 7.0, "gpu": "RTX 4090 24GB", "gpu_count": 4}),
    ("上次用两张3090微调Qwen2.5-7B很顺利，这次想微调Qwen2.5-14B，显存够吗？",
     {"model": "Qwen2.5-14B", "gpu": "RTX 3090 24GB", "gpu_count": 2}),
    ("单卡H100跑1.5B一切正常，换成8张A100 40G训练13B却OOM了",
     {"params_b": 13.0, "gpu_memory_gb": 40, "gpu_count": 8}),
])
def test_an_earlier_run_is_a_reference_and_the_asked_run_is_the_setup(text, want):
    parsed = parse_conversation(text)
    got = parsed.setup.model_dump()
    assert {k: got[k] for k in want} == want, parsed.setup
    assert not parsed.problems and "reference_run" in codes(parsed)


# --- 3. counts ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("text", [
    "Mistral-7B LoRA runs on a single A6000 GPU, but it fails with multiple A6000 GPUs.",
    "Could this fit on one card? Right now I train Llama-2-13B on a few A100s and it runs out of memory.",
    "We fine-tune Qwen2.5-7B across several RTX 4090s and every step is slow",
    "Llama-2-7B：用单张3090可以跑，用多张3090就爆显存",
    "我用多张A100微调Qwen2.5-14B，显存不够怎么办",
    "手上有好几张4090，训练Mistral-7B时很慢",
])
def test_several_cards_is_a_count_to_ask_never_one(text):
    parsed = parse_conversation(text)
    assert parsed.setup.gpu_count is None, parsed.setup
    assert "gpu_count" in parsed.missing and "count_several" in codes(parsed)


@pytest.mark.parametrize("text", [
    "Llama-2-7B full fine-tune works on a single A100 80GB but OOMs on several A100 80GB GPUs, DDP or FSDP?",
    "Llama-2-7B全参微调单张A100 80G能跑，多张A100 80G反而OOM，用DDP还是FSDP？",
])
def test_the_answer_asks_how_many_when_the_cards_are_several(text):
    from _helpers import answer_offline

    answer = answer_offline(text)
    assert "gpu_count" in answer.questions


@pytest.mark.parametrize("text, count", [
    ("During epoch 3 one card drops to 0% while the other 3 cards stay at 100%, no error", 4),
    ("One of my GPUs idles and the remaining 5 GPUs are busy, Llama-2-7B DDP", 6),
    ("a single GPU shows 0% util and the other 15 sit at 100% forever", 16),
    ("训练卡住：一张卡利用率0%，其余7张100%", 8),
    ("有一块显卡显存占满，另外5块只用了一半", 6),
    ("跑到一半某张卡的占用变成0，剩下3张还在100%", 4),
])
def test_one_card_and_the_other_n_is_n_plus_one(text, count):
    parsed = parse_conversation(text)
    assert parsed.setup.gpu_count == count, parsed.setup
    assert "count_rest_plus_one" in codes(parsed)


@pytest.mark.parametrize("text, count", [
    ("deepspeed --include localhost:2,3,4,5 sft.py --bf16, out of memory on A100 80GB", 4),
    ("CUDA_VISIBLE_DEVICES=4,5,6,7 python train.py --model_name_or_path Qwen/Qwen2.5-7B OOM on A100", 4),
    ("deepspeed --include=localhost:0,1 train.py with Llama-2-7B on RTX 3090, OOM", 2),
    ("启动命令 deepspeed --include localhost:1,2,3,4,5,6 train.py，Qwen2.5-7B LoRA，4090报OOM", 6),
    ("CUDA_VISIBLE_DEVICES=0,1,2,3 python train.py 训练Llama-2-7B显存不足", 4),
    ("命令：deepspeed --include localhost:0,1,2 main.py --model_name_or_path /data/Qwen2.5-7B，A800上跑爆显存", 3),
])
def test_a_local_launch_on_listed_gpus_is_one_node_of_that_many(text, count):
    s = parse_conversation(text).setup
    assert (s.nodes, s.gpu_count) == (1, count), s


def test_an_include_of_two_hosts_is_two_nodes():
    s = parse_conversation("deepspeed --include node-a:0,1,2,3@node-b:0,1,2,3 train.py, 13B on A100 80GB").setup
    assert (s.nodes, s.gpu_count) == (2, 8)


# --- 4. concept questions that state a setup ------------------------------------------------------------

@pytest.mark.parametrize("text", [
    "I train Llama-2-7B on one A100. How should batch size and learning rate change when I go to two GPUs?",
    "Fine-tuning Mistral-7B on 8 H100s: do I need to scale the learning rate with the number of GPUs?",
    "I run Llama-2-13B on 8 A100s. Which FSDP sharding strategy corresponds to DeepSpeed ZeRO-2?",
    "We run ZeRO-3 on 16 A100s for a 13B; is FULL_SHARD the FSDP equivalent of it?",
    "FSDP的哪个策略对应ZeRO-2？我在8张A100上训练13B",
    "我现在单卡训练7B，换成4卡后学习率要怎么调？",
    "用8张4090训练Qwen2.5-7B，多卡训练时batch size要除以卡数吗？",
    "我们在16张A100上训练13B，FSDP里相当于DeepSpeed ZeRO-3的是哪个策略？",
])
def test_a_concept_question_with_a_setup_is_a_concept(text):
    assert parse_conversation(text).intent == "concept"


@pytest.mark.parametrize("text", [
    "Is FSDP faster than DDP for Llama-2-7B on 8 A100s?",
    "Would ZeRO-3 be slower than FSDP on 2 nodes of 8 H100 for a 13B?",
    "Is DeepSpeed better than plain DDP for a 13B on 4 A100 80GB?",
    "8张A100训练7B，FSDP比DDP快吗？",
    "4机32卡A100上DeepSpeed会比DDP更快吗？",
    "13B在两台8卡H100上，ZeRO-3比FSDP慢吗？",
])
def test_a_strategy_choice_for_a_stated_setup_stays_a_recommendation(text):
    assert parse_conversation(text).intent == "recommend"


def test_change_is_no_hang():
    # "change" holds the letters of "hang": a word inside another is no symptom
    assert parse_conversation("Llama-2-7B on 4 A100s: how should the learning rate change with 8 GPUs?").intent == "concept"


# --- the measure: the reader alone scored as the answers are ------------------------------------------

def test_the_reader_alone_is_scored_with_a_named_models_count(tmp_path):
    # the answers score a named catalog model by its count (answer.setup carries params_b): so does the
    # reader alone (evals.first_contact.parse_figures), else a model named by name reads as a missed size
    import json

    from evals.first_contact import parse_figures

    gold = {"params_b": 13.0, "gpu": "A100", "gpu_memory_gb": 80, "gpu_count": 8, "nodes": None, "precision": None,
            "finetune": "full", "seq_len": None, "micro_batch": None}
    rows = [{"id": f"x{i}", "url": "https://example.org", "lang": lang, "question": q,
             "gold": {"setup": gold, "intent": "recommend", "thread_kind": "question"}}
            for i, (lang, q) in enumerate([("en", "Llama-2-13B full fine-tune on 8 A100 80GB, DDP or FSDP?"),
                                           ("zh", "8张A100 80G全参微调Llama-2-13B，用DDP还是FSDP？")])]
    batch = tmp_path / "first_contact_2099-01-01a.jsonl"
    batch.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows), encoding="utf-8")
    summary = parse_figures(batch)
    assert summary["per_field"]["params_b"]["right"] == 2 and summary["all_fields_right"] == 2
