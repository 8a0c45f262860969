"""Shared test setup: an isolated data dir per test session, offline switches, one torch thread.

The data dir (index, benchmark store) is created once per session under pytest's temp root, or
taken from SHARDWISE_TEST_DATA_DIR so CI can build the index once and reuse it across steps.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile

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

try:
    import torch  # noqa: E402

    torch.set_num_threads(1)  # two cores, several processes: oversubscription slows everything
except ImportError:  # pragma: no cover
    pass
