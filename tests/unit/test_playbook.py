"""The diagnosis playbook (bot/knowledge/playbook.py, knowledge/playbook/*.yaml): the data is
complete in both languages and sourced, and the matcher ranks the right entry for questions
phrased in several ways (our phrasings, not the threads' words), in English and Chinese."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import pytest

from bot.knowledge.playbook import (
    PlaybookError,
    PlaybookQuery,
    clear_caches,
    load_playbook,
    match_playbook,
    query_from_parsed,
)

# entry id -> phrasings (>= 3 English, >= 3 Chinese); the entry must rank first or second.
PHRASINGS: dict[str, list[str]] = {
    "pb-launcher-single-process": [
        "I start my script with python main.py on a box with 4 GPUs and only one GPU is busy",
        "Why is only a single GPU utilized? The other GPUs are idle at 0% the whole time",
        "DDP job: nvidia-smi shows only 1 GPU working while the other GPUs stay unused",
        "4卡机器上训练，只有一张卡在跑，其他卡空闲",
        "多卡训练但是只用了一张卡，别的GPU利用率是0%",
        "我有8张A100，为什么只有第一张卡在工作，其他的显卡没有占用",
    ],
    "pb-oom-long-sample": [
        "Training ran for 5 hours and then hit CUDA out of memory, nothing changed in the config",
        "It crashes with OOM at step 12000 after running fine for many hours",
        "Suddenly out of memory in the middle of epoch 2; the first epoch was fine",
        "训练了好几个小时以后突然OOM了，配置没动过",
        "跑了3000步之后爆显存，之前一直正常",
        "训练到一半突然显存不足，是不是数据里有特别长的样本",
    ],
    "pb-host-ram-loading-every-rank": [
        "All 8 processes get killed while loading the 70B checkpoint, exit code -9",
        "The job dies with SIGKILL during from_pretrained and the host RAM is full",
        "Loading the model on every rank exhausts system memory and the OOM killer fires",
        "8卡加载70B模型的时候进程被kill -9了",
        "加载权重时主机内存不足，进程直接被杀掉",
        "每个rank都加载一遍模型，cpu内存爆了，怎么办",
    ],
    "pb-full-shard-traffic": [
        "ZeRO-3 is about 40% slower than ZeRO-2 for the same model, is that expected?",
        "Why does FULL_SHARD take longer per step than DDP when the model fits?",
        "My step time with stage 3 is slower than with stage 2",
        "zero3比zero2慢很多，正常吗",
        "同一个模型FSDP比DDP慢了一倍",
        "stage 3 训练速度比 stage 2 慢是为什么",
    ],
    "pb-multi-node-slow-link": [
        "Two nodes are slower than one node, each node has 8 GPUs and 25GbE between them",
        "Multi-node training is slower than a single node; the machines are linked by ethernet",
        "Adding a second machine made training slower, we only have 10 Gbps networking",
        "两台机器一起训练比一台还慢，是万兆网",
        "多机训练反而更慢，节点之间是以太网",
        "双机16卡的速度比单机8卡还慢",
    ],
    "pb-memory-not-dropping-lora": [
        "LoRA with ZeRO-2: going from 2 to 8 GPUs, memory per GPU does not drop at all",
        "With more GPUs my LoRA run uses the same memory on each card, why no reduction?",
        "Adding extra GPUs did not decrease per-GPU memory for my LoRA fine-tune",
        "LoRA微调加卡以后每张卡显存没有降",
        "lora训练从2卡换到8卡显存一点都没减少",
        "用zero2做lora，4张卡和8张卡显存差不多一样",
    ],
    "pb-fp16-no-bf16": [
        "My V100 says bf16 is not supported, what should I use instead?",
        "Training on T4 cards: ValueError bf16 only supported on compute capability 8.0",
        "We only have 2080 Ti GPUs which do not support bfloat16, how to set precision?",
        "V100不支持bf16，只能用fp16吗",
        "T4上训练报错说bf16不支持",
        "我们的卡是2080 Ti，不能用bf16怎么办",
    ],
    "pb-lora-new-tokens": [
        "I added new special tokens and called resize_token_embeddings before LoRA",
        "LoRA after adding tokens to the tokenizer: do embed_tokens and lm_head need training?",
        "Reloading my adapter fails with size mismatch for the embedding after adding tokens",
        "LoRA训练前新增了一些特殊token，embedding需要训练吗",
        "扩充词表以后用lora微调，lm_head要不要放到modules_to_save",
        "加了新token之后resize_token_embeddings，LoRA学不会这些token",
    ],
    "pb-long-context": [
        "Fine-tuning with 32k context on 8 GPUs runs out of memory even with FSDP",
        "How do I train with long sequences of 128k tokens? I get OOM",
        "OOM at sequence length 65536, would context parallel help?",
        "32k长上下文微调，FSDP也OOM了",
        "长文本训练显存不够，序列并行能解决吗",
        "128k上下文训练爆显存，怎么办",
    ],
    "pb-checkpointing-ddp-ready-twice": [
        "RuntimeError: parameter has been marked as ready twice with gradient checkpointing",
        "Expected to mark a variable ready only once, I use DDP and checkpointing",
        "gradient checkpointing plus find_unused_parameters=True crashes in DDP",
        "开了梯度检查点之后DDP报 marked ready twice",
        "DDP加gradient checkpointing报错 ready only once",
        "梯度检查点和find_unused_parameters一起用就报错",
    ],
    "pb-rl-multi-model": [
        "PPO with a 7B actor, critic, reward model and reference model OOMs on 4 GPUs",
        "RLHF training: how much memory do the actor and critic need together?",
        "Running PPO, the reference model and reward model eat all my GPU memory",
        "PPO训练actor和critic加上奖励模型显存不够",
        "RLHF四个模型放不下，怎么分配GPU",
        "用PPO做强化学习，参考模型和价值模型太占显存",
    ],
    "pb-save-full-state-dict-oom": [
        "Training is fine but it goes out of memory when saving the FSDP checkpoint",
        "OOM while saving the model with FULL_STATE_DICT",
        "Every rank runs out of memory at checkpoint time; should I set rank0_only?",
        "FSDP保存检查点的时候OOM",
        "训练正常，一保存模型就爆显存",
        "保存checkpoint时内存不足被杀，state_dict_type怎么设",
    ],
    "pb-nccl-timeout-preprocessing": [
        "Watchdog caught collective operation timeout while the dataset is still being tokenized",
        "NCCL timed out before training starts, rank 0 is running tokenizer on dataset",
        "Socket timeout at startup: the other ranks wait while rank 0 preprocesses data",
        "数据分词还没结束就报NCCL超时",
        "预处理数据的时候其他rank等太久，watchdog报错",
        "训练还没开始就nccl超时，日志里是running tokenizer on dataset",
    ],
}


def _rank(text: str, entry_id: str) -> int | None:
    ids = [m.id for m in match_playbook(text, limit=0)]
    return ids.index(entry_id) + 1 if entry_id in ids else None


@pytest.mark.parametrize("entry_id,text", [(e, t) for e, texts in PHRASINGS.items() for t in texts])
def test_entry_ranks_first_or_second(entry_id, text):
    rank = _rank(text, entry_id)
    top = [(m.id, m.score) for m in match_playbook(text)]
    assert rank is not None and rank <= 2, f"{entry_id} ranked {rank} for {text!r}; top: {top}"


def test_phrasings_cover_both_languages():
    for entry_id, texts in PHRASINGS.items():
        zh = [t for t in texts if any("\u4e00" <= ch <= "\u9fff" for ch in t)]
        assert len(zh) >= 3 and len(texts) - len(zh) >= 3, entry_id


def test_the_playbook_has_40_sourced_bilingual_entries():
    entries = load_playbook()
    assert len(entries) >= 40
    for entry in entries:
        for name in ("title", "cause", "check", "fix"):
            en, zh = entry.text(name, "en"), entry.text(name, "zh")
            assert en and zh and en != zh, (entry.id, name)
            assert any("\u4e00" <= ch <= "\u9fff" for ch in zh), (entry.id, name, "zh text has no Chinese")
        assert entry.symptoms["en"] and entry.symptoms["zh"], entry.id
        assert entry.sources and all(s.startswith("https://") for s in entry.sources), entry.id


def test_the_issue_list_is_covered():
    ids = {e.id for e in load_playbook()}
    needed = {"pb-launcher-single-process", "pb-slurm-ntasks-per-node", "pb-all-ranks-one-device",
              "pb-full-shard-traffic", "pb-sharding-over-pcie", "pb-fsdp-no-wrap-policy",
              "pb-zero3-per-module-gathers", "pb-multi-node-slow-link", "pb-multi-node-use-hsdp",
              "pb-nccl-not-using-ib", "pb-oom-long-sample", "pb-host-ram-loading-every-rank",
              "pb-oom-while-wrapping", "pb-lora-new-tokens", "pb-long-context", "pb-zero-small-model-buffers",
              "pb-memory-not-dropping-lora", "pb-memory-not-dropping-activations", "pb-fp16-no-bf16",
              "pb-rl-multi-model", "pb-nccl-timeout-preprocessing", "pb-rank0-extra-memory",
              "pb-save-optimizer-rank0-ram", "pb-checkpointing-ddp-ready-twice", "pb-torch-compile-fsdp"}
    assert needed <= ids, needed - ids


def test_structured_facts_alone_rank_the_phase_cause():
    # No symptom words at all: an OOM observed mid-run points at a long sample first.
    top = match_playbook(PlaybookQuery(text="", oom=True, oom_phase="mid_run"))
    assert top and top[0].id == "pb-oom-long-sample"
    assert "oom_phase" in top[0].matched_triggers
    # A host-RAM kill while loading: loading on every rank first.
    top = match_playbook(PlaybookQuery(host_ram_killed=True, oom_phase="load"))
    assert top and top[0].id == "pb-host-ram-loading-every-rank"
    # A card without bf16, nothing else said.
    top = match_playbook({"gpu_bf16": False, "topics": ["mixed_precision"]})
    assert top and top[0].id == "pb-fp16-no-bf16"


def test_a_known_fact_that_contradicts_requires_drops_the_entry():
    text = "Why use FSDP instead of DDP? ZeRO uses more memory for my small model"
    assert _rank(text, "pb-small-model-use-ddp") is not None
    big = PlaybookQuery(text=text, params_b=70.0)
    assert "pb-small-model-use-ddp" not in [m.id for m in match_playbook(big, limit=0)]
    assert "pb-zero-small-model-buffers" not in [m.id for m in match_playbook(big, limit=0)]


def test_matches_say_which_symptoms_fired():
    match = match_playbook("only one GPU is busy, the other GPUs are idle")[0]
    assert match.id == "pb-launcher-single-process"
    assert all(found for _, found in match.matched_symptoms) and len(match.matched_symptoms) >= 2
    assert match.text("fix", "zh").startswith("改用")


def test_serving_questions_do_not_get_training_causes_and_rl_rollouts_stay_training():
    ids = [m.id for m in match_playbook("How much memory to serve a 70B model with vLLM inference?", limit=0)]
    assert ids and ids[0] == "pb-inference-out-of-scope"
    ids = [m.id for m in match_playbook("GRPO with vLLM rollout on the same GPUs runs out of memory", limit=0)]
    assert "pb-inference-out-of-scope" not in ids and "pb-rl-vllm-colocation" in ids[:2]


@dataclass
class _Setup:
    gpu: str | None = "V100 32GB"
    gpu_count: int | None = 4
    nodes: int | None = 1
    params_b: float | None = 13.0
    finetune: str | None = "full"
    precision: str | None = None
    intra_node_link: str | None = None
    activation_checkpointing: bool | None = None
    torch_compile: bool | None = None


@dataclass
class _Observed:
    oom: bool = True
    deepspeed: bool = True
    zero_stage: int | None = 2
    fsdp_strategy: str | None = None
    models: tuple = ()


@dataclass
class _Parsed:
    setup: _Setup = field(default_factory=_Setup)
    observed: _Observed = field(default_factory=_Observed)
    language: str = "en"
    intent: str = "troubleshoot"
    topics: list = field(default_factory=lambda: ["oom"])


def test_a_parsed_like_object_is_read():
    q = query_from_parsed(_Parsed(), "ZeRO-2 runs out of memory")
    assert q.gpu_bf16 is False and q.zero_stage == 2 and q.oom is True and q.multi_node is False
    ids = [m.id for m in match_playbook(_Parsed(), text="ZeRO-2 runs out of memory on the first step", limit=0)]
    assert ids[0] == "pb-zero2-use-zero3" and "pb-states-exceed-one-card" in ids


@pytest.mark.parametrize("odd", [None, 123, "", "   ", {"text": None}, {"nonsense": 1}])
def test_odd_input_matches_nothing_and_never_raises(odd):
    assert match_playbook(odd) == [] or isinstance(match_playbook(odd), list)


def test_matching_is_fast():
    texts = [t for ts in PHRASINGS.values() for t in ts]
    match_playbook(texts[0])
    started = time.perf_counter()
    for text in texts:
        match_playbook(text)
    per_question_ms = (time.perf_counter() - started) * 1000 / len(texts)
    assert per_question_ms < 20, per_question_ms


def test_a_bad_file_names_itself(tmp_path):
    (tmp_path / "part1.yaml").write_text(
        "entries:\n- id: pb-x\n  title: {en: a, zh: 一}\n  gist: {en: a, zh: 一}\n  cause: {en: a, zh: 一}\n  check: {en: a, zh: 一}\n"
        "  fix: {en: a}\n  symptoms: {en: [a], zh: [一]}\n  sources: [https://example.org]\n", encoding="utf-8")
    clear_caches()
    with pytest.raises(PlaybookError, match=r"part1\.yaml.*pb-x.*fix"):
        load_playbook(tmp_path)
    (tmp_path / "part1.yaml").write_text(
        "entries:\n- id: pb-x\n  title: {en: a, zh: 一}\n  gist: {en: a, zh: 一}\n  cause: {en: a, zh: 一}\n  check: {en: a, zh: 一}\n"
        "  fix: {en: a, zh: 一}\n  symptoms: {en: ['(a'], zh: [一]}\n  sources: [https://example.org]\n",
        encoding="utf-8")
    clear_caches()
    with pytest.raises(PlaybookError, match="bad regex"):
        load_playbook(tmp_path)
    clear_caches()


@pytest.mark.parametrize("text", [
    "Training on 4 GPUs is slower than on a single GPU, what is wrong?",
    "my multi-gpu run is slower, than with one gpu",
    "DDP on 8 cards: same speed as with a single GPU, why?",
    "为什么 8 卡比单卡还慢？",
])
def test_more_gpus_not_faster_matches_the_per_device_entry(text):
    from bot.knowledge.playbook import PlaybookQuery, match_playbook

    ids = [m.id for m in match_playbook(PlaybookQuery(text=text, intent="troubleshoot", gpu_count=4))]
    assert "pb-throughput-per-device" in ids, ids


@pytest.mark.parametrize("text", [
    "cuda OOM with 8*A100, any advice?",
    "torch.cuda.OutOfMemoryError during training, how can I fix it?",
    "My fine-tuning runs out of memory right at the start of training.",
    "两张3090但是显存爆满，无法微调",
    "训练的时候显存不够，怎么办？",
    "一跑就 OOM，有什么办法？",
])
def test_a_bare_oom_gets_the_activation_causes(text):
    from bot.knowledge.playbook import PlaybookQuery, match_playbook

    ids = [m.id for m in match_playbook(PlaybookQuery(text=text, intent="troubleshoot", oom=True))]
    assert ids and ids[0] == "pb-oom-activations", ids


def test_a_config_key_alone_is_no_symptom():
    """A pasted LlamaFactory command mentions cutoff_len and per_device_train_batch_size: that is
    no symptom of a long sample or of a changed global batch."""
    from bot.knowledge.playbook import PlaybookQuery, match_playbook

    text = "--cutoff_len 1536 --per_device_train_batch_size 1 --packing false --max_length 2048"
    ids = [m.id for m in match_playbook(PlaybookQuery(text=text, intent="troubleshoot"))]
    assert "pb-oom-long-sample" not in ids and "pb-global-batch-convergence" not in ids
