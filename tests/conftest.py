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


# CI splits the slow tests in four steps by what they need (.ci/run; tests/unit/test_ci.py checks
# that the four selections take every slow test once):
# - ``simulation``: the simulator and torchrun, reading neither the knowledge index nor the page;
#   they run from the start, beside the unit tests, in a data dir of their own.
# - ``noindex``: the other slow tests that read neither the index nor the page (their own servers,
#   children and tmp dirs); they run after the unit tests, in a data dir of their own, while the
#   index is built and the eval gate runs.
# - ``page``: the page's browser suites (one app.py and one Chromium for both), after the eval gate,
#   on a copy of the index (the page's Simulate stores results, which answers cite).
# - the rest read the index: after the eval gate, beside the page.
# A test is named here by its module (every slow test of it) or by module and function.
SIMULATION_MODULES = {
    "test_bench_cli", "test_bench_run", "test_bench_script", "test_bench_simulate", "test_bench_simulate_layout",
    "test_bench_simulate_loss", "test_bench_validate", "test_calc_simulator_options", "test_howto",
    "test_simulate_tp", "test_simulation_children",
}
NOINDEX: dict[str, set[str] | None] = {
    "test_index_generations": None, "test_index_killed_builds": None, "test_page_connections": None,
    "test_retrieval_http": None, "test_retrieval_index": None, "test_catalog": None, "test_cli_errors": None,
    "test_decide": None, "test_decide_alternatives_order": None, "test_decide_observed": None,
    "test_dependencies": None, "test_tools_config": None, "test_understand_properties": None,
    "test_llm": {"test_a_401_echoing_the_key_is_redacted_in_shardwise_ask_stderr"},
    "test_mcp": {"test_simulate_memory_tiny_model", "test_streamable_http_server_on_localhost",
                 "test_stdio_server_fetches_a_hub_id_from_a_fake_hub_config_only",
                 "test_simulate_memory_builds_a_config_with_transformers_like_bench_simulate_config"},
    "test_web_pool": {"test_a_dead_worker_loses_no_answer", "test_jobs_waiting_for_a_busy_worker_go_together",
                      "test_workers_leave_when_the_server_is_killed"},
}
PAGE_MODULES = {"test_page_agrees", "test_webui_live"}
_STEP_MODULES = {"simulation": SIMULATION_MODULES, "noindex": set(NOINDEX), "page": PAGE_MODULES}


def ci_paths(step: str) -> list[str]:
    """The test files holding the ``step`` tests (``simulation``, ``noindex`` or ``page``), for
    .ci/run: a step that names its files collects only those (a whole-suite collection imports
    gradio, torch, chromadb and langchain, ~10 s of CPU for nothing)."""
    root = Path(__file__).resolve().parent
    stems = _STEP_MODULES[step]
    return sorted(str(p.relative_to(root.parent)) for p in root.rglob("test_*.py") if p.stem in stems)


def pytest_collection_modifyitems(config, items):
    for item in items:
        if not item.get_closest_marker("slow"):
            continue
        stem = Path(str(item.fspath)).stem
        if stem in SIMULATION_MODULES:
            item.add_marker(pytest.mark.simulation)
        elif stem in PAGE_MODULES:
            item.add_marker(pytest.mark.page)
        elif stem in NOINDEX and (NOINDEX[stem] is None or item.originalname in NOINDEX[stem]):
            item.add_marker(pytest.mark.noindex)


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
