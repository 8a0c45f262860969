"""The benchmark results store: one SQLite file in the data dir; every row is citable by its id.

A row is one result: a simulation (``kind="simulate"``), one strategy of a real benchmark run on
this machine (``"run"``), or a result file a user imported from their cluster (``"import"``).
Rows carry the config and its hash (identical configs are served from the store), the hardware,
the torch version, timestamps, the figures and a status. Only ``status="ok"`` rows are found by
the ``find_*`` methods; a failed run is kept for ``bench show`` but never served as a result.
"""

from __future__ import annotations

import builtins
import hashlib
import json
import secrets
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from bot.env import data_dir

_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    id            TEXT PRIMARY KEY,
    kind          TEXT NOT NULL,
    status        TEXT NOT NULL,
    model         TEXT,
    strategy      TEXT,
    config        TEXT NOT NULL,
    config_hash   TEXT NOT NULL,
    hardware      TEXT NOT NULL,
    torch_version TEXT,
    started_at    REAL,
    finished_at   REAL,
    figures       TEXT NOT NULL,
    error         TEXT,
    source        TEXT
);
CREATE INDEX IF NOT EXISTS runs_hash ON runs (kind, config_hash, status);
CREATE INDEX IF NOT EXISTS runs_model ON runs (model, strategy, status);
"""
KINDS = ("simulate", "run", "import")
# Deterministic results: one ok row per config hash (a repeat returns the stored id). A real run
# measured again (``bench run --force``) is a new measurement and gets its own row.
UPSERT_KINDS = ("simulate", "import")
STATUSES = ("ok", "failed")


def config_hash(config: dict) -> str:
    """SHA-256 of the config's canonical JSON (sorted keys)."""
    return hashlib.sha256(json.dumps(config, sort_keys=True).encode()).hexdigest()


@dataclass
class StoredRun:
    id: str
    kind: str
    status: str
    model: str | None
    strategy: str | None
    config: dict
    config_hash: str
    hardware: dict
    torch_version: str | None
    started_at: float | None
    finished_at: float | None
    figures: dict = field(default_factory=dict)
    error: str | None = None
    source: str | None = None

    def summary(self) -> str:
        """One line a citation can quote: what ran and its headline figure."""
        c, f = self.config, self.figures
        what = f"{self.kind} {self.model or '?'} {self.strategy or '?'}"
        if "gpu_count" in c:
            what += f", {c['gpu_count']} GPUs"
        if "nproc" in c:
            what += f", {c['nproc']} processes ({c.get('device', 'cpu')})"
        if "seq_len" in c:
            what += f", seq {c['seq_len']} x batch {c.get('micro_batch', 1)}"
        if c.get("precision"):
            what += f", {c['precision']}"
        if c.get("activation_checkpointing"):
            what += ", activation checkpointing"
        parts = []
        if "peak_gib" in f:
            parts.append(f"peak {f['peak_gib']:.2f} GiB per GPU" if self.kind == "simulate"
                         else f"peak {f['peak_gib']:.3f} GiB per rank")
        if "step_seconds" in f:
            parts.append(f"{f['step_seconds']:.3f} s/step")
        if "tokens_per_s" in f:
            parts.append(f"{f['tokens_per_s']:.0f} tokens/s")
        status = "" if self.status == "ok" else f" [{self.status}: {self.error or ''}]"
        torch_v = f" (torch {self.torch_version})" if self.torch_version else ""
        return f"{what}: {', '.join(parts) or 'no figures'}{torch_v}{status}"

    def to_dict(self) -> dict:
        return dict(self.__dict__)


class ResultStore:
    """SQLite results; ``path`` defaults to ``bot.env.data_dir() / "bench.sqlite"``."""

    def __init__(self, path: str | Path | None = None):
        self.path = Path(path) if path else data_dir() / "bench.sqlite"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._connect() as db:
            db.executescript(_SCHEMA)

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        # One short connection per call: safe from any thread (Gradio, Slack handlers).
        db = sqlite3.connect(self.path, timeout=30)
        db.row_factory = sqlite3.Row
        try:
            with db:
                yield db
        finally:
            db.close()

    def add(self, kind: str, config: dict, figures: dict, *, status: str = "ok",
            hardware: dict | None = None, torch_version: str | None = None,
            started_at: float | None = None, finished_at: float | None = None,
            error: str | None = None, source: str | None = None, hash_: str | None = None) -> str:
        """Store one result; returns its new id ``run-<12 hex>``."""
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
        if status not in STATUSES:
            raise ValueError(f"status must be one of {STATUSES}, got {status!r}")
        run_id = "run-" + secrets.token_hex(6)
        now = time.time()
        hash_ = hash_ or config_hash(config)
        row = (run_id, kind, status, config.get("model"), config.get("strategy"),
               json.dumps(config, sort_keys=True), hash_, json.dumps(hardware or {}, sort_keys=True),
               torch_version, started_at or now, finished_at or now, json.dumps(figures, sort_keys=True),
               error, source)
        if kind in UPSERT_KINDS and status == "ok":
            return self._insert_once(row, kind, hash_)
        with self._connect() as db:
            db.execute("INSERT INTO runs VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)", row)
        return run_id

    def _insert_once(self, row: tuple, kind: str, hash_: str) -> str:
        """Insert unless an ok row of ``kind`` with this hash exists; returns the row's id. Two
        processes simulating the same config at once store one row: BEGIN IMMEDIATE takes
        SQLite's write lock before the check, so check and insert are one step."""
        db = sqlite3.connect(self.path, timeout=30, isolation_level=None)
        try:
            db.execute("BEGIN IMMEDIATE")
            try:
                found = db.execute("SELECT id FROM runs WHERE kind = ? AND config_hash = ? AND status = 'ok' "
                                   "ORDER BY finished_at LIMIT 1", (kind, hash_)).fetchone()
                if found is None:
                    db.execute("INSERT INTO runs VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)", row)
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
        finally:
            db.close()
        return found[0] if found is not None else row[0]

    def add_simulation(self, result) -> str:
        """Store a ``SimResult``; the hash covers config, torch version and simulate's method."""
        from dataclasses import asdict

        from bot.bench.simulate import SIM_METHOD_VERSION

        data = result.to_dict()
        figures = {k: v for k, v in data.items() if k not in ("config", "torch_version", "run_id")}
        config = asdict(result.config)
        finished = time.time()
        return self.add("simulate", config, figures, torch_version=result.torch_version,
                        hardware={"simulated": True, "method": SIM_METHOD_VERSION},
                        started_at=finished - result.seconds, finished_at=finished,
                        hash_=result.config.key(result.torch_version))

    def get(self, run_id: str) -> StoredRun | None:
        with self._connect() as db:
            row = db.execute("SELECT * FROM runs WHERE id = ?", (run_id,)).fetchone()
        return _row(row) if row else None

    def list(self, kind: str | None = None, limit: int = 50) -> list[StoredRun]:
        """Newest first."""
        query, args = "SELECT * FROM runs", []
        if kind:
            query, args = query + " WHERE kind = ?", [kind]
        query += " ORDER BY finished_at DESC LIMIT ?"
        with self._connect() as db:
            return [_row(r) for r in db.execute(query, [*args, int(limit)])]

    def find_by_hash(self, kind: str, hash_: str) -> StoredRun | None:
        """The newest ok result of ``kind`` with this config hash."""
        with self._connect() as db:
            row = db.execute(
                "SELECT * FROM runs WHERE kind = ? AND config_hash = ? AND status = 'ok' "
                "ORDER BY finished_at DESC LIMIT 1", (kind, hash_)).fetchone()
        return _row(row) if row else None

    def find_simulation(self, config):
        """The stored ``SimResult`` (with ``run_id`` set) for this ``SimConfig``, or None."""
        import torch

        from bot.bench.simulate import SimResult

        run = self.find_by_hash("simulate", config.key(torch.__version__))
        if run is None:
            return None
        return SimResult.from_dict({**run.figures, "config": run.config,
                                    "torch_version": run.torch_version, "run_id": run.id})

    def find_runs(self, model: str | None = None, strategy: str | None = None,
                  kind: str | None = None) -> builtins.list[StoredRun]:  # (``list`` is a method here)
        """Ok results matching the filters (model by catalog name), newest first."""
        query, args = "SELECT * FROM runs WHERE status = 'ok'", []
        for column, value in (("model", model), ("strategy", strategy), ("kind", kind)):
            if value is not None:
                query += f" AND {column} = ?"
                args.append(value)
        with self._connect() as db:
            return [_row(r) for r in db.execute(query + " ORDER BY finished_at DESC", args)]


def _row(row: sqlite3.Row) -> StoredRun:
    return StoredRun(
        id=row["id"], kind=row["kind"], status=row["status"], model=row["model"],
        strategy=row["strategy"], config=json.loads(row["config"]), config_hash=row["config_hash"],
        hardware=json.loads(row["hardware"]), torch_version=row["torch_version"],
        started_at=row["started_at"], finished_at=row["finished_at"],
        figures=json.loads(row["figures"]), error=row["error"], source=row["source"])
