"""Benchmarks on the user's own cluster: write torchrun / SLURM launchers, import their results.

``bench script`` writes a ``torchrun`` command line (single node, or multi-node with c10d
rendezvous) and an ``sbatch`` file; both run ``python -m bot.bench.worker`` from the installed
package, one strategy after another, and each run writes a result JSON. ``bench import FILE``
checks such a file (schema, content hash, types and ranges) and stores it, citable by its id.

The content hash catches files edited or truncated after the run; it is not a signature (anyone
can recompute it), so an imported run is labelled ``import`` with its source file name.
"""

from __future__ import annotations

import json
import math
import shlex
from dataclasses import dataclass
from pathlib import Path

from bot.bench.store import ResultStore
from bot.bench.worker import RESULT_SCHEMA, WORKER_STRATEGIES, content_hash
from bot.catalog import UnknownNameError, lookup_model

MAX_RESULT_BYTES = 5 * 2**20


class ImportRejected(ValueError):
    """A result file that cannot be stored; the message is the reason."""


@dataclass(frozen=True)
class ScriptConfig:
    model: str
    strategies: tuple[str, ...] = ("ddp", "fsdp_full_shard")
    nodes: int = 1
    gpus_per_node: int = 8
    steps: int = 20
    warmup: int = 3
    seq_len: int = 2048
    micro_batch: int = 1
    precision: str = "bf16-mixed"
    activation_checkpointing: bool = False
    python: str = "python"
    results_dir: str = "shardwise-results"
    port: int = 29500
    time_limit: str = "01:00:00"


def check_script_config(cfg: ScriptConfig) -> ScriptConfig:
    try:
        spec = lookup_model(cfg.model)
    except UnknownNameError as err:
        raise ValueError(str(err)) from None
    bad = [s for s in cfg.strategies if s not in WORKER_STRATEGIES]
    if bad or not cfg.strategies:
        raise ValueError(f"unknown strategy {', '.join(bad) or '(none)'}; choose from {', '.join(WORKER_STRATEGIES)}")
    for name, low, high in (("nodes", 1, 20_000), ("gpus_per_node", 1, 64), ("steps", 1, 10_000),
                            ("warmup", 2, 10_000), ("seq_len", 2, 1 << 21), ("micro_batch", 1, 65_536),
                            ("port", 1024, 65_535)):
        value = getattr(cfg, name)
        if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
            raise ValueError(f"{name} must be an integer in {low}..{high}, got {value!r}")
    if "fsdp_hybrid_shard" in cfg.strategies and cfg.nodes < 2:
        raise ValueError("fsdp_hybrid_shard replicates across nodes: give --nodes 2 or more")
    if spec.arch != "llama" and cfg.seq_len > spec.max_positions:
        raise ValueError(f"{spec.name} has learned positions up to {spec.max_positions}")
    return cfg


def _worker_args(cfg: ScriptConfig, strategy: str, out: str) -> list[str]:
    args = ["-m", "bot.bench.worker", "--model", lookup_model(cfg.model).name, "--strategy", strategy,
            "--steps", str(cfg.steps), "--warmup", str(cfg.warmup), "--seq-len", str(cfg.seq_len),
            "--micro-batch", str(cfg.micro_batch), "--precision", cfg.precision, "--out", out]
    if cfg.activation_checkpointing:
        args.append("--activation-checkpointing")
    return args


def torchrun_commands(cfg: ScriptConfig) -> str:
    """A shell snippet: one torchrun per strategy. Multi-node: run it on every node with
    MASTER_ADDR set to the first node's address (c10d rendezvous)."""
    cfg = check_script_config(cfg)
    lines = ["#!/usr/bin/env bash", "# shardwise benchmark: run from an environment where shardwise is installed.",
             "set -euo pipefail", f"mkdir -p {shlex.quote(cfg.results_dir)}"]
    if cfg.nodes > 1:
        lines += [f"# Run this same script on each of the {cfg.nodes} nodes, with MASTER_ADDR set to",
                  "# the first node's hostname or IP (c10d rendezvous).",
                  ': "${MASTER_ADDR:?set MASTER_ADDR to the first node}"',
                  'RDZV_ID="${RDZV_ID:-shardwise-$(date +%s)}"']
        endpoint = f"$MASTER_ADDR:{cfg.port}"
    else:
        endpoint = f"127.0.0.1:{cfg.port}"
    for strategy in cfg.strategies:
        out = f"{cfg.results_dir}/{strategy}.json"
        rdzv = [f"--rdzv-id=\"$RDZV_ID-{strategy}\""] if cfg.nodes > 1 else []
        cmd = [shlex.quote(cfg.python), "-m", "torch.distributed.run", f"--nnodes={cfg.nodes}",
               f"--nproc-per-node={cfg.gpus_per_node}", *rdzv, "--rdzv-backend=c10d",
               f"--rdzv-endpoint={endpoint}",
               *[shlex.quote(a) for a in _worker_args(cfg, strategy, out)]]
        lines.append(" ".join(cmd))
    lines.append(f"echo 'then: shardwise bench import {cfg.results_dir}/*.json'")
    return "\n".join(lines) + "\n"


def sbatch_file(cfg: ScriptConfig) -> str:
    """A SLURM batch file: one task per node, each starting torchrun (c10d rendezvous)."""
    cfg = check_script_config(cfg)
    lines = [
        "#!/usr/bin/env bash",
        "#SBATCH --job-name=shardwise-bench",
        f"#SBATCH --nodes={cfg.nodes}",
        "#SBATCH --ntasks-per-node=1",
        f"#SBATCH --gpus-per-node={cfg.gpus_per_node}",
        f"#SBATCH --time={cfg.time_limit}",
        "#SBATCH --output=shardwise-bench-%j.log",
        "# Submit with: sbatch shardwise-bench.sbatch ; then: shardwise bench import "
        f"{cfg.results_dir}/*.json",
        "set -euo pipefail",
        f"mkdir -p {shlex.quote(cfg.results_dir)}",
        'head_node=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)',
    ]
    for strategy in cfg.strategies:
        out = f"{cfg.results_dir}/$SLURM_JOB_ID-{strategy}.json"
        args = " ".join(shlex.quote(a) if "$" not in a else f'"{a}"' for a in _worker_args(cfg, strategy, out))
        lines.append(
            f"srun {shlex.quote(cfg.python)} -m torch.distributed.run --nnodes=\"$SLURM_JOB_NUM_NODES\" "
            f"--nproc-per-node={cfg.gpus_per_node} --rdzv-id=\"$SLURM_JOB_ID-{strategy}\" "
            f"--rdzv-backend=c10d --rdzv-endpoint=\"$head_node:{cfg.port}\" {args}")
    return "\n".join(lines) + "\n"


def write_scripts(cfg: ScriptConfig, out_dir: str | Path) -> list[Path]:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    run_sh, sbatch = out / "shardwise-bench.sh", out / "shardwise-bench.sbatch"
    run_sh.write_text(torchrun_commands(cfg))
    sbatch.write_text(sbatch_file(cfg))
    run_sh.chmod(0o755)
    return [run_sh, sbatch]


# --------------------------------------------------------------------------------------------
# Import
# --------------------------------------------------------------------------------------------


def _number(value, name: str, low: float = 0.0, allow_zero: bool = True) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ImportRejected(f"{name} must be a finite number, got {value!r}")
    if value < low or (not allow_zero and value == 0):
        raise ImportRejected(f"{name} must be {'>' if not allow_zero else '>='} {low:g}, got {value!r}")
    return float(value)


def validate_result(data) -> dict:
    """Check a worker result dict; returns it or raises ``ImportRejected`` with the reason."""
    if not isinstance(data, dict):
        raise ImportRejected("not a JSON object")
    if data.get("schema") != RESULT_SCHEMA:
        raise ImportRejected(f"unknown schema {data.get('schema')!r}; expected {RESULT_SCHEMA!r}")
    if not isinstance(data.get("sha256"), str):
        raise ImportRejected("no content hash (sha256): not written by bot.bench.worker")
    if data["sha256"] != content_hash(data):
        raise ImportRejected("content hash mismatch: the file was changed after the run")
    if data.get("status") != "ok":
        raise ImportRejected(f"status is {data.get('status')!r}, not 'ok'")
    config, figures, hardware = data.get("config"), data.get("figures"), data.get("hardware")
    if not isinstance(config, dict) or not isinstance(figures, dict) or not isinstance(hardware, dict):
        raise ImportRejected("config, figures and hardware must be JSON objects")
    try:
        config["model"] = lookup_model(str(config.get("model"))).name
    except UnknownNameError as err:
        raise ImportRejected(str(err)) from None
    if config.get("strategy") not in WORKER_STRATEGIES:
        raise ImportRejected(f"unknown strategy {config.get('strategy')!r}")
    nproc = config.get("nproc")
    if isinstance(nproc, bool) or not isinstance(nproc, int) or not 1 <= nproc <= 1_000_000:
        raise ImportRejected(f"nproc must be a positive integer, got {nproc!r}")
    _number(figures.get("step_seconds"), "figures.step_seconds", allow_zero=False)
    _number(figures.get("tokens_per_s"), "figures.tokens_per_s", allow_zero=False)
    _number(figures.get("peak_gib"), "figures.peak_gib")
    if figures["peak_gib"] > 10_000:
        raise ImportRejected(f"figures.peak_gib {figures['peak_gib']} is not a plausible per-rank figure")
    losses = figures.get("losses")
    if not isinstance(losses, list) or not losses:
        raise ImportRejected("figures.losses must be a non-empty list")
    for n, loss in enumerate(losses):
        _number(loss, f"figures.losses[{n}]")
    return data


def import_result(path: str | Path, store: ResultStore | None = None) -> tuple[str, bool]:
    """Validate and store a result file; returns ``(run_id, already_stored)``."""
    path = Path(path)
    try:
        size = path.stat().st_size
    except OSError as err:
        raise ImportRejected(f"cannot read {path}: {err.strerror}") from None
    if size > MAX_RESULT_BYTES:
        raise ImportRejected(f"{path.name} is {size} bytes; a result file is at most {MAX_RESULT_BYTES}")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise ImportRejected("not UTF-8 text") from None
    except json.JSONDecodeError as err:
        raise ImportRejected(f"not valid JSON ({err.msg} at line {err.lineno})") from None
    data = validate_result(data)
    store = store or ResultStore()
    existing = store.find_by_hash("import", data["sha256"])
    if existing is not None:
        return existing.id, True
    from bot.bench.run import _iso_to_ts

    try:
        started, finished = _iso_to_ts(data.get("started_at")), _iso_to_ts(data.get("finished_at"))
    except (TypeError, ValueError):
        raise ImportRejected("started_at/finished_at are not ISO timestamps") from None
    run_id = store.add("import", data["config"], data["figures"], hardware=data["hardware"],
                       torch_version=str(data.get("torch_version", "")) or None, started_at=started,
                       finished_at=finished, source=path.name, hash_=data["sha256"])
    return run_id, False
