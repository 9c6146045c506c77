"""Retrieval on the real local embedding model: what passes the threshold, and what does not."""

from __future__ import annotations

from dataclasses import replace
from datetime import date, datetime, timedelta

import pytest
from helpers.stores import add_many

from long_term_memory import RETRIEVAL_MIN_SCORE, LongTermMemoryStore
from memora.store.index import InMemoryVectors
from memora.store.retrieval import date_windows, retrieve_relevant_memories

MEMORIES = [
    "The learner's name is Ming.",
    "The learner works as a nurse in Taichung.",
    "The learner has an IELTS exam next Tuesday.",
    "The learner finds the present perfect confusing.",
    "The learner loves hiking on weekends.",
    "The learner practised airport check-in dialogues.",
    "The learner prefers short examples.",
    "The learner drinks coffee every morning.",
    "The learner is planning a trip to Osaka in December.",
    "The learner's sister lives in London.",
    "The learner wants to improve job interview answers.",
    "The learner has a cat called Mochi.",
]

RELATED = [
    ("What's my name?", 0),
    ("Can you help me prepare for my IELTS exam?", 2),
    ("I still don't get when to use the present perfect", 3),
    ("Let's practise the airport check-in again", 5),
    ("I'm going to Osaka soon, what phrases do I need?", 8),
    ("Can we practise interview questions?", 10),
    ("My sister called me from London yesterday", 9),
    ("I went hiking this weekend", 4),
    ("Tell me about my cat", 11),
]

UNRELATED = [
    "Let's start today's practice.",
    "Hello!",
    "How are you today?",
    "What does 'serendipity' mean?",
    "Give me five sentences about the weather.",
    "Thanks, that was helpful.",
    "Tell me a joke.",
    "Correct this: I go to school yesterday.",
]


@pytest.fixture(scope="module")
def store(tmp_path_factory, local_embedder):
    store = LongTermMemoryStore(
        tmp_path_factory.mktemp("db"), vectors=InMemoryVectors(), embedding_function=local_embedder
    )
    for text in MEMORIES:
        store.add(text)
    return store


@pytest.mark.parametrize("query, target", RELATED)
def test_a_message_about_a_memory_retrieves_it_first(store, query, target):
    results, _ = retrieve_relevant_memories(store, query)
    assert results and results[0].content == MEMORIES[target]
    assert results[0].score >= RETRIEVAL_MIN_SCORE


@pytest.mark.parametrize("query", UNRELATED)
def test_unrelated_messages_retrieve_nothing(store, query):
    results, _ = retrieve_relevant_memories(store, query)
    assert results == [], [(r.content, r.score) for r in results]


def test_scores_are_calibrated_in_zero_one_and_search_marks_the_threshold(store):
    results, _ = retrieve_relevant_memories(store, "airport check-in", n_results=12, include_below_threshold=True)
    assert all(0.0 <= r.score <= 1.0 for r in results)
    assert [r.passed for r in results] == [r.score >= RETRIEVAL_MIN_SCORE for r in results]
    assert results[0].passed and not results[-1].passed


def test_recency_reorders_near_ties_but_never_buries_a_strong_old_memory(tmp_path, local_embedder, clock):
    store = LongTermMemoryStore(
        tmp_path / "db", vectors=InMemoryVectors(), embedding_function=local_embedder, clock=clock
    )
    old_exact = store.add(
        "The learner's IELTS speaking exam is on 3 December.", created_at=clock() - timedelta(days=400)
    )
    store.add("The learner watched a movie.", created_at=clock() - timedelta(days=1))
    store.add("The learner had a speaking class today.", created_at=clock())
    results, _ = retrieve_relevant_memories(store, "When is my IELTS speaking exam?", min_score=0)
    assert results[0].id == old_exact.id
    assert results[0].recency < 1.0  # it was discounted, just not buried
    twin_old = store.add("The learner practised ordering food in English.", created_at=clock() - timedelta(days=300))
    twin_new = store.add("The learner practised ordering food in English at a restaurant.", created_at=clock())
    order = [r.id for r in retrieve_relevant_memories(store, "ordering food practice", min_score=0)[0]]
    assert order.index(twin_new.id) < order.index(twin_old.id)


def test_chinese_text_is_found_through_the_lexical_path(tmp_path, local_embedder):
    store = LongTermMemoryStore(tmp_path / "db", vectors=InMemoryVectors(), embedding_function=local_embedder)
    for text in ["我每天早上都喝咖啡", "我下週二有英文考試", "我的貓叫麻糬", "我想加強旅遊英文", "我住在台中"]:
        store.add(text)
    for query, expected in [
        ("咖啡", "我每天早上都喝咖啡"),
        ("英文考試是什麼時候", "我下週二有英文考試"),
        ("我的貓", "我的貓叫麻糬"),
        ("旅遊英文", "我想加強旅遊英文"),
    ]:
        results, _ = retrieve_relevant_memories(store, query)
        assert results and results[0].content == expected, (
            query,
            [(r.content, r.score, r.lexical_score) for r in results],
        )
        assert results[0].lexical_score > 0


NOW = datetime(2026, 11, 29, 10, 0)


@pytest.mark.parametrize(
    "query, expected",
    [
        ("What did I practise on 3 June 2026?", [("2026-06-03", "2026-06-03")]),
        ("What did I say on June 3rd, 2026?", [("2026-06-03", "2026-06-03")]),
        ("What happened on 2026-05-07?", [("2026-05-07", "2026-05-07")]),
        ("What did we do in October 2026?", [("2026-10-01", "2026-10-31")]),
        ("What did I tell you in May?", [("2026-05-01", "2026-05-31"), ("2027-05-01", "2027-05-31")]),
        ("What is on Dec 3?", [("2025-12-03", "2025-12-03"), ("2026-12-03", "2026-12-03")]),
        ("What did I say yesterday?", [("2026-11-28", "2026-11-28")]),
        ("我2026年10月說了什麼", [("2026-10-01", "2026-10-31")]),
        ("12月3日有什麼", [("2025-12-03", "2025-12-03"), ("2026-12-03", "2026-12-03")]),
        ("May I ask you something?", []),
        ("I practised 3 times this week", []),
    ],
)
def test_a_query_names_the_periods_a_reader_would_see_in_it(query, expected):
    spans = date_windows(query, NOW.astimezone())
    assert [(first.isoformat(), last.isoformat()) for first, last in spans] == expected


@pytest.fixture(scope="module")
def dated_store(tmp_path_factory, local_embedder):
    now = NOW.astimezone()
    store = LongTermMemoryStore(
        tmp_path_factory.mktemp("dated"),
        vectors=InMemoryVectors(),
        embedding_function=local_embedder,
        clock=lambda: now,
    )
    add_many(
        store,
        [
            {
                "content": "The learner practised ordering coffee at a café.",
                "created_at": datetime(2026, 6, 3, 15).astimezone(),
                "memory_type": "episodic",
            },
            {
                "content": "The learner practised ordering dinner at a restaurant.",
                "created_at": datetime(2026, 6, 10, 15).astimezone(),
                "memory_type": "episodic",
            },
            {
                "content": "The learner practised booking a hotel room.",
                "created_at": datetime(2026, 11, 20, 15).astimezone(),
                "memory_type": "episodic",
            },
            {
                "content": "The learner's cat knocked over a plant.",
                "created_at": datetime(2026, 6, 3, 16).astimezone(),
                "memory_type": "episodic",
            },
            {
                "content": "The learner has an IELTS speaking exam.",
                "created_at": datetime(2026, 11, 1, 9).astimezone(),
                "event_date": date(2026, 12, 3),
                "category": "schedule",
            },
            {
                "content": "The learner has a dentist appointment.",
                "created_at": datetime(2026, 11, 25, 9).astimezone(),
                "event_date": date(2026, 12, 9),
                "category": "schedule",
            },
        ],
    )
    return store


def _contents(store, query, **kwargs):
    return [r.content for r in retrieve_relevant_memories(store, query, n_results=6, **kwargs)[0]]


def test_a_named_date_puts_what_was_said_or_planned_then_first(dated_store):
    # Without the date, three practice memories are near ties; with it, that day's wins.
    assert (
        _contents(dated_store, "What did I practise on 3 June?", min_score=0)[0]
        == "The learner practised ordering coffee at a café."
    )
    assert (
        _contents(dated_store, "What did I practise on 10 June?", min_score=0)[0]
        == "The learner practised ordering dinner at a restaurant."
    )
    # A plan's own date counts, not only the day it was said.
    assert (
        _contents(dated_store, "What is happening on Dec 3?", min_score=0)[0]
        == "The learner has an IELTS speaking exam."
    )
    assert (
        _contents(dated_store, "What is happening on December 9?", min_score=0)[0]
        == "The learner has a dentist appointment."
    )


def test_a_named_date_reorders_but_never_lets_a_memory_past_the_threshold(dated_store):
    results, _ = retrieve_relevant_memories(
        dated_store, "What did I practise on 3 June?", n_results=6, include_below_threshold=True
    )
    cat = next(r for r in results if "cat" in r.content)
    assert not cat.passed and cat.score < RETRIEVAL_MIN_SCORE
    for query in ("What did I practise on 3 June?", "What is happening on Dec 3?", "What did I practise?"):
        shown, _ = retrieve_relevant_memories(dated_store, query, n_results=6)
        assert all(r.score >= RETRIEVAL_MIN_SCORE for r in shown), query
    assert "The learner's cat knocked over a plant." not in _contents(dated_store, "What did I practise on 3 June?")


def test_feedback_reorders_towards_the_first_result_but_keeps_each_score():
    from array import array

    from memora.store.retrieval import DEFAULT_PARAMS, rank

    def blob(*values):
        return array("f", values).tobytes()

    now = NOW.astimezone()
    ts = now.timestamp()
    vectors = {"first": blob(0.8, 0.6, 0.0), "kin": blob(0.3, 0.7, 0.0), "other": blob(0.42, 0.0, 0.9)}
    candidates = {memory_id: (ts, 0.0, False) for memory_id in vectors}
    plain = rank([1.0, 0.0, 0.0], [], candidates, vectors, now=now, params=replace(DEFAULT_PARAMS, feedback_weight=0))
    moved = rank([1.0, 0.0, 0.0], [], candidates, vectors, now=now)
    # "kin" says what the first result says; "other" is as close to the query alone.
    assert [r.id for r in plain] == ["first", "other", "kin"]
    assert [r.id for r in moved] == ["first", "kin", "other"]
    assert {r.id: r.score for r in moved} == {r.id: r.score for r in plain}


def test_a_named_period_adds_its_memories_as_candidates_only_while_it_holds_few(tmp_path):
    from memora.model.embeddings import HashEmbedder
    from memora.store.retrieval import window_bounds

    now = NOW.astimezone()
    store = LongTermMemoryStore(
        tmp_path / "db", vectors=InMemoryVectors(), embedding_function=HashEmbedder(), clock=lambda: now
    )
    june_3 = datetime(2026, 6, 3, 12).astimezone()
    add_many(
        store,
        [
            {"content": f"The learner practised dialogue {n}.", "created_at": june_3, "memory_type": "episodic"}
            for n in range(3)
        ]
        + [
            {
                "content": "The learner has a speaking test.",
                "created_at": datetime(2026, 5, 1).astimezone(),
                "event_date": date(2026, 6, 3),
            },
            {"content": "The learner practised another dialogue.", "created_at": datetime(2026, 6, 4, 12).astimezone()},
        ],
    )
    windows = window_bounds(date_windows("What happened on 3 June?", now), now)
    found, _ = store.catalog.search([], 30, windows=windows, window_limit=4).score()
    contents = {store.get(i).content for i in found}
    assert contents == {
        "The learner practised dialogue 0.",
        "The learner practised dialogue 1.",
        "The learner practised dialogue 2.",
        "The learner has a speaking test.",
    }
    assert all(dated for _, _, dated in found.values())
    assert store.catalog.search([], 30, windows=windows, window_limit=3).score()[0] == {}
