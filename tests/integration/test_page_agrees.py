"""The chat page agrees with itself (issue 27), driven by Debian's Chromium at 1440x900 and
390x844 against ``app.py`` on a free 127.0.0.1 port: the chart shows the table's rows and stars
the recommended one (its checkpointing variant included), Simulate says what it measures and
how long it takes, the keyboard can pass the setup panel without re-answering, the phone layout
keeps the table and chart readable, messages and sources are in words and in the chat's
language, and the server refuses a 100 MB question (issue 30).

Set ``SHARDWISE_WEBUI_URL`` to use a running page instead (the memory check is then skipped).
"""

from __future__ import annotations

import re
import socket
import time

import pytest

from tests.integration.test_webui_live import AXE, DESKTOP, PHONE, Tab

pytestmark = [pytest.mark.slow, pytest.mark.browser]

# The recommendation is FSDP full shard *with* checkpointing: the bar without it is far over the card.
CKPT = "Full fine-tune Llama-2-13B on 8x A100 40GB, seq 4096, micro-batch 2: DDP or FSDP?"
LLAMA = "DDP or FSDP for Llama-2-7B on 8x A100 80GB?"
ZH = "7B模型在8张A100 80GB上全量微调，用DDP还是FSDP？"


@pytest.fixture(scope="module")
def served(page_server):
    return page_server  # (url, proc): the session's app.py (tests/integration/conftest.py)


@pytest.fixture(scope="module")
def browser(page_browser):
    return page_browser  # the session's Chromium (tests/integration/conftest.py)


@pytest.fixture(params=["desktop", "phone"])
def tab(request, browser, served):
    t = Tab(browser, served[0], DESKTOP if request.param == "desktop" else PHONE)
    t.size = request.param
    yield t
    t.close()


@pytest.fixture()
def desktop(browser, served):
    t = Tab(browser, served[0], DESKTOP)
    yield t
    t.close()


def _chart_bars(page) -> list[str]:
    """The chart's bar names, top to bottom as drawn."""
    page.wait_for_selector("#sw-chart .js-plotly-plot .ytick text", timeout=30_000)
    ticks = page.eval_on_selector_all(
        "#sw-chart .ytick text",
        "els => els.map(e => [e.getBoundingClientRect().top, [...e.querySelectorAll('tspan')].map(t => t.textContent)"
        ".join(' ') || e.textContent])")
    return [re.sub(r"\s+", " ", name).replace("+ ", "+ ").strip() for _, name in sorted(ticks)]


def _table_rows(page) -> list[str]:
    return [re.sub(r"\s+", " ", t).strip() for t in page.locator("#sw-chat .sw-answer").last
            .locator(".sw-table tbody tr td:first-child").all_inner_texts()]


def _boxes_overlap(a, b) -> bool:
    return a[0] < b[2] - 1 and b[0] < a[2] - 1 and a[1] < b[3] - 1 and b[1] < a[3] - 1


# -- 1. the chart agrees with the table and the recommendation --------------------------------


def test_the_chart_has_the_table_rows_and_stars_the_recommended_row(tab):
    tab.ask(CKPT)
    page = tab.page
    rows, bars = _table_rows(page), _chart_bars(page)
    assert len(bars) == len(rows), (bars, rows)
    for bar, row in zip(bars, rows, strict=True):
        name = row.replace(" ★", "")
        assert bar.replace("+ ", "+ ").startswith(name.split(" + ")[0]) and ("★" in bar) == ("★" in row), (bar, row)
    starred_row = next(r for r in rows if "★" in r)
    starred_bar = next(b for b in bars if "★" in b)
    assert "checkpointing" in starred_row and "checkpointing" in starred_bar, (starred_row, starred_bar)
    gib = float(re.search(r"([\d.]+) GiB", starred_bar).group(1))
    assert gib < 40, f"the starred bar ({gib} GiB) is over the 40 GB card"
    note = page.inner_text("#sw-chart-note")
    assert re.search(r"FSDP full \+ checkpointing \(recommended\) " + re.escape(f"{gib:.1f}"), note), note
    assert note.count("(recommended)") == 1
    tab.shot(f"chart-agrees-{tab.size}")
    tab.assert_clean()


def test_on_a_phone_the_table_scrolls_in_its_box_and_the_chart_reads(browser, served):
    t = Tab(browser, served[0], PHONE)
    try:
        t.ask(CKPT)
        page = t.page
        box = page.evaluate("""() => { const s = [...document.querySelectorAll('#sw-chat .sw-answer .sw-scroll')].pop();
            const r = s.getBoundingClientRect(); s.scrollLeft = 400;
            const first = s.querySelector('tbody tr td:first-child').getBoundingClientRect();
            return {left: r.left, right: r.right, sw: s.scrollWidth, cw: s.clientWidth, firstLeft: first.left,
                    page: document.documentElement.scrollWidth, scrolled: s.scrollLeft}; }""")
        assert box["right"] <= 390 and box["page"] <= 390, box  # the page itself does not scroll sideways
        assert box["sw"] > box["cw"] and box["scrolled"] > 0, box  # the table scrolls inside its box
        assert box["firstLeft"] >= box["left"] - 1, box  # the strategy column stays in view
        _chart_bars(page)
        ticks = page.eval_on_selector_all("#sw-chart .ytick text", "els => els.map(e => { const r = e.getBoundingClientRect();"
                                          " return [r.left, r.top, r.right, r.bottom]; })")
        for i, a in enumerate(ticks):
            for b in ticks[i + 1:]:
                assert not _boxes_overlap(a, b), (a, b)
        page.hover("#sw-chart .js-plotly-plot")
        title = page.eval_on_selector("#sw-chart .gtitle", "e => { const r = e.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; }")
        bars = page.eval_on_selector_all("#sw-chart .modebar", "els => els.map(e => { const r = e.getBoundingClientRect();"
                                         " return [r.left, r.top, r.right, r.bottom]; })")
        assert title[2] <= 390 and all(not _boxes_overlap(title, m) for m in bars), (title, bars)
        sizes = page.eval_on_selector_all("#sw-chart .ytick text, #sw-chart .gtitle",
                                          "els => els.map(e => parseFloat(getComputedStyle(e).fontSize))")
        assert min(sizes) >= 12, sizes
        t.shot("phone-table-chart", full_page=True)
        t.assert_clean()
    finally:
        t.close()


# -- 2. simulate says what it measures and how long it takes ------------------------------------


def test_simulate_names_the_recommended_row_its_checkpointing_and_the_wait(desktop):
    desktop.ask(CKPT)
    note = desktop.page.inner_text("#sw-sim-note")
    assert "FSDP full + checkpointing" in note and "checkpointing on" in note, note
    assert re.search(r"Expected wait: about \d+.\d+ s|No stored simulation to time this by", note), note
    desktop.assert_clean()


# -- 4. keyboard --------------------------------------------------------------------------------

_ACTIVE = "() => { const a = document.activeElement; return a === document.body ? 'BODY' : ((a.closest('[id]') || a).id); }"
_OPEN = "() => document.querySelectorAll('#sw-setup .wrap-inner.show_options').length"


def test_tabbing_through_the_panel_sends_nothing_and_keeps_focus(desktop):
    tab, page = desktop, desktop.page
    tab.ask(LLAMA)
    answers, sent = len(tab.bot_messages()), len(tab.requests)
    page.focus("#sw-f-model input")
    trail = []
    for key in ["Tab"] * 14 + ["Shift+Tab"] * 5:
        page.keyboard.press(key)
        page.wait_for_timeout(120)
        trail.append((page.evaluate(_ACTIVE), page.evaluate(_OPEN)))
    page.wait_for_timeout(2000)
    calls = [u for u in tab.requests[sent:] if "queue/join" in u or "run/predict" in u]
    assert calls == [], f"{len(calls)} requests on a Tab pass"
    assert len(tab.bot_messages()) == answers
    assert all(active not in ("BODY", "") for active, _ in trail), trail
    assert all(n <= 1 for _, n in trail), trail
    ids = [a for a, _ in trail[:13]]
    assert ids.index("sw-f-gpu") < ids.index("sw-f-gpu_count") < ids.index("sw-f-precision") < ids.index("sw-f-seq_len")
    tab.assert_clean()


def test_a_choice_made_with_the_keys_re_answers_once(desktop):
    tab, page = desktop, desktop.page
    tab.ask(LLAMA)
    before = len(tab.bot_messages())
    page.focus("#sw-f-precision input")
    page.keyboard.press("Tab")
    for key in ("ArrowDown", "ArrowDown", "Enter"):
        page.keyboard.press(key)
        page.wait_for_timeout(200)
    chosen = tab.field("optimizer")
    assert chosen != "adamw"
    page.keyboard.press("Tab")
    tab.wait_answers(before + 1)
    page.wait_for_timeout(1500)
    assert len(tab.bot_messages()) == before + 1
    assert f"optimizer {chosen}" in tab.user_messages()[-1], tab.user_messages()[-1]
    tab.assert_clean()


# -- 6. words, languages, links -----------------------------------------------------------------


def test_edits_read_as_words_and_clearing_the_chat_drops_the_link(desktop):
    tab, page = desktop, desktop.page
    tab.ask(LLAMA)
    tab.edit("micro_batch", "2")
    message = tab.user_messages()[-1]
    assert "micro-batch 2" in message and "micro_batch=" not in message and "=" not in message, message
    page.wait_for_function("() => location.search.includes('micro_batch=2')", timeout=10_000)
    page.locator("#sw-chat button[aria-label='Clear'], #sw-chat button[title='Clear']").first.click()
    page.wait_for_function("() => location.search === ''", timeout=10_000)
    page.wait_for_function("() => !document.querySelector('#sw-share').innerText.includes('Link to this answer')",
                           timeout=10_000)
    tab.assert_clean()


def test_sources_in_words_and_markers_open_their_source(desktop):
    tab, page = desktop, desktop.page
    text = tab.ask(LLAMA)
    for code in ("holds_only_when", "contradicted", "unverifiable", "forum-0", "id: "):
        assert code not in text, code
    answer = page.locator("#sw-chat .sw-answer").last
    marker = answer.locator("a.sw-ref").first
    n = re.search(r"\d+", marker.inner_text()).group(0)
    marker.click()
    assert answer.locator(f".sw-src-{n}").evaluate("d => d.open"), "the marker did not open its source"
    tab.assert_clean()


def test_a_chinese_chat_gets_chinese_notes_tagged_zh_and_chinese_panel_errors(desktop):
    tab, page = desktop, desktop.page
    tab.ask(ZH)
    for note in ("#sw-chart-note", "#sw-sim-note"):
        tagged = page.evaluate(f"() => [...document.querySelectorAll('{note} [lang]')].map(e => e.lang)")
        assert tagged and set(tagged) == {"zh-CN"}, (note, tagged)
    font = page.evaluate("() => getComputedStyle(document.querySelector('#sw-chat .sw-answer')).fontFamily")
    assert "CJK SC" in font or "Noto Sans SC" in font, font
    reply = tab.edit("gpu_count", "八")
    assert "不是数字" in reply and "is not a number" not in reply, reply
    tab.assert_clean()


# -- 7. accessibility ---------------------------------------------------------------------------


def _axe(page) -> list:
    page.add_script_tag(path=str(AXE))
    result = page.evaluate("async () => await axe.run(document, {resultTypes: ['violations']})")
    return [(v["id"], v["impact"], len(v["nodes"]), v["nodes"][0]["target"]) for v in result["violations"]
            if v["impact"] in ("serious", "critical")]


def test_axe_first_load_and_an_answer_with_every_part_open(desktop):
    if not AXE.exists():
        pytest.skip(f"{AXE} missing (npm install axe-core)")
    page = desktop.page
    page.wait_for_timeout(1000)
    assert _axe(page) == [], "first load"
    assert page.locator("h1").count() == 1
    desktop.ask(LLAMA)
    page.evaluate("() => document.querySelectorAll('#sw-chat details').forEach(d => d.open = true)")
    assert _axe(page) == [], "answer with its sections open"
    desktop.assert_clean()


# -- issue 30: a 100 MB question ----------------------------------------------------------------


def test_a_100_mb_question_is_refused_before_it_is_read(served):
    url, proc = served
    host, port = re.match(r"http://([\d.]+):(\d+)/", url).groups()

    def rss() -> int:
        with open(f"/proc/{proc.pid}/status") as f:
            return next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmRSS:"))

    before = rss() if proc else 0
    started = time.monotonic()
    with socket.create_connection((host, int(port)), timeout=20) as s:
        s.sendall(b"POST /gradio_api/call/chat HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                  b"Content-Length: 100000000\r\n\r\n")
        try:
            for _ in range(100):
                s.sendall(b"x" * 1_000_000)
        except OSError:
            pass  # refused and closed: the rest is never read
        reply = s.recv(4096)
    assert reply.startswith(b"HTTP/1.1 413"), reply[:200]
    assert time.monotonic() - started < 15
    if proc:
        assert rss() - before < 20_000_000, (before, rss())


# -- 9. settings carried from earlier messages --------------------------------------------------


def test_carried_settings_are_marked_and_one_click_drops_them(desktop):
    tab, page = desktop, desktop.page
    tab.ask("DDP or FSDP for LoRA fine-tuning Llama-2-7B on 8x A100 80GB with seq 8192?")
    text = tab.ask("what about Mistral-7B on 4x A100 40GB?")
    if "sw-carried" not in tab.classes("seq_len") and "sw-carried" not in tab.classes("finetune"):
        pytest.skip("the reader carried nothing over for this follow-up")
    assert "Carried from earlier messages" in text, text[:400]
    setup_line = page.locator("#sw-chat .sw-answer").last.locator(".sw-setup-line").inner_text()
    assert "8192" not in setup_line and "lora" not in setup_line, setup_line
    assert "from earlier" in page.inner_text("#sw-setup")
    before = len(tab.bot_messages())
    page.click("#sw-drop-carried")
    after = tab.wait_answers(before + 1)[-1]
    assert "Carried from earlier messages" not in after, after[:400]
    assert "sw-carried" not in tab.classes("seq_len")
    assert not page.locator("#sw-drop-carried").is_visible()
    tab.assert_clean()


# -- 10. two setups on one chart ----------------------------------------------------------------


def test_two_setups_side_by_side_on_one_chart(desktop):
    tab, page = desktop, desktop.page
    tab.ask(LLAMA)
    tab.ask(CKPT)
    page.click("#sw-compare-setups")
    page.wait_for_function("() => document.querySelector('#sw-chart-note').innerText.includes('two setups')",
                           timeout=20_000)
    bars = _chart_bars(page)
    assert any(b.startswith("A:") for b in bars) and any(b.startswith("B:") for b in bars), bars
    assert sum("★" in b for b in bars) == 2, bars
    note = page.inner_text("#sw-chart-note")
    assert "Llama-2-7B on 8x A100 80GB" in note and "Llama-2-13B" in note, note
    tab.shot("compare-two-setups")
    tab.assert_clean()


# -- 8. main-thread freezes ---------------------------------------------------------------------

# When the answer's text first shows, a timer is queued; it runs once the browser finishes the task
# it is in. The chart must be drawn after that timer, in a task of its own.
_STEPS = """() => { window.__steps = {}; const s = window.__steps;
  new MutationObserver(() => {
    if (!s.text && document.querySelector('#sw-chat .sw-answer')) {
      s.text = performance.now(); setTimeout(() => { s.timer = performance.now(); }, 0); }
    if (!s.chart && document.querySelector('#sw-chart .js-plotly-plot .ytick text')) s.chart = performance.now();
    if (!s.panel && document.querySelector('#sw-f-model input') && document.querySelector('#sw-f-model input').value)
      s.panel = performance.now();
  }).observe(document.body, {childList: true, subtree: true, characterData: true, attributes: true}); }"""


def test_the_answer_text_chart_and_panel_land_in_separate_tasks(desktop):
    """The first answer used to put text, chart, panel and downloads on the page in one update,
    one long main-thread task; the chart (Plotly's drawing) now comes in its own event, after the
    browser has shown the text, and the panel in another. Structure, not a time: the times are
    measured by ``evals/bench_web_load.py --long-tasks``. Which of chart and panel shows first is
    not asserted: Plotly draws after its event arrives, and its first drawing on a page loads the
    library (a fresh-clone CI saw the chart's ticks 1.9 s after the panel, an earlier run before it)."""
    page = desktop.page
    page.evaluate(_STEPS)
    desktop.ask(LLAMA)
    page.wait_for_function("() => window.__steps.chart && window.__steps.panel", timeout=30_000)
    steps = page.evaluate("() => window.__steps")
    # (Before: the panel landed in the text's own task, 1 ms after it, before the queued timer.)
    assert steps["text"] < steps["timer"] < steps["panel"], steps
    assert steps["timer"] < steps["chart"], steps  # the chart in a task after the text's
    layout = page.evaluate("() => { const gd = document.querySelector('#sw-chart .js-plotly-plot');"
                           " return {auto: gd.layout.yaxis.automargin, l: gd._fullLayout._size.l}; }")
    assert layout["auto"] is False, layout  # one drawing, no automargin redraw
    desktop.assert_clean()


def test_a_50_kb_paste_keeps_the_message_box_at_a_fixed_height(browser, served):
    """Gradio sizes the box to its text on every input (a layout of the whole text): a long text
    gets a fixed height before Gradio looks (``sw-long``), so the paste is one short task."""
    t = Tab(browser, served[0], DESKTOP)
    try:
        page = t.page
        t.context.grant_permissions(["clipboard-read", "clipboard-write"])
        log = ("step 120 loss 2.31 mem=61.2GiB lr 3e-4 tokens/s 12345\n" * 1000)[:50_000]
        page.evaluate("(text) => navigator.clipboard.writeText(text)", log)
        page.focus("#sw-msg textarea")
        page.keyboard.press("Control+V")
        box = page.evaluate("() => { const a = document.querySelector('#sw-msg textarea');"
                            " return {n: a.value.length, long: a.classList.contains('sw-long'), h: a.offsetHeight,"
                            " em: parseFloat(getComputedStyle(a).fontSize)}; }")
        assert box["n"] == 50_000 and box["long"], box
        assert box["h"] <= 13 * box["em"], box  # 12em, not the height of 1,000 lines
        t.assert_clean()
    finally:
        t.close()


# -- 9b. how the setup was read, next to the panel -------------------------------------------------


def test_a_model_computed_in_place_of_the_one_asked_is_said_next_to_the_setup(desktop):
    desktop.ask("DDP or FSDP for Qwen2-7B on 8x A100 80GB?")
    note = desktop.page.inner_text("#sw-missing-note")
    assert "Qwen2-7B" in note and "Qwen2.5-7B" in note and "in its place" in note, note
    desktop.assert_clean()


def test_a_log_memory_figure_is_not_shown_as_host_ram(desktop):
    text = desktop.ask("Training Llama-2-7B on 8x A100 80GB with DDP, my log says: step 120 loss 2.31 "
                       "mem=61.2GiB lr 3e-4. Should I switch to FSDP?")
    setup_line = desktop.page.locator("#sw-chat .sw-answer").last.locator(".sw-setup-line").inner_text()
    shown = setup_line + desktop.page.inner_text("#sw-missing-note") + text
    assert "CPU RAM 61.2" not in shown and "CPU RAM: 61.2" not in shown, shown[:600]
    desktop.assert_clean()
