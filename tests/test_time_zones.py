"""A learner who changes time zone: what they said keeps the day it was said on,
and is shown relative to the day where they are now.

The clock is moved between zones as a travelling laptop moves: the process's
zone (``TZ``) and the clock's together, so every ``astimezone()`` in Memora sees
the zone the learner is in. 2026: Thu 3 Dec, Fri 4 Dec, Sat 5 Dec...
"""

from __future__ import annotations

import json
import os
import time
from datetime import datetime
from zoneinfo import ZoneInfo

import pytest
from helpers.scripts import decision_input, extraction, fact, say

LA, TOKYO = "America/Los_Angeles", "Asia/Tokyo"
NEW_YORK, LONDON, SYDNEY, KOLKATA = "America/New_York", "Europe/London", "Australia/Sydney", "Asia/Kolkata"
KIRITIMATI, PAGO_PAGO = "Pacific/Kiritimati", "Pacific/Pago_Pago"  # UTC+14 and UTC-11: a day and an hour apart


@pytest.fixture
def travel(clock):
    """``travel(zone, y, m, d, h, min)``: the learner is in ``zone`` at that local time."""
    saved = os.environ.get("TZ")

    def to(zone: str, *when: int) -> datetime:
        os.environ["TZ"] = zone
        time.tzset()
        clock.now = datetime(*when, tzinfo=ZoneInfo(zone))
        return clock.now

    yield to
    if saved is None:
        os.environ.pop("TZ", None)
    else:
        os.environ["TZ"] = saved
    time.tzset()


# (said where and when, typed, read where and when, what the tutor is sent in the digest)
REMEMBERED = [
    # Thu 23:30 in Los Angeles is Fri 16:30 in Tokyo: "tomorrow" was Friday, which is today
    (
        (LA, 2026, 12, 3, 23, 30),
        "remember I have my driving test tomorrow",
        (TOKYO, 2026, 12, 4, 17, 10),
        'Learner said: "I have my driving test on Fri 4 Dec (today)"',
    ),
    (
        (LA, 2026, 12, 3, 23, 30),
        "remember I'm calling my mum tonight",
        (TOKYO, 2026, 12, 4, 17, 10),
        'Learner said: "I\'m calling my mum on the night of Thu 3 Dec (yesterday)"',
    ),
    (
        (LA, 2026, 12, 3, 23, 30),
        "remember I fly home in 3 days",
        (TOKYO, 2026, 12, 4, 17, 10),
        'Learner said: "I fly home on Sun 6 Dec (in 2 days)"',
    ),
    (
        (LA, 2026, 12, 3, 23, 30),
        "remember 我明天考駕照",
        (TOKYO, 2026, 12, 4, 17, 10),
        'Learner said: "我 on Fri 4 Dec (today) 考駕照"',
    ),
    # Mon 22:00 in Los Angeles is Tue 15:00 in Tokyo: "next Tuesday" said on a Monday is the day after
    (
        (LA, 2026, 12, 7, 22, 0),
        "remember I have an interview next Tuesday",
        (TOKYO, 2026, 12, 8, 18, 0),
        'Learner said: "I have an interview on Tue 8 Dec (today)"',
    ),
    # the other way, back across the date line: Fri 08:00 in Tokyo is Thu 15:00 in Los Angeles
    (
        (TOKYO, 2026, 12, 4, 8, 0),
        "remember I have my driving test tomorrow",
        (LA, 2026, 12, 3, 20, 0),
        'Learner said: "I have my driving test on Sat 5 Dec (in 2 days)"',
    ),
    # Mon 10:00 in Tokyo is Sun 17:00 in Los Angeles: "this weekend" said on a Monday is the coming one
    (
        (TOKYO, 2026, 12, 7, 10, 0),
        "remember we go camping this weekend",
        (LA, 2026, 12, 6, 20, 0),
        'Learner said: "we go camping on the weekend of Sat 12 Dec (in 6 days)"',
    ),
    (
        (TOKYO, 2026, 12, 7, 8, 0),
        "remember 我們下週二考試",
        (LA, 2026, 12, 6, 20, 0),
        'Learner said: "我們 on Tue 15 Dec (in 9 days) 考試"',
    ),
    # other pairs: a half-hour zone read where it is still the day before
    (
        (KOLKATA, 2026, 12, 3, 23, 50),
        "remember I have my driving test tomorrow",
        (NEW_YORK, 2026, 12, 3, 14, 0),
        'Learner said: "I have my driving test on Fri 4 Dec (tomorrow)"',
    ),
    # the date line's two ends: Fri 00:30 at UTC+14 is Thu 10:30 at UTC-11
    (
        (KIRITIMATI, 2026, 12, 4, 0, 30),
        "remember I'm calling my mum tonight",
        (PAGO_PAGO, 2026, 12, 3, 12, 0),
        'Learner said: "I\'m calling my mum on the night of Fri 4 Dec (tomorrow)"',
    ),
    (
        (TOKYO, 2026, 12, 4, 1, 0),
        "remember 我後天考試",
        (LONDON, 2026, 12, 3, 18, 0),
        'Learner said: "我 on Sun 6 Dec (in 3 days) 考試"',
    ),
    # across the end of summer time: London's Sat 24 Oct 23:30 (BST), read in Sydney after its start
    (
        (LONDON, 2026, 10, 24, 23, 30),
        "remember I have my driving test tomorrow",
        (SYDNEY, 2026, 10, 26, 10, 0),
        'Learner said: "I have my driving test on Sun 25 Oct (yesterday)"',
    ),
    # New York's night the clocks go back (Sun 1 Nov 01:30 comes twice): "tomorrow" of Saturday is today
    (
        (NEW_YORK, 2026, 10, 31, 23, 30),
        "remember I have my driving test tomorrow",
        (NEW_YORK, 2026, 11, 1, 1, 30),
        'Learner said: "I have my driving test on Sun 1 Nov (today)"',
    ),
    # the night the clocks go forward (Sun 8 Mar 2026 in Los Angeles): three days are still three days
    (
        (LA, 2026, 3, 7, 23, 30),
        "remember I fly home in 3 days",
        (LA, 2026, 3, 9, 0, 30),
        'Learner said: "I fly home on Tue 10 Mar (tomorrow)"',
    ),
]


@pytest.mark.parametrize("said, typed, read, shown", REMEMBERED, ids=[r[1] for r in REMEMBERED])
def test_a_time_phrase_keeps_the_day_it_was_said_on_after_the_learner_changes_zone(
    make_app, server, run_repl, travel, said, typed, read, shown
):
    travel(*said)
    app = make_app()
    run_repl(app, [typed])
    app.close()
    travel(*read)
    later = make_app()
    later.chat("Hello again!", on_delta=lambda _: None)
    assert shown in server.chats[-1].section("learner_digest")
    assert [r.content for r in later.store.list()] == [typed.removeprefix("remember ")]  # stored as typed


# (said where and when, the learner's message, the extracted fact, read where and when, the digest's line)
EXTRACTED = [
    # a plan with a stored date was right before: it stays right
    (
        (LA, 2026, 12, 3, 23, 30),
        "My driving test is tomorrow!",
        fact("The learner has a driving test tomorrow.", "schedule", event_phrase="tomorrow"),
        (TOKYO, 2026, 12, 4, 17, 10),
        "- Plans and events: [4 Dec] The learner has a driving test on Fri 4 Dec (today).",
    ),
    (
        (LA, 2026, 12, 3, 23, 30),
        "My sister arrives tomorrow.",
        fact("The learner's sister arrives tomorrow.", "identity"),
        (TOKYO, 2026, 12, 4, 17, 10),
        "- About them: [4 Dec] The learner's sister arrives on Fri 4 Dec (today).",
    ),
    (
        (TOKYO, 2026, 12, 4, 8, 0),
        "My sister arrives tomorrow.",
        fact("The learner's sister arrives tomorrow.", "identity"),
        (LA, 2026, 12, 3, 20, 0),
        "- About them: [3 Dec] The learner's sister arrives on Sat 5 Dec (in 2 days).",
    ),
    (
        (KOLKATA, 2026, 12, 3, 23, 50),
        "My sister arrives tomorrow.",
        fact("The learner's sister arrives tomorrow.", "identity"),
        (NEW_YORK, 2026, 12, 3, 14, 0),
        "- About them: [3 Dec] The learner's sister arrives on Fri 4 Dec (tomorrow).",
    ),
    (
        (SYDNEY, 2026, 10, 4, 1, 30),  # Sydney's summer time starts at 02:00 that night
        "My interview is the day after tomorrow.",
        fact("The learner has an interview the day after tomorrow.", "schedule", event_phrase="the day after tomorrow"),
        (LONDON, 2026, 10, 5, 9, 0),
        "- Plans and events: [3 Oct] The learner has an interview on Tue 6 Oct (tomorrow).",
    ),
    (
        (PAGO_PAGO, 2026, 12, 3, 22, 0),  # Fri 23:00 at UTC+14
        "My sister arrives tomorrow.",
        fact("The learner's sister arrives tomorrow.", "identity"),
        (KIRITIMATI, 2026, 12, 5, 9, 0),
        "- About them: [4 Dec] The learner's sister arrives on Fri 4 Dec (yesterday).",
    ),
]


@pytest.mark.parametrize("said, message, extracted, read, line", EXTRACTED, ids=[e[2]["text"] for e in EXTRACTED])
def test_an_extracted_fact_keeps_the_day_it_was_said_on_after_the_learner_changes_zone(
    make_app, server, travel, said, message, extracted, read, line
):
    travel(*said)
    app = make_app()
    server.script("extraction", extraction(extracted))
    say(app, message)
    app.close()
    travel(*read)
    later = make_app()
    later.chat("Hello again!", on_delta=lambda _: None)
    assert line in server.chats[-1].section("learner_digest").split("\n")


def test_every_view_of_a_memory_resolves_it_where_it_was_said(make_app, server, run_repl, travel, tmp_path):
    """The retrieved memories, the follow-up hint, the digest, a decision's listing and
    the export: the phrase is read on the day it was said, shown relative to today here."""
    travel(LA, 2026, 12, 3, 23, 30)  # Thu, Los Angeles: Fri 16:30 in Tokyo
    app = make_app()
    plan = "The learner flies to Osaka tomorrow and comes back in 3 days."
    server.script("extraction", extraction(fact(plan, "schedule", event_phrase="tomorrow")))
    say(app, "I fly to Osaka tomorrow and come back in 3 days.")
    run_repl(app, ["remember my driving test is tomorrow"])
    for minute, line in [(31, "remember I like green tea"), (32, "remember I play the cello")]:
        travel(LA, 2026, 12, 3, 23, minute)  # newer: the digest shows these two, not the driving test
        run_repl(app, [line])
    app.close()

    travel(TOKYO, 2026, 12, 5, 18, 0)  # Sat, Tokyo
    later = make_app()
    server.script("extraction", extraction(fact("The learner's flight back is on Sunday.", "schedule")))
    later.chat("How will my driving test go?", on_delta=lambda _: None)
    assert later.wait_for_extraction(10)
    request = server.chats[-1]
    shown_plan = "The learner flies to Osaka on Fri 4 Dec (yesterday) and comes back on Sun 6 Dec (tomorrow)."
    assert f"- Plans and events: [4 Dec] {shown_plan}" in request.section("learner_digest")
    assert request.section("follow_up").startswith(
        f"Follow-up: on Fri 4 Dec (yesterday) the learner mentioned this plan: {shown_plan[:-1]}. "
    )
    assert 'Learner said: "my driving test is on Fri 4 Dec (yesterday)"' in request.section("long_term_memories")
    _, listed = decision_input(server.of_kind("reconcile")[-1])
    assert shown_plan in listed.values()

    # the export keeps when each memory was said as it was said: in Los Angeles
    run_repl(later, [f"export {tmp_path / 'out.json'}"])
    exported = json.loads((tmp_path / "out.json").read_text())
    said = {m["content"]: m["created_at"] for m in exported["memories"]}
    assert said[plan] == "2026-12-03T23:30:00-08:00"
    assert said["my driving test is tomorrow"] == "2026-12-03T23:30:00-08:00"
