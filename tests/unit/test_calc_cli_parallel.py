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
    assert "Parallel plan" in result.output
    assert "dp_replicate 1 x dp_shard 4 x cp 1 x tp 8 x pp 1 = 32 GPUs" in result.output
    assert "'tp'" not in result.output  # a readable line, not a Python dict


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


# --- the plan view (degrees, memory split, largest local batch, comm per axis, DP strategies) ---

def _json(args: list[str]) -> dict:
    out = CliRunner().invoke(calc, [*args, "--json"])
    assert out.exit_code == 0, out.output
    return json.loads(out.output)["parallel"]


def test_the_plan_tables_name_every_axis_and_strategy():
    result = CliRunner().invoke(calc, [*BASE, "--tp", "2", "--activation-checkpointing"])
    plan_part = result.output.split("Per-GPU peak memory under the plan")[1]
    out = " ".join(plan_part.split())  # rich wraps at the terminal's width
    assert "Communication and step time under the plan" in out
    for label in ("ddp", "hybrid_shard", "shard_grad_op", "full_shard*", "maxlb", "tp s", "fsdp s", "rep s",
                  "tok/s/GPU"):
        assert label in out, label
    assert "tp on NVLink" in out and "On the critical path: tp" in out
    # full shard's group spans the nodes, HSDP's shard group is one node's: both links are named
    assert "fsdp on NVLink (hybrid_shard), across nodes (shard_grad_op, full_shard*)" in out
    assert "--parallelism.tensor_parallel_degree=2" in out


def test_the_json_keeps_every_row_with_its_split_time_and_batch():
    plan = _json([*BASE, "--tp", "2", "--activation-checkpointing"])
    rows = {r["strategy"] + r["variant"]: r for r in plan["rows"]}
    assert {"ddp", "fsdp_hybrid_shard", "fsdp_shard_grad_op", "fsdp_full_shard"} <= set(rows)
    stated = [r for r in plan["rows"] if r["stated"]]
    assert len(stated) == 1 and stated[0]["strategy"] == "fsdp_full_shard"
    assert stated[0]["memory"] == plan["memory"] and stated[0]["max_local_batch"] == plan["max_local_batch"]
    for r in plan["rows"]:
        m = r["memory"]
        parts = m["params_gib"] + m["grads_gib"] + m["optimizer_gib"] + m["activations_gib"] + m["buffers_gib"]
        assert abs(parts - m["total_gib"]) < 0.01
        axes = {a["axis"]: a for a in r["time"]["axes"]}
        assert axes["tp"]["link"] == "nvlink" and not axes["tp"]["overlapped"]
    # DDP replicates the model states over the data-parallel group: more memory than FSDP's shards
    assert rows["ddp"]["memory"]["optimizer_gib"] > 3 * rows["fsdp_full_shard"]["memory"]["optimizer_gib"]
    assert rows["ddp"]["mesh"] == {"pp": 1, "dp_replicate": 16, "dp_shard": 1, "cp": 1, "tp": 2}
    assert rows["fsdp_hybrid_shard"]["mesh"]["dp_replicate"] == 4 and rows["fsdp_hybrid_shard"]["mesh"]["dp_shard"] == 4
    assert plan["time"]["tokens_per_s_per_gpu"] > 0 and plan["toml"]["parallelism"]["tensor_parallel_degree"] == 2


def test_the_largest_local_batch_fits_and_one_more_does_not():
    from dataclasses import replace

    from bot.calc import estimate_setup
    from bot.calc.parallel import max_local_batch, memory_inputs, plan_from_setup, plan_memory
    from bot.core.setup import TrainingSetup

    for tp, pp, mb in ((8, 1, 1), (4, 1, 1), (8, 4, 4)):
        resolved = estimate_setup(TrainingSetup(model="llama3.1-70b", gpu="h100", gpu_count=32, nodes=4,
                                                seq_len=8192, activation_checkpointing=True, tensor_parallel=tp,
                                                pipeline_parallel=pp, micro_batch=mb)).resolved
        plan = plan_from_setup(resolved)
        best = max_local_batch(resolved, plan)
        unit = plan.pp * plan.virtual_stages if pp > 1 else 1
        inputs = memory_inputs(resolved)
        assert best > 0 and best % unit == 0, (tp, pp, best)
        assert plan_memory(replace(inputs, micro_batch=best), plan).fits
        assert not plan_memory(replace(inputs, micro_batch=best + unit), plan).fits


def test_a_pipeline_plan_shows_its_bubble_and_a_context_plan_its_ring():
    piped = _json(["--model", "llama3.1-405b", "--gpu", "h100", "--gpus", "512", "--nodes", "64", "--seq-len",
                   "8192", "--micro-batch", "32", "--activation-checkpointing", "--tp", "8", "--pp", "8"])
    assert piped["time"]["bubble_fraction"] > 0.1
    axes = {a["axis"]: a for a in piped["time"]["axes"]}
    assert axes["pp"]["link"] == "network" and axes["tp"]["link"] == "nvlink"
    assert all(r["strategy"] != "fsdp_shard_grad_op" for r in piped["rows"])  # under PP full shard is ZeRO-2
    out = CliRunner().invoke(calc, ["--model", "llama3.1-8b", "--gpu", "h100", "--gpus", "8", "--seq-len", "131072",
                                    "--activation-checkpointing", "--cp", "4"]).output
    assert "cp s" in out and "bubble" not in out.split("Communication and step time under the plan")[1].split("\n")[1]
    ring = _json(["--model", "llama3.1-8b", "--gpu", "h100", "--gpus", "8", "--seq-len", "131072",
                  "--activation-checkpointing", "--cp", "4"])
    cp = next(a for a in ring["time"]["axes"] if a["axis"] == "cp")
    assert cp["overlapped"] and cp["link"] == "nvlink" and ring["mesh"]["dp_shard"] == 2


def test_no_data_parallel_group_left_is_one_row():
    plan = _json(["--model", "llama3.1-70b", "--gpu", "h100", "--gpus", "8", "--seq-len", "8192",
                  "--activation-checkpointing", "--tp", "8"])
    assert [r["strategy"] for r in plan["rows"]] == ["no_data_parallel"] and plan["rows"][0]["stated"]


def test_an_unstated_batch_under_a_pipeline_is_raised_and_said():
    args = ["--model", "llama3.1-70b", "--gpu", "h100", "--gpus", "16", "--nodes", "2", "--seq-len", "4096",
            "--activation-checkpointing", "--pp", "2"]
    plan = _json(args)
    assert plan["local_batch"] == 2 and plan["local_batch_raised"]
    out = " ".join(CliRunner().invoke(calc, args).output.split())
    assert "local batch 2 per data-parallel rank (the micro-batch was not stated" in out
    stated = _json([*args, "--micro-batch", "4"])
    assert stated["local_batch"] == 4 and not stated["local_batch_raised"]
