"""The LLM's figures must be the answer's figures of the same kind (``bot.figure_units``).

The value check alone admits a wrong figure that shares its value with an unrelated one ("8 GiB"
where 8 is the GPU count): the fake LLMs below write such figures in both languages, and only
right ones; the first are refused (the deterministic answer is shown, a log line says why), the
second kept. LangChain's fake chat model runs in-process; nothing reaches a network.
"""

from __future__ import annotations

import logging

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage

from bot import ask
from bot.figure_units import unit_figures, wrong_unit_figures
from bot.render import fmt
from bot.surfaces.llm import ask_with_llm

ZH_Q = "7B模型全参微调，8张A100 40G，DDP还是FSDP？"
EN_Q = "DDP or FSDP for a 7B model, full fine-tune, on 8x A100 40GB?"


class ToolCallingFake(GenericFakeChatModel):
    def bind_tools(self, tools, **kwargs):
        return self


def fake(text: str) -> ToolCallingFake:
    return ToolCallingFake(messages=iter([AIMessage(content=text)]))


@pytest.fixture(scope="module")
def drafts():
    return {"zh": ask(ZH_Q), "en": ask(EN_Q)}


def _values(answer, *suffixes) -> list[float]:
    return [abs(float(v)) for k, v in answer.numbers.items()
            if k.rsplit(".", 1)[-1].endswith(suffixes) and not isinstance(v, bool) and isinstance(v, int | float)]


def _memory(answer) -> list[float]:
    return _values(answer, "_gib") + _values(answer, "gb_per_step") + [answer.setup["gpu_memory_gb"]]


def _time(answer) -> list[float]:
    return _values(answer, "seconds")


def _absent(value: float, values: list[float], decimals: int) -> bool:
    return not any(abs(value - v) <= 0.5 * 10 ** -decimals for v in values)


def wrong_texts(answer, lang: str) -> list[str]:
    """Figures whose value the answer holds, under another kind's unit (checked absent there)."""
    n, s = answer.numbers, answer.setup
    total = fmt(n["memory.fsdp_full_shard.total_gib"])
    count, card = s["gpu_count"], fmt(s["gpu_memory_gb"])
    assert _absent(count, _memory(answer), 0), "premise: no memory figure equals the GPU count"
    assert _absent(float(total), _time(answer), 2), "premise: no time figure equals the memory total"
    assert card != str(count)
    if lang == "zh":
        return [f"推荐 FSDP 全分片：每卡约 {count} GiB [1]。",
                f"推荐 FSDP 全分片，一步大约 {total} 秒 [1]。",
                f"推荐 FSDP 全分片，需要 {card} 张卡才够 [1]。"]
    return [f"Use FSDP full shard: each GPU needs about {count} GiB [1].",
            f"Use FSDP full shard; one step takes about {total} s [1].",
            f"Use FSDP full shard, spread over {card} GPUs [1]."]


def right_texts(answer, lang: str) -> list[str]:
    n = answer.numbers
    total, ddp = fmt(n["memory.fsdp_full_shard.total_gib"]), fmt(n["memory.ddp.total_gib"])
    step = fmt(n["time.fsdp_full_shard.step_seconds"])
    if lang == "zh":
        return [f"推荐 FSDP 全分片：每卡约 {total} GiB，8 张 A100 40G 上一步约 {step} 秒 [1]。",
                f"推荐 FSDP 全分片。DDP 每卡要 {ddp} GiB，而卡只有 40G [1]。",
                f"推荐 FSDP 全分片（每卡 {total} GiB/GPU）[1]。"]
    return [f"Use FSDP full shard: about {total} GiB per GPU on your 8 GPUs, a step in about {step} s [1].",
            f"Use FSDP full shard. DDP needs {ddp} GiB per GPU, more than a 40 GB card [1].",
            f"Use FSDP full shard ({total} GiB/GPU, {step}s a step) [1]."]


@pytest.mark.parametrize("lang", ["zh", "en"])
@pytest.mark.parametrize("which", [0, 1, 2])
def test_a_figure_under_the_wrong_unit_is_refused(drafts, caplog, lang, which):
    draft = drafts[lang]
    text = wrong_texts(draft, lang)[which]
    with caplog.at_level(logging.WARNING, logger="bot.surfaces.llm"):
        answer = ask_with_llm(ZH_Q if lang == "zh" else EN_Q, model=fake(text))
    assert answer.text == draft.text  # the deterministic answer is shown
    assert "LLM answer rejected" in caplog.text and "under the wrong unit" in caplog.text


@pytest.mark.parametrize("lang", ["zh", "en"])
@pytest.mark.parametrize("which", [0, 1, 2])
def test_right_figures_with_their_units_are_kept(drafts, caplog, lang, which):
    draft = drafts[lang]
    text = right_texts(draft, lang)[which]
    with caplog.at_level(logging.WARNING, logger="bot.surfaces.llm"):
        answer = ask_with_llm(ZH_Q if lang == "zh" else EN_Q, model=fake(text))
    assert answer.text == text, caplog.text
    assert answer.numbers == draft.numbers


def test_units_are_read_as_the_figure_tokenizer_reads_numbers():
    got = [(f.printed, f.kind) for f in unit_figures(
        "DDP 每卡 155.14 GiB，8张A100 40G，一步 0.51 秒，MFU 57%; 2 nodes, 100 Gbps, 20 ms, a 7B model, "
        "Llama-2-7B on 8x A100 80GB, 3 张卡, 8节点")]
    assert got == [("155.14", "memory"), ("8", "gpus"), ("40", "memory"), ("0.51", "time"), ("57", "percent"),
                   ("2", "nodes"), ("100", "bandwidth"), ("20", "time"), ("7", "params"), ("80", "memory"),
                   ("3", "gpus"), ("8", "nodes")]
    # not figures: names, list numbers, code, links, markers; no unit: left to the value check
    assert unit_figures("1. A100 and H200\n```\n8 GiB\n```\nsee [2] https://x.io/40GB | 39 |") == []


def test_quotes_and_the_users_turns_count_by_kind():
    numbers = {"memory.ddp.total_gib": 150.62, "time.ddp.step_seconds": 0.49, "time.ddp.mfu": 0.5708}
    setup = {"gpu_count": 8, "gpu": "A100 40GB SXM", "nodes": 1}
    assert wrong_unit_figures("150.62 GiB, 0.49 s, 490 ms, 57% MFU, 8 GPUs, 40 GB, 1 node", numbers, setup, []) == []
    assert wrong_unit_figures("8 GiB", numbers, setup, []) == ["8 GiB"]
    assert wrong_unit_figures("8 GiB", numbers, setup, ["the forum said 8 GB was enough"]) == []
    assert wrong_unit_figures("40 s", numbers, setup, ["we have 40 seconds per step"]) == []
    assert wrong_unit_figures("2 nodes", numbers, setup, ["2 GPUs"]) == ["2 nodes"]


def test_a_models_named_size_and_a_what_ifs_gpu_count_are_their_kinds():
    numbers = {"capacity.gpu_count": 16, "memory.ddp.total_gib": 150.62}
    setup = {"model": "Qwen2.5-72B", "params_b": 72.7, "gpu_count": 8, "nodes": 1}
    assert wrong_unit_figures("a 72B model; with 16 GPUs it fits; 72.7B params", numbers, setup, []) == []
    assert wrong_unit_figures("with 16 nodes", numbers, setup, []) == ["16 nodes"]
    assert wrong_unit_figures("a 2.5B model", numbers, setup, []) == ["2.5 B"]  # "Qwen2.5" is no size
