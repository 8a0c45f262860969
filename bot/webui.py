"""The Gradio chat page: chat, editable setup panel, memory chart, sources, simulate, how-to.

This module only presents what ``bot.llm.answer`` / ``answer_for_setup`` / the benchmark simulator
return; it computes no figure of its own. Layout: the chat (answers as markdown with ``[n]``
markers, their sources as expandable ``<details>`` entries) on the left; the setup the parser
understood (editable; missing fields highlighted), the per-strategy memory chart, the simulate
button and a copyable how-to snippet on the right.

Everything that came from text (the user's message, corpus quotes, titles, URLs) is escaped before
it becomes HTML, and Gradio's sanitizer stays on as a second line of defence.

``serve()`` is what ``python app.py`` and ``shardwise app`` run: one torch thread, index built
if absent, bound to 127.0.0.1 by default, no share link, no analytics, fonts served locally.
"""

from __future__ import annotations

import html
import logging
import os
import re
import subprocess
import sys
import time
import urllib.request
from typing import Any

import click

from bot.env import configure_offline, repo_root

configure_offline()  # before gradio reads its analytics and hub switches

import gradio as gr  # noqa: E402

from bot.answer import Answer, Citation  # noqa: E402
from bot.setup import SetupError, TrainingSetup, resolve_setup  # noqa: E402
from bot.strategies import TRAINING_STRATEGIES, label  # noqa: E402

log = logging.getLogger(__name__)

# Longer messages are cut: no real question is this long, and the parser should not chew 100 KB.
MAX_MESSAGE_CHARS = 4000
# How much of a long message the chat shows back to its author.
ECHO_CHARS = 600
# Concurrent answers per server (the rest wait in Gradio's queue); simulations run one at a time
# because each one keeps a core busy for tens of seconds.
CHAT_CONCURRENCY = 4
SIMULATE_CONCURRENCY = 1

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
)
INT_FIELDS = {"gpu_count", "nodes", "seq_len", "micro_batch"}

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
}

CSS = """
.sw-missing input, .sw-missing textarea, .sw-missing .wrap {
  border: 2px solid #f59e0b !important; background: #fffbeb !important;
}
.sw-missing label span, .sw-missing span[data-testid="block-info"] { color: #b45309 !important; }
.sw-sources { margin-top: 0.6em; font-size: 0.92em; }
.sw-sources details { border-left: 3px solid #cbd5e1; padding: 0.1em 0.6em; margin: 0.25em 0; }
.sw-sources summary { cursor: pointer; }
.sw-sources blockquote { margin: 0.3em 0; color: #475569; }
.sw-kind { font-size: 0.8em; padding: 0 0.4em; border-radius: 4px; background: #e2e8f0; }
#sw-missing-note { min-height: 0; }
"""


# ----------------------------------------------------------------------------------------------
# Text in, text out
# ----------------------------------------------------------------------------------------------


def looks_chinese(text: str) -> bool:
    return re.search(r"[\u4e00-\u9fff]", text or "") is not None


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
    """User text made safe to show as markdown: tags become visible text, never elements."""
    return html.escape(text, quote=False)


_CODE = re.compile(r"(```.*?```|`[^`\n]*`)", re.S)


def inert_markdown(markdown: str) -> str:
    """Markdown with every raw HTML tag made visible text (code spans and blocks left as they are:
    markdown already shows their content literally). The answer text may quote the user."""
    parts = _CODE.split(markdown)
    return "".join(p if i % 2 else p.replace("<", "&lt;") for i, p in enumerate(parts))


def echo(text: str) -> str:
    """How the user's own message is shown back in the chat (escaped, long pastes shortened)."""
    if len(text) > ECHO_CHARS:
        text = text[:ECHO_CHARS] + f" … [{len(text):,} chars]"
    return inert(text)


def _safe_url(url: str | None) -> str | None:
    return url if url and re.match(r"https?://", url) else None


def sources_html(citations: list[Citation], language: str = "en") -> str:
    """Citations as expandable entries; every field is escaped (titles and quotes come from text)."""
    if not citations:
        return ""
    heading = "来源" if language == "zh" else "Sources"
    parts = [f'<div class="sw-sources"><b>{heading}</b>']
    for c in citations:
        url = _safe_url(c.url)
        link = (f' · <a href="{html.escape(url)}" target="_blank" rel="noopener noreferrer">'
                f"{html.escape(url)}</a>") if url else (f" · {html.escape(c.url)}" if c.url else "")
        quote = ""
        if c.quote:
            quote = "<blockquote>" + html.escape(c.quote).replace("\n", "<br>") + "</blockquote>"
        parts.append(
            f'<details data-citation="{c.n}"><summary>[{c.n}] {html.escape(c.title)} '
            f'<span class="sw-kind">{html.escape(c.kind)}</span></summary>'
            f"<div>id: <code>{html.escape(c.id)}</code>{link}</div>{quote}</details>"
        )
    parts.append("</div>")
    # One line: a blank line would end markdown's raw-HTML block and mangle the entries.
    return "".join(parts)


def answer_markdown(answer: Answer, notice: str | None = None) -> str:
    """What the chat shows for an answer: the notice, the markdown text, then the sources."""
    parts = []
    if notice:
        parts.append(f"> {inert(notice)}")
    parts.append(inert_markdown(answer.text))
    sources = sources_html(answer.citations, answer.language)
    if sources:
        parts.append(sources)
    return "\n\n".join(parts)


def answer_plain_markdown(answer: Answer, notice: str | None = None) -> str:
    """The ``/chat`` API result: plain markdown (no HTML), sources as a numbered list."""
    parts = [f"> {notice}"] if notice else []
    parts.append(answer.text)
    if answer.citations:
        heading = "来源" if answer.language == "zh" else "Sources"
        lines = [f"**{heading}**"]
        for c in answer.citations:
            lines.append(f"- [{c.n}] {c.title} ({c.kind}: {c.id})" + (f" {c.url}" if c.url else ""))
        parts.append("\n".join(lines))
    return "\n\n".join(parts)


# ----------------------------------------------------------------------------------------------
# The memory chart
# ----------------------------------------------------------------------------------------------

COMPONENTS = ("params_gib", "grads_gib", "optimizer_gib", "activations_gib", "buffers_gib")
COMPONENT_LABELS = {
    "en": ("Parameters", "Gradients", "Optimizer state", "Activations", "Buffers"),
    "zh": ("参数", "梯度", "优化器状态", "激活值", "缓冲区"),
}
OFF_SCALE_FACTOR = 4.0  # capacity above this many times the tallest bar is noted, not drawn
COMPONENT_COLORS = ("#2563eb", "#f59e0b", "#10b981", "#a855f7", "#94a3b8")
SHORT_LABELS = {
    "en": {"ddp": "DDP", "fsdp_shard_grad_op": "FSDP\ngrad-op", "fsdp_full_shard": "FSDP\nfull shard",
           "fsdp_hybrid_shard": "HSDP\nhybrid", "fsdp_full_shard_offload": "FSDP full\n+ offload"},
    "zh": {"ddp": "DDP", "fsdp_shard_grad_op": "FSDP\n梯度分片", "fsdp_full_shard": "FSDP\n全分片",
           "fsdp_hybrid_shard": "HSDP\n混合分片", "fsdp_full_shard_offload": "FSDP 全分片\n+CPU 卸载"},
}


def cjk_font() -> str | None:
    """A matplotlib font family that has Chinese glyphs (Debian's fonts-noto-cjk), if installed."""
    from matplotlib import font_manager

    names = {f.name for f in font_manager.fontManager.ttflist}
    for preferred in ("Noto Sans CJK SC", "Noto Sans CJK JP", "Noto Sans SC", "WenQuanYi Zen Hei",
                      "Source Han Sans SC", "SimHei", "Microsoft YaHei"):
        if preferred in names:
            return preferred
    return next((n for n in sorted(names) if "CJK" in n), None)


def chart_strategies(numbers: dict[str, Any]) -> list[str]:
    """Strategies with a memory breakdown in ``numbers``, in the canonical order."""
    return [s for s in TRAINING_STRATEGIES if f"memory.{s}.total_gib" in numbers]


def memory_figure(answer: Answer):
    """Stacked bars of per-GPU memory per strategy with the GPU's capacity as a line; ``None``
    when the answer has no memory numbers (out of scope, missing setup)."""
    from matplotlib.figure import Figure

    numbers = answer.numbers
    strategies = chart_strategies(numbers)
    if not strategies:
        return None
    font = cjk_font()
    lang = "zh" if answer.language == "zh" and font else "en"
    capacity = answer.setup.get("gpu_memory_gb")

    fig = Figure(figsize=(6.4, 4.2), dpi=120, layout="constrained")
    ax = fig.add_subplot()
    rc = {"family": [font, "DejaVu Sans"]} if font else {}
    xs = range(len(strategies))
    bottoms = [0.0] * len(strategies)
    for comp, name, color in zip(COMPONENTS, COMPONENT_LABELS[lang], COMPONENT_COLORS, strict=True):
        values = [float(numbers.get(f"memory.{s}.{comp}", 0.0) or 0.0) for s in strategies]
        ax.bar(xs, values, bottom=bottoms, color=color, label=name, width=0.62)
        bottoms = [b + v for b, v in zip(bottoms, values, strict=True)]
    totals = [float(numbers.get(f"memory.{s}.total_gib", b)) for s, b in zip(strategies, bottoms, strict=True)]
    usable = numbers.get(f"memory.{strategies[0]}.usable_gib")
    capacity = float(capacity) if capacity else None
    # A card far bigger than every bar would flatten them to slivers: then the capacity is stated
    # in a note at the top instead of drawn as a line off in the distance.
    off_scale = capacity is not None and capacity > OFF_SCALE_FACTOR * max(totals)
    top = (max(totals) if off_scale or capacity is None else max(*totals, capacity)) * 1.18 or 1.0
    for x, total in zip(xs, totals, strict=True):
        ax.text(x, total + top * 0.01, f"{total:.1f}", ha="center", va="bottom", fontsize=8, fontdict=rc)
    if capacity and off_scale:
        note = (f"显存容量 {capacity:g} GiB，远高于此图范围" if lang == "zh"
                else f"GPU capacity {capacity:g} GiB: far above this scale")
        ax.text(0.99, 0.97, note, transform=ax.transAxes, ha="right", va="top", fontsize=8,
                color="#dc2626", fontdict=rc)
    elif capacity:
        cap_label = f"显存容量 {capacity:g} GiB" if lang == "zh" else f"GPU capacity {capacity:g} GiB"
        ax.axhline(capacity, color="#dc2626", linestyle="--", linewidth=1.4, label=cap_label)
        if usable and float(usable) < capacity:
            # "fits" is judged against this: capacity minus CUDA context and fragmentation headroom.
            use_label = f"可用 {float(usable):.1f} GiB" if lang == "zh" else f"usable {float(usable):.1f} GiB"
            ax.axhline(float(usable), color="#dc2626", linestyle=":", linewidth=1.0, label=use_label)
    recommended = answer.recommendation.strategy
    ticks = [SHORT_LABELS[lang].get(s, s) + (" ★" if s == recommended else "") for s in strategies]
    ax.set_xticks(list(xs), ticks, fontsize=8, fontfamily=rc.get("family"))
    ax.set_ylim(0, top)  # axis from zero: bar heights compare honestly
    ax.set_ylabel("GiB / GPU" if lang == "en" else "每卡 GiB", fontdict=rc)
    title = "每卡显存（★ 推荐）" if lang == "zh" else "Per-GPU memory by strategy (★ recommended)"
    ax.set_title(title, fontsize=10, fontdict=rc)
    ax.spines[["top", "right"]].set_visible(False)
    # Below the axes: inside, it would sit on the capacity lines.
    fig.legend(loc="outside lower center", ncol=4, frameon=False,
               prop={"family": rc["family"], "size": 7.5} if rc else {"size": 7.5})
    return fig


# ----------------------------------------------------------------------------------------------
# The setup panel
# ----------------------------------------------------------------------------------------------


def panel_values(setup: dict) -> list[Any]:
    """Panel component values for an answer's setup dict (``None`` = empty field)."""
    return [setup.get(f) for f in PANEL_FIELDS]


def setup_from_panel(values: list[Any]) -> TrainingSetup:
    """The edited setup. A catalog model or GPU defines its own size, so the size fields are
    dropped when one is chosen (otherwise changing the model would contradict the old size).
    Raises pydantic's ValidationError for values of the wrong type."""
    from bot.catalog import UnknownNameError, lookup_gpu, lookup_model

    data: dict[str, Any] = {}
    for name, value in zip(PANEL_FIELDS, values, strict=True):
        if value is None or value == "":
            continue
        if name in INT_FIELDS and isinstance(value, float) and value.is_integer():
            value = int(value)
        data[name] = value
    if data.get("model"):
        try:
            if not lookup_model(data["model"]).approximate:
                data.pop("params_b", None)
        except UnknownNameError:
            pass
    if data.get("gpu"):
        try:
            lookup_gpu(data["gpu"])
            data.pop("gpu_memory_gb", None)
        except UnknownNameError:
            pass
    if data.get("nodes") == 1:
        data.pop("inter_node_link", None)
    return TrainingSetup(**data)


# Fields a GPU defines: when the GPU changes they follow it (resolve_setup fills them from the
# catalog) unless the same edit changed them too.
GPU_DEFINED = ("gpu_memory_gb", "intra_node_link")


def follow_gpu(values: list[Any], previous: dict | None) -> list[Any]:
    """Panel values with the GPU-defined fields cleared when the GPU changed since ``previous``
    (the setup the panel last showed) and the field still shows its old value."""
    if not previous:
        return list(values)
    current = dict(zip(PANEL_FIELDS, values, strict=True))
    if (current.get("gpu") or None) == (previous.get("gpu") or None):
        return list(values)
    for name in GPU_DEFINED:
        if current.get(name) == previous.get(name):
            current[name] = None
    return [current[name] for name in PANEL_FIELDS]


def setup_summary(setup: TrainingSetup) -> str:
    """One line naming what was set, for the chat's record of an edit."""
    parts = [f"{k}={v}" for k, v in setup.model_dump().items() if v is not None]
    return ", ".join(parts) or "(empty setup)"


def resolved_for(answer: Answer):
    """The answer's setup resolved for computation, or ``None`` when fields are still missing."""
    fields = TrainingSetup.model_fields
    setup = TrainingSetup(**{k: v for k, v in answer.setup.items() if k in fields and v is not None})
    try:
        return resolve_setup(setup)
    except SetupError:
        return None


def howto_code(answer: Answer) -> str:
    """The copyable FSDP2/DDP snippet and torchrun command for the recommended strategy (markdown
    with fenced code blocks)."""
    strategy = answer.recommendation.strategy
    if strategy not in TRAINING_STRATEGIES:
        return "*Ask about a training setup first: the snippet follows the recommended strategy.*"
    resolved = resolved_for(answer)
    if resolved is None:
        return "*Fill in the highlighted setup fields to get a runnable snippet.*"
    from bot.render import howto_snippet

    return howto_snippet(strategy, resolved)


# ----------------------------------------------------------------------------------------------
# Handlers (each returns every output it touches; the session dict is per browser tab)
# ----------------------------------------------------------------------------------------------


def new_session() -> dict:
    return {"questions": [], "answer": None}


def new_conversation() -> list[Any]:
    """Outputs for a cleared chat: a fresh session and an empty chart, panel and how-to."""
    panel = [gr.update(value=False if name == "activation_checkpointing" else None, elem_classes=[],
                       label=FIELD_LABELS[name][0]) for name in PANEL_FIELDS]
    return [new_session(), None, *panel, "", ""]


def _answer_outputs(answer: Answer) -> list[Any]:
    """Chart, panel fields, missing note and how-to for an answer."""
    missing = set(answer.missing) | set(answer.questions)
    if {"gpu", "gpu_memory_gb"} & missing:
        missing |= {"gpu", "gpu_memory_gb"}
    if {"model", "params_b"} & missing:
        missing |= {"model", "params_b"}
    lang = 0 if answer.language == "en" else 1
    panel = [
        gr.update(value=value, elem_classes=["sw-missing"] if name in missing else [],
                  label=FIELD_LABELS[name][0] + (" ⚠" if name in missing else ""))
        for name, value in zip(PANEL_FIELDS, panel_values(answer.setup), strict=True)
    ]
    note = ""
    if missing:
        names = ", ".join(FIELD_LABELS[f][lang] for f in PANEL_FIELDS if f in missing)
        note = (f"**问题里没说（暂按假设计算）：** {names}。改好后点击“按此设置重新回答”。" if lang else
                f"**Not stated (assumed for now):** {names}. Set them, then press *Re-answer for this setup*.")
    return [memory_figure(answer), *panel, note, howto_code(answer)]


def _no_change(n_panel: int = len(PANEL_FIELDS)) -> list[Any]:
    return [gr.skip()] * (1 + n_panel + 2)


def respond(message: str, chat: list[dict] | None, session: dict | None):
    """The chat handler: answer ``message`` in the context of this tab's earlier questions."""
    from bot.llm import answer as ask  # the same answer as every surface (the LLM when configured)

    chat = list(chat or [])
    session = dict(session or new_session())
    text, notice = prepare_message(message)
    if not text:
        chat.append({"role": "assistant", "content": notice})
        return [chat, session, "", *_no_change()]
    chat.append({"role": "user", "content": echo(text if notice is None else message)})
    try:
        answer = ask(text, history=list(session["questions"]))
    except Exception:  # a bug must not take the page down; the log has the traceback
        log.exception("ask failed")
        chat.append({"role": "assistant", "content": "Sorry, answering failed on the server (see its log). "
                                                     "/ 服务器出错，请查看日志。"})
        return [chat, session, "", *_no_change()]
    session["questions"] = [*session["questions"], text]
    session["answer"] = answer.model_dump()
    chat.append({"role": "assistant", "content": answer_markdown(answer, notice)})
    return [chat, session, "", *_answer_outputs(answer)]


def reanswer(chat: list[dict] | None, session: dict | None, *values):
    """Answer again for the setup as edited in the panel."""
    from pydantic import ValidationError

    chat = list(chat or [])
    session = dict(session or new_session())
    previous = session.get("answer")
    language = previous["language"] if previous else "en"
    try:
        setup = setup_from_panel(follow_gpu(list(values), previous["setup"] if previous else None))
    except ValidationError as err:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in err.errors())
        chat.append({"role": "assistant", "content": inert(f"The setup has invalid values: {problems}")})
        return [chat, session, *_no_change()]
    chat.append({"role": "user", "content": ("（修改设置）" if language == "zh" else "(edited setup) ")
                 + inert(setup_summary(setup))})
    from bot.assistant import answer_for_setup

    try:
        answer = answer_for_setup(setup, language)
    except SetupError as err:
        chat.append({"role": "assistant", "content": inert("; ".join(str(p) for p in err.problems))})
        return [chat, session, *_no_change()]
    except Exception:
        log.exception("answer_for_setup failed")
        chat.append({"role": "assistant", "content": "Sorry, answering failed on the server (see its log)."})
        return [chat, session, *_no_change()]
    session["answer"] = answer.model_dump()
    chat.append({"role": "assistant", "content": answer_markdown(answer)})
    return [chat, session, *_answer_outputs(answer)]


def simulation_message(answer: Answer, strategy: str, run_id: str, result, n: int) -> tuple[str, Citation]:
    """The chat entry for a finished simulation and the ``bench`` citation behind its figures."""
    zh = answer.language == "zh"
    name = label(strategy, answer.language)
    calc_total = answer.numbers.get(f"memory.{strategy}.total_gib")
    rows = [("params_gib", "参数" if zh else "parameters"), ("grads_gib", "梯度" if zh else "gradients"),
            ("optimizer_gib", "优化器状态" if zh else "optimizer state"),
            ("activations_gib", "激活值" if zh else "activations"), ("buffers_gib", "缓冲区" if zh else "buffers")]
    detail = ", ".join(f"{lbl} {getattr(result, key):.2f}" for key, lbl in rows if hasattr(result, key))
    if zh:
        text = (f"**模拟结果（{name}）**：每卡峰值显存 **{result.peak_gib:.2f} GiB** [{n}]（{detail} GiB），"
                f"用时 {result.seconds:.0f} 秒。")
        if calc_total is not None:
            text += f" 公式估算为 {float(calc_total):.2f} GiB。"
    else:
        text = (f"**Simulated {name}**: peak per-GPU memory **{result.peak_gib:.2f} GiB** [{n}] "
                f"({detail} GiB), simulated in {result.seconds:.0f} s.")
        if calc_total is not None:
            text += f" The formula estimated {float(calc_total):.2f} GiB."
    citation = Citation(
        n=n, id=run_id, kind="bench",
        title=("模拟运行 " if zh else "Simulated run ") + run_id,
        quote=(f"FakeTensorMode + FSDP2/DDP + MemTracker, strategy={strategy}, setup: "
               + setup_summary(TrainingSetup(**{k: v for k, v in answer.setup.items()
                                              if k in TrainingSetup.model_fields and v is not None}))),
    )
    return text, citation


def simulate(chat: list[dict] | None, session: dict | None, progress=gr.Progress()):  # noqa: B008
    """Run the exact-memory simulation for the current setup and recommended strategy
    (Gradio injects ``progress`` because it is the parameter's default)."""
    from bot.bench.simulate import SimConfig, simulate_cached
    chat = list(chat or [])
    session = dict(session or new_session())
    if not session.get("answer"):
        chat.append({"role": "assistant", "content": "Ask a question first; the simulation runs the answer's setup."})
        return chat, session
    answer = Answer.model_validate(session["answer"])
    zh = answer.language == "zh"
    strategy = answer.recommendation.strategy
    resolved = resolved_for(answer)
    if strategy not in TRAINING_STRATEGIES or resolved is None:
        chat.append({"role": "assistant", "content": "请先补全设置（高亮字段）。" if zh else
                     "Complete the setup first (the highlighted fields); then simulate."})
        return chat, session

    def report(message: str, fraction: float) -> None:  # simulate's ProgressFn -> Gradio's bar
        progress(fraction, desc=message)

    progress(0.0, desc="starting simulation")
    try:
        run_id, result = simulate_cached(SimConfig.from_resolved(resolved, strategy), progress=report)
    except Exception as err:  # e.g. a setup the simulator cannot build; say so, keep the page alive
        log.exception("simulation failed")
        chat.append({"role": "assistant", "content": inert(f"Simulation failed: {err}")})
        return chat, session
    n = max((c.n for c in answer.citations), default=0) + 1
    text, citation = simulation_message(answer, strategy, run_id, result, n)
    answer.citations.append(citation)
    session["answer"] = answer.model_dump()
    chat.append({"role": "assistant", "content": text + "\n\n" + sources_html([citation], answer.language)})
    return chat, session


def chat_api(message: str) -> str:
    """``/chat``: one question (no conversation) -> the markdown answer with its sources."""
    from bot.llm import answer as ask

    text, notice = prepare_message(message)
    if not text:
        return notice or ""
    return answer_plain_markdown(ask(text), notice)


# ----------------------------------------------------------------------------------------------
# The page
# ----------------------------------------------------------------------------------------------


def build_demo():
    """The Blocks app (not launched)."""
    from bot.catalog import list_gpus, list_models

    with gr.Blocks(title="shardwise: DDP or FSDP?", analytics_enabled=False) as demo:
        session = gr.State(new_session())
        gr.Markdown(
            "## shardwise — DDP or FSDP for my setup?\n"
            "Ask in English or 中文. Every figure is computed for your setup or cited; "
            "edit the setup on the right to re-answer, or simulate it for exact memory."
        )
        with gr.Row(equal_height=False):
            with gr.Column(scale=3, min_width=420):
                chat = gr.Chatbot(label="Conversation", elem_id="sw-chat", height=720,
                                  buttons=["copy"], feedback_options=None, allow_tags=False,
                                  sanitize_html=True, layout="bubble", group_consecutive_messages=False)
                with gr.Row():
                    msg = gr.Textbox(placeholder="e.g. DDP or FSDP for Llama-2-7B on 8x A100 80GB?",
                                     show_label=False, lines=1, max_lines=8, scale=5, elem_id="sw-msg")
                    send = gr.Button("Ask", variant="primary", scale=1, elem_id="sw-send")
                gr.Examples(examples=[[e] for e in EXAMPLES], inputs=[msg], label="Examples")
            with gr.Column(scale=2, min_width=360):
                plot = gr.Plot(label="Per-GPU memory", show_label=False, elem_id="sw-chart", format="png")
                with gr.Row():
                    sim = gr.Button("Simulate exact memory", elem_id="sw-simulate")
                missing_note = gr.Markdown("", elem_id="sw-missing-note")
                with gr.Accordion("Setup (edit to re-answer)", open=True, elem_id="sw-setup"):
                    fields = _panel_components(list_models(), list_gpus())
                    again = gr.Button("Re-answer for this setup", elem_id="sw-reanswer")
                with gr.Accordion("How to run it", open=False, elem_id="sw-howto"):
                    # Markdown code blocks come with a copy button.
                    howto = gr.Markdown("", elem_id="sw-howto-code")

        answer_outputs = [plot, *fields, missing_note, howto]
        common = {"concurrency_id": "answer", "concurrency_limit": CHAT_CONCURRENCY}
        for trigger in (msg.submit, send.click):
            trigger(respond, [msg, chat, session], [chat, session, msg, *answer_outputs],
                    api_visibility="private", **common)
        edit_inputs = [chat, session, *fields]
        edit_outputs = [chat, session, *answer_outputs]
        again.click(reanswer, edit_inputs, edit_outputs, api_visibility="private", **common)
        for comp in fields:  # choices re-answer at once; numbers on Enter or the button
            event = comp.input if isinstance(comp, gr.Dropdown | gr.Checkbox) else comp.submit
            event(reanswer, edit_inputs, edit_outputs, api_visibility="private",
                  trigger_mode="always_last", **common)
        # The chat's trash button starts a new conversation: earlier questions no longer apply.
        chat.clear(new_conversation, None, [session, *answer_outputs], api_visibility="private", queue=False)
        sim.click(simulate, [chat, session], [chat, session], api_visibility="private",
                  concurrency_id="simulate", concurrency_limit=SIMULATE_CONCURRENCY)
        gr.api(chat_api, api_name="chat", **common)
    demo.queue(default_concurrency_limit=CHAT_CONCURRENCY, max_size=200)
    return demo


def _panel_components(models, gpus) -> list:
    """The editable setup fields, in PANEL_FIELDS order."""
    choice = {
        "intra_node_link": ["nvlink", "pcie"],
        "inter_node_link": ["infiniband", "ethernet", "none"],
        "precision": ["bf16-mixed", "fp16-mixed", "bf16", "fp32"],
        "optimizer": ["adamw", "sgd", "adam8bit"],
        "finetune": ["full", "lora", "qlora"],
        "model": [m.name for m in models],
        "gpu": [g.name for g in gpus],
    }
    comps = []
    with gr.Row():
        comps.append(gr.Dropdown(choice["model"], value=None, label=FIELD_LABELS["model"][0],
                                 allow_custom_value=True, elem_id="sw-f-model"))
        comps.append(gr.Number(None, label=FIELD_LABELS["params_b"][0], minimum=0, elem_id="sw-f-params_b"))
    with gr.Row():
        comps.append(gr.Dropdown(choice["gpu"], value=None, label=FIELD_LABELS["gpu"][0],
                                 allow_custom_value=True, elem_id="sw-f-gpu"))
        comps.append(gr.Number(None, label=FIELD_LABELS["gpu_memory_gb"][0], minimum=0,
                               elem_id="sw-f-gpu_memory_gb"))
    with gr.Row():
        for name in ("gpu_count", "nodes"):
            comps.append(gr.Number(None, label=FIELD_LABELS[name][0], precision=0, minimum=0,
                                   elem_id=f"sw-f-{name}"))
    with gr.Row():
        for name in ("intra_node_link", "inter_node_link"):
            comps.append(gr.Dropdown(choice[name], value=None, label=FIELD_LABELS[name][0], elem_id=f"sw-f-{name}"))
    with gr.Row():
        for name in ("precision", "optimizer", "finetune"):
            comps.append(gr.Dropdown(choice[name], value=None, label=FIELD_LABELS[name][0], elem_id=f"sw-f-{name}"))
    with gr.Row():
        for name in ("seq_len", "micro_batch"):
            comps.append(gr.Number(None, label=FIELD_LABELS[name][0], precision=0, minimum=0,
                                   elem_id=f"sw-f-{name}"))
        comps.append(gr.Checkbox(False, label=FIELD_LABELS["activation_checkpointing"][0],
                                 elem_id="sw-f-activation_checkpointing"))
    return comps


# ----------------------------------------------------------------------------------------------
# Serving
# ----------------------------------------------------------------------------------------------


def prepare_server() -> None:
    """One torch thread (cores are shared) and the knowledge index built if absent."""
    try:
        import torch

        torch.set_num_threads(1)
    except ImportError:  # pragma: no cover
        pass
    from bot.knowledge.index import ensure_index

    ensure_index()


def serve(host: str = "127.0.0.1", port: int = 7860) -> None:
    """Start the page and block. Nothing leaves the machine: no share link, no analytics,
    the theme's fonts are the ones Gradio ships locally."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    print("Preparing the knowledge index (built on first start, reused afterwards)...", flush=True)
    prepare_server()
    demo = build_demo()
    print(f"shardwise page on http://{host}:{port}", flush=True)
    demo.launch(server_name=host, server_port=port, share=False, inbrowser=False, show_error=False,
                theme=gr.themes.Default(), css=CSS, footer_links=["api"], ssr_mode=False, pwa=False,
                mcp_server=False, enable_monitoring=False)


@click.command(name="app")
@click.option("--host", default="127.0.0.1", show_default=True, help="Interface to bind.")
@click.option("--port", default=7860, show_default=True, type=int, help="Port to listen on.")
def app_command(host: str, port: int) -> None:
    """Start the Gradio chat page."""
    serve(host, port)


def start_subprocess(port: int, host: str = "127.0.0.1", env: dict[str, str] | None = None,
                     timeout: float = 300.0, log_path: str | None = None) -> subprocess.Popen:
    """Run ``app.py`` in a child process and wait until the page answers (tests, load benchmark).

    A fresh interpreter, not a fork: the parent may already hold torch threads.
    """
    out = open(log_path, "ab") if log_path else subprocess.DEVNULL  # noqa: SIM115
    proc = subprocess.Popen([sys.executable, str(repo_root() / "app.py"), "--host", host, "--port", str(port)],
                            cwd=str(repo_root()), env={**os.environ, **(env or {})},
                            stdout=out, stderr=subprocess.STDOUT)
    url = f"http://{host}:{port}/"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"app.py exited with {proc.returncode} before serving (log: {log_path})")
        try:
            with _no_proxy.open(url, timeout=2) as resp:
                if resp.status == 200:
                    return proc
        except OSError:
            time.sleep(0.5)
    proc.kill()
    raise TimeoutError(f"app.py did not serve {url} within {timeout:.0f}s (log: {log_path})")


_no_proxy = urllib.request.build_opener(urllib.request.ProxyHandler({}))


