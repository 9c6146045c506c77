"""Several new facts of one reading are decided in one call, and each decision still
acts only on a memory that is listed and current, as a decision of its own would."""

from __future__ import annotations

from helpers.fake_openai import Error
from helpers.scripts import ADD, decide, decision_input, decisions_input, extraction, fact, naming, say


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


TOKYO, TENNIS = "The learner moved to Tokyo last month.", "The learner took up tennis."


def _two_unrelated_facts(app, server):
    """Two facts of one message that cannot change each other (other categories, no
    word in common, apart in meaning), each beside a memory it may replace."""
    taipei = app.store.add("The learner lives in Taipei.", category="identity")
    golf = app.store.add("The learner plays golf.", category="hobby")
    server.script("extraction", extraction(fact(TOKYO, "identity"), fact(TENNIS, "hobby")))
    return taipei, golf


def test_two_unrelated_facts_of_one_message_are_decided_in_one_call_each_on_its_own(make_app, server, local_embedder):
    app = make_app(embedder=local_embedder)
    _two_unrelated_facts(app, server)

    def decide(new, listed):
        if "Tokyo" in new:
            return "SUPERSEDE", "The learner lives in Taipei.", None
        return "ADD", None, None

    server.script("reconcile_many", _shared(decide))
    say(app, "I moved to Tokyo last month and took up tennis.")
    assert _facts(app) == sorted(["The learner plays golf.", TENNIS, TOKYO])
    [call] = server.of_kind("reconcile_many")
    assert server.of_kind("reconcile") == []  # one call, not one per fact
    content = call.input[0]["content"]
    assert content.startswith(f"New facts:\nA. {TOKYO} (29 Nov 10:00)\nB. {TENNIS} (29 Nov 10:00)\nMemories:\n")
    _, listed = decisions_input(call)
    assert {"The learner lives in Taipei.", "The learner plays golf."} <= set(listed.values())
    assert len(listed) == len(set(listed.values()))  # the union, each memory once
    schema = call.body["text"]["format"]
    assert schema["name"] == "MemoryDecisions" and schema["strict"] is True


def test_a_shared_decision_naming_a_memory_changed_meanwhile_is_decided_again_on_its_own(
    make_app, server, local_embedder
):
    app = make_app(embedder=local_embedder)
    taipei, _ = _two_unrelated_facts(app, server)
    server.script("reconcile_many", _shared(lambda new, listed: ("SUPERSEDE", "The learner lives in Taipei.", None)))
    server.script("reconcile", ADD)
    say(app, "I moved to Tokyo last month and took up tennis.")
    # A replaced Taipei; B named it too, but it was no longer current: B was decided again
    assert _facts(app) == sorted(["The learner plays golf.", TENNIS, TOKYO])
    [again] = server.of_kind("reconcile")
    new_fact, listed = decision_input(again)
    assert new_fact == TENNIS and "The learner lives in Taipei." not in listed.values()
    assert not app.store.get(taipei.id).is_current


def test_facts_of_one_reading_that_may_change_each_other_are_decided_one_after_the_other(make_app, server):
    app = make_app()
    app.store.add("The learner lives in Taipei.", category="identity")
    server.script(
        "extraction",
        extraction(fact("The learner lives in Tokyo.", "identity"), fact("The learner lives in Osaka.", "identity")),
    )
    server.script(
        "reconcile",
        naming("The learner lives in Taipei."),  # Tokyo replaces Taipei
        naming("The learner lives in Tokyo."),  # then Osaka, decided against Tokyo, replaces it
    )
    say(app, "I live in Tokyo. Well, Osaka.")  # the shared answer (the fake's default) decides neither
    assert _facts(app) == ["The learner lives in Osaka."]
    # Osaka was planned again after Tokyo was stored, and decided against it
    assert "The learner lives in Tokyo." in decision_input(server.of_kind("reconcile")[1])[1].values()


def test_a_shared_answer_may_name_an_earlier_new_fact_by_its_letter(make_app, server):
    app = make_app()
    taipei = app.store.add("The learner lives in Taipei.", category="identity")
    server.script(
        "extraction",
        extraction(fact("The learner lives in Tokyo.", "identity"), fact("The learner lives in Osaka.", "identity")),
    )

    def shared(body):
        _, listed = decisions_input(body)
        number = {text: n for n, text in listed.items()}
        return {
            "decisions": [
                {"fact": "A", "action": "SUPERSEDE", "memory": number["The learner lives in Taipei."], "text": None},
                {"fact": "B", "action": "SUPERSEDE", "memory": None, "earlier": "A", "text": None},
            ]
        }

    server.script("reconcile_many", shared)
    say(app, "I live in Tokyo. Well, Osaka.")
    assert _facts(app) == ["The learner lives in Osaka."]
    assert server.of_kind("reconcile") == []  # one call decided both
    history = [r.content for r in app.store.list(include_superseded=True)]
    assert sorted(history) == [
        "The learner lives in Osaka.",
        "The learner lives in Taipei.",
        "The learner lives in Tokyo.",
    ]
    assert not app.store.get(taipei.id).is_current


def test_a_letter_that_is_not_an_earlier_fact_names_nothing(make_app, server):
    app = make_app()
    server.script(
        "extraction",
        extraction(fact("The learner has a cat.", "identity"), fact("The learner has a cat named Tom.", "identity")),
    )
    server.script(
        "reconcile_many",
        {
            "decisions": [
                {"fact": "A", "action": "SUPERSEDE", "memory": None, "earlier": "B", "text": None},  # a later fact
                {"fact": "B", "action": "NOOP", "memory": None, "earlier": "B", "text": None},  # itself
            ]
        },
    )
    server.script("reconcile", ADD)
    say(app, "I have a cat. Her name is Tom.")
    assert sorted(_facts(app)) == ["The learner has a cat named Tom.", "The learner has a cat."]


def test_a_fact_left_out_or_decided_malformed_gets_its_own_call(make_app, server, local_embedder):
    app = make_app(embedder=local_embedder)
    _two_unrelated_facts(app, server)

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
    server.script("reconcile", naming("The learner plays golf.", "SUPERSEDE"))
    say(app, "I moved to Tokyo last month and took up tennis.")
    assert _facts(app) == sorted([TENNIS, TOKYO])
    [own] = server.of_kind("reconcile")
    assert decision_input(own)[0] == TENNIS


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


def test_a_failed_shared_call_keeps_every_fact_to_retry_and_loses_nothing_else(make_app, server, local_embedder):
    app = make_app(embedder=local_embedder)
    app.store.add("The learner lives in Taipei.", category="identity")
    app.store.add("The learner plays golf.", category="hobby")
    server.script(
        "extraction",
        extraction(
            fact(TOKYO, "identity"),
            fact(TENNIS, "hobby"),
            profile_changes=[{"field": "learning_goal", "action": "add", "value": "business email", "evidence": "x"}],
        ),
    )
    server.script("reconcile_many", Error(500, "down"), {"decisions": []})
    server.script("reconcile", ADD, ADD)
    say(app, "I moved to Tokyo last month and took up tennis. I want to write business emails.")
    assert _facts(app) == ["The learner lives in Taipei.", "The learner plays golf."]
    assert app.profiles.get().learning_goals == ["business email"]
    kept = app.queue.pending  # what the session's next write keeps
    assert [f["text"] for f in kept[0].remaining["facts"]] == [TOKYO, TENNIS]
    assert app.reader.retry(30.0) == 1 and app.wait_for_extraction(10)
    assert _facts(app) == sorted(["The learner lives in Taipei.", "The learner plays golf.", TENNIS, TOKYO])


def test_a_fact_said_twice_in_one_reading_is_stored_once(make_app, server):
    app = make_app()
    server.script(
        "extraction",
        extraction(fact("The learner has a cat.", "identity"), fact("The learner has a cat!", "identity")),
    )
    say(app, "I have a cat. Did I say I have a cat?")
    assert _facts(app) == ["The learner has a cat."]


def first_listed(action, *texts):
    """Name the first of ``texts`` the decision lists (as a model would: the current one)."""

    def answer(body):
        _, listed = decision_input(body)
        for text in texts:
            if text in listed.values():
                return naming(text, action)(body)
        return dict(ADD)

    return answer


def test_facts_differing_only_in_a_symbol_are_both_kept(make_app, server):
    """ "I know C and C++": two facts, not one said twice."""
    app = make_app()
    server.script(
        "extraction",
        extraction(fact("The learner knows C.", "identity"), fact("The learner knows C++.", "identity")),
    )
    server.script("reconcile", ADD)
    say(app, "I know C and C++.")
    assert set(_facts(app)) == {"The learner knows C.", "The learner knows C++."}


def test_a_noop_naming_a_memory_an_earlier_fact_replaced_does_not_lose_the_fact(make_app, server):
    app = make_app()
    app.store.add("The learner lives in Taipei.", category="identity")
    server.script(
        "extraction",
        extraction(
            fact("The learner moved to Tokyo last month.", "identity"),
            fact("The learner still lives in Taipei for now.", "identity"),
        ),
    )
    # B agrees with Taipei while it is listed; one at a time it saw Tokyo instead and replaced it
    noop_or_replace = lambda body: (  # noqa: E731
        naming("The learner lives in Taipei.", "NOOP")(body)
        if "The learner lives in Taipei." in decision_input(body)[1].values()
        else first_listed("SUPERSEDE", "The learner moved to Tokyo last month.")(body)
    )
    answer = decide(Tokyo=naming("The learner lives in Taipei.", "SUPERSEDE"), still=noop_or_replace)
    server.script("reconcile_many", answer)
    server.script("reconcile", answer, answer)
    say(app, "I moved to Tokyo last month. Well, I still live in Taipei for now.")
    current = " ".join(_facts(app))
    assert "Taipei" in current  # B said so, and nothing current says it any more
    touched = [r for r in app.store.list(include_superseded=True) if not r.is_current]
    assert not any(r.last_seen and r.last_seen > r.created_at for r in touched)


def test_a_new_fact_is_decided_against_an_earlier_new_fact_of_the_reading(make_app, server):
    # nothing stored yet: A is added; B ("...named Tom") used to be decided beside A
    app = make_app()
    server.script(
        "extraction",
        extraction(fact("The learner has a cat.", "identity"), fact("The learner has a cat named Tom.", "identity")),
    )
    server.script(
        "reconcile", decide(Tom=naming("The learner has a cat.", "UPDATE", "The learner has a cat named Tom."))
    )
    say(app, "I have a cat. Her name is Tom.")
    assert _facts(app) == ["The learner has a cat named Tom."]


def test_a_fact_said_twice_in_other_words_is_stored_once_even_when_both_are_added(make_app, server):
    app = make_app()
    server.script(
        "extraction",
        extraction(
            fact("The learner plays tennis on weekends.", "hobby"),
            fact("On weekends the learner plays tennis.", "hobby"),
        ),
    )
    server.script(
        "reconcile_many",
        {"decisions": [{"fact": letter, **ADD} for letter in "AB"]},
    )
    say(app, "I play tennis on weekends. On weekends I play tennis.")
    assert _facts(app) == ["The learner plays tennis on weekends."]


def test_a_decision_with_a_letter_that_names_no_earlier_fact_gets_its_own_call(make_app, server):
    app = make_app()
    dog = app.store.add("The learner has a dog.", category="identity")
    seen = app.store.get(dog.id).last_seen
    server.script(
        "extraction",
        extraction(fact("The learner has a cat.", "identity"), fact("The learner has a cat named Tom.", "identity")),
    )
    server.script(
        "reconcile_many",
        {
            "decisions": [
                {"fact": "A", **ADD},
                {"fact": "B", "action": "NOOP", "memory": None, "earlier": "Fact A", "text": None},
            ]
        },
    )
    server.script("reconcile", ADD, ADD)
    say(app, "I have a cat. Her name is Tom.")
    assert "The learner has a cat named Tom." in _facts(app)
    assert app.store.get(dog.id).last_seen == seen  # a NOOP naming nothing refreshes nothing


def test_a_fact_may_name_an_earlier_fact_that_was_itself_planned_again(make_app, server):
    """B refines A and C refines B, all three related: B is planned again after A is
    stored, and C's letter still finds the memory B left, in the one shared call."""
    app = make_app()
    server.script(
        "extraction",
        extraction(
            fact("The learner has a cat.", "identity"),
            fact("The learner has a cat named Tom.", "identity"),
            fact("The learner's cat Tom is black.", "identity"),
        ),
    )
    server.script(
        "reconcile_many",
        {
            "decisions": [
                {"fact": "A", **ADD},
                {
                    "fact": "B",
                    "action": "UPDATE",
                    "memory": None,
                    "earlier": "A",
                    "text": "The learner has a cat named Tom.",
                },
                {
                    "fact": "C",
                    "action": "UPDATE",
                    "memory": None,
                    "earlier": "B",
                    "text": "The learner has a black cat named Tom.",
                },
            ]
        },
    )
    say(app, "I have a cat. Her name is Tom. Tom is black.")
    assert _facts(app) == ["The learner has a black cat named Tom."]
    assert server.of_kind("reconcile") == []  # one call decided all three
