"""The fake server (``helpers/fake_openai.py``) sends what the SDK's own types accept.

Every kind of answer it can give is driven here through the real ``openai`` client,
and every payload it sent must have passed the strict check (``server.violations``
is empty and ``server.fake.checked`` counted them). The builders are checked on their
own as well, the checks are shown to catch what they are for, and each persona is
held to what its docstring says it emulates."""

from __future__ import annotations

import base64
import json
import struct
import urllib.error
import urllib.request

import openai
import pytest
from helpers import fake_openai as fake
from helpers.fake_openai import (
    Body,
    Disconnect,
    Error,
    Events,
    FakeOpenAIServer,
    StreamThenFail,
    Truncated,
)

USER = [{"role": "user", "content": "Hello!"}]
WITH_DEVELOPER = [{"role": "developer", "content": "<background>The learner is Ming.</background>"}, *USER]
STRUCTURED = {
    "format": {
        "type": "json_schema",
        "name": "ReviewGrade",
        "schema": {
            "type": "object",
            "properties": {"verdict": {"type": "string"}, "feedback": {"type": "string"}},
            "required": ["verdict", "feedback"],
            "additionalProperties": False,
        },
        "strict": True,
    }
}

EVENT_BUILDERS = {
    "sse_events completed": lambda: fake.sse_events("A whole answer, long enough for two deltas."),
    "sse_events failed": lambda: fake.sse_events("Half an", end="failed"),
    "sse_events error": lambda: fake.sse_events("Half an", end="error"),
    "sse_events close": lambda: fake.sse_events("Half an", end="close"),
    "sse_events incomplete": lambda: fake.sse_events("Half an", end="incomplete"),
    "reasoning_events": lambda: fake.reasoning_events("The answer.", "Weighing two tenses."),
    "annotated_events": lambda: fake.annotated_events("See the grammar note."),
    "refusal_events": lambda: fake.refusal_events(),
    "incomplete_events with text": lambda: fake.incomplete_events("Some of the answer", 8),
    "incomplete_events without text": lambda: fake.incomplete_events("", 8),
    "error_midstream_events": lambda: fake.error_midstream_events(),
    "two_messages_events": lambda: fake.two_messages_events(),
    "truncated_completed_events": lambda: fake.truncated_completed_events("one two three four five", 3),
    "truncated_completed_events incomplete": lambda: fake.truncated_completed_events(
        "one two three four five", 3, status="incomplete"
    ),
    "truncated_completed_events no reason": lambda: fake.truncated_completed_events("one two three", 2, reason=None),
}
BODY_BUILDERS = {
    "response_json": lambda: fake.response_json("Hello."),
    "response_json partial usage": lambda: fake.response_json("Hi", {"input_tokens": 3, "output_tokens": 1}),
    "reasoning_body": lambda: fake.reasoning_body("The answer.", "Weighing two tenses."),
    "annotated_body": lambda: fake.annotated_body("See the grammar note."),
    "refusal_body": lambda: fake.refusal_body(),
    "incomplete_body without text": lambda: fake.incomplete_body(),
    "incomplete_body with text": lambda: fake.incomplete_body("Some of the answer"),
    "two_messages_body": lambda: fake.two_messages_body(),
    "truncated_completed_body": lambda: fake.truncated_completed_body("one two three four", 2),
}
ERROR_BUILDERS = {
    "rate_limited": lambda: fake.rate_limited(2, should_retry=False),
    "model_not_found": lambda: fake.model_not_found("gpt-nope"),
    "unsupported_parameter": lambda: fake.unsupported_parameter(),
    "Error 500": lambda: Body(Error(500).body(), status=500),
    "Error 401": lambda: Body(Error(401, "Incorrect API key provided").body(), status=401),
}


@pytest.fixture
def client(server, tls_context):
    http = openai.DefaultHttpxClient(verify=tls_context)
    yield openai.OpenAI(base_url=server.base_url, api_key="sk-test-not-real", max_retries=0, http_client=http)
    http.close()


def conforming(server, at_least: int = 1) -> None:
    """Everything the server sent was checked, and passed."""
    assert server.violations == []
    assert server.fake.checked >= at_least


def stream_types(client, **extra) -> list:
    """The events of a ``stream=True`` create, as the SDK parsed them."""
    return list(client.responses.create(model="m", input=extra.pop("input", USER), stream=True, **extra))


def get(server, path: str) -> tuple[int, dict]:
    try:
        with urllib.request.urlopen(server.root_url + path, timeout=10) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


# -- the builders, checked on their own ---------------------------------------------------------
@pytest.mark.parametrize("name", EVENT_BUILDERS)
def test_every_event_builder_is_sdk_valid(name):
    events = EVENT_BUILDERS[name]()
    assert fake.check_events(events) == []
    assert events[0][0] == "response.created" and events[0][1]["response"]["output"] == []


@pytest.mark.parametrize("name", BODY_BUILDERS)
def test_every_body_builder_is_sdk_valid(name):
    assert fake.check_response(BODY_BUILDERS[name]()) == []


@pytest.mark.parametrize("name", ERROR_BUILDERS)
def test_every_error_builder_has_openais_shape(name):
    body = ERROR_BUILDERS[name]()
    assert body.status >= 400
    assert fake.check_error_body(body.json) == []
    assert set(body.json["error"]) == {"message", "type", "param", "code"}


def test_the_checks_catch_a_missing_field_a_wrong_type_and_an_unknown_key():
    missing = fake.response_json("x")
    del missing["parallel_tool_calls"]
    assert any("parallel_tool_calls" in p and "required" in p for p in fake.check_response(missing))
    wrong = fake.response_json("x")
    wrong["usage"]["output_tokens"] = "5"  # lax mode would coerce it; strict mode does not
    assert any("usage.output_tokens" in p for p in fake.check_response(wrong))
    misspelt = fake.response_json("x")
    misspelt["incomplete_detail"] = None  # the SDK keeps extra keys: the walk reports it
    assert fake.check_response(misspelt) == ["response: key 'incomplete_detail' is not in the SDK's Response"]
    nested = fake.response_json("x")
    nested["output"][0]["content"][0]["annotation"] = []
    assert fake.check_response(nested) == [
        "response: key 'output[0].content[0].annotation' is not in the SDK's Response"
    ]


def test_the_checks_catch_bad_events_and_bad_error_bodies():
    assert fake.check_event({"type": "response.output_text.delta", "sequence_number": 0, "delta": "x"}) != []
    assert fake.check_event({"type": "response.made_up", "sequence_number": 0}) == [
        "event 'response.made_up': not a ResponseStreamEvent type"
    ]
    assert fake.check_error_body({"error": {"message": "no type"}}) != []
    assert fake.check_error_body({"message": "flat"}) != []
    assert fake.check_error_body({"error": {"message": "m", "type": "t", "param": None}}) == ["error body: no 'code'"]
    vllm = fake.VLLM_ROLE_ERROR
    assert fake.check_error_body(vllm) != [] and fake.check_error_body(vllm, int_code=True) == []


def test_what_the_old_payloads_lacked_is_now_sent():
    """What the strict check found missing: the response's required ``parallel_tool_calls``,
    ``tool_choice`` and ``tools``, and usage's ``input_tokens_details`` (``cached_tokens`` and
    ``cache_write_tokens``) and ``output_tokens_details.reasoning_tokens``."""
    body = fake.response_json("x")
    assert body["parallel_tool_calls"] is True and body["tool_choice"] == "auto" and body["tools"] == []
    assert body["usage"]["input_tokens_details"] == {"cached_tokens": 0, "cache_write_tokens": 0}
    assert body["usage"]["output_tokens_details"] == {"reasoning_tokens": 0}
    assert (body["usage"]["input_tokens"], body["usage"]["output_tokens"], body["usage"]["total_tokens"]) == (10, 5, 15)


# -- every answer, through the real client ------------------------------------------------------
def test_a_text_answer_as_json(server, client):
    server.script("chat", "Hello, Ming.")
    response = client.responses.create(model="gpt-test", instructions="Be kind.", input=USER, max_output_tokens=50)
    assert response.output_text == "Hello, Ming."
    assert (response.model, response.instructions, response.max_output_tokens) == ("gpt-test", "Be kind.", 50)
    conforming(server)


def test_a_structured_answer_as_json_echoes_the_format(server, client):
    server.script("grading", {"verdict": "correct", "feedback": "Yes."})
    response = client.responses.create(model="m", input=USER, text=STRUCTURED)
    assert json.loads(response.output_text) == {"verdict": "correct", "feedback": "Yes."}
    assert response.text.format.name == "ReviewGrade"
    assert server.of_kind("grading")
    conforming(server)


def test_a_streamed_answer_works_with_the_sdks_stream_helper(server, client):
    """``responses.stream()`` rebuilds the response from the events; it refused the old
    stream, whose ``response.created`` already held the output item ("Duplicate response
    output index 0")."""
    server.script("chat", "A streamed answer that takes several deltas to send.")
    with client.responses.stream(model="m", input=USER) as stream:
        kinds = [event.type for event in stream]
        final = stream.get_final_response()
    assert final.output_text == "A streamed answer that takes several deltas to send."
    assert kinds[:2] == ["response.created", "response.in_progress"]
    assert kinds[-4:] == [
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed",
    ]
    conforming(server, len(kinds))


@pytest.mark.parametrize("end", ["failed", "error", "close", "incomplete"])
def test_a_stream_that_ends_without_completed(server, client, end):
    server.script("chat", StreamThenFail("Half of an answer", end=end))
    events = stream_types(client)
    assert "".join(e.delta for e in events if e.type == "response.output_text.delta") == "Half of an answer"
    assert (
        events[-1].type
        == {
            "failed": "response.failed",
            "error": "error",
            "close": "response.output_text.delta",
            "incomplete": "response.incomplete",
        }[end]
    )
    conforming(server, len(events))


@pytest.mark.parametrize("name", EVENT_BUILDERS)
def test_each_event_builder_replayed_through_the_server(server, client, name):
    events = EVENT_BUILDERS[name]()
    server.script("chat", Events(events))
    received = stream_types(client)
    assert [e.type for e in received] == [kind for kind, _ in events]
    assert [e.sequence_number for e in received] == list(range(len(events)))
    conforming(server, len(events))


@pytest.mark.parametrize(
    "name",
    ["reasoning_events", "annotated_events", "refusal_events", "two_messages_events", "truncated_completed_events"],
)
def test_complete_sequences_satisfy_the_stream_helper(server, client, name):
    server.script("chat", Events(EVENT_BUILDERS[name]()))
    with client.responses.stream(model="m", input=USER) as stream:
        for _ in stream:
            pass
        final = stream.get_final_response()
    assert final.status == ("incomplete" if "incomplete" in name else "completed")
    conforming(server)


def test_the_stream_helper_refuses_an_incomplete_sequence(server, client):
    """As API-NOTES says: ``get_final_response()`` raises when the stream ended incomplete."""
    server.script("chat", Events(fake.incomplete_events()))
    with client.responses.stream(model="m", input=USER) as stream:
        for _ in stream:
            pass
        with pytest.raises(RuntimeError):
            stream.get_final_response()
    conforming(server)


def test_what_the_real_formats_carry(server, client):
    server.script(
        "chat",
        Events(fake.reasoning_events("Use the past.", "Weighing two tenses here.")),
        Events(fake.annotated_events("See the note.")),
        Events(fake.refusal_events("I can't help with that.")),
        Events(fake.two_messages_events("One.", "Two.")),
        Events(fake.incomplete_events("", 8)),
        Events(fake.error_midstream_events("Half")),
        Events(fake.truncated_completed_events("one two three four five", 3)),
    )
    reasoning = stream_types(client)
    assert [e.item.type for e in reasoning if e.type == "response.output_item.added"] == ["reasoning", "message"]
    assert reasoning[-1].response.usage.output_tokens_details.reasoning_tokens == 4
    assert reasoning[-1].response.output_text == "Use the past."

    annotated = stream_types(client)
    (added,) = [e for e in annotated if e.type == "response.output_text.annotation.added"]
    assert added.annotation.type == "url_citation" and added.annotation.end_index == len("See the note.")
    assert annotated[-1].response.output[0].content[0].annotations[0].url == "https://example.com/grammar"

    refused = stream_types(client)
    assert [e.refusal for e in refused if e.type == "response.refusal.done"] == ["I can't help with that."]
    assert refused[-1].response.output_text == ""

    two = stream_types(client)
    deltas = [(e.output_index, e.item_id) for e in two if e.type == "response.output_text.delta"]
    assert deltas == [(0, "msg_fake_0"), (1, "msg_fake_1")]
    assert two[-1].response.output_text == "One.Two."

    incomplete = stream_types(client)
    final = incomplete[-1].response
    assert incomplete[-1].type == "response.incomplete" and final.incomplete_details.reason == "max_output_tokens"
    assert [item.type for item in final.output] == ["reasoning"] and final.output_text == ""
    assert final.usage.output_tokens == 8 == final.max_output_tokens

    broken = stream_types(client)
    assert broken[-1].type == "error" and broken[-2].type == "response.output_text.delta"

    cut = stream_types(client)
    assert cut[-1].type == "response.completed" and cut[-1].response.incomplete_details.reason == "max_output_tokens"
    assert cut[-1].response.output_text == "one two three" and cut[-1].response.usage.output_tokens == 3
    conforming(server)


@pytest.mark.parametrize("name", BODY_BUILDERS)
def test_each_body_builder_replayed_through_the_server(server, client, name):
    server.script("chat", Body(BODY_BUILDERS[name]()))
    response = client.responses.create(model="m", input=USER)
    assert response.id == "resp_fake"
    conforming(server)


def test_a_null_body_goes_out_unchecked(server, client):
    server.script("chat", fake.null_body())
    assert client.responses.create(model="m", input=USER) is None  # what the SDK makes of it
    assert server.violations == [] and server.fake.checked == 0
    assert server.chats[0].status == 200


def test_an_unchecked_body_is_sent_verbatim_and_a_checked_one_is_reported(server, client):
    server.script("chat", Body({"id": "r"}, check=False), Body({"id": "r"}))
    client.responses.create(model="m", input=USER)
    assert server.violations == []
    client.responses.create(model="m", input=USER)
    assert server.violations and all("POST /v1/responses (chat): response:" in v for v in server.violations)
    server.violations.clear()  # the fixture would fail this test otherwise


def test_truncated_as_openai_reports_it(server, client):
    server.script("chat", Truncated("one two three four five six"), Truncated("one two three four five six"))
    json_answer = client.responses.create(model="m", input=USER, max_output_tokens=4)
    assert (json_answer.status, json_answer.incomplete_details.reason) == ("incomplete", "max_output_tokens")
    assert json_answer.output_text == "one two three four" and json_answer.usage.output_tokens == 4
    events = stream_types(client, max_output_tokens=2)
    assert events[-1].type == "response.incomplete" and events[-1].response.output_text == "one two"
    conforming(server)


def test_errors_have_openais_shape_and_their_headers(server, client):
    server.script("chat", Error(500, "down"), Error(429, "slow down", headers={"Retry-After": "3"}))
    with pytest.raises(openai.InternalServerError) as down:
        client.responses.create(model="m", input=USER)
    assert down.value.body == {"message": "down", "type": "server_error", "param": None, "code": None}
    with pytest.raises(openai.RateLimitError) as slow:
        client.responses.create(model="m", input=USER)
    assert slow.value.code == "rate_limit_exceeded" and slow.value.response.headers["retry-after"] == "3"
    conforming(server, 2)


def test_rate_limited_says_when_to_retry_and_whether(server, tls_context):
    http = openai.DefaultHttpxClient(verify=tls_context)
    retrying = openai.OpenAI(base_url=server.base_url, api_key="sk-test", max_retries=2, http_client=http)
    server.script("chat", fake.rate_limited(7, should_retry=False))
    with pytest.raises(openai.RateLimitError) as refused:
        retrying.responses.create(model="m", input=USER)
    assert len(server.chats) == 1  # x-should-retry: false is obeyed
    assert refused.value.response.headers["retry-after"] == "7"
    server.script("chat", fake.rate_limited(0), "Back.")
    assert retrying.responses.create(model="m", input=USER).output_text == "Back."
    assert len(server.chats) == 3  # retried (the suite's backoff is zero: no sleep)
    http.close()
    conforming(server, 3)


def test_model_not_found_and_unsupported_parameter(server, client):
    server.script("chat", fake.model_not_found("gpt-x"), fake.unsupported_parameter("reasoning.effort"))
    with pytest.raises(openai.NotFoundError) as missing:
        client.responses.create(model="gpt-x", input=USER)
    assert missing.value.code == "model_not_found"
    assert missing.value.message.endswith("The model `gpt-x` does not exist or you do not have access to it.")
    with pytest.raises(openai.BadRequestError) as unsupported:
        client.responses.create(model="m", input=USER, reasoning={"effort": "low"})
    assert (unsupported.value.code, unsupported.value.param) == ("unsupported_parameter", "reasoning.effort")
    conforming(server, 2)


def test_a_disconnect_sends_nothing(server, client):
    server.script("chat", Disconnect())
    with pytest.raises(openai.APIConnectionError):
        client.responses.create(model="m", input=USER)
    assert server.chats[0].status is None and server.fake.checked == 0


def test_embeddings_in_base64_and_as_floats(server, client):
    """The SDK asks for base64 unless told otherwise; the server now honours it (float32,
    little-endian, as OpenAI sends it), and the check validates what the SDK decodes."""
    by_default = client.embeddings.create(model="text-embedding-3-small", input=["the cat sat", "a dog"])
    as_floats = client.embeddings.create(model="text-embedding-3-small", input="the cat sat", encoding_format="float")
    assert server.of_kind("embeddings")[0].body["encoding_format"] == "base64"
    expected = fake.hash_embedding("the cat sat")
    assert by_default.data[0].embedding == pytest.approx(expected, abs=1e-6)
    assert as_floats.data[0].embedding == expected
    assert by_default.usage.total_tokens == 5 and by_default.model == "text-embedding-3-small"
    conforming(server, 2)


def test_embeddings_can_be_scripted(server, client):
    vector = base64.b64encode(struct.pack("<2f", 1.0, 0.0)).decode()
    payload = {"object": "list", "data": [{"object": "embedding", "index": 0, "embedding": vector}]}
    payload |= {"model": "e", "usage": {"prompt_tokens": 1, "total_tokens": 1}}
    server.script("embeddings", Error(400, "Invalid model name"), Body(payload))
    with pytest.raises(openai.BadRequestError):
        client.embeddings.create(model="e", input="x")
    assert client.embeddings.create(model="e", input="x").data[0].embedding == [1.0, 0.0]
    conforming(server, 2)


def test_the_whole_app_conforms(make_app, server, run_repl):
    """A few turns of the real app (chat streamed, extraction, decisions, the summary):
    every answer checked, none rejected."""
    app = make_app()
    run_repl(app, ["Hello, my name is Ming.", "I like tea.", "What do you know about me?"])
    assert len(server.chats) == 3
    conforming(server, 3 * 8)


# -- personas -----------------------------------------------------------------------------------
@pytest.mark.parametrize("persona", fake.PERSONAS)
def test_unknown_get_paths_answer_a_404_in_openais_shape(persona):
    with FakeOpenAIServer(persona=persona) as server:
        status, body = get(server, "/v1/nothing")
        assert status == 404 and fake.check_error_body(body) == []
        assert body["error"]["message"] == "Invalid URL (GET /v1/nothing)"
        for path, persona_of in [
            ("/api/version", "ollama"),
            ("/version", "vllm"),
            ("/v1/models", "vllm"),
            ("/api/v0/models", "lmstudio"),
            ("/api/v1/models", "lmstudio"),
        ]:
            assert get(server, path)[0] == (200 if persona == persona_of else 404)
        assert [p.path for p in server.of_kind("probe")][0] == "/v1/nothing"
        assert server.violations == []


def test_probes_are_recorded_apart_from_the_requests(server, client):
    server.persona = "ollama"
    assert get(server, "/api/version") == (200, {"version": "0.12.6"})
    client.responses.create(model="m", input=USER)
    (probe,) = server.probes
    assert (probe.method, probe.kind, probe.path, probe.status) == ("GET", "probe", "/api/version", 200)
    assert server.of_kind("probe") == [probe]
    assert [r.kind for r in server.requests] == ["chat"] and len(server.chats) == 1
    server.fake.clear()
    assert server.probes == [] and server.requests == []


def test_an_unknown_persona_is_refused(server):
    with pytest.raises(ValueError, match="unknown persona"):
        server.persona = "llamafile"
    with pytest.raises(ValueError):
        server.json_wrapping = "xml"


def test_ollama_drops_developer_items_silently(server, client):
    server.persona = "ollama"
    server.script("chat", "Hello, whoever you are.")
    response = client.responses.create(model="m", input=WITH_DEVELOPER)
    assert response.status == "completed" and response.error is None
    (sent,) = server.chats
    assert sent.roles == ["developer", "user"]  # what Memora sent
    assert sent.model_roles == ["user"] and "Ming" not in json.dumps(sent.model_input)  # what reached the model
    client.responses.create(model="m", input=[{"role": "system", "content": "Ming."}, *USER])
    assert server.chats[1].model_roles == ["system", "user"]  # the same text as system is honoured
    conforming(server, 2)


def test_ollama_reports_truncation_inside_completed(server, client):
    server.persona = "ollama"
    long = "one two three four five six seven eight"
    server.script("chat", long, long, Truncated(long), "short")
    events = stream_types(client, max_output_tokens=3)
    kinds = [e.type for e in events]
    assert "response.incomplete" not in kinds and kinds[-1] == "response.completed"
    final = events[-1].response
    assert (final.status, final.incomplete_details) == ("completed", None)
    assert final.output_text == "one two three" and final.usage.output_tokens == 3 == final.max_output_tokens
    as_json = client.responses.create(model="m", input=USER, max_output_tokens=5)
    assert (as_json.status, as_json.output_text, as_json.usage.output_tokens) == (
        "completed",
        "one two three four five",
        5,
    )
    scripted = client.responses.create(model="m", input=USER, max_output_tokens=2)
    assert (scripted.status, scripted.output_text) == ("completed", "one two")
    assert client.responses.create(model="m", input=USER, max_output_tokens=2).output_text == "short"
    conforming(server)


def test_vllm_refuses_the_developer_role(server, client):
    server.persona = "vllm"
    assert get(server, "/version") == (200, {"version": "0.11.0"})
    server.script("chat", "Kept for the next request.")
    with pytest.raises(openai.BadRequestError) as refused:
        client.responses.create(model="m", input=WITH_DEVELOPER)
    assert refused.value.body == {
        "message": "Unexpected message role.",
        "type": "BadRequestError",
        "param": None,
        "code": 400,
    }
    (sent,) = server.chats
    assert sent.status == 400 and sent.model_input == [] and sent.roles == ["developer", "user"]
    assert client.responses.create(model="m", input=USER).output_text == "Kept for the next request."
    conforming(server, 2)


@pytest.mark.parametrize(
    "wrapping, expected",
    [
        ("fenced", '```json\n{"verdict": "correct", "feedback": "Yes."}\n```'),
        ("prose", 'Here is the JSON you asked for:\n{"verdict": "correct", "feedback": "Yes."}'),
    ],
)
def test_lmstudio_ignores_the_text_format(server, client, wrapping, expected):
    server.persona = "lmstudio"
    server.json_wrapping = wrapping
    server.script("grading", {"verdict": "correct", "feedback": "Yes."})
    server.script("chat", "Plain prose stays plain.")
    assert client.responses.create(model="m", input=USER, text=STRUCTURED).output_text == expected
    assert client.responses.create(model="m", input=USER).output_text == "Plain prose stays plain."
    status, models = get(server, "/api/v0/models")
    assert status == 200 and models["object"] == "list"
    assert {"type", "publisher", "arch", "compatibility_type", "quantization", "state", "max_context_length"} <= set(
        models["data"][0]
    )
    conforming(server, 2)


def test_a_persona_can_be_chosen_at_construction():
    with FakeOpenAIServer(persona="lmstudio", json_wrapping="prose") as server:
        assert (server.persona, server.json_wrapping) == ("lmstudio", "prose")
    with pytest.raises(ValueError):
        FakeOpenAIServer(persona="nope")
