"""Batch f classes 2, 4 and 6 (evals/first_contact.md), in phrasings of our own (en and zh):

- 2: memory that grows with the samples, not the card count (padding to the cutoff, long
  recordings in a sample-counted batch, augmentation that lengthens inputs, memory that follows
  the data) leads over the generic activations entry;
- 4: the pre-Ampere bf16 entry only where the card lacks bf16 AND bf16 is used or asked;
- 6: an inference/serving entry or passage never answers a training question.
No retrieval (``with_knowledge=False``): the playbook is YAML and the calculator is pure."""

from __future__ import annotations

import pytest
from _helpers import lead_of

from bot.knowledge.answering import asks_about_serving
from bot.knowledge.playbook import PlaybookQuery, derive_facts, match_playbook
from bot.parse import parse_conversation
from bot.understand.scope import serving_subject

PADDING, LONG_INPUTS, AUGMENT = ("pb-oom-padding-to-max-length", "pb-oom-long-inputs-per-sample-batch",
                                 "pb-oom-augmentation-lengthens-inputs")
LONG_SAMPLE, ACTIVATIONS, PRE_AMPERE, SERVING = ("pb-oom-long-sample", "pb-oom-activations", "pb-fp16-no-bf16",
                                                 "pb-inference-out-of-scope")


SAMPLE_CASES = {
    PADDING: [
        "Fine-tuning Qwen 7B with LoRA, out of memory after an hour; I pad every sample to max_length 2048 in the tokenizer.",
        "My tokenizer uses padding='max_length' and cutoff_len 4096, CUDA OOM on 8 A100s.",
        "SFT run goes OOM; the collator pads all sequences to the full model_max_length even though most are short.",
        "用 LoRA 微调，所有样本都补齐到最大长度 2048，训练一个小时后爆显存",
        "只在部分样本上OOM，cutoff_len 设的 8192，padding 到 max",
        "全量微调时显存不足，数据集里大部分都是 padding，tokenizer 里填充到固定长度 4096",
    ],
    LONG_INPUTS: [
        "OOM only on some batches when training the ASR model, the long utterances are up to 40 seconds.",
        "Training a conformer with batch_size 32 on 4 GPUs goes out of memory at random steps; the audio durations vary a lot.",
        "Whisper fine-tuning hits CUDA out of memory on a few batches; some recordings are longer than 30 seconds.",
        "训练语音识别模型，某些batch会OOM，数据里有很多超长的音频",
        "TTS 训练时显存不足，音频时长差异很大，有的录音超过 20 秒",
        "4卡训练ASR，batch_size=24，跑着跑着就OOM，数据里有 60 秒的长语音",
    ],
    AUGMENT: [
        "Since I enabled speed perturbation the training runs out of memory after some steps.",
        "CUDA out of memory with SpecAugment turned on, fine without it.",
        "My training OOMs at random iterations after I added time stretching to the augmentation.",
        "开了数据增强（变速）之后训练中途爆显存",
        "加了 speed perturb 以后训练一段时间就 OOM，关掉就正常",
        "用了时间拉伸做数据增强，训练时偶尔显存不足",
    ],
    LONG_SAMPLE: [
        "batch_size=16，跑了几百步就显存不足，显存越来越大，跟数据有关吗",
        "GPU memory keeps climbing over the epoch until CUDA out of memory, is it the data?",
        "The OOM comes only on certain batches and seems to depend on the data; why?",
        "训练时显存忽高忽低，某些step会OOM，怎么回事？",
        "OOM at different steps every run, memory fluctuates a lot between iterations",
        "显存和数据有关吗？跑了一会就爆显存，每次出错的位置不固定",
    ],
}


@pytest.mark.parametrize(("expected", "question"), [(k, q) for k, qs in SAMPLE_CASES.items() for q in qs])
def test_memory_that_follows_the_samples_leads(expected, question):
    got, sentence = lead_of(question)
    assert got == expected, sentence


def test_every_class_has_three_phrasings_in_each_language():
    for questions in SAMPLE_CASES.values():
        zh = [q for q in questions if any("\u4e00" <= c <= "\u9fff" for c in q)]
        assert len(zh) >= 3 and len(questions) - len(zh) >= 3


@pytest.mark.parametrize("question", [
    "CUDA out of memory at the first step, 7B full fine-tune",
    "刚开始训练就 OOM 了，13B 全参微调",
])
def test_a_plain_oom_keeps_the_generic_lead(question):
    got, sentence = lead_of(question)
    assert got not in (PADDING, LONG_INPUTS, AUGMENT), sentence


# --- class 4: a lead keyed to the card's generation ------------------------------------------

@pytest.mark.parametrize("question", [
    "Training a wav2vec2 model on 4 A100 40GB with bf16, CUDA out of memory on long recordings, why?",
    "On 8 H100 with --bf16 the job OOMs after a few epochs, what's wrong?",
    "My V100 32GB run uses fp16 mixed precision and gets out of memory at 8192 tokens",
    "8 V100 with fp16, training runs out of memory with DeepSpeed ZeRO-2",
    "T4 training in fp32 crashes with CUDA OOM",
    "4张A100用bf16训练，某些batch会OOM",
    "8张V100用fp16训练，序列长度8192时爆显存",
    "单卡4090，bf16训练，跑了几个小时显存不足",
    "两张V100 32G，fp32 训练 13B 报显存不足，怎么办",
])
def test_the_pre_ampere_lead_never_answers_a_bf16_card_or_an_fp16_run(question):
    got, sentence = lead_of(question)
    assert got != PRE_AMPERE, sentence
    assert PRE_AMPERE not in [m.id for m in match_playbook(parse_conversation(question), text=question, limit=0)]


@pytest.mark.parametrize(("facts", "text", "expected"), [
    ({"gpu_bf16": False, "precision": "bf16-mixed"}, "training on V100", True),
    ({"gpu_bf16": False}, "can I use bfloat16 on my T4?", True),
    ({"gpu_bf16": False}, "用 bf16 训练报错", True),
    ({}, "ValueError: bf16 is only supported on Ampere GPUs", True),
    ({}, "提示不支持bf16", True),
    ({"gpu_bf16": True, "precision": "bf16-mixed"}, "A100 with bf16 is not supported error", False),
    ({"gpu_bf16": False, "precision": "fp16-mixed"}, "V100 fp16 OOM, the bf16 memory table says it fits", False),
    ({"gpu_bf16": False, "precision": "fp32"}, "T4 fp32 training OOM", False),
    ({"gpu_bf16": False}, "V100 训练爆显存", False),
    ({}, "bf16 training OOMs", False),
])
def test_bf16_on_pre_ampere_needs_the_card_and_bf16(facts, text, expected):
    assert derive_facts(PlaybookQuery(text=text, **facts)).bf16_on_pre_ampere is expected


# --- class 6: no serving lead or passage in a training answer --------------------------------

TRAINING_BESIDE_INFERENCE = [
    "Inference works on one A100, but fine-tuning with ZeRO-3 on 4 of them runs out of memory, why?",
    "The model card says inference needs 30 GB; training it with FSDP on 2x 24GB cards OOMs at the first step. Why?",
    "I deployed the model with vLLM before, now LoRA training on 2 GPUs runs out of memory, what's wrong?",
    "推理的时候单卡就能跑，用ZeRO-3训练时每张卡都OOM，是模型不支持吗？",
    "训练比推理多占多少显存？我用 DDP 在8张卡上训练 OOM",
    "部署时用的 KV cache 没问题，但是全参微调 7B 时每张卡都显存不足，为什么？",
]
SERVING = [
    "vLLM serving Qwen2-72B on 4 A100 runs out of memory with KV cache, how to fix?",
    "How much memory do I need to serve Llama-3-70B for inference with 8 users?",
    "Deploying a 34B model for inference on two 4090s, what tensor_parallel_size should I use?",
    "用vLLM部署72B模型，4张A100显存不够，怎么办？",
    "推理 70B 模型需要几张 A100？",
    "部署 Qwen-14B 做在线推理，KV cache 占多少显存？",
]


@pytest.mark.parametrize("question", TRAINING_BESIDE_INFERENCE)
def test_a_training_question_naming_inference_gets_no_serving_lead_or_passage(question):
    parsed = parse_conversation(question)
    assert not serving_subject(question)
    assert not asks_about_serving(question, parsed.topics)
    assert SERVING not in [m.id for m in match_playbook(parsed, text=question, limit=0)]
    got, sentence = lead_of(question)
    assert got != SERVING, sentence


@pytest.mark.parametrize("question", SERVING)
def test_a_serving_question_still_may(question):
    parsed = parse_conversation(question)
    assert serving_subject(question)
    assert asks_about_serving(question, parsed.topics)


def test_the_inference_run_stays_out_of_scope():
    q = "目前测试的是推理，多卡怎么设置？"
    assert parse_conversation(q).intent == "out_of_scope"
