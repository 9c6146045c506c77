"""Memora's judgments about text, on the case tables written from real text (issue 28):
``tests/helpers/judgment_cases.py``. ``bench/judgments.py`` runs the same judgments
over the LoCoMo conversations."""

from __future__ import annotations

from datetime import date, datetime, timedelta

from helpers.judgment_cases import (
    CONFLICTS,
    EXAMS,
    NOT_CONFLICTS,
    OPPOSITE_CORRECTIONS,
    ROUTING_COMMANDS,
    ROUTING_SENTENCES,
    ROUTING_TYPOS,
)

from memora.app.recall import next_exam, plan_kind
from memora.cli.commands import COMMANDS
from memora.cli.routing import CHAT, COMMAND, TYPO, route
from memora.core.records import MemoryRecord
from memora.store.pairs import find_conflicts
from memora.teaching.ledger import NewMistake, same_mistake

SHAPES = {name: command.shape for command in COMMANDS for name in (command.name, *command.aliases)}


def _routed(line: str) -> tuple[str, str | None]:
    if line.startswith("\\"):
        return CHAT, None  # the REPL's rule, before routing
    where = route(line, SHAPES)
    return where.kind, where.name or None


def test_no_english_sentence_that_opens_with_a_command_word_runs_it():
    openings = {line.split()[0].strip("!,.").lower() for line, _ in ROUTING_SENTENCES}
    assert len(ROUTING_SENTENCES) >= 60 and len(openings) >= 15
    assert [(line, _routed(line)) for line, _ in ROUTING_SENTENCES if _routed(line)[0] != CHAT] == []


def test_the_forms_that_cannot_be_sentences_stay_commands():
    wrong = [
        (line, _routed(line))
        for line, name in ROUTING_COMMANDS
        if _routed(line) != ((COMMAND, name) if name else (CHAT, None))
    ]
    assert wrong == []


def test_typos_still_get_did_you_mean():
    assert [(line, _routed(line)) for line, meant in ROUTING_TYPOS if _routed(line) != (TYPO, meant)] == []


def test_profile_clear_asks_before_it_empties_the_profile(make_app, run_repl):
    app = make_app()
    app.profiles.set_english_level("B1")
    t = run_repl(app, ["profile clear", "no"])
    assert "Cancelled" in t.text and app.profiles.get().english_level == "B1"
    run_repl(app, ["profile clear", "yes"])
    assert app.profiles.get().english_level is None


# -- exams and interviews ----------------------------------------------------------------------
def _plan(text: str, category: str, day: date | None = None) -> MemoryRecord:
    return MemoryRecord(
        id="p", content=text, created_at=datetime(2025, 5, 1, 12).astimezone(), category=category, event_date=day
    )


def test_an_exam_or_an_interview_is_what_the_plan_is_not_a_word_in_it():
    assert len(EXAMS) >= 30 and {kind for *_, kind in EXAMS} == {"exam", "interview", None}
    assert [
        (text, kind, plan_kind(_plan(text, category)))
        for text, category, kind in EXAMS
        if plan_kind(_plan(text, category)) != kind
    ] == []


def test_only_an_exam_pulls_the_review_forward(make_app):
    store = make_app().store
    day = date.today() + timedelta(days=3)
    for text, category, kind in EXAMS:
        store.add(text, category=category, event_date=day + timedelta(days=0 if kind != "exam" else 1))
    when, text = next_exam(store, date.today())
    assert when == day + timedelta(days=1) and (text, "schedule", "exam") in EXAMS


def test_the_nearest_exam_is_a_current_one_from_today_on(make_app):
    store, today = make_app().store, date.today()
    exams = [text for text, category, kind in EXAMS if kind == "exam" and category == "schedule"][:4]
    for text, days in zip(exams, (-1, 0, 6, 3)):
        store.add(text, category="schedule", event_date=today + timedelta(days=days))
    assert next_exam(store, today) == (today, exams[1])  # yesterday's is over; today's is the nearest
    store.delete(store.find_exact(exams[1]).id)
    assert next_exam(store, today) == (today + timedelta(days=3), exams[3])
    assert next_exam(store, today + timedelta(days=7)) is None


# -- opposite corrections ----------------------------------------------------------------------
def test_a_correction_and_its_reverse_never_merge_whatever_the_rule_text():
    assert sum(not same for *_, same in OPPOSITE_CORRECTIONS) >= 10
    wrong = []
    for a, b, same in OPPOSITE_CORRECTIONS:
        first, second = (NewMistake(original=o, corrected=c, rule=r, kind=k) for o, c, r, k in (a, b))
        if same_mistake(first, second) is not same or same_mistake(second, first) is not same:
            wrong.append((a[:2], b[:2]))
    assert wrong == []


# -- conflicts -----------------------------------------------------------------------------------
def _flagged(older: str, newer: str) -> list[str]:
    """What the page flags for two memories stored with ``remember`` (compared with everything)."""
    when = datetime(2025, 5, 1, 12).astimezone()
    records = [
        MemoryRecord(id=f"m{n}", content=text, created_at=when + timedelta(days=n), source="command")
        for n, text in enumerate((older, newer))
    ]
    return [c.reason for c in find_conflicts(records)]


def test_restatements_relatives_and_other_things_are_not_conflicts():
    assert len(NOT_CONFLICTS) >= 60
    assert [(a, b, _flagged(a, b)) for a, b in NOT_CONFLICTS if _flagged(a, b)] == []


def test_every_kind_of_real_change_is_flagged_however_it_is_worded():
    assert len(CONFLICTS) >= 35
    assert [(a, b) for a, b in CONFLICTS if not _flagged(a, b)] == []
