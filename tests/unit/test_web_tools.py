"""The registry's calls for the web page (bot/tools.py, issue 27): the share link's framework,
the setup panel's catalog and config.json readers, the workers' reading and start-up. The page
modules reach nothing below the pipeline (tests/unit/test_architecture.py); these check that
what they call instead answers as the layers below do."""

from __future__ import annotations

import pytest

from bot import tools
from bot.surfaces.web.share import framework_from_query


@pytest.mark.parametrize("written", ["llamafactory", "LlamaFactory", "  LLAMAFACTORY "])
def test_a_known_framework_in_any_case(written):
    assert tools.known_framework(written) == "llamafactory"
    assert framework_from_query({"framework": written}) == "llamafactory"


@pytest.mark.parametrize("written", [None, "", "pytorch-lightning", "llamafactory; drop", "deepspeed"])
def test_an_unknown_framework_is_none(written):
    assert tools.known_framework(written) is None
    assert framework_from_query({} if written is None else {"framework": written}) is None


# The setup panel's calls: a model or GPU the catalog knows, by any spelling; a size the model defines.
@pytest.mark.parametrize("name", ["Llama-2-7B", "llama2 7b", "meta-llama/Llama-2-7b-hf"])
def test_a_catalog_model_by_any_spelling(name):
    assert tools.model_in_catalog(name)
    assert tools.model_defines_size(name)


@pytest.mark.parametrize("name", [None, "", "my-own-model", "some-org/never-cached-model"])
def test_a_name_the_catalog_lacks(name):
    assert not tools.model_in_catalog(name)
    assert not tools.model_defines_size(name)


@pytest.mark.parametrize("name", ["Qwen2-VL-7B", "LLaVA-1.5-7B", "SDXL UNet"])
def test_an_approximate_entry_is_known_but_does_not_define_the_size(name):
    assert tools.model_in_catalog(name)
    assert not tools.model_defines_size(name)


@pytest.mark.parametrize("name", ["A100-80GB", "RTX 4090", "H100"])
def test_a_catalog_gpu(name):
    assert tools.gpu_in_catalog(name)


@pytest.mark.parametrize("name", [None, "", "Quantum-9000"])
def test_a_gpu_the_catalog_lacks(name):
    assert not tools.gpu_in_catalog(name)


LLAMA_LIKE = {"model_type": "llama", "hidden_size": 2048, "intermediate_size": 5632, "num_hidden_layers": 22,
              "num_attention_heads": 32, "num_key_value_heads": 4, "vocab_size": 32000,
              "max_position_embeddings": 2048, "tie_word_embeddings": False}


def test_a_config_as_a_dict_or_its_json_text_is_the_same_model():
    import json

    as_dict = tools.model_from_config(LLAMA_LIKE, "mine")
    as_text = tools.model_from_config(json.dumps(LLAMA_LIKE), "mine")
    assert as_dict.params_b == as_text.params_b and 0.5 < as_dict.params_b < 2.0


@pytest.mark.parametrize("bad", ["[1, 2]", "{not json", {"model_type": "llama"}])
def test_a_config_it_cannot_read_is_a_value_error(bad):
    with pytest.raises(ValueError):
        tools.model_from_config(bad)


def test_an_uncached_hub_id_offline_is_said_as_offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ValueError) as caught:
        tools.model_from_hub("some-org/never-cached-model")
    assert tools.is_hub_offline(caught.value)
    assert not tools.is_hub_offline(ValueError("config has no hidden_size"))


# The answering workers' calls: what the reader takes from a page question (for the panel's marks).
@pytest.mark.parametrize(("question", "model", "count", "framework"), [
    ("Llama-2-7B on 8x A100 80GB, DDP or FSDP?", "Llama-2-7B", 8, None),
    ("Fine-tuning Qwen2.5-7B with LlamaFactory on 4 H100s", "Qwen2.5-7B", 4, "llamafactory"),
    ("GPT-2 XL on two RTX 4090 cards with seq len 1024", "GPT-2 XL", 2, None),
    ("在 8 张 A100 80GB 上训练 Llama-2-7B，用 DDP 还是 FSDP？", "Llama-2-7B", 8, None),
    ("用 LlamaFactory 在 4 张 H100 上微调 Qwen2.5-7B", "Qwen2.5-7B", 4, "llamafactory"),
    ("两张 RTX 4090 训练 GPT-2 XL，序列长度 1024", "GPT-2 XL", 2, None),
])
def test_the_reader_setup_of_a_question(question, model, count, framework):
    setup, found = tools.reader_setup(question)
    assert (setup["model"], setup["gpu_count"], found) == (model, count, framework)


def test_the_reader_setup_follows_the_conversation():
    setup, _ = tools.reader_setup("and with 16 of them?", ["Llama-2-7B on 8x A100 80GB"])
    assert (setup["model"], setup["gpu_count"]) == ("Llama-2-7B", 16)


def test_a_reader_failure_is_no_setup_not_a_crash(monkeypatch):
    import bot.parse

    def broken(*args, **kwargs):
        raise RuntimeError("reader down")

    monkeypatch.setattr(bot.parse, "parse_conversation", broken)
    assert tools.reader_setup("Llama-2-7B on 8x A100") == (None, None)


@pytest.mark.parametrize("questions", [[], ["only one question about FSDP"], [None, 3, ""]])
def test_fewer_than_two_questions_are_not_batched(questions):
    assert tools.prefetch_questions(questions) == 0


def test_the_page_start_up_builds_the_index_through_the_registry(monkeypatch):
    """``prepare_server`` asks the registry, which asks the knowledge index (a stand-in module:
    the real one loads chromadb, which fast tests never do)."""
    import sys
    import types

    from bot.surfaces.web import serving

    built = []
    index = types.ModuleType("bot.knowledge.index")
    index.ensure_index = lambda: built.append("index")  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "bot.knowledge.index", index)
    monkeypatch.setattr("bot.env.configure_runtime", lambda threads: None)
    serving.prepare_server()
    assert built == ["index"]
