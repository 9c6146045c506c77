"""The mistake ledger's parts on their own: the merge rule, FSRS with an injected
clock, mastery, the activity log, the Anki deck and the progress report."""

from __future__ import annotations

import os
import sqlite3
import zipfile
from datetime import UTC, datetime, timedelta

import pytest

from memora.teaching import spaced
from memora.teaching.activity import ActivityLog
from memora.teaching.ledger import LedgerStore, NewMistake, correction_edits, relevant, same_mistake

T0 = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)


def mistake(original, corrected, rule, kind="grammar"):
    return NewMistake(original=original, corrected=corrected, rule=rule, kind=kind)


GOED = mistake("Yesterday I goed to the market.", "Yesterday I went to the market.", "go → went: irregular past tense")


@pytest.fixture
def ledger(tmp_path, clock):
    return LedgerStore(tmp_path / "memora_mistakes.json", clock=clock)


# -- the merge rule ----------------------------------------------------------------------

SAME = [
    # the same correction in another sentence, the rule worded differently
    (GOED, mistake("We goed home late", "We went home late", "past tense of go")),
    # the same rule, and the corrections share the word they put right
    (GOED, mistake("I go there yesterday", "I went there yesterday", "go → went: irregular past tense")),
    # case of the sentence start does not make two corrections differ
    (
        mistake("Their is a cat", "There is a cat", "there vs their", "word choice"),
        mistake("I think their is time", "I think there is time", "There vs their.", "word choice"),
    ),
    # a capitalisation mistake is a change of case only, and is still the same one
    (
        mistake("i live in Taipei", "I live in Taipei", "capitalise I", "punctuation"),
        mistake("yes, i know", "yes, I know", "Capitalise I.", "punctuation"),
    ),
    # a missing article: same insertion
    (
        mistake("I am student", "I am a student", "a before a singular noun"),
        mistake("She is teacher", "She is a teacher", "A before a singular noun"),
    ),
    # the same changed words in another form, the rule worded differently or not at all alike
    (
        mistake("He don't like tea", "He doesn't like tea", "third person singular: doesn't"),
        mistake("My sister don't eat meat", "My sister doesn't eat meat", "Use does not with he, she and it."),
    ),
    (
        mistake("I have to do a decision", "I have to make a decision", "make a decision, not do", "word choice"),
        mistake("Yesterday I did a decision", "Yesterday I made a decision", "make a decision, not do", "word choice"),
    ),
    (
        mistake("We did a mistake", "We made a mistake", "we make mistakes", "word choice"),
        mistake("Don't do a mistake", "Don't make a mistake", "collocation: make + mistake", "word choice"),
    ),
    # case and apostrophes folded: "Its" and "it’s" are the words of "its" and "it's"
    (
        mistake("Its raining again", "It's raining again", "it's = it is", "punctuation"),
        mistake("I think its too late", "I think it’s too late", "it is, contracted, has an apostrophe", "spelling"),
    ),
    (
        mistake("They was late", "They were late", "plural subject: were"),
        mistake("We was happy", "We were happy", "were after we"),
    ),
    (
        mistake("He can't swims", "He can't swim", "base form after can't"),
        mistake("She can't swims well", "She can’t swim well", "modal + bare infinitive"),
    ),
]
DIFFERENT = [
    # the same generic rule, but a different word put right
    (
        mistake("I eated rice", "I ate rice", "irregular past tense"),
        mistake("I goed home", "I went home", "irregular past tense"),
    ),
    # opposite corrections
    (
        mistake("a apple", "an apple", "an before a vowel sound"),
        mistake("an book", "a book", "a before a consonant sound"),
    ),
    # different mistakes in the same kind
    (
        mistake("I am agree", "I agree", "agree is a verb"),
        mistake("He don't like it", "He doesn't like it", "third person -s"),
    ),
    # a spelling slip is not its correct neighbour's grammar slip
    (
        mistake("I recieved it", "I received it", "i before e", "spelling"),
        mistake("I receive it yesterday", "I received it yesterday", "past tense"),
    ),
    # the same words changed in the other direction
    (mistake("in Monday", "on Monday", "on with days"), mistake("on 2020", "in 2020", "in with years")),
    # the same function word or comma inserted or dropped, for unrelated reasons
    (
        mistake("I want go home", "I want to go home", "want + to-infinitive"),
        mistake("I listen music", "I listen to music", "listen to + object"),
    ),
    (
        mistake("See you in Monday", "See you on Monday", "on with days"),
        mistake("I am in the bus", "I am on the bus", "on with buses and trains"),
    ),
    (
        mistake("Yes I do", "Yes, I do", "comma after yes", "punctuation"),
        mistake("Let's eat grandma", "Let's eat, grandma", "comma before a name you address", "punctuation"),
    ),
    (
        mistake("I am agree", "I agree", "agree is a verb"),
        mistake("I am come from Taipei", "I come from Taipei", "no be before a main verb"),
    ),
    # the opposites of the pairs that merge above
    (
        mistake("He don't like tea", "He doesn't like tea", "third person singular: doesn't"),
        mistake("I doesn't know", "I don't know", "don't after I"),
    ),
    (
        mistake("I did a decision", "I made a decision", "make a decision", "word choice"),
        mistake("I made my homework", "I did my homework", "do homework", "word choice"),
    ),
    (
        mistake("Its raining", "It's raining", "it's = it is", "punctuation"),
        mistake("The dog wagged it's tail", "The dog wagged its tail", "its: belonging to it", "punctuation"),
    ),
    (mistake("They was late", "They were late", "were"), mistake("I were tired", "I was tired", "was")),
    # the same word put into two different forms is two corrections
    (
        mistake("He don't like tea", "He doesn't like tea", "third person: doesn't"),
        mistake("Yesterday I don't go", "Yesterday I didn't go", "past: didn't"),
    ),
    (
        mistake("I have to do a decision", "I have to make a decision", "make a decision", "word choice"),
        mistake("I have to do a decision", "I have to take a decision", "take a decision", "word choice"),
    ),
    (mistake("I goed home", "I went home", "past of go"), mistake("He go home", "He goes home", "third person -s")),
]


@pytest.mark.parametrize("a, b", SAME)
def test_the_same_mistake_is_recognised_however_it_is_worded(a, b):
    assert same_mistake(a, b) and same_mistake(b, a)


@pytest.mark.parametrize("a, b", DIFFERENT)
def test_a_different_mistake_is_never_merged(a, b):
    assert not same_mistake(a, b) and not same_mistake(b, a)


def test_a_function_word_correction_merges_only_when_the_rules_agree():
    """The price of never merging two different mistakes: the same article added
    under two wordings of its rule stays two entries (a false split costs a second
    card; a false merge would drill the wrong rule)."""
    student = mistake("I am student", "I am a student", "a before a singular noun")
    assert same_mistake(student, mistake("She is teacher", "She is a teacher", "a before a singular noun"))
    assert not same_mistake(student, mistake("She is teacher", "She is a teacher", "article before a job"))


def test_correction_edits_name_what_changed():
    assert correction_edits("Yesterday I goed there", "yesterday I went there") == (("goed", "went"),)
    assert correction_edits("i goed home", "I went home") == (("goed", "went"),)
    assert correction_edits("i know", "I know") == (("i", "I"),)
    assert correction_edits("I am agree.", "I agree.") == (("am", ""),)


def test_a_repeat_counts_with_dates_and_keeps_three_examples(ledger, clock):
    first, merged = ledger.record(GOED)
    assert not merged and first.count == 1
    said = []
    for subject in ["We", "They", "She", "He"]:
        clock.advance(days=1)
        said.append(clock())
        entry, merged = ledger.record(mistake(f"{subject} goed out", f"{subject} went out", "go → went"))
        assert merged and entry.id == first.id
    [entry] = ledger.all()
    assert entry.count == 5
    assert entry.first_seen == first.first_seen and entry.last_seen == said[-1]
    assert [e.original for e in entry.examples] == ["They goed out", "She goed out", "He goed out"]


def test_the_same_message_read_twice_counts_once(ledger, clock):
    ledger.record(GOED, seen_at=clock())
    entry, _ = ledger.record(GOED, seen_at=clock())
    assert entry.count == 1


def test_a_different_mistake_gets_its_own_entry(ledger):
    a, _ = ledger.record(GOED)
    b, merged = ledger.record(mistake("I eated rice", "I ate rice", "irregular past tense"))
    assert not merged and a.id != b.id and ledger.count() == 2


@pytest.mark.parametrize(
    "bad",
    [
        mistake("", "I went", "go → went"),
        mistake("I went home", "I went home", "nothing"),
        mistake("x " * 200, "y", "too long"),
    ],
)
def test_an_unusable_mistake_is_refused_in_one_line(ledger, bad):
    from memora.core.errors import LimitError

    with pytest.raises(LimitError):
        ledger.record(bad)
    assert ledger.count() == 0


def test_the_ledger_file_is_owner_only(ledger):
    ledger.record(GOED)
    assert os.stat(ledger.path).st_mode & 0o777 == 0o600


def test_relevant_picks_by_the_message_then_by_count(ledger, clock):
    ledger.record(GOED)
    for _ in range(3):
        clock.advance(hours=1)
        ledger.record(mistake("He don't like it", "He doesn't like it", "third person: doesn't"))
    ledger.record(mistake("I am agree", "I agree", "agree is a verb, not an adjective"))
    picked = relevant(ledger.all(), "Yesterday we went to a market", limit=2)
    assert [p.rule for p in picked] == ["go → went: irregular past tense", "third person: doesn't"]
    assert [p.rule for p in relevant(ledger.all(), "hello", limit=1)] == ["third person: doesn't"]


# -- FSRS with an injected clock -------------------------------------------------------------


def test_correct_answers_push_the_card_out_and_a_wrong_one_brings_it_back_tomorrow():
    card = spaced.ReviewCard.new(T0)
    now = T0
    intervals = []
    for _ in range(4):
        card = card.review(spaced.VERDICT_RATINGS["correct"], now)
        intervals.append((card.due_day() - spaced.learner_day(now)).days)
        now = now + timedelta(days=intervals[-1])
    assert intervals == sorted(intervals) and len(set(intervals)) == 4
    assert intervals[0] == 2
    card = card.review(spaced.VERDICT_RATINGS["wrong"], now)
    assert (card.due_day() - spaced.learner_day(now)).days == 1


def test_mastered_needs_stability_and_the_last_two_correct(ledger, clock):
    entry, _ = ledger.record(GOED)
    ratings = []
    while True:
        clock.now = max(clock.now, _morning(entry.due, clock))
        entry = ledger.review(entry.id, 3, clock())
        ratings.append(3)
        if entry.mastered_at is not None:
            break
        assert entry.status in ("active", "improving") and len(ratings) < 10
    assert entry.card.stability >= spaced.MASTERED_STABILITY_DAYS
    assert entry.status == "mastered" and not entry.active
    assert ledger.due(clock() + timedelta(days=1)) == []
    # Made again: it is due at once and is no longer mastered.
    clock.advance(days=1)
    again, merged = ledger.record(mistake("She goed away", "She went away", "go → went"))
    assert merged and again.status != "mastered" and [m.id for m in ledger.due(clock())] == [entry.id]


def test_a_wrong_answer_after_mastery_takes_mastery_away(ledger, clock):
    entry, _ = ledger.record(GOED)
    for _ in range(6):
        clock.now = max(clock.now, _morning(entry.due, clock))
        entry = ledger.review(entry.id, 4, clock())
    assert entry.status == "mastered"
    clock.now = _morning(entry.due, clock)
    entry = ledger.review(entry.id, 1, clock())
    assert entry.status == "active" and (entry.due - ledger.today()).days <= 1


def _morning(day, clock, hour=9):
    """9 am local on ``day`` (a learner's day), in the clock's zone."""
    return datetime.combine(day, datetime.min.time(), tzinfo=clock().tzinfo) + timedelta(hours=hour)


def test_due_means_due_from_the_start_of_the_learners_day(ledger, clock):
    entry, _ = ledger.record(GOED)
    entry = ledger.review(entry.id, 3, clock())  # due two days later
    assert entry.due == ledger.today() + timedelta(days=2)
    assert ledger.due(_morning(entry.due, clock, hour=-1)) == []  # 11 pm the evening before
    assert ledger.due(_morning(entry.due, clock, hour=3)) == []  # 3 am is still the day before
    assert [m.id for m in ledger.due(_morning(entry.due, clock, hour=4))] == [entry.id]


# -- the activity log ------------------------------------------------------------------------


def test_activity_counts_per_day_and_the_due_line_once_a_day(tmp_path, clock):
    log = ActivityLog(tmp_path / "memora_activity.json", clock=clock)
    log.record_turn()
    log.record_turn()
    log.record_review(True)
    log.record_review(False)
    clock.advance(days=1)
    log.record_turn()
    days = log.days()
    assert [(a.turns, a.reviews, a.correct) for a in days.values()] == [(2, 2, 1), (1, 0, 0)]
    assert log.claim_due_notice() is True and log.claim_due_notice() is False
    clock.advance(days=1)
    assert log.claim_due_notice() is True
    assert "goed" not in log.path.read_text()  # counts, never text
    assert os.stat(log.path).st_mode & 0o777 == 0o600


# -- the Anki deck ---------------------------------------------------------------------------


def test_review_export_writes_an_anki_collection_with_one_note_per_card(ledger, tmp_path, clock):
    from memora.teaching.anki import DECK_ID, write_deck

    a, _ = ledger.record(GOED)
    b, _ = ledger.record(mistake("I like <b>cats</b> & dogs", "I like cats and dogs", "and, not &", "punctuation"))
    path = tmp_path / "mine.apkg"
    assert write_deck(ledger.all(), path, user="ming", now=clock()) == 2
    assert os.stat(path).st_mode & 0o777 == 0o600
    with zipfile.ZipFile(path) as archive:
        archive.extract("collection.anki2", tmp_path / "unzipped")
    db = sqlite3.connect(tmp_path / "unzipped" / "collection.anki2")
    notes = db.execute("SELECT guid, flds, tags FROM notes ORDER BY id").fetchall()
    fields = [row[1].split("\x1f") for row in notes]
    assert fields[0] == [
        "Fix this sentence: “Yesterday I goed to the market.”",
        "Yesterday I went to the market.",
        "go → went: irregular past tense",
        "grammar",
        a.id,
        "Yesterday I went to the market.",  # the typed card takes the whole corrected sentence
    ]
    assert fields[1][0] == "Fix this sentence: “I like &lt;b&gt;cats&lt;/b&gt; &amp; dogs”" and fields[1][4] == b.id
    assert {row[0] for row in db.execute("SELECT did FROM cards")} == {DECK_ID}
    # A second export keeps each note's guid, so Anki updates instead of duplicating.
    again = tmp_path / "again.apkg"
    write_deck(ledger.all(), again, user="ming", now=clock() + timedelta(days=1))
    with zipfile.ZipFile(again) as archive:
        archive.extract("collection.anki2", tmp_path / "again")
    guids = [
        r[0]
        for r in sqlite3.connect(tmp_path / "again" / "collection.anki2").execute("SELECT guid FROM notes ORDER BY id")
    ]
    assert guids == [r[0] for r in notes]


def test_review_export_refuses_a_name_that_is_not_apkg(ledger, tmp_path, clock):
    from memora.core.errors import CommandError
    from memora.teaching.anki import write_deck

    ledger.record(GOED)
    with pytest.raises(CommandError, match=r"\.apkg"):
        write_deck(ledger.all(), tmp_path / "deck.json", user="ming", now=clock())
    assert not (tmp_path / "deck.json").exists()


@pytest.mark.parametrize(
    "original, corrected, shown",
    [
        ("I goed home", "I went home", ("I goed home", "I went home")),  # short: whole
        (
            "Yesterday I goed to the park with my two best friends",
            "Yesterday I went to the park with my two best friends",
            ("Yesterday I goed to the...", "Yesterday I went to the..."),
        ),
        (
            "After a long day at work I want go to the cinema",
            "After a long day at work I want to go to the cinema",
            ("...I want go to...", "...I want to go to..."),
        ),
        ("i know", "I know", ("i know", "I know")),  # only a capital: nothing to cut around
        (
            "He don't like apples and he never eat them at all",
            "He doesn't like apples and he never eats them at all",
            ("He don't like apples and he never eat them at...", "He doesn't like apples and he never eats them at..."),
        ),
    ],
)
def test_the_background_shows_the_words_a_correction_changes_with_two_either_side(original, corrected, shown):
    from memora.teaching.ledger import correction_excerpt

    assert correction_excerpt(original, corrected) == shown
