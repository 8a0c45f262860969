"""Retake the chat page's screenshots in ``docs/img`` (the ones ``docs/web.md`` shows).

    .venv/bin/python scripts/web_screenshots.py                 # starts app.py on a free port
    .venv/bin/python scripts/web_screenshots.py --url http://127.0.0.1:7860/

Debian's Chromium through Playwright (never ``playwright install``), kept off the network. Six
shots: desktop 1440x900 after the page's own GPT-2 XL example (at 0.75 scale), after comparing
it with a second setup, and the note beside the setup for a model computed in place of the one
asked (Qwen2-7B); the Chinese answer's full page (0.6), and the phone at 390x844 before and
after a question.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bot.env import free_port, repo_root  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1"]
EN_QUESTION = "Can I train GPT-2 XL on 4x RTX 4090 24GB with plain DDP?"
ZH_QUESTION = "7B模型全参微调，8张A100 40G，用DDP还是FSDP？"
STAND_IN_QUESTION = "DDP or FSDP for Qwen2-7B on 8x A100 80GB?"
ANSWER = "#sw-chat .sw-answer"


def ask(page, question: str) -> None:
    before = page.locator(ANSWER).count()
    page.fill("#sw-msg textarea", question)
    page.click("#sw-send")
    page.wait_for_function(f"() => document.querySelectorAll({ANSWER!r}).length > {before} && "
                           f"[...document.querySelectorAll({ANSWER!r})].pop().innerText.length > 40",
                           timeout=120_000)
    page.wait_for_selector("#sw-downloads a", timeout=60_000)  # the chart, then the panel and links
    page.wait_for_timeout(1500)


def shoot(url: str, out: Path) -> list[Path]:
    from playwright.sync_api import sync_playwright

    out.mkdir(parents=True, exist_ok=True)
    shots = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            desk = browser.new_context(viewport={"width": 1440, "height": 900}, device_scale_factor=0.75)
            page = desk.new_page()
            page.goto(url, wait_until="domcontentloaded")
            page.wait_for_selector("#sw-msg textarea")
            ask(page, EN_QUESTION)
            page.evaluate("window.scrollTo(0, 0)")
            shots.append(out / "web-desktop-answer.png")
            page.screenshot(path=str(shots[-1]))
            # two setups on one chart: the GPT-2 XL question, then a proposal for a bigger model
            ask(page, "Full fine-tune Llama-2-13B on 8x A100 40GB, seq 4096, micro-batch 2: DDP or FSDP?")
            page.click("#sw-compare-setups")
            page.wait_for_timeout(2000)
            page.locator("#sw-chart").scroll_into_view_if_needed()
            shots.append(out / "web-desktop-compare.png")
            page.screenshot(path=str(shots[-1]))
            # a model the catalog computes in place of the one asked, said next to the setup
            ask(page, STAND_IN_QUESTION)
            page.wait_for_function("() => document.querySelector('#sw-missing-note').innerText.includes('place')",
                                   timeout=30_000)
            note = page.locator("#sw-missing-note")
            note.scroll_into_view_if_needed()
            box = note.bounding_box()
            shots.append(out / "web-desktop-stand-in.png")
            page.screenshot(path=str(shots[-1]), clip={"x": box["x"] - 8, "y": box["y"] - 8,
                                                       "width": box["width"] + 16, "height": box["height"] + 260})
            desk.close()

            full = browser.new_context(viewport={"width": 1440, "height": 900}, device_scale_factor=0.6)
            page = full.new_page()
            page.goto(url, wait_until="domcontentloaded")
            page.wait_for_selector("#sw-msg textarea")
            ask(page, ZH_QUESTION)
            shots.append(out / "web-desktop-zh-full.png")
            page.screenshot(path=str(shots[-1]), full_page=True)
            full.close()

            phone = browser.new_context(viewport={"width": 390, "height": 844}, device_scale_factor=1,
                                        is_mobile=True, has_touch=True)
            page = phone.new_page()
            page.goto(url, wait_until="domcontentloaded")
            page.wait_for_selector("#sw-msg textarea")
            page.wait_for_timeout(1000)
            shots.append(out / "web-phone-first.png")
            page.screenshot(path=str(shots[-1]))
            ask(page, EN_QUESTION)
            shots.append(out / "web-phone-answer.png")
            page.screenshot(path=str(shots[-1]))
            phone.close()
        finally:
            browser.close()
    return shots


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", help="a running page; default: start app.py on a free port")
    parser.add_argument("--out", type=Path, default=repo_root() / "docs" / "img")
    args = parser.parse_args()
    proc = None
    url = args.url
    if url is None:
        from tests.webserver import start_subprocess

        port = free_port()
        proc = start_subprocess(port, timeout=600)
        url = f"http://127.0.0.1:{port}/"
    try:
        for path in shoot(url, args.out):
            print(path)
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(30)


if __name__ == "__main__":
    main()
