"""The token budget holds for every request, over hundreds of turns."""

from __future__ import annotations

import json
import random

import pytest
from helpers.fake_openai import Error

from context_builder import build_background_messages
from memora.core.errors import ContextBudgetError
from memora.model.tokens import TokenCounter
from memory import ContextBudget, ConversationMemory
from user_profile import UserProfile


def counted(counter: TokenCounter, request) -> int:
    return counter.count_request(request.body.get("instructions", ""), request.input)


@pytest.mark.slow  # a child process, a kill or hundreds of turns
@pytest.mark.exact_tokens("o200k_base")
def test_200_turns_stay_within_the_budget_and_fold_into_a_summary(make_app, server):
    rng = random.Random(7)
    words = "airport hotel ticket luggage present perfect article phrase practise sentence meaning".split()
    replies = [" ".join(rng.choices(words, k=rng.randint(5, 120))) for _ in range(200)]
    server.script("chat", *replies)
    # OpenAI's path, where the background is its own message, so the wire is exactly what was budgeted
    # (elsewhere it rides with the instructions, one message's framing fewer: test_server_compat)
    app = make_app(token_budget=1500, recent_tokens=500, summary_tokens=150, background_tokens=300, as_openai=True)
    app.profiles.set_english_level("B1")
    app.profiles.add_learning_goal("travel English")
    for i in range(12):
        app.store.add(f"The learner practised {rng.choice(words)} vocabulary number {i}")
    counter = TokenCounter(app.settings.model)

    for turn in range(200):
        message = f"Turn {turn}: " + " ".join(rng.choices(words, k=rng.randint(3, 60)))
        app.chat(message, on_delta=lambda _: None)
        assert app.turn.last_prepared.total_tokens <= 1500

    chats = server.chats
    assert len(chats) == 200
    totals = [counted(counter, r) for r in chats]
    assert max(totals) <= 1500, max(totals)
    # the sections Memora reports add up to what was sent
    assert app.turn.last_prepared.total_tokens == totals[-1]
    summaries = server.of_kind("summary")
    assert summaries, "the history overflowed, so older turns must have been summarised"
    assert len(summaries) < 100, "folding happens in chunks, not on every turn"
    later = [r for r in chats[50:] if r.section("conversation_summary")]
    assert later, "the summary travels in the developer message"
    assert all(r.section("user_profile") for r in chats), "the profile is on every turn"
    # the current message is always the last input item, never dropped
    assert all(r.input[-1]["content"].startswith(f"Turn {i}:") for i, r in enumerate(chats))
    assert app.memory.usage.summaries > 0


def test_a_message_that_cannot_fit_is_refused_and_not_sent(make_app, server):
    app = make_app(token_budget=600, recent_tokens=200, summary_tokens=100, background_tokens=100)
    with pytest.raises(ContextBudgetError) as raised:
        app.chat("word " * 700, on_delta=lambda _: None)
    assert "Nothing was sent" in str(raised.value)
    assert server.chats == []
    assert app.memory.messages == []


def test_background_drops_memories_first_lowest_score_first_and_profile_last():
    counter = TokenCounter("gpt-4.1-mini")
    from datetime import datetime

    from memora.core.records import MemorySearchResult

    now = datetime(2026, 11, 29, 10).astimezone()
    memories = [
        MemorySearchResult(
            id=f"m{i}",
            content=f"memory number {i} " + "detail " * 15,
            score=s,
            created_at=now,
            memory_type="semantic",
            category="other",
        )
        for i, s in enumerate([0.9, 0.4, 0.7])
    ]
    profile = UserProfile(english_level="B2", learning_goals=["IELTS 7"], preferences=["short examples"])

    def kept_within(background: int):
        memory = ConversationMemory(
            counter=counter,
            instructions="Tutor.",
            budget=ContextBudget(total=2000, recent=500, summary=100, background=background),
        )
        memory.add_user_message("hi")
        prepared = memory.prepare_context(build_background_messages(profile, memories, now=now))
        assert prepared.background.profile == profile  # the profile is untouched while memories can go
        return [m.id for m in prepared.background.memories]

    clock_only = sum(counter.count_message(m) for m in build_background_messages(None, [], now=now).messages())

    def needs(kept) -> int:
        """The background cap that the profile with these memories just fits (the time line is outside it)."""
        shown = build_background_messages(profile, kept, now=now).messages()
        return sum(counter.count_message(m) for m in shown) - clock_only

    m0, m1, m2 = memories
    # room for all three, for two, for one: the lowest score goes first, then the next lowest
    assert kept_within(needs([m0, m1, m2])) == ["m0", "m2", "m1"]
    assert kept_within(needs([m0, m1, m2]) - 1) == ["m0", "m2"]
    assert kept_within(needs([m0, m2])) == ["m0", "m2"]
    assert kept_within(needs([m0, m2]) - 1) == ["m0"]
    assert kept_within(needs([m0])) == ["m0"]

    level_only = build_background_messages(UserProfile(english_level="B2"), [], now=now)
    # the level fits, nothing more does (the current-time line, like the summary, is outside the cap)
    room = sum(counter.count_message(m) for m in level_only.messages()) - clock_only + 3
    tight = ConversationMemory(
        counter=counter,
        instructions="Tutor.",
        budget=ContextBudget(total=2000, recent=500, summary=100, background=room),
    )
    tight.add_user_message("hi")
    squeezed = tight.prepare_context(build_background_messages(profile, memories, now=now))
    assert squeezed.background.memories == ()
    assert squeezed.background.profile == UserProfile(english_level="B2")  # the level is the very last to go


@pytest.mark.exact_tokens("o200k_base")  # the explanation's length is chosen against the real count
def test_a_fold_keeps_the_last_exchange_verbatim_when_it_is_longer_than_half_the_window():
    """A long explanation the learner is about to ask about is not folded into the summary."""
    counter = TokenCounter("gpt-4.1-mini")
    folded: list[list[dict]] = []

    def summarizer(previous, messages, max_tokens):
        folded.append(messages)
        return (previous + " " + " ".join(m["content"][:20] for m in messages)).strip(), 10

    budget = ContextBudget(total=3000, recent=400, summary=100, background=200)
    memory = ConversationMemory(counter=counter, instructions="Tutor.", budget=budget, summarizer=summarizer)
    explanation = "Here are three examples of the present perfect, each explained. " + "example detail " * 140
    assert budget.recent // 2 < counter.count_message({"role": "assistant", "content": explanation}) < budget.recent
    earlier = "A shorter answer about articles. " + "article " * 60
    for turn, reply in enumerate([earlier, earlier, explanation]):
        memory.add_user_message(f"question {turn}")
        prepared = memory.prepare_context(build_background_messages(None))
        memory.finish_turn(reply, prepared.context_messages, 0)
    memory.add_user_message("Can you explain the second example again?")
    prepared = memory.prepare_context(build_background_messages(None))
    assert folded, "the window overflowed, so older turns were folded"
    assert prepared.context_messages[-3:] == [
        {"role": "user", "content": "question 2"},
        {"role": "assistant", "content": explanation},
        {"role": "user", "content": "Can you explain the second example again?"},
    ]
    assert "question 0" in prepared.background.summary  # what came before it is in the summary
    assert prepared.sections["recent"] <= budget.recent


def test_summary_failure_keeps_the_full_window_when_it_fits(make_app, server):
    app = make_app(token_budget=3000, recent_tokens=200, summary_tokens=100, background_tokens=200)
    server.script("summary", Error(500, times=50))
    for i in range(6):
        app.chat(f"message {i} " + "long words here " * 10, on_delta=lambda _: None)
    # every turn went through, with the whole history, because it still fit
    assert len(server.chats) == 6
    assert server.chats[-1].background and server.chats[-1].conversation_roles == ["user", "assistant"] * 5 + ["user"]
    assert app.memory.summary == ""


def test_summary_failure_refuses_the_turn_when_the_window_no_longer_fits(make_app, server):
    app = make_app(token_budget=700, recent_tokens=150, summary_tokens=100, background_tokens=100)
    server.script("summary", Error(500, times=500))
    refused = None
    for i in range(30):
        try:
            app.chat(f"message {i} " + "long words here " * 8, on_delta=lambda _: None)
        except ContextBudgetError as error:
            refused = error
            break
    assert refused is not None
    assert "summary call failed" in str(refused) and "Nothing was sent" in str(refused)
    kept = len(app.memory.messages)
    assert kept >= 2  # nothing that was shown is lost
    assert all(counted(TokenCounter(app.settings.model), r) <= 700 for r in server.chats)


@pytest.mark.exact_tokens("o200k_base")
@pytest.mark.parametrize("style", ["all", "important", "off"])
def test_every_reading_opens_with_the_fixed_prefix_a_prompt_cache_serves(make_app, server, style):
    """OpenAI serves a prompt's first 1,024 tokens from its cache when they repeat, so every
    reading opens with its schema and instructions, that long, before anything that changes
    (the time, the profile, the message): a shorter prompt would pay for all of it each time."""
    app = make_app()
    app.profiles.set_correction_style(style)
    for message in ("I moved to Osaka last month.", "My sister works at a hospital there."):
        app.chat(message, on_delta=lambda _: None)
        app.worker.wait_idle(10)
    first, second = server.of_kind("extraction")
    fixed = [json.dumps(r.body["text"]["format"]["schema"]) + r.body["instructions"] for r in (first, second)]
    assert fixed[0] == fixed[1]
    assert TokenCounter(app.settings.model).count(fixed[0]) >= 1024
    assert [r.input[0]["content"].splitlines()[0][:11] for r in (first, second)] == ["Local time:"] * 2
    assert "My sister works at a hospital there." in second.input[0]["content"]
