"""The memories a decision about a new fact is shown, and how they are listed.

The extractor finds them (``related_memories``) and sends them as numbered lines
(``listing``); the decision names a memory by its number, and ``writes`` maps it back.
"""

from __future__ import annotations

from datetime import datetime

from context_builder import retrieved_text
from memora.core.records import MemoryRecord
from memora.core.timeutil import to_aware
from memora.model.tokens import TokenCounter
from memora.reading.writes import Candidate
from memora.store import lexical
from memora.store.index import MemoryIndex
from memora.store.pairs import SLOTS, SUBJECT_TERMS, slots_of
from memora.store.retrieval import Ranked, rank

# What a decision (and the correction lookup) is shown, and why these pools and this
# budget (docs/memory.md, "The decision sees what the fact may replace"): dense and
# lexical neighbours, the same category, the ``remember``ed and the same slot, taken in
# turn until the budget is spent. Each memory costs its line's tokens plus a charge, so
# the budget bounds how many are listed as well as how long; a fixed count would hide
# the contradicted memory in a crowded store or pad the call in an empty one.
DECISION_CANDIDATE_TOKENS = 1200
DECISION_MEMORY_CHARGE = 24
DECISION_DENSE = 30
DECISION_LEXICAL = 30
DECISION_SAME_CATEGORY = 500


def day(moment: datetime | None):
    return to_aware(moment).astimezone().date() if moment is not None else None


def when(moment: datetime | None, days: set) -> str:
    """ " (2 Dec)", or " (2 Dec 10:00)" on one of ``days`` (a new fact's): when it was said."""
    if moment is None:
        return ""
    local = to_aware(moment).astimezone()
    label = f"{local.day} {local:%b}" + (f" {local:%H:%M}" if local.date() in days else "")
    return f" ({label})"


def listing(candidates: list[Candidate], days: set | None = None) -> str:
    """The candidates as a decision is sent them: one numbered line each, best
    first, ending with when it was said (to the minute on a new fact's day, so
    the model can tell which is newer). The model names a memory by its number,
    a token or two where an id took five, and the code maps it back."""
    days = days if days is not None else set()
    return "Memories:\n" + "\n".join(
        f"{n}. {c.shown}{when(c.record.created_at, days)}" for n, c in enumerate(candidates, 1)
    )


def related_memories(
    store: MemoryIndex, counter: TokenCounter, text: str, vector: list[float], category: str | None = None
) -> list[Candidate]:
    """The current memories a decision about ``text`` must see (see DECISION_CANDIDATE_TOKENS)."""
    dense = [(i, d) for i, d in store.dense_candidates(vector, DECISION_DENSE) if d <= store.related_distance]
    same_category, remembered, same_slot = _pools(store, text, category)
    words = [t for t in lexical.query_terms(text) if t not in SUBJECT_TERMS]
    found = store.lexical_candidates(words, DECISION_LEXICAL)
    scored, vectors = found.score([i for i, _ in dense] + same_category + remembered + same_slot)
    if not scored:
        return []
    dense_ids = {i for i, _ in dense}
    now = store.clock()
    ranked = rank(vector, [(i, d) for i, d in dense if i in scored], scored, vectors, now=now)
    # Each source's candidates, best first: dense, lexical (a word in common), then each pool.
    sources = [[r for r in ranked if r.id in dense_ids], [r for r in ranked if scored[r.id][1] > 0]]
    sources += [[r for r in ranked if r.id in pool] for pool in map(set, (same_slot, same_category, remembered))]
    records = store.get_many(r.id for r in ranked)
    return _in_turns(counter, sources, records, now)


def _pools(store: MemoryIndex, text: str, category: str | None) -> tuple[list[str], list[str], list[str]]:
    """Ids of the memories a decision sees whatever their distance: the same
    category, the ``remember``ed ones, and the same slot."""
    same_category = (
        [r.id for r in store.listed(category=category, limit=DECISION_SAME_CATEGORY)]
        if category and category != "other"  # "other" is a catch-all, not a shared subject
        else []
    )
    remembered = [r.id for r in store.listed(source="command", limit=DECISION_SAME_CATEGORY)]
    # Memories of the same slot (a job, a home), whatever their words, distance or category:
    # "works at Google" is what "a new job at a bakery" replaces (``pairs.SLOTS``).
    slots = slots_of(text)
    same_slot = (
        [
            r.id
            for r in store.listed(limit=DECISION_SAME_CATEGORY)
            if any(SLOTS[slot].search(r.content) for slot in slots)
        ]
        if slots
        else []
    )
    return same_category, remembered, same_slot


def _in_turns(
    counter: TokenCounter, sources: list[list[Ranked]], records: dict[str, MemoryRecord], now: datetime
) -> list[Candidate]:
    """The listed candidates, within DECISION_CANDIDATE_TOKENS. Each source's turn
    brings its best memory not yet listed: a pool whose best memories another
    source already listed must not lose its turns, or a small pool (one
    remembered fact) is crowded out by a large one."""
    chosen: list[Candidate] = []
    seen: set[str] = set()
    budget = DECISION_CANDIDATE_TOKENS
    queues = [iter(source) for source in sources]
    while queues and budget > 0:
        for pool in list(queues):
            item = next((r for r in pool if r.id not in seen and r.id in records and records[r.id].is_current), None)
            if item is None:
                queues.remove(pool)
                continue
            # As the chat shows it ("next Friday" of a month ago is a day now past), nothing else of it.
            line = retrieved_text(records[item.id], now)
            cost = counter.count(f"{len(chosen) + 1}. {line}\n") + DECISION_MEMORY_CHARGE
            if cost > budget:
                return chosen
            budget -= cost
            seen.add(item.id)
            chosen.append(Candidate(records[item.id], 1.0 - item.dense, line))
    return chosen
