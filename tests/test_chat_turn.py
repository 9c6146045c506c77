"""The turn lifecycle, asserted on what the real openai client sent."""

from __future__ import annotations

import json

import pytest
from helpers.fake_openai import Disconnect, Error

from context_builder import GUARD_TEXT
from memora.core.errors import ModelCallError, ModelNotConfigured
from memora.model.prompts import SYSTEM_PROMPT
from memora.store.retrieval import RETRIEVAL_MIN_SCORE


def chat(app, text):
    return app.chat(text, on_delta=lambda _: None)


def test_turn_sends_one_developer_message_with_the_profile(make_app, server):
    app = make_app(as_openai=True)  # OpenAI reads the developer role
    app.profiles.set_english_level("b1")
    app.profiles.add_learning_goal("travel English for a trip to Japan")
    app.profiles.add_preference("short examples")

    result = chat(app, "Let's start today's practice.")

    assert result.reply.text == "Reply 1."
    request = server.chats[-1]
    assert request.body["instructions"] == SYSTEM_PROMPT
    assert request.body["stream"] is True
    assert request.body["store"] is False
    assert request.roles == ["developer", "user"]
    developer = request.background
    assert GUARD_TEXT in developer
    assert (
        "<user_profile>\n- English level: B1\n- Learning goals: travel English for a trip to Japan\n"
        "- Preferences: short examples\n</user_profile>" in developer
    )
    # nothing was retrieved: no memory section, no empty shell
    assert "<long_term_memories>" not in developer
    assert request.last_user == "Let's start today's practice."


def test_on_another_server_the_background_travels_with_the_instructions_as_its_one_system_message(make_app, server):
    app = make_app()  # a local OpenAI-compatible server (the stand-in answers no server probe)
    app.profiles.set_english_level("b1")
    chat(app, "Let's start today's practice.")
    request = server.chats[-1]
    assert request.roles == ["user"]  # no developer item for a chat template to drop, no second system item
    instructions = request.body["instructions"]
    assert instructions.startswith(SYSTEM_PROMPT + "\n\n" + GUARD_TEXT)
    assert "<user_profile>\n- English level: B1\n</user_profile>" in instructions


def test_with_nothing_to_say_the_background_is_one_line_with_the_time(make_app, server):
    app = make_app(as_openai=True)
    chat(app, "Hello!")
    assert server.chats[-1].roles == ["developer", "user"]
    assert server.chats[-1].background == "Current local time: 2026-11-29 10:00 (Sunday)"


def test_memory_section_appears_only_when_a_memory_passes_the_threshold(make_app, server):
    app = make_app()
    app.store.add("The learner practised airport check-in dialogues", memory_type="episodic")
    app.store.add("The learner's cat is called Mochi")

    chat(app, "Can we practise the airport check-in dialogue again?")
    memories = server.chats[-1].section("long_term_memories")
    assert memories is not None and "airport check-in dialogues" in memories
    assert "Mochi" not in memories  # retrieved, but below the threshold for this query
    mochi = [r for r in app.store.search("airport check-in dialogue", min_score=0) if "Mochi" in r.content]
    assert len(mochi) == 1 and mochi[0].score < RETRIEVAL_MIN_SCORE  # a candidate, kept out by the threshold

    chat(app, "What is the weather like?")
    assert server.chats[-1].section("long_term_memories") is None


def test_memory_lines_show_their_age(make_app, server, clock):
    app = make_app()
    app.store.add("The learner practised ordering ramen in English", memory_type="episodic")
    clock.advance(days=3)
    chat(app, "Let's practise ordering ramen again")
    developer = server.chats[-1].background
    assert "- [29 Nov, 3 days ago] The learner practised ordering ramen in English" in developer
    assert "Current local time: 2026-12-02 10:00 (Wednesday)" in developer


def test_history_is_sent_and_grows(make_app, server):
    app = make_app(as_openai=True)
    chat(app, "first")
    chat(app, "second")
    request = server.chats[-1]
    assert [(m["role"], m["content"]) for m in request.input] == [
        ("developer", "Current local time: 2026-11-29 10:00 (Sunday)"),
        ("user", "first"),
        ("assistant", "Reply 1."),
        ("user", "second"),
    ]


@pytest.mark.parametrize(
    "failure, expected",
    [
        (Error(500, times=3), "HTTP 500"),
        (Disconnect(times=3), "cannot reach"),
        (Error(401, "Incorrect API key provided: sk-test-not-real"), "401"),
    ],
    ids=["5xx-after-retries", "connection-error", "401"],
)
def test_failed_call_rolls_the_turn_back(make_app, server, failure, expected):
    app = make_app(max_retries=2)
    chat(app, "first message")
    app.wait_for_extraction(10)
    conversation = lambda state: (state["messages"], state["summary"])  # noqa: E731
    before = conversation(app.memory.to_state())
    before_file = json.loads(app.paths.session.read_text())

    server.script("chat", failure)
    with pytest.raises(ModelCallError) as raised:
        chat(app, "this one fails")
    assert expected in str(raised.value)
    assert "sk-test-not-real" not in str(raised.value)  # the key never appears

    assert conversation(app.memory.to_state()) == before
    after_file = json.loads(app.paths.session.read_text())
    for key in ("messages", "summary", "pending_extractions"):
        assert after_file[key] == before_file[key]
    assert app.wait_for_extraction(5)
    extractions = server.of_kind("extraction")  # only the turn that was kept is read for memories
    assert len(extractions) == 1 and "first message" in json.dumps(extractions[0].body)
    assert "this one fails" not in json.dumps(extractions[0].body)

    chat(app, "next one works")
    users = [m["content"] for m in server.chats[-1].input if m["role"] == "user"]
    assert users == ["first message", "next one works"]


def test_5xx_is_retried_by_the_client(make_app, server):
    app = make_app(max_retries=2)
    server.script("chat", Error(503, times=2))
    assert chat(app, "hi").reply.text.startswith("Reply")
    assert len(server.chats) == 3


def test_chat_without_a_model_is_one_clear_error_and_changes_nothing(data_dir, clock):
    from memora.app.assistant import Memora
    from memora.core.config import Settings
    from memora.model.embeddings import HashEmbedder

    app = Memora.from_settings(
        Settings(data_dir=data_dir).validated(), clock=clock, embedder=HashEmbedder(), notify=lambda m: None
    )
    with pytest.raises(ModelNotConfigured) as raised:
        chat(app, "hello")
    assert "OPENAI_API_KEY" in str(raised.value) and "OPENAI_BASE_URL" in str(raised.value)
    assert app.memory.messages == []
    app.close()


def test_extraction_gets_only_the_learners_words(make_app, server):
    server.script("chat", "Nice to meet you, Ming! I am an AI tutor.")
    app = make_app()
    chat(app, "My name is Ming and I work as a nurse.")
    app.wait_for_extraction(10)
    extraction = server.of_kind("extraction")[-1]
    sent = json.dumps(extraction.body["input"], ensure_ascii=False)
    assert "My name is Ming and I work as a nurse." in sent
    assert "AI tutor" not in sent
    assert extraction.body["text"]["format"]["type"] == "json_schema"


def test_extracted_facts_are_stored_with_type_and_category(make_app, server):
    server.script(
        "extraction",
        {
            "facts": [
                {
                    "text": "The learner's name is Ming.",
                    "memory_type": "semantic",
                    "category": "name",
                    "event_phrase": None,
                    "event_date": None,
                },
                {
                    "text": "The learner works as a nurse.",
                    "memory_type": "semantic",
                    "category": "identity",
                    "event_phrase": None,
                    "event_date": None,
                },
            ],
            "profile_changes": [],
            "corrections": [],
        },
    )
    app = make_app()
    chat(app, "My name is Ming and I work as a nurse.")
    assert app.wait_for_extraction(10)
    stored = {(r.content, r.memory_type, r.category, r.source) for r in app.store.list()}
    assert stored == {
        ("The learner's name is Ming.", "semantic", "name", "extracted"),
        ("The learner works as a nurse.", "semantic", "identity", "extracted"),
    }


def test_the_same_fact_is_not_stored_twice(make_app, server):
    fact = {
        "text": "The learner loves jazz.",
        "memory_type": "semantic",
        "category": "preference",
        "event_phrase": None,
        "event_date": None,
    }
    server.script("extraction", {"facts": [fact], "profile_changes": [], "corrections": []})
    server.script("extraction", {"facts": [fact], "profile_changes": [], "corrections": []})
    app = make_app()
    chat(app, "I love jazz.")
    chat(app, "Did I tell you I love jazz?")
    app.wait_for_extraction(10)
    assert [r.content for r in app.store.list()] == ["The learner loves jazz."]


def test_extraction_failure_keeps_the_turn_and_shows_in_status(make_app, server):
    server.script("extraction", Error(500))
    app = make_app()
    chat(app, "I have a dog called Biscuit.")
    app.wait_for_extraction(10)
    assert [m["content"] for m in app.memory.messages] == ["I have a dog called Biscuit.", "Reply 1."]
    assert app.turn.extraction_failures == 1
    assert "HTTP 500" in app.turn.extraction_error
    from memora.cli.reports import status_rows

    extraction_table = dict((t[0], t[2]) for t in status_rows(app))["Memory extraction"]
    assert ["failures this session", "1"] in extraction_table
    # the job is still in the session file, to be retried at the next start
    assert "Biscuit" in app.paths.session.read_text()


def test_a_message_whose_extraction_keeps_failing_is_given_up_after_three_starts(make_app, server):
    server.script("extraction", Error(400, "structured outputs are not supported", times=10))
    app = make_app()
    chat(app, "I have a dog called Biscuit.")
    app.wait_for_extraction(10)
    app.close()
    for _ in range(2):
        again = make_app()
        again.wait_for_extraction(10)
        again.close()
    assert json.loads(again.paths.session.read_text())["pending_extractions"] == []
    assert any(
        "Gave up reading memories from \u201cI have a dog called Biscuit.\u201d after 3 failures" in n
        for n in again.turn.take_unsaved_notes()
    )
    assert len(server.of_kind("extraction")) == 3
    final = make_app()
    final.wait_for_extraction(5)
    assert len(server.of_kind("extraction")) == 3  # not retried forever
