"""The scripted chat-completions server the LiteLLM compatibility test puts behind
the proxy (``helpers/chat_backend.py``): it speaks chat completions as the SDK reads
them, and tells Memora's calls apart as the Responses fake does."""

from __future__ import annotations

import json

import pytest
from helpers.chat_backend import ChatBackend, checked, classify, completion_chunks, completion_json

from memora.engine.prompts import SUMMARY_PROMPT

# -- the backend on its own: it speaks chat completions as the SDK reads them --------------


@pytest.fixture
def backend():
    with ChatBackend() as srv:
        yield srv


def test_the_backend_answers_the_sdks_chat_client_streamed_and_not(backend):
    import openai

    backend.script("chat", "A streamed answer that is long enough to come in several pieces.")
    backend.script("extraction", {"facts": []})
    client = openai.OpenAI(base_url=backend.base_url, api_key="sk-test-not-real", max_retries=0)
    stream = client.chat.completions.create(
        model="backend-model",
        messages=[{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}],
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "A streamed answer that is long enough to come in several pieces."
    assert len([c for c in chunks if c.choices and c.choices[0].delta.content]) > 1
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    assert chunks[-1].choices == [] and chunks[-1].usage.total_tokens > 0  # the usage comes last, on its own
    answer = client.chat.completions.create(
        model="backend-model",
        messages=[{"role": "user", "content": "I am a nurse."}],
        response_format={
            "type": "json_schema",
            "json_schema": {"name": "ExtractionResult", "schema": {"type": "object"}, "strict": True},
        },
    )
    assert json.loads(answer.choices[0].message.content) == {"facts": []}
    assert answer.usage.total_tokens == answer.usage.prompt_tokens + answer.usage.completion_tokens
    assert [r.kind for r in backend.received] == ["chat", "extraction"]
    assert backend.received[0].instruction_messages == ["Be brief."]
    assert backend.problems == []
    # and what it would send fits the SDK's types, with or without the usage chunk
    for body in ({"stream_options": {"include_usage": True}}, {}):
        for chunk in completion_chunks(body, "text", 1):
            checked(chunk, chunk=True)
    checked(completion_json({}, "", 1), chunk=False)


def test_the_backend_tells_kinds_apart_as_the_responses_server_does(backend):
    def body(system, schema=None):
        out = {"messages": [{"role": "system", "content": system}, {"role": "user", "content": "x"}]}
        if schema:
            out["response_format"] = {"type": "json_schema", "json_schema": {"name": schema, "schema": {}}}
        return out

    assert classify(body("You are Memora")) == "chat"
    assert classify(body(SUMMARY_PROMPT.format(max_words=90))) == "summary"
    for name, kind in {
        "ExtractionResult": "extraction",
        "MemoryDecision": "reconcile",
        "MemoryDecisions": "reconcile_many",
        "CorrectionDecision": "correction",
        "ReviewGrade": "grading",
    }.items():
        assert classify(body("Decide.", name)) == kind
