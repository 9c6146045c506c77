"""Errors a user can act on.

Every ``MemoraError`` renders as one line that names the cause and, where there
is one, the fix. The REPL prints ``str(error)`` and carries on; nothing else in
Memora decides how an error looks.
"""

from __future__ import annotations


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


class EmbeddingModelMismatch(StoreError):
    """The store was built with another embedding model than the configured one."""


class EmbeddingError(MemoraError):
    """The embedding model could not embed the text (offline, API failure...)."""


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
