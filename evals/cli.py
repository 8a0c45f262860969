"""``shardwise eval`` and ``python -m evals run``: run every cases file (or one), print a summary
per file, write ``summary.json`` and ``report.md``, and gate.

Gate: with ``--cases FILE``, the pass rate must reach ``--min-pass``; by default every
``evals/cases/*.jsonl`` must pass at least its ratcheted count in ``evals/cases/baseline.json``
(``--ratchet`` raises the counts to today's; they never go down), and the gold set must pass its
own gate (``evals.harness.gold_gate``: no errors, ``--min-pass``, above every baseline). This is
the one eval gate: CI runs it once, with its report as an artifact.
Exit status: 0 the gate passed; 1 it did not; 2 a cases file is invalid or the bot cannot be loaded.
"""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.text import Text

import bot  # noqa: F401  (offline environment first)
from bot.env import configure_runtime
from evals.harness import (
    DEFAULT_MIN_PASS,
    GOLD_CASES,
    CaseFileError,
    case_files,
    default_ask,
    gold_gate,
    load_baseline,
    load_cases,
    raise_baseline,
    ratchet_gate,
    run_cases,
)
from evals.report import print_summary, summarize, write_outputs

DEFAULT_OUT = Path("artifacts") / "evals"


@click.command(name="eval")
@click.option("--cases", "cases_file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="One JSONL cases file (gated by --min-pass). Default: every evals/cases/*.jsonl, "
                   "each gated by its ratcheted pass count in evals/cases/baseline.json.")
@click.option("--json", "as_json", is_flag=True, help="Print the JSON summary on stdout instead of tables.")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), default=DEFAULT_OUT,
              show_default=True, help="Where summary.json and report.md are written (one folder per file).")
@click.option("--min-pass", type=click.FloatRange(0, 1), default=DEFAULT_MIN_PASS, show_default=True,
              help="With --cases: exit 1 when the share of passing cases is below this.")
@click.option("--ratchet", is_flag=True, help="Raise evals/cases/baseline.json to today's pass counts.")
@click.option("--baselines/--no-baselines", default=True, show_default=True,
              help="Score the always-DDP, always-FSDP and forum-majority baselines alongside.")
def eval_command(cases_file: Path | None, as_json: bool, out_dir: Path, min_pass: float, ratchet: bool,
                 baselines: bool) -> None:
    """Run the eval harness over gold cases and report pass rates, failures and baselines."""
    err = Console(stderr=True)
    configure_runtime(threads=1, level=logging.WARNING)  # one torch thread, as every surface runs
    files = [cases_file] if cases_file is not None else case_files()
    try:
        loaded = [(path, load_cases(path)) for path in files]
    except CaseFileError as error:
        err.print(Text("invalid cases file: ", style="red") + Text(str(error)), highlight=False, soft_wrap=True)
        sys.exit(2)
    try:
        ask = default_ask()
    except ImportError as error:
        err.print(Text("cannot run the bot: ", style="red") + Text(str(error)), highlight=False, soft_wrap=True)
        sys.exit(2)

    summaries = {}
    for path, cases in loaded:
        run = _run_one(path, cases, ask, baselines, err, transient=as_json)
        summary = summarize(run, min_pass)
        target = out_dir if cases_file is not None else out_dir / path.stem
        summary_path, report_path = write_outputs(summary, target)
        summaries[path.name] = summary
        if not as_json:
            print_summary(summary, Console())
            Console().print(f"wrote {summary_path} and {report_path}", highlight=False)

    if cases_file is not None:
        summary = summaries[cases_file.name]
        if as_json:
            click.echo(json.dumps(summary, ensure_ascii=False, indent=2))
        sys.exit(0 if summary["gate"] == "pass" else 1)

    passed = {name: s["passed"] for name, s in summaries.items()}
    if ratchet:
        raise_baseline(passed)
    ok, lines = ratchet_gate(passed, load_baseline())
    if GOLD_CASES.name in summaries:
        gold_ok, gold_lines = gold_gate(summaries[GOLD_CASES.name], min_pass)
        ok &= gold_ok
        lines += gold_lines
    if as_json:
        click.echo(json.dumps({"files": {n: {k: s[k] for k in ("cases", "passed", "pass_rate", "errors")}
                                         for n, s in summaries.items()},
                               "gate": "pass" if ok else "fail", "lines": lines}, ensure_ascii=False, indent=2))
    else:
        for line in lines:
            Console().print(line, highlight=False)
        Console().print(f"ratchet gate: {'PASS' if ok else 'FAIL'}", highlight=False)
    sys.exit(0 if ok else 1)


def _run_one(path: Path, cases, ask, baselines: bool, err: Console, transient: bool):
    progress = Progress(TextColumn("[bold]evals[/bold] {task.description}"), BarColumn(), MofNCompleteColumn(),
                        TextColumn("{task.fields[failed]} failed"), TimeElapsedColumn(), console=err,
                        transient=transient)
    with progress:
        task = progress.add_task(path.name, total=len(cases), failed=0)
        failed = 0

        def advance(result) -> None:
            nonlocal failed
            failed += not result.passed
            progress.update(task, advance=1, failed=failed, description=f"{path.name}: {result.case.id}")

        return run_cases(cases, ask, cases_file=str(path), baselines=baselines, on_case=advance)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def main() -> None:
    """shardwise eval harness: python -m evals run [--cases FILE] [--json] [--out DIR] [--min-pass X]."""


main.add_command(eval_command, name="run")
