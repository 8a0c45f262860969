"""``--config FILE`` names the model from the config (``_name_or_path``, then ``architectures``), never
after the folder the file happens to sit in (issue 26)."""

from __future__ import annotations

import json

import pytest

from bot.catalog.hf_config import model_from_hf_config

LLAMA = {"model_type": "llama", "hidden_size": 2048, "intermediate_size": 8192, "num_hidden_layers": 16,
         "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 128256}


@pytest.mark.parametrize("folder", ["checkpoint-500", "snapshots", "tmp_config"])
def test_architectures_name_a_config_without_a_name(tmp_path, folder):
    path = tmp_path / folder / "config.json"
    path.parent.mkdir()
    path.write_text(json.dumps({**LLAMA, "architectures": ["LlamaForCausalLM"]}))
    spec = model_from_hf_config(str(path))
    assert "LlamaForCausalLM" in spec.name and folder not in spec.name


@pytest.mark.parametrize("name_or_path", ["meta-llama/Llama-3.2-1B", "Qwen/Qwen2.5-7B", "./my-run/final"])
def test_name_or_path_wins_over_the_folder(tmp_path, name_or_path):
    path = tmp_path / "checkpoint-9" / "config.json"
    path.parent.mkdir()
    path.write_text(json.dumps({**LLAMA, "_name_or_path": name_or_path, "architectures": ["LlamaForCausalLM"]}))
    assert model_from_hf_config(str(path)).name == name_or_path


def test_a_config_with_neither_still_gets_a_name_from_its_folder(tmp_path):
    path = tmp_path / "my-model" / "config.json"
    path.parent.mkdir()
    path.write_text(json.dumps(LLAMA))
    assert model_from_hf_config(str(path)).name == "my-model"
