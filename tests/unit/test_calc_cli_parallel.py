"""``shardwise calc --tp/--cp/--pp`` (issue 29): the stated degrees become a plan (FSDP over the
rest) and its per-GPU memory is printed beside the strategy tables; an impossible plan is one
clean line, never a traceback."""

from __future__ import annotations

import json

from click.testing import CliRunner

from bot.calc.cli import calc

BASE = ["--model", "llama3.1-70b", "--gpu", "h100", "--gpus", "32", "--nodes", "4", "--seq-len", "8192"]


def test_tensor_parallel_prints_the_plan():
    result = CliRunner().invoke(calc, [*BASE, "--tp", "8", "--activation-checkpointing"])
    assert result.exit_code == 0, result.output
    assert "Parallel plan" in result.output and "'tp': 8" in result.output and "'dp_shard': 4" in result.output


def test_the_plan_in_json_and_more_tp_needs_less_memory():
    def total(tp: int) -> float:
        out = CliRunner().invoke(calc, [*BASE, "--tp", str(tp), "--json"])
        assert out.exit_code == 0, out.output
        return json.loads(out.output)["parallel"]["memory"]["total_gib"]

    assert total(8) < total(2)


def test_an_impossible_plan_is_one_clean_line():
    result = CliRunner().invoke(calc, [*BASE, "--tp", "3"])
    assert result.exit_code != 0
    assert "does not divide" in result.output and "Traceback" not in result.output


def test_no_degree_no_plan():
    result = CliRunner().invoke(calc, [*BASE, "--json"])
    assert "parallel" not in json.loads(result.output)
