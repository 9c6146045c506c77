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


_MONTH_NUMBERS = {name: i + 1 for i, name in enumerate(
    ["january", "february", "march", "april", "may", "june", "july", "august", "september", "october", "november", "december"]
)}
_MONTH_WORD = r"(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sept?(?:ember)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
_ZH_DIGITS = {"零": 0, "一": 1, "二": 2, "兩": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9, "十": 10}
# A month and day said without a year that lies this many days or fewer in the
# past is the one just gone ("my test on Nov 20 went well"); further back, the
# speaker means next year's ("my exam is on Jan 5", said in December).
_RECENT_PAST_DAYS = 30


def _month_number(word: str) -> int:
    return next(number for name, number in _MONTH_NUMBERS.items() if name.startswith(word[:3]))


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
    if "大後天" in text or "大后天" in text:  # three days on; it contains 後天, so it is read first
        return today + timedelta(days=3)
    if "day after tomorrow" in text or "後天" in text or "后天" in text:
        return today + timedelta(days=2)
    if re.search(r"\btomorrow\b", text) or "明天" in text:
        return today + timedelta(days=1)
    if "day before yesterday" in text or "前天" in text:  # before "yesterday", which it contains
        return today - timedelta(days=3 if "大前天" in text else 2)
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


# -- dates as the model should read them ------------------------------------------------
# The background shows every memory with the day it was said, and rewrites the
# relative time phrases inside it ("next Tuesday", "明天", "last month") into
# absolute dates placed relative to *now*. A phrase is only true at the moment
# it was said: "has a test next Tuesday", read ten days later, names a day that
# has already passed, and a model reading it literally would wish the learner
# luck for a test that is over.

_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_DAY_ABBR = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")


def local_date(moment: datetime, now: datetime) -> date:
    """The calendar day of ``moment`` in the time zone of ``now``."""
    return to_aware(moment).astimezone(to_aware(now).tzinfo).date()


def short_date(day: date, today: date, *, weekday: bool = False) -> str:
    """``Tue 24 Nov`` (``24 Nov`` without the weekday); the year only when it is not this one."""
    text = f"{day.day} {_MONTHS[day.month - 1]}"
    if weekday:
        text = f"{_DAY_ABBR[day.weekday()]} {text}"
    return text if day.year == today.year else f"{text} {day.year}"


def relative_days(day: date, today: date) -> str:
    """``today``, ``tomorrow``, ``in 4 days``, ``6 days ago``, ``in 3 weeks``, ``2 months ago``..."""
    delta = (day - today).days
    if delta == 0:
        return "today"
    if delta == 1:
        return "tomorrow"
    if delta == -1:
        return "yesterday"
    size = abs(delta)
    if size < 14:
        amount = _count(size, "day")
    elif size < 60:
        amount = _count(size // 7, "week")
    elif size < 730:
        amount = _count(size // 30, "month")
    else:
        amount = _count(size // 365, "year")
    return f"in {amount}" if delta > 0 else f"{amount} ago"


def _count(n: int, unit: str) -> str:
    return f"{n} {unit}{'' if n == 1 else 's'}"


def on_day(day: date, today: date) -> str:
    """``on Tue 24 Nov (6 days ago)``: a dated plan, absolute and relative to today."""
    return f"on {short_date(day, today, weekday=True)} ({relative_days(day, today)})"


_NUM = r"(?:\d+|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|a couple of|a few|several)"
_WEEKDAY = r"(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)"
_PART = r"(?:\s+(?P<{}>morning|afternoon|evening|night))?"
_ZH_DAY = r"[一二三四五六日天]"
_ZH_WEEK = r"(?:週|周|星期|禮拜|礼拜)"
_ZH_NUM = {"一": 1, "兩": 2, "两": 2, "二": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9, "十": 10}

# Each alternative names its kind in a group; ``_resolve`` turns a match into
# (granularity, date). Longer phrases come first so "the day after tomorrow"
# is never read as "tomorrow".
_RELATIVE = re.compile(
    "|".join(
        [
            r"\bthe day after tomorrow\b",
            r"\bthe day before yesterday\b",
            r"\b(?P<tomorrow>tomorrow)" + _PART.format("tpart") + r"\b",
            r"\b(?P<yesterday>yesterday)" + _PART.format("ypart") + r"\b",
            r"\blast night\b",
            r"\b(?:later )?today\b|\btonight\b|\bthis (?:morning|afternoon|evening)\b",
            r"\b(?:on )?(?P<wd_rel>next|this coming|this|coming|last)\s+(?P<wd>" + _WEEKDAY + r")\b",
            r"\bin (?P<in_n>" + _NUM + r") (?P<in_unit>day|week|month|year)s?(?: time)?\b",
            r"\b(?P<ago_n>" + _NUM + r") (?P<ago_unit>day|week|month|year)s? ago\b",
            r"\b(?:on |at |over )?(?P<we_rel>this coming|this|next|last) weekend\b",
            r"\b(?:on|at|over) the (?P<we_the>weekend)\b",
            r"\b(?P<span_rel>next|this|last) (?P<span>week|month|year)\b",
            r"大後天|大后天|後天|后天|明天|明晚|今天|今晚|昨天|昨晚|前天",
            r"(?<!每)(?P<zh_rel>下下|下個|下个|下|這個|这个|這|这|本|上個|上个|上)?" + _ZH_WEEK + r"(?P<zh_wd>" + _ZH_DAY + r")",
            r"(?<!每)(?P<zh_we>下|這|这|本|上)?(?:個|个)?" + r"(?:週末|周末)",
            r"(?P<zh_span_rel>下個|下个|下|這個|这个|這|这|本|上個|上个|上)(?P<zh_span>週|周|星期|禮拜|礼拜|月)",
            r"明年|今年|去年",
            r"(?P<zh_n>\d+|[一兩两二三四五六七八九十])(?:個|个)?(?P<zh_unit>天|週|周|星期|禮拜|礼拜|月)(?P<zh_dir>後|后|前)",
        ]
    ),
    re.IGNORECASE,
)

# A bare weekday or weekend ("on Friday", "at the weekend", "週二", "週末")
# names a day only in a plan or an event; in a habit ("has yoga on Friday",
# "週末爬山") it means every week, so it is left alone there.
_BARE_WEEKDAY = re.compile(r"\bon (?P<wd>" + _WEEKDAY + r")\b(?!s)", re.IGNORECASE)


def _amount(raw: str) -> int:
    raw = raw.lower().replace("a couple of", "couple of").replace("a few", "few")
    if raw.isdigit():
        return int(raw)
    return {**_NUMBER_WORDS, "eleven": 11, "twelve": 12, "several": 3}.get(raw, 1)


def _weekday_on(target: int, base: date, relation: str) -> date:
    ahead = (target - base.weekday()) % 7
    if relation == "last":
        return base - timedelta(days=(base.weekday() - target) % 7 or 7)
    if relation == "this":
        return base + timedelta(days=ahead)
    return base + timedelta(days=ahead or 7)  # next, coming, on: the first one after today


def _shift_months(day: date, months: int) -> date:
    index = day.year * 12 + day.month - 1 + months
    return date(index // 12, index % 12 + 1, 1)


def _resolve(match: re.Match, base: date) -> tuple[str, date, str] | None:
    """(granularity, date, part of day) of a relative phrase said on ``base``."""
    text = match.group(0).lower()
    g = match.groupdict()
    part = (g.get("tpart") or g.get("ypart") or "").lower()
    if text == "the day after tomorrow" or text in ("後天", "后天"):
        return "day", base + timedelta(days=2), ""
    if text in ("大後天", "大后天"):
        return "day", base + timedelta(days=3), ""
    if text == "the day before yesterday" or text == "前天":
        return "day", base - timedelta(days=2), ""
    if g.get("tomorrow") or text in ("明天", "明晚"):
        return "day", base + timedelta(days=1), part or ("night" if text == "明晚" else "")
    if g.get("yesterday") or text in ("昨天", "昨晚", "last night"):
        return "day", base - timedelta(days=1), part or ("night" if text in ("昨晚", "last night") else "")
    if text in ("today", "later today", "今天"):
        return "day", base, ""
    if text in ("tonight", "今晚"):
        return "day", base, "night"
    if text in ("this morning", "this afternoon", "this evening"):
        return "day", base, text.split()[1]
    if g.get("wd"):
        relation = g["wd_rel"].lower().split()[-1] if g.get("wd_rel") else "on"
        relation = "next" if relation == "coming" else relation
        return "day", _weekday_on(WEEKDAYS.index(g["wd"].lower()), base, relation), ""
    if g.get("in_n") or g.get("ago_n"):
        n = _amount(g.get("in_n") or g.get("ago_n"))
        unit = (g.get("in_unit") or g.get("ago_unit")).lower()
        sign = 1 if g.get("in_n") else -1
        if unit == "day":
            return "day", base + timedelta(days=sign * n), ""
        if unit == "week":
            return "about", base + timedelta(days=sign * 7 * n), ""
        if unit == "month":
            return "about", _shift_months(base, sign * n).replace(day=min(base.day, 28)), ""
        return "about", base.replace(year=base.year + sign * n, day=min(base.day, 28)), ""
    if g.get("we_rel") or g.get("we_the"):
        relation = (g.get("we_rel") or "this").lower().split()[0]
        return _resolve_weekend(relation, base)
    if g.get("span"):
        return _span(g["span"].lower(), g["span_rel"].lower(), base)
    if g.get("zh_wd"):
        prefix = g.get("zh_rel") or ""
        target = _ZH_WEEKDAY[g["zh_wd"]]
        monday = base - timedelta(days=base.weekday())
        weeks = {"下下": 2, "下個": 1, "下个": 1, "下": 1, "上個": -1, "上个": -1, "上": -1}.get(prefix, 0)
        day = monday + timedelta(days=7 * weeks + target)
        if not prefix and day < base:
            day += timedelta(days=7)
        return "day", day, ""
    if "週末" in text or "周末" in text:
        prefix = g.get("zh_we") or ""
        relation = {"下": "next", "上": "last"}.get(prefix, "this")
        return _resolve_weekend(relation, base)
    if g.get("zh_span"):
        span = "month" if g["zh_span"] == "月" else "week"
        prefix = g["zh_span_rel"]
        relation = "next" if prefix.startswith("下") else "last" if prefix.startswith("上") else "this"
        return _span(span, relation, base)
    if text in ("明年", "今年", "去年"):
        return _span("year", {"明年": "next", "今年": "this", "去年": "last"}[text], base)
    if g.get("zh_n"):
        raw = g["zh_n"]
        n = int(raw) if raw.isdigit() else _ZH_NUM.get(raw, 1)
        sign = -1 if g["zh_dir"] == "前" else 1
        unit = g["zh_unit"]
        if unit == "天":
            return "day", base + timedelta(days=sign * n), ""
        if unit == "月":
            return "about", _shift_months(base, sign * n).replace(day=min(base.day, 28)), ""
        return "about", base + timedelta(days=sign * 7 * n), ""
    return None


def _resolve_weekend(relation: str, base: date) -> tuple[str, date, str]:
    saturday = base + timedelta(days=(5 - base.weekday()) % 7)
    if base.weekday() == 6:
        saturday = base - timedelta(days=1)  # on a Sunday, "this weekend" is the one under way
    saturday += timedelta(days={"next": 7, "last": -7}.get(relation, 0))
    return "weekend", saturday, ""


def _span(span: str, relation: str, base: date) -> tuple[str, date, str]:
    step = {"next": 1, "last": -1}.get(relation, 0)
    if span == "week":
        return "week", base - timedelta(days=base.weekday()) + timedelta(days=7 * step), ""
    if span == "month":
        return "month", _shift_months(base.replace(day=1), step), ""
    return "year", date(base.year + step, 1, 1), ""


def _label(granularity: str, day: date, today: date, part: str = "") -> str:
    if granularity == "day":
        if part:
            return f"on the {part} of {short_date(day, today, weekday=True)} ({relative_days(day, today)})"
        return on_day(day, today)
    if granularity == "about":
        return f"around {short_date(day, today, weekday=True)} ({relative_days(day, today)})"
    if granularity == "weekend":
        if 0 <= (today - day).days <= 1:
            where = "this weekend"
        else:
            where = relative_days(day, today)
        return f"on the weekend of {short_date(day, today, weekday=True)} ({where})"
    if granularity == "week":
        offset = (day - (today - timedelta(days=today.weekday()))).days // 7
        where = {0: "this week", 1: "next week", -1: "last week"}.get(offset) or relative_days(day, today)
        return f"in the week of {short_date(day, today, weekday=True)} ({where})"
    if granularity == "month":
        offset = (day.year - today.year) * 12 + day.month - today.month
        where = {0: "this month", 1: "next month", -1: "last month"}.get(offset) or (
            f"in {offset} months" if offset > 0 else f"{-offset} months ago"
        )
        return f"in {_MONTHS[day.month - 1]} {day.year} ({where})"
    offset = day.year - today.year
    where = {0: "this year", 1: "next year", -1: "last year"}.get(offset) or (
        f"in {offset} years" if offset > 0 else f"{-offset} years ago"
    )
    return f"in {day.year} ({where})"


_PAST_POINTING = re.compile(r"\b(?:yesterday|last|ago)\b|昨|前天|上|去年|前$", re.IGNORECASE)


def resolve_time_phrases(
    text: str,
    said_at: datetime,
    now: datetime,
    *,
    event_date: date | None = None,
    bare_weekdays: bool = False,
) -> str:
    """``text`` with its relative time phrases replaced by absolute dates placed
    relative to ``now`` ("next Tuesday", said on Sun 29 Nov and read on 9 Dec,
    becomes "on Tue 1 Dec (8 days ago)").

    ``event_date``, when known, is the authority for the first forward-looking
    phrase (it was resolved when the learner spoke); with no phrase to replace
    it is appended, so a dated plan always shows its date. ``bare_weekdays``
    also rewrites "on Friday" (plans and events only: in a habit it recurs).
    """
    today = local_date(now, now)
    base = local_date(said_at, now)
    used_event = event_date is None
    pieces: list[str] = []
    last = 0
    spans = [(m, False) for m in _RELATIVE.finditer(text)]
    if bare_weekdays:
        taken = [(m.start(), m.end()) for m, _ in spans]
        for m in _BARE_WEEKDAY.finditer(text):
            if all(m.end() <= a or m.start() >= b for a, b in taken):
                spans.append((m, True))
        spans.sort(key=lambda pair: pair[0].start())
    for match, bare in spans:
        g = match.groupdict()
        if not bare and not bare_weekdays and (
            g.get("we_the") or (g.get("zh_wd") and not g.get("zh_rel")) or (match.group(0).endswith(("週末", "周末")) and not g.get("zh_we"))
        ):
            continue
        try:
            if bare:
                resolved = ("day", _weekday_on(WEEKDAYS.index(match.group("wd").lower()), base, "on"), "")
            else:
                resolved = _resolve(match, base)
        except (ValueError, OverflowError):  # "in 99999 years": past the calendar, left as said
            resolved = None
        if resolved is None:
            continue
        granularity, day, part = resolved
        if not used_event and not _PAST_POINTING.search(match.group(0)):
            granularity, day, used_event = "day", event_date, True
        before, after = text[last : match.start()], text[match.end() : match.end() + 1]
        label = _label(granularity, day, today, part)
        if before and not before[-1].isspace() and before[-1] not in "([\"'\u201c":
            label = " " + label  # Chinese has no spaces around words: "下週二有考試"
        if after and not after.isspace() and after not in ".,;:!?)]\"'\u201d\u3002\uff0c\uff1b\uff1a\uff01\uff1f":
            label += " "
        pieces.extend((before, label))
        last = match.end()
    pieces.append(text[last:])
    result = "".join(pieces)
    if not used_event:
        result = f"{result.rstrip().rstrip('.')} \u2014 {on_day(event_date, today)}"
    return result
