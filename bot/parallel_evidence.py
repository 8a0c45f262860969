"""The plan past FSDP an answer shows: the one the person stated, else the ladder's.

A setup that states tensor, context or pipeline parallel degrees ("TP=8", "--pipeline-model-parallel-size
2", torchtitan's ``[parallelism]``) is computed as that plan (``bot.calc.parallel.plan_from_setup``:
FSDP over the GPUs the degrees leave), so a stated degree is never dropped for pure data
parallelism. Without stated degrees, a large model across many GPUs or a long sequence gets the
ladder's plan (``bot.calc.parallel_ladder.suggest_plan``) when it climbs past FSDP + checkpointing.
Both are a ``PlanSuggestion``; the stated one has a single step named ``stated``.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bot.core.setup import ResolvedSetup

log = logging.getLogger(__name__)

# Where a plan beyond FSDP is worth computing: big models across many GPUs, long sequences
# (the Ultra-Scale Playbook's and torchtitan's ladder: FSDP + checkpointing first, then TP in a
# node, CP for the sequence, PP when a node is too small)
PARALLEL_MIN_GPUS = 8
PARALLEL_MIN_PARAMS_B = 30.0
PARALLEL_MIN_SEQ = 32_768
STATED_STEP = "stated"


def parallel_plan(resolved: ResolvedSetup) -> Any:
    """The plan an answer shows: the stated one when the setup states a degree above 1, else the
    ladder's when it goes past FSDP + checkpointing (None: neither)."""
    stated = stated_plan(resolved)
    if stated is not None:
        return stated
    ladder = ladder_plan(resolved)
    return ladder if past_fsdp(ladder) else None


def stated_plan(resolved: ResolvedSetup) -> Any:
    """The setup's own TP/CP/PP degrees with FSDP over the rest and one GPU's memory under them;
    None when no degree is above 1 or the degrees do not divide the GPU count (the calculator's
    ``not_modelled`` notice then still names them)."""
    s = resolved.setup
    if not any((d or 1) > 1 for d in (s.tensor_parallel, s.context_parallel, s.pipeline_parallel)):
        return None
    try:
        from bot.calc.parallel import PlanError, plan_from_setup, plan_memory
        from bot.calc.parallel_comm import plan_comm_time
        from bot.calc.parallel_ladder import (
            POLICIES,
            LadderStep,
            PlanSuggestion,
            torchrun_command,
            torchtitan_toml,
        )

        plan = plan_from_setup(resolved)
        local_batch = None
        try:
            memory = plan_memory(resolved, plan)
        except PlanError:
            if plan.pp == 1 or "micro_batch" not in resolved.assumed:
                raise
            # an unstated micro-batch of 1 cannot fill the pipeline: the fewest micro-batches the
            # schedule takes (one per stage, torchtitan's default), said in the answer
            local_batch = plan.pp * plan.virtual_stages
            resolved = replace(resolved, setup=resolved.setup.model_copy(update={"micro_batch": local_batch}))
            memory = plan_memory(resolved, plan)
    except Exception as err:  # noqa: BLE001  (a plan that cannot be built must never stop an answer)
        log.debug("no stated parallel plan: %s", err)
        return None
    policy = "none"
    if s.activation_checkpointing:
        policy = s.checkpointing_policy if s.checkpointing_policy in POLICIES else "full"
    try:
        timing = plan_comm_time(resolved, plan)
    except Exception as err:  # noqa: BLE001  (the memory stands without a step time)
        log.debug("no step time for the stated plan: %s", err)
        timing = None
    step = LadderStep(step=STATED_STEP, plan=plan, policy=policy, forced_by=None,
                      figure=None if local_batch is None else "local_batch", value=local_batch, limit=None,
                      reserved_gib=memory.reserved_gib, fits=bool(memory.fits))
    return PlanSuggestion(steps=(step,), plan=plan, policy=policy, memory=memory, time=timing,
                          toml=torchtitan_toml(plan, policy),
                          torchrun=torchrun_command(plan, resolved.gpus_per_node, resolved.gpu_count))


def is_stated(suggestion: Any) -> bool:
    return suggestion is not None and bool(suggestion.steps) and suggestion.steps[0].step == STATED_STEP


def ladder_plan(resolved: ResolvedSetup, *, asked: bool = False) -> Any:
    """The ladder's plan (bot.calc.parallel_ladder.suggest_plan) for a large or long-context setup,
    or for any multi-GPU setup whose question asks about TP/CP/PP ("should we add TP?"), also when
    it stays at FSDP; None where it is not computed."""
    s = resolved.setup
    large = resolved.gpu_count >= PARALLEL_MIN_GPUS and (resolved.model.params_b >= PARALLEL_MIN_PARAMS_B
                                                         or (s.seq_len or 0) >= PARALLEL_MIN_SEQ)
    if not (large or (asked and resolved.gpu_count > 1)):
        return None
    try:
        from bot.calc.parallel_ladder import suggest_plan

        return suggest_plan(resolved)
    except Exception as err:  # noqa: BLE001  (a what-if must never stop an answer)
        log.debug("no parallel plan: %s", err)
        return None


def past_fsdp(suggestion: Any) -> bool:
    """The plan fits and adds TP, CP or PP to FSDP."""
    plan = getattr(suggestion, "plan", None)
    return (plan is not None and suggestion.memory is not None
            and any(plan.degrees.get(axis, 1) > 1 for axis in ("tp", "cp", "pp")))


def parallel_numbers(suggestion: Any, resolved: ResolvedSetup | None = None) -> dict[str, float | int | bool]:
    """The plan's figures under ``parallel.*`` keys (what an answer may print about it)."""
    if suggestion is None or suggestion.plan is None or suggestion.memory is None:
        return {}
    d, mem = suggestion.plan.degrees, suggestion.memory
    out: dict[str, float | int | bool] = {f"parallel.{axis}": int(d.get(axis, 1)) for axis in ("tp", "cp", "pp", "dp_shard")}
    out["parallel.dp"] = int(suggestion.plan.dp)
    out["parallel.gpus"] = int(suggestion.plan.world_size)
    if resolved is not None and resolved.setup.seq_len:
        # the smallest global batch the plan runs: one micro-batch per data-parallel rank per step
        # (TP, CP and PP ranks share a rank's samples; torchtitan's global batch = local x dp)
        mb = resolved.setup.micro_batch or 1
        out["parallel.tokens_per_step"] = int(suggestion.plan.dp * mb * resolved.setup.seq_len)
    out["parallel.total_gib"] = round(mem.total_gib, 2)
    out["parallel.usable_gib"] = round(mem.usable_gib, 2)
    forced = next((st for st in suggestion.steps if st.step in ("tensor_parallel", "context_parallel",
                                                                 "pipeline_parallel") and st.value is not None), None)
    if forced is not None and forced.figure == "reserved_gib" and forced.limit is not None:
        out["parallel.fsdp_only_gib"] = round(float(forced.value), 2)
    if is_stated(suggestion) and suggestion.steps[0].figure == "local_batch":
        out["parallel.local_batch"] = int(suggestion.steps[0].value)
    return out
