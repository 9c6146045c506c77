"""The long-term store, against the embedded Chroma and against a real Chroma server."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from helpers.stores import chroma_collection

from long_term_memory import LongTermMemoryStore
from memora.core.errors import EmbeddingModelMismatch, MemoryFullError
from memora.model.embeddings import HashEmbedder
from memora.store.catalog import catalog_path
from memora.store.chroma_backend import collection_name


@pytest.fixture
def make_store(connection, tmp_path, clock):
    suffix = uuid.uuid4().hex[:6]  # the server outlives one test: keep learners apart

    def build(user="learner", **kwargs):
        kwargs.setdefault("embedding_function", HashEmbedder())
        return LongTermMemoryStore(
            tmp_path / "memora_db", user_id=f"{user}{suffix}", connection=connection, clock=clock, **kwargs
        )

    return build


def test_add_search_list_and_delete(make_store):
    store = make_store()
    first = store.add("The learner practised ordering coffee", memory_type="episodic", category="other")
    store.add("The learner's cat is called Mochi", category="identity")
    assert store.count() == 2
    [hit] = store.search("ordering coffee", n_results=1)
    assert hit.id == first.id and 0 < hit.score <= 1 and hit.memory_type == "episodic"
    assert {r.content for r in store.list()} == {
        "The learner practised ordering coffee",
        "The learner's cat is called Mochi",
    }
    assert store.delete(first.id) == [first.id]
    assert store.count() == 1 and store.search("ordering coffee", min_score=0.5) == []


def test_metadata_is_stored_in_chroma(make_store, clock):
    store = make_store()
    record = store.add(
        "The learner has a test on Friday",
        category="schedule",
        created_at=clock() - timedelta(days=2),
        metadata={"dia_id": "D1:3"},
    )
    got = chroma_collection(store).get(ids=[record.id], include=["metadatas"])["metadatas"][0]
    assert got["user_id"] == store.user_id and got["category"] == "schedule" and got["memory_type"] == "semantic"
    assert got["source"] == "command" and got["dia_id"] == "D1:3"
    assert got["created_at"].startswith("2026-11-27") and isinstance(got["created_at_ts"], float)


def test_duplicates_refresh_instead_of_storing_twice(make_store):
    store = make_store()
    first = store.add("I drink coffee every day")
    again = store.add("i drink coffee every day!")
    assert again.duplicate and again.id == first.id and store.count() == 1


def test_supersede_keeps_history_and_hides_the_old_fact(make_store):
    store = make_store()
    old = store.add("The learner drinks coffee every day")
    new = store.supersede(old.id, "The learner quit coffee", reason="contradiction")
    assert [r.id for r in store.history(new.id)] == [old.id, new.id]
    assert [r.id for r in store.search("coffee", min_score=0)] == [new.id]
    meta = chroma_collection(store).get(ids=[old.id], include=["metadatas"])["metadatas"][0]
    assert meta["status"] == "superseded" and meta["superseded_by"] == new.id and "valid_until" in meta


def test_cap_refuses_without_dropping(make_store):
    store = make_store(memory_cap=2)
    store.add("fact one")
    store.add("fact two")
    with pytest.raises(MemoryFullError):
        store.add("fact three")
    assert {r.content for r in store.list()} == {"fact one", "fact two"}


def test_learners_never_see_each_other(make_store):
    alice, bob = make_store("alice"), make_store("bob")
    alice.add("Alice's secret: she is afraid of spiders")
    bob.add("Bob loves spiders")
    assert [r.content for r in alice.search("spiders", min_score=0)] == ["Alice's secret: she is afraid of spiders"]
    assert [r.content for r in bob.list()] == ["Bob loves spiders"]
    assert chroma_collection(alice).name == collection_name(alice.user_id) != chroma_collection(bob).name


def test_a_store_refuses_another_embedding_model_until_reindexed(make_store):
    store = make_store()
    store.add("The learner lives in Tainan")
    reopened = LongTermMemoryStore(
        store.path, user_id=store.user_id, connection=store.connection, embedding_function=HashEmbedder(dim=128)
    )
    assert reopened.mismatch == "hash:v1-384"
    with pytest.raises(EmbeddingModelMismatch, match="reindex"):
        reopened.search("Tainan")
    assert reopened.reindex() == 1
    assert reopened.search("Tainan", min_score=0)[0].content == "The learner lives in Tainan"


def test_catalog_is_rebuilt_from_chroma(make_store, tmp_path):
    store = make_store()
    store.add("The learner plays the violin", category="hobby")
    store.catalog.close()
    catalog = catalog_path(store.path, store.user_id)
    for suffix in ("", "-wal", "-shm"):
        catalog.with_name(catalog.name + suffix).unlink(missing_ok=True)
    reopened = LongTermMemoryStore(
        store.path, user_id=store.user_id, connection=store.connection, embedding_function=HashEmbedder()
    )
    [record] = reopened.list()
    assert record.content == "The learner plays the violin" and record.category == "hobby"
    assert reopened.search("violin")[0].content == "The learner plays the violin"


def test_forget_all_empties_only_this_learner(make_store):
    alice, bob = make_store("alice"), make_store("bob")
    alice.add("a")
    bob.add("b")
    assert alice.delete_all() == 1
    assert alice.count() == 0 and bob.count() == 1


@pytest.mark.slow  # a child process, a kill or hundreds of turns
def test_chatbot_runs_against_a_chroma_server(chroma_server, tmp_path):
    import subprocess
    import sys
    from urllib.parse import urlparse

    from conftest import ROOT, child_env

    parsed = urlparse(chroma_server)
    home = tmp_path / "home"
    base = child_env(MEMORA_HOME=home, MEMORA_EMBEDDING_MODEL="hash", MEMORA_USER=f"srv{uuid.uuid4().hex[:6]}")

    def run(args, text, **env):
        return subprocess.run(
            [sys.executable, str(ROOT / "chatbot.py"), "--plain", *args],
            input=text,
            capture_output=True,
            text=True,
            env={**base, **env},
            cwd=ROOT,
            timeout=120,
        )

    first = run(["--chroma-url", chroma_server], "remember The learner sings in a choir\nstatus\nexit\n")
    assert first.returncode == 0, first.stderr
    assert chroma_server in first.stdout  # status names the store
    second = run([], "memories\nsearch choir\nexit\n", CHROMA_HOST=parsed.hostname, CHROMA_PORT=str(parsed.port))
    assert second.returncode == 0, second.stderr
    assert second.stdout.count("The learner sings in a choir") == 2
    assert not (home / "memora_db" / "chroma.sqlite3").exists()  # nothing was stored locally by Chroma

    unreachable = run(["--chroma-url", "http://127.0.0.1:9"], "exit\n")
    assert unreachable.returncode == 1
    assert (
        "Cannot reach the Chroma server at http://127.0.0.1:9" in unreachable.stderr
        and "Traceback" not in unreachable.stderr
    )


@pytest.mark.slow  # a child process, a kill or hundreds of turns
def test_two_machines_on_one_chroma_server_see_each_others_changes(chroma_server, tmp_path):
    """Each machine has its own local catalog; the revision stamp keeps them in step."""
    from memora.store.chroma_backend import ChromaConnection

    user = f"shared{uuid.uuid4().hex[:6]}"

    def machine(name):
        return LongTermMemoryStore(
            tmp_path / name / "memora_db",
            user_id=user,
            connection=ChromaConnection(url=chroma_server),
            embedding_function=HashEmbedder(),
        )

    laptop, desktop = machine("laptop"), machine("desktop")
    old = laptop.add("The learner lives in Tainan")
    assert [r.content for r in desktop.search("Tainan", min_score=0)] == ["The learner lives in Tainan"]
    laptop.delete(old.id)
    laptop.add("The learner lives in Taipei")
    assert [r.content for r in desktop.list()] == ["The learner lives in Taipei"]  # the listing, without a search first
    assert [r.content for r in desktop.search("lives", min_score=0)] == ["The learner lives in Taipei"]
    restarted = machine("desktop")
    assert [r.content for r in restarted.list()] == ["The learner lives in Taipei"]


OLDER_CATALOG = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE memories (rid INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, user_id TEXT NOT NULL, content TEXT NOT NULL,
                       status TEXT NOT NULL, created_ts REAL NOT NULL);
INSERT INTO meta VALUES ('schema_version', '4'), ('generation', '7');
INSERT INTO memories VALUES (1, 'stale0000001', 'default', 'A row only the old catalog had.', 'active', 0);
"""


@pytest.mark.parametrize("version", ["4", "1", None], ids=["version-4", "version-1", "no-version"])
def test_a_catalog_from_an_older_memora_is_rebuilt_from_chroma(tmp_path, clock, version):
    """The catalog is an index of Chroma: an older layout is replaced, and every memory,
    its history and lexical search come back from Chroma, with nothing the old file alone had."""
    import sqlite3

    from memora.store.catalog import SCHEMA_VERSION

    db = tmp_path / "memora_db"
    store = LongTermMemoryStore(db, embedding_function=HashEmbedder(), clock=clock)
    kept = store.add("The learner's sister lives in Lisbon.", category="family").record
    old = store.add("The learner drinks coffee every morning.", category="habit").record
    new = store.supersede(old.id, "The learner drinks green tea every morning.", reason="contradiction")
    store.catalog.close()
    path = catalog_path(db, "default")
    for suffix in ("-wal", "-shm"):
        path.with_name(path.name + suffix).unlink(missing_ok=True)
    path.unlink()
    with sqlite3.connect(path) as older:
        older.executescript(OLDER_CATALOG)
        if version is None:
            older.execute("DELETE FROM meta WHERE key = 'schema_version'")
        else:
            older.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (version,))
    older.close()

    reopened = LongTermMemoryStore(db, embedding_function=HashEmbedder(), clock=clock)
    assert reopened.catalog.get_meta("schema_version") == str(SCHEMA_VERSION)
    assert sorted(r.content for r in reopened.list()) == sorted([kept.content, new.content])
    assert reopened.get("stale0000001") is None
    assert [r.id for r in reopened.history(new.id)] == [old.id, new.id]
    assert reopened.get(old.id).status == "superseded"
    assert [r.id for r in reopened.search("Lisbon sister", min_score=0)][:1] == [kept.id]
    reopened.add("The learner plays badminton on Sundays.", category="hobby")
    assert reopened.count() == 3


def test_memories_shows_the_newest_page_and_the_way_to_the_rest(make_app, run_repl):
    from memora.cli.commands import MEMORIES_PAGE

    app = make_app()
    now = app.clock()
    for n in range(MEMORIES_PAGE + 3):  # oldest last: number 0 is the newest
        app.store.add(f"Cousin number {n} keeps parrot {n * 7919}.", created_at=now - timedelta(minutes=n), dedup=False)
    t = run_repl(app, ["memories", "memories --page 2", "memories --page 9"])
    first, _, rest = t.text.partition("You: memories --page 2")
    second, _, beyond = rest.partition("You: memories --page 9")
    assert "page 1; 'memories --page 2' for more" in first
    assert "Cousin number 0 " in first and f"Cousin number {MEMORIES_PAGE - 1} " in first
    assert f"Cousin number {MEMORIES_PAGE} " not in first
    assert "3 memories (cap 2000), page 2" in second and f"Cousin number {MEMORIES_PAGE + 2} " in second
    assert "Cousin number 0 " not in second and "Cousin" not in beyond
