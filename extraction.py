"""Memory extraction, off the response path.

After each reply the learner's message (never the assistant's reply, seed 003)
goes to a background worker, which makes one structured-output call
(``ExtractionResult``) and then, for each result:

* **facts**: exact and near duplicates refresh the existing memory; a fact with
  related memories gets one structured decision (``MemoryDecision``: ADD,
  UPDATE <id>, SUPERSEDE <id> or NOOP); others are added. Schedule facts get an
  event date, resolved against the time the learner spoke.
* **profile changes**: a new goal or preference is applied with a visible
  notice; setting a level when none is set likewise; changing an existing
  level or removing anything becomes a *proposal* that the learner confirms
  (seed 003, P1 option C).
* **corrections** ("No, I never said ..."): the matching memories are
  superseded and the learner is told what changed (seed 003, P3 A). When a
  message looks like a correction (``looks_like_correction``), it is read
  *before* the reply: the wrong memory is left out of that turn's context, the
  reply is asked to confirm the change, and it is superseded as soon as the
  reply is done.

A failure is recorded (``status`` shows it) and never loses the turn: the
conversation was already saved, and the job stays in the session file, to run
again at the next start, until it succeeds or has failed three times (then the
learner is told).
"""

from __future__ import annotations

import json
import logging
import queue
import re
import threading
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Callable, Literal

from pydantic import BaseModel

from errors import MemoraError, MemoryFullError
from long_term_memory import LongTermMemoryStore, is_near_duplicate
from prompts import CORRECTION_PROMPT, EXTRACTION_PROMPT, RECONCILE_PROMPT
from proposals import ProfileProposal, ProposalStore
from records import CATEGORIES, MemoryRecord
from text_utils import clean_text, quoted, shorten
from timeutil import now_anchor, parse_date, resolve_relative_date
from user_profile import CEFR_LEVELS, UserProfileStore, normalize_level

log = logging.getLogger("memora.extraction")

Category = Literal["name", "identity", "learning", "preference", "hobby", "habit", "schedule", "other"]


class ExtractedFact(BaseModel):
    text: str
    memory_type: Literal["semantic", "episodic"]
    category: Category
    event_phrase: str | None
    event_date: str | None


class ProfileChange(BaseModel):
    field: Literal["english_level", "learning_goal", "preference"]
    action: Literal["set", "add", "remove"]
    value: str
    evidence: str


class Correction(BaseModel):
    statement: str
    evidence: str


class ExtractionResult(BaseModel):
    facts: list[ExtractedFact]
    profile_changes: list[ProfileChange]
    corrections: list[Correction]


class MemoryDecision(BaseModel):
    action: Literal["ADD", "UPDATE", "SUPERSEDE", "NOOP"]
    target_id: str | None
    text: str | None


class CorrectionDecision(BaseModel):
    ids: list[str]


@dataclass(frozen=True)
class Retraction:
    """A memory the learner said is wrong, decided before the reply."""

    record: MemoryRecord
    evidence: str


@dataclass(frozen=True)
class PreparedExtraction:
    """The model's reading of a message, with corrections already matched to memories."""

    result: "ExtractionResult"
    retractions: tuple[Retraction, ...] = ()


@dataclass(frozen=True)
class ExtractionJob:
    text: str
    said_at: datetime
    job_id: str = ""
    prepared: PreparedExtraction | None = None  # set when the reading was done before the reply


@dataclass
class ExtractionOutcome:
    added: list[str] = field(default_factory=list)
    duplicates: list[str] = field(default_factory=list)
    updated: list[tuple[str, str]] = field(default_factory=list)
    superseded: list[tuple[str, str]] = field(default_factory=list)
    retracted: list[str] = field(default_factory=list)
    proposals: list[ProfileProposal] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)
    full: bool = False


_CORRECTION_CUES = re.compile(
    r"^\s*no\b[\s,.!]|\b(never said|never told|didn'?t say|did not say|not what i said|that'?s (not|wrong)|that is not"
    r"|not true|you'?re wrong|you are wrong|wrong about|forget that|i don'?t (want|like|have|live|work)|i'?m not|i am not"
    r"|no longer|not anymore)\b"
    r"|我沒說|我没说|我沒有說|我没有说|不是這樣|不是这样|不對|不对|搞錯|搞错|記錯|记错",
    re.IGNORECASE,
)


def looks_like_correction(text: str) -> bool:
    """A cheap cue that a message may correct a memory ("No, I never said ...").

    A false alarm only costs reading the message before the reply instead of
    after it; a miss means the correction lands after the reply, as any other.
    """
    return bool(_CORRECTION_CUES.search(text))


class Extractor:
    """Turns one learner message into memory and profile changes (synchronous)."""

    def __init__(
        self,
        *,
        model,  # llm.ModelClient (or anything with .parse)
        store: LongTermMemoryStore,
        profiles: UserProfileStore,
        proposals: ProposalStore,
        on_tokens: Callable[[int], None] = lambda n: None,
    ):
        self.model = model
        self.store = store
        self.profiles = profiles
        self.proposals = proposals
        self.on_tokens = on_tokens
        self.cancelled = False  # set when the learner is deleted: write nothing more

    def _parse(self, instructions: str, payload: str, schema, what: str):
        parsed, tokens = self.model.parse(instructions=instructions, input_text=payload, text_format=schema, what=what)
        self.on_tokens(tokens)
        return parsed

    def read(self, job: ExtractionJob) -> ExtractionResult:
        """One structured-output call: what the learner's message says (no writes)."""
        profile = self.profiles.get()
        instructions = EXTRACTION_PROMPT.format(
            now=now_anchor(job.said_at),
            profile=json.dumps(profile.model_dump(), ensure_ascii=False),
        )
        return self._parse(instructions, job.text, ExtractionResult, "Memory extraction")

    def prepare(self, job: ExtractionJob) -> PreparedExtraction:
        """Read the message and match its corrections to memories, writing nothing.

        Used before the reply when a message looks like a correction, so that the
        reply is built without the wrong memory and can confirm what changed.
        """
        result = self.read(job)
        retractions: list[Retraction] = []
        for correction in result.corrections:
            for record in self._match_correction(correction):
                if all(r.record.id != record.id for r in retractions):
                    retractions.append(Retraction(record, shorten(correction.evidence or job.text, 300)))
        return PreparedExtraction(result, tuple(retractions))

    def retract(self, retractions: tuple[Retraction, ...], outcome: ExtractionOutcome | None = None) -> list[str]:
        """Supersede each wrongly remembered memory (no successor); return their ids."""
        done = []
        for retraction in retractions:
            record = self.store.get(retraction.record.id)
            if record is None or not record.is_current:
                continue
            self.store.supersede(record.id, None, reason="correction", note=retraction.evidence)
            done.append(record.id)
            if outcome is not None:
                outcome.retracted.append(record.id)
                outcome.notices.append(f"Got it, I've removed that from memory: {quoted(record.content, 120)}")
        return done

    def extract(self, job: ExtractionJob) -> ExtractionOutcome:
        """Read the message (unless already read) and apply everything it says."""
        outcome = ExtractionOutcome()
        if job.prepared is not None:
            result = job.prepared.result  # its corrections were applied right after the reply
        else:
            result = self.read(job)
            for correction in result.corrections:
                if self.cancelled:
                    return outcome
                self.retract(tuple(Retraction(r, shorten(correction.evidence or job.text, 300)) for r in self._match_correction(correction)), outcome)
        for fact in result.facts:
            if self.cancelled:
                return outcome
            try:
                self._apply_fact(fact, job, outcome)
            except MemoryFullError as error:
                outcome.full = True
                outcome.notices.append(str(error))
                break
        for change in result.profile_changes:
            if self.cancelled:
                return outcome
            self._apply_profile_change(change, job, outcome)
        return outcome

    # -- facts ----------------------------------------------------------------------
    def _event_date(self, fact: ExtractedFact, said_at: datetime) -> date | None:
        if fact.category != "schedule":
            return None
        return resolve_relative_date(fact.event_phrase, said_at) or parse_date(fact.event_date)

    def _apply_fact(self, fact: ExtractedFact, job: ExtractionJob, outcome: ExtractionOutcome) -> None:
        text = clean_text(fact.text)
        if not text:
            return
        category = fact.category if fact.category in CATEGORIES else "other"
        event_date = self._event_date(fact, job.said_at)
        store = self.store
        existing = store.catalog.find_exact(text)
        if existing is not None:
            store.touch(existing.id)
            outcome.duplicates.append(existing.id)
            return
        vector = store.embed([text])[0]  # once, for the neighbours and for storing
        neighbours = [(r, d) for r, d in store.nearest_by_vector(vector, 5) if d <= store.related_distance]
        for record, distance in neighbours:
            if is_near_duplicate(store.embedder.name, text, record.content, distance):
                store.touch(record.id)
                outcome.duplicates.append(record.id)
                return
        decision = MemoryDecision(action="ADD", target_id=None, text=None)
        if neighbours:
            payload = json.dumps(
                {
                    "new_fact": text,
                    "existing_memories": [
                        {"id": r.id, "text": r.content, "saved": r.created_at.date().isoformat()} for r, _ in neighbours
                    ],
                },
                ensure_ascii=False,
            )
            decision = self._parse(RECONCILE_PROMPT, payload, MemoryDecision, "Memory reconciliation")
        targets = {r.id: r for r, _ in neighbours}
        target = targets.get((decision.target_id or "").strip())
        if decision.action == "NOOP" and neighbours:
            store.touch(neighbours[0][0].id)
            outcome.duplicates.append(neighbours[0][0].id)
            return
        if decision.action == "UPDATE" and target is not None:
            new = store.supersede(
                target.id,
                clean_text(decision.text or "") or text,
                reason="update",
                memory_type=fact.memory_type,
                category=category,
                event_date=event_date,
            )
            outcome.updated.append((target.id, new.id))
            return
        if decision.action == "SUPERSEDE" and target is not None:
            new = store.supersede(
                target.id, text, reason="contradiction", memory_type=fact.memory_type, category=category,
                event_date=event_date, vector=vector,
            )
            outcome.superseded.append((target.id, new.id))
            return
        # ADD, or an UPDATE/SUPERSEDE naming no listed memory: adding never hides a true fact.
        added = store.add(
            text,
            memory_type=fact.memory_type,
            category=category,
            created_at=job.said_at,
            source="extracted",
            event_date=event_date,
            dedup=False,
            vector=vector,
        )
        outcome.added.append(added.id)

    # -- corrections ------------------------------------------------------------------
    def _match_correction(self, correction: Correction) -> list[MemoryRecord]:
        """The current memories that state what the learner says is wrong (one decision call)."""
        statement = clean_text(correction.statement)
        if not statement:
            return []
        candidates = [(r, d) for r, d in self.store.nearest(statement, 5) if d <= self.store.related_distance]
        if not candidates:
            return []
        payload = json.dumps(
            {"wrong_fact": statement, "memories": [{"id": r.id, "text": r.content} for r, _ in candidates]},
            ensure_ascii=False,
        )
        decision: CorrectionDecision = self._parse(CORRECTION_PROMPT, payload, CorrectionDecision, "Correction lookup")
        valid = {r.id: r for r, _ in candidates}
        return [valid[i] for i in dict.fromkeys(decision.ids) if i in valid and valid[i].is_current]

    # -- profile ----------------------------------------------------------------------
    def _apply_profile_change(self, change: ProfileChange, job: ExtractionJob, outcome: ExtractionOutcome) -> None:
        profile = self.profiles.get()
        evidence = shorten(change.evidence or job.text, 300)
        if change.field == "english_level":
            try:
                level = normalize_level(change.value)
            except MemoraError:
                return
            if change.action == "remove":
                if profile.english_level:
                    self._propose(ProfileProposal.new("english_level", "remove", profile.english_level, profile.english_level, evidence), outcome)
                return
            if profile.english_level == level:
                return
            if profile.english_level is None:
                self.profiles.set_english_level(level)
                outcome.notices.append(f"Profile: English level set to {level} (from what you said). Change it with 'profile level <level>'.")
                return
            self._propose(ProfileProposal.new("english_level", "set", level, profile.english_level, evidence), outcome)
            return
        kind = "goal" if change.field == "learning_goal" else "preference"
        value = clean_text(change.value)
        if not value:
            return
        if change.action == "remove":
            if self.profiles.has(kind, value):
                self._propose(ProfileProposal.new(change.field, "remove", value, value, evidence), outcome)
            return
        if self.profiles.has(kind, value):
            return
        try:
            added = self.profiles.add_learning_goal(value) if kind == "goal" else self.profiles.add_preference(value)
        except MemoraError as error:
            outcome.notices.append(str(error))
            return
        if added:
            label = "goals" if kind == "goal" else "preferences"
            outcome.notices.append(
                f"Added to your {label}: {quoted(value, 80)} Undo with 'profile remove {kind} {shorten(value, 80)}'."
            )

    def _propose(self, proposal: ProfileProposal, outcome: ExtractionOutcome) -> None:
        if self.proposals.add(proposal):
            outcome.proposals.append(proposal)


class ExtractionWorker:
    """One background thread that runs ``Extractor`` jobs in order."""

    def __init__(
        self,
        extractor: Extractor,
        *,
        on_outcome: Callable[[ExtractionJob, ExtractionOutcome], None],
        on_failure: Callable[[ExtractionJob, str], None],
    ):
        self.extractor = extractor
        self.on_outcome = on_outcome
        self.on_failure = on_failure
        self._queue: "queue.Queue[ExtractionJob | Callable[[], None] | None]" = queue.Queue()
        self._idle = threading.Event()
        self._idle.set()
        self._pending = 0
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._stopping = False
        self._start()

    def _start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="memora-extraction", daemon=True)
        self._thread.start()

    def submit(self, job: ExtractionJob) -> None:
        with self._lock:
            self._pending += 1
            self._idle.clear()
            if self._stopping or self._thread is None or not self._thread.is_alive():
                if self._thread is not None:
                    self._thread.join(timeout=5)
                self._stopping = False
                self._start()  # closed earlier (the REPL ended) and used again
        self._queue.put(job)

    def submit_task(self, task: Callable[[], None]) -> None:
        """Run a small store write after the reply, in order with extraction."""
        self.submit(task)  # type: ignore[arg-type]

    @property
    def pending(self) -> int:
        return self._pending

    def wait_idle(self, timeout: float | None = None) -> bool:
        return self._idle.wait(timeout)

    def close(self, timeout: float | None = 10.0) -> bool:
        """Wait (bounded) for queued jobs, then stop the thread."""
        finished = self.wait_idle(timeout)
        with self._lock:
            self._stopping = True
            self._queue.put(None)
        if finished and self._thread is not None:
            self._thread.join(timeout=5)
        return finished

    def cancel(self, timeout: float = 15.0) -> None:
        """Drop queued jobs, stop the running one before its next write, stop the thread."""
        self.extractor.cancelled = True
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                break
            if item is not None:
                self._done_one()
        with self._lock:
            self._stopping = True
            self._queue.put(None)
        if self._thread is not None:
            self._thread.join(timeout)

    def _run(self) -> None:
        while True:
            job = self._queue.get()
            if job is None:
                return
            if callable(job):
                try:
                    job()
                except Exception:
                    log.exception("background task failed")
                finally:
                    self._done_one()
                continue
            try:
                outcome = self.extractor.extract(job)
            except MemoraError as error:
                log.warning("extraction failed: %s", error)
                self._safe(self.on_failure, job, str(error))
            except Exception as error:  # never let the worker die
                log.exception("extraction crashed")
                self._safe(self.on_failure, job, f"{type(error).__name__}: {error}")
            else:
                self._safe(self.on_outcome, job, outcome)
            finally:
                self._done_one()

    def _done_one(self) -> None:
        with self._lock:
            self._pending -= 1
            if self._pending == 0:
                self._idle.set()

    @staticmethod
    def _safe(callback, *args) -> None:
        try:
            callback(*args)
        except Exception:
            log.exception("extraction callback failed")


__all__ = [
    "CEFR_LEVELS",
    "Correction",
    "CorrectionDecision",
    "ExtractedFact",
    "ExtractionJob",
    "ExtractionOutcome",
    "ExtractionResult",
    "PreparedExtraction",
    "Retraction",
    "looks_like_correction",
    "ExtractionWorker",
    "Extractor",
    "MemoryDecision",
    "ProfileChange",
]
