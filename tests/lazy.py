"""``lazy_module(name)``: a module imported on its first attribute access, so a test module can name
a heavy one (gradio ~10 s, mcp ~3 s) at its top without paying for it at collection: ``pytest
--collect-only``, ``-k`` and single-file runs skip it unless a selected test touches it. Built on
the standard library's ``importlib.util.LazyLoader``; the module is registered in ``sys.modules``
and on its parent package, so ``monkeypatch.setattr`` and later imports see the same object."""

from __future__ import annotations

import importlib
import importlib.util
import sys
from types import ModuleType


def lazy_module(name: str) -> ModuleType:
    if name in sys.modules:
        return sys.modules[name]
    parent, _, child = name.rpartition(".")
    parent_module = importlib.import_module(parent) if parent else None
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None:
        raise ModuleNotFoundError(f"no module named {name!r}", name=name)
    spec.loader = importlib.util.LazyLoader(spec.loader)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    if parent_module is not None:
        setattr(parent_module, child, module)
    return module
