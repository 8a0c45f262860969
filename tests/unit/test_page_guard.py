"""The page's request bounds without a server: a body over the limit is refused before it is
read, a chunked one is cut at the limit, a slow body times out, a small one reaches the app
whole (issue 30)."""

from __future__ import annotations

import asyncio

import pytest

from bot.surfaces.web.guard import BodyLimit


def _run(middleware, scope, chunks, delay=0.0):
    """Call the middleware with a client sending ``chunks``; returns (status, app saw body, chunks read)."""
    read = []
    sent = []
    seen = {}

    async def receive():
        if len(read) < len(chunks):
            await asyncio.sleep(delay)
            read.append(chunks[len(read)])
            return {"type": "http.request", "body": read[-1], "more_body": len(read) < len(chunks)}
        await asyncio.sleep(3600)
        return {"type": "http.disconnect"}

    async def send(message):
        sent.append(message)

    async def app(scope, receive, send):
        message = await receive()
        seen["body"] = message["body"]
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})

    middleware.app = app
    asyncio.run(middleware(scope, receive, send))
    return sent[0]["status"], seen.get("body"), len(read)


def _scope(path="/gradio_api/call/chat", **headers):
    return {"type": "http", "method": "POST", "path": path,
            "headers": [(k.replace("_", "-").encode(), v.encode()) for k, v in headers.items()]}


@pytest.mark.parametrize("size", [100_000_000, 1_000_001, 5_000_000_000])
def test_a_declared_body_over_the_limit_is_refused_unread(size):
    status, body, read = _run(BodyLimit(None), _scope(content_length=str(size)), [b"x" * 1000] * 3)
    assert status == 413 and body is None and read == 0


def test_a_chunked_body_is_cut_at_the_limit():
    chunks = [b"x" * 65_536] * 1600  # 100 MB if it were read whole
    status, body, read = _run(BodyLimit(None), _scope(transfer_encoding="chunked"), chunks)
    assert status == 413 and body is None
    assert read * 65_536 <= 1_000_000 + 65_536


@pytest.mark.parametrize(("headers", "chunks"), [
    ({"content_length": "11"}, [b"hello", b" world"]),
    ({"transfer_encoding": "chunked"}, [b'{"data": ["DDP or FSDP?"]}']),
    ({"content_length": "51200"}, [b"y" * 51_200]),  # a 50 KB paste
])
def test_a_small_body_reaches_the_app_whole(headers, chunks):
    status, body, _ = _run(BodyLimit(None), _scope(**headers), chunks)
    assert status == 200 and body == b"".join(chunks)


def test_an_upload_may_be_a_little_larger():
    guard = BodyLimit(None)
    assert _run(guard, _scope("/gradio_api/upload", content_length="1500000"), [b"z" * 1_500_000])[0] == 200
    assert _run(guard, _scope("/gradio_api/upload", content_length="3000000"), [b"z"])[0] == 413


def test_a_body_that_does_not_arrive_in_time_gets_408():
    status, body, _ = _run(BodyLimit(None, body_timeout=0.2), _scope(content_length="30"), [b"a"] * 30, delay=0.05)
    assert status == 408 and body is None


def test_a_bad_length_is_400_and_a_get_passes():
    assert _run(BodyLimit(None), _scope(content_length="12abc"), [b"x"])[0] == 400
    assert _run(BodyLimit(None), {"type": "http", "method": "GET", "path": "/", "headers": []}, [b""])[0] == 200
