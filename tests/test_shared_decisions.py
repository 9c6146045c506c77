"""Several new facts of one reading are decided in one call, and each decision still
acts only on a memory that is listed and current, as a decision of its own would."""

from __future__ import annotations

import json

from helpers.fake_openai import Error
from helpers.scripts import ADD, decision_input, decisions_input, extraction, fact, say


def _shared(answer_for):
    """A shared-decision answer: ``answer_for(new_fact, listed)`` gives one fact's decision
    (action, listed memory text or None, merged text), or None to leave the fact out."""

    def answer(body):
        facts, listed = decisions_input(body)
        number = {text: n for n, text in listed.items()}
        out = []
        for letter, text in facts.items():
            decided = answer_for(text, listed)
            if decided is not None:
                action, memory, merged = decided
                out.append({"fact": letter, "action": action, "memory": number.get(memory), "text": merged})
        return {"decisions": out}

    return answer


def _facts(app):
    return sorted(r.content for r in app.store.list())


def test_two_facts_of_one_message_are_decided_in_one_call_each_on_its_own(make_app, server):
    app = make_app()
    app.store.add("The learner lives in Taipei.", category="identity")
    app.store.add("The learner works at a bank.", category="identity")
    server.script(
        "extraction",
        extraction(
            fact("The learner moved to Tokyo last month.", "identity"),
            fact("The learner now works at Sony.", "identity"),
        ),
    )

    def decide(new, listed):
        if "Tokyo" in new:
            return "SUPERSEDE", "The learner lives in Taipei.", None
        return "SUPERSEDE", "The learner works at a bank.", None

    server.script("reconcile_many", _shared(decide))
    say(app, "I moved to Tokyo last month and now I work at Sony.")
    assert _facts(app) == ["The learner moved to Tokyo last month.", "The learner now works at Sony."]
    [call] = server.of_kind("reconcile_many")
    assert server.of_kind("reconcile") == []  # one call, not one per fact
    content = call.input[0]["content"]
    assert content.startswith(
        "New facts:\nA. The learner moved to Tokyo last month.\nB. The learner now works at Sony."
    )
    facts, listed = decisions_input(call)
    assert {"The learner lives in Taipei.", "The learner works at a bank."} <= set(listed.values())
    assert sum(text == "The learner lives in Taipei." for text in listed.values()) == 1  # the union, once each
    schema = call.body["text"]["format"]
    assert schema["name"] == "MemoryDecisions" and schema["strict"] is True


def test_two_decisions_naming_one_memory_change_it_once_and_add_the_other(make_app, server):
    app = make_app()
    app.store.add("The learner lives in Taipei.", category="identity")
    server.script(
        "extraction",
        extraction(fact("The learner lives in Tokyo.", "identity"), fact("The learner lives in Osaka.", "identity")),
    )
    server.script("reconcile_many", _shared(lambda new, listed: ("SUPERSEDE", "The learner lives in Taipei.", None)))
    say(app, "I live in Tokyo. Well, Osaka.")
    # the second SUPERSEDE names a memory the first already replaced: adding never hides a true fact
    assert _facts(app) == ["The learner lives in Osaka.", "The learner lives in Tokyo."]
    [taipei] = [r for r in app.store.list(include_superseded=True) if "Taipei" in r.content]
    assert not taipei.is_current


def test_a_fact_left_out_or_decided_malformed_gets_its_own_call(make_app, server):
    app = make_app()
    app.store.add("The learner lives in Taipei.", category="identity")
    app.store.add("The learner likes jazz.", category="preference")
    server.script(
        "extraction",
        extraction(
            fact("The learner moved to Tokyo.", "identity"),
            fact("The learner likes 1960s jazz.", "preference"),
        ),
    )

    def shared(body):
        facts, listed = decisions_input(body)
        number = {text: n for n, text in listed.items()}
        return {
            "decisions": [
                {"fact": "A", "action": "SUPERSEDE", "memory": number["The learner lives in Taipei."], "text": None},
                {"fact": "B", "action": "MAYBE", "memory": "x", "text": None},  # malformed: B gets its own call
            ]
        }

    server.script("reconcile_many", shared)
    server.script(
        "reconcile",
        lambda body: {
            "action": "UPDATE",
            "memory": next(n for n, t in decision_input(body)[1].items() if t == "The learner likes jazz."),
            "text": "The learner likes 1960s jazz.",
        },
    )
    say(app, "I moved to Tokyo. And I love 1960s jazz.")
    assert _facts(app) == ["The learner likes 1960s jazz.", "The learner moved to Tokyo."]
    [own] = server.of_kind("reconcile")
    assert decision_input(own)[0] == "The learner likes 1960s jazz."


def test_a_number_outside_the_listing_or_a_letter_not_given_changes_nothing(make_app, server):
    app = make_app()
    app.store.add("The learner lives in Taipei.", category="identity")
    server.script(
        "extraction",
        extraction(fact("The learner moved to Tokyo.", "identity"), fact("The learner has a dog.", "identity")),
    )
    server.script(
        "reconcile_many",
        {
            "decisions": [
                {"fact": "A", "action": "SUPERSEDE", "memory": 999, "text": None},
                {"fact": "B", "action": "NOOP", "memory": None, "text": None},
                {"fact": "Z", "action": "SUPERSEDE", "memory": 1, "text": None},  # no such fact
            ]
        },
    )
    say(app, "I moved to Tokyo and I have a dog.")
    assert "The learner lives in Taipei." in _facts(app)  # never superseded by a number it was not given
    assert "The learner moved to Tokyo." in _facts(app)


def test_a_failed_shared_call_keeps_every_fact_to_retry_and_loses_nothing_else(make_app, server):
    app = make_app()
    app.store.add("The learner lives in Taipei.", category="identity")
    server.script(
        "extraction",
        extraction(
            fact("The learner moved to Tokyo.", "identity"),
            fact("The learner works at Sony.", "identity"),
            profile_changes=[{"field": "learning_goal", "action": "add", "value": "business email", "evidence": "x"}],
        ),
    )
    server.script("reconcile_many", Error(500, "down"), {"decisions": []})
    server.script("reconcile", ADD, ADD)
    say(app, "I moved to Tokyo and work at Sony. I want to write business emails.")
    assert _facts(app) == ["The learner lives in Taipei."]
    assert app.profiles.get().learning_goals == ["business email"]
    kept = json.loads(app.paths.session.read_text())["pending_extractions"]
    assert [f["text"] for f in kept[0]["remaining"]["facts"]] == [
        "The learner moved to Tokyo.",
        "The learner works at Sony.",
    ]
    assert app.retry_pending_extractions() == 1 and app.wait_for_extraction(10)
    assert _facts(app) == ["The learner lives in Taipei.", "The learner moved to Tokyo.", "The learner works at Sony."]


def test_a_fact_said_twice_in_one_reading_is_stored_once(make_app, server):
    app = make_app()
    server.script(
        "extraction",
        extraction(fact("The learner has a cat.", "identity"), fact("The learner has a cat!", "identity")),
    )
    say(app, "I have a cat. Did I say I have a cat?")
    assert _facts(app) == ["The learner has a cat."]
