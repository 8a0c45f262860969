"""The page's text in and out: a message made ready to answer (stripped, cut with a notice),
user text made inert (shown as text, never as markup), and an answer as markdown for the
``/chat`` API and other callers. Its lines are the message catalogs' ``page.*``."""

from __future__ import annotations

import html
import re

from bot.answer import Answer
from bot.answer.catalog import wording
from bot.surfaces.web import answer_view as view
from bot.surfaces.web.answer_view import looks_chinese, sources_html

# Longer messages are cut: no real question is this long, and the parser should not chew 100 KB.
MAX_MESSAGE_CHARS = 4000


# How much of a long message the chat shows back to its author.
ECHO_CHARS = 600


def prepare_message(text: str | None) -> tuple[str, str | None]:
    """The message to answer (stripped, cut to MAX_MESSAGE_CHARS) and a notice if it was cut.

    Returns ``("", notice)`` for an empty message: the caller shows the notice and asks nothing.
    """
    text = (text or "").strip()
    if not text:
        return "", both_languages("page.empty")
    if len(text) <= MAX_MESSAGE_CHARS:
        return text, None
    language = "zh" if looks_chinese(text[:MAX_MESSAGE_CHARS]) else "en"
    notice = wording(language, "page.cut", length=f"{len(text):,}", limit=f"{MAX_MESSAGE_CHARS:,}")
    return text[:MAX_MESSAGE_CHARS], notice


def both_languages(key: str) -> str:
    """A line said before any language is known (an empty message, a failed answer): English, then
    Chinese (``page.<key>`` of both catalogs)."""
    return wording("en", key) + " / " + wording("zh", key)


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


def lang_tagged(markdown: str, language: str) -> str:
    """Markdown for a panel note, tagged zh-CN when Chinese (the page itself is tagged en, so
    screen readers and fonts would treat the Chinese as English or Japanese)."""
    if not markdown or language != "zh":
        return markdown
    return f'<div lang="zh-CN">\n\n{markdown}\n\n</div>'
