"""A setup question still missing facts names only those facts ("tell me the model", never "the
model and GPUs" to somebody who gave the GPUs), and a troubleshooting or capacity question whose
figures wait for the model leads with its cause, not with the DDP/FSDP rule of thumb."""

from __future__ import annotations

import pytest

from bot import ask

RULE = {"en": "It depends on model size", "zh": "结论取决于模型大小"}


@pytest.mark.parametrize(("question", "lang", "named"), [
    ("Should I use DDP or FSDP on my A100 80GB cards?", "en", "Tell me the model and GPU count and"),
    ("Our lab has some RTX 4090s; DDP or FSDP?", "en", "Tell me the model and GPU count and"),
    ("DDP or FSDP on 8 GPUs?", "en", "Tell me the model and GPU memory and"),
    ("I have 4 GPUs, should I go with DDP or FSDP?", "en", "Tell me the model and GPU memory and"),
    ("实验室有一些4090，用DDP还是FSDP？", "zh", "告诉我模型和GPU 数量，"),
    ("8张卡，DDP还是FSDP？", "zh", "告诉我模型和单卡显存，"),
    ("手上有4块GPU，选DDP还是FSDP？", "zh", "告诉我模型和单卡显存，"),
])
def test_the_rule_of_thumb_asks_only_for_the_missing_facts(question, lang, named):
    answer = ask(question)
    assert answer.status == "needs_info" and "params_b" in answer.questions
    assert RULE[lang] in answer.text and named in answer.text, answer.text


@pytest.mark.parametrize("question", [
    "Out of memory on 4x A100 40GB with the repo's default config for my video diffusion model: how much "
    "memory does this training need?",
    "I keep hitting CUDA OOM on two 48GB A6000s with my own transformer; how many GPUs would this need?",
    "我在4张A100 40G上跑自己的模型，用默认配置就OOM了，训练到底需要多少显存？",
    "两张3090跑我们自己的网络，一开始就爆显存，需要多大的显存才够？",
])
def test_a_capacity_or_troubleshooting_question_missing_the_model_leads_with_its_cause(question):
    answer = ask(question)
    assert answer.status in ("needs_info", "ok") and "params_b" in answer.questions, answer.questions
    first = answer.text.split("\n")[0]
    assert not any(rule in answer.text for rule in RULE.values()), answer.text
    assert answer.sections.headline and answer.sections.headline.startswith(first[:20]), answer.text
