"""Numbers a user cannot use (issue 30): no ``inf``, ``nan``, exponent or negative count reaches
an answer's text or ``setup``; an invalid answer names the bad value in words, in its language."""

from __future__ import annotations

import math
import re

import pytest

from bot.core.setup import LIMITS, TrainingSetup, bad_values, check_setup, usable_setup
from bot.figures import read_value_words, unusable_figures, value_words

BAD = [math.inf, -math.inf, math.nan, 1e30, -1e30, 1e-9, -8.0, 0.0]
NEGATIVE = re.compile(r"(?<![\w.])-\d")


@pytest.mark.parametrize("value, en, zh", [
    (math.nan, "not a number", "不是一个数"), (math.inf, "infinity", "无穷大"),
    (-math.inf, "minus infinity", "负无穷大"), (1e30, "an impossibly large number", "一个大得不可能的数"),
    (1e-9, "a vanishingly small number", "一个小得可以忽略的数"), (-8, "minus 8", "负 8"),
    (10_000_000, "10,000,000", "10,000,000"), (0.5, "0.5", "0.5"), (-2048.0, "minus 2,048", "负 2,048"),
    (0.00025, "0.00025", "0.00025"),
])
def test_values_in_words(value, en, zh):
    assert value_words(value, "en") == en and value_words(value, "zh") == zh
    assert not unusable_figures(en) and not NEGATIVE.search(en) and not NEGATIVE.search(zh)
    back = read_value_words(en)
    assert back is not None and (math.isnan(back) if math.isnan(value) else
                                 (back == value or (abs(value) >= 1e15 or 0 < abs(value) < 1e-4)))


def test_unusable_figures_finds_what_python_prints_and_nothing_else():
    assert unusable_figures("peak inf GiB, nan s, 1e+30B, 2.5e-07, -inf") == ["inf", "nan", "1e+30", "2.5e-07", "-inf"]
    assert unusable_figures("info: Nanjing run-3e4a91 ZeRO-3 Llama-2-7B 8 GPUs, fp16 infer") == []
    # prose naming the values, and code, print no figure
    assert unusable_figures("syncs the inf/NaN check across ranks; a NaN loss; set `lr=1e-5`\n"
                            "```python\nopt = AdamW(lr=1e-5)\n```") == []


@pytest.mark.parametrize("name", sorted(LIMITS))
@pytest.mark.parametrize("value", BAD)
def test_every_bad_value_is_a_problem_in_words(name, value):
    if name in ("gpu_count", "gpus_per_node", "nodes", "seq_len", "micro_batch", "lora_rank", "checkpoint_every",
                "grad_accum_steps", "tensor_parallel", "pipeline_parallel", "context_parallel") \
            and math.isfinite(value) and abs(value) < 1e15:
        value = int(value) if float(value).is_integer() else value
    setup = TrainingSetup.model_construct(**{name: value})
    problems = check_setup(setup)
    mine = [p for p in problems if p.field == name]
    assert mine, (name, value, problems)
    for problem in problems:
        assert not unusable_figures(problem.message) and not NEGATIVE.search(problem.message), problem
    if not math.isfinite(value) or value <= 0:
        assert name in bad_values(setup) and getattr(usable_setup(setup), name) is None


QUESTIONS = [
    ("DDP or FSDP for a -7B model on 8x A100 40GB?", "params_b", "minus 7"),
    ("DDP or FSDP for 7B on 8 A100 40GB GPUs, -2 nodes?", "nodes", "minus 2"),
    ("FSDP or DDP: 13B on 8x -80GB cards?", "gpu_memory_gb", "minus 80"),
    ("7B 模型，-2 个节点，每个节点 8 张 A100，DDP 还是 FSDP？", "nodes", "负 2"),
    ("7B 模型，8 张 -40GB 的卡，选 DDP 还是 FSDP？", "gpu_memory_gb", "负 40"),
    ("一个 -13B 的模型在 8 张 A100 80GB 上训练，用哪个？", "params_b", "负 13"),
]


@pytest.mark.parametrize("question, field, words", QUESTIONS)
def test_an_invalid_question_names_the_value_in_words_and_keeps_it_out_of_setup(question, field, words):
    from bot.assistant import ask

    answer = ask(question)
    assert answer.status == "invalid", answer.text
    assert field not in answer.setup
    assert all(not (isinstance(v, (int, float)) and not isinstance(v, bool) and (not math.isfinite(v) or v < 0))
               for v in answer.setup.values()), answer.setup
    assert words in answer.text, answer.text
    assert not unusable_figures(answer.text) and not NEGATIVE.search(answer.text), answer.text


@pytest.mark.parametrize("fields, field", [
    ({"params_b": math.inf, "gpu": "A100 40GB", "gpu_count": 8}, "params_b"),
    ({"params_b": math.nan, "gpu": "A100 40GB", "gpu_count": 8}, "params_b"),
    ({"params_b": 7.0, "gpu": "A100 40GB", "gpu_count": -8}, "gpu_count"),
    ({"params_b": 7.0, "gpu_memory_gb": -math.inf, "gpu_count": 8}, "gpu_memory_gb"),
    ({"params_b": 1e30, "gpu": "A100 40GB", "gpu_count": 8}, "params_b"),
    ({"model": "Llama-2-7B", "params_b": 1e20, "gpu": "A100 40GB", "gpu_count": 8}, "params_b"),
])
@pytest.mark.parametrize("language", ["en", "zh"])
def test_a_setup_given_directly_is_answered_the_same_way(fields, field, language):
    from bot.assistant import answer_for_setup

    answer = answer_for_setup(TrainingSetup(**fields), language, with_knowledge=False)
    assert answer.status == "invalid"
    bad = {k: v for k, v in answer.setup.items()
           if isinstance(v, float) and (not math.isfinite(v) or v < 0) or isinstance(v, int) and v < 0}
    assert not bad, bad
    assert not unusable_figures(answer.text) and not NEGATIVE.search(answer.text), answer.text
    assert answer.model_dump_json()  # finite: JSON stays valid
