#!/usr/bin/env bash
# Creates .venv at the repo root and installs shardwise with everything it needs, offline-safe.
# torch goes first and pinned: 2.13.0 is a CPU build on this machine's disk; an unpinned torch
# would pull a multi-GB CUDA build.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q "torch==${SHARDWISE_TORCH_VERSION:-2.13.0}"
.venv/bin/python -m pip install -q -e ".[dev,all]"  # the core, every surface (web, slack, mcp, llm), the test tools
# axe-core (MPL-2.0) for the page's accessibility test, into the git-ignored node_modules/.
if command -v npm >/dev/null 2>&1; then
  npm install --silent --no-save --no-audit --no-fund --prefix . "axe-core@4" >/dev/null 2>&1 \
    || echo "npm install axe-core failed; the accessibility test will skip"
fi
echo "shardwise installed in .venv ($(.venv/bin/python -c 'import torch; print("torch", torch.__version__)'))"
