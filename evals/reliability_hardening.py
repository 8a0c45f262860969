"""Issue 30's checks for ``evals/bench_reliability.py``: each defect the second round of hostile
testing found, as a bounded loop on loopback with its figure. ``bench_reliability.py`` runs them
in its ``slack``, ``faults``, ``mcp``, ``store`` and ``index`` parts; each function returns rows.
"""

from __future__ import annotations

import hashlib
import hmac
import http.client
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TOKEN = "xoxb-0000-2222-hardeningtoken"
SECRET = "hardening-signing-secret-0000"
CHANNEL = "C0HARDEN"


def _scaled(seconds: float) -> float:
    """A wall-clock bound stretched by the load measured now (``bench_reliability.load_factor``)."""
    from evals.bench_reliability import load_factor

    return seconds * load_factor()


def _row(area, what, figure, ok, notes=()):
    from evals.bench_reliability import Row

    return Row(area, what, figure, bool(ok), [n for n in notes if n])


def _answer(question: str, history=None):
    from bot.answer import Answer, Recommendation

    return Answer(language="en", recommendation=Recommendation(strategy="ddp", why=["fits [1]"]),
                  text=f"**Use DDP** for: {question[:40]}")


class _Lines(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record):
        self.lines.append(record.getMessage() + ("\nTraceback" if record.exc_info else ""))


def _raw_post(port: int, body: bytes, headers: dict[str, str]) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("POST", "/slack/events", body=body, headers=headers)
        return conn.getresponse().status
    finally:
        conn.close()


def _signed(body: bytes, content_type: str = "application/json") -> dict[str, str]:
    now = str(int(time.time()))
    digest = hmac.new(SECRET.encode(), b"v0:" + now.encode() + b":" + body, hashlib.sha256).hexdigest()
    return {"Content-Type": content_type, "X-Slack-Request-Timestamp": now, "X-Slack-Signature": "v0=" + digest}


def _serve(app, **options):
    from bot.surfaces.slack_app import make_http_server

    server = make_http_server(app, "127.0.0.1", 0, **options)
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    return server


# ---------------------------------------------------------------------------------------------
# Slack
def slack_rows(rounds: int) -> list:
    from bot.surfaces.slack_app import SeenKeys, build_slack_app
    from tests.slack_mock import DROP, SlackMock, event_body, mention, sign
    from tests.slack_mock import post as slack_post

    rows = []
    capture = _Lines()
    root = logging.getLogger()
    root.addHandler(capture)
    old_level = logging.getLogger("shardwise").level
    logging.getLogger("shardwise").setLevel(logging.INFO)
    try:
        with SlackMock() as slack:
            asked: list[str] = []
            app = build_slack_app(ask_fn=lambda q, history=None: asked.append(q) or _answer(q), token=TOKEN,
                                  signing_secret=SECRET, api_url=slack.api_url)
            server = _serve(app)
            port = server.server_port
            not_utf8 = b"\xff\xfe{\"type\": \"event_callback\"}\x80"
            no_channel = {k: v for k, v in mention("hi", CHANNEL).items() if k != "channel"}
            statuses: list[int] = []
            for i in range(rounds):
                kinds = [(not_utf8, {"Content-Type": "application/json"}),
                         (not_utf8, _signed(not_utf8)),
                         (b"command=%2Fshardwise&text=\xff", _signed(b"command=%2Fshardwise&text=\xff",
                                                                      "application/x-www-form-urlencoded")),
                         (json.dumps({"type": "event_callback", "event_id": f"EvN{i}", "event": None}).encode(), None),
                         (event_body(no_channel, f"EvC{i}").encode(), None),
                         (event_body({**mention("x", CHANNEL), "text": 5}, f"EvT{i}").encode(), None)]
                for body, headers in kinds:
                    statuses.append(_raw_post(port, body, headers or _signed(body)))
            time.sleep(0.5)
            server.shutdown()
            server.server_close()
            bad = [s for s in statuses if not 400 <= s < 500]
            tracebacks = sum("Traceback" in line for line in capture.lines)
            rejected = sum("rejected Slack request" in line for line in capture.lines)
            rows.append(_row("slack", f"{len(statuses)} malformed bodies (non-UTF-8, event null, no channel, ...)",
                             f"{len(statuses) - len(bad)} got 4xx, {tracebacks} tracebacks, {rejected} log lines",
                             not bad and tracebacks == 0 and rejected == len(statuses) and not asked,
                             [f"statuses {sorted(set(statuses))}"]))

            # replayed after a restart: three bot processes in a row on one seen-event file
            now = int(time.time())
            event = event_body(mention("restart?", CHANNEL, ts="1700009999.000100"), "EvRestart")
            form = urllib.parse.urlencode({"command": "/shardwise", "text": "restart?", "user_id": "U1",
                                           "channel_id": CHANNEL, "team_id": "T1",
                                           "response_url": slack.response_url("restart")})
            with tempfile.TemporaryDirectory(prefix="sw-rel-seen-") as tmp:
                answered = []
                for _ in range(3):
                    count: list[str] = []
                    restarted = build_slack_app(
                        ask_fn=lambda q, history=None, count=count: count.append(q) or _answer(q), token=TOKEN,
                        signing_secret=SECRET, api_url=slack.api_url, dedupe=SeenKeys(Path(tmp) / "seen.sqlite"))
                    server = _serve(restarted)
                    url = f"http://127.0.0.1:{server.server_port}/slack/events"
                    slack_post(url, event, secret=SECRET, timestamp=now, signature=sign(event, now, SECRET))
                    slack_post(url, form, secret=SECRET, timestamp=now, signature=sign(form, now, SECRET),
                               content_type="application/x-www-form-urlencoded")
                    time.sleep(0.6)
                    server.shutdown()
                    server.server_close()
                    answered.append(len(count))
            rows.append(_row("slack", "an event and a slash command replayed after 2 restarts",
                             f"answered {answered} times per start", answered == [2, 0, 0]))

            # accepted, then the connection dropped: posted once
            for method, label in (("chat.postMessage", "chat.postMessage"), ("response", "response_url")):
                before = len(slack.calls_to(method))
                server = _serve(app)
                url = f"http://127.0.0.1:{server.server_port}/slack/events"
                for i in range(rounds):
                    slack.faults[method] = [(DROP, {}, {})]
                    if method == "response":
                        form = urllib.parse.urlencode({"command": "/shardwise", "text": f"drop {i}", "user_id": "U1",
                                                       "channel_id": CHANNEL, "team_id": "T1",
                                                       "response_url": slack.response_url(f"drop{i}")})
                        slack_post(url, form, secret=SECRET, content_type="application/x-www-form-urlencoded")
                    else:
                        slack_post(url, event_body(mention(f"drop {i}", CHANNEL, ts=f"17000090{i:02d}.000100"),
                                                   f"EvDrop{i}"), secret=SECRET)
                    slack.wait_for(method, before + i + 1, timeout=10)
                time.sleep(1.5)
                server.shutdown()
                server.server_close()
                posts = len(slack.calls_to(method)) - before
                rows.append(_row("faults", f"{label} accepted, then the connection dropped ({rounds} replies)",
                                 f"{posts} posts", posts == rounds))
    finally:
        root.removeHandler(capture)
        logging.getLogger("shardwise").setLevel(old_level)
    rows.append(socket_mode_row(rounds))
    rows.append(slow_clients_row(150))
    return rows


def socket_mode_row(rounds: int):
    """Malformed Socket Mode envelopes (``"event": null`` and the like) through slack_sdk's client
    logic with no WebSocket (``tests.slack_mock.fake_socket_client``): each acknowledged, one line."""
    from bot.surfaces.slack_app import build_slack_app
    from bot.surfaces.slack_socket import GuardedSocketModeHandler
    from tests.slack_mock import SlackMock, fake_socket_client, mention, socket_envelope

    def event(body, i):
        return {"type": "event_callback", "event_id": f"EvSock{i}", "event": body}

    no_channel = {k: v for k, v in mention("hi", CHANNEL).items() if k != "channel"}
    kinds = [lambda i: socket_envelope(event(None, i), envelope_id=f"e{i}a"),
             lambda i: socket_envelope(event("app_mention", i), envelope_id=f"e{i}b"),
             lambda i: socket_envelope(event(no_channel, i), envelope_id=f"e{i}c"),
             lambda i: socket_envelope(None, envelope_id=f"e{i}d"),
             lambda i: socket_envelope({"command": "/shardwise", "text": 5}, kind="slash_commands",
                                       envelope_id=f"e{i}e")]
    capture = _Lines()
    root = logging.getLogger()
    root.addHandler(capture)
    old_level, ours = root.level, logging.getLogger("shardwise").level
    root.setLevel(logging.DEBUG)
    logging.getLogger("shardwise").setLevel(logging.INFO)  # what a deployed bot logs (the bench mutes it)
    asked: list[str] = []
    try:
        with SlackMock() as slack:
            app = build_slack_app(ask_fn=lambda q, history=None: asked.append(q) or _answer(q), token=TOKEN,
                                  api_url=slack.api_url, socket_mode=True)
            client = fake_socket_client()
            GuardedSocketModeHandler(app, "xapp-1-reliability", client=client)
            frames = [kind(i) for i in range(rounds) for kind in kinds]
            for frame in frames:
                client.receive(frame)
            time.sleep(0.3)
            good = mention("a good one", CHANNEL, ts="1700007777.000100")
            client.receive(socket_envelope(event(good, "good"), envelope_id="e-good"))
            slack.wait_for("chat.postMessage", 1, timeout=10)
    finally:
        root.removeHandler(capture)
        root.setLevel(old_level)
        logging.getLogger("shardwise").setLevel(ours)
    acked = len({m.get("envelope_id") for m in client.sent} - {"e-good"})
    dropped = sum("dropped Socket Mode envelope" in line for line in capture.lines)
    tracebacks = sum("Traceback" in line for line in capture.lines)
    return _row("slack", f"{len(frames)} malformed Socket Mode envelopes (event null, no channel, ...)",
                f"{acked} acknowledged, {dropped} log lines, {tracebacks} tracebacks; a good one answered",
                acked == len(frames) and dropped == len(frames) and tracebacks == 0 and asked == ["a good one"])


def slow_clients_row(count: int):
    """``count`` half-sent requests against a server capped at 64 connections, closed after 3 s."""
    from bot.surfaces.slack_app import build_slack_app

    app = build_slack_app(ask_fn=_answer, token=TOKEN, signing_secret=SECRET, api_url="http://127.0.0.1:9/api/")
    server = _serve(app, max_clients=64, connection_seconds=3.0)
    threads_before = threading.active_count()
    socks, refused, peak = [], 0, 0
    try:
        for _ in range(count):
            sock = socket.create_connection(("127.0.0.1", server.server_port), timeout=10)
            sock.sendall(b"POST /slack/events HTTP/1.1\r\nHost: x\r\nContent-Length: 999\r\n")
            socks.append(sock)
        time.sleep(0.5)
        peak = threading.active_count() - threads_before
        started = time.monotonic()
        closed = 0
        for sock in socks:
            sock.settimeout(max(0.1, 3.0 * 3 - (time.monotonic() - started)))
            try:
                data = sock.recv(100)
                refused += data.startswith(b"HTTP/1.0 503")
                closed += 1
            except (ConnectionResetError, BrokenPipeError):
                closed += 1
            except TimeoutError:
                pass
        held_for = time.monotonic() - started
    finally:
        for sock in socks:
            sock.close()
        server.shutdown()
        server.server_close()
    return _row("slack", f"{count} half-sent requests (cap 64, 3 s deadline)",
                f"{refused} refused at once (503), {closed}/{count} closed in {held_for:.1f} s, {peak} threads",
                closed == count and peak <= 64 + 2)


# ---------------------------------------------------------------------------------------------
# MCP simulate_memory
def mcp_rows(orphan: bool = True) -> list:
    """simulate_memory's progress, cancellation, queue and latency on a fake simulation; with
    ``orphan``, a real stdio server's 405B child after the server's SIGKILL (``orphan_row``)."""
    import anyio
    from mcp import Client

    from bot.bench.simulate import SimError, SimResult
    from bot.surfaces.mcp_server import build_mcp_server

    gate = threading.Event()
    stopped: list[float] = []

    def fake(config, progress=None, should_stop=None):
        for step in range(4):
            deadline = time.monotonic() + 0.3
            while time.monotonic() < deadline or (step == 0 and config.gpu_count == 16 and not gate.is_set()):
                if should_stop and should_stop():
                    stopped.append(time.monotonic())
                    raise SimError("simulation cancelled")
                time.sleep(0.02)
            if progress:
                progress(f"step {step + 1}", (step + 1) / 4)
        return "run-fake", SimResult(config=config, peak_gib=1, params_gib=0.2, grads_gib=0.2, optimizer_gib=0.4,
                                     activations_gib=0.1, buffers_gib=0.1, host_gib=0, seconds=1, torch_version="x")

    args = {"model": "GPT-2", "gpu_count": 2, "strategy": "ddp", "seq_len": 256}
    seen: list[str | None] = []
    out: dict = {}

    async def go():
        server = build_mcp_server(simulate_fn=fake, max_running=1, max_waiting=1)
        async with Client(server) as client:
            async def on_progress(progress, total, message):
                seen.append(message)

            await client.call_tool("simulate_memory", args, progress_callback=on_progress)
            with anyio.move_on_after(0.5):
                await client.call_tool("simulate_memory", {**args, "gpu_count": 4, "seq_len": 512})
            out["cancelled_at"] = time.monotonic()
            await anyio.sleep(1.0)
            async with anyio.create_task_group() as tg:
                tg.start_soon(client.call_tool, "simulate_memory", {**args, "gpu_count": 16})
                tg.start_soon(client.call_tool, "simulate_memory", {**args, "gpu_count": 32})
                await anyio.sleep(0.4)
                busy = await client.call_tool("simulate_memory", {**args, "gpu_count": 64})
                out["busy"] = busy.content[0].text if busy.is_error else ""
                started = time.monotonic()
                await client.call_tool("search_knowledge", {"query": "offload"})
                out["latency"] = time.monotonic() - started
                gate.set()

    # search_knowledge's own speed is not what is timed (the event loop's freedom is): an empty
    # search, so the check needs neither the index nor the embedding model
    from bot.knowledge import search as knowledge_search

    real_search = knowledge_search.search
    knowledge_search.search = lambda query, k=5, kinds=("forum", "doc"): []
    try:
        anyio.run(go)
    finally:
        knowledge_search.search = real_search
    first = seen[0] or "" if seen else ""
    stop_delay = (stopped[0] - out["cancelled_at"]) if stopped else None
    rows = [
        _row("mcp", "simulate_memory progress notifications", f"{len(seen)} sent; first: {first[:60]!r}",
             len(seen) >= 4 and "expected about" in first),
        _row("mcp", "a cancelled simulate_memory stops its work",
             f"stopped {stop_delay:.2f} s after the cancel" if stop_delay is not None else "kept running",
             stop_delay is not None and stop_delay < _scaled(1.5)),
        _row("mcp", "a call past 1 running + 1 waiting", out.get("busy", "")[:58] or "accepted",
             "busy" in out.get("busy", "") and "try again" in out.get("busy", "")),
        _row("mcp", "search_knowledge latency while simulations run", f"{out.get('latency', 99) * 1000:.0f} ms",
             out.get("latency", 99) < _scaled(0.5)),
    ]
    if orphan:
        rows.append(orphan_row())
    return rows


def _children(pid: int) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[1]) == pid and fields[0] != "Z":
            found.append(int(stat.parent.name))
    return found


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def orphan_row():
    """A real stdio MCP server asked to simulate Llama-3.1-405B, SIGKILLed once its child runs."""
    request = [{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                   "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "rel", "version": "1"}}},
               {"jsonrpc": "2.0", "method": "notifications/initialized"},
               {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
                   "name": "simulate_memory", "arguments": {"model": "Llama-3.1-405B", "gpu_count": 8,
                                                            "strategy": "ddp", "seq_len": 4096}}}]
    with tempfile.TemporaryDirectory(prefix="sw-rel-mcp-") as tmp:
        server = subprocess.Popen([sys.executable, "-m", "bot.surfaces.cli", "mcp"], cwd=ROOT, stdin=subprocess.PIPE,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                  env={**os.environ, "SHARDWISE_DATA_DIR": tmp, "HF_HUB_OFFLINE": "1"})
        try:
            for message in request:
                server.stdin.write((json.dumps(message) + "\n").encode())
                server.stdin.flush()
                time.sleep(0.3)
            child, deadline = None, time.monotonic() + 90
            while child is None and time.monotonic() < deadline:
                child = next((c for c in _children(server.pid)
                              if b"spawn_main" in Path(f"/proc/{c}/cmdline").read_bytes()
                              and b"resource_tracker" not in Path(f"/proc/{c}/cmdline").read_bytes()), None)
                time.sleep(0.2)
            if child is None:
                return _row("mcp", "a simulation child after its server's SIGKILL", "no child started", False)
            time.sleep(4.0)  # importing torch, building the model
            server.send_signal(signal.SIGKILL)
            server.wait(10)
            killed = time.monotonic()
            while _alive(child) and time.monotonic() - killed < 20:
                time.sleep(0.1)
            lived = time.monotonic() - killed
        finally:
            if server.poll() is None:
                server.kill()
    return _row("mcp", "a 405B simulation child after its server's SIGKILL", f"gone after {lived:.1f} s", lived < _scaled(3.0))


# ---------------------------------------------------------------------------------------------
# the result store and the index
def _filled_store(path: Path) -> None:
    from bot.bench.store import ResultStore

    store = ResultStore(path)
    for n in range(7):
        store.add("run", {"model": "tiny", "strategy": "ddp", "n": n, "pad": "x" * 2000}, {"peak_gib": n / 10})


DAMAGE = {
    "truncated to half": lambda p: p.write_bytes(p.read_bytes()[: p.stat().st_size // 2]),
    "header overwritten": lambda p: p.write_bytes(b"garbage " * 16 + p.read_bytes()[128:]),
    "truncated to 0 bytes": lambda p: (p.write_bytes(b""), os.utime(p, (time.time() - 60,) * 2)),
    "pages overwritten": lambda p: p.write_bytes(p.read_bytes()[:4096] + b"\xa5" * (p.stat().st_size - 4096)),
}


def store_rows() -> list:
    rows = []
    for name, damage in DAMAGE.items():
        with tempfile.TemporaryDirectory(prefix="sw-rel-damage-") as tmp:
            _filled_store(Path(tmp) / "bench.sqlite")
            damage(Path(tmp) / "bench.sqlite")
            done = subprocess.run([sys.executable, "-m", "bot.surfaces.cli", "bench", "list"], cwd=ROOT, capture_output=True,
                                  text=True, timeout=120, env={**os.environ, "SHARDWISE_DATA_DIR": tmp})
            moved = list(Path(tmp).glob("bench.sqlite.damaged-*"))
            said = "notice: The benchmark result store was damaged" in done.stderr
            traceback = "Traceback" in done.stderr + done.stdout
            rows.append(_row("store", f"bench.sqlite {name}: bench list",
                             f"rc {done.returncode}, {'notice' if said else 'no notice'}, {len(moved)} moved aside, "
                             f"{'a' if traceback else 'no'} traceback",
                             done.returncode == 0 and said and len(moved) == 1 and not traceback))
    return rows


_KILLED_BUILD = """
import os, signal, sys
from pathlib import Path
from bot.knowledge import index
index._add_chunks = lambda store, chunks, progress: os.kill(os.getpid(), signal.SIGKILL)
index.ingest(chunks=[], rebuild=True, root=Path(sys.argv[1]))
"""


def index_rows(kills: int = 3) -> list:
    with tempfile.TemporaryDirectory(prefix="sw-rel-index-") as tmp:
        root = Path(tmp) / "index"
        counts = []
        for _ in range(kills):
            subprocess.run([sys.executable, "-c", _KILLED_BUILD, str(root)], cwd=ROOT, capture_output=True,
                           timeout=300, env={**os.environ, "HF_HUB_OFFLINE": "1"})
            counts.append(sum(p.is_dir() and p.name.startswith("g") for p in root.iterdir()))
    return [_row("index", f"ingest --rebuild killed mid-build {kills} times",
                 f"generations on disk after each: {counts}", counts == [1] * kills)]
