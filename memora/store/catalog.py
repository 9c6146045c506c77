"""The memory catalog: a per-learner SQLite mirror of the Chroma records, with FTS5.

Chroma holds the canonical records (text, metadata, vectors). The catalog is a
derived index beside it that answers what a vector store answers badly:

* lexical BM25 search (FTS5 over ``lexical.terms``), for the hybrid retrieval;
* listing and filtering (``memories``), prefix ids, history chains, the digest
  and follow-up candidates, without scanning the collection on every turn;
* a ``generation`` counter bumped by every write, so a process can tell that
  another process changed the store and refresh its Chroma handles.

It can always be rebuilt from Chroma (``chroma_backend.ChromaVectors`` does so
when the two disagree and the collection is the catalog's own), so losing it
loses nothing; and when Chroma's file or collection vanishes, it is the other
way round: the catalog keeps every memory's text and history, and the store's
``reindex`` rebuilds Chroma from it.
"""

from __future__ import annotations

import builtins
import contextlib
import json
import math
import os
import re
import sqlite3
import threading
from array import array
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from datetime import date, datetime
from pathlib import Path
from typing import NamedTuple

from memora.core.errors import CommandError, disk_problem
from memora.core.records import (
    STATUS_CURRENT,
    MemoryRecord,
    catalog_columns,
    fresh_id,
    from_catalog_row,
    offset_columns,
)
from memora.core.storage import FILE_MODE, ensure_private_dir, file_lock, quarantine
from memora.core.text_utils import normalized_key
from memora.store import lexical

SCHEMA_VERSION = 5
# BM25 constants of the lexical side (README, "Retrieval"): b=0.3 rather than the
# usual 0.75 because long memories carry more facts, not padding (LoCoMo: +1.5
# points of recall@10). FTS5's own bm25() fixes b=0.75, so FTS5 only finds the
# candidates and Memora scores them.
BM25_K1 = 1.2
BM25_B = 0.3
# A query term in more than this share of memories (or 20, whichever is more)
# only scores candidates, it does not find them: such terms weigh little and
# have the longest posting lists. At 1% LoCoMo recall@10 is unchanged (0.682)
# and retrieval p95 at 50k memories drops from 24 ms to 13 ms.
COMMON_TERM_SHARE = 0.01
# The selective terms that search FTS5 together hold at most this share of the
# memories (or 100), rarest first; the rest only score (``_finding_terms``).
POSTINGS_SHARE = 0.01

# How long wiping deleted rows waits for other processes before it is left for
# the next start (MemoryCatalog.compact, ChromaConnection.compact).
COMPACT_WAIT_MS = 2000

# The record of a ``forget all`` or ``forget user`` under way (no text), in the
# meta table: committed before anything is deleted, cleared with the catalog in one
# commit. A start that finds it finishes the deletion, so a crash in between can
# never look like a vanished store whose memories should be rebuilt.
FORGETTING = "forgetting"


def catalog_path(db_dir: Path, user_id: str) -> Path:
    return Path(db_dir) / f"catalog-{user_id}.sqlite3"


_SCHEMA_TEMPLATE = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS memories ({memory_columns});
-- Vectors live apart so that scanning memories never reads 1.5 KB per row.
CREATE TABLE IF NOT EXISTS memory_vectors (rid INTEGER PRIMARY KEY, vector BLOB NOT NULL);
-- Counting vectors, or finding a memory without one, reads this, not 100 MB of vector pages.
CREATE INDEX IF NOT EXISTS memory_vectors_rid ON memory_vectors (rid);
-- The current ones newest first: a listing's first page reads 50 rows, not a sort of them all.
DROP INDEX IF EXISTS memories_user_status;
CREATE INDEX IF NOT EXISTS memories_user_newest ON memories (user_id, status, created_ts);
-- A category's count and its newest memories (the page) read this one alone.
CREATE INDEX IF NOT EXISTS memories_user_category ON memories (user_id, status, category, created_ts);
CREATE INDEX IF NOT EXISTS memories_terms ON memories (status, n_terms);
CREATE INDEX IF NOT EXISTS memories_followups ON memories (category, status, followed_up_ts, created_ts);
CREATE INDEX IF NOT EXISTS memories_status ON memories (status, memory_type, category, created_ts);
CREATE INDEX IF NOT EXISTS memories_norm ON memories (norm_key);
CREATE INDEX IF NOT EXISTS memories_created ON memories (created_ts);
CREATE INDEX IF NOT EXISTS memories_event ON memories (event_date) WHERE event_date IS NOT NULL;
CREATE VIRTUAL TABLE IF NOT EXISTS memories_fts USING fts5(terms, tokenize = 'unicode61 remove_diacritics 0');
CREATE VIRTUAL TABLE IF NOT EXISTS memories_vocab USING fts5vocab(memories_fts, row);
-- Conflicting pairs, found when the newer one was written; read while both are current.
CREATE TABLE IF NOT EXISTS conflicts (a TEXT NOT NULL, b TEXT NOT NULL, reason TEXT NOT NULL, PRIMARY KEY (a, b));
CREATE INDEX IF NOT EXISTS conflicts_b ON conflicts (b);
"""
# The record's own columns come from its persistence schema (records.stored_fields);
# the rest are the catalog's: the text's key for exact repeats, the extras as
# JSON and the lexical terms.
_RECORD_COLUMNS = catalog_columns()
_DERIVED_COLUMNS = {
    "norm_key": "TEXT NOT NULL",
    "extra": "TEXT NOT NULL DEFAULT '{}'",
    "n_terms": "INTEGER NOT NULL DEFAULT 0",
    "terms": "TEXT NOT NULL DEFAULT ''",
}
_SCHEMA = _SCHEMA_TEMPLATE.format(
    memory_columns=", ".join(
        ["rid INTEGER PRIMARY KEY"]
        + [f"{name} {declared}" for name, (declared, _) in _RECORD_COLUMNS.items()]
        + [f"{name} {declared}" for name, declared in _DERIVED_COLUMNS.items()]
    )
)
_DROP = """
DROP TABLE IF EXISTS conflicts;
DROP TABLE IF EXISTS memories_vocab;
DROP TABLE IF EXISTS memories_fts;
DROP TABLE IF EXISTS memory_vectors;
DROP TABLE IF EXISTS memories;
DROP TABLE IF EXISTS meta;
"""

_COLUMNS = ", ".join([*_RECORD_COLUMNS, "extra"])
_WRITE_COLUMNS = ", ".join([*_RECORD_COLUMNS, *_DERIVED_COLUMNS])
_EXPECTED_COLUMNS = {"rid", *_RECORD_COLUMNS, *_DERIVED_COLUMNS}
# Added to a version-5 catalog in place, not rebuilt: its rows have no offset
# and read in local time, as they did when it was written.
_OFFSET_COLUMNS = offset_columns()
_WRITE_PLACEHOLDERS = ", ".join("?" * (len(_RECORD_COLUMNS) + len(_DERIVED_COLUMNS)))
# A candidate row carries its whole record, so the results need no second read.
_CANDIDATE_COLUMNS = (
    ", ".join(f"m.{c} AS {c}" for c in _COLUMNS.split(", "))
    + ", m.terms AS terms, m.n_terms AS n_terms, v.vector AS vector"
)


def bm25_weights(query_terms: Sequence[str], frequencies: dict[str, int], total: int) -> dict[str, float]:
    """Each query term's weight in ``bm25``: its idf times how often the query says it.

    The idf is Lucene's, log(1 + (N - n + .5) / (n + .5)), which stays positive
    (three memories still give a lexical signal), divided by its largest
    possible value (n = 0) so the scale does not grow with the store. A term no
    memory holds weighs nothing."""
    ceiling = math.log(1 + (total + 0.5) / 0.5)
    said = Counter(t for t in query_terms if t)
    return {
        term: count * (math.log(1 + (total - frequencies[term] + 0.5) / (frequencies[term] + 0.5)) / ceiling)
        for term, count in said.items()
        if frequencies.get(term)
    }


def bm25(
    document_terms: Sequence[str],
    weights: dict[str, float],
    average_length: float,
    *,
    k1: float = BM25_K1,
    b: float = BM25_B,
) -> float:
    """The BM25 score of one memory (its lexical terms) for query ``weights``
    (from ``bm25_weights``); ``average_length`` is the store's mean term count."""
    if not weights:
        return 0.0
    counts = Counter(document_terms)
    norm = k1 * (1 - b + b * len(document_terms) / (average_length or 1.0))
    return sum(
        (weight * counts[term] * (k1 + 1) / (counts[term] + norm) for term, weight in weights.items() if counts[term]),
        0.0,
    )


def _dated(row: sqlite3.Row, windows: Sequence[tuple[float, float, str, str]]) -> bool:
    """Whether a candidate was created, or is dated, inside one of the periods."""
    return any(
        start <= row["created_ts"] < end or (row["event_date"] is not None and first <= row["event_date"] <= last)
        for start, end, first, last in windows
    )


def _blob(vector: Sequence[float] | None) -> bytes | None:
    return array("f", vector).tobytes() if vector is not None else None


def _row_values(record: MemoryRecord) -> tuple:
    """The values of ``_WRITE_COLUMNS`` for ``record``; the lexical terms come last."""
    words = lexical.terms(record.content)
    return (
        *(value_of(record) for _, value_of in _RECORD_COLUMNS.values()),
        normalized_key(record.content),
        json.dumps(record.metadata, ensure_ascii=False, sort_keys=True),
        len(words),
        " ".join(words),
    )


def _record(row: sqlite3.Row) -> MemoryRecord:
    return from_catalog_row(row, extras=json.loads(row["extra"] or "{}"))


class Outline(NamedTuple):
    """A memory as a listing of every one needs it, read without making its record:
    a record takes tens of microseconds, so 50,000 of them take seconds."""

    id: str
    status: str
    supersedes: str | None
    superseded_by: str | None
    created_ts: float
    category: str
    memory_type: str
    source: str
    content: str

    @property
    def is_current(self) -> bool:
        return self.status == STATUS_CURRENT


class LexicalSearch(NamedTuple):
    """What ``MemoryCatalog.search`` found; ``score`` completes it with the dense side's ids."""

    catalog: MemoryCatalog
    query_terms: list[str]
    unique: list[str]
    total: int
    average: float
    frequencies: dict[str, int]
    windows: tuple
    rows: list[sqlite3.Row]

    def score(self, dense_ids: Iterable[str] = ()) -> tuple[dict[str, tuple[float, float, bool]], dict[str, bytes]]:
        """The current memories to rank, found and among ``dense_ids``: ``{id: (created
        timestamp, BM25 score, dated)}`` over every query term (so a memory's score never
        depends on which side found it), and their stored vectors (for the feedback step)."""
        rows = list(self.rows)
        seen = {row["id"] for row in rows}
        rows += self.catalog._current_rows([i for i in dict.fromkeys(dense_ids) if i not in seen])
        vectors = {row["id"]: row["vector"] for row in rows if row["vector"] is not None}
        weights = bm25_weights(self.query_terms, self.frequencies, self.total)
        scored = {
            row["id"]: (row["created_ts"], bm25(row["terms"].split(), weights, self.average), _dated(row, self.windows))
            for row in rows
        }
        return scored, vectors


class MemoryCatalog:
    """SQLite catalog of one learner's memories (thread-safe within a process)."""

    unwiped: str | None = None  # why the last ``compact`` could not finish, when the disk is why

    def __init__(self, path: Path | str, user_id: str):
        self.path = Path(path)
        self.user_id = user_id
        ensure_private_dir(self.path.parent)
        self._lock = threading.RLock()
        # Opened under the catalog's lock: two processes creating or migrating it at
        # once get SQLITE_BUSY, which must never be mistaken for corruption.
        with file_lock(self.path):
            try:
                self._open()
            except sqlite3.DatabaseError as error:
                if (getattr(error, "sqlite_errorcode", 0) & 0xFF) not in (
                    sqlite3.SQLITE_NOTADB,
                    sqlite3.SQLITE_CORRUPT,
                ):
                    raise
                # Derived data: a corrupt catalog is moved aside and rebuilt from Chroma.
                self._db.close()
                for suffix in ("", "-wal", "-shm"):
                    candidate = Path(str(self.path) + suffix)
                    if candidate.exists():
                        quarantine(candidate)
                self._open()

    def _open(self) -> None:
        if not self.path.exists():
            os.close(os.open(self.path, os.O_RDWR | os.O_CREAT, FILE_MODE))  # owner-only, like every data file
        self._db = sqlite3.connect(str(self.path), timeout=30, check_same_thread=False, isolation_level=None)
        self._db.row_factory = sqlite3.Row
        with self._lock:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute("PRAGMA busy_timeout=30000")
            # Deleted rows are overwritten with zeros, not left in free space:
            # 'forget' must leave no copy of the text in the file (see compact()).
            self._db.execute("PRAGMA secure_delete=ON")
            # The version is read before the schema is applied: an older layout may
            # lack columns the indexes below name, and creating them would fail.
            self._db.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
            version = self.get_meta("schema_version")
            columns = {row[1] for row in self._db.execute("PRAGMA table_info(memories)")}
            missing = _EXPECTED_COLUMNS - columns
            if columns and version == str(SCHEMA_VERSION) and missing and missing <= _OFFSET_COLUMNS:
                for name in sorted(missing):  # from before datetimes kept their UTC offset
                    self._db.execute(f"ALTER TABLE memories ADD COLUMN {name} INTEGER")
                columns |= missing
            # An older layout (another version, or none recorded beside an existing
            # table), or a new record field (other columns, same version number).
            if (version is not None and version != str(SCHEMA_VERSION)) or (
                columns and (version is None or columns != _EXPECTED_COLUMNS)
            ):
                # A derived index: drop it; the store rebuilds it from Chroma.
                self._db.executescript(_DROP)
                version = None
            self._db.executescript(_SCHEMA)
            if version is None:
                self._db.execute("INSERT OR IGNORE INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
                self._db.execute("INSERT OR IGNORE INTO meta VALUES ('generation', '0')")
        self._stats: tuple[int, int, float] | None = None  # (generation, N, avgdl)
        self._df_cache: tuple[int, dict[str, int]] = (-1, {})

    def close(self) -> None:
        with self._lock:
            self._db.close()

    # -- transactions and the generation counter ----------------------------------
    @contextlib.contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """``BEGIN IMMEDIATE`` ... ``COMMIT``; bumps the generation once."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
                self._db.execute(
                    "UPDATE meta SET value = CAST(CAST(value AS INTEGER) + 1 AS TEXT) WHERE key = 'generation'"
                )
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise

    def generation(self) -> int:
        return int(self.get_meta("generation") or 0)

    def get_meta(self, key: str) -> str | None:
        with self._lock:
            row = self._db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def set_meta(self, key: str, value: str | None) -> None:
        with self.transaction() as db:
            if value is None:
                db.execute("DELETE FROM meta WHERE key = ?", (key,))
            else:
                db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))

    # -- writes (call inside ``transaction()``) -------------------------------------
    def insert(
        self,
        db: sqlite3.Connection,
        records: Iterable[MemoryRecord],
        vectors: Iterable[Sequence[float] | None] | None = None,
    ) -> None:
        """Insert (or replace) records, with their embedding vectors when known."""
        records = list(records)
        vectors = list(vectors) if vectors is not None else [None] * len(records)
        for record, vector in zip(records, vectors):
            values = _row_values(record)
            old = db.execute("SELECT rid FROM memories WHERE id = ?", (record.id,)).fetchone()
            if old is not None:
                db.execute("DELETE FROM memories_fts WHERE rowid = ?", (old["rid"],))
                db.execute("DELETE FROM memory_vectors WHERE rid = ?", (old["rid"],))
            cursor = db.execute(
                f"INSERT OR REPLACE INTO memories ({_WRITE_COLUMNS}) VALUES ({_WRITE_PLACEHOLDERS})", values
            )
            rid = cursor.lastrowid
            if vector is not None:
                db.execute("INSERT OR REPLACE INTO memory_vectors (rid, vector) VALUES (?, ?)", (rid, _blob(vector)))
            db.execute("DELETE FROM memories_fts WHERE rowid = ?", (rid,))
            if record.status == STATUS_CURRENT:
                db.execute("INSERT INTO memories_fts (rowid, terms) VALUES (?, ?)", (rid, values[-1]))

    def update(self, db: sqlite3.Connection, record: MemoryRecord) -> None:
        row = db.execute("SELECT rid FROM memories WHERE id = ?", (record.id,)).fetchone()
        if row is None:
            self.insert(db, [record])
            return
        values = _row_values(record)
        db.execute(
            f"UPDATE memories SET ({_WRITE_COLUMNS}) = ({_WRITE_PLACEHOLDERS}) WHERE rid = ?",
            (*values, row["rid"]),
        )
        db.execute("DELETE FROM memories_fts WHERE rowid = ?", (row["rid"],))
        if record.status == STATUS_CURRENT:
            db.execute("INSERT INTO memories_fts (rowid, terms) VALUES (?, ?)", (row["rid"], values[-1]))

    def delete(self, db: sqlite3.Connection, ids: Iterable[str]) -> None:
        for memory_id in ids:
            row = db.execute("SELECT rid FROM memories WHERE id = ?", (memory_id,)).fetchone()
            if row is not None:
                db.execute("DELETE FROM memories_fts WHERE rowid = ?", (row["rid"],))
                db.execute("DELETE FROM memory_vectors WHERE rid = ?", (row["rid"],))
                db.execute("DELETE FROM memories WHERE rid = ?", (row["rid"],))
            db.execute("DELETE FROM conflicts WHERE a = ?1 OR b = ?1", (memory_id,))

    def add_conflicts(self, db: sqlite3.Connection, pairs: Iterable[tuple[str, str, str]]) -> None:
        db.executemany("INSERT OR REPLACE INTO conflicts VALUES (?, ?, ?)", pairs)

    def conflicts(self) -> builtins.list[tuple[str, str, str]]:
        """The stored pairs (older id, newer id, reason) whose two sides are both current."""
        rows = self._query(
            # CROSS JOIN keeps this order: from the few pairs, not from every current memory.
            "SELECT c.a, c.b, c.reason FROM conflicts AS c CROSS JOIN memories AS x ON x.id = c.a "
            "CROSS JOIN memories AS y ON y.id = c.b WHERE x.status = ?1 AND y.status = ?1 AND x.user_id = ?2",
            (STATUS_CURRENT, self.user_id),
        )
        return [(row[0], row[1], row[2]) for row in rows]

    def clear(self, db: sqlite3.Connection) -> None:
        db.execute("DELETE FROM conflicts")
        db.execute("DELETE FROM memories_fts")
        db.execute("DELETE FROM memory_vectors")
        db.execute("DELETE FROM memories")

    def compact(self, *, full: bool = False) -> bool:
        """Leave no byte of deleted memories in the catalog's files; True when done.

        ``secure_delete`` zeroes the deleted rows, but two copies outlive them:
        FTS5 keeps a deleted row's terms in its index segments until they are
        merged ('optimize' merges them all), and the WAL keeps the pages as they
        were until a checkpoint copies them back and truncates it (which waits
        for, and can be blocked by, another process reading the catalog).
        ``full`` also rebuilds the file (VACUUM), for a catalog whose free space
        may predate ``secure_delete``. Measured at 5,000 memories: optimize and
        checkpoint about 7 ms, VACUUM about 70 ms.
        """
        with self._lock:
            try:
                self._db.execute("INSERT INTO memories_fts (memories_fts) VALUES ('optimize')")
                if full:
                    self._db.execute("VACUUM")
                # A reader elsewhere would make the checkpoint wait the full 30 s
                # busy timeout; a forget should not hang, so it tries briefly and
                # leaves the rest to the next start (the caller's erase marker).
                self._db.execute(f"PRAGMA busy_timeout={COMPACT_WAIT_MS}")
                busy = self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
            except sqlite3.OperationalError as error:  # locked by another process, a full disk: left for later
                self.unwiped = disk_problem(error)
                return False
            finally:
                self._db.execute("PRAGMA busy_timeout=30000")
        return busy == 0

    # -- reads ------------------------------------------------------------------
    def _query(self, sql: str, params: tuple = ()) -> builtins.list[sqlite3.Row]:
        with self._lock:
            return self._db.execute(sql, params).fetchall()

    def get(self, memory_id: str) -> MemoryRecord | None:
        rows = self._query(f"SELECT {_COLUMNS} FROM memories WHERE id = ? AND +user_id = ?", (memory_id, self.user_id))
        return _record(rows[0]) if rows else None

    def require(self, memory_id: str) -> MemoryRecord:
        """A memory by id or unique id prefix (at least 4 characters); else a one-line error."""
        key = (memory_id or "").strip().lower()
        record = self.get(key)
        if record is not None:
            return record
        if len(key) >= 4 and re.fullmatch(r"[0-9a-z_-]+", key):
            matches = self.ids_with_prefix(key)
            if len(matches) == 1 and (found := self.get(matches[0])) is not None:
                return found
            if len(matches) > 1:
                raise CommandError(f"Memory id '{key}' is ambiguous ({', '.join(matches)}); type more of it.")
        raise CommandError(f"No memory with id '{memory_id[:40]}'. List them with 'memories'.")

    def new_id(self) -> str:
        """An id no memory here has."""
        while True:
            candidate = fresh_id()
            if self.get(candidate) is None:
                return candidate

    def _rows_by_id(self, select: str, ids: Iterable[str]) -> builtins.list[sqlite3.Row]:
        """``select`` (reading ``memories AS m``) for these ids, in chunks SQLite accepts."""
        ids = list(dict.fromkeys(ids))
        rows: builtins.list[sqlite3.Row] = []
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            rows += self._query(
                f"{select} WHERE +m.user_id = ? AND m.id IN ({', '.join('?' * len(chunk))})", (self.user_id, *chunk)
            )
        return rows

    def get_many(self, ids: Iterable[str]) -> dict[str, MemoryRecord]:
        rows = self._rows_by_id(f"SELECT {_COLUMNS} FROM memories AS m", ids)
        return {row["id"]: _record(row) for row in rows}

    def ids_with_prefix(self, prefix: str, limit: int = 5) -> builtins.list[str]:
        escaped = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        rows = self._query(
            "SELECT id FROM memories WHERE +user_id = ? AND id LIKE ? ESCAPE '\\' LIMIT ?",
            (self.user_id, escaped + "%", limit),
        )
        return [row["id"] for row in rows]

    def without_vectors(self) -> builtins.list[MemoryRecord]:
        """Every version stored before its vector could be computed (the local
        embedding model was not on the machine), oldest first."""
        rows = self._query(
            f"SELECT {', '.join(f'm.{c} AS {c}' for c in _COLUMNS.split(', '))} FROM memories AS m "
            "LEFT JOIN memory_vectors AS v ON v.rid = m.rid WHERE m.user_id = ? AND v.rid IS NULL ORDER BY m.rid",
            (self.user_id,),
        )
        return [_record(row) for row in rows]

    def count(
        self,
        *,
        current_only: bool = True,
        with_vectors: bool = False,
        without_vectors: bool = False,
        category: str | None = None,
    ) -> int:
        """``with_vectors``: the versions with a vector, ``without_vectors``: those waiting
        for one (every vector row is a memory's: one catalog file per learner);
        ``category``: the current ones of that category."""
        if with_vectors:
            rows = self._query("SELECT COUNT(*) FROM memory_vectors")
        elif current_only and not without_vectors:
            rows = self._query(
                "SELECT COUNT(*) FROM memories WHERE user_id = ? AND status = ?" + " AND category = ?" * bool(category),
                (self.user_id, STATUS_CURRENT, *([category] if category else [])),
            )
        else:
            less = " - (SELECT COUNT(*) FROM memory_vectors)" if without_vectors else ""
            rows = self._query(f"SELECT (SELECT COUNT(*) FROM memories WHERE user_id = ?){less}", (self.user_id,))
        return int(rows[0][0])

    def list(
        self,
        *,
        include_superseded: bool = False,
        memory_type: str | None = None,
        category: str | None = None,
        source: str | None = None,
        text: str | None = None,
        limit: int | None = None,
        offset: int = 0,
        newest_first: bool = True,
        dated_from: date | None = None,
    ) -> builtins.list[MemoryRecord]:
        # Every version listed: read in the order of the creation index (a page stops early), not sorted whole.
        where: builtins.list[str] = ["+user_id = ?" if include_superseded else "user_id = ?"]
        params: builtins.list = [self.user_id]
        if dated_from is not None:  # few are dated ahead: read through the dates' own index
            where.append("event_date >= ?")
            params.append(dated_from.isoformat())
        if not include_superseded:
            where.append("status = ?")
            params.append(STATUS_CURRENT)
        for column, value in (("memory_type", memory_type), ("category", category), ("source", source)):
            if value:
                where.append(f"{column} = ?")
                params.append(value)
        if text:
            where.append("instr(lower(content), lower(?)) > 0")
            params.append(text)
        sql = (
            f"SELECT {_COLUMNS} FROM memories{' INDEXED BY memories_event' * bool(dated_from)} "
            f"WHERE {' AND '.join(where)} ORDER BY created_ts {'DESC' if newest_first else 'ASC'}, rid"
        )
        if limit is not None:
            sql += " LIMIT ? OFFSET ?"
            params += [int(limit), int(offset)]
        return [_record(row) for row in self._query(sql, tuple(params))]

    def outline(self, chunk: int = 2000) -> builtins.list[Outline]:
        """Every version, newest first, read ``chunk`` rows a query in the order of the creation
        index: one read of 50,000 rows would hold the catalog for a second, and every other
        read (the page's next screen) would wait behind it."""
        found: builtins.list[Outline] = []
        sql = (
            f"SELECT rid, {', '.join(Outline._fields)} FROM memories WHERE +user_id = ? "
            "AND (created_ts < ? OR created_ts = ? AND rid > ?) ORDER BY created_ts DESC, rid LIMIT ?"
        )
        after: tuple[float, int] = (math.inf, 0)
        while rows := self._query(sql, (self.user_id, after[0], after[0], after[1], chunk)):
            found += (Outline._make(row[1:]) for row in rows)
            after = (rows[-1]["created_ts"], rows[-1]["rid"])
        return found

    def find_exact(self, content: str, *, status: str = STATUS_CURRENT) -> MemoryRecord | None:
        """A memory of ``status`` saying ``content`` (compared as ``normalized_key``); the
        latest to end, for superseded ones."""
        rows = self._query(
            # Through the text's own index (a few rows), never the category index (every current row).
            f"SELECT {_COLUMNS} FROM memories WHERE +user_id = ? AND +status = ? AND norm_key = ? "
            "ORDER BY valid_until_ts DESC LIMIT 1",
            (self.user_id, status, normalized_key(content)),
        )
        return _record(rows[0]) if rows else None

    def _corpus_stats(self) -> tuple[int, float]:
        """(number of current memories, their mean term count), cached per generation."""
        generation = self.generation()
        if self._stats is None or self._stats[0] != generation:
            row = self._query("SELECT COUNT(*), AVG(n_terms) FROM memories WHERE status = ?", (STATUS_CURRENT,))[0]
            self._stats = (generation, int(row[0]), float(row[1] or 0.0))
        return self._stats[1], self._stats[2]

    def search(
        self,
        query_terms: builtins.list[str],
        limit: int,
        *,
        windows: Sequence[tuple[float, float, str, str]] = (),
        window_limit: int = 50,
    ) -> LexicalSearch:
        """The lexical side of a search: FTS5 finds up to ``limit`` current memories
        by its own bm25() using the query's selective terms (``score`` then scores
        them, and the dense side's, over every term). Superseded memories never appear.

        ``windows`` are the periods the query names, as (start timestamp, end
        timestamp, first ISO day, last ISO day): ``dated`` says a candidate was
        created, or is dated (``event_date``), inside one. Memories of those
        periods join the candidates when at most ``window_limit`` of them exist.
        The search can run while the vector index answers the dense query.
        """
        unique = list(dict.fromkeys(t for t in query_terms if t))
        total, average = self._corpus_stats()
        frequencies = self._document_frequencies(unique)
        # A term found in a large share of memories adds little score but costs the
        # most to match: only selective terms find candidates; all terms score.
        selective = self._finding_terms(unique, frequencies, total)
        rows = []
        if selective:
            # FTS5 ranks inside the subquery and only its top ``limit`` rows are
            # joined: joined first, SQLite read every match's row and vector before
            # sorting (p95 of this query at 50k memories: 2.6 ms joined, 0.8 ms so).
            rows = self._query(
                f"SELECT {_CANDIDATE_COLUMNS} "
                "FROM (SELECT rowid AS rid, rank FROM memories_fts WHERE memories_fts MATCH ? "
                "ORDER BY rank LIMIT ?) AS f "
                "JOIN memories AS m ON m.rid = f.rid LEFT JOIN memory_vectors AS v ON v.rid = m.rid "
                "WHERE +m.user_id = ? ORDER BY f.rank",
                (lexical.fts_query(selective), limit, self.user_id),
            )
        if windows:
            found = {row["id"] for row in rows}
            rows += [row for row in self._in_windows(windows, window_limit) if row["id"] not in found]
        return LexicalSearch(self, list(query_terms), unique, total, average, frequencies, tuple(windows), rows)

    def _current_rows(self, ids: builtins.list[str]) -> builtins.list[sqlite3.Row]:
        """Candidate rows of these ids (the dense side's), current memories only."""
        rows: builtins.list[sqlite3.Row] = []
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            rows += self._query(
                f"SELECT {_CANDIDATE_COLUMNS} "
                "FROM memories AS m "
                "LEFT JOIN memory_vectors AS v ON v.rid = m.rid "
                f"WHERE +m.user_id = ? AND +m.status = ? AND m.id IN ({', '.join('?' * len(chunk))})",
                (self.user_id, STATUS_CURRENT, *chunk),
            )
        return rows

    @staticmethod
    def _finding_terms(terms: builtins.list[str], frequencies: dict[str, int], total: int) -> builtins.list[str]:
        """The terms that search FTS5: the selective ones, rarest first, while their
        posting lists together stay within ``POSTINGS_SHARE`` of the memories.

        FTS5 must rank every memory that holds any of them, so the longest lists
        set the tail latency; the rarest term is always kept, and a term left out
        still scores every candidate the others and the dense side find."""
        ceiling = max(COMMON_TERM_SHARE * total, 20)
        budget = max(POSTINGS_SHARE * total, 100)
        chosen: builtins.list[str] = []
        postings = 0
        for term in sorted((t for t in terms if 0 < frequencies.get(t, 0) <= ceiling), key=lambda t: frequencies[t]):
            if chosen and postings + frequencies[term] > budget:
                break
            chosen.append(term)
            postings += frequencies[term]
        return chosen

    def _in_windows(self, windows: Sequence[tuple[float, float, str, str]], limit: int) -> builtins.list[sqlite3.Row]:
        """The current memories created or dated in the periods, or none when more
        than ``limit`` are: a period that broad says little about which to show.

        One indexed range read per period and column (``memories_created``,
        ``memories_event``), each stopped after ``limit + 1`` rows: with an OR
        of both, SQLite scanned every memory (40 ms at 50k)."""
        select = f"SELECT {_CANDIDATE_COLUMNS} FROM memories AS m LEFT JOIN memory_vectors AS v ON v.rid = m.rid "
        found: dict[str, sqlite3.Row] = {}
        for start, end, first, last in windows:
            for where, bounds in (
                ("m.created_ts >= ? AND m.created_ts < ?", (start, end)),
                ("m.event_date BETWEEN ? AND ?", (first, last)),
            ):
                rows = self._query(
                    select + f"WHERE {where} AND +m.status = ? AND +m.user_id = ? LIMIT ?",
                    (*bounds, STATUS_CURRENT, self.user_id, limit + 1),
                )
                found.update((row["id"], row) for row in rows)
                if len(found) > limit:
                    return []
        return list(found.values())

    def _document_frequencies(self, terms: builtins.list[str]) -> dict[str, int]:
        """How many current memories hold each term (cached until the next write)."""
        generation = self.generation()
        if self._df_cache[0] != generation:
            self._df_cache = (generation, {})
        cache = self._df_cache[1]
        missing = [t for t in terms if t not in cache]
        if missing:
            found: dict[str, int] = {
                row[0]: row[1]
                for row in self._query(
                    f"SELECT term, doc FROM memories_vocab WHERE term IN ({', '.join('?' * len(missing))})",
                    tuple(missing),
                )
            }
            if len(cache) > 50_000:
                cache.clear()
            cache.update({t: found.get(t, 0) for t in missing})
        return {t: cache[t] for t in terms}

    def lexical_search(self, query_terms: builtins.list[str], limit: int) -> builtins.list[tuple[str, float]]:
        """The lexical side alone: ``[(id, BM25)]``, best first (see ``search``)."""
        found, _ = self.search(query_terms, limit).score()
        return sorted(((i, s) for i, (_, s, _) in found.items() if s > 0), key=lambda item: -item[1])

    def follow_up_candidates(self, now: datetime, proactive_days: int, limit: int = 20) -> builtins.list[MemoryRecord]:
        """Current schedule memories that may be followed up now, oldest first.

        A cheap pre-filter in SQL of the rule ``proactive.pick_follow_up``
        applies: at least a day old, and either dated before today or, undated,
        at least ``proactive_days`` old.
        """
        now_ts = now.timestamp()
        rows = self._query(
            f"SELECT {_COLUMNS} FROM memories WHERE category = 'schedule' AND status = ? AND +user_id = ? "
            "AND followed_up_ts IS NULL AND created_ts <= ? "
            "AND ((event_date IS NOT NULL AND event_date < ?) OR (event_date IS NULL AND created_ts <= ?)) "
            "ORDER BY created_ts LIMIT ?",
            (
                STATUS_CURRENT,
                self.user_id,
                now_ts - 86400,
                now.astimezone().date().isoformat(),
                now_ts - proactive_days * 86400,
                limit,
            ),
        )
        return [_record(row) for row in rows]
