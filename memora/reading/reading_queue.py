"""Which messages are read for memories, and when: the batching policy and the queue it keeps.

The fixed part of an extraction call (instructions and schema, ~900 tokens)
costs the same for "Same here!" as for a paragraph, so a short message is held
and read in one call with the messages after it. Holding loses nothing: the held
message is still in the recent turns the tutor sees verbatim, it is in the
session file's pending list (a crash reads it at the next start), and it is read
at once whenever Memora must be up to date (exit, a new session, undo, a command
that shows what Memora knows). A message that may change the profile or correct
a memory is read at once, the held ones with it, so the learner's "I'm B2 now"
is answered after that reply, not a few turns later. ``plan_reading`` is the whole policy, one pure
function; ``ReadingQueue`` keeps its state (what is pending, what is held).
"""

from __future__ import annotations

import itertools
import logging
import threading
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, replace
from datetime import date, datetime

from pydantic import BaseModel

from memora.core.storage import Guarded
from memora.core.timeutil import said_day
from memora.reading.cues import looks_like_correction, may_change_profile, skips_extraction
from memora.reading.jobs import ExtractionJob, ExtractionResult, PreparedExtraction

log = logging.getLogger("memora")

BATCH_SHORT_TOKENS = 80  # a message this short (tiktoken; under a tenth of the call) may wait for the next one
BATCH_MAX_TOKENS = 300  # one call reads at most this much held text (and Settings.extraction_batch messages)
MAX_EXTRACTION_ATTEMPTS = 3  # a message whose reading keeps failing (bad model, bad server) is dropped with a notice

# Why a plan holds or reads. Each is a row of tests/test_turn_pipeline.py (CASES).
ACKNOWLEDGEMENT = "an acknowledgement or greeting: holds no fact, never read"
UP_TO_DATE = "Memora must be up to date: every held message is read"
ANOTHER_DAY = "held from another day: read on its own, so a batch never spans two days"
READ_EARLY = "read before the reply (a correction): the messages held from its day go with it"
LONG = "long enough to pay for its own call"
PROFILE = "may change the profile: acted on after this reply"
CORRECTION = "looks like a correction: acted on after this reply"
BATCH_FULL = "the batch is full"
TOO_MUCH = "the held text would pass BATCH_MAX_TOKENS"
LEFT_RECENT = "a held message has left the recent turns"
SHORT = "short: waits to be read with the next ones"


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


@dataclass(frozen=True)
class Plan:
    """What to do with the held messages and a new one: ``read`` the batches of
    message ids now (oldest first; a batch's last id is the message it is read
    with), ``hold`` the rest, for ``reasons``."""

    read: tuple[tuple[str, ...], ...]
    hold: tuple[str, ...]
    reasons: tuple[str, ...]


def _by_day(held: Sequence[PendingExtraction]) -> tuple[tuple[str, ...], ...]:
    return tuple(tuple(p.job_id for p in run) for _, run in itertools.groupby(held, key=lambda p: said_day(p.said_at)))


def plan_reading(
    message: PendingExtraction | None,
    held: Sequence[PendingExtraction],
    *,
    count: Callable[[str], int],
    recent: Collection[str],
    batch_size: int,
    read_early: bool = False,
) -> Plan:
    """Hold or read: the batching policy. ``message`` is the one just answered
    (None: Memora must be up to date), ``held`` the messages waiting (oldest first),
    ``recent`` the learner's messages still in the recent turns, ``read_early``
    whether ``message`` was read before its reply. Pure: it changes nothing."""
    if message is None:
        return Plan(read=_by_day(held), hold=(), reasons=(UP_TO_DATE,) if held else ())
    if not read_early and skips_extraction(message.text):
        return Plan(read=(), hold=tuple(p.job_id for p in held), reasons=(ACKNOWLEDGEMENT,))
    # A fact is dated with its batch, and "yesterday" said before midnight must
    # not be read as today's: each message's day is counted where it was said.
    day = said_day(message.said_at)
    other = [p for p in held if said_day(p.said_at) != day]
    same = [p for p in held if said_day(p.said_at) == day]
    tokens = count(message.text)
    now = [
        why
        for applies, why in (
            (read_early, READ_EARLY),
            (tokens > BATCH_SHORT_TOKENS, LONG),
            (may_change_profile(message.text), PROFILE),
            (looks_like_correction(message.text), CORRECTION),
            (len(same) + 1 >= batch_size, BATCH_FULL),
            (sum(count(p.text) for p in same) + tokens > BATCH_MAX_TOKENS, TOO_MUCH),
            (any(p.text not in recent for p in same), LEFT_RECENT),
        )
        if applies
    ]
    reasons = ([ANOTHER_DAY] if other else []) + (now or [SHORT])
    ids = tuple(p.job_id for p in same) + (message.job_id,)
    if now:
        return Plan(read=_by_day(other) + (ids,), hold=(), reasons=tuple(reasons))
    return Plan(read=_by_day(other), hold=ids, reasons=tuple(reasons))


def _job(p: PendingExtraction) -> ExtractionJob:
    return ExtractionJob(p.text, p.said_at, p.job_id, generation=p.generation)


def _batch(messages: Sequence[PendingExtraction]) -> ExtractionJob:
    """One reading of ``messages`` (oldest first), taken with the last of them."""
    *earlier, last = (_job(p) for p in messages)
    return replace(last, earlier=tuple(earlier))


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
    which of them are held (``held``), which this session has known (``known``,
    for ``SessionStore.save``) and which the worker is reading (``reading``)."""

    def __init__(self, lock: threading.RLock, pending: Sequence[PendingExtraction] = ()):
        super().__init__(lock)
        with lock:
            self.pending: tuple[PendingExtraction, ...] = tuple(pending)
            self.held: tuple[str, ...] = ()
            self.known: frozenset[str] = frozenset(p.job_id for p in pending)
            self.reading: frozenset[str] = frozenset()

    def _held(self) -> list[PendingExtraction]:
        return [p for p in self.pending if p.job_id in self.held]

    def said(self, message: PendingExtraction) -> None:
        """A message was answered; an acknowledgement is not kept to be read."""
        with self.lock:
            self.known = self.known | {message.job_id}
            if not skips_extraction(message.text):
                self.pending = (*self.pending, message)

    def plan(self, message: PendingExtraction | None, early: PreparedExtraction | None = None, **policy):
        """Apply ``plan_reading`` to the held messages: what it holds stays held, and
        the readings it asks for are returned, to be submitted in order. They count as
        this session's from now on, so the next save claims them (no write of its own)."""
        with self.lock:
            plan = plan_reading(message, self._held(), read_early=early is not None, **policy)
            self.held = plan.hold
            self.reading = self.reading | {i for ids in plan.read for i in ids}
            said = {p.job_id: p for p in self.pending}
            if message is not None:
                said[message.job_id] = message
            batches = [_batch([said[i] for i in ids]) for ids in plan.read]
            if early is not None and plan.read and plan.read[-1][-1] == message.job_id:
                batches[-1] = replace(batches[-1], prepared=early)
            return plan, batches

    def held_on(self, day: date) -> tuple[ExtractionJob, ...]:
        """The held messages said on ``day``, oldest first (read with a correction read early)."""
        with self.lock:
            return tuple(_job(p) for p in self._held() if said_day(p.said_at) == day)

    def unread_since(self, moment: datetime | None) -> PendingExtraction | None:
        """The newest message not read yet that was said at or after ``moment``."""
        with self.lock:
            unread = [p for p in self.pending if moment is None or p.said_at >= moment]
        return max(unread, key=lambda p: p.said_at) if unread else None

    def drop(self, ids: Collection[str]) -> None:
        """Forgotten, taken back, or read by another process: not this session's to read."""
        with self.lock:
            self.pending = tuple(p for p in self.pending if p.job_id not in ids)
            self.held = tuple(i for i in self.held if i not in ids)
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
            self.pending, self.held = (), ()
            return dropped

    def requeue(self) -> list[ExtractionJob]:
        """Every pending message as a reading again, none held (``reindex``)."""
        with self.lock:
            self.held = ()
            return [resumed_job(p) for p in self.pending]

    def claimed(self, ids: Collection[str]) -> None:
        with self.lock:
            self.reading = self.reading | set(ids)

    def finished(self, job: ExtractionJob) -> None:
        self.drop(set(job.job_ids))

    def failed(self, job: ExtractionJob, remaining: dict | None) -> bool:
        """Keep the reading's messages (or only its ``remaining`` items, with its last
        message) for a later try; True when it was given up after too many failures."""
        with self.lock:
            self.reading = self.reading - set(job.job_ids)  # its claim lapses: read here later, or by another
            earlier = set(job.job_ids[:-1])
            if remaining is not None:  # the batch was read: what is left is kept with its last message
                self.drop(earlier)
            pending, gave_up = [], False
            for p in self.pending:
                if p.job_id in earlier or p.job_id == job.job_id:
                    p = p.model_copy(update={"attempts": p.attempts + 1})
                    if p.job_id == job.job_id and remaining is not None:
                        p = p.model_copy(update={"remaining": remaining})
                    if p.job_id == job.job_id and p.attempts >= MAX_EXTRACTION_ATTEMPTS:
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
    "BATCH_MAX_TOKENS",
    "BATCH_SHORT_TOKENS",
    "MAX_EXTRACTION_ATTEMPTS",
    "Plan",
    "ReadingQueue",
    "plan_reading",
    "resumed_job",
]
