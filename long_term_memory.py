"""Long-term memory: a learner's past records, found by hybrid search.

Each learner has a SQLite catalog (``catalog.py``: text, words, dates, history)
and a vector index beside it (``index.VectorIndex``: by default the learner's
Chroma collection, with all of Chroma's ways in ``chroma_backend.py``), written
together in one write section under the catalog's file lock. Every read and
write is scoped to the store's ``user_id``. What the store promises:

* **No duplicates, and no contradiction merged.** An exact (normalised)
  repeat, or a text that says the same thing in words (``pairs.is_near_duplicate``),
  is not stored again; the existing memory's ``last_seen`` is refreshed instead.
* **Nothing true is deleted by a model.** A memory that is no longer true is
  *superseded*: it gets ``status=superseded``, ``valid_until`` and a
  ``superseded_by`` link, and stays visible in ``memories --all`` and
  ``history``. Only the learner's own ``forget`` deletes, leaving no copy in
  the files (``erase_deleted``).
* **No silent loss at the cap.** At ``memory_cap`` current memories ``add``
  raises ``MemoryFullError``; nothing old is dropped to make room.
* **One vector space.** The index records its embedding model; a store set to
  another model has ``mismatch`` and refuses new vectors until the index's own
  model is used again (``use_embedder``) or ``reindex`` re-embeds everything.
* **A vanished index loses nothing.** When the vectors are gone while the
  catalog lists memories (Chroma's file deleted or replaced, say),
  ``vectors_missing`` says why: searching and new vectors are refused with one
  line naming ``reindex``, which rebuilds them from the catalog, history included.
"""

from __future__ import annotations

import builtins
import sqlite3
from array import array
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path
from typing import Any

from memora.core.errors import (
    CommandError,
    EmbeddingModelMismatch,
    EmbeddingUnavailable,
    MemoraError,
    MemoryFullError,
    StoreError,
    error_line,
)
from memora.core.records import (
    CATEGORIES,
    MEMORY_TYPES,
    SOURCES,
    STATUS_CURRENT,
    STATUS_SUPERSEDED,
    MemoryRecord,
    MemorySearchResult,
    clean_memory_text,
)
from memora.core.storage import ensure_private_dir, file_lock
from memora.core.text_utils import counted
from memora.core.timeutil import Clock, system_clock, to_aware
from memora.model.embeddings import Embedder, EmbeddingResult, as_embedder
from memora.store.catalog import FORGETTING, LexicalSearch, MemoryCatalog, Outline, catalog_path
from memora.store.chroma_backend import ChromaConnection, ChromaVectors, check_local_store
from memora.store.deletions import DeletionLog
from memora.store.index import AddResult, Vector, VectorIndex, vectors_missing
from memora.store.lexical import terms
from memora.store.pairs import find_conflicts, is_near_duplicate
from memora.store.retrieval import RETRIEVAL_MIN_SCORE as RETRIEVAL_MIN_SCORE  # the threshold, with the store
from memora.store.retrieval import retrieve_relevant_memories

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
# A new memory is checked for conflicts against this many neighbours by meaning and
# as many by words: a contradiction shares a subject, so it is among the nearest.
CONFLICT_NEIGHBOURS = 10


@dataclass(frozen=True)
class RevertResult:
    """What ``revert`` did: memories taken back, memories current again, and what it left alone."""

    removed: tuple[MemoryRecord, ...] = ()
    restored: tuple[MemoryRecord, ...] = ()
    skipped: tuple[tuple[str, str], ...] = ()  # (memory id, why it was left as it is)


def _latest_first(steps: Sequence[tuple[str | None, str | None]]) -> list[tuple[str | None, str | None]]:
    """Change steps in the order to undo them: a step whose new memory a later
    step replaced comes after that later step."""
    remaining = list(dict.fromkeys(steps))
    ordered = []
    while remaining:
        replaced_later = {old for old, _ in remaining}
        step = next((s for s in reversed(remaining) if s[1] is None or s[1] not in replaced_later), remaining[-1])
        remaining.remove(step)
        ordered.append(step)
    return ordered


class PartialWriteError(StoreError):
    """A failed write could not be undone in Chroma (the catalog did roll back)."""


def _plan_revert(
    steps: Sequence[tuple[str | None, str | None]], lookup: Callable[[str], MemoryRecord | None], moment: str
) -> tuple[dict[str, MemoryRecord | None], list[tuple[str, str]]]:
    """What ``LongTermMemoryStore.revert`` writes: each memory it changes, as it
    will be (None: deleted), and the steps it skips, with why."""
    view: dict[str, MemoryRecord | None] = {}  # this revert's changes, over the catalog

    def current(memory_id: str | None) -> MemoryRecord | None:
        if memory_id is None:
            return None
        return view[memory_id] if memory_id in view else lookup(memory_id)

    skipped: list[tuple[str, str]] = []
    for old_id, new_id in _latest_first(steps):
        old, new = current(old_id), current(new_id)
        if (new_id and new is None) or (old_id and old is None):
            skipped.append((new_id or old_id or "", "deleted since"))
            continue
        if (new is not None and not new.is_current) or (
            old is not None and (old.is_current or old.superseded_by != new_id)
        ):
            skipped.append((new_id or old_id or "", "changed again since"))
            continue
        if new_id:
            view[new_id] = None
        if old is not None:
            before = current(old.supersedes)
            metadata = {k: v for k, v in old.metadata.items() if k != "note"}
            metadata["undone"] = moment + (f", took back {new_id}" if new_id else "")
            view[old.id] = old.evolve(
                status=STATUS_CURRENT,
                valid_until=None,
                superseded_by=None,
                # its own reason for existing: the one its predecessor was retired with
                change_reason=before.change_reason if before is not None else None,
                metadata=metadata,
            )
    return view, skipped


class LongTermMemoryStore:
    """One learner's long-term memories (see the module docstring)."""

    def __init__(
        self,
        path: Path | str,
        *,
        embedding_function=None,
        user_id: str = "default",
        connection: ChromaConnection | None = None,
        vectors: VectorIndex | None = None,
        memory_cap: int | None = None,
        clock: Clock = system_clock,
        recency_half_life_days: float | None = None,
        deletions: DeletionLog | None = None,
        on_embedding_tokens: Callable[[int], None] = lambda n: None,
    ):
        """``vectors``: the index of another kind (``InMemoryVectors``); by default the
        learner's Chroma collection, through ``connection`` (else embedded in ``path``)."""
        self.path = Path(path)
        # The tokens of the store's own embeddings (adding, editing, reindexing, importing),
        # counted by the caller on the thread that spent them; ``embed`` returns its own.
        self.on_embedding_tokens = on_embedding_tokens
        # What was forgotten, so a reading that started before cannot bring it back (deletions.py).
        self.deletions = deletions or DeletionLog(self.path)
        self.user_id = user_id
        self.use_embedder(as_embedder(embedding_function))
        self.clock = clock
        self.default_memory_cap = memory_cap
        self.recency_half_life_days = recency_half_life_days
        self.erased = True  # False after a forget whose wiping must wait (see erase_deleted)
        self.unwiped: str | None = None  # then, the disk's problem when it is why
        self.connection = connection
        if vectors is None:
            self.connection = chroma = connection or ChromaConnection(self.path)
            if chroma.url is None:  # a damaged file is moved aside only when a catalog can rebuild it
                check_local_store(self.path, rebuildable=catalog_path(self.path, user_id).exists())
        ensure_private_dir(self.path)
        self.catalog = MemoryCatalog(catalog_path(self.path, user_id), user_id)
        self.vectors: VectorIndex = vectors or ChromaVectors(chroma, self.catalog, model=self.embedder.name)
        if self.catalog.get_meta(FORGETTING) is not None:  # a 'forget all' or 'forget user' a crash cut short
            self._forget(None)
        elif (self.path / "erase-pending").exists():
            self.erase_deleted(full=True)
        # The memories stored without a vector (the local model was not here) get theirs now
        # that it may be; still offline, or another failure: they wait for the next start or 'reindex'.
        waiting = [] if self.vectors.missing or self.mismatch else self.catalog.without_vectors()
        try:
            embedded = self._vectors([r.content for r in waiting])
        except MemoraError:
            embedded = []
        if embedded:
            with self._writing() as db:
                current = self.catalog.get_many([r.id for r in waiting])  # as they are now, under the lock
                pairs = [(current[r.id], v) for r, v in zip(waiting, embedded) if r.id in current]
                self.catalog.insert(db, [r for r, _ in pairs], [v for _, v in pairs])
                self.vectors.upsert([r for r, _ in pairs], [v for _, v in pairs])

    # -- the vectors' state ---------------------------------------------------------------
    @property
    def vectors_missing(self) -> str | None:
        """Why the vectors are gone while the catalog lists memories (until ``reindex``), or None."""
        return self.vectors.missing

    @property
    def mismatch(self) -> str | None:
        """The other embedding model the vectors were made with (until ``reindex``), or None."""
        model = self.vectors.model
        return model if model not in (None, self.embedder.name) else None

    def check_vectors(self) -> str | None:
        """The one line saying the vectors are missing, looking at them again now, or
        None (for ``status`` and ``memories``, which read only the catalog otherwise)."""
        self.vectors.check(deep=True)
        missing = self.vectors.missing
        return str(vectors_missing(missing, self.catalog.count())) if missing else None

    def use_embedder(self, embedder: Embedder) -> None:
        """Embed with ``embedder`` from now on: a model other than the vectors' own
        sets ``mismatch``, until ``reindex`` re-embeds everything with it."""
        self.embedder = embedder
        # Neighbours closer than this are shown to the model when it decides about a new fact.
        self.related_distance = RELATED_DISTANCE.get(embedder.name, DEFAULT_RELATED_DISTANCE)

    def _check_model(self) -> None:
        if self.vectors.missing is not None:
            raise vectors_missing(self.vectors.missing, self.catalog.count())
        if self.mismatch:
            every = counted(self.catalog.count(current_only=False), "memory", "memories")
            raise EmbeddingModelMismatch(
                f"The memory store was built with {self.mismatch}, but Memora is set to {self.embedder.name}. "
                f"Type 'reindex' to re-embed all {every} with it."
            )

    @contextmanager
    def _writing(
        self, *, new_vectors: bool = True, guards: Sequence[tuple[str, Sequence[str]]] = (("memory", ()),)
    ) -> Iterator[sqlite3.Connection]:
        """Cross-process write section: file lock, a fresh look, one catalog transaction.
        Writes that add vectors need the index's own model; deleting and changing metadata
        do not (a learner can always forget, even after switching models, before ``reindex``)."""
        with file_lock(self.catalog.path):
            # A reading's write that a deletion since covers is dropped; the check and the
            # deletions are under this same lock, so neither can slip between the other's steps.
            for kind, keys in guards:
                self.deletions.guard(kind, keys)
            self.vectors.check(deep=True)
            if new_vectors:
                self._check_model()  # after the look: another process may have re-embedded the store
                self.vectors.model = self.embedder.name  # an index without vectors takes the store's model
            with self.catalog.transaction() as db:
                yield db
                self.vectors.commit(db)

    # -- embedding --------------------------------------------------------------------
    def embed(self, texts: Sequence[str]) -> EmbeddingResult:
        """The vectors of ``texts`` and the tokens embedding them cost, together: the
        caller counts them on its own thread (nothing is left on the store to race for)."""
        return self.embedder.embed(list(texts))

    def _vectors(self, texts: Sequence[str], *, later: bool = False) -> list:
        """The store's own embedding, in batches, its tokens counted. ``later``: None for
        each while the local model is not on this machine (offline): the memory is stored in
        the catalog and gets its vector at a start or ``reindex`` with the model. Any other
        embedding failure stands (a server that failed may answer next time)."""
        vectors: list = []
        try:
            for start in range(0, len(texts), 256):
                embedded = self.embed(texts[start : start + 256])
                self.on_embedding_tokens(embedded.tokens)
                # float32, as the index keeps them: a reindex or import of 50,000 holds 77 MB, not 600 MB of floats
                vectors.extend(array("f", v) for v in embedded.vectors)
        except EmbeddingUnavailable:
            if not later:
                raise
            return [None] * len(texts)
        return vectors

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

    def validate(self, content: str, memory_type: str, category: str) -> tuple[str, str, str]:
        """The text as it would be stored, its type and category; raises on what cannot be stored."""
        text = clean_memory_text(content)
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
        vector: builtins.list[float] | None = None,
    ) -> AddResult:
        """Store one memory now (or at ``created_at``), unless it duplicates one.

        ``vector`` is the text's embedding when the caller already has it."""
        text, memory_type, category = self.validate(content, memory_type, category)
        self._check_model()
        now = self.clock()
        existing = self.catalog.find_exact(text)
        if existing is not None:
            return AddResult(self.touch(existing.id, now), duplicate=True)
        vector = vector or self._vectors([text], later=True)[0]
        hits = self.dense_candidates(vector, CONFLICT_NEIGHBOURS) if vector is not None else []
        if dedup:
            records = self.catalog.get_many([memory_id for memory_id, _ in hits[:3]])
            for memory_id, distance in hits[:3]:
                found = records.get(memory_id)
                if found and found.is_current and is_near_duplicate(self.embedder.name, text, found.content, distance):
                    return AddResult(self.touch(found.id, now), duplicate=True)
        cap = self.memory_cap
        if cap is not None and self.count() >= cap:
            raise MemoryFullError(
                f"Memory is full ({cap} memories), so this was not saved. Review them with 'memories', "
                "free space with 'forget <id>', or raise the cap with 'memory cap <n>'."
            )
        record = MemoryRecord(
            id=self.catalog.new_id(),
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
        keys = self.deletions.text_keys(record.content)
        conflicts = self._conflicts_of(record, hits)
        with self._writing(guards=(("text", keys),)) as db:
            self.catalog.insert(db, [record], [vector])
            self.catalog.add_conflicts(db, conflicts)
            self.vectors.upsert([record], [vector])
        return AddResult(record)

    def _conflicts_of(
        self, record: MemoryRecord, hits: Sequence[tuple[str, float]]
    ) -> builtins.list[tuple[str, str, str]]:
        """The pairs a new memory makes with its nearest current neighbours (by meaning
        and by words) that may contradict: found once, when it is written, and kept in
        the catalog, so nothing compares the whole store on a command's path."""
        ids = [i for i, _ in hits] + [
            i for i, _ in self.catalog.lexical_search(terms(record.content), CONFLICT_NEIGHBOURS)
        ]
        near = [r for r in self.catalog.get_many(ids).values() if r.is_current and r.id != record.supersedes]
        found = find_conflicts([*near, record], of=record.id)  # on a tie in time, the one stored first is older
        return [(c.first.id, c.second.id, c.reason) for c in found]

    def _rewrite(self, records: builtins.list[MemoryRecord], *, vectors: bool = True) -> None:
        """Write changed records (their vectors stay); ``vectors=False``: the catalog only."""
        with self._writing(new_vectors=False) as db:
            for record in records:
                self.catalog.update(db, record)
            if vectors:
                self.vectors.update(records)

    # -- changing ---------------------------------------------------------------------
    def touch(self, memory_id: str, when: datetime | None = None) -> MemoryRecord:
        record = self.catalog.require(memory_id)
        updated = record.evolve(last_seen=when or self.clock())
        self._rewrite([updated])
        return updated

    def mark_followed_up(self, memory_id: str, when: datetime | None = None, *, sync_chroma: bool = True) -> None:
        """Record that the follow-up was asked (a later call keeps the first time). With
        ``sync_chroma=False`` only the catalog, which selects follow-ups, is written now;
        a later call without it writes the vector index too, off the response path."""
        record = self.get(memory_id)
        if record is not None:
            record = record.evolve(followed_up_at=record.followed_up_at or when or self.clock())
            self._rewrite([record], vectors=sync_chroma)

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
        vector: builtins.list[float] | None = None,
        said_at: datetime | None = None,
        said: str | None = None,
    ) -> MemoryRecord | None:
        """Mark ``old_id`` no longer current; store ``new_content`` as its successor.

        Nothing is deleted: the old record keeps its text with ``valid_until``,
        ``superseded_by`` and ``status=superseded``. Without ``new_content`` the
        memory is retracted (a correction) and ``None`` is returned. ``said_at``:
        when the successor was said (a reading's message), else now; it is what a
        later, older fact is compared with ("newer wins"); ``said``: the message itself.
        """
        old = self.catalog.require(old_id)
        if not old.is_current:
            raise CommandError(f"Memory {old_id} is already superseded; see 'history {old_id}'.")
        now = self.clock()
        successor = None
        if new_content is not None:
            text, kind, cat = self.validate(new_content, memory_type or old.memory_type, category or old.category)
            vector = vector or self._vectors([text], later=True)[0]
            successor = MemoryRecord(
                id=self.catalog.new_id(),
                content=text,
                created_at=to_aware(said_at) if said_at is not None else now,
                memory_type=kind,
                category=cat,
                source=source,
                user_id=self.user_id,
                last_seen=now,
                supersedes=old.id,
                change_reason=reason,
                event_date=event_date
                if event_date is not None
                else (old.event_date if reason in ("update", "edit") else None),
                metadata={k: v for k, v in old.metadata.items() if k != "note"} | ({"said": said} if said else {}),
            )
        retired = old.evolve(
            status=STATUS_SUPERSEDED,
            valid_until=now,
            superseded_by=successor.id if successor else None,
            change_reason=reason,
            metadata={**old.metadata, **({"note": note} if note else {})},
        )
        guards = [("memory", [old.id])]
        conflicts = []
        if successor is not None:
            hits = self.dense_candidates(vector, CONFLICT_NEIGHBOURS) if vector is not None else []
            conflicts = self._conflicts_of(successor, hits)
            guards.append(("text", self.deletions.text_keys(successor.content)))
        with self._writing(guards=guards) as db:
            self.catalog.update(db, retired)
            self.vectors.update([retired])
            if successor is not None:
                self.catalog.insert(db, [successor], [vector])
                self.catalog.add_conflicts(db, conflicts)
                self.vectors.upsert([successor], [vector])
        return successor

    def revert(self, steps: Sequence[tuple[str | None, str | None]], *, when: datetime | None = None) -> RevertResult:
        """Take back one change set (the learner's ``undo``), in one write.

        ``steps`` are the change's ``(old id, new id)`` pairs: ``(None, new)`` an
        added memory, ``(old, new)`` a supersede, update or edit, ``(old, None)``
        a retraction. Each is undone, latest in a chain first: the new memory is
        deleted and the old one is current again exactly as before (no
        ``valid_until`` or ``superseded_by``, its own ``change_reason``), with an
        ``undone`` note that ``history`` shows. A memory that changed again since
        (superseded by a later change, or forgotten) is left as it is and
        reported in ``skipped``: undo never overwrites a newer decision.
        """
        moment = to_aware(when or self.clock()).strftime("%Y-%m-%d %H:%M")
        with self._writing(new_vectors=False) as db:
            view, skipped = _plan_revert(steps, self.catalog.get, moment)
            stored = self.catalog.get_many(list(view))
            doomed = [i for i, record in view.items() if record is None and i in stored]
            revived = [record for record in view.values() if record is not None]
            if doomed:
                self.erase_deleted(later=True)  # a memory taken back is deleted as 'forget' deletes: no bytes left
                self.deletions.forget(self.user_id, [stored[i] for i in doomed])
                self.catalog.delete(db, doomed)
                self.vectors.delete(doomed)
            for record in revived:
                self.catalog.update(db, record)
            self.vectors.update(revived)
        return RevertResult(tuple(stored[i] for i in doomed), tuple(revived), tuple(skipped))

    def edit(self, memory_id: str, new_content: str) -> MemoryRecord:
        """The learner's own edit: a new version that supersedes the old one."""
        record = self.catalog.require(memory_id)
        successor = self.supersede(record.id, new_content, reason="edit", source="command")
        assert successor is not None  # a successor to new content
        return successor

    # -- deleting, leaving no copy ---------------------------------------------------------
    def delete(self, memory_id: str) -> builtins.list[str]:
        """Delete a memory and its earlier versions (the learner's ``forget``)."""
        record = self.catalog.require(memory_id)
        chain = [r.id for r in self.history(record.id) if r.created_at <= record.created_at or r.id == record.id]
        ids = list(dict.fromkeys(chain + [record.id]))
        successor = record.superseded_by
        self.erase_deleted(later=True)
        with self._writing(new_vectors=False) as db:
            self.deletions.forget(self.user_id, self.catalog.get_many(ids).values())
            self.catalog.delete(db, ids)
            self.vectors.delete(ids)
            nxt = self.catalog.get(successor) if successor else None
            if nxt is not None and nxt.supersedes in ids:
                nxt = nxt.evolve(supersedes=None)
                self.catalog.update(db, nxt)
                self.vectors.update([nxt])
        return ids

    def delete_all(self) -> int:
        """Delete every memory of this learner (``forget all``)."""
        count = self.count(include_superseded=True)
        self._forget("all")
        return count

    def drop(self) -> None:
        """Remove the learner's memories, vectors and catalog entirely (``forget user``)."""
        self._forget("user")  # and every process of this learner stops writing
        with file_lock(self.catalog.path):
            self.vectors.delete()  # again: the write's stamp made an empty one for other machines to follow
            self.catalog.close()
            for suffix in ("", "-wal", "-shm", ".restoring.json"):  # an import's journal too
                Path(str(self.catalog.path) + suffix).unlink(missing_ok=True)
        Path(str(self.catalog.path) + ".lock").unlink(missing_ok=True)

    def _forget(self, kind: str | None) -> None:
        """Delete every memory: the deletion record first (``catalog.FORGETTING``), in a
        commit of its own, then everything and the record in one write; ``kind`` None
        finishes one that a crash cut short."""
        if kind is not None:
            with self._writing(new_vectors=False) as db:
                db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (FORGETTING, kind))
        started = False
        try:
            with self._writing(new_vectors=False) as db:
                if kind is not None:
                    self.deletions.record(self.user_id, kind)
                self.catalog.clear(db)
                db.execute("DELETE FROM meta WHERE key = ?", (FORGETTING,))
                started = True
                self.vectors.delete()
        except BaseException:
            if not started and kind is not None:  # nothing was deleted: nothing for the next start to finish
                self.catalog.set_meta(FORGETTING, None)
            raise
        self.erase_deleted(full=True)

    def erase_deleted(self, *, full: bool = False, later: bool = False) -> bool:
        """Wipe every copy of deleted memories from the files (``forget`` is real): a delete
        only unlinks rows, the text stays in free pages, in the catalog's WAL and FTS index,
        and in Chroma's log (``MemoryCatalog.compact``, ``VectorIndex.erase``). When another
        process holds a file open, ``erased`` is False and a marker makes the next start
        finish it. A Chroma server keeps its own files, which no client can wipe (README).
        ``later``: only the marker, before a delete: the wipe rewrites whole files, so it waits
        for the session's end (``Memora.close``), or the next start after a crash."""
        marker = self.path / "erase-pending"
        if later:
            marker.touch(mode=0o600, exist_ok=True)
            return False
        disk = [self.catalog] + ([self.connection] if self.connection is not None else [])
        for holder in disk:
            holder.unwiped = None
        done = self.catalog.compact(full=full)
        done = self.vectors.erase() and done
        self.erased, self.unwiped = done, next((h.unwiped for h in disk if h.unwiped), None)
        if done:
            marker.unlink(missing_ok=True)
        else:
            marker.touch(mode=0o600, exist_ok=True)
        return done

    # -- reading ----------------------------------------------------------------------
    def get(self, memory_id: str) -> MemoryRecord | None:
        return self.catalog.get(memory_id)

    def list(self, **filters) -> builtins.list[MemoryRecord]:
        """The memories (``MemoryCatalog.list``'s filters), after seeing what others wrote."""
        self.vectors.check()
        return self.catalog.list(**filters)

    def conflicts(self) -> builtins.list[tuple[str, str, str]]:
        """The stored conflicting pairs whose sides are both current (``_conflicts_of``)."""
        return self.catalog.conflicts()

    def count(self, *, include_superseded: bool = False, category: str | None = None, without_vectors=False) -> int:
        """How many memories; ``without_vectors``: how many wait for a vector (not searchable yet)."""
        self.vectors.check()
        return self.catalog.count(
            current_only=not include_superseded, category=category, without_vectors=without_vectors
        )

    def outline(self) -> builtins.list[Outline]:
        """Every version, newest first, without making records (``MemoryCatalog.outline``)."""
        return self.catalog.outline()

    def history(self, memory_id: str) -> builtins.list[MemoryRecord]:
        """The version chain through ``memory_id``, oldest first, read link by link by id."""
        chain = [self.catalog.require(memory_id)]
        seen = {chain[0].id}
        while (earlier := chain[0].supersedes) and earlier not in seen and (record := self.catalog.get(earlier)):
            chain.insert(0, record)
            seen.add(earlier)
        while (later := chain[-1].superseded_by) and later not in seen and (record := self.catalog.get(later)):
            chain.append(record)
            seen.add(later)
        return chain

    def search(
        self, query: str, n_results: int = 5, min_score: float | None = None
    ) -> builtins.list[MemorySearchResult]:
        """Hybrid, time-aware search (``retrieval.py``): results with ``score`` in [0, 1].

        ``min_score=None`` applies ``RETRIEVAL_MIN_SCORE``; pass ``0`` to rank only.
        """
        results, _ = retrieve_relevant_memories(self, query, n_results=n_results, min_score=min_score)
        return results

    # -- what retrieval and extraction read (the MemoryIndex seam, memora.store.index) --
    # Straight from the catalog, without the look ``list`` takes: they run within a
    # turn or a reading that has already taken one.
    def dense_candidates(self, vector: builtins.list[float], n: int) -> builtins.list[tuple[str, float]]:
        """``[(id, cosine distance)]`` from the vector index, nearest first (ids only, no payload)."""
        self.vectors.check()
        self._check_model()  # after the look: a server's collection found deleted just now
        return self.vectors.nearest(vector, n)

    def lexical_candidates(self, terms: builtins.list[str], limit: int, **windows: Any) -> LexicalSearch:
        """The lexical side of a search (``MemoryCatalog.search``): score it with the dense side's ids."""
        return self.catalog.search(terms, limit, **windows)

    def get_many(self, ids: Iterable[str]) -> dict[str, MemoryRecord]:
        return self.catalog.get_many(ids)

    def find_exact(self, content: str, *, status: str = STATUS_CURRENT) -> MemoryRecord | None:
        return self.catalog.find_exact(content, status=status)

    def listed(self, **filters) -> builtins.list[MemoryRecord]:
        return self.catalog.list(**filters)

    def follow_up_candidates(self, now: datetime, proactive_days: int) -> builtins.list[MemoryRecord]:
        return self.catalog.follow_up_candidates(now, proactive_days)

    # -- re-embedding and restoring -------------------------------------------------------
    def reindex(self) -> int:
        """Re-embed every memory with the configured model (after a model change), or
        rebuild vanished vectors from the catalog's text, every version kept.

        A rebuild replaces whatever the index held (an older copy may hold memories
        forgotten since: the catalog is the source, so they stay forgotten) and
        wipes what the old files kept of them."""
        rebuilding = self.vectors.missing is not None
        records = self.catalog.list(include_superseded=True, newest_first=False)
        vectors = self._vectors([r.content for r in records])
        with self._writing(new_vectors=False) as db:
            self.vectors.delete()
            self.vectors.model = self.embedder.name
            self.vectors.upsert(records, vectors)
            self.catalog.clear(db)
            self.catalog.insert(db, records, vectors)
        if rebuilding:
            self.erase_deleted(full=True)
        return len(records)

    def restore(
        self,
        records: Sequence[MemoryRecord],
        *,
        vectors: Sequence[Vector | None] | None = None,
        remove: Sequence[str] = (),
        journal: Callable[[dict[str, tuple[MemoryRecord, builtins.list[float]]]], None] | None = None,
        replace: bool = False,
    ) -> int:
        """Write records by id as they are and remove the ``remove`` ids, all or nothing
        (an id already stored is refused, unless ``replace``: an undo putting memories
        back): everything is embedded first (unless ``vectors``, the index's own, are put
        back), and a write that fails midway (the second of two Chroma batches) is undone.
        ``journal`` gets what the write overwrites (``{id: (record, vector)}``) under the
        lock before the first write (``import_undo``)."""
        # The same cleaning and limits as typed text, whoever built the records.
        records = [r.evolve(user_id=self.user_id, content=clean_memory_text(r.content)) for r in records]
        embedding = vectors is None
        if vectors is None:
            self._check_model()
            vectors = self._vectors([r.content for r in records], later=True)
        ids = [r.id for r in records]
        with self._writing(new_vectors=embedding) as db:
            before = self.vectors.stored(ids)
            taken = {i for i, n in Counter(ids).items() if n > 1}
            if not replace:
                taken |= set(self.catalog.get_many(ids)) - set(remove)
            if taken:  # a memory is never written over another with its id
                raise StoreError(f"Memory id {min(taken)} is already in use, so nothing was written.")
            if journal is not None:
                journal(before)
            try:
                self.catalog.delete(db, remove)
                self.vectors.delete(list(remove))
                self.catalog.insert(db, records, vectors)
                self.vectors.upsert(records, vectors)
            except BaseException as error:
                try:  # the catalog rolls back; the index has no transactions
                    self.vectors.delete([i for i in ids if i not in before])
                    self.vectors.upsert([r for r, _ in before.values()], [v for _, v in before.values()])
                except Exception as failure:
                    raise PartialWriteError(
                        f"A write to the memory store failed ({error_line(error, 120)}) and could not be undone "
                        f"({error_line(failure, 120)}); restart Memora to put the store back in order."
                    ) from error
                raise
        return len(records)
