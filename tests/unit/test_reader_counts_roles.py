"""Counts and memory figures read from their clause (issue 24; failure classes of first-contact
batches c and d, in phrasings of our own, both languages):

1. one card named alone ("只有4090", "I only have a 4090", "on my 4090") is one card, with a note;
2. GPUs per machine x machines ("两台机器各一张3090", "two machines, one 3090 each");
3. the failing run's count, not the working one's ("works on 2 GPUs but OOMs on 4");
4. listed alternatives ("7B, 32B", "40GB or 80GB") are not a contradiction that stops the answer;
5. spare or free memory is not the card's size; an OOM message's total capacity is;
6. "inference" inside a training question keeps the training intent and topics.
"""

from __future__ import annotations

import pytest

from bot.parse import parse_conversation


def codes(parsed) -> list[str]:
    return [n.code for n in parsed.notes]


# --- 1. one card named alone ----------------------------------------------------------------------

@pytest.mark.parametrize("text", [
    "只有4090，Qwen2.5-7B LoRA 能跑吗",
    "我这边就一张4090，想 LoRA 微调 Llama-2-7B",
    "实验室只有A6000，Llama-2-13B LoRA 用 DDP 还是 FSDP",
    "I only have a 4090; can Qwen2.5-7B be fine-tuned with LoRA?",
    "on my 4090 the Llama-2-7B LoRA run OOMs at step 3, any fix?",
    "My single 3090 cannot hold Mistral-7B full fine-tuning, what now?",
])
def test_one_card_named_alone_is_one_card_with_a_note(text):
    parsed = parse_conversation(text)
    assert parsed.setup.gpu_count == 1, parsed.setup
    assert "gpu_count" not in parsed.missing
    assert "count_implied" in codes(parsed)


@pytest.mark.parametrize("text", [
    "只有4090和3090两种卡，Qwen2.5-7B LoRA",   # two kinds of card: not one card
    "I only have 4090s, Llama-2-7B LoRA, how many do I need?",
])
def test_cards_in_the_plural_are_not_one_card(text):
    assert parse_conversation(text).setup.gpu_count != 1


# --- 2. GPUs per machine x machines ---------------------------------------------------------------

@pytest.mark.parametrize("text, nodes, per_node", [
    ("两台机器各一张3090，训练 Llama-2-7B LoRA 很慢", 2, 1),
    ("两台服务器，每台单卡4090，Qwen2.5-7B LoRA", 2, 1),
    ("三台主机，每台一块A100，Llama-2-13B 全参", 3, 1),
    ("distributed training on two machines single RTX 3090, 10x slower than one", 2, 1),
    ("two machines, one 3090 each, Llama-2-7B LoRA", 2, 1),
    ("2 nodes with 4 A100s each, Llama-2-13B full fine-tune, DDP or FSDP?", 2, 4),
])
def test_gpus_per_machine_times_machines(text, nodes, per_node):
    parsed = parse_conversation(text)
    s = parsed.setup
    assert (s.nodes, s.gpus_per_node, s.gpu_count) == (nodes, per_node, nodes * per_node), s
    assert not parsed.problems


# --- 3. the failing run's count -------------------------------------------------------------------

@pytest.mark.parametrize("text, failed, worked", [
    ("Llama-2-7B LoRA works on 2 GPUs but OOMs on 4, why?", 4, 2),
    ("Training runs fine on 2 GPUs, but when I use 4 GPUs, the job is killed.", 4, 2),
    ("Qwen2.5-7B full fine-tune is fine on one card, fails with DDP on 8 A100s", 8, 1),
    ("单卡能跑，四卡就报错，Qwen2.5-7B LoRA", 4, 1),
    ("两张卡训练正常，换成8张卡就OOM了，Llama-2-13B", 8, 2),
    ("单卡 batch 8 可以正常训练。但是用三张卡的时候显存溢出", 3, 1),
])
def test_the_failing_runs_count_is_the_setup(text, failed, worked):
    parsed = parse_conversation(text)
    assert parsed.setup.gpu_count == failed, parsed.setup
    note = next(n for n in parsed.notes if n.code == "failed_run_count")
    assert (note.values["failed"], note.values["worked"]) == (failed, worked)


@pytest.mark.parametrize("text", [
    "单卡训练没问题，多卡情况下就OOM，Qwen2.5-7B LoRA，怎么设置？",
    "It trains fine on a single GPU but multi-GPU DDP runs out of memory, Llama-2-7B",
])
def test_a_working_single_card_is_not_the_count_of_a_failing_multi_gpu_run(text):
    parsed = parse_conversation(text)
    assert parsed.setup.gpu_count != 1
    assert "failed_run_count" in codes(parsed)


@pytest.mark.parametrize("text", [
    "their README trains on 1 A100; Llama-2-7B LoRA OOMs on my cards",
    "论文里用的是单卡A100，我的 Llama-2-7B LoRA 爆显存了",
])
def test_another_projects_count_is_not_the_users(text):
    assert parse_conversation(text).setup.gpu_count is None


# --- 4. listed alternatives -----------------------------------------------------------------------

@pytest.mark.parametrize("text", [
    "how many A100s does fine-tuning 7B, 32B LLMs take?",
    "全参微调 7B、32B 的模型分别要几张A100？",
    "7B 或 32B 模型全参微调需要几张A100？",
    "either 13B or 34B, how many H100s do I need?",
])
def test_listed_model_sizes_are_alternatives_not_a_problem(text):
    parsed = parse_conversation(text)
    assert not parsed.problems and not parsed.contradictions, parsed.problems
    assert "larger_of_two_sizes" in parsed.notices


@pytest.mark.parametrize("text", [
    "40GB or 80GB A100 for Llama-2-7B full fine-tune on 8 GPUs?",
    "8x A100 (40GB) or 8x A100 (80GB) for Llama-2-13B?",
    "Llama-2-7B 全参，8张A100 40G还是80G？",
    "Llama-2-7B 全参，8张 A100，40G 或者 80G 都可以",
])
def test_listed_card_sizes_are_alternatives_not_one_picked_silently(text):
    parsed = parse_conversation(text)
    assert not parsed.problems
    note = next(n for n in parsed.notes if n.code == "memory_alternatives")
    assert sorted(note.values["sizes"]) == [40, 80]
    # the smaller card bounds what fits: computed for it, and the note says both were read
    assert parsed.setup.gpu_memory_gb == 40


def test_a_card_said_to_have_a_size_it_is_not_sold_in_is_still_a_contradiction():
    parsed = parse_conversation("my A100 has 24GB, Llama-2-7B full fine-tune on 8 of them, DDP or FSDP?")
    assert [c.field for c in parsed.contradictions] == ["gpu_memory_gb"]


# --- 5. memory that is not the card's size ---------------------------------------------------------

@pytest.mark.parametrize("text", [
    "单卡训练时有20GB的显存是盈余的，Qwen2.5-7B LoRA",
    "Qwen2.5-7B LoRA 训练，显存还剩 10G，能开大 batch 吗",
    "Llama-2-7B LoRA, about 12GB spare on each card, can I raise the batch?",
    "Llama-2-7B LoRA, nvidia-smi shows 10GB free per GPU",
    "训练时每张卡空闲 8G 显存，Qwen2.5-7B LoRA",
])
def test_spare_or_free_memory_is_not_the_cards_size(text):
    assert parse_conversation(text).setup.gpu_memory_gb is None


@pytest.mark.parametrize("text, gb", [
    ("RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 2.00 GiB total capacity; "
     "1.28 GiB already allocated; 4.55 MiB free; 1.28 GiB reserved in total by PyTorch)\nbatch size is 1", 2),
    ("fine-tuning fails: CUDA out of memory. Tried to allocate 64.00 MiB (GPU 0; 3.00 GiB total capacity; "
     "2.1 GiB already allocated)", 3),
    ("LoRA 微调报错 torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
     "capacity of 23.65 GiB of which 1.2 GiB is free.", 24),
])
def test_an_oom_messages_total_capacity_is_the_card_as_observed(text, gb):
    parsed = parse_conversation(text)
    assert parsed.setup.gpu_memory_gb == gb
    assert parsed.provenance["gpu_memory_gb"].source == "log"


# --- 6. inference inside a training question ---------------------------------------------------------

@pytest.mark.parametrize("text", [
    "用LoRA微调Qwen2.5-7B，4张3090，推理时爆显存，训练正常",
    "Qwen2.5-7B 全参微调，训练过程中的评估推理阶段 OOM，8张A100",
    "QLoRA fine-tuning Llama-2-13B on 4x 3090: OOM when I run baseline inference before training",
    "Llama-2-7B full fine-tune on 8 A100: training works but inference during evaluation OOMs",
])
def test_inference_inside_a_training_question_keeps_the_training_scope(text):
    parsed = parse_conversation(text)
    assert parsed.intent != "out_of_scope"
    assert "inference" not in parsed.topics


@pytest.mark.parametrize("text", [
    "How do I serve Qwen2.5-72B with vLLM on 4 A100s?",
    "Qwen2.5-7B 部署推理用几张卡？",
])
def test_a_serving_question_is_still_out_of_scope(text):
    assert parse_conversation(text).intent == "out_of_scope"


# --- 7. models people fine-tune that the catalog lacked ---------------------------------------------

@pytest.mark.parametrize("text, name, size", [
    ("LoRA fine-tuning VisualGLM-6B on 4 cards of 11GB runs out of memory", "VisualGLM-6B", 7.8),
    ("visualglm 用 lora 微调要多少显存？", "VisualGLM-6B", 7.8),
    ("THUDM/visualglm-6b 全参微调，8张A100", "VisualGLM-6B", 7.8),
    ("how much memory to fine-tune InternVideo2.5 on 2 H100s?", "InternVideo2.5-Chat-8B", 8.4),
    ("微调 InternVideo2_5_Chat_8B 需要几张卡", "InternVideo2.5-Chat-8B", 8.4),
    ("OpenGVLab/InternVideo2_5_Chat_8B LoRA 微调，单卡 A100 80G 够吗", "InternVideo2.5-Chat-8B", 8.4),
])
def test_models_people_fine_tune_are_in_the_catalog_with_their_published_size(text, name, size):
    from bot.catalog import lookup_model

    parsed = parse_conversation(text)
    assert parsed.setup.model == name
    assert lookup_model(name).published_params_b == size


@pytest.mark.parametrize("text", [
    "8xA100 (40GB) or 8xA100 (80GB) for Llama-2-13B full fine-tuning?",
    "Llama-2-7B LoRA works on 2 GPUs but OOMs on 4 A100 40GB, why?",
])
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_new_notes_have_wording_that_quotes_the_persons_words(text, lang):
    from bot.understand.notes import note_text

    parsed = parse_conversation(text)
    for note in parsed.notes:
        worded = note_text(note, lang)
        assert worded != note.code and "Ǥ" not in worded and "Ḿ" not in worded, worded


@pytest.mark.parametrize("text, count", [
    ("用 train_multi.py两张卡报显存溢出，Llama-2-7B LoRA", 2),
    ("python finetune.py三张卡跑 Qwen2.5-7B 很慢", 3),
    ("跑 run.sh 四块卡就 OOM，Llama-2-13B", 4),
])
def test_a_chinese_count_right_after_a_file_name_is_read(text, count):
    assert parse_conversation(text).setup.gpu_count == count


@pytest.mark.parametrize("text, nodes", [
    ("a single machine takes 30 hours, but training across 2 identical machines is estimated at 900 hours", 2),
    ("3 separate servers with one A100 each, Llama-2-7B LoRA is slow", 3),
    ("一台机器要 30 小时，两台相同的机器反而要 900 小时", 2),
])
def test_the_multi_machine_run_is_the_setup_beside_a_single_machine_baseline(text, nodes):
    assert parse_conversation(text).setup.nodes == nodes


@pytest.mark.parametrize("text, gpu, count", [
    ("QLoRA on a node of 4 x P40, Mixtral 8x7B OOMs", "P40 24GB", 4),
    ("4张 Tesla P40 微调 Llama-2-7B LoRA", "P40 24GB", 4),
    ("只有3090ti，Xtuner 微调 7B 怎么把显存降到 24G 以内", "RTX 3090 Ti 24GB", 1),
    ("I only have an RTX 3090 Ti, can Llama-2-7B be fine-tuned with LoRA?", "RTX 3090 Ti 24GB", 1),
])
def test_cards_people_train_on_are_read(text, gpu, count):
    s = parse_conversation(text).setup
    assert (s.gpu, s.gpu_count) == (gpu, count), s


@pytest.mark.parametrize("text, count", [
    ("my home lab is basically a 4 x P40 node, Llama-2-7B LoRA", 4),
    ("one server with 8 GPUs each A100 80GB, Llama-2-13B full", 8),
    ("一台机器，每台机器8张A100，Llama-2-13B 全参", 8),
])
def test_gpus_of_one_node_are_the_count(text, count):
    assert parse_conversation(text).setup.gpu_count == count
