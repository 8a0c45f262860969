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
from bot.answer.catalog import LANGUAGES, wording, words_in
from bot.understand.text import looks_chinese  # re-exported: bot.surfaces.webui imports it from here

# Raw HTML off (tags in the text become visible text), images off (no remote fetch).
_MD = MarkdownIt("commonmark", {"html": False}).enable("table").disable("image")

# The words are the message catalogs' ``page.*`` (bot/answer/messages, both languages): a setup
# field's name (``page.field.*``), a forum verdict (``page.verdict.*``), a citation's kind
# (``page.kind.*``), the answer's headings and labels (``page.answer.*``).


def field_name(field: str, language: str) -> str:
    """A setup field's name in the setup line and the chips; an unknown field is its own name."""
    return words_in(language, "page.field.").get(field, field)


def _say(language: str, key: str, **values: Any) -> str:
    return wording(language, f"page.answer.{key}", **values)


def collapsed_headings() -> tuple[str, ...]:
    """Headings of the markdown fallback whose parts are long and go into <details> (both
    languages: the fallback reads text bot/render.py wrote)."""
    return tuple(h for lang in LANGUAGES for h in words_in(lang, "page.collapsed.").values())


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
    parts = [f'<div class="sw-sources"><b>{_say(language, "sources")}</b>']
    for c in citations:
        url = _safe_url(c.url)
        link = (f' · <a href="{html.escape(url)}" target="_blank" rel="noopener noreferrer">'
                f"{html.escape(url)}</a>") if url else (f" · {html.escape(c.url)}" if c.url else "")
        quote = ""
        if c.quote:
            quote = "<blockquote>" + html.escape(c.quote).replace("\n", "<br>") + "</blockquote>"
        kind = words_in(language, "page.kind.").get(c.kind, c.kind)
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
    lang = answer.language
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
    shown = _say(lang, "list_sep").join(f"{field_name(f, lang)} {html.escape(_show_value(given[f].value))}"
                                        for f in order)
    return f'<p class="sw-setup-line">{_say(lang, "setup")} {shown}</p>'


# Provenance values of a field taken from an earlier message (see bot/surfaces/web/panel.py).
CARRIED = ("history", "carried")


def carried_html(answer: Answer, sources: dict[str, str]) -> str:
    """The line that names every setting taken from an earlier message, marked (the panel's
    "Drop carried settings" button answers without them)."""
    lang = answer.language
    items = [i for i in answer.sections.setup_read if i.source in CARRIED]
    if not items:
        items = [SetupItem(field=f, value=answer.setup[f], source="history") for f, s in sources.items()
                 if s in CARRIED and answer.setup.get(f) is not None
                 and not isinstance(answer.setup.get(f), dict | list)]
    if not items:
        return ""
    chips = "".join(
        f'<span class="sw-chip sw-carried-chip">{html.escape(field_name(i.field, lang))} '
        f"{html.escape(_show_value(i.value))}</span>" for i in items)
    return f'<div class="sw-carried-line"><span>{_say(lang, "carried")}</span> {chips}</div>'


def assumed_html(answer: Answer, sources: dict[str, str]) -> str:
    """The line that names every assumed field and the value used."""
    lang = answer.language
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
            f'{html.escape(field_name(i.field, lang))} '
            f"{html.escape(_show_value(i.value))}</span>" for i in group)

    # The setup's own fields first; run options at their defaults (optimizer implementation,
    # torch.compile, ...) are named too, folded, so the table stays in view.
    main = [i for i in items if i.field in _SETUP_LINE]
    options = [i for i in items if i.field not in _SETUP_LINE]
    folded = ""
    if options:
        summary = _say(lang, "assumed_options", n=len(options))
        folded = (f'<details class="sw-assumed-options"><summary>{summary}</summary>{chips(options)}</details>')
    return f'<div class="sw-assumed-line"><span>{_say(lang, "assumed")}</span> {chips(main)}{folded}</div>'


# ----------------------------------------------------------------------------------------------
# The answer
# ----------------------------------------------------------------------------------------------


def _fmt(value: float | int | None, digits: int = 2) -> str:
    if value is None:
        return "–"
    return f"{value:,.{digits}f}".rstrip("0").rstrip(".") if isinstance(value, float) else f"{value:,}"


def table_html(sections: Sections, language: str, *, plan: bool = False) -> str:
    """The strategy table; ``plan``: the stated TP/CP/PP plan's data-parallel rows instead."""
    table, title = (sections.plan_table, sections.plan_table_title) if plan else (sections.table, sections.table_title)
    if not table:
        return ""
    columns = words_in(language, "page.answer.table.")
    head = [columns[c] for c in ("strategy", "total", "usable", "fits", "batch", "comm", "step")]
    rows = []
    for r in table:
        fits = "–" if r.fits is None else _say(language, "yes" if r.fits else "no")
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
    lang = answer.language
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
        full.append(f'<h3 class="sw-h">{_say(lang, "more")}</h3>' + _list(s.direct_more))
    if folded:
        full.append(f'<h3 class="sw-h">{_say(lang, "why")}</h3>' + _list(folded))
    if s.what_ifs:
        full.append(f'<h3 class="sw-h">{_say(lang, "change")}</h3>' + _list(s.what_ifs))
    if s.questions:
        out.append(f'<h3 class="sw-h">{_say(lang, "questions")}</h3>' + _list(s.questions))
    if full:
        out.append(_collapsed(_say(lang, "full"), "".join(full), "sw-full"))
    if s.passages:
        out.append(_collapsed(_say(lang, "passages"), _list(s.passages), "sw-passages"))
    if s.forum:
        verdicts = words_in(lang, "page.verdict.")
        items = [f"“{f.quote}” — {verdicts.get(f.verdict, f.verdict)}"
                 + (f" ({f.condition})" if f.condition else "") + (f" {f.text}" if f.text else "")
                 + (f" [{f.citation}]" if f.citation and f"[{f.citation}]" not in (f.text or "") else "")
                 for f in s.forum]
        out.append(_collapsed(_say(lang, "forum"), _list(items), "sw-forum"))
    if s.howto:
        out.append(_collapsed(_say(lang, "howto"), howto_html(s.howto), "sw-howto-part"))
    return "".join(out)


_HEADING = re.compile(r"^\*\*(?P<title>[^*\n]+?)\*\*(?P<rest>[^\n]*)$", re.M)


def text_html(answer: Answer, sources: dict[str, str]) -> str:
    """The markdown ``answer.text`` with its long parts (forum, how-to, background) collapsed."""
    text = answer.text or ""
    starts = [m for m in _HEADING.finditer(text)]
    headings = collapsed_headings()
    cuts = [m.start() for m in starts if any(h in m.group("title") for h in headings)]
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
        if any(h in title for h in headings):
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
        parts.append(_collapsed(_say(answer.language, "sources") + f" ({len(answer.citations)})",
                                sources_html(answer.citations, answer.language), "sw-sources-part"))
    # The id rides in a class: Gradio's sanitizer drops data-* attributes.
    return (f'<div class="sw-answer sw-a-{html.escape(answer_id)}" lang="{html_lang(answer.language)}">'
            + "".join(parts) + "</div>")


def plain_markdown(answer: Answer, notice: str | None = None) -> str:
    """The ``/chat`` API result and the Markdown download: markdown, sources as a list."""
    parts = [f"> {notice}"] if notice else []
    parts.append(answer.text)
    if answer.citations:
        lines = [f"**{_say(answer.language, 'sources')}**"]
        for c in answer.citations:
            lines.append(f"- [{c.n}] {c.title} ({c.kind}: {c.id})" + (f" {c.url}" if c.url else ""))
        parts.append("\n".join(lines))
    return "\n\n".join(parts)


def error_html(language: str, message: str, exchange_id: str) -> str:
    return (f'<div class="sw-answer sw-error sw-a-{exchange_id}" lang="{html_lang(language)}">'
            f"<p>{html.escape(message)}</p></div>")
