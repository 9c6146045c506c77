"""Learning from mistakes, end to end: the real client against the local
Responses server (scripted extraction with mistakes, scripted grading), the
ledger on disk, the REPL in plain mode, an injected clock."""

from __future__ import annotations

import json
import re
from datetime import timedelta

import pytest
from helpers.stores import files_holding


def extraction(*mistakes, facts=()):
    return {"facts": list(facts), "profile_changes": [], "corrections": [], "mistakes": list(mistakes)}


def goed(
    original="Yesterday I goed to the market.",
    corrected="Yesterday I went to the market.",
    rule="go → went: irregular past tense",
):
    return {"original": original, "corrected": corrected, "rule": rule, "kind": "grammar"}


def segment_after(text: str, line: str) -> str:
    """What the REPL printed after the learner typed ``line`` (up to the next prompt)."""
    return text.split(f"You: {line}\n", 1)[1].split("You: ", 1)[0]


def test_the_same_mistake_in_two_sessions_is_one_entry_reviewed_the_next_day(make_app, run_repl, server, clock):
    # 1. the same mistake in two sessions gives one entry with count 2
    server.script("extraction", extraction(goed()))
    app = make_app()
    run_repl(app, ["Yesterday I goed to the market."])
    app.close()
    clock.advance(hours=3)
    server.script(
        "extraction",
        extraction(
            goed("We goed to the park after lunch.", "We went to the park after lunch.", "past tense of go is went")
        ),
    )
    app = make_app()
    run_repl(app, ["We goed to the park after lunch."])
    [entry] = app.ledger.all()
    assert entry.count == 2 and entry.kind == "grammar"
    assert [e.original for e in entry.examples] == [
        "Yesterday I goed to the market.",
        "We goed to the park after lunch.",
    ]

    # 2. the next turn's developer message carries it
    run_repl(app, ["Tomorrow I will go to the market again."])
    request = server.chats[-1]
    section = request.section("mistakes_to_watch")
    assert section is not None
    # the words that changed, two either side: the rest of the sentence is not sent every turn,
    # nor the change the rule opens with ("go → went: "), which the line shows already
    assert '"We goed to the..." → "We went to the..." (irregular past tense; 2 times)' in section
    assert "praise" in section
    why = run_repl(app, ["why"]).text
    assert "Mistakes to watch" in why and "mistakes_to_watch" in why
    app.close()

    # 3. the next day, `review` drills it (the due line comes first, once)
    clock.advance(days=1)
    server.script("grading", {"verdict": "correct", "feedback": "Yes: the past of go is went."})
    app = make_app()
    t = run_repl(app, ["review", "We went to the park after lunch."])
    assert "Note: 1 mistake to review today (type review)" in t.text
    drill = segment_after(t.text, "review")
    assert "[1/1] Fix this sentence: “We goed to the park after lunch.”" in drill
    [grading] = server.of_kind("grading")
    sent = json.loads(grading.input[0]["content"])
    assert sent == {
        "exercise": "Fix this sentence: “We goed to the park after lunch.”",
        "expected": "We went to the park after lunch.",
        "rule": "go → went: irregular past tense",
        "answer": "We went to the park after lunch.",
    }
    assert "Correct: Yes: the past of go is went." in t.text
    assert "Review done: 1 answer saved (1 right)." in t.text

    # 4. a correct answer moves its due date out
    [entry] = app.ledger.all()
    assert (entry.due - app.ledger.today()).days >= 2 and entry.reviews[-1].rating == 3

    # 5. `progress` shows one review, correct
    t = run_repl(app, ["progress"])
    report = segment_after(t.text, "progress")
    assert "Reviews: 1 done, 1 correct (100%); 0 of them in chat" in report
    assert re.search(r"^  grammar\s+1$", report, re.MULTILINE)
    assert "Days practised: 2 of 56; streak: 2 days" in report
    again = run_repl(make_app(), ["status"])
    assert "to review today" not in again.text  # once a day


def test_review_without_a_model_shows_the_answer_and_takes_a_self_rating(make_app, run_repl, clock):
    app = make_app(base_url=None, api_key=None)
    app.ledger.record(_new(goed()))
    app.ledger.record(
        _new(
            {
                "original": "He don't like tea",
                "corrected": "He doesn't like tea",
                "rule": "third person: doesn't",
                "kind": "grammar",
            }
        )
    )
    t = run_repl(app, ["review", "Yesterday I went to the market.", "5", "3", "He doesn't like tea", "1"])
    drill = t.text.split("You: review\n", 1)[1]
    assert drill == (
        "Review: 2 cards. You'll see the answer and rate yourself; an empty line or 'stop' ends it.\n"
        "[1/2] Fix this sentence: “Yesterday I goed to the market.”\n"
        "Your answer: Yesterday I went to the market.\n"
        "Answer: “Yesterday I went to the market.” (go → went: irregular past tense)\n"
        "How well did you know it? 1 again, 2 hard, 3 good, 4 easy: 5\n"
        "Type 1, 2, 3 or 4 (or an empty line to stop).\n"
        "How well did you know it? 1 again, 2 hard, 3 good, 4 easy: 3\n"
        "Next in 2 days (Tue 01 Dec).\n"
        "[2/2] Fix this sentence: “He don't like tea”\n"
        "Your answer: He doesn't like tea\n"
        "Answer: “He doesn't like tea” (third person: doesn't)\n"
        "How well did you know it? 1 again, 2 hard, 3 good, 4 easy: 1\n"
        "Next tomorrow (Mon 30 Nov).\n"
        "Review done: 2 answers saved (1 right, 1 to practise again).\n"
        "You: \n"
        "Goodbye!\n"
    )
    by_rule = {m.rule: m for m in app.ledger.all()}
    today = app.ledger.today()
    assert by_rule["third person: doesn't"].due == today + timedelta(days=1)  # wrong: back tomorrow
    assert by_rule["go → went: irregular past tense"].due == today + timedelta(days=2)
    assert run_repl(app, ["review"]).text.count("Nothing to review today") == 1


def _new(item):
    from memora.teaching.ledger import NewMistake

    return NewMistake(**item)


def test_a_grading_answer_that_is_not_json_becomes_a_self_rating_and_keeps_the_answer(
    make_app, run_repl, server, clock
):
    app = make_app()
    app.ledger.record(_new(goed()))
    server.script("grading", "this is not JSON at all", "still not JSON")  # the answer, and the repair's
    t = run_repl(app, ["review", "Yesterday I went to the market.", "4"])
    lines = segment_after(t.text, "review").splitlines()
    failure = [line for line in lines if line.startswith("Could not grade")]
    assert len(failure) == 1 and failure[0].endswith("rate it yourself, and the rest of this review too.")
    assert "Review done: 1 answer saved (1 right)." in t.text
    [entry] = app.ledger.all()
    assert entry.reviews[-1].rating == 4 and "Traceback" not in t.text


def test_a_card_edited_or_forgotten_during_review_is_skipped_in_one_line(make_app, run_repl, server, clock):
    app = make_app(base_url=None, api_key=None)
    first, _ = app.ledger.record(_new(goed()))
    second, _ = app.ledger.record(
        _new({"original": "I am agree", "corrected": "I agree", "rule": "agree is a verb", "kind": "grammar"})
    )
    third, _ = app.ledger.record(
        _new({"original": "She can sings", "corrected": "She can sing", "rule": "can + base verb", "kind": "grammar"})
    )
    # Hand-edited: the second card's example is blanked in the file.
    data = json.loads(app.paths.mistakes.read_text())
    for entry in data["mistakes"]:
        if entry["id"] == second.id:
            entry["examples"][0]["original"] = ""
    app.paths.mistakes.write_text(json.dumps(data))

    # The learner forgets the third card in another terminal while answering the first.
    save = app.ledger.review

    def review_then_forget(*args, **kwargs):
        saved = save(*args, **kwargs)
        app.ledger.forget(third.id)
        return saved

    app.ledger.review = review_then_forget
    t = run_repl(app, ["review", "Yesterday I went to the market.", "3"])
    drill = segment_after(t.text, "review")
    assert (
        f"Skipped card {second.id}: its example was edited away ('mistakes forget {second.id}' removes it).\n" in drill
    )
    assert f"Skipped card {third.id}: it was forgotten.\n" in drill
    assert "Review done: 1 answer saved (1 right)." in drill
    assert app.ledger.get(first.id).reviews[-1].rating == 3


def test_ctrl_c_during_review_keeps_what_was_answered(make_app, run_repl, server, clock):
    app = make_app()
    app.ledger.record(_new(goed()))
    clock.advance(minutes=1)
    app.ledger.record(
        _new({"original": "I am agree", "corrected": "I agree", "rule": "agree is a verb", "kind": "grammar"})
    )
    server.script("grading", {"verdict": "partly", "feedback": "Almost."})
    t = run_repl(app, ["review", "Yesterday I go to the market.", KeyboardInterrupt, "status"])
    drill = segment_after(t.text, "review")
    assert drill.endswith("Review stopped: 1 answer saved (1 partly right); 1 card left for later.\n")
    assert "Partly: Almost." in drill and "Traceback" not in t.text
    reviewed = [m for m in app.ledger.all() if m.reviews]
    assert len(reviewed) == 1 and reviewed[0].reviews[0].rating == 2  # partly -> Hard
    assert "You: status" in t.text  # the REPL went on


def test_an_empty_line_or_stop_ends_the_drill(make_app, run_repl):
    app = make_app(base_url=None, api_key=None)
    app.ledger.record(_new(goed()))
    t = run_repl(app, ["review", "stop"])
    assert "Review stopped: nothing answered, nothing changed." in t.text
    assert app.ledger.all()[0].reviews == []


def test_extraction_asks_for_mistakes_in_the_learners_style_and_keeps_only_their_own_words(make_app, run_repl, server):
    app = make_app()
    server.script(
        "extraction",
        extraction(
            goed(),
            {"original": "我昨天去了", "corrected": "I went yesterday", "rule": "not English", "kind": "grammar"},
            {
                "original": "I have went there",
                "corrected": "I have gone there",
                "rule": "gone is the participle",
                "kind": "grammar",
            },
        ),
    )
    run_repl(app, ["profile corrections all", "Yesterday I goed to the market. 我昨天去了"])
    [request] = server.of_kind("extraction")
    assert "every error, small slips too" in request.body["instructions"]
    schema = request.body["text"]["format"]["schema"]
    assert "mistakes" in schema["required"]
    [entry] = app.ledger.all()  # the Chinese text and the words never written are not mistakes
    assert entry.rule == "go → went: irregular past tense"
    assert len(app.turn.extraction_skipped) == 2


def test_corrections_off_still_records_but_tells_the_tutor_not_to_correct(make_app, run_repl, server):
    app = make_app()
    server.script("extraction", extraction(goed()))
    t = run_repl(app, ["profile corrections off", "Yesterday I goed to the market.", "I like markets", "profile"])
    assert "Corrections: off." in t.text
    assert app.ledger.count() == 1
    developer = server.chats[-1].background
    assert "Correction style: off. Do not correct the learner's English" in developer
    assert "corrections are off: do not point them out" in server.chats[-1].section("mistakes_to_watch")
    assert re.search(r"Corrections\s+off", t.text)
    extraction_call = server.of_kind("extraction")[-1]
    assert "errors that matter" in extraction_call.body["instructions"]


def test_the_default_style_is_important_and_not_spelled_out_each_turn(make_app, run_repl, server):
    from memora.model.prompts import SYSTEM_PROMPT

    app = make_app()
    run_repl(app, ["Hello there"])
    assert "Correction style" not in server.chats[-1].background
    assert "correct only mistakes that obscure the meaning" in SYSTEM_PROMPT
    assert "profile corrections all|important|off" in run_repl(app, ["profile corrections sometimes"]).text


@pytest.mark.chroma  # deleted means gone from every file
def test_mistakes_lists_and_forgets_one(make_app, run_repl, clock, data_dir):
    app = make_app(base_url=None, api_key=None)
    first, _ = app.ledger.record(_new(goed()))
    clock.advance(days=2)
    app.ledger.record(_new(goed("They goed home", "They went home")))
    other, _ = app.ledger.record(
        _new({"original": "I am agree", "corrected": "I agree", "rule": "agree is a verb", "kind": "word choice"})
    )
    t = run_repl(app, ["mistakes"])
    listing = segment_after(t.text, "mistakes")
    row = next(line for line in listing.splitlines() if line.startswith(first.id))
    assert re.search(
        r"grammar\s+go → went: irregular past tense\s+2\s+2026-11-29\s+just now\s+active\s+due today"
        r"\s+They goed home -> They went home",
        row,
    )
    t = run_repl(
        app, [f"mistakes forget {other.id}", "mistakes forget mzzzz", "mistakes forget", "mistakes forget m0000"]
    )
    assert f"Forgot mistake {other.id}: agree is a verb." in t.text
    assert "Usage: mistakes | mistakes forget <id>" in t.text
    assert "No mistake has the id 'm0000'" in t.text
    assert [m.id for m in app.ledger.all()] == [first.id]
    assert files_holding(data_dir, "I am agree") == {}  # no copy left in any file


@pytest.mark.chroma  # deleted means gone from every file
def test_forget_user_and_forget_all_leave_no_byte_of_the_ledger(make_app, run_repl, data_dir, server):
    app = make_app(user="ming")
    server.script("extraction", extraction(goed("Yesterday I goed to Qzmarket.", "Yesterday I went to Qzmarket.")))
    run_repl(app, ["Yesterday I goed to Qzmarket.", f"review export {data_dir / 'ming-deck.apkg'}"])
    assert (data_dir / "ming-deck.apkg").exists()
    assert app.ledger.count() == 1 and app.paths.activity.exists()
    assert files_holding(data_dir, "Qzmarket")
    t = run_repl(app, ["forget all", "DELETE"])
    assert "Deleted 0 memories, 1 mistake and the conversation." in t.text  # forget all clears the conversation too
    assert not app.paths.mistakes.exists() and not app.paths.activity.exists()
    # The conversation and the deck the learner wrote out are theirs to keep or delete.
    held = files_holding(data_dir, "Qzmarket")
    assert all(not p.endswith(("memora_mistakes.json", "memora_activity.json")) for p in held)

    app2 = make_app(user="ana")
    app2.ledger.record(_new(goed("I goed to Wxplace", "I went to Wxplace")))
    app2.activity.record_turn()
    folder = app2.paths.folder
    t = run_repl(app2, ["forget user ana", "ana"])
    assert "memora_mistakes.json" in t.text and "memora_activity.json" in t.text
    assert files_holding(data_dir, "Wxplace") == {} and not folder.exists()


def test_export_and_import_carry_the_ledger_and_the_activity(make_app, run_repl, data_dir, clock, tmp_path):
    app = make_app(base_url=None, api_key=None)
    entry, _ = app.ledger.record(_new(goed()))
    app.ledger.review(entry.id, 3)
    app.activity.record_turn()
    app.activity.record_review(True)
    app.profiles.set_english_level("B1")
    app.profiles.set_correction_style("off")
    path = tmp_path / "backup.json"
    run_repl(app, [f"export {path}"])
    exported = json.loads(path.read_text())
    assert exported["mistakes"][0]["id"] == entry.id and exported["activity"]
    reviewed = app.ledger.get(entry.id)
    app.close()

    fresh = make_app(base_url=None, api_key=None, data_dir=tmp_path / "other")
    t = run_repl(fresh, [f"import {path}"])
    assert "1 mistake added to your ledger" in t.text
    [copy] = fresh.ledger.all()
    assert copy.model_dump() == reviewed.model_dump() and copy.reviews
    assert list(fresh.activity.days().values())[0].reviews == 1
    profile = fresh.profiles.get()
    assert profile.correction_style == "off" and [c.level for c in profile.level_history] == ["B1"]
    assert "1 mistake added" not in run_repl(fresh, [f"import {path}"]).text  # twice adds nothing twice


def test_an_export_with_a_broken_card_is_refused_whole(make_app, run_repl, tmp_path):
    app = make_app(base_url=None, api_key=None)
    app.ledger.record(_new(goed()))
    path = tmp_path / "backup.json"
    run_repl(app, [f"export {path}"])
    data = json.loads(path.read_text())
    data["mistakes"][0]["card"] = {"state": "nonsense"}
    path.write_text(json.dumps(data))
    app.ledger.clear()
    t = run_repl(app, [f"import {path}"])
    assert "Nothing was imported." in t.text and "review card" in t.text
    assert app.ledger.count() == 0


def test_the_mistakes_section_goes_after_the_memories_and_before_the_profile(clock):
    from context_builder import MistakeNote, build_background_messages
    from memora.core.records import MemorySearchResult
    from user_profile import UserProfile

    now = clock()
    background = build_background_messages(
        UserProfile(english_level="B1", correction_style="all"),
        [
            MemorySearchResult(
                id="a",
                content="The learner likes tea",
                score=0.9,
                created_at=now,
                memory_type="semantic",
                category="other",
            )
        ],
        now=now,
        mistakes=[
            MistakeNote("I goed", "I went", "go → went", 2),
            MistakeNote("I am agree", "I agree", "agree is a verb", 1),
        ],
    )
    seen = []
    while background is not None:
        seen.append(
            (
                len(background.memories),
                len(background.mistakes),
                background.profile.english_level,
                background.profile.correction_style,
            )
        )
        background = background.drop_one()
    assert seen[:5] == [
        (1, 2, "B1", "all"),
        (0, 2, "B1", "all"),
        (0, 1, "B1", "all"),
        (0, 0, "B1", "all"),
        (0, 0, None, "all"),
    ]
    assert seen[5] == (0, 0, None, None)


def test_progress_charts_and_plain_figures_agree(clock):
    from memora.teaching import spaced
    from memora.teaching.activity import DayActivity
    from memora.teaching.ledger import Mistake
    from memora.teaching.progress import ProgressData, report

    today = clock().date()
    activity = {today - timedelta(days=d): DayActivity(turns=d + 1, reviews=1, correct=d % 2) for d in (0, 1, 2, 9)}
    base = dict(rule="r", examples=[], card=spaced.ReviewCard.new(clock()), count=1)
    mistakes = [
        Mistake(id="m00001", kind="grammar", first_seen=clock(), last_seen=clock(), **base),
        Mistake(
            id="m00002",
            kind="grammar",
            first_seen=clock() - timedelta(days=8),
            last_seen=clock(),
            mastered_at=clock(),
            **base,
        ),
        Mistake(id="m00003", kind="spelling", first_seen=clock(), last_seen=clock(), **base),
    ]
    data = ProgressData(
        today=today,
        days=14,
        activity=activity,
        mistakes=mistakes,
        level_history=[(today - timedelta(days=30), "A2"), (today, "B1")],
    )
    plain = report(data, charts=False)
    charted = report(data, charts=True)
    assert plain == [
        f"Progress, {(today - timedelta(days=13)).isoformat()} to {today.isoformat()} (14 days)",
        "Days practised: 4 of 14; streak: 3 days",
        f"Turns per week: {(today - timedelta(days=13)).strftime('%m-%d')} 10, "
        f"{(today - timedelta(days=6)).strftime('%m-%d')} 6",
        "Mistakes by kind (3 new in the period):",
        "  grammar      2",
        "  spelling     1",
        "New mistakes per week: 1, 2",
        "Mastered per week: 0, 1",
        "Reviews: 4 done, 2 correct (50%); 0 of them in chat",
        f"Level: A2 ({(today - timedelta(days=30)).isoformat()}) -> B1 ({today.isoformat()})",
    ]
    # The charts add chart lines and bars; without them the figures are the plain ones.
    chart_only = re.compile(r"^  (?:[·■]+  \(one mark|[▁▂▃▄▅▆▇█]+  \(max|new |mastered )")
    extra = [line for line in charted if chart_only.match(line)]
    figures = [line.replace(" " + "█" * 24, "").replace(" " + "█" * 12, "") for line in charted if line not in extra]
    assert figures == plain
    assert extra == [
        "  ····■······■■■  (one mark a day, today last)",
        "  █▅  (max 10)",
        "  new      ▅█",
        "  mastered ▁▅",
    ]
    assert "  grammar      ████████████████████████ 2" in charted and "  spelling     ████████████ 1" in charted


@pytest.mark.parametrize("args", ["--since", "--since 0d", "--since tomorrow", "--since 30d extra", "--since 99999d"])
def test_progress_with_a_bad_period_prints_its_usage(make_app, run_repl, args):
    app = make_app(base_url=None, api_key=None)
    t = run_repl(app, [f"progress {args}"])
    assert "Error: Usage: progress [--since <N>d|<N>w]" in t.text


def test_progress_since_narrows_the_period(make_app, run_repl, clock):
    app = make_app(base_url=None, api_key=None)
    app.activity.record_turn(clock() - timedelta(days=20))
    app.activity.record_turn()
    assert "Days practised: 1 of 7" in run_repl(app, ["progress --since 1w"]).text
    assert "Days practised: 2 of 30" in run_repl(app, ["progress --since 30d"]).text


def test_a_word_the_learner_asks_about_becomes_a_card_after_their_yes(make_app, run_repl, server, clock):
    app = make_app()
    asked = {**extraction(), "asked_words": [{"word": "ubiquitous", "meaning": "found everywhere"}]}
    server.script("extraction", asked, asked)
    t = run_repl(
        app, ["What does ubiquitous mean", "yes", "What does ubiquitous mean", "review", "found in every place"]
    )
    assert t.text.count("Add “ubiquitous” to your review cards? (yes/no)") == 1  # not offered again once it is a card
    [card] = app.ledger.all()
    assert card.card_type == "word" and card.kind == "vocabulary"
    assert "Added “ubiquitous” to your review cards" in t.text
    # A word card is reviewed, but it is not a mistake to watch for.
    assert server.chats[-1].section("mistakes_to_watch") is None
    assert "[1/1] What does “ubiquitous” mean?" in t.text
    grading = json.loads(server.of_kind("grading")[0].input[0]["content"])
    assert grading["expected"] == "found everywhere"


def test_saying_no_to_a_word_card_adds_nothing(make_app, run_repl, server):
    app = make_app()
    server.script(
        "extraction", {**extraction(), "asked_words": [{"word": "serendipity", "meaning": "a happy accident"}]}
    )
    t = run_repl(app, ["What does serendipity mean", "no"])
    assert "Okay, no card for “serendipity”." in t.text
    assert app.ledger.count() == 0


def test_the_ledger_and_activity_files_are_git_ignored(make_app):
    import fnmatch
    from pathlib import Path

    patterns = [
        line.strip()
        for line in (Path(__file__).resolve().parents[1] / ".gitignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    app = make_app(base_url=None, api_key=None)
    for path in (app.paths.mistakes, app.paths.activity, Path("mine.apkg")):
        assert any(fnmatch.fnmatch(path.name, p) for p in patterns), f"{path.name} is not git-ignored"


@pytest.mark.parametrize(
    "edit",
    [
        pytest.param(lambda m: m.update(count=-5), id="negative-count"),
        pytest.param(lambda m: m.update(count=10**30), id="huge-count"),
        pytest.param(lambda m: m.update(examples=[]), id="no-example"),
        pytest.param(lambda m: m.update(id="../../x"), id="path-id"),
        pytest.param(lambda m: m.update(last_seen="2020-01-01T00:00:00+00:00"), id="last-seen-before-first"),
        pytest.param(None, id="duplicate-id"),
    ],
)
def test_an_edited_ledger_entry_is_refused_in_one_line_and_nothing_is_imported(make_app, run_repl, tmp_path, edit):
    app = make_app(base_url=None, api_key=None)
    app.ledger.record(_new(goed()))
    path = tmp_path / "backup.json"
    run_repl(app, [f"export {path}"])
    data = json.loads(path.read_text())
    if edit is None:
        data["mistakes"].append(dict(data["mistakes"][0]))
    else:
        edit(data["mistakes"][0])
    path.write_text(json.dumps(data))
    app.ledger.clear()
    t = run_repl(app, [f"import {path}"])
    errors = [line for line in t.text.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1 and "backup.json" in errors[0] and errors[0].endswith("Nothing was imported."), t.text
    assert app.ledger.count() == 0


def test_stopping_at_the_rating_says_the_typed_answer_was_not_rated(make_app, run_repl):
    app = make_app(base_url=None, api_key=None)
    app.ledger.record(_new(goed()))
    app.ledger.record(
        _new(
            {"original": "He don't like tea", "corrected": "He doesn't like tea", "rule": "doesn't", "kind": "grammar"}
        )
    )
    before = {m.id: m.card for m in app.ledger.all()}
    t = run_repl(app, ["review", "Yesterday I went to the market.", "3", "He doesn't like tea", ""])
    assert (
        "Review stopped: 1 answer saved (1 right); your last answer was not rated, so its card is unchanged; "
        "1 card left for later." in t.text
    )
    after = {m.id: m.card for m in app.ledger.all()}
    assert sum(before[i] != after[i] for i in before) == 1  # the rated card moved, the unrated one did not
