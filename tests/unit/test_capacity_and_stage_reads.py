"""Questions copied from public threads that were misread (2026-12-01): a ZeRO stage written
"ds3", "还是" meaning "still", and "how many GPUs?" answered by asking for the GPU count."""

from __future__ import annotations

import pytest

from bot import ask
from bot.parse import parse_conversation


@pytest.mark.parametrize("text, stage", [
    ("8卡40G的A100 可以 全量微调 14b-chat模型么？\n测试ds3  还是会显存OOM", 3),  # Qwen issue 200
    ("用ds2训练7B，8张A100 80G", 2),
    ("用 ds-3 跑 13B 全参", 3),
    ("zero2还是zero3？7B 8张A100", None),      # two offered: no stage is the run's
    ("用zero3还是fsdp好 7B 8卡", None),
    ("see DeepSpeed issue ds3901 for Falcon-7B", None),  # a number, not a stage
    ("启动deepspeed z3 offload，任然OOM", 3),  # LlamaFactory#7528: "z3" right after deepspeed
    ("Z0", None),  # a bare "z" and a digit is not a stage (found by the property test)
    ("the Z1 cluster, 7B on 8 A100", None),
])
def test_zero_stage_as_people_write_it(text, stage):
    assert parse_conversation(text).observed.zero_stage == stage


def test_a_deepspeed_engine_is_stated_only_with_the_words_that_say_so():
    for text in ("Z0", "the Z1 cluster, 7B on 8 A100"):
        parsed = parse_conversation(text)
        assert parsed.setup.engine is None and "engine" not in parsed.provenance


def test_a_ds3_oom_is_a_deepspeed_run():
    parsed = parse_conversation("8卡40G的A100 可以 全量微调 14b-chat模型么？\n测试ds3  还是会显存OOM")
    assert parsed.observed.oom and parsed.observed.deepspeed and parsed.setup.engine == "deepspeed"


def test_how_many_gpus_is_answered_not_asked_back():
    # Qwen issue 436: the count is the question; the answer gives it and does not ask for it
    answer = ask("请问14B全参数训练如果使用你们提供的fine-tune.py脚本，需要多少显卡？假设是A100=40G.")
    assert answer.intent == "capacity" and answer.numbers.get("capacity.gpu_count")
    assert "gpu_count" not in answer.questions


def test_how_many_gpus_without_the_model_asks_for_the_model_only():
    # s1 issue 59: no model named; retrieval's passages are off the point, so none are shown
    answer = ask("May I ask what is the minimum number of A100 GPUs required for finetuning? "
                 "How can I use four or fewer A100 GPUs for finetuning?")
    assert answer.status == "needs_info"
    assert "params_b" in answer.questions and "gpu_count" not in answer.questions
    assert not answer.sections.passages
