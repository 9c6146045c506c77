"""The extraction worker's side of a session, run on its thread: which messages of a
reading this session may read, and what becomes of a reading that landed or failed.
It changes shared state only through its owners' methods (the queue, the undo log,
``TurnState``), which take the session's lock."""

from __future__ import annotations

import logging

from memora.app.change_log import change_line
from memora.app.conversation import Conversation
from memora.app.turn import TurnState
from memora.core.text_utils import quoted
from memora.reading.extraction import ExtractionWorker, Extractor
from memora.reading.jobs import ExtractionJob, ExtractionOutcome
from memora.reading.reading_queue import MAX_EXTRACTION_ATTEMPTS
from memora.store.deletions import DeletionLog

log = logging.getLogger("memora")


class Reader:
    def __init__(self, *, conversation: Conversation, turn: TurnState, store, deletions: DeletionLog, user: str):
        self.conversation, self.turn, self.store, self.deletions, self.user = conversation, turn, store, deletions, user
        self.queue, self.changes = conversation.queue, conversation.changes

    def start(self, extractor: Extractor) -> ExtractionWorker:
        """The worker thread that reads with ``extractor`` and calls back here."""
        self.worker = ExtractionWorker(extractor, on_outcome=self.landed, on_failure=self.failed, claim=self.claim)
        return self.worker

    def unsaved(self) -> int:
        """How many messages still wait to have their memories read (what ``exit`` waits for)."""
        return len(self.queue.pending) if self.worker.pending else 0

    def retry(self, timeout: float | None) -> int:
        """Queue again every message whose reading failed (``reindex`` calls this once
        the store matches the model again); returns how many."""
        self.worker.wait_idle(timeout)  # whatever is still pending now is not queued
        jobs = self.queue.requeue()  # a job read before keeps only its remaining items
        for job in jobs:
            self.worker.submit(job)
        return len(jobs)

    def claim(self, job: ExtractionJob) -> ExtractionJob | None:
        """``job`` if this session reads it: not said before a 'forget all', nor claimed or
        already read by another running Memora; claimed atomically in the session file."""
        owner = self.conversation.owner
        if job.generation >= self.deletions.newest(self.user) and (
            not job.job_id or job.job_id in self.conversation.sessions.claim([job.job_id], owner)
        ):
            self.queue.claimed({job.job_id})
            return job
        log.info("not reading a message: forgotten or claimed elsewhere")
        self.queue.drop({job.job_id})  # not this session's to read or keep, in the file too
        self.conversation.save()
        return None

    def retract(self, extractor, early, *, at, job_id: str) -> list[str]:
        """(the turn's thread) Apply a correction read before the reply, once the reply is
        out: recorded with the turn's changes; the notices to show with the reply."""
        outcome = ExtractionOutcome()
        extractor.retract(early.retractions, outcome)
        self.turn.skipped(outcome.skipped)
        self.changes.record("turn", [(old, None) for old in outcome.retracted], at=at, job_id=job_id)
        return outcome.notices

    def landed(self, job: ExtractionJob, outcome: ExtractionOutcome) -> None:
        """A reading landed: its changes recorded, then told. The session file takes them
        with its next write (the next turn, a command that changes it, or exit): one write
        per turn. A crash before that reads the message again at the next start, and the
        reading finds its facts already stored; only its undo is lost."""
        self.turn.skipped(outcome.skipped)
        steps = (
            [(None, new) for new in outcome.added]
            + list(outcome.updated)
            + list(outcome.superseded)
            + [(old, None) for old in outcome.retracted]
        )
        self.changes.record("turn", steps, at=self.conversation.clock(), job_id=job.job_id, reviews=outcome.reviews)
        if outcome.retry is not None:  # some items' own calls failed: keep just those
            reason = outcome.retry_reason or "a model call failed"
            self.failed(job, reason, remaining=outcome.retry.model_dump(mode="json"))
        else:
            self.queue.finished(job)
        self.turn.reading_landed(outcome, change_line(self.store, steps, undo_hint=not self.turn.closing))

    def failed(self, job: ExtractionJob, reason: str, remaining: dict | None = None) -> None:
        """Keep the reading's messages (or only its ``remaining`` items) for the next
        start (with the session's next write), unless it has failed too often; say so at
        the next prompt."""
        self.turn.reading_failed(f"{self.conversation.clock().strftime('%H:%M')} {reason}")
        gave_up = self.queue.failed(job, remaining)
        reason = reason.strip().rstrip(".")  # it sits inside brackets: no "failure.)."
        said = quoted(job.text, 60, end="")
        if gave_up:
            note = (
                f"Gave up reading memories from {said} after {MAX_EXTRACTION_ATTEMPTS} "
                f"failures ({reason}). Use 'remember <text>' to keep something by hand."
            )
        else:
            note = (
                f"Could not save memories from {said} yet ({reason}). "
                "Memora will try again after 'reindex' or at the next start."
            )
        self.turn.note_unsaved(note)


__all__ = ["Reader"]
