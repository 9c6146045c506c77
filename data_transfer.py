"""``export`` and ``import``: a learner's data as one JSON file.

An export holds the profile, pending profile changes, every memory with its
history (superseded versions included) and the session. It is written
atomically with owner-only permissions, because it is personal data.

An import is validated completely before anything is written (size, format,
every record), and it never destroys what is already there: only memories
whose ids are missing are added (importing twice adds nothing twice, and an
old export cannot revive a fact superseded since), the profile is merged
(existing values win; goals and preferences are united), pending profile
changes are restored, and the session is restored only when the current one
is empty.
"""

from __future__ import annotations

import json
from datetime import date, datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from errors import ImportFileError, MemoraError
from records import CATEGORIES, MAX_MEMORY_CHARS, SOURCES, MemoryRecord
from session import ChatMessage
from storage import atomic_write_text
from text_utils import clean_text
from user_profile import UserProfile

EXPORT_FORMAT = "memora-export"
EXPORT_VERSION = 1
MAX_IMPORT_BYTES = 20 * 1024 * 1024
MAX_IMPORT_MEMORIES = 50_000


class ExportedMemory(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(pattern=r"^[0-9a-zA-Z_-]{1,64}$")
    content: str = Field(min_length=1, max_length=MAX_MEMORY_CHARS)
    created_at: datetime
    memory_type: Literal["semantic", "episodic"]
    category: str
    source: str
    status: Literal["current", "superseded"]
    last_seen: datetime | None = None
    valid_until: datetime | None = None
    superseded_by: str | None = None
    supersedes: str | None = None
    change_reason: str | None = None
    event_date: date | None = None
    followed_up_at: datetime | None = None
    metadata: dict[str, str | int | float | bool] = Field(default_factory=dict)

    @field_validator("category")
    @classmethod
    def _category(cls, value: str) -> str:
        return value if value in CATEGORIES else "other"

    @field_validator("source")
    @classmethod
    def _source(cls, value: str) -> str:
        return value if value in SOURCES else "import"

    def to_record(self, user_id: str) -> MemoryRecord:
        return MemoryRecord(user_id=user_id, **self.model_dump())

    @classmethod
    def from_record(cls, record: MemoryRecord) -> "ExportedMemory":
        fields = {name: getattr(record, name) for name in cls.model_fields if name != "metadata"}
        metadata = {k: v for k, v in record.metadata.items() if isinstance(v, (str, int, float, bool))}
        return cls(**fields, metadata=metadata)


class ExportedSession(BaseModel):
    model_config = ConfigDict(extra="forbid")

    messages: list[ChatMessage] = Field(default_factory=list)
    summary: str = ""


class ExportFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    format: Literal["memora-export"]
    version: Literal[1]
    exported_at: datetime
    user: str
    embedding_model: str | None = None
    profile: UserProfile
    pending_profile_changes: list[dict] = Field(default_factory=list)
    memories: list[ExportedMemory] = Field(default_factory=list, max_length=MAX_IMPORT_MEMORIES)
    session: ExportedSession = Field(default_factory=ExportedSession)


def _shown(path) -> str:
    """A path as one line of an error message (a typed path may hold any character)."""
    return clean_text(str(path)) or repr(str(path))


def default_export_path(app) -> Path:
    stamp = app.now().strftime("%Y%m%d-%H%M%S")
    return app.paths.folder / f"memora-export-{app.settings.user}-{stamp}.json"


def build_export(app) -> ExportFile:
    records = app.store.all_records()
    state = app.memory.to_state()
    return ExportFile(
        format=EXPORT_FORMAT,
        version=EXPORT_VERSION,
        exported_at=app.now(),
        user=app.settings.user,
        embedding_model=app.embedder.name,
        profile=app.profiles.get(),
        pending_profile_changes=[p.model_dump(mode="json") for p in app.proposals.pending()],
        memories=[ExportedMemory.from_record(r) for r in records],
        session=ExportedSession(messages=state["messages"], summary=state["summary"]),
    )


def export_data(app, path: Path) -> Path:
    path = Path(path)
    try:
        if path.is_dir():  # inside the try: stat() raises for a too-long name (ENAMETOOLONG)
            path = path / default_export_path(app).name
        atomic_write_text(path, build_export(app).model_dump_json(indent=2) + "\n")
    except OSError as error:
        raise MemoraError(f"Cannot write {_shown(path)}: {error.strerror}.") from None
    except ValueError:  # a NUL character in the path
        raise MemoraError(f"Cannot write {_shown(path)}: the path is not valid.") from None
    return path


def read_export(path: Path) -> ExportFile:
    path = Path(path)
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        raise ImportFileError(f"No such file: {_shown(path)}.") from None
    except OSError as error:
        raise ImportFileError(f"Cannot read {_shown(path)}: {error.strerror}.") from None
    except ValueError:  # a NUL character in the path
        raise ImportFileError(f"Cannot read {_shown(path)}: the path is not valid.") from None
    if size > MAX_IMPORT_BYTES:
        # In bytes: a file just over the limit must not read "20 MB; the limit is 20 MB".
        raise ImportFileError(
            f"{_shown(path.name)} is {size:,} bytes; imports are limited to {MAX_IMPORT_BYTES:,} bytes "
            f"({MAX_IMPORT_BYTES / (1024 * 1024):g} MB). Nothing was imported."
        )
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ImportFileError(f"{_shown(path.name)} is not a JSON file ({type(error).__name__}). Nothing was imported.") from None
    except OSError as error:  # a folder, a permission problem...
        raise ImportFileError(f"Cannot read {_shown(path)}: {error.strerror}.") from None
    try:
        return ExportFile.model_validate(data)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ())) or "top level"
        raise ImportFileError(
            f"{_shown(path.name)} is not a valid Memora export ({where}: {first.get('msg')}). Nothing was imported."
        ) from None


def import_data(app, path: Path) -> str:
    """Restore an export without destroying anything already here (see the module docstring)."""
    from proposals import ProfileProposal

    export = read_export(path)
    pending = []
    for item in export.pending_profile_changes:
        try:
            pending.append(ProfileProposal.model_validate(item))
        except ValidationError:
            raise ImportFileError(f"{_shown(Path(path).name)} holds an invalid pending profile change. Nothing was imported.") from None
    existing = {r.id for r in app.store.all_records()}
    # Memories already here are kept as they are: an older export must never
    # bring back a fact that was superseded or edited since.
    missing = [m.to_record(app.settings.user) for m in export.memories if m.id not in existing]
    restored = app.store.restore(missing) if missing else 0
    kept = len(export.memories) - restored
    current = app.profiles.get()
    merged = UserProfile(
        english_level=current.english_level or export.profile.english_level,
        learning_goals=current.learning_goals + [g for g in export.profile.learning_goals if g not in current.learning_goals],
        preferences=current.preferences + [p for p in export.profile.preferences if p not in current.preferences],
    )
    profile_changed = app.profiles.replace(merged)
    added_proposals = sum(app.proposals.add(p) for p in pending)
    session_note = "session kept (yours was not empty)"
    if app.memory.to_state()["messages"] == [] and not app.memory.summary and (export.session.messages or export.session.summary):
        app.memory.load_state({**app.memory.to_state(), **export.session.model_dump(mode="json")})
        app.save_session()
        session_note = f"session restored ({len(export.session.messages)} messages)"
    elif not (export.session.messages or export.session.summary):
        session_note = "no session in the file"
    proposals_note = f", {added_proposals} pending profile change{'s' if added_proposals != 1 else ''} restored" if added_proposals else ""
    return (
        f"Imported {restored} memories ({kept} already here, kept as they are), "
        f"profile {'merged' if profile_changed else 'unchanged'}{proposals_note}, {session_note}."
    )


__all__ = ["build_export", "export_data", "import_data", "read_export"]
