"""``shardwise ask "..." ["..."] [--json]``: several questions are one conversation, answered for
the last. Human output renders the answer's markdown in the terminal with rich."""

from __future__ import annotations

import json
import sys

import click


@click.command(name="ask")
@click.argument("questions", nargs=-1, required=True)
@click.option("--json", "as_json", is_flag=True, help="Print the Answer JSON (DESIGN.md contract).")
@click.option("--llm/--no-llm", default=None,
              help="Use the OpenAI-compatible LLM configured by SHARDWISE_LLM_* (default: when configured).")
def ask(questions: tuple[str, ...], as_json: bool, llm: bool | None) -> None:
    """Ask a question (zh/en) about DDP vs FSDP; earlier arguments are the conversation so far."""
    *history, question = questions
    from bot.llm import answer as answer_question

    answer = answer_question(question, list(history), use_llm=llm)
    if as_json:
        click.echo(json.dumps(answer.model_dump(), ensure_ascii=False, indent=2))
        return
    from rich.console import Console
    from rich.markdown import Markdown

    console = Console(file=sys.stdout)
    console.print(Markdown(answer.text))
    if answer.citations:
        console.print()
        for c in answer.citations:
            # forum titles already start with their id ("forum-12: ..."); say each thing once
            name = c.title if c.title.startswith(c.id) or c.id == "calc" else f"{c.id}: {c.title}"
            where = f" {c.url}" if c.url else ""
            quote = f" — {c.quote}" if c.quote else ""
            console.print(f"[{c.n}] ({c.kind}) {name}{where}{quote}", markup=False, highlight=False)
