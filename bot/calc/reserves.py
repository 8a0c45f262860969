"""Framework reserves: what the GPU keeps beyond the allocated peak, and what a node keeps free.

The CUDA context, cuBLAS workspaces and NCCL buffers outside PyTorch's allocator (the headroom), the
caching allocator's reserved-over-allocated share of the transient bytes (by allocator mode), the
host-RAM rule for CPU offload, and the largest micro-batch whose reserved peak fits.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bot.calc.memory import MemoryInputs, Phase

# Headroom kept free on each GPU, outside what PyTorch's caching allocator reserves: the CUDA
# context + cuBLAS workspaces (~0.5-0.9 GiB) and NCCL communicator buffers (~0.3-0.6 GiB),
# https://pytorch.org/docs/stable/notes/cuda.html#memory-management , plus a small safety margin
# of the card. "fits" compares the allocator's *reserved* peak (below) with what is left.
HEADROOM_FIXED_GIB = 1.0
HEADROOM_FRACTION = 0.0
# Reserved vs allocated. The caching allocator keeps freed blocks cached (reserved) and can only
# reuse a block for a request of at most its size; blocks over 1 MiB come from 2 MiB-rounded
# segments and large requests get their own segments, so tensors of changing sizes that come and
# go every step (activations, gathered weights, loss temporaries) leave cached gaps: reserved >
# allocated (https://pytorch.org/docs/stable/notes/cuda.html#memory-management; with
# PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True segments grow in place and the gap shrinks,
# https://pytorch.org/docs/stable/notes/cuda.html#optimizing-memory-usage-with-pytorch-cuda-alloc-conf).
# Model: reserved = allocated peak + RESERVED_TRANSIENT_FRACTION x the transient part of the
# peak (activations + buffers); the persistent states are allocated once and pack tightly.
# Two fractions, by allocator mode (issue 26 re-examined the single 0.17 on the fit rows,
# ``python -m evals.bench_published --refit``):
# - with PYTORCH_CUDA_ALLOC_CONF="expandable_segments:True", which torchtitan's launcher sets
#   (run_llama_train.sh), the rows the 0.17 came from: torchtitan's three 8 x H100 fit rows imply
#   0.11, 0.11, 0.20 (median 0.11), and its A100 Llama 2 13B no-checkpointing run, which worked,
#   allows at most 0.173: 0.11;
# - with PyTorch's default allocator no fit row has a reserved measurement; the working fit rows
#   (fms-fsdp's and the PyTorch blog's Llama 2 7B) bound it at 0.268, so the previous 0.17 stays.
#   Default-allocator test rows imply 0.14 (llm-foundry MPT-3B, a bound) to 0.91 (Answer.AI's
#   FSDP+QLoRA runs); this project's one-rank H200 runs (docs/calc.md) 0.09-0.91.
RESERVED_TRANSIENT_FRACTION = 0.11
RESERVED_TRANSIENT_FRACTION_DEFAULT_ALLOCATOR = 0.17
# Host RAM a node keeps for the OS, the data loader and pinned staging buffers under CPU offload.
HOST_HEADROOM_FRACTION = 0.10

MAX_MICRO_BATCH = 65_536  # bot.core.setup.LIMITS["micro_batch"] upper bound


def usable_gib(gpu_memory_gb: float) -> float:
    """GPU memory the caching allocator may reserve: capacity minus the CUDA context, NCCL's
    buffers and a safety margin (HEADROOM_FIXED_GIB + HEADROOM_FRACTION of the card)."""
    return max(0.0, gpu_memory_gb * (1 - HEADROOM_FRACTION) - HEADROOM_FIXED_GIB)


def host_ram_fits(needed_gib: float, cpu_ram_gb: float | None) -> bool:
    """The one host-RAM rule (used by the calculator and the advice): a node's CPU-offloaded
    shards fit when they need at most (1 - HOST_HEADROOM_FRACTION) = 90% of its RAM; the rest is
    the OS, the data loader workers and the pinned staging buffers of the host<->device copies.
    Unknown RAM (None) is not held against the setup."""
    if cpu_ram_gb is None:
        return True
    return needed_gib <= cpu_ram_gb * (1 - HOST_HEADROOM_FRACTION)


def max_micro_batch(candidates: list[Phase], usable_bytes: float) -> int:
    """Largest b with every phase's reserved bytes (fixed + b * per_sample, see
    ``Phase.reserved``) <= usable; closed form per phase."""
    best = MAX_MICRO_BATCH
    for phase in candidates:
        room = usable_bytes - phase.reserved_fixed
        if phase.reserved_per_sample <= 0:
            if room < 0:
                return 0
            continue
        best = min(best, math.floor(room / phase.reserved_per_sample))
        if best < 1:
            return 0
    while best > 1 and any(ph.reserved(best) > usable_bytes for ph in candidates):  # float rounding
        best -= 1
    return best


def reserved_fraction(inputs: MemoryInputs) -> float:
    """The share of the transient bytes the caching allocator keeps reserved on top of the
    allocated peak: smaller with expandable segments (see RESERVED_TRANSIENT_FRACTION)."""
    return RESERVED_TRANSIENT_FRACTION if inputs.expandable_segments else RESERVED_TRANSIENT_FRACTION_DEFAULT_ALLOCATOR
