"""simulate_memory's long runs over MCP (issue 30): progress notifications with the expected
duration first, cancellation that stops the work, a capped queue with a clear "busy" error, and
other tools answering meanwhile. The simulation is a fake here (a thread that waits), driven
through the SDK's in-memory client."""

from __future__ import annotations

import threading
import time

import anyio
import pytest

from bot.surfaces.mcp_jobs import duration_words, expected_seconds
from tests.lazy import lazy_module

mcp = lazy_module("mcp")  # the SDK and the server: imported by the first test that uses them
mcp_server = lazy_module("bot.surfaces.mcp_server")

ARGS = {"model": "GPT-2", "gpu_count": 2, "strategy": "ddp", "seq_len": 256}


class FakeSimulation:
    """Reports ``steps`` progress steps ``step_seconds`` apart, then returns the tiny figures;
    stops early when asked. ``gate`` (if set) holds it before the first step."""

    def __init__(self, steps: int = 3, step_seconds: float = 0.4, gate: threading.Event | None = None):
        self.steps, self.step_seconds, self.gate = steps, step_seconds, gate
        self.started = 0
        self.stopped_at: float | None = None
        self.lock = threading.Lock()

    def __call__(self, config, progress=None, should_stop=None):
        from bot.bench.simulate import SimError, SimResult

        with self.lock:
            self.started += 1
        while self.gate is not None and not self.gate.wait(0.05):
            if should_stop and should_stop():
                self.stopped_at = time.monotonic()
                raise SimError("simulation cancelled")
        for step in range(self.steps):
            deadline = time.monotonic() + self.step_seconds
            while time.monotonic() < deadline:
                if should_stop and should_stop():
                    self.stopped_at = time.monotonic()
                    raise SimError("simulation cancelled")
                time.sleep(0.02)
            if progress:
                progress(f"step {step + 1} of {self.steps}", (step + 1) / self.steps)
        result = SimResult(config=config, peak_gib=1.5, params_gib=0.25, grads_gib=0.25, optimizer_gib=0.5,
                           activations_gib=0.25, buffers_gib=0.25, host_gib=0.0, seconds=1.2, torch_version="x")
        return "run-fake00000001", result


def _search(query, k, kinds):
    return []


def test_progress_says_the_expected_duration_first_then_each_step():
    fake = FakeSimulation(steps=3, step_seconds=0.3)
    server = mcp_server.build_mcp_server(simulate_fn=fake)
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress, total, message):
        seen.append((progress, total, message))

    async def main():
        async with mcp.Client(server) as client:
            return await client.call_tool("simulate_memory", ARGS, progress_callback=on_progress)

    result = anyio.run(main)
    assert not result.is_error, result.content[0].text
    assert result.structured_content["run_id"] == "run-fake00000001"
    assert seen and seen[0][0] == 0.0 and "expected about" in (seen[0][2] or "")
    assert "GPT-2" in seen[0][2] and "ddp" in seen[0][2]
    steps = [m for _, _, m in seen if m and m.startswith("step ")]
    assert len(steps) >= 3 and all(total == 1.0 for _, total, _ in seen)
    values = [p for p, _, _ in seen]
    assert values == sorted(values) and values[-1] == pytest.approx(1.0)


def test_a_cancelled_call_stops_the_simulation():
    fake = FakeSimulation(steps=1, step_seconds=30.0)
    server = mcp_server.build_mcp_server(simulate_fn=fake)

    async def main():
        async with mcp.Client(server) as client:
            with anyio.move_on_after(1.0):
                await client.call_tool("simulate_memory", ARGS)
            cancelled_at = time.monotonic()
            await anyio.sleep(1.5)
            return cancelled_at

    cancelled_at = anyio.run(main)
    assert fake.stopped_at is not None, "the simulation kept running after the call was cancelled"
    assert fake.stopped_at - cancelled_at < 1.5


def test_the_queue_is_capped_with_a_busy_error_and_the_others_finish():
    gate = threading.Event()
    fake = FakeSimulation(steps=1, step_seconds=0.1, gate=gate)
    server = mcp_server.build_mcp_server(simulate_fn=fake, max_running=1, max_waiting=1)
    results: dict[int, object] = {}

    async def main():
        async with mcp.Client(server) as client:
            async def one(n: int, arguments: dict):
                results[n] = await client.call_tool("simulate_memory", arguments)

            async with anyio.create_task_group() as tg:
                tg.start_soon(one, 0, ARGS)
                tg.start_soon(one, 1, {**ARGS, "gpu_count": 4})
                await anyio.sleep(0.5)
                refused = await client.call_tool("simulate_memory", {**ARGS, "gpu_count": 8})
                refused_again = await client.call_tool("simulate_memory", {**ARGS, "strategy": "fsdp_full_shard"})
                gate.set()
            return refused, refused_again

    refused, refused_again = anyio.run(main)
    for r in (refused, refused_again):
        assert r.is_error
        text = r.content[0].text
        assert "busy" in text and "1 simulation(s) running and 1 waiting" in text and "try again in about" in text
    assert not results[0].is_error and not results[1].is_error
    assert fake.started == 2


def test_other_tools_keep_their_latency_while_a_simulation_runs():
    """Other tools answer while a simulation runs: each search returns before the (3 s) simulation
    has finished. Ordering, not a timing budget (timings belong to evals/bench_reliability.py)."""
    fake = FakeSimulation(steps=1, step_seconds=3.0)
    server = mcp_server.build_mcp_server(simulate_fn=fake)
    finished_before: list[bool] = []
    done = {"simulation": False}

    async def main():
        async with mcp.Client(server) as client:
            await client.call_tool("search_knowledge", {"query": "warm up"})  # the searcher's first load

            async def simulate():
                await client.call_tool("simulate_memory", ARGS)
                done["simulation"] = True

            async with anyio.create_task_group() as tg:
                tg.start_soon(simulate)
                await anyio.sleep(0.3)
                for query in ("FSDP 通信", "offload", "hybrid shard"):
                    result = await client.call_tool("search_knowledge", {"query": query})
                    finished_before.append(done["simulation"])
                    assert not result.is_error

    anyio.run(main)
    assert finished_before == [False, False, False]


def test_a_config_the_simulator_refuses_is_refused_before_queueing():
    fake = FakeSimulation()
    server = mcp_server.build_mcp_server(simulate_fn=fake)

    async def main():
        async with mcp.Client(server) as client:
            return await client.call_tool("simulate_memory", {**ARGS, "seq_len": 4096})

    result = anyio.run(main)
    assert result.is_error and "1024" in result.content[0].text and fake.started == 0


def test_expected_duration_from_history_or_size():
    from bot.bench.simulate import SimConfig

    class Run:
        def __init__(self, seconds):
            self.figures = {"seconds": seconds}

    class Store:
        def find_runs(self, model=None, kind=None):
            return [Run(40.0), Run(60.0)] if model == "Llama-2-7B" else []

    seven = SimConfig(model="Llama-2-7B", gpu_count=8, strategy="ddp")
    assert expected_seconds(seven, Store()) == pytest.approx(50.0)
    sizes = [expected_seconds(SimConfig(model=m, gpu_count=8, strategy="ddp"), Store())
             for m in ("GPT-2", "Llama-2-13B", "Llama-2-70B")]
    assert sizes == sorted(sizes) and sizes[0] < 20 and sizes[-1] > 120
    assert [duration_words(s) for s in (0.2, 45, 150, 9000)] == ["about 1 s", "about 45 s", "about 2 min",
                                                                  "about 2.5 h"]
