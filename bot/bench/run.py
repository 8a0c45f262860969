"""Run a real benchmark on this machine: the worker under torchrun, one strategy after another.

``run_benchmark(RunConfig(...))`` checks the config (refusing what this machine cannot run before
anything starts), takes a file lock so two runs queue instead of interleaving, launches
``python -m torch.distributed.run ... -m bot.bench.worker`` per strategy in its own process
session on 127.0.0.1, enforces a timeout, reaps the whole process group on timeout, failure or
Ctrl-C, and names the failing rank with its log tail. Results go to the store only when every
rank finished and the loss curve matches the other strategies' (same seed, same data).
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path

from bot.bench.store import ResultStore, config_hash
from bot.bench.worker import RESULT_SCHEMA, WORKER_STRATEGIES, content_hash
from bot.calc.memory import model_states_bytes
from bot.catalog import UnknownNameError, lookup_model
from bot.env import data_dir, free_port

ProgressFn = Callable[[str, float], None]
# python -c shim: set PR_SET_PDEATHSIG (SIGTERM) so the launcher follows this process when it dies,
# leave at once if it is already gone, then exec the real command (argv after the parent pid).
_DIE_WITH_PARENT_EXEC = (
    "import ctypes, os, signal, sys\n"
    "try:\n ctypes.CDLL(None).prctl(1, signal.SIGTERM, 0, 0, 0)\n"
    "except (OSError, AttributeError):\n pass\n"
    "if os.getppid() != int(sys.argv[1]):\n sys.exit(3)\n"
    "os.execv(sys.argv[2], sys.argv[2:])\n")
MAX_STEPS = 1000
# Relative loss difference allowed between strategies. fp32: only reduction order differs.
LOSS_TOLERANCE = {"fp32": 1e-4, "bf16-mixed": 2e-2, "fp16-mixed": 2e-2, "bf16": 2e-2}


class BenchError(RuntimeError):
    """A refused config or a failed run; ``rank`` and ``log_tail`` say where it failed."""

    def __init__(self, message: str, rank: int | None = None, log_tail: str = ""):
        self.rank, self.log_tail = rank, log_tail
        source = f"rank {rank}" if rank is not None else "torchrun"
        super().__init__(message + (f"\n--- {source} log tail ---\n{log_tail}" if log_tail else ""))


@dataclass(frozen=True)
class RunConfig:
    model: str = "tiny"
    strategies: tuple[str, ...] = ("ddp", "fsdp_full_shard")
    nproc: int = 2
    steps: int = 5
    warmup: int = 2
    seq_len: int = 256
    micro_batch: int = 2
    precision: str | None = None  # default: bf16-mixed on GPU, fp32 on CPU
    activation_checkpointing: bool = False
    seed: int = 1234
    timeout: float = 600.0  # per strategy, seconds


@dataclass
class RunReport:
    run_ids: dict[str, str]  # strategy -> stored run id
    results: dict[str, dict]  # strategy -> worker result JSON
    loss_check: dict
    cached: list[str] = field(default_factory=list)  # strategies served from the store


def _cuda_count() -> int:
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def _available_ram_bytes() -> int:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 8 * 2**30


def check_config(cfg: RunConfig) -> tuple[str, str]:
    """Refuse what cannot run here, with the reason; returns (catalog model name, device)."""
    try:
        spec = lookup_model(cfg.model)
    except UnknownNameError as err:
        raise BenchError(str(err)) from None
    bad = [s for s in cfg.strategies if s not in WORKER_STRATEGIES]
    if bad or not cfg.strategies:
        raise BenchError(f"unknown strategy {', '.join(bad) or '(none given)'}; "
                         f"choose from {', '.join(WORKER_STRATEGIES)}")
    for name, value, low, high in (("nproc", cfg.nproc, 1, 4096), ("steps", cfg.steps, 1, MAX_STEPS),
                                   ("warmup", cfg.warmup, 2, MAX_STEPS), ("seq_len", cfg.seq_len, 2, 1 << 20),
                                   ("micro_batch", cfg.micro_batch, 1, 4096)):
        if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
            raise BenchError(f"{name} must be an integer in {low}..{high}, got {value!r}")
    if isinstance(cfg.timeout, bool) or not isinstance(cfg.timeout, (int, float)) or not 0 < cfg.timeout < 1e7:
        raise BenchError(f"timeout must be a positive number of seconds, got {cfg.timeout!r}")
    if spec.arch != "llama" and cfg.seq_len > spec.max_positions:
        raise BenchError(f"{spec.name} has learned positions up to {spec.max_positions}; "
                         f"seq_len {cfg.seq_len} is longer")
    gpus = _cuda_count()
    if gpus:
        if cfg.nproc > gpus:
            raise BenchError(f"this machine has {gpus} GPU(s); cannot run {cfg.nproc} processes")
        return spec.name, "cuda"
    cores = os.cpu_count() or 1
    if cfg.nproc > max(2, cores):
        raise BenchError(f"this machine has {cores} CPU cores and no GPU; at most {max(2, cores)} "
                         f"processes, not {cfg.nproc}. Use `shardwise bench script` for a cluster.")
    # Each CPU process holds a full fp32 training state in the worst case (DDP): the calculator's
    # model states, params + grads + two AdamW moments (16 B/param, ZeRO paper sec. 3.1).
    need = cfg.nproc * model_states_bytes(spec, "fp32", "adamw")
    avail = _available_ram_bytes()
    if need > avail // 2:
        raise BenchError(
            f"{spec.name} ({spec.params_b:.2f}B parameters) is too large to run on this CPU: "
            f"{cfg.nproc} processes need about {need / 2**30:.1f} GiB of the {avail / 2**30:.1f} GiB "
            f"available. Use `shardwise bench simulate` for its memory, or `bench script` for a cluster.")
    if cfg.precision not in (None, "fp32", "bf16-mixed", "fp16-mixed", "bf16"):
        raise BenchError(f"unknown precision {cfg.precision!r}")
    return spec.name, "cpu"


@contextmanager
def run_lock(progress: ProgressFn | None = None):
    """One benchmark at a time on this machine (they would skew each other's timings)."""
    path = data_dir() / "bench-run.lock"
    with open(path, "w") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if progress:
                progress("waiting for another benchmark run to finish", 0.0)
            fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def worker_args(cfg: RunConfig, strategy: str, out: str) -> list[str]:
    args = ["-m", "bot.bench.worker", "--model", cfg.model, "--strategy", strategy,
            "--steps", str(cfg.steps), "--warmup", str(cfg.warmup), "--seq-len", str(cfg.seq_len),
            "--micro-batch", str(cfg.micro_batch), "--seed", str(cfg.seed), "--out", out]
    if cfg.precision:
        args += ["--precision", cfg.precision]
    if cfg.activation_checkpointing:
        args.append("--activation-checkpointing")
    return args


def _strategy_key(cfg: RunConfig, model: str, device: str, strategy: str) -> tuple[dict, str]:
    import torch

    config = {"model": model, "strategy": strategy, "nproc": cfg.nproc, "nodes": 1, "device": device,
              "seq_len": cfg.seq_len, "micro_batch": cfg.micro_batch,
              "precision": cfg.precision or ("bf16-mixed" if device == "cuda" else "fp32"),
              "activation_checkpointing": cfg.activation_checkpointing, "steps": cfg.steps,
              "warmup": cfg.warmup, "seed": cfg.seed, "optimizer": "adamw"}
    key = config_hash({"config": config, "torch": torch.__version__, "host": socket.gethostname()})
    return config, key


def _log_tails(workdir: Path, lines: int = 25) -> dict[int, str]:
    """Rank -> last lines of its stderr/stdout and error file (torchrun --log-dir layout)."""
    tails: dict[int, str] = {}
    for path in sorted(workdir.glob("rank*.error.txt")):
        rank = int(path.stem.split(".")[0][4:])
        tails[rank] = "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    for path in sorted(workdir.glob("logs/**/stderr.log")):
        try:
            rank = int(path.parent.name)
        except ValueError:
            continue
        if rank not in tails:
            text = path.read_text(errors="replace").splitlines()
            text = [t for t in text if "profiler_st" not in t]
            tails[rank] = "\n".join(text[-lines:])
    return tails


def _descendants(pid: int) -> list[int]:
    """Every live descendant of ``pid`` (from /proc). torchrun starts each rank in a session of
    its own, so killing torchrun's process group alone would not reach the ranks."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _signal_all(pids: list[int], sig: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def _is_our_rank(pid: int, workdir: Path) -> bool:
    """``pid`` is alive (not a zombie) and is a worker of this run (its command line names the
    run's directory), so a recycled pid is never signalled."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except (OSError, IndexError):
        return False
    return state != "Z" and "bot.bench.worker" in cmdline and str(workdir) in cmdline


def rank_pids(workdir: Path) -> dict[int, int]:
    """Rank -> pid from the pidfiles the workers write at start (``ranks/rank<N>.pid``)."""
    found = {}
    for path in (workdir / "ranks").glob("rank*.pid"):
        try:
            found[int(path.stem[4:])] = int(path.read_text().split()[0])
        except (OSError, ValueError, IndexError):
            continue
    return found


def live_ranks(workdir: Path) -> dict[int, int]:
    return {rank: pid for rank, pid in rank_pids(workdir).items() if _is_our_rank(pid, workdir)}


def launcher_pid(workdir: Path) -> int | None:
    """The pid of the torchrun launcher (``python -m torch.distributed.run``) of the run in
    ``workdir``, found in /proc (used by the kill tests and the reliability script)."""
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            text = cmdline.read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if text.split(" ")[1:3] == ["-m", "torch.distributed.run"] and str(workdir) in text:
            return int(cmdline.parent.name)
    return None


def _kill_group(proc: subprocess.Popen, workdir: Path | None = None) -> None:
    """SIGTERM torchrun's session and every rank, wait, then SIGKILL whatever is left. Ranks are
    found three ways: torchrun's descendants, their pidfiles (a rank whose launcher was killed is
    no one's descendant any more) and, failing all, their own PR_SET_PDEATHSIG."""
    ranks = set(_descendants(proc.pid))
    if workdir is not None:
        ranks |= set(live_ranks(workdir).values())
    try:
        os.killpg(proc.pid, signal.SIGTERM)  # torchrun forwards it to the ranks and exits
    except ProcessLookupError:
        pass
    _signal_all(sorted(ranks), signal.SIGTERM)
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        pass
    deadline = time.monotonic() + 5
    while workdir is not None and live_ranks(workdir) and time.monotonic() < deadline:
        time.sleep(0.1)
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    left = ranks | set(_descendants(proc.pid))
    if workdir is not None:
        left |= set(live_ranks(workdir).values())
    _signal_all(sorted(left), signal.SIGKILL)
    proc.wait()


@contextmanager
def _sigterm_raises():
    """While a run is under way, SIGTERM raises SystemExit here so the ranks get reaped (the
    default action would end this process and orphan them). Main thread only."""
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum, frame):
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _wait(proc: subprocess.Popen, timeout: float, strategy: str, workdir: Path,
          progress: ProgressFn | None, vanished: dict[int, float] | None = None) -> int:
    """torchrun's exit code; on timeout, Ctrl-C or any error every process is reaped first.
    ``vanished`` collects rank -> time for ranks that disappeared without finishing or writing an
    error (killed by a signal), to name the rank that died."""
    start = time.monotonic()
    seen: dict[int, int] = {}
    last_progress = -1.0
    try:
        while True:
            elapsed = time.monotonic() - start
            if elapsed > timeout:
                _kill_group(proc, workdir)
                tails = _log_tails(workdir)
                raise BenchError(f"{strategy}: timed out after {timeout:.0f} s; every process "
                                 f"was stopped (ranks with logs: {sorted(tails)})",
                                 rank=min(tails) if tails else None,
                                 log_tail=tails.get(min(tails), "") if tails else "")
            if progress and elapsed - last_progress >= 1.0:
                progress(f"{strategy}: running ({elapsed:.0f} s)", min(elapsed / timeout, 0.99))
                last_progress = elapsed
            if vanished is not None:
                _watch_ranks(workdir, seen, vanished)
            try:
                return proc.wait(timeout=0.2)
            except subprocess.TimeoutExpired:
                pass
    except BaseException:
        _kill_group(proc, workdir)  # Ctrl-C, SIGTERM or any error: leave nothing running
        raise


def _watch_ranks(workdir: Path, seen: dict[int, int], vanished: dict[int, float]) -> None:
    for rank, pid in rank_pids(workdir).items():
        seen.setdefault(rank, pid)
    for rank, pid in seen.items():
        if rank in vanished or _is_our_rank(pid, workdir):
            continue
        finished = (workdir / "ranks" / f"rank{rank}.exit").exists()
        errored = (workdir / f"rank{rank}.error.txt").exists()
        if not finished and not errored:
            vanished[rank] = time.time()


# A rank's error that only says a peer went away (gloo/NCCL): the peer is the cause, not this rank.
_PEER_LOST = ("Connection closed by peer", "Connection reset by peer", "ECONNRESET", "Broken pipe",
              "EPIPE", "Socket closed", "Connection refused", "NCCL communicator was aborted",
              "Timed out waiting", "DistNetworkError", "DistBackendError", "Timeout waiting for key")


_REPORT_ENTRY = re.compile(r"rank\s*:\s*(\d+)[^\n]*\n\s*exitcode\s*:\s*(-?\d+)")


def torchrun_report(workdir: Path) -> tuple[int | None, dict[int, int]]:
    """(root-cause rank, rank -> exit code) from torchrun's failure report in ``torchrun.log``."""
    try:
        text = (workdir / "torchrun.log").read_text(errors="replace")[-20_000:]
    except OSError:
        return None, {}
    codes = {int(r): int(c) for r, c in _REPORT_ENTRY.findall(text)}
    root = None
    if "Root Cause" in text:
        found = _REPORT_ENTRY.search(text.split("Root Cause", 1)[1])
        root = int(found.group(1)) if found else None
    return root, codes


def failed_rank(workdir: Path, vanished: dict[int, float]) -> tuple[int | None, str]:
    """(rank, how) of the rank that caused a failed run: the first rank that raised an error of
    its own; else a rank killed by a signal other than torchrun's own SIGTERM clean-up (from
    torchrun's report); else torchrun's root cause; else the first rank that vanished; else the
    first rank that only lost a peer; else the lowest rank with a log."""
    errors = sorted(workdir.glob("rank*.error.txt"), key=lambda p: p.stat().st_mtime_ns)
    own: list[int] = []
    peer_lost: list[int] = []
    for path in errors:
        rank = int(path.stem.split(".")[0][4:])
        text = path.read_text(errors="replace")
        (peer_lost if any(marker in text for marker in _PEER_LOST) else own).append(rank)
    if own:
        return own[0], "raised an error"
    root, codes = torchrun_report(workdir)
    killed = sorted(r for r, c in codes.items() if c < 0 and c != -signal.SIGTERM)
    if killed:
        sig = -codes[killed[0]]
        return killed[0], f"was killed by signal {sig} ({signal.Signals(sig).name})"
    if root is not None:
        return root, f"exited with code {codes.get(root)}"
    if vanished:
        return min(vanished, key=vanished.__getitem__), "was killed (no error of its own)"
    if peer_lost:
        return peer_lost[0], "lost its peers"
    tails = _log_tails(workdir)
    return (min(tails) if tails else None), "failed"


# torchrun's own words when it is sent SIGTERM/SIGINT/SIGHUP (torch/distributed/elastic/agent/server/api.py,
# multiprocessing/api.py): the launcher was stopped from outside and stopped the ranks itself.
_LAUNCHER_SIGNAL = re.compile(r"Received (\d+) death signal|Process \d+ got signal: (\d+)")


def launcher_signal(workdir: Path) -> int | None:
    """The signal the torchrun launcher itself received (from its log), or None."""
    try:
        text = (workdir / "torchrun.log").read_text(errors="replace")[-50_000:]
    except OSError:
        return None
    found = _LAUNCHER_SIGNAL.search(text)
    return int(found.group(1) or found.group(2)) if found else None


def _signal_name(number: int) -> str:
    return signal.Signals(number).name if number in signal.Signals._value2member_map_ else str(number)


def _torchrun_tail(workdir: Path, lines: int = 25) -> str:
    try:
        return "\n".join((workdir / "torchrun.log").read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def launch(cfg: RunConfig, strategy: str, workdir: Path, progress: ProgressFn | None = None) -> dict:
    """Run one strategy under torchrun; returns the worker's result or raises ``BenchError``."""
    workdir.mkdir(parents=True, exist_ok=True)
    out = workdir / f"{strategy}.json"
    port = free_port()
    # The launcher dies with this process (PR_SET_PDEATHSIG through a tiny exec shim: no
    # preexec_fn, which is unsafe with threads), and each rank dies with the launcher (worker.py).
    cmd = [sys.executable, "-c", _DIE_WITH_PARENT_EXEC, str(os.getpid()),
           sys.executable, "-m", "torch.distributed.run", "--nnodes", "1",
           "--nproc-per-node", str(cfg.nproc), "--rdzv-backend", "c10d",
           "--rdzv-endpoint", f"127.0.0.1:{port}", "--max-restarts", "0",
           "--log-dir", str(workdir / "logs"), "--redirects", "3",
           *worker_args(cfg, strategy, str(out))]
    env = dict(os.environ)
    package_root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = package_root + os.pathsep + env.get("PYTHONPATH", "")
    env.setdefault("GLOO_SOCKET_IFNAME", "lo")  # keep gloo's traffic on loopback
    env["OMP_NUM_THREADS"] = "1"
    with _sigterm_raises():
        with open(workdir / "torchrun.log", "w") as log:
            proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env,
                                    start_new_session=True, cwd=workdir)
        vanished: dict[int, float] = {}
        code = _wait(proc, cfg.timeout, strategy, workdir, progress, vanished)
    _kill_group(proc, workdir)  # torchrun exited (or was killed): reap every rank it left
    if code != 0 or not out.exists():
        tails = _log_tails(workdir)
        rank, how = failed_rank(workdir, vanished)
        stopped_by = launcher_signal(workdir)
        if code < 0 and how not in ("raised an error",):  # torchrun itself was killed first
            stopped_by = -code
        if stopped_by is not None:  # the launcher was stopped from outside: no rank failed
            verb = "killed" if stopped_by == signal.SIGKILL else "stopped"
            raise BenchError(f"{strategy}: the torchrun launcher was {verb} ({_signal_name(stopped_by)}) from "
                             "outside before the run finished; no rank failed, every rank was stopped "
                             f"with it (ranks {sorted(set(tails) | set(vanished) | set(rank_pids(workdir)))}); "
                             f"logs in {workdir}", rank=None, log_tail=_torchrun_tail(workdir))
        tail = tails.get(rank, "") if rank is not None else ""
        log_file = workdir / "logs"
        if rank is not None:
            log_file = next(iter(sorted(workdir.glob(f"logs/**/{rank}/stderr.log"))), log_file)
        if rank is not None and not tail:  # its own stderr is empty: say so (torchrun's summary is not its log)
            tail = f"(rank {rank} wrote nothing to its stderr before it stopped)"
        elif rank is None:
            tail = _torchrun_tail(workdir)
        others = sorted(r for r in set(tails) | set(vanished) if r != rank)
        raise BenchError(f"{strategy}: rank {rank if rank is not None else '?'} failed: it {how} "
                         f"(torchrun exit code {code})"
                         + (f"; ranks {others} stopped with it" if others else "")
                         + f"; its log: {log_file}", rank=rank, log_tail=tail)
    result = json.loads(out.read_text())
    if result.get("schema") != RESULT_SCHEMA or result.get("sha256") != content_hash(result):
        raise BenchError(f"{strategy}: the worker wrote an invalid result file")
    return result


def compare_losses(results: dict[str, dict], precision: str) -> dict:
    """Every strategy's loss curve against the first's; relative difference per step."""
    names = list(results)
    reference = results[names[0]]["figures"]["losses"]
    tolerance = LOSS_TOLERANCE.get(precision, 2e-2)
    worst, per = 0.0, {}
    for name in names[1:]:
        losses = results[name]["figures"]["losses"]
        if len(losses) != len(reference):
            diff = float("inf")
        else:
            diff = max(abs(a - b) / max(abs(a), 1e-12) for a, b in zip(reference, losses, strict=True))
        per[name] = diff
        worst = max(worst, diff)
    return {"reference": names[0], "max_rel_diff": per, "tolerance": tolerance, "ok": worst <= tolerance}


def run_benchmark(cfg: RunConfig, store: ResultStore | None = None, force: bool = False,
                  progress: ProgressFn | None = None) -> RunReport:
    """Run (or serve from the store) every strategy in ``cfg``; raises ``BenchError`` on failure."""
    model, device = check_config(cfg)
    cfg = RunConfig(**{**asdict(cfg), "model": model, "strategies": tuple(dict.fromkeys(cfg.strategies))})
    store = store or ResultStore()
    keys = {s: _strategy_key(cfg, model, device, s) for s in cfg.strategies}
    results: dict[str, dict] = {}
    run_ids: dict[str, str] = {}
    cached: list[str] = []
    if not force:
        for strategy, (_, key) in keys.items():
            found = store.find_by_hash("run", key)
            if found is not None:
                results[strategy] = {"config": found.config, "figures": found.figures,
                                     "hardware": found.hardware, "torch_version": found.torch_version}
                run_ids[strategy] = found.id
                cached.append(strategy)
    todo = [s for s in cfg.strategies if s not in results]
    fresh: dict[str, dict] = {}
    if todo:
        with run_lock(progress):
            stamp = time.strftime("%Y%m%d-%H%M%S") + f"-{os.getpid()}"
            for n, strategy in enumerate(todo):
                if progress:
                    progress(f"{strategy}: starting {cfg.nproc} processes", n / len(todo))
                workdir = data_dir() / "bench-runs" / stamp / strategy
                try:
                    fresh[strategy] = launch(cfg, strategy, workdir, progress)
                except BenchError as err:
                    config, key = keys[strategy]
                    store.add("run", config, {}, status="failed", error=str(err).split("\n")[0],
                              hash_=key, torch_version=None, source="bench run")
                    raise
                _remove_tree(workdir)
            _remove_empty(workdir.parent)
    results.update(fresh)
    ordered = {s: results[s] for s in cfg.strategies}
    precision = keys[cfg.strategies[0]][0]["precision"]
    check = compare_losses(ordered, precision) if len(ordered) > 1 else {"ok": True, "reference": None}
    for strategy, result in fresh.items():
        config, key = keys[strategy]
        figures = {**result["figures"], "loss_check": check}
        status = "ok" if check["ok"] else "failed"
        error = None if check["ok"] else f"loss differs from {check['reference']} beyond tolerance"
        run_ids[strategy] = store.add(
            "run", config, figures, status=status, error=error, hardware=result["hardware"],
            torch_version=result["torch_version"], hash_=key, source="bench run",
            started_at=_iso_to_ts(result.get("started_at")), finished_at=_iso_to_ts(result.get("finished_at")))
    if progress:
        progress("done", 1.0)
    report = RunReport(run_ids=run_ids, results=ordered, loss_check=check, cached=cached)
    if not check["ok"]:
        raise BenchError(f"loss curves differ beyond tolerance {check['tolerance']}: "
                         f"{check['max_rel_diff']} (stored as failed: {run_ids})")
    return report


def _iso_to_ts(text: str | None) -> float | None:
    import datetime

    return datetime.datetime.fromisoformat(text).timestamp() if text else None


def _remove_empty(path: Path) -> None:
    try:
        path.rmdir()  # only succeeds when empty: failed runs keep their logs
    except OSError:
        pass


def _remove_tree(path: Path) -> None:
    import shutil

    shutil.rmtree(path, ignore_errors=True)
