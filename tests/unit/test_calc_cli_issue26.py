"""The calculator CLI takes the issue-26 options and a config's attn_implementation."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from bot.calc.cli import calc
from bot.catalog.hf_config import hf_config_for


def _run(*args: str) -> dict:
    result = CliRunner().invoke(calc, [*args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


@pytest.mark.parametrize("named, flag, expected", [("flash_attention_2", None, "flash_attention_2"),
                                                    ("eager", None, "eager"),
                                                    ("flash_attention_2", "eager", "eager")])
def test_config_attn_implementation_is_read_and_a_flag_wins(tmp_path, named, flag, expected):
    folder = tmp_path / "gemma"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({**hf_config_for("gemma-2-9b"), "attn_implementation": named}))
    args = ["--config", str(folder), "--gpu", "h100", "--gpus", "8"] + (["--attn-implementation", flag] if flag else [])
    assert _run(*args)["setup"]["attn_implementation"] == expected


def test_tf32_and_grad_sync_flags():
    base = ["--model", "llama2-7b", "--gpu", "a100-80gb", "--gpus", "8"]
    plain = _run(*base, "--precision", "fp32")
    tf32 = _run(*base, "--precision", "fp32", "--tf32")
    key = "time.fsdp_full_shard.tokens_per_s_per_gpu"
    assert tf32[key] > 4 * plain[key] and "tf32" in plain["assumed"] and "tf32" not in tf32["assumed"]
    every = _run(*base, "--grad-accum-steps", "4")
    last = _run(*base, "--grad-accum-steps", "4", "--grad-sync", "last_micro_step")
    assert last["memory.fsdp_full_shard.total_gib"] > every["memory.fsdp_full_shard.total_gib"] + 20


def test_h100_96gb_is_accepted():
    out = _run("--model", "llama3.1-8b", "--gpu", "h100", "--gpu-memory-gb", "96", "--gpus", "8")
    assert out["setup"]["gpu_memory_gb"] == 96
