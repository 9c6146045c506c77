"""``export`` and ``import``: a learner's data as one JSON file.

An export holds the profile, pending profile changes, every memory with its
history (superseded versions included), the session, the mistake ledger with
its review cards and the activity log. It is written
atomically with owner-only permissions, because it is personal data.

An import is all or nothing:

* **Everything is checked before anything is written**: size, UTF-8, JSON
  (duplicate keys, NaN and nesting deeper than ``MAX_JSON_DEPTH`` refused),
  the learner it belongs to, every record's types, dates, category and
  source, duplicate ids, version links that point nowhere or loop, the memory
  cap and the profile limits. Imported text goes through the same cleaning
  and limits as typed text (``clean_memory_text``, ``clean_profile_value``),
  so an export edited by hand cannot smuggle in what the prompt refuses.
* **A write that fails midway is undone**: the profile, pending changes and
  session are written first and put back if the memories then fail; the
  memory store undoes its own writes (``LongTermMemoryStore.restore``).
* **It never destroys what is already there**: only memories whose ids are
  missing are added (importing twice adds nothing twice, and an old export
  cannot revive a fact superseded since), the profile is merged (existing
  values win; goals and preferences are united), pending profile changes are
  restored, and the session is restored only when the current one is empty.
  Mistakes are added by id like memories (one already here is kept as it is,
  with its count and schedule); activity counts are merged day by day.
* **Limits refuse, they never cut.** An import that would take the memories
  over the memory cap, or the ledger over ``MAX_MISTAKES``, is refused whole
  in one line saying how many are over: nothing is dropped to make it fit,
  neither the learner's own entries nor the file's.
* **What the ledger and the activity log hold is checked by their own models**
  (``ledger.Mistake``, ``activity.DayActivity``), the ones Memora also reads
  its files with: what an import accepts, Memora can run.

Every refusal is one line that names the file and ends "Nothing was imported."
"""

from __future__ import annotations

import itertools
import json
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal, TypeAlias

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    create_model,
    field_validator,
    model_validator,
)

from long_term_memory import PartialWriteError
from memora.app.import_undo import end_import, import_memories, put_files_back, snapshot_files, undo_import
from memora.app.session import ChatMessage
from memora.core.config import validate_user_name
from memora.core.errors import ConfigError, ImportFileError, MemoraError, disk_problem, failure_reason
from memora.core.records import (
    MAX_MEMORY_CHARS,
    MemoryRecord,
    StoredField,
    clean_memory_text,
    reserved_metadata_keys,
    stored_fields,
)
from memora.core.storage import (
    FIRST_YEAR,
    LAST_YEAR,
    StoredDay,
    atomic_write_text,
    file_lock,
    first_problem,
    special_file,
)
from memora.core.text_utils import clean_text, counted, normalized_key
from memora.core.timeutil import to_aware
from memora.reading.proposals import MAX_PENDING, ProfileProposal
from memora.store.catalog import catalog_path
from memora.teaching.activity import DayActivity
from memora.teaching.ledger import MAX_MISTAKES, Mistake, clean_mistake_text
from user_profile import MAX_PROFILE_ITEMS, UserProfile, clean_profile_value, normalize_level

if TYPE_CHECKING:
    from memora.app.assistant import Memora

EXPORT_FORMAT = "memora-export"
EXPORT_VERSION = 1
# What an import takes is at least what an export under the same settings writes: the
# current memories are capped (memory cap) but their history is not, so the limits grow
# with the cap (ten versions a memory on average), never below these floors.
MAX_IMPORT_BYTES = 20 * 1024 * 1024
MAX_IMPORT_MEMORIES = 50_000
VERSIONS_PER_MEMORY = 10
BYTES_PER_MEMORY = 4 * 1024  # a memory at its longest (1,000 characters of Chinese) with its fields, as exported
BYTES_BESIDE_MEMORIES = 16 * 1024 * 1024  # a full ledger, the profile at its limits, a session
HARD_MAX_IMPORT_MEMORIES = 1_000_000  # validation itself is bounded, whatever the settings


@dataclass(frozen=True)
class ImportLimits:
    memories: int
    bytes: int
    profile_items: int = MAX_PROFILE_ITEMS  # per profile list: the learner's MEMORA_MAX_PROFILE_ITEMS


def import_limits(memory_cap: int | None, profile_items: int | None = None) -> ImportLimits:
    """What an import takes under these settings: at least what export writes."""
    memories = max(MAX_IMPORT_MEMORIES, VERSIONS_PER_MEMORY * (memory_cap or 0))
    memories = min(memories, HARD_MAX_IMPORT_MEMORIES)
    return ImportLimits(
        memories,
        max(MAX_IMPORT_BYTES, memories * BYTES_PER_MEMORY + BYTES_BESIDE_MEMORIES),
        profile_items or MAX_PROFILE_ITEMS,
    )


# An export is at most four levels deep (file, memories, memory, metadata);
# anything much deeper is not one, and is refused before validation.
MAX_JSON_DEPTH = 32
# Limits for imported conversation text, the same as for typed text where
# there is one (a typed message is at most 8,000 characters).
MAX_IMPORTED_MESSAGE_CHARS = 8000
MAX_IMPORTED_REPLY_CHARS = 50_000
MAX_IMPORTED_MESSAGES = 2000
MAX_METADATA_KEYS = 20
# Ids must stay usable by the commands: 'forget <id>' and 'history <id>' take
# a hex id, or one holding a digit, in lower case.
_ID = re.compile(r"[0-9a-f]{4,64}|(?=[0-9a-z_-]*[0-9])[0-9a-z_-]{4,64}")
_METADATA_KEY = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,63}")


def _clean_block(text: str, limit: int, what: str) -> str:
    """Conversation text keeps its line breaks; control and escape characters go."""
    lines = [clean_text(line) for line in str(text).replace("\r\n", "\n").replace("\r", "\n").split("\n")]
    cleaned = "\n".join(lines).strip()
    if len(cleaned) > limit:
        raise ValueError(f"{what} has {len(cleaned):,} characters; the limit is {limit:,}")
    return cleaned


def _iso_text(value):
    """Dates in an export are ISO strings: a bare number is not a date Memora wrote."""
    if value is not None and not isinstance(value, (str, datetime, date)):
        raise ValueError("a date must be an ISO 8601 string")
    return value


def _in_range(value):
    if value is not None and not (FIRST_YEAR <= value.year <= LAST_YEAR):  # storage's range, every file's
        raise ValueError(f"the year {value.year} is outside {FIRST_YEAR}-{LAST_YEAR}")
    return value


_INT64 = (-(2**63), 2**63 - 1)


def _checked(function, *args):
    """Run a typed-text validator; its one-line message becomes the field's error."""
    try:
        return function(*args)
    except MemoraError as error:
        raise ValueError(str(error).rstrip(".")) from None


def _export_annotation(spec: StoredField):
    """A stored field's type in an export file, from its persistence schema."""
    kind = spec.kind
    annotation: Any = {"datetime": datetime, "date": date}.get(kind, str)
    if kind == "choice":  # a Literal of the schema's choices, made at run time
        annotation = Literal.__getitem__(spec.how.choices)
    if spec.required or spec.default is not None:
        return (annotation, ... if spec.required or kind == "choice" else spec.default)
    field_info = Field(default=None, max_length=spec.how.max_chars) if spec.how.max_chars else None
    return (annotation | None, field_info)


def _valid_id(cls, value: str | None) -> str | None:
    if value is not None and not _ID.fullmatch(value):
        raise ValueError(f"{clean_text(value)[:70]!r} is not a memory id (4-64 lower-case letters, digits, '_' or '-')")
    return value


def _date_is_text(cls, value):
    return _iso_text(value)


def _date_in_range(cls, value):
    return _in_range(value)


def _clean_optional_text(cls, value: str | None) -> str | None:
    return clean_text(value) or None if value is not None else None


class _ExportedMemoryChecks(BaseModel):
    """What every exported memory is checked for; ``export_model`` adds the
    fields, and the checks each field's kind needs, from the record's schema."""

    model_config = ConfigDict(extra="forbid")
    record_type: ClassVar[type] = MemoryRecord

    @field_validator("content", mode="before", check_fields=False)
    @classmethod
    def _content(cls, value):
        if not isinstance(value, str):
            raise ValueError("the text must be a string")
        return _checked(clean_memory_text, value)

    @field_validator("metadata", check_fields=False)
    @classmethod
    def _metadata(cls, values: dict) -> dict:
        if len(values) > MAX_METADATA_KEYS:
            raise ValueError(f"{len(values)} metadata keys; the limit is {MAX_METADATA_KEYS}")
        reserved = reserved_metadata_keys(cls.record_type)
        cleaned = {}
        for key, value in values.items():
            if not _METADATA_KEY.fullmatch(key) or key in reserved:
                raise ValueError(f"metadata key {clean_text(key)[:40]!r} is not allowed")
            if isinstance(value, str):
                value = clean_text(value)
                if len(value) > MAX_MEMORY_CHARS:
                    raise ValueError(f"metadata {key!r} is over {MAX_MEMORY_CHARS} characters")
            elif isinstance(value, float) and not math.isfinite(value):
                raise ValueError(f"metadata {key!r} is not a finite number")
            elif isinstance(value, int) and not isinstance(value, bool) and not _INT64[0] <= value <= _INT64[1]:
                # Chroma keeps numbers as 64-bit: a larger int would come back as a
                # rounded float while the catalog kept it exact, and the two would disagree.
                raise ValueError(f"metadata {key!r} is outside the 64-bit integer range")
            cleaned[key] = value
        return cleaned

    @model_validator(mode="after")
    def _status_agrees(self):
        if self.status == "current" and (self.superseded_by or self.valid_until):
            raise ValueError(f"memory {self.id} is current but has a successor or an end date")
        if self.id in (self.superseded_by, self.supersedes):
            raise ValueError(f"memory {self.id} links to itself")
        if self.status == "superseded" and not (self.superseded_by or self.valid_until):
            # a retraction keeps its end date; without either, nothing says when or by what it ended
            raise ValueError(f"memory {self.id} is superseded but has neither a successor nor an end date")
        if self.valid_until is not None and self.valid_until < self.created_at:
            raise ValueError(
                f"memory {self.id} ends ({self.valid_until:%Y-%m-%d}) before it was made ({self.created_at:%Y-%m-%d})"
            )
        return self

    def to_record(self, user_id: str):
        return self.record_type(user_id=user_id, **self.model_dump())

    @classmethod
    def from_record(cls, record: MemoryRecord):
        fields = {name: getattr(record, name) for name in cls.model_fields if name != "metadata"}
        metadata = {k: v for k, v in record.metadata.items() if isinstance(v, (str, int, float, bool))}
        return cls.model_construct(**fields, metadata=metadata)


def export_model(record_type: type = MemoryRecord) -> type[_ExportedMemoryChecks]:
    """The export file's model of ``record_type``: one field per exported record
    field, in the record's order, then the extras; each checked by its kind."""
    exported = [spec for spec in stored_fields(record_type) if spec.how.exported]
    ids = [s.name for s in exported if s.kind == "id"]
    dates = [s.name for s in exported if s.kind in ("datetime", "date")]
    texts = [s.name for s in exported if s.kind == "text" and s.name != "content"]
    checks = {}
    if ids:
        checks["_ids"] = field_validator(*ids)(_valid_id)
    if dates:
        checks["_dates_are_text"] = field_validator(*dates, mode="before")(_date_is_text)
        checks["_dates_in_range"] = field_validator(*dates)(_date_in_range)
    if texts:
        checks["_text"] = field_validator(*texts)(_clean_optional_text)
    model = create_model(
        f"Exported{record_type.__name__.removesuffix('Record')}",
        __base__=_ExportedMemoryChecks,
        __validators__=checks,
        **{spec.name: _export_annotation(spec) for spec in exported},
        metadata=(dict[str, str | bool | int | float], Field(default_factory=dict)),
    )
    model.record_type = record_type
    return model


if TYPE_CHECKING:
    ExportedMemory: TypeAlias = Any  # its fields are made at run time, from MemoryRecord's schema
else:
    ExportedMemory = export_model()


class ExportedSession(BaseModel):
    model_config = ConfigDict(extra="forbid")

    messages: list[ChatMessage] = Field(default_factory=list, max_length=MAX_IMPORTED_MESSAGES)
    summary: str = ""

    @field_validator("messages")
    @classmethod
    def _messages(cls, messages: list[ChatMessage]) -> list[ChatMessage]:
        cleaned = []
        for index, message in enumerate(messages):
            limit = MAX_IMPORTED_MESSAGE_CHARS if message.role == "user" else MAX_IMPORTED_REPLY_CHARS
            content = _clean_block(message.content, limit, f"message {index}")
            if content:
                cleaned.append(ChatMessage(role=message.role, content=content))
        return cleaned

    @field_validator("summary")
    @classmethod
    def _summary(cls, value: str) -> str:
        return _clean_block(value, MAX_IMPORTED_REPLY_CHARS, "the summary")


class ImportedProposal(ProfileProposal):
    """A pending profile change, held to the limits of the profile it would change."""

    @model_validator(mode="after")
    def _clean(self) -> ImportedProposal:
        if self.field == "english_level":  # read as 'profile level' reads what is typed
            self.value = _checked(normalize_level, self.value)
            if self.old_value is not None:
                self.old_value = _checked(normalize_level, self.old_value)
        else:
            self.value = _checked(clean_profile_value, self.value)
            if self.old_value is not None:
                self.old_value = _checked(clean_profile_value, self.old_value)
        self.evidence = clean_text(self.evidence)[:MAX_IMPORTED_MESSAGE_CHARS]
        self.id = clean_text(self.id)[:16] or "import"
        return self

    def as_proposal(self) -> ProfileProposal:
        return ProfileProposal.model_validate(self.model_dump())


class ImportedProfile(UserProfile):
    """The profile of an export, held to the limits of the ``profile`` commands."""

    @field_validator("english_level", mode="before")
    @classmethod
    def _known_level(cls, value):
        # read as 'profile level' reads what is typed; refused here, with the file
        # named, rather than when the profile is merged after the checks
        if value is None:
            return None
        if not isinstance(value, str):
            raise ValueError("the English level must be text such as 'B2'")
        return _checked(normalize_level, value)

    @field_validator("learning_goals", "preferences", mode="before")
    @classmethod
    def _limits(cls, values, info: ValidationInfo):
        if not isinstance(values, list):
            return values
        # The importing learner's own list limit (MEMORA_MAX_PROFILE_ITEMS), which the
        # export was written under: a constant here would refuse a learner's own file.
        limit = (info.context or {}).get("profile_items", MAX_PROFILE_ITEMS)
        if len(values) > limit:
            raise ValueError(f"{len(values)} items; the limit is {limit} (MEMORA_MAX_PROFILE_ITEMS)")
        return [_checked(clean_profile_value, v) if isinstance(v, str) else v for v in values]


class ImportedMistake(Mistake):
    """A ledger entry of an export. ``Mistake`` checks what Memora needs to run it
    (times, the review card, counts, the id); this adds what Memora itself
    always writes: text cleaned like typed text, an example, dates in order."""

    @model_validator(mode="after")
    def _limits(self) -> ImportedMistake:
        if not self.examples:
            raise ValueError(f"mistake {self.id} has no example")
        if self.last_seen < self.first_seen or (self.mastered_at is not None and self.mastered_at < self.first_seen):
            raise ValueError(f"mistake {self.id} has its dates out of order")
        self.rule = _checked(clean_mistake_text, self.rule)
        for example in self.examples:
            example.original = _checked(clean_mistake_text, example.original)
            example.corrected = _checked(clean_mistake_text, example.corrected)
        return self

    def as_mistake(self) -> Mistake:
        return Mistake.model_validate(self.model_dump())


class ExportFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    format: Literal["memora-export"]
    version: Literal[1]
    exported_at: datetime
    user: str  # any name --user takes (李明 too): export writes the learner's own
    embedding_model: str | None = Field(default=None, max_length=200)
    profile: ImportedProfile
    pending_profile_changes: list[ImportedProposal] = Field(default_factory=list, max_length=MAX_PENDING)
    memories: list[ExportedMemory] = Field(default_factory=list, max_length=HARD_MAX_IMPORT_MEMORIES)
    session: ExportedSession = Field(default_factory=ExportedSession)
    mistakes: list[ImportedMistake] = Field(default_factory=list, max_length=MAX_MISTAKES)
    activity: dict[StoredDay, DayActivity] = Field(default_factory=dict, max_length=366 * 50)

    @field_validator("exported_at", mode="before")
    @classmethod
    def _date_is_text(cls, value):
        return _iso_text(value)

    @field_validator("user", mode="before")
    @classmethod
    def _learner_name(cls, value):
        if not isinstance(value, str):
            raise ValueError("the learner name must be text")
        try:
            validate_user_name(value)
        except ConfigError:
            raise ValueError(f"{value[:40]!r} is not a learner name") from None
        return value

    @model_validator(mode="after")
    def _links_hold(self) -> ExportFile:
        """Ids are unique and every version link points to its partner in the file."""
        by_id: dict[str, ExportedMemory] = {}
        for index, memory in enumerate(self.memories):
            if memory.id in by_id:
                raise ValueError(f"memories.{index}: the id {memory.id} appears twice")
            by_id[memory.id] = memory
        mistake_ids: set[str] = set()
        for index, mistake in enumerate(self.mistakes):
            if mistake.id in mistake_ids:
                raise ValueError(f"mistakes.{index}: the id {mistake.id} appears twice")
            mistake_ids.add(mistake.id)
        for memory in self.memories:
            nxt = by_id.get(memory.superseded_by) if memory.superseded_by else None
            if memory.superseded_by and (nxt is None or nxt.supersedes != memory.id):
                raise ValueError(
                    f"memory {memory.id} names a successor {memory.superseded_by} that does not name it back"
                )
            prev = by_id.get(memory.supersedes) if memory.supersedes else None
            if memory.supersedes and (prev is None or prev.superseded_by != memory.id):
                raise ValueError(
                    f"memory {memory.id} names an earlier version {memory.supersedes} that does not name it back"
                )
        for memory in self.memories:  # with links mutual, a chain that never ends is a loop
            seen, step = {memory.id}, memory
            while step.superseded_by:
                if step.superseded_by in seen:
                    raise ValueError(f"the versions of memory {memory.id} form a loop")
                seen.add(step.superseded_by)
                step = by_id[step.superseded_by]
        return self


def _shown(path) -> str:
    """A path as one line of an error message (a typed path may hold any character)."""
    return clean_text(str(path)) or repr(str(path))


def default_export_path(app: Memora) -> Path:
    stamp = app.clock().strftime("%Y%m%d-%H%M%S")
    return app.paths.folder / f"memora-export-{app.settings.user}-{stamp}.json"


def build_export(app: Memora) -> ExportFile:
    """The export as stored, less its memories (``export_data`` writes them a page at a time);
    built without the import checks, so that it always succeeds (the importer names what it cannot take back)."""
    state = app.memory.to_state()
    return ExportFile.model_construct(
        format=EXPORT_FORMAT,
        version=EXPORT_VERSION,
        exported_at=app.clock(),
        user=app.settings.user,
        embedding_model=app.embedder.name,
        profile=ImportedProfile.model_construct(**dict(app.profiles.get())),  # nested models kept as models
        pending_profile_changes=[ImportedProposal.model_construct(**p.model_dump()) for p in app.proposals.pending()],
        memories=[],
        session=ExportedSession.model_construct(
            messages=[ChatMessage(**m) for m in state["messages"]], summary=state["summary"]
        ),
        mistakes=app.ledger.all(),
        activity=app.activity.days(),
    )


def export_data(app: Memora, path: Path) -> Path:
    path = Path(path)
    try:
        if path.is_dir():  # inside the try: stat() raises for a too-long name (ENAMETOOLONG)
            path = path / default_export_path(app).name
        head, tail = build_export(app).model_dump_json(indent=2).split('"memories": []', 1)
        atomic_write_text(path, itertools.chain([head, '"memories": ['], _memory_pages(app), ["]", tail, "\n"]))
    except OSError as error:
        raise MemoraError(f"Cannot write {_shown(path)}: {failure_reason(error)}. Nothing was exported.") from None
    except ValueError:  # a NUL character in the path
        raise MemoraError(f"Cannot write {_shown(path)}: the path is not valid.") from None
    return path


def _memory_pages(app: Memora, size: int = 1000) -> Iterator[str]:
    """Every memory as JSON, oldest first, a page at a time (an export of 50,000 never
    holds them all), under the store's lock so that no write falls between two pages."""
    with file_lock(catalog_path(app.store.path, app.store.user_id)):
        for offset in itertools.count(0, size):
            page = app.store.listed(include_superseded=True, newest_first=False, limit=size, offset=offset)
            if not page:
                return
            yield "," * bool(offset) + ",\n".join(ExportedMemory.from_record(r).model_dump_json() for r in page)


def _refuse(path: Path, reason: str) -> ImportFileError:
    return ImportFileError(f"{_shown(path.name)} {reason}. Nothing was imported.")


def _object_without_duplicates(pairs: list[tuple[str, object]]) -> dict:
    keys = [key for key, _ in pairs]
    if len(set(keys)) != len(keys):
        twice = next(key for key in keys if keys.count(key) > 1)
        raise _DuplicateKey(twice)
    return dict(pairs)


class _DuplicateKey(ValueError):
    pass


def _no_constant(name: str):
    raise ValueError(f"{name} is not a JSON number")


def _too_deep(value, limit: int = MAX_JSON_DEPTH) -> bool:
    """True when ``value`` nests more than ``limit`` containers (level by level, no recursion)."""
    level = [value] if isinstance(value, (dict, list)) else []
    for _ in range(limit):
        level = [
            child
            for item in level
            for child in (item.values() if isinstance(item, dict) else item)
            if isinstance(child, (dict, list))
        ]
        if not level:
            return False
    return True


def _parse(path: Path, raw: bytes):
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise _refuse(path, f"is not UTF-8 text (invalid byte at position {error.start:,})") from None
    try:
        data = json.loads(text, object_pairs_hook=_object_without_duplicates, parse_constant=_no_constant)
    except _DuplicateKey as error:
        raise _refuse(
            path, f"is not a valid Memora export (the key {clean_text(str(error))[:40]!r} appears twice in one object)"
        ) from None
    except json.JSONDecodeError as error:
        raise _refuse(path, f"is not a JSON file (line {error.lineno}, column {error.colno}: {error.msg})") from None
    except RecursionError:
        # The C parser counts its own depth and stops at the interpreter's
        # recursion limit: 200,000 nested brackets end here, in a millisecond.
        raise _refuse(path, f"is nested more than {MAX_JSON_DEPTH} levels deep, so it is not a Memora export") from None
    except ValueError as error:  # NaN, a 5,000-digit number
        raise _refuse(path, f"is not a valid JSON file ({clean_text(str(error))[:80]})") from None
    if _too_deep(data):
        raise _refuse(path, f"is nested more than {MAX_JSON_DEPTH} levels deep, so it is not a Memora export")
    return data


def _first_problem(error: ValidationError) -> str:
    return clean_text(first_problem(error))


def read_export(path: Path, limits: ImportLimits | None = None) -> ExportFile:
    """Read and check an export completely; raise ``ImportFileError`` (one line) if it is not one."""
    path = Path(path)
    limits = limits or import_limits(None)
    most = limits.bytes
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        raise ImportFileError(f"No such file: {_shown(path)}. Nothing was imported.") from None
    except OSError as error:
        raise ImportFileError(f"Cannot read {_shown(path)}: {error.strerror}. Nothing was imported.") from None
    except ValueError:  # a NUL character in the path
        raise ImportFileError(f"Cannot read {_shown(path)}: the path is not valid. Nothing was imported.") from None
    kind = special_file(path)
    if kind is not None:  # a pipe would block the read, /dev/zero never end it
        raise ImportFileError(f"Cannot read {_shown(path)}: it is {kind}, not a file. Nothing was imported.")
    if size > most:
        # In bytes: a file just over the limit must not read "20 MB; the limit is 20 MB".
        raise _refuse(path, f"is {size:,} bytes; imports are limited to {most:,} bytes ({most / (1024 * 1024):g} MB)")
    try:
        with open(path, "rb") as handle:
            raw = handle.read(most + 1)  # a file that grew since stat() is still bounded
    except OSError as error:  # a folder, a permission problem...
        raise ImportFileError(f"Cannot read {_shown(path)}: {error.strerror}. Nothing was imported.") from None
    if len(raw) > most:
        raise _refuse(path, f"is over {most:,} bytes, the import limit")
    data = _parse(path, raw)
    try:
        export = ExportFile.model_validate(data, context={"profile_items": limits.profile_items})
    except ValidationError as error:
        raise _refuse(path, f"is not a valid Memora export ({_first_problem(error)})") from None
    if len(export.memories) > limits.memories:
        raise _refuse(path, f"holds {len(export.memories):,} memories; imports take at most {limits.memories:,}")
    return export


def _plan_profile(app: Memora, path: Path, export: ExportFile) -> UserProfile:
    """The merged profile (existing values win; lists united), within the profile's limits."""
    current = app.profiles.get()

    def united(mine: list[str], theirs: list[str], label: str) -> list[str]:
        keys = {normalized_key(v) for v in mine}
        merged = list(mine)
        for value in theirs:
            if normalized_key(value) not in keys:
                keys.add(normalized_key(value))
                merged.append(value)
        limit = app.profiles.max_items
        if len(merged) > limit:
            raise _refuse(
                path,
                f"would give you {len(merged)} {label} (the limit is {limit}); remove some with 'profile remove' first",
            )
        return merged

    history = {(c.at, c.level): c for c in [*export.profile.level_history, *current.level_history]}
    return UserProfile(
        english_level=current.english_level or export.profile.english_level,
        learning_goals=united(current.learning_goals, export.profile.learning_goals, "learning goals"),
        preferences=united(current.preferences, export.profile.preferences, "preferences"),
        correction_style=current.correction_style or export.profile.correction_style,
        level_history=sorted(history.values(), key=lambda c: c.at),
    )


def _missing_memories(app: Memora, path: Path, export: ExportFile) -> tuple[list[MemoryRecord], int]:
    """The export's memories not here yet, refused when they do not fit the cap."""
    learner = validate_user_name(export.user)  # the name as --user and export spell it (NFC, lower case)
    if learner != app.settings.user:
        raise _refuse(
            path,
            f"holds the data of learner '{learner}', not '{app.settings.user}'; "
            f"start Memora with --user {learner} to import it there",
        )
    existing = {r.id for r in app.store.list(include_superseded=True)}
    # Memories already here are kept as they are: an older export must never
    # bring back a fact that was superseded or edited since.
    missing = [m.to_record(app.settings.user) for m in export.memories if m.id not in existing]
    # Nor one that was forgotten (as long as the deletion log keeps its row): left out, and said so.
    log, everything = app.deletions, app.deletions.forgot_all_at(learner) or -math.inf
    ids = log.named(learner, "memory", [r.id for r in missing])
    texts = log.named(learner, "text", [k for r in missing for k in log.text_keys(r.content)])

    def forgotten_at(r: MemoryRecord) -> float:  # the last deletion naming it (by id, text or all); -inf: none
        return max([everything, ids.get(r.id, -math.inf), *(texts.get(k, -math.inf) for k in log.text_keys(r.content))])

    forgotten = {r.id for r in missing if r.created_at.timestamp() <= forgotten_at(r)}
    missing = [r for r in missing if r.id not in forgotten]
    gone = app.deletions.named(learner, "mistake", [m.id for m in export.mistakes])
    export.mistakes = [m for m in export.mistakes if m.id not in gone]
    cap = app.store.memory_cap
    adding = sum(1 for r in missing if r.is_current)
    if cap is not None and adding and app.store.count() + adding > cap:
        raise _refuse(
            path,
            f"adds {adding} current memories to your {app.store.count()}, over your memory cap of {cap}; "
            "raise it with 'memory cap <n>' or 'memory cap off' first",
        )
    return missing, len(forgotten) + len(gone)


def _not_from_the_future(path: Path, export: ExportFile, now: datetime) -> None:
    """Times that record the past may be at most a day ahead of this clock (time zones):
    a review dated 2099 would keep its card from ever coming back."""
    times = [("the export", export.exported_at), *((f"level {c.level}", c.at) for c in export.profile.level_history)]
    for m in export.memories:
        times += [(f"memory {m.id}", t) for t in (m.created_at, m.last_seen, m.valid_until, m.followed_up_at) if t]
    for m in export.mistakes:
        times += [(f"mistake {m.id}", t) for t in (m.first_seen, m.last_seen, m.mastered_at, m.card.last_review) if t]
        times += [(f"a review of mistake {m.id}", r.at) for r in m.reviews]
    times += [("the activity", datetime.combine(day, datetime.min.time(), now.tzinfo)) for day in export.activity]
    for what, when in times:
        if to_aware(when) > now + timedelta(days=1):
            raise _refuse(path, f"dates {what} {to_aware(when):%Y-%m-%d}, in the future")


def _new_mistakes(app: Memora, path: Path, export: ExportFile) -> list[Mistake]:
    """The export's mistakes not in the ledger yet, refused when they do not fit it."""
    ledger = app.ledger.all()
    here = {m.id for m in ledger}
    new_mistakes = list({m.id: m.as_mistake() for m in export.mistakes if m.id not in here}.values())
    if new_mistakes and len(ledger) + len(new_mistakes) > MAX_MISTAKES:
        # Refused, not cut: keeping some of the file's mistakes would drop the rest
        # without the learner choosing which, and an import is all or nothing.
        over = len(ledger) + len(new_mistakes) - MAX_MISTAKES
        raise _refuse(
            path,
            f"adds {len(new_mistakes):,} mistakes to the {len(ledger):,} in your ledger, {over:,} over its limit "
            f"of {MAX_MISTAKES:,} entries; delete {over:,} with 'mistakes forget <id>' first",
        )
    return new_mistakes


def import_data(app: Memora, path: Path) -> str:
    """Restore an export, all or nothing, without destroying anything already here
    (see the module docstring)."""
    path = Path(path)
    export = read_export(path, import_limits(app.store.memory_cap, app.profiles.max_items))
    _not_from_the_future(path, export, to_aware(app.clock()))
    missing, left_out = _missing_memories(app, path, export)
    merged = _plan_profile(app, path, export)
    new_mistakes = _new_mistakes(app, path, export)
    pending = [p.as_proposal() for p in export.pending_profile_changes]
    restore_session = (
        not app.memory.messages and not app.memory.summary and bool(export.session.messages or export.session.summary)
    )

    # Nothing is written before this point. The memories come first (embedded
    # before their first write), with a journal that also holds the other files
    # as they were, so that a failure here, or a crash before the end, puts
    # everything back (here, or at the next start: finish_interrupted_import).
    previous_state = app.memory.to_state()
    files = snapshot_files(app.paths)
    added: list[ProfileProposal] = []
    written: set[str] = set()  # only these are put back in-process (others may have changed since)
    profile_changed = False
    restored = 0
    try:
        restored = import_memories(app.store, missing, files)
        try:
            written.add("profile")
            profile_changed = app.profiles.replace(merged)
            written.add("proposals")
            for proposal in pending:
                if app.proposals.add(proposal):
                    added.append(proposal)
            if restore_session:
                written.add("session")
                app.conversation.load({**previous_state, **export.session.model_dump(mode="json")}, save=True)
            written.add("mistakes")
            if new_mistakes:
                current = app.ledger.all()  # read again: another terminal may have added one since
                ids = {m.id for m in current}
                app.ledger.replace_all(current + [m for m in new_mistakes if m.id not in ids])
            written.add("activity")
            if export.activity:
                app.activity.merge_days(export.activity)
        except BaseException:
            put_files_back(app.paths, {k: v for k, v in files.items() if k in written})
            app.conversation.load(previous_state)
            undo_import(app.store)
            raise
        end_import(app.store)
    except Exception as error:  # a Chroma error, a full disk...: undone, so one line
        reason = _import_failure(error)
        if isinstance(error, PartialWriteError):
            raise ImportFileError(
                f"Importing {_shown(path.name)} failed ({reason}); restart Memora to undo what it wrote."
            ) from None
        raise ImportFileError(f"Could not import {_shown(path.name)}: {reason}. Nothing was imported.") from None
    return _imported(export, restored, profile_changed, added, new_mistakes, restore_session, left_out)


def _import_failure(error: Exception) -> str:
    """Why an import failed, as the end of a sentence."""
    if disk_problem(error):  # whichever layer said it: Chroma, SQLite or a file write
        return failure_reason(error)
    if isinstance(error, MemoraError):
        return clean_text(str(error).rstrip("."))
    if isinstance(error, OSError) and error.strerror:
        return error.strerror
    return clean_text(f"{type(error).__name__}: {error}")[:200]


def _imported(
    export: ExportFile, restored: int, profile_changed: bool, added: list, new_mistakes: list, session: bool, left: int
) -> str:
    """The line that says what an import did."""
    kept = len(export.memories) - restored - left
    session_note = "session kept (yours was not empty)"
    if session:
        session_note = f"session restored ({counted(len(export.session.messages), 'message')})"
    elif not (export.session.messages or export.session.summary):
        session_note = "no session in the file"
    proposals_note = f", {counted(len(added), 'pending profile change')} restored" if added else ""
    if new_mistakes:
        proposals_note += f", {counted(len(new_mistakes), 'mistake')} added to your ledger"
    if left:
        proposals_note += f", {counted(left, 'item')} you had forgotten left out"
    return (
        f"Imported {counted(restored, 'memory', 'memories')} ({kept} already here, kept as they are), "
        f"profile {'merged' if profile_changed else 'unchanged'}{proposals_note}, {session_note}."
    )


__all__ = ["build_export", "export_data", "import_data", "read_export"]
