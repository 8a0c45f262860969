"""What the answer makes of what it read: a Hugging Face config.json pasted into the question is
the model (issue 13; the calculator uses its real shape, the answer says so, a broken config is
asked about, not guessed), and a multi-model RL job names the models it did not compute (issue 11)."""

from __future__ import annotations

import json

import pytest

from bot import ask
from bot.parse import parse_conversation, pasted_model_config

QWEN25_7B = {"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 3584,
             "intermediate_size": 18944, "num_attention_heads": 28, "num_hidden_layers": 28,
             "num_key_value_heads": 4, "vocab_size": 152064, "tie_word_embeddings": False,
             "max_position_embeddings": 32768}


def test_a_pasted_config_is_the_model_with_its_real_shape():
    pasted = ask(f"Full fine-tune of this model on 8x A100 80GB, DDP or FSDP? {json.dumps(QWEN25_7B)}")
    named = ask("Qwen2.5-7B full fine-tune on 8x A100 80GB, DDP or FSDP?")
    assert pasted.status == "ok"
    assert pasted.provenance["params_b"] == "config"
    assert pasted.setup["params_b"] == pytest.approx(7.62, rel=0.005)  # Qwen2.5-7B's published count
    # the same architecture gives the same figures as the catalog entry (GQA, 152k vocabulary)
    for key in ("memory.ddp.total_gib", "memory.fsdp_full_shard.total_gib"):
        assert pasted.numbers[key] == pytest.approx(named.numbers[key], rel=1e-6)
    assert any("config.json" in n for n in pasted.sections.notices)


def test_a_pasted_config_in_a_chinese_question_answers_in_chinese():
    answer = ask(f"这个模型全参微调，8张A100 80G，用哪个策略？\n{json.dumps(QWEN25_7B, indent=2)}")
    assert answer.language == "zh" and answer.status == "ok"
    assert answer.provenance["params_b"] == "config"


@pytest.mark.parametrize("text", ['7B? {"hidden_size": 4096, "num_hidden_layers": ', '{"hidden_size": "big"}',
                                  '{"num_hidden_layers": 32}' * 50, "{" * 5000 + "hidden_size"])
def test_broken_or_partial_configs_never_crash_and_are_not_guessed(text):
    assert pasted_model_config(text) is None or pasted_model_config(text).params_b > 0
    parsed = parse_conversation(text)
    assert parsed.model_spec is None or parsed.setup.params_b


def test_an_explicit_model_name_wins_over_a_pasted_config():
    parsed = parse_conversation(f"Llama-2-7B on 8x A100 80GB, config: {json.dumps(QWEN25_7B)}")
    assert parsed.model_spec is None and parsed.setup.model == "Llama-2-7B"


@pytest.mark.parametrize("question, lang, roles, absent", [
    # GRPO has no value model (its advantage is the group's relative reward): no critic is named
    ("用GRPO训练Qwen2.5-7B，actor全参，8张A100 80G，显存够吗？", "zh", ("actor", "reference"), ("critic",)),
    ("PPO with Llama-2-7B as actor and critic plus a reward model on 8x A100 80GB: DDP or FSDP?", "en",
     ("actor", "critic", "reference", "reward"), ())])
def test_multi_model_jobs_say_what_was_and_was_not_computed(question, lang, roles, absent):
    """Issue 11: a PPO/GRPO job is not one model; the answer names the models it left out, and
    only the models the job has."""
    answer = ask(question)
    assert answer.language == lang
    notice = next(n for n in answer.sections.notices if "reference" in n)
    assert all(r in notice for r in roles), notice
    assert not any(r in notice for r in absent), notice
    assert notice in answer.full_text
