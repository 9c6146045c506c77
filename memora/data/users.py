"""Learners: listing them and deleting everything of one.

Each learner's files live in their own folder (the default learner's at the
top of the data folder, so a single learner's files are where they always were) and their memories in
their own Chroma collection and catalog; nothing is shared between learners.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from memora.core.config import DEFAULT_USER, validate_user_name
from memora.core.text_utils import counted
from memora.store.catalog import catalog_path
from memora.store.chroma_backend import collection_name, learner_of_collection

if TYPE_CHECKING:
    from memora.app.assistant import Memora


@dataclass(frozen=True)
class LearnerInfo:
    name: str
    folder: str
    memories: int


def known_users(app: Memora) -> list[str]:
    names = {DEFAULT_USER, app.settings.user}
    users_dir = app.settings.users_dir
    if users_dir.is_dir():
        for child in users_dir.iterdir():
            try:
                if child.is_dir():
                    names.add(validate_user_name(child.name))
            except Exception:
                continue
    try:
        for name in app.connection.list_collection_names():
            learner = learner_of_collection(name)
            if learner is not None:
                try:
                    names.add(validate_user_name(learner))
                except Exception:
                    continue
    except Exception:
        pass
    return sorted(names, key=lambda n: (n != DEFAULT_USER, n))


def list_users(app: Memora) -> list[LearnerInfo]:
    from memora.store.catalog import MemoryCatalog

    infos = []
    for name in known_users(app):
        path = catalog_path(app.settings.db_dir, name)
        count = 0
        if name == app.settings.user:
            count = app.store.count()
        elif path.exists():
            catalog = MemoryCatalog(path, name)
            try:
                count = catalog.count()
            finally:
                catalog.close()
        infos.append(LearnerInfo(name=name, folder=str(app.settings.paths_for(name).folder), memories=count))
    return infos


def has_data(app: Memora, name: str) -> bool:
    """Whether ``name`` is the current learner or has anything stored here."""
    name = validate_user_name(name)
    if name == app.settings.user:
        return True
    paths = app.settings.paths_for(name)
    if any(path.exists() for path in paths.learner_files):
        return True
    if name != DEFAULT_USER and paths.folder.is_dir():
        return True
    try:
        return _has_memories(app, name)
    except Exception:
        return True  # cannot tell: let the confirmation decide rather than claim there is nothing


def _has_memories(app: Memora, name: str) -> bool:
    found = catalog_path(app.settings.db_dir, name).exists()
    return found or app.connection.find_collection(collection_name(name)) is not None


def delete_user(app: Memora, name: str, *, remove_exports: bool = True) -> str:
    """Delete the profile, session, proposals, input history, mistake ledger, activity
    log and memories of ``name``, and their exports in the data folder unless ``remove_exports`` is False."""
    from long_term_memory import LongTermMemoryStore
    from memora.app.erasure import learner_exports

    name = validate_user_name(name)
    paths = app.settings.paths_for(name)
    removed = []
    if name == app.settings.user:
        app.forget_learner()  # nothing of this learner is written from now on
        store = app.store
    else:
        store = None
        if _has_memories(app, name):
            store = LongTermMemoryStore(
                app.settings.db_dir, embedding_function=app.embedder, user_id=name, connection=app.connection
            )
    if store is not None:
        count = store.count(include_superseded=True)
        store.drop()
        removed.append(counted(count, "memory", "memories"))
    for path in paths.learner_files:
        for candidate in [path, Path(str(path) + ".lock")]:
            if candidate.exists():
                candidate.unlink()
                if candidate == path:
                    removed.append(path.name)
    exports = learner_exports(app, name)
    if remove_exports:
        for path in exports:
            path.unlink(missing_ok=True)
        if exports:
            removed.append(counted(len(exports), "export file"))
    if name != DEFAULT_USER and paths.folder.is_dir():
        kept = set() if remove_exports else set(exports)
        for child in paths.folder.iterdir():
            if child in kept:
                continue
            if child.is_dir() and not child.is_symlink():
                shutil.rmtree(child)
            else:
                child.unlink(missing_ok=True)
        if not kept:
            paths.folder.rmdir()
    what = ", ".join(removed) if removed else "nothing was stored"
    return f"Deleted learner '{name}': {what}."
