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

import os
import uuid
from collections.abc import Callable, Collection
from datetime import datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from memora.core.storage import JsonStore
from memora.reading.reading_queue import PendingExtraction
from memory import TokenUsage

SESSION_VERSION = 2
Origin = Literal["turn", "remember", "edit", "conflict"]  # what made a change set


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="forbid")

    role: Literal["user", "assistant"]
    content: str


class ChangeSet(BaseModel):
    """One memory change ``undo`` can take back: a turn's extraction, a ``remember``
    or a ``memory edit``. Each step is ``(old id, new id)``: ``(None, new)`` added,
    ``(old, new)`` superseded or updated, ``(old, None)`` retracted. Ids only: the
    text lives in the memory store, so the session file holds no memory text."""

    at: datetime
    origin: Origin
    job_id: str = ""
    steps: list[tuple[str | None, str | None]] = Field(default_factory=list)
    # Reviews a reading counted on mistake cards (a correct use, a repeat): (entry id, said at).
    reviews: list[tuple[str, datetime]] = Field(default_factory=list)


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


_LIVE_OWNERS: set[str] = set()  # the owners of this process's open sessions


def new_owner() -> str:
    """A name for one running session, "<pid>:<token>", that other processes can check."""
    owner = f"{os.getpid()}:{uuid.uuid4().hex[:8]}"
    _LIVE_OWNERS.add(owner)
    return owner


def release_owner(owner: str) -> None:
    _LIVE_OWNERS.discard(owner)


def owner_alive(owner: str | None) -> bool:
    """Whether the session that claimed a message still runs (a crashed one's claims lapse)."""
    if not owner:
        return False
    pid, _, _token = owner.partition(":")
    if not pid.isdigit():
        return False
    if int(pid) == os.getpid():
        return owner in _LIVE_OWNERS
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OSError:
        return False
    return True


class SessionStore(JsonStore[SessionState]):
    """``memora_session.json``, shared by every Memora process of one learner.

    The conversation is the last saver's; the messages not read yet are
    everybody's: a save keeps the ones other processes added meanwhile, and a
    message is read by the one process that claims it first (``claim``)."""

    schema = SessionState
    label = "saved session"
    migrate = staticmethod(migrate_session)

    def __init__(self, path: Path, *, notify: Callable[[str], None] | None = None):
        super().__init__(path, notify=notify)
        self.seen: set[str] = set()  # message ids this process has seen in the file

    def load(self) -> SessionState:
        """The saved session, the caller's to change."""
        state = self.copy(self.read())
        self.seen |= {p.job_id for p in state.pending_extractions}
        return state

    def _on_disk(self) -> SessionState:
        """The file as another process left it (read-only); an unreadable one counts as
        empty (the caller's save replaces it)."""
        try:
            return self.read(notify=False)
        except Exception:
            return SessionState()

    def save(
        self,
        state: SessionState,
        *,
        known: set[str] | None = None,
        owner: str | None = None,
        reading: Collection[str] = frozenset(),
    ) -> SessionState:
        """Write ``state``, keeping the unread messages other processes added since
        (those not in ``known``, the ids this process has ever held) and the ones
        another running process claimed. ``reading``: the messages ``owner`` reads now,
        claimed by it unless another running process claimed them first (``claim`` then
        refuses them); its other ones are unclaimed (a failed reading lets go).
        Returns what was written."""
        with self.lock():
            if known is not None:
                on_disk = self.path.exists()
                disk = {p.job_id: p for p in self._on_disk().pending_extractions} if on_disk else {}
                mine = []
                for job in state.pending_extractions:
                    there = disk.get(job.job_id)
                    if there is None and on_disk and job.job_id in self.seen:
                        continue  # another process read it and removed it
                    claim = owner if job.job_id in reading else None
                    if there is not None and there.claimed_by != owner and owner_alive(there.claimed_by):
                        claim = there.claimed_by  # another running session's: it reads it, not this one
                    mine.append(job.model_copy(update={"claimed_by": claim}))
                kept = {job.job_id for job in mine}

                def theirs_to_keep(job: PendingExtraction) -> bool:
                    if job.job_id in kept:
                        return False
                    claimed = job.claimed_by not in (None, owner) and owner_alive(job.claimed_by)
                    return job.job_id not in known or claimed

                theirs = [p for p in disk.values() if theirs_to_keep(p)]
                pending = sorted(mine + theirs, key=lambda p: p.said_at)
                state = state.model_copy(update={"pending_extractions": pending})
            self.write(state.model_copy(deep=True))  # kept as read: the caller may go on changing its own
            self.seen = {p.job_id for p in state.pending_extractions}
        return state

    def unread_on_disk(self) -> set[str]:
        """The ids of the messages not read yet that the file lists (any process's)."""
        with self.lock():
            return {p.job_id for p in self._on_disk().pending_extractions} if self.path.exists() else set()

    def claim(self, job_ids: list[str], owner: str) -> set[str]:
        """Claim messages for reading by ``owner``, atomically: the ones granted. A message
        another running process claimed, or one gone from the file after this process saw
        it there (another process read it), is not granted."""
        with self.lock():
            state = self._on_disk()
            by_id = {p.job_id: p for p in state.pending_extractions}
            granted, changed = set(), False
            for job_id in job_ids:
                there = by_id.get(job_id)
                if there is None:
                    if job_id not in self.seen:
                        granted.add(job_id)  # never written (its save failed): nobody else can have it
                    continue
                if there.claimed_by in (None, owner) or not owner_alive(there.claimed_by):
                    changed |= there.claimed_by != owner  # the turn's save claimed it already: no write
                    by_id[job_id] = there.model_copy(update={"claimed_by": owner})
                    granted.add(job_id)
            if changed:
                self.write(state.model_copy(update={"pending_extractions": list(by_id.values())}))
            self.seen |= set(by_id)
        return granted
