"""The data flow in docs/ARCHITECTURE.md matches the imports: understanding -> evidence ->
decision -> composition -> renderers. No module below the decision layer imports it (or anything
above it), and renderers import no calculator. Imports are read with ``ast`` (function-level
imports count too)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

BOT = Path(__file__).resolve().parents[2] / "bot"

# Below the decision: these never import the decision or anything above it.
BELOW = ["calc", "catalog", "knowledge", "bench", "understand", "setup.py", "parse.py", "evidence.py",
         "strategies.py", "answer.py", "figures.py", "numwords.py", "env.py"]
ABOVE = ("bot.decide", "bot.advise", "bot.compose", "bot.assistant", "bot.render", "bot.llm", "bot.howto")
RENDERERS = ["render.py", "howto.py"]


def modules(names: list[str]) -> list[Path]:
    out: list[Path] = []
    for name in names:
        path = BOT / name
        out += sorted(path.rglob("*.py")) if path.is_dir() else [path] if path.exists() else []
    return out


def imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


@pytest.mark.parametrize("path", modules(BELOW), ids=lambda p: str(p.relative_to(BOT)))
def test_nothing_below_the_decision_imports_it(path):
    bad = sorted(m for m in imports(path) if m.startswith(ABOVE))
    assert not bad, f"{path.relative_to(BOT)} imports {bad}"


@pytest.mark.parametrize("path", modules(RENDERERS), ids=lambda p: p.name)
def test_renderers_import_no_calculator(path):
    bad = sorted(m for m in imports(path) if m.startswith(("bot.calc", "bot.evidence", "bot.decide", "bot.setup")))
    assert not bad, f"{path.name} imports {bad}"


def test_decision_is_pure():
    """bot.decide reads the evidence only: no calculator, no I/O modules."""
    bad = sorted(m for m in imports(BOT / "decide.py") if m.startswith(("bot.calc", "bot.knowledge", "bot.bench",
                                                                        "bot.parse", "os", "sqlite3")))
    assert not bad
