"""Load on the chat page: ``/chat`` API clients and browser tabs at once, each checked to get its
own answer; page load and answer times in one browser tab; each beside a baseline page, as ratios.

    .venv/bin/python -m evals.bench_web_load                         # this page, started on a free port
    .venv/bin/python -m evals.bench_web_load --baseline HEAD~3       # ... and the page at a git ref
    .venv/bin/python -m evals.bench_web_load --url http://127.0.0.1:7860/ [--baseline-url URL]
    .venv/bin/python -m evals.bench_web_load --timing 5 --baseline 48b8964^ --api 0 --tabs 0

Without ``--url`` it starts ``app.py`` on a free 127.0.0.1 port (index built if absent) and stops
it afterwards. ``--baseline REF`` extracts that commit with ``git archive`` into a temporary
folder and starts *its* ``app.py`` (own data dir, so its index is its own) on another port; the
two pages are measured in alternating rounds (``--rounds``), so load from other programs on the
machine falls on both, and the report prints each figure for this page, the baseline and their
ratio. Without a baseline the reference is one ``/chat`` call alone (p95 / single).

API load: every client asks a different setup (model x GPU count x micro-batch), so an answer
that went to the wrong client shows: each answer must name its own model, GPU count and
micro-batch. The clients connect first, then all ask at the same instant (a barrier); the time
is from asking to the answer. Two kinds of client (``--client``): ``http``, Gradio's plain HTTP
API (``POST /gradio_api/call/chat``, then its event stream; what ``curl`` does), from one asyncio
loop; and ``gradio``, one ``gradio_client.Client`` per user in its own thread (what docs/web.md
shows). The ``gradio`` client costs about 7x more CPU than the server per call, and on a 2-core
machine it runs on the server's cores, so the ``http`` row is the server's figure.

CPU accounting (when the bench started the page): CPU seconds of the server and its answering
workers during the burst, and of the clients; ``floor`` = all of it / cores, the wall time the
burst needs even with perfect scheduling on an otherwise idle machine. Other programs' load
(``load avg``) shows as wall time above that floor.

Browser tabs (Debian's /usr/bin/chromium through Playwright, never ``playwright install``): each
tab loads the page, asks its own question and must show its own model; the tabs run together
with another ``--api`` plain-HTTP clients, which start asking ``--tab-head-start`` s after the
tabs start opening (so both load the page at once: the issue's 20 tabs and 50 clients at once). Lost = no answer (error or
timeout). The tabs' Chromium runs at ``--browser-nice`` (default 10): a real user's browser runs
on the user's machine, and here 20 headless tabs need about 4 CPU-seconds each (page load, then
the answer with its Plotly chart) on the server's 2 cores, ~90 CPU-s in all, which would measure
the benchmark's browsers rather than the server. Niced, they still hold their sessions, ask at
the same time and wait for their answers, and get every cycle the server leaves; the report
prints the browsers' CPU seconds, and ``--browser-nice 0`` measures both at one priority. Timing (``--timing N``): in N fresh tabs, one after another, the page's
DOMContentLoaded, first contentful paint and the message box shown (from navigation start), then
the answer shown after pressing Ask. Main-thread work (``--long-tasks N``): in N fresh tabs at
1440x900 and N at 390x844, the longest task (Long Tasks API) from Ask until text, chart and
downloads are shown, and while a 50 KB log is pasted with Ctrl+V.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bot.env import data_dir, free_port, repo_root, wait_until_served  # noqa: E402
from bot.surfaces import webui  # noqa: E402,F401  (sets the offline switches gradio_client needs)

MODELS = (("Llama-2-7B", "A100 80GB"), ("Llama-2-13B", "H100 80GB"), ("Mistral-7B", "A100 40GB"),
          ("GPT-2 XL", "RTX 4090 24GB"), ("Qwen2.5-14B", "H200"), ("Llama-3.1-8B", "L40S 48GB"))
COUNTS = (2, 4, 8, 16)
MICRO_BATCHES = (1, 2, 4, 8, 16, 32, 3, 6, 12, 24, 5, 7, 10, 20, 48, 64)
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu",
                 "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1"]
# An answer is a .sw-answer block; before issue 16 (for before/after timing) a bot message.
ANSWERS_NEW, ANSWERS_OLD = "#sw-chat .sw-answer", "#sw-chat .message.bot"


async def answers_selector(page) -> str:
    return ANSWERS_NEW if await page.locator(".sw-narrow").count() else ANSWERS_OLD


def answered_js(selector: str) -> str:
    """The last shown answer's text once one with real text is shown, else false (a pending bot
    bubble is empty or says "Loading content"). Waiting and reading in one step: under heavy
    load a second round trip to read the text took longer than the answer itself."""
    return (f"() => {{ const done = [...document.querySelectorAll({selector!r})].filter(e => "
            "e.innerText.trim().length > 40 && !/Loading content/.test(e.innerText)); "
            "return done.length ? done[done.length - 1].innerText : false; }")


def cases(n: int, offset: int = 0) -> list[tuple[str, str, int, int]]:
    """(question, model, GPU count, micro-batch), all different; ``offset`` skips the first ones
    (each round asks new questions: a repeated one would come from the answer caches)."""
    combos = [(f"DDP or FSDP for {m} on {c}x {g} with micro-batch {b}?", m, c, b)
              for b in MICRO_BATCHES for m, g in MODELS for c in COUNTS]
    if offset + n > len(combos):
        raise SystemExit(f"at most {len(combos)} distinct questions (asked for {offset + n})")
    return combos[offset:offset + n]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[index]


def own_api_answer(answer: str, model: str, count: int, micro_batch: int) -> bool:
    # 16 GPUs read as "2 nodes x 8"; fewer as "4 x <GPU>".
    gpus = f"{count} x" in answer or (count > 8 and f"{count // 8} nodes x 8" in answer)
    return model in answer and gpus and f"micro-batch {micro_batch}" in answer


# ----------------------------------------------------------------------------------------------
# Pages under test
# ----------------------------------------------------------------------------------------------


@dataclass
class Page:
    name: str
    url: str
    proc: subprocess.Popen | None = None
    folder: tempfile.TemporaryDirectory | None = None

    def cpu_seconds(self) -> float | None:
        """CPU seconds of the server and its children (answering workers) so far."""
        if self.proc is None:
            return None
        return _tree_cpu(self.proc.pid)

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        if self.folder is not None:
            self.folder.cleanup()


def _proc_cpu(pid: int) -> float:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _tree_cpu(pid: int) -> float:
    children = subprocess.run(["ps", "--ppid", str(pid), "-o", "pid="], capture_output=True, text=True).stdout
    return _proc_cpu(pid) + sum(_tree_cpu(int(c)) for c in children.split())


def _wait_served(proc: subprocess.Popen, url: str, timeout: float, log: Path) -> None:
    try:
        wait_until_served(proc, url, timeout, log)
    except (RuntimeError, TimeoutError) as exc:
        raise SystemExit(str(exc)) from exc


def start_page(name: str, ref: str | None = None, timeout: float = 900) -> Page:
    """This checkout's ``app.py``, or the one at git ``ref`` (extracted, with its own data dir)."""
    folder = None
    root = repo_root()
    env = dict(os.environ)
    if ref is not None:
        folder = tempfile.TemporaryDirectory(prefix="sw-bench-baseline-")
        archive = subprocess.run(["git", "-C", str(root), "archive", ref], capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", folder.name], input=archive, check=True)
        root = Path(folder.name)
        safe = "".join(ch if ch.isalnum() else "-" for ch in ref)
        env["SHARDWISE_DATA_DIR"] = str(data_dir() / f"bench-baseline-{safe}")
    port = free_port()
    log = Path(tempfile.gettempdir()) / f"sw-bench-{name}-{port}.log"
    print(f"starting {name} ({ref or 'this checkout'}) on 127.0.0.1:{port}, log {log} ...", flush=True)
    with open(log, "ab") as out:
        proc = subprocess.Popen([sys.executable, str(root / "app.py"), "--port", str(port)], cwd=str(root),
                                env=env, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/"
    try:
        _wait_served(proc, url, timeout, log)
    except BaseException:
        proc.kill()
        if folder is not None:
            folder.cleanup()
        raise
    return Page(name, url, proc, folder)


# ----------------------------------------------------------------------------------------------
# API clients
# ----------------------------------------------------------------------------------------------


@dataclass
class Burst:
    times: list[float | None]  # None: lost
    own: list[bool]
    wall: float
    server_cpu: float | None
    client_cpu: float
    browser_cpu: float | None = None  # the tabs' Chromium, when the burst had tabs

    @property
    def lost(self) -> int:
        return sum(1 for t in self.times if t is None)

    @property
    def wrong(self) -> int:
        return sum(1 for t, ok in zip(self.times, self.own, strict=True) if t is not None and not ok)

    def q(self, p: float) -> float | None:
        done = [t for t in self.times if t is not None]
        return percentile(done, p) if done else None


async def _http_call(client, url: str, case, start: asyncio.Event) -> tuple[float | None, bool]:
    question, model, count, mb = case
    await start.wait()
    started = time.perf_counter()
    try:
        posted = await client.post(f"{url}gradio_api/call/chat", json={"data": [question]})
        posted.raise_for_status()
        event_id = posted.json()["event_id"]
        event, data = None, None
        async with client.stream("GET", f"{url}gradio_api/call/chat/{event_id}") as stream:
            async for line in stream.aiter_lines():
                if line.startswith("event: "):
                    event = line[7:].strip()
                elif line.startswith("data: ") and event in ("complete", "error"):
                    data = json.loads(line[6:])
                    break
        if event != "complete":
            raise RuntimeError(f"{event}: {data}")
        answer = data[0]
        return time.perf_counter() - started, own_api_answer(answer, model, count, mb)
    except Exception as err:  # noqa: BLE001  (a lost answer is counted, not raised)
        print(f"  lost: {question!r}: {err!r}", file=sys.stderr)
        return None, False


async def _http_burst(url: str, batch) -> list[tuple[float | None, bool]]:
    import httpx

    start = asyncio.Event()
    # A connection per request, as from separate machines (a kept-alive one can be closed by the
    # server's idle timeout just as it is reused, which is the client's problem, not a lost answer).
    limits = httpx.Limits(max_connections=2 * len(batch) + 10, max_keepalive_connections=0)
    async with httpx.AsyncClient(timeout=300, limits=limits, trust_env=False) as client:
        tasks = [asyncio.create_task(_http_call(client, url, c, start)) for c in batch]
        await asyncio.sleep(0.2)  # every task waits at the start line
        start.set()
        return await asyncio.gather(*tasks)


def _gradio_burst(url: str, batch) -> list[tuple[float | None, bool]]:
    from gradio_client import Client

    # One Client per user (a shared one's SSE reader is racy under threads), connected first.
    with ThreadPoolExecutor(max_workers=len(batch)) as pool:
        clients = list(pool.map(lambda _: Client(url, verbose=False), batch))
    barrier = threading.Barrier(len(batch))

    def call(i: int) -> tuple[float | None, bool]:
        question, model, count, mb = batch[i]
        barrier.wait()
        started = time.perf_counter()
        try:
            answer = clients[i].predict(question, api_name="/chat")
            return time.perf_counter() - started, own_api_answer(answer, model, count, mb)
        except Exception as err:  # noqa: BLE001
            print(f"  lost: {question!r}: {err!r}", file=sys.stderr)
            return None, False

    with ThreadPoolExecutor(max_workers=len(batch)) as pool:
        return list(pool.map(call, range(len(batch))))


def api_burst(page: Page, batch, kind: str) -> Burst:
    server0, client0, started = page.cpu_seconds(), time.process_time(), time.perf_counter()
    results = asyncio.run(_http_burst(page.url, batch)) if kind == "http" else _gradio_burst(page.url, batch)
    wall = time.perf_counter() - started
    server1 = page.cpu_seconds()
    server = None if server0 is None or server1 is None else server1 - server0
    return Burst([t for t, _ in results], [ok for _, ok in results], wall, server, time.process_time() - client0)


def single_calls(page: Page, batch) -> list[float]:
    """One call at a time (the unloaded reference)."""
    out = []
    for case in batch:
        result = asyncio.run(_http_burst(page.url, [case]))[0]
        if result[0] is not None:
            out.append(result[0])
    return out


# ----------------------------------------------------------------------------------------------
# Browser tabs
# ----------------------------------------------------------------------------------------------


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
        shown = await page.wait_for_function(answered_js(answers), timeout=timeout_ms)
        elapsed = time.perf_counter() - started
        return elapsed, model in await shown.json_value()
    except Exception as err:  # noqa: BLE001
        print(f"  lost tab: {question!r}: {err!r}", file=sys.stderr)
        return None, False
    finally:
        await context.close()


def browser_cpu_seconds() -> float:
    """CPU seconds of the Chromium processes alive now, with those of their exited children
    (a closed tab's renderer is counted in the process that reaped it)."""
    total = 0.0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        if text[text.index("(") + 1: text.rindex(")")].startswith("chrom"):
            fields = text.rsplit(")", 1)[1].split()
            total += sum(int(f) for f in fields[11:15]) / os.sysconf("SC_CLK_TCK")
    return total


def chromium_executable(nice: int, folder: Path, browser: str = CHROMIUM) -> str:
    """Debian's Chromium at niceness ``nice``, as a user's browser runs: without the right to
    raise its own priority. Run as root, Chromium gives its display and compositor threads nice
    -8 (87 of its ~140 threads with 20 tabs open), and they then take the cores from everything
    else on the machine, the server included; without CAP_SYS_NICE those calls fail and every
    thread keeps the niceness it started with (a wrapper script: helpers inherit both).

    A thread's niceness only ranks it against threads of its own scheduling autogroup, and
    Playwright starts the browser in a session of its own (``setsid``), which on a kernel with
    ``sched_autogroup_enabled`` is an autogroup of its own, weighed equal to the server's whatever
    the threads' niceness: the wrapper (the browser's session leader, before it execs Chromium)
    therefore also gives that autogroup the niceness (``/proc/self/autogroup``; see sched(7),
    "The autogroup feature"). Without it, "nice 10" browsers took half the cores."""
    setpriv = shutil.which("setpriv")
    if setpriv is None and nice <= 0:
        return browser
    drop = f"{setpriv} --inh-caps=-sys_nice --bounding-set=-sys_nice " if setpriv else ""
    nice = max(0, int(nice))
    wrapper = folder / "chromium-user"
    wrapper.write_text(f'#!/bin/sh\n(echo {nice} > /proc/self/autogroup) 2>/dev/null\n'
                       f'exec {drop}nice -n {nice} {browser} "$@"\n')
    wrapper.chmod(0o755)
    return str(wrapper)


async def tabs_run(url: str, tab_cases, timeout_ms: int = 180_000, nice: int = 0):
    """Each tab's (seconds, own answer), and the browser's CPU seconds over the run."""
    from playwright.async_api import async_playwright

    with tempfile.TemporaryDirectory() as folder:
        async with async_playwright() as p:
            browser = await p.chromium.launch(executable_path=chromium_executable(nice, Path(folder)),
                                              args=CHROMIUM_ARGS)
            try:
                results = await asyncio.gather(*(tab_session(browser, url, c, timeout_ms) for c in tab_cases))
                return results, browser_cpu_seconds()
            finally:
                await browser.close()


def tabs_burst(page: Page, batch, nice: int = 0) -> Burst:
    server0, client0, started = page.cpu_seconds(), time.process_time(), time.perf_counter()
    results, browser_cpu = asyncio.run(tabs_run(page.url, batch, nice=nice))
    wall = time.perf_counter() - started
    server1 = page.cpu_seconds()
    server = None if server0 is None or server1 is None else server1 - server0
    return Burst([t for t, _ in results], [ok for _, ok in results], wall, server,
                 time.process_time() - client0, browser_cpu)


# Navigation timing from the page itself (ms from navigation start).
_NAV_JS = """() => { const n = performance.getEntriesByType('navigation')[0];
  const p = performance.getEntriesByName('first-contentful-paint')[0];
  const kb = performance.getEntriesByType('resource').reduce((s, e) => s + e.decodedBodySize, 0) / 1024;
  return {dcl: n.domContentLoadedEventEnd, fcp: p ? p.startTime : null, kb: kb}; }"""


# Main-thread tasks over 50 ms (the Long Tasks API), from the page's start.
_LONG_TASKS_INIT = """window.__swLong = []; new PerformanceObserver((l) => l.getEntries().forEach(
  (e) => window.__swLong.push(e.duration))).observe({type: 'longtask', buffered: true});"""
_PASTE = ("step 120 loss 2.31 mem=61.2GiB lr 3e-4 tokens/s 12345 grad_norm 0.9\n" * 800)[:50_000]


async def _longest_task(page, action) -> float:
    """The longest main-thread task (ms) while ``action`` runs and the page settles after it."""
    await page.evaluate("() => { window.__swLong = []; }")
    await action()
    await page.wait_for_timeout(1500)
    return max(await page.evaluate("() => window.__swLong"), default=0.0)


async def long_tasks_run(url: str, questions: list[str], viewport: dict) -> dict[str, list[float]]:
    """Per fresh tab: the longest task from Ask until the answer's text, chart and downloads are
    all shown (Plotly already loaded at idle, as a user's tab has it by the time they ask), and
    the longest while a 50 KB log is pasted (the clipboard and Ctrl+V, as a user pastes)."""
    from playwright.async_api import async_playwright

    out: dict[str, list[float]] = {"answer_task": [], "paste_task": []}
    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        for question in questions:
            context = await browser.new_context(viewport=viewport, permissions=["clipboard-read", "clipboard-write"])
            page = await context.new_page()
            await page.add_init_script(_LONG_TASKS_INIT)
            await page.goto(url, wait_until="domcontentloaded")
            await page.wait_for_selector("#sw-msg textarea", timeout=120_000)
            # A tab left open a moment: Plotly loaded at idle, then nothing long for a second.
            await page.wait_for_function("() => window.Plotly", timeout=120_000)
            for _ in range(30):
                if not await _longest_task(page, lambda page=page: page.wait_for_timeout(0)):
                    break

            async def ask(question=question, page=page):
                await page.fill("#sw-msg textarea", question)
                await page.click("#sw-send")
                await page.wait_for_selector("#sw-chart .js-plotly-plot", timeout=120_000)
                await page.wait_for_selector("#sw-downloads a", timeout=120_000)

            async def paste(page=page):
                await page.evaluate("(t) => navigator.clipboard.writeText(t)", _PASTE)
                await page.focus("#sw-msg textarea")
                await page.keyboard.press("Control+V")

            out["answer_task"].append(await _longest_task(page, ask))
            out["paste_task"].append(await _longest_task(page, paste))
            await context.close()
        await browser.close()
    return out


async def timing_run(url: str, questions: list[str]) -> dict[str, list[float]]:
    from playwright.async_api import async_playwright

    out: dict[str, list[float]] = {"dcl": [], "fcp": [], "box": [], "answer": [], "kb": []}
    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        for question in questions:
            context = await browser.new_context(viewport={"width": 1440, "height": 900})
            page = await context.new_page()
            started = time.perf_counter()
            await page.goto(url, wait_until="domcontentloaded")
            await page.wait_for_selector("#sw-msg textarea", timeout=120_000)
            out["box"].append(time.perf_counter() - started)
            nav = await page.evaluate(_NAV_JS)
            out["dcl"].append(nav["dcl"] / 1000)
            if nav["fcp"] is not None:
                out["fcp"].append(nav["fcp"] / 1000)
            answers_css = await answers_selector(page)
            await page.fill("#sw-msg textarea", question)
            started = time.perf_counter()
            await page.click("#sw-send")
            await page.wait_for_function(answered_js(answers_css), timeout=120_000)
            out["answer"].append(time.perf_counter() - started)
            out["kb"].append((await page.evaluate(_NAV_JS))["kb"])
            await context.close()
        await browser.close()
    return out


# ----------------------------------------------------------------------------------------------
# Rounds and the report
# ----------------------------------------------------------------------------------------------


@dataclass
class Figures:
    """Per page: metric -> one value per round (the report shows the median of the rounds)."""
    values: dict[str, list[float]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def add(self, metric: str, value: float | None) -> None:
        if value is not None:
            self.values.setdefault(metric, []).append(value)


def measure_round(page: Page, figures: Figures, args, offset: int) -> tuple[int, int]:
    """One round on one page; returns (clients that lost their answer or got another's, questions used)."""
    bad, used = 0, 0
    load = os.getloadavg()[0]
    figures.add("load avg (1 min) at start", load)
    if args.single:
        times = single_calls(page, cases(args.single, offset))
        used += args.single
        figures.add("/chat alone, median s", statistics.median(times) if times else None)
    for kind in args.client:
        if not args.api:
            break
        burst = api_burst(page, cases(args.api, offset + used), kind)
        used += args.api
        name = f"/chat x{args.api} ({kind})"
        figures.add(f"{name} p50 s", burst.q(0.5))
        figures.add(f"{name} p95 s", burst.q(0.95))
        figures.add(f"{name} lost + not own", burst.lost + burst.wrong)
        figures.add(f"{name} wall s", burst.wall)
        if burst.server_cpu is not None:
            figures.add(f"{name} server CPU s", burst.server_cpu)
            figures.add(f"{name} client CPU s", burst.client_cpu)
            figures.add(f"{name} floor s (CPU / {os.cpu_count()} cores)",
                        (burst.server_cpu + burst.client_cpu) / (os.cpu_count() or 1))
        print(f"  {page.name}: {name}: p50 {burst.q(0.5) or float('nan'):.2f} s, p95 {burst.q(0.95) or float('nan'):.2f} s, "
              f"lost {burst.lost}, not own {burst.wrong}, wall {burst.wall:.1f} s, server CPU "
              f"{burst.server_cpu if burst.server_cpu is not None else float('nan'):.1f} s, client CPU "
              f"{burst.client_cpu:.1f} s, load {load:.1f}", flush=True)
        bad += burst.lost + burst.wrong
    if args.tabs:
        # The tabs and (when asked for) the plain-HTTP API clients at the same time.
        tab_cases = cases(args.tabs, offset + used)
        used += args.tabs
        api_cases = cases(args.api, offset + used) if args.api else []
        used += len(api_cases)
        with ThreadPoolExecutor(max_workers=1) as side:
            tabs_future = side.submit(tabs_burst, page, tab_cases, args.browser_nice)
            if api_cases:
                time.sleep(args.tab_head_start)  # the tabs are loaded and asking when the API clients ask
            api = api_burst(page, api_cases, "http") if api_cases else None
            tabs = tabs_future.result()
        rows = [(f"{args.tabs} browser tabs" + (f" with {args.api} API clients" if api else ""), tabs)]
        if api is not None:
            rows.append((f"/chat x{args.api} (http) with {args.tabs} tabs", api))
        figures.add(f"{rows[0][0]} browser CPU s (nice {args.browser_nice})", tabs.browser_cpu)
        if tabs.server_cpu is not None:
            figures.add(f"{rows[0][0]} server CPU s", tabs.server_cpu)
        for name, burst in rows:
            figures.add(f"{name} p50 s", burst.q(0.5))
            figures.add(f"{name} p95 s", burst.q(0.95))
            figures.add(f"{name} lost + not own", burst.lost + burst.wrong)
            print(f"  {page.name}: {name}: p50 {burst.q(0.5) or float('nan'):.2f} s, "
                  f"p95 {burst.q(0.95) or float('nan'):.2f} s, lost {burst.lost}, not own {burst.wrong}", flush=True)
            bad += burst.lost + burst.wrong
    if args.timing:
        questions = [c[0] for c in cases(args.timing, offset + used)]
        used += args.timing
        timing = asyncio.run(timing_run(page.url, questions))
        for key, label in (("dcl", "page DOMContentLoaded s"), ("fcp", "page first contentful paint s"),
                           ("box", "page message box shown s"), ("answer", "answer shown in the page s"),
                           ("kb", "page resources KB")):
            if timing[key]:
                figures.add(label, statistics.median(timing[key]))
        print(f"  {page.name}: page load median: DOMContentLoaded {statistics.median(timing['dcl']):.2f} s, "
              f"message box {statistics.median(timing['box']):.2f} s; answer {statistics.median(timing['answer']):.2f} s",
              flush=True)
    if args.long_tasks:
        for size, viewport in (("1440x900", {"width": 1440, "height": 900}), ("390x844", {"width": 390, "height": 844})):
            questions = [c[0] for c in cases(args.long_tasks, offset + used)]
            used += args.long_tasks
            tasks = asyncio.run(long_tasks_run(page.url, questions, viewport))
            figures.add(f"{size}: longest task, Ask to full answer, ms", statistics.median(tasks["answer_task"]))
            figures.add(f"{size}: longest task, 50 KB paste, ms", statistics.median(tasks["paste_task"]))
            print(f"  {page.name}: {size} longest tasks (ms): answer {[round(t) for t in tasks['answer_task']]}, "
                  f"paste {[round(t) for t in tasks['paste_task']]}", flush=True)
    return bad, used


def report(this: Figures, base: Figures | None, base_name: str) -> None:
    metrics = list(this.values)
    if base is not None:
        metrics += [m for m in base.values if m not in this.values]
    width = max(len(m) for m in metrics) + 2 if metrics else 10
    header = f"{'':{width}}{'this page':>12}"
    if base is not None:
        header += f"{base_name:>22}{'ratio':>8}   (ratio = this / baseline; below 1 is faster)"
    print("\n" + header)
    single = statistics.median(this.values["/chat alone, median s"]) if "/chat alone, median s" in this.values else None
    def combined(figures: Figures, metric: str) -> float | None:
        values = figures.values.get(metric)
        if not values:
            return None
        return sum(values) if metric.endswith("lost + not own") else statistics.median(values)

    for metric in metrics:
        mine = combined(this, metric)
        line = f"{metric:<{width}}{_fmt(mine):>12}"
        if base is not None:
            theirs = combined(base, metric)
            ratio = f"{mine / theirs:.2f}x" if mine is not None and theirs else ""
            line += f"{_fmt(theirs):>22}{ratio:>8}"
        elif single and mine is not None and metric.endswith(("p50 s", "p95 s")) and metric.startswith("/chat x"):
            line += f"   ({mine / single:.1f}x one call alone)"
        print(line)
    rounds = len(next(iter(this.values.values()), []))
    print(f"(medians of {rounds} round(s), lost counts summed; load avg is the machine's 1-minute load when "
          "each round started)")


def _fmt(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.0f}" if abs(value) >= 100 or float(value).is_integer() else f"{value:.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", help="a running page; default: start this checkout's app.py on a free port")
    parser.add_argument("--baseline", metavar="REF", help="also start and measure the page at this git ref")
    parser.add_argument("--baseline-url", help="a running baseline page instead of --baseline")
    parser.add_argument("--api", type=int, default=50, help="concurrent /chat API clients (0: none)")
    parser.add_argument("--client", default="http,gradio",
                        help="API client kinds, comma-separated: http (plain HTTP API), gradio (gradio_client)")
    parser.add_argument("--tabs", type=int, default=20, help="concurrent browser tabs (0: none)")
    parser.add_argument("--tab-head-start", type=float, default=8.0,
                        help="seconds the tabs get to open before the API clients of the combined run ask")
    parser.add_argument("--browser-nice", type=int, default=10,
                        help="niceness of the tabs' Chromium (0: the server's priority); see the module docstring")
    parser.add_argument("--single", type=int, default=5, help="single /chat calls for the unloaded median")
    parser.add_argument("--timing", type=int, default=0, help="page load and answer times, N fresh tabs")
    parser.add_argument("--long-tasks", type=int, default=0,
                        help="longest main-thread task of an answer and a 50 KB paste, N fresh tabs per width")
    parser.add_argument("--rounds", type=int, default=1, help="rounds per page, alternating pages")
    args = parser.parse_args()
    args.client = [k.strip() for k in args.client.split(",") if k.strip()]
    if unknown := set(args.client) - {"http", "gradio"}:
        raise SystemExit(f"unknown --client kind(s): {sorted(unknown)}")

    pages: list[Page] = []
    try:
        this = Page("this page", args.url) if args.url else start_page("this page")
        pages.append(this)
        base = None
        if args.baseline_url:
            base = Page("baseline", args.baseline_url)
        elif args.baseline:
            base = start_page("baseline", args.baseline)
        if base is not None:
            pages.append(base)
        base_name = args.baseline or args.baseline_url or ""
        figures = {p.name: Figures() for p in pages}
        for page in pages:  # warm-up: models and corpus loaded, first page served
            asyncio.run(_http_burst(page.url, cases(1)))
            if args.timing or args.tabs or args.long_tasks:
                asyncio.run(timing_run(page.url, [cases(1)[0][0]]))
        bad, offset = 0, 1
        for _ in range(args.rounds):
            used = 0
            for page in pages:
                page_bad, used = measure_round(page, figures[page.name], args, offset)
                if page is this:
                    bad += page_bad
            offset += used
        report(figures["this page"], figures.get("baseline"), base_name)
        if bad:
            raise SystemExit(f"{bad} clients lost their answer or got someone else's")
    finally:
        for page in pages:
            page.stop()


if __name__ == "__main__":
    main()
