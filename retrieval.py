"""Hybrid, time-aware retrieval of long-term memories.

``retrieve_relevant_memories(store, query)`` runs, for one learner:

1. **dense**: the query embedding against the learner's Chroma collection
   (ids and cosine distances only; payloads come from the catalog);
2. **lexical**: BM25 over the learner's current memories in the SQLite FTS5
   catalog, with English stemming and CJK bigrams (``lexical.py``);
3. **fusion** into one relevance in [0, 1] (``fuse``);
4. **recency**: a mild multiplier with a configurable half-life, bounded so a
   strongly relevant old memory still beats a weakly relevant new one;
5. the **threshold** ``RETRIEVAL_MIN_SCORE`` on that calibrated final score.

Superseded memories never enter: the FTS index holds current memories only,
and dense hits are checked against the catalog's status.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import lexical
from records import MemoryRecord, MemorySearchResult
from timeutil import system_clock, to_aware


@dataclass(frozen=True)
class RankingParams:
    """Constants of the ranking (see README, "Retrieval", for how they were chosen)."""

    candidates: int = 40  # from each of the dense and lexical sides
    dense_weight: float = 0.7
    lexical_weight: float = 0.3
    # BM25 is unbounded; bm25 / (bm25 + saturation) maps it into [0, 1) so the
    # fused score means the same thing for every query (a calibrated score, not
    # a per-query min-max that would give the best junk hit 1.0).
    lexical_saturation: float = 6.0
    # Final = relevance * (1 - recency_weight + recency_weight * 0.5 ** (age / half_life)).
    # At most a 15% discount, so recency reorders near-ties and never buries
    # a clearly relevant old memory.
    recency_weight: float = 0.15
    half_life_days: float = 90.0


DEFAULT_PARAMS = RankingParams()


def recency_factor(created_at: datetime, now: datetime, params: RankingParams) -> float:
    age_days = max(0.0, (to_aware(now) - to_aware(created_at)).total_seconds() / 86400)
    decay = 0.5 ** (age_days / params.half_life_days) if params.half_life_days > 0 else 1.0
    return 1.0 - params.recency_weight + params.recency_weight * decay


def fuse(
    dense: list[tuple[str, float]],
    lexical_hits: list[tuple[str, float]],
    params: RankingParams = DEFAULT_PARAMS,
) -> dict[str, tuple[float, float, float]]:
    """``{id: (relevance, dense_similarity, lexical_score)}`` from both sides.

    ``dense`` holds cosine distances; ``lexical_hits`` raw BM25 scores.
    """
    dense_sim = {i: max(0.0, 1.0 - d) for i, d in dense}
    lex = {i: s / (s + params.lexical_saturation) for i, s in lexical_hits if s > 0}
    fused = {}
    for memory_id in set(dense_sim) | set(lex):
        d = dense_sim.get(memory_id, 0.0)
        l_score = lex.get(memory_id, 0.0)
        relevance = params.dense_weight * d + params.lexical_weight * l_score
        fused[memory_id] = (min(1.0, relevance), d, l_score)
    return fused


def rank(
    dense: list[tuple[str, float]],
    lexical_hits: list[tuple[str, float]],
    records: dict[str, MemoryRecord],
    *,
    now: datetime,
    params: RankingParams = DEFAULT_PARAMS,
) -> list[MemorySearchResult]:
    """Fuse, weight by recency and sort; only current memories of ``records`` survive."""
    results = []
    for memory_id, (relevance, d, l_score) in fuse(dense, lexical_hits, params).items():
        record = records.get(memory_id)
        if record is None or not record.is_current:
            continue
        factor = recency_factor(record.created_at, now, params)
        results.append(
            MemorySearchResult.from_record(
                record, round(relevance * factor, 6), dense_score=d, lexical_score=l_score, recency=factor
            )
        )
    results.sort(key=lambda r: (-r.score, r.id))
    return results


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
    from long_term_memory import RETRIEVAL_MIN_SCORE

    threshold = RETRIEVAL_MIN_SCORE if min_score is None else min_score
    if params is None:
        half_life = getattr(store, "recency_half_life_days", None)
        params = DEFAULT_PARAMS if not half_life else RankingParams(half_life_days=half_life)
    if not query or not query.strip() or store.count() == 0:
        return [], 0
    tokens = 0
    if vector is None:
        vector = store.embed([query])[0]
        tokens = store.last_embedding_tokens
    dense = store.dense_candidates(vector, params.candidates)
    query_terms = lexical.terms(query)
    lexical_hits = store.catalog.lexical_search(query_terms, params.candidates) if query_terms else []
    records = store.catalog.get_many([i for i, _ in dense] + [i for i, _ in lexical_hits])
    ranked = rank(dense, lexical_hits, records, now=now or getattr(store, "clock", system_clock)(), params=params)
    marked = [r if r.score >= threshold else _below(r) for r in ranked]
    if include_below_threshold:
        return marked[:n_results], tokens
    return [r for r in marked if r.passed][:n_results], tokens


def _below(result: MemorySearchResult) -> MemorySearchResult:
    from dataclasses import replace

    return replace(result, passed=False)


__all__ = ["RankingParams", "fuse", "rank", "recency_factor", "retrieve_relevant_memories"]
