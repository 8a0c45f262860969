"""Latency of the chat page's ``/chat`` API alone and under 20 concurrent users.

    .venv/bin/python evals/bench_web_load.py [--url http://127.0.0.1:7860/] [--users 20] [--single 5]

Without ``--url`` it starts ``app.py`` on a free 127.0.0.1 port (index built if absent) and stops
it afterwards. Each user asks a different setup, so every answer is checked to be distinct.
Prints the single-call median, then p50/p95 under load and their ratio to the single call.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bot import webui  # noqa: E402  (sets the offline switches gradio_client needs)

MODELS = (("Llama-2-7B", "A100 80GB"), ("Llama-2-13B", "H100 80GB"), ("Mistral-7B", "A100 40GB"),
          ("GPT-2 XL", "RTX 4090 24GB"), ("Qwen2.5-14B", "H200"), ("Llama-3.1-8B", "L40S 48GB"))
COUNTS = (2, 4, 8, 16)


def questions(n: int) -> list[str]:
    combos = [f"DDP or FSDP for {m} on {c}x {g}?" for m, g in MODELS for c in COUNTS]
    if n > len(combos):
        raise SystemExit(f"at most {len(combos)} distinct users")
    return combos[:n]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[index]


def timed_call(client, question: str) -> tuple[float, str]:
    started = time.perf_counter()
    answer = client.predict(question, api_name="/chat")
    return time.perf_counter() - started, answer


def run(url: str, users: int, single: int) -> None:
    from gradio_client import Client

    client = Client(url, verbose=False)
    qs = questions(users)
    timed_call(client, qs[0])  # warm-up: first answer loads the embedding model and the corpus
    alone = [timed_call(client, qs[i % len(qs)])[0] for i in range(single)]
    # One client per user, as 20 people would have (one shared Client's SSE reader is racy when
    # many threads predict through it at once).
    with ThreadPoolExecutor(max_workers=users) as pool:
        clients = list(pool.map(lambda _: Client(url, verbose=False), range(users)))
        started = time.perf_counter()
        results = list(pool.map(timed_call, clients, qs))
    wall = time.perf_counter() - started
    latencies = [t for t, _ in results]
    distinct = len({a for _, a in results})
    single_median = statistics.median(alone)
    p50, p95 = percentile(latencies, 0.50), percentile(latencies, 0.95)
    print(f"single call   median {single_median:6.2f} s  (n={single})")
    print(f"{users} concurrent  p50 {p50:6.2f} s  ({p50 / single_median:4.1f}x single)   "
          f"p95 {p95:6.2f} s  ({p95 / single_median:4.1f}x single)   wall {wall:.1f} s")
    print(f"distinct answers: {distinct}/{users}  (server concurrency limit {webui.CHAT_CONCURRENCY})")
    if distinct != users:
        raise SystemExit("different setups got the same answer")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", help="a running page; default: start app.py on a free port")
    parser.add_argument("--users", type=int, default=20)
    parser.add_argument("--single", type=int, default=5, help="single calls for the baseline median")
    args = parser.parse_args()
    if args.url:
        run(args.url, args.users, args.single)
        return
    port = webui.free_port()
    print(f"starting app.py on 127.0.0.1:{port} ...", flush=True)
    proc = webui.start_subprocess(port, timeout=600)
    try:
        run(f"http://127.0.0.1:{port}/", args.users, args.single)
    finally:
        proc.terminate()
        proc.wait(30)


if __name__ == "__main__":
    main()
