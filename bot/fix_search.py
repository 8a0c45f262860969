"""The combined what-if search (issue 25, "fixes combined, not one at a time"): when nothing fits
as asked, try the cheap changes together and name the cheapest combination that fits.

A change is one thing the user can do to the run (``CHANGES``: activation checkpointing, a smaller
micro-batch with gradient accumulation, a chunked cross-entropy, an 8-bit AdamW, LoRA or QLoRA,
CPU offload, more GPUs). Each combination is sized by the calculator (``bot.calc.estimate``) and
the cheapest one that fits wins, by the cost order written here as data (``cost_key``). The
search runs in the evidence stage (``bot.evidence``), so the decision stays a pure function of
the evidence and every figure the answer prints comes from ``FixSearch.numbers`` (``fix.*`` keys,
recomputed by the eval's calc check like every other figure).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from bot.calc import Estimate
    from bot.core.setup import ResolvedSetup

# The changes, cheapest first. The rank is the cost order; the comment says why it sits there.
# A change costs more than any number of cheaper ones together (``cost_key``): LoRA changes what is
# trained, which no pile of speed knobs does.
CHANGE_RANK: dict[str, int] = {
    # one extra forward per block in backward: about +30% compute, nothing else changes
    # (Chen et al. 2016, https://arxiv.org/abs/1604.06174; torch.utils.checkpoint)
    "checkpointing": 1,
    # the same global batch, no memory cost; a smaller micro-batch keeps the GPU less busy, so
    # throughput drops a little (and the step count per optimizer step rises)
    "accumulate": 2,
    # a loss computed a chunk of logits at a time: the same maths, a few percent slower
    # (torchtune's CEWithChunkedOutputLoss); worth it at long context with a large vocabulary
    "chunked_loss": 3,
    # bitsandbytes' 8-bit AdamW: still full fine-tuning, the moments quantized to 8 bits
    # (Dettmers et al. 2021, https://arxiv.org/abs/2110.02861); a small numerical risk
    "optimizer_8bit": 4,
    # LoRA changes the training: only low-rank adapters learn (https://arxiv.org/abs/2106.09685)
    "lora": 5,
    # QLoRA: LoRA over a 4-bit base, a further quality risk and slower matmuls
    # (https://arxiv.org/abs/2305.14314)
    "qlora": 6,
    # CPU offload of parameters, gradients and optimizer state: several times slower steps,
    # and every node needs the host RAM for them
    "offload": 7,
    # more GPUs cost hardware the user may not have
    "more_gpus": 8,
}
CHANGES = tuple(sorted(CHANGE_RANK, key=CHANGE_RANK.__getitem__))
# Changes that cannot go together (one fine-tuning mode; an 8-bit optimizer only matters for the
# full model's moments: the adapters' are tiny)
EXCLUSIVE = (frozenset({"lora", "qlora"}), frozenset({"optimizer_8bit", "lora"}),
             frozenset({"optimizer_8bit", "qlora"}))
GPU_RESIDENT = ("ddp", "fsdp_shard_grad_op", "fsdp_full_shard", "fsdp_hybrid_shard")
OFFLOAD = "fsdp_full_shard_offload"
PREFIX = "fix"


def cost_key(combo: Iterable[str]) -> tuple[int, ...]:
    """How much a combination costs, comparable: its ranks from the costliest down, so the
    costliest change decides first, then the next; a shorter list of the same ranks is cheaper."""
    return tuple(sorted((CHANGE_RANK[c] for c in combo), reverse=True))


def combinations(available: Iterable[str]) -> list[tuple[str, ...]]:
    """Every non-empty combination of ``available`` changes that can go together, cheapest first."""
    wanted = set(available)
    names = [c for c in CHANGES if c in wanted]
    out = [combo for n in range(1, len(names) + 1) for combo in itertools.combinations(names, n)
           if not any(pair <= set(combo) for pair in EXCLUSIVE)]
    return sorted(out, key=cost_key)


@dataclass(frozen=True)
class Fix:
    """The cheapest combination that fits, with the configuration it fits in."""

    changes: tuple[str, ...]  # in ``CHANGES`` order
    strategy: str
    micro_batch: int  # the micro-batch it runs at (below the asked one with "accumulate")
    gpu_count: int
    total_gib: float
    usable_gib: float
    host_ram_gib: float  # per node, with offload
    host_ram_unknown: bool  # offload with the host RAM unstated: the answer asks for it


@dataclass
class FixSearch:
    """The search's outcome: the cheapest fit (None when no combination fits) and what was tried."""

    fix: Fix | None
    tried: tuple[str, ...]  # the changes that were available
    numbers: dict[str, float | int | bool] = field(default_factory=dict)  # ``fix.*`` figures


def available_changes(resolved: ResolvedSetup) -> list[str]:
    """The changes that mean something for this setup (checkpointing only when it is off, ...)."""
    s = resolved.setup
    out = []
    if not s.activation_checkpointing:
        out.append("checkpointing")
    if (s.micro_batch or 1) > 1:
        out.append("accumulate")
    if (s.loss_impl or "standard") == "standard":
        out.append("chunked_loss")
    full = (s.finetune or "full") == "full"
    if full and (s.optimizer or "adamw") == "adamw":
        out.append("optimizer_8bit")
    if full:
        out.append("lora")
    if (s.finetune or "full") in ("full", "lora"):
        out.append("qlora")
    out.append("offload")
    out.append("more_gpus")
    return out


def setup_changes(combo: Iterable[str]) -> dict[str, Any]:
    """The setup fields a combination changes (accumulation, offload and more GPUs are read from
    the estimate: a micro-batch that fits, a strategy, a count)."""
    out: dict[str, Any] = {}
    for c in combo:
        if c == "checkpointing":
            out["activation_checkpointing"] = True
        elif c == "chunked_loss":
            out["loss_impl"] = "chunked"
        elif c == "optimizer_8bit":
            out.update(optimizer="adam8bit", optimizer_impl=None)
        elif c in ("lora", "qlora"):
            out.update(finetune=c, base_dtype=None)  # the base's storage dtype follows the mode
    return out


Resolve = Callable[[dict[str, Any]], "ResolvedSetup | None"]
EstimateFn = Callable[["ResolvedSetup"], "Estimate"]


def search_fixes(resolved: ResolvedSetup, resolve: Resolve, estimate: EstimateFn,
                 count_changes: Callable[[int], dict[str, Any] | None],
                 counts: Iterable[int] | None = None) -> FixSearch:
    """The cheapest combination of ``available_changes(resolved)`` that fits.

    ``resolve(changes)`` resolves the asked setup with field changes (None when impossible),
    ``estimate`` is the calculator, ``count_changes(n)`` the fields for ``n`` GPUs (None when the
    count cannot be laid out), ``counts`` the GPU counts "more GPUs" tries (the inverse search's,
    ``bot.capacity_evidence.CAPACITY_COUNTS``). Combinations without more GPUs are tried first, cheapest
    first; then the fewest GPUs at which any combination fits, with the cheapest such combination."""
    if counts is None:
        from bot.capacity_evidence import CAPACITY_COUNTS

        counts = CAPACITY_COUNTS
    available = available_changes(resolved)
    mb = resolved.setup.micro_batch or 1
    ram_known = resolved.setup.cpu_ram_gb is not None
    cache: dict[tuple[tuple[str, Any], ...], Any] = {}

    def sized(changes: dict[str, Any]) -> tuple[Any, Any] | None:
        key = tuple(sorted(changes.items(), key=lambda kv: kv[0]))
        if key not in cache:
            r = resolve(changes)
            cache[key] = (r, estimate(r)) if r is not None else None
        return cache[key]

    def fits(combo: tuple[str, ...], extra: dict[str, Any]) -> Fix | None:
        got = sized({**setup_changes(combo), **extra})
        if got is None:
            return None
        r, est = got
        strategies = [OFFLOAD] if "offload" in combo else [
            s for s in GPU_RESIDENT if (s != "fsdp_hybrid_shard" or r.nodes > 1) and (s == "ddp" or r.gpu_count > 1)]
        for s in strategies:
            m = est.memory[s]
            if m.fits:
                return Fix(combo, s, mb, r.gpu_count, m.total_gib, m.usable_gib, m.host_ram_gib,
                           s == OFFLOAD and not ram_known)
            if "accumulate" in combo and m.max_micro_batch >= 1:
                # the calculator's largest micro-batch that fits; the global batch kept by accumulating
                small = sized({**setup_changes(combo), **extra, "micro_batch": m.max_micro_batch})
                if small is not None and small[1].memory[s].fits:
                    sm = small[1].memory[s]
                    return Fix(combo, s, m.max_micro_batch, r.gpu_count, sm.total_gib, sm.usable_gib,
                               sm.host_ram_gib, s == OFFLOAD and not ram_known)
        return None

    found: Fix | None = None
    for combo in combinations(c for c in available if c != "more_gpus"):
        found = fits(combo, {})
        if found is not None:
            break
    if found is None and "more_gpus" in available:
        companions = [()] + combinations(c for c in available if c != "more_gpus")
        for count in (n for n in counts if n > resolved.gpu_count):
            extra = count_changes(count)
            if extra is None:
                continue
            found = next((f for f in (fits(("more_gpus", *combo), extra) for combo in companions) if f), None)
            if found is not None:
                found = replace(found, changes=tuple(c for c in CHANGES if c in found.changes))
                break
    return FixSearch(found, tuple(available), fix_numbers(found))


def fixes_for(resolved: ResolvedSetup) -> FixSearch:
    """The search over ``resolved`` with the calculator, each combination resolved as the
    evidence's other variants are (``bot.evidence._variant``: the same model kept)."""
    from bot.calc import estimate
    from bot.evidence import _variant

    return search_fixes(resolved, lambda changes: _variant(resolved, changes), estimate,
                        lambda count: count_layout(resolved, count))


def count_layout(resolved: ResolvedSetup, count: int) -> dict[str, Any] | None:
    """The setup fields for ``count`` of the asked GPUs: nodes of 8 beyond 8 GPUs (or the asked
    node size when larger), the link as stated; None when ``count`` does not fill whole nodes."""
    per_node_max = max(resolved.gpus_per_node, 8) if resolved.nodes > 1 else 8
    per_node = min(count, per_node_max)
    if count % per_node:
        return None
    nodes = count // per_node
    update: dict[str, Any] = {"gpu_count": count, "gpus_per_node": per_node, "nodes": nodes}
    if nodes == 1 or resolved.setup.inter_node_link == "none":
        # one node needs no link; several nodes take the link stated, else resolve_setup's
        # assumed one ("none" here is only the one-node value the asked setup resolved to;
        # kept, it made every count beyond one node a SetupError, so "how many GPUs?" for
        # anything needing two nodes answered that no count fits)
        update.update(inter_node_link=None, inter_node_gbps=None)
    return update


def fix_numbers(f: Fix | None) -> dict[str, float | int | bool]:
    """The fix's figures under ``fix.*`` keys (what the answer may print about it)."""
    if f is None:
        return {}
    out: dict[str, float | int | bool] = {
        f"{PREFIX}.memory.{f.strategy}.total_gib": round(f.total_gib, 2),
        f"{PREFIX}.memory.{f.strategy}.usable_gib": round(f.usable_gib, 2),
        f"{PREFIX}.micro_batch": f.micro_batch,
        f"{PREFIX}.gpu_count": f.gpu_count,
    }
    if f.strategy == OFFLOAD:
        out[f"{PREFIX}.memory.{f.strategy}.host_ram_gib"] = round(f.host_ram_gib, 2)
    return out
