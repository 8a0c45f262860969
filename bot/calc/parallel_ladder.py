"""The parallelism ladder: which axes a run needs, each added with the figure that forces it.

This module owns ``suggest_plan``, the order the Ultra-Scale Playbook
(https://huggingface.co/spaces/nanotron/ultrascale-playbook, "Finding the best training
configuration") and torchtitan's docs (https://github.com/pytorch/torchtitan/blob/main/docs/composability.md)
describe: fit memory with FSDP over every GPU first, then activation checkpointing (selective,
then full); add tensor parallelism inside the node when the per-GPU memory or the global batch
forces it (data parallelism alone would make the global batch too large); context parallelism
when the sequence does (TP inside the node is not enough); pipeline parallelism when a node is
too small (TP would have to cross nodes). Every step is typed data: the plan, the figure that
forced it and the limit it broke. The result also carries torchtitan's ``[parallelism]`` TOML
degrees and a ``torchrun`` command line, as data; wording is the answer layer's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from bot.calc.memory import MemoryInputs
from bot.calc.parallel import ParallelPlan, PlanError, PlanMemory, memory_inputs, plan_for, plan_memory
from bot.calc.parallel_comm import PlanTime, plan_comm_time

if TYPE_CHECKING:
    from bot.core.setup import ResolvedSetup

POLICIES = ("none", "selective_op", "full")  # the checkpointing rungs, cheapest recompute first
AC_MODE = {"none": "none", "selective_op": "selective", "full": "full"}  # torchtitan's names


@dataclass(frozen=True)
class LadderStep:
    """One rung: what was added, the plan after it, and the figure that forced it."""

    step: str  # fsdp | activation_checkpointing | tensor_parallel | context_parallel | pipeline_parallel | none
    plan: ParallelPlan
    policy: str  # activation checkpointing after this step
    forced_by: str | None  # "memory" | "global_batch" | None (the first rung)
    figure: str | None  # what was measured against the limit: "reserved_gib" | "global_batch_tokens"
    value: float | None  # the figure before this step
    limit: float | None  # the limit it broke (usable GiB, the target global batch in tokens)
    reserved_gib: float  # per-GPU reserved peak after this step (inf: the plan cannot run)
    fits: bool


@dataclass(frozen=True)
class PlanSuggestion:
    steps: tuple[LadderStep, ...]
    plan: ParallelPlan | None  # None: nothing fits
    policy: str
    memory: PlanMemory | None
    time: PlanTime | None
    toml: dict[str, dict[str, object]]
    torchrun: tuple[str, ...]

    @property
    def fits(self) -> bool:
        return self.plan is not None


def _with_policy(inputs: MemoryInputs, policy: str) -> MemoryInputs:
    return replace(inputs, activation_checkpointing=policy != "none",
                   checkpointing_policy=None if policy in ("none", "full") else policy)


def _evaluate(inputs: MemoryInputs, plan: ParallelPlan, policy: str) -> PlanMemory | None:
    try:
        return plan_memory(_with_policy(inputs, policy), plan)
    except PlanError:
        return None


def _divisors(n: int) -> list[int]:
    return [d for d in range(2, n + 1) if n % d == 0]


def suggest_plan(setup: ResolvedSetup | MemoryInputs, *, global_batch_tokens: int | None = None,
                 comm_setup: ResolvedSetup | None = None, pp_schedule: str = "1F1B") -> PlanSuggestion:
    """Climb the ladder for ``setup`` (its ``micro_batch`` is the local batch of a data-parallel
    rank). ``global_batch_tokens``: the largest global batch the run may take; data parallelism
    over more ranks than it allows forces model parallelism. ``comm_setup`` gives the step time
    of the result (``plan_comm_time``; the resolved setup itself when ``setup`` is one)."""
    inputs = memory_inputs(setup)
    world, g = inputs.gpu_count, inputs.gpus_per_node
    tokens_per_rank = inputs.micro_batch * inputs.seq_len * max(1, inputs.grad_accum_steps)
    max_dp = None
    if global_batch_tokens:
        max_dp = max(1, global_batch_tokens // tokens_per_rank)
    steps: list[LadderStep] = []

    def batch_ok(plan: ParallelPlan) -> bool:
        return max_dp is None or plan.dp <= max_dp

    def record(step: str, plan: ParallelPlan, policy: str, forced_by: str | None, figure: str | None,
               value: float | None, limit: float | None, mem: PlanMemory | None) -> None:
        steps.append(LadderStep(step=step, plan=plan, policy=policy, forced_by=forced_by, figure=figure,
                                value=value, limit=limit, reserved_gib=mem.reserved_gib if mem else math.inf,
                                fits=bool(mem and mem.fits)))

    # Rung 1: FSDP over every GPU, no checkpointing.
    plan = plan_for(world)
    policy = "none"
    mem = _evaluate(inputs, plan, policy)
    record("fsdp", plan, policy, None, None, None, None, mem)
    # Rung 2: checkpointing, cheapest recompute first.
    for nxt in POLICIES[1:]:
        if mem is not None and mem.fits:
            break
        before = mem.reserved_gib if mem else math.inf
        policy, mem = nxt, _evaluate(inputs, plan, nxt)
        record("activation_checkpointing", plan, policy, "memory", "reserved_gib", before,
               mem.usable_gib if mem else None, mem)

    def forcing(current: PlanMemory | None, p: ParallelPlan) -> tuple[str, str, float, float] | None:
        if current is None or not current.fits:
            usable = current.usable_gib if current else math.nan
            return "memory", "reserved_gib", current.reserved_gib if current else math.inf, usable
        if not batch_ok(p):
            return "global_batch", "global_batch_tokens", float(p.dp * tokens_per_rank), float(global_batch_tokens or 0)
        return None

    # Rungs 3 and 4: TP inside the node when the model's memory or the global batch forces it;
    # CP when the sequence does (its activations are most of what does not fit).
    while (why := forcing(mem, plan)) is not None:
        # The sequence forces CP when one sequence alone does not fit (its activations are most
        # of the peak); a local batch that does not fit is the batch's doing, and TP divides it.
        one = _evaluate(replace(inputs, micro_batch=1), plan, policy) if why[0] == "memory" else None
        sequence_bound = (one is not None and not one.fits
                          and one.token_gib >= one.total_gib - one.token_gib)
        options = []
        if sequence_bound:
            options += [("context_parallel", plan.tp, cp) for cp in _divisors(world // plan.tp) if cp > plan.cp]
        options += [("tensor_parallel", tp, plan.cp) for tp in _divisors(g) if tp > plan.tp
                    and world % (tp * plan.cp) == 0]
        moved = False
        for step, tp, cp in options:
            candidate = plan_for(world, tp=tp, cp=cp)
            cand_mem = _evaluate(inputs, candidate, policy)
            if cand_mem is None:
                continue  # the heads or the sequence do not split this way
            plan, mem = candidate, cand_mem
            record(step, plan, policy, why[0], why[1], why[2], why[3], mem)
            moved = True
            break
        if not moved:
            break
    # Rung 5: PP across nodes when TP (and CP) inside the node are not enough.
    for pp in _divisors(world // (plan.tp * plan.cp)):
        why = forcing(mem, plan)
        if why is None:
            break
        try:
            candidate = plan_for(world, tp=plan.tp, cp=plan.cp, pp=pp, pp_schedule=pp_schedule)
        except PlanError:
            continue
        cand_mem = _evaluate(inputs, candidate, policy)
        if cand_mem is None:
            continue  # too few layers, or a local batch that cannot be cut into pp micro-batches
        plan, mem = candidate, cand_mem
        record("pipeline_parallel", plan, policy, why[0], why[1], why[2], why[3], mem)

    if mem is None or not mem.fits or not batch_ok(plan):
        why = forcing(mem, plan)
        record("none", plan, policy, why[0] if why else None, why[1] if why else None,
               why[2] if why else None, why[3] if why else None, mem)
        return PlanSuggestion(steps=tuple(steps), plan=None, policy=policy, memory=mem, time=None,
                              toml={}, torchrun=())
    timing_source = comm_setup if comm_setup is not None else (None if isinstance(setup, MemoryInputs) else setup)
    timing = None
    if timing_source is not None:
        timing_source = _resolved_with_policy(timing_source, policy)
        timing = plan_comm_time(timing_source, plan)
    return PlanSuggestion(steps=tuple(steps), plan=plan, policy=policy, memory=mem, time=timing,
                          toml=torchtitan_toml(plan, policy), torchrun=torchrun_command(plan, g, inputs.gpu_count))


def _resolved_with_policy(resolved: ResolvedSetup, policy: str) -> ResolvedSetup:
    data = resolved.setup.model_copy(update={
        "activation_checkpointing": policy != "none",
        "checkpointing_policy": None if policy in ("none", "full") else policy})
    return replace(resolved, setup=data)


def torchtitan_toml(plan: ParallelPlan, policy: str) -> dict[str, dict[str, object]]:
    """torchtitan's config sections for the plan (``[parallelism]`` and ``[activation_checkpoint]``,
    torchtitan/config/job_config.py field names)."""
    parallelism: dict[str, object] = {
        "data_parallel_replicate_degree": plan.dp_replicate,
        "data_parallel_shard_degree": plan.dp_shard,
        "tensor_parallel_degree": plan.tp,
        "context_parallel_degree": plan.cp,
        "pipeline_parallel_degree": plan.pp,
    }
    if plan.pp > 1:
        parallelism["pipeline_parallel_schedule"] = plan.pp_schedule
    if plan.tp > 1:
        parallelism["enable_async_tensor_parallel"] = plan.async_tp
    if plan.ep > 1:
        parallelism["expert_parallel_degree"] = plan.ep
    checkpoint: dict[str, object] = {"mode": AC_MODE.get(policy, "full")}
    if policy == "selective_op":
        checkpoint["selective_ac_option"] = "op"
    return {"parallelism": parallelism, "activation_checkpoint": checkpoint}


def torchrun_command(plan: ParallelPlan, gpus_per_node: int, world: int,
                     config_file: str = "train_configs/model.toml") -> tuple[str, ...]:
    """The launch line, one argument per item: torchrun over the nodes, torchtitan's trainer with
    the degrees as command-line overrides of the TOML."""
    nodes = max(1, math.ceil(world / gpus_per_node))
    per_node = min(world, gpus_per_node)
    args = ["torchrun", f"--nnodes={nodes}", f"--nproc_per_node={per_node}"]
    if nodes > 1:
        args += ["--rdzv_backend=c10d", "--rdzv_endpoint=$MASTER_ADDR:29500"]
    args += ["-m", "torchtitan.train", "--job.config_file", config_file]
    for key, value in torchtitan_toml(plan, "full")["parallelism"].items():
        args.append(f"--parallelism.{key}={str(value).lower() if isinstance(value, bool) else value}")
    return tuple(args)
