"""Issue 24: reading a question right the first time. Each class of input in several phrasings,
Chinese and English, none of them a thread's own words."""

from __future__ import annotations

import pytest

from bot.parse import parse_conversation
from bot.understand.condense import condense
from bot.understand.names import size_from_name


def setup_of(text: str, history=None) -> dict:
    return {k: v for k, v in parse_conversation(text, history).setup.model_dump().items() if v is not None}


def codes(parsed) -> list[str]:
    return [n.code for n in parsed.notes]


# --- 1. the size written in a name the catalog lacks ---------------------------------------------

@pytest.mark.parametrize("name, size", [
    ("foo2_7b_chat", 7.0), ("bar3_13b_base", 13.0), ("zeta2_70b", 70.0),   # a version glued to the family
    ("acme-chat-1_8b", 1.8), ("xxx-1.8B", 1.8), ("orca-mini-0.5B", 0.5), ("mistral7b", 7.0),
    ("tinyfoo-410m", 0.41), ("lumen2_5_7b_chat", 7.0), ("coder_6_7b_instruct", 6.7), ("nova_1_5_9b", 9.0),
])
def test_size_read_from_a_name(name, size):
    assert size_from_name(name).params_b == pytest.approx(size)


def test_mixture_of_experts_and_active_sizes_in_a_name():
    moe = size_from_name("acme-8x7B-instruct")
    assert moe.experts == 8 and moe.expert_b == 7 and 40 < moe.params_b < 50  # Mixtral-8x7B: 46.7B
    assert size_from_name("zed-4x22b").params_b > 60
    active = size_from_name("foo-30B-A3B")
    assert active.params_b == 30 and active.active_b == 3


@pytest.mark.parametrize("text, size", [
    ("I'm fine-tuning foo2_7b_chat on 4x A100 80GB, DDP or FSDP?", 7.0),
    ("用8张A100 80G全参微调 bar-1.8B，选DDP还是FSDP？", 1.8),
    ("qux2_13b_sft LoRA on 2x RTX 4090, which strategy?", 13.0),
    ("我想用两张4090做LoRA，模型是 kappa-v2-0.5B", 0.5),
])
def test_an_unknown_family_is_sized_from_its_name_and_says_so(text, size):
    parsed = parse_conversation(text)
    assert parsed.setup.params_b == pytest.approx(size) and parsed.unknown_model
    assert "size_from_name" in codes(parsed) and not parsed.problems


@pytest.mark.parametrize("text", [
    "TinyLlama-1.1B full fine-tune on one RTX 3090",   # holds the catalog alias "tiny-llama"
    "finetune MiniCPM-Llama3-V-8B on 2x 3090",         # holds "llama3"
    "用4张A100 40G全参微调 Bunny-Llama-3-8B-V，DDP还是FSDP",
])
def test_a_family_holding_a_catalog_alias_does_not_stop_the_answer(text):
    parsed = parse_conversation(text)
    assert not [p for p in parsed.problems if p.field == "params_b"]
    # sized from its own name, or the catalog model it fine-tunes when the sizes agree
    assert (parsed.setup.params_b is not None or parsed.setup.model) and "params_b" not in parsed.missing


@pytest.mark.parametrize("text, name", [
    # names no catalog has (the catalog grew to 351 models: Aria, ResNet-50, MiniCPM-V, InternVL are in it)
    ("fine-tune Zephyrine on 8 H100, which strategy?", "Zephyrine"),
    ("训练一个Moonquill-V2，8张V100 32G，DDP还是FSDP", "Moonquill-V2"),
    ("Brightwing-Chat-V3 finetune on 2x 3090, ddp or fsdp?", "Brightwing-Chat-V3"),
    ("model: Quillhawk-Instruct-V1-5, 4x A100 80GB, FSDP?", "Quillhawk-Instruct-V1-5"),
])
def test_a_model_that_cannot_be_sized_keeps_its_name_and_asks_one_question(text, name):
    parsed = parse_conversation(text)
    assert parsed.missing == ["params_b"]
    assert [n.values["name"] for n in parsed.notes if n.code == "model_unsized"] == [name]


# --- 2. roles from the clause -------------------------------------------------------------------

@pytest.mark.parametrize("text", [
    "Llama-2-7B全参微调，每张卡占用了20G，为什么FSDP没省显存",
    "Llama-2-7B full fine-tune, memory_allocated: 38GB per rank, is that normal?",
    "Llama-2-13B LoRA, it uses 60GB per GPU, should I switch to FSDP?",
    "Qwen2.5-7B 全参，显存占用 45G，换FSDP有用吗",
])
def test_memory_used_is_an_observation_not_the_cards_size(text):
    parsed = parse_conversation(text)
    assert parsed.setup.gpu_memory_gb is None and "gpu_memory_gb" in parsed.missing
    assert parsed.observed.used_per_gpu_gib is not None


@pytest.mark.parametrize("text", [
    "服务器4张A800 80G，之前同事用的是16张卡的配置，Llama-2-70B LoRA可以吗",
    "We train Llama-2-7B on 4x A100 80GB with DDP. We also have some V100s. Should we use FSDP?",
    "我们用4张A100 80G训练Llama-2-7B，另外还有几张V100，用FSDP吗",
    "Llama-2-13B LoRA on 2x H100. Besides, I also have 8 T4 cards. DDP or FSDP?",
])
def test_hardware_in_an_aside_or_of_others_is_not_the_runs(text):
    parsed = parse_conversation(text)
    assert parsed.setup.gpu.startswith(("A100", "H100", "A800")) and parsed.setup.gpu_count in (2, 4)
    assert {"aside_hardware", "others_setup"} & set(codes(parsed))


@pytest.mark.parametrize("text", [
    "我们实验室还有几台V100服务器，不过这次训练用的是2台A800（每台8卡），Llama-2-70B全参，用HSDP吗",
    "另外还有几张T4，这次是4张A100 80G训练Llama-2-7B全参，选哪个策略",
    "We also have a few spare V100 boxes; this run is 2 nodes x 8 H100, Llama-2-70B full. HSDP or FSDP?",
])
def test_an_aside_sets_neither_the_count_nor_the_intent(text):
    parsed = parse_conversation(text)
    assert parsed.intent == "recommend" and parsed.setup.gpu_count in (4, 16)


@pytest.mark.parametrize("text", [
    "Full fine-tune of Llama-2-13B on 8x A100 40GB OOMs, LoRA runs fine. Which strategy for the full run?",
    "Llama-2-13B: LoRA works, but full fine-tuning fails with OOM on 8 A100 40GB. FSDP?",
    "Qwen2.5-7B 用LoRA可以跑，全参微调就爆显存，8张A100 40G，用FSDP吗",
])
def test_the_failed_run_is_the_setup_not_the_one_that_worked(text):
    parsed = parse_conversation(text)
    assert parsed.setup.finetune == "full" and "failed_run_setup" in codes(parsed)


@pytest.mark.parametrize("text", [
    "Llama-2-7B on 4x A100 40GB full fine-tune, FSDP or DDP? or should I just do LoRA?",
    "Mistral-7B, 8 A100 80GB: FSDP or DDP? Or maybe LoRA would be enough?",
    "Llama-2-7B 4张A100 40G，用DDP还是FSDP？还是干脆换成LoRA？",
    "Qwen2.5-7B，8张A800，选DDP还是FSDP，要不要改用LoRA？",
    "Qwen2.5-7B full on 8x H100. Would QLoRA be better?",
])
def test_an_alternative_being_weighed_is_not_the_setup(text):
    parsed = parse_conversation(text)
    assert parsed.setup.finetune in (None, "full") and "alternative_weighed" in codes(parsed)


@pytest.mark.parametrize("text", [
    "我们组有8张H800，训练 foo_coder_6_7b，LoRA还是全参？用什么并行",
    "Llama-2-7B on 8 A100 80GB: full fine-tune or LoRA?",
    "Should I do LoRA or full fine-tuning for Qwen2.5-7B on 4x A100 40GB?",
])
def test_a_question_asking_which_method_states_neither(text):
    parsed = parse_conversation(text)
    assert parsed.setup.finetune is None and "method_asked" in codes(parsed)


@pytest.mark.parametrize("text, seq", [
    ("Mistral-7B full fine-tune, block_size 4096, 8x A100 80GB, fsdp or ddp?", 4096),
    ("block_size: 2048\nper_device_train_batch_size: 2\n8 张 A100 训练 Llama-2-7B", 2048),
    ("--block_size 1024 on 4 H100, Llama-2-13B, DDP?", 1024),
])
def test_block_size_is_a_sequence_length(text, seq):
    assert setup_of(text)["seq_len"] == seq


@pytest.mark.parametrize("text", [
    "two nodes of 8x H100 with 8x 400Gb/s InfiniBand, Llama-2-70B full, FSDP or HSDP?",
    "2台机器，每台8张H100，网卡 8x400Gb/s IB，Llama-2-70B 全参，用HSDP吗",
    "2 nodes x 8 A100 80GB, 4x 200Gb/s RoCE between them, Llama-2-70B, FSDP?",
])
def test_a_link_written_count_x_speed_is_not_gpus(text):
    s = setup_of(text)
    assert s["nodes"] == 2 and s["gpus_per_node"] == 8 and s["gpu_count"] == 16
    assert s["gpu_memory_gb"] == 80 and s["inter_node_gbps"] >= 800


@pytest.mark.parametrize("text, count", [
    ("CUDA_VISIBLE_DEVICES=0,1,2 python train.py  # Llama-2-7B on A100 80GB, DDP or FSDP?", 3),
    ("deepspeed --num_gpus 2 train.py --model_name_or_path Qwen/Qwen2.5-7B, A100 80GB, zero2 or zero3?", 2),
    ("torchrun --nproc_per_node 4 train.py, Llama-2-7B, A100 80GB", 4),
    ("deepspeed --include localhost:0,1,2,3,4,5 train.py Qwen2.5-7B A800 80GB", 6),
    ("hostfile:\nworker-1 slots=8\nworker-2 slots=8\ndeepspeed --hostfile hostfile train.py Llama-2-70B H100", 16),
    ("#SBATCH --nodes=2\n#SBATCH --gres=gpu:4\nsrun torchrun --nproc_per_node 4 train.py  Llama-2-13B A100 80GB", 8),
])
def test_launch_lines_give_the_count(text, count):
    assert setup_of(text)["gpu_count"] == count


def test_one_task_per_node_with_several_gpus_is_one_process():
    text = "#SBATCH --ntasks-per-node=1\n#SBATCH --gres=gpu:4\npython train.py  # Llama-2-7B on A100 80GB, DDP or FSDP?"
    parsed = parse_conversation(text)
    assert parsed.setup.gpus_per_node == 4 and "one_process" in codes(parsed)


# --- 3. no silent 8 ---------------------------------------------------------------------------------

@pytest.mark.parametrize("text, count", [
    ("Llama-2-7B full fine-tune, my 80G card runs out of memory, DDP or FSDP?", 1),
    ("I only have a 4090, can I fine-tune Qwen2.5-7B with LoRA? FSDP?", 1),
    ("Llama-2-13B LoRA on a single H100, which strategy", 1),
    ("Qwen2.5-7B 单卡 A100 80G 全参微调 要用FSDP吗", 1),
    ("我的卡是A100 80G，Qwen2.5-7B全参微调会OOM吗", 1),
    ("both of my GPUs are RTX 3090, Llama-2-7B LoRA, DDP or FSDP?", 2),
    ("Llama-2-7B LoRA on dual A6000s, ddp or fsdp", 2),
    ("Qwen2.5-7B 双卡4090 LoRA 选哪个", 2),
    ("我有两张A100 40G，想全参微调Qwen2.5-7B，DDP还是FSDP", 2),
    ("My single RTX 6000 Ada keeps OOMing while fine-tuning Llama-2-7B with LoRA, would FSDP help?", 1),
    ("Got a pair of 4090s. Mistral-7B QLoRA, ddp or fsdp?", 2),
    ("Both A100s in my workstation are 40GB; 7B full fine-tune, DDP or FSDP?", 2),
])
def test_an_unstated_count_is_read_from_what_the_text_implies(text, count):
    assert setup_of(text)["gpu_count"] == count


@pytest.mark.parametrize("text", [
    "Llama-2-7B full fine-tune on A100 80GB, DDP or FSDP?",
    "Qwen2.5-7B 全参微调，A800 80G，用DDP还是FSDP",
    "the llama-recipes config uses 4 nodes; I have H100s, Llama-2-70B full fine-tune, FSDP or HSDP?",
    "官方示例用了8张卡，我这里是A100 40G，Llama-2-7B LoRA，DDP还是FSDP？",
    "my colleague trained it on 64 GPUs; I have A100 80GB cards, Llama-2-13B full, which strategy?",
])
def test_no_count_in_the_text_is_missing_never_eight(text):
    parsed = parse_conversation(text)  # another project's or person's count is not the user's
    assert parsed.setup.gpu_count is None and parsed.setup.nodes is None and "gpu_count" in parsed.missing


# --- 4. contradictions: one question, never a silent pick -----------------------------------------

@pytest.mark.parametrize("text, field", [
    ("my A100 has 24GB, Llama-2-7B full fine-tune on 8 of them, DDP or FSDP?", "gpu_memory_gb"),
    ("7B model, 70B model, 8x A100 80GB, FSDP?", "params_b"),
    ("Llama-2-7B on 8 GPUs 40GB 80GB, DDP or FSDP?", "gpu_memory_gb"),
    ("Llama-2-7B LoRA full fine-tune on 8x A100 80GB, which one", "finetune"),
    ("Qwen2.5-7B 单卡，8张A100 80G，DDP还是FSDP", "gpu_count"),
    ("13B模型，30B模型，4张H100，用FSDP吗", "params_b"),
])
def test_a_contradiction_is_a_record_and_a_question(text, field):
    # computed on one reading and said in one line with one question (batch e class 9): never a
    # refusal with nothing else, never a silent pick
    parsed = parse_conversation(text)
    assert [c.field for c in parsed.contradictions] == [field]
    assert not parsed.problems
    assert getattr(parsed.setup, field) is not None
    assert [n.values["field"] for n in parsed.notes if n.code == "contradiction_computed"] == [field]


@pytest.mark.parametrize("text", [
    "Llama-2-7B, 8x A100 80GB, 单卡40G还是80G都行",          # per-card size, not a count
    "full fine-tune vs LoRA for Llama-2-7B on 8 A100 80GB?",  # a comparison, not a contradiction
    "8张A100，单卡80G，Llama-2-13B全参，DDP还是FSDP",
])
def test_ordinary_setups_are_not_contradictions(text):
    assert parse_conversation(text).contradictions == []


@pytest.mark.parametrize("text", [
    "job 20240612153045123 failed: Llama-2-7B full fine-tune on 8x A100 80GB OOM, DDP or FSDP?",
    "run id 98765432109876543, Qwen2.5-7B LoRA on 4 A100 80GB, which strategy?",
    "任务 1718000000123456 报OOM：Llama-2-7B全参，8张A100 80G，DDP还是FSDP",
])
def test_a_long_digit_run_that_is_an_id_is_ignored_without_a_problem(text):
    parsed = parse_conversation(text)
    assert not parsed.problems and "long_number_ignored" in parsed.notices
    assert parsed.setup.gpu_count in (4, 8)


# --- 5. conversation rules ------------------------------------------------------------------------

@pytest.mark.parametrize("history, question", [
    ("Llama-2-7B full fine-tune on 8x A100 80GB, seq 4096, DDP or FSDP?", "what if I only have 40GB A100s?"),
    ("Llama-2-7B全参微调，8张A100 80G，序列4096，DDP还是FSDP？", "如果只有40G的A100呢？"),
    ("Llama-2-7B full fine-tune on 8x A100 80GB, seq 4096", "and with 40GB cards instead?"),
])
def test_a_follow_up_changes_only_the_field_it_names(history, question):
    parsed = parse_conversation(question, [history])
    s = parsed.setup
    assert s.gpu_memory_gb == 40 and s.gpu_count == 8 and s.model == "Llama-2-7B" and s.seq_len == 4096
    assert parsed.provenance["gpu_count"].source == "history"


@pytest.mark.parametrize("history, question", [
    (["Llama-2-7B LoRA on 8x A100 80GB, seq 4096", "what about micro batch 4?"],
     "Now I want to train Qwen2.5-14B on 4 GPUs, DDP or FSDP?"),
    (["Llama-2-7B LoRA，8张A100 80G，序列4096"], "现在换成Qwen2.5-14B，用4张卡，DDP还是FSDP？"),
    (["Mistral-7B QLoRA on 2x A6000, seq 8192"], "New job: Llama-2-13B on 4 GPUs, FSDP?"),
])
def test_a_new_setup_starts_fresh_and_marks_what_it_carried(history, question):
    parsed = parse_conversation(question, history)
    s = parsed.setup
    assert s.finetune is None and s.seq_len is None and s.micro_batch is None and s.gpu_count == 4
    assert parsed.provenance["gpu"].source == "carried"
    note = next(n for n in parsed.notes if n.code == "new_setup")
    assert "gpu" in note.values["carried"] and "seq_len" in note.values["dropped"]


@pytest.mark.parametrize("history, question", [
    (["Llama-2-7B full fine-tune on 8x A100 80GB, DDP or FSDP?"], "FSDP1 or FSDP2?"),
    (["Llama-2-7B全参微调，8张A100 80G，DDP还是FSDP？"], "FSDP1和FSDP2选哪个？"),
    (["Qwen2.5-7B LoRA on 4 H100", "and with seq 8192?"], "should I use fully_shard or FullyShardedDataParallel?"),
    ([], "FSDP2 vs FSDP1 for my 8 A100s?"),
])
def test_a_concept_question_is_a_concept_wherever_it_comes(history, question):
    assert parse_conversation(question, history).intent == "concept"


# --- 6. long inputs ---------------------------------------------------------------------------------

def _log(lines: int) -> str:
    return "\n".join(f"[rank{i % 8}]:[2026-01-01 10:{i % 60:02d}] step {i} loss {i / 7:.3f} lr 2e-5 grad_norm {i % 13}"
                     for i in range(lines))


@pytest.mark.parametrize("head, tail", [
    ("Llama-2-7B full fine-tune on 8x A100 80GB, here is my log:", "Why is FSDP slower than DDP here?"),
    ("Qwen2.5-7B 全参微调，8张A800 80G，日志如下：", "为什么FSDP比DDP慢这么多？"),
    ("Here is the log of Llama-2-13B LoRA on 4x H100:", "Should I switch to DDP?"),
])
def test_a_long_paste_with_the_question_after_it_is_answered(head, tail):
    text = head + "\n" + _log(300) + "\n" + tail
    assert len(text) > 4000
    parsed = parse_conversation(text)
    assert parsed.on_topic and parsed.intent != "out_of_scope" and "condensed" in parsed.notices
    assert parsed.setup.gpu_count in (4, 8)


def test_a_long_paste_keeps_its_first_and_last_lines_and_its_facts():
    distinct = "\n".join(f"line {i}: " + "word " * (i % 17 + 3) + chr(65 + i % 26) * (i % 9) for i in range(600))
    text = "Which strategy for Llama-2-7B?\n" + distinct + "\nCUDA out of memory. Tried to allocate 2.00 GiB\n4x A100 80GB"
    out, cut = condense(text, 4000)
    assert cut and len(out) <= 4000
    assert out.startswith("Which strategy") and out.endswith("4x A100 80GB") and "CUDA out of memory" in out


# --- the wording the answer can use for what the reader did ------------------------------------------

@pytest.mark.parametrize("lang", ["zh", "en"])
def test_every_note_and_contradiction_has_wording_in_both_languages(lang):
    from bot.understand.notes import contradiction_question, note_text

    texts = ["I'm fine-tuning foo2_7b_chat on 4x A100 80GB", "acme-8x7B on 8 H100", "train foo-30B-A3B on 4 H100",
             "fine-tune Zephyrine on 8 H100", "both of my GPUs are 3090s, 7B LoRA", "7B full, memory_allocated: 38GB",
             "We train 7B on 4x A100 80GB. We also have some V100s.", "the paper used 64 GPUs; I have 2 A100 80GB, 7B",
             "Llama-2-7B full on 4x A100 40GB, DDP? or should I just do LoRA?", "7B on 8 A100s: full fine-tune or LoRA?",
             "13B full fine-tune OOMs on 8 A100 40GB, LoRA runs fine",
             "#SBATCH --ntasks-per-node=1\n#SBATCH --gres=gpu:4\npython train.py 7B",
             "Llama-2-7B full fine-tune on 8x A100 80GB\n" + _log(300) + "\nwhy so slow?"]
    seen = set()
    for text in texts:
        for note in parse_conversation(text).notes:
            seen.add(note.code)
            assert note_text(note, lang) != note.code
    new = parse_conversation("Now Qwen2.5-14B on 4 GPUs, FSDP?", ["Llama-2-7B LoRA on 8x A100 80GB, seq 4096"])
    for note in new.notes:
        seen.add(note.code)
        assert note_text(note, lang) != note.code
    assert {"size_from_name", "moe_from_name", "active_from_name", "model_unsized", "count_implied", "used_not_capacity",
            "aside_hardware", "others_setup", "alternative_weighed", "method_asked", "failed_run_setup", "one_process", "condensed",
            "new_setup"} <= seen
    for text in ("7B model, 70B model, 8x A100 80GB", "单卡，8张A100 80G，7B"):
        (c,) = parse_conversation(text).contradictions
        question = contradiction_question(c, lang)
        assert all(str(span) in question for span in c.spans)
