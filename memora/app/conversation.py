"""What a session keeps between starts: the conversation, the messages not read yet
(``ReadingQueue``) and the undo log (``ChangeLog``), saved together in the session
file, and caught up with a 'forget' another terminal of this learner ran."""

from __future__ import annotations

import threading
from collections.abc import Callable

from memora.app.change_log import NOTHING_TO_UNDO, ChangeLog, undo_lines
from memora.app.session import Origin, PendingExtraction, SessionState, SessionStore
from memora.app.turn import TurnState
from memora.core.errors import failure_reason
from memora.core.text_utils import quoted
from memora.core.timeutil import Clock
from memora.reading.reading_queue import ReadingQueue
from memora.store.deletions import DeletionLog
from memory import ConversationMemory


class Conversation:
    """One learner's conversation as this session keeps it; every change under ``lock``."""

    def __init__(
        self,
        *,
        lock: threading.RLock,
        turn: TurnState,
        memory: ConversationMemory,
        sessions: SessionStore,
        deletions: DeletionLog,
        user: str,
        owner: str,
        clock: Clock,
        notify: Callable[[str], None],
        on_learner_deleted: Callable[[], None],
        new_session: bool = False,
    ):
        self.lock, self.turn, self.memory, self.sessions = lock, turn, memory, sessions
        self.deletions, self.user, self.owner, self.clock, self.notify = deletions, user, owner, clock, notify
        self.on_learner_deleted = on_learner_deleted
        # The saved conversation, or a fresh one that keeps usage, unread messages and undo.
        state = sessions.load()
        if new_session:
            kept = ("usage", "pending_extractions", "changes", "undone")
            state = SessionState(**{name: getattr(state, name) for name in kept})
        with lock:
            memory.load_state(state.model_dump(mode="json"))
        self.queue = ReadingQueue(lock, state.pending_extractions)
        self.changes = ChangeLog(lock, state.changes, state.undone)
        # The newest 'forget all' (or 'forget user') this session has taken in: a newer
        # one, made by another process, clears this conversation too (``catch_up``).
        self.forgotten_at = deletions.newest(user)

    def save(self) -> None:
        if self.turn.deleted:
            return  # 'forget user' removed this learner: writing now would bring a file back
        self.catch_up()
        with self.lock:  # snapshot and write together: an older snapshot never lands last
            if self.turn.deleted:
                return
            state = self.memory.to_state()
            session = SessionState(
                saved_at=self.clock(),
                messages=state["messages"],
                summary=state["summary"],
                usage=state["usage"],
                last_request=state["last_request"],
                pending_extractions=list(self.queue.pending),
                changes=[c.model_copy(deep=True) for c in self.changes.changes],
                undone=list(self.changes.undone),
            )
            try:
                self.sessions.save(
                    session, known=set(self.queue.known), owner=self.owner, reading=set(self.queue.reading)
                )
            except OSError as error:
                self.notify(f"Could not save the session to {self.sessions.path}: {failure_reason(error)}.")

    def record_changes(self, origin: Origin, steps) -> None:
        """Remember a memory change so 'undo' can take it back ('remember', 'memory edit')."""
        if self.changes.record(origin, steps, at=self.clock()):
            self.save()

    def drop_changes(self, ids=None) -> None:
        """A real deletion ends what undo could take back (see ``ChangeLog.drop``)."""
        self.changes.drop(ids)
        self.save()

    def catch_up(self) -> None:
        """Another Memora of this learner ran 'forget all' (or 'forget user') since this
        one last looked: its conversation and its messages not read yet go too."""
        newest = self.deletions.newest(self.user)
        with self.lock:
            if newest <= self.forgotten_at:
                return
            self.forgotten_at = newest
        if self.deletions.newest(self.user, ("user",)) >= newest:
            self.on_learner_deleted()  # this learner was deleted elsewhere: write nothing more
            return
        with self.lock:
            self.memory.reset()
            self.queue.keep_from(newest)
            self.turn.new_conversation()
            self.changes.drop()

    def reset(self) -> None:
        """A new conversation: history and summary go; usage, unread messages and undo stay."""
        with self.lock:
            self.memory.reset()
            self.turn.new_conversation()
        self.save()

    def load(self, state: dict, *, save: bool = False) -> None:
        """Put a conversation back (an import restores one, or undoes its own)."""
        with self.lock:
            self.memory.load_state(state)
        if save:
            self.save()

    def drop_unread(self) -> int:
        """'forget all': every message not read yet (this terminal's and the others'
        listed in the file) and the conversation go; how many messages."""
        elsewhere = self.sessions.unread_on_disk()  # known now, so the save drops them
        with self.lock:
            dropped = self.queue.clear(elsewhere)
            self.memory.reset()
            self.turn.new_conversation()
        self.save()
        return dropped

    def unread(self) -> int:
        """Messages said and not read yet, in this terminal or another one of this learner."""
        with self.lock:
            mine = {p.job_id for p in self.queue.pending}
        return len(mine | self.sessions.unread_on_disk())

    def undo(self, store, ledger, forget: Callable[[list[str]], None]) -> list[str]:
        """Take back the last memory change set (``store.revert``, and ``ledger.take_back``
        for the reviews its reading counted; ``forget`` erases the text of what it
        deleted); the lines to show the learner."""
        # The learner takes back their last message's memories, read or not: a message
        # not read yet (held to be read with the next ones, being read now, or kept
        # from a failed reading) is newer than any change set, and is taken back
        # without waiting for it (its reading's writes are refused when they land).
        change = self.changes.last()
        unread = self.queue.unread_since(change.at if change else None)
        if unread is not None:
            return self._take_back_unread(unread)
        if change is None:
            return [NOTHING_TO_UNDO]
        result = store.revert(change.steps, when=self.clock())  # if this fails, the change stays undoable
        cards = [ledger.take_back(mistake_id, at) for mistake_id, at in change.reviews]
        if result.removed:  # taken back is deleted, as with 'forget': no copy of its text is left
            forget([r.content for r in result.removed])
        now = self.clock()
        left = self.changes.taken_back(change, result, now)
        self.save()
        return undo_lines(change, result, cards, now, left)

    def _take_back_unread(self, message: PendingExtraction) -> list[str]:
        """Undo for a message not read yet: nothing it says will be kept."""
        self.deletions.record(self.user, "reading", [message.job_id])
        self.queue.drop({message.job_id})
        with self.lock:
            left = len(self.changes.changes) + len(self.queue.pending)
        self.save()
        at = message.said_at.astimezone(self.clock().tzinfo).strftime("%H:%M")
        lines = [f"Undone: nothing from your message at {at} ({quoted(message.text, 60, end='')}) will be remembered."]
        if left:
            lines.append(f"('undo' again takes back the change before: {left} left.)")
        return lines

    def rewrite(self, rewrite: Callable[[str], str]) -> bool:
        """Pass the conversation, its summary and the unread messages through ``rewrite``
        (what 'forget' does to a forgotten text), saved when any changed."""
        with self.lock:
            changed = self.memory.rewrite(rewrite) | self.queue.rewrite(rewrite)
        if changed:
            self.save()
        return changed


__all__ = ["Conversation"]
