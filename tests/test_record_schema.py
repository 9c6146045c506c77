"""One persistence schema: the catalog, Chroma and the export file all follow
``MemoryRecord``'s field definitions, and data written before keeps opening."""

from __future__ import annotations

import contextlib
import json
import sqlite3
from dataclasses import dataclass, fields
from datetime import date, datetime, timedelta, timezone

import pytest

from long_term_memory import LongTermMemoryStore
from memora.core.records import (
    MemoryRecord,
    catalog_columns,
    from_chroma,
    reserved_metadata_keys,
    stored,
    stored_fields,
    to_chroma_metadata,
)
from memora.data.data_transfer import ExportedMemory, export_model
from memora.model.embeddings import HashEmbedder
from memora.store.catalog import MemoryCatalog, catalog_path

TZ = timezone(timedelta(hours=8))
WHEN = datetime(2026, 11, 20, 9, 30, tzinfo=TZ)


def full_record(**changes) -> MemoryRecord:
    """A record with every field set to a value other than its default."""
    record = MemoryRecord(
        id="a1b2c3d4",
        content="I moved to Taipei in October.",
        created_at=WHEN,
        memory_type="episodic",
        category="schedule",
        source="import",
        status="superseded",
        user_id="mei",
        last_seen=WHEN + timedelta(days=1),
        valid_until=WHEN + timedelta(days=2),
        superseded_by="e5f6a7b8",
        supersedes="c9d0e1f2",
        change_reason="moved again",
        event_date=date(2026, 12, 3),
        followed_up_at=WHEN + timedelta(days=3),
        metadata={"mood": "glad", "tries": 2, "pinned": True},
    )
    return record.evolve(**changes)


def same_instant(a: MemoryRecord, b: MemoryRecord) -> None:
    """Equal field by field; datetimes compare as instants (stores may change the zone)."""
    for f in fields(MemoryRecord):
        assert getattr(a, f.name) == getattr(b, f.name), f.name


def test_every_field_differs_from_its_default_in_the_full_record():
    record = full_record()
    for f in fields(MemoryRecord):
        if f.name != "metadata":
            assert getattr(record, f.name) != f.default, f"full_record leaves {f.name} at its default"


def test_chroma_metadata_round_trips_every_field():
    record = full_record()
    same_instant(from_chroma(record.id, record.content, to_chroma_metadata(record)), record)


def test_catalog_round_trips_every_field(tmp_path):
    record = full_record()
    catalog = MemoryCatalog(tmp_path / "catalog.sqlite3", user_id="mei")
    with catalog.transaction() as db:
        catalog.insert(db, [record])
    same_instant(catalog.get(record.id), record)
    catalog.close()


def test_export_round_trips_every_exported_field():
    record = full_record()
    text = ExportedMemory.from_record(record).model_dump_json()
    back = ExportedMemory.model_validate(json.loads(text)).to_record(user_id="mei")
    same_instant(back, record)
    assert "user_id" not in json.loads(text)  # an import belongs to whoever imports it


def test_chroma_on_disk_round_trips_every_field(tmp_path):
    store = LongTermMemoryStore(tmp_path / "db", embedding_function=HashEmbedder(), user_id="mei")
    record = full_record()
    store.restore([record])
    store.catalog.close()
    catalog_path(tmp_path / "db", "mei").unlink()  # read back from Chroma alone
    reopened = LongTermMemoryStore(tmp_path / "db", embedding_function=HashEmbedder(), user_id="mei")
    same_instant(reopened.get(record.id), record)


# -- a new field is one edit --------------------------------------------------------


@dataclass(frozen=True)
class RecordWithDifficulty(MemoryRecord):
    """A record type with one more field, declared in one place only."""

    reviewed_at: datetime | None = stored(None, kind="datetime", column="reviewed_ts", ts_key="reviewed_ts")
    difficulty: str = stored("medium", kind="choice", choices=("easy", "medium", "hard"))


def test_a_field_declared_once_reaches_chroma_and_the_catalog():
    record = RecordWithDifficulty(
        **{f.name: getattr(full_record(), f.name) for f in fields(MemoryRecord)}, reviewed_at=WHEN, difficulty="hard"
    )
    meta = to_chroma_metadata(record)
    assert meta["difficulty"] == "hard" and meta["reviewed_ts"] == WHEN.timestamp()
    back = from_chroma(record.id, record.content, meta, RecordWithDifficulty)
    assert (back.reviewed_at, back.difficulty) == (WHEN, "hard")
    assert back.metadata == record.metadata  # the new keys are the field's, not extras
    assert {"difficulty", "reviewed_at", "reviewed_ts"} <= reserved_metadata_keys(RecordWithDifficulty)
    columns = catalog_columns(RecordWithDifficulty)
    assert columns["difficulty"][0] == "TEXT NOT NULL" and columns["reviewed_ts"][0] == "REAL"
    assert [s.name for s in stored_fields(RecordWithDifficulty)][-2:] == ["reviewed_at", "difficulty"]


def test_a_field_declared_once_reaches_the_export_file_with_its_kinds_checks():
    model = export_model(RecordWithDifficulty)
    record = RecordWithDifficulty(
        **{f.name: getattr(full_record(), f.name) for f in fields(MemoryRecord)}, reviewed_at=WHEN, difficulty="hard"
    )
    text = model.from_record(record).model_dump_json()
    assert json.loads(text)["difficulty"] == "hard"
    back = model.model_validate(json.loads(text)).to_record(user_id="mei")
    assert isinstance(back, RecordWithDifficulty) and (back.reviewed_at, back.difficulty) == (WHEN, "hard")
    with pytest.raises(ValueError, match="difficulty"):
        model.model_validate({**json.loads(text), "difficulty": "impossible"})
    with pytest.raises(ValueError, match="ISO 8601"):  # a datetime field gets the date checks by its kind
        model.model_validate({**json.loads(text), "reviewed_at": 1700000000})
    assert "difficulty" not in ExportedMemory.model_fields  # the real export is MemoryRecord's


def test_a_catalog_with_other_columns_is_rebuilt_from_chroma(tmp_path):
    """A new field changes the catalog's columns: the old catalog is derived data, rebuilt."""
    store = LongTermMemoryStore(tmp_path / "db", embedding_function=HashEmbedder(), user_id="mei")
    record = full_record(status="current", superseded_by=None, valid_until=None)
    store.restore([record])
    store.catalog.close()
    db = sqlite3.connect(catalog_path(tmp_path / "db", "mei"))
    db.execute("ALTER TABLE memories ADD COLUMN retired_field TEXT")
    db.commit()
    db.close()
    reopened = LongTermMemoryStore(tmp_path / "db", embedding_function=HashEmbedder(), user_id="mei")
    same_instant(reopened.get(record.id), record)
    with contextlib.closing(sqlite3.connect(reopened.catalog.path)) as db:
        columns = {row[1] for row in db.execute("PRAGMA table_info(memories)")}
    assert "retired_field" not in columns and "content" in columns


# -- data written before the schema was derived keeps opening ------------------------

# The catalog table as Memora wrote it (schema version 5) before its columns
# were derived from MemoryRecord: same names, another order.
VERSION_5_TABLE = """
CREATE TABLE memories (
    rid INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, user_id TEXT NOT NULL, content TEXT NOT NULL,
    norm_key TEXT NOT NULL, memory_type TEXT NOT NULL, category TEXT NOT NULL, source TEXT NOT NULL,
    status TEXT NOT NULL, created_ts REAL NOT NULL, last_seen_ts REAL, valid_until_ts REAL,
    superseded_by TEXT, supersedes TEXT, change_reason TEXT, event_date TEXT, followed_up_ts REAL,
    extra TEXT NOT NULL DEFAULT '{}', n_terms INTEGER NOT NULL DEFAULT 0, terms TEXT NOT NULL DEFAULT ''
);
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
INSERT INTO meta VALUES ('schema_version', '5'), ('generation', '7'), ('chroma_revision', 'r1');
"""


def test_a_version_5_catalog_opens_and_reads_as_before(tmp_path):
    path = tmp_path / "catalog-mei.sqlite3"
    record = full_record()
    db = sqlite3.connect(path)
    db.executescript(VERSION_5_TABLE)
    db.execute(
        "INSERT INTO memories (id, user_id, content, norm_key, memory_type, category, source, status, created_ts, "
        "last_seen_ts, valid_until_ts, superseded_by, supersedes, change_reason, event_date, followed_up_ts, extra, "
        "n_terms, terms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            record.id,
            "mei",
            record.content,
            "i moved to taipei in october",
            "episodic",
            "schedule",
            "import",
            "superseded",
            WHEN.timestamp(),
            (WHEN + timedelta(days=1)).timestamp(),
            (WHEN + timedelta(days=2)).timestamp(),
            "e5f6a7b8",
            "c9d0e1f2",
            "moved again",
            "2026-12-03",
            (WHEN + timedelta(days=3)).timestamp(),
            '{"mood": "glad", "pinned": true, "tries": 2}',
            5,
            "moved taipei october",
        ),
    )
    db.commit()
    db.close()
    catalog = MemoryCatalog(path, user_id="mei")
    assert catalog.generation() == 7  # kept, not dropped and rebuilt
    assert catalog.get_meta("chroma_revision") == "r1"
    same_instant(catalog.get(record.id), record)
    catalog.close()


# Chroma metadata exactly as Memora wrote it before the schema was derived.
VERSION_5_CHROMA_METADATA = {
    "mood": "glad",
    "tries": 2,
    "pinned": True,
    "user_id": "mei",
    "created_at": "2026-11-20T09:30:00+08:00",
    "created_at_ts": WHEN.timestamp(),
    "memory_type": "episodic",
    "category": "schedule",
    "source": "import",
    "status": "superseded",
    "last_seen": "2026-11-21T09:30:00+08:00",
    "last_seen_ts": (WHEN + timedelta(days=1)).timestamp(),
    "valid_until": "2026-11-22T09:30:00+08:00",
    "valid_until_ts": (WHEN + timedelta(days=2)).timestamp(),
    "followed_up_at": "2026-11-23T09:30:00+08:00",
    "followed_up_ts": (WHEN + timedelta(days=3)).timestamp(),
    "superseded_by": "e5f6a7b8",
    "supersedes": "c9d0e1f2",
    "change_reason": "moved again",
    "event_date": "2026-12-03",
}


def test_chroma_metadata_written_before_reads_as_before_and_is_written_the_same():
    record = full_record()
    same_instant(from_chroma(record.id, record.content, VERSION_5_CHROMA_METADATA), record)
    assert to_chroma_metadata(record) == VERSION_5_CHROMA_METADATA


@pytest.mark.parametrize("missing", ["memory_type", "category", "source", "status", "user_id", "created_at"])
def test_chroma_metadata_without_a_key_reads_as_before(missing):
    meta = {k: v for k, v in VERSION_5_CHROMA_METADATA.items() if k != missing}
    record = from_chroma("a1b2c3d4", "text", meta)
    expected = {"memory_type": "semantic", "category": "other", "source": "command", "status": "current", "user_id": ""}
    if missing == "created_at":
        assert record.created_at == WHEN  # from the number kept beside it
    else:
        assert getattr(record, missing) == expected[missing]
