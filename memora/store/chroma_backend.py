"""Opening Chroma: an embedded ``PersistentClient`` on disk, or a Chroma server.

``ChromaConnection`` hands out collections and can ``refresh()`` itself. An
embedded client keeps its vector index in memory, so a second Memora process
writing to the same folder is invisible to the first until it reopens; the
long-term store calls ``refresh()`` when the catalog's generation shows such a
write (see ``catalog.py``).

Opening never repairs or creates anything inside an existing store that looks
wrong: a path that is a file, a folder we may not write, or a
``chroma.sqlite3`` that is not SQLite is reported as a ``StoreError`` naming
the path and the reason. Only the long-term store, whose catalog still holds
every memory's text, may move a damaged ``chroma.sqlite3`` aside
(``set_aside``) to rebuild the vectors from that text.

``file_identity`` lets the long-term store notice a ``chroma.sqlite3`` deleted
or replaced while Memora runs, instead of SQLite's "attempt to write a readonly
database" surfacing on the next write.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import sqlite3
import struct
import threading
from pathlib import Path
from urllib.parse import urlparse

from memora.core.errors import DamagedStoreError, StoreError, disk_problem, error_line
from memora.core.storage import ensure_private_dir, file_lock, quarantine
from memora.core.text_utils import shorten

SQLITE_HEADER = b"SQLite format 3\x00"


_INDEX_HEADER = struct.Struct("<IQQQQ")  # version, offsetLevel0, max_elements, cur_element_count, size_per_element


def zero_index_slack(path: Path) -> int:
    """Zero the unused capacity of every HNSW index under ``path`` (see
    ``ChromaConnection.compact``); the bytes zeroed. Only the room past the last
    element is touched, which the library never reads."""
    zeroed = 0
    for header_file in Path(path).glob("*/header.bin"):
        data_file = header_file.with_name("data_level0.bin")
        try:
            header = header_file.read_bytes()[: _INDEX_HEADER.size]
            if len(header) < _INDEX_HEADER.size or not data_file.exists():
                continue
            version, _, capacity, count, size = _INDEX_HEADER.unpack(header)
            used = count * size
            if version != 1 or not 0 < size or count > capacity or used > data_file.stat().st_size:
                continue  # not the layout this was written for: leave it alone
            with open(data_file, "r+b") as handle:
                handle.seek(0, os.SEEK_END)
                slack = handle.tell() - used
                if slack <= 0:
                    continue
                handle.seek(used)
                for start in range(0, slack, 1 << 20):
                    handle.write(bytes(min(1 << 20, slack - start)))
                handle.flush()
                os.fsync(handle.fileno())
                zeroed += slack
        except OSError:
            continue
    return zeroed


def check_local_store(path: Path) -> None:
    """Raise ``StoreError`` if ``path`` exists but cannot be a usable Chroma store."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise StoreError(f"Cannot open the memory store at {path}: it is a file, not a folder.")
    if path.is_dir():
        if not os.access(path, os.R_OK | os.W_OK | os.X_OK):
            raise StoreError(f"Cannot open the memory store at {path}: permission denied.")
        zero_index_slack(path)  # before Chroma loads an index: what an earlier process's memory left there
        database = path / "chroma.sqlite3"
        if database.exists():
            try:
                with open(database, "rb") as handle:
                    header = handle.read(16)
            except OSError as error:
                raise StoreError(f"Cannot open the memory store at {path}: {error.strerror}.") from None
            if header and header != SQLITE_HEADER:
                raise DamagedStoreError(
                    f"Cannot open the memory store at {path}: {database.name} is not a SQLite database "
                    "(corrupt or foreign file). Nothing was changed; move the folder aside to start afresh."
                )


class ChromaConnection:
    """One Chroma client (embedded or HTTP) shared by the stores of a process."""

    unwiped: str | None = None  # why the last ``compact`` could not finish, when the disk is why

    def __init__(self, path: Path | None = None, *, url: str | None = None):
        if path is None and url is None:
            raise ValueError("ChromaConnection needs a path or a url")
        self.path = Path(path) if path is not None else None
        self.url = url
        self._client = None
        self._lock = threading.RLock()
        self._epoch = 0

    @property
    def location(self) -> str:
        return self.url if self.url else str(self.path)

    @property
    def epoch(self) -> int:
        """Bumped by every ``refresh()``; collections fetched before are stale."""
        return self._epoch

    def client(self):
        with self._lock:
            if self._client is None:
                self._client = self._open()
            return self._client

    def _open(self):
        try:
            import chromadb
            from chromadb.config import Settings as ChromaSettings
        except ImportError as error:  # pragma: no cover - install problem
            raise StoreError(f"chromadb is not installed ({error}); run pip install -r requirements.txt") from None
        settings = ChromaSettings(anonymized_telemetry=False)
        if self.url:
            parsed = urlparse(self.url if "://" in self.url else f"http://{self.url}")
            if not parsed.hostname:
                raise StoreError(f"Invalid Chroma server URL {self.url!r}.")
            ssl = parsed.scheme == "https"
            port = parsed.port or (443 if ssl else 8000)
            try:
                client = chromadb.HttpClient(host=parsed.hostname, port=port, ssl=ssl, settings=settings)
                client.heartbeat()
            except Exception as error:
                raise StoreError(
                    f"Cannot reach the Chroma server at {self.url}: {type(error).__name__}: {shorten(str(error), 200)}"
                ) from None
            return client
        check_local_store(self.path)
        ensure_private_dir(self.path)
        try:
            # Chroma creates and migrates its database on open; two processes doing
            # that at once fail with "database is locked", so opening is serialised.
            with file_lock(self.path / "chroma.sqlite3"):
                return chromadb.PersistentClient(path=str(self.path), settings=settings)
        except Exception as error:
            raise StoreError(
                f"Cannot open the memory store at {self.path}: {type(error).__name__}: {shorten(str(error), 200)}"
            ) from None

    def collection(self, name: str, *, metadata: dict | None = None, create: bool = True):
        """Get (or create) a cosine-space collection that we embed for ourselves."""
        client = self.client()
        try:
            if not create:
                return client.get_collection(name, embedding_function=None)
            return client.get_or_create_collection(
                name,
                configuration={"hnsw": {"space": "cosine"}},
                metadata=metadata,
                embedding_function=None,
            )
        except StoreError:
            raise
        except Exception as error:
            if not create:
                raise
            raise StoreError(
                f"Cannot open collection {name} in {self.location}: {type(error).__name__}: {shorten(str(error), 200)}"
            ) from None

    def has_collection(self, name: str) -> bool:
        try:
            self.client().get_collection(name, embedding_function=None)
            return True
        except StoreError:
            raise
        except Exception:
            return False

    def find_collection(self, name: str):
        """The collection, or None only when Chroma says it does not exist; any other
        failure (a locked or damaged database, a server error) is raised, so that a
        passing error is never taken for a collection that vanished."""
        from chromadb.errors import NotFoundError

        client = self.client()
        try:
            return client.get_collection(name, embedding_function=None)
        except NotFoundError:
            return None
        except Exception as error:
            if "does not exist" in str(error).lower():
                return None
            raise

    def delete_collection(self, name: str) -> None:
        """Delete a collection, and (embedded) the vector index folder Chroma leaves behind."""
        folders = self._segment_folders(name)
        try:
            self.client().delete_collection(name)
        except Exception as error:
            if "does not exist" not in str(error).lower():
                raise
        # Chroma 1.5 drops the collection's rows but keeps its HNSW folder, which
        # holds the vectors of every deleted memory; nothing refers to it any more.
        for folder in folders:
            shutil.rmtree(folder, ignore_errors=True)

    def _segment_folders(self, name: str) -> list[Path]:
        if self.url is not None or self.path is None or not (self.path / "chroma.sqlite3").exists():
            return []
        try:
            collection_id = str(self.client().get_collection(name, embedding_function=None).id)
        except Exception:
            return []
        try:
            with contextlib.closing(_open_sqlite(self.path / "chroma.sqlite3")) as db:
                rows = db.execute("SELECT id FROM segments WHERE collection = ?", (collection_id,)).fetchall()
        except sqlite3.Error:
            return []
        return [self.path / row[0] for row in rows if _UUID.fullmatch(str(row[0])) and (self.path / row[0]).is_dir()]

    def compact(self) -> bool:
        """Wipe what Chroma keeps of deleted records; True when done (embedded only).

        After a delete, an embedded Chroma 1.5 still holds the text in two places
        in ``chroma.sqlite3``:

        * its write-ahead log (the ``embeddings_queue`` table). Chroma purges
          the log only up to what its HNSW index has saved to disk, which it does
          every ``hnsw:sync_threshold`` (1,000) writes, so the last thousand
          upserts, text and metadata included, stay readable. Rows of a record
          that a later log row deletes are no longer needed for anything but
          that record's vector, which the HNSW index replays on start before
          applying the delete; their document and metadata are blanked. (The
          vector and the operation stay, so a replay ends in the same state.)
        * its full-text index (``embedding_fulltext_search``, FTS5 with trigrams):
          a delete adds a tombstone to a newer index segment and leaves the
          deleted text's three-character pieces in the older one until the two
          are merged; in Chinese such a piece is a word. 'optimize' merges every
          segment into one, which keeps only live rows' pieces.
        * the free space of the file, because Chroma's own SQLite does not zero
          deleted rows. VACUUM rebuilds the file; it is what Chroma's own
          ``chroma vacuum`` runs, takes an exclusive lock (other processes wait,
          up to the busy timeout) and costs about 75 ms at 5,000 memories.

        * the spare capacity of each vector index file (``data_level0.bin``): the
          index library saves its whole buffer, room for elements not added yet
          included, and never clears that room, so it holds whatever the process's
          memory held when the buffer was made (seen: a forgotten memory's JSON).
          ``zero_index_slack`` zeroes it, here and at every start; a later save by
          the same running process may write it again, and the next start clears it.

        A Chroma server's files are out of reach: ``False``.
        """
        if self.url is not None or self.path is None:
            return False
        zero_index_slack(self.path)
        database = self.path / "chroma.sqlite3"
        if not database.exists():
            return True
        with self._lock:
            try:
                # Chroma's writers hold the lock for milliseconds; a VACUUM that still
                # cannot get it in 5 s is left for the next start.
                with contextlib.closing(_open_sqlite(database, timeout=5)) as db:
                    db.execute("PRAGMA secure_delete=ON")
                    columns = {row[1] for row in db.execute("PRAGMA table_info(embeddings_queue)")}
                    if {"seq_id", "operation", "topic", "id", "metadata"} <= columns:
                        db.executescript(_SCRUB_DELETED_FROM_LOG)
                    if db.execute(_HAS_FTS).fetchone():
                        db.execute(_MERGE_FTS)
                    db.execute("VACUUM")
                    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            except sqlite3.Error as error:
                self.unwiped = disk_problem(error)
                return False
        return True

    def file_identity(self) -> tuple[int, int] | None:
        """(device, inode) of the embedded ``chroma.sqlite3``, None when there is
        none (or on a server). Chroma never replaces its own file (its VACUUM
        rewrites it in place), so a change means someone else deleted or
        replaced it."""
        if self.url is not None or self.path is None:
            return None
        try:
            stat = os.stat(self.path / "chroma.sqlite3")
        except FileNotFoundError:
            return None
        return stat.st_dev, stat.st_ino

    def damage(self) -> str | None:
        """Why the embedded ``chroma.sqlite3`` is not a sound SQLite database, or None
        (also when it is missing). Reads the whole file: call it only after opening failed."""
        if self.url is not None or self.path is None:
            return None
        database = self.path / "chroma.sqlite3"
        try:
            with open(database, "rb") as handle:
                header = handle.read(16)
        except FileNotFoundError:
            return None
        except OSError as error:
            return error.strerror or type(error).__name__
        if header and header != SQLITE_HEADER:
            return "not a SQLite database"
        try:
            with contextlib.closing(sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=5)) as db:
                row = db.execute("PRAGMA quick_check").fetchone()
        except sqlite3.DatabaseError as error:
            return error_line(error)
        return None if row and row[0] == "ok" else shorten(str(row[0] if row else "unreadable"), 80)

    def set_aside(self) -> Path:
        """Move a damaged ``chroma.sqlite3`` aside as ``chroma.sqlite3.corrupt-<time>``
        (and its journal files), so that the next open starts an empty store; returns
        where it went. Only for a store whose memories can be rebuilt from elsewhere."""
        with self._lock:
            self._forget_client()
            database = self.path / "chroma.sqlite3"
            for suffix in ("-journal", "-wal", "-shm"):
                companion = Path(str(database) + suffix)
                if companion.exists():
                    quarantine(companion)
            return quarantine(database)

    def remove_orphan_segments(self) -> None:
        """Remove the vector index folders no collection of the embedded store refers to:
        those of a ``chroma.sqlite3`` that was deleted or replaced (they hold the old
        vectors; nothing can ever read them again)."""
        if self.url is not None or self.path is None or not (self.path / "chroma.sqlite3").exists():
            return
        try:
            with contextlib.closing(_open_sqlite(self.path / "chroma.sqlite3", timeout=5)) as db:
                known = {str(row[0]) for row in db.execute("SELECT id FROM segments")}
        except sqlite3.Error:
            return
        for folder in self.path.iterdir():
            if folder.is_dir() and _UUID.fullmatch(folder.name) and folder.name not in known:
                shutil.rmtree(folder, ignore_errors=True)

    def list_collection_names(self) -> list[str]:
        return [c if isinstance(c, str) else c.name for c in self.client().list_collections()]

    def refresh(self) -> None:
        """Reopen the client so writes by other processes become visible."""
        with self._lock:
            if self._client is None:
                return
            self._forget_client()

    def _forget_client(self) -> None:
        if self.url is None:
            from chromadb.api.shared_system_client import SharedSystemClient

            SharedSystemClient.clear_system_cache()
        self._client = None
        self._epoch += 1


# Chroma's log operations: 3 is DELETE (chromadb/db/mixins/embeddings_queue.py).
_SCRUB_DELETED_FROM_LOG = """
CREATE TEMP TABLE IF NOT EXISTS memora_deleted (topic TEXT, id TEXT, seq_id INTEGER, PRIMARY KEY (topic, id));
DELETE FROM temp.memora_deleted;
INSERT INTO temp.memora_deleted
 SELECT topic, id, MAX(seq_id) FROM embeddings_queue WHERE operation = 3 GROUP BY topic, id;
UPDATE embeddings_queue SET metadata = '{}'
 WHERE operation != 3 AND metadata IS NOT '{}'
   AND seq_id < (SELECT d.seq_id FROM temp.memora_deleted AS d
                  WHERE d.topic = embeddings_queue.topic AND d.id = embeddings_queue.id);
DROP TABLE temp.memora_deleted;
"""
_HAS_FTS = "SELECT 1 FROM sqlite_master WHERE name = 'embedding_fulltext_search'"
_MERGE_FTS = "INSERT INTO embedding_fulltext_search (embedding_fulltext_search) VALUES ('optimize')"
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def _open_sqlite(path: Path, timeout: float = 30) -> sqlite3.Connection:
    return sqlite3.connect(str(path), timeout=timeout, isolation_level=None)
