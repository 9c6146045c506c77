"""What one running session knows beyond its stores, guarded by the session's
lock (``storage.Guarded``): the reply streams on the REPL's thread while the
extraction worker lands its results on its own."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from memora.core.errors import LimitError, MemoraError, ModelNotConfigured
from memora.core.records import MemorySearchResult
from memora.core.storage import Guarded
from memora.model.llm import ReplyResult
from memora.reading.jobs import Skipped
from memora.reading.proposals import ProfileProposal
from memory import PreparedContext

log = logging.getLogger("memora")


class TurnState(Guarded):
    """The turn in progress, the question being asked, and how background
    extraction is going. Changed only under the session's lock; other modules
    read it through ``Memora``'s properties."""

    def __init__(self, lock: threading.RLock):
        super().__init__(lock)
        with lock:
            self.turn_active = False  # a reply is streaming: notices and questions wait
            self.awaiting: ProfileProposal | None = None  # the question just asked, which a bare "yes" answers
            self.rebuild_asked = False  # the start asked to rebuild a vanished store; only the next line answers
            self.question_due = False  # a proposal arrived during a reply: ask once it is over
            self.deleted = False  # 'forget user' removed this learner: write nothing more
            self.closing = False  # leaving: nothing is asked that could not be answered (Memora.close)
            self.no_local_model_told = False  # "memory search is unavailable" (no local model) is said once
            self.last_prepared: PreparedContext | None = None  # what the last request sent ('why', 'status')
            self.due_notices: tuple[str, ...] = ()  # arrived while a reply streamed; shown after it
            self.unsaved_notes: tuple[str, ...] = ()  # told at the next prompt
            self.extraction_error: str | None = None
            self.extraction_failures = 0
            self.extraction_skipped_messages = 0  # acknowledgements not sent to extraction (skips_extraction)
            self.extraction_skipped: tuple[Skipped, ...] = ()  # items that could not be applied
            self.memory_full_noticed = False  # "memory is full" is said once, until the cap changes
            self.embedding_failure_noticed = False


def check_message(text: str, limit: int, *, configured: bool) -> str:
    """The message to send, or the one-line reason it cannot be sent."""
    text = text.strip()
    if not text:
        raise LimitError("Empty message: nothing was sent.")
    if len(text) > limit:
        raise LimitError(f"Your message is {len(text)} characters; the limit is {limit}. Nothing was sent.")
    if not configured:
        raise ModelNotConfigured(
            "No model is configured: set OPENAI_API_KEY, or OPENAI_BASE_URL for a local server "
            "(see README, 'Configuration'). Commands still work."
        )
    return text


def cut_off_note(reply: ReplyResult) -> list[str]:
    """The note for a reply the model cut off, if it was."""
    if not reply.incomplete:
        return []
    return [
        f"(reply cut off: {reply.incomplete}) The reply was kept as far as it got; "
        "raise MEMORA_MAX_OUTPUT_TOKENS for longer answers."
    ]


class TurnCancelled(MemoraError):
    """Ctrl-C during a reply: the turn was rolled back."""


@dataclass
class TurnResult:
    reply: ReplyResult
    prepared: PreparedContext
    memories: list[MemorySearchResult]
    notes: list[str] = field(default_factory=list)


class Notifier:
    """Where notices go; the REPL points it at its console once that is ready,
    and the parts built before then (the token counter, the stores) keep it."""

    def __init__(self, target: Callable[[str], None]):
        self.target = target

    def __call__(self, message: str) -> None:
        try:
            self.target(message)
        except Exception:  # a broken terminal must not break the worker
            log.exception("notify failed")


__all__ = [
    "check_message",
    "cut_off_note",
    "Notifier",
    "TurnCancelled",
    "TurnResult",
    "TurnState",
]
