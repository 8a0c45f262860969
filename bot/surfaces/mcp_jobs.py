"""Long ``simulate_memory`` calls for the MCP server: a bounded queue, progress, cancellation and
the expected duration said before the work starts.

What it owns:
- ``SimulationQueue``: at most ``MAX_RUNNING`` simulations at once and ``MAX_WAITING`` more queued;
  a call beyond that is refused at once with a "busy" message saying when to try again. Each job
  runs on its own thread (the event loop stays free, so other tools keep their latency) and stops
  its child process when asked (``SimulationJob.stop``): a cancelled MCP request stops the work.
- ``expected_seconds``: how long a simulation should take: the mean of this model's earlier
  simulations in the result store when there are some, else a rough guide from its size.
- ``follow``: the coroutine the tool awaits: MCP progress notifications (the expected duration
  first, then the child's own steps and a heartbeat every ``PROGRESS_EVERY`` seconds, so a client
  that resets its timeout on progress keeps waiting) until the job ends; cancelled, it stops it.

The children themselves exit when the server process dies (``bot.bench.simulate``'s watchdog on
the parent pid), so a killed server leaves no simulation running.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger("shardwise.mcp")

MAX_RUNNING = 1  # each child holds a model's fake tensors (~200 MB for 405B) and a core
MAX_WAITING = 2
PROGRESS_EVERY = 2.0  # seconds between progress notifications when nothing else is said
# A rough guide when the store has no run of the model: child start-up (spawn + torch import)
# plus time growing with size (FakeTensorMode costs per op and per tensor; fitted to 3 s for
# GPT-2 and ~150 s for a 7B dense model on this project's 2-core machine, issue 30).
STARTUP_SECONDS = 5.0
SECONDS_PER_B = 20.0
SIZE_EXPONENT = 0.75

SimulateFn = Callable[..., Any]  # simulate_fn(config, progress=..., should_stop=...) -> (run_id, result)


class QueueBusy(Exception):
    """Every simulation slot and every waiting place is taken; the message says what to do."""


def expected_seconds(config, store=None) -> float:
    """Seconds ``config`` should take to simulate (see the module docstring)."""
    try:
        runs = store.find_runs(model=config.model, kind="simulate") if store is not None else []
    except Exception:  # noqa: BLE001  (a store that cannot be read gives no history, not an error)
        runs = []
    seconds = [r.figures.get("seconds") for r in runs[:10] if isinstance(r.figures.get("seconds"), (int, float))]
    if seconds:
        return max(1.0, sum(seconds) / len(seconds))
    try:
        params_b = config.spec().params_b
    except Exception:  # noqa: BLE001  (refused later with its own message)
        params_b = 1.0
    return STARTUP_SECONDS + SECONDS_PER_B * max(params_b, 0.01) ** SIZE_EXPONENT


def duration_words(seconds: float) -> str:
    """``"about 40 s"``, ``"about 3 min"``, ``"about 1.5 h"``."""
    if seconds < 90:
        return f"about {max(1, round(seconds))} s"
    if seconds < 5400:
        return f"about {round(seconds / 60)} min"
    return f"about {seconds / 3600:.1f} h"


@dataclass
class SimulationJob:
    config: Any
    expected: float
    done: threading.Event = field(default_factory=threading.Event)
    stop: threading.Event = field(default_factory=threading.Event)
    started_at: float | None = None  # when it got a slot (time.monotonic)
    message: str = "waiting for a free simulation slot"
    fraction: float = 0.0
    result: Any = None
    error: BaseException | None = None

    def report(self, message: str, fraction: float) -> None:
        self.message, self.fraction = message, max(self.fraction, min(max(fraction, 0.0), 1.0))


class SimulationQueue:
    """Runs ``simulate_fn`` jobs on threads, ``max_running`` at once, ``max_waiting`` queued."""

    def __init__(self, simulate_fn: SimulateFn, max_running: int = MAX_RUNNING, max_waiting: int = MAX_WAITING):
        self.simulate_fn = simulate_fn
        self.max_running, self.max_waiting = max_running, max_waiting
        self._slots = threading.Semaphore(max_running)
        self._lock = threading.Lock()
        self.jobs: list[SimulationJob] = []  # admitted and not finished, oldest first

    def submit(self, config, expected: float) -> SimulationJob:
        """Start (or queue) a job; ``QueueBusy`` when the queue is full."""
        with self._lock:
            if len(self.jobs) >= self.max_running + self.max_waiting:
                raise QueueBusy(self._busy_text())
            job = SimulationJob(config, expected)
            self.jobs.append(job)
        threading.Thread(target=self._run, args=(job,), name="shardwise-mcp-simulation", daemon=True).start()
        return job

    def _busy_text(self) -> str:
        now = time.monotonic()
        left = [max(j.expected - (now - j.started_at), 1.0) if j.started_at else j.expected for j in self.jobs]
        wait = min(left) if left else 0.0
        running = sum(1 for j in self.jobs if j.started_at)
        return (f"busy: {running} simulation(s) running and {len(self.jobs) - running} waiting, the most this "
                f"server takes at once; try again in {duration_words(wait)}, or use estimate_memory (instant)")

    def _run(self, job: SimulationJob) -> None:
        try:
            while not self._slots.acquire(timeout=0.25):  # queued: a cancel while waiting ends it here
                if job.stop.is_set():
                    job.error = CancelledWhileQueued("cancelled before it started")
                    return
                ahead = self._ahead(job)
                job.message = f"waiting for a free simulation slot ({ahead} ahead)"
            try:
                job.started_at = time.monotonic()
                job.message = "starting the simulation"
                job.result = self.simulate_fn(job.config, progress=job.report, should_stop=job.stop.is_set)
            finally:
                self._slots.release()
        except BaseException as err:  # noqa: BLE001  (handed to the awaiting tool call)
            job.error = err
        finally:
            with self._lock:
                if job in self.jobs:
                    self.jobs.remove(job)
            job.done.set()

    def _ahead(self, job: SimulationJob) -> int:
        with self._lock:
            return sum(1 for j in self.jobs[: self.jobs.index(job)] if j is not job) if job in self.jobs else 0


class CancelledWhileQueued(Exception):
    pass


async def follow(job: SimulationJob, report: Callable[[float, str], Any]) -> Any:
    """Await ``job``: ``await report(fraction, message)`` at the start (the expected duration),
    on each step and every ``PROGRESS_EVERY`` s; the job's result, or its error raised. When the
    awaiting call is cancelled the job is told to stop (its child process is ended)."""
    import anyio

    begun = time.monotonic()
    said: tuple[str, float] | None = None
    next_beat = 0.0
    try:
        await report(0.0, f"simulating {job.config.model}, {job.config.strategy} on {job.config.gpu_count} GPUs: "
                          f"expected {duration_words(job.expected)}")
        while not job.done.is_set():
            await anyio.sleep(0.25)
            now = time.monotonic()
            if (job.message, job.fraction) != said or now >= next_beat:
                said, next_beat = (job.message, job.fraction), now + PROGRESS_EVERY
                elapsed = now - begun
                await report(job.fraction, f"{job.message} ({elapsed:.0f} s so far, expected "
                                           f"{duration_words(job.expected)})")
    finally:
        if not job.done.is_set():
            log.info("simulate_memory cancelled: stopping %s", job.config.model)
            job.stop.set()
    if job.error is not None:
        raise job.error
    return job.result
