"""The conversation state that survives a restart, so closing the terminal
does not end the conversation.

After every turn Memora saves the recent messages, the running summary, token
usage, the last request's token breakdown, any extraction jobs that have
not finished and the memory changes ``undo`` can take back, atomically, to
``memora_session.json``. At start it restores
them, so a crash between turns loses nothing the learner has already seen,
and an interrupted extraction runs again. ``--new`` or ``reset`` starts a
fresh conversation without touching the profile or memories.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from memora.engine.storage import atomic_write_model, file_lock, load_model_file
from memory import TokenUsage

SESSION_VERSION = 2


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="forbid")

    role: Literal["user", "assistant"]
    content: str


class PendingExtraction(BaseModel):
    job_id: str
    text: str
    said_at: datetime
    attempts: int = 0  # failed tries so far; given up after MAX_EXTRACTION_ATTEMPTS
    # When the message was read but some items' own calls failed: those items only
    # (an ExtractionResult as JSON), so the next run neither reads the message again
    # nor re-applies what already landed.
    remaining: dict | None = None


class ChangeSet(BaseModel):
    """One memory change ``undo`` can take back: a turn's extraction, a ``remember``
    or a ``memory edit``. Each step is ``(old id, new id)``: ``(None, new)`` added,
    ``(old, new)`` superseded or updated, ``(old, None)`` retracted. Ids only: the
    text lives in the memory store, so the session file holds no memory text."""

    at: datetime
    origin: Literal["turn", "remember", "edit"]
    job_id: str = ""
    steps: list[tuple[str | None, str | None]] = Field(default_factory=list)


class UndoneMemory(BaseModel):
    """A memory deleted by ``undo``, so ``history <id>`` can say what became of it."""

    id: str
    at: datetime


class SessionState(BaseModel):
    model_config = ConfigDict(extra="ignore")

    version: int = SESSION_VERSION
    saved_at: datetime | None = None
    messages: list[ChatMessage] = Field(default_factory=list)
    summary: str = ""
    usage: TokenUsage = Field(default_factory=TokenUsage)
    last_request: dict | None = None
    pending_extractions: list[PendingExtraction] = Field(default_factory=list)
    changes: list[ChangeSet] = Field(default_factory=list)  # oldest first; 'undo' takes the last
    undone: list[UndoneMemory] = Field(default_factory=list)

    def is_empty(self) -> bool:
        return not (self.messages or self.summary or self.pending_extractions)


def migrate_session(data: dict) -> dict:
    """Upgrade older session files.

    Version 1 (no ``version`` key) kept ``history`` and a single
    ``token_usage`` number; newer-than-known versions are refused (and
    quarantined) rather than guessed at.
    """
    version = data.get("version", 1)
    if not isinstance(version, int) or version > SESSION_VERSION:
        raise ValueError(f"session format version {version!r} is newer than this Memora understands")
    if version == 1:
        data = {
            "version": SESSION_VERSION,
            "messages": data.get("history", data.get("messages", [])),
            "summary": data.get("summary", ""),
            "usage": {"chat": int(data.get("token_usage", 0) or 0)},
        }
    return data


class SessionStore:
    def __init__(self, path: Path, *, notify: Callable[[str], None] | None = None):
        self.path = Path(path)
        self._notify = notify

    def load(self) -> SessionState:
        return (
            load_model_file(
                self.path, SessionState, migrate=migrate_session, notify=self._notify, label="saved session"
            )
            or SessionState()
        )

    def save(self, state: SessionState) -> None:
        with file_lock(self.path):
            atomic_write_model(self.path, state)
