"""Time helpers: the clock, relative-time labels and resolving "next Tuesday".

Memora never calls ``datetime.now()`` directly outside this module: every
component takes a ``clock``, so a test can move time forward ("three days
later") and check follow-ups and relative labels without waiting or faking
stored timestamps.
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


_MONTHS = {name: i + 1 for i, name in enumerate(
    ["january", "february", "march", "april", "may", "june", "july", "august", "september", "october", "november", "december"]
)}
_MONTH_WORD = r"(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sept?(?:ember)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
_ZH_DIGITS = {"零": 0, "一": 1, "二": 2, "兩": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9, "十": 10}
# A month and day said without a year that lies this many days or fewer in the
# past is the one just gone ("my test on Nov 20 went well"); further back, the
# speaker means next year's ("my exam is on Jan 5", said in December).
_RECENT_PAST_DAYS = 30


def _month_number(word: str) -> int:
    return next(number for name, number in _MONTHS.items() if name.startswith(word[:3]))


def _zh_number(text: str) -> int | None:
    """``3``, ``三``, ``十二``, ``二十``: small numbers as Chinese speakers write them."""
    if text.isdigit():
        return int(text)
    if not text or any(ch not in _ZH_DIGITS for ch in text):
        return None
    if "十" not in text:
        return _ZH_DIGITS[text] if len(text) == 1 else None
    tens, _, ones = text.partition("十")
    return (_ZH_DIGITS.get(tens, 1) if tens else 1) * 10 + (_ZH_DIGITS.get(ones, 0) if ones else 0)


def _month_day(month: int, day: int, today: date) -> date | None:
    """The date of ``month``/``day`` nearest to what a speaker means (see ``_RECENT_PAST_DAYS``)."""
    for year in (today.year, today.year + 1):
        try:
            candidate = date(year, month, day)
        except ValueError:
            return None
        if (today - candidate).days <= _RECENT_PAST_DAYS:
            return candidate
    return None


def _add_months(day: date, months: int) -> date:
    month_index = day.month - 1 + months
    year, month = day.year + month_index // 12, month_index % 12 + 1
    for last in (31, 30, 29, 28):
        try:
            return date(year, month, min(day.day, last))
        except ValueError:
            continue
    raise ValueError(day)  # pragma: no cover - every month has 28 days


def resolve_relative_date(phrase: str | None, now: datetime) -> date | None:
    """Resolve a spoken date against ``now``; ``None`` when it cannot be resolved.

    Handles ISO dates ("2026-12-03"), month and day ("Dec 3", "3rd of December",
    "12月3日"), today / tonight / tomorrow / yesterday and their Chinese forms,
    "in 3 days" / "in two weeks" / "3天後", weekdays ("next Tuesday", "on Fri",
    "下週二"), "next week" / "下週", "this weekend" / "週末", "next month" /
    "下個月". "next <weekday>" means the first such day after today (as most
    speakers use it); "this <weekday>" the one in the current week, or today.
    "next week" and "next month" resolve to their first day, the earliest date
    the plan can fall on, so a follow-up never comes before the event.
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
    named = re.search(_MONTH_WORD + r"\.?\s+(\d{1,2})(?:st|nd|rd|th)?\b", text) or re.search(
        r"\b(\d{1,2})(?:st|nd|rd|th)?\s+(?:of\s+)?" + _MONTH_WORD + r"\b", text
    )
    if named:
        first, second = named.group(1), named.group(2)
        month_word, day = (first, second) if not first.isdigit() else (second, first)
        return _month_day(_month_number(month_word), int(day), today)
    zh_date = re.search(r"([0-9一二三四五六七八九十]{1,3})月([0-9一二三四五六七八九十]{1,3})[日號号]", phrase)
    if zh_date:
        month, day = _zh_number(zh_date.group(1)), _zh_number(zh_date.group(2))
        return _month_day(month, day, today) if month and day else None
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
        if match.group(2) == "month":
            return _add_months(today, amount)
        return today + timedelta(days=amount * (7 if match.group(2) == "week" else 1))
    zh_later = re.search(r"([0-9一二三四五六七八九十兩两]{1,3})\s*(天|週|周|個星期|个星期|個月|个月)(?:後|后|以後|以后)", phrase)
    if zh_later and _zh_number(zh_later.group(1)):
        amount, unit = _zh_number(zh_later.group(1)), zh_later.group(2)
        if unit.endswith("月"):
            return _add_months(today, amount)
        return today + timedelta(days=amount * (1 if unit == "天" else 7))
    if re.search(r"\bnext month\b", text) or re.search(r"下(個|个)?月", phrase):
        return _add_months(today.replace(day=1), 1)
    if re.search(r"\bnext weekend\b", text) or re.search(r"下(個|个)?(週末|周末)", phrase):
        # Said on a weekday: the weekend after the coming one; said at the weekend: the next one.
        weekday = today.weekday()
        return today + timedelta(days=(5 - weekday) % 7 or 7) if weekday >= 5 else today + timedelta(days=5 - weekday + 7)
    if re.search(r"\b(this |the )?weekend\b", text) or "週末" in phrase or "周末" in phrase:
        return today + timedelta(days=(5 - today.weekday()) % 7 if today.weekday() <= 5 else 0)
    if re.search(r"\bnext week\b", text) or re.fullmatch(r"下(個|个)?(週|周|星期|禮拜|礼拜)", phrase.strip()):
        return today + timedelta(days=7 - today.weekday())
    zh = re.search(r"(下下|下|這|这|本)?(?:個|个)?(?:週|周|星期|禮拜|礼拜)([一二三四五六日天])", phrase)
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
