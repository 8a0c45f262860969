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
    from bot.setup import ResolvedSetup

log = logging.getLogger(__name__)

# Where a plan beyond FSDP is worth computing: big models across many GPUs, long sequences
# (the Ultra-Scale Playbook's and torchtitan's ladder: FSDP + checkpointing first, then TP in a
# node, CP for the sequence, PP when a node is too small)
PARALLEL_MIN_GPUS = 8
PARALLEL_MIN_PARAMS_B = 30.0
PARALLEL_MIN_SEQ = 32_768
STATED_STEP = "stated"


def parallel_plan(resolved: ResolvedSetup) -> Any:
    """The stated plan when the setup states a degree above 1, else the ladder's (None: neither)."""
    stated = stated_plan(resolved)
    return stated if stated is not None else _ladder_plan(resolved)


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


def _ladder_plan(resolved: ResolvedSetup) -> Any:
    """The ladder's plan when it goes past FSDP + checkpointing (else None)."""
    s = resolved.setup
    if resolved.gpu_count < PARALLEL_MIN_GPUS or (resolved.model.params_b < PARALLEL_MIN_PARAMS_B
                                                  and (s.seq_len or 0) < PARALLEL_MIN_SEQ):
        return None
    try:
        from bot.calc.parallel_ladder import suggest_plan

        suggestion = suggest_plan(resolved)
    except Exception as err:  # noqa: BLE001  (a what-if must never stop an answer)
        log.debug("no parallel plan: %s", err)
        return None
    plan = suggestion.plan
    if plan is None or suggestion.memory is None or not (plan.degrees.get("tp", 1) > 1 or plan.degrees.get("cp", 1) > 1
                                                         or plan.degrees.get("pp", 1) > 1):
        return None
    return suggestion


def parallel_numbers(suggestion: Any) -> dict[str, float | int | bool]:
    """The plan's figures under ``parallel.*`` keys (what an answer may print about it)."""
    if suggestion is None or suggestion.plan is None or suggestion.memory is None:
        return {}
    d, mem = suggestion.plan.degrees, suggestion.memory
    out: dict[str, float | int | bool] = {f"parallel.{axis}": int(d.get(axis, 1)) for axis in ("tp", "cp", "pp", "dp_shard")}
    out["parallel.total_gib"] = round(mem.total_gib, 2)
    out["parallel.usable_gib"] = round(mem.usable_gib, 2)
    forced = next((st for st in suggestion.steps if st.step in ("tensor_parallel", "context_parallel",
                                                                 "pipeline_parallel") and st.value is not None), None)
    if forced is not None and forced.figure == "reserved_gib" and forced.limit is not None:
        out["parallel.fsdp_only_gib"] = round(float(forced.value), 2)
    if is_stated(suggestion) and suggestion.steps[0].figure == "local_batch":
        out["parallel.local_batch"] = int(suggestion.steps[0].value)
    return out
