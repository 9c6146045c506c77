"""The shapes of stored memories, shared by the store, retrieval and the context.

Kept free of heavy imports so the REPL can start before Chroma is loaded.
"""

from __future__ import annotations

import functools
import secrets
from collections.abc import Callable
from dataclasses import MISSING, dataclass, field, fields, replace
from datetime import date, datetime, timedelta, timezone
from typing import Any, Literal, get_args

from memora.core.text_utils import clean_within
from memora.core.timeutil import parse_date, parse_iso, system_clock, to_aware

MEMORY_TYPES = ("semantic", "episodic")
# Fixed categories, so the digest can group memories and the follow-ups can
# find plans ("schedule"); "learning" holds what the learner finds hard
# or has mastered, "other" catches the rest.
Category = Literal["name", "identity", "learning", "preference", "hobby", "habit", "schedule", "other"]
CATEGORIES: tuple[Category, ...] = get_args(Category)
SOURCES = ("command", "extracted", "import")
STATUS_CURRENT = "current"
STATUS_SUPERSEDED = "superseded"
MAX_MEMORY_CHARS = 1000


def fresh_id() -> str:
    """48 random bits: a million memories share one id with odds of about 1 in 500, and
    that one write is refused (``LongTermMemoryStore._write_new``), never overwritten."""
    return secrets.token_hex(6)


def clean_memory_text(content: str) -> str:
    """A memory's text as it is stored, whether typed, extracted or imported:
    one line, control and escape characters removed, within the limit."""
    return clean_within(
        content,
        MAX_MEMORY_CHARS,
        empty="A memory cannot be empty.",
        too_long=lambda n: f"A memory is limited to {MAX_MEMORY_CHARS} characters; this one has {n}.",
    )


@dataclass(frozen=True)
class Stored:
    """How one ``MemoryRecord`` field is persisted: the catalog column, the Chroma
    metadata key(s) and the export file all follow from it, so a new field is
    one line in ``MemoryRecord``.

    ``kind`` is "text", "id" (a memory id), "choice" (one of ``choices``),
    "datetime" or "date". Datetimes are also stored as a number (``ts_key`` in
    Chroma, the ``column`` in the catalog) because Chroma's filters and
    SQLite's ordering compare numbers, not ISO strings. The catalog keeps each
    datetime's UTC offset beside its number (``offset_column``), as Chroma's ISO
    string does, so a moment reads back on the local day it was taken on.
    """

    kind: str = "text"
    column: str = ""  # the catalog column, when not the field's name
    ts_key: str = ""  # Chroma's numeric copy of a datetime
    choices: tuple[str, ...] = ()
    in_chroma: bool = True  # False for the id and the text, which Chroma holds itself
    exported: bool = True  # False for the learner's id: an import belongs to whoever imports it
    max_chars: int | None = None  # an export's limit for the field


def stored(default: Any = MISSING, **how) -> Any:
    return field(default=default, metadata={"stored": Stored(**how)})


@dataclass(frozen=True)
class MemoryRecord:
    """One stored memory, current or superseded."""

    id: str = stored(kind="id", in_chroma=False)
    content: str = stored(in_chroma=False)
    created_at: datetime = stored(kind="datetime", column="created_ts", ts_key="created_at_ts")
    memory_type: str = stored("semantic", kind="choice", choices=MEMORY_TYPES)
    category: str = stored("other", kind="choice", choices=CATEGORIES)
    source: str = stored("command", kind="choice", choices=SOURCES)
    status: str = stored(STATUS_CURRENT, kind="choice", choices=(STATUS_CURRENT, STATUS_SUPERSEDED))
    user_id: str = stored("default", exported=False)
    last_seen: datetime | None = stored(None, kind="datetime", column="last_seen_ts", ts_key="last_seen_ts")
    valid_until: datetime | None = stored(None, kind="datetime", column="valid_until_ts", ts_key="valid_until_ts")
    superseded_by: str | None = stored(None, kind="id")
    supersedes: str | None = stored(None, kind="id")
    change_reason: str | None = stored(None, max_chars=100)
    event_date: date | None = stored(None, kind="date")
    followed_up_at: datetime | None = stored(None, kind="datetime", column="followed_up_ts", ts_key="followed_up_ts")
    # Free-form extras: the catalog keeps them as JSON, Chroma as keys of their own.
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def is_current(self) -> bool:
        return self.status == STATUS_CURRENT

    def evolve(self, **changes) -> MemoryRecord:
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
    def from_record(cls, record: MemoryRecord, score: float, **parts) -> MemorySearchResult:
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


# -- the persistence schema ---------------------------------------------------------


@dataclass(frozen=True)
class StoredField:
    name: str
    how: Stored
    required: bool  # no default: always present, NOT NULL in the catalog
    default: Any

    @property
    def column(self) -> str:
        return self.how.column or self.name

    @property
    def kind(self) -> str:
        return self.how.kind

    @property
    def offset_column(self) -> str:
        """A datetime's catalog column for its UTC offset in seconds (``created_ts`` → ``created_utc_offset``)."""
        return self.column.removesuffix("_ts") + "_utc_offset"


@functools.cache  # read for every row a catalog query returns: 10,000 rows are a page's opening
def stored_fields(record_type: type = MemoryRecord) -> tuple[StoredField, ...]:
    """The persisted fields of ``record_type`` (``MemoryRecord`` or a subclass), in order."""
    return tuple(
        StoredField(f.name, f.metadata["stored"], f.default is MISSING, None if f.default is MISSING else f.default)
        for f in fields(record_type)
        if "stored" in f.metadata
    )


def reserved_metadata_keys(record_type: type = MemoryRecord) -> frozenset[str]:
    """Chroma metadata keys that the record's own fields use: extras may not."""
    keys = set()
    for spec in stored_fields(record_type):
        if spec.how.in_chroma:
            keys.add(spec.name)
            if spec.how.ts_key:
                keys.add(spec.how.ts_key)
    return frozenset(keys)


def _chroma_scalar(value: Any) -> Any:
    return value if isinstance(value, (str, int, float, bool)) else str(value)


def to_chroma_metadata(record: MemoryRecord) -> dict[str, Any]:
    """A record's Chroma metadata: its extras, then its own fields (which win).

    Empty optional fields are left out, not written as empty values: Chroma
    rejects None, and an absent key reads back as the field's default.
    """
    record_type: type = type(record)  # typed plainly: mypy takes an unhashable dataclass's class for unhashable too
    reserved = reserved_metadata_keys(record_type)
    meta: dict[str, Any] = {
        str(key): _chroma_scalar(value)
        for key, value in record.metadata.items()
        if key not in reserved and value is not None
    }
    for spec in stored_fields(record_type):
        value = getattr(record, spec.name)
        optional = not spec.required and spec.default is None
        if not spec.how.in_chroma or (optional and not value):
            continue
        if spec.kind == "datetime":
            meta[spec.name] = to_aware(value).isoformat()
            meta[spec.how.ts_key] = to_aware(value).timestamp()
        elif spec.kind == "date":
            meta[spec.name] = value.isoformat()
        else:
            meta[spec.name] = value
    return meta


def _from_chroma_value(spec: StoredField, meta: dict[str, Any]) -> Any:
    value = meta.get(spec.name)
    if spec.kind == "datetime":
        parsed = parse_iso(value)
        if parsed is None and spec.how.ts_key and meta.get(spec.how.ts_key) is not None:
            parsed = datetime.fromtimestamp(float(meta[spec.how.ts_key])).astimezone()
        # A record without a creation time (written by hand elsewhere) is dated now.
        return parsed if parsed is not None or not spec.required else system_clock()
    if spec.kind == "date":
        return parse_date(value)
    if spec.kind == "choice":
        return value if value in spec.how.choices else spec.default
    if spec.default is None:
        return value
    return str(value) if value is not None else ""  # a record of no learner matches none


def from_chroma(
    memory_id: str, document: str | None, meta: dict[str, Any] | None, record_type: type = MemoryRecord
) -> MemoryRecord:
    """The record Chroma holds as an id, a document and metadata (the reverse of ``to_chroma_metadata``)."""
    meta = dict(meta or {})
    values: dict[str, Any] = {"id": memory_id, "content": document or ""}
    for spec in stored_fields(record_type):
        if spec.how.in_chroma:
            values[spec.name] = _from_chroma_value(spec, meta)
    reserved = reserved_metadata_keys(record_type)
    values["metadata"] = {k: v for k, v in meta.items() if k not in reserved}
    return record_type(**values)


def catalog_columns(record_type: type = MemoryRecord) -> dict[str, tuple[str, Callable[[Any], Any]]]:
    """``{column: (SQL type and constraint, value of the record)}`` for the catalog's record columns."""
    sql_types = {"datetime": "REAL", "date": "TEXT"}
    columns: dict[str, tuple[str, Callable[[Any], Any]]] = {}
    for spec in stored_fields(record_type):
        declared = sql_types.get(spec.kind, "TEXT") + (" NOT NULL" if spec.required or spec.default is not None else "")
        if spec.name == "id":
            declared += " UNIQUE"
        columns[spec.column] = (declared, _catalog_writer(spec))
        if spec.kind == "datetime":
            # Nullable: a row written before offsets were kept has none (see ``_moment``).
            columns[spec.offset_column] = ("INTEGER", _offset_writer(spec.name))
    return columns


def offset_columns(record_type: type = MemoryRecord) -> frozenset[str]:
    """The catalog columns that hold datetimes' UTC offsets (added in place to an older catalog)."""
    return frozenset(spec.offset_column for spec in stored_fields(record_type) if spec.kind == "datetime")


def _offset_writer(name: str) -> Callable[[Any], Any]:
    def offset(record: Any) -> int | None:
        value = getattr(record, name)
        return int(value.utcoffset().total_seconds()) if value is not None and value.tzinfo is not None else None

    return offset


def _moment(timestamp: float | None, offset: int | None) -> datetime | None:
    """A catalog datetime at the UTC offset it was written with; one written before
    offsets were kept (or with an impossible one) reads in local time, as it always did."""
    if timestamp is None:
        return None
    if offset is not None:
        try:
            return datetime.fromtimestamp(timestamp, timezone(timedelta(seconds=offset)))
        except (ValueError, OverflowError, OSError):
            pass
    return datetime.fromtimestamp(timestamp).astimezone()


def _catalog_writer(spec: StoredField) -> Callable[[Any], Any]:
    name = spec.name
    if spec.kind == "datetime":
        return lambda record: getattr(record, name).timestamp() if getattr(record, name) is not None else None
    if spec.kind == "date":
        return lambda record: getattr(record, name).isoformat() if getattr(record, name) else None
    return lambda record: getattr(record, name)


def from_catalog_row(row: Any, record_type: type = MemoryRecord, *, extras: dict[str, Any]) -> MemoryRecord:
    """The record a catalog row holds (``row`` maps column names to values)."""
    values: dict[str, Any] = {}
    for spec in stored_fields(record_type):
        value = row[spec.column]
        if spec.kind == "datetime":
            value = _moment(value, row[spec.offset_column])
        elif spec.kind == "date":
            value = parse_date(value)
        values[spec.name] = value
    return record_type(**values, metadata=extras)
