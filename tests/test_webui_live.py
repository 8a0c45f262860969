"""The chat page as users and scripts meet it: ``app.py`` in a child process on a free
127.0.0.1 port, driven by Debian's Chromium (Playwright) and by ``gradio_client``.

Set ``SHARDWISE_WEBUI_URL`` to point these tests at an already running page instead.
Screenshots go to ``artifacts/`` (gitignored).
"""

from __future__ import annotations

import os
import re
import shutil
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from bot import webui
from bot.env import free_port, repo_root
from bot.strategies import LABELS_EN, LABELS_ZH, TRAINING_STRATEGIES

pytestmark = pytest.mark.slow

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run",
    # Anything but 127.0.0.1 fails to resolve: the page must not need the internet.
    "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
]
ARTIFACTS = repo_root() / "artifacts"
SEED = webui.EXAMPLES[0]
MARKER = re.compile(r"\[\d+\]")
STRATEGY_NAMES = [LABELS_EN[s] for s in TRAINING_STRATEGIES] + [LABELS_ZH[s] for s in TRAINING_STRATEGIES]


@pytest.fixture(scope="module")
def server_url(tmp_path_factory):
    if os.environ.get("SHARDWISE_WEBUI_URL"):
        yield os.environ["SHARDWISE_WEBUI_URL"].rstrip("/") + "/"
        return
    port = free_port()
    log_path = tmp_path_factory.mktemp("webui") / "server.log"
    proc = webui.start_subprocess(port, timeout=600, log_path=str(log_path))
    try:
        yield f"http://127.0.0.1:{port}/"
    finally:
        proc.terminate()
        try:
            proc.wait(20)
        except Exception:  # noqa: BLE001
            proc.kill()
        ARTIFACTS.mkdir(exist_ok=True)
        shutil.copy(log_path, ARTIFACTS / "webui-server.log")


# ----------------------------------------------------------------------------------------------
# gradio_client: /chat and load
# ----------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def client(server_url):
    from gradio_client import Client

    assert os.environ.get("HF_HUB_OFFLINE") == "1"  # else gradio_client looks the URL up on the hub
    return Client(server_url, verbose=False)


def test_chat_api_answers_with_a_recommendation_and_markers(client):
    md = client.predict("DDP or FSDP for Llama-2-7B on 8x A100 80GB?", api_name="/chat")
    assert isinstance(md, str)
    assert any(name in md for name in STRATEGY_NAMES), md[:500]
    assert MARKER.search(md) and "Sources" in md
    assert "<details" not in md  # the API returns plain markdown


def test_chat_api_empty_message_is_a_notice(client):
    md = client.predict("   ", api_name="/chat")
    assert "Please type a question" in md


# Twenty different setups: every answer differs, so a mix-up between users shows.
LOAD_QUESTIONS = [
    f"DDP or FSDP for {model} on {n}x {gpu}?"
    for model, gpu in (("Llama-2-7B", "A100 80GB"), ("Llama-2-13B", "H100 80GB"), ("Mistral-7B", "A100 40GB"),
                       ("GPT-2 XL", "RTX 4090 24GB"), ("Qwen2.5-14B", "H200"))
    for n in (2, 4, 8, 16)
]


def test_twenty_concurrent_users_each_get_their_own_answer(client, server_url):
    from gradio_client import Client

    assert len(set(LOAD_QUESTIONS)) == 20
    with ThreadPoolExecutor(max_workers=20) as pool:
        # One client (session) per user; all twenty questions are in flight at once.
        users = list(pool.map(lambda _: Client(server_url, verbose=False), range(20)))
        concurrent = list(pool.map(lambda c, q: c.predict(q, api_name="/chat"), users, LOAD_QUESTIONS))
    assert len(set(concurrent)) == 20, "two different setups got the same answer"
    # The answer under load is the answer alone: ask each again, one at a time, and compare.
    for question, under_load in zip(LOAD_QUESTIONS, concurrent, strict=True):
        alone = client.predict(question, api_name="/chat")
        assert under_load == alone, f"answer under load differs for {question!r}"


# ----------------------------------------------------------------------------------------------
# The browser
# ----------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def browser():
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} not installed (apt-get install chromium); browser tests need it")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


class Page:
    """One browser tab on the page, recording every request and failed script it sees."""

    def __init__(self, browser, url: str):
        self.page = browser.new_page(viewport={"width": 1440, "height": 1100})
        self.requests: list[str] = []
        self.page_errors: list[str] = []
        self.page.on("request", lambda r: self.requests.append(r.url))
        self.page.on("pageerror", lambda e: self.page_errors.append(str(e)))
        self.page.goto(url, wait_until="domcontentloaded")
        self.page.wait_for_selector("#sw-msg textarea", timeout=60_000)

    def bot_messages(self) -> list[str]:
        return [m.inner_text() for m in self.page.query_selector_all("#sw-chat .message.bot")]

    def ask(self, text: str, timeout_ms: int = 120_000) -> str:
        before = len(self.bot_messages())
        self.page.fill("#sw-msg textarea", text)
        self.page.click("#sw-send")
        return self.wait_for_bot_message(before, timeout_ms)

    def wait_for_bot_message(self, before: int, timeout_ms: int = 120_000) -> str:
        self.page.wait_for_function(
            "n => document.querySelectorAll('#sw-chat .message.bot').length > n", arg=before, timeout=timeout_ms)
        self.page.wait_for_selector("#sw-chat .pending", state="detached", timeout=timeout_ms)
        return self.bot_messages()[-1]

    def error_toasts(self) -> int:
        return len(self.page.query_selector_all(".toast-body.error, [data-testid='toast-body']"))

    def outside_requests(self) -> list[str]:
        return [u for u in self.requests if not re.match(r"(https?|wss?)://127\.0\.0\.1[:/]|data:|blob:", u)]


@pytest.mark.browser
def test_seed_question_sources_chart_edit_and_simulate(browser, server_url):
    tab = Page(browser, server_url)
    page = tab.page
    # The seed question from the examples, as a user would pick it.
    page.get_by_text(SEED[:20]).first.click()
    page.wait_for_function("s => document.querySelector('#sw-msg textarea').value === s", arg=SEED,
                           timeout=10_000)
    before = len(tab.bot_messages())
    page.click("#sw-send")
    answer = tab.wait_for_bot_message(before)
    assert any(name in answer for name in STRATEGY_NAMES), answer[:500]
    assert MARKER.search(answer)

    # A source opens and shows its quote.
    first = page.locator("#sw-chat .message.bot details").first
    first.locator("summary").click()
    assert first.get_attribute("open") is not None
    assert first.locator("code").inner_text().strip()  # the citation id

    # The chart is drawn (a decoded image with real size).
    page.wait_for_function(
        "() => { const i = document.querySelector('#sw-chart img'); return i && i.naturalWidth > 200; }",
        timeout=30_000)

    # The 7B seed question leaves the GPU open: those fields are highlighted.
    assert page.locator("#sw-f-gpu_count.sw-missing, #sw-f-gpu.sw-missing").count() >= 1

    # Edit the setup: GPT-2 XL (a short simulation) on 4 RTX 4090s with its 1024-token context.
    # Choosing from a dropdown re-answers at once; numbers re-answer on Enter or the button.
    def edit(selector: str, value: str, press: str | None = "Enter") -> str:
        before = len(tab.bot_messages())
        page.fill(selector, value)
        if press:
            page.keyboard.press(press)
        else:
            page.click("#sw-reanswer")
        return tab.wait_for_bot_message(before)

    edit("#sw-f-model input", "GPT-2 XL")
    edit("#sw-f-gpu input", "RTX 4090 24GB")
    edit("#sw-f-seq_len input", "1024")
    edited = edit("#sw-f-gpu_count input", "4", press=None)
    assert "GPT-2 XL" in edited and "4 x RTX 4090 24GB" in edited and "1024" in edited, edited[:500]
    assert page.locator(".sw-missing").count() == 0

    # Simulate the recommended strategy for that setup; the result and its bench citation appear.
    before = len(tab.bot_messages())
    page.click("#sw-simulate")
    result = tab.wait_for_bot_message(before, timeout_ms=400_000)
    assert "GiB" in result and ("Simulated" in result or "模拟" in result), result[:500]
    assert page.locator("#sw-chat .message.bot").last.locator(".sw-kind", has_text="bench").count() == 1

    page.locator("#sw-howto").get_by_text("How to run it").click()
    assert "torchrun" in page.locator("#sw-howto-code").inner_text()

    ARTIFACTS.mkdir(exist_ok=True)
    page.locator("#sw-chat .message.bot").last.locator("details summary").click()  # the bench source
    page.wait_for_timeout(500)
    page.evaluate("window.scrollTo(0, 0)")
    page.screenshot(path=str(ARTIFACTS / "webui.png"), full_page=True)
    assert tab.error_toasts() == 0
    assert tab.page_errors == []
    assert tab.outside_requests() == [], "the page asked for something outside 127.0.0.1"
    page.close()


@pytest.mark.browser
def test_bad_input_through_the_page(browser, server_url):
    tab = Page(browser, server_url)
    page = tab.page

    # Empty message: a clear notice, no crash.
    before = len(tab.bot_messages())
    page.click("#sw-send")
    assert "Please type a question" in tab.wait_for_bot_message(before)

    # Markup and scripts are shown as text and never run.
    hostile = ('<img src=x onerror="window.__pwned=1"><script>window.__pwned2=1</script>'
               '<svg onload="window.__pwned3=1"></svg> DDP or FSDP for Llama-2-7B on 8x A100 80GB?')
    tab.ask(hostile)
    page.wait_for_timeout(1500)  # give any injected handler the time to fire
    assert page.evaluate("[window.__pwned, window.__pwned2, window.__pwned3]") == [None, None, None]
    assert "<script>" in page.locator("#sw-chat .message.user").last.inner_text()
    assert page.locator("#sw-chat img[src='x'], #sw-chat script, #sw-chat svg[onload]").count() == 0

    # A 100 KB paste: answered from the first part, with a notice saying it was cut.
    paste = "DDP or FSDP for Llama-2-7B on 8x A100 80GB? " + "lorem ipsum " * 8500
    assert len(paste) > 100_000
    answer = tab.ask(paste)
    assert "only the first 4,000" in answer

    assert tab.error_toasts() == 0 and tab.page_errors == []
    page.close()


@pytest.mark.browser
def test_off_topic_and_a_cleared_conversation(browser, server_url):
    tab = Page(browser, server_url)
    page = tab.page
    chart_drawn = "() => !!document.querySelector('#sw-chart img')"
    off = tab.ask("What is a good recipe for tomato soup?")
    assert not re.search(r"\d GiB", off) and not page.evaluate(chart_drawn), off[:300]

    # After a real question, the trash button starts over: the next question stands alone.
    tab.ask("DDP or FSDP for Llama-2-7B on 8x A100 80GB?")
    assert page.evaluate(chart_drawn)
    page.locator("#sw-chat button[aria-label='Clear']").first.click()
    page.wait_for_function("() => !document.querySelector('#sw-chart img')", timeout=10_000)
    assert page.input_value("#sw-f-gpu_count input") == ""
    off = tab.ask("What is a good recipe for tomato soup?")
    assert not re.search(r"\d GiB", off), off[:300]
    time.sleep(0.5)
    assert tab.error_toasts() == 0
    assert tab.page_errors == []
    page.close()


@pytest.mark.browser
def test_enter_sends_the_question(browser, server_url):
    # A chat box sends on Enter; with lines=2 Gradio sent only on Shift+Enter and Enter added a newline.
    tab = Page(browser, server_url)
    before = len(tab.bot_messages())
    tab.page.fill("#sw-msg textarea", "DDP or FSDP for Llama-2-7B on 8x A100 80GB?")
    tab.page.press("#sw-msg textarea", "Enter")
    assert "Recommendation: FSDP full shard" in tab.wait_for_bot_message(before, timeout_ms=30_000)
