"""Model names as people write them (bot/catalog/names.py, models.resolve_model): a family and the
size written in the name, the family alone when the size is missing, Chinese family names, and
nothing for a name the catalog cannot place. Each rule in several phrasings, both languages."""

from __future__ import annotations

import pytest

from bot.catalog import UnknownNameError, list_models, lookup_model
from bot.catalog.models import list_families, lookup_family, resolve_model
from bot.catalog.names import latin, norm_key, split_name


@pytest.mark.parametrize("typed,name", [
    # a family and the size written after it, release words anywhere
    ("InternLM2 20B", "InternLM2-20B"), ("internlm2-chat-20b", "InternLM2-20B"),
    ("internlm/internlm2_5-20b-chat", "InternLM2-20B"), ("书生·浦语2 20B", "InternLM2-20B"),
    ("internlm2-chat-7b", "InternLM2-7B"), ("InternLM2.5 7B Chat", "InternLM2-7B"),
    ("Yi-1.5-34B", "Yi-34B"), ("yi 1.5 34b chat", "Yi-34B"), ("01-ai/Yi-1.5-34B-Chat", "Yi-34B"),
    ("零一万物 Yi-34B", "Yi-34B"),
    ("qwen2.5-coder-7b-instruct", "Qwen2.5-7B"), ("Qwen/Qwen2.5-Coder-7B-Instruct", "Qwen2.5-7B"),
    ("千问2.5-coder 7B", "Qwen2.5-7B"), ("通义千问2.5-7B", "Qwen2.5-7B"), ("通义千问Qwen2.5-7B-Instruct", "Qwen2.5-7B"),
    ("Qwen1.5 110B Chat", "Qwen1.5-110B"), ("qwen1.5-32b-chat", "Qwen1.5-32B"),
    ("百川2-13B", "Baichuan2-13B"), ("Baichuan2 13B Chat", "Baichuan2-13B"),
    ("chatglm2-6b", "ChatGLM3-6B"), ("THUDM/chatglm2-6b", "ChatGLM3-6B"), ("智谱 ChatGLM3-6B", "ChatGLM3-6B"),
    ("DeepSeek-R1-Distill-Qwen-7B", "Qwen2.5-7B"), ("deepseek-r1-distill-qwen-1.5b", "DeepSeek-R1-Distill-Qwen-1.5B"),
    ("deepseek-ai/DeepSeek-R1", "DeepSeek-V3"), ("DeepSeek-Coder-33B-Instruct", "DeepSeek-Coder-33B"),
    ("deepseek llm 67b chat", "DeepSeek-LLM-67B"), ("深度求索 DeepSeek-V2", "DeepSeek-V2"),
    ("MiniCPM-Llama3-V-2_5", "MiniCPM-Llama3-V-2.5"), ("minicpm-v 2.6", "MiniCPM-V-2.6"),
    ("面壁小钢炮 MiniCPM-2B", "MiniCPM-2B"), ("InternVL2.5 8B", "InternVL2.5-8B"), ("书生万象2.5-8B", "InternVL2.5-8B"),
    ("CodeLlama-34b-Instruct-hf", "CodeLlama-34B"), ("code llama 7b", "CodeLlama-7B"),
    ("pythia-1.4b-deduped", "Pythia-1.4B"), ("EleutherAI/gpt-neox-20b", "GPT-NeoX-20B"),
    ("MPT-30B-instruct", "MPT-30B"), ("bigcode/starcoder", "StarCoder-15.5B"), ("StarCoder2 15B", "StarCoder2-15B"),
    ("Falcon-40B-Instruct", "Falcon-40B"), ("falcon3 7b instruct", "Falcon3-7B"),
    ("ViT-B/16", "ViT-B-16"), ("resnet50", "ResNet-50"), ("ConvNeXt-Base", "ConvNeXt-Base"),
    ("openai/clip-vit-large-patch14", "CLIP-ViT-L-14"), ("Aria", "Aria"), ("pixtral 12b", "Pixtral-12B"),
    ("Molmo-7B-D-0924", "Molmo-7B-D"), ("idefics2-8b", "Idefics2-8B"), ("llava-v1.6-mistral-7b", "LLaVA-NeXT-Mistral-7B"),
    ("姜子牙13B", "Ziya-LLaMA-13B"), ("悟道·天鹰 7B", "Aquila-7B"), ("flan-t5-xl", "Flan-T5-XL"),
    ("sd 2.1", "Stable Diffusion 2.1 UNet"), ("bge-large-zh-v1.5", "BERT-large-Chinese"),
])
def test_a_family_and_the_size_written_in_the_name_find_the_entry(typed, name):
    assert lookup_model(typed).name == name
    assert resolve_model(typed).model.name == name


@pytest.mark.parametrize("typed,family", [
    ("InternLM2", "InternLM2"), ("internlm2-chat", "InternLM2"), ("书生·浦语2", "InternLM2"),
    ("Baichuan2", "Baichuan2"), ("百川2", "Baichuan2"), ("baichuan2-chat", "Baichuan2"),
    ("InternVL2", "InternVL2"), ("Qwen2.5-Coder", "qwen2.5-coder"), ("千问2.5", "Qwen2.5"),
    ("Pythia", "Pythia"), ("falcon", "Falcon"), ("CodeLlama-Instruct", "CodeLlama"),
])
def test_a_known_family_without_a_size_gives_the_family_to_ask_about(typed, family):
    match = resolve_model(typed)
    assert match.model is None and match.family is not None
    assert match.family.name.lower() == family.lower() and len(match.family.sizes) >= 1
    with pytest.raises(UnknownNameError) as err:
        lookup_model(typed)
    assert err.value.family is match.family
    assert "which size" in str(err.value) and match.family.sizes[0] in str(err.value)


@pytest.mark.parametrize("typed,family", [
    ("qwen3-33b", "Qwen3"), ("InternLM2 13B", "InternLM2"), ("百川2-70B", "Baichuan2"), ("pythia-3b", "Pythia"),
])
def test_a_size_the_family_lacks_gives_the_family_and_no_model(typed, family):
    match = resolve_model(typed)
    assert match.model is None and match.family is not None and match.family.name == family
    with pytest.raises(UnknownNameError) as err:
        lookup_model(typed)
    assert err.value.family is match.family


@pytest.mark.parametrize("typed", ["foo2_7b_chat", "acme-coder-9b", "我的模型-7B", "zzzz", "my_model_v3", ""])
def test_an_unknown_name_gives_nothing(typed):
    match = resolve_model(typed)
    assert match.model is None and match.family is None
    with pytest.raises(UnknownNameError) as err:
        lookup_model(typed)
    assert err.value.family is None


@pytest.mark.parametrize("text,family,size", [
    ("internlm2-chat-20b", "internlm2", "20B"), ("Qwen/Qwen2.5-Coder-7B-Instruct", "qwen2.5coder", "7B"),
    ("foo2_7b_chat", "foo2", "7B"), ("Mixtral-8x7B-v0.1", "mixtral", "8x7B"), ("bloom-560m", "bloom", "560M"),
    ("Qwen3-30B-A3B", "qwen3", "30B"), ("internlm2_5-1_8b-chat", "internlm2.5", "1.8B"), ("千问2.5 0.5B", "qwen2.5", "0.5B"),
    ("InternLM2", "internlm2", None),
])
def test_names_split_at_their_size(text, family, size):
    parts = split_name(text)
    assert parts is not None and (parts.family_key, parts.size) == (family, size)


def test_a_bare_size_has_no_family():
    assert split_name("7b") is None and split_name(" 70B ") is None
    assert lookup_model("7b").approximate  # a bare size still gives the generic shape


def test_chinese_family_names_become_their_latin_word():
    assert latin("通义千问2.5-7B") == "qwen2.5-7b"
    assert latin("书生·浦语2-20B") == "internlm2-20b"
    assert latin("零一万物Yi-34B") == "yi-34b"  # the Chinese name beside its Latin one, once
    assert norm_key("百川2-13B-Chat") == norm_key("Baichuan2-13B")


def test_a_slash_before_a_digit_is_part_of_the_name_not_an_organisation():
    assert norm_key("ViT-B/16") == norm_key("ViT-B-16") != norm_key("ViT-B/32")
    assert norm_key("Qwen/Qwen2.5-7B") == norm_key("Qwen2.5-7B")


def test_every_family_member_is_a_catalog_entry_and_families_have_sizes():
    names = {m.name for m in list_models()}
    families = list_families()
    assert len(families) >= 100
    for family in families:
        assert family.members, family.name
        assert all(target in names for _, target in family.members), family.name


def test_lookup_family_reads_the_name_as_typed():
    assert lookup_family("InternLM2 20B").name == "InternLM2"
    assert lookup_family("书生·浦语2-7B").name == "InternLM2"
    assert lookup_family("not-a-model") is None


@pytest.mark.parametrize("text,name", [
    ("千问2.5-7B LoRA 单卡4090 够吗", "Qwen2.5-7B"), ("用通义千问2.5 72B做全参微调，8张A100 80G", "Qwen2.5-72B"),
    ("书生·浦语2-20B 全参微调要几张卡", "InternLM2-20B"), ("百川2-13B-Chat 微调 4张3090", "Baichuan2-13B"),
    ("书生万象2.5-8B微调 需要多少显存", "InternVL2.5-8B"),
])
def test_chinese_product_names_are_catalog_names_a_reader_finds_in_text(text, name):
    from bot.parse import parse_conversation

    assert parse_conversation(text).setup.model == name


def test_chinese_spellings_are_aliases_of_the_same_entry_not_new_entries():
    from bot.catalog import model_names

    names = model_names()
    assert names["千问2.5-7B"] == names["通义千问2.5-7B"] == "Qwen2.5-7B"
    assert names["书生·浦语2-20B"] == "InternLM2-20B" and names["百川2-13B"] == "Baichuan2-13B"
    assert len({m.name for m in list_models()}) == len(list_models())


@pytest.mark.parametrize("text,billions", [
    ("internlm2-chat-20b", 20.0), ("Qwen-1_8B-Chat", 1.8), ("foo2_7b_chat", 7.0), ("my_llama3_8b_sft", 8.0),
    ("bloom-560m", 0.56), ("Qwen3-30B-A3B", 30.0), ("千问2.5-0.5B", 0.5), ("Mixtral-8x7B", 56.0),
    ("acme-model", None), ("v2_final", None),
])
def test_the_size_written_in_a_name(text, billions):
    from bot.catalog.names import size_in_name

    assert size_in_name(text) == (pytest.approx(billions) if billions is not None else None)
