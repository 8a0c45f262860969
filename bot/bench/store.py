"""The benchmark results store: one SQLite file in the data dir; every row is citable by its id.

A row is one result: a simulation (``kind="simulate"``), one strategy of a real benchmark run on
this machine (``"run"``), or a result file a user imported from their cluster (``"import"``).
Rows carry the config and its hash (identical configs are served from the store), the hardware,
the torch version, timestamps, the figures and a status. Only ``status="ok"`` rows are found by
the ``find_*`` methods; a failed run is kept for ``bench show`` but never served as a result.

A damaged file (truncated, overwritten, emptied to 0 bytes; SQLite's SQLITE_CORRUPT/NOTADB) is
found when the store opens or on any later read or write: it is moved aside to
``bench.sqlite.damaged-<UTC time>`` (with its journal), a new empty store takes its place, and
``damage_notices()`` says what happened so the CLI and answers can tell the user. Nothing raises.
"""

from __future__ import annotations

import builtins
import hashlib
import importlib.metadata
import json
import logging
import secrets
import sqlite3
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from bot.env import data_dir

log = logging.getLogger("shardwise.bench.store")

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


# ---------------------------------------------------------------------------------------------
# Damage: detect, move aside, say so (https://www.sqlite.org/rescode.html: 11 CORRUPT, 26 NOTADB)
_DAMAGE_CODES = (11, 26)
NEW_FILE_SECONDS = 10.0  # a 0-byte file younger than this is a store another process is creating
_checked: dict[tuple[str, int, int], bool] = {}  # (path, size, mtime_ns) already found sound
_notices: list[dict[str, str]] = []  # what this process moved aside, for damage_notices()
_lock = threading.Lock()


def is_damage(err: BaseException) -> bool:
    """True for SQLite's "file is damaged" errors (not for a lock, a full disk or a missing table)."""
    code = getattr(err, "sqlite_errorcode", None)
    if code is not None:
        return (code & 0xFF) in _DAMAGE_CODES
    text = str(err).lower()
    return "malformed" in text or "not a database" in text


def _damage(path: Path) -> str | None:
    """Why the file at ``path`` is not a usable store, in words; None when it is (or is absent)."""
    try:
        stat = path.stat()
    except FileNotFoundError:
        return None
    if stat.st_size == 0:  # SQLite would treat it as a new empty store: every stored run gone, silently
        # ...unless another process created it a moment ago and is writing its schema now
        if time.time() - stat.st_mtime < NEW_FILE_SECONDS:
            return None
        return "the file is empty (0 bytes)"
    key = (str(path), stat.st_size, stat.st_mtime_ns)
    if _checked.get(key):
        return None
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)
        try:
            verdict = db.execute("PRAGMA quick_check").fetchone()[0]
            if verdict != "ok":
                return f"integrity check failed: {' '.join(str(verdict).split())[:120]}"
            if db.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name='runs'").fetchone():
                db.execute("SELECT COUNT(*), MAX(finished_at) FROM runs").fetchone()
        finally:
            db.close()
    except sqlite3.DatabaseError as err:
        if not is_damage(err):
            return None  # locked, unreadable for now: not a reason to move anything
        return str(err)
    _checked[key] = True
    return None


def _move_aside(path: Path, reason: str) -> Path | None:
    """Rename the damaged file (and its journal) to ``<name>.damaged-<UTC time>``; None when
    another process did it first."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    target = path.with_name(f"{path.name}.damaged-{stamp}")
    n = 1
    while target.exists():
        n += 1
        target = path.with_name(f"{path.name}.damaged-{stamp}-{n}")
    try:
        path.rename(target)
    except FileNotFoundError:
        return None
    for suffix in ("-journal", "-wal", "-shm"):
        side = path.with_name(path.name + suffix)
        if side.exists():
            side.rename(target.with_name(target.name + suffix))
    notice = {
        "en": (f"The benchmark result store was damaged ({reason}); it was moved aside to {target.name} and a "
               "new, empty store was started, so runs stored before are not cited until it is restored."),
        "zh": (f"基准结果库已损坏（{reason}），已移到 {target.name}，并新建了空的结果库；"
               "此前保存的运行结果在恢复之前不会被引用。"),
        "moved_to": str(target),
    }
    _notices.append(notice)
    log.warning(notice["en"])
    return target


def damage_notices(language: str = "en") -> list[str]:
    """What this process found damaged and moved aside, in ``language`` (``en`` or ``zh``)."""
    return [n["zh" if language == "zh" else "en"] for n in _notices]


class ResultStore:
    """SQLite results; ``path`` defaults to ``bot.env.data_dir() / "bench.sqlite"``."""

    def __init__(self, path: str | Path | None = None):
        self.path = Path(path) if path else data_dir() / "bench.sqlite"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._check()
        self._guard(self._create, None)

    def _create(self) -> None:
        with self._connect() as db:
            db.executescript(_SCHEMA)

    def _check(self) -> None:
        with _lock:
            reason = _damage(self.path)
            if reason:
                _move_aside(self.path, reason)

    def _guard(self, operation: Callable, fallback):
        """Run ``operation``; when it meets a damaged file, move the file aside, start a new
        store and run it there (reads then find nothing; writes land in the new file)."""
        for attempt in range(3):
            try:
                return operation()
            except sqlite3.DatabaseError as err:
                if not is_damage(err):
                    raise
                with _lock:  # the check first: another process may have replaced the file already
                    reason = _damage(self.path) or (str(err) if attempt else None)
                    if reason and self.path.exists():
                        _move_aside(self.path, reason)
                try:
                    self._create()
                except sqlite3.DatabaseError as again:
                    if not is_damage(again):
                        raise
        log.warning("benchmark result store %s still unreadable; serving without it", self.path.name)
        return fallback

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
            return self._guard(lambda: self._insert_once(row, kind, hash_), run_id)

        def insert() -> str:
            with self._connect() as db:
                db.execute("INSERT INTO runs VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)", row)
            return run_id

        return self._guard(insert, run_id)

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
        def read():
            with self._connect() as db:
                return db.execute("SELECT * FROM runs WHERE id = ?", (run_id,)).fetchone()

        row = self._guard(read, None)
        return _row(row) if row else None

    def list(self, kind: str | None = None, limit: int = 50) -> list[StoredRun]:
        """Newest first."""
        query, args = "SELECT * FROM runs", []
        if kind:
            query, args = query + " WHERE kind = ?", [kind]
        query += " ORDER BY finished_at DESC LIMIT ?"
        return self._select(query, [*args, int(limit)])

    def _select(self, query: str, args: builtins.list) -> builtins.list[StoredRun]:
        def read():
            with self._connect() as db:
                return [_row(r) for r in db.execute(query, args)]

        return self._guard(read, [])

    def find_by_hash(self, kind: str, hash_: str) -> StoredRun | None:
        """The newest ok result of ``kind`` with this config hash."""
        found = self._select("SELECT * FROM runs WHERE kind = ? AND config_hash = ? AND status = 'ok' "
                             "ORDER BY finished_at DESC LIMIT 1", [kind, hash_])
        return found[0] if found else None

    def find_simulation(self, config):
        """The stored ``SimResult`` (with ``run_id`` set) for this ``SimConfig``, or None."""
        from bot.bench.simulate import SimResult

        run = self.find_by_hash("simulate", config.key(torch_version()))
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
        return self._select(query + " ORDER BY finished_at DESC", args)


def torch_version() -> str:
    """The installed torch's ``__version__``, without importing torch when nothing has yet: a
    lookup needs only the string, and the import (2-10 s on a busy two-core machine) was most of
    a fresh process's first estimate (every answer looks its simulations up). The distribution's
    version is the string ``torch.__version__`` is made from (tests/unit/test_bench_store.py)."""
    loaded = sys.modules.get("torch")
    if loaded is not None:
        return str(loaded.__version__)
    try:
        return importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:  # importable without metadata (a source tree)
        import torch

        return str(torch.__version__)


def _row(row: sqlite3.Row) -> StoredRun:
    return StoredRun(
        id=row["id"], kind=row["kind"], status=row["status"], model=row["model"],
        strategy=row["strategy"], config=json.loads(row["config"]), config_hash=row["config_hash"],
        hardware=json.loads(row["hardware"]), torch_version=row["torch_version"],
        started_at=row["started_at"], finished_at=row["finished_at"],
        figures=json.loads(row["figures"]), error=row["error"], source=row["source"])
