"""The store's seams: what retrieval and extraction read of it, and where its vectors are.

``MemoryIndex``: what retrieval and extraction need of a learner's memory store
(``long_term_memory.LongTermMemoryStore``), so neither reaches into the catalog.
``VectorIndex``: where the store keeps each memory's vector beside its record,
written in one write section with the catalog (``catalog.py``). Chroma's, with all
of Chroma's ways, is ``chroma_backend.ChromaVectors``; ``InMemoryVectors`` lives in
this process only (the tests not about Chroma use it). Distances are cosine
distances (1 - cosine similarity, as Chroma's collections are configured).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any, Protocol

from memora.core.errors import VectorsMissing
from memora.core.records import STATUS_CURRENT, MemoryRecord
from memora.core.text_utils import counted
from memora.core.timeutil import Clock
from memora.model.embeddings import Embedder, EmbeddingResult
from memora.store.catalog import LexicalSearch
from memora.store.deletions import DeletionLog


@dataclass(frozen=True)
class AddResult:
    """What ``add`` did: stored a new memory, or refreshed a duplicate."""

    record: MemoryRecord
    duplicate: bool = False

    @property
    def id(self) -> str:
        return self.record.id

    @property
    def content(self) -> str:
        return self.record.content


class MemoryIndex(Protocol):
    """One learner's memories as retrieval and extraction read and write them."""

    user_id: str
    clock: Clock
    embedder: Embedder
    deletions: DeletionLog
    recency_half_life_days: float | None  # None: retrieval's default
    related_distance: float  # neighbours closer than this may be what a new fact changes

    # -- embedding: the vectors and the tokens they cost, together
    def embed(self, texts: Sequence[str]) -> EmbeddingResult: ...

    # -- finding candidates: the two sides of a search, run side by side, then scored together
    def dense_candidates(self, vector: list[float], n: int) -> list[tuple[str, float]]: ...
    def lexical_candidates(
        self,
        terms: list[str],
        limit: int,
        *,
        windows: Sequence[tuple[float, float, str, str]] = (),
        window_limit: int = 50,
    ) -> LexicalSearch: ...

    # -- reading records
    def get(self, memory_id: str) -> MemoryRecord | None: ...
    def get_many(self, ids: Iterable[str]) -> dict[str, MemoryRecord]: ...
    def find_exact(self, content: str, *, status: str = STATUS_CURRENT) -> MemoryRecord | None: ...
    def listed(self, **filters: Any) -> list[MemoryRecord]: ...

    # -- writing (extraction)
    def validate(self, content: str, memory_type: str, category: str) -> tuple[str, str, str]: ...

    def add(
        self,
        content: str,
        *,
        memory_type: str,
        category: str,
        created_at: datetime | None,
        source: str,
        event_date: date | None,
        dedup: bool,
        vector: list[float] | None,
    ) -> AddResult: ...
    def supersede(  # the successor; None: retracted
        self,
        old_id: str,
        new_content: str | None,
        *,
        reason: str,
        memory_type: str | None = None,
        category: str | None = None,
        event_date: date | None = None,
        note: str | None = None,
        vector: list[float] | None = None,
        said_at: datetime | None = None,
        said: str | None = None,
    ) -> MemoryRecord | None: ...

    def touch(self, memory_id: str, when: datetime | None = None) -> MemoryRecord: ...


Vector = Sequence[float]


class VectorIndex(Protocol):
    """One learner's memory vectors, by memory id."""

    model: str | None  # the embedding model of its vectors; None when it holds none (the store sets it as it writes)
    missing: str | None  # why its vectors are gone while the catalog still lists memories; None when they are not

    def check(self, *, deep: bool = False) -> None:
        """Look again at what others (other processes, machines) may have changed,
        updating ``model`` and ``missing``; ``deep`` also when that costs a call."""

    def upsert(self, records: Sequence[MemoryRecord], vectors: Sequence[Vector | None]) -> None:
        """Store records with their vectors, by id; a record whose vector is None is left out."""

    def update(self, records: Sequence[MemoryRecord]) -> None:
        """Replace stored records' fields, keeping their vectors."""

    def delete(self, ids: Sequence[str] | None = None) -> None:
        """Remove these records; None: every record, and the index itself (``forget``, ``reindex``)."""

    def nearest(self, vector: Vector, n: int) -> list[tuple[str, float]]:
        """The ``n`` stored records closest to ``vector``: ``[(id, cosine distance)]``, nearest first."""

    def stored(self, ids: Sequence[str]) -> dict[str, tuple[MemoryRecord, list[float]]]:
        """The records of these ids it holds, with their vectors."""

    def commit(self, db: sqlite3.Connection) -> None:
        """A write of the store is done; called inside its catalog transaction ``db``."""

    def erase(self) -> bool:
        """Leave no copy of deleted records in its files; True when done (else the next start retries)."""


def vectors_missing(cause: str, listed: int) -> VectorsMissing:
    """The one error for everything that needs the vectors while they are missing."""
    return VectorsMissing(
        f"Your memories' vectors are missing: {cause}. Nothing can be searched or stored "
        f"until you type 'reindex', which rebuilds them from the "
        f"{counted(listed, 'memory', 'memories')} the catalog still lists."
    )


class InMemoryVectors:
    """A ``VectorIndex`` in this process's memory, exact: every query is compared
    with every stored vector. Nothing else writes to it, so nothing can vanish."""

    missing: str | None = None

    def __init__(self) -> None:
        self.model: str | None = None
        self._held: dict[str, tuple[MemoryRecord, list[float]]] = {}
        self._lock = threading.Lock()  # retrieval queries on a worker thread while the store writes

    def check(self, *, deep: bool = False) -> None:
        pass

    def upsert(self, records: Sequence[MemoryRecord], vectors: Sequence[Vector | None]) -> None:
        with self._lock:
            self._held.update((r.id, (r, [float(x) for x in v])) for r, v in zip(records, vectors) if v is not None)

    def update(self, records: Sequence[MemoryRecord]) -> None:
        with self._lock:
            self._held.update((r.id, (r, self._held[r.id][1])) for r in records if r.id in self._held)

    def delete(self, ids: Sequence[str] | None = None) -> None:
        with self._lock:
            if ids is None:
                self._held.clear()
                self.model = None
            for memory_id in ids or ():
                self._held.pop(memory_id, None)

    def nearest(self, vector: Vector, n: int) -> list[tuple[str, float]]:
        import numpy as np  # not at start-up: only a query needs it

        with self._lock:
            ids = list(self._held)
            matrix = np.array([self._held[i][1] for i in ids], dtype=np.float64)
        if not ids or n <= 0:
            return []
        query = np.asarray(vector, dtype=np.float64)
        norms = np.linalg.norm(matrix, axis=1) * np.linalg.norm(query)
        distances = 1.0 - (matrix @ query) / np.where(norms == 0, 1.0, norms)
        return [(ids[i], float(distances[i])) for i in np.argsort(distances, kind="stable")[:n]]

    def stored(self, ids: Sequence[str]) -> dict[str, tuple[MemoryRecord, list[float]]]:
        with self._lock:
            return {i: (self._held[i][0], list(self._held[i][1])) for i in ids if i in self._held}

    def commit(self, db: sqlite3.Connection) -> None:
        pass

    def erase(self) -> bool:
        return True
