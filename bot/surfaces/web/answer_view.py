"""How the page shows messages: the user's text as text, an answer as one HTML block.

An answer is built from ``answer.sections`` (the contract in ``bot/answer.py``): the short form
in view (headline and direct answer, the assumed fields named, the table, what is still needed);
reasons and what-ifs, passages, forum verdicts, how-to and sources collapsed in ``<details>``. When ``sections`` is still empty (older
pipeline), the markdown ``answer.text`` is split at its bold headings and the long parts are
collapsed the same way. Nothing here computes a figure: it only lays out what the answer holds.

Every message is a single line of HTML (newlines inside code are ``&#10;``): the chat's markdown
renderer treats it as one raw HTML block and never reads markdown in it, so ``![t](http://...)``
in a user's message stays text and the browser fetches nothing.
"""

from __future__ import annotations

import html
import re
from typing import Any

from markdown_it import MarkdownIt

from bot.answer import Answer, Citation, HowTo, Sections, SetupItem
from bot.understand.text import looks_chinese  # re-exported: bot.surfaces.webui imports it from here

# Raw HTML off (tags in the text become visible text), images off (no remote fetch).
_MD = MarkdownIt("commonmark", {"html": False}).enable("table").disable("image")

FIELD_NAMES = {
    "model": ("model", "模型"), "params_b": ("model size", "参数量"), "gpu": ("GPU", "GPU"),
    "gpu_memory_gb": ("GPU memory", "显存"), "gpu_count": ("GPU count", "GPU 数量"),
    "gpus_per_node": ("GPUs per node", "每节点 GPU 数"), "nodes": ("nodes", "节点数"),
    "intra_node_link": ("link inside a node", "节点内互联"),
    "inter_node_link": ("link between nodes", "节点间互联"),
    "inter_node_gbps": ("inter-node bandwidth", "节点间带宽"), "precision": ("precision", "精度"),
    "optimizer": ("optimizer", "优化器"), "finetune": ("fine-tune mode", "微调方式"),
    "seq_len": ("sequence length", "序列长度"), "micro_batch": ("micro-batch", "micro-batch"),
    "activation_checkpointing": ("activation checkpointing", "激活检查点"),
    "cpu_ram_gb": ("CPU RAM", "内存"), "lora_rank": ("LoRA rank", "LoRA 秩"),
    "optimizer_impl": ("optimizer implementation", "优化器实现"),
    "ddp_bucket_view": ("DDP gradient_as_bucket_view", "DDP gradient_as_bucket_view"),
    "checkpointing_policy": ("checkpointing policy", "检查点策略"),
    "checkpoint_every": ("checkpoint every k blocks", "每 k 层检查点"), "torch_compile": ("torch.compile", "torch.compile"),
    "loss_impl": ("loss implementation", "损失实现"), "grad_accum_steps": ("gradient accumulation", "梯度累积"),
    "lora_targets": ("LoRA targets", "LoRA 目标层"), "base_dtype": ("frozen base dtype", "冻结基座精度"),
    "float8": ("float8", "float8"), "mfu": ("MFU", "MFU"),
}

# A forum claim's verdict in words (the codes are the pipeline's, not the reader's).
VERDICT_WORDS = {
    "supported": ("成立", "holds"),
    "holds_only_when": ("仅在条件满足时成立", "holds only under a condition"),
    "misleading": ("有误导性", "misleading"),
    "contradicted": ("与计算结果相反", "contradicted by the figures"),
    "unverifiable": ("无法核实", "cannot be checked here"),
}
# A citation's kind in words.
KIND_WORDS = {"forum": ("论坛", "forum"), "doc": ("文档", "docs"), "calc": ("计算", "calculation"),
              "bench": ("实测/模拟", "measured")}

# Headings of the markdown fallback whose parts are long and go into <details>.
_COLLAPSED_HEADINGS = ("What the forum said", "论坛里怎么说", "How to run it", "怎么跑", "Background",
                       "背景", "From the docs", "文档")


def html_lang(language: str) -> str:
    """The ``lang`` attribute for a message: zh-CN so browsers pick Simplified Chinese glyphs."""
    return "zh-CN" if language == "zh" else "en"


# A wide table scrolls sideways on a phone; keyboard users reach the scroll box with Tab.
_SCROLL = '<div class="sw-scroll" tabindex="0" role="region" aria-label="table">'


def one_line(markup: str) -> str:
    """HTML on one line: newlines inside <pre> become &#10; (still shown), others a space."""
    def keep_pre(m: re.Match) -> str:
        return m.group(0).replace("\n", "&#10;")

    markup = re.sub(r"<pre.*?</pre>", keep_pre, markup, flags=re.S)
    return markup.replace("\n", " ").strip()


def md_html(markdown: str) -> str:
    """Markdown (from our renderer or quoting the user) as safe one-line HTML; wide tables scroll
    sideways on a phone instead of squeezing each column to a letter."""
    out = one_line(_MD.render(markdown or "")).replace("<pre>", '<pre tabindex="0">')
    return out.replace("<table>", _SCROLL + "<table>").replace("</table>", "</table></div>")


def inline_html(text: str) -> str:
    """One string of a section (may carry **bold** and `code`) as inline HTML."""
    return one_line(_MD.renderInline(text or ""))


def user_html(text: str, *, note: str | None = None, kind: str = "ask") -> str:
    """The user's own message, shown as typed: escaped, line breaks kept, no markdown."""
    lang = "zh-CN" if looks_chinese(text) else "en"
    body = html.escape(text, quote=False).replace("\r\n", "\n").replace("\n", "<br>")
    extra = f'<span class="sw-note">{html.escape(note)}</span>' if note else ""
    return f'<div class="sw-user sw-{kind}" lang="{lang}">{body}{extra}</div>'


def _safe_url(url: str | None) -> str | None:
    return url if url and re.match(r"https?://", url) else None


def sources_html(citations: list[Citation], language: str = "en", *, open_: bool = False) -> str:
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
        kind = KIND_WORDS.get(c.kind, (c.kind, c.kind))[1 if language != "zh" else 0]
        where = f"<div>{link.removeprefix(' · ')}</div>" if link else ""
        parts.append(
            f'<details class="sw-src sw-src-{c.n}"{" open" if open_ else ""}><summary>[{c.n}] {html.escape(c.title)} '
            f'<span class="sw-kind">{html.escape(kind)}</span></summary>'
            f"{where}{quote}</details>"
        )
    parts.append("</div>")
    return "".join(parts)


def _collapsed(summary: str, body: str, cls: str) -> str:
    return f'<details class="sw-more {cls}"><summary>{summary}</summary>{body}</details>'


# ----------------------------------------------------------------------------------------------
# Which fields were assumed
# ----------------------------------------------------------------------------------------------


def field_sources(answer: Answer, stated: set[str] | None = None) -> dict[str, str]:
    """field -> stated|config|log|history|assumed for the fields the answer used.

    Reads ``answer.provenance``, then ``sections.setup_read``; when the pipeline filled neither,
    every setup field not in ``stated`` (what the user said, as the page knows it) is assumed.
    """
    if answer.provenance:
        return dict(answer.provenance)
    if answer.sections.setup_read:
        return {item.field: item.source for item in answer.sections.setup_read}
    if stated is None:
        return {}
    # Fallback: only fields that are defaults when unstated count as assumed; sizes that follow
    # from a named model or GPU come from the catalog, not from an assumption.
    setup = answer.setup
    defaults = {"precision", "optimizer", "finetune", "seq_len", "micro_batch", "activation_checkpointing",
                "intra_node_link"}
    if (setup.get("nodes") or 1) > 1:
        defaults |= {"inter_node_link", "inter_node_gbps"}
        if "gpu_count" in stated:
            defaults |= {"nodes"}
    out = {}
    for k, v in setup.items():
        if v is None:
            continue
        out[k] = "assumed" if k in defaults and k not in stated else "stated"
    return out


def _show_value(value: Any) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


_SETUP_LINE = ("model", "params_b", "gpu", "gpu_memory_gb", "gpu_count", "nodes", "gpus_per_node",
               "intra_node_link", "inter_node_link", "inter_node_gbps", "precision", "optimizer", "finetune",
               "seq_len", "micro_batch", "activation_checkpointing", "cpu_ram_gb", "lora_rank")


_LORA_ONLY = ("lora_rank", "lora_targets", "base_dtype")


def stated_html(answer: Answer) -> str:
    """The setup as the user gave it (stated, from a config, a log or earlier turns)."""
    zh = answer.language == "zh"
    given = {i.field: i for i in answer.sections.setup_read if i.source not in ("assumed", *CARRIED)}
    multi_node = (answer.setup.get("nodes") or 1) > 1
    # The fields a reader checks first; sizes a named model/GPU defines and run options the
    # answer only reports are left out (the table and the sources carry them).
    order = [f for f in _SETUP_LINE if f in given
             and not (f == "params_b" and "model" in given) and not (f == "gpu_memory_gb" and "gpu" in given)
             and not (f in ("nodes", "gpus_per_node", "inter_node_link", "inter_node_gbps") and not multi_node)
             and not (f == "lora_rank" and answer.setup.get("finetune") not in ("lora", "qlora"))]
    if not order:
        return ""
    text = "，".join if zh else ", ".join
    shown = text(f"{FIELD_NAMES.get(f, (f, f))[1 if zh else 0]} {html.escape(_show_value(given[f].value))}"
                 for f in order)
    return f'<p class="sw-setup-line">{"设置：" if zh else "Setup:"} {shown}</p>'


# Provenance values of a field taken from an earlier message (see bot/surfaces/web/panel.py).
CARRIED = ("history", "carried")


def carried_html(answer: Answer, sources: dict[str, str]) -> str:
    """The line that names every setting taken from an earlier message, marked (the panel's
    "Drop carried settings" button answers without them)."""
    zh = answer.language == "zh"
    items = [i for i in answer.sections.setup_read if i.source in CARRIED]
    if not items:
        items = [SetupItem(field=f, value=answer.setup[f], source="history") for f, s in sources.items()
                 if s in CARRIED and answer.setup.get(f) is not None
                 and not isinstance(answer.setup.get(f), dict | list)]
    if not items:
        return ""
    chips = "".join(
        f'<span class="sw-chip sw-carried-chip">{html.escape(FIELD_NAMES.get(i.field, (i.field, i.field))[1 if zh else 0])} '
        f"{html.escape(_show_value(i.value))}</span>" for i in items)
    label = "沿用前面消息的设置：" if zh else "Carried from earlier messages:"
    return f'<div class="sw-carried-line"><span>{label}</span> {chips}</div>'


def assumed_html(answer: Answer, sources: dict[str, str]) -> str:
    """The line that names every assumed field and the value used."""
    zh = answer.language == "zh"
    items: list[SetupItem] = [i for i in answer.sections.setup_read if i.source == "assumed"]
    if not items:
        items = [SetupItem(field=f, value=answer.setup[f], source="assumed") for f, s in sources.items()
                 if s == "assumed" and answer.setup.get(f) is not None
                 and not isinstance(answer.setup.get(f), dict | list)]
    # LoRA's own options say nothing about a full fine-tune: not listed there.
    if answer.setup.get("finetune") not in ("lora", "qlora"):
        items = [i for i in items if i.field not in _LORA_ONLY]
    if not items:
        return ""

    def chips(group: list[SetupItem]) -> str:
        return "".join(
            f'<span class="sw-chip" data-field="{html.escape(i.field)}">'
            f'{html.escape(FIELD_NAMES.get(i.field, (i.field, i.field))[1 if zh else 0])} '
            f"{html.escape(_show_value(i.value))}</span>" for i in group)

    # The setup's own fields first; run options at their defaults (optimizer implementation,
    # torch.compile, ...) are named too, folded, so the table stays in view.
    main = [i for i in items if i.field in _SETUP_LINE]
    options = [i for i in items if i.field not in _SETUP_LINE]
    label = "假设（问题里没说）：" if zh else "Assumed (not stated):"
    folded = ""
    if options:
        summary = (f"另有 {len(options)} 个运行选项取默认值" if zh
                   else f"and {len(options)} run option{'s' if len(options) > 1 else ''} at their defaults")
        folded = (f'<details class="sw-assumed-options"><summary>{summary}</summary>{chips(options)}</details>')
    return f'<div class="sw-assumed-line"><span>{label}</span> {chips(main)}{folded}</div>'


# ----------------------------------------------------------------------------------------------
# The answer
# ----------------------------------------------------------------------------------------------


def _fmt(value: float | int | None, digits: int = 2) -> str:
    if value is None:
        return "–"
    return f"{value:,.{digits}f}".rstrip("0").rstrip(".") if isinstance(value, float) else f"{value:,}"


def table_html(sections: Sections, language: str, *, plan: bool = False) -> str:
    """The strategy table; ``plan``: the stated TP/CP/PP plan's data-parallel rows instead."""
    zh = language == "zh"
    table, title = (sections.plan_table, sections.plan_table_title) if plan else (sections.table, sections.table_title)
    if not table:
        return ""
    head = (["策略", "每卡 GiB", "可用 GiB", "放得下", "最大 micro-batch", "通信/DDP", "每步秒"] if zh else
            ["strategy", "GiB/GPU", "usable", "fits", "max micro-batch", "comm/DDP", "step s"])
    rows = []
    for r in table:
        fits = "–" if r.fits is None else (("是" if r.fits else "否") if zh else ("yes" if r.fits else "no"))
        cells = [html.escape(r.label) + (" ★" if r.chosen else ""), _fmt(r.total_gib), _fmt(r.usable_gib),
                 fits, _fmt(r.max_micro_batch), "–" if r.vs_ddp is None else f"{r.vs_ddp:g}x",
                 _fmt(r.step_seconds)]
        cls = ' class="sw-chosen"' if r.chosen else ""
        rows.append(f"<tr{cls}>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    # beside a stated TP/CP/PP plan the rows are pure data parallelism: the caption says so
    caption = f"<caption>{html.escape(title)}</caption>" if title else ""
    return (_SCROLL + '<table class="sw-table">' + caption + '<thead><tr>' + "".join(f"<th>{h}</th>" for h in head)
            + "</tr></thead><tbody>" + "".join(rows) + "</tbody></table></div>")


def howto_html(howto: list[HowTo]) -> str:
    parts = []
    for h in howto:
        parts.append(f"<p><b>{html.escape(h.title)}</b></p>" + md_html(f"```{h.language}\n{h.code}\n```"))
    return "".join(parts)


def _list(items: list[str]) -> str:
    return "<ul>" + "".join(f"<li>{inline_html(i)}</li>" for i in items) + "</ul>" if items else ""


def sections_html(answer: Answer, sources: dict[str, str]) -> str:
    """The answer from its sections: the decision first, the long parts collapsed."""
    s = answer.sections
    zh = answer.language == "zh"
    out = [f'<p class="sw-headline">{inline_html(s.headline)}</p>']
    if s.direct_answer:
        out.append(f'<p class="sw-direct">{inline_html(s.direct_answer)}</p>')
    for notice in s.notices:
        out.append(f'<p class="sw-notice">{inline_html(notice)}</p>')
    out.append(stated_html(answer))
    out.append(carried_html(answer, sources))
    out.append(assumed_html(answer, sources))
    out.append(table_html(s, answer.language, plan=True))  # a stated plan's rows first, as bot.render
    out.append(table_html(s, answer.language))
    # The short form first, as bot.render lays it out: with a table the reasons and what-ifs are
    # folded (the table and the first sentence are the answer); without one the first two reasons
    # are the answer. Section titles are headings (screen readers list and jump between them).
    shown, folded = (([], s.reasons) if s.table else (s.reasons[:2], s.reasons[2:]))
    if shown:
        out.append(_list(shown))
    full = []
    if s.direct_more:
        full.append(f'<h3 class="sw-h">{"关于你的问题，还有" if zh else "More on what you asked"}</h3>'
                    + _list(s.direct_more))
    if folded:
        full.append(f'<h3 class="sw-h">{"为什么" if zh else "Why"}</h3>' + _list(folded))
    if s.what_ifs:
        full.append(f'<h3 class="sw-h">{"什么会改变结论" if zh else "What would change it"}</h3>' + _list(s.what_ifs))
    if s.questions:
        out.append(f'<h3 class="sw-h">{"还需要知道" if zh else "To be precise I need"}</h3>' + _list(s.questions))
    if full:
        out.append(_collapsed("为什么，以及什么会改变结论" if zh else "Why, and what would change it", "".join(full),
                              "sw-full"))
    if s.passages:
        out.append(_collapsed("文档里怎么说" if zh else "From the docs", _list(s.passages), "sw-passages"))
    if s.forum:
        items = [f"“{f.quote}” — {VERDICT_WORDS.get(f.verdict, (f.verdict, f.verdict))[0 if zh else 1]}"
                 + (f" ({f.condition})" if f.condition else "") + (f" {f.text}" if f.text else "")
                 + (f" [{f.citation}]" if f.citation and f"[{f.citation}]" not in (f.text or "") else "")
                 for f in s.forum]
        out.append(_collapsed("论坛里怎么说" if zh else "What the forum said", _list(items), "sw-forum"))
    if s.howto:
        out.append(_collapsed("怎么跑" if zh else "How to run it", howto_html(s.howto), "sw-howto-part"))
    return "".join(out)


_HEADING = re.compile(r"^\*\*(?P<title>[^*\n]+?)\*\*(?P<rest>[^\n]*)$", re.M)


def text_html(answer: Answer, sources: dict[str, str]) -> str:
    """The markdown ``answer.text`` with its long parts (forum, how-to, background) collapsed."""
    text = answer.text or ""
    starts = [m for m in _HEADING.finditer(text)]
    cuts = [m.start() for m in starts if any(h in m.group("title") for h in _COLLAPSED_HEADINGS)]
    if not cuts:
        first, _, body = text.partition("\n\n")
        return md_html(first) + assumed_html(answer, sources) + md_html(body)
    head, rest = text[:cuts[0]], text[cuts[0]:]
    bounds = [m.start() - cuts[0] for m in starts if m.start() >= cuts[0]] + [len(rest)]
    first, _, body = head.partition("\n\n")
    # The assumed line sits right after the headline (the first paragraph), before the table.
    out = [md_html(first), assumed_html(answer, sources), md_html(body)]
    for a, b in zip(bounds, bounds[1:], strict=False):
        part = rest[a:b]
        m = _HEADING.match(part)
        title = m.group("title") if m else ""
        body = part[m.end():] if m else part
        if any(h in title for h in _COLLAPSED_HEADINGS):
            out.append(_collapsed(html.escape(title), md_html(body), "sw-fallback-part"))
        else:
            out.append(md_html(part))
    return "".join(out)


_MARKER = re.compile(r"\[(\d{1,3})\]")
_NO_LINKS = re.compile(r"(<pre.*?</pre>|<code.*?</code>|<summary.*?</summary>|<a .*?</a>|<[^>]+>)", re.S)


def linked_markers(markup: str, numbers: set[int]) -> str:
    """Each ``[n]`` of a known source in the text becomes a link to that source's entry (the
    page's script opens it); markers inside code, tags, links and the sources' own titles stay."""
    def link(m: re.Match) -> str:
        n = int(m.group(1))
        if n not in numbers:
            return m.group(0)
        return f'<a class="sw-ref sw-ref-{n}" href="#sw-src-{n}" title="source {n}">[{n}]</a>'

    parts = _NO_LINKS.split(markup)
    return "".join(p if i % 2 else _MARKER.sub(link, p) for i, p in enumerate(parts))


def answer_html(answer: Answer, *, stated: set[str] | None = None, notice: str | None = None,
                answer_id: str = "") -> str:
    """The whole chat entry for an answer: one HTML block with the answer's language set."""
    sources = field_sources(answer, stated)
    body = sections_html(answer, sources) if answer.sections.headline else text_html(answer, sources)
    parts = []
    if notice:
        parts.append(f'<p class="sw-notice">{html.escape(notice)}</p>')
    parts.append(linked_markers(body, {c.n for c in answer.citations}))
    if answer.citations:
        parts.append(_collapsed(("来源" if answer.language == "zh" else "Sources")
                                + f" ({len(answer.citations)})",
                                sources_html(answer.citations, answer.language), "sw-sources-part"))
    # The id rides in a class: Gradio's sanitizer drops data-* attributes.
    return (f'<div class="sw-answer sw-a-{html.escape(answer_id)}" lang="{html_lang(answer.language)}">'
            + "".join(parts) + "</div>")


def plain_markdown(answer: Answer, notice: str | None = None) -> str:
    """The ``/chat`` API result and the Markdown download: markdown, sources as a list."""
    parts = [f"> {notice}"] if notice else []
    parts.append(answer.text)
    if answer.citations:
        heading = "来源" if answer.language == "zh" else "Sources"
        lines = [f"**{heading}**"]
        for c in answer.citations:
            lines.append(f"- [{c.n}] {c.title} ({c.kind}: {c.id})" + (f" {c.url}" if c.url else ""))
        parts.append("\n".join(lines))
    return "\n\n".join(parts)


def error_html(language: str, message: str, exchange_id: str) -> str:
    return (f'<div class="sw-answer sw-error sw-a-{exchange_id}" lang="{html_lang(language)}">'
            f"<p>{html.escape(message)}</p></div>")
