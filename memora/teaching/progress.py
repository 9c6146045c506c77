"""``progress``: one screen of how the learner is doing, built from stored data.

Sources: the activity log (turns and reviews per day), the mistake ledger
(each entry's first-seen day, kind and mastered day) and the profile's level
history. The report is a list of text lines. Charts are block characters
(▁▂▃▄▅▆▇█), drawn here rather than by a charting package: they are ordinary
text, so they reach the terminal as text (never markup), need no dependency,
and a test can read them exactly. In plain mode the same figures are printed
as numbers and the chart lines are left out.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from datetime import date, datetime, timedelta

from memora.core.errors import CommandError
from memora.core.text_utils import counted, shorten
from memora.teaching.activity import DayActivity
from memora.teaching.ledger import MISTAKE_KINDS, Mistake, Review, Schedule

DEFAULT_PERIOD_DAYS = 56  # eight weeks: the calendar row and the weekly charts
MAX_PERIOD_DAYS = 366 * 5
BLOCKS = "▁▂▃▄▅▆▇█"
PRACTISED, IDLE = "■", "·"
BAR_WIDTH = 24
_PERIOD = re.compile(r"(\d{1,4})\s*([dw])", re.IGNORECASE)
USAGE = "Usage: progress [--since <N>d|<N>w] [--plain]"


def parse_options(args: str) -> tuple[int, bool]:
    """The period in days and whether to leave the charts out: ``--since 30d`` /
    ``--since 4w`` (default eight weeks) and ``--plain``, in either order."""
    words = args.split()
    plain = "--plain" in words
    if words.count("--plain") > 1:
        raise CommandError(f"{USAGE} (for example 'progress --since 30d --plain').")
    return parse_since(" ".join(w for w in words if w != "--plain")), plain


def parse_since(args: str) -> int:
    """``--since 30d`` / ``--since 4w`` -> days; no argument -> the default eight weeks."""
    words = args.split()
    if not words:
        return DEFAULT_PERIOD_DAYS
    if len(words) == 2 and words[0] == "--since":
        match = _PERIOD.fullmatch(words[1])
        if match:
            days = int(match.group(1)) * (7 if match.group(2).lower() == "w" else 1)
            if 1 <= days <= MAX_PERIOD_DAYS:
                return days
    raise CommandError(f"{USAGE} (for example 'progress --since 30d'); the period is 1 day to 5 years.")


def sparkline(values: list[int], top: int | None = None) -> str:
    """One block per value; ``top`` shares a scale between rows that are compared."""
    top = max(values, default=0) if top is None else top
    if top <= 0:
        return BLOCKS[0] * len(values)
    return "".join(BLOCKS[0] if v <= 0 else BLOCKS[max(1, round(v / top * (len(BLOCKS) - 1)))] for v in values)


def bar(value: int, top: int, width: int = BAR_WIDTH) -> str:
    if value <= 0 or top <= 0:
        return ""
    return "█" * max(1, round(value / top * width))


@dataclass(frozen=True)
class ProgressData:
    today: date
    days: int
    activity: dict[date, DayActivity]
    mistakes: list[Mistake]
    level_history: list[tuple[date, str | None]]
    plan: Schedule | None = None  # the ledger's one schedule: what is due, and an exam's cards


def _weeks(today: date, days: int) -> list[tuple[date, date]]:
    """Week spans ending today, oldest first, covering ``days`` days."""
    start = today - timedelta(days=days - 1)
    spans = []
    end = today
    while end >= start:
        begin = max(start, end - timedelta(days=6))
        spans.append((begin, end))
        end = begin - timedelta(days=1)
    return spans[::-1]


def _streak(practised: set[date], today: date) -> int:
    day = today if today in practised else today - timedelta(days=1)  # today not practised yet still keeps the streak
    n = 0
    while day in practised:
        n += 1
        day -= timedelta(days=1)
    return n


def _local_day(moment: datetime) -> date:
    return moment.astimezone().date() if moment.tzinfo else moment.date()


def report(data: ProgressData, *, charts: bool) -> list[str]:
    """The progress screen: one section after another, each a few lines."""
    today, start = data.today, data.today - timedelta(days=data.days - 1)
    in_period = {d: a for d, a in data.activity.items() if start <= d <= today}
    weeks = _weeks(today, data.days)
    mistakes = [m for m in data.mistakes if m.is_mistake]  # word cards are reviewed, but are not mistakes
    return [
        f"Progress, {start.isoformat()} to {today.isoformat()} ({counted(data.days, 'day')})",
        *_practice(data, start, charts),
        *_turns(in_period, weeks, charts),
        *_mistakes_by_kind(mistakes, start, today, charts),
        *_mistakes_per_week(mistakes, weeks, charts),
        _reviews(in_period, [r for m in data.mistakes for r in m.reviews if r.source == "chat"], start),
        *_due(data.plan),
        _levels(data.level_history),
    ]


def _practice(data: ProgressData, start: date, charts: bool) -> list[str]:
    today = data.today
    practised = {d for d, a in data.activity.items() if a.turns or a.reviews}
    days_practised = len([d for d in practised if start <= d <= today])
    lines = [f"Days practised: {days_practised} of {data.days}; streak: {counted(_streak(practised, today), 'day')}"]
    if charts:
        calendar_days = min(data.days, DEFAULT_PERIOD_DAYS)
        row = "".join(
            PRACTISED if today - timedelta(days=i) in practised else IDLE for i in range(calendar_days - 1, -1, -1)
        )
        lines.append(f"  {row}  (one mark a day, today last)")
    return lines


def _turns(in_period: dict[date, DayActivity], weeks: list[tuple[date, date]], charts: bool) -> list[str]:
    turns = [sum(a.turns for d, a in in_period.items() if s <= d <= e) for s, e in weeks]
    # each week by its first day
    lines = ["Turns per week: " + ", ".join(f"{w[0].strftime('%m-%d')} {n}" for w, n in zip(weeks, turns, strict=True))]
    if charts:
        lines.append(f"  {sparkline(turns)}  (max {max(turns, default=0)})")
    return lines


def _mistakes_by_kind(mistakes: list[Mistake], start: date, today: date, charts: bool) -> list[str]:
    new_mistakes = [m for m in mistakes if start <= _local_day(m.first_seen) <= today]
    by_kind = Counter(m.kind for m in new_mistakes)
    lines = [f"Mistakes by kind ({len(new_mistakes)} new in the period):"]
    top = max(by_kind.values(), default=0)
    for kind in MISTAKE_KINDS:
        if by_kind[kind]:
            chart = f" {bar(by_kind[kind], top)}" if charts else ""
            lines.append(f"  {kind:<12}{chart} {by_kind[kind]}")
    if not by_kind:
        lines.append("  (none)")
    return lines


def _mistakes_per_week(mistakes: list[Mistake], weeks: list[tuple[date, date]], charts: bool) -> list[str]:
    new_per_week = [sum(1 for m in mistakes if s <= _local_day(m.first_seen) <= e) for s, e in weeks]
    mastered_per_week = [
        sum(1 for m in mistakes if m.mastered_at and s <= _local_day(m.mastered_at) <= e) for s, e in weeks
    ]
    lines = [
        "New mistakes per week: " + ", ".join(str(n) for n in new_per_week),
        "Mastered per week: " + ", ".join(str(n) for n in mastered_per_week),
    ]
    if charts:
        scale = max(new_per_week + mastered_per_week, default=0)
        lines.append(f"  new      {sparkline(new_per_week, scale)}")
        lines.append(f"  mastered {sparkline(mastered_per_week, scale)}")
    return lines


def _reviews(in_period: dict[date, DayActivity], chat: list[Review], start: date) -> str:
    """Drill answers (the activity log) beside the reviews read from messages (the ledger keeps those)."""
    chat = [r for r in chat if _local_day(r.at) >= start]
    reviews = sum(a.reviews for a in in_period.values()) + len(chat)
    correct = sum(a.correct for a in in_period.values()) + sum(r.correct for r in chat)
    share = f" ({round(100 * correct / reviews)}%)" if reviews else ""
    return f"Reviews: {reviews} done, {correct} correct{share}; {len(chat)} of them in chat"


def _levels(level_history: list[tuple[date, str | None]]) -> str:
    if level_history:
        return "Level: " + " -> ".join(f"{level or 'none'} ({day.isoformat()})" for day, level in level_history)
    return "Level: no changes recorded (set it with 'profile level B1')"


def _due(plan: Schedule | None) -> list[str]:
    if plan is None:
        return []
    exam = plan.exam and plan.forward and f"{shorten(plan.exam[1], 80)} ({plan.exam[0].isoformat()})"
    forward = [f"Exam: {exam}: {counted(len(plan.forward), 'card')} brought forward once, before it"] if exam else []
    return [f"Due today: {counted(len(plan.queue), 'card')}", *forward]
