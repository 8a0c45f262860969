"""``shardwise bench``: simulate, run, script, import, list, show.

Every result printed carries its store id (``run-...``), the id a ``bench`` citation uses.
"""

from __future__ import annotations

import json
import sys
from contextlib import contextmanager

import click

STRATEGY_HELP = "comma-separated: ddp, fsdp_full_shard, fsdp_shard_grad_op, fsdp_hybrid_shard, fsdp_full_shard_offload, or all"


def _strategies(text: str, option: str = "--strategies") -> tuple[str, ...]:
    """The strategy list of an option; empty or unknown names are a usage error (exit 2)."""
    from bot.bench.simulate import STRATEGIES

    names = tuple(s.strip() for s in text.split(",") if s.strip())
    if names == ("all",):
        return STRATEGIES
    if not names:
        raise click.BadParameter("give at least one strategy (" + STRATEGY_HELP + ")", param_hint=option)
    unknown = [n for n in names if n not in STRATEGIES]
    if unknown:
        raise click.BadParameter(f"unknown strategy {', '.join(map(repr, unknown))}; "
                                 f"choose from {', '.join(STRATEGIES)} or all", param_hint=option)
    return names


def _bad_value(err: Exception) -> click.UsageError:
    """A refused value: exit 2 with the reason, as ``calc`` and ``search`` do (1 means it failed
    while running)."""
    return click.UsageError(str(err).split("\n", 1)[0])


DEFAULT_SEQ_LEN = 2048
SEQ_LEN_HELP = "tokens per sequence [default: 2048, or the model's learned-position limit if shorter (GPT-2: 1024)]"


def _seq_len(model: str, seq_len: int | None) -> int:
    """The stated --seq-len, else 2048 capped at a learned-position table (GPT-2/OPT), so the
    plain ``bench simulate --model gpt2`` works instead of refusing its own default."""
    if seq_len is not None:
        return seq_len
    from bot.catalog import UnknownNameError, lookup_model

    try:
        spec = lookup_model(model)
    except UnknownNameError:
        return DEFAULT_SEQ_LEN  # the config check reports the unknown name
    return DEFAULT_SEQ_LEN if spec.arch == "llama" else min(DEFAULT_SEQ_LEN, spec.max_positions)


@contextmanager
def _progress(enabled: bool):
    """A rich progress bar on stderr (never on stdout, which may carry --json)."""
    if not enabled:
        yield None
        return
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn("{task.description}"), BarColumn(), TimeElapsedColumn(),
                  console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task("starting", total=1.0)
        yield lambda message, fraction: bar.update(task, description=message, completed=fraction)


@click.group()
def bench() -> None:
    """Simulate exact per-GPU memory, run real DDP/FSDP benchmarks, script cluster runs."""


@bench.command()
@click.option("--model", default=None, help="catalog model (llama2-7b, gpt2, tiny, or a size like 1b)")
@click.option("--config", "config_source", default=None,
              help="a Hugging Face config.json instead of --model: file, folder, or Hub id (built with transformers)")
@click.option("--gpus", "gpu_count", type=int, required=True, help="number of GPUs (world size)")
@click.option("--strategy", "strategy", default="fsdp_full_shard", show_default=True, help=STRATEGY_HELP)
@click.option("--gpus-per-node", type=int, default=None, help="node size for HSDP (default min(8, gpus))")
@click.option("--seq-len", type=int, default=None, help=SEQ_LEN_HELP)
@click.option("--micro-batch", type=int, default=1, show_default=True)
@click.option("--precision", default="bf16-mixed", show_default=True,
              type=click.Choice(["bf16-mixed", "fp16-mixed", "bf16", "fp32"]))
@click.option("--activation-checkpointing/--no-activation-checkpointing", default=False)
@click.option("--optimizer", default="adamw", show_default=True, type=click.Choice(["adamw", "sgd"]))
@click.option("--force", is_flag=True, help="simulate again even if the store has this config")
@click.option("--json", "as_json", is_flag=True, help="print JSON")
def simulate(model, config_source, gpu_count, strategy, gpus_per_node, seq_len, micro_batch, precision,
             activation_checkpointing, optimizer, force, as_json) -> None:
    """Exact per-GPU peak memory of a training step, simulated on CPU (fake tensors)."""
    import dataclasses

    from bot.bench.simulate import SimConfig, SimError, simulate_cached

    if bool(model) == bool(config_source):
        raise click.UsageError("pass either --model or --config")
    outputs = []
    from_config = None
    if config_source:  # read (or fetch) the config once; the strategies reuse it
        try:
            from_config = SimConfig.from_hf_config(config_source, gpu_count=gpu_count, strategy="ddp")
        except SimError as err:
            raise click.ClickException(str(err)) from None
        spec = from_config.spec()
        seq_len = seq_len or (min(DEFAULT_SEQ_LEN, spec.max_positions) if spec.positions else DEFAULT_SEQ_LEN)
    else:
        seq_len = _seq_len(model, seq_len)
    for name in _strategies(strategy, "--strategy"):
        cfg = SimConfig(model=model or "", gpu_count=gpu_count, strategy=name, gpus_per_node=gpus_per_node,
                        seq_len=seq_len, micro_batch=micro_batch, precision=precision,
                        activation_checkpointing=activation_checkpointing, optimizer=optimizer)
        if from_config is not None:
            cfg = dataclasses.replace(cfg, model=from_config.model, hf_config=from_config.hf_config)
        try:
            cfg.normalized()  # a refused config is a bad value (exit 2), checked before anything runs
        except SimError as err:
            raise _bad_value(err) from None
        try:
            with _progress(not as_json and sys.stderr.isatty()) as progress:
                run_id, result = simulate_cached(cfg, force=force, progress=progress)
        except SimError as err:
            raise click.ClickException(str(err)) from None
        finally:
            _echo_store_notices()
        data = result.to_dict()
        data["run_id"] = run_id
        outputs.append(data)
        if not as_json:
            _print_sim(run_id, result)
    if as_json:
        click.echo(json.dumps(outputs[0] if len(outputs) == 1 else outputs, indent=1))


_SHOWN_NOTICES: set[str] = set()


def _echo_store_notices() -> None:
    """A damaged result store was moved aside (bot.bench.store): say so once, on stderr."""
    from bot.bench.store import damage_notices

    for notice in damage_notices():
        if notice not in _SHOWN_NOTICES:
            _SHOWN_NOTICES.add(notice)
            click.echo(f"notice: {notice}", err=True)


def _print_sim(run_id: str, r) -> None:
    c = r.config
    click.echo(f"{run_id}  {c.model}, {c.gpu_count} GPUs, {c.strategy}, seq {c.seq_len} x batch "
               f"{c.micro_batch}, {c.precision}{', checkpointing' if c.activation_checkpointing else ''}")
    click.echo(f"  peak {r.peak_gib:.2f} GiB per GPU = params {r.params_gib:.2f} + grads {r.grads_gib:.2f}"
               f" + optimizer {r.optimizer_gib:.2f} + activations {r.activations_gib:.2f}"
               f" + buffers {r.buffers_gib:.2f}" + (f"  (host RAM {r.host_gib:.2f} GiB)" if r.host_gib else ""))
    click.echo(f"  simulated with torch {r.torch_version} in {r.seconds:.1f} s")


@bench.command("run")
@click.option("--model", default="tiny", show_default=True)
@click.option("--strategies", default="ddp,fsdp_full_shard", show_default=True, help=STRATEGY_HELP)
@click.option("--nproc", type=int, default=2, show_default=True, help="processes (GPUs, or CPU ranks)")
@click.option("--steps", type=int, default=5, show_default=True, help="timed steps")
@click.option("--warmup", type=int, default=2, show_default=True)
@click.option("--seq-len", type=int, default=256, show_default=True)
@click.option("--micro-batch", type=int, default=2, show_default=True)
@click.option("--precision", default=None, type=click.Choice(["bf16-mixed", "fp16-mixed", "bf16", "fp32"]),
              help="default: bf16-mixed on GPU, fp32 on CPU")
@click.option("--activation-checkpointing", is_flag=True)
@click.option("--timeout", type=click.FloatRange(min=1, max=7 * 24 * 3600), default=600, show_default=True,
              help="seconds per strategy")
@click.option("--force", is_flag=True, help="run again even if the store has this config")
@click.option("--json", "as_json", is_flag=True)
def run_command(model, strategies, nproc, steps, warmup, seq_len, micro_batch, precision,
                activation_checkpointing, timeout, force, as_json) -> None:
    """Really train with torchrun (gloo on CPU, NCCL on GPUs) and compare strategies."""
    from bot.bench.run import BenchError, RunConfig, check_config, run_benchmark

    cfg = RunConfig(model=model, strategies=_strategies(strategies), nproc=nproc, steps=steps,
                    warmup=warmup, seq_len=seq_len, micro_batch=micro_batch, precision=precision,
                    activation_checkpointing=activation_checkpointing, timeout=timeout)
    try:
        check_config(cfg)
    except BenchError as err:
        raise _bad_value(err) from None
    try:
        with _progress(not as_json and sys.stderr.isatty()) as progress:
            report = run_benchmark(cfg, force=force, progress=progress)
    except BenchError as err:
        raise click.ClickException(str(err)) from None
    if as_json:
        click.echo(json.dumps({"runs": [{"run_id": report.run_ids[s], "strategy": s, **report.results[s]}
                                        for s in report.results],
                               "loss_check": report.loss_check, "cached": report.cached}, indent=1))
        return
    for strategy, result in report.results.items():
        f = result["figures"]
        cached = " (from store)" if strategy in report.cached else ""
        click.echo(f"{report.run_ids[strategy]}  {strategy:<24} {f['step_seconds']:.3f} s/step  "
                   f"{f['tokens_per_s']:.0f} tokens/s  peak {f['peak_gib']:.3f} GiB/rank  "
                   f"collectives {f['comm_seconds_per_step']:.3f} s/step{cached}")
    check = report.loss_check
    if check.get("reference"):
        click.echo(f"losses match {check['reference']} within {check['tolerance']:g}: "
                   f"max relative difference {max(check['max_rel_diff'].values()):.2e}")


@bench.command()
@click.option("--model", required=True)
@click.option("--strategies", default="ddp,fsdp_full_shard", show_default=True, help=STRATEGY_HELP)
@click.option("--nodes", type=int, default=1, show_default=True)
@click.option("--gpus-per-node", type=int, default=8, show_default=True)
@click.option("--steps", type=int, default=20, show_default=True)
@click.option("--seq-len", type=int, default=None, help=SEQ_LEN_HELP)
@click.option("--micro-batch", type=int, default=1, show_default=True)
@click.option("--precision", default="bf16-mixed", show_default=True,
              type=click.Choice(["bf16-mixed", "fp16-mixed", "bf16", "fp32"]))
@click.option("--activation-checkpointing", is_flag=True)
@click.option("--python", default="python", show_default=True, help="python on the cluster")
@click.option("--out-dir", default=".", show_default=True, help="where to write the two files")
def script(model, strategies, nodes, gpus_per_node, steps, seq_len, micro_batch, precision,
           activation_checkpointing, python, out_dir) -> None:
    """Write a torchrun script and a SLURM sbatch file for your cluster."""
    from bot.bench.script import ScriptConfig, write_scripts

    cfg = ScriptConfig(model=model, strategies=_strategies(strategies), nodes=nodes,
                       gpus_per_node=gpus_per_node, steps=steps, seq_len=_seq_len(model, seq_len), micro_batch=micro_batch,
                       precision=precision, activation_checkpointing=activation_checkpointing, python=python)
    from bot.bench.script import check_script_config

    try:
        check_script_config(cfg)
    except ValueError as err:
        raise _bad_value(err) from None
    try:
        paths = write_scripts(cfg, out_dir)
    except (ValueError, OSError) as err:
        raise click.ClickException(str(err)) from None
    for path in paths:
        click.echo(f"wrote {path}")
    click.echo("run one of them on the cluster, then: shardwise bench import shardwise-results/*.json")


@bench.command("import")
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False))
def import_command(files) -> None:
    """Validate result JSON files from `bench script` runs and add them to the store."""
    from bot.bench.script import ImportRejected, import_result

    failed = 0
    for name in files:
        try:
            run_id, existed = import_result(name)
        except ImportRejected as err:
            failed += 1
            click.echo(f"rejected {name}: {err}", err=True)
            continue
        click.echo(f"{run_id}  {'already stored' if existed else 'imported'}  {name}")
    if failed:
        raise SystemExit(2)  # a rejected file is a bad value, like calc's and search's exit 2


@bench.command("list")
@click.option("--kind", type=click.Choice(["simulate", "run", "import"]), default=None)
@click.option("--limit", type=click.IntRange(1, 10_000), default=30, show_default=True)
@click.option("--json", "as_json", is_flag=True)
def list_command(kind, limit, as_json) -> None:
    """Stored results, newest first."""
    from bot.bench.store import ResultStore

    runs = ResultStore().list(kind=kind, limit=limit)
    _echo_store_notices()
    if as_json:
        click.echo(json.dumps([r.to_dict() for r in runs], indent=1))
        return
    if not runs:
        click.echo("no stored results yet (try: shardwise bench simulate --model gpt2 --gpus 2)")
    for r in runs:
        click.echo(f"{r.id}  {r.summary()}")


@bench.command()
@click.argument("run_id")
@click.option("--json", "as_json", is_flag=True)
def show(run_id, as_json) -> None:
    """One stored result in full."""
    from bot.bench.store import ResultStore

    run = ResultStore().get(run_id.strip())
    _echo_store_notices()
    if run is None:
        raise click.BadParameter(f"no stored result {run_id[:80]!r} (see: shardwise bench list)",
                                 param_hint="RUN_ID")
    if as_json:
        click.echo(json.dumps(run.to_dict(), indent=1))
        return
    click.echo(f"{run.id}  {run.summary()}")
    for title, data in (("config", run.config), ("hardware", run.hardware), ("figures", run.figures)):
        click.echo(f"{title}:")
        for key, value in data.items():
            click.echo(f"  {key}: {value}")
    if run.error:
        click.echo(f"error: {run.error}")


@bench.command()
@click.option("--config", "config_path", required=True, type=click.Path(dir_okay=False),
              help="grid file (TOML or JSON): model, strategies, nproc, seq_len, micro_batch, "
                   "activation_checkpointing, precision, steps, warmup (lists multiply)")
@click.option("--force", is_flag=True, help="run again even if the store has a point")
@click.option("--json", "as_json", is_flag=True)
def validate(config_path, force, as_json) -> None:
    """Real training steps for a grid, beside the calculator and the simulator (bot/bench/validate.py)."""
    from bot.bench.run import BenchError
    from bot.bench.validate import GridError, format_table, load_grid
    from bot.bench.validate import validate as run_validation

    try:
        grid = load_grid(config_path)
    except GridError as err:
        raise _bad_value(err) from None
    try:
        with _progress(not as_json and sys.stderr.isatty()) as progress:
            rows = run_validation(grid, force=force, progress=progress)
    except BenchError as err:
        raise click.ClickException(str(err)) from None
    if as_json:
        click.echo(json.dumps([r.to_dict() for r in rows], indent=1))
        return
    click.echo(format_table(rows))
