"""The Gradio chat page: chat, editable setup panel, interactive memory chart, simulate, how-to,
shareable link and downloads.

This module only presents what ``bot.surfaces.llm.answer`` / ``answer_for_setup`` / the tool registry
(``bot.tools``: the simulator, the catalog's names) return and wires the events; its parts live in ``bot/surfaces/web/``: ``answer_view`` (each message as one
inert HTML block), ``chart``, ``panel`` (the setup fields), ``simulation`` (what Simulate
measures), ``precision``, ``text``, ``style`` (CSS and the page script), ``conversation``,
``share``, ``downloads``, ``assets``, ``guard`` (request bounds), ``serving`` and ``pool``.

Messages: every submitted message is appended to the tab's conversation at once (no queue,
milliseconds) and one worker per tab answers the pending ones oldest first, each answer filled
into its own place, so messages sent while another is answered are neither lost nor reordered.
An answer reaches the browser in three events (text, chart, the rest: ``show_chart``), so no
single browser task renders all of it.

The setup panel shows each field's origin: stated, assumed (highlighted, and named in the
answer) or missing (⚠). An edit sends only what the user stated or changed: assumed fields are
assumed again for the new setup (so two nodes get an inter-node link, GPT-2 a sequence length
its positions hold). Empty number fields mean unknown.

``serve()`` is what ``python app.py`` and ``shardwise app`` run: one torch thread, index built
if absent, bound to 127.0.0.1 by default, no share link, no analytics, fonts served locally. The
answers (page and ``/chat``) run in warm worker processes, one per core (``bot/surfaces/web/pool.py``), so
answering is not held to one core by the GIL; the server's own process keeps Gradio's work, made
lighter per request by ``lighten_sessions``.
"""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import Any

import click

from bot.env import configure_offline, free_port, repo_root  # noqa: F401  (free_port: re-export)

configure_offline()  # before gradio reads its analytics and hub switches

import gradio as gr  # noqa: E402

from bot.answer import Answer  # noqa: E402
from bot.answer.catalog import wording  # noqa: E402
from bot.strategies import TRAINING_STRATEGIES  # noqa: E402
from bot.surfaces.web import answer_view as view  # noqa: E402
from bot.surfaces.web import downloads, pool  # noqa: E402
from bot.surfaces.web import simulation as sim  # noqa: E402
from bot.surfaces.web.answer_view import looks_chinese, sources_html  # noqa: E402,F401  (re-exports)
from bot.surfaces.web.chart import (  # noqa: E402,F401  (re-exports for tests and other surfaces)
    chart_strategies,
    chart_summary,
    cjk_font,
    memory_figure,
    plotly_figure,
)
from bot.surfaces.web.compare import compare_setups  # noqa: E402
from bot.surfaces.web.conversation import Conversation, Exchange, Store, store  # noqa: E402,F401
from bot.surfaces.web.panel import (  # noqa: E402,F401  (re-exports for tests and other surfaces)
    BOOL_FIELDS,
    MAX_CONFIG_BYTES,
    MISSING_MARK,
    NUMBER_FIELDS,
    PANEL_FIELDS,
    _panel_components,
    apply_model_config,
    carried_fields,
    display_value,
    edited_setup,
    field_label,
    model_box_error,
    model_from_box,
    panel_note,
    panel_updates,
    panel_values,
    panel_words,
    read_panel,
    setup_from_panel,
    setup_summary,
)
from bot.surfaces.web.precision import PRECISIONS, compare_precisions, precision_table  # noqa: E402,F401
from bot.surfaces.web.serving import QUEUE_POLL_SECONDS, lighten_sessions, prepare_server  # noqa: E402,F401
from bot.surfaces.web.share import framework_from_query, setup_from_query, setup_query  # noqa: E402
from bot.surfaces.web.simulate_button import simulate, simulate_start  # noqa: E402
from bot.surfaces.web.simulation import simulation_config, simulation_message  # noqa: E402,F401  (re-exports)
from bot.surfaces.web.style import CSS, PAGE_JS  # noqa: E402
from bot.surfaces.web.text import (  # noqa: E402,F401
    ECHO_CHARS,
    MAX_MESSAGE_CHARS,
    answer_markdown,
    answer_plain_markdown,
    both_languages,
    echo,
    inert,
    inert_markdown,
    lang_tagged,
    prepare_message,
    user_message_html,
)
from bot.tools import catalog_names, simulation_store  # noqa: E402

log = logging.getLogger(__name__)

# Answers handed on at once (the rest wait in Gradio's queue): a full batch per answering process
# (``pool.MAX_BATCH``), so that under load a worker takes several waiting questions together and
# embeds them in one pass; simulations run one at a time because each one keeps a core busy for
# tens of seconds.
CHAT_CONCURRENCY = max(4, pool.MAX_BATCH * pool.default_workers())
SIMULATE_CONCURRENCY = 1

# Questions to click in the empty chat: sample input (both languages, as users ask), not wording.
EXAMPLES = [
    "MCP里用PyTorch做分布式训练，DDP和FSDP到底怎么选？ 7B模型",
    "DDP or FSDP for full fine-tuning Llama-2-7B on 8x A100 80GB with NVLink?",
    "Training Llama-2-13B on 2 nodes of 8x H100 80GB over 100 Gb/s Ethernet: FSDP full shard or hybrid shard?",
    "Can I train GPT-2 XL on 4x RTX 4090 24GB with plain DDP?",
]




# ----------------------------------------------------------------------------------------------
# Text in, text out
# ----------------------------------------------------------------------------------------------


# ----------------------------------------------------------------------------------------------
# The setup panel
# ----------------------------------------------------------------------------------------------


def howto_code(answer: Answer) -> str:
    """The how-to for the recommended strategy, from the answer's ``sections.howto`` (the page
    never re-resolves or recomputes an answer to build it)."""
    if answer.sections.howto:
        return "\n\n".join(f"**{h.title}**\n\n```{h.language}\n{h.code}\n```" for h in answer.sections.howto)
    # the page's chrome is English (``page.ui.*``), as is this placeholder of its how-to box
    if answer.recommendation.strategy not in TRAINING_STRATEGIES:
        return wording("en", "page.howto_empty.no_strategy")
    return wording("en", "page.howto_empty.incomplete")


# ----------------------------------------------------------------------------------------------
# Answers -> outputs
# ----------------------------------------------------------------------------------------------

# What an answer updates besides the chat, in four steps so the browser never does it all in
# one task: ``process`` puts the text in the chat; then ``show_chart`` draws the chart (Plotly's
# layout of the bars is the largest single piece of main-thread work); then ``show_panel`` fills
# the panel (some 25 fields) with its note and the drop button; then ``show_details`` the
# how-to, simulate, link and downloads. Each step is its own event, so each lands in its own
# browser task, with a paint between (measured with ``evals/bench_web_load.py --long-tasks``).
# The how-to (code blocks the browser highlights) is filled only while its section is open:
# a closed one gets it when it is opened (``show_howto``), so no answer step renders code
# nobody is looking at.
N_PANEL = len(PANEL_FIELDS)
N_PANEL_STEP = N_PANEL + 2  # the fields, the note above them, the drop button
N_DETAILS = 5  # how-to, simulate button and note, link, downloads


def _skip_panel() -> list[Any]:
    return [gr.skip()] * N_PANEL_STEP


def _skip_details() -> list[Any]:
    return [gr.skip()] * N_DETAILS


def _latest(conv: Conversation, step: str) -> Answer | None:
    """The tab's latest answer when ``step`` has not shown it yet (else None: nothing to redo;
    a ``process`` that found another worker busy, or several answers in a row, show it once)."""
    with conv.lock:
        if not conv.answer or conv.painted.get(step) == conv.answer_id:
            return None
        conv.painted[step] = conv.answer_id or ""
        return Answer.model_validate(conv.answer)


def chart_outputs(answer: Answer) -> list[Any]:
    """The chart and its description in words."""
    return [plotly_figure(answer), lang_tagged(chart_summary(answer), answer.language)]


def panel_outputs(conv: Conversation, answer: Answer) -> list[Any]:
    """The panel's fields, the note above them, the drop-carried button."""
    sources = view.field_sources(answer, set(conv.stated))
    return [*panel_updates(answer, sources), lang_tagged(panel_note(answer, sources), answer.language),
            gr.update(visible=bool(conv.carried))]


def detail_outputs(conv: Conversation, answer: Answer) -> list[Any]:
    """How-to (only while its section is open, else emptied: see ``show_howto``), simulate
    button and note, share query, download links."""
    config, why_not, skipped = sim.simulation_config(answer)
    sim_note = why_not if config is None else sim.wait_note(answer, config, skipped, simulation_store())
    lang = answer.language
    return [howto_code(answer) if conv.howto_open else "",
            gr.update(interactive=config is not None and not conv.simulating), lang_tagged(sim_note, lang),
            setup_query(conv.stated, answer.language,
                        conv.questions[-1] if conv.questions and not conv.stated else None, conv.framework),
            downloads.links_markdown(conv.key, conv.answer_id or "", answer)]


def answer_outputs(conv: Conversation, answer: Answer) -> list[Any]:
    """Everything an answer updates besides the chat, in the order of the page's outputs."""
    return [*chart_outputs(answer), *panel_outputs(conv, answer), *detail_outputs(conv, answer)]


def show_chart(request: gr.Request):
    """Step 2 of an answer: its chart (skipped when this tab's latest answer is drawn already)."""
    answer = _latest(store.get(request.session_hash if request else None), "chart")
    return [gr.skip(), gr.skip()] if answer is None else chart_outputs(answer)


def show_panel(request: gr.Request):
    """Step 3 of an answer: the panel, its note and the drop button (skipped when already shown)."""
    conv = store.get(request.session_hash if request else None)
    answer = _latest(conv, "panel")
    return _skip_panel() if answer is None else panel_outputs(conv, answer)


def show_details(request: gr.Request):
    """Step 4 of an answer: how-to, simulate, link and downloads (skipped when already shown)."""
    conv = store.get(request.session_hash if request else None)
    answer = _latest(conv, "details")
    return _skip_details() if answer is None else detail_outputs(conv, answer)


def show_howto(request: gr.Request) -> str:
    """The how-to section opened: its code for the tab's latest answer (from then on each answer
    fills it while it stays open)."""
    conv = store.get(request.session_hash if request else None)
    with conv.lock:
        conv.howto_open = True
        latest = conv.answer
    return howto_code(Answer.model_validate(latest)) if latest else ""


def hide_howto(request: gr.Request) -> None:
    """The how-to section closed: later answers leave its code out until it is opened again."""
    store.get(request.session_hash if request else None).howto_open = False


def _stated_from(answer: Answer, parsed_setup: dict | None) -> dict:
    """The fields the user gave, with the values the answer used."""
    if answer.provenance or answer.sections.setup_read:
        sources = view.field_sources(answer)
        return {k: answer.setup.get(k) for k, s in sources.items() if s != "assumed" and answer.setup.get(k) is not None}
    return {k: v for k, v in (parsed_setup or {}).items() if v is not None}


def run_exchange(conv: Conversation, ex: Exchange) -> Answer | None:
    """Answer one exchange; fills ``ex.answer_html`` (an apology on failure) and the tab state."""
    # The answer every surface gives (the LLM when configured), in a worker process when the
    # server runs a pool (``bot.surfaces.web.pool``), else here.
    language = conv.answer["language"] if conv.answer else "en"
    try:
        if ex.kind == "ask":
            text, notice = ex.payload
            history = list(conv.questions)
            answer, parsed, framework = pool.run(pool.ask_question, text, history)
            conv.questions.append(text)
            conv.stated = _stated_from(answer, parsed)
            conv.framework = framework
        else:
            data = dict(ex.payload["setup"])
            language = ex.payload.get("language", language)
            answer = pool.run(pool.answer_setup, data, language, conv.framework)
            notice = None
            conv.stated = data
    except Exception as err:  # a bug must not take the page down; the log has the traceback
        if isinstance(err, pool.SetupProblem):  # a setup the pipeline cannot answer: said, in words
            message = panel_words("invalid", language, problems=str(err))
        else:
            log.exception("answering failed")
            message = both_languages("page.failed")
        with conv.lock:
            ex.answer_html = view.error_html(language, message, ex.id)
        return None
    if conv.answer is not None and answer.numbers:
        conv.previous, conv.previous_id = conv.answer, conv.answer_id
    conv.answer = answer.model_dump()
    conv.answer_id = ex.id
    conv.carried = carried_fields(view.field_sources(answer))
    conv.shown = {name: answer.setup.get(name) for name in PANEL_FIELDS}
    with conv.lock:
        ex.answer_html = view.answer_html(answer, stated=set(conv.stated), notice=notice, answer_id=ex.id)
    return answer


def process(request: gr.Request):
    """The tab's worker: answers pending exchanges oldest first, showing each in the chat as it
    lands (the chart, the panel and the rest follow in their own events: ``show_chart``,
    ``show_panel``, ``show_details``).
    Returns at once when another event of this tab is already working (it takes ours too)."""
    conv = store.get(request.session_hash if request else None)
    token = conv.claim()
    if token is None:
        yield gr.skip()
        return
    try:
        answered = False
        while (ex := conv.next_pending(token)) is not None:
            run_exchange(conv, ex)
            answered = True
            yield conv.messages()
        if not answered:
            yield gr.skip()
    finally:
        conv.release(token)


# ----------------------------------------------------------------------------------------------
# Events (queue=False ones append at once; ``process`` answers)
# ----------------------------------------------------------------------------------------------

HINT = both_languages("page.hint")


def submit_message(message: str | None, request: gr.Request):
    """Append the message to the tab's conversation (the box was emptied in the browser); never waits."""
    conv = store.get(request.session_hash if request else None)
    text, notice = prepare_message(message)
    if not text:
        with conv.lock:
            recent = conv.exchanges and time.monotonic() - conv.exchanges[-1].at < 2.0
        # An empty box right after a send is the second click of a double click: nothing to say.
        return gr.skip(), ("" if recent else HINT)
    ex = Exchange(kind="ask", user_html="", payload=(text, notice), raw=text)
    ex.user_html = user_message_html(text if notice is None else (message or "").strip(), ex.id)
    conv.add(ex)
    return conv.messages(), ""


def pick_example(evt: gr.SelectData, request: gr.Request):
    """An example in the empty chat was clicked: ask it."""
    value = evt.value
    text = value.get("text") if isinstance(value, dict) else str(value)
    return submit_message(text, request)


def submit_edit(request: gr.Request, *values):
    """Append a panel edit (only when something changed)."""
    return _submit_edit(request, list(values), force=False)


def submit_edit_button(request: gr.Request, *values):
    """The re-answer button: answer the panel's setup even when nothing changed."""
    return _submit_edit(request, list(values), force=True)


def _submit_edit(request: gr.Request, values: list, force: bool):
    conv = store.get(request.session_hash if request else None)
    language = conv.answer["language"] if conv.answer else "en"
    data, changed, problems = edited_setup(list(values), conv.stated, conv.shown, language)
    if problems:
        return _refused_edit(conv, language, "; ".join(problems))
    if not changed and not force:
        return gr.skip()
    if not data:
        return gr.skip()
    shown = {k: data.get(k) for k in changed} if changed else data
    note = None
    if "model" in changed and data.get("model"):
        try:
            spec = model_from_box(data["model"])
        except Exception as err:  # noqa: BLE001  (ConfigError, JSON errors, offline Hub: say why)
            return _refused_edit(conv, language, model_box_error(err, data["model"], language))
        if spec is not None:
            note = apply_model_config(data, spec)
            shown = {**{k: v for k, v in shown.items() if k != "model"}, "params_b": data["params_b"]}
    return _add_edit(conv, data, language, shown, note)


def _add_edit(conv: Conversation, data: dict, language: str, shown: dict, note: str | None = None,
              kind: str = "edit"):
    # ``raw`` makes the same edit sent twice at once one message (a clicked option fires
    # Gradio's input event, then again as the box loses focus).
    ex = Exchange(kind=kind, user_html="", payload={"setup": data, "language": language},
                  raw=f"{kind}:{json.dumps(data, sort_keys=True, default=str)}")
    ex.user_html = user_message_html(wording(language, "page.user.edited", setup=setup_summary(shown, language)), ex.id,
                                     kind=kind, note=note)
    conv.add(ex)
    return conv.messages()


def _refused_edit(conv: Conversation, language: str, message: str):
    ex = Exchange(kind="edit", user_html="", payload=None)
    ex.user_html = user_message_html(wording(language, "page.user.edited", setup="").rstrip(), ex.id, kind="edit")
    ex.answer_html = view.error_html(language, message, ex.id)
    conv.add(ex)
    return conv.messages()


def drop_carried(request: gr.Request):
    """Answer the last setup again without the settings taken from earlier messages (they are
    then assumed, or asked for, like any unstated field)."""
    conv = store.get(request.session_hash if request else None)
    if not conv.carried:
        return gr.skip()
    language = conv.answer["language"] if conv.answer else "en"
    data = {k: v for k, v in conv.stated.items() if k not in conv.carried}
    names = panel_words("names_sep", language).join(field_label(f, language) for f in conv.carried)
    ex = Exchange(kind="edit", user_html="", payload={"setup": data, "language": language}, raw=f"drop:{names}")
    ex.user_html = user_message_html(wording(language, "page.user.without_carried", names=names), ex.id, kind="edit")
    conv.add(ex)
    return conv.messages()


def upload_config(request: gr.Request, path: str | None):
    """An uploaded config.json: answer for that model with the rest of the setup as stated."""
    conv = store.get(request.session_hash if request else None)
    language = conv.answer["language"] if conv.answer else "en"
    if not path:
        return gr.skip()
    try:
        file = Path(path)
        if file.stat().st_size > MAX_CONFIG_BYTES:
            raise ValueError(panel_words("too_big", "en"))
        spec = model_from_box(json.loads(file.read_text(encoding="utf-8", errors="replace")),
                              name=None)
    except Exception as err:  # noqa: BLE001
        return _refused_edit(conv, language, panel_words("config_file", language, err=err))
    data = dict(conv.stated)
    note = apply_model_config(data, spec)
    return _add_edit(conv, data, language, {"params_b": data["params_b"]}, note)


def open_link(query: str | None, request: gr.Request):
    """A shared link (``?model=...&gpu_count=...`` or ``?q=...``; ``query`` is the page's query
    string, as the browser read it) re-asks what it holds."""
    from urllib.parse import parse_qsl

    conv = store.reset(request.session_hash if request else None)
    params = dict(parse_qsl((query or "").lstrip("?")[:20_000]))
    data, language, question = setup_from_query(params)
    if question:
        text, notice = prepare_message(question)
        ex = Exchange(kind="ask", user_html="", payload=(text, notice), raw=text)
        ex.user_html = user_message_html(text, ex.id)
        conv.add(ex)
    elif data:
        conv.framework = framework_from_query(params)
        ex = Exchange(kind="share", user_html="", payload={"setup": data, "language": language})
        ex.user_html = user_message_html(wording(language, "page.user.shared", setup=setup_summary(data, language)),
                                         ex.id, kind="share")
        conv.add(ex)
    return conv.messages()


def new_conversation(request: gr.Request) -> list[Any]:
    """Outputs for a cleared chat: a fresh conversation and an empty chart, panel and how-to."""
    key = request.session_hash if request else None
    howto_open = store.get(key).howto_open  # the section stays as the user left it
    store.reset(key).howto_open = howto_open
    panel = [gr.update(value=display_value(name, None), elem_classes=[], label=field_label(name))
             for name in PANEL_FIELDS]
    return [None, "", *panel, "", gr.update(visible=False), "", gr.update(interactive=False), "", "", ""]


def close_tab(request: gr.Request) -> None:
    store.drop(request.session_hash if request else None)


# ----------------------------------------------------------------------------------------------
# Strategy x precision
# ----------------------------------------------------------------------------------------------


# ----------------------------------------------------------------------------------------------
# /chat API
# ----------------------------------------------------------------------------------------------


def chat_api(message: str) -> str:
    """``/chat``: one question (no conversation) -> the markdown answer with its sources
    (answered in a worker process when the server runs a pool, ``bot.surfaces.web.pool``)."""
    text, notice = prepare_message(message)
    if not text:
        return notice or ""
    return pool.run(pool.chat_markdown, text, notice)


# ----------------------------------------------------------------------------------------------
# The page
# ----------------------------------------------------------------------------------------------

def ui(key: str, **values: str) -> str:
    """The page's chrome (``page.ui.*``): English, as the page's own labels are (answers and notes
    follow the question's language)."""
    return wording("en", f"page.ui.{key}", **values)


# The wide layout has the setup on the right, the narrow one below the chat: the page's CSS shows one.
INTRO = (f"# {ui('intro_title')}\n{ui('intro_lead')} "
         f'<span class="sw-wide">{ui("intro_wide")}</span><span class="sw-narrow">{ui("intro_narrow")}</span>')


def share_href(query: str) -> str:
    """The link's target for markdown: the query string with markdown's link delimiters escaped
    (setup_query url-encodes values, so only its own characters remain)."""
    return query.replace("\\", "%5C").replace("(", "%28").replace(")", "%29").replace(" ", "%20")


def build_demo():
    """The Blocks app (not launched)."""
    model_names, gpu_names = catalog_names()
    with gr.Blocks(title=ui("title"), analytics_enabled=False) as demo:
        gr.Markdown(INTRO, elem_id="sw-intro")
        with gr.Row(equal_height=False):
            with gr.Column(scale=3, min_width=360):
                chat = gr.Chatbot(label=ui("conversation"), show_label=False, elem_id="sw-chat", height=640,
                                  buttons=["copy"], feedback_options=None, allow_tags=False,
                                  sanitize_html=True, layout="panel", group_consecutive_messages=False,
                                  autoscroll=False, latex_delimiters=[],
                                  examples=[{"text": e, "display_text": e} for e in EXAMPLES])
                with gr.Row(equal_height=True):
                    msg = gr.Textbox(placeholder=ui("placeholder"), label=ui("question"), show_label=False, lines=1,
                                     max_lines=8, scale=5, elem_id="sw-msg", autofocus=False)
                    send = gr.Button(ui("ask"), variant="primary", scale=1, min_width=80, elem_id="sw-send")
                hint = gr.Markdown("", elem_id="sw-hint")
                sent = gr.Textbox(visible="hidden", elem_id="sw-sent")
                with gr.Row():
                    share = gr.Textbox(visible="hidden", elem_id="sw-share-query")
                # Markdown, not gr.HTML: gr.HTML's module (107 KB with a template engine) would be
                # fetched and parsed before the page first renders, for one link.
                share_link = gr.Markdown("", elem_id="sw-share")
                # Links, not download buttons: the files are made only when one is followed
                # (bot/surfaces/web/downloads.py says why).
                dl_links = gr.Markdown("", elem_id="sw-downloads")
            with gr.Column(scale=2, min_width=340):
                plot = gr.Plot(label=ui("chart"), show_label=False, elem_id="sw-chart")
                chart_note = gr.Markdown("", elem_id="sw-chart-note")
                sim = gr.Button(ui("simulate"), elem_id="sw-simulate", interactive=False)
                sim_note = gr.Markdown("", elem_id="sw-sim-note")
                with gr.Row():
                    compare = gr.Button(ui("compare_precisions"), elem_id="sw-compare", size="sm")
                    compare_two = gr.Button(ui("compare_setups"), elem_id="sw-compare-setups", size="sm")
                missing_note = gr.Markdown("", elem_id="sw-missing-note")
                drop = gr.Button(ui("drop_carried"), elem_id="sw-drop-carried", size="sm", visible=False)
                with gr.Accordion(ui("setup"), open=True, elem_id="sw-setup"):
                    fields = _panel_components(model_names, gpu_names)
                    with gr.Row():
                        again = gr.Button(ui("reanswer"), elem_id="sw-reanswer")
                        upload = gr.UploadButton(ui("upload"), file_types=[".json"],
                                                 type="filepath", elem_id="sw-config")
                    gr.Markdown(ui("model_help"), elem_id="sw-model-help")
                with gr.Accordion(ui("howto"), open=False, elem_id="sw-howto") as howto_box:
                    howto = gr.Markdown("", elem_id="sw-howto-code")

        chart_out = [plot, chart_note]
        panel_out = [*fields, missing_note, drop]
        detail_out = [howto, sim, sim_note, share, dl_links]
        answer_outputs = [*chart_out, *panel_out, *detail_out]
        # No progress overlays: one over the message box or the panel would swallow the next click
        # or keystroke while an answer is pending (the chat shows its own pending dots).
        work = {"concurrency_id": "answer", "concurrency_limit": CHAT_CONCURRENCY, "api_visibility": "private",
                "show_progress": "minimal"}
        fast = {"queue": False, "api_visibility": "private", "trigger_mode": "multiple", "show_progress": "hidden"}

        # An answer in four events (see ``show_chart``): the text, the chart, the panel, the rest.
        steps = {"queue": False, "api_visibility": "private", "show_progress": "hidden"}

        def answered(event, **options):
            (event.then(process, None, [chat], **{**work, **options})
             .then(show_chart, None, chart_out, **steps)
             .then(show_panel, None, panel_out, **steps)
             .then(show_details, None, detail_out, **steps)
             .then(None, [share], None, js="(q) => { if (q) history.replaceState(null, '', q); }"))

        # The box is emptied in the browser at once (a reply from the server would land later
        # and erase what the user typed meanwhile); the text travels through a hidden holder.
        for trigger in (msg.submit, send.click):
            answered(trigger(None, [msg], [sent, msg], js="(m) => [m, '']", **fast)
                     .then(submit_message, [sent], [chat, hint], **fast))
        answered(chat.example_select(pick_example, None, [chat, hint], **fast))
        answered(again.click(submit_edit_button, fields, [chat], **fast))
        answered(upload.upload(upload_config, [upload], [chat], **fast))
        answered(drop.click(drop_carried, None, [chat], **fast))
        compare_two.click(compare_setups, None, [plot, chart_note], **fast)
        compare.click(compare_precisions, None, [chat], api_visibility="private", concurrency_id="answer",
                      concurrency_limit=CHAT_CONCURRENCY)
        # A choice re-answers once it is made (Gradio's ``input``: an option clicked, or picked
        # with the keys and the box left); leaving a dropdown without changing it sends nothing
        # (PAGE_JS stops that blur). Numbers and a typed model (a Hub id, config text) on Enter
        # or the button.
        for comp in fields:
            event = comp.input if isinstance(comp, gr.Dropdown | gr.Checkbox) else comp.submit
            answered(event(submit_edit, fields, [chat], **fast))
        share.change(lambda q: ui("share_link", href=share_href(q)) if q else "",
                     [share], [share_link], queue=False, api_visibility="private")
        # The how-to's code is rendered when its section is open (``show_howto``), not by every answer.
        howto_box.expand(show_howto, None, [howto], queue=False, api_visibility="private", show_progress="hidden")
        howto_box.collapse(hide_howto, None, None, queue=False, api_visibility="private", show_progress="hidden")
        # The chat's trash button starts a new conversation: earlier questions no longer apply.
        (chat.clear(new_conversation, None, answer_outputs, api_visibility="private", queue=False)
         .then(None, None, None, js="() => { history.replaceState(null, '', location.pathname); }"))
        (sim.click(simulate_start, None, [sim], queue=False, api_visibility="private")
         .then(simulate, fields, [chat, sim, sim_note], api_visibility="private",
               concurrency_id="simulate", concurrency_limit=SIMULATE_CONCURRENCY))
        # Opening the page: a shared link's question is answered; without one nothing is, and the
        # server is not even asked (the browser reads the query; a page opened without one costs
        # the server no event: 20 tabs opening at once used to send it 40). Its own group,
        # unlimited and without overlays, so a freshly opened tab never waits behind other users'
        # answers (under 50 API clients it did, with a status overlay over the Ask button).
        link_query = gr.Textbox(visible="hidden", elem_id="sw-link-query")
        demo.load(None, None, [link_query], js="() => location.search.slice(1)")
        answered(link_query.change(open_link, [link_query], [chat], queue=False, api_visibility="private",
                                   show_progress="hidden"),
                 concurrency_id="open", concurrency_limit=None, show_progress="hidden")
        demo.unload(close_tab)
        gr.api(chat_api, api_name="chat", concurrency_id="answer", concurrency_limit=CHAT_CONCURRENCY)
    # Queue positions are sent to waiting clients once a second, not to every waiting client at
    # every start (that is ~n^2/2 messages for a burst of n: 1,225 for 50 API clients).
    demo.queue(default_concurrency_limit=CHAT_CONCURRENCY, max_size=400, status_update_rate=1.0)
    return demo


# ----------------------------------------------------------------------------------------------
# Serving
# ----------------------------------------------------------------------------------------------


def page_routes() -> list:
    """Routes ahead of Gradio's: the answer downloads, and its front-end files from memory."""
    from bot.surfaces.web.assets import assets_route

    routes = [downloads.download_route(store, pool.run)]
    if (assets := assets_route()) is not None:
        routes.append(assets)
    return routes


def serve(host: str = "127.0.0.1", port: int = 7860, workers: int | None = None) -> None:
    """Start the page and block. Nothing leaves the machine: no share link, no analytics,
    the theme's fonts are the ones Gradio ships locally. Answers run in ``workers`` processes
    (default ``SHARDWISE_WEB_WORKERS``, else one per core; 0 = in this process)."""
    print("Preparing the knowledge index (built on first start, reused afterwards)...", flush=True)
    prepare_server()
    demo = build_demo()
    lighten_sessions(demo)
    answer_pool = pool.start(workers)
    if answer_pool is not None:
        print(f"answering in {answer_pool.workers} worker processes (warming up)", flush=True)
    print(f"shardwise page on http://{host}:{port}", flush=True)
    from starlette.middleware import Middleware

    from bot.surfaces.web.guard import MAX_UPLOAD_BYTES, BodyLimit, guarded_uvicorn

    try:
        # Bounded bodies, heads and slow connections (bot/surfaces/web/guard.py, issue 30).
        with guarded_uvicorn():
            demo.launch(server_name=host, server_port=port, share=False, inbrowser=False, show_error=False,
                        theme=gr.themes.Default(primary_hue="blue"), css=CSS, js=PAGE_JS, footer_links=["api"],
                        ssr_mode=False, pwa=False, mcp_server=False, enable_monitoring=False,
                        max_file_size=MAX_UPLOAD_BYTES, prevent_thread_lock=True,
                        app_kwargs={"routes": page_routes(), "middleware": [Middleware(BodyLimit)]})
        demo.block_thread()
    finally:
        pool.stop()  # (a killed server's workers leave by themselves: they watch their parent)


@click.command(name="app")
@click.option("--host", default="127.0.0.1", show_default=True, help="Interface to bind.")
@click.option("--port", default=7860, show_default=True, type=int, help="Port to listen on.")
def app_command(host: str, port: int) -> None:
    """Start the Gradio chat page."""
    serve(host, port)
