"""SHARDWISE_CHROMA_URL: the same index on a real chroma server (``chroma run``) on 127.0.0.1."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from bot.knowledge.corpus import Doc, ForumAnswer
from bot.knowledge.index import chunk_entries, ensure_index, ingest, open_index
from bot.knowledge.search import Searcher
from tests.netutil import free_port

TINY = [
    ForumAnswer(id="forum-06", text="FSDP开混合精度加梯度checkpointing，单卡显存能压到20G左右。",
                text_en="FSDP with mixed precision and checkpointing: about 20 GB per GPU.",
                title="forum-06: about 20 GB per GPU", url="https://example.com/t#6"),
    Doc(id="doc-ring", title="Ring all-reduce", lang="en", urls=["https://example.com/nccl"],
        text="NCCL ring all-reduce sends 2(n-1)/n times the buffer per GPU.\n"),
]


def _chroma_cli() -> str | None:
    beside = Path(sys.executable).with_name("chroma")
    return str(beside) if beside.exists() else shutil.which("chroma")


@pytest.fixture(scope="module")
def chroma_url(tmp_path_factory):
    cli = _chroma_cli()
    if cli is None:
        pytest.skip("the chroma CLI is not installed next to this Python")
    port = free_port()
    log = tmp_path_factory.mktemp("chroma-server") / "server.log"
    with open(log, "w") as out:
        server = subprocess.Popen(
            [cli, "run", "--path", str(log.parent / "data"), "--host", "127.0.0.1", "--port", str(port)],
            stdout=out, stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(f"{url}/api/v2/heartbeat", timeout=1)
                break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    pytest.skip(f"chroma server did not start on {url}: {log.read_text()[-500:]}")
                time.sleep(0.3)
        yield url
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()


def test_index_and_search_on_a_chroma_server(chroma_url, monkeypatch, tmp_path):
    monkeypatch.setenv("SHARDWISE_CHROMA_URL", chroma_url)
    chunks = chunk_entries(TINY)
    first = ingest(chunks)
    assert first.rebuilt and first.location == chroma_url
    assert not list(tmp_path.iterdir())  # nothing written locally

    again = ingest(chunks)
    assert not again.rebuilt and again.skipped == 2

    rebuilt = ingest(chunks, rebuild=True)
    assert rebuilt.generation != first.generation
    store = ensure_index(chunks)
    assert store.generation == rebuilt.generation
    names = [c.name for c in store.client.list_collections()]
    assert names == [f"shardwise-{rebuilt.generation}"]  # the old generation was dropped after the swap

    hits = Searcher(chunks, store).search("how much memory per GPU with mixed precision", k=2)
    assert hits[0].id == "forum-06" and hits[0].text == TINY[0].text
    assert open_index().collection.count() == len(chunks)


def test_a_bad_url_is_a_clear_error(monkeypatch):
    from bot.knowledge.index import IndexUnavailable

    monkeypatch.setenv("SHARDWISE_CHROMA_URL", "not-a-url")
    with pytest.raises(IndexUnavailable, match="http"):
        open_index()


def test_an_unreachable_server_degrades_search_to_bm25(monkeypatch):
    from bot.knowledge import search as search_module
    from bot.knowledge.index import IndexUnavailable

    monkeypatch.setenv("SHARDWISE_CHROMA_URL", f"http://127.0.0.1:{free_port()}")  # nothing listens
    with pytest.raises(IndexUnavailable, match="cannot reach the chroma server"):
        ingest(chunk_entries(TINY))
    search_module.reset()
    try:
        with pytest.warns(RuntimeWarning, match="BM25 only"):
            hits = search_module.search("梯度检查点 混合精度 单卡显存", k=3)
        assert hits and search_module.default_searcher().store is None
    finally:
        monkeypatch.delenv("SHARDWISE_CHROMA_URL")
        search_module.reset()
