"""The files a tab can download for its answer (Markdown, JSON, the chart as PNG and SVG), made
when a link is followed, never before.

Why on request: drawing the chart twice with matplotlib after every answer, in case someone
downloads it, was about half of the server's CPU per page answer (~0.3 s of ~0.6 s, measured with
py-spy); under 20 tabs and 50 API clients at once that queued everyone's answers. Now each answer
shows four plain links (:func:`links_markdown`), and :func:`download_route` renders the file the
link names from the tab's latest answer.

A link is ``download/<session>/<answer id>/<file>``, relative to the page (so it works under a
proxy's root path). The session is the tab's Gradio session hash (random, the same secret the
tab's own events carry); the answer id must be the tab's latest answer, so a link from an earlier
answer says so instead of handing over a different answer's file.
"""

from __future__ import annotations

import json
import re
from io import BytesIO
from typing import Any
from urllib.parse import quote

from bot.answer import Answer
from bot.answer.catalog import wording

# file name -> media type
FILES = {
    "shardwise-answer.md": "text/markdown; charset=utf-8",
    "shardwise-answer.json": "application/json",
    "shardwise-chart.png": "image/png",
    "shardwise-chart.svg": "image/svg+xml",
}
# The words are the message catalogs' ``page.download.*``: a link's label (by file), and why a
# link cannot be served (said in English: a followed link carries no language).
LINK_LABELS = {
    "shardwise-answer.md": "page.download.md",
    "shardwise-answer.json": "page.download.json",
    "shardwise-chart.png": "page.download.png",
    "shardwise-chart.svg": "page.download.svg",
}
ROUTE = "/download/{session}/{answer_id}/{name}"
_TOKEN = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


class NotAvailable(Exception):
    """A download that cannot be made (unknown file, no such answer, no chart); the text says why."""


def render_file(answer_dump: dict[str, Any], name: str) -> bytes:
    """The bytes of ``name`` (one of :data:`FILES`) for an answer (``Answer.model_dump()``).
    A plain function of picklable data, so the page can run it in an answering worker."""
    from bot.surfaces.web.answer_view import plain_markdown
    from bot.surfaces.web.chart import memory_figure

    answer = Answer.model_validate(answer_dump)
    if name == "shardwise-answer.md":
        return plain_markdown(answer).encode("utf-8")
    if name == "shardwise-answer.json":
        return json.dumps(answer.model_dump(), ensure_ascii=False, indent=2).encode("utf-8")
    if name in ("shardwise-chart.png", "shardwise-chart.svg"):
        fig = memory_figure(answer)
        if fig is None:
            raise NotAvailable(_why("no_chart"))
        out = BytesIO()
        fig.savefig(out, format=name.rsplit(".", 1)[1])
        return out.getvalue()
    raise NotAvailable(_why("no_such_file", name=name))


def _why(key: str, **values: str) -> str:
    return wording("en", f"page.download.{key}", **values)


def has_chart(answer: Answer) -> bool:
    from bot.surfaces.web.chart import chart_strategies

    return bool(chart_strategies(answer.numbers))


def links_markdown(session: str | None, answer_id: str, answer: Answer) -> str:
    """The answer's download links (Markdown); empty when the tab has no session to name."""
    if not session or not _TOKEN.match(session) or not _TOKEN.match(answer_id):
        return ""
    lang = answer.language
    names = list(FILES) if has_chart(answer) else list(FILES)[:2]
    links = [f"[{wording(lang, LINK_LABELS[name])}](download/{quote(session)}/{answer_id}/{name})" for name in names]
    return wording(lang, "page.download.prefix") + " · ".join(links)


def lookup(conversations, session: str, answer_id: str, name: str) -> dict[str, Any]:
    """The answer a link names, checked: a known file, a live tab, its latest answer."""
    if name not in FILES:
        raise NotAvailable(_why("no_such_file", name=name))
    if not _TOKEN.match(session) or not _TOKEN.match(answer_id):
        raise NotAvailable(_why("not_a_link"))
    conv = conversations.find(session)
    if conv is None or not conv.answer:
        raise NotAvailable(_why("gone"))
    if conv.answer_id != answer_id:
        raise NotAvailable(_why("earlier"))
    return conv.answer


def download_route(conversations, run):
    """A Starlette route serving the links; ``run(fn, *args)`` renders (the page's answering pool)."""
    from starlette.requests import Request
    from starlette.responses import PlainTextResponse, Response
    from starlette.routing import Route

    def download(request: Request) -> Response:
        p = request.path_params
        try:
            answer = lookup(conversations, p["session"], p["answer_id"], p["name"])
            body = run(render_file, answer, p["name"])
        except NotAvailable as err:
            return PlainTextResponse(str(err), status_code=404)
        return Response(body, media_type=FILES[p["name"]],
                        headers={"Content-Disposition": f'attachment; filename="{p["name"]}"',
                                 "Cache-Control": "no-store"})

    return Route(ROUTE, download, methods=["GET"])
