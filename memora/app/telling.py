"""What the learner is told and asked, and when.

Never in the middle of the tutor's words: a notice that arrives while a reply
streams waits until it is printed (``after_turn``), and so does a profile
question, so that a bare "yes" can only ever answer the question printed right
before it. Notices about messages that could not be read wait for the next prompt.
"""

from __future__ import annotations

from collections.abc import Callable

from memora.app.turn import TurnState
from memora.core.errors import EmbeddingError, EmbeddingModelMismatch, LocalModelUnavailable
from memora.core.text_utils import counted, quoted
from memora.reading.jobs import ExtractionOutcome
from memora.reading.proposals import ProfileProposal, ProposalStore


class Telling:
    """The learner-facing side of a session's state (``TurnState``, under its lock)."""

    def __init__(self, turn: TurnState, notify: Callable[[str], None], proposals: ProposalStore):
        self.turn, self.lock, self.notify, self.proposals = turn, turn.lock, notify, proposals

    def deliver(self, notice: str) -> None:
        """Show a background notice now, or after the reply when one is streaming."""
        with self.lock:
            if self.turn.turn_active:
                self.turn.due_notices = (*self.turn.due_notices, notice)
                return
        self.notify(notice)

    def reading_landed(self, outcome: ExtractionOutcome, change_line: str) -> None:
        """Tell what a reading found; "memory is full" once, until the cap changes
        (``outcome.full`` flags it); its profile question now, or after the reply."""
        with self.lock:
            told = self.turn.memory_full_noticed
            self.turn.memory_full_noticed = told or outcome.full
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
                if self.turn.awaiting is not None or self.turn.closing:
                    return  # (closing) kept in the proposals file: the next start asks it, where "yes" can answer
                if self.turn.turn_active:
                    self.turn.question_due = True
                    return
            self.ask_next_proposal()

    def after_turn(self) -> None:
        """Once a turn's output is printed: the notices and the question that waited for it."""
        with self.lock:
            due, self.turn.due_notices = self.turn.due_notices, ()
            ask, self.turn.question_due = self.turn.question_due, False
        for notice in due:
            self.notify(notice)
        if ask:
            self.ask_next_proposal()

    def without_memories(self, error: EmbeddingError | EmbeddingModelMismatch) -> list[str]:
        """The note for a turn answered without memories (the embedding failed): said
        once a session; no local model once, whether chat or 'search' meets it first."""
        no_model = isinstance(error, LocalModelUnavailable)
        with self.lock:
            if self.turn.embedding_failure_noticed or (no_model and self.turn.no_local_model_told):
                return []
            self.turn.embedding_failure_noticed = True
            self.turn.no_local_model_told |= no_model
        return [f"Answering without memories this time: {error}"]

    def no_local_model_told_once(self) -> bool:
        """True the first time a session says memory search is unavailable (no local
        model), whether chat or 'search' meets it first; False after that."""
        with self.lock:
            told, self.turn.no_local_model_told = self.turn.no_local_model_told, True
        return not told

    def note_unsaved(self, note: str) -> None:
        with self.lock:
            self.turn.unsaved_notes = (*self.turn.unsaved_notes, note)

    def take_unsaved_notes(self) -> list[str]:
        """Notices about messages whose memories could not be saved, once each: the REPL
        prints them at the next prompt, never in the middle of a streaming reply."""
        with self.lock:
            notes, self.turn.unsaved_notes = self.turn.unsaved_notes, ()
        return list(notes)

    def ask_next_proposal(self) -> ProfileProposal | None:
        proposal = self.proposals.first()
        with self.lock:
            self.turn.awaiting = proposal
            if proposal is not None:
                self.turn.rebuild_asked = False  # a newer question: "yes" answers it, not the rebuild
        if proposal is not None:
            self.notify(proposal.question())
        return proposal

    def answer_proposal(self, accept: bool, proposal_id: str | None, profiles, ledger) -> str:
        """Apply or discard a pending proposal (the one just asked unless ``proposal_id``)."""
        with self.lock:
            target = proposal_id or (self.turn.awaiting.id if self.turn.awaiting else None)
            self.turn.awaiting = None
        proposal = self.proposals.take(target)
        if proposal is None:
            return "There is no pending profile change."
        if accept:
            return proposal.apply(profiles, ledger)
        if proposal.field == "review_card":
            return f"Okay, no card for {quoted(proposal.value, 60)}"
        return f"Okay, I left your profile as it is ({proposal.describe()} discarded)."

    def review_due_line(self, ledger, activity, now) -> str | None:
        """ "3 mistakes to review today (type review)", at most once a day."""
        due = ledger.due(now)
        if not due or not activity.claim_due_notice(ledger.today()):
            return None
        mistakes = sum(1 for card in due if card.is_mistake)
        words = len(due) - mistakes  # a word the learner asked to learn is a card, not a mistake
        parts = [counted(n, noun) for n, noun in ((mistakes, "mistake"), (words, "word")) if n]
        return f"{' and '.join(parts)} to review today (type review)"

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
            self.turn.rebuild_asked = True
            self.turn.awaiting = None  # a profile question asked before waits: "yes" answers this one
        self.notify(
            f"Your memories' vectors are missing: {cause}. The catalog still lists your "
            f"{counted(current, 'memory', 'memories')}{versions}. Rebuild the vectors from it now, "
            "re-embedding their text? (yes/no)"
        )
        return True

    def drop_rebuild_question(self) -> None:
        """The line after the question was read: it answered it or passed it by."""
        with self.lock:
            self.turn.rebuild_asked = False


__all__ = ["Telling"]
