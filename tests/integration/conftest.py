"""Everything under tests/integration is ``slow``: real processes, browsers, models and stores.
The unit run (``pytest -m "not slow"``) leaves it out; CI runs it as its own step (``-m slow``)."""

from __future__ import annotations

from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    for item in items:
        if HERE in Path(str(item.fspath)).resolve().parents:
            item.add_marker(pytest.mark.slow)
