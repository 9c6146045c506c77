"""Long-term memory: a learner's past records in Chroma, found by hybrid search.

Each learner has one cosine-space Chroma collection (``memora-<user>-memories``)
and a SQLite catalog beside it (``catalog.py``). Every read and write is scoped
to the store's ``user_id``: the collection is the learner's own and every record
also carries ``user_id`` in its metadata, which reads check.

What the store promises:

* **No duplicates, and no contradiction merged.** An exact (normalised)
  repeat, or a text that says the same thing in words (``is_near_duplicate``),
  is not stored again; the existing memory's ``last_seen`` is refreshed
  instead.
* **Nothing true is deleted by a model.** A memory that is no longer true is
  *superseded*: it gets ``status=superseded``, ``valid_until`` and a
  ``superseded_by`` link, and stays visible in ``memories --all`` and
  ``history``. Only the learner's own ``forget`` deletes.
* **No silent loss at the cap.** At ``memory_cap`` current memories ``add``
  raises ``MemoryFullError``; nothing old is dropped to make room.
* **One vector space.** The collection records its embedding model; opening it
  with another model sets ``mismatch`` and refuses new vectors until the store's
  own model is used again (``use_embedder``) or ``reindex`` re-embeds everything.
* **A vanished store loses nothing.** When the collection is not the one the
  catalog mirrors (``chroma.sqlite3`` deleted, replaced by an empty store,
  another store's file or an older copy, damaged, or the collection deleted)
  while the catalog lists memories, ``vectors_missing`` says why: the catalog
  is kept as it is, searching and new vectors are refused with one line naming
  ``reindex``, and ``reindex`` rebuilds the collection from the catalog's text,
  history included (see ``_lost_cause``).
"""

from __future__ import annotations

import json
import re
import unicodedata
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path

from memora.core.errors import (
    CommandError,
    DamagedStoreError,
    EmbeddingModelMismatch,
    EmbeddingUnavailable,
    MemoraError,
    MemoryFullError,
    StoreError,
    VectorsMissing,
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
    fresh_id,
    from_chroma,
    to_chroma_metadata,
)
from memora.core.storage import atomic_write_text, ensure_private_dir, file_lock, quarantine
from memora.core.text_utils import counted
from memora.core.timeutil import Clock, system_clock, to_aware
from memora.model.embeddings import Embedder, EmbeddingResult, as_embedder
from memora.store.catalog import MemoryCatalog
from memora.store.chroma_backend import ChromaConnection
from memora.store.deletions import DeletionLog
from memora.store.lexical import MINUS_SIGN, MINUS_SIGNS, say_the_same
from memora.store.retrieval import RETRIEVAL_MIN_SCORE as RETRIEVAL_MIN_SCORE  # the threshold, with the store
from memora.store.retrieval import retrieve_relevant_memories

# The duplicate rule (``is_near_duplicate``). A false "duplicate" loses a fact
# forever and keeps a stale one current ("finds grammar easy" merged into by
# "finds grammar hard", 0.050 apart with MiniLM; left-/right-handed 0.018), and
# no embedding distance separates antonyms. So a new fact is merged without
# asking only when it says the same thing *in words*: ``lexical.say_the_same``
# (same meaning-bearing words and inflections after case, punctuation,
# stemming and filler words, in the same order up to moving a block from the
# front to the end). Everything else near an existing memory goes to the
# decision call, which may still answer NOOP. The distance below is an extra
# condition per embedding model, so that a wording the lexical rule accepts but
# the model reads differently is still asked about:
# - local MiniLM: the paraphrases in tests/fixtures/dedup_pairs.json that the
#   word test accepts are at most 0.051 apart (reorderings 0.016-0.051), while
#   "I ..." beside "The learner ..." is 0.2-0.5 apart and is asked about.
#   0.10 admits the former with margin; the word test, not the distance, keeps
#   contradictions apart.
# - OpenAI text-embedding-3-small could not be calibrated here (no API
#   access); 0.08 is deliberately tighter.
# - the hash test embedding (a bag of words): reorderings are 0 apart.
# On top of both, ``_differs_in_specifics`` refuses to merge texts whose
# numbers, weekdays, months, times of day, negations or symbols (C++ / C#)
# differ, which the word comparison alone would miss for symbols.
DUPLICATE_DISTANCE = {
    "local:all-MiniLM-L6-v2": 0.10,
    "openai:text-embedding-3-small": 0.08,
    "hash:v1-384": 0.10,
}
DEFAULT_DUPLICATE_DISTANCE = 0.08

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
    MINUS_SIGN + "|"  # a minus sign: -10 degrees is not 10 degrees
    r"\d+|\b(?:mon|tues|wednes|thurs|fri|satur|sun)day\b|\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\b"
    r"|\b(?:not|never|no|cannot|don't|doesn't|didn't|won't|can't|isn't|aren't|quit|stopped|anymore)\b"
    r"|\b(?:morning|afternoon|evening|night|tonight|today|tomorrow|yesterday|weekend|weekday)s?\b"
    r"|[一二三四五六七八九十百千萬万兩两]|不|沒|没|別|别|週[一二三四五六日天]|星期"
    r"|[^\w\s.,!?;:'\"()\-。，！？；：、]",  # symbols carry meaning: C++ / C#, 50% / $50
    re.IGNORECASE,
)


# Every write stamps the collection and the catalog with the store's id (made
# once, by its first write) and a serial that grows by one per write. Together
# they tell "another machine or process wrote to my store" (same id, a serial at
# least the catalog's: the catalog follows Chroma) from "this is not my store"
# (another id, none, or a smaller serial: a replaced file, an older backup),
# which a revision alone cannot: both are a revision the catalog has not seen.
STORE_KEY = "memora_store"
SERIAL_KEY = "revision_serial"
# The deletion record of a ``forget all`` or ``forget user`` under way (no text):
# set before the collection is deleted, cleared with the catalog in one commit.
# A start that finds it finishes the deletion, so a crash in between can never
# look like a vanished store whose memories should be rebuilt.
FORGETTING = "forgetting"
# Why the vectors went missing, as first found: the next start says the same
# (not "an empty collection", which is what this start's own open left there).
LOST = "vectors_lost"


def _serial(value) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


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


def catalog_path(db_dir: Path, user_id: str) -> Path:
    return Path(db_dir) / f"catalog-{user_id}.sqlite3"


def _specifics(text: str) -> list[str]:
    # NFKC first, as the word comparison does: a full-width "２０" is "20".
    return sorted(_specific_key(m) for m in _SPECIFIC.findall(unicodedata.normalize("NFKC", text)))


def _specific_key(match: str) -> str:
    # "doesn't" and "does not" negate alike, and "-10" typed with U+2212 is "-10";
    # which negation or which number it is still counts.
    if match.lower().endswith(("n't", "cannot")):
        return "not"
    return "-" if match in MINUS_SIGNS else match.lower()


def _differs_in_specifics(a: str, b: str) -> bool:
    return _specifics(a) != _specifics(b)


def is_near_duplicate(embedder_name: str, new: str, old: str, distance: float) -> bool:
    """The dedup rule: the same thing in words, the same specifics, and close in the model's space.

    The word test decides; it reads Chinese as well as English, so no model
    needs to understand Chinese for a Chinese repeat to be merged.
    """
    threshold = DUPLICATE_DISTANCE.get(embedder_name, DEFAULT_DUPLICATE_DISTANCE)
    return distance <= threshold and say_the_same(new, old) and not _differs_in_specifics(new, old)


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


def _resized(error: Exception) -> None:
    """Chroma refuses a vector of another size: the embedding model changed under its name."""
    if "expecting embedding with dimension" in str(error):
        message = f"The embedding model's vectors changed size ({error}); type 'reindex' to re-embed every memory."
        raise EmbeddingModelMismatch(message) from None


def _upsert(collection, records: Sequence[MemoryRecord], vectors: Sequence[Sequence[float] | None]) -> None:
    """Write records with their vectors to Chroma, in batches Chroma accepts. A record
    whose vector is still to come (``None``) is in the catalog only, until it has one."""
    pairs = [(r, v) for r, v in zip(records, vectors) if v is not None]
    records, vectors = [r for r, _ in pairs], [v for _, v in pairs]
    for start in range(0, len(records), 1000):
        chunk = records[start : start + 1000]
        try:
            collection.upsert(
                ids=[r.id for r in chunk],
                embeddings=list(vectors[start : start + 1000]),
                documents=[r.content for r in chunk],
                metadatas=[to_chroma_metadata(r) for r in chunk],
            )
        except Exception as error:
            _resized(error)
            raise


def _chroma_snapshot(collection, ids: Sequence[str]) -> dict[str, tuple]:
    """``{id: (document, metadata, embedding)}`` of the ids Chroma holds now."""
    found: dict[str, tuple] = {}
    for start in range(0, len(ids), 1000):
        page = collection.get(ids=list(ids[start : start + 1000]), include=["documents", "metadatas", "embeddings"])
        for memory_id, document, meta, vector in zip(
            page["ids"], page["documents"], page["metadatas"], page["embeddings"]
        ):
            found[memory_id] = (document, meta, [float(x) for x in vector])
    return found


def _put_back(collection, ids: Sequence[str], before: dict[str, tuple]) -> None:
    """Undo an upsert of ``ids``: delete the new ones, rewrite the overwritten ones."""
    new = [i for i in ids if i not in before]
    for start in range(0, len(new), 1000):
        collection.delete(ids=new[start : start + 1000])
    old = list(before)
    for start in range(0, len(old), 1000):
        chunk = old[start : start + 1000]
        collection.upsert(
            ids=chunk,
            documents=[before[i][0] for i in chunk],
            metadatas=[before[i][1] for i in chunk],
            embeddings=[before[i][2] for i in chunk],
        )


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
            skipped.append((new_id or old_id, "deleted since"))
            continue
        if (new is not None and not new.is_current) or (
            old is not None and (old.is_current or old.superseded_by != new_id)
        ):
            skipped.append((new_id or old_id, "changed again since"))
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
        memory_cap: int | None = None,
        clock: Clock = system_clock,
        recency_half_life_days: float | None = None,
        deletions: DeletionLog | None = None,
        on_embedding_tokens: Callable[[int], None] = lambda n: None,
    ):
        self.path = Path(path)
        # The tokens of the store's own embeddings (adding, editing, reindexing, importing),
        # counted by the caller on the thread that spent them; ``embed`` returns its own.
        self.on_embedding_tokens = on_embedding_tokens
        # What was forgotten, so a reading that started before cannot bring it back (deletions.py).
        self.deletions = deletions or DeletionLog(self.path)
        self.user_id = user_id
        self.embedder: Embedder = as_embedder(embedding_function)
        self.connection = connection or ChromaConnection(self.path)
        self.clock = clock
        self.default_memory_cap = memory_cap
        self.recency_half_life_days = recency_half_life_days
        if self.connection.url is None:
            from memora.store.chroma_backend import check_local_store

            try:
                check_local_store(self.path)
            except DamagedStoreError:
                # A catalog beside it may hold every memory's text (``_examine_store``
                # decides); without one there is nothing to rebuild from: touch nothing.
                if not catalog_path(self.path, user_id).exists():
                    raise
        ensure_private_dir(self.path)
        self._catalog_path = catalog_path(self.path, user_id)
        self.catalog = MemoryCatalog(self._catalog_path, user_id)
        self._collection = None
        self._collection_epoch = -1
        self._undo_steps: list = []
        self._seen_generation = self.catalog.generation()
        self.mismatch: str | None = None
        self.erased = True  # False after a forget whose wiping must wait (see erase_deleted)
        self.unwiped: str | None = None  # then, the disk's problem when it is why
        self.interrupted_import: dict | None = None  # see _finish_interrupted_restore
        self.vectors_missing: str | None = None  # why Chroma lost this learner's vectors (see _lost_cause)
        self._examined_file: tuple[int, int] | None = None  # the chroma.sqlite3 last examined (embedded)
        self._open_collection()
        if self.connection.url is None and self._erase_marker.exists():
            self.erase_deleted(full=True)

    # -- opening and consistency ------------------------------------------------------
    def _open_collection(self) -> None:
        self._finish_interrupted_forget()
        self.vectors_missing = self._examine_store()
        if self.vectors_missing is not None:
            # The catalog is the source until the rebuild: no model check against a
            # collection that is not its own, no sync from it, no import undone into it.
            return
        collection = self._coll()
        stored = (collection.metadata or {}).get("embedding_model")
        if stored is None or (stored != self.embedder.name and collection.count() == 0):
            collection.modify(metadata={**(collection.metadata or {}), "embedding_model": self.embedder.name})
        elif stored != self.embedder.name:
            self.mismatch = stored
        found = self._finish_interrupted_restore()
        self._sync_catalog(force=found)
        if not self.mismatch:
            self.embed_waiting()

    # -- a vanished store ------------------------------------------------------------------
    def _examine_store(self, *, running: bool = False) -> str | None:
        """Open the learner's collection; say why it cannot be the one the catalog
        mirrors (``_lost_cause``), or None.

        A ``chroma.sqlite3`` that is not a sound SQLite database is moved aside
        (kept, as every damaged file is) only when the catalog lists memories to
        rebuild it from; otherwise the error stands and nothing is touched."""
        name = collection_name(self.user_id)
        existed = self.connection.url is not None or self.connection.file_identity() is not None
        moved = None
        try:
            present = self.connection.find_collection(name) is not None
        except StoreError:
            reason = self.connection.damage() if self.catalog.count(current_only=False) else None
            if reason is None:
                raise
            moved = (reason, self.connection.set_aside())
            present = False
        self._collection = None
        collection = self._coll()
        self._examined_file = self.connection.file_identity()
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
        """Why ``collection`` is not the store the catalog mirrors, when the catalog
        lists memories; None when it is (or when there is nothing to lose).

        The rule: a collection that is missing or empty, or that carries another
        store's id, none, or a serial older than the catalog's, is a vanished
        store; the catalog keeps its memories and is never rebuilt from it. Only
        a collection stamped with this store's id and a serial at least the
        catalog's is followed (another process or machine wrote, even a
        ``forget all``), and, for a catalog older than store ids, any non-empty
        one (as before)."""
        metadata = (collection.metadata or {}) if present else {}
        ours, theirs = self.catalog.get_meta("store_id"), metadata.get(STORE_KEY)
        serial, our_serial = _serial(metadata.get(SERIAL_KEY)), _serial(self.catalog.get_meta("chroma_serial"))
        if moved is None and existed and ours and theirs == ours and serial >= our_serial:
            return None  # the usual case, decided without counting anything
        if not self.catalog.count(current_only=False) or self.catalog.get_meta(FORGETTING):
            return None  # nothing to lose, or a forget all under way in another process (or cut short)
        server = self.connection.url is not None
        where = f"the Chroma server at {self.connection.url}" if server else f"chroma.sqlite3 in {self.path}"
        name = collection_name(self.user_id)
        if moved is not None:
            return f"{where} is damaged ({moved[0]}); it was moved aside as {moved[1].name}"
        if not existed:
            return f"{where} was deleted"
        if not present:
            why = "it was deleted" if server else "the file was replaced, or the collection deleted"
            return f"{where} has no collection {name} ({why})"
        if ours and theirs:
            if theirs != ours:
                return f"{where} holds another store's memories"
            return f"{where} is an older copy of your store, from before your latest changes"
        if theirs:
            return None  # a catalog from before store ids beside a collection that has one: follow Chroma
        if collection.count() == 0:
            return f"{where} has an empty collection {name} (the file was replaced, or the collection emptied)"
        return f"{where} holds memories this catalog did not write" if ours else None

    def _notice_lost_store(self, *, deep: bool = False) -> None:
        """Look again at Chroma when it may have vanished under this process: the
        embedded ``chroma.sqlite3`` is not the file last examined (deleted, or
        replaced by another), or, with ``deep``, the collection as stored now is
        gone or not this catalog's (a file overwritten in place, a collection
        deleted). Cheap (a ``stat``) unless ``deep`` (one Chroma call, 0.3 ms)."""
        if self.vectors_missing is not None:
            return
        changed = self.connection.url is None and self.connection.file_identity() != self._examined_file
        if not changed and deep:
            try:
                stored = self.connection.find_collection(collection_name(self.user_id))
                changed = stored is None or self._lost_cause(stored) is not None
            except Exception:  # a file that no longer reads: examined below
                changed = True
        if changed:
            self.connection.refresh()  # the client may still hold the old file open
            self.vectors_missing = self._examine_store(running=True)

    def _vanished_under(self, error: BaseException) -> bool:
        """After a Chroma call failed: was it because the store vanished?"""
        if isinstance(error, MemoraError) or not isinstance(error, Exception):
            return False
        if self.vectors_missing is None:
            try:
                self.connection.refresh()
                self.vectors_missing = self._examine_store(running=True)
            except Exception:
                return False
        return self.vectors_missing is not None

    def missing_vectors_message(self) -> str:
        """The one line for what cannot be done while the vectors are missing."""
        listed = self.catalog.count()
        return (
            f"Your memories' vectors are missing: {self.vectors_missing}. Nothing can be searched or stored "
            f"until you type 'reindex', which rebuilds them from the "
            f"{counted(listed, 'memory', 'memories')} the catalog still lists."
        )

    def check_vectors(self) -> str | None:
        """Why the vectors are missing, looking at Chroma again now, or None (for
        ``status`` and ``memories``, which read only the catalog otherwise)."""
        self._notice_lost_store(deep=True)
        return self.vectors_missing

    def _finish_interrupted_forget(self) -> None:
        """Finish a ``forget all`` or ``forget user`` that a crash cut short: its
        deletion record (``FORGETTING``) says the learner confirmed it. Otherwise
        Chroma, already emptied, beside the full catalog would look like a
        vanished store, and the rebuild would bring back what was deleted."""
        if self.catalog.get_meta(FORGETTING) is None:
            return
        with file_lock(self._catalog_path):
            try:
                self.connection.delete_collection(collection_name(self.user_id))
            except StoreError:
                pass  # a store that cannot be opened is examined next; the catalog's copy goes now
            self._collection = None
            with self.catalog.transaction() as db:
                self.catalog.clear(db)
                db.execute("DELETE FROM meta WHERE key IN (?, ?)", (FORGETTING, LOST))
        self._seen_generation = self.catalog.generation()
        self.erase_deleted(full=True)

    def _remove_damaged_copies(self) -> None:
        """Damaged ``chroma.sqlite3`` files moved aside hold memories' text that no
        wipe can reach inside them; every memory they could hold is in the catalog."""
        if self.connection.url is None:
            for copy in self.path.glob("chroma.sqlite3*.corrupt-*"):
                copy.unlink(missing_ok=True)

    # -- the restore journal (imports) ----------------------------------------------------
    @property
    def _restore_journal(self) -> Path:
        return Path(str(self._catalog_path) + ".restoring.json")

    def _read_journal(self) -> dict | None:
        try:
            journal = json.loads(self._restore_journal.read_text(encoding="utf-8"))
            journal["before"] = {i: (d, m, v) for i, d, m, v in journal["replaced"]}
            journal["ids"] = list(journal["added"]) + list(journal["before"])
            return journal
        except FileNotFoundError:
            return None
        except (OSError, ValueError, KeyError, TypeError):
            quarantine(self._restore_journal)  # unreadable: kept for a look, never half-applied
            return None

    def _finish_interrupted_restore(self) -> bool:
        """Undo the Chroma writes of a ``restore`` that a crash cut short; True if there was one.

        ``restore`` writes its journal (the ids it adds, what it overwrites, and
        the caller's ``extra``) before its first write and removes it only when
        the caller's whole operation is done (``finish_restore``), so a journal
        found here means the import never finished: its Chroma writes are put
        back, the catalog is rebuilt from Chroma, and ``interrupted_import``
        hands the caller's ``extra`` (the import's other files) back to it.
        """
        if not self._restore_journal.exists():
            return False
        with file_lock(self._catalog_path):
            journal = self._read_journal()
            if journal is None:
                return False
            _put_back(self._coll(), journal["ids"], journal["before"])
            if journal.get("extra") is None:
                self._restore_journal.unlink(missing_ok=True)
            else:
                self.interrupted_import = journal["extra"]
        return True

    def finish_restore(self) -> None:
        """The caller's operation around ``restore(extra=...)`` is complete: keep it."""
        self._restore_journal.unlink(missing_ok=True)
        self.interrupted_import = None

    def undo_restore(self) -> None:
        """Take back a committed ``restore(extra=...)``: Chroma put back, catalog rebuilt."""
        with file_lock(self._catalog_path):
            journal = self._read_journal()
            if journal is not None:
                _put_back(self._coll(), journal["ids"], journal["before"])
        self._sync_catalog(force=True)
        self.finish_restore()

    def use_embedder(self, embedder: Embedder) -> None:
        """Embed with ``embedder`` from now on: the store's own model clears ``mismatch``;
        any other sets it, until ``reindex`` re-embeds everything with it."""
        self.embedder = embedder
        stored = (self._coll().metadata or {}).get("embedding_model")
        self.mismatch = (
            stored if stored is not None and stored != embedder.name and self.count(include_superseded=True) else None
        )

    def _coll(self):
        if self._collection is None or self._collection_epoch != self.connection.epoch:
            self._collection = self.connection.collection(
                collection_name(self.user_id),
                metadata={"embedding_model": self.embedder.name, "memora_user": self.user_id},
            )
            self._collection_epoch = self.connection.epoch
        return self._collection

    def _check_model(self) -> None:
        self._notice_lost_store()
        if self.vectors_missing is not None:
            raise VectorsMissing(self.missing_vectors_message())
        if self.mismatch:
            every = counted(self.count(include_superseded=True), "memory", "memories")
            raise EmbeddingModelMismatch(
                f"The memory store was built with {self.mismatch}, but Memora is set to {self.embedder.name}. "
                f"Type 'reindex' to re-embed all {every} with it."
            )

    def _sync_catalog(self, remote_revision: str | None = None, *, force: bool = False) -> None:
        """Rebuild the catalog from Chroma when the two disagree.

        Every write stamps a new revision on the collection and in the catalog;
        a different revision (another machine wrote to the same Chroma server)
        or a different count (a crash between the two writes) means rebuild.
        """
        collection = self._coll()
        if remote_revision is None:
            remote_revision = (collection.metadata or {}).get("revision")
        local_revision = self.catalog.get_meta("chroma_revision")
        waiting = self.catalog.without_vectors()  # in the catalog only, until the model can embed them
        if (
            not force
            and remote_revision == local_revision
            and collection.count() == self.catalog.count(current_only=False) - len(waiting)
        ):
            return
        cause = self._lost_cause(collection)
        if cause is not None:  # never rebuilt from a collection that is not the catalog's own
            self.vectors_missing = self._remember_loss(cause)
            return
        pairs = list(self._iter_chroma_records())
        in_chroma = {r.id for r, _ in pairs}
        waiting = [r for r in waiting if r.id not in in_chroma]
        metadata = collection.metadata or {}
        with file_lock(self._catalog_path), self.catalog.transaction() as db:
            self.catalog.clear(db)
            self.catalog.insert(db, [r for r, _ in pairs] + waiting, [v for _, v in pairs] + [None] * len(waiting))
            for key, value in (
                ("chroma_revision", remote_revision),
                ("store_id", metadata.get(STORE_KEY)),
                ("chroma_serial", metadata.get(SERIAL_KEY)),
            ):
                if value:
                    db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, str(value)))
        self._seen_generation = self.catalog.generation()

    def _iter_chroma_records(self) -> Iterator[tuple[MemoryRecord, list[float]]]:
        collection = self._coll()
        offset = 0
        while True:
            page = collection.get(include=["documents", "metadatas", "embeddings"], limit=1000, offset=offset)
            if not len(page["ids"]):
                return
            for memory_id, document, meta, vector in zip(
                page["ids"], page["documents"], page["metadatas"], page["embeddings"]
            ):
                record = from_chroma(memory_id, document, meta)
                if record.user_id in ("", self.user_id):
                    yield record.evolve(user_id=self.user_id), [float(x) for x in vector]
            offset += len(page["ids"])

    def _sync_with_other_processes(self) -> None:
        """See what other processes (same folder) or machines (same server) wrote."""
        self._notice_lost_store()
        generation = self.catalog.generation()
        if generation != self._seen_generation:
            self.connection.refresh()
            self._seen_generation = generation
            # Another process may have re-embedded everything with another model ('reindex'):
            # this one's vectors no longer fit, and searching with them would fail.
            stored = (self._coll().metadata or {}).get("embedding_model")
            if stored and stored != self.embedder.name:
                self.mismatch = stored
        if self.connection.url is not None:  # a Chroma server: other machines may have written
            name = collection_name(self.user_id)
            try:
                fresh = self.connection.collection(name, create=False)
            except StoreError:
                raise
            except Exception:
                if self.vectors_missing is not None or self.connection.find_collection(name) is not None:
                    raise
                self.vectors_missing = self._examine_store(running=True)  # deleted on the server
                return
            remote = (fresh.metadata or {}).get("revision")
            if remote != self.catalog.get_meta("chroma_revision"):
                self._collection = None
                self._sync_catalog(remote)

    @contextmanager
    def _writing(self, *, new_vectors: bool = True, guards: Sequence[tuple[str, Sequence[str]]] = (("memory", ()),)):
        """Cross-process write section: file lock, fresh view, one catalog transaction.

        Writes that add vectors need the store's own embedding model; deleting and
        changing metadata do not (a learner can always forget, even after
        switching models and before ``reindex``)."""
        if new_vectors:
            self._check_model()
        with file_lock(self._catalog_path):
            # A reading's write that a deletion since covers is dropped; the check and the
            # deletions are under this same lock, so neither can slip between the other's steps.
            for kind, keys in guards:
                self.deletions.guard(kind, keys)
            self._sync_with_other_processes()
            if new_vectors:
                self._check_model()  # again: another process may have re-embedded the store meanwhile
            self._notice_lost_store(deep=self.connection.url is None)  # a server's is checked just above
            if new_vectors and self.vectors_missing is not None:
                raise VectorsMissing(self.missing_vectors_message())
            undo: list = []
            self._undo_steps = undo  # the body registers how to undo its Chroma writes
            try:
                with self.catalog.transaction() as db:
                    yield db, self._coll()
                    self._stamp_revision(db, self._coll())  # a fresh handle: forget all recreates it
            except BaseException as error:
                # The catalog transaction has rolled back; Chroma has no
                # transactions, so its writes are undone step by step, still
                # under the lock, newest first.
                for step in reversed(undo):
                    try:
                        step()
                    except Exception as failure:
                        raise PartialWriteError(
                            f"A write to the memory store failed ({error_line(error, 120)}) and could not be undone "
                            f"({error_line(failure, 120)}); restart Memora to put the store back in order."
                        ) from error
                if self._vanished_under(error):  # not "attempt to write a readonly database"
                    raise VectorsMissing(self.missing_vectors_message()) from error
                raise
            self._seen_generation = self.catalog.generation()

    def _stamp_revision(self, db, collection) -> None:
        """Mark this write in both stores, so a reader can tell they still agree, and
        whose store it is and how many writes it has had (``STORE_KEY``)."""
        revision = uuid.uuid4().hex[:12]
        metadata = {k: v for k, v in (collection.metadata or {}).items() if not k.startswith("hnsw:")}
        store = self.catalog.get_meta("store_id") or metadata.get(STORE_KEY) or uuid.uuid4().hex[:12]
        serial = max(_serial(self.catalog.get_meta("chroma_serial")), _serial(metadata.get(SERIAL_KEY))) + 1
        for key, value in (("chroma_revision", revision), ("store_id", store), ("chroma_serial", str(serial))):
            db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))
        if self.vectors_missing is not None:
            return  # not this catalog's collection: stamping it would make it look like one
        collection.modify(metadata={**metadata, "revision": revision, STORE_KEY: store, SERIAL_KEY: serial})

    # -- embedding --------------------------------------------------------------------
    def embed(self, texts: Sequence[str]) -> EmbeddingResult:
        """The vectors of ``texts`` and the tokens embedding them cost, together: the
        caller counts them on its own thread (nothing is left on the store to race for)."""
        return self.embedder.embed(list(texts))

    def _vectors(self, texts: Sequence[str]) -> list[list[float]]:
        """The store's own embedding (adding, superseding, reindexing), its tokens counted."""
        embedded = self.embed(texts)
        self.on_embedding_tokens(embedded.tokens)
        return embedded.vectors

    def _vectors_or_later(self, texts: Sequence[str]) -> list[list[float] | None]:
        """The texts' vectors, or ``None`` for each while the local embedding model is
        not on this machine (offline): a memory is stored all the same, in the catalog,
        and gets its vector from ``embed_waiting`` or ``reindex`` once the model is here.
        Any other embedding failure stands (a server that failed may answer next time)."""
        try:
            return self._vectors(texts)
        except EmbeddingUnavailable:
            return [None] * len(texts)

    def embed_waiting(self) -> int:
        """Give the memories stored without a vector theirs, now that the model may be
        here (every start, and ``reindex``, which embeds everything); the number done."""
        waiting = self.catalog.without_vectors()
        if not waiting or self.vectors_missing is not None:
            return 0
        try:
            vectors = [
                v
                for start in range(0, len(waiting), 256)
                for v in self._vectors([r.content for r in waiting[start : start + 256]])
            ]
        except MemoraError:
            return 0  # still offline, or another failure: they wait for the next start or 'reindex'
        with self._writing() as (db, collection):
            current = self.catalog.get_many([r.id for r in waiting])  # as they are now, under the lock
            pairs = [(current[r.id], v) for r, v in zip(waiting, vectors) if r.id in current]
            self.catalog.insert(db, [r for r, _ in pairs], [v for _, v in pairs])
            _upsert(collection, [r for r, _ in pairs], [v for _, v in pairs])
        return len(pairs)

    @property
    def waiting_for_vectors(self) -> int:
        """How many memories are stored without a vector yet (not searchable yet)."""
        return len(self.catalog.without_vectors())

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
            candidate = fresh_id()
            if self.catalog.get(candidate) is None:
                return candidate

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
        vector: list[float] | None = None,
    ) -> AddResult:
        """Store one memory now (or at ``created_at``), unless it duplicates one.

        ``vector`` is the text's embedding when the caller already has it."""
        text, memory_type, category = self.validate(content, memory_type, category)
        self._check_model()
        now = self.clock()
        existing = self.catalog.find_exact(text)
        if existing is not None:
            return AddResult(self.touch(existing.id, now), duplicate=True)
        vector = vector or self._vectors_or_later([text])[0]
        if dedup and vector is not None:
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
            text, memory_type, category = self.validate(
                item["content"], item.get("memory_type", "semantic"), item.get("category", "other")
            )
            created = item.get("created_at")
            batch.append(
                MemoryRecord(
                    id=item.get("id") or fresh_id(),
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
        vectors = self._vectors_or_later([r.content for r in batch])
        self._write_new(batch, vectors)
        return batch

    def _write_new(self, records: list[MemoryRecord], vectors: list[list[float] | None]) -> None:
        keys = [k for r in records for k in self.deletions.text_keys(r.content)]
        with self._writing(guards=(("text", keys),)) as (db, collection):
            ids = [r.id for r in records]
            taken = set(self.catalog.get_many(ids)) | {i for i in ids if ids.count(i) > 1}
            if taken:  # a new memory never replaces another
                raise StoreError(f"Memory id {min(taken)} is already in use, so nothing was written.")
            self.catalog.insert(db, records, vectors)
            _upsert(collection, records, vectors)

    def _write_updates(self, records: list[MemoryRecord]) -> None:
        with self._writing(new_vectors=False) as (db, collection):
            for record in records:
                self.catalog.update(db, record)
            collection.update(ids=[r.id for r in records], metadatas=[to_chroma_metadata(r) for r in records])

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
        said_at: datetime | None = None,
    ) -> MemoryRecord | None:
        """Mark ``old_id`` no longer current; store ``new_content`` as its successor.

        Nothing is deleted: the old record keeps its text with ``valid_until``,
        ``superseded_by`` and ``status=superseded``. Without ``new_content`` the
        memory is retracted (a correction) and ``None`` is returned. ``said_at``:
        when the successor was said (a reading's message), else now; it is what a
        later, older fact is compared with ("newer wins").
        """
        old = self.require(old_id)
        if not old.is_current:
            raise CommandError(f"Memory {old_id} is already superseded; see 'history {old_id}'.")
        now = self.clock()
        successor = None
        if new_content is not None:
            text, kind, cat = self.validate(new_content, memory_type or old.memory_type, category or old.category)
            vector = vector or self._vectors_or_later([text])[0]
            successor = MemoryRecord(
                id=self._new_id(),
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
                metadata={k: v for k, v in old.metadata.items() if k != "note"},
            )
        retired = old.evolve(
            status=STATUS_SUPERSEDED,
            valid_until=now,
            superseded_by=successor.id if successor else None,
            change_reason=reason,
            metadata={**old.metadata, **({"note": note} if note else {})},
        )
        guards = [("memory", [old.id])]
        if successor is not None:
            guards.append(("text", self.deletions.text_keys(successor.content)))
        with self._writing(guards=guards) as (db, collection):
            self.catalog.update(db, retired)
            collection.update(ids=[retired.id], metadatas=[to_chroma_metadata(retired)])
            if successor is not None:
                self.catalog.insert(db, [successor], [vector])
                _upsert(collection, [successor], [vector])
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
        with self._writing(new_vectors=False) as (db, collection):
            view, skipped = _plan_revert(steps, self.catalog.get, moment)
            stored = self.catalog.get_many(list(view))
            doomed = [i for i, record in view.items() if record is None and i in stored]
            revived = [record for record in view.values() if record is not None]
            if doomed:
                self._record_deleted([stored[i] for i in doomed])
                self.catalog.delete(db, doomed)
                collection.delete(ids=doomed)
            for record in revived:
                self.catalog.update(db, record)
                metadata = to_chroma_metadata(record)
                # Chroma merges metadata on update; a key is removed only by setting it to None.
                metadata.update({k: None for k in to_chroma_metadata(stored[record.id]) if k not in metadata})
                collection.update(ids=[record.id], metadatas=[metadata])
        if doomed:
            self.erase_deleted()  # a memory taken back is deleted as 'forget' deletes: no bytes left
        return RevertResult(tuple(stored[i] for i in doomed), tuple(revived), tuple(skipped))

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
            self._record_deleted([r for r in self.catalog.get_many(ids).values()])
            self.catalog.delete(db, ids)
            collection.delete(ids=ids)
            if successor:
                nxt = self.catalog.get(successor)
                if nxt is not None and nxt.supersedes in ids:
                    nxt = nxt.evolve(supersedes=None)
                    self.catalog.update(db, nxt)
                    collection.update(ids=[nxt.id], metadatas=[to_chroma_metadata(nxt)])
        self.erase_deleted()
        return ids

    def delete_all(self) -> int:
        """Delete every memory of this learner (``forget all``)."""
        count = self.count(include_superseded=True)
        self._record_forgetting()
        started = False
        try:
            with self._writing(new_vectors=False) as (db, collection):
                self.deletions.record(self.user_id, "all")
                self.catalog.clear(db)
                db.execute("DELETE FROM meta WHERE key IN (?, ?)", (FORGETTING, LOST))
                started = True
                self.connection.delete_collection(collection_name(self.user_id))
                self._collection = None
        except BaseException:
            if not started:  # nothing was deleted: nothing for the next start to finish
                self.catalog.set_meta(FORGETTING, None)
            raise
        self.vectors_missing = None  # nothing is listed now, so nothing is missing
        self._coll()
        self.erase_deleted(full=True)
        return count

    def drop(self) -> None:
        """Remove the learner's collection and catalog entirely (``forget user``)."""
        self._record_forgetting()
        with file_lock(self._catalog_path):
            self.deletions.record(self.user_id, "user")  # every process of this learner stops writing
            self.connection.delete_collection(collection_name(self.user_id))
            self.catalog.close()
            for suffix in ("", "-wal", "-shm", ".restoring.json"):
                Path(str(self._catalog_path) + suffix).unlink(missing_ok=True)
        Path(str(self._catalog_path) + ".lock").unlink(missing_ok=True)
        self.erased = self.connection.compact() or self.connection.url is not None
        self._mark_erase_pending(not self.erased)

    def _record_deleted(self, records: Iterable[MemoryRecord]) -> None:
        """Deleted memories, by id and by keyed hashes of their text (call under the
        write lock): a reading started before cannot name them or say them again."""
        records = list(records)
        if records:
            self.deletions.record(self.user_id, "memory", [r.id for r in records])
            self.deletions.record(
                self.user_id, "text", [k for r in records for k in self.deletions.text_keys(r.content)]
            )

    def _record_forgetting(self) -> None:
        seen = self.catalog.generation() == self._seen_generation
        self.catalog.set_meta(FORGETTING, "all")
        if seen:  # only our own write since: no need to reopen Chroma for it
            self._seen_generation = self.catalog.generation()

    # -- deletion that leaves no copy ---------------------------------------------------
    def erase_deleted(self, *, full: bool = False) -> bool:
        """Wipe every copy of deleted memories from the files (``forget`` is real).

        A database delete only unlinks rows: the text stays in free pages, in
        the catalog's WAL and FTS index, and in Chroma's write-ahead log. This
        zeroes and compacts all of them (``MemoryCatalog.compact``,
        ``ChromaConnection.compact``). When another process holds a file open
        so that it cannot be done now, ``erased`` is False and a marker makes
        the next start of Memora finish it. A Chroma server keeps its own
        files, which no client can wipe (README, "Where your data lives").
        """
        self.catalog.unwiped = self.connection.unwiped = None
        done = self.catalog.compact(full=full)
        if self.connection.url is None:
            done = self.connection.compact() and done
            self._remove_damaged_copies()
        self.erased, self.unwiped = done, self.catalog.unwiped or self.connection.unwiped
        self._mark_erase_pending(not done)
        return done

    @property
    def _erase_marker(self) -> Path:
        return self.path / "erase-pending"

    def _mark_erase_pending(self, pending: bool) -> None:
        if self.connection.url is not None:
            return
        if pending:
            self._erase_marker.touch(mode=0o600, exist_ok=True)
        else:
            self._erase_marker.unlink(missing_ok=True)

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

    # -- what retrieval and extraction read (the MemoryIndex seam, memora.store.index) --
    # Straight from the catalog, without the sync ``list`` makes: they run within a
    # turn or a reading that has already synced.
    def lexical_candidates(self, terms: list[str], limit: int, *, windows=(), window_limit: int = 50):
        return self.catalog.search(terms, limit, windows=windows, window_limit=window_limit)

    def score_candidates(self, found, dense_ids: Iterable[str] = (), *, records: dict | None = None):
        return self.catalog.score(found, dense_ids, records=records)

    def record_of(self, row) -> MemoryRecord:
        return self.catalog.record(row)

    def decision_candidates(self, terms: list[str], limit: int, dense_ids: Iterable[str] = ()):
        return self.catalog.candidates(terms, limit, dense_ids)

    def stored_vectors(self, ids: Iterable[str]) -> dict[str, bytes]:
        return self.catalog.vectors(ids)

    def get_many(self, ids: Iterable[str]) -> dict[str, MemoryRecord]:
        return self.catalog.get_many(ids)

    def find_exact(self, content: str, *, status: str = STATUS_CURRENT) -> MemoryRecord | None:
        return self.catalog.find_exact(content, status=status)

    def listed(self, **filters) -> list[MemoryRecord]:
        return self.catalog.list(**filters)

    def follow_up_candidates(self, now: datetime, proactive_days: int) -> list[MemoryRecord]:
        return self.catalog.follow_up_candidates(now, proactive_days)

    def digest_candidates(self, categories: Iterable[str]) -> list[MemoryRecord]:
        return self.catalog.digest_candidates(categories)

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
        return self.nearest_by_vector(self._vectors([content])[0], n)

    def nearest_by_vector(self, vector: list[float], n: int) -> list[tuple[MemoryRecord, float]]:
        """Current memories closest to ``vector``: ``[(record, cosine distance)]``."""
        hits = self.dense_candidates(vector, n)
        records = self.catalog.get_many([memory_id for memory_id, _ in hits])
        return [(records[i], d) for i, d in hits if i in records and records[i].is_current][:n]

    def dense_candidates(self, vector: list[float], n: int) -> list[tuple[str, float]]:
        """``[(id, cosine distance)]`` from Chroma, nearest first (ids only, no payload)."""
        self._sync_with_other_processes()
        self._check_model()  # after the sync: a server's collection found deleted just now
        try:
            result = self._coll().query(query_embeddings=[vector], n_results=n, include=["distances"])
        except Exception as error:
            _resized(error)
            if self.connection.url is not None or "hnsw" not in str(error).lower():
                if self._vanished_under(error):
                    raise VectorsMissing(self.missing_vectors_message()) from error
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
        results, _ = retrieve_relevant_memories(self, query, n_results=n_results, min_score=min_score)
        return results

    # -- re-embedding, export and import ------------------------------------------------
    def reindex(self) -> int:
        """Re-embed every memory with the configured model (after a model change), or
        rebuild a vanished collection from the catalog's text, every version kept.

        A rebuild replaces whatever the collection held (an older copy may hold
        memories forgotten since: the catalog is the source, so they stay
        forgotten), wipes what the old file kept of them, and removes the vector
        folders and damaged copies the vanished file left behind."""
        rebuilding = self.vectors_missing is not None
        records = self.catalog.list(include_superseded=True, newest_first=False)
        vectors: list[list[float]] = []
        for start in range(0, len(records), 256):
            vectors.extend(self._vectors([r.content for r in records[start : start + 256]]))
        with file_lock(self._catalog_path):
            name = collection_name(self.user_id)
            self.connection.delete_collection(name)
            self._collection = None
            collection = self.connection.collection(
                name, metadata={"embedding_model": self.embedder.name, "memora_user": self.user_id}
            )
            _upsert(collection, records, vectors)
            self._collection = collection
            self._collection_epoch = self.connection.epoch
        self.mismatch = None
        self.vectors_missing = None
        with file_lock(self._catalog_path), self.catalog.transaction() as db:
            self.catalog.clear(db)
            self.catalog.insert(db, records, vectors)
            db.execute("DELETE FROM meta WHERE key = ?", (LOST,))
            self._stamp_revision(db, self._coll())
        self._seen_generation = self.catalog.generation()
        self._examined_file = self.connection.file_identity()
        if rebuilding:
            self.connection.remove_orphan_segments()
            self.erase_deleted(full=True)
            if self._finish_interrupted_restore():  # an import a crash cut short waited for the rebuild
                self._sync_catalog(force=True)
        return len(records)

    def all_records(self) -> list[MemoryRecord]:
        return self.catalog.list(include_superseded=True, newest_first=False)

    def embed_records(self, records: Sequence[MemoryRecord]) -> list[list[float]]:
        """The vectors of ``records``, in batches (before any write: see ``restore``)."""
        self._check_model()
        vectors: list[list[float] | None] = []
        for start in range(0, len(records), 256):
            vectors.extend(self._vectors_or_later([r.content for r in records[start : start + 256]]))
        return vectors

    def restore(
        self,
        records: Sequence[MemoryRecord],
        *,
        vectors: Sequence[Sequence[float]] | None = None,
        extra: dict | None = None,
    ) -> int:
        """Upsert exported records by id (so importing twice adds nothing twice).

        All or nothing: everything is embedded before the first write, and if a
        write fails midway (the second of two Chroma batches, say) the records
        it added are deleted from Chroma again and those it overwrote are put
        back as they were, while the catalog transaction rolls back, so neither
        this process nor the next start sees any of it. A journal written before
        the first write lets the next start do the same after a crash.

        With ``extra`` (what the caller needs to undo its own writes), the
        journal outlives the call: the caller ends with ``finish_restore`` or
        ``undo_restore``, and a crash before that is undone at the next start.
        """
        self._check_model()
        # The same cleaning and limits as typed text, whoever built the records.
        records = [r.evolve(user_id=self.user_id, content=clean_memory_text(r.content)) for r in records]
        if not records and extra is None:
            return 0
        vectors = list(vectors) if vectors is not None else self.embed_records(records)
        ids = [r.id for r in records]
        try:
            with self._writing() as (db, collection):
                before = _chroma_snapshot(collection, ids)
                journal = {
                    "added": [i for i in ids if i not in before],
                    "replaced": [[i, *before[i]] for i in before],
                    "extra": extra,
                }
                atomic_write_text(self._restore_journal, json.dumps(journal))
                self._undo_steps.append(lambda: _put_back(self._coll(), ids, before))
                if records:
                    self.catalog.insert(db, records, vectors)
                    _upsert(collection, records, vectors)
        except PartialWriteError:
            # The journal stays, so the next start finishes the undo; the caller
            # wrote nothing yet, so its files must not be put back then.
            journal["extra"] = None
            atomic_write_text(self._restore_journal, json.dumps(journal))
            raise
        except BaseException:
            self._restore_journal.unlink(missing_ok=True)  # undone in-process
            raise
        if extra is None:
            self.finish_restore()
        return len(records)
