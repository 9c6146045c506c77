"""Errors a user can act on.

Every ``MemoraError`` renders as one line that names the cause and, where there
is one, the fix. The REPL prints ``str(error)`` and carries on; nothing else in
Memora decides how an error looks.
"""

from __future__ import annotations

import errno
import sqlite3

DISK_FULL = "the disk is full"
DISK_READ_ONLY = "the disk is read-only"

# How each layer says it. Python's file writes: the errno. SQLite: its result
# code (13 SQLITE_FULL, 8 SQLITE_READONLY; an extended code keeps the primary
# in its low byte). Chroma's Rust side: neither an OSError nor a sqlite3.Error,
# but an InternalError whose text carries SQLite's code and words ("(code: 13)
# database or disk is full") or the OS's ("No space left on device (os error 28)").
_FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})
_FULL_WORDS = ("database or disk is full", "no space left on device", "disk quota exceeded", "os error 28")
_READ_ONLY_WORDS = ("attempt to write a readonly database", "read-only file system", "os error 30")
# SQLITE_READONLY_DBMOVED (1032): the database file was deleted or replaced while
# open. The disk is fine; saying it is read-only would send the learner the wrong way.
_MOVED = 1032


def disk_problem(error: BaseException | None) -> str | None:
    """``DISK_FULL`` or ``DISK_READ_ONLY`` when that is what made ``error`` fail
    (it, or any error that led to it), else None."""
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        number = error.errno if isinstance(error, OSError) else None
        code = getattr(error, "sqlite_errorcode", None) if isinstance(error, sqlite3.Error) else None
        text = str(error).lower()
        if number in _FULL_ERRNOS or (code is not None and code & 0xFF == sqlite3.SQLITE_FULL):
            return DISK_FULL
        if code == _MOVED or "(code: 1032)" in text:
            return None
        if number == errno.EROFS or (code is not None and code & 0xFF == sqlite3.SQLITE_READONLY):
            return DISK_READ_ONLY
        if any(words in text for words in _FULL_WORDS):
            return DISK_FULL
        if any(words in text for words in _READ_ONLY_WORDS):
            return DISK_READ_ONLY
        error = error.__cause__ or error.__context__
    return None


def failure_reason(error: BaseException) -> str:
    """What made a write fail, as the end of a sentence: "the disk is full",
    "the disk is read-only", else the error's own words."""
    problem = disk_problem(error)
    if problem:
        return problem
    if isinstance(error, OSError) and error.strerror:
        return error.strerror
    return error_line(error).rstrip(".")


def error_line(error: BaseException, limit: int = 200) -> str:
    """An error's own words on one line of at most ``limit`` characters ("…" marking
    a cut), or its type's name when it has none: how any unexpected error is shown."""
    text = " ".join(str(error).split())
    if len(text) > limit:
        text = text[: limit - 1].rstrip() + "\u2026"
    return text or type(error).__name__


class MemoraError(Exception):
    """Base class: ``str(error)`` is the one-line message shown to the user."""


class ConfigError(MemoraError):
    """A setting (flag or environment variable) has an unusable value."""


class CommandError(MemoraError):
    """A command was malformed; the message carries its usage line."""


class LimitError(MemoraError):
    """Input exceeded one of Memora's documented limits."""


class InvalidLevelError(CommandError):
    """An English level outside CEFR A1-C2."""


class StoreError(MemoraError):
    """The long-term memory store cannot be opened or used."""


class DamagedStoreError(StoreError):
    """The embedded store's ``chroma.sqlite3`` is not a (sound) SQLite database."""


class EmbeddingModelMismatch(StoreError):
    """The store was built with another embedding model than the configured one."""


class VectorsMissing(EmbeddingModelMismatch):
    """Chroma lost the learner's vectors (its file was deleted or replaced, or the
    collection is gone) while the catalog still lists the memories.

    Handled wherever a mismatch is, because it is the same situation to the rest
    of Memora: nothing can be searched or get a new vector until ``reindex``
    rebuilds the collection, and a reading that fails on it is kept to run again
    after that."""


class EmbeddingError(MemoraError):
    """The embedding model could not embed the text (offline, API failure...)."""


class EmbeddingUnavailable(EmbeddingError):
    """No embedding can be made now: the embedding service cannot be reached, or (the
    subclass) the local model's files are not here offline. Memories are still stored,
    their vectors computed later (``reindex``, or the next start); only searching waits."""


class LocalModelUnavailable(EmbeddingUnavailable):
    """The local embedding model's files are not on this machine and cannot be downloaded."""


class MemoryFullError(MemoraError):
    """The learner's memory cap is reached; nothing was dropped to make room."""


class LedgerFullError(LimitError):
    """The mistake ledger is at its limit and holds no mastered entry to make room."""


class ModelNotConfigured(MemoraError):
    """No API key and no base URL: chat is unavailable, commands still work."""


class ModelCallError(MemoraError):
    """A call to the language model failed after the client's retries."""


class ContextBudgetError(MemoraError):
    """The request cannot be made to fit the token budget."""


class ImportFileError(MemoraError):
    """An import file is missing, too large or not a valid Memora export."""


class OutputClosed(Exception):
    """Standard output was closed by the reader (``| head``): stop quietly.

    Not a ``MemoraError``: there is nobody left to show a line to."""
