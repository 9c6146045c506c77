"""Putting back the files an import changed, when it failed or a crash cut it short.

An import writes the memories first; the store's journal holds, beside them, the
other files as they were (``snapshot_files``), so that a failure, or a crash
before the end, puts everything back: at once (``data_transfer.import_data``),
or at the next start (``finish_interrupted_import``).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from memora.core.storage import atomic_write_text


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


def finish_interrupted_import(store, paths, notify: Callable[[str], None]) -> None:
    """At start: finish undoing an import that a crash cut short (the store put
    its memories back when it opened; the other files are put back here)."""
    interrupted = store.interrupted_import
    if interrupted is None:
        return
    put_files_back(paths, interrupted.get("files") or {})
    store.finish_restore()
    notify("An import was interrupted before it finished; it was undone, so nothing of it was kept.")


__all__ = ["finish_interrupted_import", "import_files", "put_files_back", "snapshot_files"]
