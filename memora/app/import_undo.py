"""Putting back what an import wrote, when it failed or a crash cut it short.

An import writes the memories first (``import_memories``), with a journal beside
the catalog, written under the store's lock before its first write: the ids it
adds, the records it overwrites, and the other files as they were
(``snapshot_files``). A failure, or a crash before the end, puts everything back:
at once (``data_transfer.import_data``, through ``undo_import``), or at the next
start (``finish_interrupted_import``). ``end_import`` keeps a finished import.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path

from long_term_memory import LongTermMemoryStore, PartialWriteError
from memora.core.records import MemoryRecord, from_chroma, to_chroma_metadata
from memora.core.storage import atomic_write_text, quarantine
from memora.store.catalog import catalog_path


def import_files(paths) -> dict[str, Path]:
    """The files an import changes besides the memories (``paths``: a learner's ``Settings.paths``)."""
    return {
        "profile": paths.profile,
        "proposals": paths.proposals,
        "session": paths.session,
        "mistakes": paths.mistakes,
        "activity": paths.activity,
    }


def snapshot_files(paths) -> dict[str, str | None]:
    """The files an import changes besides the memories, as they are now (None: absent)."""
    snapshot: dict[str, str | None] = {}
    for key, path in import_files(paths).items():
        try:
            snapshot[key] = Path(path).read_text(encoding="utf-8")
        except FileNotFoundError:
            snapshot[key] = None
    return snapshot


def put_files_back(paths, snapshot: dict) -> None:
    for key, path in import_files(paths).items():
        if key not in snapshot:
            continue
        if snapshot[key] is None:
            Path(path).unlink(missing_ok=True)
        else:
            atomic_write_text(Path(path), snapshot[key])


def _journal(store: LongTermMemoryStore) -> Path:
    return Path(str(catalog_path(store.path, store.user_id)) + ".restoring.json")


def import_memories(store: LongTermMemoryStore, records: Sequence[MemoryRecord], files: dict) -> int:
    """Write an import's memories (``store.restore``), journaled with the other files as
    they were (``files``); the journal outlives the call until ``end_import`` or ``undo_import``."""
    path = _journal(store)
    journal: dict = {"files": files}

    def write(before: dict) -> None:
        journal["added"] = [r.id for r in records if r.id not in before]
        journal["replaced"] = [[i, r.content, to_chroma_metadata(r), v] for i, (r, v) in before.items()]
        atomic_write_text(path, json.dumps(journal))

    try:
        return store.restore(records, journal=write)
    except PartialWriteError:
        # The journal stays, so the next start finishes the undo; the caller wrote
        # nothing yet, so its files must not be put back then.
        atomic_write_text(path, json.dumps({**journal, "files": None}))
        raise
    except BaseException:
        path.unlink(missing_ok=True)  # undone in-process
        raise


def end_import(store: LongTermMemoryStore) -> None:
    """The import is complete: keep it."""
    _journal(store).unlink(missing_ok=True)


def undo_import(store: LongTermMemoryStore) -> dict | None:
    """Take back the journaled import's memories; the files as they were (None: not to be put back)."""
    path = _journal(store)
    try:
        journal = json.loads(path.read_text(encoding="utf-8"))
        before = [(from_chroma(i, d, m), v) for i, d, m, v in journal["replaced"]]
        added, files = list(journal["added"]), journal.get("files")
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError):
        quarantine(path)  # unreadable: kept for a look, never half-applied
        return None
    store.restore([r for r, _ in before], vectors=[v for _, v in before], remove=added, replace=True)
    path.unlink(missing_ok=True)
    return files


def finish_interrupted_import(store: LongTermMemoryStore, paths, notify: Callable[[str], None]) -> None:
    """At start: undo an import that a crash cut short (a vanished store is rebuilt
    first: ``reindex`` calls this again)."""
    if store.vectors_missing is not None or not _journal(store).exists():
        return
    files = undo_import(store)
    if files is not None:
        put_files_back(paths, files)
        notify("An import was interrupted before it finished; it was undone, so nothing of it was kept.")
