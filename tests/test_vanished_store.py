"""A vanished store is noticed (issue 18, point 6).

``chroma.sqlite3`` deleted or replaced (an empty store, another learner's or
another store's file, an older backup, a truncated or garbled file), or the
learner's collection deleted, locally or on a Chroma server, while the catalog
still lists the memories. The start says so in one line and asks to rebuild the
vectors from the catalog's text; only the next line answers; until the rebuild
nothing says there are no memories; mid-session a write names the cause and
'reindex' instead of "attempt to write a readonly database"; after the rebuild
search finds every memory again with its history, and nothing forgotten, and
nothing of another store, comes back.
"""

from __future__ import annotations

import os
import re
import shutil
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from helpers.stores import files_holding, own_word

from long_term_memory import LongTermMemoryStore
from memora.model.embeddings import HashEmbedder
from memora.reading.proposals import ProfileProposal
from memora.store.chroma_backend import ChromaConnection, collection_name

pytestmark = pytest.mark.chroma  # Chroma's file and collection vanish under the app

SISTER = "The learner's sister lives in Lisbon."
BAKERY = "The learner works at a bakery."
SCHOOL = "The learner works at a school."
CELLO = "The learner plays the cello every Sunday."
STRANGER = "The learner collects antique Brompton bicycles."  # another store's memory


@dataclass
class Scene:
    """One learner's data folder, and a folder beside it for other stores and copies."""

    db: Path
    spare: Path
    user: str
    url: str | None = None
    school_id: str = ""
    sister_id: str = ""
    code: str = field(default_factory=own_word)  # in the memory forgotten before the store vanishes

    @property
    def secret(self) -> str:
        return f"The learner's locker code is {self.code}."

    @property
    def chroma_file(self) -> Path:
        return self.db / "chroma.sqlite3"

    def fill(self, app) -> None:
        """Three current memories and one earlier version; a fourth forgotten after a backup."""
        store = app.store
        self.sister_id = store.add(SISTER, category="identity").id
        bakery = store.add(BAKERY, category="identity").record
        secret = store.add(self.secret).record
        if self.url is None:
            (self.spare / "backup").mkdir(parents=True)
            shutil.copyfile(self.chroma_file, self.spare / "backup" / "chroma.sqlite3")
        self.school_id = store.supersede(bakery.id, SCHOOL, reason="update").id
        store.delete(secret.id)
        store.add(CELLO, category="hobby")


def _other_store(folder: Path, user: str) -> Path:
    """The chroma.sqlite3 of another data folder, where ``user`` has a memory of their own."""
    store = LongTermMemoryStore(folder / "memora_db", user_id=user, embedding_function=HashEmbedder())
    store.add(STRANGER, category="hobby")
    store.catalog.close()
    store.connection.refresh()
    return folder / "memora_db" / "chroma.sqlite3"


def _empty_store(folder: Path) -> Path:
    connection = ChromaConnection(folder)
    connection.client()
    connection.refresh()
    return folder / "chroma.sqlite3"


def _put(source: Path, scene: Scene, *, new_file: bool) -> None:
    """Copy ``source`` over the store's file: as a new file (what ``mv`` or a restore
    tool does), or into the same one (what ``cp`` does)."""
    if new_file:
        staged = scene.db / "incoming.tmp"
        shutil.copyfile(source, staged)
        os.replace(staged, scene.chroma_file)
    else:
        shutil.copyfile(source, scene.chroma_file)


def _delete_collection(scene: Scene) -> None:
    other = ChromaConnection(url=scene.url) if scene.url else ChromaConnection(scene.db)
    other.client().delete_collection(collection_name(scene.user))


@dataclass(frozen=True)
class Kind:
    name: str
    vanish: Callable[[Scene], None]
    cause: str  # what the learner is told happened ({db}, {url}, {name} filled in)
    prepare: Callable[[Scene], None] = lambda scene: None
    server: bool = False


def _dangling_link(scene: Scene) -> None:
    scene.chroma_file.unlink()
    scene.chroma_file.symlink_to(scene.spare / "nowhere.sqlite3")


KINDS = [
    Kind("deleted", lambda s: s.chroma_file.unlink(), "chroma.sqlite3 in {db} was deleted"),
    Kind(
        "replaced by an empty store",
        lambda s: _put(s.spare / "empty" / "chroma.sqlite3", s, new_file=True),
        "chroma.sqlite3 in {db} has no collection {name}",
        prepare=lambda s: _empty_store(s.spare / "empty"),
    ),
    Kind(
        "emptied to zero bytes",
        lambda s: os.truncate(s.chroma_file, 0),
        "chroma.sqlite3 in {db} has no collection {name}",
    ),
    Kind(
        "replaced by another learner's store",
        lambda s: _put(s.spare / "bob" / "memora_db" / "chroma.sqlite3", s, new_file=True),
        "chroma.sqlite3 in {db} has no collection {name}",
        prepare=lambda s: _other_store(s.spare / "bob", "bob"),
    ),
    Kind(
        "overwritten by another store of the same learner",
        lambda s: _put(s.spare / "same" / "memora_db" / "chroma.sqlite3", s, new_file=False),
        "chroma.sqlite3 in {db} holds another store's memories",
        prepare=lambda s: _other_store(s.spare / "same", s.user),
    ),
    Kind(
        "an older backup restored",
        lambda s: _put(s.spare / "backup" / "chroma.sqlite3", s, new_file=True),
        "chroma.sqlite3 in {db} is an older copy of your store",
    ),
    Kind(
        "an older backup copied over it",
        lambda s: _put(s.spare / "backup" / "chroma.sqlite3", s, new_file=False),
        "chroma.sqlite3 in {db} is an older copy of your store",
    ),
    Kind("truncated", lambda s: os.truncate(s.chroma_file, 8192), "chroma.sqlite3 in {db} is damaged ("),
    Kind(
        "overwritten with garbage",
        lambda s: s.chroma_file.write_bytes(b"\x00not a database at all\x00" * 4096),
        "chroma.sqlite3 in {db} is damaged (not a SQLite database); it was moved aside as chroma.sqlite3.corrupt-",
    ),
    Kind("collection deleted, file kept", _delete_collection, "chroma.sqlite3 in {db} has no collection {name}"),
    Kind("a link to nowhere in its place", _dangling_link, "chroma.sqlite3 in {db} was deleted"),
    Kind("moved away", lambda s: s.chroma_file.rename(s.spare / "moved.sqlite3"), "chroma.sqlite3 in {db} was deleted"),
    Kind(
        "collection deleted on the Chroma server",
        _delete_collection,
        "the Chroma server at {url} has no collection {name} (it was deleted)",
        server=True,
    ),
]


@pytest.fixture
def scene_for(request, make_settings, data_dir, tmp_path):
    def build(kind: Kind) -> tuple[Scene, object]:
        if kind.server:
            url = request.getfixturevalue("chroma_server")
            user = f"vanish{uuid.uuid4().hex[:6]}"  # the server outlives one test
            settings = make_settings(chroma_url=url, user=user)
        else:
            url, user = None, "default"
            settings = make_settings()
        scene = Scene(db=settings.db_dir, spare=tmp_path / "spare", user=user, url=url)
        scene.spare.mkdir()
        kind.prepare(scene)
        return scene, settings

    return build


def _stop(app) -> None:
    """End a session as quitting Memora would, and let go of its Chroma client."""
    app.close(timeout=5)
    app.connection.refresh()


def _cause(kind: Kind, scene: Scene) -> str:
    return kind.cause.format(db=scene.db, url=scene.url, name=collection_name(scene.user))


def _answers(transcript) -> list[tuple[str, str]]:
    """``[(line typed, what was printed after it)]``; the first pair is ("", the greeting)."""
    pieces = transcript.text.split("You: ")
    pairs = [("", pieces[0])]
    for piece in pieces[1:]:
        line, _, output = piece.partition("\n")
        pairs.append((line, output))
    return pairs


def _said_after(transcript, typed: str) -> str:
    return next(output for line, output in _answers(transcript) if line == typed)


QUESTION = re.compile(
    r"^Note: Your memories' vectors are missing: (?P<cause>.+)\. The catalog still lists your 3 memories "
    r"\(4 with earlier versions\)\. Rebuild the vectors from it now, re-embedding their text\? \(yes/no\)$",
    re.MULTILINE,
)


# Chroma's HNSW files are written from memory hnswlib leaves uninitialised, so their
# spare capacity can hold any bytes the process had on its heap: Memora zeroes it
# after every forget and at start (chroma_backend.zero_index_slack), so these files
# are checked like any other.
def _assert_no_copy_left(scene: Scene, data_dir: Path) -> None:
    """No file holds the forgotten text; no damaged copy or vector folder of the vanished file is left."""
    import sqlite3

    assert files_holding(data_dir, scene.code) == {}
    assert not list(scene.db.glob("*.corrupt-*"))
    with sqlite3.connect(scene.chroma_file) as db:
        segments = {row[0] for row in db.execute("SELECT id FROM segments")}
    folders = {p.name for p in scene.db.iterdir() if p.is_dir()}
    assert folders <= segments


def _assert_found_again_with_history(transcript, scene: Scene) -> None:
    for query, text in (("search cello Sunday", CELLO), ("search works school", SCHOOL), ("search sister", SISTER)):
        assert text in _said_after(transcript, query), query
    history = _said_after(transcript, f"history {scene.school_id}")
    assert BAKERY in history and SCHOOL in history
    everything = _said_after(transcript, "memories --all")
    assert "4 memories" in everything and all(t in everything for t in (SISTER, BAKERY, SCHOOL, CELLO))
    assert scene.secret not in transcript.text and STRANGER not in transcript.text


@pytest.mark.parametrize("kind", KINDS, ids=[k.name for k in KINDS])
def test_a_vanished_store_is_told_at_the_start_and_rebuilt_from_the_catalog_on_yes(
    kind, scene_for, make_app, run_repl, server, data_dir
):
    scene, settings = scene_for(kind)
    first = make_app(settings=settings)
    scene.fill(first)
    _stop(first)
    kind.vanish(scene)

    # A start whose question is not answered: it lapses, and nothing says "0 memories".
    app = make_app(settings=settings)
    t = run_repl(app, ["memories", "status", "search cello", "What do you know about me?", "yes"])
    greeting = _answers(t)[0][1]
    asked = QUESTION.findall(greeting)
    assert len(asked) == 1 and asked[0].startswith(_cause(kind, scene)), greeting
    assert [line for line in greeting.splitlines() if "vectors" in line] == [QUESTION.search(greeting).group(0)]
    assert not re.search(r"\b0 memor", t.text) and "0 current" not in t.text
    listed = _said_after(t, "memories")
    assert "3 memories" in listed and all(text in listed for text in (SISTER, SCHOOL, CELLO))
    assert "vectors are missing" in listed and "'reindex'" in listed
    status = _said_after(t, "status")
    assert "3 current, 4 with history" in status and "vectors missing: type 'reindex' to rebuild them" in status
    searched = _said_after(t, "search cello").strip()
    assert searched.startswith("Error: Your memories' vectors are missing: ") and "'reindex'" in searched
    assert len(searched.splitlines()) == 1
    asked_about_me = server.chats[0]
    assert SCHOOL in asked_about_me.background and CELLO in asked_about_me.background  # the digest, from the catalog
    assert asked_about_me.section("long_term_memories") is None
    assert server.chats[-1].last_user == "yes"  # a "yes" three lines later was chat, not an answer
    assert "Rebuilt" not in t.text
    _stop(app)

    # The next start asks again, naming the same cause; "yes" right after it rebuilds everything, history included.
    app = make_app(settings=settings)
    t = run_repl(
        app,
        [
            "yes",
            "search cello Sunday",
            "search works school",
            "search sister",
            f"history {scene.school_id}",
            "memories --all",
            f"search locker code {scene.code}",
        ],
    )
    again = QUESTION.findall(_answers(t)[0][1])
    assert len(again) == 1 and again[0].startswith(_cause(kind, scene))  # what happened, not what this start saw
    assert _said_after(t, "yes").strip() == (
        "Rebuilt the vectors of 4 memories from the catalog with hash:v1-384; memory search works again."
    )
    _assert_found_again_with_history(t, scene)
    assert "Error" not in t.text
    _stop(app)
    if scene.url is None:  # nothing forgotten is back on disk, even from an older copy that held it
        _assert_no_copy_left(scene, data_dir)

    # And the start after that is an ordinary one.
    app = make_app(settings=settings)
    t = run_repl(app, ["status"])
    assert "vectors" not in t.text and "3 current, 4 with history" in t.text


@pytest.mark.parametrize("kind", KINDS, ids=[k.name for k in KINDS])
def test_a_store_that_vanishes_mid_session_is_named_at_the_next_write_and_reindex_rebuilds_it(
    kind, scene_for, make_app, run_repl, data_dir
):
    scene, settings = scene_for(kind)
    app = make_app(settings=settings)
    scene.fill(app)
    t = run_repl(
        app,
        [
            "memories --category identity",
            lambda: kind.vanish(scene),
            "remember I practise scales before breakfast",
            "search cello",
            "memories",
            "status",
            "reindex",
            "search cello Sunday",
            "search works school",
            "search sister",
            f"history {scene.school_id}",
            "memories --all",
            "remember I have a cat named Miso",
        ],
    )
    said = _said_after(t, "remember I practise scales before breakfast").strip()
    assert len(said.splitlines()) == 1, said
    cause = _cause(kind, scene)
    assert said.startswith(f"Error: Your memories' vectors are missing: while Memora was running, {cause}")
    assert "Nothing can be searched or stored until you type 'reindex'" in said
    assert "readonly" not in t.text and "Unexpected" not in t.text
    assert _said_after(t, "search cello").strip().startswith("Error: Your memories' vectors are missing: ")
    listed = _said_after(t, "memories")
    assert "3 memories" in listed and "vectors are missing" in listed
    status = _said_after(t, "status")
    assert "3 current, 4 with history" in status and "vectors missing: type 'reindex' to rebuild them" in status
    assert _said_after(t, "reindex").startswith("Rebuilt the vectors of 4 memories from the catalog")
    _assert_found_again_with_history(t, scene)
    assert _said_after(t, "remember I have a cat named Miso").startswith("Remembered (")
    assert "scales" not in _said_after(t, "memories --all")  # refused, not half-stored
    if scene.url is None:
        _assert_no_copy_left(scene, data_dir)


def test_only_the_line_after_the_rebuild_question_answers_it_and_profile_questions_wait(
    make_app, make_settings, run_repl, tmp_path
):
    settings = make_settings()
    scene = Scene(db=settings.db_dir, spare=tmp_path / "spare", user="default")
    scene.spare.mkdir()
    first = make_app(settings=settings)
    scene.fill(first)
    first.profiles.set_english_level("B1")
    first.proposals.add(ProfileProposal.new("english_level", "set", "B2", "B1", "I'm B2 now"))
    _stop(first)
    scene.chroma_file.unlink()

    app = make_app(settings=settings)
    t = run_repl(app, ["no", "yes", "search sister"])
    greeting = _answers(t)[0][1]
    assert len(QUESTION.findall(greeting)) == 1 and "Update your profile level" not in greeting
    declined = _said_after(t, "no")
    assert declined.startswith("Okay, nothing was changed. Memory search stays off until you type 'reindex'")
    assert declined.strip().endswith("Update your profile level from B1 to B2? (yes/no)")  # asked only now
    assert _said_after(t, "yes").strip() == "Profile updated: English level is now B2."  # the question before it
    assert _said_after(t, "search sister").startswith("Error: Your memories' vectors are missing")
    _stop(app)

    # A profile question that a background reading asks after the rebuild question is the one "yes" answers.
    app = make_app(settings=settings)

    def a_reading_asks():
        app.proposals.add(ProfileProposal.new("english_level", "set", "C1", "B2", "I'm C1 now"))
        app.turn.ask_next_proposal()

    t = run_repl(app, [a_reading_asks, "yes", "search sister"])
    assert len(QUESTION.findall(_answers(t)[0][1])) == 1
    assert _said_after(t, "yes").strip() == "Profile updated: English level is now C1."
    assert _said_after(t, "search sister").startswith("Error: Your memories' vectors are missing")
    _stop(app)

    app = make_app(settings=settings)
    t = run_repl(app, ["yes", "search sister"])
    assert _said_after(t, "yes").startswith("Rebuilt the vectors of 4 memories")
    assert SISTER in _said_after(t, "search sister")


def test_only_a_vanished_store_is_offered_for_rebuild_never_a_deletion_or_another_machines_change(
    make_app, make_settings, run_repl, data_dir, chroma_server
):
    """The rule, beside what it must not catch: a ``forget all`` that a crash cut
    short after Chroma's collection was deleted is finished, not offered back; and
    a ``forget all`` made on another machine (same Chroma server) is followed."""
    settings = make_settings()
    scene = Scene(db=settings.db_dir, spare=data_dir.parent / "spare", user="default")
    scene.spare.mkdir()
    first = make_app(settings=settings)
    scene.fill(first)
    _stop(first)
    scene.chroma_file.unlink()
    app = make_app(settings=settings)
    assert len(QUESTION.findall(run_repl(app, []).text)) == 1  # vanished: asked
    _stop(app)

    # forget all, cut short between deleting the collection and the catalog's commit
    app = make_app(settings=settings)
    app.store.reindex()
    app.store.add(scene.secret)
    connection = app.store.connection
    real_delete = connection.delete_collection

    def delete_then_crash(name):
        real_delete(name)
        raise KeyboardInterrupt  # the process dies here, the catalog's transaction never commits

    connection.delete_collection = delete_then_crash
    with pytest.raises(KeyboardInterrupt):
        app.store.delete_all()
    del connection.delete_collection
    _stop(app)
    app = make_app(settings=settings)
    t = run_repl(app, ["memories --all"])
    assert "vectors" not in t.text and "0 memories" in _said_after(t, "memories --all")  # true: they were forgotten
    _stop(app)
    assert files_holding(data_dir, scene.code) == {}

    # another machine's forget all on a shared Chroma server
    user = f"shared{uuid.uuid4().hex[:6]}"

    def machine(name):
        return LongTermMemoryStore(
            data_dir.parent / name / "memora_db",
            user_id=user,
            connection=ChromaConnection(url=chroma_server),
            embedding_function=HashEmbedder(),
        )

    laptop, desktop = machine("laptop"), machine("desktop")
    laptop.add(SISTER)
    assert [r.content for r in desktop.list()] == [SISTER]
    laptop.delete_all()
    assert desktop.list() == [] and desktop.vectors_missing is None
    vanished = machine("phone")
    vanished.add(CELLO)
    vanished.connection.client().delete_collection(collection_name(user))
    assert machine("phone").vectors_missing is not None  # the collection itself gone: that one is vanished


def test_a_memory_forgotten_while_the_vectors_are_missing_stays_forgotten_after_the_rebuild(
    make_app, make_settings, run_repl, tmp_path, data_dir
):
    """The catalog is the source: an older copy of the store that still holds a
    memory the learner forgets meanwhile does not bring it back."""
    settings = make_settings()
    scene = Scene(db=settings.db_dir, spare=tmp_path / "spare", user="default")
    scene.spare.mkdir()
    first = make_app(settings=settings)
    scene.fill(first)
    _stop(first)
    _put(scene.spare / "backup" / "chroma.sqlite3", scene, new_file=True)  # it holds the sister, and the secret

    app = make_app(settings=settings)
    t = run_repl(app, ["no", f"forget {scene.sister_id}", "memories"])
    assert _said_after(t, f"forget {scene.sister_id}").startswith(f"Forgot {scene.sister_id}")
    assert "2 memories" in _said_after(t, "memories") and SISTER not in _said_after(t, "memories")
    _stop(app)

    app = make_app(settings=settings)
    t = run_repl(app, ["yes", "search sister Lisbon", "search works school", "memories --all"])
    greeting = _answers(t)[0][1]
    assert "The catalog still lists your 2 memories (3 with earlier versions)" in greeting
    assert _said_after(t, "yes").startswith("Rebuilt the vectors of 3 memories")
    assert SISTER not in t.text and SCHOOL in _said_after(t, "search works school")
    assert "3 memories" in _said_after(t, "memories --all")
    _stop(app)
    assert files_holding(data_dir, "Lisbon") == {}
