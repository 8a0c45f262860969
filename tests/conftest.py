"""Shared test setup: an isolated data dir per test session, offline switches, one torch thread,
and the fakes every fast test answers with.

The data dir (index, benchmark store) is created once per session under pytest's temp root, or
taken from SHARDWISE_TEST_DATA_DIR so CI can build the index once and reuse it across steps.

Layout: ``tests/unit/`` is fast and runs on fakes; ``tests/integration/`` runs the real things
(torchrun, simulations of big models, the app and its browser, the embedding model and chromadb)
and is marked ``slow`` by its own conftest. ``pytest -m "not slow"`` is the unit run,
``pytest -m slow`` the integration run.

The fakes: every test not marked ``slow`` searches the knowledge with the hashed bag-of-words
embedding and the in-memory vector store (``SHARDWISE_EMBEDDING_MODEL=hashed-bag-of-words``,
``SHARDWISE_VECTOR_STORE=memory``; see ``bot/knowledge/embeddings.py`` and ``memory_store.py``),
set before the test's fixtures (module-scoped ones too), as simonw/llm's tests embed with
``EmbedDemo``: no sentence-transformers model, no chromadb (a fast-only run that loads either
fails). Slow tests keep the real ones (the users' defaults).
"""

from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

INTEGRATION = Path(__file__).resolve().parent / "integration"

if os.environ.get("SHARDWISE_TEST_DATA_DIR"):
    os.environ["SHARDWISE_DATA_DIR"] = os.environ["SHARDWISE_TEST_DATA_DIR"]
else:
    _session_dir = tempfile.mkdtemp(prefix="shardwise-test-")
    os.environ["SHARDWISE_DATA_DIR"] = _session_dir
    atexit.register(shutil.rmtree, _session_dir, ignore_errors=True)

# A message whose figure is missing raises instead of being dropped (bot.answer.catalog): a test
# that reaches such a sentence fails.
os.environ.setdefault("SHARDWISE_STRICT_MESSAGES", "1")

import bot  # noqa: E402,F401  (sets offline env vars)


def _one_torch_thread() -> None:
    """One torch thread (two cores, several processes: oversubscription slows everything), set
    once torch is imported, by the code under test, not here: a run that never needs torch does
    not pay its ~5 s import."""
    torch = sys.modules.get("torch")
    if torch is not None and getattr(torch, "set_num_threads", None) and torch.get_num_threads() != 1:
        torch.set_num_threads(1)


def pytest_collection_finish(session):
    _one_torch_thread()  # test modules that import torch (or the simulator) at their top


def pytest_ignore_collect(collection_path, config):
    """The unit run (``-m "not slow"``) does not even import tests/integration (every test there is
    slow; its modules import chromadb, Gradio and the like at the top)."""
    if config.getoption("markexpr", "").strip() == "not slow":
        path = Path(collection_path).resolve()
        if path == INTEGRATION or INTEGRATION in path.parents:
            return True
    return None


# Slow tests that run the simulator or torchrun and read neither the knowledge index nor the page:
# marked ``simulation`` so that CI can run them beside the unit step and the eval gate (.ci/run),
# while the rest of the integration tests wait for the index.
SIMULATION_MODULES = {
    "test_bench_cli", "test_bench_run", "test_bench_script", "test_bench_simulate", "test_bench_simulate_layout",
    "test_bench_simulate_loss", "test_bench_validate", "test_calc_simulator_options", "test_howto",
    "test_simulate_tp", "test_simulation_children",
}


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.get_closest_marker("slow") and Path(str(item.fspath)).stem in SIMULATION_MODULES:
            item.add_marker(pytest.mark.simulation)


FAKE_KNOWLEDGE_ENV = {"SHARDWISE_EMBEDDING_MODEL": "hashed-bag-of-words", "SHARDWISE_VECTOR_STORE": "memory"}
_OWN_ENV = {name: os.environ.get(name) for name in FAKE_KNOWLEDGE_ENV}  # the caller's, for slow tests
_knowledge_mode: list[bool] = []  # whether the last test ran on the fakes (caches are per mode)


def _use_knowledge(fake: bool) -> None:
    """Fakes for fast tests, the caller's settings (by default the real model and chromadb) for
    slow ones. Answers cached under one mode must not serve the other (a run of unit and
    integration tests in one process): they are forgotten when the mode changes."""
    for name, value in (FAKE_KNOWLEDGE_ENV if fake else _OWN_ENV).items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
    if _knowledge_mode and _knowledge_mode[-1] == fake:
        return
    if _knowledge_mode:
        from bot.knowledge import answering, search

        answering.clear_caches()
        search.reset()
    _knowledge_mode[:] = [fake]


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    # A hook, not a fixture: module-scoped fixtures (an answer shared by a file's tests) are set up
    # before any function-scoped fixture, and must see the fakes too.
    _use_knowledge(item.get_closest_marker("slow") is None)
    _one_torch_thread()  # torch first imported by an earlier test


@pytest.fixture()
def knowledge_backend(request):
    """Which knowledge components this test runs on: "fake" or "real"."""
    return "real" if request.node.get_closest_marker("slow") else "fake"


HEAVY_MODULES = ("chromadb", "sentence_transformers")


def pytest_sessionfinish(session, exitstatus):
    """A run of fast tests only that loaded the embedding model's library or chromadb fails, naming
    them: a unit test reached the real components (mark it slow, or use the fakes)."""
    loaded = [m for m in HEAVY_MODULES if m in sys.modules]
    if not loaded or not session.items or any(i.get_closest_marker("slow") for i in session.items):
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.ensure_newline()
        reporter.write_line(f"unit run loaded {', '.join(loaded)}: fast tests must use the fakes "
                            "(tests/conftest.py) or be marked slow", red=True)
    if exitstatus == 0:
        session.exitstatus = 1
