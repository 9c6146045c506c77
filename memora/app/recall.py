"""The parts of a turn before the request: opening the stores it reads, and what it recalls.

``Memora.chat`` calls these in order: ``recall`` (memories and knowledge notes
for the message, with the embedding tokens it spent) and ``compose`` (the
background the reply is built with). ``open_store`` and ``conversation_memory``
build what a session reads from, once, at its start.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, datetime

from context_builder import DIGEST_SECTIONS, MistakeNote, build_background_messages, build_user_digest
from long_term_memory import LongTermMemoryStore
from memora.app.knowledge import KnowledgeBase
from memora.app.proactive import pick_follow_up
from memora.core.config import Settings
from memora.core.errors import ConfigError
from memora.core.records import MemoryRecord, MemorySearchResult
from memora.model.embeddings import Embedder, embedder_for_store
from memora.model.prompts import SYSTEM_PROMPT
from memora.reading.jobs import PreparedExtraction
from memora.store.retrieval import retrieve_relevant_memories
from memora.teaching.ledger import LedgerStore, Mistake, correction_excerpt, fix_words, relevant
from memory import ContextBudget, ConversationMemory
from user_profile import UserProfileStore

MEMORIES_PER_TURN = 5
# A few mistakes in the background: enough to watch for the ones this message
# may repeat, few enough that the section stays short. Two, not three: each
# line quotes the learner's sentence twice (about 60 tokens), and the third cost
# 0.45% of the full-history baseline on bench/tokens_per_turn.py for a mistake
# that is, by construction, the least relevant to the message.
MISTAKES_PER_TURN = 2
# Due cards the tutor may practise in the conversation: a few, one at a time.
PRACTICE_TARGETS = 3
# What a plan is, from the event it names (tests/helpers/judgment_cases.py EXAMS): an exam
# the learner sits or an interview they attend. A word is not enough: a blood test or a
# test drive is no exam, and neither is a plan of someone else ("the learner's son has
# his driving test") or of the learner as interviewer ("is interviewing candidates").
_OWN = re.compile(r"^\s*(?:the learner|i)\b(?!')|^\s*學習者(?!的)", re.IGNORECASE)
_EVENT = re.compile(
    r"\b(?:exams?|tests?|midterms?|finals|ielts|toefl|toeic|gept|jlpt|cambridge)\b|考試|測驗|托福|雅思"
    r"|(?P<interview>\binterview\b|面試)",
    re.IGNORECASE,
)
# The words that make a "test" something else: what is tested, or "test" naming a drive.
_NOT_EXAM = re.compile(
    r"\b(?:blood|eye|vision|hearing|medical|covid|pcr|antigen|allergy|drug|dna|pregnancy|urine|skin|stress|taste|unit|crash|smog"
    r"|emissions?|beta|fitness)\W+(?:\w+\W+)?tests?\b|\btests? (?:drive|run|flight|kitchen)",
    re.IGNORECASE,
)


def plan_kind(record: MemoryRecord) -> str | None:
    """ "exam", "interview" or None: what a remembered plan (category "schedule") is for the learner."""
    if record.category != "schedule" or not _OWN.match(record.content) or _NOT_EXAM.search(record.content):
        return None
    event = _EVENT.search(record.content)
    return None if event is None else "interview" if event.group("interview") else "exam"


@dataclass
class Recalled:
    """What one message recalls, and the embedding tokens recalling it cost."""

    memories: list[MemorySearchResult] = field(default_factory=list)
    knowledge: list = field(default_factory=list)
    tokens: int = 0


def recall(store: LongTermMemoryStore, knowledge: KnowledgeBase, text: str, now: datetime) -> Recalled:
    """Memories and knowledge notes for ``text`` (one embedding serves both); raises
    the store's embedding errors, which the turn answers without memories."""
    embedded = store.embed([text])
    vector = embedded.vectors[0]
    memories, _ = retrieve_relevant_memories(store, text, n_results=MEMORIES_PER_TURN, vector=vector, now=now)
    return Recalled(memories, knowledge.search(vector), embedded.tokens)


def compose(
    recalled: Recalled,
    *,
    text: str,
    now: datetime,
    early: PreparedExtraction | None,
    store: LongTermMemoryStore,
    profiles: UserProfileStore,
    ledger: LedgerStore,
    counter,
    settings: Settings,
    role: str,
):
    """This turn's background: what a correction read early retracts is left out of it."""
    wrong = {r.record.id for r in early.retractions} if early else set()
    # The newest current facts of each category, more than the digest keeps of one.
    records = [r for key, _ in DIGEST_SECTIONS for r in store.listed(memory_type="semantic", category=key, limit=12)]
    digest = tuple(item for item in build_user_digest(records, counter=counter, now=now) if item.memory_id not in wrong)
    in_digest = {item.text for item in digest}
    memories = [m for m in recalled.memories if m.content not in in_digest and m.id not in wrong]  # said once is enough
    targets = practice_targets(ledger)
    mistakes = [MistakeNote("", fix_words(entry)[1], entry.rule, entry.count, True) for entry in targets]
    for entry in watched(ledger, text)[len(targets) :]:
        if e := entry.latest:
            mistakes.append(MistakeNote(*correction_excerpt(e.original, e.corrected), entry.rule, entry.count))
    return build_background_messages(
        profiles.get(),
        memories,
        digest=digest,
        hint=pick_follow_up(store.follow_up_candidates(now, settings.proactive_days), now, settings.proactive_days),
        knowledge=recalled.knowledge,
        now=now,
        changes=[r.record.content for r in early.retractions] if early else (),
        mistakes=mistakes,
        role=role,
    )


def practice_targets(ledger: LedgerStore) -> list[Mistake]:
    """Today's due cards the tutor gives the learner a chance to use, in the schedule's order:
    those a right use would pass (``ledger.passable``)."""
    return [m for m in ledger.due() if m.latest is not None and ledger.passable(m)][:PRACTICE_TARGETS]


def watched(ledger: LedgerStore, text: str) -> list[Mistake]:
    """The tracked mistakes the background shows for ``text`` (and the reading asks about):
    the practice targets, then the mistakes the message may repeat."""
    targets = practice_targets(ledger)
    return targets + [m for m in relevant(ledger.all(), text, MISTAKES_PER_TURN) if m not in targets]


def next_exam(store: LongTermMemoryStore | None, today: date) -> tuple[date, str] | None:
    """The learner's nearest remembered exam from today on: (its day, the memory's text).
    A dated plan that is an exam (``plan_kind``); an interview pulls no review forward.
    None before the store is open."""
    if store is None:
        return None
    exams = [
        (record.event_date, record.content)
        for record in store.list(category="schedule", dated_from=today)
        if record.event_date is not None and plan_kind(record) == "exam"
    ]
    return min(exams, default=None)


def practice_facts(store: LongTermMemoryStore) -> list[str]:
    """What a fresh practice sentence may be about: the learner's current facts
    about who they are, what they do and plan, newest first."""
    categories = ("identity", "schedule", "hobby", "habit", "preference")
    return [r.content for category in categories for r in store.list(category=category, limit=3)]


def conversation_memory(settings: Settings, counter, summarize) -> ConversationMemory:
    try:
        return ConversationMemory(
            counter=counter,
            instructions=SYSTEM_PROMPT,
            budget=ContextBudget(
                total=settings.token_budget,
                recent=settings.recent_tokens,
                summary=settings.summary_tokens,
                background=settings.background_tokens,
            ),
            summarizer=summarize,
        )
    except ValueError as error:  # checked up front, before any work
        raise ConfigError(
            f"Token budget settings do not fit together: {error} (see README, 'Configuration')."
        ) from None


def settle_embedding_model(
    store: LongTermMemoryStore, configured: Embedder, client_factory, counter, notify: Callable[[str], None]
) -> Embedder | None:
    """The store was built with another embedding model than the configured one.
    Its own model is kept when it can run here, so search goes on working, and
    'reindex' switches to the configured one; otherwise search is off and one
    line says what the store's model needs. Never a silent switch. Returns the
    store's own model when kept."""
    built_with = store.mismatch or ""  # called on a mismatch only
    kept, needs = embedder_for_store(built_with, client_factory=client_factory, counter=counter)
    if kept is None:
        notify(
            f"Your memories were embedded with {built_with}, which {needs}; memory search is off until then, "
            f"or until you type 'reindex' to re-embed them with {configured.name}."
        )
        return None
    store.use_embedder(kept)
    keep_for_good = built_with.partition(":")[2]
    notify(
        f"Your memories were embedded with {built_with}; Memora is set to {configured.name} now, and keeps "
        f"using {built_with} so memory search works: type 'reindex' to re-embed them with "
        f"{configured.name}, or set MEMORA_EMBEDDING_MODEL={keep_for_good} to keep it for good."
    )
    return kept


__all__ = [
    "MEMORIES_PER_TURN",
    "MISTAKES_PER_TURN",
    "Recalled",
    "compose",
    "conversation_memory",
    "next_exam",
    "practice_facts",
    "practice_targets",
    "recall",
    "settle_embedding_model",
    "watched",
]
