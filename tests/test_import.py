"""Import is all or nothing, truly, and imported text is cleaned like typed text.

Each failed import is compared with the state before it: every record read
through the store, Chroma's own records, the catalog's rows, the profile, the
pending changes and the session; then again after a restart, which rebuilds
the catalog from Chroma if the two disagree.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
from datetime import UTC
from pathlib import Path

import pytest
from helpers.stores import chroma_collection, chroma_wrapped

from memora.core.errors import EmbeddingError
from memora.core.text_utils import clean_text

pytestmark = pytest.mark.chroma  # an import is all or nothing in Chroma too, read back from Chroma


def memory(memory_id: str, content: str | None = None, **fields) -> dict:
    base = {
        "id": memory_id,
        "content": content or f"The learner imported fact {memory_id}",
        "created_at": "2026-11-01T10:00:00+00:00",
        "memory_type": "semantic",
        "category": "hobby",
        "source": "command",
        "status": "current",
    }
    base.update(fields)
    return base


def export(memories: list[dict], **fields) -> dict:
    data = {
        "format": "memora-export",
        "version": 1,
        "exported_at": "2026-11-02T10:00:00+00:00",
        "user": "default",
        "profile": {
            "english_level": "C1",
            "learning_goals": ["Write a novel in English"],
            "preferences": ["Short answers"],
        },
        "pending_profile_changes": [
            {
                "id": "p1",
                "field": "preference",
                "action": "remove",
                "value": "Short answers",
                "evidence": "I like long answers now",
                "created_at": "2026-11-02T09:00:00+00:00",
            }
        ],
        "memories": memories,
        "session": {
            "messages": [{"role": "user", "content": "hello"}, {"role": "assistant", "content": "Hi!"}],
            "summary": "",
        },
    }
    data.update(fields)
    return data


def many(n: int) -> list[dict]:
    return [memory(f"{i:08x}") for i in range(n)]


def state_of(app) -> dict:
    """Everything an import could change, read through the store and from the files."""
    records = [
        (
            r.id,
            r.content,
            r.memory_type,
            r.category,
            r.source,
            r.status,
            r.created_at,
            r.last_seen,
            r.valid_until,
            r.superseded_by,
            r.supersedes,
            r.change_reason,
            r.event_date,
            r.followed_up_at,
            sorted(r.metadata.items()),
        )
        for r in app.store.list(include_superseded=True, newest_first=False)
    ]
    page = chroma_collection(app.store).get(include=["documents", "metadatas"])
    chroma = sorted(
        (i, d, sorted((k, v) for k, v in m.items()))
        for i, d, m in zip(page["ids"], page["documents"], page["metadatas"])
    )
    with sqlite3.connect(app.store.catalog.path) as db:
        catalog = db.execute("SELECT * FROM memories ORDER BY id").fetchall()
        fts = db.execute("SELECT rowid, terms FROM memories_fts ORDER BY rowid").fetchall()
    return {
        "records": records,
        "chroma": chroma,
        "catalog": catalog,
        "fts": fts,
        "profile": app.profiles.get(),
        "proposals": app.proposals.pending(),
        "messages": app.memory.to_state()["messages"],
    }


@pytest.fixture
def learner(make_app):
    app = make_app()
    app.profiles.set_english_level("B1")
    app.profiles.add_learning_goal("IELTS 7")
    old = app.store.add("The learner lives in Tainan.", category="identity")
    app.store.supersede(old.id, "The learner lives in Taipei.", reason="contradiction")
    app.store.add("The learner practised small talk.", memory_type="episodic")
    return app


def write(tmp_path, data, name="backup.json") -> Path:
    path = tmp_path / name
    path.write_bytes(data if isinstance(data, bytes) else json.dumps(data).encode("utf-8"))
    return path


def loop_pair() -> list[dict]:
    return [
        memory(
            "aaaa0001",
            status="superseded",
            superseded_by="aaaa0002",
            supersedes="aaaa0002",
            valid_until="2026-11-01T11:00:00+00:00",
        ),
        memory(
            "aaaa0002",
            status="superseded",
            superseded_by="aaaa0001",
            supersedes="aaaa0001",
            valid_until="2026-11-01T11:00:00+00:00",
        ),
    ]


def duplicate_in_second_batch() -> list[dict]:
    records = many(1100)
    records[1050] = memory(records[3]["id"], "The learner has a second record with the same id")
    return records


BAD_FILES = {
    "a duplicate id in the second 1,000-record batch": lambda: export(duplicate_in_second_batch()),
    "200,000 nested levels": lambda: (
        b'{"format": "memora-export", "memories": ' + b"[" * 200_000 + b"]" * 200_000 + b"}"
    ),
    "40 nested levels inside a memory": lambda: export(
        [memory("aaaa0001", metadata={"x": json.loads("[" * 40 + "]" * 40)})]
    ),
    "a text that is a number": lambda: export([memory("aaaa0001", 12345)]),
    "a text over 1,000 characters": lambda: export([memory("aaaa0001", "practise " * 112)]),
    "a text that cleaning leaves empty": lambda: export([memory("aaaa0001", "\x1b\x07\u200b\u2028 \t")]),
    "an unknown category": lambda: export([memory("aaaa0001", category="pets")]),
    "an unknown source": lambda: export([memory("aaaa0001", source="telepathy")]),
    "an impossible date": lambda: export([memory("aaaa0001", created_at="2026-02-30T10:00:00")]),
    "a date given as a number": lambda: export([memory("aaaa0001", created_at=1_700_000_000)]),
    "a date in year 1": lambda: export([memory("aaaa0001", created_at="0001-01-01T00:00:00")]),
    "a successor missing from the file": lambda: export(
        [memory("aaaa0001", status="superseded", superseded_by="ffff0000", valid_until="2026-11-01T11:00:00+00:00")]
    ),
    "a current memory with a successor": lambda: export(
        [memory("aaaa0001", superseded_by="aaaa0002"), memory("aaaa0002", supersedes="aaaa0001")]
    ),
    "versions that form a loop": lambda: export(loop_pair()),
    "another learner's export": lambda: export(many(3), user="bob"),
    "a memory that names its learner": lambda: export([memory("aaaa0001", user_id="bob")]),
    "a reserved metadata key": lambda: export([memory("aaaa0001", metadata={"user_id": "bob"})]),
    "an id the commands cannot reach": lambda: export([memory("AB/../x")]),
    "bytes that are not UTF-8": lambda: (
        json.dumps(export(many(2))).encode("utf-8").replace(b"imported", b"import\xe9d", 1)
    ),
    "a key given twice": lambda: b'{"format": "memora-export", "format": "memora-export", "version": 1}',
    "NaN in the metadata": lambda: json.dumps(export([memory("aaaa0001", metadata={"score": float("nan")})])).encode(),
    "a profile goal over 200 characters": lambda: export(many(2), profile={"learning_goals": ["g" * 201]}),
    "a profile with 101 preferences": lambda: export(
        many(2), profile={"preferences": [f"Preference number {i}" for i in range(101)]}
    ),
    "an invalid pending change": lambda: export(
        many(2),
        pending_profile_changes=[
            {
                "id": "p",
                "field": "english_level",
                "action": "set",
                "value": "Z9",
                "created_at": "2026-11-02T09:00:00+00:00",
            }
        ],
    ),
    "a session message over 8,000 characters": lambda: export(
        many(2), session={"messages": [{"role": "user", "content": "x" * 8001}]}
    ),
    "not a Memora export at all": lambda: [{"note": "The learner plays the cello"}],
    "an unknown profile level": lambda: export(many(2), profile={"english_level": "Z9"}),
    "a profile level in lower case that is still unknown": lambda: export(many(2), profile={"english_level": "c3"}),
    "a profile level that is a number": lambda: export(many(2), profile={"english_level": 5}),
    "an empty profile level": lambda: export(many(2), profile={"english_level": ""}),
    "a metadata int over 64 bits": lambda: export([memory("aaaa0001", metadata={"n": 10**30})]),
    "a metadata int just over 64 bits": lambda: export([memory("aaaa0001", metadata={"n": 2**63})]),
    "a metadata int under 64 bits": lambda: export([memory("aaaa0001", metadata={"n": -(2**63) - 1})]),
    "an infinite metadata number": lambda: (
        json.dumps(export([memory("aaaa0001", metadata={"x": "INF"})])).replace('"INF"', "1e999").encode()
    ),
    "a negative infinite metadata number": lambda: (
        json.dumps(export([memory("aaaa0001", metadata={"x": "INF"})])).replace('"INF"', "-1e999").encode()
    ),
    "Infinity in the metadata": lambda: json.dumps(export([memory("aaaa0001", metadata={"x": float("inf")})])).encode(),
    "a superseded memory with no successor and no end date": lambda: export(
        [memory("aaaa0001", status="superseded"), *many(2)]
    ),
    "an end date before the memory was made": lambda: export(
        [memory("aaaa0001", status="superseded", valid_until="2026-10-01T10:00:00+00:00"), *many(2)]
    ),
    "a successor whose end date is before its own start": lambda: export(
        [
            memory("aaaa0001", status="superseded", superseded_by="aaaa0002", valid_until="2026-10-31T23:59:00+00:00"),
            memory("aaaa0002", supersedes="aaaa0001"),
        ]
    ),
}


@pytest.mark.parametrize("case", list(BAD_FILES), ids=lambda c: c.replace(" ", "-"))
def test_a_refused_import_leaves_everything_exactly_as_before(learner, make_app, run_repl, tmp_path, case):
    path = write(tmp_path, BAD_FILES[case]())
    before = state_of(learner)

    t = run_repl(learner, [f"import {path}"])

    errors = [line for line in t.text.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1, t.text
    assert "backup.json" in errors[0] and errors[0].endswith("Nothing was imported."), errors[0]
    assert "Unexpected" not in t.text
    assert state_of(learner) == before
    learner.close()
    assert state_of(make_app()) == before  # a restart brings nothing back from Chroma


def test_an_import_over_the_memory_cap_is_refused_whole(learner, run_repl, tmp_path):
    learner.store.set_memory_cap(4)
    before = state_of(learner)
    t = run_repl(learner, [f"import {write(tmp_path, export(many(3)))}"])
    assert "over your memory cap of 4" in t.text and "Nothing was imported." in t.text
    assert state_of(learner) == before


def test_an_oversize_file_is_refused_before_it_is_read(learner, run_repl, tmp_path):
    from memora.data import data_transfer

    path = tmp_path / "backup.json"
    most = data_transfer.import_limits(learner.store.memory_cap).bytes  # the limit follows the memory cap
    with open(path, "wb") as handle:  # sparse: the size is real, the disk is not used
        handle.truncate(most + 1)
    before = state_of(learner)
    t = run_repl(learner, [f"import {path}"])
    assert f"backup.json is {most + 1:,} bytes" in t.text and "Nothing was imported." in t.text
    assert state_of(learner) == before


class FailingSecondUpsert:
    """A Chroma collection whose second ``upsert`` call fails, as a disk or server error would."""

    def __init__(self, inner):
        self.inner = inner
        self.upserts = 0

    def upsert(self, **kwargs):
        self.upserts += 1
        if self.upserts == 2:
            from chromadb.errors import InternalError

            raise InternalError("injected failure in the second batch")
        return self.inner.upsert(**kwargs)

    def __getattr__(self, name):
        return getattr(self.inner, name)


class FailingSecondEmbedding:
    def __init__(self, inner):
        self.inner = inner
        self.name = inner.name
        self.calls = 0

    def embed(self, texts):
        self.calls += 1
        if self.calls == 2:
            raise EmbeddingError("The embedding model could not be reached (injected).")
        return self.inner.embed(texts)


def disk_full(*args, **kwargs):
    import errno

    raise OSError(errno.ENOSPC, "No space left on device")


@pytest.mark.parametrize("where", ["the second Chroma batch", "the second embedding batch", "the pending changes file"])
def test_an_import_that_fails_midway_is_undone(learner, make_app, run_repl, tmp_path, monkeypatch, where):
    path = write(tmp_path, export(many(1100)))
    before = state_of(learner)
    with contextlib.ExitStack() as faults:
        if where == "the second Chroma batch":
            wrapper = faults.enter_context(chroma_wrapped(learner.store, FailingSecondUpsert))
        elif where == "the second embedding batch":
            monkeypatch.setattr(learner.store, "embedder", FailingSecondEmbedding(learner.store.embedder))
        else:  # after the memories were committed and the profile merged
            monkeypatch.setattr(learner.proposals, "add", disk_full)

        t = run_repl(learner, [f"import {path}"])

        errors = [line for line in t.text.splitlines() if line.startswith("Error:")]
        assert len(errors) == 1 and errors[0].startswith("Error: Could not import backup.json: "), t.text
        assert errors[0].endswith("Nothing was imported.")
        if where == "the second Chroma batch":
            assert wrapper.upserts == 2  # the first 1,000 records had reached Chroma
        monkeypatch.undo()
    assert state_of(learner) == before
    learner.close()
    assert state_of(make_app()) == before


def test_the_same_file_imports_once_it_is_whole(learner, run_repl, tmp_path):
    records = duplicate_in_second_batch()
    records[1050]["id"] = "cccc1050"
    t = run_repl(learner, [f"import {write(tmp_path, export(records))}"])
    assert (
        "Imported 1100 memories (0 already here, kept as they are), profile merged, 1 pending profile change restored"
        in t.text
    )
    assert learner.store.count(include_superseded=True) == 1103


def test_imported_text_is_cleaned_like_typed_text(make_app, run_repl, tmp_path):
    hostile = "I like \x1b[31mred\x1b[0m music\x1b]0;owned\x07 and\u200b tea\r\nreally"
    data = export(
        [memory("aaaa0001", hostile, metadata={"note": "said \x1b[2Jloudly"})],
        profile={"learning_goals": ["Pass \x1b[5mIELTS\x1b[0m"], "preferences": []},
        session={
            "messages": [{"role": "user", "content": "line one\x1b[2J\nline two\x07"}],
            "summary": "\x1b]0;x\x07Talked.",
        },
        pending_profile_changes=[],
    )
    app = make_app()
    t = run_repl(app, [f"import {write(tmp_path, data)}"])
    assert "Imported 1 memory" in t.text
    typed = make_app(data_dir=tmp_path / "typed")
    typed.store.add(hostile)
    [imported] = app.store.list()
    assert imported.content == typed.store.list()[0].content
    for text in (
        imported.content,
        imported.metadata["note"],
        *app.profiles.get().learning_goals,
        *(m["content"] for m in app.memory.messages),
        app.memory.summary,
    ):
        assert not any(ord(ch) < 32 and ch != "\n" for ch in text), repr(text)
        assert "\x1b" not in text and "\u200b" not in text
    # Line breaks of a conversation survive; each line is cleaned as typed text is.
    assert app.memory.messages[0]["content"].splitlines() == [clean_text("line one\x1b[2J"), clean_text("line two\x07")]


CRASHING_IMPORT = """
import os, signal, sys
from pathlib import Path
from memora.app.assistant import Memora
from memora.core.config import Settings
from memora.data.data_transfer import import_data
from memora.model.embeddings import HashEmbedder

data_dir, notes, backup, where = sys.argv[1:5]
settings = Settings(data_dir=Path(data_dir), base_url="http://127.0.0.1:9", api_key="sk-test-not-real",
                    knowledge_dir=Path(notes)).validated()
app = Memora.from_settings(settings, embedder=HashEmbedder())

def die(*args, **kwargs):
    os.kill(os.getpid(), signal.SIGKILL)

if where == "the second Chroma batch":
    # Through the store's connection: it hands out this wrapper once refreshed.
    from memora.store.chroma_backend import collection_name
    connection, name = app.store.connection, collection_name(app.store.user_id)
    connection.refresh()
    real = connection.collection
    inner = connection.find_collection(name)
    class KilledOnSecondUpsert:
        upserts = 0
        def upsert(self, **kwargs):
            KilledOnSecondUpsert.upserts += 1
            if KilledOnSecondUpsert.upserts == 2:
                die()  # the first 1,000 records are in Chroma now
            return inner.upsert(**kwargs)
        def __getattr__(self, name):
            return getattr(inner, name)
    wrapper = KilledOnSecondUpsert()
    connection.collection = lambda wanted, **kwargs: wrapper if wanted == name else real(wanted, **kwargs)
else:
    app.proposals.add = die  # the memories are committed and the profile merged now
import_data(app, Path(backup))
"""


@pytest.mark.slow  # a child process, a kill or hundreds of turns
@pytest.mark.parametrize("where", ["the second Chroma batch", "the pending changes, after the profile"])
def test_an_import_killed_midway_is_undone_at_the_next_start(learner, make_app, tmp_path, where):
    import subprocess
    import sys

    from conftest import ROOT, child_env

    backup = write(tmp_path, export(many(1100)))
    before = state_of(learner)
    learner.close()
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            CRASHING_IMPORT,
            str(learner.settings.data_dir),
            str(learner.settings.knowledge_dir),
            str(backup),
            where,
        ],
        env=child_env(),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == -9, result.stderr
    journal = Path(str(learner.store.catalog.path) + ".restoring.json")
    assert journal.exists()  # it died mid-import
    if where != "the second Chroma batch":
        assert learner.profiles.get().learning_goals != before["profile"].learning_goals  # half applied, for now

    from chromadb.api.shared_system_client import SharedSystemClient

    SharedSystemClient.clear_system_cache()  # see what the killed process wrote, as a new start would
    again = make_app()
    assert state_of(again) == before
    assert not journal.exists()
    assert any("An import was interrupted" in n for n in again.notices)


def test_restore_undoes_what_it_wrote_and_overwrote_on_either_backend(connection, tmp_path, monkeypatch):
    """The undo also puts back records the import overwrote, on an embedded store and a server."""
    import uuid
    from datetime import datetime

    from chromadb.errors import InternalError

    from long_term_memory import LongTermMemoryStore
    from memora.core.records import MemoryRecord
    from memora.model.embeddings import HashEmbedder

    store = LongTermMemoryStore(
        tmp_path / "memora_db",
        embedding_function=HashEmbedder(),
        user_id=f"undo{uuid.uuid4().hex[:6]}",
        connection=connection,
    )
    kept = store.add("The learner keeps this one").record

    def chroma_state():
        page = chroma_collection(store).get(include=["documents", "metadatas", "embeddings"])
        return sorted(
            (i, d, sorted(m.items()), [round(x, 6) for x in v])
            for i, d, m, v in zip(page["ids"], page["documents"], page["metadatas"], page["embeddings"])
        )

    before = (chroma_state(), [(r.id, r.content) for r in store.list(include_superseded=True, newest_first=False)])
    now = datetime(2026, 11, 1, tzinfo=UTC)
    incoming = [kept.evolve(content="An overwritten version of it")] + [
        MemoryRecord(id=f"{i:08x}", content=f"Imported fact {i}", created_at=now) for i in range(1100)
    ]
    with chroma_wrapped(store, FailingSecondUpsert), pytest.raises(InternalError):
        store.restore(incoming, replace=True)
    assert (
        chroma_state(),
        [(r.id, r.content) for r in store.list(include_superseded=True, newest_first=False)],
    ) == before


class FailingSecondUpsertAndUndo(FailingSecondUpsert):
    """The second batch fails, and so does deleting the first one again."""

    def delete(self, **kwargs):
        from chromadb.errors import InternalError

        raise InternalError("injected failure while undoing")


def test_an_import_whose_undo_fails_says_so_and_the_next_start_finishes_it(
    learner, make_app, run_repl, tmp_path, monkeypatch
):
    path = write(tmp_path, export(many(1100)))
    before = state_of(learner)
    with chroma_wrapped(learner.store, FailingSecondUpsertAndUndo):
        t = run_repl(learner, [f"import {path}"])

    errors = [line for line in t.text.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1 and errors[0].startswith("Error: Importing backup.json failed (")
    assert errors[0].endswith("restart Memora to undo what it wrote."), errors[0]
    run_repl(learner, ["hello after the failed import"])  # the learner carries on; this must survive the undo
    learner.close()
    again = make_app()
    after = state_of(again)
    assert after["messages"][-2] == {"role": "user", "content": "hello after the failed import"}
    assert {k: v for k, v in after.items() if k != "messages"} == {k: v for k, v in before.items() if k != "messages"}
