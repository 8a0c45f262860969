"""The core installs and runs without the surfaces' packages: ``bot.ask``, the calculator and the
knowledge search import none of the ``[web]``, ``[slack]``, ``[mcp]`` or ``[llm]`` extras (they are
imported where their surface starts), and the packages dropped from pyproject (issue 28) are not
imported anywhere. The fast run's fakes keep the embedding model and chromadb out too, and torch
(which only the simulator and the real embedding model need)."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.conftest import FAKE_KNOWLEDGE_ENV

ROOT = Path(__file__).resolve().parents[2]
EXTRAS_MODULES = ("gradio", "gradio_client", "slack_bolt", "slack_sdk", "mcp", "langchain", "langchain_openai",
                  "matplotlib", "plotly")
DROPPED = ("langchain_community", "langchain_chroma", "langchain_huggingface")

_CHILD = """
import importlib.abc, sys
BLOCKED = set(sys.argv[1].split(","))
tried = []

class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            tried.append(name)  # recorded: a caller might catch the ImportError and degrade
            raise ImportError(f"{name} is an optional extra")
        return None

sys.meta_path.insert(0, Block())
from click.testing import CliRunner
from bot import ask
from bot.surfaces.cli import main

answer = ask("DDP or FSDP for Llama-2-7B full fine-tuning on 8x A100 40GB?")
assert answer.status != "error" and answer.recommendation.strategy.startswith("fsdp"), answer.recommendation
assert any(c.kind in ("forum", "doc") for c in answer.citations), answer.citations
calc = CliRunner().invoke(main, ["calc", "--model", "Llama-2-7B", "--gpu", "A100 40GB", "--gpus", "8", "--json"])
assert calc.exit_code == 0, calc.output
assert CliRunner().invoke(main, ["--help"]).exit_code == 0
loaded = sorted(m for m in ("chromadb", "sentence_transformers", "torch") if m in sys.modules)
print("tried:", ",".join(sorted(set(tried))))
print("heavy:", ",".join(loaded))
"""


@pytest.mark.slow  # three subprocesses (~11 s): the unit run stays in minutes (issue 28)
def test_ask_calc_and_search_run_without_the_optional_extras():
    # The fakes of tests/conftest.py (hashed embedding, in-memory store), named here: a slow test runs
    # with the real components in its environment, and the child would load chromadb and the model.
    env = {**os.environ, **FAKE_KNOWLEDGE_ENV}
    done = subprocess.run([sys.executable, "-c", _CHILD, ",".join(EXTRAS_MODULES + DROPPED)], env=env,
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    # no extra; no model, no chromadb, and no torch (an answer looks its stored simulations up by
    # torch's version string, bot.bench.store.torch_version, without its 2-10 s import)
    assert [line.strip() for line in done.stdout.strip().splitlines()[-2:]] == ["tried:", "heavy:"]


def test_the_dropped_packages_are_not_imported_and_not_declared():
    found = []
    for path in [*(ROOT / "bot").rglob("*.py"), *(ROOT / "evals").rglob("*.py"), ROOT / "app.py"]:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module] if isinstance(node, ast.ImportFrom) and node.module else []
            found += [f"{path.relative_to(ROOT)}: {n}" for n in names if n.split(".")[0] in DROPPED]
    assert not found
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    declared = " ".join(project["dependencies"] + sum(project["optional-dependencies"].values(), []))
    assert not [name for name in DROPPED if name.replace("_", "-") in declared]


def test_every_surface_has_an_extra_and_the_install_script_installs_them_all():
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    assert {"web", "slack", "mcp", "llm"} <= set(extras)
    assert set(extras["all"][0].split("[")[1].rstrip("]").split(",")) == {"web", "slack", "mcp", "llm"}
    install = (ROOT / "scripts" / "install.sh").read_text(encoding="utf-8")
    assert '-e ".[dev,all]"' in install
