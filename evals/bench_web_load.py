"""Load on the chat page: browser tabs and ``/chat`` API clients at once, each checked to get its
own answer; plus page-load and answer times in one browser tab.

    .venv/bin/python evals/bench_web_load.py [--url http://127.0.0.1:7860/] [--api 50] [--tabs 20]
    .venv/bin/python evals/bench_web_load.py --timing 5 [--url ...]   # page load and answer times

Without ``--url`` it starts ``app.py`` on a free 127.0.0.1 port (index built if absent) and stops
it afterwards. Every client asks a different setup (model x GPU count x micro-batch), so an
answer that went to the wrong client shows: each API answer must name its own model, GPU count
and micro-batch; each tab's answer its own model. Lost = no answer (error or timeout).
Prints the single-call median, then p50/p95 of the API clients and of the tabs under load.
Browser tabs use Debian's /usr/bin/chromium through Playwright (never ``playwright install``).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bot import webui  # noqa: E402  (sets the offline switches gradio_client needs)
from bot.env import free_port  # noqa: E402
from tests.webserver import start_subprocess  # noqa: E402

MODELS = (("Llama-2-7B", "A100 80GB"), ("Llama-2-13B", "H100 80GB"), ("Mistral-7B", "A100 40GB"),
          ("GPT-2 XL", "RTX 4090 24GB"), ("Qwen2.5-14B", "H200"), ("Llama-3.1-8B", "L40S 48GB"))
COUNTS = (2, 4, 8, 16)
MICRO_BATCHES = (1, 2, 4)
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu",
                 "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1"]
# An answer is a .sw-answer block; before issue 16 (for before/after timing) a bot message.
ANSWERS_NEW, ANSWERS_OLD = "#sw-chat .sw-answer", "#sw-chat .message.bot"


async def answers_selector(page) -> str:
    return ANSWERS_NEW if await page.locator(".sw-narrow").count() else ANSWERS_OLD


def answered_js(selector: str) -> str:
    """True once an answer with real text is shown (a pending bot bubble is empty or says
    "Loading content")."""
    return (f"() => [...document.querySelectorAll({selector!r})].some(e => e.innerText.trim().length > 40 "
            "&& !/Loading content/.test(e.innerText))")


def cases(n: int) -> list[tuple[str, str, int, int]]:
    """(question, model, GPU count, micro-batch), all different."""
    combos = [(f"DDP or FSDP for {m} on {c}x {g} with micro-batch {b}?", m, c, b)
              for b in MICRO_BATCHES for m, g in MODELS for c in COUNTS]
    if n > len(combos):
        raise SystemExit(f"at most {len(combos)} distinct clients")
    return combos[:n]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[index]


def own_api_answer(answer: str, model: str, count: int, micro_batch: int) -> bool:
    # 16 GPUs read as "2 nodes x 8"; fewer as "4 x <GPU>".
    gpus = f"{count} x" in answer or (count > 8 and f"{count // 8} nodes x 8" in answer)
    return model in answer and gpus and f"micro-batch {micro_batch}" in answer


def api_call(url: str, case) -> tuple[float | None, bool]:
    from gradio_client import Client

    question, model, count, mb = case
    try:
        client = Client(url, verbose=False)  # one client per user (a shared one's SSE reader is racy)
        started = time.perf_counter()
        answer = client.predict(question, api_name="/chat")
        return time.perf_counter() - started, own_api_answer(answer, model, count, mb)
    except Exception as err:  # noqa: BLE001  (a lost answer is counted, not raised)
        print(f"  lost: {question!r}: {err}", file=sys.stderr)
        return None, False


async def tab_session(browser, url: str, case, timeout_ms: int) -> tuple[float | None, bool]:
    question, model, _, _ = case
    context = await browser.new_context(viewport={"width": 1440, "height": 900})
    try:
        page = await context.new_page()
        await page.goto(url, wait_until="domcontentloaded")
        await page.wait_for_selector("#sw-msg textarea", timeout=timeout_ms)
        answers = await answers_selector(page)
        await page.fill("#sw-msg textarea", question)
        started = time.perf_counter()
        await page.click("#sw-send")
        await page.wait_for_function(answered_js(answers), timeout=timeout_ms)
        elapsed = time.perf_counter() - started
        text = await page.locator(answers).last.inner_text()
        return elapsed, model in text
    except Exception as err:  # noqa: BLE001
        print(f"  lost tab: {question!r}: {err}", file=sys.stderr)
        return None, False
    finally:
        await context.close()


async def tabs_run(url: str, tab_cases, timeout_ms: int = 180_000):
    from playwright.async_api import async_playwright

    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            return await asyncio.gather(*(tab_session(browser, url, c, timeout_ms) for c in tab_cases))
        finally:
            await browser.close()


def report(name: str, results, single: float | None = None) -> int:
    times = [t for t, _ in results if t is not None]
    lost = sum(1 for t, _ in results if t is None)
    wrong = sum(1 for t, ok in results if t is not None and not ok)
    line = f"{name:<14} n={len(results):3d}  lost {lost}  not their own answer {wrong}"
    if times:
        p50, p95 = percentile(times, 0.5), percentile(times, 0.95)
        line += f"  p50 {p50:6.2f} s  p95 {p95:6.2f} s  max {max(times):6.2f} s"
        if single:
            line += f"  (p95 {p95 / single:4.1f}x single)"
    print(line, flush=True)
    return lost + wrong


def load(url: str, api: int, tabs: int, single_n: int) -> int:
    from gradio_client import Client

    all_cases = cases(api + tabs)
    api_cases, tab_cases = all_cases[:api], all_cases[api:]
    client = Client(url, verbose=False)
    client.predict(api_cases[0][0], api_name="/chat")  # warm-up: models and corpus loaded
    alone = []
    for case in api_cases[:single_n]:
        t, _ = api_call(url, case)
        if t is not None:
            alone.append(t)
    single = statistics.median(alone) if alone else None
    print(f"single /chat call median {single or float('nan'):.2f} s (n={len(alone)})", flush=True)
    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=api) as pool:
        futures = [pool.submit(api_call, url, c) for c in api_cases]
        tab_results = asyncio.run(tabs_run(url, tab_cases)) if tabs else []
        api_results = [f.result() for f in futures]
    wall = time.perf_counter() - started
    print(f"{api} API clients and {tabs} browser tabs at once (server concurrency {webui.CHAT_CONCURRENCY}), "
          f"wall {wall:.1f} s")
    bad = report("/chat API", api_results, single)
    if tabs:
        bad += report("browser tabs", tab_results)
    return bad


async def timing_run(url: str, repeats: int):
    from playwright.async_api import async_playwright

    loads, answers = [], []
    questions = [c[0] for c in cases(repeats)]
    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        for question in questions:
            context = await browser.new_context(viewport={"width": 1440, "height": 900})
            page = await context.new_page()
            started = time.perf_counter()
            await page.goto(url, wait_until="domcontentloaded")
            await page.wait_for_selector("#sw-msg textarea", timeout=120_000)
            loads.append(time.perf_counter() - started)
            answers_css = await answers_selector(page)
            await page.fill("#sw-msg textarea", question)
            started = time.perf_counter()
            await page.click("#sw-send")
            await page.wait_for_function(answered_js(answers_css), timeout=120_000)
            answers.append(time.perf_counter() - started)
            await context.close()
        await browser.close()
    return loads, answers


def timing(url: str, repeats: int) -> None:
    asyncio.run(timing_run(url, 1))  # warm-up
    loads, answers = asyncio.run(timing_run(url, repeats))
    print(f"page load (to the message box)  median {statistics.median(loads):.2f} s  max {max(loads):.2f} s  "
          f"(n={repeats})")
    print(f"answer in the page               median {statistics.median(answers):.2f} s  "
          f"max {max(answers):.2f} s  (n={repeats})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", help="a running page; default: start app.py on a free port")
    parser.add_argument("--api", type=int, default=50, help="concurrent /chat API clients")
    parser.add_argument("--tabs", type=int, default=20, help="concurrent browser tabs")
    parser.add_argument("--single", type=int, default=5, help="single calls for the baseline median")
    parser.add_argument("--timing", type=int, default=0, help="only measure page load and answer time, N times")
    args = parser.parse_args()
    proc = None
    url = args.url
    if not url:
        port = free_port()
        print(f"starting app.py on 127.0.0.1:{port} ...", flush=True)
        proc = start_subprocess(port, timeout=600)
        url = f"http://127.0.0.1:{port}/"
    try:
        if args.timing:
            timing(url, args.timing)
            return
        bad = load(url, args.api, args.tabs, args.single)
        if bad:
            raise SystemExit(f"{bad} clients lost their answer or got someone else's")
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(30)


if __name__ == "__main__":
    main()
