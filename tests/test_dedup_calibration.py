"""Calibration of DUPLICATE_DISTANCE on the real local embedding model.

The rule must never call two *different* facts duplicates (that would lose one
forever); merging paraphrases is the bonus. The pairs below are the evidence
behind the value and the comment in long_term_memory.py.
"""

from __future__ import annotations

import math

import pytest

from long_term_memory import DUPLICATE_DISTANCE, LongTermMemoryStore, is_near_duplicate

PARAPHRASES = [
    ("I drink coffee every day", "I drink coffee daily"),
    ("The learner likes spicy food.", "The learner enjoys spicy food."),
    ("The learner's favourite food is sushi.", "Sushi is the learner's favourite food."),
    ("The learner has an IELTS exam next Tuesday.", "The learner's IELTS exam is next Tuesday."),
    ("The learner loves jazz.", "The learner really loves jazz music."),
    ("The learner works as a nurse.", "The learner is a nurse."),
    ("The learner wants to improve travel English.", "The learner wants to get better at travel English."),
    ("The learner's name is Ming.", "The learner is called Ming."),
    ("我每天都喝咖啡", "我每天喝咖啡"),
    ("我的名字是小明", "我叫小明"),
]

DIFFERENT_FACTS = [
    ("I drink coffee every day", "I drink tea every day"),
    ("I drink coffee every day", "I quit coffee last month"),
    ("The learner has an exam on Tuesday.", "The learner has an exam on Thursday."),
    ("The learner prefers studying in the morning.", "The learner prefers studying in the evening."),
    ("The learner likes spicy food.", "The learner dislikes spicy food."),
    ("The learner is good at grammar.", "The learner is bad at grammar."),
    ("The learner loves jazz.", "The learner hates jazz."),
    ("The learner likes British English.", "The learner likes American English."),
    ("The learner's name is Ming.", "The learner's name is Mei."),
    ("The learner is B1.", "The learner is B2."),
    ("The learner has a brother.", "The learner has a sister."),
    ("The learner's sister lives in London.", "The learner lives in London."),
    ("The learner is a beginner.", "The learner is advanced."),
    ("The learner has 2 cats.", "The learner has 3 cats."),
    ("我每天都喝咖啡", "我每天都喝茶"),
    ("我喜歡爵士樂", "我討厭爵士樂"),
    ("我的名字是小明", "我的名字是小美"),
    ("我下週二有期末考", "我下週四有期末考"),
    ("我住在台北", "我住在台南"),
]


def distance(embedder, a: str, b: str) -> float:
    va, vb = embedder.embed([a, b]).vectors
    dot = sum(x * y for x, y in zip(va, vb))
    return 1 - dot / (math.sqrt(sum(x * x for x in va)) * math.sqrt(sum(y * y for y in vb)))


def test_no_pair_of_different_facts_is_a_duplicate(local_embedder):
    for a, b in DIFFERENT_FACTS:
        d = distance(local_embedder, a, b)
        assert not is_near_duplicate(local_embedder.name, b, a, d), f"{a!r} / {b!r} at {d:.3f}"


def test_threshold_keeps_a_margin_below_the_closest_different_english_facts(local_embedder):
    """Among the pairs the specifics guard does not already separate, the closest
    different facts must still be clearly above the threshold."""
    from long_term_memory import _differs_in_specifics

    threshold = DUPLICATE_DISTANCE[local_embedder.name]
    unguarded = [(a, b) for a, b in DIFFERENT_FACTS if a.isascii() and not _differs_in_specifics(a, b)]
    closest = min(distance(local_embedder, a, b) for a, b in unguarded)
    assert threshold <= closest - 0.05, (threshold, closest)


def test_tight_english_paraphrases_are_merged(local_embedder):
    merged = [
        (a, b)
        for a, b in PARAPHRASES
        if is_near_duplicate(local_embedder.name, b, a, distance(local_embedder, a, b))
    ]
    english = [p for p in PARAPHRASES if p[0].isascii()]
    assert len(merged) >= len(english) // 2, merged
    assert all(a.isascii() for a, _ in merged), "CJK text is only merged on an exact match"


@pytest.mark.parametrize("first, second", DIFFERENT_FACTS[:4] + DIFFERENT_FACTS[-5:-3])
def test_store_keeps_both_different_facts(tmp_path, local_embedder, first, second):
    store = LongTermMemoryStore(tmp_path / "db", embedding_function=local_embedder)
    assert not store.add(first).duplicate
    assert not store.add(second).duplicate
    assert store.count() == 2


def test_store_merges_a_paraphrase_and_refreshes_last_seen(tmp_path, local_embedder):
    from datetime import datetime, timedelta

    times = iter([datetime(2026, 11, 1, 9).astimezone(), datetime(2026, 11, 20, 9).astimezone()])
    now = {"t": next(times)}
    store = LongTermMemoryStore(tmp_path / "db", embedding_function=local_embedder, clock=lambda: now["t"])
    original = store.add("I drink coffee every day")
    now["t"] = next(times)
    again = store.add("I drink coffee daily")
    assert again.duplicate and again.id == original.id
    assert store.count() == 1
    assert store.get(original.id).last_seen == now["t"]
    assert store.get(original.id).created_at == original.record.created_at
    assert again.record.last_seen - original.record.last_seen == timedelta(days=19)


def test_exact_repeats_merge_in_any_language(tmp_path, local_embedder):
    store = LongTermMemoryStore(tmp_path / "db", embedding_function=local_embedder)
    first = store.add("我每天都喝咖啡")
    assert store.add("  我每天都喝咖啡 ").duplicate
    assert store.add("我每天都喝茶").duplicate is False
    assert store.count() == 2 and store.get(first.id) is not None
