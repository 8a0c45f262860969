"""The chat page as users and scripts meet it: ``app.py`` in a child process on a free
127.0.0.1 port, driven by Debian's Chromium (Playwright) at desktop (1440x900) and phone (390x844)
sizes, and by ``gradio_client``.

Each test names the issue-16 defect it guards. Set ``SHARDWISE_WEBUI_URL`` to point these tests at
an already running page instead. Screenshots go to ``$SHARDWISE_ARTIFACTS`` or ``artifacts/``
(git-ignored), the server log too.
"""

from __future__ import annotations

import os
import re
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

# (importing bot sets the offline switches gradio_client needs: no gradio import in this process)
from bot.env import repo_root
from bot.strategies import TRAINING_STRATEGIES, label

pytestmark = pytest.mark.slow

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run",
    # Anything but 127.0.0.1 fails to resolve: the page must not need the internet.
    "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
]
DESKTOP = {"width": 1440, "height": 900}
PHONE = {"width": 390, "height": 844}
ARTIFACTS = Path(os.environ.get("SHARDWISE_ARTIFACTS") or repo_root() / "artifacts")
AXE = repo_root() / "node_modules" / "axe-core" / "axe.min.js"
MARKER = re.compile(r"\[\d+\]")
STRATEGY_NAMES = [label(s, "en") for s in TRAINING_STRATEGIES] + [label(s, "zh") for s in TRAINING_STRATEGIES]
GPT2XL = "Can I train GPT-2 XL on 4x RTX 4090 24GB with plain DDP?"
LLAMA = "DDP or FSDP for Llama-2-7B on 8x A100 80GB?"


@pytest.fixture(scope="module")
def server_url(page_server):
    return page_server[0]  # the session's app.py (tests/integration/conftest.py)


# ----------------------------------------------------------------------------------------------
# gradio_client: /chat and load
# ----------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def client(server_url):
    from gradio_client import Client

    assert os.environ.get("HF_HUB_OFFLINE") == "1"  # else gradio_client looks the URL up on the hub
    return Client(server_url, verbose=False)


def test_chat_api_answers_with_a_recommendation_and_markers(client):
    md = client.predict(LLAMA, api_name="/chat")
    assert isinstance(md, str)
    assert any(name in md for name in STRATEGY_NAMES), md[:500]
    assert MARKER.search(md) and "Sources" in md
    assert "<details" not in md  # the API returns plain markdown


def test_chat_api_empty_message_is_a_notice(client):
    md = client.predict("   ", api_name="/chat")
    assert "Please type a question" in md


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
        users = list(pool.map(lambda _: Client(server_url, verbose=False), range(20)))
        concurrent = list(pool.map(lambda c, q: c.predict(q, api_name="/chat"), users, LOAD_QUESTIONS))
    assert len(set(concurrent)) == 20, "two different setups got the same answer"
    for question, under_load in zip(LOAD_QUESTIONS[::5], concurrent[::5], strict=True):
        assert under_load == client.predict(question, api_name="/chat"), f"answer under load differs: {question!r}"


# ----------------------------------------------------------------------------------------------
# The browser
# ----------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def browser(page_browser):
    return page_browser  # the session's Chromium (tests/integration/conftest.py)


class Tab:
    """One browser tab on the page, recording every request and failed script it sees."""

    def __init__(self, browser, url: str, viewport: dict = DESKTOP):
        self.context = browser.new_context(viewport=viewport, accept_downloads=True)
        self.page = self.context.new_page()
        self.requests: list[str] = []
        self.page_errors: list[str] = []
        self.page.on("request", lambda r: self.requests.append(r.url))
        self.page.on("pageerror", lambda e: self.page_errors.append(str(e)))
        self.page.goto(url, wait_until="domcontentloaded")
        self.page.wait_for_selector("#sw-msg textarea", timeout=60_000)

    def close(self):
        self.context.close()

    def bot_messages(self) -> list[str]:
        return [m.inner_text() for m in self.page.query_selector_all("#sw-chat .sw-answer")]

    def user_messages(self) -> list[str]:
        return [m.inner_text() for m in self.page.query_selector_all("#sw-chat .sw-user")]

    def send(self, text: str) -> None:
        self.page.fill("#sw-msg textarea", text)
        self.page.click("#sw-send")

    def wait_answers(self, n: int, timeout_ms: int = 120_000) -> list[str]:
        """Wait until the chat holds ``n`` answers and nothing is pending."""
        self.page.wait_for_function("n => document.querySelectorAll('#sw-chat .sw-answer').length >= n",
                                    arg=n, timeout=timeout_ms)
        self.page.wait_for_selector("#sw-chat .pending", state="detached", timeout=timeout_ms)
        # The chart, then the panel and the links, land in their own events after the text: wait
        # for the links naming the latest answer (an error answer has none: it changes nothing).
        self.page.wait_for_function(
            """() => { const a = [...document.querySelectorAll('#sw-chat .sw-answer')].pop();
                const id = (a.className.match(/sw-a-(x\\d+)/) || [])[1];
                return a.classList.contains('sw-error') || a.classList.contains('sw-sim')
                  || a.classList.contains('sw-compare')
                  || [...document.querySelectorAll('#sw-downloads a')].some(l => l.href.includes('/' + id + '/')); }""",
            timeout=timeout_ms)
        self.page.wait_for_timeout(300)
        return self.bot_messages()

    def ask(self, text: str, timeout_ms: int = 120_000) -> str:
        before = len(self.bot_messages())
        self.send(text)
        return self.wait_answers(before + 1, timeout_ms)[-1]

    def edit(self, field: str, value: str, timeout_ms: int = 60_000) -> str:
        """Type into a panel field and press Enter (numbers) or pick the option (dropdowns)."""
        before = len(self.bot_messages())
        box = f"#sw-f-{field} input, #sw-f-{field} textarea"
        self.page.fill(box, value)
        assert self.page.input_value(box) == value
        self.page.press(box, "Enter")
        return self.wait_answers(before + 1, timeout_ms)[-1]

    def field(self, name: str) -> str:
        return self.page.input_value(f"#sw-f-{name} input, #sw-f-{name} textarea")

    def classes(self, name: str) -> str:
        return self.page.get_attribute(f"#sw-f-{name}", "class") or ""

    def error_toasts(self) -> int:
        return len(self.page.query_selector_all(".toast-body.error, [data-testid='toast-body']"))

    def outside_requests(self) -> list[str]:
        return [u for u in self.requests if not re.match(r"(https?|wss?)://127\.0\.0\.1[:/]|data:|blob:", u)]

    def shot(self, name: str, full_page: bool = False) -> None:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        self.page.screenshot(path=str(ARTIFACTS / f"webui-{name}.png"), full_page=full_page)

    def assert_clean(self) -> None:
        assert self.error_toasts() == 0
        assert self.page_errors == []
        assert self.outside_requests() == [], "the page asked for something outside 127.0.0.1"


@pytest.fixture()
def desktop(browser, server_url):
    tab = Tab(browser, server_url)
    yield tab
    tab.close()


@pytest.fixture()
def phone(browser, server_url):
    tab = Tab(browser, server_url, PHONE)
    yield tab
    tab.close()


@pytest.mark.browser
def test_two_nodes_get_an_assumed_link_and_a_failed_edit_does_not_stick(desktop):
    """Defect 1: 16 GPUs on 2 nodes answered (the link assumed, highlighted), never a crash."""
    tab = desktop
    tab.ask(GPT2XL)
    assert tab.field("inter_node_link") in ("", "none")
    two = tab.edit("nodes", "2")  # 4 GPUs over 2 nodes: the one-node link "none" must not stay
    assert "failed" not in two.lower() and tab.field("inter_node_link") in ("infiniband", "ethernet"), two[:300]
    answer = tab.edit("gpu_count", "16")
    assert "failed" not in answer.lower() and "invalid" not in answer.lower(), answer[:400]
    assert any(name in answer for name in STRATEGY_NAMES), answer[:400]
    assert tab.field("inter_node_link") in ("infiniband", "ethernet")
    assert "sw-assumed" in tab.classes("inter_node_link") or "sw-missing" in tab.classes("inter_node_link")
    # A bad value gets a clear message; the next edit answers normally again.
    bad = tab.edit("nodes", "3")  # 16 GPUs do not split evenly over 3 nodes
    assert "16" in bad and "3" in bad, bad[:300]
    again = tab.edit("nodes", "4")
    assert any(name in again for name in STRATEGY_NAMES) and "failed" not in again.lower(), again[:400]
    tab.shot("two-nodes")
    tab.assert_clean()


@pytest.mark.browser
def test_messages_sent_while_answering_each_get_their_own_answer_in_order(desktop):
    """Defect 2: a second message while the first is answered; typing kept; no stray notice."""
    tab, page = desktop, desktop.page
    tab.send(LLAMA)
    tab.send(GPT2XL)  # at once: the first is still being answered
    page.fill("#sw-msg textarea", "what about 4 GPU")  # typing while answers land
    page.type("#sw-msg textarea", "s")
    tab.wait_answers(2)
    assert page.input_value("#sw-msg textarea") == "what about 4 GPUs"  # not erased by an answer
    users, answers = tab.user_messages(), tab.bot_messages()
    assert users == [LLAMA, GPT2XL] and len(answers) == 2
    assert "Llama-2-7B" in answers[0] and "GPT-2 XL" in answers[1]
    # Each answer directly follows its own question in the chat.
    order = page.eval_on_selector_all("#sw-chat .sw-user, #sw-chat .sw-answer",
                                      "els => els.map(e => e.classList.contains('sw-user') ? 'q' : 'a')")
    assert order == ["q", "a", "q", "a"]
    # A double click on Ask sends once and adds no "type a question" notice.
    page.fill("#sw-msg textarea", "DDP or FSDP for Mistral-7B on 4x A100 40GB?")
    page.dblclick("#sw-send")
    tab.wait_answers(3)
    page.wait_for_timeout(800)
    assert len(tab.user_messages()) == 3 and len(tab.bot_messages()) == 3
    assert "type a question" not in page.inner_text("#sw-chat").lower()
    assert page.inner_text("#sw-hint").strip() == ""
    tab.assert_clean()


@pytest.mark.browser
def test_empty_number_fields_mean_unknown(desktop):
    """Defect 3: no 0 in empty fields; opening a dropdown or tabbing posts nothing."""
    tab, page = desktop, desktop.page
    for name in ("params_b", "gpu_memory_gb", "gpu_count", "nodes", "seq_len", "micro_batch"):
        assert tab.field(name) == "", name
    page.click("#sw-f-precision input")
    page.keyboard.press("Escape")
    page.click("#sw-f-gpu_count textarea, #sw-f-gpu_count input")
    for _ in range(6):
        page.keyboard.press("Tab")
    page.wait_for_timeout(1500)
    assert tab.bot_messages() == [] and "must be positive" not in page.inner_text("body")
    assert page.locator(".sw-missing").count() == 0
    tab.assert_clean()


@pytest.mark.browser
def test_user_text_is_shown_as_text_and_nothing_loads_from_outside(desktop):
    """Defect 4: markdown, images and markup in the user's message stay literal text."""
    tab, page = desktop, desktop.page
    hostile = ("![t](http://example.com/track.png) # Heading **bold** "
               '<img src=x onerror="window.__pwned=1"><script>window.__pwned2=1</script> ' + LLAMA)
    tab.ask(hostile)
    page.wait_for_timeout(1000)
    user = page.locator("#sw-chat .sw-user").last
    assert user.inner_text().startswith("![t](http://example.com/track.png) # Heading **bold** <img")
    assert user.locator("img, h1, strong, script").count() == 0
    assert page.evaluate("[window.__pwned, window.__pwned2]") == [None, None]
    assert page.locator("#sw-chat img[src*='example.com'], #sw-chat img[src='x']").count() == 0
    # A 100 KB paste: answered from the first part, with a notice saying it was cut.
    paste = LLAMA + " " + "lorem ipsum " * 8500
    assert "only the first 4,000" in tab.ask(paste)
    tab.assert_clean()


@pytest.mark.browser
def test_the_gpt2_example_assumes_a_length_gpt2_can_hold(desktop):
    """Defect 5: the page's own GPT-2 XL example: seq 1024 (its learned positions), simulate offered."""
    tab, page = desktop, desktop.page
    page.locator("#sw-chat button", has_text="GPT-2 XL").first.click()
    answer = tab.wait_answers(1)[-1]
    assert "seq 1024" in answer or "1024" in answer, answer[:400]
    assert tab.field("seq_len") == "1024"
    assert page.locator("#sw-simulate").is_enabled()
    tab.assert_clean()


@pytest.mark.browser
@pytest.mark.parametrize("size", ["desktop", "phone"])
def test_a_new_answer_starts_in_view_with_long_parts_collapsed(browser, server_url, size):
    """Defect 6: the headline and table of the new answer are in view, not the bottom."""
    tab = Tab(browser, server_url, DESKTOP if size == "desktop" else PHONE)
    page = tab.page
    try:
        tab.ask(LLAMA)
        tab.ask(GPT2XL)
        page.wait_for_timeout(600)
        box = page.evaluate("""() => {
            const a = [...document.querySelectorAll('#sw-chat .sw-answer')].pop();
            const chat = document.querySelector('#sw-chat');
            const r = a.getBoundingClientRect(), c = chat.getBoundingClientRect();
            return {top: r.top, ctop: c.top, cbottom: c.bottom, vh: window.innerHeight};
        }""")
        assert box["ctop"] - 2 <= box["top"] <= box["ctop"] + 120, box  # its start at the top of the chat
        assert 0 <= box["top"] < box["vh"] - 100, box  # and on screen
        last = page.locator("#sw-chat .sw-answer").last
        assert last.locator(".sw-headline, p").first.is_visible()
        for part in ("sw-sources-part",):
            assert last.locator(f"details.{part}").count() == 1
        assert last.locator("details[open]").count() == 0  # forum, how-to, sources collapsed
        tab.shot(f"answer-{size}")
        tab.assert_clean()
    finally:
        tab.close()


@pytest.mark.browser
def test_phone_first_view_shows_the_input_and_desktop_the_examples(browser, server_url):
    """Defect 7: the message box above the fold on a phone; intro right for the width."""
    tab = Tab(browser, server_url, PHONE)
    try:
        page = tab.page
        box = page.locator("#sw-msg textarea").bounding_box()
        assert box["y"] + box["height"] <= PHONE["height"], box
        assert page.locator("#sw-send").bounding_box()["y"] < PHONE["height"]
        assert not page.get_by_text("on the right").is_visible()
        assert page.get_by_text("below the chat").is_visible()
        tab.shot("first-phone")
    finally:
        tab.close()
    tab = Tab(browser, server_url, DESKTOP)
    try:
        examples = tab.page.locator("#sw-chat button", has_text="GPT-2 XL").first.bounding_box()
        assert examples["y"] + examples["height"] <= DESKTOP["height"], examples
        tab.shot("first-desktop")
    finally:
        tab.close()


@pytest.mark.browser
def test_simulate_only_where_it_runs_once_per_press_and_says_what_it_measured(desktop):
    """Defects 8 and 1: no simulate for LoRA; a double press simulates once; a repeat says it
    came from the store; the message names the setup it measured."""
    tab, page = desktop, desktop.page
    tab.ask("LoRA fine-tuning Llama-2-7B on 8x A100 80GB: DDP or FSDP?")
    assert not page.locator("#sw-simulate").is_enabled()
    assert "full fine-tuning only" in page.inner_text("#sw-sim-note")
    tab.ask("DDP or FSDP for full fine-tuning GPT-2 on 2x RTX 4090 24GB?")
    assert page.locator("#sw-simulate").is_enabled()
    before = len(tab.bot_messages())
    page.dblclick("#sw-simulate")
    result = tab.wait_answers(before + 1, timeout_ms=400_000)[-1]
    page.wait_for_timeout(1000)
    assert len(tab.bot_messages()) == before + 1, "a double press simulated twice"
    assert "GiB" in result and "Setup measured: GPT-2, 2 GPUs" in result, result[:500]
    page.wait_for_function("() => !document.querySelector('#sw-simulate').disabled", timeout=30_000)
    page.click("#sw-simulate")
    again = tab.wait_answers(before + 2, timeout_ms=120_000)[-1]
    assert "from the stored run" in again and "simulated in" not in again, again[:300]
    tab.assert_clean()


ASSUMED_FIELDS = ("precision", "optimizer", "seq_len", "micro_batch", "activation_checkpointing")


@pytest.mark.browser
def test_every_assumed_field_is_highlighted_and_named(desktop):
    """Defect 9: precision, optimizer, sequence length, micro-batch, checkpointing assumed: shown."""
    tab, page = desktop, desktop.page
    tab.ask(LLAMA)
    for name in ASSUMED_FIELDS:
        assert "sw-assumed" in tab.classes(name), name
    chips = page.locator("#sw-chat .sw-answer").last.locator(".sw-chip").all_inner_texts()
    named = " ".join(chips)
    for words in ("precision", "optimizer", "sequence length", "micro-batch", "activation checkpointing"):
        assert words in named, (words, chips)
    # A field the user sets stops being assumed.
    tab.edit("seq_len", "4096")
    assert "sw-assumed" not in tab.classes("seq_len") and "sw-assumed" in tab.classes("precision")
    tab.assert_clean()


@pytest.mark.browser
def test_accessibility_axe_language_labels_and_chart(desktop):
    """Defect 10: axe-core finds no serious or critical violation; Chinese messages are zh-CN;
    the message box has a label; the chart has a text description and readable ticks."""
    if not AXE.exists():
        pytest.skip(f"{AXE} missing: scripts/install.sh installs axe-core with npm")
    tab, page = desktop, desktop.page
    tab.ask("7B模型在8张A100 80GB上训练，用DDP还是FSDP？")
    assert page.locator("#sw-chat .sw-answer").last.get_attribute("lang") == "zh-CN"
    assert page.locator("#sw-chat .sw-user").last.get_attribute("lang") == "zh-CN"
    label = page.evaluate("""() => { const t = document.querySelector('#sw-msg textarea');
        return t.getAttribute('aria-label') || (t.labels && t.labels[0] && t.labels[0].innerText) || ''; }""")
    assert "question" in label.lower(), label
    page.wait_for_selector("#sw-chart .js-plotly-plot", timeout=30_000)
    assert "Per-GPU memory" in page.inner_text("#sw-chart-note") or "每卡显存" in page.inner_text("#sw-chart-note")
    sizes = page.eval_on_selector_all("#sw-chart .xtick text, #sw-chart .ytick text",
                                      "els => els.map(e => parseFloat(getComputedStyle(e).fontSize))")
    assert sizes and min(sizes) >= 11, sizes
    page.add_script_tag(path=str(AXE))
    result = page.evaluate("async () => await axe.run(document, {resultTypes: ['violations']})")
    bad = [(v["id"], v["impact"], len(v["nodes"]), v["nodes"][0]["target"]) for v in result["violations"]
           if v["impact"] in ("serious", "critical")]
    tab.shot("accessibility", full_page=True)
    assert bad == [], bad
    tab.assert_clean()


@pytest.mark.browser
def test_share_link_restores_the_answer_and_downloads_work(browser, server_url, desktop):
    """Beyond: the setup in the URL re-opens the same answer; Markdown/JSON/PNG/SVG downloads."""
    tab, page = desktop, desktop.page
    tab.ask(GPT2XL)
    answer = tab.edit("micro_batch", "2")
    page.wait_for_function("() => location.search.includes('micro_batch=2')", timeout=10_000)
    link = page.evaluate("location.href")
    md_link = "#sw-downloads a[href$='shardwise-answer.md']"
    page.wait_for_selector(md_link, state="visible", timeout=30_000)
    with page.expect_download() as md:
        page.click(md_link)
    text = Path(md.value.path()).read_text(encoding="utf-8")
    assert "GPT-2 XL" in text and "micro-batch 2" in text
    with page.expect_download() as svg:
        page.click("#sw-downloads a[href$='shardwise-chart.svg']")
    assert Path(svg.value.path()).read_text(encoding="utf-8").lstrip().startswith("<?xml")
    assert len(tab.context.pages) == 1  # downloaded in place, no stray tab
    # A link from an earlier answer says so instead of serving the newer answer's file.
    stale = page.get_attribute(md_link, "href")
    tab.edit("micro_batch", "4")
    page.wait_for_function(f"() => !document.querySelector(\"{md_link}\")?.href.endsWith({stale!r})",
                           timeout=30_000)
    import httpx

    reply = httpx.get(server_url + stale, timeout=30)
    assert reply.status_code == 404 and "earlier answer" in reply.text
    other = Tab(browser, link)
    try:
        shared = other.wait_answers(1)[-1]
        assert shared.splitlines()[0] == answer.splitlines()[0]  # the same recommendation line
        assert other.field("micro_batch") == "2"
        other.assert_clean()
    finally:
        other.close()
    tab.assert_clean()


@pytest.mark.browser
def test_off_topic_and_a_cleared_conversation(desktop):
    tab, page = desktop, desktop.page
    off = tab.ask("What is a good recipe for tomato soup?")
    assert not re.search(r"\d GiB", off), off[:300]
    tab.ask(LLAMA)
    page.wait_for_selector("#sw-chart .js-plotly-plot", timeout=30_000)
    page.locator("#sw-chat button[aria-label='Clear']").first.click()
    page.wait_for_function("() => !document.querySelector('#sw-chart .js-plotly-plot')", timeout=10_000)
    assert tab.field("gpu_count") == ""
    off = tab.ask("What is a good recipe for tomato soup?")
    assert not re.search(r"\d GiB", off), off[:300]
    time.sleep(0.5)
    tab.assert_clean()


@pytest.mark.browser
def test_enter_sends_the_question(desktop):
    desktop.page.fill("#sw-msg textarea", LLAMA)
    desktop.page.press("#sw-msg textarea", "Enter")
    assert any(name in desktop.wait_answers(1)[-1] for name in STRATEGY_NAMES)


@pytest.mark.browser
def test_model_from_an_uploaded_config_json(desktop, tmp_path):
    """Beyond: the model comes from an uploaded config.json (its parameter count answers)."""
    import json

    tab, page = desktop, desktop.page
    tab.ask(GPT2XL)
    config = tmp_path / "config.json"
    config.write_text(json.dumps({  # Llama-2-7B's shape
        "model_type": "llama", "hidden_size": 4096, "intermediate_size": 11008, "num_hidden_layers": 32,
        "num_attention_heads": 32, "num_key_value_heads": 32, "vocab_size": 32000,
        "max_position_embeddings": 4096, "tie_word_embeddings": False, "_name_or_path": "my-org/my-7b"}))
    before = len(tab.bot_messages())
    page.locator("input[type=file]").first.set_input_files(str(config))
    answer = tab.wait_answers(before + 1)[-1]
    assert "my-org/my-7b" in tab.user_messages()[-1] and "6.74B" in tab.user_messages()[-1]
    assert any(name in answer for name in STRATEGY_NAMES), answer[:300]
    assert tab.field("params_b") == "6.738"
    tab.assert_clean()


@pytest.mark.browser
def test_strategy_by_precision_view(desktop):
    """Beyond: one table of per-GPU GiB for each strategy x precision, cited to the calculator."""
    tab, page = desktop, desktop.page
    tab.ask(GPT2XL)
    before = len(tab.bot_messages())
    page.click("#sw-compare")
    table = tab.wait_answers(before + 1)[-1]
    for precision in ("bf16-mixed", "fp16-mixed", "fp32"):
        assert precision in table, table[:300]
    assert "DDP" in table and "✓" in table and "✗" in table
    assert page.locator("#sw-chat .sw-compare .sw-kind", has_text="calc").count() == 1
    tab.assert_clean()
