"""The shapes of stored memories, shared by the store, retrieval and the context.

Kept free of heavy imports so the REPL can start before Chroma is loaded.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import date, datetime
from typing import Any

from memora.engine.errors import LimitError
from memora.engine.text_utils import clean_text

MEMORY_TYPES = ("semantic", "episodic")
# Seed 001's fixed categories (name, identity, preference, hobby, habit,
# schedule), adapted to a tutor: "learning" holds what the learner finds hard
# or has mastered, "other" catches the rest.
CATEGORIES = ("name", "identity", "learning", "preference", "hobby", "habit", "schedule", "other")
SOURCES = ("command", "extracted", "import")
STATUS_CURRENT = "current"
STATUS_SUPERSEDED = "superseded"
MAX_MEMORY_CHARS = 1000


def clean_memory_text(content: str) -> str:
    """A memory's text as it is stored, whether typed, extracted or imported:
    one line, control and escape characters removed, within the limit."""
    text = clean_text(content)
    if not text:
        raise LimitError("A memory cannot be empty.")
    if len(text) > MAX_MEMORY_CHARS:
        raise LimitError(f"A memory is limited to {MAX_MEMORY_CHARS} characters; this one has {len(text)}.")
    return text


@dataclass(frozen=True)
class MemoryRecord:
    """One stored memory, current or superseded."""

    id: str
    content: str
    created_at: datetime
    memory_type: str = "semantic"
    category: str = "other"
    source: str = "command"
    status: str = STATUS_CURRENT
    user_id: str = "default"
    last_seen: datetime | None = None
    valid_until: datetime | None = None
    superseded_by: str | None = None
    supersedes: str | None = None
    change_reason: str | None = None
    event_date: date | None = None
    followed_up_at: datetime | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def is_current(self) -> bool:
        return self.status == STATUS_CURRENT

    def evolve(self, **changes) -> "MemoryRecord":
        return replace(self, **changes)


@dataclass(frozen=True)
class MemorySearchResult:
    """A retrieved memory. ``score`` is the calibrated final score in [0, 1]."""

    id: str
    content: str
    score: float
    created_at: datetime
    memory_type: str
    category: str
    metadata: dict[str, Any] = field(default_factory=dict)
    dense_score: float = 0.0
    lexical_score: float = 0.0
    recency: float = 1.0
    passed: bool = True
    source: str = ""  # who wrote it: the background shows a learner's own words as theirs
    event_date: date | None = None  # a plan's day, shown absolute and relative to now

    @classmethod
    def from_record(cls, record: MemoryRecord, score: float, **parts) -> "MemorySearchResult":
        return cls(
            id=record.id,
            content=record.content,
            score=score,
            created_at=record.created_at,
            memory_type=record.memory_type,
            category=record.category,
            metadata=dict(record.metadata),
            source=record.source,
            event_date=record.event_date,
            **parts,
        )
