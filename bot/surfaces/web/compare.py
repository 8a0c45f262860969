"""Two setups side by side on one chart: the answer before the last one (A) and the last one (B),
e.g. a run as it is and the proposal; each setup's rows with its own pick starred and its own
card's capacity marked, and the same in words. Reads both answers' tables; computes nothing."""

from __future__ import annotations

import gradio as gr

from bot.answer import Answer
from bot.answer.catalog import wording
from bot.surfaces.web.chart import compare_figure, compare_summary
from bot.surfaces.web.conversation import store
from bot.surfaces.web.text import lang_tagged


def compare_setups(request: gr.Request):
    """The chart and its words for the last two answers' setups side by side (A: the earlier,
    B: the latest), e.g. a run as it is and the proposal."""
    conv = store.get(request.session_hash if request else None)
    language = conv.answer["language"] if conv.answer else "en"
    if not conv.previous or not conv.answer:
        return gr.skip(), lang_tagged(wording(language, "page.compare.ask_two"), language)
    before, after = Answer.model_validate(conv.previous), Answer.model_validate(conv.answer)
    figure = compare_figure(before, after, ("A", "B"))
    if figure is None:
        return gr.skip(), ""
    said = [wording(language, "page.compare.said", name=n, question=conv.question_of(i)[:160])
            for n, i in (("A", conv.previous_id), ("B", conv.answer_id))]
    return figure, lang_tagged("\n\n".join([*said, compare_summary(before, after, ("A", "B"))]), language)


