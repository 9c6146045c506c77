"""Per-item isolation: one bad fact, change or correction never costs the others.

Every test runs the real client against the local Responses server and real
Chroma on disk, and checks what the learner would notice: what is stored, what
``status`` says, and what the next chat request's developer message carries.
"""

from __future__ import annotations

import pytest
from helpers.fake_openai import Error
from helpers.scripts import decision_input, extraction, fact, naming, retracting, say

from memora.cli.reports import status_rows


def goal(value, action="add", field="learning_goal"):
    return {"field": field, "action": action, "value": value, "evidence": value}


def pending(app):
    """The messages left to read, as the session's next write (the next turn's, exit's) keeps them."""
    return [p.model_dump(mode="json") for p in app.queue.pending]


def extraction_status(app) -> dict[str, str]:
    return {row[0]: row[1] for row in dict((t[0], t[2]) for t in status_rows(app))["Memory extraction"]}


def new_fact_of(body) -> str:
    return decision_input(body)[0]


def test_a_mixed_result_stores_every_good_item_and_skips_each_bad_one(make_app, server):
    app = make_app()
    old = app.store.add("The learner lives in Taichung.", category="identity")
    app.store.supersede(old.id, "The learner lives in Taipei.", reason="contradiction")

    def decide(body):
        new = new_fact_of(body)
        if "mountains" in new:  # names the superseded memory, which is not listed, by its id
            return {"action": "SUPERSEDE", "memory": old.id, "text": None}
        if "cello" in new:  # names a number the listing does not have
            return {"action": "UPDATE", "memory": 99, "text": "The learner plays the cello."}
        if "stamps" in new:
            return "this is not JSON {"
        if "swims" in new:
            return Error(500)
        return {"action": "ADD", "memory": None, "text": None}

    server.script("reconcile", *[decide] * 12)
    server.script("correction", Error(500))
    result = extraction(
        fact("x" * 5000, "other"),
        fact("The learner's name is Ming.", "name"),
        fact("", "other"),
        fact("\x00\x07\u200b\u2028", "other"),
        fact("The learner likes the colour green.", category="colour"),
        fact("The learner has a job interview.", "schedule", event_phrase="someday soon", event_date="2026-13-45"),
        {"text": "The learner owns a bike.", "category": "identity"},  # no memory_type
        "The learner is tall.",  # not an object
        fact("The learner\x07 plays\u200b the cello.", "hobby"),
        fact("The learner lives near the mountains.", "identity"),
        fact("The learner collects stamps.", "hobby"),
        fact("The learner swims every Sunday.", "habit"),
        fact("The learner keeps a diary.", "other", memory_type="forever"),
        profile_changes=[
            goal("pass the IELTS exam with 7.0"),
            goal("Z9", action="set", field="english_level"),
            goal("", field="preference"),
            goal("p" * 300, field="preference"),
            goal("green", field="favourite_colour"),
        ],
        corrections=[
            {"statement": "The learner lives in Taipei.", "evidence": "I never said Taipei"},
            {"statement": "", "evidence": "No."},
        ],
    )
    server.script("extraction", result)
    say(app, "Lots of news about me!")

    stored = {r.content: r for r in app.store.list()}
    assert {
        "The learner's name is Ming.",
        "The learner has a job interview.",
        "The learner plays the cello.",
        "The learner lives near the mountains.",
        "The learner lives in Taipei.",
        "The learner likes the colour green.",  # an unknown label takes its nearest valid value
        "The learner keeps a diary.",
    } == set(stored)
    assert stored["The learner likes the colour green."].category == "other"
    assert stored["The learner has a job interview."].event_date is None  # a bad date is dropped, not the fact
    assert app.profiles.get().learning_goals == ["pass the IELTS exam with 7.0"]
    assert app.profiles.get().english_level is None and app.profiles.get().preferences == []

    skipped = {(s.kind, s.text[:20]) for s in app.turn.extraction_skipped}
    assert len(app.turn.extraction_skipped) == 12, app.turn.extraction_skipped  # 7 facts, 4 changes, 1 correction
    assert ("fact", "x" * 20) in skipped and ("profile change", "english_level set Z9") in skipped
    assert any("1000 characters" in s.reason for s in app.turn.extraction_skipped)
    assert any("category 'colour' stored as 'other'" in s.reason for s in app.turn.extraction_skipped)
    status = extraction_status(app)
    assert status["items set aside or relabelled this session"] == "12"
    assert "last skipped" in status

    # the items whose own call failed are kept, and only they
    [job] = pending(app)
    assert job["attempts"] == 1
    assert [f["text"] for f in job["remaining"]["facts"]] == [
        "The learner collects stamps.",
        "The learner swims every Sunday.",
    ]
    assert [c["statement"] for c in job["remaining"]["corrections"]] == ["The learner lives in Taipei."]
    assert job["remaining"]["profile_changes"] == []

    say(app, "What do you know about me?")
    developer = server.chats[-1].background
    for text in ("Ming", "cello", "mountains", "pass the IELTS exam with 7.0"):
        assert text in developer, text
    assert "x" * 50 not in developer


def test_items_whose_call_failed_run_again_in_the_next_session_without_a_second_reading(make_app, server):
    app = make_app()
    app.store.add("The learner likes hiking.", category="hobby")
    server.script(
        "extraction",
        extraction(fact("The learner collects stamps.", "hobby"), fact("The learner's name is Ming.", "name")),
    )
    server.script("reconcile", Error(503), {"action": "ADD", "memory": None, "text": None})
    say(app, "I collect stamps. My name is Ming.")
    assert "The learner's name is Ming." in {r.content for r in app.store.list()}
    assert "The learner collects stamps." not in {r.content for r in app.store.list()}
    assert [f["text"] for f in pending(app)[0]["remaining"]["facts"]] == ["The learner collects stamps."]
    readings = len(server.of_kind("extraction"))
    app.close()

    again = make_app()  # a new session on the same data
    assert again.wait_for_extraction(15)
    assert len(server.of_kind("extraction")) == readings  # the message is not read again
    assert pending(again) == []
    contents = [r.content for r in again.store.list()]
    assert contents.count("The learner collects stamps.") == 1 and contents.count("The learner's name is Ming.") == 1
    say(again, "Any ideas for my weekend?")
    assert "collects stamps" in server.chats[-1].background


def test_the_issue_case_a_5000_character_fact_loses_nothing_else_across_sessions(make_app, server):
    server.script(
        "extraction",
        extraction(
            fact("y" * 5000, "other"),
            fact("The learner's name is Ming.", "name"),
            profile_changes=[goal("speak confidently at meetings")],
        ),
    )
    app = make_app()
    say(app, "Here is a very long message.")
    assert pending(app) == []  # one bad item is never a reason to retry the job
    assert app.turn.extraction_failures == 0
    app.close()

    again = make_app()
    assert again.wait_for_extraction(15)
    assert len(server.of_kind("extraction")) == 1  # not retried at the next start
    say(again, "Do you remember my name?")
    developer = server.chats[-1].background
    assert "The learner's name is Ming." in developer
    assert "speak confidently at meetings" in developer
    assert "yyyy" not in developer


def test_a_failed_reading_is_still_retried_whole(make_app, server):
    server.script("extraction", Error(500), extraction(fact("The learner's name is Ming.", "name")))
    app = make_app()
    say(app, "My name is Ming.")
    [job] = pending(app)
    assert job["attempts"] == 1 and job["remaining"] is None
    app.close()
    again = make_app()
    assert again.wait_for_extraction(15)
    assert pending(again) == [] and [r.content for r in again.store.list()] == ["The learner's name is Ming."]


def test_running_a_job_again_changes_nothing(make_app, server):
    from memora.reading.jobs import ExtractionJob, ExtractionResult, PreparedExtraction

    app = make_app()
    wrong = app.store.add("The learner wants to work abroad.", category="learning")
    result = ExtractionResult.model_validate(
        extraction(
            fact("The learner's name is Ming.", "name"),
            fact("The learner plays the cello.", "hobby"),
            profile_changes=[goal("pass the IELTS exam")],
            corrections=[{"statement": "The learner wants to work abroad.", "evidence": "I never said that"}],
        )
    )
    server.script("correction", retracting(wrong.content), retracting(wrong.content))
    job = ExtractionJob(
        "text", app.clock(), "job1", prepared=PreparedExtraction(result), generation=app.deletions.generation()
    )
    extractor = app.worker.extractor
    first = extractor.extract(job)
    assert len(first.added) == 2 and first.retracted == [wrong.id] and first.skipped == []
    before = sorted((r.id, r.status) for r in app.store.list(include_superseded=True))
    second = extractor.extract(job)
    assert second.added == [] and second.retracted == [] and len(second.duplicates) == 2
    assert sorted((r.id, r.status) for r in app.store.list(include_superseded=True)) == before
    assert app.profiles.get().learning_goals == ["pass the IELTS exam"]


def test_a_full_memory_stops_the_facts_but_not_the_profile_changes(make_app, server):
    app = make_app(memory_cap=1)
    app.store.add("The learner drinks tea.", category="habit")
    server.script(
        "extraction",
        extraction(
            fact("The learner plays chess.", "hobby"),
            fact("The learner runs.", "habit"),
            profile_changes=[goal("write better emails")],
        ),
    )
    say(app, "I play chess and run, and I want to write better emails.")
    assert [r.content for r in app.store.list()] == ["The learner drinks tea."]
    assert app.profiles.get().learning_goals == ["write better emails"]
    assert sum("Memory is full" in n for n in app.notices) == 1
    assert [s.reason for s in app.turn.extraction_skipped] == ["memory is full", "memory is full"]
    assert pending(app) == []


@pytest.mark.chroma  # another process writes to the same store
def test_a_supersede_of_a_memory_another_session_just_superseded_adds_the_new_fact(make_app, server):
    from long_term_memory import LongTermMemoryStore

    app = make_app()
    taipei = app.store.add("The learner lives in Taipei.", category="identity")
    other_session = LongTermMemoryStore(app.settings.db_dir, embedding_function=app.embedder, user_id=app.settings.user)

    def decide(body):
        other_session.supersede(taipei.id, "The learner lives in Tainan.", reason="edit")  # meanwhile, elsewhere
        return naming(taipei.content, "SUPERSEDE")(body)

    server.script("reconcile", decide)
    server.script(
        "extraction",
        extraction(fact("The learner lives in Tokyo.", "identity"), fact("The learner's name is Ming.", "name")),
    )
    say(app, "I live in Tokyo now. I'm Ming.")
    assert sorted(r.content for r in app.store.list()) == [
        "The learner lives in Tainan.",
        "The learner lives in Tokyo.",
        "The learner's name is Ming.",
    ]
    assert app.turn.extraction_skipped == () and pending(app) == []


def test_a_chat_after_the_repl_closed_twice_is_still_extracted(make_app, server, run_repl):
    """Closing the worker twice (two REPL runs of commands only) must not leave a
    stop marker that makes the next thread quit before the next message's job."""
    from helpers.scripts import extraction, fact

    app = make_app()
    run_repl(app, ["status"])
    run_repl(app, ["memories"])
    server.script("extraction", extraction(fact("The learner plays the cello.", "hobby")))
    run_repl(app, ["I play the cello every evening"])
    assert app.wait_for_extraction(5)
    assert [r.content for r in app.store.list()] == ["The learner plays the cello."]
