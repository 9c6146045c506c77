"""The undo log: the memory changes 'undo' can take back, and the lines that tell them.

Every memory change a turn's extraction makes (and every ``remember`` or
``memory edit``) is recorded as a ``ChangeSet``, announced in one line once the
reply is over (``change_line``), and can be taken back with ``undo``.
"""

from __future__ import annotations

import threading
from collections.abc import Collection, Sequence
from datetime import datetime

from memora.app.session import ChangeSet, Origin, UndoneMemory
from memora.core.storage import Guarded
from memora.core.text_utils import quoted, shorten

# 'undo' goes back this many change sets; older ones are dropped from the session
# (a learner takes back what they just saw, not last month's turn).
MAX_UNDO = 20
MAX_UNDONE_KEPT = 200  # ids 'history' can still explain after 'undo' deleted them
NOTHING_TO_UNDO = (
    "Nothing to undo: no recorded memory change is left to take back "
    "('forget' is a real deletion and cannot be undone)."
)
ORIGINS = {
    "turn": "your message",
    "remember": "'remember'",
    "edit": "'memory edit'",
    "conflict": "'keep one' on the page",
}


class ChangeLog(Guarded):
    """The change sets 'undo' can take back (``changes``, oldest first) and the
    memories it deleted (``undone``, for 'history'). Changed only under ``lock``."""

    def __init__(self, lock: threading.RLock, changes: Sequence[ChangeSet] = (), undone: Sequence[UndoneMemory] = ()):
        super().__init__(lock)
        with lock:
            self.changes: tuple[ChangeSet, ...] = tuple(changes)
            self.undone: tuple[UndoneMemory, ...] = tuple(undone)

    def record(self, origin: Origin, steps, *, at: datetime, job_id: str = "", reviews=()) -> bool:
        """Keep a memory change (one set per turn: a correction applied right after the
        reply and the turn's extraction merge), with the reviews its reading counted on
        mistake cards; False when it changed nothing."""
        steps = [tuple(step) for step in steps if step[0] or step[1]]
        reviews = [tuple(review) for review in reviews]
        if not steps and not reviews:
            return False
        with self.lock:
            last = self.changes[-1] if self.changes else None
            if job_id and last is not None and last.job_id == job_id:
                merged = last.model_copy(update={"steps": [*last.steps, *steps], "reviews": [*last.reviews, *reviews]})
                self.changes = (*self.changes[:-1], merged)
            else:
                change = ChangeSet(at=at, origin=origin, job_id=job_id, steps=steps, reviews=reviews)
                self.changes = (*self.changes, change)[-MAX_UNDO:]
        return True

    def drop(self, ids: Collection[str] | None = None) -> None:
        """A real deletion ends what undo could take back: all of it (``ids`` None), or
        the steps naming a deleted id, so undo never offers to restore what is gone."""
        with self.lock:
            if ids is None:
                self.changes, self.undone = (), ()
                return
            gone = set(ids)
            kept = (
                c.model_copy(update={"steps": [s for s in c.steps if not gone.intersection(s)]}) for c in self.changes
            )
            self.changes = tuple(c for c in kept if c.steps)
            self.undone = tuple(u for u in self.undone if u.id not in gone)

    def last(self) -> ChangeSet | None:
        with self.lock:
            return self.changes[-1] if self.changes else None

    def taken_back(self, change: ChangeSet, result, at: datetime) -> int:
        """``change`` was reverted (``result``: ``store.revert``'s); how many change sets are left."""
        restored = {r.id for r in result.restored}
        with self.lock:
            self.changes = tuple(c for c in self.changes if c is not change)
            removed = (UndoneMemory(id=r.id, at=at) for r in result.removed if r.id not in restored)
            self.undone = (*self.undone, *removed)[-MAX_UNDONE_KEPT:]
            return len(self.changes)

    def undone_memory(self, memory_id: str) -> UndoneMemory | None:
        """The undo that deleted ``memory_id`` (or an id starting with it), if any."""
        key = (memory_id or "").strip().lower()
        if len(key) < 4:
            return None
        with self.lock:
            return next((u for u in reversed(self.undone) if u.id.startswith(key)), None)


def change_line(store, steps, *, undo_hint: bool = True) -> str:
    """One short line: what a turn remembered, updated or superseded (at exit without
    the 'undo' hint: no command can follow)."""
    parts = []
    for old_id, new_id in steps:
        new = store.get(new_id) if new_id else None
        if new is None:
            continue  # retractions have their own notice
        text = f"{new.id[:6]} {quoted(new.content, 48, end='')}"
        if old_id is None:
            parts.append(f"remembered {text}")
        elif new.change_reason == "update":
            parts.append(f"updated {old_id[:6]} \u2192 {text}")
        else:
            old = store.get(old_id)
            before = f" {quoted(old.content, 32, end='')}" if old is not None else ""
            parts.append(f"superseded {old_id[:6]}{before} \u2192 {text}")
    if not parts:
        return ""
    shown = parts[:3] + ([f"and {len(parts) - 3} more"] if len(parts) > 3 else [])
    return "Memory: " + "; ".join(shown) + (" ('undo' takes this back)." if undo_hint else ".")


def undo_lines(change: ChangeSet, result, cards, now: datetime, left: int) -> list[str]:
    """What 'undo' says it did: ``result`` is ``store.revert``'s, ``cards`` what
    ``ledger.take_back`` gave for each of ``change.reviews`` (None: left as it is),
    ``left`` the change sets still undoable."""
    done = [("removed", r) for r in result.removed] + [("restored", r) for r in result.restored]
    lines = []
    if done:
        # the last quote ends the sentence: quoted() adds the full stop only if the memory has none
        parts = [
            f"{verb} {r.id[:6]} {quoted(r.content, 48, end='.' if i == len(done) - 1 else '')}"
            for i, (verb, r) in enumerate(done)
        ]
        lines.append(
            f"Undone (the memory changes of {ORIGINS[change.origin]} at "
            f"{change.at.astimezone(now.tzinfo).strftime('%H:%M')}): " + "; ".join(parts)
        )
    for memory_id, why in result.skipped:
        lines.append(f"Left {memory_id[:6]} as it is: it was {why} (see 'history {memory_id[:6]}').")
    for (mistake_id, _), card in zip(change.reviews, cards, strict=True):
        lines.append(
            f"Undone: the review your message counted on card {mistake_id} ({shorten(card.rule, 60)})."
            if card is not None
            else f"Left card {mistake_id} as it is: it was reviewed again since, or forgotten."
        )
    if left:
        lines.append(f"('undo' again takes back the change before: {left} left.)")
    return lines


__all__ = ["MAX_UNDO", "MAX_UNDONE_KEPT", "NOTHING_TO_UNDO", "ChangeLog", "change_line", "undo_lines"]
