"""Memora on the models and servers learners really run.

What a learner notices when the server is not OpenAI, or the model reasons before it
answers: the memory still reaches the model, the tutor still answers, structured
answers still land, and every failure is one line naming the setting to change.
Each test asserts on what was sent to the stand-in server and on what the learner saw.
"""

from __future__ import annotations

import re
from datetime import date
from pathlib import Path

import pytest
from helpers.fake_openai import Error, StreamThenFail
from helpers.scripts import extraction, fact, say

from memora.core.config import DEFAULT_MODEL, Settings
from memora.core.errors import ConfigError, EmbeddingError, ModelCallError
from memora.model.model_facts import shutdown_dates
from memora.model.prompts import SYSTEM_PROMPT


def sdk_deprecated_models() -> dict[str, str]:
    """The SDK's own "Deprecated values" note, read here independently of Memora's reader."""
    import openai.types.shared.chat_model as chat_model

    note = Path(chat_model.__file__).read_text(encoding="utf-8").split('"""Deprecated values:', 1)[1]
    text = re.sub(r"\n\s+", " ", note)
    found = {}
    for names, day in re.findall(r"^- (.*?): Announced shutdown date: (\d{4}-\d\d-\d\d)", text, re.M):
        for name in re.findall(r'"([^"]+)"', names):
            found[name] = day
    return found


# -- the model ---------------------------------------------------------------------------


def test_the_default_model_is_one_the_pinned_sdk_does_not_list_as_deprecated():
    deprecated = sdk_deprecated_models()
    assert "gpt-4.1-mini" in deprecated  # the note is read: the old default is in it
    assert DEFAULT_MODEL not in deprecated
    assert Settings().model == DEFAULT_MODEL
    from typing import get_args

    from openai.types.shared.chat_model import ChatModel

    assert DEFAULT_MODEL in get_args(ChatModel)  # a model the SDK knows
    # Memora's own reader agrees with this one, date for date
    assert {name: day.isoformat() for name, day in shutdown_dates().items()} == deprecated


def test_status_shows_the_model_and_its_announced_shutdown_date(make_app, run_repl):
    app = make_app(model="gpt-4.1-mini")
    t = run_repl(app, ["status"])
    assert "gpt-4.1-mini (OpenAI announced its shutdown for 2027-01-14)" in t.text
    current = run_repl(make_app(model=DEFAULT_MODEL), ["status"])
    assert "announced its shutdown" not in current.text


@pytest.mark.parametrize(
    "today, expected",
    [
        (date(2026, 12, 1), None),  # more than 30 days ahead: only 'status' says it
        (date(2026, 12, 20), "shuts down on 2027-01-14 (in 25 days)"),
        (date(2027, 1, 14), "was shut down on 2027-01-14"),
        (date(2027, 3, 1), "was shut down on 2027-01-14"),
    ],
)
def test_a_model_past_or_near_its_shutdown_gets_one_line_at_start_naming_memora_model(make_app, clock, today, expected):
    clock.now = clock.now.replace(year=today.year, month=today.month, day=today.day)
    notices: list[str] = []
    make_app(model="gpt-4.1-mini", notices=notices)
    said = [n for n in notices if "gpt-4.1-mini" in n]
    if expected is None:
        assert said == []
    else:
        [line] = said
        assert expected in line and "set MEMORA_MODEL" in line and DEFAULT_MODEL in line
        assert "\n" not in line


@pytest.mark.parametrize(
    "answer, says",
    [
        (
            Error(404, "The model `gpt-9-mini` does not exist or you do not have access to it."),
            "does not know the model 'gpt-9-mini' (404). Set MEMORA_MODEL (or --model) to a model it serves",
        ),
        (Error(404, "model 'gpt-9-mini' not found"), "does not know the model 'gpt-9-mini' (404)"),  # Ollama's words
        (Error(404, "The model `gpt-9-mini` does not exist."), "does not know the model 'gpt-9-mini' (404)"),  # vLLM
    ],
)
def test_a_model_the_server_does_not_know_gets_one_line_naming_memora_model(make_app, server, answer, says):
    server.script("chat", answer)
    app = make_app(model="gpt-9-mini")
    with pytest.raises(ModelCallError) as failure:
        app.chat("Hello", on_delta=lambda _: None)
    assert says in str(failure.value) and "\n" not in str(failure.value)
    assert app.memory.messages == []  # nothing was kept


def test_a_404_that_is_not_about_the_model_points_at_the_base_url(make_app, server):
    server.script("chat", Error(404, "Not Found"))
    with pytest.raises(ModelCallError) as failure:
        make_app().chat("Hello", on_delta=lambda _: None)
    assert "not found (404)" in str(failure.value) and "OPENAI_BASE_URL usually ends in /v1" in str(failure.value)


# -- reasoning -------------------------------------------------------------------------------


def test_on_openai_each_call_kind_gets_its_own_effort_and_room_for_it(make_app, server):
    server.script("extraction", extraction(fact("The learner keeps bees.")))
    app = make_app(as_openai=True, model="gpt-5.4-mini")
    say(app, "I keep bees on the roof of my building in Taichung.")
    [chat] = server.chats
    assert chat.body["reasoning"] == {"effort": "low"}  # the tutor: low, quick
    assert chat.body["max_output_tokens"] == 800 + 2048  # the visible cap plus room for low reasoning
    [read] = server.of_kind("extraction")
    assert read.body["reasoning"] == {"effort": "none"}  # structured: the lowest the model takes


@pytest.mark.parametrize(
    "model, chat_effort, structured_effort",
    [
        ("gpt-5-mini", "low", "minimal"),  # gpt-5 takes minimal, not none
        ("o4-mini", "low", "low"),  # the o-series starts at low
        ("gpt-5.2-pro", "medium", "medium"),  # a pro model starts at medium
        ("gpt-4.1-mini", None, None),  # not a reasoning model: the parameter is never sent
    ],
)
def test_the_effort_sent_is_one_the_model_takes(make_app, server, model, chat_effort, structured_effort):
    server.script("extraction", extraction())
    app = make_app(as_openai=True, model=model)
    say(app, "I practised my presentation for tomorrow's meeting twice today.")
    sent = server.chats[-1].body.get("reasoning")
    assert sent == ({"effort": chat_effort} if chat_effort else None)
    read = server.of_kind("extraction")[-1].body.get("reasoning")
    assert read == ({"effort": structured_effort} if structured_effort else None)


def test_a_400_naming_the_reasoning_parameter_is_retried_once_without_it_for_the_rest_of_the_session(
    make_app, server, run_repl
):
    server.script(
        "chat",
        Error(400, "Unsupported parameter: 'reasoning.effort' is not supported with this model."),
    )
    app = make_app(as_openai=True, model="gpt-5.4-mini")
    t = run_repl(app, ["Hello there, how are you?", "What should we practise?", "status"])
    assert "Memora: Reply 1." in t.text and "Memora: Reply 2." in t.text and "Error" not in t.text
    first, retried, second = server.chats
    assert first.body["reasoning"] == {"effort": "low"}
    assert "reasoning" not in retried.body and "reasoning" not in second.body  # remembered
    assert all("reasoning" not in r.body for r in server.of_kind("extraction"))
    assert "not sent: the server refused the parameter this session" in t.text


def test_on_another_server_the_reply_asks_low_thinking_and_the_rest_none(make_app, server):
    server.script("extraction", extraction(), extraction())
    app = make_app()  # a local server: its models are unknown, and may think
    say(app, "I walked to the station in the rain this morning.")
    assert server.chats[-1].body["reasoning"] == {"effort": "low"}
    assert server.of_kind("extraction")[-1].body["reasoning"] == {"effort": "none"}


@pytest.mark.parametrize(
    "setting, chat, structured",
    [
        ("medium", "medium", "none"),  # a bare effort is the reply's
        ("none", "none", "none"),  # the fix a thinking model's cut-off reply names
        ("structured:low", "low", "low"),
        ("chat:high,structured:minimal", "high", "minimal"),
        ("off", None, None),  # no call sends the parameter
    ],
)
def test_memora_reasoning_effort_overrides_per_kind(make_app, server, setting, chat, structured):
    server.script("extraction", extraction())
    app = make_app(reasoning_effort=setting)
    say(app, "I walked to the station in the rain again this evening.")
    assert server.chats[-1].body.get("reasoning") == ({"effort": chat} if chat else None)
    assert server.of_kind("extraction")[-1].body.get("reasoning") == ({"effort": structured} if structured else None)


def test_reasoning_off_sends_the_parameter_to_no_call(make_app, server):
    app = make_app(as_openai=True, model="gpt-5.4-mini", reasoning_effort="off")
    app.chat("Hello", on_delta=lambda _: None)
    assert "reasoning" not in server.chats[-1].body
    # the model still reasons at its own default, so the cap keeps room for a medium effort
    assert server.chats[-1].body["max_output_tokens"] == 800 + 6144


def test_a_reply_cut_by_the_cap_before_any_text_is_asked_again_with_more_room(make_app, server):
    server.script("chat", StreamThenFail("", end="incomplete"))  # the reasoning used the whole cap
    app = make_app(as_openai=True, model="gpt-5.4-mini")
    shown: list[str] = []
    result = app.chat("Explain the present perfect, please.", on_delta=shown.append)
    first, again = server.chats
    assert again.body["max_output_tokens"] == 4 * 800 + 2048  # four times the visible cap, with the room
    assert first.body["max_output_tokens"] == 800 + 2048
    assert result.reply.text == "Reply 2." and "".join(shown) == "Reply 2."
    assert app.memory.messages[-1] == {"role": "assistant", "content": "Reply 2."}


def test_a_reply_that_stays_empty_is_one_line_and_never_enters_the_conversation(make_app, server):
    server.script("chat", StreamThenFail("", end="incomplete"), StreamThenFail("", end="incomplete"))
    app = make_app(as_openai=True, model="gpt-5.4-mini")
    with pytest.raises(ModelCallError) as failure:
        app.chat("Explain the present perfect, please.", on_delta=lambda _: None)
    message = str(failure.value)
    assert "used its whole output allowance" in message and "Set MEMORA_REASONING_EFFORT=none" in message
    assert "\n" not in message
    assert app.memory.messages == []
    session = app.paths.session.read_text() if app.paths.session.exists() else ""
    assert "Explain the present perfect" not in session


def test_an_empty_reply_kept_by_an_older_version_is_dropped_when_the_session_loads(make_app, server):
    import json

    app = make_app()
    app.chat("Hello", on_delta=lambda _: None)
    app.close()
    data = json.loads(app.paths.session.read_text())
    data["messages"][-1]["content"] = ""  # what a reply cut off before any text used to leave
    app.paths.session.write_text(json.dumps(data))
    again = make_app()
    assert [m["role"] for m in again.memory.messages] == ["user"]
    again.chat("Are you there?", on_delta=lambda _: None)
    assert all(m.get("content") for m in server.chats[-1].input)


# -- settings ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "env, says",
    [
        ({"MEMORA_MAX_OUTPUT_TOKENS": "15"}, "MEMORA_MAX_OUTPUT_TOKENS) must be at least 16, got 15"),
        ({"MEMORA_MAX_OUTPUT_TOKENS": "1"}, "must be at least 16"),
        ({"MEMORA_SUMMARY_TOKENS": "8"}, "MEMORA_SUMMARY_TOKENS) must be at least 16, got 8"),
        ({"MEMORA_REASONING_EFFORT": "turbo"}, "MEMORA_REASONING_EFFORT must be one of none, minimal, low"),
        ({"MEMORA_BACKGROUND_ROLE": "assistant"}, "MEMORA_BACKGROUND_ROLE must be developer or system"),
    ],
)
def test_settings_the_api_would_refuse_are_refused_up_front_in_one_line(tmp_path, env, says):
    with pytest.raises(ConfigError) as failure:
        Settings.from_env({"MEMORA_HOME": str(tmp_path), **env})
    assert says in str(failure.value) and "\n" not in str(failure.value)


def test_sixteen_output_tokens_is_accepted():
    settings = Settings.from_env({"MEMORA_MAX_OUTPUT_TOKENS": "16", "MEMORA_SUMMARY_TOKENS": "16"})
    assert settings.max_output_tokens == 16 and settings.summary_tokens == 16


# -- the background's role ----------------------------------------------------------------------


def test_memora_background_role_overrides_the_servers_role(make_app, server, run_repl):
    app = make_app(background_role="developer")
    app.profiles.set_english_level("b2")
    t = run_repl(app, ["Hello there", "why"])
    request = server.chats[-1]
    assert request.roles == ["developer", "user"] and request.body["instructions"] == SYSTEM_PROMPT
    assert "English level: B2" in request.section("user_profile")
    assert re.search(r"developer\s+set by MEMORA_BACKGROUND_ROLE", t.text)


def test_why_and_status_say_which_role_was_used_and_why(make_app, server, run_repl):
    local = run_repl(make_app(), ["Hello there", "why", "status"])
    assert "an OpenAI-compatible server" in local.text
    assert "every chat template reads the system role" in local.text
    openai = run_repl(make_app(as_openai=True), ["Hello there", "why", "status"])
    assert "OpenAI reads the developer role" in openai.text


# -- structured answers ---------------------------------------------------------------------

FENCED = '```json\n{"facts": [{"text": "The learner keeps bees.", "memory_type": "semantic", "category": "hobby", \
"event_phrase": null, "event_date": null}], "profile_changes": [], "corrections": []}\n```'


@pytest.mark.parametrize(
    "answer",
    [
        FENCED,
        "Here is the JSON you asked for:\n" + FENCED,
        "Sure! " + FENCED.removeprefix("```json\n").removesuffix("\n```") + " Let me know if you need more.",
    ],
    ids=["fenced", "after-a-line", "inside-prose"],
)
def test_a_json_answer_inside_fences_or_text_is_accepted_and_validated(make_app, server, answer):
    server.script("extraction", answer)
    app = make_app()
    say(app, "I keep bees on the roof of my building in Taichung.")
    assert [r.content for r in app.store.list()] == ["The learner keeps bees."]
    assert len(server.of_kind("extraction")) == 1  # no repair was needed
    assert app.model.structured.repaired == 0


def test_an_invalid_answer_gets_one_repair_request_quoting_the_error(make_app, server, run_repl):
    server.script("extraction", '{"facts": "bees"}', extraction(fact("The learner keeps bees.", "hobby")))
    app = make_app()
    t = run_repl(app, ["I keep bees on the roof of my building in Taichung.", "status"])
    first, repair = server.of_kind("extraction")
    asked = repair.input
    assert [m["role"] for m in asked] == ["user", "assistant", "user"]
    assert asked[1]["content"] == '{"facts": "bees"}'  # the model sees what it answered
    assert "facts: Input should be a valid list" in asked[2]["content"]  # and what was wrong with it
    assert "bees" not in asked[2]["content"].split("valid list")[0]  # the error does not echo the input
    assert [r.content for r in app.store.list()] == ["The learner keeps bees."]
    assert "1 needed a repair request" in t.text
    # from now on this server gets the schema spelled out in the instructions too
    assert '"facts"' not in first.body["instructions"]
    say(app, "I also grow tomatoes on that roof every summer.")
    assert "matching this JSON schema" in server.of_kind("extraction")[-1].body["instructions"]


def test_an_answer_still_invalid_after_the_repair_keeps_the_job_and_loses_nothing(make_app, server):
    server.script("extraction", "no json here", "still no json")
    app = make_app()
    app.chat("I keep bees on the roof of my building in Taichung.", on_delta=lambda _: None)
    app.wait_for_extraction(10)
    assert app.store.list() == []
    [kept] = list(app.queue.pending)  # kept to read again at the next start, as any failed call
    assert kept.text == "I keep bees on the roof of my building in Taichung." and kept.attempts == 1
    assert app.model.structured.failed == 1
    [note] = app.turn.take_unsaved_notes()
    assert "even after a repair request" in note


# -- embeddings ---------------------------------------------------------------------------------


def test_a_key_for_a_local_server_never_switches_embeddings_to_openais_model(make_settings, clock):
    from memora.app.assistant import Memora
    from memora.model.embeddings import LocalEmbedder

    settings = make_settings()  # OPENAI_BASE_URL and OPENAI_API_KEY: a keyed gateway (LiteLLM, vLLM --api-key)
    assert settings.api_key and settings.base_url
    assert settings.effective_embedding_model == "all-MiniLM-L6-v2"
    app = Memora.from_settings(settings, clock=clock, notify=lambda m: None)
    assert isinstance(app.embedder, LocalEmbedder)
    app.close()
    assert make_settings(embedding_model="nomic-embed-text").effective_embedding_model == "nomic-embed-text"
    assert make_settings(base_url=None).effective_embedding_model == "text-embedding-3-small"  # OpenAI itself


def test_a_store_of_openais_model_without_a_key_says_what_it_needs_and_reindex_recovers(make_app, run_repl):
    from memora.model.embeddings import HashEmbedder

    openai_built = HashEmbedder()
    openai_built.name = "openai:text-embedding-3-small"
    old = make_app(embedder=openai_built)
    old.store.add("The learner sings in a choir")
    old.close()
    notices: list[str] = []
    app = make_app(notices=notices, base_url=None, api_key=None)  # no key any more: the local default
    [told] = [n for n in notices if "text-embedding-3-small" in n]
    assert "needs OPENAI_API_KEY" in told and "memory search is off" in told and "'reindex'" in told
    assert "MEMORA_EMBEDDING_MODEL back" not in told  # a variable the learner never set
    t = run_repl(app, ["status", "reindex", "search choir"])
    assert "store built with openai:text-embedding-3-small: type 'reindex'" in t.text
    assert "Re-embedded 1 memory with hash:v1-384." in t.text
    assert "The learner sings in a choir" in t.text.rsplit("You: search choir", 1)[1]


# -- replayed real-format sequences (built from the SDK's types) ---------------------------------

from helpers import fake_openai as wire  # noqa: E402


def turn(app, text="Can you explain the present perfect?"):
    shown: list[str] = []
    result = app.chat(text, on_delta=shown.append)
    return result, "".join(shown)


def test_reasoning_items_before_the_message_are_not_shown(make_app, server):
    server.script("chat", wire.Events(wire.reasoning_events("We use it for life experience.", "Plan the answer.")))
    result, shown = turn(make_app(as_openai=True))
    assert shown == result.reply.text == "We use it for life experience."
    assert "Plan the answer" not in shown


def test_annotations_and_the_done_events_leave_the_text_as_streamed(make_app, server):
    server.script("chat", wire.Events(wire.annotated_events("See the note on irregular verbs.")))
    result, shown = turn(make_app(as_openai=True))
    assert shown == result.reply.text == "See the note on irregular verbs."


def test_a_refusal_is_reported_as_a_refusal_and_nothing_is_kept(make_app, server):
    server.script("chat", wire.Events(wire.refusal_events("I can't help with that request.")))
    app = make_app(as_openai=True)
    with pytest.raises(ModelCallError) as failure:
        turn(app)
    assert "declined to answer: I can't help with that request." in str(failure.value)
    assert "empty reply" not in str(failure.value)
    assert app.memory.messages == []


def test_a_structured_refusal_keeps_the_job_and_says_the_model_declined(make_app, server):
    server.script("extraction", wire.Body(wire.refusal_body("I can't do that.")))
    app = make_app()
    app.chat("I keep bees on the roof of my building in Taichung.", on_delta=lambda _: None)
    app.wait_for_extraction(10)
    [note] = app.turn.take_unsaved_notes()
    assert "the model declined (I can't do that.)" in note
    assert len(list(app.queue.pending)) == 1  # kept to read again


def test_incomplete_with_text_is_kept_with_the_cut_off_note(make_app, server):
    server.script("chat", wire.Events(wire.incomplete_events("The present perfect joins the past and", 800)))
    result, shown = turn(make_app(as_openai=True))
    assert result.reply.text == "The present perfect joins the past and" == shown
    assert any(n.startswith("(reply cut off: max_output_tokens)") for n in result.notes)


def test_incomplete_with_only_reasoning_is_asked_again_with_more_room(make_app, server):
    server.script("chat", wire.Events(wire.incomplete_events("", 2848)))
    app = make_app(as_openai=True)
    result, shown = turn(app)
    first, again = server.chats
    assert again.body["max_output_tokens"] > first.body["max_output_tokens"]
    assert shown == result.reply.text == "Reply 2."
    assert not any("cut off" in n for n in result.notes)


def test_an_error_event_mid_stream_rolls_the_turn_back_in_one_line(make_app, server):
    server.script("chat", wire.Events(wire.error_midstream_events("Here is the first part of")))
    app = make_app(as_openai=True)
    with pytest.raises(ModelCallError) as failure:
        turn(app)
    assert "the model reported an error: The server had an error" in str(failure.value)
    assert app.memory.messages == [] and "\n" not in str(failure.value)


@pytest.mark.parametrize(
    "should_retry, requests, says",
    [
        (False, 1, "rate limited (429); the server asks to wait 30 s"),  # the SDK did not retry
        (True, 3, "rate limited (429) after 2 retries; the server asks to wait 30 s"),
    ],
)
def test_a_429_says_how_many_retries_were_really_made(make_app, server, should_retry, requests, says):
    server.script("chat", *[wire.rate_limited(30, should_retry=should_retry) for _ in range(3)])
    app = make_app(as_openai=True, max_retries=2)
    with pytest.raises(ModelCallError) as failure:
        turn(app)
    assert len(server.chats) == requests
    assert says in str(failure.value)
    assert "after 2 retries" not in str(failure.value) or requests == 3


@pytest.mark.parametrize("status", ["completed", "incomplete"])
def test_truncation_reported_inside_completed_shows_the_cut_off_note(make_app, server, status):
    """vLLM (and LiteLLM's bridge) say it inside ``response.completed``, never with ``response.incomplete``."""
    text = "one two three four five six seven eight nine ten"
    server.script("chat", wire.Events(wire.truncated_completed_events(text, 5, status=status)))
    result, shown = turn(make_app())
    assert result.reply.text == shown == "one two three four five"
    assert any(n.startswith("(reply cut off: max_output_tokens)") for n in result.notes)


def test_on_ollama_a_response_whose_usage_is_at_the_cap_counts_as_cut_off(make_app, server):
    """Ollama says nothing of a cut (status completed, no details): only the usage shows it."""
    server.persona = "ollama"
    server.script("chat", wire.Truncated(" ".join(["word"] * 40)))
    app = make_app(max_output_tokens=16, reasoning_effort="none")
    result, _ = turn(app)
    assert server.chats[-1].body["max_output_tokens"] == 16
    assert len(result.reply.text.split()) == 16
    assert any(n.startswith("(reply cut off: max_output_tokens)") for n in result.notes)


def test_two_output_messages_are_two_paragraphs(make_app, server):
    server.script("chat", wire.Events(wire.two_messages_events("First part.", "Second part.")))
    result, shown = turn(make_app(as_openai=True))
    assert shown == result.reply.text == "First part.\n\nSecond part."


def test_two_message_items_of_a_structured_answer_are_read_apart(make_app, server):
    from openai.types.responses import Response

    from memora.model.llm import response_text

    body = wire.two_messages_body("First part.", "Second part.")
    assert response_text(Response.model_validate(body)) == ("First part.\n\nSecond part.", "")


def test_a_summary_whose_body_is_null_keeps_the_turns_in_full(make_app, server):
    server.script("summary", *[wire.null_body() for _ in range(20)])
    app = make_app(token_budget=3000, recent_tokens=200, summary_tokens=100, background_tokens=200)
    for i in range(6):
        result, _ = turn(app, f"message {i} " + "long words here " * 10)
    assert len(server.chats) == 6 and server.of_kind("summary")
    assert any("Could not summarise older turns (the summary came back empty)" in n for n in result.notes)
    assert app.memory.summary == ""


def test_openais_model_not_found_names_memora_model_and_a_current_model(make_app, server):
    server.script("chat", wire.model_not_found("gpt-4o-old"))
    with pytest.raises(ModelCallError) as failure:
        turn(make_app(as_openai=True, model="gpt-4o-old"))
    said = str(failure.value)
    assert "OpenAI at api.openai.com does not know the model 'gpt-4o-old'" in said
    assert f"Set MEMORA_MODEL (or --model) to a model it serves: for example {DEFAULT_MODEL}." in said


def test_a_model_past_its_shutdown_says_so_when_the_server_no_longer_knows_it(make_app, server, clock):
    clock.now = clock.now.replace(year=2027, month=2, day=1)
    server.script("chat", wire.model_not_found("gpt-4.1-mini"))
    with pytest.raises(ModelCallError) as failure:
        turn(make_app(as_openai=True, model="gpt-4.1-mini"))
    assert "OpenAI shut it down on 2027-01-14" in str(failure.value) and "MEMORA_MODEL" in str(failure.value)


def test_the_sdks_unsupported_parameter_answer_is_retried_without_reasoning(make_app, server):
    server.script("chat", wire.unsupported_parameter())
    result, _ = turn(make_app(as_openai=True, model="gpt-5.4-mini"))
    assert result.reply.text.startswith("Reply ")
    assert [("reasoning" in r.body) for r in server.chats] == [True, False]


# -- the servers learners run --------------------------------------------------------------------


def test_on_ollama_the_background_reaches_the_model(make_app, server, run_repl):
    server.persona = "ollama"
    app = make_app()
    app.profiles.set_english_level("b1")
    app.store.add("The learner works as a nurse in Taichung.", memory_type="semantic", category="identity")
    t = run_repl(app, ["Hi, what do you know about my job?", "why", "status"])
    request = server.chats[-1]
    reached = request.body["instructions"] + "".join(m["content"] for m in request.model_input)
    assert "- English level: B1" in reached and "nurse in Taichung" in reached  # nothing was dropped
    assert "developer" not in request.roles
    assert "/api/show" in [p.path for p in server.probes]  # the probe that told the kind
    assert "Ollama at 127.0.0.1" in t.text and "answered POST /api/show" in t.text
    assert "drops developer messages" in t.text


def test_on_ollama_a_forced_developer_role_is_what_ollama_drops(make_app, server):
    server.persona = "ollama"
    app = make_app(background_role="developer")
    app.profiles.set_english_level("b1")
    turn(app)
    request = server.chats[-1]
    assert request.roles == ["developer", "user"] and request.model_roles == ["user"]  # the override is honoured


def test_on_vllm_the_background_is_never_a_developer_message(make_app, server, run_repl):
    server.persona = "vllm"
    app = make_app()
    app.profiles.set_english_level("c1")
    t = run_repl(app, ["Hello there, teacher", "status"])
    assert "Memora: Reply 1." in t.text and "Unexpected message role" not in t.text
    [request] = server.chats
    assert request.status == 200 and "- English level: C1" in request.body["instructions"]
    assert "vLLM at 127.0.0.1" in t.text and "answered GET /v1/models" in t.text


@pytest.mark.parametrize("wrapping", ["fenced", "prose"])
def test_on_lm_studio_structured_answers_land_and_the_schema_goes_in_the_instructions(make_app, server, wrapping):
    server.persona = "lmstudio"
    server.json_wrapping = wrapping
    server.script("extraction", extraction(fact("The learner keeps bees.", "hobby")))
    app = make_app()
    say(app, "I keep bees on the roof of my building in Taichung.")
    assert [r.content for r in app.store.list()] == ["The learner keeps bees."]
    [read] = server.of_kind("extraction")
    assert "matching this JSON schema" in read.body["instructions"]  # LM Studio ignores text.format
    assert app.model.server.kind.key == "lmstudio" and app.model.structured.repaired == 0


def test_the_server_is_probed_once_per_session(make_app, server):
    server.persona = "ollama"
    app = make_app()
    server.script("extraction", extraction(), extraction())
    say(app, "I walked to the station in the rain this morning.")
    say(app, "I walked back home in the evening sunshine.")
    from memora.model.servers import PROBES

    assert PROBES[0][2] == "/api/show" and [p.path for p in server.probes] == ["/api/show"]  # once: Ollama is first


@pytest.mark.parametrize(
    "url, kind",
    [
        ("http://localhost:11434/v1", "ollama"),
        ("http://127.0.0.1:1234/v1", "lmstudio"),
        ("http://localhost:4000", "litellm"),
        ("http://gpu-box:8000/v1", "compatible"),
        ("https://api.openai.com/v1", "openai"),
        ("https://my-resource.openai.azure.com/openai/v1", "openai"),
        (None, "openai"),
    ],
)
def test_with_no_probe_answering_the_base_url_decides(url, kind):
    from memora.model.servers import detect_server

    def unreachable(_url):
        raise ConnectionError("nothing listens")

    found = detect_server(url, unreachable)
    assert found.kind.key == kind
    assert found.kind.background_role == ("developer" if kind == "openai" else "system")


@pytest.mark.parametrize(
    "answer",
    [
        Error(400, "/embeddings: Invalid model name passed in model=text-embedding-3-small. Call `/v1/models`"),
        Error(404, 'model "text-embedding-3-small" not found, try pulling it first'),  # Ollama's words
    ],
    ids=["litellm-400", "ollama-404"],
)
def test_an_embedding_model_the_server_does_not_serve_gets_one_line_naming_the_setting(
    make_settings, server, clock, run_repl, answer
):
    from memora.app.assistant import Memora

    server.script("embeddings", answer, answer)
    settings = make_settings(embedding_model="text-embedding-3-small")  # set by hand, for a gateway
    app = Memora.from_settings(settings, clock=clock, notify=lambda m: None)
    t = run_repl(app, ["remember I keep bees on the roof", "Hello there"])
    lines = [line for line in t.text.splitlines() if "MEMORA_EMBEDDING_MODEL" in line]
    assert lines and all("does not serve the embedding model 'text-embedding-3-small'" in line for line in lines)
    assert any("to 'local' for the built-in all-MiniLM-L6-v2" in line for line in lines)
    assert "Memora: Reply 1." in t.text  # the tutor still answers, without memories this time


def test_with_the_background_in_the_instructions_the_request_is_never_above_its_budget(make_app, server):
    from memora.model.tokens import TokenCounter

    app = make_app(token_budget=900, recent_tokens=300, summary_tokens=100, background_tokens=300)
    app.profiles.set_english_level("b1")
    counter = TokenCounter(app.settings.model)
    for i in range(8):
        turn(app, f"Turn {i}: " + "practise the airport vocabulary again " * 4)
        request = server.chats[-1]
        assert request.background_role == "instructions"
        sent = counter.count_request(request.body["instructions"], request.input)
        assert sent <= app.turn.last_prepared.total_tokens <= 900  # one message's framing fewer, never more


# -- what the review of the above found ----------------------------------------------------------


def test_a_gateway_store_built_before_the_local_default_keeps_its_model_and_search_works(
    make_settings, server, clock, run_repl
):
    """Before, a key with a base URL meant text-embedding-3-small on that server; those
    stores keep their model through the same server, and say how to keep it for good."""
    from memora.app.assistant import Memora

    old = Memora.from_settings(make_settings(embedding_model="text-embedding-3-small"), clock=clock, notify=print)
    old.store.add("The learner sings in a choir on Sundays")
    old.close()
    notices: list[str] = []
    app = Memora.from_settings(make_settings(), clock=clock, notify=notices.append)  # the new default: local
    [told] = [n for n in notices if "text-embedding-3-small" in n]
    assert "keeps using openai:text-embedding-3-small so memory search works" in told
    assert "MEMORA_EMBEDDING_MODEL=text-embedding-3-small to keep it for good" in told
    t = run_repl(app, ["search choir"])
    assert "The learner sings in a choir on Sundays" in t.text
    assert server.of_kind("embeddings")[-1].body["model"] == "text-embedding-3-small"


def test_a_reindex_that_fails_keeps_the_store_model_in_use(
    make_settings, server, clock, run_repl, local_embedder, monkeypatch
):
    from memora.app.assistant import Memora

    built = Memora.from_settings(make_settings(embedding_model="text-embedding-3-small"), clock=clock, notify=print)
    built.store.add("The learner sings in a choir on Sundays")
    built.close()
    app = Memora.from_settings(make_settings(), clock=clock, embedder=local_embedder, notify=lambda m: None)
    assert app.switch_to is not None

    def gone(texts):
        raise EmbeddingError("the local model is gone")

    monkeypatch.setattr(app.switch_to, "embed", gone)
    t = run_repl(app, ["reindex", "search choir"])
    assert "Error: the local model is gone" in t.text
    assert "The learner sings in a choir on Sundays" in t.text.split("You: search choir", 1)[1]
    assert app.embedder.name == "openai:text-embedding-3-small" and app.store.mismatch is None


def test_another_terminals_reindex_turns_search_off_here_in_one_line_never_a_crash(make_app, server, run_repl):
    from memora.model.embeddings import HashEmbedder

    here = make_app()
    here.store.add("The learner sings in a choir on Sundays")
    there = make_app(embedder=HashEmbedder(256))  # another model, another size of vector
    there.reindex()
    t = run_repl(here, ["Do you remember my choir?", "remember I also play the cello"])
    assert "Memora: Reply 1." in t.text  # the tutor answers, without memories this time
    assert "Unexpected" not in t.text and "Traceback" not in t.text
    assert "store was built with hash:v1-256" in t.text  # the remember says why it cannot be saved


@pytest.mark.parametrize(
    "answer, expected",
    [
        ('A note first {"note": 1}. The answer: {"memories": [2]}', [2]),  # a stray object is not the answer
        ('<think>Maybe {"memories": [1]}?</think>{"memories": [3]}', [3]),  # a draft is not the answer
        ('{"memories": [1]} No wait, I meant {"memories": [2]}', [2]),  # the last word is the answer
        ('```json\n{"memories": [4]}\n```\nor maybe {"memories": [5]}', [4]),  # a fenced block beats prose
    ],
)
def test_the_object_taken_from_a_lenient_answer_is_the_answer(answer, expected):
    from memora.model.structured import parse_answer
    from memora.reading.writes import CorrectionDecision

    assert parse_answer(answer, CorrectionDecision).memories == expected


def test_a_raw_newline_inside_a_string_is_accepted_without_a_repair_request(make_app, server):
    server.script("grading", '{"verdict": "correct", "feedback": "Well done:\nthe past of go is went."}')
    app = make_app()
    grade, _ = app.model.parse(
        instructions="grade",
        input_text="{}",
        text_format=__import__("memora.teaching.drill").teaching.drill.ReviewGrade,
        what="Grading",
    )
    assert grade.verdict == "correct" and app.model.structured.repaired == 0


@pytest.mark.parametrize(
    "model, structured",
    [
        ("gpt-5.2-pro-2025-12-11", "medium"),
        ("gpt-5-pro-2025-10-06", "high"),
        ("o3-pro", "low"),
        ("ft:gpt-5-mini-2025-08-07:acme::abc123", "minimal"),
        ("gpt-5-chat-latest", None),
    ],
)
def test_dated_pro_and_fine_tuned_names_get_the_effort_their_family_takes(make_app, server, model, structured):
    server.script("extraction", extraction())
    app = make_app(as_openai=True, model=model)
    say(app, "I practised my presentation for tomorrow's meeting twice today.")
    sent = server.of_kind("extraction")[-1].body.get("reasoning")
    assert sent == ({"effort": structured} if structured else None)


def test_an_unknown_model_on_openai_gets_room_to_reason(make_app, server):
    app = make_app(as_openai=True, model="my-azure-deployment")
    turn(app)
    assert "reasoning" not in server.chats[-1].body
    assert server.chats[-1].body["max_output_tokens"] == 800 + 6144


def test_a_retried_empty_reply_counts_both_attempts_tokens(make_app, server):
    server.script("chat", wire.Events(wire.incomplete_events("", 2848)))
    app = make_app(as_openai=True)
    result, _ = turn(app)
    first = 10 + 2848  # the incomplete attempt's usage
    assert result.reply.total_tokens == first + 15  # and the answer's (the stand-in's default 10 + 5)
    assert app.memory.usage.chat == first + 15


def test_a_reply_stopped_by_a_content_filter_before_any_text_says_so(make_app, server):
    events = wire.stream_events([], end="incomplete", incomplete_reason="content_filter")
    server.script("chat", wire.Events(events))
    with pytest.raises(ModelCallError) as failure:
        turn(make_app(as_openai=True))
    assert "stopped the reply before any text (content_filter)" in str(failure.value)
    assert "MEMORA_MAX_OUTPUT_TOKENS" not in str(failure.value)


def test_litellms_invalid_model_name_names_memora_model(make_app, server):
    server.script("chat", Error(400, "Invalid model name passed in model=llama9. Call `/v1/models` to view models"))
    with pytest.raises(ModelCallError) as failure:
        turn(make_app(model="llama9"))
    assert "does not know the model 'llama9' (400). Set MEMORA_MODEL" in str(failure.value)


# -- thinking models on the servers learners run (their sources: docs/servers.md) -----------------


def chat_usage(text: str) -> int:
    """The chat tokens 'status' shows."""
    return int(re.search(r"^chat\s+(\d+)$", text, re.M).group(1))


def test_on_ollama_a_thinking_reply_gets_the_room_its_thinking_took(make_app, server):
    """Ollama thinks by default and counts the thinking inside max_output_tokens: the first
    reply is cut while thinking and asked again; from then on the cap leaves room for
    what the model was seen to think."""
    server.persona, server.context, server.thinks = "ollama", 32768, {"chat": 4000}
    app = make_app()
    first, shown_first = turn(app)
    second, shown_second = turn(app, "And how is it different from the past simple?")
    assert (shown_first, shown_second) == (first.reply.text, second.reply.text) == ("Reply 2.", "Reply 3.")
    cut, retried, next_turn = server.chats  # the second turn needed one request
    assert cut.body["max_output_tokens"] == 800 + 2048  # before any report: a low effort's room
    assert retried.body["max_output_tokens"] == 4 * 800 + 2 * 2848  # the cut attempt thought 2,848 tokens
    assert next_turn.body["max_output_tokens"] >= 800 + 2 * (4000 - 5)  # twice what it was seen to think
    assert all(c.body["reasoning"] == {"effort": "low"} for c in server.chats)
    assert [m["content"] for m in app.memory.messages][1::2] == ["Reply 2.", "Reply 3."]  # no thinking kept
    assert app.memory.usage.chat == (10 + 2848) + 2 * (10 + 4000 + 2)  # the cut attempt's tokens too


def test_on_ollama_structured_calls_and_summaries_ask_for_no_thinking(make_app, server, run_repl):
    server.persona, server.context = "ollama", 32768
    server.thinks = {"summary": 3000, "structured": 3000}  # what it would think if asked nothing
    app = make_app(recent_tokens=150, summary_tokens=100)
    lines = [f"Turn {i}: yesterday I practised the airport vocabulary with my sister again. " * 3 for i in range(6)]
    t = run_repl(app, [*lines, "status"])
    calls = server.of_kind("summary") + server.of_kind("extraction")
    assert server.of_kind("summary") and server.of_kind("extraction")
    assert all(c.body["reasoning"] == {"effort": "none"} and c.body["temperature"] == 0.2 for c in calls)
    assert "Could not summarise" not in t.text and app.memory.summary.startswith("Summary so far")
    assert "chat low, extraction and summaries none" in t.text


def test_a_reply_still_cut_off_names_the_setting_that_fixes_it_and_its_tokens_are_counted(make_app, server, run_repl):
    server.persona, server.context, server.thinks = "ollama", 32768, {"chat": 100_000}
    app = make_app()
    t = run_repl(app, ["Can you explain the present perfect?", "status"])
    [error] = [line for line in t.text.splitlines() if line.startswith("Error:")]
    assert "used its whole output allowance" in error and "Set MEMORA_REASONING_EFFORT=none" in error
    assert app.memory.messages == []
    caps = [c.body["max_output_tokens"] for c in server.chats]
    assert len(caps) == 2 and chat_usage(t.text) == sum(10 + cap for cap in caps)  # a failed turn's tokens
    fixed = make_app(reasoning_effort="none")  # the setting the line names
    result, shown = turn(fixed)
    assert shown == result.reply.text == "Reply 3." and server.chats[-1].body["reasoning"] == {"effort": "none"}


@pytest.mark.parametrize(
    "kind, answer, dropped",
    [
        ("chat", Error(400, '"llama3.2" does not support thinking'), "reasoning"),  # Ollama, a model that cannot
        ("extraction", Error(400, "1 validation error: reasoning.effort: Input should be 'low'"), "reasoning"),  # vLLM
        (
            "extraction",
            Error(400, "litellm.UnsupportedParamsError: openai does not support parameters: ['temperature']"),
            "temperature",  # LiteLLM in front of a model that takes none
        ),
        ("chat", Error(400, "Unsupported value: 'reasoning_effort' does not support 'low'"), "reasoning"),
    ],
)
def test_a_parameter_a_server_refuses_is_dropped_once_for_the_session(make_app, server, kind, answer, dropped):
    server.script(kind, answer)
    server.script("extraction", extraction(), extraction())
    app = make_app()
    say(app, "I walked to the station in the rain this morning.")
    say(app, "I walked back home in the evening sunshine.")
    refused, retried, *later = server.of_kind(kind)
    assert dropped in refused.body and dropped not in retried.body
    assert all(dropped not in r.body for r in later + server.chats[1:] + server.of_kind("extraction")[1:])
    assert "Error" not in "".join(app.turn.take_unsaved_notes())


THINKING_IN_TEXT = [
    "<think>I should plan the answer first.</think>\n\nThe present perfect links the past to now.",
    "I should plan the answer first.\n</think>\n\nThe present perfect links the past to now.",  # vllm#31045
    "[THINK]I should plan the answer first.[/THINK]The present perfect links the past to now.",  # Magistral
    "<thinking>I should plan the answer first.</thinking>\nThe present perfect links the past to now.",
    "The present perfect links the past to now.<think>I should plan the answer first, but",  # never closed
]


@pytest.mark.parametrize("raw", THINKING_IN_TEXT)
def test_thinking_passed_on_in_the_text_is_never_shown_nor_kept(make_app, server, raw):
    server.persona = "vllm"  # served without --reasoning-parser, vLLM's default
    server.script("chat", raw, raw)
    app = make_app()
    for _ in range(2):  # the first reply, and one after the server was seen to think in its text
        deltas: list[str] = []
        result = app.chat("Can you explain the present perfect?", on_delta=deltas.append)
        assert "".join(deltas) == result.reply.text == "The present perfect links the past to now."
        assert not any("plan" in d or "<" in d or "[" in d for d in deltas)
    assert all("plan" not in m["content"] for m in app.memory.messages)
    assert "plan the answer" not in app.paths.session.read_text()


@pytest.mark.parametrize("opening_tag", [True, False])
def test_on_vllm_without_a_reasoning_parser_a_thinking_model_is_shown_only_its_answer(make_app, server, opening_tag):
    server.persona, server.opening_tag, server.thinks = "vllm", opening_tag, {"chat": 5000}
    app = make_app()
    shown = []
    for line in ("Can you explain the present perfect?", "And the past simple?"):
        deltas: list[str] = []
        result = app.chat(line, on_delta=deltas.append)
        shown.append("".join(deltas))
        assert "hmm" not in "".join(deltas) and "hmm" not in result.reply.text
    cut = server.chats[0]  # cut inside its thinking at 2,848 tokens: no answer yet, asked again
    assert cut.body["max_output_tokens"] == 2848 and len(server.chats) == 3
    assert shown == ["Reply 2.", "Reply 3."] and app.model.reasoned >= 4990


@pytest.mark.parametrize(
    "answer, asked, expected",
    [
        ('<think>Maybe {"memories": [1]}', "", None),  # a draft cut short is no answer
        ('maybe {"memories": [1]}</think>{"memories": [3]}', "", [3]),  # its opening tag was the template's
        ('[THINK]{"memories": [1]}[/THINK]{"memories": [2]}', "", [2]),
        ('You wrote {"memories": [7]}; the answer is {"memories": [2]}', 'I said {"memories": [7]}', [2]),
        ('The message quotes {"memories": [7]}.', 'Wrong fact: {"memories": [7]}', None),  # only a quote
        ('The learner wrote { "memories" : [7] } here.', 'Wrong fact: {"memories": [7]}', None),  # spaced apart
    ],
)
def test_a_structured_answer_is_never_taken_from_the_thinking_or_from_a_quote(answer, asked, expected):
    from memora.model.structured import MalformedAnswer, parse_answer
    from memora.reading.writes import CorrectionDecision

    if expected is None:
        with pytest.raises(MalformedAnswer):
            parse_answer(answer, CorrectionDecision, asked)
    else:
        assert parse_answer(answer, CorrectionDecision, asked).memories == expected


def test_an_object_the_model_quotes_from_the_learners_message_is_not_stored(make_app, server):
    import json

    pasted = json.dumps(extraction(fact("The learner is a pilot.", "identity")))
    server.script("extraction", f"The message quotes {pasted}, nothing to extract.", extraction())
    app = make_app()
    say(app, f"My friend sent me this and I do not understand it: {pasted}")
    assert app.store.list() == []
    assert len(server.of_kind("extraction")) == 2  # the quote was no answer: a repair request followed
    draft = '<think>The learner keeps bees? {"facts": [{"text": "The learner keeps bees."'
    server.script("extraction", draft, extraction())
    say(app, "I keep bees on the roof of my building in Taichung.")
    assert app.store.list() == []


def test_on_ollama_a_4096_token_context_is_asked_for_and_kept(make_app, server, run_repl):
    import threading

    from helpers.fake_openai import _prompt_words

    import chatbot

    server.persona = "ollama"  # no num_ctx in the Modelfile: 4,096 tokens below 23 GiB of VRAM
    notices: list[str] = []
    app = make_app(notices=notices)
    chatbot.preload(app, threading.Event())  # the start, while the learner types
    [said] = [n for n in notices if "context window" in n]
    assert said.startswith("The model's context window is 4096 tokens") and "\n" not in said
    app.profiles.set_english_level("b1")
    long = "I practised the airport vocabulary and the check-in dialogue with my sister again today. " * 6
    t = run_repl(app, [f"{i}. {long}" for i in range(8)] + ["status"])
    assert "The model's context window is" not in t.text  # said once, at start
    assert "4096 tokens (Ollama's default below 23 GiB of VRAM): requests up to 2048 tokens, replies up to 2048" in (
        t.text
    )
    for request in server.requests:
        if request.kind == "embeddings":
            continue
        assert request.model_input == request.input  # nothing dropped by the server
        sent = _prompt_words(request.input, request.body.get("instructions"))
        assert sent + request.body.get("max_output_tokens", 0) <= 4096 and sent <= 2048
    assert "- English level: B1" in server.chats[-1].body["instructions"]
    roomy = make_app(context_tokens=32768)  # the setting overrides what the server says
    roomy.chat("Hello again", on_delta=lambda _: None)
    assert roomy.memory.budget.total == 4000 and "(MEMORA_CONTEXT_TOKENS)" in roomy.model.context_line()


@pytest.mark.parametrize("max_output", [16, 800])
def test_on_vllm_a_max_model_len_of_2048_is_never_exceeded(make_app, server, run_repl, max_output):
    from helpers.fake_openai import _prompt_words

    server.persona, server.context = "vllm", 2048
    app = make_app(max_output_tokens=max_output, recent_tokens=300, summary_tokens=100)
    t = run_repl(
        app, [f"Turn {i}: " + "tell me more about the present perfect and the past simple " * 8 for i in range(6)]
    )
    assert "Error" not in t.text and len(server.chats) == 6 and server.of_kind("summary")
    for request in server.chats + server.of_kind("summary"):
        assert request.status == 200
        cap = request.body["max_output_tokens"]
        assert cap <= 2048 and _prompt_words(request.input, request.body["instructions"]) + cap <= 2048


def test_lm_studio_is_found_through_its_current_api_with_the_loaded_context(make_app, server, run_repl):
    from helpers.fake_openai import LMSTUDIO_KEY

    server.persona, server.context = "lmstudio", 8192
    t = run_repl(make_app(model=LMSTUDIO_KEY), ["Hello there", "status"])
    assert "answered GET /api/v1/models" in t.text
    assert "8192 tokens (the loaded model's context_length in LM Studio)" in t.text
    assert "/api/v0/models" not in [p.path for p in server.probes]


@pytest.mark.parametrize(
    "persona, chat, structured",
    [
        ("openai", None, None),  # its reasoning models refuse a temperature
        ("ollama", 0.6, 0.2),  # it would sample at 1.0: the model's own (its Modelfile's) for the reply
        ("vllm", None, 0.2),  # it applies the model's generation config when none is sent
        ("lmstudio", None, 0.2),
    ],
)
def test_the_temperature_is_chosen_per_server_and_call_kind(make_app, server, persona, chat, structured):
    server.persona = persona
    server.script("extraction", extraction())
    app = make_app(as_openai=persona == "openai", context_tokens=32768)
    say(app, "I walked to the station in the rain this morning.")
    assert server.chats[-1].body.get("temperature") == chat
    assert server.of_kind("extraction")[-1].body.get("temperature") == structured


def test_the_first_reply_does_not_wait_for_a_server_slow_to_answer_its_probes(make_app, server, monkeypatch):
    from memora.model import llm

    monkeypatch.setattr(llm, "DETECTION_WAIT", 0.5)  # the product's wait (tests elsewhere wait for the answer)
    server.persona = "ollama"
    held = server.hold_probes()
    app = make_app(context_tokens=32768)
    result, _ = turn(app)  # answered while every probe is still waiting
    held.wait_arrived()
    assert result.reply.text == "Reply 1." and not held.released.is_set()
    assert "temperature" not in server.chats[-1].body  # meanwhile the base URL alone decided
    held.release()
    assert app.model._detected.wait(10)
    turn(app)
    assert server.chats[-1].body["temperature"] == 0.6  # Ollama, found: the model's own


def test_openai_itself_is_never_probed(make_app, server):
    turn(make_app(as_openai=True))
    assert server.probes == []


@pytest.mark.parametrize("invisible", ["\u200b", "\u200b\u200d\u2060", " \ufeff\n", "\u200c" * 40])
def test_a_reply_of_zero_width_characters_alone_is_not_kept(make_app, server, invisible):
    server.script("chat", invisible)
    app = make_app()
    with pytest.raises(ModelCallError) as failure:
        turn(app)
    assert "empty reply" in str(failure.value) and app.memory.messages == []


def test_a_structured_answer_that_fails_still_has_its_tokens_counted(make_app, server):
    server.script("extraction", "no json here", "still no json")
    app = make_app()
    say(app, "I keep bees on the roof of my building in Taichung.")
    assert app.memory.usage.extraction == 2 * 15  # both attempts (the stand-in's 10 in, 5 out each)


@pytest.mark.chroma  # Chroma refuses a vector of another size; its message is read in the backend
def test_an_embedding_model_that_changed_size_under_its_name_says_reindex_in_one_line(make_app, run_repl):
    from memora.model.embeddings import HashEmbedder

    first = make_app()
    first.store.add("The learner sings in a choir on Sundays")
    first.close()
    resized = HashEmbedder(512)
    resized.name = HashEmbedder().name  # the server's model kept its name and changed its size
    t = run_repl(
        make_app(embedder=resized), ["remember I also play the cello", "search choir", "reindex", "search choir"]
    )
    lines = [line for line in t.text.splitlines() if "vectors changed size" in line]
    assert len(lines) == 2 and all("type 'reindex' to re-embed every memory" in line for line in lines)
    assert "Unexpected" not in t.text
    assert "The learner sings in a choir" in t.text.rsplit("You: search choir", 1)[1]


def test_on_vllm_a_first_reply_that_breaks_off_shows_nothing_that_may_be_thinking(make_app, server, run_repl):
    server.persona = "vllm"
    server.script("chat", StreamThenFail("I should plan the answer first, the learner asked about", end="close"))
    t = run_repl(make_app(), ["Can you explain the present perfect?"])
    assert "plan the answer" not in t.text and "Error: (reply cut off)" in t.text


def test_on_vllm_with_a_reasoning_parser_the_thinking_it_reports_sets_the_room(make_app, server, run_repl):
    server.persona, server.reasoning_parser, server.thinks = "vllm", True, {"chat": 3000}
    app = make_app()
    t = run_repl(app, ["Can you explain the present perfect?", "And the past simple?", "status"])
    assert "Memora: Reply 2." in t.text and "Memora: Reply 3." in t.text and "hmm" not in t.text
    cut, retried, next_turn = server.chats  # the first cut while thinking; the second turn one request
    assert cut.body["max_output_tokens"] == 2848 and next_turn.body["max_output_tokens"] == 800 + 2 * 3000
    assert app.model.reasoned == 3000  # its reasoning_tokens, as vLLM's usage reports them
    assert "the most thinking in one response: 3000 tokens" in t.text
