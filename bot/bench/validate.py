"""The validation kit: real training steps for a grid of setups, beside the calculator and the simulator.

    shardwise bench validate --config grid.toml      # or grid.json

For every point of the grid (model, GPU count, sequence length, micro-batch, checkpointing) and
every strategy, this runs the real training step with ``bot.bench.run.run_benchmark`` (torchrun,
NCCL on CUDA or ROCm GPUs, gloo on CPU; the same worker, result store and loss check as
``bench run``), so the store records ``torch.cuda.max_memory_allocated``,
``max_memory_reserved``, tokens/s and the torch/CUDA/NCCL versions. Beside each measurement it
prints what the calculator (``bot.calc``: allocated and reserved peak, tokens/s per GPU) and the
simulator (``bot.bench.simulate``: the exact allocated peak under fake tensors) predict for the
same setup, and the errors. Nothing here is timed in tests: on CPU the figures validate the
plumbing, on GPUs they validate the models (docs/calc.md, "Validation kit").

The grid file (TOML or JSON) takes scalars or lists; lists multiply:

    model = "llama3.1-8b"
    strategies = ["ddp", "fsdp_full_shard"]
    nproc = 8
    seq_len = [2048, 4096]
    micro_batch = [1, 2]
    activation_checkpointing = [false, true]
    precision = "bf16-mixed"   # optional; default bf16-mixed on GPU, fp32 on CPU
    steps = 10
    warmup = 3
"""

from __future__ import annotations

import itertools
import json
import tomllib
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from bot.bench.run import RunConfig, check_config, run_benchmark
from bot.bench.store import ResultStore
from bot.core.errors import UserError

GRID_KEYS = {"model", "strategies", "nproc", "seq_len", "micro_batch", "activation_checkpointing",
             "precision", "steps", "warmup", "timeout", "simulate"}
LIST_KEYS = ("seq_len", "micro_batch", "activation_checkpointing")
# A CPU "device" has no card size; the calculator gets this much so that "fits" is not the question.
CPU_MEMORY_GB = 1024.0


class GridError(UserError, ValueError):
    """A grid file that cannot be read or holds a bad value; the message names the key."""


@dataclass(frozen=True)
class Grid:
    model: str = "tiny"
    strategies: tuple[str, ...] = ("ddp", "fsdp_full_shard")
    nproc: int = 2
    seq_len: tuple[int, ...] = (256,)
    micro_batch: tuple[int, ...] = (2,)
    activation_checkpointing: tuple[bool, ...] = (False,)
    precision: str | None = None
    steps: int = 5
    warmup: int = 2
    timeout: float = 600.0
    simulate: bool = True  # also run the fake-tensor simulator for each point

    def points(self) -> list[RunConfig]:
        """One RunConfig per combination of the list-valued keys."""
        return [RunConfig(model=self.model, strategies=self.strategies, nproc=self.nproc, steps=self.steps,
                          warmup=self.warmup, seq_len=seq, micro_batch=mb, precision=self.precision,
                          activation_checkpointing=ckpt, timeout=self.timeout)
                for seq, mb, ckpt in itertools.product(self.seq_len, self.micro_batch,
                                                       self.activation_checkpointing)]


def load_grid(path: str | Path) -> Grid:
    """Read a TOML or JSON grid file; raises GridError with the offending key."""
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as err:
        raise GridError(f"cannot read {path}: {err.strerror or err}") from None
    try:
        data = json.loads(text) if path.suffix == ".json" else tomllib.loads(text)
    except (json.JSONDecodeError, tomllib.TOMLDecodeError) as err:
        raise GridError(f"{path}: not valid {'JSON' if path.suffix == '.json' else 'TOML'}: {err}") from None
    if not isinstance(data, dict):
        raise GridError(f"{path}: expected a table of keys, got {type(data).__name__}")
    unknown = sorted(set(data) - GRID_KEYS)
    if unknown:
        raise GridError(f"{path}: unknown key(s) {', '.join(unknown)}; allowed: {', '.join(sorted(GRID_KEYS))}")
    values: dict = {}
    for key, value in data.items():
        if key in LIST_KEYS or key == "strategies":
            items = value if isinstance(value, list) else [value]
            if not items:
                raise GridError(f"{path}: {key} is an empty list")
            kind = bool if key == "activation_checkpointing" else (str if key == "strategies" else int)
            if not all(isinstance(v, kind) and (kind is bool or not isinstance(v, bool)) for v in items):
                raise GridError(f"{path}: {key} must be {kind.__name__} value(s), got {value!r}")
            values[key] = tuple(items)
        else:
            values[key] = value
    grid = Grid(**values)
    for point in grid.points():
        try:
            check_config(point)
        except Exception as err:  # BenchError: the same refusal `bench run` gives, before anything runs
            raise GridError(f"{path}: {err}") from None
    return grid


@dataclass
class Comparison:
    """One strategy at one grid point: measured figures and both predictions."""

    strategy: str
    setup: dict  # model, nproc, seq_len, micro_batch, precision, activation_checkpointing
    run_id: str
    measured: dict  # allocated_gib, reserved_gib (None on CPU), tokens_per_s_per_gpu, step_seconds
    versions: dict  # torch, cuda, nccl (what the worker recorded)
    calc: dict = field(default_factory=dict)  # allocated_gib, reserved_gib, tokens_per_s_per_gpu
    simulate: dict = field(default_factory=dict)  # peak_gib, run_id
    notes: list[str] = field(default_factory=list)

    def errors(self) -> dict[str, float]:
        """Relative errors (%) of each prediction against the measurement, where both exist."""
        out = {}
        pairs = [("calc_allocated", self.calc.get("allocated_gib"), self.measured.get("allocated_gib")),
                 ("calc_reserved", self.calc.get("reserved_gib"), self.measured.get("reserved_gib")),
                 ("simulate_allocated", self.simulate.get("peak_gib"), self.measured.get("allocated_gib")),
                 ("calc_tokens_per_s", self.calc.get("tokens_per_s_per_gpu"),
                  self.measured.get("tokens_per_s_per_gpu"))]
        for name, predicted, measured in pairs:
            if predicted is not None and measured:
                out[name] = 100.0 * (predicted - measured) / measured
        return out

    def to_dict(self) -> dict:
        return {**asdict(self), "errors_pct": self.errors()}


def _calc_for(point: RunConfig, strategy: str, result: dict) -> tuple[dict, list[str]]:
    """The calculator's figures for the setup the worker actually ran."""
    from bot.calc import estimate_setup
    from bot.catalog import UnknownNameError, lookup_gpu
    from bot.core.setup import SetupError, TrainingSetup

    config, hardware = result["config"], result.get("hardware", {})
    cuda = config.get("device") == "cuda"
    notes = []
    gpu = None
    if cuda and hardware.get("gpu"):
        try:
            gpu = lookup_gpu(hardware["gpu"]).name
        except UnknownNameError:
            notes.append(f"GPU {hardware['gpu']!r} is not in the catalog: its memory size is used, "
                         "peak FLOP/s assumed")
    memory = None if gpu else (hardware.get("gpu_memory_gib") if cuda else CPU_MEMORY_GB)
    setup = TrainingSetup(
        model=config["model"], gpu=gpu, gpu_memory_gb=memory, gpu_count=config["nproc"],
        nodes=config.get("nodes", 1), gpus_per_node=config["nproc"] // max(1, config.get("nodes", 1)),
        inter_node_link="infiniband" if config.get("nodes", 1) > 1 else None,
        precision=config["precision"], optimizer="adamw", seq_len=config["seq_len"],
        micro_batch=config["micro_batch"], activation_checkpointing=config["activation_checkpointing"],
        # torch.optim.AdamW with neither foreach nor fused: foreach on CUDA, the for-loop on CPU
        optimizer_impl="foreach" if cuda else "forloop",
    )
    try:
        est = estimate_setup(setup)
    except SetupError as err:
        return {}, notes + [f"calculator refused the setup: {err}"]
    mem = est.memory[strategy]
    out = {"allocated_gib": mem.total_gib, "reserved_gib": mem.reserved_gib}
    if cuda:
        out["tokens_per_s_per_gpu"] = est.throughput[strategy].tokens_per_s_per_gpu
    else:
        notes.append("CPU run: the calculator's time model is for GPUs, so no tokens/s prediction")
    return out, notes


def _simulate_for(point: RunConfig, strategy: str, result: dict, store: ResultStore) -> tuple[dict, list[str]]:
    from bot.bench.simulate import SimConfig, SimError, simulate_cached

    config = result["config"]
    cfg = SimConfig(model=config["model"], gpu_count=config["nproc"], strategy=strategy,
                    gpus_per_node=config["nproc"] // max(1, config.get("nodes", 1)),
                    seq_len=config["seq_len"], micro_batch=config["micro_batch"], precision=config["precision"],
                    activation_checkpointing=config["activation_checkpointing"], optimizer="adamw")
    try:
        run_id, sim = simulate_cached(cfg, store=store)
    except SimError as err:
        return {}, [f"simulator refused the setup: {err}"]
    return {"peak_gib": sim.peak_gib, "run_id": run_id}, []


ProgressFn = Callable[[str, float], None]


def validate(grid: Grid, store: ResultStore | None = None, force: bool = False,
             progress: ProgressFn | None = None) -> list[Comparison]:
    """Run every grid point (``run_benchmark``: stored, loss-checked) and compare each strategy's
    measurement with the calculator and the simulator."""
    store = store or ResultStore()
    rows: list[Comparison] = []
    points = grid.points()
    for n, point in enumerate(points):
        if progress:
            progress(f"grid point {n + 1}/{len(points)}: seq {point.seq_len}, micro-batch {point.micro_batch}"
                     f"{', checkpointing' if point.activation_checkpointing else ''}", n / len(points))
        report = run_benchmark(point, store=store, force=force)
        for strategy, result in report.results.items():
            figures, config, hardware = result["figures"], result["config"], result.get("hardware", {})
            row = Comparison(
                strategy=strategy,
                setup={k: config[k] for k in ("model", "nproc", "seq_len", "micro_batch", "precision",
                                              "activation_checkpointing")},
                run_id=report.run_ids[strategy],
                measured={"allocated_gib": figures["peak_gib"], "reserved_gib": figures.get("peak_reserved_gib"),
                          "tokens_per_s_per_gpu": figures["tokens_per_s"] / config["nproc"],
                          "step_seconds": figures["step_seconds"], "peak_source": figures.get("peak_source")},
                versions={"torch": result.get("torch_version"), "cuda": hardware.get("cuda"),
                          "nccl": hardware.get("nccl"), "device": hardware.get("gpu") or hardware.get("cpu")},
            )
            row.calc, notes = _calc_for(point, strategy, result)
            row.notes += notes
            if grid.simulate:
                row.simulate, notes = _simulate_for(point, strategy, result, store)
                row.notes += notes
            rows.append(row)
    if progress:
        progress("done", 1.0)
    return rows


def _fmt(value, spec: str = ".3f") -> str:
    return "-" if value is None else format(value, spec)


def format_table(rows: list[Comparison]) -> str:
    """Measured beside predicted, one line per strategy and grid point."""
    head = (f"{'strategy':<24} {'seq':>5} {'mb':>3} {'ckpt':>4}  {'alloc':>7} {'resvd':>7} | {'calc':>7} "
            f"{'c.resv':>7} {'sim':>7} | {'tok/s/GPU':>9} {'calc':>9}  run")
    lines = [head, "-" * len(head)]
    for r in rows:
        m, c, s = r.measured, r.calc, r.simulate
        lines.append(
            f"{r.strategy:<24} {r.setup['seq_len']:>5} {r.setup['micro_batch']:>3} "
            f"{'yes' if r.setup['activation_checkpointing'] else 'no':>4}  {_fmt(m['allocated_gib']):>7} "
            f"{_fmt(m.get('reserved_gib')):>7} | {_fmt(c.get('allocated_gib')):>7} {_fmt(c.get('reserved_gib')):>7} "
            f"{_fmt(s.get('peak_gib')):>7} | {_fmt(m['tokens_per_s_per_gpu'], '.0f'):>9} "
            f"{_fmt(c.get('tokens_per_s_per_gpu'), '.0f'):>9}  {r.run_id}")
    if rows:
        v = rows[0].versions
        lines.append(f"torch {v.get('torch')}, CUDA {v.get('cuda') or '-'}, NCCL {v.get('nccl') or '-'} on "
                     f"{v.get('device')}; memory in GiB per rank (alloc = max_memory_allocated, resvd = "
                     "max_memory_reserved; on CPU the memory tracker's peak and no reserved figure)")
    for note in dict.fromkeys(n for r in rows for n in r.notes):
        lines.append(f"note: {note}")
    return "\n".join(lines)
