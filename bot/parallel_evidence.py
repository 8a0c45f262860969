"""The plan past FSDP an answer shows: the one the person stated, else the ladder's.

A setup that states tensor, context or pipeline parallel degrees ("TP=8", "--pipeline-model-parallel-size
2", torchtitan's ``[parallelism]``) is computed as that plan (``bot.calc.parallel.plan_from_setup``:
FSDP over the GPUs the degrees leave), so a stated degree is never dropped for pure data
parallelism. Without stated degrees, a large model across many GPUs or a long sequence gets the
ladder's plan (``bot.calc.parallel_ladder.suggest_plan``) when it climbs past FSDP + checkpointing.
Both are a ``PlanSuggestion``; the stated one has a single step named ``stated``.

Beside a stated plan, ``plan_rows`` weighs each data-parallel strategy (DDP, HSDP where the
data-parallel group spans nodes, FSDP SHARD_GRAD_OP without PP, FSDP full shard; each again with
activation checkpointing when the setup runs without) on the data-parallel ranks the degrees leave,
one GPU's memory from ``bot.calc.parallel.plan_memory``; ``plan_row_pick`` is the row a
recommendation names ("TP 8 x PP 2 x FSDP full shard over 2").
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
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


# ---------------------------------------------------------------------------------------------
# The stated plan's data-parallel group, one row per data-parallel strategy
# ---------------------------------------------------------------------------------------------

# The order a pick prefers among the rows that fit: least data-parallel traffic first (DDP's one
# all-reduce; HSDP's all-reduce across nodes of shards gathered inside one; SHARD_GRAD_OP's
# reduce-scatter plus one all-gather per step; FULL_SHARD's extra all-gather in backward)
CKPT_VARIANT = "ckpt"  # bot.evidence.CKPT's name for the checkpointing variant
PLAN_ROW_STRATEGIES = ("ddp", "fsdp_hybrid_shard", "fsdp_shard_grad_op", "fsdp_full_shard")


@dataclass(frozen=True)
class PlanRow:
    """One data-parallel strategy on the data-parallel group a stated TP/CP/PP plan leaves:
    its plan (bot.calc.parallel.ParallelPlan) and one GPU's memory under it (plan_memory)."""

    strategy: str
    plan: Any
    memory: Any
    variant: str = ""  # "ckpt": activation checkpointing turned on (the setup ran without it)
    time: Any = None  # bot.calc.parallel_comm.plan_comm_time's PlanTime (None: not computed)

    @property
    def key(self) -> str:
        """The prefix of this row's figures in an answer's numbers."""
        return f"plan_row.{self.strategy}" + (f".{self.variant}" if self.variant else "")


def plan_row_plans(plan: Any, gpus_per_node: int, nodes: int) -> dict[str, Any]:
    """The stated plan's tp/cp/pp with each data-parallel strategy over the d = world / (tp cp pp)
    ranks left: DDP replicates (dp_replicate = d), FSDP shards (dp_shard = d; SHARD_GRAD_OP keeps
    each block gathered between forward and backward, a row only without PP, where torchtitan's
    full shard does not reshard after forward either), HSDP shards over the data-parallel ranks of
    one node and replicates across nodes (only where d spans nodes and a node holds at least two
    of its ranks; otherwise HSDP would be DDP or FSDP under another name)."""
    d = plan.dp
    keep = {"tp": plan.tp, "cp": plan.cp, "pp": plan.pp, "ep": plan.ep, "sequence_parallel": plan.sequence_parallel,
            "pp_schedule": plan.pp_schedule, "pp_microbatches": plan.pp_microbatches,
            "pp_virtual_stages": plan.pp_virtual_stages, "async_tp": plan.async_tp}
    out: dict[str, Any] = {}
    if d < 2:
        return out
    from bot.calc.parallel import ParallelPlan

    world = plan.world_size
    out["ddp"] = ParallelPlan(world_size=world, dp_replicate=d, dp_shard=1, **keep)
    if nodes > 1:
        in_node = gpus_per_node // (plan.tp * plan.cp) if gpus_per_node % (plan.tp * plan.cp) == 0 else 1
        if 2 <= in_node < d and d % in_node == 0:
            out["fsdp_hybrid_shard"] = ParallelPlan(world_size=world, dp_replicate=d // in_node, dp_shard=in_node, **keep)
    if plan.pp == 1:  # under PP torchtitan never reshards after forward: full shard already is ZeRO-2
        out["fsdp_shard_grad_op"] = ParallelPlan(world_size=world, dp_shard=d, reshard_after_forward=False, **keep)
    out["fsdp_full_shard"] = ParallelPlan(world_size=world, dp_shard=d, **keep)
    return out


def plan_rows(resolved: ResolvedSetup, suggestion: Any) -> list[PlanRow]:
    """Each data-parallel strategy on the stated plan's data-parallel group, memory by
    bot.calc.parallel.plan_memory (the local batch the stated plan was computed at); empty when
    the suggestion is not a stated plan or leaves fewer than two data-parallel ranks. A strategy
    the calculator refuses (ep needs dp_shard x cp) is left out, never guessed."""
    if not is_stated(suggestion):
        return []
    from bot.calc.parallel import PlanError, plan_memory
    from bot.calc.parallel_comm import plan_comm_time

    step = suggestion.steps[0]
    if step.figure == "local_batch" and step.value is not None:
        resolved = replace(resolved, setup=resolved.setup.model_copy(update={"micro_batch": int(step.value)}))
    plans = plan_row_plans(suggestion.plan, resolved.gpus_per_node, resolved.nodes)
    # as asked, then (when it ran without) with full activation checkpointing, as the pure-DP
    # table's "+ checkpointing" rows: the first change a plan that does not fit reaches for
    setups = [("", resolved)]
    if not resolved.setup.activation_checkpointing:
        setups.append((CKPT_VARIANT, replace(resolved, setup=resolved.setup.model_copy(
            update={"activation_checkpointing": True}))))
    rows = []
    for variant, setup in setups:
        for strategy, plan in plans.items():
            try:
                memory = plan_memory(setup, plan)
            except PlanError as err:
                log.debug("no %s row for the stated plan: %s", strategy, err)
                continue
            try:
                timing = plan_comm_time(setup, plan)
            except Exception as err:  # noqa: BLE001  (the memory stands without a step time)
                log.debug("no step time for the %s row: %s", strategy, err)
                timing = None
            rows.append(PlanRow(strategy, plan, memory, variant, timing))
    return rows


def plan_row_pick(rows: list[PlanRow]) -> PlanRow | None:
    """The row a recommendation names: the first that fits in ``PLAN_ROW_STRATEGIES`` order."""
    for variant in ("", CKPT_VARIANT):  # without recomputation first: it costs a third more compute
        fitting = {r.strategy: r for r in rows if r.memory.fits and r.variant == variant}
        pick = next((fitting[s] for s in PLAN_ROW_STRATEGIES if s in fitting), None)
        if pick is not None:
            return pick
    return None


def plan_row_numbers(rows: list[PlanRow]) -> dict[str, float | int | bool]:
    """The rows' figures under ``plan_row.<strategy>.*`` keys (what an answer may print)."""
    out: dict[str, float | int | bool] = {}
    for r in rows:
        k = r.key
        out[f"{k}.total_gib"] = round(r.memory.total_gib, 2)
        out[f"{k}.reserved_gib"] = round(r.memory.reserved_gib, 2)
        out[f"{k}.usable_gib"] = round(r.memory.usable_gib, 2)
        out[f"{k}.fits"] = bool(r.memory.fits)
        out[f"{k}.dp"] = int(r.plan.dp)
        out[f"{k}.dp_shard"] = int(r.plan.dp_shard)
        out[f"{k}.dp_replicate"] = int(r.plan.dp_replicate)
        if r.time is not None:
            out[f"{k}.step_seconds"] = round(r.time.step_seconds, 2)
            out[f"{k}.tokens_per_s_per_gpu"] = round(r.time.tokens_per_s_per_gpu, 1)
    return out
