"""Everything under tests/integration is ``slow``: real processes, browsers, models and stores.
The unit run (``pytest -m "not slow"``) leaves it out; CI runs it as its own step (``-m slow``).

The page's browser suites (test_page_agrees, test_webui_live) share one ``app.py`` and one
Chromium for the whole session (``page_server``, ``page_browser``): each test opens its own
browser context (fresh tab, cookies, storage), so sharing the process changes what is started,
not what is checked. Set ``SHARDWISE_WEBUI_URL`` to test an already running page instead."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    for item in items:
        if HERE in Path(str(item.fspath)).resolve().parents:
            item.add_marker(pytest.mark.slow)


@pytest.fixture(scope="session")
def page_server(tmp_path_factory):
    """``(url, proc)``: ``app.py`` on a free 127.0.0.1 port for every browser suite of the session
    (``proc`` is None for ``SHARDWISE_WEBUI_URL``); its log is kept as artifacts/page-server.log."""
    if os.environ.get("SHARDWISE_WEBUI_URL"):
        yield os.environ["SHARDWISE_WEBUI_URL"].rstrip("/") + "/", None
        return
    from bot.env import free_port
    from tests.integration.test_webui_live import ARTIFACTS
    from tests.webserver import served_page

    port = free_port()
    log_path = tmp_path_factory.mktemp("page") / "server.log"
    with served_page(port, log_path, ARTIFACTS / "page-server.log") as proc:
        yield f"http://127.0.0.1:{port}/", proc


@pytest.fixture(scope="session")
def page_browser():
    """One headless Debian Chromium (Playwright) for the session; skipped where it is missing."""
    from tests.integration.test_webui_live import CHROMIUM, CHROMIUM_ARGS

    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} not installed (apt-get install chromium); browser tests need it")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()
