"""The store seam: what retrieval and extraction need from a learner's memory store.

``long_term_memory.LongTermMemoryStore`` is the one implementation (Chroma for
the vectors, the SQLite catalog for text, words and dates); retrieval
(``retrieval.retrieve_relevant_memories``) and extraction (``app.extraction``)
are written against this protocol, so neither reaches into the catalog or
guesses at the store's attributes.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any, Protocol

from memora.core.records import STATUS_CURRENT, MemoryRecord
from memora.core.timeutil import Clock
from memora.model.embeddings import Embedder, EmbeddingResult
from memora.store.deletions import DeletionLog


class MemoryIndex(Protocol):
    """One learner's memories as retrieval and extraction read and write them."""

    user_id: str
    clock: Clock
    embedder: Embedder
    deletions: DeletionLog
    recency_half_life_days: float | None  # None: retrieval's default

    @property
    def related_distance(self) -> float: ...

    # -- embedding: the vectors and the tokens they cost, together
    def embed(self, texts: Sequence[str]) -> EmbeddingResult: ...

    # -- finding candidates (retrieval's two halves run side by side)
    def dense_candidates(self, vector: list[float], n: int) -> list[tuple[str, float]]: ...
    def lexical_candidates(
        self,
        terms: list[str],
        limit: int,
        *,
        windows: Sequence[tuple[float, float, str, str]] = (),
        window_limit: int = 50,
    ) -> Any: ...
    def score_candidates(
        self, found: Any, dense_ids: Iterable[str] = (), *, records: dict | None = None
    ) -> tuple[dict[str, tuple[float, float, bool]], dict[str, bytes]]: ...
    def record_of(self, row: Any) -> MemoryRecord: ...
    def decision_candidates(
        self, terms: list[str], limit: int, dense_ids: Iterable[str] = ()
    ) -> tuple[dict[str, tuple[float, float, bool]], dict[str, bytes]]: ...
    def stored_vectors(self, ids: Iterable[str]) -> dict[str, bytes]: ...

    # -- reading records
    def get(self, memory_id: str) -> MemoryRecord | None: ...
    def get_many(self, ids: Iterable[str]) -> dict[str, MemoryRecord]: ...
    def find_exact(self, content: str, *, status: str = STATUS_CURRENT) -> MemoryRecord | None: ...
    def listed(self, **filters: Any) -> list[MemoryRecord]: ...

    # -- writing (extraction)
    def validate(self, content: str, memory_type: str, category: str) -> tuple[str, str, str]: ...
    def add(self, content: str, **fields: Any) -> Any: ...
    def supersede(self, old_id: str, new_content: str | None = None, **fields: Any) -> Any: ...
    def touch(self, memory_id: str, when: datetime | None = None) -> MemoryRecord: ...


__all__ = ["MemoryIndex"]
