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
from memora.reading.jobs import SUBJECT_TERMS
from memora.reading.slots import slot_cues, slots_of
from memora.reading.writes import Candidate
from memora.store import lexical
from memora.store.index import MemoryIndex
from memora.store.retrieval import Ranked, rank

# What the decision (and the correction lookup) is shown: the union of
#  * dense neighbours within the store's related distance (up to 30),
#  * lexical neighbours on the fact's own words, BM25 over the catalog's FTS5
#    index (up to 30) -- "moved to Tokyo" finds every Tokyo memory,
#  * current memories of the same category (the 500 newest, so a fact said a
#    year ago is still among them; scoring 500 stored vectors takes a few
#    milliseconds off the response path) -- "moved to Tokyo" finds "lives in
#    Taipei", which shares no word with it and which dense neighbours about
#    Tokyo would crowd out,
#  * current memories the learner stored with ``remember`` (the 500 newest).
#    They carry no category of their own ("other"), so the category pool can
#    never find them, yet "remember I live in Taipei" is exactly the kind of
#    fact a later "moved to Tokyo" replaces; whatever the new fact's category,
#    they are candidates.
# Each source is ranked by retrieval's fused score and the four are taken in
# turn, best first, until DECISION_CANDIDATE_TOKENS are spent. A memory is sent
# as one numbered line (``listing``) but charged its line's tokens
# plus DECISION_MEMORY_CHARGE, so the budget bounds how many memories are
# listed as well as how long they are: about 36 short facts ("The learner
# lives in Taipei.", 8 tokens a line) or 27 of an extracted fact's usual length
# (20 tokens), which is what keeps the contradicted memory among them in a
# crowded store (tests/test_decision_candidates.py), for 300 to 550 tokens, paid
# only for facts that have related memories. A fixed count would either hide
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


def _by_source(
    ranked: list[Ranked], dense_ids: set[str], scored: dict[str, tuple], pools: list[list[str]]
) -> list[list[Ranked]]:
    """The ranked candidates of each source, best first: the dense search, the
    lexical one (those with a word in common), then each pool in turn."""
    pool_sets = [set(pool) for pool in pools]
    return [
        [r for r in ranked if r.id in dense_ids],
        [r for r in ranked if scored[r.id][1] > 0],
        *[[r for r in ranked if r.id in pool] for pool in pool_sets],
    ]


def listing(candidates: list[Candidate], days: set | None = None) -> str:
    """The candidates as a decision is sent them: one numbered line each, best
    first, ending with when it was said (to the minute on a new fact's day, so
    the model can tell which is newer). The model names a memory by its number,
    a token or two where an id took five, and the code maps it back."""
    days = days if days is not None else set()
    return "Memories:\n" + "\n".join(
        f"{n}. {c.shown}{when(c.record.created_at, days)}" for n, c in enumerate(candidates, 1)
    )


def shown(record: MemoryRecord, now: datetime) -> str:
    """A memory's text as the chat shows it: its relative time phrases resolved
    against when it was said ("next Friday" of a month ago is a day now past,
    not the new fact's next Friday), the learner's own words quoted as theirs.
    Nothing else of the record is sent: the decision compares meanings, and the
    prompt asks nothing of a memory's category or date."""
    return retrieved_text(record, now)


def related_memories(
    store: MemoryIndex, counter: TokenCounter, text: str, vector: list[float], category: str | None = None
) -> list[Candidate]:
    """The current memories a decision about ``text`` must see (see DECISION_CANDIDATE_TOKENS)."""
    dense = [(i, d) for i, d in store.dense_candidates(vector, DECISION_DENSE) if d <= store.related_distance]
    same_category, remembered, same_slot = _pools(store, text, category)
    words = [t for t in lexical.query_terms(text) if t not in SUBJECT_TERMS]
    scored, vectors = store.decision_candidates(
        words, DECISION_LEXICAL, [i for i, _ in dense] + same_category + remembered + same_slot
    )
    if not scored:
        return []
    dense_ids = {i for i, _ in dense}
    missing = [i for i in scored if i not in dense_ids and i not in vectors]
    vectors.update(store.stored_vectors(missing))
    now = store.clock()
    ranked = rank(vector, [(i, d) for i, d in dense if i in scored], scored, vectors, now=now)
    sources = _by_source(ranked, dense_ids, scored, [same_slot, same_category, remembered])
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
    # "works at Google" is what "a new job at a bakery" replaces (slots.py).
    slots = slots_of(text)
    same_slot = (
        [
            r.id
            for r in store.listed(limit=DECISION_SAME_CATEGORY)
            if any(slot_cues(slot).search(r.content) for slot in slots)
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
            line = shown(records[item.id], now)
            cost = counter.count(f"{len(chosen) + 1}. {line}\n") + DECISION_MEMORY_CHARGE
            if cost > budget:
                return chosen
            budget -= cost
            seen.add(item.id)
            chosen.append(Candidate(records[item.id], 1.0 - item.dense, line))
    return chosen
