"""Memory that stays true: decisions, supersede with history, the cap, exact commands."""

from __future__ import annotations

import pytest
from helpers.scripts import decision_input, extraction, fact, naming, number_of, say

from long_term_memory import LongTermMemoryStore
from memora.core.errors import CommandError, MemoryFullError


def test_coffee_then_quit_leaves_one_current_and_one_superseded(make_app, server):
    app = make_app()
    server.script("extraction", extraction(fact("The learner drinks coffee every day.")))
    say(app, "I drink coffee every day.")
    [coffee] = app.store.list()

    def decide(body):
        new_fact, listed = decision_input(body)
        assert coffee.content in listed.values() and "quit coffee" in new_fact  # the neighbour was shown to the model
        return naming(coffee.content, "SUPERSEDE")(body)

    server.script("extraction", extraction(fact("The learner quit coffee last month.")))
    server.script("reconcile", decide)
    say(app, "I quit coffee last month.")

    current = app.store.list()
    everything = app.store.list(include_superseded=True)
    assert [r.content for r in current] == ["The learner quit coffee last month."]
    assert len(everything) == 2
    old = app.store.get(coffee.id)
    assert old.status == "superseded"
    assert old.superseded_by == current[0].id
    assert old.valid_until is not None
    assert old.change_reason == "contradiction"
    assert current[0].supersedes == coffee.id
    # retrieval ignores the superseded fact
    results = app.store.search("coffee", min_score=0)
    assert [r.id for r in results] == [current[0].id]
    # history shows the chain, oldest first, from either end
    assert [r.id for r in app.store.history(coffee.id)] == [coffee.id, current[0].id]
    assert [r.id for r in app.store.history(current[0].id)] == [coffee.id, current[0].id]


def test_update_refines_and_keeps_the_old_version(make_app, server):
    app = make_app()
    server.script("extraction", extraction(fact("The learner likes jazz.", "preference")))
    say(app, "I like jazz.")
    [jazz] = app.store.list()
    server.script("extraction", extraction(fact("The learner likes 1960s jazz.", "preference")))
    server.script(
        "reconcile",
        naming(jazz.content, "UPDATE", "The learner likes jazz, especially from the 1960s."),
    )
    say(app, "Especially 1960s jazz.")
    [current] = app.store.list()
    assert current.content == "The learner likes jazz, especially from the 1960s."
    assert app.store.get(jazz.id).change_reason == "update"


def test_noop_stores_nothing_new(make_app, server):
    app = make_app()
    server.script("extraction", extraction(fact("The learner lives in Taipei.", "identity")))
    say(app, "I live in Taipei.")
    server.script("extraction", extraction(fact("The learner is based in Taipei.", "identity")))
    server.script("reconcile", {"action": "NOOP", "memory": None, "text": None})
    say(app, "I'm based in Taipei.")
    assert [r.content for r in app.store.list(include_superseded=True)] == ["The learner lives in Taipei."]


# Only a plain integer within the listing names a memory. The one listed memory is
# number 1, so "1", 1.0 and true would each misfile the fact if they were read as 1.
@pytest.mark.parametrize("named", [2, 99, 0, -1, "1", 1.0, True, "deadbeef"])
@pytest.mark.parametrize("action", ["SUPERSEDE", "UPDATE"])
def test_a_decision_naming_no_listed_memory_adds_instead_of_hiding_a_fact(make_app, server, action, named):
    app = make_app()
    server.script("extraction", extraction(fact("The learner has a cat.", "identity")))
    say(app, "I have a cat.")
    server.script("extraction", extraction(fact("The learner has a cat called Mochi.", "identity")))
    server.script("reconcile", {"action": action, "memory": named, "text": "The learner has a dog."})
    say(app, "My cat is called Mochi.")
    [decision] = server.of_kind("reconcile")
    assert decision_input(decision)[1] == {1: "The learner has a cat."}
    assert sorted(r.content for r in app.store.list()) == [
        "The learner has a cat called Mochi.",
        "The learner has a cat.",
    ]
    assert app.store.count(include_superseded=True) == 2  # nothing was superseded or updated


def test_the_decision_schema_requires_every_field_and_an_answer_lacking_one_adds(make_app, server):
    app = make_app()
    server.script("extraction", extraction(fact("The learner has a cat.", "identity")))
    say(app, "I have a cat.")
    server.script("extraction", extraction(fact("The learner has a cat called Mochi.", "identity")))
    server.script("reconcile", {"action": "SUPERSEDE"})  # no memory named
    say(app, "My cat is called Mochi.")
    [decision] = server.of_kind("reconcile")
    schema = decision.body["text"]["format"]["schema"]
    assert decision.body["text"]["format"]["strict"] is True
    assert schema["required"] == ["action", "memory", "text"] and "default" not in str(schema)
    assert schema["properties"]["memory"] == {"type": ["integer", "null"]}
    assert sorted(r.content for r in app.store.list()) == [
        "The learner has a cat called Mochi.",
        "The learner has a cat.",
    ]


@pytest.mark.parametrize("named", [[0, 99, -1, True, "1", 1.0, "deadbeef"], []])
def test_a_correction_lookup_naming_no_listed_memory_retracts_nothing(make_app, server, named):
    app = make_app()
    wrong = app.store.add("The learner wants to work abroad.", category="other")
    kept = app.store.add("The learner works at a bank.", category="identity")
    statement = {"statement": "The learner wants to work abroad.", "evidence": "No, I never said that."}
    server.script("extraction", extraction(corrections=[statement]))
    server.script("correction", {"memories": named})
    say(app, "No, I never said that.")
    [lookup] = server.of_kind("correction")
    assert wrong.content in decision_input(lookup)[1].values()
    assert app.store.get(wrong.id).is_current and app.store.get(kept.id).is_current


def test_a_correction_lookup_naming_a_memory_twice_retracts_it_once(make_app, server):
    app = make_app()
    wrong = app.store.add("The learner wants to work abroad.", category="other")
    statement = {"statement": "The learner wants to work abroad.", "evidence": "No, I never said that."}
    server.script("extraction", extraction(corrections=[statement]))
    server.script("correction", lambda body: {"memories": [number_of(body, wrong.content)] * 2})
    say(app, "No, I never said that.")
    assert app.store.get(wrong.id).status == "superseded"
    assert [r.content for r in app.store.list()] == []
    assert app.store.count(include_superseded=True) == 1


def test_remember_and_forget_are_exact_and_never_second_guessed(make_app, server, run_repl):
    app = make_app()
    run_repl(app, ["remember I drink coffee every day", "remember I quit coffee last month", "memories"])
    assert sorted(r.content for r in app.store.list()) == ["I drink coffee every day", "I quit coffee last month"]
    assert server.of_kind("reconcile") == [] and server.chats == []
    target = app.store.list(text="quit")[0]
    t = run_repl(app, [f"forget {target.id}"])
    assert f"Forgot {target.id}." in t.text
    assert [r.content for r in app.store.list(include_superseded=True)] == ["I drink coffee every day"]


def test_memories_all_and_history_commands(make_app, server, run_repl):
    app = make_app()
    old = app.store.add("The learner's level is A2.")
    new = app.store.supersede(old.id, "The learner's level is B1.", reason="contradiction")
    # The full id: a prefix of digits alone ("83032") reads as a number, not an id (routing.typed_id).
    t = run_repl(app, ["memories", "memories --all", f"history {new.id}"])
    listing = t.text.split("You: memories --all")[0]
    assert "level is B1" in listing and "level is A2" not in listing
    everything = t.text.split("You: memories --all")[1].split("You: history")[0]
    assert "level is A2" in everything and "superseded" in everything
    history = t.text.split("You: history")[1]
    assert history.index("level is A2") < history.index("level is B1")
    assert "contradiction" in history


def test_forget_a_memory_removes_its_earlier_versions_too(make_app):
    app = make_app()
    first = app.store.add("The learner is learning Spanish.")
    second = app.store.edit(first.id, "The learner is learning Spanish and French.")
    deleted = app.store.delete(second.id)
    assert set(deleted) == {first.id, second.id}
    assert app.store.count(include_superseded=True) == 0


def test_memory_edit_keeps_history(make_app, run_repl):
    app = make_app()
    record = app.store.add("The learner has one sister.")
    t = run_repl(app, [f"memory edit {record.id} The learner has two sisters."])
    [current] = app.store.list()
    assert current.content == "The learner has two sisters." and current.supersedes == record.id
    assert f"Updated: {record.id} is now {current.id}" in t.text


def test_the_cap_never_drops_anything_silently(make_app, server, run_repl):
    app = make_app(memory_cap=3)
    for text in ("fact one about tea", "fact two about jazz", "fact three about Osaka"):
        app.store.add(text)
    with pytest.raises(MemoryFullError) as raised:
        app.store.add("fact four about hiking")
    assert "memories" in str(raised.value) and "forget" in str(raised.value)
    # extraction at the cap: nothing dropped, and the learner is told once per session
    for i in range(3):
        server.script("extraction", extraction(fact(f"The learner visited museum number {i}.", "other")))
    t = run_repl(app, ["I visited a museum.", "I visited another museum.", "And a third one.", "remember fact five"])
    assert app.store.count() == 3
    assert sorted(r.content for r in app.store.list()) == [
        "fact one about tea",
        "fact three about Osaka",
        "fact two about jazz",
    ]
    assert t.text.count("Memory is full") == 2  # once from extraction this session, once for the explicit remember
    assert "Error: Memory is full" in t.text


def test_the_cap_is_per_learner_and_can_be_changed(make_app, run_repl):
    app = make_app(memory_cap=2)
    t = run_repl(app, ["memory cap 5", "memory cap"])
    assert "Memory cap set to 5 (0 in use)." in t.text and "Memory cap: 5" in t.text
    assert app.store.memory_cap == 5
    other = LongTermMemoryStore(
        app.settings.db_dir, embedding_function=app.embedder, user_id="bob", connection=app.connection, memory_cap=2
    )
    assert other.memory_cap == 2


def test_unknown_ids_are_a_clear_error(make_app):
    app = make_app()
    with pytest.raises(CommandError, match="No memory with id 'nope'"):
        app.store.delete("nope")
    with pytest.raises(CommandError, match="No memory with id"):
        app.store.history("zzzzzzzz")


def test_texts_that_differ_only_in_symbols_are_different_facts(make_app):
    app = make_app()
    app.store.add("The learner programs in C++")
    assert not app.store.add("The learner programs in C#").duplicate
    assert app.store.add("the learner programs in C++!").duplicate  # case and final punctuation do not matter
    app.profiles.add_learning_goal("learn C++")
    app.profiles.add_learning_goal("learn C#")
    assert app.profiles.get().learning_goals == ["learn C++", "learn C#"]


def test_memory_cap_off_survives_a_restart(make_app, run_repl):
    app = make_app(memory_cap=2)
    run_repl(app, ["memory cap off"])
    app.close()
    again = make_app(memory_cap=2)
    assert "Memory cap: none" in run_repl(again, ["memory cap"]).text
    for i in range(3):
        again.store.add(f"fact number {i} about something")
    assert again.store.count() == 3
