"""The strategy x precision table the page shows on request: per-GPU GiB of every strategy
for each precision of the answer's setup, from the tool registry's ``estimate_memory`` (one run
per precision, ``bot.tools.estimate_precisions``); its wording is in the answer's message
catalogs (``page.precision.*`` in ``bot/answer/messages``).

It is a new calculation asked for explicitly (a button), not a re-rendering of the answer; it
belongs as a section of the Answer (issue 28) once the pipeline offers one.
"""

from __future__ import annotations

import html
import logging

import gradio as gr

from bot.answer import Answer, Citation
from bot.answer.catalog import render
from bot.strategies import TRAINING_STRATEGIES, label
from bot.surfaces.web import answer_view as view
from bot.surfaces.web.conversation import Exchange, store
from bot.surfaces.web.panel import setup_summary
from bot.surfaces.web.text import user_message_html
from bot.tools import estimate_precisions, setup_arguments

log = logging.getLogger(__name__)

PRECISIONS = ("bf16-mixed", "fp16-mixed", "bf16", "fp32")


def say(key: str, language: str, **values) -> str:
    """A sentence of the page's catalog entries (``page.precision.<key>``)."""
    return render("zh" if language == "zh" else "en", f"page.precision.{key}", values)


def precision_table(answer: Answer) -> tuple[str, str] | None:
    """Per-GPU GiB for every strategy (rows) x precision (columns) of the answer's setup, from
    the registry's ``estimate_memory`` (one run per precision), as an HTML table and the calc
    citation's quote; ``None`` when the setup cannot be computed. The page asks for this
    explicitly: it is a new calculation, not a re-rendering of the answer."""
    base = setup_arguments(answer.setup)
    columns = estimate_precisions(base, PRECISIONS)
    if not columns:
        return None
    lang = answer.language
    strategies = [s for s in TRAINING_STRATEGIES if any(f"memory.{s}.total_gib" in n for n in columns.values())]
    head = "".join(f"<th>{html.escape(p)}</th>" for p in columns)
    rows = []
    for strategy in strategies:
        cells = []
        for numbers in columns.values():
            total, fits = numbers.get(f"memory.{strategy}.total_gib"), numbers.get(f"memory.{strategy}.fits")
            mark = "" if fits is None else (" ✓" if fits else " ✗")
            cells.append("<td>–</td>" if total is None else f"<td>{float(total):.1f}{mark}</td>")
        rows.append(f"<tr><td>{html.escape(label(strategy, answer.language))}</td>{''.join(cells)}</tr>")
    skipped = [p for p in PRECISIONS if p not in columns]
    caption = say("caption", lang)
    if skipped:
        caption += say("skipped", lang, precisions=", ".join(skipped))
    table = (f"<p><b>{html.escape(caption)}</b></p>" + view._SCROLL
             + f"<table><thead><tr><th>{html.escape(say('strategy', lang))}</th>{head}</tr></thead>"
             + f"<tbody>{''.join(rows)}</tbody></table></div>")
    # the calc citation's record of its inputs, in English as every calculator quote
    quote = say("quote", "en", precisions=", ".join(columns), setup=setup_summary(base))
    return table, quote


def compare_precisions(request: gr.Request):
    """The strategy x precision table for the last answer's setup, as its own chat entry."""
    conv = store.get(request.session_hash if request else None)
    if not conv.answer:
        return gr.skip()
    answer = Answer.model_validate(conv.answer)
    lang = answer.language
    ex = Exchange(kind="simulate", user_html="", payload=None)  # answered here, not by the worker
    ex.user_html = user_message_html(say("request", lang), ex.id, kind="compare")
    conv.add(ex)
    try:
        result = precision_table(answer)
    except Exception:  # noqa: BLE001
        log.exception("precision table failed")
        result = None
    if result is None:
        body = "<p>" + html.escape(say("cannot_compute", lang)) + "</p>"
    else:
        table, quote = result
        n = max((c.n for c in answer.citations), default=0) + 1
        citation = Citation(n=n, id="calc", kind="calc", title=say("calc_title", lang), quote=quote)
        body = table + f"<p>[{n}]</p>" + view.sources_html([citation], answer.language)
    with conv.lock:
        ex.answer_html = (f'<div class="sw-answer sw-compare sw-a-{ex.id}" lang="{view.html_lang(answer.language)}">'
                          f"{body}</div>")
    return conv.messages()
