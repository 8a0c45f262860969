"""Corpus chunks: the passages both search paths read, and the content hash that says when an
entry must be embedded again.

Forum answers give two kinds of chunk: the verbatim Chinese original (BM25 reads it; it is what
gets quoted) and the English rendering (the dense path reads it: MiniLM cannot read Chinese).
Docs are cut into Markdown-aware slices. Nothing here loads a model or a vector store, so BM25
and the tests' in-memory store (:mod:`bot.knowledge.memory_store`) use it alone.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

# Bump when chunking or metadata change: every stored generation then reads as out of date.
SCHEMA_VERSION = 1
CHUNK_CHARS = 900  # MiniLM reads 256 word pieces, about 1,000 English characters
CHUNK_OVERLAP = 120


@dataclass(frozen=True)
class Chunk:
    """One indexed passage. ``text`` is what BM25 and the embedder read (title line + passage)."""

    id: str  # "forum-06#zh", "forum-06#en0", "doc-ddp-basics#2"
    entry_id: str
    kind: str  # "forum" | "doc"
    title: str
    url: str
    lang: str  # the entry's language (forum answers: "zh", even for their English chunks)
    text_lang: str  # the language of this chunk's passage
    passage: str  # verbatim slice of the entry text (forum "#zh": the whole original answer)
    entry_hash: str

    @property
    def text(self) -> str:
        return f"{self.title}\n\n{self.passage}"

    def metadata(self) -> dict[str, Any]:
        return {
            "entry_id": self.entry_id, "kind": self.kind, "title": self.title, "url": self.url,
            "lang": self.lang, "text_lang": self.text_lang, "entry_hash": self.entry_hash,
            "passage_offset": len(self.title) + 2,
        }


def _entry_hash(entry: Any) -> str:
    fields = {
        "schema": SCHEMA_VERSION, "chunk": [CHUNK_CHARS, CHUNK_OVERLAP], "id": entry.id,
        "kind": entry.kind, "title": entry.title, "url": entry.url, "lang": entry.lang,
        "text": entry.text, "text_en": getattr(entry, "text_en", ""),
    }
    return hashlib.sha256(json.dumps(fields, ensure_ascii=False, sort_keys=True).encode()).hexdigest()[:16]


def _splitter():
    from langchain_text_splitters import Language, RecursiveCharacterTextSplitter

    # Markdown-aware separators (headings, then paragraphs, then lines): chunks stay verbatim
    # slices of the source, so a quote taken from a hit is found in corpus_text(id).
    return RecursiveCharacterTextSplitter.from_language(
        Language.MARKDOWN, chunk_size=CHUNK_CHARS, chunk_overlap=CHUNK_OVERLAP
    )


def chunk_entries(entries: Iterable[Any]) -> list[Chunk]:
    """Chunks for forum answers and docs (anything with the corpus loader's fields)."""
    splitter = _splitter()
    chunks: list[Chunk] = []
    for entry in entries:
        digest = _entry_hash(entry)
        common = {"entry_id": entry.id, "kind": entry.kind, "title": entry.title, "url": entry.url,
                  "lang": entry.lang, "entry_hash": digest}
        if entry.kind == "forum":
            # The original stays whole: it is short, and it is the text a citation quotes.
            chunks.append(Chunk(id=f"{entry.id}#zh", text_lang=entry.lang, passage=entry.text, **common))
            for i, part in enumerate(splitter.split_text(entry.text_en)):
                chunks.append(Chunk(id=f"{entry.id}#en{i}", text_lang="en", passage=part, **common))
        else:
            for i, part in enumerate(splitter.split_text(entry.text)):
                chunks.append(Chunk(id=f"{entry.id}#{i}", text_lang=entry.lang, passage=part, **common))
    return chunks


def corpus_chunks() -> list[Chunk]:
    """Chunks of the corpus in ``knowledge/`` (forum answers and docs)."""
    from bot.knowledge.corpus import all_entries

    return chunk_entries(all_entries())
