"""Spoken dates resolve against the moment they were said, in English and Chinese."""

from __future__ import annotations

from datetime import date, datetime

import pytest

from memora.engine.timeutil import resolve_relative_date

SUNDAY = datetime(2026, 11, 29, 10, 0).astimezone()  # the tests' default clock
WEDNESDAY = datetime(2026, 12, 2, 18, 30).astimezone()

CASES = [
    # (said at, phrase, resolved date or None)
    (SUNDAY, "2026-12-03", date(2026, 12, 3)),
    (SUNDAY, "on 2027-01-15 at noon", date(2027, 1, 15)),
    (SUNDAY, "2026-02-30", None),  # no such day
    (SUNDAY, "Dec 3", date(2026, 12, 3)),
    (SUNDAY, "on December 3rd", date(2026, 12, 3)),
    (SUNDAY, "the 3rd of December", date(2026, 12, 3)),
    (SUNDAY, "3 Dec", date(2026, 12, 3)),
    (SUNDAY, "Jan 5", date(2027, 1, 5)),  # January, said in November: next year's
    (SUNDAY, "Nov 20", date(2026, 11, 20)),  # nine days ago: the one just gone
    (SUNDAY, "Feb 30", None),
    (SUNDAY, "12月3日", date(2026, 12, 3)),
    (SUNDAY, "十二月三號", date(2026, 12, 3)),
    (SUNDAY, "1月5号", date(2027, 1, 5)),
    (SUNDAY, "today", date(2026, 11, 29)),
    (SUNDAY, "tonight", date(2026, 11, 29)),
    (SUNDAY, "今晚", date(2026, 11, 29)),
    (SUNDAY, "tomorrow morning", date(2026, 11, 30)),
    (SUNDAY, "明天", date(2026, 11, 30)),
    (SUNDAY, "the day after tomorrow", date(2026, 12, 1)),
    (SUNDAY, "後天", date(2026, 12, 1)),
    (SUNDAY, "大後天", date(2026, 12, 2)),
    (SUNDAY, "前天", date(2026, 11, 27)),
    (SUNDAY, "the day before yesterday", date(2026, 11, 27)),
    (SUNDAY, "yesterday", date(2026, 11, 28)),
    (SUNDAY, "昨天", date(2026, 11, 28)),
    (SUNDAY, "in 3 days", date(2026, 12, 2)),
    (SUNDAY, "in two weeks", date(2026, 12, 13)),
    (SUNDAY, "in a couple of days", date(2026, 12, 1)),
    (SUNDAY, "in a month", date(2026, 12, 29)),
    (SUNDAY, "3天後", date(2026, 12, 2)),
    (SUNDAY, "兩週後", date(2026, 12, 13)),
    (SUNDAY, "next Tuesday", date(2026, 12, 1)),
    (SUNDAY, "on Friday", date(2026, 12, 4)),
    (SUNDAY, "Sunday", date(2026, 12, 6)),  # a bare weekday is the next one, never today
    (SUNDAY, "this Sunday", date(2026, 11, 29)),
    (SUNDAY, "下週二", date(2026, 12, 1)),
    (SUNDAY, "下下週一", date(2026, 12, 7)),
    (SUNDAY, "星期五", date(2026, 12, 4)),
    (SUNDAY, "next week", date(2026, 11, 30)),
    (SUNDAY, "下週", date(2026, 11, 30)),
    (SUNDAY, "this weekend", date(2026, 11, 29)),
    (SUNDAY, "next weekend", date(2026, 12, 5)),
    (WEDNESDAY, "this weekend", date(2026, 12, 5)),
    (WEDNESDAY, "週末", date(2026, 12, 5)),
    (WEDNESDAY, "next weekend", date(2026, 12, 12)),
    (WEDNESDAY, "next Wednesday", date(2026, 12, 9)),
    (WEDNESDAY, "this Friday", date(2026, 12, 4)),
    (WEDNESDAY, "next month", date(2027, 1, 1)),
    (WEDNESDAY, "下個月", date(2027, 1, 1)),
    (WEDNESDAY, "in 2 months", date(2027, 2, 2)),
    (SUNDAY, "soon", None),
    (SUNDAY, "someday", None),
    (SUNDAY, "may I ask", None),
    (SUNDAY, "", None),
    (SUNDAY, None, None),
]


@pytest.mark.parametrize(("now", "phrase", "expected"), CASES, ids=[repr(c[1]) for c in CASES])
def test_a_spoken_date_resolves_to_the_day_the_speaker_means(now, phrase, expected):
    assert resolve_relative_date(phrase, now) == expected


def test_a_month_end_plus_one_month_lands_on_the_last_day_of_a_shorter_month():
    assert resolve_relative_date("in a month", datetime(2027, 1, 31, 9).astimezone()) == date(2027, 2, 28)
