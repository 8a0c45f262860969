"""The benchmark worker: one rank of a real DDP/FSDP training run, launched by torchrun.

    python -m torch.distributed.run --nproc-per-node 2 ... -m bot.bench.worker \\
        --model tiny --strategy fsdp_full_shard --steps 5 --out result.json

Same module everywhere: ``bench run`` on this machine, the ``torchrun`` command and SLURM file
that ``bench script`` writes for a cluster. Backend: NCCL when CUDA is available, gloo on CPU.
Every strategy sees the same seed, the same initial weights and the same global batch (each rank
takes its slice), so the loss curve must match across strategies (``bench run`` checks it).

Figures: median step time over the timed steps, tokens/s (global), peak memory per rank
(``torch.cuda.max_memory_allocated`` on GPU; on CPU the ``torch.distributed._tools`` memory
tracker over one untimed warm-up step, since CPU has no allocator statistics), time in
collectives per step (torch profiler over one extra step, not timed), and the loss per step.
Rank 0 writes the result JSON (schema ``RESULT_SCHEMA``, with a SHA-256 of its content); a rank
that fails writes ``rank<N>.error.txt`` with its traceback next to it.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import os
import platform
import statistics
import sys
import time
import traceback
from pathlib import Path
from typing import Any

RESULT_SCHEMA = "shardwise.bench.result/1"
GIB = 2**30
WORKER_STRATEGIES = ("ddp", "fsdp_full_shard", "fsdp_shard_grad_op", "fsdp_hybrid_shard",
                     "fsdp_full_shard_offload")
# Names of collective ops in profiler traces (gloo, NCCL kernels, c10d ops).
_COLLECTIVE_MARKERS = ("allreduce", "all_reduce", "allgather", "all_gather", "reduce_scatter",
                       "reducescatter", "broadcast", "nccl")


def content_hash(result: dict) -> str:
    """SHA-256 over the result's canonical JSON without its ``sha256`` field."""
    body = {k: v for k, v in result.items() if k != "sha256"}
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bot.bench.worker", description=__doc__.split("\n")[0])
    p.add_argument("--model", required=True, help="catalog model name (e.g. tiny, llama2-7b)")
    p.add_argument("--strategy", required=True, choices=WORKER_STRATEGIES)
    p.add_argument("--steps", type=int, default=5, help="timed steps")
    p.add_argument("--warmup", type=int, default=2, help="untimed steps first (at least 2)")
    p.add_argument("--seq-len", type=int, default=256)
    p.add_argument("--micro-batch", type=int, default=2)
    p.add_argument("--precision", default=None, choices=("bf16-mixed", "fp16-mixed", "bf16", "fp32"),
                   help="default: bf16-mixed on GPU, fp32 on CPU")
    p.add_argument("--activation-checkpointing", action="store_true")
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--out", required=True, help="result JSON path (written by rank 0)")
    args = p.parse_args(argv)
    if args.steps < 1 or args.warmup < 2 or args.seq_len < 2 or args.micro_batch < 1:
        p.error("need --steps >= 1, --warmup >= 2, --seq-len >= 2, --micro-batch >= 1")
    return args


def hardware_info(device) -> dict:
    import torch

    info = {"device": device.type, "hostname": platform.node(), "cpu": platform.processor() or platform.machine(),
            "cpu_count": os.cpu_count(), "world_size": int(os.environ.get("WORLD_SIZE", 1)),
            "nodes": int(os.environ.get("WORLD_SIZE", 1)) // int(os.environ.get("LOCAL_WORLD_SIZE", 1))}
    if device.type == "cuda":
        nccl = torch.cuda.nccl.version()  # a tuple in recent torch, an int in old ones
        info.update(gpu=torch.cuda.get_device_name(device), gpu_count=torch.cuda.device_count(),
                    cuda=torch.version.cuda,
                    nccl=".".join(map(str, nccl)) if isinstance(nccl, tuple) else str(nccl),
                    gpu_memory_gib=round(torch.cuda.get_device_properties(device).total_memory / GIB, 2))
        try:
            import subprocess

            info["driver"] = subprocess.run(
                ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                capture_output=True, text=True, timeout=10).stdout.split("\n")[0].strip()
        except (OSError, subprocess.SubprocessError):
            pass
    return info


def _fault(rank: int, step: int) -> None:
    # Test hook: SHARDWISE_BENCH_FAULT="crash:<rank>:<step>" or "hang:<rank>:<step>".
    spec = os.environ.get("SHARDWISE_BENCH_FAULT", "")
    if not spec:
        return
    kind, fault_rank, fault_step = spec.split(":")
    if int(fault_rank) == rank and int(fault_step) == step:
        if kind == "crash":
            raise RuntimeError(f"injected crash on rank {rank} at step {step}")
        if kind == "hang":
            time.sleep(3600)


def wrap(model, strategy: str, device, low_dtype, world: int, local_world: int):
    """Apply the strategy: DDP, or FSDP2 ``fully_shard`` per block and at the root."""
    import torch
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import CPUOffloadPolicy, MixedPrecisionPolicy, fully_shard
    from torch.nn.parallel import DistributedDataParallel

    if strategy == "ddp":
        return DistributedDataParallel(model, device_ids=[device] if device.type == "cuda" else None)
    if strategy == "fsdp_hybrid_shard":
        # HSDP: replicate across nodes, shard within a node (FSDP2 with a 2-D mesh).
        mesh = init_device_mesh(device.type, (world // local_world, local_world),
                                mesh_dim_names=("replicate", "shard"))
    else:
        mesh = init_device_mesh(device.type, (world,), mesh_dim_names=("shard",))
    kwargs: dict[str, Any] = {"mesh": mesh, "reshard_after_forward": strategy != "fsdp_shard_grad_op"}
    if low_dtype is not None:
        kwargs["mp_policy"] = MixedPrecisionPolicy(param_dtype=low_dtype, reduce_dtype=torch.float32)
    if strategy == "fsdp_full_shard_offload":
        kwargs["offload_policy"] = CPUOffloadPolicy(pin_memory=device.type == "cuda")
    for block in model.layers:
        fully_shard(block, **kwargs)
    fully_shard(model, **kwargs)
    return model


def run(args: argparse.Namespace) -> dict | None:
    import torch
    import torch.distributed as dist

    from bot.bench.model import build_model, check_seq_len, loss_fn
    from bot.catalog import lookup_model

    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    local_rank, local_world = int(os.environ["LOCAL_RANK"]), int(os.environ["LOCAL_WORLD_SIZE"])
    cuda = torch.cuda.is_available()
    device = torch.device("cuda", local_rank) if cuda else torch.device("cpu")
    if cuda:
        torch.cuda.set_device(device)
    else:
        torch.set_num_threads(1)  # one core per rank; more oversubscribes a shared CPU
    precision = args.precision or ("bf16-mixed" if cuda else "fp32")
    low = {"bf16-mixed": torch.bfloat16, "fp16-mixed": torch.float16}.get(precision)
    dist.init_process_group("nccl" if cuda else "gloo", device_id=device if cuda else None)
    spec = lookup_model(args.model)
    check_seq_len(spec, args.seq_len)

    torch.manual_seed(args.seed)  # identical initial weights on every rank and every strategy
    torch.set_default_dtype(torch.bfloat16 if precision == "bf16" else torch.float32)
    with torch.device(device):
        model = build_model(spec, checkpoint_blocks=args.activation_checkpointing)
    torch.set_default_dtype(torch.float32)
    model = wrap(model, args.strategy, device, low, world, local_world)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    use_autocast = low is not None and args.strategy == "ddp"

    # The global batch for each step comes from the seed; rank r takes rows r*mb..(r+1)*mb.
    data = torch.Generator().manual_seed(args.seed + 1)
    total_steps = args.warmup + args.steps + 1  # +1: the profiled step
    batches = torch.randint(0, spec.vocab, (total_steps, world * args.micro_batch, args.seq_len + 1),
                            generator=data)

    def step(i: int) -> float:
        tokens = batches[i, rank * args.micro_batch:(rank + 1) * args.micro_batch].to(device)
        _fault(rank, i)
        with torch.autocast(device.type, dtype=low, enabled=use_autocast):
            logits = model(tokens[:, :-1])
        loss = loss_fn(logits, tokens[:, 1:])
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        mean = loss.detach().clone()
        dist.all_reduce(mean)  # the global-batch loss, comparable across strategies
        return mean.item() / world

    losses, times = [], []
    peak_bytes = 0
    reserved_bytes = None  # what the caching allocator reserved (CUDA only; CPU has no such allocator)
    if cuda:
        torch.cuda.reset_peak_memory_stats(device)
    for i in range(args.warmup + args.steps):
        if i == 1 and not cuda:
            loss, peak_bytes = _tracked_step(step, i, model, optimizer, args.strategy)
            losses.append(loss)
            continue
        if cuda:
            torch.cuda.synchronize(device)
        start = time.perf_counter()
        losses.append(step(i))
        # one line per step on this rank's own stderr: if it is killed, its log tail shows how far it got
        print(f"rank {rank}: step {i + 1}/{args.warmup + args.steps} loss {losses[-1]:.4f}", file=sys.stderr,
              flush=True)
        if cuda:
            torch.cuda.synchronize(device)
        if i >= args.warmup:
            times.append(time.perf_counter() - start)
    if cuda:
        peak_bytes = torch.cuda.max_memory_allocated(device)
        reserved_bytes = torch.cuda.max_memory_reserved(device)
    comm_seconds = _profiled_comm_seconds(step, args.warmup + args.steps, cuda)

    peaks: list[Any] = [None] * world  # filled by all_gather_object
    dist.all_gather_object(peaks, peak_bytes / GIB)
    reserved: list[Any] = [None] * world
    dist.all_gather_object(reserved, None if reserved_bytes is None else reserved_bytes / GIB)
    comms: list[Any] = [None] * world
    dist.all_gather_object(comms, comm_seconds)
    step_seconds = statistics.median(times)
    result = None
    if rank == 0:
        result = {
            "schema": RESULT_SCHEMA,
            "kind": "run",
            "config": {"model": spec.name, "strategy": args.strategy, "nproc": world,
                       "nodes": world // local_world, "device": device.type,
                       "seq_len": args.seq_len, "micro_batch": args.micro_batch, "precision": precision,
                       "activation_checkpointing": args.activation_checkpointing, "steps": args.steps,
                       "warmup": args.warmup, "seed": args.seed, "optimizer": "adamw"},
            "hardware": hardware_info(device),
            "torch_version": torch.__version__,
            "figures": {
                "step_seconds": step_seconds,
                "tokens_per_s": world * args.micro_batch * args.seq_len / step_seconds,
                "peak_gib": max(peaks), "peak_gib_per_rank": peaks,
                "peak_reserved_gib": None if reserved_bytes is None else max(reserved),
                "peak_source": "torch.cuda.max_memory_allocated" if cuda else "torch.distributed._tools memory tracker",
                "comm_seconds_per_step": max(comms), "losses": losses,
                "step_seconds_all": times, "params": spec.params,
            },
            "status": "ok",
        }
    dist.barrier()
    dist.destroy_process_group()
    return result


def _tracked_step(step, i, model, optimizer, strategy) -> tuple[float, int]:
    """One untimed step under the memory tracker (CPU has no allocator peak statistics):
    (its loss, the tracker's peak bytes)."""
    from torch.distributed._tools.fsdp2_mem_tracker import FSDPMemTracker
    from torch.distributed._tools.mem_tracker import MemTracker

    if strategy == "ddp":
        tracker = MemTracker()
        tracker.track_external(model, optimizer)
    else:
        tracker = FSDPMemTracker(model, optimizer)
    with tracker:
        loss = step(i)
    peak = tracker.get_tracker_snapshot("peak")
    return loss, max((snap.get("Total", 0) for snap in peak.values()), default=0)


def _profiled_comm_seconds(step, i: int, cuda: bool) -> float:
    """Seconds in collectives during one extra step, from the torch profiler."""
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    with profile(activities=activities) as prof:
        step(i)
    total_us = 0.0
    for event in prof.key_averages():
        name = event.key.lower()
        if any(marker in name for marker in _COLLECTIVE_MARKERS) and not name.startswith("record_param_comms"):
            if cuda:
                total_us += getattr(event, "device_time_total", 0.0) if "nccl" in name else 0.0
            elif name.startswith("gloo:"):
                total_us += event.cpu_time_total
    return total_us / 1e6


PR_SET_PDEATHSIG = 1  # linux/prctl.h


def die_with_parent() -> None:
    """Ask Linux to SIGKILL this rank when its launcher dies (prctl PR_SET_PDEATHSIG). torchrun
    starts each rank in a session of its own, so a killed launcher would otherwise leave the
    ranks running. If the launcher is already gone (reparented), leave now."""
    parent = os.getppid()
    try:
        import ctypes
        import signal

        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):  # not Linux: the runner's pidfile reaping still applies
        return
    if parent == 1 or os.getppid() != parent:
        os._exit(3)


def mark_rank(out: Path, rank: int, what: str) -> None:
    """``ranks/rank<N>.<what>`` next to the result: ``pid`` at start (the runner reaps these pids
    whatever happens to the launcher), ``exit`` after a clean finish (a rank that vanished without
    it or an error file was killed)."""
    folder = out.parent / "ranks"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"rank{rank}.{what}").write_text(f"{os.getpid()}\n")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    out = Path(args.out)
    rank = int(os.environ.get("RANK", "0"))
    if "RANK" not in os.environ:
        print("bot.bench.worker must be launched by torchrun (python -m torch.distributed.run)",
              file=sys.stderr)
        return 2
    die_with_parent()
    # A SIGINT (torchrun passes on the one it was sent, a Ctrl-C) ends this rank at once, as its
    # SIGTERM does: Python's KeyboardInterrupt would wait for the collective running in C++, which
    # the other ranks, stopped too, never finish, and torchrun waited out its 30 s shutdown grace
    # before it SIGKILLed them (a stopped 2-rank run took ~33 s instead of ~3).
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)
    mark_rank(out, rank, "pid")
    print(f"rank {rank}: started (pid {os.getpid()}, {args.model}, {args.strategy})", file=sys.stderr, flush=True)
    started = time.time()
    try:
        result = run(args)
    except BaseException:
        out.parent.mkdir(parents=True, exist_ok=True)
        (out.parent / f"rank{rank}.error.txt").write_text(traceback.format_exc())
        raise
    mark_rank(out, rank, "exit")
    if result is not None:
        result["started_at"] = datetime.datetime.fromtimestamp(started, datetime.UTC).isoformat()
        result["finished_at"] = datetime.datetime.now(datetime.UTC).isoformat()
        result["sha256"] = content_hash(result)
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_suffix(out.suffix + ".tmp")
        tmp.write_text(json.dumps(result, indent=1, sort_keys=True))
        tmp.replace(out)  # atomic: a reader never sees half a result
    return 0


if __name__ == "__main__":
    code = main()
    # Leave without interpreter teardown: after a torch.profiler session, C++ static destructors
    # sometimes abort ("terminate called without an active exception", seen here ~1 run in 6
    # under load) *after* the result is written, which torchrun would report as a failed rank.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
