"""``shardwise ingest`` and ``shardwise search``: the knowledge index from the command line."""

from __future__ import annotations

import json
import sys

import click


@click.command(help="Build or update the knowledge index from knowledge/ (unchanged entries are skipped).")
@click.option("--rebuild", is_flag=True, help="Build a fresh index aside and swap it in.")
@click.option("--json", "as_json", is_flag=True, help="Print the ingest report as JSON.")
def ingest(rebuild: bool, as_json: bool) -> None:
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from bot.knowledge.corpus import CorpusError
    from bot.knowledge.index import IndexUnavailable
    from bot.knowledge.index import ingest as run_ingest

    console = Console(stderr=True)
    with Progress(TextColumn("embedding chunks"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=console, transient=True) as bar:
        task = bar.add_task("embed", total=None)

        def progress(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        try:
            report = run_ingest(rebuild=rebuild, progress=progress)
        except (CorpusError, IndexUnavailable) as err:
            raise click.ClickException(str(err)) from err
    if as_json:
        click.echo(json.dumps(report.__dict__, ensure_ascii=False, indent=2))
        return
    if report.rebuilt:
        why = f" ({report.reason})" if report.reason else ""
        click.echo(f"built a new index{why}: {report.entries} entries, {report.chunks_embedded} chunks")
    else:
        click.echo(f"index up to date: {len(report.added)} added, {len(report.updated)} changed, "
                   f"{len(report.removed)} removed, {report.skipped} unchanged "
                   f"({report.chunks_embedded} chunks embedded)")
    click.echo(f"{report.location} [{report.generation}] in {report.seconds:.1f} s")


@click.command(help="Search the forum and docs corpus (Chinese or English).")
@click.argument("query")
@click.option("--k", "k", type=click.IntRange(1, 50), default=5, show_default=True, help="How many hits.")
@click.option("--kind", "kinds", type=click.Choice(["forum", "doc"]), multiple=True,
              help="Only this kind (repeatable). Default: both.")
@click.option("--json", "as_json", is_flag=True, help="Print hits as JSON.")
def search(query: str, k: int, kinds: tuple[str, ...], as_json: bool) -> None:
    from bot.knowledge.search import clean_query
    from bot.knowledge.search import search as run_search

    if not clean_query(query):
        click.echo("error: the query is empty; ask something like \"A100 40G 跑7B\" or "
                   "\"how much memory does FSDP save\"", err=True)
        sys.exit(2)
    hits = run_search(query, k=k, kinds=kinds or ("forum", "doc"))
    if as_json:
        click.echo(json.dumps([h.to_dict() for h in hits], ensure_ascii=False, indent=2))
        return
    from rich.console import Console
    from rich.table import Table

    console = Console()
    if not hits:
        console.print("no matching entries")
        return
    table = Table(show_lines=True)
    for column in ("#", "id", "kind", "score", "title / text"):
        table.add_column(column, overflow="fold")
    for rank, hit in enumerate(hits, start=1):
        snippet = " ".join(hit.text.split())[:200]
        table.add_row(str(rank), hit.id, hit.kind, f"{hit.score:.3f}",
                      f"[bold]{hit.title}[/bold]\n{snippet}\n[dim]{hit.url}[/dim]")
    console.print(table)
