"""Spoken dates resolve against the moment they were said, in English and Chinese."""

from __future__ import annotations

from datetime import date, datetime

import pytest

from memora.core import timeutil
from memora.core.timeutil import resolve_event_date, resolve_relative_date

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
    # abbreviations and misspellings
    (SUNDAY, "next Tues", date(2026, 12, 1)),
    (SUNDAY, "on Thurs", date(2026, 12, 3)),
    (SUNDAY, "next Mon.", date(2026, 11, 30)),
    (WEDNESDAY, "next Weds", date(2026, 12, 9)),
    (SUNDAY, "tmrw", date(2026, 11, 30)),
    (SUNDAY, "tmr night", date(2026, 11, 30)),
    # past forms: the day gone, not the coming one
    (SUNDAY, "last Friday", date(2026, 11, 27)),
    (SUNDAY, "this past Friday", date(2026, 11, 27)),
    (WEDNESDAY, "last Wednesday", date(2026, 11, 25)),
    (SUNDAY, "two days ago", date(2026, 11, 27)),
    (SUNDAY, "a week ago", date(2026, 11, 22)),
    (SUNDAY, "last week", date(2026, 11, 16)),
    (WEDNESDAY, "last month", date(2026, 11, 1)),
    (SUNDAY, "上週五", date(2026, 11, 20)),  # the previous calendar week's Friday
    (WEDNESDAY, "上個月", date(2026, 11, 1)),
    (SUNDAY, "三天前", date(2026, 11, 26)),
    (SUNDAY, "大前天", date(2026, 11, 26)),
    # more ways to say an amount or a span ahead
    (SUNDAY, "in a fortnight", date(2026, 12, 13)),
    (SUNDAY, "two days from now", date(2026, 12, 1)),
    (SUNDAY, "a week from tomorrow", date(2026, 12, 7)),
    (SUNDAY, "in 10 days' time", date(2026, 12, 9)),
    (SUNDAY, "in a week's time", date(2026, 12, 6)),
    (SUNDAY, "the week after next", date(2026, 12, 7)),
    (SUNDAY, "Friday after next", date(2026, 12, 11)),
    (WEDNESDAY, "this week", date(2026, 12, 2)),  # under way: today, the earliest it can be
    (WEDNESDAY, "this month", date(2026, 12, 2)),
    (SUNDAY, "next summer", date(2027, 6, 1)),
    (SUNDAY, "next spring", date(2027, 3, 1)),
    (SUNDAY, "this winter", date(2026, 12, 1)),
    (SUNDAY, "下下週", date(2026, 12, 7)),
    (SUNDAY, "兩個星期後", date(2026, 12, 13)),
    (SUNDAY, "二十天後", date(2026, 12, 19)),
    (SUNDAY, "明年夏天", date(2027, 6, 1)),
    (SUNDAY, "Dec 3, 2027", date(2027, 12, 3)),
    (SUNDAY, "Monday the 7th", date(2026, 12, 7)),
    (SUNDAY, "the 3rd", date(2026, 12, 3)),
    (SUNDAY, "the 3rd of next month", date(2026, 12, 3)),
    (SUNDAY, "within 3 days", date(2026, 12, 2)),
    (SUNDAY, "next Thursday evening", date(2026, 12, 3)),
    (SUNDAY, "on Tuesday next week", date(2026, 12, 1)),
    (SUNDAY, "下下個月", date(2027, 1, 1)),
    (SUNDAY, "三天以後", date(2026, 12, 2)),
    (SUNDAY, "上禮拜五", date(2026, 11, 20)),
    (SUNDAY, "2027年1月5日", date(2027, 1, 5)),
    # past the calendar, or absurd for a plan: no date rather than an error
    (SUNDAY, "in 100000000 days", None),
    (SUNDAY, "in 3000000 months", None),
    (SUNDAY, "in 500 years", None),
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


SENTENCES = [
    # (phrase, the sentence it comes from, said on SUNDAY): the tense decides a bare day
    ("on Friday", "The learner had a speaking test on Friday.", date(2026, 11, 27)),
    ("on Friday", "The learner has a speaking test on Friday.", date(2026, 12, 4)),
    ("on Friday", "The learner is excited about the test on Friday.", date(2026, 12, 4)),
    ("Tues", "The learner finished the course on Tues.", date(2026, 11, 24)),
    ("this Friday", "The learner went hiking this Friday.", date(2026, 11, 27)),
    ("Nov 20", "The learner passed an exam on Nov 20.", date(2026, 11, 20)),
    ("Dec 20", "The learner moved house on Dec 20.", date(2025, 12, 20)),  # past tense: last year's
    ("Dec 20", "The learner moves house on Dec 20.", date(2026, 12, 20)),
    ("週五", "我週五考了試。", date(2026, 11, 27)),
    ("週五", "我週五要考試。", date(2026, 12, 4)),
]


@pytest.mark.parametrize(("phrase", "sentence", "expected"), SENTENCES, ids=[s[1] for s in SENTENCES])
def test_a_bare_day_in_a_sentence_about_the_past_is_the_one_just_gone(phrase, sentence, expected):
    assert resolve_relative_date(phrase, SUNDAY, sentence=sentence) == expected


EVENT_DATES = [
    # (model's event_date, event_phrase, fact text, stored date): the model read the whole sentence
    ("2026-11-27", "on Friday", "The learner had a speaking test on Friday.", date(2026, 11, 27)),
    ("2026-11-27", "Friday", "The learner had a speaking test Friday.", date(2026, 11, 27)),
    ("2026-12-03", "next week", "The learner has an exam next week.", date(2026, 12, 3)),
    (None, "next Tuesday", "The learner has an exam next Tuesday.", date(2026, 12, 1)),
    (
        "2026-13-45",
        "next Tuesday",
        "The learner has an exam next Tuesday.",
        date(2026, 12, 1),
    ),  # unreadable: the phrase
    ("9999-12-31", "someday", "The learner will retire someday.", None),  # absurd: no date
    (None, "in 100000000 days", "The learner will travel in 100000000 days.", None),
    (None, "in 3000000 months", "The learner will travel in 3000000 months.", None),
    (None, None, "The learner has a test tomorrow.", date(2026, 11, 30)),  # no phrase given: the text's
    (None, None, "The learner has a test.", None),
    (None, None, "The learner sat the exam and has another on Friday.", date(2026, 12, 4)),  # "sat" is the verb
    (None, "when the sun sets", "The learner jogs when the sun sets.", None),
]


@pytest.mark.parametrize(
    ("stated", "phrase", "text", "expected"), EVENT_DATES, ids=[f"{e[0]}|{e[1]}" for e in EVENT_DATES]
)
def test_the_models_date_wins_and_a_bad_date_is_dropped_not_raised(stated, phrase, text, expected):
    assert resolve_event_date(stated, phrase, SUNDAY, sentence=text) == expected


# -- every rule of the grammar runs ------------------------------------------------------
# Each rule in timeutil carries its own examples ("phrase -> granularity day [part]",
# said on EXAMPLE_DAY); a rule with none fails here, so no rule goes unrun.

RULE_EXAMPLES = [
    pytest.param(rule, example, id=f"{rule.key}: {example}") for rule in timeutil._RULES for example in rule.examples
]


@pytest.mark.parametrize("rule", timeutil._RULES, ids=lambda rule: rule.key)
def test_every_grammar_rule_has_examples(rule):
    assert rule.examples, f"the rule {rule.key!r} has no example"


@pytest.mark.parametrize(("rule", "example"), RULE_EXAMPLES)
def test_a_grammar_rule_reads_its_examples(rule, example):
    past = example.startswith("past: ")
    phrase, expected = example.removeprefix("past: ").split(" -> ")
    match = timeutil._GRAMMAR.search(phrase)
    assert match is not None and match.group(0) == phrase and match.lastgroup == rule.group
    [first, *_] = timeutil._mentions(phrase, timeutil.EXAMPLE_DAY, phrase=True, past=past)
    assert " ".join(filter(None, (first.granularity, first.day.isoformat(), first.part))) == expected


# A sentence with no time word skips the grammar (``_TIME_HINT``); every way a phrase can be
# written still reaches it: any case, full-width digits, Chinese, short forms.
@pytest.mark.parametrize(
    "text",
    [
        "See you TOMORROW at the station",
        "We rest on SUNDAY",
        "Back in a FORTNIGHT",
        "The exam is on the \uff13rd",  # full-width digit
        "Since Last Winter I swim",
        "\u4e0b\u9031\u4e09\u898b",  # 下週三見
        "She left two WKS ago",
        "Tonite we cook",
    ],
)
def test_every_way_of_writing_a_time_phrase_still_reaches_the_grammar(text):
    assert timeutil._GRAMMAR.search(text)
    assert timeutil._mentions(text, timeutil.EXAMPLE_DAY)


def test_a_sentence_without_a_time_word_has_no_time_phrase():
    assert timeutil._mentions("I love hiking with my dog and painting landscapes", timeutil.EXAMPLE_DAY) == []
