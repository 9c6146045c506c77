"""What Chroma itself holds for a learner, read the way any other client would."""

from __future__ import annotations

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
