"""``shardwise eval`` and ``python -m evals run``: run the gold cases (or any cases file), print
a summary, write ``summary.json`` and ``report.md``, and exit non-zero below ``--min-pass``.

Exit status: 0 the pass rate reached ``--min-pass``; 1 it did not; 2 the cases file is invalid
or the bot cannot be loaded.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.text import Text

import bot  # noqa: F401  (offline environment first)
from evals.harness import DEFAULT_MIN_PASS, GOLD_CASES, CaseFileError, default_ask, load_cases, run_cases
from evals.report import print_summary, summarize, write_outputs

DEFAULT_OUT = Path("artifacts") / "evals"


@click.command(name="eval")
@click.option("--cases", "cases_file", type=click.Path(dir_okay=False, path_type=Path), default=GOLD_CASES,
              show_default="evals/cases/gold.jsonl", help="JSONL cases file.")
@click.option("--json", "as_json", is_flag=True, help="Print the JSON summary on stdout instead of tables.")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), default=DEFAULT_OUT,
              show_default=True, help="Where summary.json and report.md are written.")
@click.option("--min-pass", type=click.FloatRange(0, 1), default=DEFAULT_MIN_PASS, show_default=True,
              help="Exit 1 when the share of passing cases is below this.")
@click.option("--baselines/--no-baselines", default=True, show_default=True,
              help="Score the always-DDP, always-FSDP and forum-majority baselines alongside.")
def eval_command(cases_file: Path, as_json: bool, out_dir: Path, min_pass: float, baselines: bool) -> None:
    """Run the eval harness over gold cases and report pass rates, failures and baselines."""
    err = Console(stderr=True)
    try:
        cases = load_cases(cases_file)
    except CaseFileError as error:
        err.print(Text("invalid cases file: ", style="red") + Text(str(error)), highlight=False, soft_wrap=True)
        sys.exit(2)
    try:
        ask = default_ask()
    except ImportError as error:
        err.print(Text("cannot run the bot: ", style="red") + Text(str(error)), highlight=False, soft_wrap=True)
        sys.exit(2)

    progress = Progress(TextColumn("[bold]evals[/bold] {task.description}"), BarColumn(), MofNCompleteColumn(),
                        TextColumn("{task.fields[failed]} failed"), TimeElapsedColumn(), console=err,
                        transient=as_json)
    with progress:
        task = progress.add_task(cases_file.name, total=len(cases), failed=0)
        failed = 0

        def advance(result) -> None:
            nonlocal failed
            failed += not result.passed
            progress.update(task, advance=1, failed=failed, description=result.case.id)

        run = run_cases(cases, ask, cases_file=str(cases_file), baselines=baselines, on_case=advance)

    summary = summarize(run, min_pass)
    summary_path, report_path = write_outputs(summary, out_dir)
    if as_json:
        click.echo(json.dumps(summary, ensure_ascii=False, indent=2))
    else:
        print_summary(summary, Console())
        Console().print(f"wrote {summary_path} and {report_path}", highlight=False)
    sys.exit(0 if summary["gate"] == "pass" else 1)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def main() -> None:
    """shardwise eval harness: python -m evals run [--cases FILE] [--json] [--out DIR] [--min-pass X]."""


main.add_command(eval_command, name="run")
