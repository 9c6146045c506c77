"""Time helpers: the clock, relative-time labels and resolving "next Tuesday".

Memora never calls ``datetime.now()`` directly outside this module: every
component takes a ``clock`` so tests can advance time (seed 001 seeds past
timestamps; we inject the clock instead).
"""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta, timezone
from typing import Callable

Clock = Callable[[], datetime]

WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
_WEEKDAY_ABBR = {name[:3]: i for i, name in enumerate(WEEKDAYS)} | {"tues": 1, "thur": 3, "thurs": 3}
_ZH_WEEKDAY = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6}
_NUMBER_WORDS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
                 "eight": 8, "nine": 9, "ten": 10, "couple of": 2, "few": 3}


def system_clock() -> datetime:
    """The current local time, timezone-aware."""
    return datetime.now().astimezone()


def to_aware(value: datetime) -> datetime:
    return value if value.tzinfo else value.replace(tzinfo=timezone.utc)


def parse_iso(value: str | None) -> datetime | None:
    if not value:
        return None
    try:
        return to_aware(datetime.fromisoformat(str(value)))
    except ValueError:
        return None


def parse_date(value: str | None) -> date | None:
    if not value:
        return None
    try:
        return date.fromisoformat(str(value)[:10])
    except ValueError:
        return None


def now_anchor(now: datetime) -> str:
    """``2026-11-29 14:05 (Sunday)``: the 'now' line of the background."""
    return f"{now.strftime('%Y-%m-%d %H:%M')} ({now.strftime('%A')})"


def time_ago(then: datetime, now: datetime) -> str:
    """A short relative label: 'just now', '5 hours ago', 'yesterday', '3 days ago'..."""
    then, now = to_aware(then), to_aware(now)
    seconds = (now - then).total_seconds()
    if seconds < 0:
        return "in the future"
    minutes = seconds / 60
    if minutes < 1:
        return "just now"
    if minutes < 60:
        return _plural(int(minutes), "minute")
    hours = minutes / 60
    if hours < 24:
        return _plural(int(hours), "hour")
    days = (now.astimezone().date() - then.astimezone(now.tzinfo).date()).days
    days = max(days, 1)
    if days == 1:
        return "yesterday"
    if days < 14:
        return _plural(days, "day")
    if days < 60:
        return _plural(days // 7, "week")
    if days < 730:
        return _plural(days // 30, "month")
    return _plural(days // 365, "year")


def _plural(n: int, unit: str) -> str:
    return f"{n} {unit}{'' if n == 1 else 's'} ago"


def resolve_relative_date(phrase: str | None, now: datetime) -> date | None:
    """Resolve a spoken date ("next Tuesday", "tomorrow", "in 3 days", "下週二",
    "2026-12-03", "Dec 3") against ``now``; ``None`` when it cannot be resolved.

    "next <weekday>" means the first such day after today (as most speakers use
    it); "this <weekday>" the one in the current week, or today.
    """
    if not phrase:
        return None
    text = phrase.strip().lower()
    today = now.date()
    iso = re.search(r"\b(\d{4})-(\d{1,2})-(\d{1,2})\b", text)
    if iso:
        try:
            return date(int(iso.group(1)), int(iso.group(2)), int(iso.group(3)))
        except ValueError:
            return None
    if re.search(r"\b(today|tonight|this (morning|afternoon|evening))\b", text) or "今天" in text or "今晚" in text:
        return today
    if "day after tomorrow" in text or "後天" in text or "后天" in text:
        return today + timedelta(days=2)
    if re.search(r"\btomorrow\b", text) or "明天" in text:
        return today + timedelta(days=1)
    if re.search(r"\byesterday\b", text) or "昨天" in text:
        return today - timedelta(days=1)
    match = re.search(r"\bin (\d+|an?|one|two|three|four|five|six|seven|eight|nine|ten|a couple of|a few) (day|week|month)s?\b", text)
    if match:
        amount_raw = match.group(1).replace("a couple of", "couple of").replace("a few", "few")
        amount = int(amount_raw) if amount_raw.isdigit() else _NUMBER_WORDS.get(amount_raw, 1)
        unit = {"day": 1, "week": 7, "month": 30}[match.group(2)]
        return today + timedelta(days=amount * unit)
    if re.search(r"\bnext week\b", text) or "下週" == text or "下周" == text:
        return today + timedelta(days=7 - today.weekday())
    zh = re.search(r"(下下|下|這|这|本)?(?:週|周|星期|禮拜|礼拜)([一二三四五六日天])", phrase)
    if zh:
        target = _ZH_WEEKDAY[zh.group(2)]
        prefix = zh.group(1) or ""
        monday = today - timedelta(days=today.weekday())
        weeks = 2 if prefix == "下下" else 1 if prefix == "下" else 0
        resolved = monday + timedelta(days=7 * weeks + target)
        if not prefix and resolved < today:
            resolved += timedelta(days=7)
        return resolved
    match = re.search(r"\b(next|this|on|coming)?\s*(" + "|".join(list(WEEKDAYS) + list(_WEEKDAY_ABBR)) + r")\b", text)
    if match:
        word = match.group(2)
        target = WEEKDAYS.index(word) if word in WEEKDAYS else _WEEKDAY_ABBR[word]
        ahead = (target - today.weekday()) % 7
        if match.group(1) == "this":
            return today + timedelta(days=ahead)
        return today + timedelta(days=ahead or 7)
    return None
