"""What a reading writes to memory, planned by pure functions: nothing here reads the
store or calls the model (``extraction.Extractor`` does both, then applies the plan).

A reading's corrections and facts are applied in the order said (``in_order``).
A round of facts is ordered and grouped (``plan_facts``): those that need a
decision share one call, whose answer ``shared_decisions`` reads. At its turn each
fact gets its write (``plan_write``) from its decision and the memories as the store
holds them then: add, update, supersede, seen (a memory that says it already is seen
again) or skip, or first a step (plan it again against the store as it is now, or
ask the model about it on its own), after which it is planned again. Every write
says why, in one of the reasons below.

Facts are keyed by stable ids, the job's and the fact's place in its reading
(``fact_key``), so a decision naming an earlier fact of the reading finds the memory
that fact left, however often it was planned again.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import date, datetime
from typing import Literal

from pydantic import BaseModel, Field, ValidationError, field_validator

from memora.core.records import MAX_MEMORY_CHARS, MemoryRecord
from memora.core.text_utils import clean_text, shorten
from memora.core.timeutil import to_aware
from memora.reading.jobs import ExtractedFact, ExtractionJob, ExtractionResult
from memora.store.pairs import same_subject

log = logging.getLogger("memora.extraction")

# Why a fact is written as it is. Each is a row of tests/test_memory_writes.py; a skip's
# reason is what 'status' shows, with the memory's id in its braces.
FULL = "memory is full"
KNOWN = "a memory says it already, in these or other words: seen again"
OLD_NEWS = "said before {} was changed"
AFTER_RELATED = "after a related new fact: planned again once that one is written"
NAMED_CHANGED = "a shared decision names a memory changed since it was listed: planned again, decided on its own"
UNRELATED = "no related memory: added without a decision"
UNDECIDED = "no decision it may act on yet: decided on its own"
NEWER = "said before memory {}, which is newer"
NOOP = "already known: the memory named, else the nearest listed one still current, is seen again"
NOOP_NONE_CURRENT = "already known, but no memory listed is current any more: added"
ADD = "new: added"
NAMES_NOTHING = "a change naming no current listed memory: added, since adding never hides a true fact"
UPDATE = "refines a memory: replaced by the merged text"
UPDATE_AS_SAID = "refines a memory, the merged text unusable: replaced by the fact as said"
CONTRADICTS = "contradicts a memory: replaced by the fact as said"


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


class CorrectionDecision(BaseModel):
    memories: list[int] = Field(default_factory=list)  # numbers in the listing

    @field_validator("memories", mode="before")
    @classmethod
    def _numbers(cls, value: object) -> object:
        if not isinstance(value, list):
            return value  # not a list at all: a malformed answer
        return [n for item in value if (n := _listed_number(item)) is not None]


@dataclass(frozen=True)
class Candidate:
    """A current memory shown to a decision, with its cosine distance to the new text
    and its text as the decision reads it (``candidates.shown``)."""

    record: MemoryRecord
    distance: float
    shown: str


@dataclass(frozen=True)
class NewFact:
    """A new fact of a reading as the store saw it when it was planned: checked, dated,
    embedded and beside its related memories; or already said by a memory (``seen``),
    or old news (``changed``: the same text, changed after it was said)."""

    key: str  # stable (fact_key)
    fact: ExtractedFact  # as read: what a retry runs again
    text: str
    memory_type: str
    category: str
    event_date: date | None
    said: ExtractionJob  # the message it came from
    vector: list[float] = field(default_factory=list)
    candidates: list[Candidate] = field(default_factory=list)
    seen: MemoryRecord | None = None
    changed: MemoryRecord | None = None
    after_related: bool = False  # said after a related new fact of its round (plan_facts)
    replanned: bool = False  # planned again at its turn

    said_at = property(lambda self: self.said.said_at)


@dataclass(frozen=True)
class Decided:
    """A decision about a new fact, and what it acts on: a memory (its id), or an earlier
    new fact of the reading (its key; ``memory`` is then the memory that fact left).
    ``shared``: from a shared call, which is not acted on once what it names changed."""

    action: str  # MemoryDecision.action
    memory: str | None = None
    earlier: str | None = None
    text: str | None = None
    shared: bool = False


@dataclass(frozen=True)
class Write:
    """What one fact does to memory now (or the step it needs first), and why."""

    key: str  # the fact's
    action: Literal["add", "update", "supersede", "seen", "skip", "replan", "ask"]
    reason: str
    memory: str | None = None  # the memory it changes, sees again or is skipped for
    text: str | None = None  # the text it stores (add, update, supersede)


def fact_key(job_id: str, index: int) -> str:
    """A fact's stable id: its job's and its place among the reading's facts."""
    return f"{job_id}#{index}"


def fact_letter(index: int) -> str:
    """How a shared decision names a new fact."""
    return chr(ord("A") + index) if index < 26 else f"A{index}"


def _letter_index(label: str | None, count: int) -> int | None:
    wanted = (label or "").strip().rstrip(".").upper()
    return next((n for n in range(count) if fact_letter(n) == wanted), None)


def numbered(listing: Sequence[Candidate], number: int | None) -> str | None:
    """The id of the memory a decision names by its number in ``listing``, if any."""
    return listing[number - 1].record.id if number and 1 <= number <= len(listing) else None


def said_before(a: datetime, b: datetime | None) -> bool:
    return b is not None and to_aware(a) < to_aware(b)


def related(a: NewFact, b: NewFact, distance: float) -> bool:
    """Whether one new fact may change what the other says: the same subject
    (``pairs.same_subject``) or within the store's related ``distance``. A shared
    category alone is not enough (most facts of a reading share one); a decision
    that names a memory an earlier fact changed is decided again anyway."""
    if same_subject(a.text, b.text):
        return True
    dot = sum(x * y for x, y in zip(a.vector, b.vector))
    norms = math.sqrt(sum(x * x for x in a.vector)) * math.sqrt(sum(y * y for y in b.vector))
    return bool(norms) and 1.0 - dot / norms <= distance


def in_order(job: ExtractionJob, result: ExtractionResult) -> list[tuple[Literal["corrections", "facts"], list]]:
    """A message's corrections, then its facts (keyed), each run in the reading's order
    and left out when empty: "I never said Taipei, I live in Tainan" takes the old
    memory back before the new fact is written. A run of facts is one round (plan_facts)."""
    facts = [(fact_key(job.job_id, n), f) for n, f in enumerate(result.facts)]
    runs: list[tuple[Literal["corrections", "facts"], list]] = [
        ("corrections", list(result.corrections)),
        ("facts", facts),
    ]
    return [(kind, run) for kind, run in runs if run]


def plan_facts(facts: Sequence[NewFact], distance: float) -> tuple[list[NewFact], list[NewFact]]:
    """A round's facts in the order to write them, and those one shared call decides.

    Facts a memory already says, and old news, come first and take no part. The others
    follow in the order they were said (of two facts about one thing, the later one is
    written last and holds), each after a related new fact marked to be planned again
    at its turn, so a repeat of what that fact just stored is caught. Those with
    related memories or a related new fact need a decision; two or more share one
    call, which may name an earlier one by its letter ("I live in Tokyo. Well, Osaka.")."""
    settled = [f for f in facts if f.seen or f.changed]
    rest = sorted((f for f in facts if not (f.seen or f.changed)), key=lambda f: to_aware(f.said_at))
    pairs = {(a, b) for b in range(len(rest)) for a in range(b) if related(rest[a], rest[b], distance)}
    rest = [replace(f, after_related=any((a, n) in pairs for a in range(n))) for n, f in enumerate(rest)]
    paired = {n for pair in pairs for n in pair}
    deciding = [f for n, f in enumerate(rest) if f.candidates or n in paired]
    return settled + rest, deciding if len(deciding) > 1 else []


def shared_decisions(
    answer: MemoryDecisions, facts: Sequence[NewFact], union: Sequence[Candidate]
) -> dict[str, Decided]:
    """A shared answer's decisions, by fact key. Each was shown every memory of
    ``union`` and names one by its number there, or an earlier new fact by its letter.
    Not acted on: a decision for no fact listed, a second one for a fact (the first
    holds), and a change or NOOP naming nothing it may act on (a number outside the
    union, a letter not before its own fact); a fact left without one is decided on its own."""
    decided: dict[str, Decided] = {}
    for item in answer.decisions:
        index = _letter_index(item.fact, len(facts))
        if index is None or facts[index].key in decided:
            continue
        earlier = _letter_index(item.earlier, index) if item.earlier else None
        memory = None if item.earlier else numbered(union, item.memory)
        if item.action == "ADD":
            decided[facts[index].key] = Decided("ADD", text=item.text, shared=True)
        elif earlier is not None or memory is not None:
            on = facts[earlier].key if earlier is not None else None
            decided[facts[index].key] = Decided(item.action, memory, on, item.text, shared=True)
    return decided


def plan_write(fact: NewFact, decided: Decided | None, now: Mapping[str, MemoryRecord], *, full: bool = False) -> Write:
    """One fact's write at its turn: from its decision (None: none yet) and the
    memories as the store holds them now (``now``: the one named and the fact's
    candidates, by id); ``full``: the memory cap was reached."""

    def write(action, reason: str, memory: str | None = None, text: str | None = None) -> Write:
        return Write(fact.key, action, reason, memory, text)

    named = now.get(decided.memory) if decided is not None and decided.memory else None
    named = named if named is not None and named.is_current else None
    if full:
        return write("skip", FULL)
    if fact.seen is not None:
        return write("seen", KNOWN, fact.seen.id)
    if fact.changed is not None:
        return write("skip", OLD_NEWS, fact.changed.id)
    if fact.after_related and not fact.replanned:
        return write("replan", AFTER_RELATED)
    if decided is not None and decided.shared and (decided.memory or decided.earlier) and named is None:
        if not fact.replanned:
            return write("replan", NAMED_CHANGED)
        decided = None  # planned again since: its own call decides, against the store as it is
    if decided is None:
        return write("ask", UNDECIDED) if fact.candidates else write("add", UNRELATED, text=fact.text)
    if decided.action == "ADD":
        return write("add", ADD, text=fact.text)
    if decided.action != "NOOP" and named is not None and said_before(fact.said_at, named.created_at):
        # Newer wins, by when it was said: a fact said before the memory it would change
        # (a held message read after an edit, an older message read later) never overturns it.
        return write("skip", NEWER, named.id)
    if decided.action == "NOOP":  # "already stored": only ever a memory that still says it
        current = [c for c in fact.candidates if (r := now.get(c.record.id)) is not None and r.is_current]
        still = named or (min(current, key=lambda c: c.distance).record if current else None)
        return write("seen", NOOP, still.id) if still else write("add", NOOP_NONE_CURRENT, text=fact.text)
    if named is None:
        return write("add", NAMES_NOTHING, text=fact.text)
    if decided.action == "SUPERSEDE":
        return write("supersede", CONTRADICTS, named.id, fact.text)
    merged = clean_text(decided.text or "")
    if merged and len(merged) <= MAX_MEMORY_CHARS:
        return write("update", UPDATE, named.id, merged)
    return write("update", UPDATE_AS_SAID, named.id, fact.text)
