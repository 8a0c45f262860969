"""The page's answering processes (``bot.surfaces.web.pool``): the same answers as in-process, a setup
error that crosses the process boundary, a dead worker that loses no answer, no orphans when the
server is killed, and Gradio's per-session config unchanged by ``lighten_sessions``."""

from __future__ import annotations

import os
import pickle
import signal
import subprocess
import sys
import time

import pytest

from bot.core.setup import TrainingSetup
from bot.surfaces.web import pool

QUESTION = "DDP or FSDP for Mistral-7B on 4x A100 40GB with micro-batch 2?"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is gone for our purposes
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_default_workers_reads_the_setting(monkeypatch):
    monkeypatch.setenv(pool.WORKERS_ENV, "0")
    assert pool.default_workers() == 0
    monkeypatch.setenv(pool.WORKERS_ENV, "3")
    assert pool.default_workers() == 3
    monkeypatch.setenv(pool.WORKERS_ENV, "many")
    assert 1 <= pool.default_workers() <= pool.MAX_DEFAULT_WORKERS
    monkeypatch.delenv(pool.WORKERS_ENV)
    assert 1 <= pool.default_workers() <= pool.MAX_DEFAULT_WORKERS


def test_without_a_pool_jobs_run_here():
    assert pool._pool is None
    assert pool.run(os.getpid) == os.getpid()


@pytest.mark.slow
def test_a_worker_gives_the_same_answers_and_setup_errors():
    answer_pool = pool.AnswerPool(1)
    answer_pool.start(warm=False)
    try:
        assert answer_pool.run(pool.chat_markdown, QUESTION) == pool.chat_markdown(QUESTION)
        [worker] = answer_pool.pids()
        assert worker != os.getpid()
        answer, parsed, framework = answer_pool.run(pool.ask_question, QUESTION, [])
        assert answer.setup["model"] == "Mistral-7B" and parsed["gpu_count"] == 4 and framework is None
        setup = TrainingSetup(model="GPT-2 XL", gpu="RTX 4090 24GB", gpu_count=4)
        assert answer_pool.run(pool.answer_setup, setup, "en").setup["model"] == "GPT-2 XL"
        assert answer_pool.run(pool.answer_setup, setup, "en").model_dump() == pool.answer_setup(setup, "en").model_dump()
    finally:
        answer_pool.close()


def test_a_setup_problem_crosses_processes_and_is_shown(monkeypatch):
    problem = pickle.loads(pickle.dumps(pool.SetupProblem("gpu_count: 3 GPUs do not split evenly over 2 nodes")))
    assert isinstance(problem, pool.SetupProblem)

    from bot.surfaces import webui
    from bot.surfaces.web.conversation import Conversation, Exchange

    def refuse(fn, *args):
        raise problem

    monkeypatch.setattr(pool, "run", refuse)
    conv = Conversation()
    ex = Exchange(kind="edit", user_html="", payload={"setup": {"gpu_count": 3, "nodes": 2}, "language": "en"})
    assert webui.run_exchange(conv, ex) is None
    assert "The setup has invalid values: gpu_count: 3 GPUs do not split evenly" in ex.answer_html


@pytest.mark.slow
def test_a_dead_worker_loses_no_answer():
    answer_pool = pool.AnswerPool(1)
    answer_pool.start(warm=False)
    try:
        first = answer_pool.run(os.getpid)
        os.kill(first, signal.SIGKILL)
        time.sleep(0.5)
        # This call finds the pool broken: it is answered here, and the pool starts afresh.
        assert answer_pool.run(os.getpid) in (os.getpid(), *answer_pool.pids())
        again = answer_pool.run(os.getpid)
        assert again not in (first, os.getpid()) and _alive(again)
        assert answer_pool.ready == []  # restarted as it was started: not warmed up
    finally:
        answer_pool.close()


@pytest.mark.slow
def test_workers_leave_when_the_server_is_killed():
    script = ("import sys, time\nfrom bot.surfaces.web import pool\n"
              "p = pool.start(2, warm=False)\n[p.run(time.sleep, 0.2) for _ in range(4)]\n"
              "print(*p.pids(), flush=True)\ntime.sleep(120)\n")
    server = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        workers = [int(p) for p in server.stdout.readline().split()]
        assert workers and all(_alive(p) for p in workers)
        server.send_signal(signal.SIGKILL)
        server.wait(10)
        deadline = time.monotonic() + 30  # they look once a second; a loaded CI machine is slower
        while any(_alive(p) for p in workers) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not [p for p in workers if _alive(p)]
    finally:
        server.kill()


def test_lighter_sessions_keep_the_same_config():
    from gradio.state_holder import SessionState

    from bot.surfaces import webui

    demo = webui.build_demo()
    before = SessionState(demo).config_values
    webui.lighten_sessions(demo)
    after = SessionState(demo).config_values
    assert after == before
    # Each session gets its own copy of the fixed schemas.
    upload = next(k for k, b in demo.blocks.items() if type(b).__name__ == "UploadButton")
    assert SessionState(demo).config_values[upload]["api_info"] is not after[upload]["api_info"]
    assert demo._queue.ANAYLTICS_CACHE_FREQUENCY > 10**9
    assert demo._queue.sleep_when_free == webui.QUEUE_POLL_SECONDS


def _slow_echo(value, seconds=0.0):
    time.sleep(seconds)
    if value == "boom":
        raise ValueError("boom")
    return value, os.getpid()


def test_run_batch_keeps_order_and_each_jobs_own_error(monkeypatch):
    from bot import tools

    prefetched = []
    monkeypatch.setattr(tools, "prefetch_questions", prefetched.append)
    out = pool.run_batch([(_slow_echo, ("a",)), (_slow_echo, ("boom",)), (_slow_echo, ("c",))])
    assert [ok for ok, _ in out] == [True, False, True]
    assert out[0][1][0] == "a" and out[2][1][0] == "c"
    assert isinstance(out[1][1], ValueError)
    assert prefetched == []  # no question among them: nothing to embed, no index loaded for it
    monkeypatch.setattr(pool, "chat_markdown", lambda text: "md " + text)
    monkeypatch.setattr(pool, "ask_question", lambda text, history: "answer " + text)
    out = pool.run_batch([(pool.chat_markdown, ("q1",)), (_slow_echo, ("a",)), (pool.ask_question, ("q2", []))])
    assert [value for _, value in out][::2] == ["md q1", "answer q2"]
    assert prefetched == [["q1", "q2"]]  # two questions: embedded together first


@pytest.mark.slow
def test_jobs_waiting_for_a_busy_worker_go_together():
    from concurrent.futures import ThreadPoolExecutor

    answer_pool = pool.AnswerPool(1)
    answer_pool.start(warm=False)
    try:
        answer_pool.run(_slow_echo, "warm")  # the worker is up
        answer_pool.batch_sizes.clear()
        with ThreadPoolExecutor(6) as clients:
            first = clients.submit(answer_pool.run, _slow_echo, "first", 1.0)
            time.sleep(0.3)  # the worker is busy with the first job while five more arrive
            rest = [clients.submit(answer_pool.run, _slow_echo, v) for v in ("b", "boom", "d", "e", "f")]
            assert first.result(30)[0] == "first"
            assert [r.result(30)[0] for r in rest if r.exception() is None] == ["b", "d", "e", "f"]
            assert isinstance(rest[1].exception(), ValueError)  # only its own job fails
        assert answer_pool.batch_sizes == [1, 5]
        assert {r.result(30)[1] for r in rest if r.exception() is None} == set(answer_pool.pids())
    finally:
        answer_pool.close()
