"""Deletion is real: after every kind of forget, no file under the data folder
holds a byte of the deleted text.

Every test walks the whole data folder, reads each file's raw bytes and looks
for unique markers, with the embedded Chroma store on disk.
"""

from __future__ import annotations

import pytest
from helpers.stores import add_many, files_holding

pytestmark = pytest.mark.chroma  # deleted means gone from every file, Chroma's included

FILLER_WORDS = "learner likes music hiking coffee tea exam tuesday city lives works studies grammar idioms".split()


def fillers(n: int, tag: str = "") -> list[dict]:
    return [
        {
            "content": (
                f"The learner {' '.join(FILLER_WORDS[(i * 7 + k) % len(FILLER_WORDS)] for k in range(8))} {tag}note{i}"
            )
        }
        for i in range(n)
    ]


def type_history(app, *lines: str) -> None:
    """Lines typed at the prompt, stored the way the interactive prompt stores them."""
    from prompt_toolkit.history import FileHistory

    history = FileHistory(str(app.paths.input_history))
    for line in lines:
        history.store_string(line)


def snapshot(app) -> list[tuple]:
    return [
        (r.id, r.content, r.status, r.supersedes, r.superseded_by)
        for r in app.store.list(include_superseded=True, newest_first=False)
    ]


@pytest.mark.parametrize("embedder_kind", ["hash", "local"])
def test_forget_id_leaves_no_byte_of_any_version_in_any_file(
    make_app, run_repl, server, data_dir, embedder_kind, request
):
    embedder = request.getfixturevalue("local_embedder") if embedder_kind == "local" else None
    app = make_app(embedder=embedder, memory_cap=10_000)
    many = 2500 if embedder_kind == "hash" else 150  # several Chroma batches of 1,000 with the fast embedder
    add_many(
        app.store,
        fillers(many // 2) + [{"content": "The learner keeps a pet axolotl named Qzvorbix"}] + fillers(many // 2, "b"),
    )
    [first] = app.store.list(text="Qzvorbix")
    typed = [
        "remember Kept fact: the learner plays the oboe",
        "memory edit x The learner keeps a pet axolotl named Wyxtrell",
    ]
    type_history(app, *typed)
    # The reply quotes both versions word for word, as a tutor's recap would.
    server.script(
        "chat",
        "I noted: the learner keeps a pet axolotl named Wyxtrell. "
        "(Before: The learner keeps a pet\naxolotl named Qzvorbix.)",
    )
    t = run_repl(
        app,
        [
            "remember Kept fact: the learner plays the oboe",
            f"memory edit {first.id} The learner keeps a pet axolotl named Wyxtrell",
            "Tell me about my pet",
        ],
    )
    [second] = app.store.list(text="Wyxtrell")
    # An extraction job that failed and waits for the next start would read the fact back in.
    from memora.app.session import PendingExtraction

    with app._lock:  # the queue is changed only under the session's lock (turn.py)
        app.queue.pending = (
            *app.queue.pending,
            PendingExtraction(
                job_id="j1",
                text="Remember: the learner keeps a pet axolotl named Wyxtrell!",
                said_at=app.clock(),
                attempts=1,
            ),
        )
    app.conversation.save()
    assert app.paths.session.exists() and "Wyxtrell" in app.paths.session.read_text()
    before = files_holding(data_dir, "Qzvorbix", "Wyxtrell")
    assert any(path.startswith("memora_db") for path in before), before  # the markers were really on disk

    t = run_repl(app, [f"forget {second.id}"])

    assert f"Forgot {second.id} (and 1 earlier version)." in t.text
    assert files_holding(data_dir, "Qzvorbix", "Wyxtrell") == {}
    assert "memora_db/chroma.sqlite3" in files_holding(data_dir, "plays the oboe")  # what was not forgotten stays
    assert "[forgotten]" in app.paths.session.read_text()
    assert [job.text for job in list(app.queue.pending)] == ["Remember: [forgotten]!"]
    assert app.store.count() == many + 1
    # A restart replays Chroma's log: the store is whole and the text stays gone.
    app.close()
    again = make_app(embedder=embedder, memory_cap=10_000)
    assert again.store.count() == many + 1 and again.store.list(text="axolotl") == []
    assert again.store.search("Kept fact: the learner plays the oboe", min_score=0)[0].content.startswith("Kept fact")
    assert files_holding(data_dir, "Qzvorbix", "Wyxtrell") == {}
    assert again.store.add("The learner has a new hobby after forgetting").duplicate is False


def test_forget_all_wipes_every_memory_and_the_exports_after_asking(make_app, run_repl, data_dir):
    app = make_app()
    markers = [f"Zqmark{i:04d}x" for i in range(0, 3000, 250)]
    items = fillers(3000)
    for index, marker in zip(range(0, 3000, 250), markers):
        items[index] = {"content": f"The learner said {marker} once"}
    add_many(app.store, items)
    old = app.store.list(text=markers[0])[0]
    app.store.supersede(old.id, f"The learner said {markers[0]} twice", reason="update")
    type_history(app, f"remember The learner said {markers[1]} once", "what a nice day")
    run_repl(app, ["export", f"export {data_dir / 'my-backup.json'}"])
    exports = sorted(p.name for p in data_dir.glob("*.json") if "export" in p.name or "backup" in p.name)
    assert len(exports) == 2 and files_holding(data_dir, markers[0])

    t = run_repl(app, ["forget all", "DELETE", "yes"])

    assert "Deleted 3001 memories, what you typed at the prompt and 2 export files." in t.text
    assert files_holding(data_dir, *markers, "note17", "what a nice day") == {}
    assert app.paths.input_history.read_text() == ""  # every typed line: chat says facts in other words
    assert not any(data_dir.glob("memora-export-*.json")) and not (data_dir / "my-backup.json").exists()
    assert app.store.count(include_superseded=True) == 0
    app.close()
    assert make_app().store.count(include_superseded=True) == 0


def test_forget_all_keeps_the_exports_when_the_learner_says_no(make_app, run_repl, data_dir):
    app = make_app()
    app.store.add("The learner grows Plimquat tomatoes")
    run_repl(app, ["export"])
    t = run_repl(app, ["forget all", "DELETE", "no"])
    assert "Keeping the export files." in t.text and "Deleted 1 memory." in t.text
    assert list(files_holding(data_dir, "Plimquat")) == [next(data_dir.glob("memora-export-*.json")).name]


def test_forget_one_memory_names_the_exports_that_still_hold_it(make_app, run_repl, data_dir):
    app = make_app()
    record = app.store.add("The learner grows Plimquat tomatoes").record
    run_repl(app, ["export"])
    t = run_repl(app, [f"forget {record.id}"])
    assert "1 export file in your data folder still holds it (memora-export-default-" in t.text


@pytest.mark.parametrize("who", ["another learner", "yourself"])
def test_forget_user_leaves_no_byte_of_the_learner(make_app, make_settings, run_repl, server, data_dir, who):
    name = "ming" if who == "another learner" else "default"
    learner = make_app(settings=make_settings(user=name))
    learner.profiles.add_learning_goal("Pass the Vorquelle exam")
    add_many(learner.store, fillers(1200, "ming") + [{"content": "The learner lives on Drombly Street"}])
    type_history(learner, "remember The learner lives on Drombly Street")
    server.script("chat", "Drombly Street sounds lovely.")
    run_repl(learner, ["I live on Drombly Street", "export"])
    assert files_holding(data_dir, "Drombly", "Vorquelle")
    me = learner
    if name != "default":
        learner.close()
        me = make_app()
        me.store.add("The other learner's Kelpfather fact stays")
    t = run_repl(me, [f"forget user {name}", name, "yes"])

    assert f"Deleted learner '{name}'" in t.text and "1 export file" in t.text
    assert files_holding(data_dir, "Drombly", "Vorquelle") == {}
    if name != "default":
        assert not (data_dir / "users" / name).exists()
        assert files_holding(data_dir, "Kelpfather")  # nobody else's data was touched
        assert me.store.count() == 1


@pytest.mark.slow  # a child process, a kill or hundreds of turns
def test_forget_on_a_chroma_server_says_what_it_cannot_promise(make_app, run_repl, chroma_server):
    app = make_app(chroma_url=chroma_server, user="serverforget")
    record = app.store.add("The learner hums Trovalian songs").record
    t = run_repl(app, [f"forget {record.id}"])
    assert f"Forgot {record.id}." in t.text
    assert "Chroma server; it may keep copies in its own files" in t.text


def test_a_forget_that_another_process_blocks_is_finished_at_the_next_start(make_app, run_repl, data_dir, monkeypatch):
    import sqlite3

    from memora.store import catalog

    # The reader below holds its snapshot until the test commits it, so the checkpoint
    # is blocked however long it waits; waiting the real 2 s would only make this slow.
    monkeypatch.setattr(catalog, "COMPACT_WAIT_MS", 0)
    app = make_app()
    add_many(app.store, fillers(50))
    record = app.store.add("The learner collects Frumbleware teapots").record
    reader = sqlite3.connect(app.store.catalog.path, isolation_level=None)  # another process, mid-read
    reader.execute("BEGIN")
    reader.execute("SELECT COUNT(*) FROM memories").fetchall()

    t = run_repl(app, [f"forget {record.id}"])

    assert f"Forgot {record.id}." in t.text
    assert "could not be wiped from the memory files yet (another Memora is using them); the next start will." in t.text
    assert "memora_db/catalog-default.sqlite3-wal" in files_holding(data_dir, "Frumbleware")
    assert (app.settings.db_dir / "erase-pending").exists()
    reader.execute("COMMIT")
    reader.close()
    app.close()
    again = make_app()
    assert files_holding(data_dir, "Frumbleware") == {}
    assert not (again.settings.db_dir / "erase-pending").exists()
    assert again.store.count() == 50


@pytest.mark.slow  # a child process, a kill or hundreds of turns
@pytest.mark.parametrize("command", ["forget {id}", "undo"])
def test_a_session_killed_after_a_forget_is_wiped_at_the_next_start(make_app, run_repl, data_dir, server, command):
    """The wipe waits for the session's end; a kill before it leaves the marker, and the next start wipes."""
    import signal
    import subprocess
    import sys

    from conftest import ROOT, child_env

    app = make_app()
    add_many(app.store, fillers(30))
    run_repl(app, ["remember The learner collects Frumbleware teapots"])
    [record] = app.store.list(text="Frumbleware")
    app.close()
    env = child_env(MEMORA_HOME=data_dir, MEMORA_EMBEDDING_MODEL="hash", OPENAI_BASE_URL=server.base_url)
    child = subprocess.Popen(
        [sys.executable, str(ROOT / "chatbot.py"), "--plain"],
        **dict(stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT),
    )
    child.stdin.write(command.format(id=record.id) + "\n")
    child.stdin.flush()
    seen = ""
    while "Forgot" not in seen and "Undone" not in seen:
        line = child.stdout.readline()
        assert line, seen + child.stderr.read()
        seen += line
    child.send_signal(signal.SIGKILL)
    child.communicate(timeout=30)
    assert (data_dir / "memora_db" / "erase-pending").exists()
    assert files_holding(data_dir, "Frumbleware")  # killed before its session ended: not wiped yet

    again = make_app()
    assert files_holding(data_dir, "Frumbleware") == {}
    assert not (data_dir / "memora_db" / "erase-pending").exists()
    assert again.store.count() == 30


def test_history_scrubbing_removes_whole_entries_and_keeps_the_file_readable(tmp_path):
    from prompt_toolkit.history import FileHistory

    from memora.app.erasure import TextFinder, scrub_input_history, scrub_text

    path = tmp_path / ".memora_history"
    history = FileHistory(str(path))
    for line in [
        "remember I keep a cat",
        "how is education going?",
        "remember The learner's   sister lives in LISBON.",
        "first line\nsecond line about my sister lives in lisbon",
        "bye",
    ]:
        history.store_string(line)
    finder = TextFinder(["I keep a cat", "The learner's sister lives in Lisbon."])

    assert scrub_input_history(path, finder) == 2
    assert list(FileHistory(str(path)).load_history_strings()) == [
        "bye",
        "first line\nsecond line about my sister lives in lisbon",
        "how is education going?",
    ]
    assert scrub_text("You said: I keep a CAT, and the learner's sister\nlives in Lisbon, right?", finder) == (
        "You said: [forgotten], and [forgotten], right?"
    )
