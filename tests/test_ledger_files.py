"""What the ledger and the activity log may hold, and their limits.

* What an import accepts, Memora can run: every ledger entry, review card and
  day of activity is checked as a memory is (aware times within 1970-2999, FSRS
  fields in FSRS's own ranges, counts that can be, ids Memora makes), and a
  file that fails is refused whole in one line naming the field.
* The same checks when Memora reads its own files: a hand-edited entry is left
  out with one line, the rest is kept, and the file as it was is kept beside it;
  no later command ends in a traceback (the REPL re-raises in tests).
* The ledger's limit: an import over it is refused in one line, never cut by
  position; a full ledger says so once and never drops an active entry.

The zones are west of UTC for times near year 1 and east of it near 9999,
where ``astimezone()`` overflows.
"""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime, timedelta

import pytest

from memora.teaching import spaced
from memora.teaching.ledger import MAX_MISTAKES, Example, LedgerStore, Mistake, NewMistake

WEST, EAST = "America/New_York", "Pacific/Kiritimati"
GOED = NewMistake(
    original="Yesterday I goed to the market.",
    corrected="Yesterday I went to the market.",
    rule="go → went: irregular past tense",
    kind="grammar",
)
DONT = NewMistake(original="He don't like tea", corrected="He doesn't like tea", rule="third person -s", kind="grammar")


@pytest.fixture
def zone(monkeypatch):
    """``zone("America/New_York")`` makes that the local time zone for the test."""

    def use(name: str) -> None:
        monkeypatch.setenv("TZ", name)
        time.tzset()

    yield use
    monkeypatch.undo()
    time.tzset()


def errors_of(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("Error:")]


# -- what a file may hold: one table for the ledger, one for the activity log ---------------------
def _card(entry: dict) -> dict:
    return entry["card"]


def _set(where, key, value):
    def edit(entry: dict) -> None:
        where(entry)[key] = value

    return edit


def _entry(entry):
    return entry


def _review(entry):
    return entry["reviews"][0]


def _example(entry):
    return entry["examples"][0]


NAIVE = "2026-11-29T10:00:00"
YEAR_1 = "0001-01-01T00:00:00+00:00"
YEAR_9999 = "9999-12-31T23:00:00+00:00"

# name: (the edit of the first entry, a word the one line must name, the local zone)
ENTRY_EDITS = {
    "card due without offset": (_set(_card, "due", NAIVE), "due", WEST),
    "card last review without offset": (_set(_card, "last_review", NAIVE), "last_review", WEST),
    "first seen without offset": (_set(_entry, "first_seen", NAIVE), "first_seen", WEST),
    "last seen without offset": (_set(_entry, "last_seen", NAIVE), "last_seen", WEST),
    "example seen without offset": (_set(_example, "seen_at", NAIVE), "seen_at", WEST),
    "review time without offset": (_set(_review, "at", NAIVE), "reviews", WEST),
    "first seen in year 1": (_set(_entry, "first_seen", YEAR_1), "first_seen", WEST),
    "example seen in year 1": (_set(_example, "seen_at", YEAR_1), "seen_at", WEST),
    "mastered in year 1": (_set(_entry, "mastered_at", YEAR_1), "mastered_at", WEST),
    "card due in year 1": (_set(_card, "due", YEAR_1), "due", WEST),
    "last seen in 9999": (_set(_entry, "last_seen", YEAR_9999), "last_seen", EAST),
    "card due in 9999": (_set(_card, "due", YEAR_9999), "due", EAST),
    "last seen as a number": (_set(_entry, "last_seen", 1_800_000_000), "last_seen", WEST),
    "negative stability": (_set(_card, "stability", -5), "stability", WEST),
    "zero stability": (_set(_card, "stability", 0), "stability", WEST),
    "stability past any date": (_set(_card, "stability", 1e300), "stability", WEST),
    "stability as text": (_set(_card, "stability", "high"), "stability", WEST),
    "difficulty under 1": (_set(_card, "difficulty", 0.5), "difficulty", WEST),
    "difficulty over 10": (_set(_card, "difficulty", 11), "difficulty", WEST),
    "a reviewed card without stability": (_set(_card, "stability", None), "stability", WEST),
    "a card in review with a learning step": (_set(_card, "step", 0), "step", WEST),
    "a card in relearning without a step": (
        lambda e: _card(e).update(state=3, step=None),
        "step",
        WEST,
    ),
    "a negative relearning step": (lambda e: _card(e).update(state=3, step=-1), "step", WEST),
    "a state given as text": (_set(_card, "state", "2"), "state", WEST),
    "a card id that is not a number": (_set(_card, "card_id", "one"), "card_id", WEST),
    "a card with a field fsrs does not know": (_set(_card, "interval", 3), "interval", WEST),
    "a count of zero": (_set(_entry, "count", 0), "count", WEST),
    "a count below its examples": (
        lambda e: e.update(examples=[_example(e)] * 3, count=2),
        "count",
        WEST,
    ),
    "a count as a fraction": (_set(_entry, "count", 1.5), "count", WEST),
    "an id in capitals": (lambda e: e.update(id=e["id"].upper()), "id", WEST),
    "an id that is too short": (lambda e: e.update(id=e["id"][:4]), "id", WEST),
    "an id that is not hex": (_set(_entry, "id", "mzzzzz"), "id", WEST),
    "card due in 3000": (_set(_card, "due", "3000-01-01T00:00:00+00:00"), "due", EAST),
    "first seen in 1969": (_set(_entry, "first_seen", "1969-12-31T12:00:00+00:00"), "first_seen", WEST),
    "stability not a number": (_set(_card, "stability", float("nan")), "stability", WEST),
    "difficulty infinite": (_set(_card, "difficulty", float("inf")), "difficulty", WEST),
    "no example": (_set(_entry, "examples", []), "example", WEST),
    "a review rated 5": (_set(_review, "rating", 5), "rating", WEST),
    "a review rated true": (_set(_review, "rating", True), "rating", WEST),
    "a card type memora does not make": (_set(_entry, "card_type", "sentence"), "card_type", WEST),
    "last seen before first seen": (_set(_entry, "last_seen", "2020-01-01T00:00:00+00:00"), "last_seen", WEST),
    "a card state memora does not know": (_set(_card, "state", 7), "state", WEST),
}


# Refused by import before these tables were written (test_learning's edited-entry test
# covers them there); still rows of the load tests, which they used to pass.
IMPORT_REFUSED_ALREADY = {"a count of zero", "a count as a fraction", "an id in capitals"}
# What the import's one line names instead of the field: a number JSON has not is not JSON,
# and an import also refuses what Memora never writes itself (it can run it: see below).
IMPORT_SAYS = {
    "stability not a number": "NaN",
    "difficulty infinite": "Infinity",
    "no example": "no example",
    "last seen before first seen": "dates out of order",
}
# Memora runs these (an entry with no example shows none, dates out of order are only
# shown), so its own file keeps them; an import refuses them as not what Memora writes.
RUNS_AS_IT_IS = {"no example", "last seen before first seen"}


def _day(name, **counts):
    def edit(days: dict) -> None:
        days[name] = {"turns": 1, "reviews": 0, "correct": 0, **counts}

    return edit


def _counts(**counts):
    def edit(days: dict) -> None:
        first = next(iter(days))
        days[first] = {**days[first], **counts}

    return edit


# name: (the edit of the days, a word the one line must name)
ACTIVITY_EDITS = {
    "more correct reviews than reviews": (_counts(reviews=2, correct=9), "correct"),
    "correct reviews and none done": (_counts(reviews=0, correct=1), "correct"),
    "negative turns": (_counts(turns=-3), "turns"),
    "negative reviews": (_counts(reviews=-1, correct=0), "reviews"),
    "a count as text": (_counts(turns="5"), "turns"),
    "a count as a fraction": (_counts(turns=2.5), "turns"),
    "a count no day can reach": (_counts(turns=10**12), "turns"),
    "a day in year 1": (_day("0001-01-01"), "0001-01-01"),
    "a day in 3000": (_day("3000-01-01"), "3000-01-01"),
    "reviews given as true": (_counts(reviews=True, correct=True), "reviews"),
    "a day that is not a date": (_day("yesterday"), "yesterday"),
    "a day of month 13": (_day("2026-13-01"), "2026-13-01"),
    "a count the log does not keep": (_counts(minutes=30), "minutes"),
    "a day's counts as a list": (lambda days: days.update({"2026-11-20": [1, 0, 0]}), "2026-11-20"),
}


def _learner_with_two_reviewed_mistakes(make_app, clock, **overrides):
    """Two mistakes, both reviewed once (cards in review), and a day of activity."""
    app = make_app(base_url=None, api_key=None, **overrides)
    first, _ = app.ledger.record(GOED)
    second, _ = app.ledger.record(DONT)
    for entry in (first, second):
        app.ledger.review(entry.id, 3)
        app.activity.record_review(True)
    app.activity.record_turn()
    return app, first, second


# An entry as Memora wrote it while its cards were dicts (fsrs's ``Card.to_dict()``): a
# mistake reviewed once, then made again in chat (a lapse, with the card as it was before).
UNTYPED_CARDS_ENTRY = {
    "id": "m4b170",
    "kind": "grammar",
    "rule": "go → went: irregular past tense",
    "examples": [
        {
            "original": "Yesterday I goed to the market.",
            "corrected": "Yesterday I went to the market.",
            "seen_at": "2026-03-02T09:00:00Z",
        }
    ],
    "count": 2,
    "first_seen": "2026-03-02T09:00:00Z",
    "last_seen": "2026-03-05T09:00:00Z",
    "card": {
        "card_id": 1772442000000,
        "state": 3,
        "step": 0,
        "stability": 0.6368506992409603,
        "difficulty": 7.394502741279718,
        "due": "2026-03-05T00:00:00+00:00",
        "last_review": "2026-03-05T00:00:00+00:00",
    },
    "reviews": [
        {"at": "2026-03-02T09:00:00Z", "rating": 3, "source": "drill", "before": None},
        {
            "at": "2026-03-05T09:00:00Z",
            "rating": 1,
            "source": "chat",
            "before": {
                "card": {
                    "card_id": 1772442000000,
                    "state": 2,
                    "step": None,
                    "stability": 2.3065,
                    "difficulty": 2.118103970459016,
                    "due": "2026-03-04T00:00:00+00:00",
                    "last_review": "2026-03-02T00:00:00+00:00",
                },
                "mastered_at": None,
                "count": 1,
            },
        },
    ],
    "mastered_at": None,
    "card_type": "mistake",
}


def test_a_ledger_written_before_cards_were_typed_loads_and_is_written_back_the_same(tmp_path):
    path = tmp_path / "memora_mistakes.json"
    path.write_text(json.dumps({"version": 1, "mistakes": [UNTYPED_CARDS_ENTRY]}, indent=2))
    now = datetime(2026, 3, 6, 9, 0, tzinfo=UTC)
    ledger = LedgerStore(path, clock=lambda: now)
    [entry] = ledger.all()
    assert (entry.card.state, entry.card.step, entry.card.stability) == (3, 0, 0.6368506992409603)
    assert entry.due == entry.card.due.date() and not entry.card.is_new
    ledger.record(DONT)  # the file is written again, the old entry with it
    assert json.loads(path.read_text())["mistakes"][0] == UNTYPED_CARDS_ENTRY
    restored = ledger.take_back(entry.id, datetime(2026, 3, 5, 9, 0, tzinfo=UTC))  # the card before the lapse
    assert restored.card.model_dump(mode="json") == UNTYPED_CARDS_ENTRY["reviews"][1]["before"]["card"]


# -- import ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "case", [c for c in ENTRY_EDITS if c not in IMPORT_REFUSED_ALREADY], ids=lambda c: c.replace(" ", "-")
)
def test_an_import_whose_ledger_memora_cannot_run_is_refused_in_one_line_naming_the_field(
    make_app, run_repl, tmp_path, clock, zone, case
):
    edit, field, local = ENTRY_EDITS[case]
    zone(local)
    app, _, _ = _learner_with_two_reviewed_mistakes(make_app, clock)
    path = tmp_path / "backup.json"
    run_repl(app, [f"export {path}"])
    data = json.loads(path.read_text())
    edit(data["mistakes"][0])
    path.write_text(json.dumps(data))
    app.ledger.clear()
    app.activity.clear()

    t = run_repl(app, [f"import {path}", "mistakes", "progress", "review"])

    [error] = errors_of(t.text)
    assert "backup.json" in error and error.endswith("Nothing was imported."), error
    assert IMPORT_SAYS.get(case, field) in error, error
    assert app.ledger.count() == 0 and app.activity.days() == {}
    assert "Nothing to review today." in t.text


@pytest.mark.parametrize(
    "case", [c for c in ACTIVITY_EDITS if c != "a count as a fraction"], ids=lambda c: c.replace(" ", "-")
)
def test_an_import_whose_activity_cannot_be_is_refused_in_one_line_naming_the_field(
    make_app, run_repl, tmp_path, clock, zone, case
):
    edit, field = ACTIVITY_EDITS[case]
    zone(WEST)
    app, _, _ = _learner_with_two_reviewed_mistakes(make_app, clock)
    path = tmp_path / "backup.json"
    run_repl(app, [f"export {path}"])
    data = json.loads(path.read_text())
    edit(data["activity"])
    path.write_text(json.dumps(data))
    app.ledger.clear()
    app.activity.clear()

    t = run_repl(app, [f"import {path}", "progress"])

    [error] = errors_of(t.text)
    assert "backup.json" in error and error.endswith("Nothing was imported."), error
    assert field in error, error
    assert app.activity.days() == {} and app.ledger.count() == 0
    assert "Reviews: 0 done, 0 correct" in t.text


# -- Memora's own files, edited by hand -----------------------------------------------------------
@pytest.mark.parametrize("case", sorted(RUNS_AS_IT_IS), ids=lambda c: c.replace(" ", "-"))
def test_a_hand_edited_entry_memora_can_run_is_kept_and_every_command_works(make_app, run_repl, clock, case):
    edit, _, _ = ENTRY_EDITS[case]
    app, edited, kept = _learner_with_two_reviewed_mistakes(make_app, clock)
    app.close()
    data = json.loads(app.paths.mistakes.read_text())
    edit(data["mistakes"][0])
    app.paths.mistakes.write_text(json.dumps(data))
    clock.advance(days=5)  # both cards due
    again = make_app(base_url=None, api_key=None)
    t = run_repl(again, ["mistakes", "progress", "review", "He doesn't like tea", "3", "mistakes"])
    assert errors_of(t.text) == [] and "Unexpected" not in t.text
    assert "saved (1 right)" in t.text  # the review ran and saved its answer
    assert {m.id for m in again.ledger.all()} == {edited.id, kept.id}


@pytest.mark.parametrize("case", [c for c in ENTRY_EDITS if c not in RUNS_AS_IT_IS], ids=lambda c: c.replace(" ", "-"))
def test_a_hand_edited_ledger_entry_is_left_out_in_one_line_and_every_command_still_works(
    make_app, run_repl, clock, zone, case
):
    edit, field, local = ENTRY_EDITS[case]
    zone(local)
    app, broken, kept = _learner_with_two_reviewed_mistakes(make_app, clock)
    app.close()
    path = app.paths.mistakes
    data = json.loads(path.read_text())
    edit(data["mistakes"][0])
    edited = json.dumps(data, indent=2)
    path.write_text(edited)
    clock.advance(days=5)  # both cards due

    notices: list[str] = []
    again = make_app(base_url=None, api_key=None, notices=notices)
    t = run_repl(again, ["mistakes", "progress", "review", "He doesn't like tea", "3", "mistakes"])

    said = [line for line in notices + t.text.splitlines() if "memora_mistakes.json" in line]
    assert len(said) == 1, said
    [copy] = path.parent.glob("memora_mistakes.json.corrupt-*")
    assert field in said[0] and copy.name in said[0] and "left out" in said[0], said[0]
    assert copy.read_text() == edited  # nothing the learner wrote is lost
    assert [m.id for m in again.ledger.all()] == [kept.id]
    assert "Review done: 1 answer saved (1 right)." in t.text
    assert len(again.ledger.get(kept.id).reviews) == 2
    assert broken.id not in t.text.split("You: mistakes", 1)[1]
    again.close()
    later: list[str] = []
    run_repl(make_app(base_url=None, api_key=None, notices=later), ["mistakes"])
    assert not [line for line in later if "memora_mistakes.json" in line]  # repaired once, not at every start


@pytest.mark.parametrize("case", list(ACTIVITY_EDITS), ids=lambda c: c.replace(" ", "-"))
def test_a_hand_edited_activity_day_is_left_out_in_one_line_and_progress_adds_up(make_app, run_repl, clock, zone, case):
    edit, field = ACTIVITY_EDITS[case]
    zone(WEST)
    app = make_app(base_url=None, api_key=None)
    yesterday = clock() - timedelta(days=1)
    app.activity.record_turn(yesterday)
    app.activity.record_review(True, yesterday)
    app.activity.record_review(False, yesterday)
    app.activity.record_turn()
    app.close()
    path = app.paths.activity
    data = json.loads(path.read_text())
    days = {key: data["days"].pop(key) for key in sorted(data["days"])}  # the edit takes the first: yesterday
    edit(days)
    data["days"] = days
    edited = json.dumps(data)
    path.write_text(edited)

    notices: list[str] = []
    again = make_app(base_url=None, api_key=None, notices=notices)
    t = run_repl(again, ["progress", "progress --since 3d"])

    said = [line for line in notices + t.text.splitlines() if "memora_activity.json" in line]
    assert len(said) == 1 and field in said[0] and "left out" in said[0], said
    [copy] = path.parent.glob("memora_activity.json.corrupt-*")
    assert copy.read_text() == edited
    for line in t.text.splitlines():
        if line.startswith("Reviews:"):
            done, correct = (int(n) for n in line.split()[1:4:2])
            assert 0 <= correct <= done, line
    assert clock().date() in again.activity.days()  # today's day was kept


# -- the ledger's limit ---------------------------------------------------------------------------
def entries(n: int, *, start: int = 0, mastered: tuple[int, ...] = (), now: datetime) -> list[Mistake]:
    """``n`` distinct ledger entries with ids from ``start``; entry ``i`` was last made
    ``n - i`` hours before ``now`` (the first, longest ago); ``mastered`` are mastered."""
    made = []
    for i in range(start, start + n):
        seen = now - timedelta(hours=start + n - i)
        card = spaced.ReviewCard.new(seen)
        reviews = []
        if i in mastered:
            card = card.review(3, seen)
            reviews = [{"at": seen, "rating": 3}, {"at": seen, "rating": 3}]
        made.append(
            Mistake(
                id=f"m{i:05x}",
                kind="spelling",
                rule=f"spelling of word number {i}",
                examples=[Example(original=f"wurd{i}", corrected=f"word{i}", seen_at=seen)],
                first_seen=seen,
                last_seen=seen,
                card=card,
                reviews=reviews,
                mastered_at=seen if i in mastered else None,
            )
        )
    return made


@pytest.mark.parametrize(
    "here, in_file, already_here",
    [(600, 600, 0), (1000, 1, 0), (999, 2, 0), (1, 1000, 0), (700, 400, 50)],
    ids=["600-onto-600", "1-onto-1000", "2-onto-999", "1000-onto-1", "350-new-onto-700"],
)
def test_an_import_that_would_pass_the_ledger_limit_is_refused_in_one_line_and_keeps_every_entry(
    make_app, run_repl, tmp_path, clock, here, in_file, already_here
):
    app = make_app(base_url=None, api_key=None)
    path = tmp_path / "backup.json"
    run_repl(app, [f"export {path}"])
    data = json.loads(path.read_text())
    theirs = entries(already_here, now=clock()) + entries(in_file - already_here, start=here, now=clock())
    data["mistakes"] = [m.model_dump(mode="json") for m in theirs]
    path.write_text(json.dumps(data))
    mine = entries(here, now=clock())
    app.ledger.replace_all(mine)
    before = app.paths.mistakes.read_bytes()

    t = run_repl(app, [f"import {path}"])

    [error] = errors_of(t.text)
    over = here + in_file - already_here - MAX_MISTAKES
    assert "backup.json" in error and error.endswith("Nothing was imported."), error
    assert f"{over:,} over its limit of {MAX_MISTAKES:,}" in error, error
    assert "added" not in t.text
    assert app.paths.mistakes.read_bytes() == before
    assert [m.id for m in app.ledger.all()] == [m.id for m in mine]


def _extraction(*mistakes, asked=()):
    return {
        "facts": [],
        "profile_changes": [],
        "corrections": [],
        "mistakes": [m.model_dump() for m in mistakes],
        "asked_words": list(asked),
    }


NEW_MISTAKES = [
    GOED,
    DONT,
    NewMistake(original="I am agree with you", corrected="I agree with you", rule="agree is a verb", kind="grammar"),
]
WORD = {"word": "ubiquitous", "meaning": "found everywhere"}


@pytest.mark.parametrize(
    "mastered, adding",
    [
        ((), "mistakes"),
        ((400,), "mistakes"),
        ((900, 30, 500), "mistakes"),
        ((10, 20, 30, 40), "mistakes"),
        ((), "a word card"),
        ((700, 300), "a word card"),
    ],
    ids=["none-mastered", "one-mastered", "three-mastered", "four-mastered", "word-none-mastered", "word-two-mastered"],
)
def test_a_full_ledger_says_so_once_and_never_drops_an_active_entry(
    make_app, run_repl, server, clock, mastered, adding
):
    app = make_app()
    mine = entries(MAX_MISTAKES, mastered=mastered, now=clock() - timedelta(days=1))
    app.ledger.replace_all(mine)
    repeat = NewMistake(original="wurd5", corrected="word5", rule="spelling of word number 5", kind="spelling")
    if adding == "mistakes":
        for new in NEW_MISTAKES:
            server.script("extraction", _extraction(new))
        server.script("extraction", _extraction(repeat))
        lines = [m.original for m in NEW_MISTAKES] + ["I wrote wurd5 again"]
    else:
        server.script("extraction", _extraction(asked=[WORD]))
        lines = ["What does ubiquitous mean", "yes"]

    t = run_repl(app, lines)

    after = {m.id: m for m in app.ledger.all()}
    active = [m.id for m in mine if m.mastered_at is None]
    assert all(i in after for i in active)  # no active entry is ever dropped
    wanted = 3 if adding == "mistakes" else 1
    oldest_mastered = [m.id for m in mine if m.mastered_at is not None][:wanted]  # made longest ago first
    dropped = [m.id for m in mine if m.id not in after]
    assert dropped == oldest_mastered
    assert len(after) == MAX_MISTAKES
    full = [line for line in t.text.splitlines() if "mistake ledger is full" in line]
    if oldest_mastered:  # said once, naming the first entry it replaced
        [line] = [line for line in full if "takes the place" in line]
        assert oldest_mastered[0] in line and line.startswith("Note: ")
    if len(oldest_mastered) < wanted:  # what could not be recorded, also once
        [line] = [line for line in full if "none of them mastered" in line]
        assert line.startswith("Error: " if adding == "a word card" else "Note: ")
    assert len(full) == (len(oldest_mastered) > 0) + (len(oldest_mastered) < wanted)
    if adding == "mistakes":
        assert after["m00005"].count == 2  # a repeat still counts at the limit
