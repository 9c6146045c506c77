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
5. the **threshold** ``RETRIEVAL_MIN_SCORE`` on that final score;
6. the **order** of what passes: the same fusion, with two additions that
   only reorder and never let a memory past the threshold:
   - ``date_boost`` (0.25) for memories said or dated in a period the query
     names ("what did I tell you on 3 June?", "in May 2023", "昨天"): a date
     says *when* to look, not *what* is relevant. Memories of that period
     join the candidates when it holds few enough;
   - one step of pseudo-relevance feedback: the candidates' cosines are taken
     again with the query moved towards the first result's vector (weight
     0.25, from the vectors the catalog holds; no second Chroma query), so
     memories that say the same thing in other words move up.

Superseded memories never enter: the FTS index holds current memories only,
and dense hits are checked against the catalog's status.
"""

from __future__ import annotations

import re
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from datetime import date, datetime, time, timedelta

from memora.core.records import MemorySearchResult
from memora.core.timeutil import MONTH_WORD as _MONTH_WORD
from memora.core.timeutil import month_number as _month_number
from memora.core.timeutil import to_aware
from memora.core.timeutil import zh_number as _zh_number
from memora.store import lexical
from memora.store.index import MemoryIndex

# Minimum calibrated final score for a memory to enter the
# context. It trades recall against prompt noise: a wrong memory costs tokens
# every turn and can mislead the tutor ("you said you love coffee" in a chat
# about tea); a missed one costs one personal touch, and the digest still
# carries the learner's core facts. Measured with the local model on a tutor's
# memories (tests/test_retrieval_local.py): messages that are about a memory
# score 0.29-0.61 for it, small talk and unrelated exercises top out at 0.17.
# 0.25 sits in that gap, closer to the unrelated side because a miss is the
# cheaper error here. On LoCoMo, 98% of the evidence found in the top 10
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
    # Order only: a memory from a period the query names ranks as if its score
    # were this much higher. LoCoMo recall@10 by boost (before feedback): 0 -> 0.682,
    # 0.1 -> 0.700, 0.25 -> 0.708, 1 -> 0.706: a plateau from 0.2 up, not a fit.
    # 0.25 keeps a clearly relevant undated memory (0.6) above a dated one that
    # barely relates (0.1), and puts "my exam" first for "what is on Dec 3?".
    date_boost: float = 0.25
    # Memories of a named period join the candidates when there are at most this
    # many: "on 3 June" then finds the day's records even when neither side does;
    # a whole busy year would only crowd the pool.
    date_candidates: int = 50
    # Order only: how far the query moves towards the first result's vector
    # before the candidates are re-ordered (Rocchio-style feedback, one result).
    # LoCoMo recall@10 by weight: 0 -> 0.709, 0.1 -> 0.710, 0.25 -> 0.718,
    # 0.5 -> 0.714; every conversation gains at 0.25 and at 0.5.
    feedback_weight: float = 0.25


DEFAULT_PARAMS = RankingParams()


def recency_factor(age_days, params: RankingParams = DEFAULT_PARAMS):
    """The share of its score a memory keeps at this age, in days (a number or an
    array): 1 when new, 1 - w/2 at one half-life, never below 1 - w.

    A memory dated in the future (a clock set back) counts as new, and a
    half-life of zero or less means no decay rather than a division by zero."""
    import numpy as np

    age = np.maximum(0.0, np.asarray(age_days, dtype=float))
    decay = 0.5 ** (age / params.half_life_days) if params.half_life_days > 0 else np.ones_like(age)
    factor = 1.0 - params.recency_weight + params.recency_weight * decay
    return float(factor) if factor.ndim == 0 else factor


def _unit(query: list[float], stored: dict[str, bytes]):
    """The query and the stored float32 vectors, each scaled to length 1."""
    import numpy as np

    q = np.asarray(query, dtype=np.float32)
    q = q / (np.linalg.norm(q) or 1.0)
    if not stored:
        return q, np.zeros((0, len(q)), dtype=np.float32)
    # One buffer for all rows: building them one by one cost more than the product.
    matrix = np.frombuffer(b"".join(stored.values()), dtype=np.float32).reshape(len(stored), -1)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return q, matrix / norms


_DAY = r"(\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"(\d{4})"
_DAY_MONTH_YEAR = re.compile(rf"\b{_DAY}\s+(?:of\s+)?{_MONTH_WORD}\.?,?\s+{_YEAR}\b")
_MONTH_DAY_YEAR = re.compile(rf"\b{_MONTH_WORD}\.?\s+{_DAY},?\s+{_YEAR}\b")
_MONTH_YEAR = re.compile(rf"\b{_MONTH_WORD}\.?,?\s+{_YEAR}\b")
_DAY_MONTH = re.compile(rf"\b{_DAY}\s+(?:of\s+)?{_MONTH_WORD}\b")
_MONTH_DAY = re.compile(rf"\b{_MONTH_WORD}\.?\s+{_DAY}\b")
# A month alone only after a preposition: "in May", never "may I ask".
_MONTH_ALONE = re.compile(rf"\b(?:in|during|of|since|last|this|next)\s+{_MONTH_WORD}\b")
_ISO = re.compile(r"\b(\d{4})-(\d{1,2})-(\d{1,2})\b")
_ZH_FULL = re.compile(
    r"(\d{4})\s*年\s*([0-9一二三四五六七八九十]{1,3})\s*月(?:\s*([0-9一二三四五六七八九十]{1,3})\s*[日號号])?"
)
_ZH_MONTH_DAY = re.compile(r"([0-9一二三四五六七八九十]{1,3})\s*月\s*([0-9一二三四五六七八九十]{1,3})\s*[日號号]")


def _month_span(year: int, month: int) -> tuple[date, date]:
    start = date(year, month, 1)
    return start, (date(year + month // 12, month % 12 + 1, 1) - timedelta(days=1))


def _near_years(today: date, make) -> list[tuple[date, date]]:
    """A date said without a year: its last and its next occurrence (the query
    may ask about what was said then, or about a plan for then)."""
    spans = []
    for year in (today.year - 1, today.year, today.year + 1):
        try:
            span = make(year)
        except ValueError:
            continue
        if span[1] >= today - timedelta(days=366) and span[0] <= today + timedelta(days=366):
            spans.append(span)
    past = [s for s in spans if s[0] <= today]
    future = [s for s in spans if s[0] > today]
    return past[-1:] + future[:1]


_Span = tuple[date, date]


def _one_day(year: int, month: int, day: int) -> _Span:
    return (date(year, month, day),) * 2


# Readers of one matched date: the spans it names (a date said without a year
# names its last and its next occurrence). ``today`` places those; an
# impossible date raises ValueError and names nothing.
def _iso_date(m: re.Match, today: date) -> list[_Span]:
    return [_one_day(int(m[1]), int(m[2]), int(m[3]))]


def _day_month_year(m: re.Match, today: date) -> list[_Span]:
    return [_one_day(int(m[3]), _month_number(m[2]), int(m[1]))]


def _month_day_year(m: re.Match, today: date) -> list[_Span]:
    return [_one_day(int(m[3]), _month_number(m[1]), int(m[2]))]


def _month_year(m: re.Match, today: date) -> list[_Span]:
    return [_month_span(int(m[2]), _month_number(m[1]))]


def _day_month(m: re.Match, today: date) -> list[_Span]:
    month, day = _month_number(m[2]), int(m[1])
    return _near_years(today, lambda year: _one_day(year, month, day))


def _month_day(m: re.Match, today: date) -> list[_Span]:
    month, day = _month_number(m[1]), int(m[2])
    return _near_years(today, lambda year: _one_day(year, month, day))


def _month_alone(m: re.Match, today: date) -> list[_Span]:
    month = _month_number(m[1])
    return _near_years(today, lambda year: _month_span(year, month))


def _zh_full(m: re.Match, today: date) -> list[_Span]:
    """2023年10月13日, or 2023年10月 for the whole month."""
    month, day = _zh_number(m[2]), _zh_number(m[3]) if m[3] else None
    if not month or not 1 <= month <= 12:
        return []
    return [_one_day(int(m[1]), month, day) if day else _month_span(int(m[1]), month)]


def _zh_month_day(m: re.Match, today: date) -> list[_Span]:
    month, day = _zh_number(m[1]), _zh_number(m[2])
    if not month or not day:
        return []
    return _near_years(today, lambda year: _one_day(year, month, day))


# (pattern, matched against the query as typed rather than lower-cased, reader).
# Most specific first: text a rule has matched is taken, so "13 October 2023" is
# one day and not also "13 October" of last and next year, or "October 2023".
_DATE_RULES = (
    (_ISO, False, _iso_date),
    (_DAY_MONTH_YEAR, False, _day_month_year),
    (_MONTH_DAY_YEAR, False, _month_day_year),
    (_MONTH_YEAR, False, _month_year),
    (_DAY_MONTH, False, _day_month),
    (_MONTH_DAY, False, _month_day),
    (_MONTH_ALONE, False, _month_alone),
    (_ZH_FULL, True, _zh_full),
    (_ZH_MONTH_DAY, True, _zh_month_day),
)


def _overlaps_taken(match: re.Match, taken: list[tuple[int, int]]) -> bool:
    return any(match.start() < end and start < match.end() for start, end in taken)


def date_windows(query: str, now: datetime) -> list[_Span]:
    """The periods a query names, as inclusive (first day, last day) pairs.

    Calendar dates in English and Chinese, with or without a year ("13 October
    2023", "Oct 13", "October 2023", "in May", "2023-10-13", "2023年10月",
    "12月3日"), and "yesterday" / "昨天". Anything vaguer is left to the text.
    """
    text = query.lower()
    today = to_aware(now).date()
    spans: list[_Span] = []
    taken: list[tuple[int, int]] = []
    for pattern, as_typed, read in _DATE_RULES:
        for m in pattern.finditer(query if as_typed else text):
            if _overlaps_taken(m, taken):
                continue
            taken.append(m.span())
            try:
                spans += read(m, today)
            except ValueError:
                pass
    if re.search(r"\byesterday\b", text) or "昨天" in query:
        spans.append((today - timedelta(days=1),) * 2)
    # Years far outside a life's records are not dates anyone means (and would overflow timestamps).
    return list(dict.fromkeys(span for span in spans if 1900 <= span[0].year and span[1].year <= 2200))


def window_bounds(spans: list[tuple[date, date]], now: datetime) -> list[tuple[float, float, str, str]]:
    """Each period as (first timestamp, end timestamp, first ISO day, last ISO day),
    in the local time zone of ``now`` (memories are stamped in local time)."""
    zone = to_aware(now).tzinfo
    return [
        (
            datetime.combine(first, time.min, zone).timestamp(),
            datetime.combine(last + timedelta(days=1), time.min, zone).timestamp(),
            first.isoformat(),
            last.isoformat(),
        )
        for first, last in spans
    ]


@dataclass(frozen=True, slots=True)
class Ranked:
    id: str
    score: float
    dense: float
    lexical: float
    recency: float
    order: float  # what results are sorted by: the score, raised for a named date


def rank(
    query_vector: list[float],
    dense: list[tuple[str, float]],
    candidates: dict[str, tuple[float, float, bool]],
    vectors: dict[str, bytes],
    *,
    now: datetime,
    params: RankingParams = DEFAULT_PARAMS,
) -> list[Ranked]:
    """Fuse both sides into calibrated, recency-weighted scores, in result order.

    ``dense`` holds (id, cosine distance) from Chroma; ``candidates`` every
    current candidate with its (created timestamp, BM25 score, whether it falls
    in a period the query names); ``vectors`` the stored vectors of the
    candidates (any may be missing).
    """
    import numpy as np

    size = len(query_vector) * 4
    vectors = {memory_id: vector for memory_id, vector in vectors.items() if len(vector) == size}
    q, matrix = _unit(query_vector, vectors)
    row = {memory_id: index for index, memory_id in enumerate(vectors)}
    ids = list(candidates)
    known = np.array([memory_id in row for memory_id in ids], dtype=bool)
    rows = np.array([row.get(memory_id, 0) for memory_id in ids], dtype=np.intp)
    created, raw, dated = (
        (np.array(column, dtype=float) for column in zip(*candidates.values())) if ids else (np.zeros(0),) * 3
    )
    similarity = {memory_id: 1.0 - distance for memory_id, distance in dense}
    stored_cosine = matrix @ q if len(row) else np.zeros(0, dtype=np.float32)
    cosine = np.array(
        [similarity[i] if i in similarity else (float(stored_cosine[row[i]]) if i in row else 0.0) for i in ids],
        dtype=float,
    )
    lexical_score = np.where(raw > 0, raw / (raw + params.lexical_saturation), 0.0)
    factor = recency_factor((to_aware(now).timestamp() - created) / 86400, params)
    boost = np.where(dated > 0, params.date_boost, 0.0)

    def fuse(cosines):
        return (params.dense_weight * np.clip(cosines, 0.0, 1.0) + params.lexical_weight * lexical_score) * factor

    scores = fuse(cosine)
    orders = scores + boost
    if params.feedback_weight > 0 and ids:
        # Pseudo-relevance feedback: the query moves a little towards the first
        # result, so memories that say the same thing in other words move up.
        # The shown score keeps the query's own cosine.
        first = ids[int(np.lexsort((-scores, -orders))[0])]
        if first in row:
            moved = q + params.feedback_weight * matrix[row[first]]
            moved_cosine = matrix @ (moved / (np.linalg.norm(moved) or 1.0))
            orders = fuse(np.where(known, moved_cosine[rows] if len(row) else 0.0, cosine)) + boost
    ranked = [
        Ranked(memory_id, float(score), float(min(1.0, max(0.0, c))), float(lex), float(f), float(order))
        for memory_id, score, c, lex, f, order in zip(ids, scores, cosine, lexical_score, factor, orders)
    ]
    ranked.sort(key=lambda r: (-r.order, -r.score, candidates[r.id][0], r.id))
    return ranked


_worker: ThreadPoolExecutor | None = None
_worker_lock = threading.Lock()


def _dense_worker() -> ThreadPoolExecutor:
    """One long-lived thread for dense queries (starting a thread per query would
    cost more than the overlap saves)."""
    global _worker
    with _worker_lock:
        if _worker is None:
            _worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="memora-dense")
        return _worker


def retrieve_relevant_memories(
    store: MemoryIndex,
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
        half_life = store.recency_half_life_days
        params = DEFAULT_PARAMS if not half_life else replace(DEFAULT_PARAMS, half_life_days=half_life)
    if not query or not query.strip():
        return [], 0
    tokens = 0
    if vector is None:
        embedded = store.embed([query])
        vector, tokens = embedded.vectors[0], embedded.tokens
    now = now or store.clock()
    # Chroma answers the dense query in Rust without the GIL, so the lexical
    # search (terms, dates, FTS5) runs meanwhile; only the scoring needs both. No
    # explicit yield is needed for the worker to get there: the lexical search's
    # SQLite calls release the GIL, and so does the wait for the result below.
    pending = _dense_worker().submit(store.dense_candidates, vector, params.dense_candidates)
    try:
        windows = window_bounds(date_windows(query, now), now) if params.date_boost > 0 else []
        found = store.lexical_candidates(
            lexical.query_terms(query), params.lexical_candidates, windows=windows, window_limit=params.date_candidates
        )
    finally:
        dense = pending.result()
    candidates, vectors = found.score([i for i, _ in dense])
    ranked = rank(vector, dense, candidates, vectors, now=now, params=params)
    if not include_below_threshold:
        ranked = [r for r in ranked if r.score >= threshold]
    ranked = ranked[:n_results]
    records = store.get_many(r.id for r in ranked)
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


__all__ = ["Ranked", "RankingParams", "date_windows", "rank", "recency_factor", "retrieve_relevant_memories"]
