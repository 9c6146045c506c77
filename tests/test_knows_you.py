"""Memora knows the learner: the digest, proactive follow-ups, profile proposals and corrections."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from helpers.scripts import extraction, fact, retracting
from helpers.threads import Conductor

from context_builder import DIGEST_MAX_TOKENS, DIGEST_PER_CATEGORY, DIGEST_SECTIONS


def say(app, text):
    result = app.chat(text, on_delta=lambda _: None)
    assert app.wait_for_extraction(10)
    return result


# -- the "about you" digest ----------------------------------------------------------


def test_the_name_is_in_the_background_many_turns_later_whatever_retrieval_finds(make_app, server):
    app = make_app()
    server.script("extraction", extraction(fact("The learner's name is Xiaoming.", "name")))
    say(app, "Hi! My name is Xiaoming.")
    topics = [
        "the present perfect",
        "airport vocabulary",
        "ordering coffee",
        "hotel complaints",
        "phrasal verbs",
        "IELTS speaking part 2",
        "prepositions of time",
        "small talk about weather",
        "job interview answers",
        "idioms",
    ]
    for topic in topics:
        say(app, f"Can you explain {topic}?")
    say(app, "What's my name?")
    request = server.chats[-1]
    digest = request.section("learner_digest")
    assert digest is not None and "- Name: [29 Nov] The learner's name is Xiaoming." in digest
    assert request.background.count("Xiaoming") == 1  # not repeated in the memories section

    say(app, "Do you remember who I am?")  # nothing in this question retrieves the name
    request = server.chats[-1]
    assert "- Name: [29 Nov] The learner's name is Xiaoming." in request.section("learner_digest")
    assert request.section("long_term_memories") is None


def test_digest_groups_by_category_in_a_fixed_order_and_skips_episodic(make_app, server):
    app = make_app()
    app.store.add("The learner plays badminton.", category="hobby")
    app.store.add("The learner's name is Mei.", category="name")
    app.store.add("The learner works at a bank.", category="identity")
    app.store.add("The learner practised hotel check-in yesterday.", category="other", memory_type="episodic")
    app.store.add("The learner dislikes long grammar lectures.", category="preference")
    app.chat("hello", on_delta=lambda _: None)
    digest = server.chats[-1].section("learner_digest").splitlines()
    assert digest == [
        "- Name: [29 Nov] The learner's name is Mei.",
        "- About them: [29 Nov] The learner works at a bank.",
        "- Likes and dislikes: [29 Nov] The learner dislikes long grammar lectures.",
        "- Hobbies: [29 Nov] The learner plays badminton.",
    ]
    labels = [label for _, label in DIGEST_SECTIONS]
    positions = [labels.index(line[2:].split(":")[0]) for line in digest]
    assert positions == sorted(positions)


def test_no_memories_means_no_digest_section(make_app, server):
    app = make_app()
    app.profiles.set_english_level("A2")
    app.chat("hello", on_delta=lambda _: None)
    assert server.chats[-1].section("learner_digest") is None
    assert "learner_digest" not in server.chats[-1].background


def test_digest_has_a_token_cap(make_app, server):
    app = make_app()
    app.store.add("The learner's name is Mei.", category="name")
    for i in range(60):
        app.store.add(f"The learner enjoys hobby number {i} with friends on weekends in the park", category="hobby")
    app.chat("hello", on_delta=lambda _: None)
    digest = server.chats[-1].section("learner_digest")
    assert digest.startswith("- Name: [29 Nov] The learner's name is Mei.")
    assert app.counter.count(digest) <= DIGEST_MAX_TOKENS


def test_a_full_digest_stays_within_its_cap_and_keeps_the_first_categories(make_app, server, clock):
    app = make_app()
    app.store.add("The learner's name is Mei.", category="name")
    for key, _ in DIGEST_SECTIONS[1:]:
        for i in range(DIGEST_PER_CATEGORY):
            clock.advance(minutes=1)
            app.store.add(f"The learner has {key} fact number {i}, told at some length about a weekend", category=key)
    app.chat("hello", on_delta=lambda _: None)
    lines = server.chats[-1].section("learner_digest").splitlines()
    labels = [line[2:].split(":")[0] for line in lines]
    # the cap ends the digest early: the first categories in the fixed order, whole, and not the last ones
    assert labels[:3] == ["Name", "About them", "English learning"]
    assert "Other" not in labels
    assert all(line.count("; ") == DIGEST_PER_CATEGORY - 1 for line in lines[1:-1])
    assert app.counter.count("\n".join(lines)) <= DIGEST_MAX_TOKENS + 4 * len(lines)  # + each line's label


def test_each_digest_category_shows_only_its_newest_facts(make_app, server, clock):
    app = make_app()
    for day in range(6):
        app.store.add(f"The learner took up hobby {day}.", category="hobby")
        clock.advance(days=1)
    app.store.add("The learner works at a bank.", category="identity")
    app.chat("hello", on_delta=lambda _: None)
    hobbies = next(line for line in server.chats[-1].section("learner_digest").splitlines() if "Hobbies" in line)
    newest_first = [f"The learner took up hobby {day}." for day in range(5, 5 - DIGEST_PER_CATEGORY, -1)]
    assert [part.split("] ", 1)[1] for part in hobbies.split(": ", 1)[1].split("; ")] == newest_first
    assert "- About them: [5 Dec] The learner works at a bank." in server.chats[-1].section("learner_digest")


# -- proactive follow-up ----------------------------------------------------------------


def test_follow_up_after_the_event_date_once_and_only_once(make_app, server, clock, run_repl):
    server.script(
        "extraction",
        extraction(
            fact(
                "The learner has an English test next Tuesday.",
                "schedule",
                event_phrase="next Tuesday",
                event_date=None,
            )
        ),
    )
    app = make_app()
    # Sunday 2026-11-29: "next Tuesday" is 2026-12-01
    run_repl(app, ["I have an English test next Tuesday."])
    [plan] = app.store.list(category="schedule")
    assert plan.event_date.isoformat() == "2026-12-01"

    clock.advance(days=1)  # Monday: the test has not happened yet
    run_repl(app, ["Let's practise some vocabulary."])
    assert server.chats[-1].section("follow_up") is None

    clock.advance(days=2)  # Wednesday: the date has passed
    run_repl(app, ["Good morning!", "Can we do a listening exercise?"])
    hinted, after = server.chats[-2], server.chats[-1]
    hint = hinted.section("follow_up")
    # worded as the past it now is, never as the "next Tuesday" it was when said
    assert hint is not None and "English test on Tue 1 Dec (yesterday)" in hint and "next Tuesday" not in hint
    assert "Do not recite or quote this note" in hint and "do not ask about it again" in hint
    assert after.section("follow_up") is None
    assert app.store.get(plan.id).followed_up_at is not None

    # a restart does not ask again either
    app.close()
    again = make_app()
    again.chat("Hello again", on_delta=lambda _: None)
    assert server.chats[-1].section("follow_up") is None


def seed(app, text, *, days_ago, event_date=None, category="schedule"):
    record = app.store.add(
        text, category=category, created_at=app.clock() - timedelta(days=days_ago), event_date=event_date
    )
    return record.id


def test_follow_up_without_a_date_waits_proactive_days_and_picks_the_oldest(make_app, server):
    app = make_app()
    seed(app, "The learner is moving house this weekend.", days_ago=8)
    seed(app, "The learner has a dentist appointment soon.", days_ago=5)
    seed(app, "The learner will visit grandma.", days_ago=1)
    app.chat("hi", on_delta=lambda _: None)
    hint = server.chats[-1].section("follow_up")
    assert "moving house" in hint and "8 days ago" in hint
    assert "dentist" not in hint and "grandma" not in hint


def test_no_follow_up_for_something_said_hours_ago_or_for_other_categories(make_app, server, clock):
    app = make_app()
    app.store.add(
        "The learner is buying dinner later today.",
        category="schedule",
        created_at=app.clock() - timedelta(hours=5),
        event_date=(app.clock() - timedelta(days=1)).date(),
    )
    seed(app, "The learner loves hiking.", days_ago=10, category="hobby")
    seed(app, "The learner has a job interview next month.", days_ago=2)
    app.chat("hi", on_delta=lambda _: None)
    assert server.chats[-1].section("follow_up") is None


def test_a_failed_turn_does_not_use_up_the_follow_up(make_app, server):
    from helpers.fake_openai import Error

    app = make_app()
    memory_id = seed(app, "The learner has a driving test on Friday.", days_ago=6)
    server.script("chat", Error(500))
    try:
        app.chat("hi", on_delta=lambda _: None)
    except Exception:
        pass
    assert app.store.get(memory_id).followed_up_at is None
    app.chat("hi again", on_delta=lambda _: None)
    assert "driving test" in server.chats[-1].section("follow_up")


def test_now_anchor_states_date_time_and_weekday(make_app, server, clock):
    app = make_app()
    app.profiles.set_english_level("B1")
    clock.now = datetime(2026, 12, 3, 21, 30).astimezone()
    app.chat("hi", on_delta=lambda _: None)
    assert "Current local time: 2026-12-03 21:30 (Thursday)" in server.chats[-1].background


# -- profile proposals -------------------------------------------------------------------


def level_change(value, evidence):
    return {"field": "english_level", "action": "set", "value": value, "evidence": evidence}


def test_level_change_is_proposed_persisted_and_confirmed_after_a_restart(make_app, server, run_repl):
    app = make_app()
    app.profiles.set_english_level("B1")
    server.script("chat", "Congratulations on your progress!")
    server.script(
        "extraction", extraction(profile_changes=[level_change("B2", "I passed the B2 exam, so I'm B2 now.")])
    )
    t = run_repl(app, ["I passed the B2 exam, so I'm B2 now."])
    assert "Memora: Congratulations on your progress!\n" in t.text
    assert "Note: You mentioned you're B2 now. Update your profile level from B1 to B2? (yes/no)\n" in t.text
    assert app.profiles.get().english_level == "B1"  # never applied silently
    assert "B2" in app.paths.proposals.read_text()
    app.close()

    restarted = make_app()
    t = run_repl(restarted, ["yes", "profile"])
    assert "You mentioned you're B2 now." in t.text  # asked again at start
    assert "Profile updated: English level is now B2." in t.text
    assert "English level   B2" in t.text
    assert restarted.profiles.get().english_level == "B2"
    assert restarted.proposals.pending() == []
    assert all("yes" != r.last_user for r in server.chats)  # the answer was not chat


def test_no_keeps_the_profile_and_an_unrelated_reply_does_not_count_as_yes(make_app, server, run_repl):
    app = make_app()
    app.profiles.set_english_level("B1")
    server.script("extraction", extraction(profile_changes=[level_change("C1", "I'm C1 now")]))
    t = run_repl(app, ["I'm C1 now", "Tell me a joke", "yes"])
    assert app.profiles.get().english_level == "B1"
    assert server.chats[-1].last_user == "yes"  # after another message, "yes" is just chat
    t = run_repl(app, ["profile", "profile reject"])
    assert "level B1 -> C1" in t.text
    assert "Okay, I left your profile as it is" in t.text
    assert app.proposals.pending() == []


def test_new_goals_apply_directly_with_a_notice_and_wanting_a_level_is_a_goal(make_app, server, run_repl):
    app = make_app()
    app.profiles.set_english_level("B1")
    server.script(
        "extraction",
        extraction(
            profile_changes=[
                {
                    "field": "learning_goal",
                    "action": "add",
                    "value": "reach B2",
                    "evidence": "I want to be B2 by summer",
                }
            ]
        ),
    )
    t = run_repl(app, ["I want to be B2 by summer"])
    assert "Note: Added to your goals: \u201creach B2\u201d." in t.text
    assert app.profiles.get().learning_goals == ["reach B2"]
    assert app.profiles.get().english_level == "B1"
    assert app.proposals.pending() == []
    prompt = server.of_kind("extraction")[-1].body["instructions"]
    assert "only when they say what their level IS" in prompt and "not a level they want (a learning_goal)" in prompt
    assert "about other people" in prompt


def test_removing_a_goal_is_asked_first(make_app, server, run_repl):
    app = make_app()
    app.profiles.add_learning_goal("work abroad")
    server.script(
        "extraction",
        extraction(
            profile_changes=[
                {
                    "field": "learning_goal",
                    "action": "remove",
                    "value": "work abroad",
                    "evidence": "I don't plan to work abroad anymore",
                }
            ]
        ),
    )
    t = run_repl(app, ["I don't plan to work abroad anymore", "profile confirm"])
    assert "Remove the goal \u201cwork abroad\u201d from your profile? (yes/no)" in t.text
    assert app.profiles.get().learning_goals == []


def test_first_level_is_set_with_a_notice(make_app, server, run_repl):
    app = make_app()
    server.script("extraction", extraction(profile_changes=[level_change("A2", "I think my level is A2")]))
    t = run_repl(app, ["I think my level is A2"])
    assert app.profiles.get().english_level == "A2"
    assert "Profile: English level set to A2" in t.text


# -- corrections -------------------------------------------------------------------------


def test_a_correction_supersedes_the_memory_at_once_and_says_so(make_app, server, run_repl):
    app = make_app()
    wrong = app.store.add("The learner wants to work abroad.", category="other")
    app.store.add("The learner lives in Taichung.", category="identity")
    server.script(
        "extraction",
        extraction(
            corrections=[
                {"statement": "The learner wants to work abroad.", "evidence": "No, I never said I want to work abroad"}
            ]
        ),
    )
    server.script("correction", retracting(wrong.content))
    t = run_repl(app, ["No, I never said I want to work abroad", "memories --all"])
    said, listed = t.text.split("You: memories --all", 1)
    assert "removed" not in said  # superseded, not deleted: the notice says what 'memories --all' shows
    assert (
        "Got it, that is superseded ('memories --all' still lists it): "
        "\u201cThe learner wants to work abroad.\u201d" in said
    )
    assert "wants to work abroad" in listed and "superseded" in listed
    # read before the reply: the reply was built without the wrong memory, and asked to confirm
    kinds = [r.kind for r in server.requests if r.kind != "embeddings"]
    assert kinds.index("correction") < kinds.index("chat")
    request = server.chats[-1]
    assert "work abroad" not in (request.section("learner_digest") or "")
    assert "Removed at the learner's request: The learner wants to work abroad." in request.section("memory_changes")
    assert len(server.of_kind("extraction")) == 1  # read once, not again after the reply
    record = app.store.get(wrong.id)
    assert record.status == "superseded" and record.change_reason == "correction"
    assert "never said" in record.metadata["note"]
    assert [r.content for r in app.store.list()] == ["The learner lives in Taichung."]
    assert server.of_kind("reconcile") == []  # no second question, no extra decision


def test_a_question_that_arrives_during_a_reply_waits_for_it_so_yes_answers_the_tutor(make_app, server, run_repl):
    """The reviewer's race: the proposal comes back while the next reply streams."""
    app = make_app()
    app.profiles.set_english_level("B1")
    proposal = server.hold("extraction", extraction(profile_changes=[level_change("B2", "I'm B2 now")]))
    server.script("chat", "Congratulations!")
    second = server.hold("chat", "Great, shall we start?")
    server.script("chat", "Here we go.")

    def proposal_arrives_during_the_second_reply():
        second.wait_arrived()  # the second reply is under way
        proposal.release()
        assert app.wait_for_extraction(10)  # the proposal came back while it streamed
        second.release()

    conductor = Conductor(proposal_arrives_during_the_second_reply)
    t = run_repl(app, ["I'm B2 now", "Can we practise listening?", "yes"], settle=False)
    conductor.join()
    # the question was printed after the second reply, not in the middle of it
    assert t.text.index("Great, shall we start?") < t.text.index("Update your profile level from B1 to B2?")
    # and the "yes" typed after it... answers it, because it was the last thing printed
    assert app.profiles.get().english_level == "B2"


def test_yes_after_a_tutor_question_is_chat_when_no_profile_question_is_pending(make_app, server, run_repl):
    app = make_app()
    app.profiles.set_english_level("B1")
    server.script("extraction", extraction(profile_changes=[level_change("B2", "I'm B2 now")]))
    server.script("chat", "Congratulations!", "Shall we start?")
    run_repl(app, ["I'm B2 now", "Can we practise listening?", "yes"])
    assert server.chats[-1].last_user == "yes"  # a reply came after the question: yes is for the tutor
    assert app.profiles.get().english_level == "B1"
    assert "profile confirm" in run_repl(app, ["profile"]).text


def test_a_correction_in_a_failed_turn_changes_nothing(make_app, server):
    from helpers.fake_openai import Error

    app = make_app()
    wrong = app.store.add("The learner wants to work abroad.")
    server.script(
        "extraction",
        extraction(
            corrections=[{"statement": "The learner wants to work abroad.", "evidence": "No, I never said that"}]
        ),
    )
    server.script("correction", retracting(wrong.content))
    server.script("chat", Error(500))
    from memora.core.errors import ModelCallError

    with pytest.raises(ModelCallError):
        app.chat("No, I never said that", on_delta=lambda _: None)
    app.wait_for_extraction(5)
    assert app.store.get(wrong.id).is_current  # the turn was rolled back, and so was the correction


def test_pending_profile_changes_keep_the_newest_max_pending_across_a_restart(tmp_path):
    """More questions than MAX_PENDING waiting: the oldest go, the newest stay in order, on disk."""
    from memora.reading.proposals import MAX_PENDING, ProfileProposal, ProposalStore

    path = tmp_path / "memora_proposals.json"
    store = ProposalStore(path)
    values = [f"goal {n}" for n in range(MAX_PENDING + 5)]
    for value in values:
        assert store.add(ProfileProposal.new("learning_goal", "remove", value, None, f"I gave up {value}"))
    assert not store.add(
        ProfileProposal.new("learning_goal", "remove", values[-1], None, "again")
    )  # no duplicate at the cap
    reopened = ProposalStore(path)
    assert [p.value for p in reopened.pending()] == values[-MAX_PENDING:]
    assert reopened.first().value == values[5]  # the oldest that is left is asked first
    assert reopened.take().value == values[5] and len(reopened.pending()) == MAX_PENDING - 1
