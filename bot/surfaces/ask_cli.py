"""``shardwise ask "..." ["..."] [--json]``: several questions are one conversation, answered for
the last. Human output renders the answer's markdown in the terminal with rich."""

from __future__ import annotations

import json
import logging
import re
import sys

import click

log = logging.getLogger("shardwise.ask")


@click.command(name="ask")
@click.argument("questions", nargs=-1, required=True)
@click.option("--json", "as_json", is_flag=True, help="Print the Answer JSON (DESIGN.md contract).")
@click.option("--full", is_flag=True, help="Print the whole answer (why, what would change it, sources, how to run it).")
@click.option("--llm/--no-llm", default=None,
              help="Use the OpenAI-compatible LLM configured by SHARDWISE_LLM_* (default: when configured).")
def ask(questions: tuple[str, ...], as_json: bool, full: bool, llm: bool | None) -> None:
    """Ask a question (zh/en) about DDP vs FSDP; earlier arguments are the conversation so far."""
    *history, question = questions
    if not question.strip():
        raise click.UsageError("the question is empty: ask something, e.g. "
                               "shardwise ask \"DDP or FSDP for a 7B model on 8x A100 40GB?\"")
    from bot.env import configure_runtime

    configure_runtime(threads=None, level=logging.WARNING)  # stderr: warnings only, secrets redacted
    try:
        _ask(question, history, as_json, llm, full)
    except (click.ClickException, click.exceptions.Exit, KeyboardInterrupt):
        raise
    except Exception as err:  # noqa: BLE001  (one clean line instead of a traceback)
        log.debug("shardwise ask failed", exc_info=True)
        raise click.ClickException(f"could not answer ({type(err).__name__}); "
                                   "please rephrase or shorten the question") from None


def _ask(question: str, history: list[str], as_json: bool, llm: bool | None, full: bool = False) -> None:
    from bot.surfaces.llm import answer as answer_question

    answer = answer_question(question, list(history), use_llm=llm)
    if as_json:
        # allow_nan=False: the Answer boundary (bot.surfaces.llm.answer) guarantees finite numbers
        click.echo(json.dumps(answer.model_dump(), ensure_ascii=False, indent=2, allow_nan=False))
        return
    from rich.console import Console
    from rich.markdown import Markdown

    console = Console(file=sys.stdout)
    text = (answer.full_text or answer.text) if full else answer.text
    console.print(Markdown(text.replace("see the full answer.)", "shardwise ask --full.)")
                           .replace("见完整回答。）", "见 shardwise ask --full。）")))
    shown = {int(n) for n in re.findall(r"\[(\d+)\]", text)}
    if answer.citations:
        console.print()
        for c in answer.citations:
            if c.n not in shown:  # the short form prints the sources it cites
                continue
            # forum titles already start with their id ("forum-12: ..."); say each thing once
            name = c.title if c.title.startswith(c.id) or c.id == "calc" else f"{c.id}: {c.title}"
            where = f" {c.url}" if c.url else ""
            quote = f" — {c.quote}" if c.quote else ""
            console.print(f"[{c.n}] ({c.kind}) {name}{where}{quote}", markup=False, highlight=False)
