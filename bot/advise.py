"""Evidence -> a recommended strategy, its confidence, the reasons, and what would change it.

The evidence is the calculator's estimate for every strategy (``bot.calc.estimate``) on the
user's resolved setup. The rules, in order (issue 5, "Advise"):

1. One GPU: nothing to shard across; plain training (``ddp`` with one rank) if it fits, else
   CPU offload, else ``none``.
2. Several nodes joined by a slow link (Ethernet, or under ``SLOW_LINK_GBPS``): HSDP when a
   node's shard fits, since only the sharded gradients cross the slow link.
3. DDP when a full replica fits with a margin (``DDP_MARGIN`` of usable memory) at the user's
   micro-batch: the least communication and the simplest code.
4. Otherwise a sharded FSDP variant: SHARD_GRAD_OP when it fits with a margin and GPUs talk over
   PCIe (it skips the backward all-gather), else FULL_SHARD.
5. CPU offload when only that fits (and the host RAM is enough when we know it).
6. ``none`` with what to change (LoRA/QLoRA, more GPUs, smaller micro-batch, checkpointing).

Reasons and changes are structured (``Reason(code, values)``); ``bot.render`` words them in
Chinese or English, so every figure they carry is a value from ``Estimate.numbers()`` or the
setup and stays traceable.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from bot.setup import ResolvedSetup, SetupError, resolve_setup

DDP_MARGIN = 0.9  # a replica "fits with a margin" at <= 90% of usable memory (allocator spikes)
COMFORT = 0.75  # below this share of usable memory the decision is clear-cut (high confidence)
SLOW_LINK_GBPS = 100.0  # inter-node links under this many Gb/s count as slow for full sharding
SHARD_ORDER = ("fsdp_shard_grad_op", "fsdp_full_shard", "fsdp_hybrid_shard", "fsdp_full_shard_offload")


@dataclass(frozen=True)
class Reason:
    """One sentence of the argument: a code the renderer words, and the values it quotes."""

    code: str
    values: dict = field(default_factory=dict)


@dataclass
class Advice:
    strategy: str
    alternatives: list[str]
    confidence: str  # high | medium | low
    reasons: list[Reason]
    changes: list[Reason]  # what would change the decision


def _fits_with_margin(est, strategy: str, margin: float = DDP_MARGIN) -> bool:
    mem = est.memory[strategy]
    return bool(mem.fits) and mem.total_gib <= margin * mem.usable_gib


def _host_ok(resolved: ResolvedSetup, est) -> bool:
    ram = resolved.setup.cpu_ram_gb
    need = est.memory["fsdp_full_shard_offload"].host_ram_gib
    return ram is None or need <= ram


def _slow_inter_node(resolved: ResolvedSetup) -> bool:
    return resolved.nodes > 1 and (resolved.inter_node_link == "ethernet"
                                   or resolved.inter_node_gbps < SLOW_LINK_GBPS)


def _variant(resolved: ResolvedSetup, **changes) -> ResolvedSetup | None:
    """The same setup with some fields changed (a what-if), or None when it cannot be resolved."""
    setup = resolved.setup.model_copy(update=changes)
    try:
        return resolve_setup(setup)
    except SetupError:
        return None


def _estimate(resolved: ResolvedSetup):
    from bot.calc import estimate

    return estimate(resolved)


def advise(resolved: ResolvedSetup, est) -> Advice:
    """Rank the strategies for ``resolved`` from its estimate ``est``."""
    mem = est.memory
    mb = resolved.setup.micro_batch or 1
    fitting = [s for s in SHARD_ORDER if mem[s].fits and mem[s].max_micro_batch >= mb]
    reasons: list[Reason] = []
    changes: list[Reason] = []

    ddp = mem["ddp"]
    ddp_ok = bool(ddp.fits) and ddp.max_micro_batch >= mb
    if ddp_ok:
        reasons.append(Reason("ddp_fits", {"strategy": "ddp"}))
    else:
        reasons.append(Reason("ddp_too_big", {"strategy": "ddp", "need_mb": mb}))

    if resolved.gpu_count == 1:
        strategy, confidence = _single_gpu(resolved, est, reasons)
        alternatives = []
    elif _slow_inter_node(resolved) and mem["fsdp_hybrid_shard"].fits and \
            mem["fsdp_hybrid_shard"].max_micro_batch >= mb:
        strategy = "fsdp_hybrid_shard"
        reasons.append(Reason("slow_inter_node", {"strategy": strategy}))
        alternatives = [s for s in ("ddp" if ddp_ok else None, "fsdp_full_shard") if s and mem[s].fits]
        confidence = "high" if resolved.setup.inter_node_link else "medium"
    elif ddp_ok and _fits_with_margin(est, "ddp"):
        strategy = "ddp"
        confidence = "high" if ddp.total_gib <= COMFORT * ddp.usable_gib else "medium"
        reasons.append(Reason("comm_least", {"strategy": "fsdp_full_shard"}))
        alternatives = [s for s in ("fsdp_shard_grad_op", "fsdp_full_shard") if mem[s].fits]
    elif fitting and fitting[0] != "fsdp_full_shard_offload":
        strategy = _pick_shard(resolved, est, fitting)
        reasons.append(Reason("shard_fits", {"strategy": strategy}))
        if strategy != "ddp":
            reasons.append(Reason("comm_cost", {"strategy": strategy}))
        if ddp_ok:  # DDP fits but without margin
            reasons.append(Reason("ddp_tight", {"strategy": "ddp"}))
        alternatives = [s for s in fitting if s != strategy and s != "fsdp_full_shard_offload"]
        if ddp_ok:
            alternatives.append("ddp")
        big = mem[strategy].total_gib <= COMFORT * mem[strategy].usable_gib
        confidence = "high" if big and not ddp_ok else "medium"
        if resolved.nodes > 1 and "fsdp_hybrid_shard" in alternatives:
            changes.append(Reason("hsdp_if_slow", {"strategy": "fsdp_hybrid_shard"}))
    elif mem["fsdp_full_shard_offload"].fits and _host_ok(resolved, est):
        strategy = "fsdp_full_shard_offload"
        confidence = "medium" if resolved.setup.cpu_ram_gb else "low"
        reasons.append(Reason("only_offload", {"strategy": strategy}))
        alternatives = []
    else:
        strategy = "none"
        confidence = "high"
        reasons.append(Reason("nothing_fits", {"strategy": "fsdp_full_shard"}))
        offload = mem["fsdp_full_shard_offload"]
        if offload.total_gib <= offload.usable_gib and not _host_ok(resolved, est):
            reasons.append(Reason("host_ram_short", {"strategy": "fsdp_full_shard_offload"}))
        alternatives = []

    if resolved.nodes == 1:  # HSDP on one node is FULL_SHARD: not a separate choice
        alternatives = [a for a in alternatives if a != "fsdp_hybrid_shard"]
    changes.extend(_what_would_change(resolved, est, strategy))
    return Advice(strategy, alternatives, confidence, reasons, changes)


def _single_gpu(resolved, est, reasons) -> tuple[str, str]:
    mem = est.memory
    mb = resolved.setup.micro_batch or 1
    reasons.insert(0, Reason("single_gpu", {}))
    if mem["ddp"].fits and mem["ddp"].max_micro_batch >= mb:
        return "ddp", "high"
    if mem["fsdp_full_shard_offload"].fits and _host_ok(resolved, est):
        reasons.append(Reason("only_offload", {"strategy": "fsdp_full_shard_offload"}))
        return "fsdp_full_shard_offload", "low"
    reasons.append(Reason("nothing_fits", {"strategy": "ddp"}))
    return "none", "high"


def _pick_shard(resolved, est, fitting: list[str]) -> str:
    """FULL_SHARD by default; SHARD_GRAD_OP when it fits with a margin and saves real time."""
    if "fsdp_shard_grad_op" in fitting and _fits_with_margin(est, "fsdp_shard_grad_op"):
        # On PCIe the backward all-gather FULL_SHARD adds is what costs; on NVLink it is hidden.
        if resolved.nodes == 1 and resolved.intra_node_link == "pcie":
            return "fsdp_shard_grad_op"
    if "fsdp_full_shard" in fitting:
        return "fsdp_full_shard"
    return fitting[0]


def _what_would_change(resolved: ResolvedSetup, est, strategy: str) -> list[Reason]:
    """Lines like "if you need micro-batch 8, DDP runs out at 6", each computed by the calc."""
    mem = est.memory
    setup = resolved.setup
    out: list[Reason] = []
    if strategy == "ddp" and resolved.gpu_count > 1:
        out.append(Reason("ddp_mb_limit", {"strategy": "ddp"}))
    if strategy in ("fsdp_full_shard", "fsdp_shard_grad_op", "fsdp_hybrid_shard"):
        out.append(Reason("shard_mb_limit", {"strategy": strategy}))
        if setup.finetune == "full":
            lora = _variant(resolved, finetune="lora")
            if lora is not None and _estimate(lora).memory["ddp"].fits:
                out.append(Reason("lora_ddp_fits", {}))
    if strategy in ("none", "fsdp_full_shard_offload"):
        out.extend(_fixes(resolved))
        if (setup.micro_batch or 1) > 1:
            out.append(Reason("smaller_mb", {"strategy": "fsdp_full_shard"}))
    if strategy == "fsdp_hybrid_shard" and mem["fsdp_full_shard"].fits:
        out.append(Reason("fast_link_full_shard", {"strategy": "fsdp_full_shard"}))
    return out


def _first_fit(resolved: ResolvedSetup | None) -> str | None:
    if resolved is None:
        return None
    memory = _estimate(resolved).memory
    return next((s for s in ("ddp", "fsdp_full_shard") if memory[s].fits), None)


def _fixes(resolved: ResolvedSetup) -> list[Reason]:
    """The least disruptive changes that make a GPU-resident strategy fit, each checked by the calc:
    checkpointing alone, then LoRA/QLoRA (with checkpointing if needed), then more GPUs."""
    setup = resolved.setup
    ckpt = bool(setup.activation_checkpointing)
    out: list[Reason] = []
    if not ckpt:
        best = _first_fit(_variant(resolved, activation_checkpointing=True))
        if best:
            out.append(Reason("checkpointing_fits", {"strategy": best}))
    if setup.finetune == "full" or setup.finetune is None:
        for mode in ("lora", "qlora"):
            for with_ckpt in ((False, True) if not ckpt else (True,)):
                best = _first_fit(_variant(resolved, finetune=mode, activation_checkpointing=with_ckpt))
                if best:
                    out.append(Reason("finetune_fits", {"finetune": mode, "strategy": best,
                                                        "checkpointing": with_ckpt and not ckpt}))
                    break
            if len(out) >= 2:
                break
    for factor in (2, 4, 8):
        more = _more_gpus(resolved, factor)
        if more is not None and _estimate(more).memory["fsdp_full_shard"].fits:
            out.append(Reason("more_gpus", {"factor": factor, "strategy": "fsdp_full_shard"}))
            break
        with_ckpt = _variant(more, activation_checkpointing=True) if more is not None and not ckpt else None
        if with_ckpt is not None and _estimate(with_ckpt).memory["fsdp_full_shard"].fits:
            out.append(Reason("more_gpus", {"factor": factor, "strategy": "fsdp_full_shard",
                                            "checkpointing": True}))
            break
    return out


def _more_gpus(resolved: ResolvedSetup, factor: int) -> ResolvedSetup | None:
    nodes = resolved.nodes * factor if resolved.gpus_per_node >= 8 else resolved.nodes
    per_node = resolved.gpus_per_node if resolved.gpus_per_node >= 8 else resolved.gpus_per_node * factor
    setup = resolved.setup.model_copy(update={"gpu_count": nodes * per_node, "nodes": nodes,
                                              "gpus_per_node": per_node})
    if nodes > 1 and setup.inter_node_link in (None, "none"):
        setup = setup.model_copy(update={"inter_node_link": "infiniband", "inter_node_gbps": 200.0})
    try:
        return resolve_setup(setup)
    except SetupError:
        return None

