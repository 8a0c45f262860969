"""The capacity search: the fewest GPUs at which the asked setup fits ("how many GPUs do I need?").

``capacity_search(resolved) -> Capacity`` tries ``CAPACITY_COUNTS`` in order, each laid out as
``bot.fix_search.count_layout`` does (nodes of 8 past one node), and at each count the tiers
``_capacity_tiers`` yields: as asked, then with activation checkpointing, then (with the standard
loss) also a chunked cross-entropy. A setup that states TP/CP/PP degrees is searched under that plan
(``_plan_capacity``: counts a multiple of tp x cp x pp, ``plan_counts``), FSDP over the rest. A count
is named only when it fits with ``FIT_MARGIN``. Run by the evidence stage (``bot.evidence``:
``Evidence.capacity``, the ``capacity.*`` figures); nothing downstream searches again.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from bot.core.setup import ResolvedSetup, SetupError, resolve_setup
from bot.fix_search import count_layout
from bot.parallel_evidence import stated_plan

# GPU counts tried by the inverse search ("how many GPUs do I need?").
CAPACITY_COUNTS = (1, 2, 4, 8, 16, 24, 32, 48, 64, 96, 128, 192, 256, 512, 1024)


@dataclass
class Capacity:
    """The inverse search: the fewest GPUs (of ``CAPACITY_COUNTS``) at which a strategy fits."""

    gpu_count: int | None  # None when none of the counts tried fits
    strategy: str | None
    checkpointing: bool  # it needs activation checkpointing at that count
    gpus_per_node: int
    nodes: int
    tried: tuple[int, ...]
    numbers: dict[str, float | int | bool] = field(default_factory=dict)  # that count's estimate
    chunked_loss: bool = False  # it also needs a chunked cross-entropy (long context, large vocab)
    # the stated TP/CP/PP degrees the count was searched under (FSDP over the rest); empty: pure DP
    plan_degrees: dict[str, int] = field(default_factory=dict)


# A count the capacity search names must fit with this margin (the decision's ``MARGIN``): a fit
# within the estimate's error is no answer to "how many GPUs do I need?".
FIT_MARGIN = 0.9


def capacity_search(resolved: ResolvedSetup) -> Capacity:
    """The fewest GPUs at which a GPU-resident strategy fits at the asked micro-batch: first as
    asked, else with activation checkpointing, else (with the standard loss) also with a chunked
    cross-entropy. Nodes of 8 beyond 8 GPUs (the link as stated, or the default for the link kind).

    The last tier is for long contexts: sharding divides the model state by the GPU count but no
    GPU count divides one sequence's activations, and at 32k tokens with a 152k vocabulary the
    logits and their fp32 cross-entropy buffers alone take about 37 GiB per GPU (Qwen2.5-32B;
    ``bot.calc.memory`` "loss"). Computing the loss in chunks keeps one chunk's upcast at a time."""
    from bot.calc import estimate
    from bot.evidence import variant_key  # (at call time: bot.evidence imports this module)

    s = resolved.setup
    per_node_max = max(resolved.gpus_per_node, 8) if resolved.nodes > 1 else 8
    planned = _plan_capacity(resolved, per_node_max) if stated_degrees(resolved) else None
    if planned is not None:
        return planned
    tried: list[int] = []
    for count, changes, ckpt, loss, r in _capacity_tiers(resolved, CAPACITY_COUNTS, tried):
        per_node, nodes = changes["gpus_per_node"], changes["nodes"]
        est = estimate(r)
        for strategy in ("ddp", "fsdp_shard_grad_op", "fsdp_full_shard", "fsdp_hybrid_shard"):
            if strategy == "fsdp_hybrid_shard" and nodes == 1:
                continue
            mem = est.memory[strategy]
            if mem.fits and mem.total_gib <= FIT_MARGIN * mem.usable_gib:
                nums = {variant_key("capacity", k): v for k, v in est.numbers().items()
                        if k.startswith(("memory.", "time."))}
                nums["capacity.gpu_count"] = count
                return Capacity(count, strategy, ckpt and not s.activation_checkpointing, per_node, nodes,
                                tuple(tried), nums, chunked_loss=loss is not None)
    return Capacity(None, None, False, per_node_max, 0, tuple(tried))


def stated_degrees(resolved: ResolvedSetup) -> dict[str, int]:
    """The setup's model-parallel degrees above 1 ({"tp": 8, "pp": 2}); empty for pure DP."""
    s = resolved.setup
    degrees = {"tp": s.tensor_parallel, "cp": s.context_parallel, "pp": s.pipeline_parallel}
    return {axis: int(d or 1) for axis, d in degrees.items() if (d or 1) > 1}


def plan_counts(unit: int, per_node_max: int) -> list[int]:
    """``CAPACITY_COUNTS`` each rounded up to a GPU count a plan of ``unit`` = tp x cp x pp GPUs
    per data-parallel rank can run on: a multiple of ``unit`` (torchtitan's ParallelDims: the
    degrees multiply to the world size), and, past one node, whole nodes as well (a multiple of
    lcm(unit, GPUs per node)); one node may hold fewer GPUs (``count_layout``). Sorted, no repeats."""
    from math import lcm

    out: set[int] = set()
    for count in CAPACITY_COUNTS:
        step = unit if count <= per_node_max and unit <= per_node_max else lcm(unit, per_node_max)
        out.add(-(-count // step) * step)
    return sorted(out)


def _plan_capacity(resolved: ResolvedSetup, per_node_max: int) -> Capacity | None:
    """The capacity search under a stated TP/CP/PP plan: the fewest GPUs, a multiple of the plan's
    tp x cp x pp in whole nodes (``plan_counts``), at which the plan with FSDP over the remaining
    data-parallel ranks fits with ``FIT_MARGIN`` (bot.parallel_evidence.stated_plan computes it),
    first as asked, then with activation checkpointing, then also a chunked cross-entropy. Pure DP at these counts is not what the
    person runs, so it is not searched. None when the plan cannot be built at any count (TP not
    dividing the heads, say): the degrees are then only named, and the pure-DP search answers."""
    s = resolved.setup
    degrees = stated_degrees(resolved)
    unit = 1
    for d in degrees.values():
        unit *= d
    tried: list[int] = []
    built = False  # the plan could be built at some count (its degrees suit the model and batch)
    for count, changes, ckpt, loss, r in _capacity_tiers(resolved, plan_counts(unit, per_node_max), tried):
        # re-resolving the filled-in setup reads every default as stated; keep what was assumed
        # (an unstated micro-batch may be raised to fill the pipeline, as for the asked count)
        r = replace(r, assumed=tuple(a for a in resolved.assumed if a not in changes))
        plan = stated_plan(r)
        mem = getattr(plan, "memory", None)
        built = built or mem is not None
        if mem is None or not (mem.fits and mem.reserved_gib <= FIT_MARGIN * mem.usable_gib):
            continue
        nums: dict[str, float | int | bool] = {
            "capacity.gpu_count": count,
            "capacity.memory.fsdp_full_shard.total_gib": round(mem.total_gib, 2),
            "capacity.memory.fsdp_full_shard.usable_gib": round(mem.usable_gib, 2),
            "capacity.parallel.dp_shard": int(plan.plan.degrees.get("dp_shard", 1)),
        }
        nums.update({f"capacity.parallel.{axis}": d for axis, d in degrees.items()})
        return Capacity(count, "fsdp_full_shard", ckpt and not s.activation_checkpointing,
                        changes["gpus_per_node"], changes["nodes"], tuple(tried), nums,
                        chunked_loss=loss is not None, plan_degrees=degrees)
    if not built:
        return None
    return Capacity(None, None, False, per_node_max, 0, tuple(tried), plan_degrees=degrees)


def _capacity_tiers(resolved: ResolvedSetup, counts: Iterable[int], tried: list[int],
                    ) -> Iterator[tuple[int, dict[str, Any], bool, str | None, ResolvedSetup]]:
    """The one tier loop both searches run: for each count of ``counts`` that ``count_layout`` can
    lay out (appended to ``tried`` as it is reached), each tier in order -- as asked, with
    activation checkpointing, then (with the standard loss) also a chunked cross-entropy -- as
    ``(count, the field changes: layout + checkpointing + loss, checkpointing, loss_impl or None,
    the re-resolved setup)``. A tier that
    does not resolve (``SetupError``) is skipped. The caller stops at the first tier that fits.

    The chunked tier is for long contexts: no GPU count divides one sequence's activations, and a
    long local sequence's logits and their fp32 cross-entropy buffers can outgrow any sharding."""
    from bot.evidence import _same_model  # (at call time: bot.evidence imports this module)

    s = resolved.setup
    for count in counts:
        update = count_layout(resolved, count)
        if update is None:
            continue
        tried.append(count)
        tiers: list[tuple[bool, str | None]] = [(False, None), (True, None)] if not s.activation_checkpointing \
            else [(True, None)]
        if (s.loss_impl or "standard") == "standard":
            tiers.append((True, "chunked"))
        for ckpt, loss in tiers:
            changes: dict[str, Any] = {**update, "activation_checkpointing": ckpt or s.activation_checkpointing}
            if loss:
                changes["loss_impl"] = loss
            try:
                r = _same_model(resolve_setup(s.model_copy(update=changes)), resolved)
            except SetupError:
                continue
            yield count, changes, ckpt, loss, r
