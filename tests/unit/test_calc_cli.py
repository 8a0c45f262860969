"""``shardwise calc``: tables, --json, and every bad-input path (exit 2, no traceback)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from bot.calc.cli import calc, parse_inter_node
from bot.strategies import TRAINING_STRATEGIES

BASE = ["--model", "llama2-7b", "--gpu", "a100-80gb", "--gpus", "8"]


def run(*args):
    return CliRunner().invoke(calc, list(args))


def test_tables_for_every_strategy():
    result = run(*BASE)
    assert result.exit_code == 0, result.output
    for name in ("ddp", "shard_grad_op", "full_shard", "hybrid_shard", "full+offload", "Llama-2-7B"):
        assert name in result.stdout
    assert "Communication and step time" in result.stdout


def test_json_is_flat_with_setup_and_assumed():
    result = run(*BASE, "--nodes", "2", "--gpus", "16", "--inter-node", "ethernet:25", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    for s in TRAINING_STRATEGIES:
        assert isinstance(data[f"memory.{s}.total_gib"], float)
        assert isinstance(data[f"memory.{s}.fits"], bool)
        assert f"comm.{s}.vs_ddp" in data and f"time.{s}.step_seconds" in data
    assert data["setup"]["inter_node_link"] == "ethernet" and data["setup"]["inter_node_gbps"] == 25
    assert data["setup"]["gpus_per_node"] == 8
    assert "precision" in data["assumed"]
    assert round(data["memory.ddp.params_gib"] + data["memory.ddp.grads_gib"]
                 + data["memory.ddp.optimizer_gib"], 1) == 100.4


def test_all_options_are_accepted():
    result = run("--params-b", "7", "--gpu-memory-gb", "40", "--gpus", "4", "--gpus-per-node", "4",
                 "--seq-len", "4096", "--micro-batch", "2", "--precision", "fp16-mixed", "--optimizer", "sgd",
                 "--finetune", "lora", "--lora-rank", "8", "--activation-checkpointing", "--intra-node", "pcie",
                 "--cpu-ram-gb", "256", "--json")
    assert result.exit_code == 0, result.output
    setup = json.loads(result.stdout)["setup"]
    assert (setup["finetune"], setup["lora_rank"], setup["activation_checkpointing"]) == ("lora", 8, True)


@pytest.mark.parametrize("args,expected", [
    (["--model", "lama2-7b", "--gpu", "a100", "--gpus", "8"], "Did you mean: Llama-2-7B"),
    (["--model", "llama2-7b", "--gpu", "a1000", "--gpus", "8"], "Did you mean: A100"),
    (["--model", "llama2-7b", "--gpu", "a100", "--gpus", "-8"], "gpu_count: must be positive"),
    (["--model", "llama2-7b", "--gpu", "a100", "--gpus", "10000000"], "gpu_count: 10,000,000 is outside the plausible range 1..100,000"),
    (["--model", "llama2-7b", "--gpu-memory-gb", "0", "--gpus", "8"], "gpu_memory_gb: must be positive"),
    ([*BASE, "--seq-len", "0"], "seq_len: must be positive"),
    ([*BASE, "--micro-batch", "-1"], "micro_batch: must be positive"),
    ([*BASE, "--lora-rank", "0"], "lora_rank: must be positive"),
    ([*BASE, "--cpu-ram-gb", "-5"], "cpu_ram_gb: must be positive"),
    (["--model", "llama2-7b", "--gpu", "a100", "--gpus", "8", "--nodes", "2", "--gpus-per-node", "8"],
     "gpu_count: 8 GPUs contradicts 2 nodes x 8"),
    (["--model", "llama2-7b", "--gpu", "a100", "--gpus", "8", "--nodes", "3"], "do not split evenly"),
    (["--model", "llama2-7b", "--params-b", "70", "--gpu", "a100", "--gpus", "8"], "params_b: 70B contradicts"),
    (["--model", "llama2-7b", "--gpu", "a100-80gb", "--gpu-memory-gb", "40", "--gpus", "8"],
     "gpu_memory_gb: 40 GB contradicts"),
    (["--model", "llama2-7b", "--gpu", "v100", "--gpus", "8", "--precision", "bf16-mixed"], "no bf16 support"),
    ([*BASE, "--inter-node", "carrier-pigeon"], "is not a link"),
    ([*BASE, "--inter-node", "ethernet:fast"], "is not a speed"),
    ([*BASE, "--inter-node", "ethernet:-25"], "inter_node_gbps: must be positive"),
    (["--gpu", "a100", "--gpus", "8"], "model size unknown"),
    (["--model", "llama2-7b", "--gpus", "8"], "GPU memory unknown"),
    (["--model", "llama2-7b", "--gpu", "a100"], "number of GPUs unknown"),
    (["--model", "x" * 20_000, "--gpu", "a100", "--gpus", "8"], "unknown model"),
    (["--model", "<script>alert(1)</script>", "--gpu", "a100", "--gpus", "8"], "unknown model"),
])
def test_bad_input_exits_2_with_one_line_per_problem(args, expected):
    result = run(*args)
    assert result.exit_code == 2, result.output
    assert expected in result.stderr
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert "Traceback" not in result.output
    assert all(line.startswith("error: ") for line in result.stderr.strip().splitlines())


def test_several_problems_give_several_lines():
    result = run("--model", "llama2-7b", "--gpu", "a100", "--gpus", "-1", "--seq-len", "0", "--micro-batch", "0")
    assert result.exit_code == 2
    assert len(result.stderr.strip().splitlines()) == 3


@pytest.mark.parametrize("args", [[*BASE, "--gpus", "eight"], [*BASE, "--precision", "fp8"],
                                  [*BASE, "--finetune", "dora"], [*BASE, "--bogus"]])
def test_click_type_errors_exit_2(args):
    result = run(*args)
    assert result.exit_code == 2
    assert "Traceback" not in result.output


@pytest.mark.parametrize("text,expected", [("ethernet:25", ("ethernet", 25.0)), ("IB:400", ("infiniband", 400.0)),
                                           ("infiniband", ("infiniband", None)), ("eth:100g", ("ethernet", 100.0)),
                                           ("none", ("none", None))])
def test_parse_inter_node(text, expected):
    link, gbps, problems = parse_inter_node(text)
    assert (link, gbps) == expected and problems == []


def test_installed_command_in_a_subprocess():
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root)}
    ok = subprocess.run([sys.executable, "-m", "bot.surfaces.cli", "calc", *BASE, "--json"], capture_output=True,
                        text=True, cwd=root, env=env, timeout=120)
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["memory.fsdp_full_shard.fits"] is True
    bad = subprocess.run([sys.executable, "-m", "bot.surfaces.cli", "calc", "--model", "lama2-7b", "--gpu", "a100",
                          "--gpus", "0"], capture_output=True, text=True, cwd=root, env=env, timeout=120)
    assert bad.returncode == 2
    assert "Traceback" not in bad.stderr
    assert "Did you mean" in bad.stderr and "gpu_count: must be positive" in bad.stderr


def test_large_totals_are_not_cut_off_in_an_80_column_table():
    # Llama-3.1-70B under DDP needs ~1577 GiB per GPU; "1577.x" used to be cut to "1577…".
    result = run("--model", "llama3.1-70b", "--gpu", "h100", "--gpus", "64", "--inter-node", "infiniband:400")
    assert result.exit_code == 0, result.output
    assert "…" not in result.stdout
    assert re.search(r"ddp(\s+[\d.]+){5}\s+15\d\d\s+1[56]\d\d\s+no", result.stdout), result.stdout


def test_offload_that_fits_the_gpu_but_not_host_ram_says_why():
    result = run("--model", "llama2-13b", "--gpu", "a100-40gb", "--gpus", "2", "--cpu-ram-gb", "64")
    assert result.exit_code == 0, result.output
    assert "full+offload does not fit: needs 194.0 GiB host RAM per node, --cpu-ram-gb 64" in result.stdout


def test_nan_and_uneven_per_node_split_get_clear_messages():
    result = run("--params-b", "nan", "--gpu", "h100", "--gpus", "8")
    assert result.exit_code == 2 and "params_b: is not a number" in result.stderr
    result = run(*BASE, "--gpus-per-node", "3")
    assert result.exit_code == 2 and "nodes of 3 GPUs" in result.stderr


def test_run_option_flags_reach_the_setup_and_the_tables():
    result = run(*BASE, "--optimizer-impl", "fused", "--ddp-bucket-view", "--checkpointing-policy", "every_k",
                 "--checkpoint-every", "4", "--compile", "--loss-impl", "chunked", "--grad-accum-steps", "8",
                 "--float8", "--gpu", "h100", "--norm-impl", "fused", "--mfu", "0.45", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    setup = data["setup"]
    assert (setup["optimizer_impl"], setup["ddp_bucket_view"], setup["checkpointing_policy"],
            setup["checkpoint_every"], setup["torch_compile"], setup["loss_impl"], setup["grad_accum_steps"],
            setup["float8"], setup["mfu"]) == ("fused", True, "every_k", 4, True, "chunked", 8, True, 0.45)
    assert setup["activation_checkpointing"] is True
    for s in TRAINING_STRATEGIES:
        assert data[f"memory.{s}.reserved_gib"] >= data[f"memory.{s}.total_gib"]
        assert data[f"time.{s}.tokens_per_s_per_gpu"] > 0 and 0 < data[f"time.{s}.mfu"] < 1
    tables = run(*BASE, "--compile", "--grad-accum-steps", "4")
    assert tables.exit_code == 0 and "tok/s/GPU" in tables.stdout and "resvd" in tables.stdout
    assert "global batch 32" in tables.stdout


def test_contradictory_run_options_exit_2():
    result = run(*BASE, "--checkpoint-every", "2", "--checkpointing-policy", "full")
    assert result.exit_code == 2 and "checkpoint_every" in result.stderr
    result = run(*BASE, "--float8")  # A100: no float8 tensor cores
    assert result.exit_code == 2 and "float8" in result.stderr


def test_several_nodes_without_a_link_exit_2_not_a_traceback():
    result = run("--model", "llama2-7b", "--gpu", "a100", "--nodes", "2", "--gpus-per-node", "8",
                 "--inter-node", "none")
    assert result.exit_code == 2 and "inter_node_link: 2 nodes need a link" in result.stderr
    assert "Traceback" not in result.output


def test_tensor_parallel_is_modelled_in_the_plan_tables_not_called_unmodelled():
    result = run(*BASE, "--tensor-parallel", "4")
    assert result.exit_code == 0, result.output
    out = " ".join(result.stdout.split())
    assert "not modelled" not in out  # the plan tables below model it
    assert "the tables above are pure data parallelism" in out and "Parallel plan:" in out
    data = json.loads(run(*BASE, "--tensor-parallel", "4", "--json").stdout)
    assert len(data["not_modelled"]) == 1 and "parallel" in data  # the pure-DP figures ignore it; the plan has it


def test_fsdp_layout_and_optimizer_flags():
    result = run(*BASE, "--precision", "bf16", "--fsdp-root", "split", "--reshard-after-forward", "4",
                 "--optimizer-in-backward", "--json")
    assert result.exit_code == 0, result.output
    setup = json.loads(result.stdout)["setup"]
    assert (setup["fsdp_root"], setup["reshard_after_forward"], setup["optimizer_in_backward"]) == ("split", 4, True)
    assert json.loads(run(*BASE, "--reshard-after-forward", "false", "--json").stdout)["setup"][
        "reshard_after_forward"] is False
    for bad, field in ((("--reshard-after-forward", "3"), "reshard_after_forward"),
                       (("--reshard-after-forward", "maybe"), "reshard_after_forward"),
                       (("--paged-optimizer", "--optimizer-impl", "fused"), "paged_optimizer"),
                       (("--optimizer-in-backward", "--grad-accum-steps", "4"), "optimizer_in_backward")):
        result = run(*BASE, *bad)
        assert result.exit_code == 2 and field in result.stderr, bad
