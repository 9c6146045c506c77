"""Which messages are read for memories, and the queue that keeps them.

Every message is read right after its reply (an acknowledgement or greeting
never: ``cues.skips_extraction``), so what it makes Memora remember, and any
question it raises (a profile change, a word card), is told after that very
turn. Holding short messages to read several in one call saved tokens but
showed: a fact's notice came turns later, and a question after a later reply.
A message not read yet stays in the session file's pending list (a crash, or a
failed reading, reads it at the next start).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Collection, Sequence
from dataclasses import replace
from datetime import datetime

from pydantic import BaseModel

from memora.core.storage import Guarded
from memora.reading.cues import skips_extraction
from memora.reading.jobs import ExtractionJob, ExtractionResult, PreparedExtraction

log = logging.getLogger("memora")

MAX_EXTRACTION_ATTEMPTS = 3  # a message whose reading keeps failing (bad model, bad server) is dropped with a notice


class PendingExtraction(BaseModel):
    job_id: str
    text: str
    said_at: datetime
    attempts: int = 0  # failed tries so far; given up after MAX_EXTRACTION_ATTEMPTS
    # When the message was read but some items' own calls failed: those items only
    # (an ExtractionResult as JSON), so the next run neither reads the message again
    # nor re-applies what already landed.
    remaining: dict | None = None
    generation: int = 0  # the deletion generation when it was said (deletions.py); 0: before there was one
    # The Memora process reading it ("<pid>:<token>"): each message is read by one process only.
    claimed_by: str | None = None


def _job(p: PendingExtraction) -> ExtractionJob:
    return ExtractionJob(p.text, p.said_at, p.job_id, generation=p.generation)


def resumed_job(pending: PendingExtraction) -> ExtractionJob:
    """A message kept from an earlier reading: only its remaining items, when it has any."""
    prepared = None
    if pending.remaining is not None:
        try:
            prepared = PreparedExtraction(ExtractionResult.model_validate(pending.remaining))
        except ValueError:
            log.warning("unreadable remaining items of job %s; reading the message again", pending.job_id)
    return ExtractionJob(
        pending.text, pending.said_at, pending.job_id, prepared=prepared, generation=pending.generation
    )


class ReadingQueue(Guarded):
    """The messages said and not read for memories yet (``pending``, oldest first),
    which this session has known (``known``,
    for ``SessionStore.save``) and which the worker is reading (``reading``)."""

    def __init__(self, lock: threading.RLock, pending: Sequence[PendingExtraction] = ()):
        super().__init__(lock)
        with lock:
            self.pending: tuple[PendingExtraction, ...] = tuple(pending)
            self.known: frozenset[str] = frozenset(p.job_id for p in pending)
            self.reading: frozenset[str] = frozenset()

    def said(self, message: PendingExtraction) -> None:
        """A message was answered; an acknowledgement is not kept to be read."""
        with self.lock:
            self.known = self.known | {message.job_id}
            if not skips_extraction(message.text):
                self.pending = (*self.pending, message)

    def plan(self, message: PendingExtraction, early: PreparedExtraction | None = None) -> list[ExtractionJob]:
        """The reading of a message just answered, right after its reply (none for an
        acknowledgement). It counts as this session's from now on, so the next save claims it."""
        with self.lock:
            if early is None and skips_extraction(message.text):
                return []
            self.reading = self.reading | {message.job_id}
            return [replace(_job(message), prepared=early)]

    def unread_since(self, moment: datetime | None) -> PendingExtraction | None:
        """The newest message not read yet that was said at or after ``moment``."""
        with self.lock:
            unread = [p for p in self.pending if moment is None or p.said_at >= moment]
        return max(unread, key=lambda p: p.said_at) if unread else None

    def drop(self, ids: Collection[str]) -> None:
        """Forgotten, taken back, or read by another process: not this session's to read."""
        with self.lock:
            self.pending = tuple(p for p in self.pending if p.job_id not in ids)
            self.reading = self.reading - set(ids)

    def keep_from(self, generation: int) -> None:
        """A 'forget all' of ``generation``: what was said before it goes."""
        with self.lock:
            self.drop({p.job_id for p in self.pending if p.generation < generation})

    def clear(self, also_known: Collection[str] = ()) -> int:
        """Drop every unread message ('forget all'); ``also_known``: other terminals'."""
        with self.lock:
            dropped = len({p.job_id for p in self.pending} | set(also_known))
            self.known = self.known | set(also_known)
            self.pending = ()
            return dropped

    def requeue(self) -> list[ExtractionJob]:
        """Every pending message as a reading again (``reindex``)."""
        with self.lock:
            return [resumed_job(p) for p in self.pending]

    def claimed(self, ids: Collection[str]) -> None:
        with self.lock:
            self.reading = self.reading | set(ids)

    def finished(self, job: ExtractionJob) -> None:
        self.drop({job.job_id})

    def failed(self, job: ExtractionJob, remaining: dict | None) -> bool:
        """Keep the reading's message (or only its ``remaining`` items) for a later try;
        True when it was given up after too many failures."""
        with self.lock:
            self.reading = self.reading - {job.job_id}  # its claim lapses: read here later, or by another
            pending, gave_up = [], False
            for p in self.pending:
                if p.job_id == job.job_id:
                    p = p.model_copy(update={"attempts": p.attempts + 1})
                    if remaining is not None:
                        p = p.model_copy(update={"remaining": remaining})
                    if p.attempts >= MAX_EXTRACTION_ATTEMPTS:
                        gave_up = True
                        continue
                pending.append(p)
            self.pending = tuple(pending)
            return gave_up

    def rewrite(self, rewrite: Callable[[str], str]) -> bool:
        """Pass the unread messages' text through ``rewrite`` ('forget'); True when any changed."""
        with self.lock:
            new = tuple(p.model_copy(update={"text": rewrite(p.text)}) for p in self.pending)
            changed = any(a.text != b.text for a, b in zip(new, self.pending))
            self.pending = new
            return changed


__all__ = [
    "MAX_EXTRACTION_ATTEMPTS",
    "ReadingQueue",
    "resumed_job",
]
