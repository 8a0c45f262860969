"""The largest model a set of GPUs trains, per fine-tuning method: the answer to "what can I train
on 2x 3090?" when the question names the cards but no model.

This module owns ``size_limits``: for full fine-tuning, LoRA and QLoRA it finds the largest of
:data:`SIZES` (generic Llama-shaped models of that many parameters, ``bot.catalog``'s approximate
shape) for which a GPU-resident strategy (DDP or an FSDP variant, never CPU offload) fits with the
calculator's margin, with activation checkpointing on (the first thing anyone short of memory turns
on) at the setup's sequence length and micro-batch (the calculator's defaults when unstated). Every
figure is the calculator's; the answer cites it as "shardwise calculator: largest model on ...", a
citation evals/metrics.py recomputes with this function.
"""

from __future__ import annotations

from dataclasses import dataclass

from bot.core.setup import SetupError, TrainingSetup, resolve_setup

# Sizes people fine-tune (billions of parameters): the steps the answer can name
SIZES = (0.5, 1.0, 1.5, 3.0, 7.0, 8.0, 13.0, 14.0, 32.0, 34.0, 70.0, 72.0, 110.0, 180.0, 405.0)
METHODS = ("full", "lora", "qlora")
RESIDENT = ("ddp", "fsdp_shard_grad_op", "fsdp_full_shard", "fsdp_hybrid_shard")
FIT_MARGIN = 0.9  # the same headroom as the GPU-count search (bot.capacity_evidence.capacity_search)


@dataclass(frozen=True)
class SizeLimit:
    """The largest size one method fits (None: not even the smallest of SIZES)."""

    finetune: str
    max_params_b: float | None
    strategy: str | None  # the strategy that fits it (the first of RESIDENT that does)
    total_gib: float | None  # its per-GPU memory
    usable_gib: float | None


@dataclass(frozen=True)
class SizeLimits:
    gpu: str
    gpu_count: int
    seq_len: int
    micro_batch: int
    limits: tuple[SizeLimit, ...]

    def numbers(self) -> dict[str, float | int]:
        out: dict[str, float | int] = {"sizes.gpu_count": self.gpu_count, "sizes.seq_len": self.seq_len,
                                       "sizes.micro_batch": self.micro_batch, "sizes.smallest_params_b": SIZES[0]}
        for lim in self.limits:
            if lim.max_params_b is not None:
                out[f"sizes.{lim.finetune}.max_params_b"] = lim.max_params_b
                out[f"sizes.{lim.finetune}.total_gib"] = round(lim.total_gib or 0.0, 2)
                out[f"sizes.{lim.finetune}.usable_gib"] = round(lim.usable_gib or 0.0, 2)
        return out

    def quote(self) -> str:
        """The inputs the figures depend on, one line (the citation's quote)."""
        return (f"{self.gpu_count} x {self.gpu}, generic Llama-shaped models, bf16-mixed AdamW, seq {self.seq_len}, "
                f"micro-batch {self.micro_batch}, activation checkpointing, no CPU offload")


def _fits(setup: TrainingSetup, params_b: float, finetune: str) -> tuple[str, float, float] | None:
    from bot.calc import estimate

    try:
        resolved = resolve_setup(setup.model_copy(update={"params_b": params_b, "model": None, "finetune": finetune,
                                                          "activation_checkpointing": True}))
    except SetupError:
        return None
    memory = estimate(resolved).memory
    for strategy in RESIDENT:
        if strategy == "fsdp_hybrid_shard" and resolved.nodes == 1:
            continue
        m = memory[strategy]
        if m.fits and m.total_gib <= FIT_MARGIN * m.usable_gib:
            return strategy, m.total_gib, m.usable_gib
    return None


def size_limits(setup: TrainingSetup) -> SizeLimits | None:
    """The largest size per method for the cards of ``setup`` (its model fields are ignored);
    None when the card or the count is not known (nothing to compute for)."""
    if not setup.gpu_count or not (setup.gpu or setup.gpu_memory_gb):
        return None
    try:
        probe = resolve_setup(setup.model_copy(update={"params_b": SIZES[0], "model": None}))
    except SetupError:
        return None
    limits = []
    for method in METHODS:
        lo, hi, best = 0, len(SIZES) - 1, None  # memory grows with the size: bisect the largest that fits
        while lo <= hi:
            mid = (lo + hi) // 2
            fit = _fits(setup, SIZES[mid], method)
            if fit is not None:
                best, lo = (SIZES[mid], fit), mid + 1
            else:
                hi = mid - 1
        if best is None:
            limits.append(SizeLimit(method, None, None, None, None))
        else:
            size, (strategy, total, usable) = best
            limits.append(SizeLimit(method, size, strategy, total, usable))
    gpu = probe.gpu.name if probe.gpu else f"{probe.gpu_memory_gb:g} GB GPU"
    return SizeLimits(gpu=gpu, gpu_count=probe.gpu_count, seq_len=probe.setup.seq_len or 0,
                      micro_batch=probe.setup.micro_batch or 1, limits=tuple(limits))
