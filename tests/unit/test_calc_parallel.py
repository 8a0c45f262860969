"""The parallel-plan calculator: ParallelPlan's invariants, how each memory term scales with its
degree, the pipeline bubble, per-axis links, and the ladder on three setups."""

from __future__ import annotations

import dataclasses

import pytest

from bot.calc.parallel import (
    ParallelPlan,
    PlanError,
    in_flight_chunks,
    korthikanti_layer_bytes,
    memory_inputs,
    plan_for,
    plan_from_setup,
    plan_memory,
)
from bot.calc.parallel_comm import bubble_ratio, plan_comm_time
from bot.calc.parallel_ladder import suggest_plan, torchtitan_toml
from bot.core.setup import TrainingSetup, resolve_setup


def resolved(**kw):
    base = dict(model="llama3.1-8b", gpu="h100", precision="bf16-mixed", optimizer="adamw", finetune="full",
                seq_len=8192, micro_batch=1, gpu_count=8, nodes=1, gpus_per_node=8, activation_checkpointing=True)
    base.update(kw)
    return resolve_setup(TrainingSetup(**base))


# --- invariants ---------------------------------------------------------------------------------


@pytest.mark.parametrize("kwargs, words", [
    (dict(world_size=16, dp_shard=4, tp=2), "world size"),
    (dict(world_size=8, dp_shard=8, tp=0), ">= 1"),
    (dict(world_size=8, dp_shard=4, tp=2, ep=3), "ep 3"),
    (dict(world_size=8, dp_shard=4, pp=2, pp_schedule="Bogus"), "unknown pipeline schedule"),
    (dict(world_size=8, dp_shard=4, pp=2, pp_schedule="1F1B", pp_virtual_stages=2), "one model chunk"),
    (dict(world_size=8, dp_shard=4, pp=2, pp_schedule="Interleaved1F1B", pp_virtual_stages=1), ">= 2"),
    (dict(world_size=8, dp_shard=2, pp=4, pp_microbatches=2), "micro-batches"),
])
def test_plan_invariants_raise_a_value_error_that_says_which(kwargs, words):
    with pytest.raises(PlanError, match=words) as info:
        ParallelPlan(**kwargs)
    assert isinstance(info.value, ValueError)


@pytest.mark.parametrize("kw, words", [
    (dict(tp=16, gpu_count=16), "heads"),  # 8 key/value heads cannot split 16 ways
    (dict(cp=8, seq_len=8200), "2 x cp"),
    (dict(pp=8, gpu_count=64, micro_batch=4), "not divisible"),
])
def test_plans_the_model_or_batch_cannot_take_are_refused(kw, words):
    gpus = kw.pop("gpu_count", 8)
    setup_kw = {k: kw.pop(k) for k in ("seq_len", "micro_batch") if k in kw}
    r = resolved(gpu_count=gpus, nodes=max(1, gpus // 8), **setup_kw)
    with pytest.raises(PlanError, match=words):
        plan_memory(r, plan_for(gpus, **kw))


def test_derived_facts_follow_torchtitans_mesh():
    plan = ParallelPlan(world_size=512, dp_shard=8, tp=8, pp=8)
    assert plan.dp == 8 and plan.model_parallel == 64
    assert plan.mesh_shape == (8, 1, 8, 1, 8)  # pp, dp_replicate, dp_shard, cp, tp
    assert plan.axes_across_nodes(8) == ("pp", "dp_shard")  # TP stays inside the node
    assert not plan.crosses_nodes("tp", 8)
    assert ParallelPlan(world_size=16, dp_shard=16).groups_per_node("dp_shard", 8) == 1
    assert ParallelPlan(world_size=64, dp_shard=8, tp=8).groups_per_node("dp_shard", 8) == 8
    assert plan_for(32, tp=8).dp_shard == 4
    with pytest.raises(PlanError):
        plan_for(30, tp=8)


# --- each term's scaling with its degree --------------------------------------------------------


def test_tp_divides_the_block_weights_and_states():
    r = resolved(model="llama3.1-70b", gpu_count=64, nodes=8)
    one = plan_memory(r, plan_for(64, tp=1, dp_replicate=8))  # FSDP over 8, replicated 8 times
    eight = plan_memory(r, plan_for(64, tp=8, dp_replicate=8))  # FSDP over 1 (no FSDP), TP 8
    # Same shard of the model per GPU (tp x dp_shard = 8 either way): the states match within the
    # norms TP keeps replicated.
    assert eight.optimizer_gib == pytest.approx(one.optimizer_gib, rel=0.01)
    two = plan_memory(r, plan_for(64, tp=2, dp_replicate=4))  # FSDP 8 x TP 2: 1/16 each
    assert two.optimizer_gib == pytest.approx(one.optimizer_gib / 2, rel=0.01)


def test_sequence_parallelism_divides_the_norm_activations_too():
    r = resolved(activation_checkpointing=False)
    plain = plan_memory(r, plan_for(8, tp=8, sequence_parallel=False))
    sp = plan_memory(r, plan_for(8, tp=8, sequence_parallel=True))
    base = plan_memory(r, plan_for(8))
    assert sp.activations_gib < plain.activations_gib < base.activations_gib


def test_korthikanti_formula_with_and_without_sp_and_selective():
    s, b, h, a, t = 2048, 1, 12288, 96, 8
    full = korthikanti_layer_bytes(s, b, h, a)
    assert full == pytest.approx(s * b * h * (34 + 5 * a * s / h))
    tp = korthikanti_layer_bytes(s, b, h, a, t=t)
    sp = korthikanti_layer_bytes(s, b, h, a, t=t, sp=True)
    assert sp == pytest.approx(full / t)  # eq. 4 is eq. 1 divided by t
    assert sp < tp < full
    assert korthikanti_layer_bytes(s, b, h, a, t=t, sp=True, selective=True) == pytest.approx(s * b * h * 34 / t)


def test_cp_divides_the_sequence_and_adds_ring_buffers():
    r = resolved(seq_len=65536, activation_checkpointing=True)
    no_cp = plan_memory(r, plan_for(8))
    cp2, cp8 = plan_memory(r, plan_for(8, cp=2)), plan_memory(r, plan_for(8, cp=8))
    assert cp8.activations_gib == pytest.approx(no_cp.activations_gib / 8, rel=0.05)
    assert cp2.activations_gib == pytest.approx(no_cp.activations_gib / 2, rel=0.05)
    assert cp2.optimizer_gib == pytest.approx(no_cp.optimizer_gib)  # FSDP shards over dp_shard x cp


def test_pp_keeps_its_layers_and_in_flight_micro_batches():
    r = resolved(model="llama3.1-70b", gpu_count=64, nodes=8, micro_batch=8)
    one = plan_memory(r, plan_for(64, tp=8, pp=1))
    eight = plan_memory(r, plan_for(64, tp=8, pp=8))
    assert one.layers_on_rank == 80 and eight.layers_on_rank == 10
    assert eight.microbatch_size == 1  # torchtitan's default: one micro-batch per stage
    # TP 8 x PP 8 on 64 GPUs holds about 1/64 of the states, as FSDP 8 x TP 8 does; the last
    # stage also holds the LM head (vocab x hidden / tp), so it holds more than the average
    assert one.optimizer_gib < eight.optimizer_gib < 1.15 * one.optimizer_gib
    first = plan_memory(dataclasses.replace(memory_inputs(r), activation_checkpointing=False), plan_for(64, tp=8, pp=8))
    assert first.peak_stage == "first" and first.in_flight == 8  # 1F1B's first rank: pp forwards
    gpipe = plan_memory(r, plan_for(64, tp=8, pp=8, pp_schedule="GPipe", pp_microbatches=8))
    assert gpipe.activations_gib >= eight.activations_gib
    assert in_flight_chunks("1F1B", 8, 0, 32, 1) == 8
    assert in_flight_chunks("1F1B", 8, 7, 32, 1) == 1
    assert in_flight_chunks("GPipe", 8, 0, 32, 1) == 32
    assert in_flight_chunks("Interleaved1F1B", 4, 0, 16, 2) == pytest.approx((3 * 2 + 4 + 1) / 2)


def test_ep_divides_the_experts():
    r = resolved(model="mixtral-8x7b", gpu_count=8)
    assert r.model.is_moe
    one = plan_memory(r, plan_for(8))
    ep = plan_memory(r, plan_for(8, ep=8))
    assert ep.optimizer_gib < one.optimizer_gib


# --- the bubble and the links -------------------------------------------------------------------


@pytest.mark.parametrize("pp, m", [(4, 8), (8, 32), (2, 2)])
def test_bubble_of_1f1b_and_interleaved(pp, m):
    ratio = bubble_ratio("1F1B", pp, m, 1)
    assert ratio / (1 + ratio) == pytest.approx((pp - 1) / (m + pp - 1))
    assert bubble_ratio("Interleaved1F1B", pp, m, 2) == pytest.approx(ratio / 2)
    assert bubble_ratio("GPipe", pp, m, 1) == pytest.approx(ratio)
    assert bubble_ratio("ZBVZeroBubble", pp, m, 2) < ratio
    assert bubble_ratio("1F1B", 1, m, 1) == 0.0


def test_tp_runs_on_nvlink_and_fsdp_across_nodes():
    r = resolved(model="llama3.1-70b", gpu_count=32, nodes=4, micro_batch=2, inter_node_gbps=3200)
    t = plan_comm_time(r, plan_for(32, tp=8))
    axes = t.by_axis
    assert axes["tp"].link == "nvlink" and not axes["tp"].overlapped
    assert axes["fsdp"].link == "network" and axes["fsdp"].overlapped
    assert t.tokens_per_s_per_gpu > 0 and t.bubble_ratio == 0
    piped = plan_comm_time(resolved(model="llama3.1-70b", gpu_count=32, nodes=4, micro_batch=8),
                           plan_for(32, tp=8, pp=4))
    assert piped.by_axis["pp"].link == "network"
    assert piped.bubble_fraction == pytest.approx(3 / (4 + 3))


# --- the ladder -----------------------------------------------------------------------------------


def test_ladder_70b_on_4x8_h100_at_8192_checkpoints_then_tp_when_the_batch_forces_it():
    r = resolved(model="llama3.1-70b", gpu_count=32, nodes=4, seq_len=8192)
    free = suggest_plan(r)
    assert free.fits and free.plan.tp == 1 and free.policy == "full"
    assert [s.step for s in free.steps][:2] == ["fsdp", "activation_checkpointing"]
    first = free.steps[0]
    assert not first.fits and first.reserved_gib > free.memory.usable_gib
    capped = suggest_plan(r, global_batch_tokens=16 * 8192)
    tp_steps = [s for s in capped.steps if s.step == "tensor_parallel"]
    assert tp_steps and tp_steps[0].forced_by == "global_batch"
    assert tp_steps[0].value == 32 * 8192 and tp_steps[0].limit == 16 * 8192
    assert capped.plan.dp * 8192 <= 16 * 8192 and capped.plan.tp <= 8
    assert capped.toml["parallelism"]["tensor_parallel_degree"] == capped.plan.tp
    assert "--nnodes=4" in capped.torchrun and "--nproc_per_node=8" in capped.torchrun


def test_ladder_200k_token_lora_on_40_gpus_adds_context_parallelism():
    r = resolved(finetune="lora", gpu="a100-80gb", gpu_count=40, nodes=5, seq_len=200_000)
    plan = suggest_plan(r)
    assert plan.fits
    cp_steps = [s for s in plan.steps if s.step == "context_parallel"]
    assert cp_steps and cp_steps[0].forced_by == "memory" and cp_steps[0].value > cp_steps[0].limit
    assert plan.plan.cp > 1 and plan.toml["parallelism"]["context_parallel_degree"] == plan.plan.cp


def test_ladder_405b_on_512_h100_needs_pipeline_parallelism_across_nodes():
    r = resolved(model="llama3.1-405b", gpu_count=512, nodes=64, micro_batch=32)
    plan = suggest_plan(r)
    assert plan.fits and plan.plan.tp == 8 and plan.plan.pp > 1
    pp_step = next(s for s in plan.steps if s.step == "pipeline_parallel")
    assert pp_step.forced_by == "memory"
    assert "pipeline_parallel_schedule" in plan.toml["parallelism"]


def test_ladder_says_none_when_nothing_fits():
    r = resolved(model="llama3.1-405b", gpu_count=8, nodes=1)
    plan = suggest_plan(r)
    assert not plan.fits and plan.steps[-1].step == "none" and plan.toml == {}


def test_toml_names_torchtitans_fields():
    toml = torchtitan_toml(ParallelPlan(world_size=16, dp_shard=2, tp=8), "selective_op")
    assert toml["parallelism"]["data_parallel_shard_degree"] == 2
    assert toml["activation_checkpoint"] == {"mode": "selective", "selective_ac_option": "op"}


def test_memory_inputs_pass_through():
    r = resolved()
    inputs = memory_inputs(r)
    assert memory_inputs(inputs) is inputs
    assert plan_memory(dataclasses.replace(inputs), plan_for(8)).fits


def test_plan_from_the_setups_stated_degrees():
    r = resolved(model="llama3.1-70b", gpu_count=32, nodes=4, tensor_parallel=8, pipeline_parallel=2)
    plan = plan_from_setup(r)
    assert (plan.tp, plan.pp, plan.cp, plan.dp_shard) == (8, 2, 1, 2)
    assert plan_from_setup(resolved()).dp_shard == 8
    with pytest.raises(PlanError, match="does not divide"):
        plan_from_setup(resolved(gpu_count=8, tensor_parallel=3))
