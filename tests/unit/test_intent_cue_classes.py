"""Intent classes of first-contact batches a/b (class 3, intent): a troubleshooting question read as
a concept or a recommendation, capacity vs recommend, design questions read as troubleshooting.
Each class in phrasings of our own, both languages (never a batch's sentences). The convention is
evals/cases/README.md ("Intent labels")."""

from __future__ import annotations

import pytest

from bot.parse import parse_conversation
from bot.understand.intent import FALLBACK_CUES, QUESTION_CUES

FLAGS = {"own", "mine", "setup", "symptom", "i_here", "first_person", "why_only", "can", "advice"}


def intent(text: str) -> str:
    return parse_conversation(text).intent


def test_the_cue_table_is_data_with_known_intents_and_flags():
    assert {c.intent for c in QUESTION_CUES} <= {"troubleshoot", "capacity", "recommend", "concept"}
    for cue in QUESTION_CUES:
        assert cue.needs <= FLAGS and cue.unless <= FLAGS, cue.name
    assert len({c.name for c in QUESTION_CUES}) == len(QUESTION_CUES)
    for cue in FALLBACK_CUES:
        assert cue.needs <= {"oom", "setup", "own", "reported", "tools"} and cue.unless <= {"oom", "setup", "own"}, cue.name


# 1. a symptom of the run, then a knob or the working setup asked for: a fix, even naming strategies
@pytest.mark.parametrize("text", [
    "My DDP job on a 4-GPU box only uses one GPU while the others sit idle. How do we use all the GPUs?",
    "Launched FSDP with accelerate, but training only runs on a single GPU. Are there any settings I need to change?",
    "Fine-tuning with DeepSpeed ZeRO-2 on 8 cards, the speed is the same as with one card. Should we tune the bucket size?",
    "用 FSDP 跑 4 张卡，结果只有一张卡在跑，其余利用率=0%，需要设置什么参数？",
    "8 张 4090 用 deepspeed 训练，速度和单卡差不多，能分享一下你们的配置吗？",
    "Training keeps bursting the GPU memory on 4x A40; could you share your working DeepSpeed config?",
])
def test_a_knob_asked_after_a_symptom_is_troubleshooting(text):
    assert intent(text) == "troubleshoot"


# 2. "what went wrong", in either word order, even where strategy names are all over the message
@pytest.mark.parametrize("text", [
    "Two nodes with one GPU each are slower than one node with DDP. So what is the problem?",
    "We moved from DDP to FSDP and the step got 3x slower, what are we doing wrong?",
    "FSDP full shard on 2 A100 and the throughput halves - what we are doing wrong here?",
    "单机 DDP 正常，换成双机 FSDP 就很慢，问题出在哪里呢",
    "ZeRO-3 一启动就挂，这是怎么回事？",
    "我用 deepspeed 跑 13B，到第二步就报错了，是什么错误？",
])
def test_what_went_wrong_is_troubleshooting(text):
    assert intent(text) == "troubleshoot"


# 3. "is it normal ...?" about the person's run, also as "I'd like to ask if it is normal"
@pytest.mark.parametrize("text", [
    "I would like to ask if it is normal that four 3090s train at the speed of one.",
    "Hi, I wonder whether it is expected that FSDP on 8 GPUs uses as much memory as DDP on 8 GPUs?",
    "想问一下，8卡训练和单卡速度一样，这正常吗？",
])
def test_is_it_normal_is_troubleshooting(text):
    assert intent(text) == "troubleshoot"


# 4. a why about an observation of the run (a device index, a setting without effect): not a concept
@pytest.mark.parametrize("text", [
    "为什么1号卡显存占用那么高，其他卡却很低？device_ids 设成 0,1,2,3 不起作用？",
    "训练时为什么3号卡的利用率一直是满的，别的卡是空的？",
    "Why is cuda:0 at 70GB while the other ranks sit at 20GB? Setting device_map has no effect.",
])
def test_a_why_about_the_runs_observation_is_troubleshooting(text):
    assert intent(text) == "troubleshoot"


# 5. a design choice (why a tool or a project does it this way) is a concept, also after "I'm curious"
@pytest.mark.parametrize("text", [
    "Why use FSDP instead of DeepSpeed in this framework? Could someone explain why FSDP was chosen?",
    "I'm curious, why do you train with a single GPU in the examples?",
    "Why is SHARD_GRAD_OP recommended here and why not simply use FULL_SHARD?",
    "为什么要用 FSDP 而不是 DeepSpeed？",
    "请问，为何要采用 ZeRO-3 而不是 ZeRO-2？",
])
def test_a_design_question_is_a_concept(text):
    assert intent(text) == "concept"


# 6. the project's own model or code asked about, no setup of the person's: a concept
@pytest.mark.parametrize("text", [
    "Is it possible to train your model with multiple GPUs using DDP?",
    "Can this repo be trained with FSDP on several GPUs, or only with DeepSpeed?",
    "Does this codebase support multi-node training with FSDP?",
])
def test_a_question_about_the_projects_code_is_a_concept(text):
    assert intent(text) == "concept"


# 7. hardware requirements asked, with a can-I question beside them (and an OOM): capacity
@pytest.mark.parametrize("text", [
    "全量微调 7B 的硬件条件是什么？一张4090可以吗？",
    "请问 LoRA 微调 13B 的硬件要求是多少，两张3090能跑吗？",
    "CUDA out of memory on one 4090. 全参微调这个 6B 模型的配置要求是什么，两张够吗？",
    "What are the hardware requirements for a full fine-tune of a 13B model? Can two A6000s do it?",
])
def test_hardware_requirements_are_capacity(text):
    assert intent(text) == "capacity"


# 8. a recommendation asked for: recommend, not a count question
@pytest.mark.parametrize("text", [
    "Any recommendation on how I can spread a 30B model across several 24GB cards?",
    "Could you recommend how to split a 13B model over multiple 16GB GPUs?",
    "有没有推荐的方式，把 34B 的模型放到多张 24G 的卡上训练？",
])
def test_a_recommendation_asked_is_recommend(text):
    assert intent(text) == "recommend"


# 9. saving memory: a fix after a failure, advice otherwise (a quantity asked beside it wins)
@pytest.mark.parametrize("text,expected", [
    ("LoRA 训练 7B 最少需要多大显存？还有别的参数可以降低显存吗？", "capacity"),
    ("How much GPU memory does a 7B LoRA need at least? Any other ways to save memory besides the batch size?", "capacity"),
    ("单卡 V100 32G 全参微调 1.8B 显存不足，有没有办法降低显存？", "troubleshoot"),
    ("Full fine-tune of a 7B on 2x A100 40G OOMs right away. Any other ways to reduce memory?", "troubleshoot"),
])
def test_saving_memory_depends_on_a_failure(text, expected):
    assert intent(text) == expected


# 10. a strategy asked for after an OOM stays recommend (the convention; guards the knob class)
@pytest.mark.parametrize("text", [
    "Training a 13B with DDP on 8 A100 80G gives CUDA out of memory. Should I switch to FSDP?",
    "8 张 A100 用 DDP 训 13B 爆显存了，要不要换成 FSDP？",
    "OOM with plain DDP on 4x 4090 for a 7B model: would FSDP full shard fit?",
])
def test_a_strategy_asked_after_an_oom_is_recommend(text):
    assert intent(text) == "recommend"


# 11. how to do it without the error; a killed run with no question at all
@pytest.mark.parametrize("text", [
    "按照教程开了 cpu offload 还是报错，怎样才能开 offload 且不报错呢？",
    "How can I run ZeRO-3 offload on 2 V100 without the optimizer error?",
    "When I launch with 8 GPUs the job exits with return code -9; with 1 GPU it is fine.",
    "8 卡启动 deepspeed 后进程 exits with return code = -9，单卡没问题",
])
def test_without_the_error_and_a_killed_run_are_troubleshooting(text):
    assert intent(text) == "troubleshoot"


@pytest.mark.parametrize("text", [
    "Full fine-tune of a 7B model: would two A100 80G be enough?",
    "We train a 13B model: should we use FSDP or DDP on 8 H100?",
    "LoRA on a 70B model: how many 80GB cards do we need?",
])
def test_model_colon_in_a_sentence_is_not_a_config_setting(text):
    parsed = parse_conversation(text)
    assert parsed.setup.params_b in (7, 13, 70)
    assert parsed.intent in ("recommend", "capacity")


# the convention's core: which/should/best with a setup = recommend; can-I on stated cards = recommend
# (evals/cases/README.md); how many / requirements = capacity, also with a which-question beside it
@pytest.mark.parametrize("text,expected", [
    ("What is best for a 7B full fine-tune on 8 A100 80G, DDP or FSDP?", "recommend"),
    ("What's the best way to shard a 70B model across 16 H100?", "recommend"),
    ("13B 全参，4 张 A100 80G，哪种策略最合适？", "recommend"),
    ("8 张 4090 微调 7B，用 DDP 还是 FSDP 好？", "recommend"),
    ("Can I train a 13B model on 4 A100 40G?", "recommend"),
    ("4 张 3090 能不能全参微调 7B？", "recommend"),
    ("How many A100 80G do I need to fully fine-tune a 70B model?", "capacity"),
    ("全参微调 72B 最少需要几张 H100？", "capacity"),
    ("How many H100s do I need for Llama-3-70B, and should I use FSDP or DeepSpeed?", "capacity"),
    ("训练 70B 需要多少张卡？用 FSDP 还是 ZeRO-3？", "capacity"),
    ("What is the best way to shard a model in general?", "concept"),
])
def test_recommend_and_capacity_by_the_convention(text, expected):
    assert intent(text) == expected
