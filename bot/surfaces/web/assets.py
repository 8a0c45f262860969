"""Gradio's front-end files (``/assets/...``), served from memory, compressed once.

Why: Gradio serves each of the ~70 files a page loads with a ``FileResponse`` (a thread hop to
open, read and close the file) and compresses it with brotli on every request, on the server's
event loop; the chart's Plotly bundle alone is 4.6 MB, ~70 ms of brotli each time a tab draws its
first chart. With 20 tabs opening at once that work stood in line with everyone's answers. Here a
file is read and compressed (brotli and gzip) the first time it is asked for and kept; a hashed
file name (``index-DphvyggB.js``: the build names files by content) is cacheable for a year, the
rest revalidate by ETag.

Only files under Gradio's own build folder are served (the same folder Gradio's route serves);
anything else (``..``, absolute paths, folders) is a 404. When Gradio moves that folder this
route is not added and Gradio's own serves, as before (:func:`assets_route` returns None).
"""

from __future__ import annotations

import gzip
import hashlib
import logging
import mimetypes
import re
import threading
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

COMPRESSIBLE = {".js", ".mjs", ".css", ".html", ".json", ".svg", ".map", ".txt"}
# A name ending in the build's content hash ("-DphvyggB.js") never changes content.
_HASHED = re.compile(r"-[A-Za-z0-9_-]{8,}\.[a-z0-9]+$")
IMMUTABLE = "public, max-age=31536000, immutable"
MAX_CACHED_BYTES = 64 * 2**20  # a page needs ~15 MB of it; the folder holds every component's files


@dataclass(frozen=True)
class Asset:
    raw: bytes
    br: bytes | None
    gz: bytes | None
    media_type: str
    etag: str
    cache_control: str


class AssetCache:
    """Files of one folder, loaded on first request; compressed forms made once."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder.resolve()
        self._items: dict[str, Asset] = {}
        self._bytes = 0
        self._lock = threading.Lock()

    def cached(self, path: str) -> Asset | None:
        with self._lock:
            return self._items.get(path)

    def get(self, path: str) -> Asset | None:
        """The asset at ``path`` (relative to the folder), or None when there is no such file."""
        if (cached := self.cached(path)) is not None:
            return cached
        full = (self.folder / path).resolve()
        if not path or self.folder not in full.parents or not full.is_file():
            return None
        asset = load_asset(full)
        with self._lock:
            if self._bytes + len(asset.raw) <= MAX_CACHED_BYTES:  # past the cap: served, not kept
                self._items[path] = asset
                self._bytes += len(asset.raw) + len(asset.br or b"") + len(asset.gz or b"")
        return asset


def load_asset(full: Path) -> Asset:
    raw = full.read_bytes()
    media_type = mimetypes.guess_type(full.name)[0] or "application/octet-stream"
    if media_type.startswith("text/") or media_type in ("application/javascript", "application/json"):
        media_type += "; charset=utf-8"
    br = gz = None
    if full.suffix in COMPRESSIBLE and len(raw) > 500:
        import brotli  # a dependency of Gradio's own compression middleware

        br = brotli.compress(raw, quality=6)
        gz = gzip.compress(raw, compresslevel=6, mtime=0)
    etag = '"' + hashlib.blake2b(raw, digest_size=12).hexdigest() + '"'
    cache_control = IMMUTABLE if _HASHED.search(full.name) else "no-cache"
    return Asset(raw, br, gz, media_type, etag, cache_control)


def respond(asset: Asset, accept_encoding: str, if_none_match: str | None):
    """The HTTP response for ``asset`` given the request's headers."""
    from starlette.responses import Response

    headers = {"ETag": asset.etag, "Cache-Control": asset.cache_control, "Vary": "Accept-Encoding"}
    if if_none_match and asset.etag in [t.strip() for t in if_none_match.split(",")]:
        return Response(status_code=304, headers=headers)
    accepted = {part.split(";")[0].strip() for part in accept_encoding.lower().split(",")}
    if asset.br is not None and "br" in accepted:
        body, headers["Content-Encoding"] = asset.br, "br"
    elif asset.gz is not None and "gzip" in accepted:
        body, headers["Content-Encoding"] = asset.gz, "gzip"
    else:
        body = asset.raw
    return Response(body, media_type=asset.media_type, headers=headers)


def assets_route():
    """A Starlette route for ``/assets/{path}`` ahead of Gradio's, or None if Gradio's build folder
    cannot be found."""
    try:
        from gradio.route_utils import BUILD_PATH_LIB

        folder = Path(BUILD_PATH_LIB)
    except Exception as err:  # noqa: BLE001  (another Gradio layout: its own route serves)
        log.warning("Gradio's build folder not found (%s); its own /assets route serves", err)
        return None
    if not folder.is_dir():
        return None
    from starlette.concurrency import run_in_threadpool
    from starlette.requests import Request
    from starlette.responses import PlainTextResponse
    from starlette.routing import Route

    cache = AssetCache(folder)

    async def asset(request: Request):
        path = request.path_params["path"]
        # A kept file is answered on the event loop at once; a first read and compression
        # (~0.1 s for the Plotly bundle) goes to a thread.
        found = cache.cached(path) or await run_in_threadpool(cache.get, path)
        if found is None:
            return PlainTextResponse("Not found", status_code=404)
        return respond(found, request.headers.get("accept-encoding", ""), request.headers.get("if-none-match"))

    return Route("/assets/{path:path}", asset, methods=["GET", "HEAD"])
