"""Chroma: an embedded ``PersistentClient`` on disk, or a Chroma server, and
``ChromaVectors``, a learner's ``VectorIndex`` in it, with everything Chroma needs.

``ChromaConnection`` hands out collections and can ``refresh()`` itself (an
embedded client does not see another process's writes until it reopens). Opening
never repairs or creates anything inside an existing store that looks wrong: a
path that is a file, a folder we may not write, or a ``chroma.sqlite3`` that is
not SQLite is a ``StoreError`` naming the path and the reason. Only a learner's
vectors, whose catalog still holds every memory's text, may move a damaged
``chroma.sqlite3`` aside (``set_aside``) to rebuild them from that text.

``ChromaVectors`` keeps the collection and its catalog (a mirror of it) in step:

* **Other writers.** Every write stamps both with a new revision, the store's id
  (made by its first write) and a serial that grows by one per write. Another
  revision or count means another process or machine wrote: the catalog is
  rebuilt from the collection. Id and serial tell that from "this is not my
  store" (another id, none, or a smaller serial: a replaced file, an older backup).
* **A vanished store.** A collection that is not the one the catalog mirrors
  (``_lost_cause``) while the catalog lists memories sets ``missing``: the catalog
  is never rebuilt from it, and the store's ``reindex`` rebuilds the collection
  from the catalog. ``file_identity`` notices a ``chroma.sqlite3`` deleted or
  replaced while Memora runs, before SQLite's "attempt to write a readonly
  database" would.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import sqlite3
import struct
import threading
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from urllib.parse import urlparse

from memora.core.errors import (
    DamagedStoreError,
    EmbeddingModelMismatch,
    MemoraError,
    StoreError,
    disk_problem,
    error_line,
)
from memora.core.records import MemoryRecord, from_chroma, to_chroma_metadata
from memora.core.storage import ensure_private_dir, file_lock, quarantine
from memora.core.text_utils import shorten
from memora.store.catalog import FORGETTING, MemoryCatalog
from memora.store.index import Vector, vectors_missing

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


def check_local_store(path: Path, *, rebuildable: bool = False) -> None:
    """Raise ``StoreError`` if ``path`` exists but cannot be a usable Chroma store.
    ``rebuildable``: a catalog holds every memory's text, so a damaged
    ``chroma.sqlite3`` is left for ``ChromaVectors`` to move aside and rebuild."""
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
            if header and header != SQLITE_HEADER and not rebuildable:
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
        self.epoch = 0  # bumped by every refresh(): collections fetched before are stale

    @property
    def location(self) -> str:
        return self.url if self.url else str(self.path)

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

    def collection(self, name: str, *, metadata: dict | None = None):
        """Get (or create) a cosine-space collection that we embed for ourselves."""
        client = self.client()
        try:
            return client.get_or_create_collection(
                name,
                configuration={"hnsw": {"space": "cosine"}},
                metadata=metadata,
                embedding_function=None,
            )
        except StoreError:
            raise
        except Exception as error:
            raise StoreError(
                f"Cannot open collection {name} in {self.location}: {type(error).__name__}: {shorten(str(error), 200)}"
            ) from None

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
        """Delete a collection, and (embedded) every vector index folder nothing refers to:
        Chroma 1.5 drops a collection's rows but keeps its HNSW folder, which holds the
        vectors of every record it held, and so do the folders of a ``chroma.sqlite3``
        that was deleted or replaced."""
        try:
            self.client().delete_collection(name)
        except Exception as error:
            if "does not exist" not in str(error).lower():
                raise
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
        assert self.path is not None  # an embedded store's file
        with self._lock:
            self._forget_client()
            database = self.path / "chroma.sqlite3"
            for suffix in ("-journal", "-wal", "-shm"):
                companion = Path(str(database) + suffix)
                if companion.exists():
                    quarantine(companion)
            return quarantine(database)

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
        self.epoch += 1


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


def collection_name(user_id: str) -> str:
    """The learner's Chroma collection. Chroma takes only ``[a-zA-Z0-9._-]``: a name in
    another script goes as the hex of its UTF-8 after a dot, which no learner name
    holds, so it can never be another learner's ("李明" -> ``memora-.e69d8ee6988e-memories``)."""
    if user_id.isascii():
        return f"memora-{user_id}-memories"
    return f"memora-.{user_id.encode('utf-8').hex()}-memories"


def learner_of_collection(name: str) -> str | None:
    """The learner a collection name belongs to (``collection_name`` read back), or None."""
    if not (name.startswith("memora-") and name.endswith("-memories")):
        return None
    middle = name[len("memora-") : -len("-memories")]
    if middle.startswith("."):
        try:
            return bytes.fromhex(middle[1:]).decode("utf-8")
        except ValueError:
            return None
    return middle


# The stamps of a write (module docstring), in the collection's metadata and the catalog's meta.
STORE_KEY = "memora_store"
SERIAL_KEY = "revision_serial"
# Why the vectors went missing, as first found: the next start says the same
# (not "an empty collection", which is what this start's own open left there).
LOST = "vectors_lost"
BATCH = 1000  # the most records Chroma takes in one call


def _serial(value) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


class ChromaVectors:
    """One learner's ``VectorIndex`` in Chroma, kept in step with its catalog (module docstring)."""

    def __init__(self, connection: ChromaConnection, catalog: MemoryCatalog, *, model: str):
        self.connection, self.catalog = connection, catalog
        self.name = collection_name(catalog.user_id)
        self.model: str | None = model  # the model a new collection is made for, until one is read
        self._collection = None
        self._epoch = -1
        self._examined: tuple[int, int] | None = None  # the chroma.sqlite3 last examined (embedded)
        self._seen = catalog.generation()
        self._written = False  # Chroma was written since the last stamp
        self.missing: str | None = self._examine()
        if self.missing is None:
            self._read_model()
            self._follow()

    # -- the VectorIndex ---------------------------------------------------------------
    def check(self, *, deep: bool = False) -> None:
        """See what other processes (same folder) or machines (same server) wrote, and
        whether the collection vanished: cheap (a ``stat``) unless ``deep`` (one
        Chroma call, 0.3 ms, embedded; a server's is fetched anyway)."""
        self._notice()
        generation = self.catalog.generation()
        if generation != self._seen:
            self.connection.refresh()
            self._seen = generation
            self._read_model()  # another process may have re-embedded everything ('reindex')
        if self.connection.url is not None:  # a Chroma server: other machines may have written
            fresh = self.connection.find_collection(self.name)
            if fresh is None:
                self.missing = self.missing or self._examine(running=True)  # deleted on the server
            elif (fresh.metadata or {}).get("revision") != self.catalog.get_meta("chroma_revision"):
                self._collection = None
                self._follow()
        self._notice(deep=deep and self.connection.url is None)

    def upsert(self, records: Sequence[MemoryRecord], vectors: Sequence[Vector | None]) -> None:
        self._written = True
        pairs = [(r, v) for r, v in zip(records, vectors) if v is not None]
        with self._calling():
            for start in range(0, len(pairs), BATCH):
                chunk = pairs[start : start + BATCH]
                self._coll().upsert(
                    ids=[r.id for r, _ in chunk],
                    embeddings=[list(v) for _, v in chunk],
                    documents=[r.content for r, _ in chunk],
                    metadatas=[to_chroma_metadata(r) for r, _ in chunk],
                )

    def update(self, records: Sequence[MemoryRecord]) -> None:
        if not records:
            return
        self._written = True
        collection = self._coll()
        with self._calling():
            page = collection.get(ids=[r.id for r in records], include=["metadatas"])
            before = dict(zip(page["ids"], page["metadatas"]))
            # Chroma merges metadata on update; a key is removed only by setting it to None.
            changed = [(r.id, to_chroma_metadata(r)) for r in records if r.id in before]
            for memory_id, metadata in changed:
                metadata.update({k: None for k in before[memory_id] or {} if k not in metadata})
            if changed:
                collection.update(ids=[i for i, _ in changed], metadatas=[m for _, m in changed])

    def delete(self, ids: Sequence[str] | None = None) -> None:
        self._written = True
        if ids is not None:
            with self._calling():
                for start in range(0, len(ids), BATCH):
                    self._coll().delete(ids=list(ids[start : start + BATCH]))
            return
        self.connection.delete_collection(self.name)
        self._collection, self.missing, self.model = None, None, None
        self._examined = self.connection.file_identity()

    def nearest(self, vector: Vector, n: int) -> list[tuple[str, float]]:
        query = lambda: self._coll().query(query_embeddings=[list(vector)], n_results=n, include=["distances"])
        try:
            result = query()
        except Exception as error:
            if self.connection.url is not None or "hnsw" not in str(error).lower():
                self._failed(error)
                raise
            # An embedded store read while another process was flushing its vector
            # index to disk ("Error creating hnsw segment reader"). Writers hold the
            # catalog lock for the whole write, so one retry under it, on a freshly
            # opened client, reads a finished index.
            with file_lock(self.catalog.path):
                self.connection.refresh()
                result = query()
        return list(zip(result["ids"][0], result["distances"][0]))

    def stored(self, ids: Sequence[str]) -> dict[str, tuple[MemoryRecord, list[float]]]:
        return {r.id: (r, v) for r, v in self._records(ids)}

    def commit(self, db: sqlite3.Connection) -> None:
        """Stamp a write that reached Chroma in both stores (a new revision, the store's
        id and its next serial), so that a reader can tell they still agree."""
        if self._written:
            self._written = False
            revision = uuid.uuid4().hex[:12]
            collection = self._coll()  # a fresh handle: 'forget all' deleted the collection
            metadata = {k: v for k, v in (collection.metadata or {}).items() if not k.startswith("hnsw:")}
            store = self.catalog.get_meta("store_id") or metadata.get(STORE_KEY) or uuid.uuid4().hex[:12]
            serial = max(_serial(self.catalog.get_meta("chroma_serial")), _serial(metadata.get(SERIAL_KEY))) + 1
            for key, value in (("chroma_revision", revision), ("store_id", store), ("chroma_serial", str(serial))):
                db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))
            if self.missing is None:  # not this catalog's collection: stamping it would make it look like one
                stamps = {"revision": revision, STORE_KEY: store, SERIAL_KEY: serial}
                model = {"embedding_model": self.model} if self.model else {}
                collection.modify(metadata={**metadata, **model, **stamps})
                db.execute("DELETE FROM meta WHERE key = ?", (LOST,))
        self._seen = self.catalog.generation() + 1  # the transaction bumps it once as it commits

    def erase(self) -> bool:
        """Wipe what Chroma keeps of deleted records (``ChromaConnection.compact``) and the
        damaged copies moved aside (their text no wipe reaches; the catalog holds all of
        it). A server keeps its own files, which no client can wipe: nothing to do here."""
        if self.connection.path is None:
            return True
        done = self.connection.compact()
        for copy in self.connection.path.glob("chroma.sqlite3*.corrupt-*"):
            copy.unlink(missing_ok=True)
        return done

    # -- Chroma's own ways ---------------------------------------------------------------
    def _coll(self):
        if self._collection is None or self._epoch != self.connection.epoch:
            metadata = {"embedding_model": self.model, "memora_user": self.catalog.user_id}
            self._collection = self.connection.collection(
                self.name, metadata={k: v for k, v in metadata.items() if v is not None}
            )
            self._epoch = self.connection.epoch
        return self._collection

    @contextlib.contextmanager
    def _calling(self) -> Iterator[None]:
        try:
            yield
        except Exception as error:
            self._failed(error)
            raise

    def _failed(self, error: Exception) -> None:
        """After a Chroma call failed: if the store vanished under it, or the model's vectors
        changed size, say that instead (not "attempt to write a readonly database")."""
        if isinstance(error, MemoraError):
            return
        if "expecting embedding with dimension" in str(error):  # the model changed size under its name
            message = f"The embedding model's vectors changed size ({error}); type 'reindex' to re-embed every memory."
            raise EmbeddingModelMismatch(message) from None
        if self.missing is None:
            try:
                self.connection.refresh()
                self.missing = self._examine(running=True)
            except Exception:
                return
        if self.missing is not None:
            raise vectors_missing(self.missing, self.catalog.count()) from error

    def _read_model(self) -> None:
        """The model of the vectors the collection holds (None: it holds none)."""
        collection = self._coll()
        self.model = (collection.metadata or {}).get("embedding_model") if collection.count() else None

    def _records(self, ids: Sequence[str] | None = None) -> Iterator[tuple[MemoryRecord, list[float]]]:
        """The learner's records Chroma holds (of ``ids``, or all), with their vectors."""
        collection, offset, include = self._coll(), 0, ["documents", "metadatas", "embeddings"]
        while ids is None or offset < len(ids):
            if ids is None:
                page = collection.get(include=include, limit=BATCH, offset=offset)
                if not len(page["ids"]):
                    return
            else:
                page = collection.get(include=include, ids=list(ids[offset : offset + BATCH]))
            for memory_id, document, meta, vector in zip(
                page["ids"], page["documents"], page["metadatas"], page["embeddings"]
            ):
                record = from_chroma(memory_id, document, meta)
                if record.user_id in ("", self.catalog.user_id):
                    yield record.evolve(user_id=self.catalog.user_id), [float(x) for x in vector]
            offset += BATCH if ids is not None else len(page["ids"])

    def _follow(self, remote_revision: str | None = None) -> None:
        """Rebuild the catalog from Chroma when the two disagree: another revision
        (another process or machine wrote) or another count (a crash between the two
        writes); never from a collection that is not the catalog's own."""
        collection = self._coll()
        if remote_revision is None:
            remote_revision = (collection.metadata or {}).get("revision")
        # The memories without a vector are in the catalog only, until the model can embed them.
        if remote_revision == self.catalog.get_meta("chroma_revision") and collection.count() == self.catalog.count(
            with_vectors=True
        ):
            return
        cause = self._lost_cause(collection)
        if cause is not None:
            self.missing = self._remember_loss(cause)
            return
        pairs = list(self._records())
        in_chroma = {r.id for r, _ in pairs}
        waiting = [r for r in self.catalog.without_vectors() if r.id not in in_chroma]
        metadata = collection.metadata or {}
        with file_lock(self.catalog.path), self.catalog.transaction() as db:
            self.catalog.clear(db)
            self.catalog.insert(db, [r for r, _ in pairs] + waiting, [v for _, v in pairs] + [None] * len(waiting))
            for key, value in (
                ("chroma_revision", remote_revision),
                ("store_id", metadata.get(STORE_KEY)),
                ("chroma_serial", metadata.get(SERIAL_KEY)),
            ):
                if value:
                    db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, str(value)))
        self._seen = self.catalog.generation()

    # -- a vanished store --------------------------------------------------------------
    def _examine(self, *, running: bool = False) -> str | None:
        """Open the learner's collection; why it cannot be the one the catalog mirrors, or
        None. A damaged ``chroma.sqlite3`` is moved aside (kept, as every damaged file is)
        only when the catalog lists memories to rebuild it from; else the error stands."""
        existed = self.connection.url is not None or self.connection.file_identity() is not None
        moved = None
        try:
            present = self.connection.find_collection(self.name) is not None
        except StoreError:
            reason = self.connection.damage() if self.catalog.count(current_only=False) else None
            if reason is None:
                raise
            moved = (reason, self.connection.set_aside())
            present = False
        self._collection = None
        collection = self._coll()
        self._examined = self.connection.file_identity()
        cause = self._lost_cause(collection, present=present, existed=existed, moved=moved)
        return self._remember_loss(f"while Memora was running, {cause}" if cause and running else cause)

    def _remember_loss(self, cause: str | None) -> str | None:
        """Record the cause the first time it is found (``LOST``) and give back the
        first one found; forget it once the collection is the catalog's again."""
        recorded = self.catalog.get_meta(LOST)
        if cause is None or recorded is None:
            if recorded != cause:
                self.catalog.set_meta(LOST, cause)
            return cause
        return recorded

    def _lost_cause(self, collection, *, present: bool = True, existed: bool = True, moved=None) -> str | None:
        """Why ``collection`` is not the store the catalog mirrors, when the catalog lists
        memories; None when it is, or when there is nothing to lose. Only a collection
        stamped with this store's id and a serial at least the catalog's is followed
        (another process or machine wrote, even a ``forget all``), and, for a catalog
        older than store ids, any non-empty one; a missing or empty one is vanished."""
        metadata = (collection.metadata or {}) if present else {}
        ours, theirs = self.catalog.get_meta("store_id"), metadata.get(STORE_KEY)
        serial, our_serial = _serial(metadata.get(SERIAL_KEY)), _serial(self.catalog.get_meta("chroma_serial"))
        if moved is None and existed and ours and theirs == ours and serial >= our_serial:
            return None  # the usual case, decided without counting anything
        if not self.catalog.count(current_only=False) or self.catalog.get_meta(FORGETTING):
            return None  # nothing to lose, or a forget all under way in another process (or cut short)
        server = self.connection.url is not None
        where = f"the Chroma server at {self.connection.url}" if server else f"chroma.sqlite3 in {self.connection.path}"
        if moved is not None:
            return f"{where} is damaged ({moved[0]}); it was moved aside as {moved[1].name}"
        if not existed:
            return f"{where} was deleted"
        if not present:
            why = "it was deleted" if server else "the file was replaced, or the collection deleted"
            return f"{where} has no collection {self.name} ({why})"
        if ours and theirs:
            if theirs != ours:
                return f"{where} holds another store's memories"
            return f"{where} is an older copy of your store, from before your latest changes"
        if theirs:
            return None  # a catalog from before store ids beside a collection that has one: follow Chroma
        if collection.count() == 0:
            return f"{where} has an empty collection {self.name} (the file was replaced, or the collection emptied)"
        return f"{where} holds memories this catalog did not write" if ours else None

    def _notice(self, *, deep: bool = False) -> None:
        """Examine Chroma again when it may have vanished under this process: the embedded
        ``chroma.sqlite3`` is not the file last examined, or, with ``deep``, the collection
        as stored now is gone or not this catalog's (a file overwritten in place)."""
        if self.missing is not None:
            return
        changed = self.connection.url is None and self.connection.file_identity() != self._examined
        if not changed and deep:
            try:
                stored = self.connection.find_collection(self.name)
                changed = stored is None or self._lost_cause(stored) is not None
            except Exception:  # a file that no longer reads: examined below
                changed = True
        if changed:
            self.connection.refresh()  # the client may still hold the old file open
            self.missing = self._examine(running=True)
