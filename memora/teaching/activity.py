"""The per-learner activity log behind ``progress``: counts per day, no text.

``memora_activity.json`` in the learner's folder holds, for each day the
learner used Memora, the number of chat turns, reviews and correct reviews,
plus the day the "cards to review" line was last shown (it is shown at most
once a day). It holds no words of the learner's, so it is safe to keep for
years; ``forget user`` removes it with the rest. Days are the learner's local
days, from the injected clock.

Each day is checked when the file is read, as an import checks it: a day
within 1970-2999, whole counts from 0 to ``MAX_PER_DAY``, and no more correct
reviews than reviews. A day that fails is left out with one line, and the file
as it was is kept beside it (``storage.load_model_file``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import date, datetime
from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, model_validator

from memora.core.storage import JsonStore, StoredDay

log = logging.getLogger("memora.activity")
MAX_PER_DAY = 1_000_000  # turns or reviews in one day: no learner reaches it (one a second is 86,400)
Count = Annotated[int, Field(ge=0, le=MAX_PER_DAY, strict=True)]


class DayActivity(BaseModel):
    model_config = ConfigDict(extra="forbid")

    turns: Count = 0
    reviews: Count = 0
    correct: Count = 0

    @model_validator(mode="after")
    def _correct_among_reviews(self) -> DayActivity:
        if self.correct > self.reviews:
            raise ValueError(f"{self.correct} correct reviews of {self.reviews}")
        return self


class _ActivityFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    version: int = 1
    days: dict[StoredDay, DayActivity] = Field(default_factory=dict)
    due_notice_on: StoredDay | None = None


class ActivityLog(JsonStore[_ActivityFile]):
    """Counts per day in ``memora_activity.json`` (locked, atomic)."""

    schema = _ActivityFile
    label = "activity log"
    entries = "days"

    def __init__(self, path: Path, *, clock: Callable[[], datetime], notify: Callable[[str], None] | None = None):
        super().__init__(path, notify=notify)
        self.clock = clock

    def _bump(self, at: datetime | None, **counts: int) -> bool:
        """Add to a day's counts; False when the file could not be written.

        A count is not the learner's data: on a full or read-only disk it is
        skipped rather than fail the turn or the review it counts (which would
        then cost the turn's reading, or call a saved answer lost). The write
        that does hold the learner's data, the session or the ledger, fails on
        the same disk and says why."""
        day = (at or self.clock()).date()

        def bump(state: _ActivityFile) -> None:
            current = state.days.get(day, DayActivity())
            state.days[day] = current.model_copy(
                update={k: min(getattr(current, k) + v, MAX_PER_DAY) for k, v in counts.items()}
            )

        try:
            self.change(bump)
        except OSError:
            log.debug("activity count not written", exc_info=True)
            return False
        return True

    def record_turn(self, at: datetime | None = None) -> bool:
        return self._bump(at, turns=1)

    def record_review(self, correct: bool, at: datetime | None = None) -> bool:
        return self._bump(at, reviews=1, correct=int(correct))

    def days(self) -> dict[date, DayActivity]:
        return dict(sorted(self.read().days.items()))

    def claim_due_notice(self, today: date | None = None) -> bool:
        """True the first time it is asked on a day (and remembers it); False after."""
        today = today or self.clock().date()
        with self.lock():
            state = self.read()
            if state.due_notice_on == today:
                return False
            self.write(state.model_copy(update={"due_notice_on": today}))
            return True

    def merge_days(self, days: dict[date, DayActivity]) -> None:
        """Used by import: merge another log's counts in, day by day (the larger count wins)."""

        def merge(state: _ActivityFile) -> None:
            for day, counts in days.items():
                mine = state.days.get(day, DayActivity())
                state.days[day] = DayActivity(
                    **{k: max(getattr(mine, k), getattr(counts, k)) for k in DayActivity.model_fields}
                )

        self.change(merge)

    def clear(self) -> None:
        self.delete()
