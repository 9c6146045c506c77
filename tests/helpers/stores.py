"""What Chroma itself holds for a learner, read the way any other client would, and
many memories written at once (``add_many``, for tests and benchmarks)."""

from __future__ import annotations

import contextlib
import errno
import os
from pathlib import Path

from memora.core.records import MemoryRecord, fresh_id
from memora.core.timeutil import to_aware
from memora.store.chroma_backend import collection_name


def add_many(store, items, *, batch_size: int = 256) -> list[MemoryRecord]:
    """Memories written as they are, without dedup, ``restore``d ``batch_size`` at a time.
    Each item holds ``LongTermMemoryStore.add``'s keyword arguments plus ``content``."""
    now, records = store.clock(), []
    for item in items:
        kind, category = item.get("memory_type", "semantic"), item.get("category", "other")
        text, kind, category = store.validate(item["content"], kind, category)
        records.append(
            MemoryRecord(
                id=item.get("id") or fresh_id(),
                content=text,
                created_at=to_aware(item.get("created_at") or now),
                memory_type=kind,
                category=category,
                source=item.get("source", "import"),
                user_id=store.user_id,
                last_seen=now,
                event_date=item.get("event_date"),
                metadata=dict(item.get("metadata") or {}),
            )
        )
    for start in range(0, len(records), batch_size):
        store.restore(records[start : start + batch_size])
    return records


def chroma_collection(store):
    """The learner's Chroma collection, fetched by name through the store's connection."""
    return store.connection.find_collection(collection_name(store.user_id))


def files_holding(root: Path, *markers: str) -> dict[str, list[str]]:
    """``{relative path: [markers found]}`` over the raw bytes of every file under ``root``.

    A marker is looked for as written and case-folded (what a full-text index keeps),
    never by folding the file: folded, Chroma's "VECTOR" before a segment's hex id
    spells "orb" whenever the id starts with b, a piece found by chance."""
    found: dict[str, list[str]] = {}
    needles = [(m, {m.encode("utf-8"), m.casefold().encode("utf-8")}) for m in markers]
    for folder, _, names in os.walk(root):
        for name in names:
            path = Path(folder) / name
            data = path.read_bytes()
            hits = [m for m, forms in needles if any(form in data for form in forms)]
            if hits:
                found[str(path.relative_to(root))] = hits
    return found


@contextlib.contextmanager
def chroma_wrapped(store, wrap):
    """While open, every Chroma call ``store`` makes goes to ``wrap(collection)``
    (for injecting faults), and the wrapper is yielded.

    Done through the store's public connection: it hands out the wrapper and is
    refreshed, so the store fetches its collection again; on leaving it is
    refreshed once more and the store goes back to the real collection."""
    connection = store.connection
    name = collection_name(store.user_id)
    connection.refresh()
    wrapper = wrap(chroma_collection(store))
    real = connection.collection

    def collection(wanted, **kwargs):
        return wrapper if wanted == name else real(wanted, **kwargs)

    connection.collection = collection
    try:
        yield wrapper
    finally:
        del connection.collection  # the class's method again
        connection.refresh()


def own_word() -> str:
    """A word of this test's own, to forget and then look for in every file. Chroma may write
    memory the process freed into its index files, so a word an earlier test also stored can
    turn up though this test's copy is gone. Its letters are never hex and no two of them stand
    together in a word the files hold, which a byte beside spells by chance (the deletion log's
    kind "all" and the byte after it spelled "llk" once)."""
    import uuid

    return "".join("jqvwxyz"[b % 7] for b in uuid.uuid4().bytes[:8])


def new_pieces(root: Path, text: str, *kept: str) -> list[str]:
    """``pieces`` of ``text`` not already in some file under ``root`` (SQLite's own schema
    text holds "cod" and "ock", a vector's bytes may spell "291"): call it before the
    text is stored, and look for the result after it is deleted."""
    candidates = pieces(text, *kept)
    present = {piece for hits in files_holding(root, *candidates).values() for piece in hits}
    return [piece for piece in candidates if piece not in present]


def pieces(text: str, *kept: str) -> list[str]:
    """The three-character pieces of ``text`` that a full-text index may keep (Chroma's
    FTS5 trigram index), and for Chinese the two-character ones too (the catalog's CJK
    bigrams): in Chinese a piece is a word. Pieces that also occur in ``kept`` (texts
    that stay) are left out, and so are pieces with a space in them and pieces that
    are hex or start or end with a hex digit, which ids and hashes beside text spell
    by chance (the whole text is still looked for as it is)."""
    import re

    from memora.core.text_utils import CJK_RANGES

    cjk = re.compile(f"[{CJK_RANGES}]")
    found: list[str] = []
    for size in (2, 3):
        for start in range(len(text) - size + 1):
            piece = text[start : start + size]  # as written; files_holding also looks for it folded
            folded = piece.casefold()
            if not piece.strip() or " " in piece or (size == 2 and not all(cjk.match(c) for c in piece)):
                continue
            if not any(piece.isalnum() or cjk.match(c) for c in piece):
                continue
            if re.fullmatch(r"[0-9a-f]+", folded) or re.match(r"[0-9a-f]|.*[0-9a-f]$", folded):
                # ids, revisions and keyed hashes are hex, and stand next to text: a piece
                # that is hex, or starts or ends with a hex digit, turns up by chance (a
                # segment id ending in b before Chroma's "urn:" spells "bur")
                continue
            if folded not in {p.casefold() for p in found} and not any(folded in k.casefold() for k in kept):
                found.append(piece)
    return found


# -- a disk that takes no more writes -------------------------------------------------------------
# What each layer says when the disk under the data folder is full or read-only: Python's file
# writes get the errno; Chroma's Rust side reports SQLite's own code inside an InternalError
# (the messages as chromadb 1.5 gives them on a full tmpfs: "(code: 13) database or disk is full").
_CHROMA_SAYS = "Query error: Database error: error returned from database: "
DISKS = {
    "full": (errno.ENOSPC, _CHROMA_SAYS + "(code: 13) database or disk is full", "the disk is full"),
    "over quota": (errno.EDQUOT, _CHROMA_SAYS + "(code: 13) database or disk is full", "the disk is full"),
    "read-only": (
        errno.EROFS,
        _CHROMA_SAYS + "(code: 8) attempt to write a readonly database",
        "the disk is read-only",
    ),
}


class FailingWrites:
    """A Chroma collection whose writes fail with ``message`` (reads still work)."""

    WRITES = frozenset({"add", "upsert", "update", "delete", "modify"})

    def __init__(self, inner, message: str):
        self.inner = inner
        self.message = message

    def __getattr__(self, name):
        if name in self.WRITES:
            from chromadb.errors import InternalError

            def fail(*args, **kwargs):
                raise InternalError(self.message)

            return fail
        return getattr(self.inner, name)


@contextlib.contextmanager
def disk_that_takes_no_writes(app, kind: str):
    """While open, the disk under ``app``'s data folder is ``kind`` (a key of ``DISKS``):
    every file write Memora makes fails at its fsync or rename with that errno, and every
    Chroma write fails as Chroma reports it. Yields what the learner should be told."""
    code, chroma_says, says = DISKS[kind]

    def fail(*args, **kwargs):
        raise OSError(code, os.strerror(code))

    import pytest

    with (
        chroma_wrapped(app.store, lambda collection: FailingWrites(collection, chroma_says)),
        pytest.MonkeyPatch.context() as patch,
    ):
        patch.setattr(os, "fsync", fail)
        patch.setattr(os, "replace", fail)
        yield says
