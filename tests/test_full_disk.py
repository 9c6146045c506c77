"""A disk that fills up, or turns read-only, during a session: every command that
writes says so in one line naming it ("the disk is full"), the REPL goes on,
and the exit says it once more for the session it could not save.

The disk is simulated at each layer the way it fails there (``helpers.stores.
disk_that_takes_no_writes``): file writes get ENOSPC, EDQUOT or EROFS at their
fsync or rename, and Chroma's writes raise the InternalError chromadb itself
raises on a full tmpfs ("(code: 13) database or disk is full"), which is
neither an OSError nor a sqlite3.Error.
"""

from __future__ import annotations

import json

import pytest
from helpers.stores import DISKS, disk_that_takes_no_writes

from memora.core.errors import MemoraError
from memora.teaching.ledger import NewMistake

pytestmark = pytest.mark.chroma  # Chroma's writes fail as a full disk makes them fail

GOED = NewMistake(
    original="Yesterday I goed to the market.",
    corrected="Yesterday I went to the market.",
    rule="go → went: irregular past tense",
    kind="grammar",
)

# name: the lines typed (``{id}`` a memory's id, ``{mistake}`` a mistake's, ``{file}`` an export, ``{deck}`` a deck)
COMMANDS = {
    "remember": ["remember I like coffee"],
    "memory edit": ["memory edit {id} The learner likes green tea."],
    "forget": ["forget {id}"],
    "forget all": ["forget all", "DELETE"],
    "profile level": ["profile level b2"],
    "profile goal": ["profile goal pass the IELTS exam"],
    "profile clear": ["profile clear", "yes"],
    "export": ["export {file}"],
    "import": ["import {backup}"],
    "review answer": ["review", "Yesterday I went to the market."],  # graded by the model
    "review export": ["review export {deck}"],
    "mistakes forget": ["mistakes forget {mistake}"],
    "reset": ["reset"],
    "chat": ["I went to the market yesterday."],
    "profile preference": ["profile preference short answers"],
    "reindex": ["reindex"],
}


@pytest.fixture
def learner(make_app, server, tmp_path, clock):
    app = make_app()
    memory = app.store.add("The learner likes tea.")
    mistake, _ = app.ledger.record(GOED)
    app.profiles.set_english_level("B1")
    backup = tmp_path / "backup.json"
    other = make_app(data_dir=tmp_path / "other")  # an export with something to add
    other.store.add("The learner plays the cello.")
    other.profiles.add_learning_goal("Read a novel in English")
    from memora.data.data_transfer import export_data

    export_data(other, backup)
    other.close()
    values = {"id": memory.id, "mistake": mistake.id, "file": tmp_path / "mine.json", "backup": backup}
    values["deck"] = tmp_path / "deck.apkg"
    return app, values


@pytest.mark.parametrize("disk", list(DISKS))
@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_disk_that_takes_no_writes_is_one_line_naming_it_in_every_command_and_at_exit(
    learner, run_repl, server, command, disk
):
    app, values = learner
    lines = [line.format(**values) for line in COMMANDS[command]]
    server.script("chat", "Good! Which market did you go to?")
    server.script("extraction", {"facts": [], "profile_changes": [], "corrections": [], "mistakes": []})

    with disk_that_takes_no_writes(app, disk) as says:
        t = run_repl(app, [*lines, "profile"])

    assert "Traceback" not in t.text and "Unexpected" not in t.text, t.text
    during = t.text.split(f"You: {lines[0]}\n", 1)[1].split("You: profile\n", 1)[0]
    told = [line for line in during.splitlines() if line.startswith(("Error:", "Note:"))]
    # One line naming the cause; 'forget all' saves the conversation (its unread messages
    # dropped) before it deletes, so two writes fail and each says so once.
    assert len(told) == (2 if command == "forget all" else 1), during
    assert all(says in line for line in told), during
    after = t.text.split("You: profile\n", 1)[1]
    assert "English level" in after and "B1" in after  # the REPL goes on, and nothing changed
    told = [line for line in after.splitlines() if says in line]
    assert len(told) == 1 and "session" in told[0], after  # the exit could not save the session either
    if command == "export":
        assert not values["file"].exists()
    if command == "import":
        assert "cello" not in json.dumps([r.content for r in app.store.list(include_superseded=True)])


# Commands whose write is the catalog's alone, and every other command's catalog write:
# SQLite reports the full disk itself ("database or disk is full", as its own error).
CATALOG_COMMANDS = {
    "memory cap": ["memory cap 50"],
    "memory cap off": ["memory cap off"],
    "remember": ["remember I like coffee"],
    "forget": ["forget {id}"],
    "memory edit": ["memory edit {id} The learner likes green tea."],
}


@pytest.mark.parametrize("command", list(CATALOG_COMMANDS))
def test_a_catalog_that_cannot_write_is_one_line_naming_a_full_disk(learner, run_repl, monkeypatch, command):
    import contextlib
    import sqlite3

    app, values = learner
    lines = [line.format(**values) for line in CATALOG_COMMANDS[command]]
    before = [r.content for r in app.store.list()]

    @contextlib.contextmanager
    def full():
        raise sqlite3.OperationalError("database or disk is full")
        yield  # pragma: no cover

    monkeypatch.setattr(app.store.catalog, "transaction", full)
    t = run_repl(app, [*lines, "profile"])
    monkeypatch.undo()

    assert "Traceback" not in t.text and "Unexpected" not in t.text, t.text
    during = t.text.split(f"You: {lines[0]}\n", 1)[1].split("You: profile\n", 1)[0]
    told = [line for line in during.splitlines() if line.startswith(("Error:", "Note:"))]
    assert len(told) == 1 and "the disk is full" in told[0], during
    assert [r.content for r in app.store.list()] == before
    assert app.store.memory_cap == app.store.default_memory_cap


def _sqlite_error(pragma: str, statement: str):
    """A real SQLite error: the database limited by ``pragma``, then ``statement`` run."""
    import sqlite3

    db = sqlite3.connect(":memory:", isolation_level=None)
    db.execute("CREATE TABLE t (x)")
    db.execute(pragma.format(pages=db.execute("PRAGMA page_count").fetchone()[0]))
    try:
        for _ in range(200):
            db.execute(statement, ("x" * 2000,))
    except sqlite3.Error as error:
        return error
    finally:
        db.close()
    raise AssertionError("the statement did not fail")


def _chained(make):
    """``make()``'s error as the cause of a Memora error that names it only in passing."""
    from memora.core.errors import StoreError

    try:
        try:
            raise make()
        except Exception as cause:
            raise StoreError("A write to the memory store failed; restart Memora.") from cause
    except StoreError as error:
        return error


def _internal(message):
    from chromadb.errors import InternalError

    return InternalError(message)


LAYERS = {
    "ENOSPC from a file write": (lambda: OSError(28, "No space left on device", "/data/x.json"), "full"),
    "EDQUOT from a file write": (lambda: OSError(122, "Disk quota exceeded"), "full"),
    "EROFS from a file write": (lambda: OSError(30, "Read-only file system"), "read-only"),
    "SQLite's own SQLITE_FULL": (
        lambda: _sqlite_error("PRAGMA max_page_count = {pages}", "INSERT INTO t VALUES (?)"),
        "full",
    ),
    "SQLite's own SQLITE_READONLY": (
        lambda: _sqlite_error("PRAGMA query_only = 1", "INSERT INTO t VALUES (?)"),
        "read-only",
    ),
    "Chroma's InternalError for a full database": (
        lambda: _internal(
            "Query error: Database error: error returned from database: (code: 13) database or disk is full"
        ),
        "full",
    ),
    "Chroma's InternalError from its index files": (
        lambda: _internal("Error persisting HNSW index: No space left on device (os error 28)"),
        "full",
    ),
    "Chroma's InternalError for a read-only database": (
        lambda: _internal("error returned from database: (code: 8) attempt to write a readonly database"),
        "read-only",
    ),
    "a full disk behind a Memora error": (lambda: _chained(lambda: OSError(28, "No space left on device")), "full"),
}


@pytest.mark.parametrize("layer", list(LAYERS), ids=lambda c: c.replace(" ", "-"))
def test_whichever_layer_reports_it_a_full_or_read_only_disk_is_named_in_one_line(layer):
    import chatbot

    make, kind = LAYERS[layer]
    error = make()
    says = DISKS[kind][2]
    if isinstance(error, MemoraError):  # its own line, with the cause added
        line = chatbot.with_disk_problem(error)
        assert line.startswith("A write to the memory store failed; restart Memora")
    else:
        line = chatbot.data_failure(error, "/data", "save")
        assert line.startswith(f"Memora cannot save its data in /data: {says}. ")
    assert says in line and "\n" not in line
