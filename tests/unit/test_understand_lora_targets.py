"""LoRA target modules named one by one are read as the set they make (numbers engineer, 2026-12-02).

Before, any list that began with q_proj, k_proj, v_proj was read as the attention projections only,
so a run with adapters on every MLP projection too was computed without them."""

from __future__ import annotations

import pytest

from bot.parse import parse_conversation
from bot.understand.config import lora_target_set


def targets_of(text: str) -> str | None:
    return parse_conversation(text).setup.lora_targets


@pytest.mark.parametrize(("text", "expected"), [
    ("lora_target_modules: [q_proj, k_proj, v_proj, up_proj, down_proj, gate_proj]\nadapter: lora",
     "all_linear_but_o"),
    ("LoraConfig(r=64, target_modules=['q_proj', 'k_proj', 'v_proj', 'gate_proj', 'up_proj', 'down_proj'])",
     "all_linear_but_o"),
    ("用 LoRA 训练，target_modules 设成 q_proj,k_proj,v_proj,gate_proj,up_proj,down_proj，rank 64", "all_linear_but_o"),
    ("--lora_target_modules q_proj,k_proj,v_proj,o_proj,gate_proj,up_proj,down_proj --use_peft", "all_linear"),
    ("LoRA adapters on q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj, rank 16", "all_linear"),
    ("LoRA 微调，lora_target: q_proj,k_proj,v_proj,o_proj,gate_proj,up_proj,down_proj", "all_linear"),
])
def test_a_module_list_with_the_mlp_is_read_as_that_set(text, expected):
    assert targets_of(text) == expected


@pytest.mark.parametrize("text", [
    "lora_target: q_proj,v_proj\nfinetuning_type: lora",
    "LoRA on q_proj,v_proj only, rank 16",
    "LoRA 只加在 q_proj,k_proj,v_proj,o_proj 上",
])
def test_attention_projections_alone_stay_attention(text):
    assert targets_of(text) == "attention"


@pytest.mark.parametrize("text", [
    "LoRA on q_proj,v_proj,gate_proj, rank 8",  # a partial MLP set the calculator has no name for
    "lora_target_modules: [k_proj, up_proj]\nadapter: lora",
])
def test_a_set_the_calculator_cannot_name_is_left_unstated(text):
    assert targets_of(text) is None


def test_the_set_rule_reads_names_not_substrings():
    assert lora_target_set("q_proj, k_proj, v_proj, gate_proj, up_proj, down_proj") == "all_linear_but_o"
    assert lora_target_set("xq_proj, up_projection") is None
    assert lora_target_set("no projections here") is None
