"""Proactive follow-up: which remembered plan, if any, to ask about this turn.

A tutor who remembers a plan and asks how it went shows it was listening. A
current ``schedule`` memory is a candidate when it has not been followed up yet and

* its event date has passed (the date was resolved from "next Tuesday" against
  the moment the learner said it), or
* it has no date and is at least ``proactive_days`` old (by then an undated
  plan has most likely happened).

Never for something said less than a day ago: asking "how did it go?" hours
after hearing about it only shows the tutor was not listening. Only the oldest
candidate is returned: one question, not a to-do list.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta

from context_builder import FollowUpHint
from memora.core.records import MemoryRecord
from memora.core.timeutil import to_aware

MIN_AGE = timedelta(days=1)


def pick_follow_up(candidates: Iterable[MemoryRecord], now: datetime, proactive_days: int) -> FollowUpHint | None:
    now = to_aware(now)
    today = now.astimezone().date()
    eligible = []
    for record in candidates:
        if record.category != "schedule" or not record.is_current or record.followed_up_at is not None:
            continue
        age = now - to_aware(record.created_at)
        if age < MIN_AGE:
            continue
        if record.event_date is not None:
            if record.event_date < today:
                eligible.append(record)
        elif age >= timedelta(days=proactive_days):
            eligible.append(record)
    if not eligible:
        return None
    oldest = min(eligible, key=lambda r: to_aware(r.created_at))
    return FollowUpHint(
        memory_id=oldest.id,
        text=oldest.content,
        said_at=oldest.created_at,
        event_date=oldest.event_date,
        source=oldest.source,
    )
