"""The data flow in docs/ARCHITECTURE.md matches the imports: core -> understanding -> evidence ->
decision -> composition -> renderers -> surfaces. ``bot/core`` (the shared contracts) imports only
the reference data its types hold (and the message catalogs' loader, a leaf); no module below the decision layer imports it (or anything above
it); renderers import no calculator; composition looks nothing up (no knowledge, no calculator);
surfaces (``bot/surfaces``) import the pipeline and the tool registry only, never the calculator,
the knowledge layer or the simulator; nothing outside ``bot/surfaces`` imports a surface, and the
surfaces' own packages (gradio, Slack, MCP, LangChain) are imported only there and by the
registry's adapters. Imports are read with ``ast`` (function-level imports count too)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

BOT = Path(__file__).resolve().parents[2] / "bot"

# Below the decision: these never import the decision or anything above it.
BELOW = ["calc", "catalog", "knowledge", "bench", "understand", "core", "parse.py", "evidence.py",
         "capacity_evidence.py", "corpus_evidence.py", "parallel_evidence.py", "strategies.py", "answer", "figures.py", "figure_units.py", "numwords.py", "env.py"]
ABOVE = ("bot.decide", "bot.compose", "bot.assistant", "bot.render", "bot.surfaces", "bot.howto", "bot.tools")
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


# The contracts every layer shares (TrainingSetup/ResolvedSetup, UserError, the language rule) sit at
# the bottom: they may import the catalog's types that ResolvedSetup holds, the environment and the
# leaf number helpers, nothing that builds on them.
# The message catalogs' loader is a leaf too (YAML + Jinja): a problem's sentence is data in both
# languages (bot.core.setup.Problem.worded), not a string in core.
CORE_MAY_IMPORT = ("bot.core", "bot.catalog", "bot.env", "bot.figures", "bot.numwords", "bot.answer.catalog")
# Where a core module still reached above the bottom (strict xfail: the fix flips the mark). None left:
# the kernel defaults moved to bot.catalog.kernel_defaults, the language rule into bot.core.language.
CORE_NOT_YET_BOTTOM: dict[str, str] = {}


def _core_params():
    for path in modules(["core"]):
        name = str(path.relative_to(BOT))
        reason = CORE_NOT_YET_BOTTOM.get(name)
        marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
        yield pytest.param(path, id=name, marks=marks)


@pytest.mark.parametrize("path", list(_core_params()))
def test_core_imports_nothing_above_it(path):
    bad = sorted(m for m in imports(path) if m.startswith("bot.") and not m.startswith(CORE_MAY_IMPORT))
    assert not bad, f"{path.relative_to(BOT)} imports {bad}"


def test_the_contracts_live_in_core():
    """TrainingSetup and ResolvedSetup are defined in bot/core (one home), not re-defined elsewhere."""
    defined = {node.name: str(path.relative_to(BOT)) for path in modules(["."])
               for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
               if isinstance(node, ast.ClassDef) and node.name in ("TrainingSetup", "ResolvedSetup", "UserError")}
    assert set(defined) == {"TrainingSetup", "ResolvedSetup", "UserError"}
    assert all(where.startswith("core/") for where in defined.values()), defined


@pytest.mark.parametrize("path", modules(BELOW), ids=lambda p: str(p.relative_to(BOT)))
def test_nothing_below_the_decision_imports_it(path):
    bad = sorted(m for m in imports(path) if m.startswith(ABOVE))
    assert not bad, f"{path.relative_to(BOT)} imports {bad}"


@pytest.mark.parametrize("path", modules(RENDERERS), ids=lambda p: p.name)
def test_renderers_import_no_calculator(path):
    bad = sorted(m for m in imports(path) if m.startswith(("bot.calc", "bot.evidence", "bot.decide", "bot.core.setup")))
    assert not bad, f"{path.name} imports {bad}"


def test_decision_is_pure():
    """bot.decide reads the evidence only: no calculator, no I/O modules."""
    bad = sorted(m for path in modules(["decide"]) for m in imports(path) if m.startswith(("bot.calc", "bot.knowledge", "bot.bench",
                                                                        "bot.parse", "os", "sqlite3")))
    assert not bad


# Surfaces are adapters over the pipeline: they call ``bot.surfaces.llm.answer``/``bot.ask`` and the tool
# registry, show an ``Answer``, and compute nothing themselves (issue 28).
SURFACES = ["surfaces"]
PIPELINE = ("bot.surfaces.llm", "bot.assistant", "bot.answer", "bot.render", "bot.tools", "bot.env", "bot.fields",
            "bot.strategies", "bot.surfaces.web", "bot.surfaces", "bot.core", "bot.understand.text",
            "bot.surfaces.slack_transport",  # Slack's own HTTP transport (retries, bounded server): part of that surface
            "bot.surfaces.slack_blocks",  # and its Block Kit rendering
            "bot.surfaces.slack_socket")  # and its Socket Mode boundary (the envelope check)
# Where a surface still reaches below the pipeline today; strict: the fix flips the mark.
SURFACES_NOT_YET_THIN: dict[str, str] = {}  # every surface is thin now (issue 28); a new exception needs a reason here


def _surface_params():
    for path in modules(SURFACES):
        name = str(path.relative_to(BOT))
        reason = SURFACES_NOT_YET_THIN.get(name)
        marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
        yield pytest.param(path, id=name, marks=marks)


def _is_pipeline(module: str) -> bool:
    return module == "bot" or module.startswith(tuple(p + "." for p in PIPELINE)) or module in PIPELINE


@pytest.mark.parametrize("path", list(_surface_params()))
def test_surfaces_import_the_pipeline_only(path):
    bad = sorted(m for m in imports(path) if (m == "bot" or m.startswith("bot.")) and not _is_pipeline(m))
    assert not bad, f"{path.relative_to(BOT)} imports {bad}"


# The layers a surface never reaches into: it asks (bot.ask / bot.surfaces.llm.answer) or calls a tool
# of the registry (bot.tools), which computes, searches and simulates for it.
BELOW_THE_SURFACES = ("bot.calc", "bot.knowledge", "bot.bench", "bot.catalog", "bot.decide", "bot.compose",
                      "bot.evidence", "bot.parse")
SURFACE_PACKAGES = ("gradio", "gradio_client", "slack_bolt", "slack_sdk", "mcp", "langchain", "langchain_core",
                    "langchain_openai", "plotly", "matplotlib")


def test_what_a_surface_may_import_admits_no_layer_below_the_registry():
    """The surfaces' allow-list itself never admits the calculator, the knowledge layer, the
    simulator or the decision (so widening it cannot make a surface compute)."""
    assert not [p for p in PIPELINE if p.startswith(BELOW_THE_SURFACES)]
    assert not any(_is_pipeline(m) for m in ("bot.calc", "bot.knowledge.search", "bot.bench.simulate",
                                             "bot.catalog", "bot.decide", "bot.evidence", "bot.parse"))


def test_the_surfaces_live_in_bot_surfaces():
    """Nothing outside bot/surfaces imports a surface, and the surfaces' own packages are imported
    only there and by the registry's two adapters (bot/tools.py make_tools / add_mcp_tools)."""
    outside = [p for p in modules(["."]) if "surfaces" not in p.relative_to(BOT).parts]
    up = sorted({str(p.relative_to(BOT)) for p in outside for m in imports(p) if m.startswith("bot.surfaces")})
    packages = sorted({(str(p.relative_to(BOT)), m) for p in outside if p.name != "tools.py" for m in imports(p)
                       if m.split(".")[0] in SURFACE_PACKAGES})
    assert outside and not up, f"modules outside bot/surfaces import a surface: {up}"
    assert not packages, f"surface packages imported outside bot/surfaces: {packages}"
    assert {p.stem for p in modules(["surfaces"])} >= {"cli", "ask_cli", "webui", "slack_app", "mcp_server", "llm"}


def test_compose_reads_the_evidence_not_the_knowledge_or_the_calculator():
    """Composition assembles structure from the Evidence and the Decision: it looks nothing up."""
    paths = modules(["compose.py", "compose"])
    bad = sorted({m for path in paths for m in imports(path) if m.startswith(("bot.knowledge", "bot.calc"))})
    assert paths and not bad, f"compose imports {bad}"


def test_wording_lives_in_the_catalogs():
    """compose writes no sentence of its own: no Chinese text in bot/compose (the zh wording is in
    bot/answer/messages/zh.yaml), and the answer types and catalog loader import nothing above them."""
    cjk = [(p.name, i + 1) for p in modules(["compose"]) for i, line in enumerate(p.read_text(encoding="utf-8").splitlines())
           if any("\u4e00" <= ch <= "\u9fff" for ch in line) and not line.lstrip().startswith("#")]
    assert not cjk, f"Chinese wording in compose: {cjk[:5]}"
