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
as :class:`bot.core.setup.SetupError`'s text (pydantic's errors do not pickle), re-raised as
``SetupError`` here.

Jobs are handed out in batches: a dispatcher thread gives each free worker every job waiting at
that moment (at most :data:`MAX_BATCH`). Alone, a job goes out at once, by itself; under load the
jobs that queued while the workers were busy go together, and the worker embeds their questions
in one forward pass before answering them one by one (``bot.tools.prefetch_questions``: about 9 instead
of 17 ms per question at 8). A batch's answers come back together, when its last one is done.

Spawned, not forked: the server already holds torch and Gradio threads. Each worker leaves when
the server process goes away (it watches its parent), so a killed server leaves no orphans. A
worker that dies (killed, out of memory) breaks the pool: the pool is restarted once and that
request is answered in the server's own process instead, so no message is lost.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import pickle
import queue
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
# Jobs one worker takes at once: the batched embedding gains little past 8 (bot.knowledge.embeddings),
# and the batch's first answer waits for its last.
MAX_BATCH = 8


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
    from bot.surfaces.llm import answer as ask
    from bot.surfaces.web.answer_view import plain_markdown

    return plain_markdown(ask(text), notice)


def ask_question(text: str, history: list[str]) -> tuple[Any, dict | None, str | None]:
    """A page question: (the answer every surface gives, the reader's setup or None, the
    framework the user's run uses or None: a panel edit keeps its defaults)."""
    from bot.core.setup import SetupError
    from bot.surfaces.llm import answer as ask

    try:
        answer = ask(text, history=history)
    except SetupError as err:  # said on the page as the panel's errors are
        raise SetupProblem("; ".join(str(p) for p in err.problems)) from None
    from bot.tools import reader_setup

    parsed, framework = reader_setup(text, history)  # only for the assumed-field fallback
    return answer, parsed, framework


def run_batch(jobs: list[tuple[Any, tuple]]) -> list[tuple[bool, Any]]:
    """Several jobs in this worker: their questions embedded together first, then each job on
    its own. Returns ``(True, result)`` or ``(False, exception)`` per job, in order, so one job's
    error is only that job's."""
    questions = [args[0] for fn, args in jobs if fn in (chat_markdown, ask_question) and args]
    if len(questions) > 1:  # (a batch without two questions has nothing to embed together: no index to load)
        from bot.tools import prefetch_questions

        prefetch_questions(questions)
    out: list[tuple[bool, Any]] = []
    for fn, args in jobs:
        try:
            out.append((True, fn(*args)))
        except Exception as err:  # noqa: BLE001  (handed to the caller, who re-raises it)
            out.append((False, _picklable(err)))
    return out


def _picklable(err: Exception) -> Exception:
    try:
        pickle.loads(pickle.dumps(err))
        return err
    except Exception:  # noqa: BLE001
        return RuntimeError(f"{type(err).__name__}: {err}")


class SetupProblem(Exception):
    """A setup error's text, picklable (pydantic's ValidationError is not)."""


def answer_setup(setup: Any, language: str, framework: str | None = None) -> Any:
    """A panel edit: the answer for ``setup`` (a ``TrainingSetup``, or its fields as a dict: the
    page passes the dict and never builds the setup itself) run with ``framework``. A setup that
    cannot be answered (a field's type or range, a missing field) is a :class:`SetupProblem`."""
    from pydantic import ValidationError

    from bot.assistant import answer_for_setup
    from bot.core.setup import SetupError, TrainingSetup

    try:
        if isinstance(setup, dict):
            setup = TrainingSetup(**setup)
        return answer_for_setup(setup, language, framework=framework)
    except ValidationError as err:
        raise SetupProblem("; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in err.errors())) from None
    except SetupError as err:
        raise SetupProblem("; ".join(str(p) for p in err.problems)) from None


# ----------------------------------------------------------------------------------------------
# In the server
# ----------------------------------------------------------------------------------------------


class _Job:
    """One ``fn(*args)`` waiting for a worker, and where its outcome goes."""

    def __init__(self, fn, args: tuple) -> None:
        self.fn, self.args = fn, args
        self.done: Future[Any] = Future()


class AnswerPool:
    """A fixed set of warm worker processes; ``run(fn, *args)`` blocks the calling thread only."""

    def __init__(self, workers: int):
        self.workers = workers
        self._lock = threading.Lock()
        self._executor: ProcessPoolExecutor | None = None
        self.ready: list[Future] = []
        self._waiting: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._free = threading.Semaphore(workers)  # one batch in flight per worker
        self._dispatcher: threading.Thread | None = None
        self.batch_sizes: list[int] = []  # every batch handed out (for tests and the benchmark)
        self._warm = True  # whether start() warmed the workers up: a restart does as the start did

    def start(self, warm: bool = True) -> None:
        """Spawn the workers and start their warm-up (not waited for: the page serves meanwhile;
        early questions queue behind the warm-up)."""
        with self._lock:
            self._warm = warm
            self._executor = ProcessPoolExecutor(
                max_workers=self.workers, mp_context=multiprocessing.get_context("spawn"),
                initializer=_init_worker, initargs=(os.getpid(),))
            self.ready = [self._executor.submit(warm_up) for _ in range(self.workers)] if warm else []
            if self._dispatcher is None or not self._dispatcher.is_alive():
                self._dispatcher = threading.Thread(target=self._dispatch, daemon=True, name="answer-dispatch")
                self._dispatcher.start()

    def pids(self) -> list[int]:
        """The worker processes' ids (for tests and the benchmark)."""
        executor = self._executor
        return sorted(getattr(executor, "_processes", None) or {}) if executor is not None else []

    def run(self, fn, *args):
        """``fn(*args)`` in a worker. A broken pool (a worker died) is restarted and the jobs it
        held are answered here instead, so every request still gets its answer."""
        if self._executor is None:
            return fn(*args)
        job = _Job(fn, args)
        self._waiting.put(job)
        return job.done.result()

    # -- the dispatcher thread -----------------------------------------------------------------

    def _dispatch(self) -> None:
        while True:
            job = self._waiting.get()
            if job is None:  # close()
                return
            self._free.acquire()  # wait for a free worker; jobs meanwhile pile up in the queue
            batch = [job]
            while len(batch) < MAX_BATCH:
                try:
                    more = self._waiting.get_nowait()
                except queue.Empty:
                    break
                if more is None:
                    self._waiting.put(None)  # seen after this batch is out
                    break
                batch.append(more)
            self.batch_sizes.append(len(batch))
            self._hand_out(batch)

    def _hand_out(self, batch: list[_Job]) -> None:
        executor = self._executor
        try:
            if executor is None:
                raise BrokenProcessPool("the pool is closed")
            sent = executor.submit(run_batch, [(j.fn, j.args) for j in batch])
        except (BrokenProcessPool, RuntimeError) as err:  # RuntimeError: submit after shutdown
            self._free.release()
            threading.Thread(target=self._answer_here, args=(batch, executor, err), daemon=True).start()
            return
        sent.add_done_callback(lambda f: self._finished(f, batch, executor))

    def _finished(self, sent: Future, batch: list[_Job], executor) -> None:
        self._free.release()
        try:
            outcomes = sent.result()
        except BaseException as err:  # noqa: BLE001  (a dead worker: BrokenProcessPool)
            # Not on this (the executor's) thread: answering here would stall its bookkeeping.
            threading.Thread(target=self._answer_here, args=(batch, executor, err), daemon=True).start()
            return
        for job, (ok, value) in zip(batch, outcomes, strict=True):
            if ok:
                job.done.set_result(value)
            else:
                job.done.set_exception(value)

    def _answer_here(self, batch: list[_Job], executor, err: BaseException) -> None:
        if isinstance(err, BrokenProcessPool) and executor is not None:
            log.error("an answering worker died; restarting the pool, answering its %d job(s) in-process",
                      len(batch))
            with self._lock:
                restart = self._executor is executor
                if restart:
                    executor.shutdown(wait=False, cancel_futures=True)
                    self._executor = None
            if restart:
                self.start(self._warm)
        for job in batch:
            try:
                job.done.set_result(job.fn(*job.args))
            except Exception as job_err:  # noqa: BLE001
                job.done.set_exception(job_err)

    def close(self) -> None:
        with self._lock:
            if self._executor is not None:
                self._executor.shutdown(wait=False, cancel_futures=True)
                self._executor = None
        self._waiting.put(None)


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
