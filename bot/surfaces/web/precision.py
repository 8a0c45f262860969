"""The strategy x precision table the page shows on request: per-GPU GiB of every strategy
for each precision of the answer's setup, from the calculator (one run per precision).

It is a new calculation asked for explicitly (a button), not a re-rendering of the answer; it
belongs as a section of the Answer (issue 28) once the pipeline offers one.
"""

from __future__ import annotations

import html
import logging

import gradio as gr

from bot.answer import Answer, Citation
from bot.core.setup import SetupError, TrainingSetup, resolve_setup
from bot.strategies import TRAINING_STRATEGIES, label
from bot.surfaces.web import answer_view as view
from bot.surfaces.web.conversation import Exchange, store
from bot.surfaces.web.panel import setup_summary
from bot.surfaces.web.text import user_message_html

log = logging.getLogger(__name__)

PRECISIONS = ("bf16-mixed", "fp16-mixed", "bf16", "fp32")


def precision_table(answer: Answer) -> tuple[str, str] | None:
    """Per-GPU GiB for every strategy (rows) x precision (columns) of the answer's setup, from the
    calculator (``bot.calc.estimate``, one run per precision), as an HTML table and the calc
    citation's quote; ``None`` when the setup cannot be computed. The page asks for this
    explicitly: it is a new calculation, not a re-rendering of the answer."""
    from bot.calc import estimate

    fields = TrainingSetup.model_fields
    base = {k: v for k, v in answer.setup.items() if k in fields and v is not None}
    columns: dict[str, dict] = {}
    for precision in PRECISIONS:
        try:
            numbers = estimate(resolve_setup(TrainingSetup(**{**base, "precision": precision}))).numbers()
        except (SetupError, ValueError):
            continue  # e.g. bf16 on a card without bf16: that column is left out, said below
        columns[precision] = numbers
    if not columns:
        return None
    zh = answer.language == "zh"
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
    caption = ("每卡显存 GiB（✓ 放得下，✗ 放不下）" if zh else "Per-GPU GiB (✓ fits, ✗ does not fit)")
    if skipped:
        caption += ("；此卡不支持：" if zh else "; not possible on this card: ") + ", ".join(skipped)
    table = (f"<p><b>{caption}</b></p>" + view._SCROLL
             + f"<table><thead><tr><th>{'策略' if zh else 'strategy'}</th>{head}</tr></thead>"
             + f"<tbody>{''.join(rows)}</tbody></table></div>")
    quote = "precision in " + ", ".join(columns) + "; other inputs as the answer: " + setup_summary(base)
    return table, quote


def compare_precisions(request: gr.Request):
    """The strategy x precision table for the last answer's setup, as its own chat entry."""
    conv = store.get(request.session_hash if request else None)
    if not conv.answer:
        return gr.skip()
    answer = Answer.model_validate(conv.answer)
    zh = answer.language == "zh"
    ex = Exchange(kind="simulate", user_html="", payload=None)  # answered here, not by the worker
    ex.user_html = user_message_html("按精度比较各策略" if zh else "Compare strategies across precisions", ex.id,
                                     kind="compare")
    conv.add(ex)
    try:
        result = precision_table(answer)
    except Exception:  # noqa: BLE001
        log.exception("precision table failed")
        result = None
    if result is None:
        body = "<p>" + ("这个设置还算不出来。" if zh else "This setup cannot be computed yet.") + "</p>"
    else:
        table, quote = result
        n = max((c.n for c in answer.citations), default=0) + 1
        citation = Citation(n=n, id="calc", kind="calc", title=("shardwise 显存计算器" if zh else
                                                                  "shardwise memory calculator"), quote=quote)
        body = table + f"<p>[{n}]</p>" + view.sources_html([citation], answer.language)
    with conv.lock:
        ex.answer_html = (f'<div class="sw-answer sw-compare sw-a-{ex.id}" lang="{view.html_lang(answer.language)}">'
                          f"{body}</div>")
    return conv.messages()
