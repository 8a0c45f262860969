"""The chromadb index on disk: build, incremental skip, atomic rebuild, corruption recovery, and the
registered embedding function. A four-entry corpus keeps each build to a few seconds."""

from __future__ import annotations

import dataclasses

import pytest

from bot.knowledge.corpus import Doc, ForumAnswer
from bot.knowledge.index import (
    EF_NAME,
    IndexUnavailable,
    ShardwiseEmbeddingFunction,
    chunk_entries,
    ensure_index,
    ingest,
    open_index,
)

TINY = [
    ForumAnswer(id="forum-01", text="7B模型的话，FSDP更省显存，DDP速度更快，看你是要省卡还是图省事。",
                text_en="For a 7B model FSDP saves GPU memory and DDP is faster.",
                title="forum-01: FSDP saves memory, DDP is faster", url="https://example.com/t#1"),
    ForumAnswer(id="forum-02", text="我之前试过6.7B的，FSDP开混合精度加梯度checkpointing，单卡显存能压到20G左右。",
                text_en="I tried 6.7B with FSDP, mixed precision and checkpointing: about 20 GB per GPU.",
                title="forum-02: 6.7B at about 20 GB per GPU", url="https://example.com/t#2"),
    Doc(id="doc-ring", title="Ring all-reduce", lang="en", urls=["https://example.com/nccl"],
        text="NCCL ring all-reduce sends 2(n-1)/n times the buffer per GPU.\n"),
    Doc(id="doc-hsdp", title="Hybrid sharding", lang="en", urls=["https://example.com/hsdp"],
        text="HSDP shards inside a node and replicates across nodes.\n"),
]


@pytest.fixture(scope="module")
def chunks():
    return chunk_entries(TINY)


@pytest.fixture
def root(tmp_path):
    return tmp_path / "index"


def generations(root):
    return sorted(p.name for p in root.iterdir() if p.is_dir() and p.name.startswith("g"))


def test_chunks_keep_verbatim_text_and_both_languages(chunks):
    by_id = {c.id: c for c in chunks}
    assert by_id["forum-02#zh"].passage == TINY[1].text  # the original, whole and unchanged
    assert by_id["forum-02#en0"].text_lang == "en" and by_id["forum-02#en0"].lang == "zh"
    assert {c.entry_id for c in chunks} == {e.id for e in TINY}
    long_doc = Doc(id="doc-long", title="Long", lang="en", urls=["https://example.com/l"],
                   text="\n\n".join(f"Paragraph {i}: " + "words " * 60 for i in range(10)))
    parts = [c for c in chunk_entries([long_doc])]
    assert len(parts) > 3 and all(c.passage in long_doc.text for c in parts)


def test_build_then_noop_then_incremental(chunks, root):
    first = ingest(chunks, root=root)
    assert first.rebuilt and first.chunks_embedded == len(chunks)

    again = ingest(chunks, root=root)
    assert not again.rebuilt and again.skipped == 4 and again.chunks_embedded == 0
    assert again.generation == first.generation
    assert again.seconds < 2.0

    changed = [dataclasses.replace(TINY[0], text_en="For a 7B model FSDP saves memory; DDP is simpler."),
               TINY[1], TINY[2]]  # forum-01 edited, doc-hsdp deleted
    update = ingest(chunk_entries(changed), root=root)
    assert not update.rebuilt
    assert update.updated == ["forum-01"] and update.removed == ["doc-hsdp"] and update.skipped == 2
    store = open_index(root)
    assert set(store.entry_hashes()) == {"forum-01", "forum-02", "doc-ring"}
    texts = store.collection.get(where={"entry_id": "forum-01"}, include=["documents"])["documents"]
    assert any("DDP is simpler" in t for t in texts) and not any("saves GPU memory" in t for t in texts)


def test_rebuild_swaps_atomically_and_a_crash_leaves_the_old_index(chunks, root):
    old = ingest(chunks, root=root)

    def crash(done, total):
        if done > 0:
            raise KeyboardInterrupt("simulated crash mid-build")

    with pytest.raises(KeyboardInterrupt):
        ingest(chunks, root=root, rebuild=True, progress=crash)
    assert (root / "CURRENT").read_text().strip() == old.generation
    assert generations(root) == [old.generation]  # the half-built generation is gone
    assert open_index(root).collection.count() == len(chunks)

    new = ingest(chunks, root=root, rebuild=True)
    assert new.rebuilt and new.generation != old.generation
    assert (root / "CURRENT").read_text().strip() == new.generation
    assert open_index(root).generation == new.generation


def test_garbage_pointer_and_missing_index_are_rebuilt(chunks, root, capsys):
    with pytest.raises(IndexUnavailable):
        open_index(root)
    store = ensure_index(chunks, root=root)
    assert "building it now" in capsys.readouterr().err
    (root / "CURRENT").write_bytes(b"\x00\xffnot a generation")
    with pytest.raises(IndexUnavailable):
        open_index(root)
    repaired = ensure_index(chunks, root=root)
    assert repaired.generation != store.generation and repaired.collection.count() == len(chunks)
    assert "building it now" in capsys.readouterr().err


def test_garbage_in_the_store_is_rebuilt(chunks, root, capsys):
    """Every file of the live chroma store overwritten with garbage (a bad disk, a killed copy).

    Checked in process to keep the suite fast; a fresh process gives the same result (chroma reports
    "file is not a database" either way)."""
    built = ingest(chunks, root=root)
    for path in (root / built.generation).rglob("*"):
        if path.is_file():
            path.write_bytes(b"garbage" * 100)
    with pytest.raises(IndexUnavailable, match="unreadable"):
        open_index(root)
    store = ensure_index(chunks, root=root)
    assert store.generation != built.generation and store.collection.count() == len(chunks)
    assert "building it now" in capsys.readouterr().err
    assert (root / "CURRENT").read_text().strip() == store.generation


def test_model_change_forces_a_rebuild(chunks, root, monkeypatch):
    ingest(chunks, root=root)
    monkeypatch.setenv("SHARDWISE_EMBEDDING_MODEL", "some-other-model")
    with pytest.raises(IndexUnavailable, match="built with model"):
        open_index(root)


def test_reopened_collection_uses_the_registered_embedding_function(chunks, root):
    import chromadb
    from chromadb.config import Settings

    built = ingest(chunks, root=root)
    client = chromadb.PersistentClient(path=str(root / built.generation),
                                       settings=Settings(anonymized_telemetry=False))
    collection = client.get_collection(f"shardwise-{built.generation}")  # no embedding function given
    ef = collection.configuration["embedding_function"]
    assert isinstance(ef, ShardwiseEmbeddingFunction) and ef.name() == EF_NAME
    found = collection.query(query_texts=["ring all-reduce buffer"], n_results=1)  # offline: ours embeds
    assert found["metadatas"][0][0]["entry_id"] == "doc-ring"


def test_the_in_memory_store_finds_the_chunks_chromadb_finds(chunks, root, monkeypatch):
    """The unit tests' MemoryStore answers ``nearest`` as the chromadb index does (same vectors:
    the hashed embedding in both), so the fakes exercise the same dense path."""
    from bot.knowledge.embeddings import HASHED_MODEL, embed
    from bot.knowledge.memory_store import MemoryStore

    monkeypatch.setenv("SHARDWISE_EMBEDDING_MODEL", HASHED_MODEL)
    ingest(chunks, root=root)
    chroma, memory = open_index(root), MemoryStore.build(chunks)
    assert memory.model == chroma.model == HASHED_MODEL
    for query in ("FSDP saves GPU memory", "ring all-reduce per GPU", "shards inside a node"):
        vector = embed([query])[0]
        for kinds in (("forum", "doc"), ("doc",), ("forum",)):
            # chunks sharing a word with the query (cosine > 0); below that, ties fall in any order
            matching = sum(1 for i, v in enumerate(memory.vectors) if memory.kinds[i] in kinds
                           and sum(a * b for a, b in zip(vector, v, strict=True)) > 1e-9)
            assert matching, (query, kinds)
            assert memory.nearest(vector, matching, kinds) == chroma.nearest(vector, matching, kinds), (query, kinds)
