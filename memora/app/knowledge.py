"""Tutor knowledge notes: Markdown in ``knowledge/``, indexed in Chroma.

What the tutor knows rather than what it knows about the learner: the
persona, grammar tips, travel phrases... Each ``*.md`` file is split at its ``##`` headings; each section is
one chunk in the ``memora-knowledge`` collection, tagged with its file's
content hash. ``sync()`` re-embeds only files whose hash changed, drops chunks
of deleted files, and rebuilds everything if the embedding model changed.

Notes are retrieved with their own, more permissive threshold than memories,
because the cost of a wrong hit is lower (see ``KNOWLEDGE_MIN_SIMILARITY``).
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from context_builder import KnowledgeItem
from memora.model.embeddings import Embedder
from memora.store.chroma_backend import ChromaConnection

COLLECTION = "memora-knowledge"
MAX_CHUNK_CHARS = 1200

# Minimum cosine similarity (1 - distance) for a note to enter the context.
# The threshold is permissive because a wrong hit costs one turn of slightly off-topic context and the
# next turn recovers, while a wrong *memory* misinforms the tutor about the
# learner. So a note passes at 0.40 similarity (distance 0.60), where a memory
# matched by meaning alone needs 0.50 (0.5 x cosine >= RETRIEVAL_MIN_SCORE).
# With the shipped notes and the local model (tests/test_knowledge.py), on-topic
# questions score 0.51-0.71 and small talk at most 0.26; Chinese, which MiniLM
# cannot read, lands anywhere up to ~0.35, hence 0.40 and not lower.
KNOWLEDGE_MIN_SIMILARITY = 0.40
KNOWLEDGE_RESULTS = 2


@dataclass(frozen=True)
class NoteChunk:
    id: str
    source: str
    title: str
    text: str
    file_hash: str


def split_note(path: Path, text: str) -> list[NoteChunk]:
    """Chunks of one Markdown note: one per ``##`` section (long ones split by paragraph)."""
    file_hash = hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
    source = path.name
    doc_title = next((line[2:].strip() for line in text.splitlines() if line.startswith("# ")), path.stem)
    sections: list[tuple[str, str]] = []
    title, lines = doc_title, list[str]()
    for line in text.splitlines():
        if line.startswith("## "):
            if "".join(lines).strip():
                sections.append((title, "\n".join(lines).strip()))
            title, lines = line[3:].strip(), []
        elif not line.startswith("# "):
            lines.append(line)
    if "".join(lines).strip():
        sections.append((title, "\n".join(lines).strip()))
    chunks: list[NoteChunk] = []
    for index, (section_title, body) in enumerate(sections):
        parts, current = [], ""
        for paragraph in re.split(r"\n\s*\n", body):
            if current and len(current) + len(paragraph) > MAX_CHUNK_CHARS:
                parts.append(current)
                current = ""
            current = f"{current}\n\n{paragraph}".strip()
        if current:
            parts.append(current)
        for part_index, part in enumerate(parts):
            chunk_id = f"{source}#{index}.{part_index}"
            chunks.append(NoteChunk(chunk_id, source, section_title, " ".join(part.split()), file_hash))
    return chunks


class KnowledgeBase:
    """The tutor's notes, embedded with the same model as memories."""

    def __init__(
        self,
        folder: Path,
        connection: ChromaConnection,
        embedder: Embedder,
        *,
        on_tokens: Callable[[int], None] = lambda n: None,  # the embedding tokens of a sync
    ):
        self.folder = Path(folder)
        self.on_tokens = on_tokens
        self.connection = connection
        self.embedder = embedder
        self.synced = False
        self._signature: tuple | None = None
        self._lock = threading.Lock()
        self._handle: tuple | None = None

    def signature(self) -> tuple:
        """(name, mtime, size) of every note: a change means re-indexing."""
        if not self.folder.is_dir():
            return ()
        entries = []
        for path in sorted(self.folder.glob("*.md")):
            try:
                stat = path.stat()
            except OSError:
                continue
            entries.append((path.name, stat.st_mtime_ns, stat.st_size))
        return tuple(entries)

    def _collection(self):
        if self._handle is None or self._handle[0] != self.connection.epoch:
            self._handle = (
                self.connection.epoch,
                self.connection.collection(COLLECTION, metadata={"embedding_model": self.embedder.name}),
            )
        return self._handle[1]

    def sync(self) -> int:
        """Bring the index in line with the files; returns how many chunks were embedded."""
        with self._lock:
            signature = self.signature()
            embedded = self._sync()
            self._signature = signature
            self.synced = True
            return embedded

    def _sync(self) -> int:
        files = sorted(self.folder.glob("*.md")) if self.folder.is_dir() else []
        wanted: dict[str, list[NoteChunk]] = {}
        for path in files:
            try:
                wanted[path.name] = split_note(path, path.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError):
                continue
        collection = self._collection()
        if (collection.metadata or {}).get("embedding_model") != self.embedder.name:
            self.connection.delete_collection(COLLECTION)
            self._handle = None
            collection = self._collection()
        existing = collection.get(include=["metadatas"])
        indexed: dict[str, set[str]] = {}
        for meta in existing["metadatas"]:
            indexed.setdefault((meta or {}).get("source", ""), set()).add((meta or {}).get("file_hash", ""))
        hashes = {source: chunks[0].file_hash for source, chunks in wanted.items() if chunks}
        stale = [
            chunk_id
            for chunk_id, meta in zip(existing["ids"], existing["metadatas"])
            if hashes.get((meta or {}).get("source", "")) != (meta or {}).get("file_hash")
        ]
        if stale:
            collection.delete(ids=stale)
        todo = [
            chunk
            for source, chunks in wanted.items()
            if chunks and indexed.get(source) != {hashes[source]}
            for chunk in chunks
        ]
        if todo:
            embedded = self.embedder.embed([f"{c.title}. {c.text}" for c in todo])
            self.on_tokens(embedded.tokens)
            vectors = embedded.vectors
            collection.upsert(
                ids=[c.id for c in todo],
                embeddings=vectors,
                documents=[c.text for c in todo],
                metadatas=[{"source": c.source, "title": c.title, "file_hash": c.file_hash} for c in todo],
            )
        return len(todo)

    def search(
        self, vector: list[float], n_results: int = KNOWLEDGE_RESULTS, *, min_similarity: float | None = None
    ) -> list[KnowledgeItem]:
        threshold = KNOWLEDGE_MIN_SIMILARITY if min_similarity is None else min_similarity
        if not self.synced or self.signature() != self._signature:
            self.sync()
        collection = self._collection()
        total = collection.count()
        if total == 0:
            return []
        result = collection.query(
            query_embeddings=[vector], n_results=min(n_results, total), include=["documents", "metadatas", "distances"]
        )
        items = []
        for document, meta, distance in zip(result["documents"][0], result["metadatas"][0], result["distances"][0]):
            similarity = 1.0 - float(distance)
            if similarity >= threshold:
                meta = meta or {}
                items.append(
                    KnowledgeItem(meta.get("source", "?"), meta.get("title", ""), document, round(similarity, 4))
                )
        return items
