"""Tutor knowledge notes: indexed, re-indexed on change, retrieved with their own threshold."""

from __future__ import annotations

import shutil

import pytest

from memora.app.knowledge import KNOWLEDGE_MIN_SIMILARITY, KnowledgeBase, split_note
from memora.core.config import KNOWLEDGE_DIR

ON_TOPIC = [
    ("How do I check in at the airport?", "travel-english.md", "Checking in at the airport"),
    ("When should I use the present perfect?", "grammar-tips.md", "Present perfect or simple past?"),
    ("Can you help me with IELTS speaking part 2?", "exam-tips.md", "IELTS Speaking Part 2"),
    ("How do I order food and ask for the bill?", "travel-english.md", "Ordering food and asking for the bill"),
    ("Is it borrow or lend?", "common-mistakes.md", "Borrow or lend?"),
]
OFF_TOPIC = [
    "I'm tired today",
    "Hello!",
    "Let's start today's practice.",
    "What's my name?",
    "Tell me a joke",
    "我們開始今天的練習吧",
]


def test_shipped_notes_split_into_titled_sections():
    for path in KNOWLEDGE_DIR.glob("*.md"):
        chunks = split_note(path, path.read_text(encoding="utf-8"))
        assert len(chunks) >= 5, path.name
        assert all(c.title and c.text and len(c.text) < 1500 for c in chunks)


class ByMeaningOnly:
    """Every stored text sits at cosine ``similarity`` from the query and shares no word with it."""

    name = "test:by-meaning-only"

    def __init__(self, query: str, similarity: float):
        self.query, self.similarity = query, similarity

    def embed(self, texts):
        from memora.model.embeddings import EmbeddingResult

        other = [self.similarity, (1 - self.similarity**2) ** 0.5, 0.0]
        return EmbeddingResult([[1.0, 0.0, 0.0] if t == self.query else other for t in texts])


@pytest.mark.parametrize(
    "similarity, note_found, memory_found", [(0.45, True, False), (0.35, False, False), (0.6, True, True)]
)
def test_knowledge_is_more_permissive_than_memories(tmp_path, clock, similarity, note_found, memory_found):
    """At the same similarity of meaning alone, a note enters the context where a memory does not."""
    from long_term_memory import LongTermMemoryStore
    from memora.store.chroma_backend import ChromaConnection
    from memora.store.retrieval import retrieve_relevant_memories

    query = "zzq"
    embedder = ByMeaningOnly(query, similarity)
    connection = ChromaConnection(tmp_path / "db")
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "airport.md").write_text(
        "# Travel\n\n## Checking in\n\nShow your passport at the desk.\n", encoding="utf-8"
    )
    base = KnowledgeBase(notes, connection, embedder)
    base.sync()
    store = LongTermMemoryStore(tmp_path / "db", embedding_function=embedder, connection=connection, clock=clock)
    store.add("The learner flies to Osaka in spring.")
    vector = embedder.embed([query]).vectors[0]
    found_notes = base.search(vector)
    memories, _ = retrieve_relevant_memories(store, query, vector=vector, now=clock())
    assert bool(found_notes) is note_found, found_notes
    assert bool(memories) is memory_found, memories


@pytest.fixture(scope="module")
def shipped(tmp_path_factory, local_embedder):
    from memora.store.chroma_backend import ChromaConnection

    base = KnowledgeBase(KNOWLEDGE_DIR, ChromaConnection(tmp_path_factory.mktemp("kb")), local_embedder)
    base.sync()
    return base


@pytest.mark.parametrize("question, source, title", ON_TOPIC)
def test_on_topic_questions_find_their_note(shipped, local_embedder, question, source, title):
    items = shipped.search(local_embedder.embed([question]).vectors[0])
    assert items, question
    assert items[0].source == source and items[0].title.startswith(title)
    assert items[0].score >= KNOWLEDGE_MIN_SIMILARITY


@pytest.mark.parametrize("message", OFF_TOPIC)
def test_small_talk_finds_no_note(shipped, local_embedder, message):
    assert shipped.search(local_embedder.embed([message]).vectors[0]) == []


def test_notes_are_reindexed_when_files_change(tmp_path, local_embedder):
    from memora.store.chroma_backend import ChromaConnection

    notes = tmp_path / "notes"
    shutil.copytree(KNOWLEDGE_DIR, notes)
    base = KnowledgeBase(notes, ChromaConnection(tmp_path / "db"), local_embedder)
    first = base.sync()
    assert first > 20
    assert base.sync() == 0  # nothing changed, nothing re-embedded
    (notes / "idioms.md").write_text(
        "# Idioms\n\n## Raining cats and dogs\n\nIt means it is raining very heavily.\n", encoding="utf-8"
    )
    (notes / "exam-tips.md").unlink()
    vector = local_embedder.embed(["What does raining cats and dogs mean?"]).vectors[0]
    items = base.search(vector)  # the change is picked up on the next search
    assert items and items[0].source == "idioms.md"
    ielts = base.search(
        local_embedder.embed(["Can you help me with IELTS speaking part 2?"]).vectors[0], min_similarity=0
    )
    assert ielts and all(i.source != "exam-tips.md" for i in ielts)  # other notes answer; the deleted one never


def test_a_turn_injects_notes_in_their_own_section_in_the_fixed_order(make_app, server, local_embedder):
    from datetime import timedelta

    app = make_app(embedder=local_embedder, knowledge_dir=KNOWLEDGE_DIR)
    app.profiles.set_english_level("B1")
    app.store.add("The learner's name is Ming.", category="name")
    app.store.add("The learner has a flight to Osaka.", category="schedule", created_at=app.clock() - timedelta(days=5))
    app.store.add("The learner practised airport check-in dialogues last week.", memory_type="episodic")
    app.chat("How do I check in at the airport for my flight?", on_delta=lambda _: None)
    developer = server.chats[-1].background
    order = [
        developer.index(f"<{tag}>")
        for tag in ("user_profile", "learner_digest", "follow_up", "knowledge_notes", "long_term_memories")
    ]
    assert order == sorted(order)
    assert "[travel-english.md › Checking in at the airport]" in server.chats[-1].section("knowledge_notes")
    app.chat("Tell me a joke", on_delta=lambda _: None)
    assert server.chats[-1].section("knowledge_notes") is None
