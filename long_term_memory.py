"""Long-term memory: a learner's past records in Chroma, found by hybrid search.

Each learner has one cosine-space Chroma collection (``memora-<user>-memories``)
and a SQLite catalog beside it (``catalog.py``). Every read and write is scoped
to the store's ``user_id``: the collection is the learner's own and every record
also carries ``user_id`` in its metadata, which reads check.

What the store promises:

* **No duplicates.** An exact (normalised) repeat, or a near-duplicate within
  ``DUPLICATE_DISTANCE`` that passes the number/negation guard, is not stored
  again; the existing memory's ``last_seen`` is refreshed instead.
* **Nothing true is deleted by a model.** A memory that is no longer true is
  *superseded*: it gets ``status=superseded``, ``valid_until`` and a
  ``superseded_by`` link, and stays visible in ``memories --all`` and
  ``history``. Only the learner's own ``forget`` deletes.
* **No silent loss at the cap.** At ``memory_cap`` current memories ``add``
  raises ``MemoryFullError``; nothing old is dropped to make room.
* **One vector space.** The collection records its embedding model; opening it
  with another model is refused until ``reindex`` re-embeds everything.
"""

from __future__ import annotations

import re
import uuid
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

from catalog import MemoryCatalog
from chroma_backend import ChromaConnection
from embeddings import Embedder, as_embedder
from errors import CommandError, EmbeddingModelMismatch, LimitError, MemoryFullError
from records import (
    CATEGORIES,
    MAX_MEMORY_CHARS,
    MEMORY_TYPES,
    SOURCES,
    STATUS_CURRENT,
    STATUS_SUPERSEDED,
    MemoryRecord,
    MemorySearchResult,
)
from storage import ensure_private_dir, file_lock
from text_utils import clean_text
from timeutil import Clock, parse_date, parse_iso, system_clock, to_aware

# Minimum calibrated final score (retrieval.py) for a memory to enter the
# context. It trades recall against prompt noise: a wrong memory costs tokens
# every turn and can mislead the tutor ("you said you love coffee" in a chat
# about tea); a missed one costs one personal touch, and the digest still
# carries the learner's core facts. Measured with the local model on a tutor's
# memories (tests/test_retrieval_local.py): messages that are about a memory
# score 0.29-0.61 for it, small talk and unrelated exercises top out at 0.17.
# 0.25 sits in that gap, closer to the unrelated side because a miss is the
# cheaper error here. On LoCoMo, 98% of the evidence found in the top 10
# scores above it (bench/locomo_recall.py prints the table).
RETRIEVAL_MIN_SCORE = 0.25

# Cosine distance under which a new memory counts as a duplicate of an old one,
# per embedding model. A false "duplicate" loses a fact forever (seed 001's
# argument for a conservative DUPLICATE_DISTANCE), so each value sits below the
# closest pair of *different* facts in tests/test_dedup_calibration.py, with
# margin, at the price of storing some paraphrases twice (the reconciliation
# step can still call those NOOP):
# - local MiniLM: the closest different facts are 0.07 apart ("...studying in
#   the morning" / "...in the evening"; "exam on Tuesday" / "on Thursday"),
#   English paraphrases 0.026-0.12. 0.05 merges the tight paraphrases only.
#   MiniLM cannot read Chinese ("我每天都喝咖啡" / "我每天都喝茶" are 0.003
#   apart), so with it, CJK text is only ever merged on an exact match.
# - OpenAI text-embedding-3-small could not be calibrated here (no API
#   access); 0.04 is deliberately tight. Re-run the calibration test with it.
# - the hash test embedding: near-verbatim repeats only.
# On top of the threshold, ``_differs_in_specifics`` refuses to merge texts
# whose numbers, weekdays, months, times of day, negations or symbols differ.
DUPLICATE_DISTANCE = {
    "local:all-MiniLM-L6-v2": 0.05,
    "openai:text-embedding-3-small": 0.04,
    "hash:v1-384": 0.05,
}
# Models whose vectors are meaningless for Chinese text (near-dup disabled there).
ENGLISH_ONLY_MODELS = {"local:all-MiniLM-L6-v2", "hash:v1-384"}
DEFAULT_DUPLICATE_DISTANCE = 0.05

# Neighbours closer than this are shown to the model when it decides
# ADD / UPDATE / SUPERSEDE / NOOP for a new fact (extraction.py). It is
# permissive on purpose: a neighbour shown needlessly costs a few tokens, a
# contradiction never shown piles up stale facts.
RELATED_DISTANCE = {
    "local:all-MiniLM-L6-v2": 0.55,
    "openai:text-embedding-3-small": 0.60,
    "hash:v1-384": 0.75,
}
DEFAULT_RELATED_DISTANCE = 0.55

_SPECIFIC = re.compile(
    r"\d+|\b(?:mon|tues|wednes|thurs|fri|satur|sun)day\b|\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\b"
    r"|\b(?:not|never|no|don't|doesn't|didn't|won't|can't|isn't|aren't|quit|stopped|anymore)\b"
    r"|\b(?:morning|afternoon|evening|night|tonight|today|tomorrow|yesterday|weekend|weekday)s?\b"
    r"|[一二三四五六七八九十百千萬万兩两]|不|沒|没|別|别|週[一二三四五六日天]|星期"
    r"|[^\w\s.,!?;:'\"()\-。，！？；：、]",  # symbols carry meaning: C++ / C#, 50% / $50
    re.IGNORECASE,
)

_RESERVED_KEYS = {
    "user_id", "created_at", "created_at_ts", "memory_type", "category", "source", "status",
    "last_seen", "last_seen_ts", "valid_until", "valid_until_ts", "superseded_by", "supersedes",
    "change_reason", "event_date", "followed_up_at", "followed_up_ts",
}


def collection_name(user_id: str) -> str:
    return f"memora-{user_id}-memories"


def catalog_path(db_dir: Path, user_id: str) -> Path:
    return Path(db_dir) / f"catalog-{user_id}.sqlite3"


_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af\uf900-\ufaff]")


def _differs_in_specifics(a: str, b: str) -> bool:
    return sorted(m.lower() for m in _SPECIFIC.findall(a)) != sorted(m.lower() for m in _SPECIFIC.findall(b))


def is_near_duplicate(embedder_name: str, new: str, old: str, distance: float) -> bool:
    """The dedup rule: close in the model's space, same specifics, and a model that can read the text."""
    if embedder_name in ENGLISH_ONLY_MODELS and (_CJK.search(new) or _CJK.search(old)):
        return False
    threshold = DUPLICATE_DISTANCE.get(embedder_name, DEFAULT_DUPLICATE_DISTANCE)
    return distance <= threshold and not _differs_in_specifics(new, old)


@dataclass(frozen=True)
class AddResult:
    """What ``add`` did: stored a new memory, or refreshed a duplicate."""

    record: MemoryRecord
    duplicate: bool = False

    @property
    def id(self) -> str:
        return self.record.id

    @property
    def content(self) -> str:
        return self.record.content


def _chroma_metadata(record: MemoryRecord) -> dict[str, Any]:
    meta: dict[str, Any] = {}
    for key, value in record.metadata.items():
        if key in _RESERVED_KEYS or value is None:
            continue
        meta[str(key)] = value if isinstance(value, (str, int, float, bool)) else str(value)
    meta.update(
        user_id=record.user_id,
        created_at=to_aware(record.created_at).isoformat(),
        created_at_ts=to_aware(record.created_at).timestamp(),
        memory_type=record.memory_type,
        category=record.category,
        source=record.source,
        status=record.status,
    )
    for key in ("last_seen", "valid_until", "followed_up_at"):
        value = getattr(record, key)
        if value is not None:
            meta[key] = to_aware(value).isoformat()
            meta[f"{key}_ts" if key != "followed_up_at" else "followed_up_ts"] = to_aware(value).timestamp()
    for key in ("superseded_by", "supersedes", "change_reason"):
        if getattr(record, key):
            meta[key] = getattr(record, key)
    if record.event_date:
        meta["event_date"] = record.event_date.isoformat()
    return meta


def _upsert(collection, records: Sequence[MemoryRecord], vectors: Sequence[Sequence[float]]) -> None:
    """Write records with their vectors to Chroma, in batches Chroma accepts."""
    for start in range(0, len(records), 1000):
        chunk = records[start : start + 1000]
        collection.upsert(
            ids=[r.id for r in chunk],
            embeddings=list(vectors[start : start + 1000]),
            documents=[r.content for r in chunk],
            metadatas=[_chroma_metadata(r) for r in chunk],
        )


def _record_from_chroma(memory_id: str, document: str, meta: dict | None) -> MemoryRecord:
    meta = dict(meta or {})
    created = parse_iso(meta.get("created_at"))
    if created is None and meta.get("created_at_ts") is not None:
        created = datetime.fromtimestamp(float(meta["created_at_ts"])).astimezone()
    return MemoryRecord(
        id=memory_id,
        content=document or "",
        created_at=created or system_clock(),
        memory_type=meta.get("memory_type") if meta.get("memory_type") in MEMORY_TYPES else "semantic",
        category=meta.get("category") if meta.get("category") in CATEGORIES else "other",
        source=meta.get("source") if meta.get("source") in SOURCES else "command",
        status=STATUS_SUPERSEDED if meta.get("status") == STATUS_SUPERSEDED else STATUS_CURRENT,
        user_id=str(meta.get("user_id", "")),
        last_seen=parse_iso(meta.get("last_seen")),
        valid_until=parse_iso(meta.get("valid_until")),
        superseded_by=meta.get("superseded_by"),
        supersedes=meta.get("supersedes"),
        change_reason=meta.get("change_reason"),
        event_date=parse_date(meta.get("event_date")),
        followed_up_at=parse_iso(meta.get("followed_up_at")),
        metadata={k: v for k, v in meta.items() if k not in _RESERVED_KEYS},
    )


class LongTermMemoryStore:
    """One learner's long-term memories (see the module docstring)."""

    def __init__(
        self,
        path: Path | str,
        *,
        embedding_function=None,
        user_id: str = "default",
        connection: ChromaConnection | None = None,
        memory_cap: int | None = None,
        clock: Clock = system_clock,
        recency_half_life_days: float | None = None,
    ):
        self.path = Path(path)
        self.user_id = user_id
        self.embedder: Embedder = as_embedder(embedding_function)
        self.connection = connection or ChromaConnection(self.path)
        self.clock = clock
        self.default_memory_cap = memory_cap
        self.recency_half_life_days = recency_half_life_days
        self.last_embedding_tokens = 0
        if self.connection.url is None:
            from chroma_backend import check_local_store

            check_local_store(self.path)
        ensure_private_dir(self.path)
        self._catalog_path = catalog_path(self.path, user_id)
        self.catalog = MemoryCatalog(self._catalog_path, user_id)
        self._collection = None
        self._collection_epoch = -1
        self._seen_generation = self.catalog.generation()
        self.mismatch: str | None = None
        self._open_collection()

    # -- opening and consistency ------------------------------------------------------
    def _open_collection(self) -> None:
        collection = self._coll()
        stored = (collection.metadata or {}).get("embedding_model")
        if stored is None or (stored != self.embedder.name and collection.count() == 0):
            collection.modify(metadata={**(collection.metadata or {}), "embedding_model": self.embedder.name})
        elif stored != self.embedder.name:
            self.mismatch = stored
        self._sync_catalog()

    def _coll(self):
        if self._collection is None or self._collection_epoch != self.connection.epoch:
            self._collection = self.connection.collection(
                collection_name(self.user_id), metadata={"embedding_model": self.embedder.name, "memora_user": self.user_id}
            )
            self._collection_epoch = self.connection.epoch
        return self._collection

    def _check_model(self) -> None:
        if self.mismatch:
            raise EmbeddingModelMismatch(
                f"The memory store was built with {self.mismatch}, but Memora is set to {self.embedder.name}. "
                f"Set MEMORA_EMBEDDING_MODEL back, or type 'reindex' to re-embed all {self.count(include_superseded=True)} memories."
            )

    def _sync_catalog(self, remote_revision: str | None = None) -> None:
        """Rebuild the catalog from Chroma when the two disagree.

        Every write stamps a new revision on the collection and in the catalog;
        a different revision (another machine wrote to the same Chroma server)
        or a different count (a crash between the two writes) means rebuild.
        """
        collection = self._coll()
        if remote_revision is None:
            remote_revision = (collection.metadata or {}).get("revision")
        local_revision = self.catalog.get_meta("chroma_revision")
        if remote_revision == local_revision and collection.count() == self.catalog.count(current_only=False):
            return
        pairs = list(self._iter_chroma_records())
        with file_lock(self._catalog_path), self.catalog.transaction() as db:
            self.catalog.clear(db)
            self.catalog.insert(db, [r for r, _ in pairs], [v for _, v in pairs])
            if remote_revision:
                db.execute("INSERT OR REPLACE INTO meta VALUES ('chroma_revision', ?)", (remote_revision,))
        self._seen_generation = self.catalog.generation()

    def _iter_chroma_records(self) -> Iterator[tuple[MemoryRecord, list[float]]]:
        collection = self._coll()
        offset = 0
        while True:
            page = collection.get(include=["documents", "metadatas", "embeddings"], limit=1000, offset=offset)
            if not len(page["ids"]):
                return
            for memory_id, document, meta, vector in zip(page["ids"], page["documents"], page["metadatas"], page["embeddings"]):
                record = _record_from_chroma(memory_id, document, meta)
                if record.user_id in ("", self.user_id):
                    yield record.evolve(user_id=self.user_id), [float(x) for x in vector]
            offset += len(page["ids"])

    def _sync_with_other_processes(self) -> None:
        """See what other processes (same folder) or machines (same server) wrote."""
        generation = self.catalog.generation()
        if generation != self._seen_generation:
            self.connection.refresh()
            self._seen_generation = generation
        if self.connection.url is not None:  # a Chroma server: other machines may have written
            fresh = self.connection.collection(collection_name(self.user_id), create=False)
            remote = (fresh.metadata or {}).get("revision")
            if remote != self.catalog.get_meta("chroma_revision"):
                self._collection = None
                self._sync_catalog(remote)

    @contextmanager
    def _writing(self, *, new_vectors: bool = True):
        """Cross-process write section: file lock, fresh view, one catalog transaction.

        Writes that add vectors need the store's own embedding model; deleting and
        changing metadata do not (a learner can always forget, even after
        switching models and before ``reindex``)."""
        if new_vectors:
            self._check_model()
        with file_lock(self._catalog_path):
            self._sync_with_other_processes()
            with self.catalog.transaction() as db:
                yield db, self._coll()
                self._stamp_revision(db, self._coll())  # a fresh handle: forget all recreates it
            self._seen_generation = self.catalog.generation()

    def _stamp_revision(self, db, collection) -> None:
        """Mark this write in both stores, so a reader can tell they still agree."""
        revision = uuid.uuid4().hex[:12]
        db.execute("INSERT OR REPLACE INTO meta VALUES ('chroma_revision', ?)", (revision,))
        metadata = {k: v for k, v in (collection.metadata or {}).items() if not k.startswith("hnsw:")}
        collection.modify(metadata={**metadata, "revision": revision})

    # -- embedding --------------------------------------------------------------------
    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        result = self.embedder.embed(list(texts))
        self.last_embedding_tokens = result.tokens
        return result.vectors

    # -- adding -----------------------------------------------------------------------
    @property
    def memory_cap(self) -> int | None:
        """This learner's cap: their own setting ('off' = none), else the default."""
        stored = self.catalog.get_meta("memory_cap")
        if stored == "off":
            return None
        return int(stored) if stored else self.default_memory_cap

    def set_memory_cap(self, cap: int | None) -> None:
        """Set the cap; ``None`` turns it off for this learner (kept across restarts)."""
        if cap is not None and cap <= 0:
            raise CommandError("The memory cap must be a positive number.")
        self.catalog.set_meta("memory_cap", str(cap) if cap else "off")

    def _new_id(self) -> str:
        while True:
            candidate = uuid.uuid4().hex[:8]
            if self.catalog.get(candidate) is None:
                return candidate

    def _validate(self, content: str, memory_type: str, category: str) -> tuple[str, str, str]:
        text = clean_text(content)
        if not text:
            raise LimitError("A memory cannot be empty.")
        if len(text) > MAX_MEMORY_CHARS:
            raise LimitError(f"A memory is limited to {MAX_MEMORY_CHARS} characters; this one has {len(text)}.")
        if memory_type not in MEMORY_TYPES:
            raise CommandError(f"Unknown memory type {memory_type!r}: use {' or '.join(MEMORY_TYPES)}.")
        return text, memory_type, category if category in CATEGORIES else "other"

    def add(
        self,
        content: str,
        *,
        memory_type: str = "semantic",
        category: str = "other",
        created_at: datetime | None = None,
        metadata: dict | None = None,
        source: str = "command",
        event_date: date | None = None,
        dedup: bool = True,
        vector: list[float] | None = None,
    ) -> AddResult:
        """Store one memory now (or at ``created_at``), unless it duplicates one.

        ``vector`` is the text's embedding when the caller already has it."""
        text, memory_type, category = self._validate(content, memory_type, category)
        self._check_model()
        now = self.clock()
        existing = self.catalog.find_exact(text)
        if existing is not None:
            return AddResult(self.touch(existing.id, now), duplicate=True)
        vector = vector or self.embed([text])[0]
        if dedup:
            for record, distance in self.nearest_by_vector(vector, 3):
                if is_near_duplicate(self.embedder.name, text, record.content, distance):
                    return AddResult(self.touch(record.id, now), duplicate=True)
        cap = self.memory_cap
        if cap is not None and self.count() >= cap:
            raise MemoryFullError(
                f"Memory is full ({cap} memories), so this was not saved. Review them with 'memories', "
                "free space with 'forget <id>', or raise the cap with 'memory cap <n>'."
            )
        record = MemoryRecord(
            id=self._new_id(),
            content=text,
            created_at=to_aware(created_at) if created_at else now,
            memory_type=memory_type,
            category=category,
            source=source if source in SOURCES else "command",
            user_id=self.user_id,
            last_seen=now,
            event_date=event_date,
            metadata=dict(metadata or {}),
        )
        self._write_new([record], [vector])
        return AddResult(record)

    def add_many(self, items: Iterable[dict], *, batch_size: int = 256) -> list[MemoryRecord]:
        """Bulk insert without dedup (imports, benchmarks). Each item holds ``add``'s
        keyword arguments plus ``content``."""
        stored: list[MemoryRecord] = []
        batch: list[MemoryRecord] = []
        now = self.clock()
        for item in items:
            text, memory_type, category = self._validate(
                item["content"], item.get("memory_type", "semantic"), item.get("category", "other")
            )
            created = item.get("created_at")
            batch.append(
                MemoryRecord(
                    id=item.get("id") or uuid.uuid4().hex[:8],
                    content=text,
                    created_at=to_aware(created) if created else now,
                    memory_type=memory_type,
                    category=category,
                    source=item.get("source", "import"),
                    user_id=self.user_id,
                    last_seen=now,
                    event_date=item.get("event_date"),
                    metadata=dict(item.get("metadata") or {}),
                )
            )
            if len(batch) >= batch_size:
                stored.extend(self._flush(batch))
                batch = []
        if batch:
            stored.extend(self._flush(batch))
        return stored

    def _flush(self, batch: list[MemoryRecord]) -> list[MemoryRecord]:
        vectors = self.embed([r.content for r in batch])
        self._write_new(batch, vectors)
        return batch

    def _write_new(self, records: list[MemoryRecord], vectors: list[list[float]]) -> None:
        with self._writing() as (db, collection):
            self.catalog.insert(db, records, vectors)
            _upsert(collection, records, vectors)

    def _write_updates(self, records: list[MemoryRecord]) -> None:
        with self._writing(new_vectors=False) as (db, collection):
            for record in records:
                self.catalog.update(db, record)
            collection.update(ids=[r.id for r in records], metadatas=[_chroma_metadata(r) for r in records])

    # -- changing ---------------------------------------------------------------------
    def touch(self, memory_id: str, when: datetime | None = None) -> MemoryRecord:
        record = self.require(memory_id)
        updated = record.evolve(last_seen=when or self.clock())
        self._write_updates([updated])
        return updated

    def mark_followed_up(self, memory_id: str, when: datetime | None = None, *, sync_chroma: bool = True) -> None:
        """Record that the follow-up was asked. With ``sync_chroma=False`` only the
        catalog (which selects follow-ups) is written now; ``push_metadata`` copies
        it to Chroma later, off the response path."""
        record = self.get(memory_id)
        if record is None or record.followed_up_at is not None:
            return
        updated = record.evolve(followed_up_at=when or self.clock())
        if sync_chroma:
            self._write_updates([updated])
            return
        with file_lock(self._catalog_path), self.catalog.transaction() as db:
            self.catalog.update(db, updated)
        self._seen_generation = self.catalog.generation()

    def push_metadata(self, memory_id: str) -> None:
        """Copy a record's catalog metadata to Chroma (the canonical store)."""
        record = self.get(memory_id)
        if record is not None:
            self._write_updates([record])

    def supersede(
        self,
        old_id: str,
        new_content: str | None = None,
        *,
        reason: str = "superseded",
        memory_type: str | None = None,
        category: str | None = None,
        event_date: date | None = None,
        source: str = "extracted",
        note: str | None = None,
        vector: list[float] | None = None,
    ) -> MemoryRecord | None:
        """Mark ``old_id`` no longer current; store ``new_content`` as its successor.

        Nothing is deleted: the old record keeps its text with ``valid_until``,
        ``superseded_by`` and ``status=superseded``. Without ``new_content`` the
        memory is retracted (a correction) and ``None`` is returned.
        """
        old = self.require(old_id)
        if not old.is_current:
            raise CommandError(f"Memory {old_id} is already superseded; see 'history {old_id}'.")
        now = self.clock()
        successor = None
        if new_content is not None:
            text, kind, cat = self._validate(new_content, memory_type or old.memory_type, category or old.category)
            vector = vector or self.embed([text])[0]
            successor = MemoryRecord(
                id=self._new_id(),
                content=text,
                created_at=now,
                memory_type=kind,
                category=cat,
                source=source,
                user_id=self.user_id,
                last_seen=now,
                supersedes=old.id,
                change_reason=reason,
                event_date=event_date if event_date is not None else (old.event_date if reason in ("update", "edit") else None),
                metadata={k: v for k, v in old.metadata.items() if k != "note"},
            )
        retired = old.evolve(
            status=STATUS_SUPERSEDED,
            valid_until=now,
            superseded_by=successor.id if successor else None,
            change_reason=reason,
            metadata={**old.metadata, **({"note": note} if note else {})},
        )
        with self._writing() as (db, collection):
            self.catalog.update(db, retired)
            collection.update(ids=[retired.id], metadatas=[_chroma_metadata(retired)])
            if successor is not None:
                self.catalog.insert(db, [successor], [vector])
                _upsert(collection, [successor], [vector])
        return successor

    def edit(self, memory_id: str, new_content: str) -> MemoryRecord:
        """The learner's own edit: a new version that supersedes the old one."""
        record = self.require(memory_id)
        return self.supersede(record.id, new_content, reason="edit", source="command")

    def delete(self, memory_id: str) -> list[str]:
        """Delete a memory and its earlier versions (the learner's ``forget``)."""
        record = self.require(memory_id)
        chain = [r.id for r in self.history(record.id) if r.created_at <= record.created_at or r.id == record.id]
        ids = list(dict.fromkeys(chain + [record.id]))
        successor = record.superseded_by
        with self._writing(new_vectors=False) as (db, collection):
            self.catalog.delete(db, ids)
            collection.delete(ids=ids)
            if successor:
                nxt = self.catalog.get(successor)
                if nxt is not None and nxt.supersedes in ids:
                    nxt = nxt.evolve(supersedes=None)
                    self.catalog.update(db, nxt)
                    collection.update(ids=[nxt.id], metadatas=[_chroma_metadata(nxt)])
        return ids

    def delete_all(self) -> int:
        """Delete every memory of this learner (``forget all``)."""
        count = self.count(include_superseded=True)
        with self._writing(new_vectors=False) as (db, collection):
            self.catalog.clear(db)
            self.connection.delete_collection(collection_name(self.user_id))
            self._collection = None
        self._coll()
        return count

    def drop(self) -> None:
        """Remove the learner's collection and catalog entirely (``forget user``)."""
        with file_lock(self._catalog_path):
            self.connection.delete_collection(collection_name(self.user_id))
            self.catalog.close()
            for suffix in ("", "-wal", "-shm"):
                Path(str(self._catalog_path) + suffix).unlink(missing_ok=True)
        Path(str(self._catalog_path) + ".lock").unlink(missing_ok=True)

    # -- reading ----------------------------------------------------------------------
    @property
    def related_distance(self) -> float:
        return RELATED_DISTANCE.get(self.embedder.name, DEFAULT_RELATED_DISTANCE)

    def get(self, memory_id: str) -> MemoryRecord | None:
        return self.catalog.get(memory_id)

    def require(self, memory_id: str) -> MemoryRecord:
        """Find a memory by id or unique id prefix (at least 4 characters)."""
        key = (memory_id or "").strip().lower()
        record = self.catalog.get(key)
        if record is not None:
            return record
        if len(key) >= 4 and re.fullmatch(r"[0-9a-z_-]+", key):
            matches = self.catalog.ids_with_prefix(key)
            if len(matches) == 1:
                return self.catalog.get(matches[0])
            if len(matches) > 1:
                raise CommandError(f"Memory id '{key}' is ambiguous ({', '.join(matches)}); type more of it.")
        raise CommandError(f"No memory with id '{memory_id[:40]}'. List them with 'memories'.")

    def list(self, **filters) -> list[MemoryRecord]:
        self._sync_with_other_processes()
        return self.catalog.list(**filters)

    def count(self, *, include_superseded: bool = False) -> int:
        self._sync_with_other_processes()
        return self.catalog.count(current_only=not include_superseded)

    def history(self, memory_id: str) -> list[MemoryRecord]:
        """The version chain through ``memory_id``, oldest first."""
        record = self.require(memory_id)
        links = self.catalog.chain_links()
        start = record.id
        seen = {start}
        while links.get(start, (None, None))[0] and links[start][0] not in seen and links[start][0] in links:
            start = links[start][0]
            seen.add(start)
        chain = [start]
        while True:
            nxt = links.get(chain[-1], (None, None))[1]
            if not nxt or nxt in chain or nxt not in links:
                break
            chain.append(nxt)
        records = self.catalog.get_many(chain)
        return [records[i] for i in chain if i in records]

    def nearest(self, content: str, n: int = 5) -> list[tuple[MemoryRecord, float]]:
        return self.nearest_by_vector(self.embed([content])[0], n)

    def nearest_by_vector(self, vector: list[float], n: int) -> list[tuple[MemoryRecord, float]]:
        """Current memories closest to ``vector``: ``[(record, cosine distance)]``."""
        hits = self.dense_candidates(vector, n)
        records = self.catalog.get_many([memory_id for memory_id, _ in hits])
        return [(records[i], d) for i, d in hits if i in records and records[i].is_current][:n]

    def dense_candidates(self, vector: list[float], n: int) -> list[tuple[str, float]]:
        """``[(id, cosine distance)]`` from Chroma, nearest first (ids only, no payload)."""
        self._check_model()
        self._sync_with_other_processes()
        try:
            result = self._coll().query(query_embeddings=[vector], n_results=n, include=["distances"])
        except Exception as error:
            if self.connection.url is not None or "hnsw" not in str(error).lower():
                raise
            # An embedded store read while another process was flushing its vector
            # index to disk ("Error creating hnsw segment reader"). Writers hold the
            # catalog lock for the whole write, so one retry under it, on a freshly
            # opened client, reads a finished index.
            with file_lock(self._catalog_path):
                self.connection.refresh()
                result = self._coll().query(query_embeddings=[vector], n_results=n, include=["distances"])
        return list(zip(result["ids"][0], result["distances"][0]))

    def search(self, query: str, n_results: int = 5, min_score: float | None = None) -> list[MemorySearchResult]:
        """Hybrid, time-aware search (``retrieval.py``): results with ``score`` in [0, 1].

        ``min_score=None`` applies ``RETRIEVAL_MIN_SCORE``; pass ``0`` to rank only.
        """
        from retrieval import retrieve_relevant_memories

        results, _ = retrieve_relevant_memories(self, query, n_results=n_results, min_score=min_score)
        return results

    # -- re-embedding, export and import ------------------------------------------------
    def reindex(self) -> int:
        """Re-embed every memory with the configured model (after a model change)."""
        records = self.catalog.list(include_superseded=True, newest_first=False)
        vectors: list[list[float]] = []
        for start in range(0, len(records), 256):
            vectors.extend(self.embedder.embed([r.content for r in records[start : start + 256]]).vectors)
        with file_lock(self._catalog_path):
            name = collection_name(self.user_id)
            self.connection.delete_collection(name)
            self._collection = None
            collection = self.connection.collection(name, metadata={"embedding_model": self.embedder.name, "memora_user": self.user_id})
            _upsert(collection, records, vectors)
            self._collection = collection
            self._collection_epoch = self.connection.epoch
        self.mismatch = None
        with file_lock(self._catalog_path), self.catalog.transaction() as db:
            self.catalog.clear(db)
            self.catalog.insert(db, records, vectors)
            self._stamp_revision(db, self._coll())
        self._seen_generation = self.catalog.generation()
        return len(records)

    def all_records(self) -> list[MemoryRecord]:
        return self.catalog.list(include_superseded=True, newest_first=False)

    def restore(self, records: Sequence[MemoryRecord]) -> int:
        """Upsert exported records by id (so importing twice adds nothing twice).

        Everything is embedded first; if that fails nothing is written.
        """
        self._check_model()
        records = [r.evolve(user_id=self.user_id) for r in records]
        vectors: list[list[float]] = []
        for start in range(0, len(records), 256):
            vectors.extend(self.embed([r.content for r in records[start : start + 256]]))
        with self._writing() as (db, collection):
            self.catalog.insert(db, records, vectors)
            _upsert(collection, records, vectors)
        return len(records)
