"""Hybrid, time-aware retrieval of long-term memories.

``retrieve_relevant_memories(store, query)`` runs, for one learner:

1. **dense**: the query embedding against the learner's Chroma collection
   (ids and cosine distances only; payloads come from the catalog);
2. **lexical**: BM25 (k1=1.2, b=0.3) over the learner's current memories,
   candidates found by SQLite FTS5, terms from ``lexical.py`` (Porter
   stemming, stop and question words dropped, CJK bigrams);
3. **fusion** over the union of both candidate lists. Lexical-only candidates
   get their true cosine from the vectors stored in the catalog (without it
   LoCoMo recall@10 drops 1.6 points). Each side is mapped to [0, 1] on an
   absolute scale (cosine similarity; BM25 with idf normalised to at most 1
   per term, saturated as bm25 / (bm25 + 0.85)),
   so the fused score means the same for every query: it is *calibrated*,
   which a per-query min-max would not be;
4. **recency**: score * (1 - w + w * 0.5 ** (age / half_life)) with w = 0.1:
   recent memories win near-ties, an old memory loses at most 10%, so a
   strongly relevant old memory is never pushed out by weak new ones;
5. the **threshold** ``RETRIEVAL_MIN_SCORE`` on that final score.

Superseded memories never enter: the FTS index holds current memories only,
and dense hits are checked against the catalog's status.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime

from memora.engine import lexical
from memora.engine.records import MemorySearchResult
from memora.engine.timeutil import system_clock, to_aware


# Minimum calibrated final score for a memory to enter the
# context. It trades recall against prompt noise: a wrong memory costs tokens
# every turn and can mislead the tutor ("you said you love coffee" in a chat
# about tea); a missed one costs one personal touch, and the digest still
# carries the learner's core facts. Measured with the local model on a tutor's
# memories (tests/test_retrieval_local.py): messages that are about a memory
# score 0.29-0.61 for it, small talk and unrelated exercises top out at 0.17.
# 0.25 sits in that gap, closer to the unrelated side because a miss is the
# cheaper error here. On LoCoMo, 100% of the evidence found in the top 10
# scores above it (bench/locomo_recall.py prints the table).
RETRIEVAL_MIN_SCORE = 0.25


@dataclass(frozen=True)
class RankingParams:
    """Constants of the ranking; README "Retrieval" shows how they were measured."""

    dense_candidates: int = 30  # LoCoMo: any pool from 20 to 200 gives the same recall
    lexical_candidates: int = 30
    dense_weight: float = 0.5
    lexical_weight: float = 0.5
    lexical_saturation: float = 0.85
    recency_weight: float = 0.1
    half_life_days: float = 180.0


DEFAULT_PARAMS = RankingParams()


def recency_factor(created_at: datetime, now: datetime, params: RankingParams) -> float:
    age_days = max(0.0, (to_aware(now) - to_aware(created_at)).total_seconds() / 86400)
    decay = 0.5 ** (age_days / params.half_life_days) if params.half_life_days > 0 else 1.0
    return 1.0 - params.recency_weight + params.recency_weight * decay


def cosines(query: list[float], stored: dict[str, bytes]) -> dict[str, float]:
    """Cosine similarity of the query with each stored float32 vector."""
    if not stored:
        return {}
    import numpy as np

    q = np.asarray(query, dtype=np.float32)
    ids = list(stored)
    matrix = np.stack([np.frombuffer(stored[i], dtype=np.float32) for i in ids])
    norms = np.linalg.norm(matrix, axis=1) * (np.linalg.norm(q) or 1.0)
    norms[norms == 0] = 1.0
    return dict(zip(ids, (matrix @ q / norms).tolist()))


@dataclass(frozen=True, slots=True)
class Ranked:
    id: str
    score: float
    dense: float
    lexical: float
    recency: float


def rank(
    query_vector: list[float],
    dense: list[tuple[str, float]],
    candidates: dict[str, tuple[float, float]],
    vectors: dict[str, bytes],
    *,
    now: datetime,
    params: RankingParams = DEFAULT_PARAMS,
) -> list[Ranked]:
    """Fuse both sides into calibrated, recency-weighted scores, best first.

    ``dense`` holds (id, cosine distance) from Chroma; ``candidates`` every
    current candidate with its (created timestamp, BM25 score); ``vectors``
    the stored vectors of candidates Chroma did not return.
    """
    similarity = {memory_id: 1.0 - distance for memory_id, distance in dense}
    similarity.update({i: s for i, s in cosines(query_vector, vectors).items() if i not in similarity})
    now_ts = to_aware(now).timestamp()
    ranked = []
    for memory_id, (created_ts, raw) in candidates.items():
        dense_score = min(1.0, max(0.0, similarity.get(memory_id, 0.0)))
        lexical_score = raw / (raw + params.lexical_saturation) if raw > 0 else 0.0
        relevance = params.dense_weight * dense_score + params.lexical_weight * lexical_score
        age_days = max(0.0, (now_ts - created_ts) / 86400)
        factor = 1.0 - params.recency_weight + params.recency_weight * 0.5 ** (age_days / params.half_life_days)
        ranked.append(Ranked(memory_id, relevance * factor, dense_score, lexical_score, factor))
    ranked.sort(key=lambda r: (-r.score, candidates[r.id][0], r.id))
    return ranked


def retrieve_relevant_memories(
    store,
    query: str,
    *,
    n_results: int = 5,
    min_score: float | None = None,
    now: datetime | None = None,
    params: RankingParams | None = None,
    include_below_threshold: bool = False,
    vector: list[float] | None = None,
) -> tuple[list[MemorySearchResult], int]:
    """The memories worth showing for ``query``, and the embedding tokens spent.

    ``min_score=None`` uses ``RETRIEVAL_MIN_SCORE``; ``0`` disables the
    threshold (benchmarks measure ranking that way). With
    ``include_below_threshold`` the results below it come back too, marked
    ``passed=False`` (the ``search`` command shows both). ``vector`` is the
    query's embedding when the caller already has it (no second embedding call).
    """
    threshold = RETRIEVAL_MIN_SCORE if min_score is None else min_score
    if params is None:
        half_life = getattr(store, "recency_half_life_days", None)
        params = DEFAULT_PARAMS if not half_life else replace(DEFAULT_PARAMS, half_life_days=half_life)
    if not query or not query.strip():
        return [], 0
    tokens = 0
    if vector is None:
        vector = store.embed([query])[0]
        tokens = store.last_embedding_tokens
    dense = store.dense_candidates(vector, params.dense_candidates)
    candidates, vectors = store.catalog.candidates(lexical.query_terms(query), params.lexical_candidates, [i for i, _ in dense])
    ranked = rank(vector, dense, candidates, vectors, now=now or getattr(store, "clock", system_clock)(), params=params)
    if not include_below_threshold:
        ranked = [r for r in ranked if r.score >= threshold]
    ranked = ranked[:n_results]
    records = store.catalog.get_many([r.id for r in ranked])
    results = [
        MemorySearchResult.from_record(
            records[r.id],
            round(r.score, 6),
            dense_score=round(r.dense, 6),
            lexical_score=round(r.lexical, 6),
            recency=round(r.recency, 6),
            passed=r.score >= threshold,
        )
        for r in ranked
        if r.id in records
    ]
    return results, tokens


__all__ = ["Ranked", "RankingParams", "rank", "recency_factor", "retrieve_relevant_memories"]
