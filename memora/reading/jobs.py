"""A reading's job and what comes of it: the messages read together (``ExtractionJob``),
what the model found in them (``ExtractionResult``: facts, profile changes,
corrections, mistakes, asked words, uses of tracked mistakes) and the outcome of
applying it (``ExtractionOutcome``). The session, the reading queue and the reply
use these without the extractor that makes them."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, PrivateAttr, ValidationError, model_validator

from memora.core.records import CATEGORIES, MEMORY_TYPES, Category, MemoryRecord
from memora.core.text_utils import normalized_key, shorten
from memora.reading.proposals import ProfileProposal
from memora.teaching.ledger import NewMistake

_LABELS = {"category": (CATEGORIES, "other"), "memory_type": (MEMORY_TYPES, "semantic")}  # choices, fallback


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

    label = property(lambda self: f"{self.field} {self.action} {self.value}")  # how 'status' names it
    words = property(lambda self: None)  # not placed in a message: a profile change is not fenced


class Correction(BaseModel):
    statement: str
    evidence: str

    label = property(lambda self: self.statement)
    words = property(lambda self: self.evidence)


class ExtractedMistake(NewMistake):
    """A real error in the learner's own English (``ledger.NewMistake``)."""

    label = words = property(lambda self: self.original)  # 'words': what places it in its message


class MistakeUse(BaseModel):
    """What a message did with a tracked mistake listed in the reading's input:
    used its corrected form correctly, or made the mistake again."""

    mistake: str  # the entry's id, as listed
    use: Literal["correct", "repeated"]
    evidence: str  # the learner's own words

    label = words = property(lambda self: self.evidence)


class AskedWord(BaseModel):
    """A word the learner asked the meaning of: Memora offers to make it a review card."""

    word: str
    meaning: str

    label = words = property(lambda self: self.word)


# Each list of a reading: its item's model, and what 'status' calls one that is skipped.
_ITEMS = {
    "facts": (ExtractedFact, "fact"),
    "profile_changes": (ProfileChange, "profile change"),
    "corrections": (Correction, "correction"),
    "mistakes": (ExtractedMistake, "mistake"),
    "asked_words": (AskedWord, "word"),
    "mistake_uses": (MistakeUse, "mistake use"),
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
            for key in ("mistakes", "asked_words", "mistake_uses"):  # none in a reading saved before they were read
                data.setdefault(key, [])
            for key, (model, kind) in _ITEMS.items():
                items = data.get(key)
                if not isinstance(items, list):
                    continue
                kept = []
                for item in items:
                    try:  # an item already of its model is kept as it is
                        kept.append(model.model_validate(item))
                    except ValidationError as error:
                        fixed = _relabelled(model, item, error)
                        if fixed is not None:  # a bad label does not lose a valid text
                            kept.append(fixed[0])
                        rejected.append((kind, _item_label(item), fixed[1] if fixed else _validation_reason(error)))
                data[key] = kept
        result = handler(data)
        result._rejected = rejected + list(result._rejected)
        return result


def _relabelled(model: type[BaseModel], item: object, error: ValidationError) -> tuple[BaseModel, str] | None:
    """The item with each unknown label (category, memory type) at its nearest valid
    value, and what was changed; None when anything else is wrong with it."""
    bad = {str(e["loc"][0]) for e in error.errors() if e["type"] == "literal_error"}
    if not isinstance(item, dict) or not bad or not bad <= _LABELS.keys():
        return None
    fixed = {f: next((c for c in _LABELS[f][0] if c == str(item[f]).strip().casefold()), _LABELS[f][1]) for f in bad}
    try:
        valid = model.model_validate({**item, **fixed})
    except ValidationError:
        return None
    return valid, shorten(", ".join(f"{f} {item[f]!r} stored as {v!r}" for f, v in sorted(fixed.items())), 80)


def _item_label(item) -> str:
    if isinstance(item, dict):
        item = next((item[k] for k in ("text", "statement", "value", "original", "word") if item.get(k)), item)
    return shorten(str(item), 60)


def _validation_reason(error: ValidationError) -> str:
    first = error.errors()[0]
    where = ".".join(str(part) for part in first.get("loc", ())) or "item"
    value = first.get("input")
    return shorten(f"invalid {where} {value!r}" if first.get("type") != "missing" else f"missing {where}", 80)


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
    # The deletion generation when the message was said: a deletion after it covers
    # what reading it would write (deletions.py).
    generation: int = 0

    def holds(self, words: str) -> bool:
        """Whether the learner wrote ``words`` in the message."""
        return normalized_key(words) in normalized_key(self.text)


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
