"""What was deleted, so a reading that started before a deletion cannot undo it.

A message is read for memories after its reply, sometimes several turns later
(short messages wait to be read together), in a background thread, and maybe
by another Memora process on the same data. A ``forget`` is decided at once,
with no wait for those readings, so each reading must be checked when it lands.
Every deletion is a row here, numbered by a ``generation`` that only grows,
and every message carries the generation it was said at: a write from a
reading of messages said at generation ``g`` is refused when a deletion after
``g`` covers it:

* ``all``: ``forget all`` covers every memory and mistake;
* ``user``: ``forget user`` covers everything of that learner, in every process;
* ``memory``: a memory id (its later versions included), for a decision naming it;
* ``text``: a new fact saying what a forgotten memory said;
* ``mistake`` / ``mistake-text``: a mistake's id, and a new one making its correction;
* ``reading``: a message's id (``undo`` of a message not read yet: nothing it says is kept);
* ``lost``: the log was started anew (missing or damaged, the old file kept aside): its
  generations start above any the old one could have had, and this row covers every
  message said before it, of every learner, since what the old log held is unknown.

A row holds no text: ``text`` keys are keyed hashes (HMAC-SHA256 with a random
key kept in the same file, of the text as the store compares it and of its
meaning-bearing words in order-free form), and the learner is a keyed hash of
their name. A message said after the deletion is unaffected: saying "I keep
bees" again after forgetting it is remembered again.

The log is one SQLite file in the store's folder, shared by every learner and
process of the data folder (``forget user`` removes the learner's catalog, so
its rows cannot live there). Rows older than ``KEEP_DAYS`` are dropped: no
reading waits that long.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import os
import secrets
import sqlite3
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from memora.core.records import MemoryRecord
from memora.core.storage import FILE_MODE, ensure_private_dir, quarantine
from memora.core.text_utils import normalized_key
from memora.store import lexical

KEEP_DAYS = 90
FILE_NAME = "deletions.sqlite3"
KINDS = ("all", "user", "memory", "text", "mistake", "mistake-text", "reading", "lost")
_SUBJECT = {"learner", "learners"}  # every extracted fact names the learner: not a meaning-bearing word

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS deletions (
    generation INTEGER PRIMARY KEY AUTOINCREMENT,
    learner TEXT NOT NULL,
    kind TEXT NOT NULL,
    key TEXT NOT NULL,
    at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS deletions_by_key ON deletions (learner, kind, key);
"""


class DeletedMeanwhile(Exception):
    """A reading's write that a later deletion covers: dropped, not an error."""


@dataclass(frozen=True)
class Fence:
    """The generation a reading's message was said at (deletions after it apply), and
    the message's id (``reading`` rows)."""

    learner: str
    generation: int
    message: str = ""


class DeletionLog:
    """The deletion rows of one data folder (see the module docstring)."""

    def __init__(self, folder: Path, notify=None, clock=None):
        self.path = Path(folder) / FILE_NAME
        self.notify = notify or (lambda line: None)
        self.now = (lambda: clock().timestamp()) if clock else time.time  # when: the session's clock
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        self._key: bytes | None = None
        self._local = threading.local()

    def _open(self) -> sqlite3.Connection:
        if self._db is None:
            ensure_private_dir(self.path.parent)
            try:
                self._db = self._connect()
            except sqlite3.DatabaseError as error:  # not a database, malformed: never a reason not to start
                kept = quarantine(self.path)
                self._db = self._connect()
                self.notify(
                    f"The deletion log was damaged ({error}); it is kept as {kept.name} and a new one started. "
                    "Messages said before now are not read for memories, so nothing forgotten can come back."
                )
        return self._db

    def _connect(self) -> sqlite3.Connection:
        fresh = not self.path.exists()
        if fresh:
            os.close(os.open(self.path, os.O_RDWR | os.O_CREAT, FILE_MODE))
        db = sqlite3.connect(str(self.path), timeout=30, isolation_level=None, check_same_thread=False)
        try:
            db.executescript(_SCHEMA)
            db.execute(
                "INSERT OR IGNORE INTO meta VALUES ('key', ?)", (secrets.token_hex(32),)
            )  # first writer wins; every process reads the same key
            self._key = bytes.fromhex(db.execute("SELECT value FROM meta WHERE key = 'key'").fetchone()[0])
            db.execute("SELECT generation, learner, kind, key, at FROM deletions LIMIT 1")  # its own shape
            if fresh:  # a lost log's generations are unknown: start above any, covering what was said before
                db.execute(
                    "INSERT OR IGNORE INTO deletions VALUES (?, '', 'lost', '', ?)",
                    (int(time.time() * 1000), time.time()),
                )
        except BaseException:
            db.close()
            raise
        return db

    # -- the reading in progress ------------------------------------------------------------
    @contextlib.contextmanager
    def fenced(self, fence: Fence | None):
        """While open, this thread's writes are a reading's: ``guard`` checks them."""
        previous = getattr(self._local, "fence", None)
        self._local.fence = fence
        try:
            yield
        finally:
            self._local.fence = previous

    def guard(self, kind: str = "memory", keys: Iterable[str] = ()) -> None:
        """Raise ``DeletedMeanwhile`` when this thread is writing for a reading that a
        later deletion covers. Call it inside the lock the deletion is recorded under,
        so the two cannot interleave."""
        fence = getattr(self._local, "fence", None)
        if fence is not None and self.covers(fence, kind, keys):
            raise DeletedMeanwhile(f"deleted after the message was said ({kind})")

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None

    # -- keys ------------------------------------------------------------------------------
    def _mac(self, text: str) -> str:
        self._open()
        assert self._key is not None
        return hmac.new(self._key, text.encode("utf-8"), hashlib.sha256).hexdigest()[:32]

    def key(self, scope: str, *parts: str) -> str:
        """A keyed hash of ``parts`` (each compared as the store compares texts)."""
        return self._mac(scope + ":" + "\x1f".join(normalized_key(p) for p in parts))

    def learner_key(self, learner: str) -> str:
        return self._mac(f"learner:{learner}")

    def text_keys(self, text: str) -> list[str]:
        """The keys a text is known by: as the store compares texts (case, spacing and
        final punctuation aside), and by its meaning-bearing words in any order, so a
        reading that words the forgotten fact a little differently is caught too."""
        exact = normalized_key(text)
        words = sorted(set(lexical.query_terms(text)) - _SUBJECT)
        keys = [self._mac(f"text:{exact}")]
        if words:
            keys.append(self._mac("words:" + " ".join(words)))
        return keys

    # -- writing ---------------------------------------------------------------------------
    def record(self, learner: str, kind: str, keys: Iterable[str] = ("",)) -> int:
        """Record a deletion; its generation. ``keys``: ids, or keys from ``text_keys``."""
        if kind not in KINDS:
            raise ValueError(f"unknown deletion kind {kind!r}")
        now = self.now()
        with self._lock:
            db = self._open()
            who = self.learner_key(learner)
            generation = 0
            with contextlib.closing(db.cursor()) as cursor:
                cursor.execute("BEGIN IMMEDIATE")
                try:
                    for key in dict.fromkeys(keys):
                        cursor.execute(
                            "INSERT INTO deletions (learner, kind, key, at) VALUES (?, ?, ?, ?)", (who, kind, key, now)
                        )
                        generation = cursor.lastrowid or generation
                    cursor.execute("DELETE FROM deletions WHERE at < ?", (now - KEEP_DAYS * 86400,))
                    cursor.execute("COMMIT")
                except BaseException:
                    cursor.execute("ROLLBACK")
                    raise
        return generation or self.generation()

    def forget(self, learner: str, records: Iterable[MemoryRecord]) -> None:
        """Deleted memories, by id and by keyed hashes of their text (call under the
        store's write lock): a reading started before cannot name them or say them again."""
        records = list(records)
        if records:
            self.record(learner, "memory", [r.id for r in records])
            self.record(learner, "text", [k for r in records for k in self.text_keys(r.content)])

    # -- reading ---------------------------------------------------------------------------
    def generation(self) -> int:
        """The newest generation: what a message said now is stamped with."""
        with self._lock:
            row = self._open().execute("SELECT MAX(generation) FROM deletions").fetchone()
        return int(row[0] or 0)

    def covers(self, fence: Fence, kind: str = "memory", keys: Iterable[str] = ()) -> bool:
        """Whether a deletion after ``fence`` covers a write of ``kind`` with one of ``keys``:
        ``all`` and ``user`` cover everything; other kinds their own keys."""
        keys = list(keys)
        with self._lock:
            db = self._open()
            who = self.learner_key(fence.learner)
            sql = "SELECT 1 FROM deletions WHERE generation > ? AND (kind = 'lost' OR learner = ? AND ("
            sql += "kind IN ('all', 'user')"
            params: list = [fence.generation, who]
            if fence.message:
                sql += " OR (kind = 'reading' AND key = ?)"
                params.append(fence.message)
            if keys:
                sql += f" OR (kind = ? AND key IN ({','.join('?' * len(keys))}))"
                params += [kind, *keys]
            return db.execute(sql + ")) LIMIT 1", params).fetchone() is not None

    def named(self, learner: str, kind: str, keys: Iterable[str]) -> dict[str, float]:
        """Which of ``keys`` a deletion of ``kind`` names, and when (an import leaves out
        what was forgotten after it was made)."""
        keys, found = list(dict.fromkeys(keys)), dict[str, float]()
        with self._lock:
            db, who = self._open(), self.learner_key(learner)
            for start in range(0, len(keys), 500):
                chunk = keys[start : start + 500]
                marks = ",".join("?" * len(chunk))
                sql = f"SELECT key, MAX(at) FROM deletions WHERE learner = ? AND kind = ? AND key IN ({marks})"
                sql += " GROUP BY key"
                found.update(db.execute(sql, (who, kind, *chunk)).fetchall())
        return found

    def forgot_all_at(self, learner: str) -> float | None:
        """When ``learner``'s last ``forget all`` or ``forget user`` was (a Unix time), if any."""
        with self._lock:
            row = self._open().execute(
                "SELECT MAX(at) FROM deletions WHERE learner = ? AND kind IN ('all', 'user')",
                (self.learner_key(learner),),
            )
            return row.fetchone()[0]

    def newest(self, learner: str, kinds: tuple[str, ...] = ("all", "user")) -> int:
        """The generation of the newest deletion of ``kinds`` for ``learner`` (0: none)."""
        with self._lock:
            db = self._open()
            row = db.execute(
                f"SELECT MAX(generation) FROM deletions WHERE learner = ? AND kind IN ({','.join('?' * len(kinds))})",
                (self.learner_key(learner), *kinds),
            ).fetchone()
        return int(row[0] or 0)
