"""The decision's typed data: ``Code`` (every reason code, a StrEnum), ``PAYLOAD`` (the values each
code may carry, checked where a ``Reason`` is built), ``Reason`` and ``Decision``. The composer
words each code from the message catalogs (``bot/compose/reasons.py``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from bot.evidence import BASE, Config


class Code(StrEnum):
    """Every reason code the decision emits; ``bot.compose`` words each one from the message
    catalogs. A StrEnum, so a code still compares equal to its string."""

    ACCUMULATE = "accumulate"
    ASKED_PARALLEL = "asked_parallel"
    ASKED_STRATEGY = "asked_strategy"
    SIZE_LIMITS = "size_limits"
    BUCKET_FUSED = "bucket_fused"
    CAPACITY = "capacity"
    CAPACITY_ANSWER = "capacity_answer"
    COMM_COST = "comm_cost"
    COMBINED_FIX = "combined_fix"
    DDP_TOO_BIG = "ddp_too_big"
    DIAGNOSE_NEEDS = "diagnose_needs"
    CHECKPOINTING_FASTER = "checkpointing_faster"
    COMM_HEAVY = "comm_heavy"
    COMM_LEAST = "comm_least"
    COMPARE = "compare"
    DDP_FITS = "ddp_fits"
    DDP_KNOBS = "ddp_knobs"
    DDP_MB_LIMIT = "ddp_mb_limit"
    FAST_LINK_FULL_SHARD = "fast_link_full_shard"
    FEASIBLE = "feasible"
    FINETUNE_FITS = "finetune_fits"
    FROM_PASSAGES = "from_passages"
    HOST_RAM_SHORT = "host_ram_short"
    HSDP_IF_SLOW = "hsdp_if_slow"
    PLAYBOOK = "playbook"
    PLAYBOOK_OTHERS = "playbook_others"
    PLAYBOOK_CAUSE = "playbook_cause"
    PARALLEL_PLAN = "parallel_plan"
    KNOB_FLIPS = "knob_flips"
    LINK_ASSUMED = "link_assumed"
    LOG_ZERO2_STEP = "log_zero2_step"
    LORA_DDP_FITS = "lora_ddp_fits"
    LORA_SHARDING_GAIN = "lora_sharding_gain"
    MEMORY_NOT_DIVIDED = "memory_not_divided"
    NEED_CHECKPOINTING = "need_checkpointing"
    NEEDS_CHECKPOINTING = "needs_checkpointing"
    NOTHING_FITS = "nothing_fits"
    NO_COMBINATION_FITS = "no_combination_fits"
    OBSERVED_OOM = "observed_oom"
    ONLY_OFFLOAD = "only_offload"
    OOM_DOMINATED = "oom_dominated"
    OOM_UNEXPLAINED = "oom_unexplained"
    OPTIMIZER_8BIT = "optimizer_8bit"
    SHARD_MB_LIMIT = "shard_mb_limit"
    SIMPLER_WITHIN_TOLERANCE = "simpler_within_tolerance"
    SINGLE_GPU = "single_gpu"
    SINGLE_NODE = "single_node"
    SLOW_INTER_NODE = "slow_inter_node"
    SMALLER_MB = "smaller_mb"
    THIN_AFTER_OOM = "thin_after_oom"
    THROUGHPUT = "throughput"
    TIGHT = "tight"
    WHY_FSDP_SLOWER = "why_fsdp_slower"
    WHY_MULTI_NODE_SLOW = "why_multi_node_slow"
    ZERO_MAPPING = "zero_mapping"


# The values each code may carry (bot.compose reads them); a Reason with any other key is refused.
PAYLOAD: dict[Code, frozenset[str]] = {
    Code.ACCUMULATE: frozenset({'config'}),
    Code.ASKED_PARALLEL: frozenset({'axes', 'verdict', 'added', 'policy', 'suggestion'}),
    Code.SIZE_LIMITS: frozenset({'sizes'}),
    Code.ASKED_STRATEGY: frozenset({'asked', 'best', 'base', 'chosen', 'verdict'}),
    Code.BUCKET_FUSED: frozenset({'base', 'config'}),
    Code.CAPACITY: frozenset({'capacity'}),
    Code.CAPACITY_ANSWER: frozenset({'capacity'}),
    Code.CHECKPOINTING_FASTER: frozenset({'base', 'config'}),
    Code.COMM_COST: frozenset({'config'}),
    Code.COMBINED_FIX: frozenset({'fix'}),
    Code.COMM_HEAVY: frozenset({'config'}),
    Code.COMM_LEAST: frozenset({'config'}),
    Code.COMPARE: frozenset({'b_base', 'b', 'a_base', 'a', 'pair', 'winner'}),
    Code.DDP_FITS: frozenset({'config'}),
    Code.DDP_KNOBS: frozenset({'base', 'config'}),
    Code.DDP_MB_LIMIT: frozenset({'shard', 'config'}),
    Code.DDP_TOO_BIG: frozenset({'config'}),
    Code.FAST_LINK_FULL_SHARD: frozenset({'config'}),
    Code.FEASIBLE: frozenset({'chosen'}),
    Code.FINETUNE_FITS: frozenset({'checkpointing', 'strategy', 'variant', 'finetune'}),
    Code.FROM_PASSAGES: frozenset({'passages'}),
    Code.PLAYBOOK: frozenset({'matches', 'lead', 'config', 'link_assumed', 'figures'}),
    Code.PLAYBOOK_OTHERS: frozenset({'matches'}),
    Code.PLAYBOOK_CAUSE: frozenset({'matches'}),
    Code.DIAGNOSE_NEEDS: frozenset({'kind', 'facts'}),
    Code.PARALLEL_PLAN: frozenset({'suggestion'}),
    Code.HOST_RAM_SHORT: frozenset({'config'}),
    Code.HSDP_IF_SLOW: frozenset({'config'}),
    Code.KNOB_FLIPS: frozenset({'base', 'config'}),
    Code.LINK_ASSUMED: frozenset({'link', 'gbps'}),
    Code.LOG_ZERO2_STEP: frozenset({'asked', 'config'}),
    Code.LORA_DDP_FITS: frozenset({'variant'}),
    Code.LORA_SHARDING_GAIN: frozenset({'finetune'}),
    Code.MEMORY_NOT_DIVIDED: frozenset({'finetune', 'config', 'zero'}),
    Code.NEED_CHECKPOINTING: frozenset({'with', 'without', 'needed'}),
    Code.NEEDS_CHECKPOINTING: frozenset({'base', 'config'}),
    Code.NOTHING_FITS: frozenset({'config'}),
    Code.NO_COMBINATION_FITS: frozenset({'tried'}),
    Code.OBSERVED_OOM: frozenset({'strategy', 'any_checkpointing', 'config', 'stage'}),
    Code.ONLY_OFFLOAD: frozenset({'config'}),
    Code.OOM_DOMINATED: frozenset({'others', 'strategy', 'stage'}),
    Code.OOM_UNEXPLAINED: frozenset({'assumed', 'strategy', 'config', 'stage'}),
    Code.OPTIMIZER_8BIT: frozenset({'variant', 'strategy', 'fits'}),
    Code.SHARD_MB_LIMIT: frozenset({'config'}),
    Code.SIMPLER_WITHIN_TOLERANCE: frozenset({'faster', 'tolerance', 'config'}),
    Code.SINGLE_GPU: frozenset(),
    Code.SINGLE_NODE: frozenset({'single_fits', 'single_strategy', 'config'}),
    Code.SLOW_INTER_NODE: frozenset({'config'}),
    Code.SMALLER_MB: frozenset({'config'}),
    Code.THIN_AFTER_OOM: frozenset({'config'}),
    Code.THROUGHPUT: frozenset({'among', 'config'}),
    Code.TIGHT: frozenset({'config'}),
    Code.WHY_FSDP_SLOWER: frozenset({'ddp', 'fsdp'}),
    Code.WHY_MULTI_NODE_SLOW: frozenset({'link_assumed', 'config'}),
    Code.ZERO_MAPPING: frozenset({'offload', 'strategy', 'stage'}),
}

@dataclass(frozen=True)
class Reason:
    """One sentence of the argument: a code the composer words, and the values it quotes
    (``PAYLOAD[code]`` lists the keys each code may carry; others are refused)."""

    code: Code
    values: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "code", Code(self.code))  # an unknown code raises here
        extra = set(self.values) - PAYLOAD[self.code]
        if extra:
            raise ValueError(f"reason {self.code}: unexpected values {sorted(extra)}")


@dataclass
class Decision:
    status: str  # ok | needs_info | invalid | out_of_scope
    intent: str
    strategy: str  # a strategy id, "none" or "out_of_scope"
    variant: str = BASE  # the chosen configuration's variant ("ckpt", "bucket_fused", ...)
    alternatives: list[str] = field(default_factory=list)
    confidence: str = "medium"
    rows: list[Config] = field(default_factory=list)  # the configurations weighed, table order
    chosen: Config | None = None
    reasons: list[Reason] = field(default_factory=list)
    what_ifs: list[Reason] = field(default_factory=list)
    direct: list[Reason] = field(default_factory=list)  # the answer to what was asked, first
    questions: list[str] = field(default_factory=list)
    # no DDP/FSDP row fits but the parallelism ladder's plan does (TP/CP/PP with FSDP over the
    # rest, bot.calc.parallel_ladder.PlanSuggestion): the recommendation is that plan
    plan: Any = None
