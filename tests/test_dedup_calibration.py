"""Calibration of the duplicate rule (``is_near_duplicate``) on real embeddings.

The rule must never merge two facts that disagree (the new one would be lost
and the stale one kept current); merging a paraphrase only saves one decision
call. ``tests/fixtures/dedup_pairs.json`` holds the evidence: contradictions
of every kind and paraphrases, in English and Chinese.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from long_term_memory import LongTermMemoryStore
from memora.model.embeddings import HashEmbedder
from memora.store.index import InMemoryVectors
from memora.store.pairs import is_near_duplicate

FIXTURE = Path(__file__).parent / "fixtures" / "dedup_pairs.json"
PAIRS = json.loads(FIXTURE.read_text(encoding="utf-8"))["pairs"]
CONTRADICTIONS = [p for p in PAIRS if p["kind"] == "contradiction"]
PARAPHRASES = [p for p in PAIRS if p["kind"] == "paraphrase"]
MEMORY_DOC = Path(__file__).resolve().parent.parent / "docs" / "memory.md"


def distance(embedder, a: str, b: str) -> float:
    va, vb = embedder.embed([a, b]).vectors
    dot = sum(x * y for x, y in zip(va, vb))
    return 1 - dot / (math.sqrt(sum(x * x for x in va)) * math.sqrt(sum(y * y for y in vb)))


@pytest.fixture(params=["local", "hash"])
def embedder(request):
    return request.getfixturevalue("local_embedder") if request.param == "local" else HashEmbedder()


def merged_without_asking(embedder, pair) -> bool:
    """Either order: the new fact may be either text."""
    d = distance(embedder, pair["a"], pair["b"])
    return is_near_duplicate(embedder.name, pair["b"], pair["a"], d) or is_near_duplicate(
        embedder.name, pair["a"], pair["b"], d
    )


def test_the_fixture_covers_every_kind_in_both_languages():
    assert len(PAIRS) >= 120
    kinds = Counter((p["type"], p["lang"]) for p in CONTRADICTIONS)
    for kind in (
        "antonym",
        "direction",
        "comparative",
        "quantity",
        "negation",
        "relative",
        "place",
        "time",
        "frequency",
        "like_dislike",
    ):
        assert kinds[(kind, "en")] >= 4 and kinds[(kind, "zh")] >= 1, kind
    # what a be-form, an auxiliary, a modal or a sign changes
    for kind in ("voice", "tense", "modality", "sign"):
        assert kinds[(kind, "en")] >= 6 and kinds[(kind, "zh")] >= 2, kind
    styles = Counter((p["type"], p["lang"]) for p in PARAPHRASES)
    for style in ("reorder", "synonym", "added_detail"):
        assert styles[(style, "en")] >= 3 and styles[(style, "zh")] >= 2, style
    # the plainest contradiction, one word flipped, is among them
    texts = {(p["a"], p["b"]) for p in CONTRADICTIONS}
    assert ("The learner finds grammar easy.", "The learner finds grammar hard.") in texts
    assert ("The learner is left-handed.", "The learner is right-handed.") in texts
    assert ("The learner has an older brother.", "The learner has a younger brother.") in texts


def test_no_contradiction_is_merged_without_a_decision(embedder):
    merged = [(p["a"], p["b"]) for p in CONTRADICTIONS if merged_without_asking(embedder, p)]
    assert merged == []


def test_distance_alone_never_merges_differently_worded_facts():
    """Even at distance 0 (what a model may report for antonyms), words decide."""
    for name in ("local:all-MiniLM-L6-v2", "openai:text-embedding-3-small", "hash:v1-384", "some:future-model"):
        merged = [(p["a"], p["b"]) for p in CONTRADICTIONS if is_near_duplicate(name, p["b"], p["a"], 0.0)]
        assert merged == [], name
        synonyms = [p for p in PARAPHRASES if p["type"] in ("synonym", "added_detail")]
        assert not any(is_near_duplicate(name, p["b"], p["a"], 0.0) for p in synonyms), name


def test_the_distance_threshold_still_applies():
    pair = ("The learner's favourite food is sushi.", "Sushi is the learner's favourite food.")
    assert is_near_duplicate("local:all-MiniLM-L6-v2", pair[1], pair[0], 0.03)
    assert not is_near_duplicate("local:all-MiniLM-L6-v2", pair[1], pair[0], 0.3)


def test_reorderings_are_merged_in_english_and_chinese(embedder):
    reorders = [p for p in PARAPHRASES if p["type"] == "reorder"]
    assert {p["lang"] for p in reorders} == {"en", "zh"}
    missed = [(p["a"], p["b"]) for p in reorders if not merged_without_asking(embedder, p)]
    assert missed == []


def test_the_docs_state_the_paraphrase_cost_measured_with_the_local_model(local_embedder):
    asked = [p for p in PARAPHRASES if not merged_without_asking(local_embedder, p)]
    stated = re.search(r"(\d+) of the (\d+) paraphrases", MEMORY_DOC.read_text(encoding="utf-8"))
    assert stated, "docs/memory.md must state how many paraphrases still cost a decision call"
    assert (int(stated.group(1)), int(stated.group(2))) == (len(asked), len(PARAPHRASES))


# -- the store's own rule (``remember`` and extraction share it) -------------------------

ISSUE_PAIRS = [
    ("The learner finds grammar easy.", "The learner finds grammar hard."),
    ("The learner is left-handed.", "The learner is right-handed."),
    ("The learner has an older brother.", "The learner has a younger brother."),
    ("I drink coffee every day", "I drink tea every day"),
    ("我每天都喝咖啡", "我每天都喝茶"),
    ("我從台北搬到東京", "我從東京搬到台北"),
    ("The learner is bullied at school.", "The learner bullied at school."),
    ("The learner has been a nurse.", "The learner has a nurse."),
    ("The learner can swim.", "The learner could swim."),
    ("The learner's bank balance is -200 dollars.", "The learner's bank balance is 200 dollars."),
    ("It was \u221210 degrees in Harbin.", "It was 10 degrees in Harbin."),
    ("我是老師", "我老師"),
]


@pytest.mark.parametrize("first, second", ISSUE_PAIRS)
def test_store_keeps_both_facts_of_a_contradiction(tmp_path, local_embedder, first, second):
    store = LongTermMemoryStore(tmp_path / "db", vectors=InMemoryVectors(), embedding_function=local_embedder)
    assert not store.add(first).duplicate
    assert not store.add(second).duplicate
    assert sorted(r.content for r in store.list()) == sorted([first, second])


def test_store_merges_a_reordering_and_refreshes_last_seen(tmp_path, local_embedder):
    now = {"t": datetime(2026, 11, 1, 9).astimezone()}
    store = LongTermMemoryStore(
        tmp_path / "db", vectors=InMemoryVectors(), embedding_function=local_embedder, clock=lambda: now["t"]
    )
    original = store.add("I drink coffee every morning")
    now["t"] += timedelta(days=19)
    again = store.add("Every morning, I drink coffee.")
    assert again.duplicate and again.id == original.id
    assert store.count() == 1
    assert store.get(original.id).last_seen == now["t"]
    assert store.get(original.id).created_at == original.record.created_at


def test_chinese_is_merged_on_the_same_words_and_never_on_different_ones(tmp_path, local_embedder):
    store = LongTermMemoryStore(tmp_path / "db", vectors=InMemoryVectors(), embedding_function=local_embedder)
    first = store.add("壽司是我最喜歡的食物")
    assert store.add("  壽司是我最喜歡的食物 ").duplicate
    assert store.add("我最喜歡的食物是壽司").id == first.id  # a reordering: same words
    assert store.add("我最喜歡的食物是拉麵").duplicate is False
    assert store.add("我愛他").duplicate is False
    assert store.add("他愛我").duplicate is False
    assert store.count() == 4
