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
.venv/bin/python -m pip install -q -e ".[dev]"
echo "shardwise installed in .venv ($(.venv/bin/python -c 'import torch; print("torch", torch.__version__)'))"
