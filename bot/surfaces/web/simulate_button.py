"""The page's Simulate button: its Gradio handlers (``simulate_start`` disables the button at once,
``simulate`` measures the last answer's recommended configuration and posts the result in the chat).

What is measured and how the result is worded live in ``bot.surfaces.web.simulation``; the simulator
is reached through the tool registry (``bot.tools.run_simulation``). A result that lands after another
question names the question it belongs to.
"""

from __future__ import annotations

import logging
import time

import gradio as gr

from bot.answer import Answer
from bot.surfaces.web import answer_view as view
from bot.surfaces.web import simulation as sim
from bot.surfaces.web.conversation import Exchange, store
from bot.surfaces.web.panel import edited_setup
from bot.surfaces.web.text import user_message_html
from bot.tools import has_stored_simulation, run_simulation, simulation_store

log = logging.getLogger(__name__)




def simulate_start():
    return gr.update(interactive=False)


def simulate(request: gr.Request, progress=gr.Progress(), *values):  # noqa: B008
    """Simulate the last answer's recommended configuration (its variant included); says which
    setup it measured, whether the figure came from the store, and, when another answer landed
    while it ran, which question it belongs to (Gradio injects ``progress``)."""
    conv = store.get(request.session_hash if request else None)
    if not conv.answer:
        return conv.messages(), gr.update(interactive=False), sim.words("ask_first", "en")
    answer = Answer.model_validate(conv.answer)
    answer_id, question = conv.answer_id, conv.question_of(conv.answer_id)
    cfg, why_not, skipped = sim.simulation_config(answer)
    if cfg is None:
        return conv.messages(), gr.update(interactive=False), why_not
    with conv.lock:
        if conv.simulating:
            return gr.skip(), gr.skip(), gr.skip()
        conv.simulating = True
    try:
        results = simulation_store()
        setup_line = sim.setup_line(cfg, answer.language)
        pending_edit = bool(values) and edited_setup(list(values), conv.stated, conv.shown)[1]
        note = None
        if pending_edit:
            note = sim.words("pending_edit", answer.language)
        ex = Exchange(kind="simulate", user_html="", payload=None)
        ex.user_html = user_message_html(sim.words("user_line", answer.language, name=sim.chosen_label(answer),
                                                   setup=setup_line), ex.id, note=note, kind="simulate")
        conv.add(ex)
        cached = has_stored_simulation(cfg, results)
        wait = sim.wait_note(answer, cfg, skipped, results) if not cached else sim.words("wait_stored", answer.language)
        progress(0.0, desc=sim.words("running", answer.language, name=sim.chosen_label(answer), wait=wait))
        started = time.monotonic()
        try:
            run_id, result = run_simulation(cfg, progress=lambda m, f: progress(f, desc=m))
        except Exception as err:  # e.g. a setup the simulator cannot build; say so, keep the page alive
            log.exception("simulation failed")
            with conv.lock:
                ex.answer_html = view.error_html(answer.language, sim.words("failed", answer.language, err=err),
                                                 ex.id)
            return conv.messages(), gr.update(interactive=True), ""
        elapsed = time.monotonic() - started
        # The figures and the [n] are those of the answer it started from; another answer that
        # landed meanwhile is not the one it measured (the result names its own question).
        moved_on = conv.answer_id != answer_id
        n = max((c.n for c in answer.citations), default=0) + 1
        text, citation = sim.simulation_message(answer, cfg.strategy, run_id, result, n, cached=cached,
                                                elapsed=elapsed, setup=setup_line,
                                                question=question if moved_on else None)
        if not moved_on:
            answer.citations.append(citation)
            conv.answer = answer.model_dump()
        body = view.md_html(text) + view.sources_html([citation], answer.language)
        with conv.lock:
            ex.answer_html = (f'<div class="sw-answer sw-sim sw-a-{ex.id}" '
                              f'lang="{view.html_lang(answer.language)}">{body}</div>')
        return conv.messages(), gr.update(interactive=True), "" if not moved_on else gr.skip()
    finally:
        with conv.lock:
            conv.simulating = False
