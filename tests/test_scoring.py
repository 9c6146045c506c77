"""The two pure parts of a memory's score: the lexical side's BM25 and the recency factor.

Exact values on a corpus small enough to check by hand, and the same numbers
from the catalog and from ``rank``, so the stores use the functions tested here.
"""

from __future__ import annotations

import math
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from memora.store import lexical
from memora.store.catalog import bm25, bm25_weights
from memora.store.index import InMemoryVectors
from memora.store.retrieval import DEFAULT_PARAMS, rank, recency_factor

# Three memories, as lexical terms: 7 terms, 7/3 on average.
GREEN_TEA = ["green", "tea", "green", "leav"]  # "green tea with green leaves"
COFFEE = ["coffe"]  # "coffee"
TEA_CAKE = ["tea", "cake"]  # "tea and cake"
FREQUENCIES = {"green": 1, "tea": 2, "coffe": 1, "leav": 1, "cake": 1}
AVERAGE = 7 / 3
# By hand, k1 = 1.2, b = 0.3, N = 3; idf = ln(1 + (N - n + .5) / (n + .5)) / ln(1 + (N + .5) / .5):
#   green (n=1): ln(8/3) / ln 8 = 0.471679...   tea (n=2): ln(1.6) / ln 8 = 0.226024...
#   GREEN_TEA: norm = 1.2 * (0.7 + 0.3 * 4 / (7/3)) = 1.457143
#              0.471679 * 2 * 2.2 / (2 + 1.457143) + 0.226024 * 2.2 / (1 + 1.457143) = 0.802689
#   TEA_CAKE:  norm = 1.2 * (0.7 + 0.3 * 2 / (7/3)) = 1.148571;  0.226024 * 2.2 / (1 + 1.148571) = 0.231434
GREEN_WEIGHT, TEA_WEIGHT = 0.4716791664, 0.2260239684
GREEN_TEA_SCORE, TEA_CAKE_SCORE = 0.8026892364, 0.2314341165


def test_bm25_gives_the_hand_computed_scores_on_a_tiny_corpus():
    weights = bm25_weights(["green", "tea"], FREQUENCIES, 3)
    assert weights == pytest.approx({"green": GREEN_WEIGHT, "tea": TEA_WEIGHT}, abs=1e-9)
    assert bm25(GREEN_TEA, weights, AVERAGE) == pytest.approx(GREEN_TEA_SCORE, abs=1e-9)
    assert bm25(TEA_CAKE, weights, AVERAGE) == pytest.approx(TEA_CAKE_SCORE, abs=1e-9)
    assert bm25(COFFEE, weights, AVERAGE) == 0.0


def test_bm25_weights_count_a_repeated_query_term_and_drop_unknown_ones():
    weights = bm25_weights(["green", "green", "tea", "milk", ""], {**FREQUENCIES, "milk": 0}, 3)
    assert weights == pytest.approx({"green": 2 * GREEN_WEIGHT, "tea": TEA_WEIGHT}, abs=1e-9)
    assert bm25(GREEN_TEA, {}, AVERAGE) == 0.0  # a query of unknown words scores nothing


def test_bm25_favours_the_shorter_memory_for_the_same_count_but_only_a_little():
    weights = bm25_weights(["tea"], FREQUENCIES, 3)
    padded = ["tea", "a", "b", "c", "d", "e"]
    short, long = bm25(["tea"], weights, AVERAGE), bm25(padded, weights, AVERAGE)
    # b = 0.3: a longer memory holds more facts, not padding, so it loses less than usual (b = 0.75).
    assert short > long > bm25(padded, weights, AVERAGE, b=0.75) > 0


def test_the_catalog_scores_its_memories_with_bm25(tmp_path):
    from long_term_memory import LongTermMemoryStore
    from memora.model.embeddings import HashEmbedder

    store = LongTermMemoryStore(tmp_path / "db", vectors=InMemoryVectors(), embedding_function=HashEmbedder())
    ids = {store.add(text).id: text for text in ("green tea with green leaves", "coffee", "tea and cake")}
    assert [lexical.terms(text) for text in ids.values()] == [GREEN_TEA, COFFEE, TEA_CAKE]
    hits = store.catalog.lexical_search(lexical.query_terms("green tea?"), 10)
    assert [(ids[i], round(score, 9)) for i, score in hits] == [
        ("green tea with green leaves", round(GREEN_TEA_SCORE, 9)),
        ("tea and cake", round(TEA_CAKE_SCORE, 9)),
    ]


@pytest.mark.parametrize(
    "age_days, expected",
    [(0, 1.0), (-30, 1.0), (180, 0.95), (360, 0.925), (1800, 0.9 + 0.1 * 0.5**10), (1e9, 0.9)],
)
def test_recency_keeps_all_of_a_new_score_and_at_least_ninety_percent_of_an_old_one(age_days, expected):
    assert recency_factor(age_days) == pytest.approx(expected, abs=1e-12)  # half-life 180 days, weight 0.1


def test_recency_of_many_ages_at_once_is_each_age_alone():
    import numpy as np

    ages = [0.0, 7.0, 180.0, 4000.0]
    assert list(recency_factor(np.array(ages))) == pytest.approx([recency_factor(a) for a in ages])


@pytest.mark.parametrize("half_life", [0.0, -5.0])
def test_a_half_life_of_zero_or_less_means_no_decay_not_a_crash(half_life):
    params = replace(DEFAULT_PARAMS, half_life_days=half_life)
    assert recency_factor(365.0, params) == 1.0


def test_rank_discounts_each_candidate_by_its_recency_factor():
    now = datetime(2026, 11, 1, tzinfo=UTC)
    ages = {"new": 0, "half": 180, "old": 720}
    candidates = {name: ((now - timedelta(days=days)).timestamp(), 1.0, False) for name, days in ages.items()}
    dense = [(name, 0.2) for name in ages]  # the same cosine (0.8) and BM25 for all three
    ranked = {r.id: r for r in rank([1.0, 0.0], dense, candidates, {}, now=now)}
    undiscounted = 0.5 * 0.8 + 0.5 * (1.0 / 1.85)
    for name, days in ages.items():
        assert ranked[name].recency == pytest.approx(recency_factor(days))
        assert ranked[name].score == pytest.approx(undiscounted * recency_factor(days))
    assert math.isclose(ranked["half"].recency, 0.95)
