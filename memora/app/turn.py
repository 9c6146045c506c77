"""The turn in progress, and what the learner is told and asked around it.

Never in the middle of the tutor's words: a notice that arrives while a reply
streams waits until it is printed (``after_turn``), and so does a profile
question, so that a bare "yes" can only ever answer the question printed right
before it. Notices about messages that could not be read wait for the next prompt.

The state is shared with the extraction worker's thread, which lands its results
while the next reply streams: only ``TurnState``'s own methods change it, each
under the session's lock (``storage.Guarded`` checks it); other modules read its
fields.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from memora.core.errors import (
    EmbeddingError,
    EmbeddingModelMismatch,
    LimitError,
    LocalModelUnavailable,
    MemoraError,
    ModelNotConfigured,
)
from memora.core.records import MemorySearchResult
from memora.core.storage import Guarded
from memora.core.text_utils import counted, quoted, shorten
from memora.model.llm import ReplyResult
from memora.reading.jobs import ExtractionOutcome, Skipped
from memora.reading.proposals import ProfileProposal, ProposalStore
from memory import PreparedContext

log = logging.getLogger("memora")


class TurnState(Guarded):
    """The turn in progress, the question being asked, and how background
    extraction is going; the methods that change them, and tell the learner."""

    def __init__(self, lock: threading.RLock, notify: Callable[[str], None], proposals: ProposalStore):
        super().__init__(lock)
        with lock:
            self.notify, self.proposals = notify, proposals
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

    # -- the turn ---------------------------------------------------------------------------
    def begin(self) -> None:
        """A message is being answered: notices and questions wait, and it answers no earlier question."""
        with self.lock:
            self.turn_active, self.awaiting, self.rebuild_asked = True, None, False

    def end(self, prepared: PreparedContext | None = None, *, skipped: bool = False) -> None:
        """The reply is over: ``prepared`` is what it sent (None: rolled back); ``skipped``,
        an acknowledgement that is not read."""
        with self.lock:
            self.turn_active = False
            if prepared is not None:
                self.last_prepared = prepared
            self.extraction_skipped_messages += skipped

    def new_conversation(self) -> None:
        with self.lock:
            self.last_prepared = None

    def learner_deleted(self) -> None:
        with self.lock:
            self.deleted = True

    def leaving(self) -> None:
        with self.lock:
            self.closing = True

    def new_cap(self) -> None:
        """A new memory cap earns a new "memory is full" notice."""
        with self.lock:
            self.memory_full_noticed = False

    # -- what readings leave -------------------------------------------------------------
    def skipped(self, items: list[Skipped]) -> None:
        for item in items:
            log.warning("extraction skipped a %s (%s): %s", item.kind, item.text, item.reason)
        with self.lock:
            self.extraction_skipped = (*self.extraction_skipped, *items)

    def reading_failed(self, error: str) -> None:
        with self.lock:
            self.extraction_failures += 1
            self.extraction_error = error

    def note_unsaved(self, note: str) -> None:
        with self.lock:
            self.unsaved_notes = (*self.unsaved_notes, note)

    def take_unsaved_notes(self) -> list[str]:
        """Notices about messages whose memories could not be saved, once each: the REPL
        prints them at the next prompt, never in the middle of a streaming reply."""
        with self.lock:
            notes, self.unsaved_notes = self.unsaved_notes, ()
        return list(notes)

    # -- what the learner is told and asked -----------------------------------------------
    def deliver(self, notice: str) -> None:
        """Show a background notice now, or after the reply when one is streaming."""
        with self.lock:
            if self.turn_active:
                self.due_notices = (*self.due_notices, notice)
                return
        self.notify(notice)

    def reading_landed(self, outcome: ExtractionOutcome, change_line: str) -> None:
        """Tell what a reading found; "memory is full" once, until the cap changes
        (``outcome.full`` flags it); its profile question now, or after the reply."""
        with self.lock:
            told = self.memory_full_noticed
            self.memory_full_noticed = told or outcome.full
        for notice in outcome.notices:
            if outcome.full and notice == outcome.full_notice:
                if told:
                    continue
                told = True
            self.deliver(notice)
        if change_line:
            self.deliver(change_line)
        if outcome.proposals:
            with self.lock:
                if self.awaiting is not None or self.closing:
                    return  # (closing) kept in the proposals file: the next start asks it, where "yes" can answer
                if self.turn_active:
                    self.question_due = True
                    return
            self.ask_next_proposal()

    def after_turn(self) -> None:
        """Once a turn's output is printed (the REPL calls it): the notices and the question that waited for it."""
        with self.lock:
            due, self.due_notices = self.due_notices, ()
            ask, self.question_due = self.question_due, False
        for notice in due:
            self.notify(notice)
        if ask:
            self.ask_next_proposal()

    def without_memories(self, error: EmbeddingError | EmbeddingModelMismatch) -> list[str]:
        """The note for a turn answered without memories (the embedding failed): said
        once a session; no local model once, whether chat or 'search' meets it first."""
        no_model = isinstance(error, LocalModelUnavailable)
        with self.lock:
            if self.embedding_failure_noticed or (no_model and self.no_local_model_told):
                return []
            self.embedding_failure_noticed = True
            self.no_local_model_told |= no_model
        return [f"Answering without memories this time: {error}"]

    def no_local_model_told_once(self) -> bool:
        """True the first time a session says memory search is unavailable (no local
        model), whether chat or 'search' meets it first; False after that."""
        with self.lock:
            told, self.no_local_model_told = self.no_local_model_told, True
        return not told

    def ask_next_proposal(self) -> ProfileProposal | None:
        proposal = self.proposals.first()
        with self.lock:
            self.awaiting = proposal
            if proposal is not None:
                self.rebuild_asked = False  # a newer question: "yes" answers it, not the rebuild
        if proposal is not None:
            self.notify(proposal.question())
        return proposal

    def answer_proposal(self, accept: bool, profiles, ledger) -> str:
        """Apply or discard a pending proposal (the one just asked, if any)."""
        with self.lock:
            target, self.awaiting = (self.awaiting.id if self.awaiting else None), None
        proposal = self.proposals.take(target)
        if proposal is None:
            return "There is no pending profile change."
        if accept:
            return proposal.apply(profiles, ledger)
        if proposal.field == "review_card":
            return f"Okay, no card for {quoted(proposal.value, 60)}"
        return f"Okay, I left your profile as it is ({proposal.describe()} discarded)."

    def ask_to_rebuild(self, store) -> bool:
        """At the start: when Chroma lost the vectors while the catalog lists the
        memories, say so and ask to rebuild them, in one line; True when asked.
        Only the next line can answer it (``rebuild_asked``)."""
        cause = store.vectors_missing
        if cause is None:
            return False
        current, listed = store.count(), store.count(include_superseded=True)
        versions = f" ({listed} with earlier versions)" if listed != current else ""
        with self.lock:
            self.rebuild_asked = True
            self.awaiting = None  # a profile question asked before waits: "yes" answers this one
        self.notify(
            f"Your memories' vectors are missing: {cause}. The catalog still lists your "
            f"{counted(current, 'memory', 'memories')}{versions}. Rebuild the vectors from it now, "
            "re-embedding their text? (yes/no)"
        )
        return True

    def drop_rebuild_question(self) -> None:
        """The line after the question was read: it answered it or passed it by."""
        with self.lock:
            self.rebuild_asked = False


def review_due_line(ledger, activity, now) -> str | None:
    """ "3 mistakes to review today (type review)", at most once a day (``ledger.schedule``)."""
    plan = ledger.schedule(now)
    if not plan.queue or not activity.claim_due_notice(plan.today):
        return None
    mistakes = sum(1 for card in plan.queue if card.is_mistake)
    words = len(plan.queue) - mistakes  # a word the learner asked to learn is a card, not a mistake
    parts = [counted(n, noun) for n, noun in ((mistakes, "mistake"), (words, "word")) if n]
    if forward := sum(1 for card in plan.queue if card in plan.forward):
        parts[-1] += (
            f" to review today (type review), {forward} of them brought forward for {shorten(plan.exam[1], 60)}"
        )
        return f"{' and '.join(parts)} on {plan.exam[0]:%a %d %b}"
    return f"{' and '.join(parts)} to review today (type review)"


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
    "review_due_line",
    "cut_off_note",
    "Notifier",
    "TurnCancelled",
    "TurnResult",
    "TurnState",
]
