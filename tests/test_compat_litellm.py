"""Memora through another implementation of the Responses API: a real LiteLLM proxy.

Every other test talks to ``fake_openai.py``, a Responses server written to the same
reading of the API as Memora. Here a whole session runs through LiteLLM's proxy
(``/v1/responses``, bridged to chat completions) in front of a scripted
chat-completions server (``helpers/chat_backend.py``): the streamed reply,
each message read after its reply, several facts decided in one call, a correction,
a profile question, a review answer graded by the model and older turns folded into
the summary. The test asserts on what the model behind the proxy was sent and on
what the learner saw. Three shorter tests end a reply early through the proxy: at
the token limit, with a broken stream (an expected failure: LiteLLM reports it as
complete) and with an HTTP error.

LiteLLM lives in a virtualenv of its own (``MEMORA_LITELLM``, see
``helpers/litellm_proxy.py``); without it the session test skips, and fails under
``MEMORA_REQUIRE_LOCAL_MODELS=1`` (CI). The backend's own tests run without it.
"""

from __future__ import annotations

import json

import pytest
from helpers.chat_backend import ChatBackend, Cut, checked, classify, completion_chunks, completion_json
from helpers.litellm_proxy import BACKEND_KEY
from helpers.scripts import decisions_input, extraction, fact, number_of, retracting

from memora.model.model_facts import REASONING_ROOM
from memora.model.prompts import SUMMARY_PROMPT, SYSTEM_PROMPT

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


# -- a whole session through LiteLLM ---------------------------------------------------------


def _as_responses(body: dict) -> dict:
    """A chat-completions body as the scripts' helpers read a Responses one (the last
    user message as ``input``), so ``decisions_input`` and friends read it unchanged."""
    users = [m for m in body.get("messages") or [] if m.get("role") == "user"]
    return {"input": [{"role": "user", "content": users[-1]["content"] if users else ""}]}


def _repl(app, lines):
    """``chatbot.run`` in plain mode, fed ``lines``. Between lines the reading already
    queued finishes, so its notices print before the next prompt."""
    import chatbot
    from memora.cli.terminal import PlainConsole

    out: list[str] = []
    pending = list(lines)

    def read(prompt: str) -> str:
        assert app.worker.wait_idle(30)
        out.append(prompt)
        if not pending:
            raise EOFError
        line = pending.pop(0)
        out.append(line + "\n")
        return line

    console = PlainConsole(read, out.append)
    app.set_notify(console.notice)
    code = chatbot.run(app, console, raise_unexpected=True)
    return "".join(out), code


def _after(text: str, line: str) -> str:
    """What was printed after the learner typed ``line``, up to the next prompt."""
    return text.split(f"You: {line}\n", 1)[1].split("You: ", 1)[0]


TOKYO, TENNIS = "The learner moved to Tokyo last month.", "The learner took up tennis."
TAIPEI, GOLF, ABROAD = "The learner lives in Taipei.", "The learner plays golf.", "The learner wants to work abroad."
GOED = {
    "original": "Yesterday I goed to the market.",
    "corrected": "Yesterday I went to the market.",
    "rule": "go → went: irregular past tense",
    "kind": "grammar",
}
EXPLANATION = (
    "The present perfect joins the past to now: I have lived in Tokyo for a month, so I still live there. "
    "We use it for experience (I have seen Mount Fuji), for a change that matters now (I have lost my keys) "
    "and with since and for. The past simple closes the time instead: I lived in Taipei for ten years. "
    "Watch the words around the verb: yesterday, last month and in 2020 want the past simple. "
)
SUMMARY = "The learner moved to Tokyo, is B2 now and practises the past simple and the present perfect."

LINES = [
    "I moved to Tokyo last month, and I took up tennis.",  # 1. two facts decided in one call
    "I took up tennis.",  # 2. each message is read after its own reply
    "Yesterday I goed to the market.",  # 3. a mistake
    "No, I never said I want to work abroad.",  # 4. a correction, read before its reply
    "I passed the B2 exam, so I'm B2 now.",  # 5. read after its reply: a profile question
    "yes",  # its answer, not chat
    "review",  # 6. the drill: one card, graded by the model
    "Yesterday I went to the market.",
    "Can you explain the present perfect?",  # 7. long replies: older turns fold
    "And how is it different from the past simple?",
    "Thanks, that is clear now.",
]
SAID = [line for line in LINES if line not in ("yes", "review", "Yesterday I went to the market.")]  # chat turns
REPLIES = [
    "Tokyo is a great city to practise English in!",
    "Tennis is a fun way to stay fit.",
    "Small fix: the past of go is went, so: Yesterday I went to the market.",
    "Sorry about that, I have forgotten it.",
    "Congratulations on passing the B2 exam!",
    EXPLANATION,
    EXPLANATION + "Compare: I have been to Osaka (some time in my life) and I went to Osaka last week.",
    "You're welcome! Shall we practise with a few sentences?",
]


@pytest.mark.slow  # starts the LiteLLM proxy: about ten seconds before the first request
def test_a_whole_session_through_a_litellm_proxy(make_app, litellm, server):
    backend = litellm.backend
    backend.script("chat", *REPLIES)
    backend.script(
        "extraction",
        extraction(fact(TOKYO, "identity"), fact(TENNIS, "hobby")),
        extraction(),
        extraction() | {"mistakes": [GOED]},
        extraction(corrections=[{"statement": ABROAD, "evidence": "No, I never said I want to work abroad."}]),
        extraction(
            profile_changes=[
                {"field": "english_level", "action": "set", "value": "B2", "evidence": "I'm B2 now."},
            ]
        ),
    )

    def shared(body):  # Tokyo replaces Taipei, tennis is new
        facts, _ = decisions_input(_as_responses(body))
        taipei = number_of(_as_responses(body), TAIPEI)
        letter = {text: letter for letter, text in facts.items()}
        return {
            "decisions": [
                {"fact": letter[TOKYO], "action": "SUPERSEDE", "memory": taipei, "text": None},
                {"fact": letter[TENNIS], "action": "ADD", "memory": None, "text": None},
            ]
        }

    backend.script("reconcile_many", shared)
    backend.script("correction", lambda body: retracting(ABROAD)(_as_responses(body)))
    backend.script("grading", {"verdict": "correct", "feedback": "Yes: the past of go is went."})
    backend.script("summary", SUMMARY)

    app = make_app(
        base_url=litellm.base_url,
        api_key=litellm.api_key,
        model=litellm.model,
        recent_tokens=250,
        summary_tokens=120,
    )
    app.profiles.set_english_level("B1")
    taipei = app.store.add(TAIPEI, category="identity")
    app.store.add(GOLF, category="hobby")
    abroad = app.store.add(ABROAD, category="other")

    text, code = _repl(app, LINES)

    # -- what the learner saw -----------------------------------------------------------------
    assert code == 0
    for line, reply in zip(SAID, REPLIES, strict=True):
        assert f"Memora: {reply}" in _after(text, line), line
    first = _after(text, LINES[0])
    [memory_line] = [line for line in first.splitlines() if line.startswith("Note: Memory: ")]
    assert f"superseded {taipei.id[:6]} \u201c{TAIPEI}\u201d \u2192 " in memory_line
    assert "\u201cThe learner moved to Tokyo last month.\u201d" in memory_line
    assert "remembered " in memory_line and "\u201cThe learner took up tennis.\u201d" in memory_line
    assert "Memory:" not in _after(text, LINES[1]) + _after(text, LINES[2])  # nothing new to remember
    correction = _after(text, LINES[3])
    assert f"Got it, that is superseded ('memories --all' still lists it): \u201c{ABROAD}\u201d" in correction
    assert "Update your profile level from B1 to B2? (yes/no)" in _after(text, LINES[4])
    assert "Profile updated: English level is now B2." in _after(text, "yes")
    drill = _after(text, "review")
    assert "[1/1] Fix this sentence: \u201cYesterday I goed to the market.\u201d" in drill
    assert "Correct: Yes: the past of go is went." in drill
    assert "Review done: 1 answer saved (1 right)." in drill
    assert text.rstrip().endswith("Goodbye!")

    # -- what Memora kept -------------------------------------------------------------------------
    assert sorted(r.content for r in app.store.list()) == sorted([GOLF, TENNIS, TOKYO])
    assert not app.store.get(taipei.id).is_current and not app.store.get(abroad.id).is_current
    assert app.profiles.get().english_level == "B2"
    [mistake] = app.ledger.all()
    assert mistake.reviews[-1].correct
    assert app.memory.summary == SUMMARY

    # -- what the model behind the proxy was sent -----------------------------------------------
    assert server.requests == []  # nothing went past the proxy to the Responses fake
    received = backend.received
    kinds = [r.kind for r in received]
    assert all(r.path == "/v1/chat/completions" and r.body["model"] == "backend-model" for r in received)
    assert all("store" not in r.body for r in received)  # the bridge drops it; nothing to keep anyway
    # the proxy's own key for the backend, not the one Memora sent the proxy
    assert all(r.header("Authorization") == f"Bearer {BACKEND_KEY}" for r in received)
    assert kinds[:3] == ["chat", "extraction", "reconcile_many"]  # the first message read after its reply

    chats = backend.chats
    assert [c.last_user for c in chats] == SAID
    for chat in chats:
        # one system message: the instructions, then the background (a chat template may take only one)
        assert chat.roles[0] == "system" and chat.roles.count("system") == 1 and "developer" not in chat.roles
        assert chat.messages[0]["content"].startswith(SYSTEM_PROMPT + "\n\n")
        assert "<user_profile>" in chat.messages[0]["content"]
        assert chat.body["stream"] is True and chat.body["stream_options"] == {"include_usage": True}
        # max_output_tokens, renamed: the visible cap plus room for a model that may think (a low
        # effort's: this backend does not think), reasoning.effort renamed, no temperature: the model's own
        assert chat.body["max_tokens"] == app.settings.max_output_tokens + REASONING_ROOM["low"]
        assert chat.body["reasoning_effort"] == "low" and "temperature" not in chat.body
        assert "response_format" not in chat.body
    levels = [chat.section("user_profile") for chat in chats]
    assert all("- English level: B1" in p for p in levels[:5]) and all("- English level: B2" in p for p in levels[5:])
    assert chats[2].conversation == [
        ("user", LINES[0]),
        ("assistant", REPLIES[0]),
        ("user", LINES[1]),
        ("assistant", REPLIES[1]),
        ("user", LINES[2]),
    ]
    # the chat usage LiteLLM passed on is what the backend reported
    assert app.memory.usage.chat == sum(c.usage["total_tokens"] for c in chats)

    def structured(kind, name):
        found = backend.of_kind(kind)
        for call in found:
            assert call.body["response_format"]["type"] == "json_schema"
            assert call.json_schema["name"] == name and call.json_schema["strict"] is True
            assert call.json_schema["schema"]["additionalProperties"] is False
            assert call.roles == ["system", "user"] and "stream" not in call.body
            assert call.body["reasoning_effort"] == "none" and call.body["temperature"] == 0.2
        return found

    readings = structured("extraction", "ExtractionResult")
    assert all(r.last_user.endswith(line) for r, line in zip(readings, SAID, strict=True))  # one per message
    [decision] = structured("reconcile_many", "MemoryDecisions")
    said = "(29 Nov 10:00)"  # each fact with when it was said
    assert decision.last_user.startswith(f"New facts:\nA. {TOKYO} {said}\nB. {TENNIS} {said}\nMemories:\n")
    assert backend.of_kind("reconcile") == []  # both decided in that one call
    [lookup] = structured("correction", "CorrectionDecision")
    assert ABROAD in lookup.last_user
    assert kinds.index("correction") < received.index(chats[3])  # read before its reply...
    assert "Removed at the learner's request: " + ABROAD in chats[3].section("memory_changes")  # ...and told it
    [grading] = structured("grading", "ReviewGrade")
    assert json.loads(grading.last_user) == {
        "exercise": "Fix this sentence: \u201cYesterday I goed to the market.\u201d",
        "expected": GOED["corrected"],
        "rule": GOED["rule"],
        "answer": GOED["corrected"],
    }

    summaries = backend.of_kind("summary")
    assert summaries, "older turns must have been folded"
    fold = summaries[0]
    assert fold.roles == ["system", "user"] and fold.instruction_messages[0].startswith(
        "You maintain the running summary"
    )
    assert fold.body["reasoning_effort"] == "none" and fold.body["temperature"] == 0.2  # no thinking, low sampling
    assert app.settings.summary_tokens <= fold.body["max_tokens"] < app.settings.summary_tokens + 100
    assert LINES[0] in fold.last_user  # the oldest turn went into it
    after = [c for c in chats if received.index(c) > received.index(fold)]
    assert after and all(SUMMARY in (c.section("conversation_summary") or "") for c in after)
    assert all(c.section("conversation_summary") is None for c in chats if received.index(c) < received.index(fold))
    assert ("user", LINES[0]) not in after[-1].conversation  # folded, no longer sent in full


def _through(make_app, litellm, **overrides):
    return make_app(base_url=litellm.base_url, api_key=litellm.api_key, model=litellm.model, **overrides)


@pytest.mark.slow  # the LiteLLM proxy (shared with the session above when on the same worker)
def test_a_reply_stopped_by_the_token_limit_is_kept_with_a_notice_through_litellm(make_app, litellm):
    litellm.backend.script("chat", Cut("The present perfect joins the past to", end="length"))
    app = _through(make_app, litellm)
    shown: list[str] = []
    result = app.chat("Can you explain the present perfect?", on_delta=shown.append)
    assert "".join(shown) == result.reply.text == "The present perfect joins the past to"
    assert result.reply.incomplete == "max_output_tokens"  # finish_reason "length", as LiteLLM reports it
    assert any("(reply cut off: max_output_tokens)" in note for note in result.notes)
    assert [m["content"] for m in app.memory.messages] == [
        "Can you explain the present perfect?",
        "The present perfect joins the past to",
    ]


@pytest.mark.slow
@pytest.mark.xfail(
    raises=AssertionError,  # only the assertion below: a proxy that did not start still fails
    strict=True,
    reason=(
        "LiteLLM 1.108.5 ends a backend stream that broke off (text chunks, then the connection closed with no "
        "finish_reason and no [DONE]) with response.completed, status 'completed' and an estimated usage: its "
        "chunk builder and stream wrapper take a missing finish_reason for 'stop' "
        "(litellm_core_utils/streaming_chunk_builder_utils.py, streaming_handler.py finish_reason_handler), and "
        "the bridge maps 'stop' to completed. Memora, told the reply is complete, keeps the fragment and shows "
        "it as the whole answer; it cannot tell from what it is sent."
    ),
)
def test_a_reply_whose_stream_breaks_off_is_not_kept_through_litellm(make_app, litellm):
    """The backend's stream ends after some text with no finish reason and no [DONE]:
    the reply is a fragment, and Memora keeps only what the server ends as complete or
    as stopped by the token limit (against the Responses fake: test_exits)."""
    from memora.core.errors import ModelCallError

    litellm.backend.script("chat", Cut("Half of an answer that", end="close"))
    app = _through(make_app, litellm)
    try:
        app.chat("Can you explain the present perfect?", on_delta=lambda _: None)
    except ModelCallError:
        pass
    kept = [m["content"] for m in app.memory.messages]
    assert kept == [], f"the fragment was kept as a whole reply: {kept}"  # the turn is rolled back


@pytest.mark.slow
def test_a_failing_backend_fails_the_turn_with_the_status_through_litellm(make_app, litellm):
    from helpers.fake_openai import Error

    from memora.core.errors import ModelCallError

    litellm.backend.script("chat", Error(500, "the backend is down"))
    app = _through(make_app, litellm)
    with pytest.raises(ModelCallError) as failed:
        app.chat("Hello there, how are you today?", on_delta=lambda _: None)
    assert "HTTP 500" in str(failed.value) and "the backend is down" in str(failed.value)
    assert litellm.api_key not in str(failed.value)
    assert app.memory.messages == []
    assert len(litellm.backend.chats) == 1  # the proxy did not retry (num_retries 0)


@pytest.mark.slow
def test_an_embedding_model_the_proxy_was_not_configured_with_is_one_line_naming_the_setting(
    make_settings, litellm, clock, run_repl
):
    """LiteLLM answers 400 "Invalid model name" for an embedding model it was not given."""
    from memora.app.assistant import Memora

    settings = make_settings(
        base_url=litellm.base_url,
        api_key=litellm.api_key,
        model=litellm.model,
        embedding_model="text-embedding-3-small",
    )
    app = Memora.from_settings(settings, clock=clock, notify=lambda m: None)
    t = run_repl(app, ["remember I keep bees on the roof"])
    [line] = [line for line in t.text.splitlines() if "MEMORA_EMBEDDING_MODEL" in line]
    assert "(400" in line and "does not serve the embedding model 'text-embedding-3-small'" in line


@pytest.mark.slow
def test_by_default_embeddings_stay_local_behind_a_keyed_proxy(make_settings, litellm, clock):
    """A key for the proxy is not a key for OpenAI's embedding model: memory stays on."""
    from memora.app.assistant import Memora
    from memora.model.embeddings import LocalEmbedder

    settings = make_settings(base_url=litellm.base_url, api_key=litellm.api_key, model=litellm.model)
    app = Memora.from_settings(settings, clock=clock, notify=lambda m: None)
    assert isinstance(app.embedder, LocalEmbedder)
    assert app.model.server.kind.key == "litellm"  # told by its GET /model/info


# -- a thinking model behind LiteLLM, a whole session with the default settings ------------------

THINKING_SESSION = [
    "Hi! I just moved to Tokyo for a new job at a design studio.",
    "My manager asked me to write emails in English every day.",
    "Can you check this sentence: I am working here since March.",
    "Why is it have been working and not am working?",
    "Yesterday I goed to a meeting with our clients from Sydney.",
    "Oh right, went. I always forget the irregular verbs.",
    "Next Friday I have a presentation about our new app.",
    "Could you help me start the presentation with a short story?",
    "My hobby is climbing, I go to a climbing gym on Sundays.",
    "How do I say that I am nervous without sounding unprofessional?",
    "I prefer short explanations with one example, please.",
    "What is the difference between make and do in emails?",
    "I made a mistake in the report and I must do an apology.",
    "Is it correct to write I look forward to hear from you?",
    "My sister lives in Osaka and she visits me next month.",
    "Can you give me three phrases for closing a meeting politely?",
    "I think my pronunciation of the th sound is not good.",
    "Please remind me to practise the presentation on Thursday.",
    "How should I answer when a client asks a question I cannot answer?",
    "Yesterday we have finished the first version of the app.",
    "Thanks, that makes sense. What should I practise tomorrow?",
    "See you tomorrow, I have to cook dinner now.",
]
THINKING_REPLIES = [
    f"Reply {n}: " + "Here is a clear explanation with an example sentence you can reuse at work. " * 5
    for n in range(1, len(THINKING_SESSION) + 1)
]
THINKING_FACTS = [
    ("The learner moved to Tokyo for a job at a design studio.", "identity"),
    ("The learner writes English emails at work every day.", "habit"),
    ("The learner has a presentation about a new app next Friday.", "schedule"),
    ("The learner goes to a climbing gym on Sundays.", "hobby"),
    ("The learner prefers short explanations with one example.", "preference"),
    ("The learner's sister lives in Osaka.", "identity"),
]


@pytest.mark.slow  # the LiteLLM proxy, and 22 turns of a model that thinks thousands of tokens each
def test_a_thinking_model_behind_litellm_answers_a_whole_session_with_the_default_settings(make_app, litellm):
    """A model that thinks 3,000 tokens before a summary or a structured answer and 4,000
    before a reply, and cannot be told not to, behind LiteLLM's bridge to a backend
    that behaves as Ollama's chat-completions source says: every turn is answered, the
    memories are stored, summaries fold older turns and every token is counted."""
    from helpers.litellm_proxy import MAX_OUTPUT_TOKENS

    backend = litellm.backend.think(chat=4000, summary=3000, structured=3000, obeys_none=False)
    backend.script(  # each reply to its line, however often it is asked
        "chat",
        *[lambda body: THINKING_REPLIES[THINKING_SESSION.index(_as_responses(body)["input"][0]["content"])]] * 60,
    )
    backend.script("extraction", *[extraction(fact(text, category)) for text, category in THINKING_FACTS])
    app = _through(make_app, litellm)  # the default settings otherwise
    text, code = _repl(app, THINKING_SESSION)

    assert code == 0 and text.rstrip().endswith("Goodbye!")
    for line, reply in zip(THINKING_SESSION, THINKING_REPLIES, strict=True):
        assert f"Memora: {reply.strip()}" in _after(text, line), line
    assert "Error" not in text and "Could not summarise" not in text and "does not fit" not in text
    assert "hmm" not in text and all("hmm" not in m["content"] for m in app.memory.messages)
    stored = sorted(r.content for r in app.store.list())
    readings = backend.of_kind("extraction")  # held short messages are read together: fewer calls than turns
    assert len(readings) >= 4 and stored == sorted(text for text, _ in THINKING_FACTS[: len(readings)])
    summaries = backend.of_kind("summary")
    assert summaries and app.memory.summary.startswith("Summary so far")
    usage = app.memory.usage
    counted = usage.chat + usage.summaries + usage.extraction + usage.grading
    assert counted == backend.generated  # every token the backend generated, cut attempts too
    chats = backend.chats
    assert all(c.body["max_tokens"] <= MAX_OUTPUT_TOKENS for c in chats)  # what LiteLLM's model info allows
    cut = [c for c in chats if c.body["max_tokens"] <= len(c.thought.split())]
    assert len(cut) <= 1  # only the first reply, before the model was seen to think
    print(
        f"\nFIGURES turns={len(THINKING_SESSION)} answered={sum(f'Memora: Reply {n}:' in text for n in range(1, 23))} "
        f"chat_requests={len(chats)} memories={len(stored)} summaries={len(summaries)} "
        f"extractions={len(readings)} counted={counted} generated={backend.generated} "
        f"chat={usage.chat} summaries_tokens={usage.summaries} extraction={usage.extraction}"
    )
