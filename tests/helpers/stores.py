"""What Chroma itself holds for a learner, read the way any other client would."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from long_term_memory import collection_name


def chroma_collection(store):
    """The learner's Chroma collection, fetched by name through the store's connection."""
    return store.connection.collection(collection_name(store.user_id), create=False)


def files_holding(root: Path, *markers: str) -> dict[str, list[str]]:
    """``{relative path: [markers found]}`` over the raw bytes of every file under ``root``."""
    found: dict[str, list[str]] = {}
    needles = [(m, m.lower().encode("utf-8")) for m in markers]
    for folder, _, names in os.walk(root):
        for name in names:
            path = Path(folder) / name
            data = path.read_bytes().lower()
            hits = [m for m, needle in needles if needle in data]
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
