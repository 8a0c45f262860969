"""The Gradio chat page: chat, editable setup panel, interactive memory chart, simulate, how-to,
shareable link and downloads.

This module only presents what ``bot.llm.answer`` / ``answer_for_setup`` / the benchmark simulator
return; it computes no figure of its own. Its parts live in ``bot/web/``: ``answer_view`` (each
message as one inert HTML block; the answer from ``answer.sections``, long parts collapsed),
``chart`` (Plotly chart, matplotlib for the PNG/SVG download, the chart in words),
``conversation`` (the per-tab message queue kept on the server), ``share`` (setup <-> link),
``downloads`` (the answer's files, made when a link is followed), ``assets`` (Gradio's front-end
files from memory, compressed once) and ``pool`` (the answering worker processes).

Messages: every submitted message is appended to the tab's conversation at once (no queue,
milliseconds) and one worker per tab answers the pending ones oldest first, each answer filled
into its own place, so messages sent while another is answered are neither lost nor reordered.

The setup panel shows each field's origin: stated, assumed (highlighted, and named in the
answer) or missing (⚠). An edit sends only what the user stated or changed: assumed fields are
assumed again for the new setup (so two nodes get an inter-node link, GPT-2 a sequence length
its positions hold). Empty number fields mean unknown.

``serve()`` is what ``python app.py`` and ``shardwise app`` run: one torch thread, index built
if absent, bound to 127.0.0.1 by default, no share link, no analytics, fonts served locally. The
answers (page and ``/chat``) run in warm worker processes, one per core (``bot/web/pool.py``), so
answering is not held to one core by the GIL; the server's own process keeps Gradio's work, made
lighter per request by ``lighten_sessions``.
"""

from __future__ import annotations

import html
import json
import logging
import re
import time
from pathlib import Path
from typing import Any

import click

from bot.env import configure_offline, free_port, repo_root  # noqa: F401  (free_port: re-export)

configure_offline()  # before gradio reads its analytics and hub switches

import gradio as gr  # noqa: E402

from bot.answer import Answer, Citation  # noqa: E402
from bot.bench.store import ResultStore  # noqa: E402
from bot.setup import SetupError, TrainingSetup, resolve_setup  # noqa: E402
from bot.strategies import TRAINING_STRATEGIES, label  # noqa: E402
from bot.web import answer_view as view  # noqa: E402
from bot.web import downloads, pool  # noqa: E402
from bot.web import simulation as sim  # noqa: E402
from bot.web.answer_view import looks_chinese, sources_html  # noqa: E402,F401  (re-exports)
from bot.web.chart import (  # noqa: E402,F401  (re-exports for tests and other surfaces)
    chart_strategies,
    chart_summary,
    cjk_font,
    memory_figure,
    plotly_figure,
)
from bot.web.conversation import Conversation, Exchange, Store  # noqa: E402
from bot.web.share import framework_from_query, setup_from_query, setup_query  # noqa: E402
from bot.web.simulation import simulation_config, simulation_message  # noqa: E402,F401  (re-exports)

log = logging.getLogger(__name__)

# Longer messages are cut: no real question is this long, and the parser should not chew 100 KB.
MAX_MESSAGE_CHARS = 4000
# How much of a long message the chat shows back to its author.
ECHO_CHARS = 600
# Answers handed on at once (the rest wait in Gradio's queue): a full batch per answering process
# (``pool.MAX_BATCH``), so that under load a worker takes several waiting questions together and
# embeds them in one pass; simulations run one at a time because each one keeps a core busy for
# tens of seconds.
CHAT_CONCURRENCY = max(4, pool.MAX_BATCH * pool.default_workers())
SIMULATE_CONCURRENCY = 1
QUEUE_POLL_SECONDS = 0.005  # how often Gradio's queue looks for work (its default: 1 ms; see lighten_sessions)

EXAMPLES = [
    "MCP里用PyTorch做分布式训练，DDP和FSDP到底怎么选？ 7B模型",
    "DDP or FSDP for full fine-tuning Llama-2-7B on 8x A100 80GB with NVLink?",
    "Training Llama-2-13B on 2 nodes of 8x H100 80GB over 100 Gb/s Ethernet: FSDP full shard or hybrid shard?",
    "Can I train GPT-2 XL on 4x RTX 4090 24GB with plain DDP?",
]

# The panel's fields, in display order (DESIGN.md setup field names).
PANEL_FIELDS = (
    "model", "params_b", "gpu", "gpu_memory_gb", "gpu_count", "nodes", "intra_node_link",
    "inter_node_link", "precision", "optimizer", "finetune", "seq_len", "micro_batch",
    "activation_checkpointing",
    # run options (issue 14), under "Run options"; empty or off = PyTorch's defaults
    "optimizer_impl", "loss_impl", "grad_accum_steps", "torch_compile", "ddp_bucket_view",
)
INT_FIELDS = {"gpu_count", "nodes", "seq_len", "micro_batch", "grad_accum_steps"}
NUMBER_FIELDS = {"params_b", "gpu_memory_gb", "gpu_count", "nodes", "seq_len", "micro_batch", "grad_accum_steps"}
CHOICE_FIELDS = {"model", "gpu", "intra_node_link", "inter_node_link", "precision", "optimizer", "finetune",
                 "optimizer_impl", "loss_impl"}
BOOL_FIELDS = {"activation_checkpointing", "torch_compile", "ddp_bucket_view"}

FIELD_LABELS = {
    "model": ("Model", "模型"),
    "params_b": ("Model size (billion params, if no model)", "参数量（十亿，未选模型时）"),
    "gpu": ("GPU", "GPU"),
    "gpu_memory_gb": ("GPU memory GB (if no GPU)", "单卡显存 GB（未选 GPU 时）"),
    "gpu_count": ("GPUs in total", "GPU 总数"),
    "nodes": ("Nodes", "节点数"),
    "intra_node_link": ("Link inside a node", "节点内互联"),
    "inter_node_link": ("Link between nodes", "节点间互联"),
    "precision": ("Precision", "精度"),
    "optimizer": ("Optimizer", "优化器"),
    "finetune": ("Fine-tune mode", "微调方式"),
    "seq_len": ("Sequence length", "序列长度"),
    "micro_batch": ("Micro-batch per GPU", "每卡 micro-batch"),
    "activation_checkpointing": ("Activation checkpointing", "激活检查点"),
    "optimizer_impl": ("AdamW implementation", "AdamW 实现"),
    "loss_impl": ("Cross-entropy", "交叉熵实现"),
    "grad_accum_steps": ("Gradient accumulation steps", "梯度累积步数"),
    "torch_compile": ("torch.compile", "torch.compile"),
    "ddp_bucket_view": ("DDP gradient_as_bucket_view", "DDP gradient_as_bucket_view"),
}
ASSUMED_MARK = " · assumed"
MISSING_MARK = " ⚠"

# Colours chosen for >= 4.5:1 contrast on white (WCAG AA): blue-700 button, gray-600 placeholder.
CSS = """
.sw-missing input, .sw-missing textarea {
  outline: 2px solid #b45309 !important; background: #fffbeb !important;
}
.sw-assumed input, .sw-assumed textarea {
  outline: 2px dashed #b45309 !important; background: #fff7ed !important;
}
.sw-missing label span, .sw-assumed label span, .sw-missing span[data-testid="block-info"],
.sw-assumed span[data-testid="block-info"] { color: #92400e !important; }
#sw-send, #sw-send.primary { background: #1d4ed8 !important; color: #fff !important; border-color: #1d4ed8 !important; }
#sw-send:hover { background: #1e40af !important; }
textarea::placeholder, input::placeholder { color: #4b5563 !important; opacity: 1 !important; }
.sw-sources { margin-top: 0.6em; font-size: 0.92em; }
.sw-sources details { border-left: 3px solid #94a3b8; padding: 0.1em 0.6em; margin: 0.25em 0; }
.sw-more { border: 1px solid #cbd5e1; border-radius: 6px; padding: 0.2em 0.6em; margin: 0.4em 0; }
.sw-more > summary, .sw-sources summary { cursor: pointer; font-weight: 600; }
.sw-sources blockquote { margin: 0.3em 0; color: #334155; }
.sw-kind { font-size: 0.8em; padding: 0 0.4em; border-radius: 4px; background: #e2e8f0; color: #1e293b; }
.sw-headline { font-size: 1.08em; font-weight: 700; }
.sw-answer h3.sw-h { font-size: 1em; font-weight: 700; margin: 0.6em 0 0.2em 0; }
.sw-answer table { font-size: 0.92em; }
.sw-chip { display: inline-block; border: 1px dashed #b45309; background: #fff7ed; color: #7c2d12;
  border-radius: 4px; padding: 0 0.35em; margin: 0.1em 0.2em 0.1em 0; font-size: 0.92em; }
.sw-assumed-line { margin: 0.3em 0 0.5em 0; }
.sw-assumed-options { display: inline; }
.sw-assumed-options > summary { display: inline; cursor: pointer; font-size: 0.92em; color: #7c2d12; }
.sw-notice { color: #7c2d12; }
.sw-user .sw-note { display: block; font-size: 0.85em; color: #374151; }
.sw-answer table td, .sw-answer table th { padding: 0.15em 0.5em; white-space: nowrap; }
.sw-answer .sw-scroll { overflow-x: auto; max-width: 100%; }
/* A wide table scrolls inside its box; the strategy column stays in view while it does. */
.sw-answer .sw-scroll table tr > :first-child { position: sticky; left: 0; background: #fff; z-index: 1; }
.sw-answer .sw-scroll table tr.sw-chosen > :first-child { background: #eff6ff; }
/* Chinese text with Chinese (not Japanese) glyphs wherever it is tagged zh-CN. */
:lang(zh-CN) { font-family: "Noto Sans CJK SC", "Noto Sans SC", "Source Han Sans SC", "PingFang SC",
  "Microsoft YaHei", "WenQuanYi Zen Hei", sans-serif; }
textarea::placeholder, input::placeholder { font-style: italic; }
.sw-table tr.sw-chosen td { font-weight: 700; }
#sw-chat code, #sw-chat pre, #sw-howto-code code, #sw-howto-code pre { color: #111827 !important; }
#sw-chat pre .token, #sw-howto-code pre .token { color: #111827 !important; }
#sw-chat pre .token.keyword, #sw-howto-code pre .token.keyword { color: #1d4ed8 !important; }
#sw-chat pre .token.string, #sw-howto-code pre .token.string { color: #166534 !important; }
#sw-chat pre .token.comment, #sw-howto-code pre .token.comment { color: #4b5563 !important; }
#sw-missing-note, #sw-hint, #sw-sim-note, #sw-chart-note, #sw-share { min-height: 0; }
#sw-hint p { color: #92400e; margin: 0; }
#sw-chart-note p { font-size: 0.9em; color: #374151; margin: 0.2em 0; }
.sw-narrow { display: none; }
#sw-intro h1 { font-size: 1.5em; margin: 0.3em 0; }
footer .show-api, footer a, footer button { color: #374151 !important; }
@media (max-width: 760px) {
  .sw-wide { display: none; }
  .sw-narrow { display: inline; }
  #sw-intro h1 { font-size: 1.25em; margin: 0.2em 0; }
  #sw-intro p { font-size: 0.92em; margin: 0.2em 0; }
  #sw-chat { height: calc(100svh - 300px) !important; min-height: 300px; }
}
"""

# The page's script: scroll to the start of each new answer (headline and table in view, not the
# bottom of a long answer), to the bottom when the user's own message appears, and keep the
# address bar's link in step with the answer shown.
PAGE_JS = """
() => {
  const seen = new Set();
  const scroller = (el) => {
    for (let p = el.parentElement; p && p !== document.body; p = p.parentElement) {
      const s = getComputedStyle(p);
      if ((s.overflowY === 'auto' || s.overflowY === 'scroll') && p.scrollHeight > p.clientHeight) return p;
    }
    return null;
  };
  const show = (el, atBottom) => {
    const box = scroller(el);
    const target = el.closest('.message') || el;
    if (box) {
      if (atBottom) { box.scrollTop = box.scrollHeight; }
      else { box.scrollTop += target.getBoundingClientRect().top - box.getBoundingClientRect().top - 12; }
    }
    const r = target.getBoundingClientRect();
    if (!atBottom && (r.top < 0 || r.top > window.innerHeight - 80)) target.scrollIntoView({block: 'start'});
  };
  const check = () => {
    const chat = document.querySelector('#sw-chat');
    if (!chat) return;
    let answer = null, asked = null;
    chat.querySelectorAll('.sw-answer, .sw-user').forEach((el) => {
      const m = el.className.match(/sw-([aq])-(x\\d+)/);
      if (!m || seen.has(m[1] + m[2])) return;
      seen.add(m[1] + m[2]);
      if (m[1] === 'a') answer = el; else asked = el;
    });
    if (answer) show(answer, false); else if (asked) show(asked, true);
  };
  // Two ARIA faults in Gradio's own markup (axe-core: critical and serious): the examples box
  // says role=list but holds buttons, and the empty chart box has a label but no role.
  const fixAria = () => {
    document.querySelectorAll('.examples[role="list"]').forEach((el) => {
      el.setAttribute('role', 'group'); el.setAttribute('aria-label', 'Example questions');
    });
    document.querySelectorAll('.empty[aria-label]:not([role])').forEach((el) => el.setAttribute('role', 'img'));
    // Code that scrolls sideways must be reachable by keyboard (Tab, then the arrow keys).
    document.querySelectorAll('pre:not([tabindex])').forEach((el) => el.setAttribute('tabindex', '0'));
  };
  fixAria();
  new MutationObserver(() => requestAnimationFrame(() => { fixAria(); check(); }))
    .observe(document.body, {childList: true, subtree: true});
  window.__swSeen = seen;

  // Panel dropdowns (Gradio's): leaving one by Tab fired its "input" event though nothing was
  // chosen (one re-answer request per dropdown on a Tab pass), left its option list open (lists
  // piled up) and Tab stepped into the list, which then vanished, dropping focus on the page.
  // A blur of a dropdown the user did not touch (no key but Tab, no click in its list) is
  // stopped before Gradio sees it and the list closed; Tab skips the option lists.
  const isDropdown = (el) => el && el.matches && el.matches('#sw-setup input[role="combobox"]');
  const touched = new WeakMap();
  let back = false;
  const tabbable = () => [...document.querySelectorAll(
      'input:not([type=hidden]), textarea, button, select, a[href], [tabindex]:not([tabindex="-1"])')]
    .filter((el) => !el.closest('.option-list') && !el.disabled && el.offsetParent !== null);
  document.addEventListener('keydown', (e) => {
    if (e.key === 'Tab') back = e.shiftKey;
    else if (isDropdown(e.target) && !['Shift', 'Escape'].includes(e.key)) touched.set(e.target, true);
  }, true);
  document.addEventListener('pointerdown', (e) => {
    const block = e.target.closest && e.target.closest('#sw-setup .block');
    const input = block && block.querySelector('input[role="combobox"]');
    if (input) touched.set(input, true);
  }, true);
  document.addEventListener('focusin', (e) => {
    if (isDropdown(e.target)) { touched.set(e.target, false); return; }
    const list = e.target.closest && e.target.closest('#sw-setup .option-list');
    if (!list) return;
    const block = list.closest('.block');
    const all = tabbable();
    const after = all.filter((el) => block.compareDocumentPosition(el) & Node.DOCUMENT_POSITION_FOLLOWING && !block.contains(el));
    const before = all.filter((el) => block.compareDocumentPosition(el) & Node.DOCUMENT_POSITION_PRECEDING);
    const next = back ? before[before.length - 1] : after[0];
    if (next) next.focus();
  }, true);
  // A [n] marker opens its source entry (and the folded sources around it) in the same answer.
  document.addEventListener('click', (e) => {
    const ref = e.target.closest && e.target.closest('a.sw-ref');
    if (!ref) return;
    const n = (ref.className.match(/sw-ref-(\\d+)/) || [])[1];
    const answer = ref.closest('.sw-answer');
    const entry = n && answer && answer.querySelector('.sw-src-' + n);
    if (!entry) return;
    e.preventDefault();
    for (let d = entry; d; d = d.parentElement && d.parentElement.closest('details')) d.open = true;
    entry.scrollIntoView({block: 'nearest'});
    const summary = entry.querySelector('summary');
    if (summary) summary.focus();
  }, true);
  document.addEventListener('blur', (e) => {
    const input = e.target;
    if (!isDropdown(input) || touched.get(input) !== false) return;
    e.stopImmediatePropagation();
    input.dispatchEvent(new KeyboardEvent('keydown', {key: 'Escape', code: 'Escape', bubbles: true}));
  }, true);
}
"""

store = Store()


# ----------------------------------------------------------------------------------------------
# Text in, text out
# ----------------------------------------------------------------------------------------------


def prepare_message(text: str | None) -> tuple[str, str | None]:
    """The message to answer (stripped, cut to MAX_MESSAGE_CHARS) and a notice if it was cut.

    Returns ``("", notice)`` for an empty message: the caller shows the notice and asks nothing.
    """
    text = (text or "").strip()
    if not text:
        return "", "Please type a question first, e.g. the model, the GPUs and how many. / 请先输入问题（模型、GPU 型号和数量）。"
    if len(text) <= MAX_MESSAGE_CHARS:
        return text, None
    if looks_chinese(text[:MAX_MESSAGE_CHARS]):
        notice = f"你的消息有 {len(text):,} 个字符，只读取了前 {MAX_MESSAGE_CHARS:,} 个。"
    else:
        notice = f"Your message was {len(text):,} characters long; only the first {MAX_MESSAGE_CHARS:,} were read."
    return text[:MAX_MESSAGE_CHARS], notice


def inert(text: str) -> str:
    """User text made safe to show as HTML: tags become visible text, never elements."""
    return html.escape(text, quote=False)


_CODE = re.compile(r"(```.*?```|`[^`\n]*`)", re.S)


def inert_markdown(markdown: str) -> str:
    """Markdown with every raw HTML tag made visible text (code spans and blocks left as they are)."""
    parts = _CODE.split(markdown)
    return "".join(p if i % 2 else p.replace("<", "&lt;") for i, p in enumerate(parts))


def echo(text: str) -> str:
    """How the user's own message is shown back (escaped text, long pastes shortened)."""
    if len(text) > ECHO_CHARS:
        text = text[:ECHO_CHARS] + f" … [{len(text):,} chars]"
    return inert(text)


def answer_markdown(answer: Answer, notice: str | None = None) -> str:
    """The answer as markdown with the sources as HTML entries (kept for other callers)."""
    parts = [f"> {inert(notice)}"] if notice else []
    parts.append(inert_markdown(answer.text))
    sources = sources_html(answer.citations, answer.language)
    if sources:
        parts.append(sources)
    return "\n\n".join(parts)


def answer_plain_markdown(answer: Answer, notice: str | None = None) -> str:
    """The ``/chat`` API result: plain markdown (no HTML), sources as a numbered list."""
    return view.plain_markdown(answer, notice)


def user_message_html(text: str, exchange_id: str, note: str | None = None, kind: str = "ask") -> str:
    shown = text if len(text) <= ECHO_CHARS else text[:ECHO_CHARS] + f" … [{len(text):,} chars]"
    # Gradio's sanitizer drops data-* attributes; the message id rides in a class.
    return view.user_html(shown, note=note, kind=kind).replace('class="sw-user ', f'class="sw-user sw-q-{exchange_id} ', 1)


# ----------------------------------------------------------------------------------------------
# The setup panel
# ----------------------------------------------------------------------------------------------


def display_value(name: str, value: Any) -> Any:
    """A setup value as its panel component shows it ('' for unknown numbers)."""
    if name in BOOL_FIELDS:
        return bool(value)
    if name in NUMBER_FIELDS:
        if value is None or value == "":
            return ""
        return f"{int(value)}" if float(value).is_integer() else f"{float(value):g}"
    return value


def panel_values(setup: dict) -> list[Any]:
    """Panel component values for an answer's setup dict."""
    return [display_value(f, setup.get(f)) for f in PANEL_FIELDS]


# The panel's own messages, in the chat's language (zh, en).
PANEL_WORDS = {
    "not_number": ("{label}：{value!r} 不是数字", "{label}: {value!r} is not a number"),
    "not_whole": ("{label}：{value!r} 不是整数", "{label}: {value!r} is not a whole number"),
    "invalid": ("设置里有无效的值：{problems}", "The setup has invalid values: {problems}"),
    "model_box": ("模型框：{err}", "model box: {err}"),
    "config_file": ("config.json：{err}", "config.json: {err}"),
}


def panel_words(key: str, language: str, **values: Any) -> str:
    return PANEL_WORDS[key][0 if language == "zh" else 1].format(**values)


def read_panel(values: list[Any], language: str = "en") -> tuple[dict[str, Any], list[str]]:
    """Panel values -> typed values (None = unknown) and a message per unreadable number (in
    ``language``)."""
    col = 1 if language == "zh" else 0
    out: dict[str, Any] = {}
    problems = []
    for name, value in zip(PANEL_FIELDS, values, strict=True):
        if isinstance(value, str):
            value = value.strip()
        if value is None or value == "":
            out[name] = None
            continue
        if name in NUMBER_FIELDS:
            try:
                number = float(str(value).replace(",", ""))
            except ValueError:
                problems.append(panel_words("not_number", language, label=FIELD_LABELS[name][col], value=value))
                out[name] = None
                continue
            if name in INT_FIELDS:
                if not number.is_integer():
                    problems.append(panel_words("not_whole", language, label=FIELD_LABELS[name][col], value=value))
                    out[name] = None
                    continue
                number = int(number)
            out[name] = number
        elif name in BOOL_FIELDS:
            out[name] = bool(value)
        else:
            out[name] = value
    return out, problems


def _same(name: str, a: Any, b: Any) -> bool:
    return display_value(name, a) == display_value(name, b)


def edited_setup(values: list[Any], stated: dict, shown: dict, language: str = "en") -> tuple[dict, list[str], list[str]]:
    """The setup to answer after a panel edit: what the user stated before, updated with the
    fields changed since the panel last showed an answer. Returns (setup dict, changed fields,
    problems). Assumed values the user left alone are not sent: they are assumed again for the
    new setup (two nodes then get an inter-node link, a model its own sequence limit)."""
    from bot.catalog import UnknownNameError, lookup_gpu, lookup_model

    current, problems = read_panel(values, language)
    changed = [f for f in PANEL_FIELDS if not _same(f, current[f], shown.get(f))
               and not (f in problems and current[f] is None)]
    data = dict(stated)
    for name in changed:
        if current[name] is None:
            data.pop(name, None)
        else:
            data[name] = current[name]
    # A catalog model or GPU defines its own size: choosing one drops the old size (unless the
    # same edit changed the size too), else the two would contradict.
    if "model" in changed and data.get("model") and "params_b" not in changed:
        try:
            if not lookup_model(data["model"]).approximate:
                data.pop("params_b", None)
        except UnknownNameError:
            pass
    if "gpu" in changed and data.get("gpu"):
        try:
            lookup_gpu(data["gpu"])
            for follows in ("gpu_memory_gb", "intra_node_link"):
                if follows not in changed:
                    data.pop(follows, None)
        except UnknownNameError:
            pass
    if {"gpu_count", "nodes"} & set(changed):
        data.pop("gpus_per_node", None)  # derived again from count / nodes
    nodes = data.get("nodes")
    if nodes == 1:
        data.pop("inter_node_link", None)
    elif data.get("inter_node_link") == "none" and (nodes or 0) > 1 and "inter_node_link" not in changed:
        data.pop("inter_node_link", None)  # "none" was the one-node value; several nodes need a link
    return data, changed, problems


MAX_CONFIG_BYTES = 2_000_000  # a config.json is a few KB
_HUB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,95}/[A-Za-z0-9][A-Za-z0-9._-]{0,95}$")


def model_from_box(value: str | dict, name: str | None = None):
    """The ``ModelSpec`` for what the model box holds when it is not a catalog name: a Hub id
    (``org/name``, config only; offline it must be cached) or pasted ``config.json`` text, or an
    uploaded config (a dict). ``None`` for a catalog name or plain text (the answer then says the
    model is unknown). Raises ``ValueError`` with a message for a config it cannot read.
    Never reads a server path: a web user's text is not a file name."""
    from bot.catalog import UnknownNameError, lookup_model
    from bot.catalog.hf_config import fetch_hub_config, model_from_hf_config

    if isinstance(value, dict):
        return model_from_hf_config(value, name)
    text = (value or "").strip()
    try:
        lookup_model(text)
        return None
    except UnknownNameError:
        pass
    if text.startswith("{"):
        if len(text) > MAX_CONFIG_BYTES:
            raise ValueError("that is not a config.json (over 2 MB)")
        return model_from_hf_config(json.loads(text), name)
    if _HUB_ID.match(text):
        return model_from_hf_config(fetch_hub_config(text), name or text)
    return None


def apply_model_config(data: dict, spec) -> str:
    """Use a config's model: its parameter count (the calculator then takes a model of that size);
    returns the line that says so."""
    data.pop("model", None)
    data["params_b"] = round(float(spec.params_b), 3)
    return f"model from config: {spec.name}, {spec.params_b:.2f}B parameters"


def setup_from_panel(values: list[Any]) -> TrainingSetup:
    """The panel's values as a whole setup (every non-empty field; a catalog model or GPU drops
    the size it defines). Raises pydantic's ValidationError for values of the wrong type."""
    from bot.catalog import UnknownNameError, lookup_gpu, lookup_model

    current, _ = read_panel(values)
    data = {k: v for k, v in current.items() if v is not None}
    try:
        if data.get("model") and not lookup_model(data["model"]).approximate:
            data.pop("params_b", None)
    except UnknownNameError:
        pass
    try:
        if data.get("gpu"):
            lookup_gpu(data["gpu"])
            data.pop("gpu_memory_gb", None)
    except UnknownNameError:
        pass
    if data.get("nodes") == 1:
        data.pop("inter_node_link", None)
    return TrainingSetup(**data)


def setup_summary(setup: TrainingSetup | dict, language: str = "en") -> str:
    """What was set, in words ("GPU count 16, link between nodes ethernet"), for the chat's
    record of an edit or a shared link."""
    data = setup.model_dump() if isinstance(setup, TrainingSetup) else setup
    zh = language == "zh"
    on_off = {True: ("开", "on"), False: ("关", "off")}
    parts = []
    for k, v in data.items():
        if v is None:
            continue
        name = view.FIELD_NAMES.get(k, FIELD_LABELS.get(k, (k, k)))[1 if zh else 0]
        shown = on_off[v][0 if zh else 1] if isinstance(v, bool) else (display_value(k, v) if k in NUMBER_FIELDS else v)
        parts.append(f"{name} {shown}")
    return ("，" if zh else ", ").join(parts) or ("（空设置）" if zh else "(empty setup)")


def resolved_for(answer: Answer):
    """The answer's setup resolved (catalog looked up), or ``None`` when fields are still missing."""
    fields = TrainingSetup.model_fields
    try:
        setup = TrainingSetup(**{k: v for k, v in answer.setup.items() if k in fields and v is not None})
        return resolve_setup(setup)
    except (SetupError, ValueError):
        return None


def howto_code(answer: Answer) -> str:
    """The how-to for the recommended strategy, from the answer's ``sections.howto`` (the page
    never re-resolves or recomputes an answer to build it)."""
    if answer.sections.howto:
        return "\n\n".join(f"**{h.title}**\n\n```{h.language}\n{h.code}\n```" for h in answer.sections.howto)
    if answer.recommendation.strategy not in TRAINING_STRATEGIES:
        return "*Ask about a training setup first: the snippet follows the recommended strategy.*"
    return "*Fill in the highlighted setup fields to get a runnable snippet.*"


# ----------------------------------------------------------------------------------------------
# Answers -> outputs
# ----------------------------------------------------------------------------------------------

# Outputs every answering handler returns, in this order.
N_PANEL = len(PANEL_FIELDS)


def _skip_outputs() -> list[Any]:
    """No change to any answer output (chart, chart text, panel, notes, how-to, simulate, link,
    downloads)."""
    return [gr.skip()] * (2 + N_PANEL + 6)


def panel_updates(answer: Answer, sources: dict[str, str]) -> list[Any]:
    missing = set(answer.missing) | set(answer.questions)
    if {"gpu", "gpu_memory_gb"} & missing:
        missing |= {"gpu", "gpu_memory_gb"}
    if {"model", "params_b"} & missing:
        missing |= {"model", "params_b"}
    updates = []
    for name, value in zip(PANEL_FIELDS, panel_values(answer.setup), strict=True):
        if name in missing:
            classes, mark = ["sw-missing"], MISSING_MARK
        elif sources.get(name) == "assumed":
            classes, mark = ["sw-assumed"], ASSUMED_MARK
        else:
            classes, mark = [], ""
        updates.append(gr.update(value=value, elem_classes=classes, label=FIELD_LABELS[name][0] + mark))
    return updates


def panel_note(answer: Answer, sources: dict[str, str]) -> str:
    zh = answer.language == "zh"
    missing = [f for f in PANEL_FIELDS if f in set(answer.missing) | set(answer.questions)]
    assumed = [f for f in PANEL_FIELDS if sources.get(f) == "assumed" and f not in missing]
    lines = []
    if missing:
        names = "、".join(FIELD_LABELS[f][1] for f in missing) if zh else ", ".join(FIELD_LABELS[f][0] for f in missing)
        lines.append(f"**⚠ 需要补充：** {names}。" if zh else f"**⚠ Needed:** {names}.")
    if assumed:
        names = "、".join(FIELD_LABELS[f][1] for f in assumed) if zh else ", ".join(FIELD_LABELS[f][0] for f in assumed)
        lines.append(f"**假设（虚线框）：** {names}。改了就按你的值重新回答。" if zh else
                     f"**Assumed (dashed):** {names}. Change any to re-answer with your value.")
    return "\n\n".join(lines)


def lang_tagged(markdown: str, language: str) -> str:
    """Markdown for a panel note, tagged zh-CN when Chinese (the page itself is tagged en, so
    screen readers and fonts would treat the Chinese as English or Japanese)."""
    if not markdown or language != "zh":
        return markdown
    return f'<div lang="zh-CN">\n\n{markdown}\n\n</div>'


def answer_outputs(conv: Conversation, answer: Answer) -> list[Any]:
    """Chart, chart text, panel, notes, how-to, simulate button and note, share query, download links."""
    sources = view.field_sources(answer, set(conv.stated))
    config, why_not, skipped = sim.simulation_config(answer)
    sim_note = why_not if config is None else sim.wait_note(answer, config, skipped, ResultStore())
    lang = answer.language
    return [plotly_figure(answer), lang_tagged(chart_summary(answer), lang), *panel_updates(answer, sources),
            lang_tagged(panel_note(answer, sources), lang), howto_code(answer),
            gr.update(interactive=config is not None and not conv.simulating), lang_tagged(sim_note, lang),
            setup_query(conv.stated, answer.language,
                        conv.questions[-1] if conv.questions and not conv.stated else None, conv.framework),
            downloads.links_markdown(conv.key, conv.answer_id or "", answer)]


def _error_html(language: str, message: str, exchange_id: str) -> str:
    return (f'<div class="sw-answer sw-error sw-a-{exchange_id}" lang="{view.html_lang(language)}">'
            f"<p>{html.escape(message)}</p></div>")


def _stated_from(answer: Answer, parsed_setup: dict | None) -> dict:
    """The fields the user gave, with the values the answer used."""
    if answer.provenance or answer.sections.setup_read:
        sources = view.field_sources(answer)
        return {k: answer.setup.get(k) for k, s in sources.items() if s != "assumed" and answer.setup.get(k) is not None}
    return {k: v for k, v in (parsed_setup or {}).items() if v is not None}


def run_exchange(conv: Conversation, ex: Exchange) -> Answer | None:
    """Answer one exchange; fills ``ex.answer_html`` (an apology on failure) and the tab state."""
    # The answer every surface gives (the LLM when configured), in a worker process when the
    # server runs a pool (``bot.web.pool``), else here.
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
            answer = pool.run(pool.answer_setup, TrainingSetup(**data), language, conv.framework)
            notice = None
            conv.stated = data
    except Exception as err:  # a bug must not take the page down; the log has the traceback
        from pydantic import ValidationError

        if isinstance(err, ValidationError | SetupError | pool.SetupProblem):
            if isinstance(err, ValidationError):
                problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in err.errors())
            elif isinstance(err, SetupError):
                problems = "; ".join(str(p) for p in err.problems)
            else:
                problems = str(err)
            message = panel_words("invalid", language, problems=problems)
        else:
            log.exception("answering failed")
            message = "Sorry, answering failed on the server (see its log). / 服务器出错，请查看日志。"
        with conv.lock:
            ex.answer_html = _error_html(language, message, ex.id)
        return None
    conv.answer = answer.model_dump()
    conv.answer_id = ex.id
    conv.shown = {name: answer.setup.get(name) for name in PANEL_FIELDS}
    with conv.lock:
        ex.answer_html = view.answer_html(answer, stated=set(conv.stated), notice=notice, answer_id=ex.id)
    return answer


def process(request: gr.Request):
    """The tab's worker: answers pending exchanges oldest first, showing each as it lands.
    Returns at once when another event of this tab is already working (it takes ours too)."""
    conv = store.get(request.session_hash if request else None)
    token = conv.claim()
    if token is None:
        yield [gr.skip()] + _skip_outputs()
        return
    try:
        answered = False
        while (ex := conv.next_pending(token)) is not None:
            answer = run_exchange(conv, ex)
            answered = True
            if answer is None:
                yield [conv.messages()] + _skip_outputs()
            else:
                yield [conv.messages(), *answer_outputs(conv, answer)]
        if not answered:
            yield [gr.skip()] + _skip_outputs()
    finally:
        conv.release(token)


# ----------------------------------------------------------------------------------------------
# Events (queue=False ones append at once; ``process`` answers)
# ----------------------------------------------------------------------------------------------

HINT = "Type a question first (the model, the GPUs and how many). / 请先输入问题（模型、GPU 型号和数量）。"


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
            return _refused_edit(conv, language, panel_words("model_box", language, err=err))
        if spec is not None:
            note = apply_model_config(data, spec)
            shown = {**{k: v for k, v in shown.items() if k != "model"}, "params_b": data["params_b"]}
    return _add_edit(conv, data, language, shown, note)


def _add_edit(conv: Conversation, data: dict, language: str, shown: dict, note: str | None = None,
              kind: str = "edit"):
    zh = language == "zh"
    # ``raw`` makes the same edit sent twice at once one message (a clicked option fires
    # Gradio's input event, then again as the box loses focus).
    ex = Exchange(kind=kind, user_html="", payload={"setup": data, "language": language},
                  raw=f"{kind}:{json.dumps(data, sort_keys=True, default=str)}")
    ex.user_html = user_message_html(("（修改设置）" if zh else "(edited setup) ") + setup_summary(shown, language), ex.id,
                                     kind=kind, note=note)
    conv.add(ex)
    return conv.messages()


def _refused_edit(conv: Conversation, language: str, message: str):
    ex = Exchange(kind="edit", user_html="", payload=None)
    ex.user_html = user_message_html("（修改设置）" if language == "zh" else "(edited setup)", ex.id, kind="edit")
    ex.answer_html = _error_html(language, message, ex.id)
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
            raise ValueError("that is not a config.json (over 2 MB)")
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
        ex.user_html = user_message_html(("（分享的设置）" if language == "zh" else "(shared setup) ")
                                         + setup_summary(data, language), ex.id, kind="share")
        conv.add(ex)
    return conv.messages()


def new_conversation(request: gr.Request) -> list[Any]:
    """Outputs for a cleared chat: a fresh conversation and an empty chart, panel and how-to."""
    store.reset(request.session_hash if request else None)
    panel = [gr.update(value=display_value(name, None), elem_classes=[], label=FIELD_LABELS[name][0])
             for name in PANEL_FIELDS]
    return [None, "", *panel, "", "", gr.update(interactive=False), "", "", ""]


def close_tab(request: gr.Request) -> None:
    store.drop(request.session_hash if request else None)


# ----------------------------------------------------------------------------------------------
# Simulate
# ----------------------------------------------------------------------------------------------


def simulate_start():
    return gr.update(interactive=False)


def simulate(request: gr.Request, progress=gr.Progress(), *values):  # noqa: B008
    """Simulate the last answer's recommended configuration (its variant included); says which
    setup it measured, whether the figure came from the store, and, when another answer landed
    while it ran, which question it belongs to (Gradio injects ``progress``)."""
    from bot.bench.simulate import simulate_cached

    conv = store.get(request.session_hash if request else None)
    if not conv.answer:
        return conv.messages(), gr.update(interactive=False), "Ask a question first; the simulation runs the answer's setup."
    answer = Answer.model_validate(conv.answer)
    answer_id, question = conv.answer_id, _question_of(conv, conv.answer_id)
    zh = answer.language == "zh"
    cfg, why_not, skipped = sim.simulation_config(answer)
    if cfg is None:
        return conv.messages(), gr.update(interactive=False), why_not
    with conv.lock:
        if conv.simulating:
            return gr.skip(), gr.skip(), gr.skip()
        conv.simulating = True
    try:
        results = ResultStore()
        setup_line = sim.setup_line(cfg, answer.language)
        pending_edit = bool(values) and edited_setup(list(values), conv.stated, conv.shown)[1]
        note = None
        if pending_edit:
            note = ("面板里的修改还没回答；这里模拟的是上一条回答的设置。" if zh else
                    "The panel has edits not answered yet; this simulates the last answer's setup.")
        ex = Exchange(kind="simulate", user_html="", payload=None)
        ex.user_html = user_message_html(("模拟精确显存：" if zh else "Simulate exact memory: ")
                                         + sim.chosen_label(answer) + " · " + setup_line,
                                         ex.id, note=note, kind="simulate")
        conv.add(ex)
        cached = results.find_simulation(cfg) is not None
        wait = sim.wait_note(answer, cfg, skipped, results) if not cached else sim.words("wait_stored", answer.language)
        progress(0.0, desc=sim.words("running", answer.language, name=sim.chosen_label(answer), wait=wait))
        started = time.monotonic()
        try:
            run_id, result = simulate_cached(cfg, progress=lambda m, f: progress(f, desc=m))
        except Exception as err:  # e.g. a setup the simulator cannot build; say so, keep the page alive
            log.exception("simulation failed")
            with conv.lock:
                ex.answer_html = _error_html(answer.language, ("模拟失败：" if zh else "Simulation failed: ")
                                             + str(err), ex.id)
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


def _question_of(conv: Conversation, exchange_id: str | None) -> str:
    """The words of the message an answer replied to (a question as typed, an edit as shown)."""
    for ex in conv.exchanges:
        if ex.id == exchange_id:
            if ex.raw:
                return ex.raw
            return html.unescape(re.sub(r"<[^>]+>", " ", ex.user_html)).strip()
    return ""


# ----------------------------------------------------------------------------------------------
# Strategy x precision
# ----------------------------------------------------------------------------------------------

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


# ----------------------------------------------------------------------------------------------
# /chat API
# ----------------------------------------------------------------------------------------------


def chat_api(message: str) -> str:
    """``/chat``: one question (no conversation) -> the markdown answer with its sources
    (answered in a worker process when the server runs a pool, ``bot.web.pool``)."""
    text, notice = prepare_message(message)
    if not text:
        return notice or ""
    return pool.run(pool.chat_markdown, text, notice)


# ----------------------------------------------------------------------------------------------
# The page
# ----------------------------------------------------------------------------------------------

INTRO = (
    "# shardwise — DDP or FSDP for my setup?\n"
    "Ask in English or 中文. Every figure is computed for your setup or cited. "
    '<span class="sw-wide">Edit the setup on the right to re-answer, or simulate it for exact memory.</span>'
    '<span class="sw-narrow">The setup, chart and simulate are below the chat.</span>'
)


def share_href(query: str) -> str:
    """The link's target for markdown: the query string with markdown's link delimiters escaped
    (setup_query url-encodes values, so only its own characters remain)."""
    return query.replace("\\", "%5C").replace("(", "%28").replace(")", "%29").replace(" ", "%20")


def build_demo():
    """The Blocks app (not launched)."""
    from bot.catalog import list_gpus, list_models

    with gr.Blocks(title="shardwise: DDP or FSDP?", analytics_enabled=False) as demo:
        gr.Markdown(INTRO, elem_id="sw-intro")
        with gr.Row(equal_height=False):
            with gr.Column(scale=3, min_width=360):
                chat = gr.Chatbot(label="Conversation", show_label=False, elem_id="sw-chat", height=640,
                                  buttons=["copy"], feedback_options=None, allow_tags=False,
                                  sanitize_html=True, layout="panel", group_consecutive_messages=False,
                                  autoscroll=False, latex_delimiters=[],
                                  examples=[{"text": e, "display_text": e} for e in EXAMPLES])
                with gr.Row(equal_height=True):
                    msg = gr.Textbox(placeholder="e.g. DDP or FSDP for Llama-2-7B on 8x A100 80GB?",
                                     label="Your question (English or 中文)", show_label=False, lines=1,
                                     max_lines=8, scale=5, elem_id="sw-msg", autofocus=False)
                    send = gr.Button("Ask", variant="primary", scale=1, min_width=80, elem_id="sw-send")
                hint = gr.Markdown("", elem_id="sw-hint")
                sent = gr.Textbox(visible="hidden", elem_id="sw-sent")
                with gr.Row():
                    share = gr.Textbox(visible="hidden", elem_id="sw-share-query")
                # Markdown, not gr.HTML: gr.HTML's module (107 KB with a template engine) would be
                # fetched and parsed before the page first renders, for one link.
                share_link = gr.Markdown("", elem_id="sw-share")
                # Links, not download buttons: the files are made only when one is followed
                # (bot/web/downloads.py says why).
                dl_links = gr.Markdown("", elem_id="sw-downloads")
            with gr.Column(scale=2, min_width=340):
                plot = gr.Plot(label="Per-GPU memory by strategy", show_label=False, elem_id="sw-chart")
                chart_note = gr.Markdown("", elem_id="sw-chart-note")
                sim = gr.Button("Simulate exact memory", elem_id="sw-simulate", interactive=False)
                sim_note = gr.Markdown("", elem_id="sw-sim-note")
                compare = gr.Button("Compare strategies x precisions", elem_id="sw-compare", size="sm")
                missing_note = gr.Markdown("", elem_id="sw-missing-note")
                with gr.Accordion("Setup (edit to re-answer)", open=True, elem_id="sw-setup"):
                    fields = _panel_components(list_models(), list_gpus())
                    with gr.Row():
                        again = gr.Button("Re-answer for this setup", elem_id="sw-reanswer")
                        upload = gr.UploadButton("Model from config.json", file_types=[".json"],
                                                 type="filepath", elem_id="sw-config")
                    gr.Markdown("The model box also takes a Hub id (`org/name`, config only; offline it must "
                                "be cached) or pasted `config.json` text.", elem_id="sw-model-help")
                with gr.Accordion("How to run it", open=False, elem_id="sw-howto"):
                    howto = gr.Markdown("", elem_id="sw-howto-code")

        answer_outputs = [plot, chart_note, *fields, missing_note, howto, sim, sim_note, share, dl_links]
        # No progress overlays: one over the message box or the panel would swallow the next click
        # or keystroke while an answer is pending (the chat shows its own pending dots).
        work = {"concurrency_id": "answer", "concurrency_limit": CHAT_CONCURRENCY, "api_visibility": "private",
                "show_progress": "minimal"}
        fast = {"queue": False, "api_visibility": "private", "trigger_mode": "multiple", "show_progress": "hidden"}

        def answered(event, **options):
            (event.then(process, None, [chat, *answer_outputs], **{**work, **options})
             .then(None, [share], None, js="(q) => { if (q) history.replaceState(null, '', q); }"))

        # The box is emptied in the browser at once (a reply from the server would land later
        # and erase what the user typed meanwhile); the text travels through a hidden holder.
        for trigger in (msg.submit, send.click):
            answered(trigger(None, [msg], [sent, msg], js="(m) => [m, '']", **fast)
                     .then(submit_message, [sent], [chat, hint], **fast))
        answered(chat.example_select(pick_example, None, [chat, hint], **fast))
        answered(again.click(submit_edit_button, fields, [chat], **fast))
        answered(upload.upload(upload_config, [upload], [chat], **fast))
        compare.click(compare_precisions, None, [chat], api_visibility="private", concurrency_id="answer",
                      concurrency_limit=CHAT_CONCURRENCY)
        # A choice re-answers once it is made (Gradio's ``input``: an option clicked, or picked
        # with the keys and the box left); leaving a dropdown without changing it sends nothing
        # (PAGE_JS stops that blur). Numbers and a typed model (a Hub id, config text) on Enter
        # or the button.
        for comp in fields:
            event = comp.input if isinstance(comp, gr.Dropdown | gr.Checkbox) else comp.submit
            answered(event(submit_edit, fields, [chat], **fast))
        share.change(lambda q: f"[Link to this answer]({share_href(q)})" if q else "",
                     [share], [share_link], queue=False, api_visibility="private")
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


def _panel_components(models, gpus) -> list:
    """The editable setup fields, in PANEL_FIELDS order. Numbers are text boxes: empty means
    unknown (a number box would show 0 and send it)."""
    choice = {
        "intra_node_link": ["nvlink", "pcie"],
        "inter_node_link": ["infiniband", "ethernet", "none"],
        "precision": ["bf16-mixed", "fp16-mixed", "bf16", "fp32"],
        "optimizer": ["adamw", "sgd", "adam8bit"],
        "finetune": ["full", "lora", "qlora"],
        "optimizer_impl": ["foreach", "fused", "forloop"],
        "loss_impl": ["standard", "fused", "chunked"],
        "model": [m.name for m in models],
        "gpu": [g.name for g in gpus],
    }

    def number(name: str):
        return gr.Textbox("", label=FIELD_LABELS[name][0], placeholder="unknown", max_lines=1,
                          elem_id=f"sw-f-{name}")

    def dropdown(name: str, custom: bool = False):
        return gr.Dropdown(choice[name], value=None, label=FIELD_LABELS[name][0], allow_custom_value=custom,
                           elem_id=f"sw-f-{name}")

    comps = []
    with gr.Row():
        comps += [dropdown("model", custom=True), number("params_b")]
    with gr.Row():
        comps += [dropdown("gpu", custom=True), number("gpu_memory_gb")]
    with gr.Row():
        comps += [number("gpu_count"), number("nodes")]
    with gr.Row():
        comps += [dropdown("intra_node_link"), dropdown("inter_node_link")]
    with gr.Row():
        comps += [dropdown("precision"), dropdown("optimizer"), dropdown("finetune")]
    with gr.Row():
        comps += [number("seq_len"), number("micro_batch")]
        comps.append(gr.Checkbox(False, label=FIELD_LABELS["activation_checkpointing"][0],
                                 elem_id="sw-f-activation_checkpointing"))
    with gr.Accordion("Run options (empty: PyTorch's defaults)", open=False, elem_id="sw-run-options"):
        with gr.Row():
            comps += [dropdown("optimizer_impl"), dropdown("loss_impl"), number("grad_accum_steps")]
        with gr.Row():
            comps += [gr.Checkbox(False, label=FIELD_LABELS[name][0], elem_id=f"sw-f-{name}")
                      for name in ("torch_compile", "ddp_bucket_view")]
    return comps


# ----------------------------------------------------------------------------------------------
# Serving
# ----------------------------------------------------------------------------------------------


def prepare_server() -> None:
    """One torch thread (cores are shared), logging with secrets redacted, the index built."""
    from bot import env

    if hasattr(env, "configure_runtime"):
        env.configure_runtime(threads=1)
    else:  # pragma: no cover  (older bot.env)
        try:
            import torch

            torch.set_num_threads(1)
        except ImportError:
            pass
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    from bot.knowledge.index import ensure_index

    ensure_index()


def lighten_sessions(demo) -> None:
    """Cut Gradio's per-request work in the server's process (it is the serial part once answers
    run in workers; measured with cProfile on the event loop under 50 clients):

    - every new session (each ``/chat`` call, each tab) copies the config of all ~60 blocks, and
      for the upload/download buttons that means a pydantic JSON schema each time (about a third
      of that copy). Their schema is fixed once the page is built, so it is computed once here;
      each call gets its own copy;
    - after every event the queue rebuilt a pandas table of up to 10,000 past events for the
      monitoring dashboard, which this page turns off (``enable_monitoring=False``);
    - the queue looks for work every 1 ms, idle or full (about 5% of a core doing nothing, the
      same share taken from answers under load); every 5 ms adds at most 5 ms to an answer that
      takes 60 ms or more.
    """
    import functools

    import orjson  # a JSON round trip copies a schema ~10x faster than copy.deepcopy

    for block in demo.blocks.values():
        if not isinstance(block, gr.UploadButton | gr.DownloadButton):
            continue
        for name in ("api_info", "api_info_as_input", "api_info_as_output"):
            method = getattr(block, name, None)
            if method is None:
                continue
            setattr(block, name, functools.partial(orjson.loads, orjson.dumps(method())))
    queue = getattr(demo, "_queue", None)
    if queue is not None and hasattr(queue, "ANAYLTICS_CACHE_FREQUENCY"):  # gradio's spelling
        queue.ANAYLTICS_CACHE_FREQUENCY = 2**62  # never rebuilt: the dashboard is off
    if queue is not None and getattr(queue, "sleep_when_free", 1.0) < QUEUE_POLL_SECONDS:
        queue.sleep_when_free = QUEUE_POLL_SECONDS


def page_routes() -> list:
    """Routes ahead of Gradio's: the answer downloads, and its front-end files from memory."""
    from bot.web.assets import assets_route

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

    from bot.web.guard import MAX_UPLOAD_BYTES, BodyLimit, guarded_uvicorn

    try:
        # Bounded bodies, heads and slow connections (bot/web/guard.py, issue 30).
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
