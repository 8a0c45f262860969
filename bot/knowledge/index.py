"""The chromadb index over the corpus: chunking, ingest, and opening (or repairing) the store.

Where it lives: ``data_dir()/index`` holds one folder per *generation* (a complete chromadb
``PersistentClient`` store) and a ``CURRENT`` file naming the live one. With
``SHARDWISE_CHROMA_URL=http://host:port`` the same generations are collections on a chroma server
(``chromadb.HttpClient``), and the live one is the newest collection marked complete.

How it changes:
- A full build writes a *new* generation and only then swaps the pointer (``os.replace`` of
  ``CURRENT``, or the server collection's ``complete`` flag), so a crash mid-build leaves the old
  index serving and an orphan that the next build deletes before it starts: a build in progress
  is marked by ``.writing-<generation>`` (its pid and start time), and a generation whose writer
  is no longer alive is removed (server: a collection never marked complete; one writer assumed).
- An incremental ingest compares each entry's content hash with the hash stored in the chunk
  metadata and re-embeds only changed entries (delete + add by ``entry_id``).
- :func:`ensure_index` (what search calls) opens and probes the live generation; a missing,
  unreadable, or wrong-model index is rebuilt with a message on stderr, a stale one updated.

Every chunk (:mod:`bot.knowledge.chunks`) is stored with its entry id, kind, title, url and
languages in metadata. Search asks it for the nearest English chunks to a query vector
(:meth:`IndexStore.nearest`); the vectors come from :mod:`bot.knowledge.embeddings`, also when
chromadb rebuilds the embedding function of a reopened collection
(:class:`ShardwiseEmbeddingFunction`, registered under :data:`EF_NAME`).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import chromadb
from chromadb.api.types import Documents, EmbeddingFunction, Embeddings, Space
from chromadb.config import Settings
from chromadb.utils.embedding_functions import register_embedding_function

from bot.env import data_dir
from bot.knowledge.chunks import (  # noqa: F401  (re-exported: the index's callers name them here)
    CHUNK_CHARS,
    CHUNK_OVERLAP,
    SCHEMA_VERSION,
    Chunk,
    chunk_entries,
    corpus_chunks,
)
from bot.knowledge.embeddings import embed, model_setting

URL_ENV = "SHARDWISE_CHROMA_URL"
EF_NAME = "shardwise-sentence-transformers"
EMBED_BATCH = 16
_PREFIX = "shardwise-"

Progress = Callable[[int, int], None]  # (chunks done, chunks total)


class IndexUnavailable(RuntimeError):
    """The live index is missing or unusable; the message says why."""


@register_embedding_function
class ShardwiseEmbeddingFunction(EmbeddingFunction[Documents]):
    """chromadb's view of the model. The config stores the model *setting*, not a resolved path,
    so an index built with the packaged default keeps working when the venv moves."""

    def __init__(self, model: str | None = None) -> None:
        self.model = model or model_setting()

    def __call__(self, input: Documents) -> Embeddings:
        import numpy as np

        return [np.asarray(v, dtype=np.float32) for v in embed(list(input), self.model)]

    @staticmethod
    def name() -> str:
        return EF_NAME

    def get_config(self) -> dict[str, Any]:
        return {"model": self.model}

    @staticmethod
    def build_from_config(config: dict[str, Any]) -> ShardwiseEmbeddingFunction:
        return ShardwiseEmbeddingFunction(config.get("model") or None)

    @staticmethod
    def validate_config(config: dict[str, Any]) -> None:
        if "model" in config and not isinstance(config["model"], str):
            raise ValueError("ShardwiseEmbeddingFunction config 'model' must be a string")

    def default_space(self) -> Space:
        return "cosine"

    def supported_spaces(self) -> list[Space]:
        return ["cosine", "l2", "ip"]


# --------------------------------------------------------------------------------------------
# Where generations live: a folder of chroma stores, or collections on a chroma server
# --------------------------------------------------------------------------------------------

def _settings() -> Settings:
    # A fresh object per client: chromadb writes the client kind (persistent/http) into the
    # Settings it is given, so a shared one would turn later local clients into HTTP clients.
    return Settings(anonymized_telemetry=False)


def _collection_name(generation: str) -> str:
    return _PREFIX + generation


def _new_generation() -> str:
    return f"g{time.time_ns()}"  # sorts by creation time, which the server backend relies on


_WRITING = ".writing-"  # <root>/.writing-<generation>: "<pid> <start time>" of the process building it


def _process_identity(pid: int) -> str | None:
    """``"<pid> <start time in clock ticks>"`` for a live process (from /proc), else None."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    if fields[0] == "Z":  # a zombie writes nothing
        return None
    return f"{pid} {fields[19]}"  # field 22 of proc(5); fields[0] is field 3


class _LocalBackend:
    """Generations are folders ``<root>/<generation>/``; ``<root>/CURRENT`` names the live one."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.location = str(root)

    def client(self, generation: str):
        return chromadb.PersistentClient(path=str(self.root / generation), settings=_settings())

    def current(self) -> str | None:
        try:
            name = (self.root / "CURRENT").read_text(encoding="utf-8").strip()
        except (FileNotFoundError, NotADirectoryError):
            return None
        except (OSError, UnicodeDecodeError) as err:
            raise IndexUnavailable(f"cannot read {self.root / 'CURRENT'}: {err}") from err
        if not name.startswith("g") or not name[1:].isdigit():
            raise IndexUnavailable(f"{self.root / 'CURRENT'} does not name a generation: {name[:40]!r}")
        return name

    def publish(self, generation: str, collection) -> None:
        pointer = self.root / "CURRENT"
        try:
            previous = self.current()
        except IndexUnavailable:
            previous = None
        tmp = self.root / f".CURRENT.{os.getpid()}.tmp"
        tmp.write_text(generation + "\n", encoding="utf-8")
        os.replace(tmp, pointer)  # atomic on POSIX: readers see the old or the new name, never half
        # The previous generation stays one more round: a server that opened it keeps working.
        keep = {generation, previous}
        for path in self.root.iterdir():
            if path.is_dir() and path.name.startswith("g") and path.name not in keep:
                shutil.rmtree(path, ignore_errors=True)

    def discard(self, generation: str) -> None:
        shutil.rmtree(self.root / generation, ignore_errors=True)

    def start_writing(self, generation: str) -> None:
        """Mark ``generation`` as being written by this process (pid and its start time, so a
        recycled pid is not mistaken for the writer)."""
        self.root.mkdir(parents=True, exist_ok=True)
        (self.root / f"{_WRITING}{generation}").write_text(_process_identity(os.getpid()) or "", encoding="utf-8")

    def done_writing(self, generation: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            (self.root / f"{_WRITING}{generation}").unlink()

    def remove_abandoned(self) -> list[str]:
        """Remove generations whose build was killed (marked as being written by a process that
        is gone; never the current one); returns their names."""
        try:
            current = self.current()
        except IndexUnavailable:
            current = None
        removed = []
        for marker in self.root.glob(f"{_WRITING}g*"):
            generation = marker.name[len(_WRITING):]
            try:
                writer = marker.read_text(encoding="utf-8").strip()
            except OSError:
                continue
            pid = writer.split(" ", 1)[0]
            if generation == current or (pid.isdigit() and _process_identity(int(pid)) == writer):
                continue  # live, or still being written by a running process
            shutil.rmtree(self.root / generation, ignore_errors=True)
            with contextlib.suppress(FileNotFoundError):
                marker.unlink()
            removed.append(generation)
        return removed

    @contextlib.contextmanager
    def writer_lock(self) -> Iterator[None]:
        """One writer at a time across processes (a server and a CLI ingest, say)."""
        self.root.mkdir(parents=True, exist_ok=True)
        path = self.root / ".lock"
        try:
            handle = open(path, "w")  # noqa: SIM115  (closed by the with below)
        except OSError as err:  # a directory, no permission, a read-only disk: say which file
            reason = "it is a directory" if path.is_dir() else (err.strerror or type(err).__name__)
            raise IndexUnavailable(f"cannot take the index lock {path} ({reason}); remove or fix it and "
                                   "run again") from None
        with handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)


class _ServerBackend:
    """Generations are collections ``shardwise-g<ns>`` on a chroma server; the live one is the
    newest marked ``complete``. One writer at a time is assumed (no cross-machine lock)."""

    def __init__(self, url: str) -> None:
        parsed = urlparse(url)
        if parsed.scheme not in ("http", "https") or not parsed.hostname:
            raise IndexUnavailable(f"{URL_ENV}={url!r} is not an http(s)://host:port URL")
        self.location = url
        try:
            self._client = chromadb.HttpClient(
                host=parsed.hostname, port=parsed.port or (443 if parsed.scheme == "https" else 8000),
                ssl=parsed.scheme == "https", settings=_settings(),
            )
        except Exception as err:  # connection refused, DNS, TLS: say which server and why
            raise IndexUnavailable(f"cannot reach the chroma server at {url}: {err}") from err

    def client(self, generation: str):
        return self._client

    def current(self) -> str | None:
        live = [c.name[len(_PREFIX):] for c in self._client.list_collections()
                if c.name.startswith(_PREFIX + "g") and (c.metadata or {}).get("complete") == 1]
        return max(live, key=lambda g: int(g[1:])) if live else None

    def publish(self, generation: str, collection) -> None:
        for c in self._client.list_collections():
            if c.name.startswith(_PREFIX + "g") and c.name != _collection_name(generation):
                with contextlib.suppress(Exception):
                    self._client.delete_collection(c.name)

    def discard(self, generation: str) -> None:
        with contextlib.suppress(Exception):
            self._client.delete_collection(_collection_name(generation))

    def start_writing(self, generation: str) -> None:
        pass  # the collection's complete=0 flag is the marker

    def done_writing(self, generation: str) -> None:
        pass

    def remove_abandoned(self) -> list[str]:
        """Collections never marked complete (a killed build; one writer at a time is assumed)."""
        removed = []
        for c in self._client.list_collections():
            if c.name.startswith(_PREFIX + "g") and (c.metadata or {}).get("complete") != 1:
                with contextlib.suppress(Exception):
                    self._client.delete_collection(c.name)
                    removed.append(c.name[len(_PREFIX):])
        return removed

    @contextlib.contextmanager
    def writer_lock(self) -> Iterator[None]:
        yield


def _backend(root: Path | None = None):
    url = os.environ.get(URL_ENV, "").strip()
    if url and root is None:
        return _ServerBackend(url)
    return _LocalBackend(root or data_dir() / "index")


# --------------------------------------------------------------------------------------------
# The store that search uses
# --------------------------------------------------------------------------------------------


@dataclass
class IndexStore:
    """An open, probed generation: the chroma client and collection."""

    client: Any
    collection: Any
    location: str
    generation: str
    model: str

    def nearest(self, vector: Sequence[float], k: int, kinds: Sequence[str]) -> list[str]:
        """Ids of the ``k`` English chunks of ``kinds`` closest to ``vector`` (cosine), closest
        first. Only English chunks: MiniLM vectors of Chinese text are mostly [UNK] noise."""
        where: dict[str, Any] = {"text_lang": "en"}
        if set(kinds) != {"forum", "doc"}:
            where = {"$and": [where, {"kind": {"$in": list(kinds)}}]}
        found = self.collection.query(query_embeddings=[list(vector)], n_results=k, where=where, include=[])
        return list(found["ids"][0]) if found["ids"] else []

    def entry_hashes(self) -> dict[str, str]:
        """entry id -> content hash, as stored in the chunk metadata."""
        stored = self.collection.get(include=["metadatas"])
        return {m["entry_id"]: m["entry_hash"] for m in stored["metadatas"] or []}


def _open(backend, generation: str) -> IndexStore:
    """Open a generation and probe it end to end (metadata, rows, a vector query)."""
    try:
        client = backend.client(generation)
        collection = client.get_collection(_collection_name(generation))
        meta = collection.metadata or {}
        if meta.get("schema") != SCHEMA_VERSION:
            raise IndexUnavailable(f"index schema {meta.get('schema')} != {SCHEMA_VERSION}")
        if meta.get("model") != model_setting():
            raise IndexUnavailable(f"index was built with model {meta.get('model')!r}, "
                                   f"configured is {model_setting()!r}")
        if meta.get("complete") != 1:
            raise IndexUnavailable("index generation was never completed")
        sample = collection.get(limit=1, include=["embeddings"])
        if not sample["ids"]:
            raise IndexUnavailable("index is empty")
        collection.query(query_embeddings=[list(sample["embeddings"][0])], n_results=1)
    except IndexUnavailable:
        raise
    except Exception as err:  # chroma raises many kinds on a damaged store (sqlite, hnsw, rust)
        raise IndexUnavailable(f"index at {backend.location} ({generation}) is unreadable: "
                               f"{type(err).__name__}: {err}") from err
    return IndexStore(client, collection, backend.location, generation, model_setting())


def open_index(root: Path | None = None) -> IndexStore:
    """The live generation, probed; :class:`IndexUnavailable` if missing or damaged."""
    backend = _backend(root)
    generation = backend.current()
    if generation is None:
        raise IndexUnavailable(f"no index at {backend.location}")
    return _open(backend, generation)


# --------------------------------------------------------------------------------------------
# Ingest
# --------------------------------------------------------------------------------------------


@dataclass
class IngestReport:
    location: str
    generation: str
    rebuilt: bool  # a new generation was built and swapped in
    reason: str  # why it was rebuilt ("" for an incremental update)
    entries: int
    added: list[str] = field(default_factory=list)  # entry ids newly indexed
    updated: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    skipped: int = 0  # unchanged entries
    chunks_embedded: int = 0
    seconds: float = 0.0


def _add_chunks(store: IndexStore, chunks: list[Chunk], progress: Progress | None) -> None:
    total = len(chunks)
    if progress:
        progress(0, total)
    for start in range(0, total, EMBED_BATCH):
        batch = chunks[start:start + EMBED_BATCH]
        store.collection.add(
            ids=[c.id for c in batch], documents=[c.text for c in batch],
            metadatas=[c.metadata() for c in batch], embeddings=embed([c.text for c in batch], store.model),
        )
        if progress:
            progress(min(start + EMBED_BATCH, total), total)


def _build(backend, chunks: list[Chunk], progress: Progress | None) -> IndexStore:
    abandoned = backend.remove_abandoned()  # half-built generations of killed builds
    if abandoned:
        print(f"shardwise: removed {len(abandoned)} unfinished index generation(s) left by an interrupted "
              "build", file=sys.stderr)
    generation = _new_generation()
    model = model_setting()
    backend.start_writing(generation)
    try:
        client = backend.client(generation)
        collection = client.create_collection(
            _collection_name(generation), embedding_function=ShardwiseEmbeddingFunction(model),
            configuration={"hnsw": {"space": "cosine"}},
            metadata={"schema": SCHEMA_VERSION, "model": model, "complete": 0},
        )
        store = IndexStore(client, collection, backend.location, generation, model)
        _add_chunks(store, chunks, progress)
        collection.modify(metadata={"schema": SCHEMA_VERSION, "model": model, "complete": 1})
        backend.publish(generation, collection)
    except BaseException:
        backend.discard(generation)  # never leave a half-built generation behind
        raise
    finally:
        backend.done_writing(generation)
    return store


_process_lock = threading.Lock()


def ingest(
    chunks: list[Chunk] | None = None, *, rebuild: bool = False, root: Path | None = None,
    progress: Progress | None = None,
) -> IngestReport:
    """Bring the index up to date with ``chunks`` (default: the corpus in ``knowledge/``).

    Incremental unless ``rebuild`` or the live index is missing/damaged/built for another model;
    then a full build into a new generation, swapped in atomically.
    """
    started = time.perf_counter()
    chunks = corpus_chunks() if chunks is None else chunks
    wanted: dict[str, str] = {c.entry_id: c.entry_hash for c in chunks}
    backend = _backend(root)
    with _process_lock, backend.writer_lock():
        reason = "--rebuild" if rebuild else ""
        store = None
        if not rebuild:
            try:
                store = open_index(root)
            except IndexUnavailable as err:
                reason = str(err)
        if store is None:
            store = _build(backend, chunks, progress)
            return IngestReport(store.location, store.generation, True, reason, len(wanted),
                                added=sorted(wanted), chunks_embedded=len(chunks),
                                seconds=time.perf_counter() - started)

        indexed = store.entry_hashes()
        added = sorted(e for e in wanted if e not in indexed)
        updated = sorted(e for e in wanted if e in indexed and indexed[e] != wanted[e])
        removed = sorted(e for e in indexed if e not in wanted)
        for entry_id in updated + removed:
            store.collection.delete(where={"entry_id": entry_id})
        fresh = [c for c in chunks if c.entry_id in set(added + updated)]
        _add_chunks(store, fresh, progress)
        return IngestReport(
            store.location, store.generation, False, "", len(wanted), added=added, updated=updated,
            removed=removed, skipped=len(wanted) - len(added) - len(updated), chunks_embedded=len(fresh),
            seconds=time.perf_counter() - started,
        )


def ensure_index(chunks: list[Chunk] | None = None, *, root: Path | None = None) -> IndexStore:
    """The live index, built or repaired first if needed (a message on stderr says so).

    Cheap when the index is fine: a probe query and a hash comparison, no embedding.
    """
    chunks = corpus_chunks() if chunks is None else chunks
    _backend(root)  # an unreachable chroma server is reported as such, not "rebuilding"
    try:
        store = open_index(root)
    except IndexUnavailable as err:
        print(f"shardwise: knowledge index unavailable ({err}); building it now ...", file=sys.stderr)
        report = ingest(chunks, root=root)
        print(f"shardwise: knowledge index built: {report.entries} entries, {report.chunks_embedded} "
              f"chunks in {report.seconds:.1f} s at {report.location}", file=sys.stderr)
        return open_index(root)
    if store.entry_hashes() != {c.entry_id: c.entry_hash for c in chunks}:
        report = ingest(chunks, root=root)
        print(f"shardwise: knowledge index updated ({len(report.added)} added, {len(report.updated)} "
              f"changed, {len(report.removed)} removed)", file=sys.stderr)
        if report.rebuilt:
            return open_index(root)
    return store
