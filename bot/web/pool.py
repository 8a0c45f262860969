"""Answering in worker processes, so the page's server uses every core.

Why: one answer is about 45 ms of CPU (retrieval's MiniLM embedding about half of it, the rest
parsing, the calculator, composing), nearly all of it Python holding the GIL. In the server's own
process every answer, and Gradio's own per-request work, share one core, so 50 clients at once
wait about 50 x 65 ms ~ 3.3 s for the last answer on a 2-core machine whatever the queue does.
Here the answers run in ``workers`` spawned processes (default: one per core, at most 4), each
with one torch thread and everything loaded once at start (embedding model, corpus, catalog),
and the server's process keeps only Gradio's work.

The jobs are plain functions of picklable data: ``chat_markdown`` (the ``/chat`` API: question
-> markdown), ``ask_question`` (a page question with its history -> the ``Answer`` and what the
reader parsed) and ``answer_setup`` (a panel edit -> the ``Answer``). A setup error travels back
as :class:`bot.setup.SetupError`'s text (pydantic's errors do not pickle), re-raised as
``SetupError`` here.

Spawned, not forked: the server already holds torch and Gradio threads. Each worker leaves when
the server process goes away (it watches its parent), so a killed server leaves no orphans. A
worker that dies (killed, out of memory) breaks the pool: the pool is restarted once and that
request is answered in the server's own process instead, so no message is lost.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import threading
import time
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any

log = logging.getLogger(__name__)

WORKERS_ENV = "SHARDWISE_WEB_WORKERS"
MAX_DEFAULT_WORKERS = 4
# The question each worker answers at start, so the first real question pays no loading.
WARM_UP_QUESTION = "DDP or FSDP for Llama-2-7B on 8x A100 80GB?"


def default_workers() -> int:
    """``SHARDWISE_WEB_WORKERS`` (0 = answer in the server's process), else one per core (max 4)."""
    raw = os.environ.get(WORKERS_ENV, "").strip()
    if raw:
        try:
            return max(0, int(raw))
        except ValueError:
            log.warning("%s=%r is not a number; using one worker per core", WORKERS_ENV, raw)
    return max(1, min(MAX_DEFAULT_WORKERS, os.cpu_count() or 1))


# ----------------------------------------------------------------------------------------------
# In the worker
# ----------------------------------------------------------------------------------------------


def _watch_parent(parent: int) -> None:
    """Leave when the server is gone (SIGKILL of the server runs no cleanup of ours)."""
    while True:
        if os.getppid() != parent:
            os._exit(0)
        time.sleep(1.0)


def _init_worker(parent: int) -> None:
    from bot.env import configure_runtime

    configure_runtime(threads=1)  # one core per worker: the workers are the parallelism
    threading.Thread(target=_watch_parent, args=(parent,), daemon=True, name="watch-parent").start()


def warm_up() -> float:
    """Load everything an answer needs (model, index, corpus caches); returns the seconds taken."""
    started = time.perf_counter()
    chat_markdown(WARM_UP_QUESTION)
    return time.perf_counter() - started


def chat_markdown(text: str, notice: str | None = None) -> str:
    """``/chat``: one question (already trimmed; no conversation) -> the markdown answer with
    its sources. Imports no Gradio: a worker never loads it."""
    from bot.llm import answer as ask
    from bot.web.answer_view import plain_markdown

    return plain_markdown(ask(text), notice)


def ask_question(text: str, history: list[str]) -> tuple[Any, dict | None]:
    """A page question: (the answer every surface gives, the reader's setup or None)."""
    from bot.llm import answer as ask

    answer = ask(text, history=history)
    try:
        from bot.parse import parse_conversation

        parsed = parse_conversation(text, history).setup.model_dump()
    except Exception:  # noqa: BLE001  (only for the assumed-field fallback)
        parsed = None
    return answer, parsed


class SetupProblem(Exception):
    """A setup error's text, picklable (pydantic's ValidationError is not)."""


def answer_setup(setup: Any, language: str) -> Any:
    """A panel edit: the answer for ``setup`` (a ``TrainingSetup``)."""
    from bot.assistant import answer_for_setup
    from bot.setup import SetupError

    try:
        return answer_for_setup(setup, language)
    except SetupError as err:
        raise SetupProblem("; ".join(str(p) for p in err.problems)) from None


# ----------------------------------------------------------------------------------------------
# In the server
# ----------------------------------------------------------------------------------------------


class AnswerPool:
    """A fixed set of warm worker processes; ``run(fn, *args)`` blocks the calling thread only."""

    def __init__(self, workers: int):
        self.workers = workers
        self._lock = threading.Lock()
        self._executor: ProcessPoolExecutor | None = None
        self.ready: list[Future] = []

    def start(self, warm: bool = True) -> None:
        """Spawn the workers and start their warm-up (not waited for: the page serves meanwhile;
        early questions queue behind the warm-up)."""
        with self._lock:
            self._executor = ProcessPoolExecutor(
                max_workers=self.workers, mp_context=multiprocessing.get_context("spawn"),
                initializer=_init_worker, initargs=(os.getpid(),))
            self.ready = [self._executor.submit(warm_up) for _ in range(self.workers)] if warm else []

    def pids(self) -> list[int]:
        """The worker processes' ids (for tests and the benchmark)."""
        executor = self._executor
        return sorted(getattr(executor, "_processes", None) or {}) if executor is not None else []

    def run(self, fn, *args):
        """``fn(*args)`` in a worker. A broken pool (a worker died) is restarted and this call is
        answered here instead, so the request still gets its answer."""
        executor = self._executor
        if executor is None:
            return fn(*args)
        try:
            return executor.submit(fn, *args).result()
        except BrokenProcessPool:
            log.error("an answering worker died; restarting the pool, answering this one in-process")
            with self._lock:
                if self._executor is executor:
                    executor.shutdown(wait=False, cancel_futures=True)
                    self._executor = None
            self.start()
            return fn(*args)

    def close(self) -> None:
        with self._lock:
            if self._executor is not None:
                self._executor.shutdown(wait=False, cancel_futures=True)
                self._executor = None


_pool: AnswerPool | None = None


def start(workers: int | None = None, warm: bool = True) -> AnswerPool | None:
    """Start the server's pool (``workers`` default: :func:`default_workers`); None when 0."""
    global _pool
    workers = default_workers() if workers is None else workers
    if workers <= 0:
        return None
    _pool = AnswerPool(workers)
    _pool.start(warm)
    return _pool


def stop() -> None:
    global _pool
    if _pool is not None:
        _pool.close()
        _pool = None


def run(fn, *args):
    """``fn(*args)`` in the pool when the server started one, else right here (tests, scripts)."""
    pool = _pool
    return pool.run(fn, *args) if pool is not None else fn(*args)
