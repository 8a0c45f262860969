"""Properties of the reader over generated text: it never crashes, never changes a number's sign,
never produces a non-finite figure, and never presents as the user's a value it did not read."""

from __future__ import annotations

import math
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.parse import parse_conversation
from bot.understand.text import clean

pytestmark = pytest.mark.slow  # ~15 s of generated inputs; still runs in CI

NUMERIC = ("params_b", "gpu_memory_gb", "gpu_count", "gpus_per_node", "nodes", "inter_node_gbps", "seq_len",
           "micro_batch", "cpu_ram_gb", "lora_rank", "grad_accum_steps")
TOKENS = ["7B", "8卡", "A100", "A100-40G", "A800-SXM4-80GB", "H100-80G", "40G", "80GB", "一共128G", "每张卡只占用了13G",
          "LoRA", "两台机器", "每台8张", "2台2*80G", "16*80G", "IB", "200Gb", "seq", "4096", "8K context", "x", "*", "9" * 30,
          "亿", "GPUs", "nodes", "cutoff_len: 1024", "--max_seq_length 4096", "fp16: true", "without nvlink",
          "not LoRA or QLoRA", "昇腾910B", "Tried to allocate 2.00 GiB (GPU 0; 79.35 GiB total capacity; 70.00 GiB already allocated)",
          "torchrun --nproc_per_node 8 --nnodes 2", "deepspeed --include localhost:4,5,6,7", "单张", "3个GPU", " ", "\n", "，"]
NUMBERED = st.lists(st.sampled_from(TOKENS), max_size=14).map(" ".join)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=600))
def test_no_text_crashes_and_no_figure_is_infinite(text):
    parsed = parse_conversation(text, [text[:200]])
    for value in parsed.setup.model_dump().values():
        if isinstance(value, float):
            assert math.isfinite(value)
    for value in parsed.observed.__dict__.values():
        if isinstance(value, float):
            assert math.isfinite(value)


@settings(max_examples=300, deadline=None)
@given(NUMBERED)
def test_a_number_never_changes_sign(text):
    """Text with no minus sign yields no negative figure ("A100-40G" is 40, never -40)."""
    parsed = parse_conversation(text)
    if not re.search(r"(?<![A-Za-z0-9])-\d", text):  # no standalone minus sign: every figure is >= 0
        for key in NUMERIC:
            value = getattr(parsed.setup, key)
            assert value is None or value >= 0, (key, value, text)


@settings(max_examples=300, deadline=None)
@given(st.one_of(NUMBERED, st.text(max_size=300)))
def test_a_value_the_text_does_not_contain_is_never_reported_as_read(text):
    """Every field reported as stated/config/log carries a span that is in the text, and a
    numeric field's span contains a number (digits or a numeral word): nothing is invented."""
    parsed = parse_conversation(text)
    cleaned = clean(text)
    for key, value in parsed.setup.model_dump().items():
        if value is None:
            continue
        prov = parsed.provenance.get(key)
        assert prov is not None, key
        if prov.source in ("stated", "config", "log"):
            assert prov.span and prov.span in cleaned, (key, prov, text)
            if key in NUMERIC:
                assert re.search(r"\d|[一二两三四五六七八九十双单]|one|two|three|four|five|six|seven|eight|nine|ten|"
                                 r"twelve|sixteen|single|k\b", prov.span, re.I), (key, prov.span)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(TOKENS), max_size=10), st.lists(st.sampled_from(TOKENS), max_size=6))
def test_history_never_crashes_and_stays_consistent(tokens, follow):
    parsed = parse_conversation(" ".join(follow), [" ".join(tokens), {"role": "assistant", "content": "x"}])
    assert parsed.language in ("zh", "en")
    assert parsed.intent in ("recommend", "concept", "troubleshoot", "capacity", "out_of_scope")
