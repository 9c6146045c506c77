"""Memory extraction, off the response path.

After each reply the learner's message (never the assistant's reply: what the
tutor said is not a fact about the learner) goes to a background worker, which makes one structured-output call
(``ExtractionResult``) and then, for each result:

* **facts**: an exact repeat, or one that says the same thing in words
  (``is_near_duplicate``), refreshes the existing memory; a fact with related
  memories (``Extractor.candidates``: dense, lexical and same-category
  neighbours, capped by tokens) gets one structured decision
  (``MemoryDecision``: ADD, UPDATE, SUPERSEDE or NOOP, naming a memory by its
  number in the listing it was sent); others are added. Schedule facts get an event date, resolved against the time the
  learner spoke.
* **profile changes**: a new goal or preference is applied with a visible
  notice; setting a level when none is set likewise; changing an existing
  level or removing anything becomes a *proposal* that the learner confirms,
  because a misread message must not silently overwrite what was true.
* **mistakes**: real errors in the learner's own English go to the mistake
  ledger (``ledger.LedgerStore.record``), where a repeat of an earlier
  mistake counts against its entry instead of adding one.
* **corrections** ("No, I never said ..."): the matching memories are
  superseded (kept in the history, not deleted) and the learner is told what
  changed, so a wrong correction can be seen and undone. When a
  message looks like a correction (``looks_like_correction``), it is read
  *before* the reply: the wrong memory is left out of that turn's context, the
  reply is asked to confirm the change, and it is superseded as soon as the
  reply is done.

Each fact, profile change and correction is applied on its own
(``Extractor._isolated``). One that cannot be applied (a 5,000-character fact,
an unknown category, a decision naming a memory that is no longer current, any
error) is skipped, logged and counted in ``status``; the others land. Only the
failure of a *call* is retried: when the reading call fails (network, server,
malformed output) the whole job is; when the call inside one item fails (its
decision, its correction lookup, its embedding) that item alone is kept, as a
job holding only the items still to do (``ExtractionOutcome.retry``). Either
way the job stays in the session file, to run again at the next start, until it
succeeds or has failed three times (then the learner is told). Running a job
again is harmless: a fact already stored is an exact duplicate, a goal already
in the profile is not added twice, a retracted memory is no longer current.
"""

from __future__ import annotations

import json
import logging
import math
import queue
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import date, datetime
from typing import Literal

from pydantic import BaseModel, Field, PrivateAttr, ValidationError, field_validator, model_validator

from context_builder import retrieved_text
from long_term_memory import is_near_duplicate
from memora.core.errors import (
    EmbeddingError,
    EmbeddingModelMismatch,
    LimitError,
    MemoraError,
    MemoryFullError,
    ModelCallError,
)
from memora.core.records import CATEGORIES, MAX_MEMORY_CHARS, MEMORY_TYPES, STATUS_SUPERSEDED, MemoryRecord
from memora.core.text_utils import clean_text, normalized_key, quoted, shorten
from memora.core.timeutil import now_anchor, resolve_event_date, to_aware
from memora.model.prompts import (
    CORRECTION_PROMPT,
    EXTRACTION_INPUT,
    EXTRACTION_INPUT_MANY,
    EXTRACTION_PROMPT,
    EXTRACTION_TRACKED,
    MISTAKE_STYLE,
    RECONCILE_MANY_PROMPT,
    RECONCILE_PROMPT,
)
from memora.model.tokens import TokenCounter
from memora.reading.cues import looks_like_correction, may_change_profile, skips_extraction
from memora.reading.proposals import ProfileProposal, ProposalStore
from memora.reading.slots import slot_cues, slots_of
from memora.store import lexical
from memora.store.deletions import DeletedMeanwhile, Fence
from memora.store.index import MemoryIndex
from memora.store.retrieval import Ranked, rank
from memora.teaching import spaced
from memora.teaching.ledger import (
    LedgerStore,
    Mistake,
    NewMistake,
    clean_mistake_text,
    correction_edits,
    correction_excerpt,
)
from user_profile import CEFR_LEVELS, UserProfileStore, normalize_level

log = logging.getLogger("memora.extraction")

Category = Literal[CATEGORIES]  # the structured-output schema offers exactly the stored categories
_LABELS = {"category": (CATEGORIES, "other"), "memory_type": (MEMORY_TYPES, "semantic")}  # choices, fallback


def _nearest_label(field: str, value) -> str:
    choices, fallback = _LABELS[field]
    return next((c for c in choices if c == str(value).strip().casefold()), fallback)


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


class ExtractedMistake(NewMistake):
    """A real error in the learner's own English (``ledger.NewMistake``)."""


class MistakeUse(BaseModel):
    """What a message did with a tracked mistake listed in the reading's input:
    used its corrected form correctly, or made the mistake again."""

    mistake: str  # the entry's id, as listed
    use: Literal["correct", "repeated"]
    evidence: str  # the learner's own words


class AskedWord(BaseModel):
    """A word the learner asked the meaning of: Memora offers to make it a review card."""

    word: str
    meaning: str


_ITEM_MODELS = {
    "facts": ExtractedFact,
    "profile_changes": ProfileChange,
    "corrections": Correction,
    "mistakes": ExtractedMistake,
    "asked_words": AskedWord,
    "mistake_uses": MistakeUse,
}
_ITEM_NAMES = {
    "facts": "fact",
    "profile_changes": "profile change",
    "corrections": "correction",
    "mistakes": "mistake",
    "asked_words": "word",
    "mistake_uses": "mistake use",
}


class ExtractionResult(BaseModel):
    facts: list[ExtractedFact]
    profile_changes: list[ProfileChange]
    corrections: list[Correction]
    mistakes: list[ExtractedMistake]
    asked_words: list[AskedWord]
    mistake_uses: list[MistakeUse]
    # Items the model returned that do not fit their schema: (kind, text, reason).
    # Not part of the schema the model sees; filled while parsing.
    _rejected: list[tuple[str, str, str]] = PrivateAttr(default_factory=list)

    @model_validator(mode="wrap")
    @classmethod
    def _one_item_at_a_time(cls, data, handler):
        """One malformed item (an unknown category, a missing field) is set aside
        instead of failing the whole reading, which would lose its neighbours too.
        A result that is malformed as a whole still fails: that is a failed call."""
        rejected: list[tuple[str, str, str]] = []
        if isinstance(data, dict):
            data = dict(data)
            # A reading saved in the session file before mistakes were read has none.
            data.setdefault("mistakes", [])
            data.setdefault("asked_words", [])
            data.setdefault("mistake_uses", [])
            for key, model in _ITEM_MODELS.items():
                items = data.get(key)
                if not isinstance(items, list):
                    continue
                kept = []
                for item in items:
                    if isinstance(item, model):
                        kept.append(item)
                        continue
                    try:
                        kept.append(model.model_validate(item))
                    except ValidationError as error:
                        # A bad label does not lose a valid text: it takes its nearest valid value.
                        bad = {e["loc"][0] for e in error.errors() if e["type"] == "literal_error"}
                        try:
                            if not isinstance(item, dict) or not bad or not bad <= _LABELS.keys():
                                raise error
                            fixed = {f: _nearest_label(f, item[f]) for f in sorted(bad)}
                            kept.append(model.model_validate({**item, **fixed}))
                            how = ", ".join(f"{f} {item[f]!r} stored as {v!r}" for f, v in fixed.items())
                            rejected.append((_ITEM_NAMES[key], _item_label(item), shorten(how, 80)))
                        except ValidationError as error:
                            rejected.append((_ITEM_NAMES[key], _item_label(item), _validation_reason(error)))
                data[key] = kept
        result = handler(data)
        result._rejected = rejected + list(result._rejected)
        return result


def _item_label(item) -> str:
    if isinstance(item, dict):
        item = (
            item.get("text")
            or item.get("statement")
            or item.get("value")
            or item.get("original")
            or item.get("word")
            or item
        )
    return shorten(str(item), 60)


def _validation_reason(error: ValidationError) -> str:
    first = error.errors()[0]
    where = ".".join(str(part) for part in first.get("loc", ())) or "item"
    value = first.get("input")
    return shorten(f"invalid {where} {value!r}" if first.get("type") != "missing" else f"missing {where}", 80)


def _listed_number(value: object) -> int | None:
    """A memory's number in the decision's listing, or None for anything but a plain
    integer ("2", 2.0, true, an id): an answer that names no listed memory adds the
    new fact rather than changing a memory it may not mean."""
    return value if type(value) is int else None


# The schema still requires every field (the SDK makes it strict, and a None
# default is left out of it); the defaults only make an answer that lacks one
# name no memory, like any other answer that names none.
class MemoryDecision(BaseModel):
    action: Literal["ADD", "UPDATE", "SUPERSEDE", "NOOP"]
    memory: int | None = None  # its number in the listing
    text: str | None = None  # UPDATE's merged text

    @field_validator("memory", mode="before")
    @classmethod
    def _number(cls, value: object) -> int | None:
        return _listed_number(value)


class FactDecision(MemoryDecision):
    """One new fact's decision in a shared answer: MemoryDecision's fields, and which fact."""

    fact: str  # its letter in the list of new facts
    earlier: str | None = None  # the letter of an earlier new fact it repeats, refines or replaces


class MemoryDecisions(BaseModel):
    """Decisions about several new facts of one reading, in one call."""

    decisions: list[FactDecision]

    @field_validator("decisions", mode="before")
    @classmethod
    def _each_on_its_own(cls, value: object) -> object:
        """A malformed decision is dropped, not the whole answer: its fact is then
        decided by a call of its own, and the others keep theirs."""
        if not isinstance(value, list):
            return value  # not a list at all: a malformed answer
        kept = []
        for item in value:
            try:
                kept.append(item if isinstance(item, FactDecision) else FactDecision.model_validate(item))
            except ValidationError:
                log.warning("a malformed decision in a shared answer: %s", shorten(repr(item), 80))
        return kept


def _fact_label(index: int) -> str:
    return chr(ord("A") + index) if index < 26 else f"A{index}"


def _fact_index(label: str, count: int) -> int | None:
    wanted = (label or "").strip().rstrip(".").upper()
    return next((n for n in range(count) if _fact_label(n) == wanted), None)


@dataclass(frozen=True)
class SharedDecision:
    """One fact's part of a shared answer: the decision, and what it acts on, either a
    listed memory (its id) or an earlier new fact of the reading (its plan, resolved
    by ``on`` to the memory that fact left once it is applied)."""

    decision: MemoryDecision
    memory: str | None = None
    earlier: PlannedFact | None = None

    def on(self, memory: str | None) -> SharedDecision:
        return replace(self, memory=memory)


@dataclass
class PlannedFact:
    """A new fact checked, embedded and beside its related memories, waiting for its decision."""

    fact: ExtractedFact
    text: str
    memory_type: str
    category: str
    event_date: date | None
    vector: list[float]
    candidates: list[Candidate]
    said_at: datetime  # when the message it came from was said
    generation: int = 0  # that message's deletion generation
    message: str = ""  # and its id


class CorrectionDecision(BaseModel):
    memories: list[int] = Field(default_factory=list)  # numbers in the listing

    @field_validator("memories", mode="before")
    @classmethod
    def _numbers(cls, value: object) -> object:
        if not isinstance(value, list):
            return value  # not a list at all: a malformed answer
        return [n for item in value if (n := _listed_number(item)) is not None]


@dataclass(frozen=True)
class Retraction:
    """A memory the learner said is wrong, decided before the reply."""

    record: MemoryRecord
    evidence: str


@dataclass(frozen=True)
class PreparedExtraction:
    """The model's reading of a message, with corrections already matched to memories."""

    result: ExtractionResult
    retractions: tuple[Retraction, ...] = ()


@dataclass(frozen=True)
class ExtractionJob:
    text: str
    said_at: datetime
    job_id: str = ""
    prepared: PreparedExtraction | None = None  # set when the reading was done before the reply
    # Short messages held back to be read with this one (oldest first): one call
    # reads them all, so its fixed instructions and schema are paid once.
    earlier: tuple[ExtractionJob, ...] = ()
    # The deletion generation when the message was said: a deletion after it covers
    # what reading it would write (deletions.py).
    generation: int = 0

    @property
    def messages(self) -> tuple[ExtractionJob, ...]:
        return (*self.earlier, self)

    @property
    def job_ids(self) -> tuple[str, ...]:
        return tuple(m.job_id for m in self.messages)

    def holds(self, words: str) -> bool:
        """Whether the learner wrote ``words`` in one of the job's messages."""
        key = normalized_key(words)
        return any(key in normalized_key(m.text) for m in self.messages)

    def said_at_of(self, words: str | None) -> datetime:
        """When the message holding ``words`` was said (the latest one holding them);
        the job's own time when none does."""
        return self.message_of(words).said_at

    def message_of(self, words: str | None) -> ExtractionJob:
        """The message holding ``words`` (the latest one holding them); the job's own when none does."""
        if words:
            key = normalized_key(words)
            for message in reversed(self.messages):
                if key and key in normalized_key(message.text):
                    return message
        return self

    def message_of_fact(self, fact: ExtractedFact) -> ExtractionJob:
        """The message a fact of the reading came from: the one holding its time phrase,
        else the one sharing most of its words (the fact is the learner's words retold),
        the latest on a tie. A message on its own is its own."""
        if not self.earlier:
            return self
        if fact.event_phrase and self.message_of(fact.event_phrase) is not self:
            return self.message_of(fact.event_phrase)
        words = set(lexical.query_terms(fact.text)) - _SUBJECT_TERMS
        best, best_shared = self, -1
        for message in self.messages:
            shared = len(words & set(lexical.query_terms(message.text)))
            if shared >= best_shared:
                best, best_shared = message, shared
        return best

    @property
    def oldest_generation(self) -> int:
        return min(m.generation for m in self.messages)


@dataclass(frozen=True)
class Skipped:
    """One item of an extraction result that could not be applied (shown in ``status``)."""

    kind: str  # "fact", "profile change", "correction"
    text: str  # the item, shortened
    reason: str  # one line


@dataclass
class ExtractionOutcome:
    added: list[str] = field(default_factory=list)
    duplicates: list[str] = field(default_factory=list)
    updated: list[tuple[str, str]] = field(default_factory=list)
    superseded: list[tuple[str, str]] = field(default_factory=list)
    retracted: list[str] = field(default_factory=list)
    proposals: list[ProfileProposal] = field(default_factory=list)
    mistakes: list[str] = field(default_factory=list)  # ledger ids, new or counted again
    reviews: list[tuple[str, datetime]] = field(default_factory=list)  # (ledger id, said at): undoable reviews
    notices: list[str] = field(default_factory=list)
    full: bool = False  # the memory cap was reached
    full_notice: str | None = None  # the notice saying so (one of ``notices``)
    skipped: list[Skipped] = field(default_factory=list)
    dropped: int = 0  # items a deletion since their message was said covers (not shown: they are forgotten)
    # Items whose own model or embedding call failed: run them again later.
    retry: ExtractionResult | None = None
    retry_reason: str | None = None


# Failures of an outside call inside one item: the item itself is fine, so it is
# kept to run again rather than counted as bad.
RETRYABLE_ERRORS = (ModelCallError, EmbeddingError, EmbeddingModelMismatch)

# What the decision (and the correction lookup) is shown: the union of
#  * dense neighbours within the store's related distance (up to 30),
#  * lexical neighbours on the fact's own words, BM25 over the catalog's FTS5
#    index (up to 30) -- "moved to Tokyo" finds every Tokyo memory,
#  * current memories of the same category (the 500 newest, so a fact said a
#    year ago is still among them; scoring 500 stored vectors takes a few
#    milliseconds off the response path) -- "moved to Tokyo" finds "lives in
#    Taipei", which shares no word with it and which dense neighbours about
#    Tokyo would crowd out,
#  * current memories the learner stored with ``remember`` (the 500 newest).
#    They carry no category of their own ("other"), so the category pool can
#    never find them, yet "remember I live in Taipei" is exactly the kind of
#    fact a later "moved to Tokyo" replaces; whatever the new fact's category,
#    they are candidates.
# Each source is ranked by retrieval's fused score and the four are taken in
# turn, best first, until DECISION_CANDIDATE_TOKENS are spent. A memory is sent
# as one numbered line (``Extractor._listing``) but charged its line's tokens
# plus DECISION_MEMORY_CHARGE, so the budget bounds how many memories are
# listed as well as how long they are: about 36 short facts ("The learner
# lives in Taipei.", 8 tokens a line) or 27 of an extracted fact's usual length
# (20 tokens), which is what keeps the contradicted memory among them in a
# crowded store (tests/test_decision_candidates.py), for 300 to 550 tokens, paid
# only for facts that have related memories. A fixed count would either hide
# the contradicted memory in a crowded store or pad the call in an empty one.
DECISION_CANDIDATE_TOKENS = 1200
DECISION_MEMORY_CHARGE = 24
DECISION_DENSE = 30
DECISION_LEXICAL = 30
DECISION_SAME_CATEGORY = 500
# Words every extracted fact shares ("The learner ..."): they find nothing.
_SUBJECT_TERMS = frozenset(lexical.terms("learner"))


@dataclass(frozen=True)
class Candidate:
    """A current memory shown to a decision, with its cosine distance to the new text
    and its text as the decision reads it (``Extractor._shown``)."""

    record: MemoryRecord
    distance: float
    shown: str


def _day(moment: datetime | None):
    return to_aware(moment).astimezone().date() if moment is not None else None


def _when(moment: datetime | None, days: set) -> str:
    """ " (2 Dec)", or " (2 Dec 10:00)" on one of ``days`` (a new fact's): when it was said."""
    if moment is None:
        return ""
    local = to_aware(moment).astimezone()
    label = f"{local.day} {local:%b}" + (f" {local:%H:%M}" if local.date() in days else "")
    return f" ({label})"


def _merged_text(plan: PlannedFact, decision: MemoryDecision) -> str:
    """An UPDATE's merged text, or the learner's fact as said when the merged text is unusable."""
    merged = clean_text(decision.text or "")
    return plan.text if not merged or len(merged) > MAX_MEMORY_CHARS else merged


def _by_source(
    ranked: list[Ranked], dense_ids: set[str], scored: dict[str, tuple], pools: list[list[str]]
) -> list[list[Ranked]]:
    """The ranked candidates of each source, best first: the dense search, the
    lexical one (those with a word in common), then each pool in turn."""
    pool_sets = [set(pool) for pool in pools]
    return [
        [r for r in ranked if r.id in dense_ids],
        [r for r in ranked if scored[r.id][1] > 0],
        *[[r for r in ranked if r.id in pool] for pool in pool_sets],
    ]


def _newer(record: MemoryRecord, said_at: datetime) -> bool:
    """Whether the memory was said (or edited) after ``said_at``."""
    return _before(said_at, record.created_at)


def _before(a: datetime, b: datetime) -> bool:
    return to_aware(a) < to_aware(b)


class Extractor:
    """Turns one learner message into memory and profile changes (synchronous)."""

    def __init__(
        self,
        *,
        model,  # llm.ModelClient (or anything with .parse)
        store: MemoryIndex,
        profiles: UserProfileStore,
        proposals: ProposalStore,
        on_tokens: Callable[[int], None] = lambda n: None,
        on_embedding_tokens: Callable[[int], None] = lambda n: None,
        counter: TokenCounter | None = None,
        ledger: LedgerStore | None = None,
        watched: Callable[[str], list[Mistake]] = lambda text: [],
    ):
        self.model = model
        self.store = store
        self.deletions = store.deletions
        self.ledger = ledger
        # The tracked mistakes the tutor's background shows for a message: the
        # reading reports what the message did with each of them.
        self.watched = watched
        self.profiles = profiles
        self.proposals = proposals
        self.on_tokens = on_tokens  # the model's tokens, counted as "extraction"
        self.on_embedding_tokens = on_embedding_tokens  # counted as "embeddings", on this thread
        self.counter = counter or TokenCounter()
        self.cancelled = False  # set when the learner is deleted: write nothing more

    def _parse(self, instructions: str, payload: str, schema, what: str):
        parsed, tokens = self.model.parse(instructions=instructions, input_text=payload, text_format=schema, what=what)
        self.on_tokens(tokens)
        return parsed

    def _embed(self, text: str) -> list[float]:
        embedded = self.store.embed([text])
        self.on_embedding_tokens(embedded.tokens)
        return embedded.vectors[0]

    def read(self, job: ExtractionJob) -> ExtractionResult:
        """One structured-output call: what the learner's message says (no writes)."""
        profile = self.profiles.get()
        shown = profile.model_dump(include={"english_level", "learning_goals", "preferences"})
        instructions = EXTRACTION_PROMPT.format(mistake_style=MISTAKE_STYLE[profile.corrections])
        if job.earlier:
            day = job.said_at.date()
            message = "\n".join(
                f"[{m.said_at.strftime('%H:%M' if m.said_at.date() == day else '%Y-%m-%d %H:%M')}] {m.text}"
                for m in job.messages
            )
            template = EXTRACTION_INPUT_MANY
        else:
            message, template = job.text, EXTRACTION_INPUT
        payload = template.format(
            now=now_anchor(job.said_at), profile=json.dumps(shown, ensure_ascii=False), message=message
        )
        tracked = self._tracked(job)
        if tracked:
            payload += EXTRACTION_TRACKED.format(
                mistakes="\n".join(
                    f"- {m.id}: {quoted(a, 60, end='')} → {quoted(b, 60, end='')}"
                    for m in tracked
                    for a, b in [correction_excerpt(m.latest.original, m.latest.corrected, context=1)]
                )
            )
        return self._parse(instructions, payload, ExtractionResult, "Memory extraction")

    def _tracked(self, job: ExtractionJob) -> list[Mistake]:
        """The tracked mistakes shown in the background for the job's messages (once
        each) on which a right use would count today. The others are not listed: a
        right use of one would change nothing, and making it again is read as any
        mistake is (``mistakes``), which counts as a lapse on its card."""
        if self.ledger is None:
            return []
        found: dict[str, Mistake] = {}
        today = self.ledger.today(job.said_at)
        for message in job.messages:
            for entry in self.watched(message.text):
                if entry.latest is not None and self.ledger.passable(entry, today):
                    found.setdefault(entry.id, entry)
        return list(found.values())

    def prepare(self, job: ExtractionJob) -> PreparedExtraction:
        """Read the message and match its corrections to memories, writing nothing.

        Used before the reply when a message looks like a correction, so that the
        reply is built without the wrong memory and can confirm what changed. A
        correction that could not be matched now stays in the result, to be
        matched again after the reply.
        """
        result = self.read(job)
        retractions: list[Retraction] = []
        unmatched: list[Correction] = []
        for correction in result.corrections:
            try:
                matched = self._match_correction(correction)
            except Exception:
                unmatched.append(correction)
                continue
            for record in matched:
                if all(r.record.id != record.id for r in retractions):
                    retractions.append(Retraction(record, shorten(correction.evidence or job.text, 300)))
        return PreparedExtraction(result.model_copy(update={"corrections": unmatched}), tuple(retractions))

    def retract(self, retractions: tuple[Retraction, ...], outcome: ExtractionOutcome | None = None) -> list[str]:
        """Supersede each wrongly remembered memory (no successor); return their ids."""
        outcome = outcome if outcome is not None else ExtractionOutcome()
        done: list[str] = []
        for retraction in retractions:
            self._isolated(
                outcome,
                "correction",
                retraction.record.content,
                lambda r=retraction: self._retract_one(r, outcome, done),
            )
        return done

    def _retract_one(self, retraction: Retraction, outcome: ExtractionOutcome, done: list[str]) -> None:
        record = self.store.get(retraction.record.id)
        if record is None or not record.is_current:
            return  # already retracted (a job run again), or forgotten meanwhile
        self.store.supersede(record.id, None, reason="correction", note=retraction.evidence)
        done.append(record.id)
        outcome.retracted.append(record.id)
        # Superseded, not deleted: it stays in 'memories --all' and 'history', so the notice says so.
        outcome.notices.append(
            f"Got it, that is superseded ('memories --all' still lists it): {quoted(record.content, 120)}"
        )

    def _fence(self, message: ExtractionJob) -> Fence:
        return Fence(self.store.user_id, message.generation, message.job_id)

    def extract(self, job: ExtractionJob) -> ExtractionOutcome:
        """Read the message (unless already read) and apply everything it says, item by item.

        Each write is made under the fence of the message it came from: a deletion
        since that message was said covers it, and it is dropped (``deletions.py``)."""
        outcome = ExtractionOutcome()
        if all(self.deletions.covers(self._fence(m)) for m in job.messages):
            return outcome  # what it said was deleted after it was said (or taken back): not even read
        result = job.prepared.result if job.prepared is not None else self.read(job)
        outcome.skipped.extend(Skipped(*rejected) for rejected in result._rejected)
        again: dict[str, list] = {
            "facts": [],
            "profile_changes": [],
            "corrections": [],
            "mistakes": [],
            "asked_words": [],
            "mistake_uses": [],
        }
        for correction in result.corrections:
            if self.cancelled:
                return outcome
            self._isolated(
                outcome,
                "correction",
                correction.statement,
                lambda c=correction: self.retract(
                    tuple(Retraction(r, shorten(c.evidence or job.text, 300)) for r in self._match_correction(c)),
                    outcome,
                ),
                again=again["corrections"],
                item=correction,
                fence=self._fence(job.message_of(correction.evidence)),
            )
        if self._apply_facts(result.facts, job, outcome, again["facts"]):
            return outcome
        for change in result.profile_changes:
            if self.cancelled:
                return outcome
            self._isolated(
                outcome,
                "profile change",
                f"{change.field} {change.action} {change.value}",
                lambda c=change: self._apply_profile_change(c, job, outcome),
            )
        for mistake in result.mistakes if self.ledger is not None else ():
            if self.cancelled:
                return outcome
            self._isolated(
                outcome,
                "mistake",
                mistake.original,
                lambda m=mistake: self._apply_mistake(m, job, outcome),
                fence=self._fence(job.message_of(mistake.original)),
            )
        for use in result.mistake_uses if self.ledger is not None else ():
            if self.cancelled:
                return outcome
            self._isolated(
                outcome,
                "mistake use",
                use.evidence,
                lambda u=use: self._apply_use(u, job, outcome),
                fence=self._fence(job.message_of(use.evidence)),
            )
        for asked in result.asked_words if self.ledger is not None else ():
            if self.cancelled:
                return outcome
            self._isolated(
                outcome,
                "word",
                asked.word,
                lambda a=asked: self._offer_word(a, job, outcome),
                fence=self._fence(job.message_of(asked.word)),
            )
        if any(again.values()):
            outcome.retry = ExtractionResult(**again)
        return outcome

    def _isolated(
        self,
        outcome: ExtractionOutcome,
        kind: str,
        label: str,
        apply: Callable[[], object],
        *,
        again: list | None = None,
        item=None,
        fence: Fence | None = None,
    ) -> None:
        """Apply one item (its writes under ``fence``); whatever goes wrong stays with that item."""
        try:
            with self.deletions.fenced(fence):
                apply()
        except DeletedMeanwhile as dropped:  # the learner forgot it since: nothing to say, nothing to retry
            log.info("dropped a %s of a reading: %s", kind, dropped)
            outcome.dropped += 1
        except RETRYABLE_ERRORS as error:
            if again is None:
                outcome.skipped.append(Skipped(kind, shorten(label, 60), shorten(str(error), 120)))
                return
            log.warning("%s kept to retry: %s", kind, error)
            again.append(item)
            outcome.retry_reason = str(error)
        except MemoryFullError as error:
            outcome.full, outcome.full_notice = True, str(error)
            outcome.notices.append(str(error))
            outcome.skipped.append(Skipped(kind, shorten(label, 60), "memory is full"))
        except Exception as error:  # one bad item must never cost the others
            reason = str(error) if isinstance(error, MemoraError) else f"{type(error).__name__}: {error}"
            if not isinstance(error, MemoraError):  # a bug, not bad input: keep the traceback
                log.exception("unexpected error applying a %s", kind)
            outcome.skipped.append(Skipped(kind, shorten(label, 60), shorten(reason, 120)))

    # -- facts ----------------------------------------------------------------------
    def _event_date(self, fact: ExtractedFact, said_at: datetime) -> date | None:
        if fact.category != "schedule":
            return None
        return resolve_event_date(fact.event_date, fact.event_phrase, said_at, sentence=fact.text)

    def _apply_facts(
        self, facts: list[ExtractedFact], job: ExtractionJob, outcome: ExtractionOutcome, again: list
    ) -> bool:
        """Each fact of a reading, on its own: planned (checked, embedded, its related
        memories found), decided, applied in order. The facts that need a decision
        share one call: those with related memories, and those related to another
        new fact of the reading (close in meaning, or a word in common), which the
        call may name by its letter ("I live in Tokyo. Well, Osaka.": Osaka replaces
        Tokyo). A related fact the shared answer leaves out is planned again once
        the facts before it are stored and decided on its own, as one at a time.
        Returns True when the learner was deleted meanwhile."""
        vectors: dict[str, list[float]] = {}  # a fact planned again is not embedded again
        plans = self._plan_facts(facts, job, outcome, again, vectors)
        if plans is None:
            return True
        # In the order they were said: of two facts about one thing, the later one is applied last and holds.
        plans.sort(key=lambda p: to_aware(p.said_at))
        after_related, deciding = self._relations(plans)
        plans, decisions = self._decide_shared(plans, deciding, outcome, again)
        return self._apply_plans(plans, decisions, after_related, job, outcome, vectors, again)

    def _plan_facts(
        self,
        facts: list[ExtractedFact],
        job: ExtractionJob,
        outcome: ExtractionOutcome,
        again: list,
        vectors: dict[str, list[float]],
    ) -> list[PlannedFact] | None:
        """Each fact planned on its own (``_plan_fact``); None when the learner was deleted meanwhile."""
        plans: list[PlannedFact] = []
        for fact in facts:
            if self.cancelled:
                return None
            if outcome.full:  # nothing more can be added; the learner was told
                outcome.skipped.append(Skipped("fact", shorten(fact.text, 60), "memory is full"))
                continue
            self._isolated(
                outcome,
                "fact",
                fact.text,
                lambda f=fact: plans.extend(self._plan_fact(f, job, outcome, vectors)),
                again=again,
                item=fact,
            )
        return plans

    def _relations(self, plans: list[PlannedFact]) -> tuple[dict[int, bool], list[PlannedFact]]:
        """Which plans (by id) come after a related fact of the reading, and the plans
        that need a decision: those with related memories or a related new fact."""
        pairs = {(a, b) for b in range(len(plans)) for a in range(b) if self._related(plans[a], plans[b])}
        after_related = {id(p): any((a, n) in pairs for a in range(n)) for n, p in enumerate(plans)}
        related = {n for pair in pairs for n in pair}
        deciding = [p for n, p in enumerate(plans) if p.candidates or n in related]
        return after_related, deciding

    def _decide_shared(
        self, plans: list[PlannedFact], deciding: list[PlannedFact], outcome: ExtractionOutcome, again: list
    ) -> tuple[list[PlannedFact], dict[int, SharedDecision]]:
        """One call for the facts that need a decision (when there are two or more):
        the plans still to apply and the shared decisions by plan id."""
        if len(deciding) <= 1 or self.cancelled:
            return plans, {}
        try:
            return plans, self._decide_many(deciding)
        except RETRYABLE_ERRORS as error:  # their own (shared) call failed: all kept to run again
            log.warning("%d facts kept to retry: %s", len(deciding), error)
            again.extend(p.fact for p in deciding)
            outcome.retry_reason = str(error)
            kept = {id(p) for p in deciding}
            return [p for p in plans if id(p) not in kept], {}
        except Exception:  # a bug: each fact gets its own call instead
            log.exception("the shared decision failed; deciding each fact on its own")
            return plans, {}

    def _apply_plans(
        self,
        plans: list[PlannedFact],
        decisions: dict[int, SharedDecision],
        after_related: dict[int, bool],
        job: ExtractionJob,
        outcome: ExtractionOutcome,
        vectors: dict[str, list[float]],
        again: list,
    ) -> bool:
        """Each plan applied in order, each on its own; True when the learner was deleted meanwhile."""
        stored: dict[int, str] = {}  # plan -> the memory it left (added, changed or seen again)
        for plan in plans:
            if self.cancelled:
                return True
            if outcome.full:
                outcome.skipped.append(Skipped("fact", shorten(plan.text, 60), "memory is full"))
                continue
            shared = decisions.get(id(plan))
            if shared is not None and shared.earlier is not None:
                shared = shared.on(stored.get(id(shared.earlier)))
            self._isolated(
                outcome,
                "fact",
                plan.text,
                lambda p=plan, d=shared: self._apply_one(p, d, job, outcome, vectors, stored, after_related[id(p)]),
                again=again,
                item=plan.fact,
                fence=Fence(self.store.user_id, plan.generation, plan.message),
            )
        return False

    def _apply_one(
        self,
        plan: PlannedFact,
        shared: SharedDecision | None,
        job: ExtractionJob,
        outcome: ExtractionOutcome,
        vectors: dict[str, list[float]],
        stored: dict[int, str],
        after_related: bool,
    ) -> None:
        key = id(plan)  # later facts name this one by its first plan, even once it is planned again
        if after_related:
            # After a fact it may repeat or change: planned again, so a repeat of what
            # that fact just stored is caught (and seen again), and a call of its own
            # is decided against that fact's memory, as one at a time would be.
            fresh = self._plan_fact(plan.fact, job, outcome, vectors)
            if not fresh:
                return  # the earlier fact stored it already
            plan = fresh[0]
        memory = self._apply_planned(plan, shared, outcome)
        if memory is not None:
            stored[key] = memory

    def _related(self, a: PlannedFact, b: PlannedFact) -> bool:
        """Whether one new fact may change what the other says (see _apply_facts): the
        same slot (a job, a home: ``slots.py``), a word in common, or within the store's
        related distance. A shared category alone is not enough (most facts of a
        reading share one); a decision that names a memory an earlier fact changed is
        decided again anyway."""
        if slots_of(a.text) & slots_of(b.text):
            return True
        words = set(lexical.query_terms(a.text)) - _SUBJECT_TERMS
        if words & (set(lexical.query_terms(b.text)) - _SUBJECT_TERMS):
            return True
        dot = sum(x * y for x, y in zip(a.vector, b.vector))
        norms = math.sqrt(sum(x * x for x in a.vector)) * math.sqrt(sum(y * y for y in b.vector))
        return bool(norms) and 1.0 - dot / norms <= self.store.related_distance

    def _plan_fact(
        self,
        fact: ExtractedFact,
        job: ExtractionJob,
        outcome: ExtractionOutcome,
        vectors: dict[str, list[float]] | None = None,
    ) -> list[PlannedFact]:
        """Everything about one fact short of the decision; [] when it is already stored."""
        vectors = {} if vectors is None else vectors
        store = self.store
        # Checked before anything is embedded or asked: raises for an empty or over-long text.
        text, memory_type, category = store.validate(fact.text, fact.memory_type, fact.category)
        event_date = self._event_date(fact, job.said_at_of(fact.event_phrase))
        existing = store.find_exact(text)
        if existing is not None:
            self._refresh(existing.id, outcome)
            return []
        said = job.message_of_fact(fact)
        replaced = store.find_exact(text, status=STATUS_SUPERSEDED)
        if replaced is not None and replaced.valid_until is not None and _before(said.said_at, replaced.valid_until):
            # Old news: this very text was changed (an edit, a later fact) after it was said.
            outcome.skipped.append(Skipped("fact", shorten(text, 60), f"said before {replaced.id[:6]} was changed"))
            return []
        vector = vectors.get(text) or self._embed(text)  # once, for the candidates and for storing
        vectors[text] = vector
        candidates = self.candidates(text, vector, category)
        repeat = self._repeat_of(text, candidates)
        if repeat is not None:
            self._refresh(repeat.record.id, outcome)
            return []
        return [
            PlannedFact(
                fact,
                text,
                memory_type,
                category,
                event_date,
                vector,
                candidates,
                said.said_at,
                said.generation,
                said.job_id,
            )
        ]

    def _repeat_of(self, text: str, candidates: list[Candidate]) -> Candidate | None:
        """The listed memory that already says ``text`` (see is_near_duplicate), nearest first."""
        return next(
            (
                c
                for c in sorted(candidates, key=lambda c: c.distance)
                if is_near_duplicate(self.store.embedder.name, text, c.record.content, c.distance)
            ),
            None,
        )

    def _apply_planned(
        self, plan: PlannedFact, shared: SharedDecision | None, outcome: ExtractionOutcome
    ) -> str | None:
        """Apply one planned fact: its decision from a shared call, else its own call.
        A shared decision naming a memory that changed since it was listed is not
        acted on: the fact is decided again, on its own, against the store as it is."""
        if shared is not None:
            self._not_forgotten(shared.decision, shared.memory)
            target = self.store.get(shared.memory) if shared.memory else None
            if (shared.memory or shared.earlier is not None) and (target is None or not target.is_current):
                plan = replace(plan, candidates=self.candidates(plan.text, plan.vector, plan.category))
                shared = None
                repeat = self._repeat_of(plan.text, plan.candidates)
                if repeat is not None:  # the fact that changed it said this very thing
                    self._refresh(repeat.record.id, outcome)
                    return repeat.record.id
        if shared is None:
            decision, target = self._own_decision(plan)
        else:
            decision = shared.decision
        return self._carry_out(plan, decision, target, outcome)

    def _own_decision(self, plan: PlannedFact) -> tuple[MemoryDecision, MemoryRecord | None]:
        """The fact's own decision call, and the listed memory it names."""
        decision, target = self._decide(plan.text, plan.candidates, plan.said_at)
        if decision.memory is not None and 1 <= decision.memory <= len(plan.candidates):
            self._not_forgotten(decision, plan.candidates[decision.memory - 1].record.id)
        return decision, target

    def _carry_out(
        self, plan: PlannedFact, decision: MemoryDecision, target: MemoryRecord | None, outcome: ExtractionOutcome
    ) -> str | None:
        """Act on a decision: the memory the fact leaves (added, changed or seen
        again), or None when it is old news."""
        if decision.action in ("UPDATE", "SUPERSEDE") and target is not None and _newer(target, plan.said_at):
            # Newer wins, by when it was said: a fact said before the memory it would
            # change (a held message read after an edit, an older message read later)
            # is old news, and never overturns it.
            outcome.skipped.append(
                Skipped("fact", shorten(plan.text, 60), f"said before memory {target.id[:6]}, which is newer")
            )
            return None
        if decision.action == "NOOP":
            known = self._still_saying(plan, target)
            if known is not None:  # "already stored": only ever a memory that still says it
                self._refresh(known.id, outcome)
                return known.id
        if decision.action == "UPDATE" and target is not None:
            new = self._supersede(plan, target, _merged_text(plan, decision), "update")
            outcome.updated.append((target.id, new.id))
            return new.id
        if decision.action == "SUPERSEDE" and target is not None:
            # The new fact contradicts the memory: stored as said, with the vector it was planned with.
            new = self._supersede(plan, target, plan.text, "contradiction", vector=plan.vector)
            outcome.superseded.append((target.id, new.id))
            return new.id
        # ADD, or an UPDATE/SUPERSEDE naming no current listed memory: adding never hides a true fact.
        return self._add(plan, outcome)

    def _still_saying(self, plan: PlannedFact, target: MemoryRecord | None) -> MemoryRecord | None:
        """The memory a NOOP means: the one it names, else the nearest listed memory still current."""
        current = [c for c in plan.candidates if (r := self.store.get(c.record.id)) is not None and r.is_current]
        return target or (min(current, key=lambda c: c.distance).record if current else None)

    def _supersede(
        self, plan: PlannedFact, target: MemoryRecord, text: str, reason: str, vector: list[float] | None = None
    ) -> MemoryRecord | None:
        """``target`` replaced by ``text``, with the fact's type, category, date and time said."""
        return self.store.supersede(
            target.id,
            text,
            reason=reason,
            memory_type=plan.memory_type,
            category=plan.category,
            event_date=plan.event_date,
            vector=vector,
            said_at=plan.said_at,
        )

    def _add(self, plan: PlannedFact, outcome: ExtractionOutcome) -> str:
        added = self.store.add(
            plan.text,
            memory_type=plan.memory_type,
            category=plan.category,
            created_at=plan.said_at,
            source="extracted",
            event_date=plan.event_date,
            dedup=False,
            vector=plan.vector,
        )
        outcome.added.append(added.id)
        return added.id

    def _not_forgotten(self, decision: MemoryDecision, named: str | None) -> None:
        """A decision that this fact changes or repeats a memory the learner has
        forgotten since the message was said is about what was forgotten: the fact is
        dropped (``DeletedMeanwhile``), not added in its place. Had the reading landed
        first, the forget would have taken the new version with the old one."""
        if named and decision.action in ("UPDATE", "SUPERSEDE", "NOOP"):
            self.deletions.guard("memory", [named])

    def _refresh(self, memory_id: str, outcome: ExtractionOutcome) -> None:
        """A fact already known: its memory is seen again, nothing is added."""
        self.store.touch(memory_id)
        outcome.duplicates.append(memory_id)

    def _decide(
        self, text: str, candidates: list[Candidate], said_at: datetime | None = None
    ) -> tuple[MemoryDecision, MemoryRecord | None]:
        """The model's decision about ``text`` beside its related memories, and the
        current memory it names (None when it names none that is still current)."""
        if not candidates:
            return MemoryDecision(action="ADD", memory=None, text=None), None
        days = {_day(said_at)} if said_at else set()
        payload = f"New fact: {text}{_when(said_at, days)}\n{self._listing(candidates, days)}"
        decision = self._parse(RECONCILE_PROMPT, payload, MemoryDecision, "Memory reconciliation")
        return decision, self._listed(candidates, decision.memory)

    def _decide_many(self, plans: list[PlannedFact]) -> dict[int, SharedDecision]:
        """One call decides several new facts of a reading, each against the union of
        their related memories: the instructions, the schema and the memories they
        share are paid once. Each decision names its memory by its number in that
        union (every fact was shown all of it), or an earlier new fact by its letter;
        a number outside the union or a letter not before it names none. A fact the
        answer leaves out is not in the result: it is decided by a call of its own."""
        union: list[Candidate] = []
        seen: set[str] = set()
        for plan in plans:
            for candidate in plan.candidates:
                if candidate.record.id not in seen:
                    seen.add(candidate.record.id)
                    union.append(candidate)
        days = {_day(plan.said_at) for plan in plans}
        facts = "\n".join(f"{_fact_label(n)}. {plan.text}{_when(plan.said_at, days)}" for n, plan in enumerate(plans))
        payload = f"New facts:\n{facts}\n{self._listing(union, days)}"
        answer: MemoryDecisions = self._parse(RECONCILE_MANY_PROMPT, payload, MemoryDecisions, "Memory reconciliation")
        decided: dict[int, SharedDecision] = {}
        for item in answer.decisions:
            index = _fact_index(item.fact, len(plans))
            if index is None or id(plans[index]) in decided:
                continue  # a fact not listed, or decided twice: the first decision holds
            decision = MemoryDecision(action=item.action, memory=None, text=item.text)
            if item.action == "ADD":
                decided[id(plans[index])] = SharedDecision(decision)
                continue
            if item.earlier:
                earlier = _fact_index(item.earlier, index)  # only a fact before it
                if earlier is not None:
                    decided[id(plans[index])] = SharedDecision(decision, earlier=plans[earlier])
                continue  # a letter that is not an earlier fact: decided by a call of its own
            named = union[item.memory - 1].record.id if item.memory and 1 <= item.memory <= len(union) else None
            if named is not None:  # a change or a NOOP must name what it acts on, else its own call decides
                decided[id(plans[index])] = SharedDecision(decision, memory=named)
        return decided

    @staticmethod
    def _listing(candidates: list[Candidate], days: set | None = None) -> str:
        """The candidates as a decision is sent them: one numbered line each, best
        first, ending with when it was said (to the minute on a new fact's day, so
        the model can tell which is newer). The model names a memory by its number,
        a token or two where an id took five, and the code maps it back (``_listed``)."""
        days = days if days is not None else set()
        return "Memories:\n" + "\n".join(
            f"{n}. {c.shown}{_when(c.record.created_at, days)}" for n, c in enumerate(candidates, 1)
        )

    def _listed(self, candidates: list[Candidate], number: int | None) -> MemoryRecord | None:
        """The current memory listed as ``number``; None for a number outside the
        listing or a memory no longer current (another session may have changed it
        since it was listed): such an answer must not change any memory."""
        if number is None or not 1 <= number <= len(candidates):
            return None
        record = self.store.get(candidates[number - 1].record.id)
        return record if record is not None and record.is_current else None

    @staticmethod
    def _shown(record: MemoryRecord, now: datetime) -> str:
        """A memory's text as the chat shows it: its relative time phrases resolved
        against when it was said ("next Friday" of a month ago is a day now past,
        not the new fact's next Friday), the learner's own words quoted as theirs.
        Nothing else of the record is sent: the decision compares meanings, and the
        prompt asks nothing of a memory's category or date."""
        return retrieved_text(record, now)

    def candidates(self, text: str, vector: list[float], category: str | None = None) -> list[Candidate]:
        """The current memories a decision about ``text`` must see (see DECISION_CANDIDATE_TOKENS)."""
        store = self.store
        dense = [(i, d) for i, d in store.dense_candidates(vector, DECISION_DENSE) if d <= store.related_distance]
        same_category, remembered, same_slot = self._pools(text, category)
        words = [t for t in lexical.query_terms(text) if t not in _SUBJECT_TERMS]
        scored, vectors = store.decision_candidates(
            words, DECISION_LEXICAL, [i for i, _ in dense] + same_category + remembered + same_slot
        )
        if not scored:
            return []
        dense_ids = {i for i, _ in dense}
        missing = [i for i in scored if i not in dense_ids and i not in vectors]
        vectors.update(store.stored_vectors(missing))
        now = store.clock()
        ranked = rank(vector, [(i, d) for i, d in dense if i in scored], scored, vectors, now=now)
        sources = _by_source(ranked, dense_ids, scored, [same_slot, same_category, remembered])
        records = store.get_many(r.id for r in ranked)
        return self._in_turns(sources, records, now)

    def _pools(self, text: str, category: str | None) -> tuple[list[str], list[str], list[str]]:
        """Ids of the memories a decision sees whatever their distance: the same
        category, the ``remember``ed ones, and the same slot."""
        store = self.store
        same_category = (
            [r.id for r in store.listed(category=category, limit=DECISION_SAME_CATEGORY)]
            if category and category != "other"  # "other" is a catch-all, not a shared subject
            else []
        )
        remembered = [r.id for r in store.listed(source="command", limit=DECISION_SAME_CATEGORY)]
        # Memories of the same slot (a job, a home), whatever their words, distance or category:
        # "works at Google" is what "a new job at a bakery" replaces (slots.py).
        slots = slots_of(text)
        same_slot = (
            [
                r.id
                for r in store.listed(limit=DECISION_SAME_CATEGORY)
                if any(slot_cues(slot).search(r.content) for slot in slots)
            ]
            if slots
            else []
        )
        return same_category, remembered, same_slot

    def _in_turns(
        self, sources: list[list[Ranked]], records: dict[str, MemoryRecord], now: datetime
    ) -> list[Candidate]:
        """The listed candidates, within DECISION_CANDIDATE_TOKENS. Each source's turn
        brings its best memory not yet listed: a pool whose best memories another
        source already listed must not lose its turns, or a small pool (one
        remembered fact) is crowded out by a large one."""
        chosen: list[Candidate] = []
        seen: set[str] = set()
        budget = DECISION_CANDIDATE_TOKENS
        queues = [iter(source) for source in sources]
        while queues and budget > 0:
            for pool in list(queues):
                item = next(
                    (r for r in pool if r.id not in seen and r.id in records and records[r.id].is_current), None
                )
                if item is None:
                    queues.remove(pool)
                    continue
                shown = self._shown(records[item.id], now)
                cost = self.counter.count(f"{len(chosen) + 1}. {shown}\n") + DECISION_MEMORY_CHARGE
                if cost > budget:
                    return chosen
                budget -= cost
                seen.add(item.id)
                chosen.append(Candidate(records[item.id], 1.0 - item.dense, shown))
        return chosen

    # -- mistakes -----------------------------------------------------------------------
    def _apply_mistake(self, mistake: ExtractedMistake, job: ExtractionJob, outcome: ExtractionOutcome) -> None:
        # Only words the learner wrote: a "mistake" quoting text that is not in the
        # message (the model's own paraphrase, a Chinese gloss) is not theirs.
        if not job.holds(mistake.original):
            raise LimitError("its original words are not in the message")
        if not re.search(r"[A-Za-z]", mistake.original):
            raise LimitError("it is not English")
        said_at = job.said_at_of(mistake.original)
        entry, merged = self.ledger.record(mistake, seen_at=said_at)
        if entry.id in outcome.mistakes:
            return  # one line a message for one mistake
        outcome.mistakes.append(entry.id)
        lapsed = bool(entry.reviews) and entry.reviews[-1].at == said_at and entry.reviews[-1].source == "chat"
        if lapsed:
            outcome.reviews.append((entry.id, said_at))
        outcome.notices.append(self._mistake_line(entry, "lapse" if lapsed else "again" if merged else "new"))

    def _apply_use(self, use: MistakeUse, job: ExtractionJob, outcome: ExtractionOutcome) -> None:
        """A tracked mistake used right or made again in the conversation: a review of its card."""
        if not job.holds(use.evidence):
            raise LimitError("its evidence is not in the message")
        said_at = job.said_at_of(use.evidence)
        entry, counted = self.ledger.use_in_chat(use.mistake.strip(), use.use == "correct", said_at)
        if entry is None:
            raise LimitError(f"no tracked mistake has the id {shorten(use.mistake, 20)!r}")
        if not counted:
            return
        outcome.mistakes.append(entry.id)
        reviewed = bool(entry.reviews) and entry.reviews[-1].at == said_at and entry.reviews[-1].source == "chat"
        if reviewed:
            outcome.reviews.append((entry.id, said_at))
        what = "correct" if use.use == "correct" else "lapse" if reviewed else "again"
        outcome.notices.append(self._mistake_line(entry, what))

    def _mistake_line(self, entry: Mistake, what: str) -> str:
        """The after-turn line for a mistake read from a message: 'Used “went” correctly:
        review card passed (next in 9 days).'"""
        example = entry.latest
        changed = correction_edits(example.original, example.corrected) if example else ()
        wrong = " ".join(a for a, _ in changed if a) or (example.original if example else entry.rule)
        right = " ".join(b for _, b in changed if b) or (example.corrected if example else entry.rule)
        next_in = spaced.in_days(entry.due, self.ledger.today())
        wrong, right = quoted(wrong, 60, end=""), quoted(right, 60, end="")
        if what == "correct":
            return f"Used {right} correctly: review card passed (next {next_in})."
        if what == "new":
            return f"New mistake to review: {wrong} → {right} ({shorten(entry.rule, 80)}); review it {next_in}."
        if what == "lapse":
            return f"{wrong} again (it is {right}): its review card comes back {next_in}."
        return f"{wrong} again (it is {right}): made {entry.count} times; review it {next_in}."

    def _offer_word(self, asked: AskedWord, job: ExtractionJob, outcome: ExtractionOutcome) -> None:
        """Ask (after the reply) whether to review a word the learner asked about."""
        word, meaning = clean_mistake_text(asked.word, "word"), clean_mistake_text(asked.meaning, "meaning")
        if not job.holds(word):
            raise LimitError("the word is not in the message")
        if not self.ledger.has_word(word):
            self._propose(ProfileProposal.new("review_card", "add", word, None, meaning), outcome)

    # -- corrections ------------------------------------------------------------------
    def _match_correction(self, correction: Correction) -> list[MemoryRecord]:
        """The current memories that state what the learner says is wrong (one decision call)."""
        statement = clean_text(correction.statement)
        if not statement:
            raise LimitError("A correction needs the wrong statement.")
        candidates = self.candidates(statement, self._embed(statement))
        if not candidates:
            return []
        payload = f"Wrong fact: {statement}\n{self._listing(candidates)}"
        decision: CorrectionDecision = self._parse(CORRECTION_PROMPT, payload, CorrectionDecision, "Correction lookup")
        return [r for n in dict.fromkeys(decision.memories) if (r := self._listed(candidates, n)) is not None]

    # -- profile ----------------------------------------------------------------------
    def _apply_profile_change(self, change: ProfileChange, job: ExtractionJob, outcome: ExtractionOutcome) -> None:
        profile = self.profiles.get()
        evidence = shorten(change.evidence or job.text, 300)
        if change.field == "english_level":
            level = normalize_level(change.value)  # raises for anything outside A1-C2: a skipped item
            if change.action == "remove":
                if profile.english_level:
                    self._propose(
                        ProfileProposal.new(
                            "english_level", "remove", profile.english_level, profile.english_level, evidence
                        ),
                        outcome,
                    )
                return
            if profile.english_level == level:
                return
            if profile.english_level is None:
                self.profiles.set_english_level(level)
                outcome.notices.append(
                    f"Profile: English level set to {level} (from what you said). "
                    "Change it with 'profile level <level>'."
                )
                return
            self._propose(ProfileProposal.new("english_level", "set", level, profile.english_level, evidence), outcome)
            return
        kind = "goal" if change.field == "learning_goal" else "preference"
        value = clean_text(change.value)
        if not value:
            raise LimitError(f"The {kind} is empty.")
        if change.action == "remove":
            if self.profiles.has(kind, value):
                self._propose(ProfileProposal.new(change.field, "remove", value, value, evidence), outcome)
            return
        if self.profiles.has(kind, value):
            return
        added = self.profiles.add_learning_goal(value) if kind == "goal" else self.profiles.add_preference(value)
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
        claim: Callable[[ExtractionJob], ExtractionJob | None] = lambda job: job,
    ):
        self.extractor = extractor
        self.on_outcome = on_outcome
        self.on_failure = on_failure
        # Before a job is read: the messages of it this process may read (another
        # process may have claimed them), or None to read none.
        self.claim = claim
        self._queue: queue.Queue[ExtractionJob | Callable[[], None] | None] = queue.Queue()
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
                self._drop_stop_markers()
                self._stopping = False
                self._start()  # closed earlier (the REPL ended) and used again
        self._queue.put(job)

    def _drop_stop_markers(self) -> None:
        """Remove stop markers meant for a thread that is gone, keeping queued jobs in order."""
        kept = []
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                break
            if item is not None:
                kept.append(item)
        for item in kept:
            self._queue.put(item)

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
            # One stop marker per running thread: a marker left for a thread that
            # has already stopped would stop the next one before its first job.
            if not self._stopping and self._thread is not None and self._thread.is_alive():
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
                claimed = self.claim(job)
                if claimed is None:
                    continue
                job = claimed
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
    "ExtractedMistake",
    "PreparedExtraction",
    "Retraction",
    "Skipped",
    "looks_like_correction",
    "may_change_profile",
    "skips_extraction",
    "ExtractionWorker",
    "Extractor",
    "MemoryDecision",
    "ProfileChange",
]
