"""Trust, fourth pass (issue 29): nothing is lost or overwritten, deleted is gone from
every file, a damaged file stops nothing, and batching never shows."""

from __future__ import annotations

import sqlite3

import pytest
from helpers.scripts import extraction, fact, say
from helpers.stores import add_many
from rich.cells import cell_len

from memora.cli.reports import status_rows
from memora.cli.routing import typed_id
from memora.core.errors import MemoraError, StoreError
from memora.core.records import fresh_id


# -- ids never collide, and nothing is overwritten ------------------------------------------
def test_ids_have_enough_randomness_for_millions():
    ids = {fresh_id() for _ in range(20_000)}
    assert len(ids) == 20_000
    assert all(len(i) >= 12 and int(i, 16) >= 0 for i in ids)  # 48 bits or more


@pytest.mark.parametrize(
    "items",
    [
        [{"id": "taken0000001", "content": "The learner sings in a choir"}],  # an id already stored
        [{"content": "The learner plays chess"}, {"id": "taken0000001", "content": "The learner paints"}],
        [{"id": "twin00000001", "content": "The learner rows"}, {"id": "twin00000001", "content": "The learner runs"}],
    ],
)
def test_a_write_that_would_replace_another_memory_is_refused(make_app, items):
    app = make_app()
    add_many(app.store, [{"id": "taken0000001", "content": "The learner keeps bees on the roof"}])
    before = [(r.id, r.content) for r in app.store.list(include_superseded=True)]
    with pytest.raises(StoreError, match="already in use"):
        add_many(app.store, items, batch_size=len(items))  # one write: all of it or none
    assert [(r.id, r.content) for r in app.store.list(include_superseded=True)] == before


# -- nothing valid is lost for an invalid label ----------------------------------------------
def test_a_fact_with_an_unknown_label_keeps_its_text_every_time(make_app, server):
    app = make_app()
    labels = [("music", "semantic"), ("Hobby ", "semantic"), ("sports", "habitual"), ("hobby", "forever")]
    texts = [f"The learner plays the {what} on Sundays." for what in ("guitar", "drums", "harp", "flute")]
    server.script("extraction", *[extraction(fact(t, c, memory_type=m)) for t, (c, m) in zip(texts, labels)])
    server.script("extraction", extraction(fact("", "music"), fact("The learner rows at dawn.", None)))
    for n in range(5):  # a server that keeps answering with bad labels loses nothing valid
        say(app, f"Here is something about me, number {n}, for the record.")
    stored = {r.content: (r.category, r.memory_type) for r in app.store.list()}
    assert stored == {
        texts[0]: ("other", "semantic"),
        texts[1]: ("hobby", "semantic"),  # the nearest valid label
        texts[2]: ("other", "semantic"),
        texts[3]: ("hobby", "semantic"),
        "The learner rows at dawn.": ("other", "semantic"),
    }
    status = {row[0]: row[1] for row in dict((t[0], t[2]) for t in status_rows(app))["Memory extraction"]}
    assert status["items set aside or relabelled this session"] == "7"  # 6 relabelled, 1 of them then set aside: empty


# -- deleted means gone from every file, the prompt history included --------------------------
def _typed(app, *lines):
    from prompt_toolkit.history import FileHistory

    history = FileHistory(str(app.paths.input_history))
    for line in lines:
        history.store_string(line)


def test_forget_all_leaves_no_typed_line_profile_or_pending_change(make_app, run_repl, data_dir):
    from helpers.stores import files_holding

    from memora.reading.proposals import ProfileProposal

    app = make_app()
    app.store.add("The learner works as an accountant in Zorbatown.")
    chat = ["My name is Mei and I am work as an accountant in Zorbatown", "my cat Qwillfin hates rain", "你好 Plovdix"]
    _typed(app, *chat, "profile goal pass Yzmaexam")
    app.profiles.add_learning_goal("pass Yzmaexam with 7.0")
    app.profiles.add_preference("examples about Krondel trains")
    app.proposals.add(ProfileProposal.new("learning_goal", "add", "visit Vexholm", None, "I want to visit Vexholm"))
    t = run_repl(app, ["forget all", "DELETE"])
    assert "your profile" in t.text and "what you typed at the prompt" in t.text  # the question says so
    markers = ["Zorbatown", "Qwillfin", "Plovdix", "Yzmaexam", "Krondel", "Vexholm"]
    assert files_holding(data_dir, *markers) == {}
    assert app.profiles.get().is_empty() and app.proposals.pending() == []
    assert run_repl(app, ["forget all"]).text.count("There are no memories to delete.") == 1


def _shortened(memory_id: str) -> str:
    """A shortened id as a learner types it: six characters, more while they would read
    as a word ("decade"; routing.typed_id)."""
    return next(memory_id[:n] for n in range(6, len(memory_id) + 1) if typed_id(memory_id[:n]))


@pytest.mark.parametrize(
    "then",
    [
        lambda memory: [f"forget {memory.id}"],
        lambda memory: [f"forget {_shortened(memory.id)}"],
        lambda memory: [f"memory edit {memory.id} The learner keeps wasps.", "forget {newest}"],
    ],
)
def test_forget_one_memory_leaves_no_line_it_was_read_from(make_app, run_repl, server, data_dir, then):
    """The learner's own sentence, however worded beside the memory, goes with it: from the
    prompt's history and from the conversation kept in the session."""
    from helpers.stores import files_holding

    app = make_app()
    said = "Honestly I look after three Quorvex beehives up on my roof"
    server.script("extraction", extraction(fact("The learner keeps bees on the roof.", "hobby")))
    _typed(app, said, "what a lovely day in Plimmerton")
    say(app, said)
    [memory] = app.store.list()
    lines = then(memory)
    t = run_repl(app, lines[:1])
    if len(lines) > 1:
        t = run_repl(app, [lines[1].format(newest=app.store.list()[0].id)])
    assert "Forgot" in t.text
    assert files_holding(data_dir, "Quorvex") == {}
    assert "Plimmerton" in app.paths.input_history.read_text()  # other lines stay


# -- no damaged or missing file stops Memora, the deletion log included ------------------------
def _not_a_log(path):
    import sqlite3

    db = sqlite3.connect(path)
    db.execute("CREATE TABLE deletions (id TEXT)")
    db.commit()
    db.close()


DAMAGED_LOGS = {
    "garbage": lambda p: p.write_bytes(b"\x00\xffnot a database at all" * 200),
    "zeros": lambda p: p.write_bytes(bytes(8192)),
    "torn header": lambda p: p.write_bytes(b"SQLite format 3\x00" + b"\x13" * 500),
    "text": lambda p: p.write_text("deletions: none\n"),
    "another schema": _not_a_log,
}


@pytest.mark.parametrize("damage", DAMAGED_LOGS)
def test_a_damaged_deletion_log_is_kept_aside_and_forget_still_works(make_app, run_repl, data_dir, damage):
    from memora.store.deletions import FILE_NAME, DeletionLog, Fence

    app = make_app()
    kept = app.store.add("The learner keeps bees on the roof.").record
    said = Fence(app.settings.user, app.deletions.generation())  # a message said before the log was lost
    app.close()
    log = data_dir / "memora_db" / FILE_NAME
    log.unlink()
    DAMAGED_LOGS[damage](log)
    notices = []
    app = make_app(notices=notices)
    t = run_repl(app, [f"forget {kept.id}"])
    assert f"Forgot {kept.id}." in t.text
    [line] = [n for n in notices if "deletion log was damaged" in n]
    assert "\n" not in line and list(log.parent.glob(FILE_NAME + ".corrupt-*"))
    # What the old log knew is lost: a reading of anything said before it is refused.
    assert app.deletions.covers(said) and not app.deletions.covers(Fence(app.settings.user, app.deletions.generation()))
    assert not DeletionLog(log.parent).covers(Fence("someone", app.deletions.generation()))


class _NoRoomToVacuum:
    """Chroma's SQLite file, on a disk with no room for the copy VACUUM makes."""

    def __init__(self, db, says):
        self.db, self.says = db, says

    def execute(self, sql, *args):
        if sql.strip().upper() == "VACUUM":
            raise sqlite3.OperationalError(self.says)
        return self.db.execute(sql, *args)

    def __getattr__(self, name):
        return getattr(self.db, name)


@pytest.mark.chroma  # the wipe of Chroma's own file is what fails
@pytest.mark.parametrize("says", ["database or disk is full", "attempt to write a readonly database"])
@pytest.mark.parametrize("lines", [["forget {id}"], ["forget all", "DELETE"]])
def test_a_forget_that_cannot_wipe_names_the_disk_not_another_memora(make_app, run_repl, monkeypatch, says, lines):
    from memora.store import chroma_backend

    app = make_app()
    record = app.store.add("The learner collects Frumbleware teapots").record
    real = chroma_backend._open_sqlite
    monkeypatch.setattr(chroma_backend, "_open_sqlite", lambda *a, **k: _NoRoomToVacuum(real(*a, **k), says))
    t = run_repl(app, [line.format(id=record.id) for line in lines])
    cause = "the disk is full" if "full" in says else "the disk is read-only"
    assert f"could not be wiped from the memory files yet ({cause})" in t.text
    assert "Another Memora" not in t.text and "another Memora" not in t.text


# -- an import never restores what was forgotten, nor takes a date from the future ----------------
@pytest.mark.parametrize(
    "forget",
    [
        lambda app, r: [f"forget {r.id}"],
        lambda app, r: [f"forget {_shortened(r.id)}"],
        lambda app, r: ["forget all", "DELETE"],
        lambda app, r: [f"memory edit {r.id} The learner keeps wasps now.", f"forget {app.store.list()[0].id}"],
    ],
)
def test_an_older_export_does_not_bring_back_a_forgotten_memory(make_app, run_repl, tmp_path, forget):
    app = make_app()
    bees = app.store.add("The learner keeps bees on the roof.").record
    app.store.add("The learner plays the oboe.")
    backup = tmp_path / "old.json"
    run_repl(app, [f"export {backup}"])
    run_repl(app, forget(app, bees))
    t = run_repl(app, [f"import {backup}"])
    assert "you had forgotten left out" in t.text
    assert not [r for r in app.store.list(include_superseded=True) if "bees" in r.content]


def test_forget_all_then_an_older_export_leaves_out_what_it_held(make_app, run_repl, tmp_path):
    app = make_app()
    app.store.add("The learner plays the oboe.")
    backup = tmp_path / "old.json"
    run_repl(app, [f"export {backup}"])
    run_repl(app, ["forget all", "DELETE"])
    t = run_repl(app, [f"import {backup}"])
    assert "Imported 0 memories" in t.text and "1 item you had forgotten left out" in t.text


@pytest.mark.parametrize(
    "where",
    [
        lambda e: e["mistakes"][0]["reviews"][0].__setitem__("at", "2099-01-01T10:00:00+00:00"),
        lambda e: e["mistakes"][0]["card"].__setitem__("last_review", "2099-01-01T00:00:00+00:00"),
        lambda e: e["mistakes"][0].__setitem__("last_seen", "2031-05-01T00:00:00+00:00"),
        lambda e: e["memories"][0].__setitem__("created_at", "2040-01-01T00:00:00+00:00"),
        lambda e: e["activity"].__setitem__("2099-02-02", next(iter(e["activity"].values()))),
    ],
)
def test_an_import_dated_in_the_future_is_refused(make_app, run_repl, server, tmp_path, where):
    import json

    from memora.teaching.ledger import NewMistake

    app = make_app()
    app.store.add("The learner plays the oboe.")
    app.ledger.record(NewMistake(original="I goed home", corrected="I went home", rule="go → went", kind="grammar"))
    server.script("review_grade", {"correct": True, "feedback": "Good."})
    run_repl(app, ["review", "I went home", ""])
    backup = tmp_path / "b.json"
    run_repl(app, [f"export {backup}"])
    data = json.loads(backup.read_text())
    assert data["mistakes"][0]["reviews"] and data["activity"]
    assert "Imported 0 memories" in run_repl(app, [f"import {backup}"]).text  # as written, it imports
    where(data)
    backup.write_text(json.dumps(data))
    t = run_repl(app, [f"import {backup}"])
    assert "in the future" in t.text and "Nothing was imported" in t.text


# -- first contact: the README's offline pytest skips, with the reason, what needs tiktoken's files --
@pytest.mark.slow  # a pytest of its own, in a child
def test_without_the_encoding_files_the_token_tests_skip_with_the_reason(tmp_path):
    import os
    import subprocess
    import sys

    from conftest import ROOT

    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "MEMORA_"))}
    env.update(TIKTOKEN_CACHE_DIR=str(tmp_path / "empty"), HOME=str(tmp_path))  # a fresh machine's caches
    (tmp_path / "empty").mkdir()
    picked = [
        "tests/test_turn_pipeline.py",
        "tests/test_budget.py::test_a_fold_keeps_the_last_exchange_verbatim_when_it_is_longer_than_half_the_window",
    ]
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider", "-m", "not slow", *picked],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout[-3000:]
    assert "1 skipped" in run.stdout and "TIKTOKEN_CACHE_DIR" in run.stdout, run.stdout[-3000:]


@pytest.mark.parametrize("unreachable", ["dropped", "refused"])
def test_with_a_key_and_openai_unreachable_remember_stores_and_search_waits(
    make_settings, server, clock, run_repl, unreachable
):
    from helpers.fake_openai import Disconnect
    from helpers.openai_route import openai_http_client

    from memora.app.assistant import Memora

    http = openai_http_client(server.base_url if unreachable == "dropped" else "http://127.0.0.1:9")
    server.script("embeddings", Disconnect(times=100))
    app = Memora.from_settings(make_settings(base_url=None), clock=clock, notify=lambda m: None, http_client=http)
    try:
        assert app.store.embedder.name.startswith("openai:")
        t = run_repl(
            app, ["remember I teach maths in Tainan", "remember I like green tea", "search maths", "search tea"]
        )
        assert t.text.count("Remembered (") == 2 and "Error" not in t.text and "unreachable (" not in t.text
        assert t.text.count("Memory search is unavailable: the embedding service could not be reached") == 1
        assert "Memory search is unavailable without the embedding service (see above)." in t.text
        assert sorted(r.content for r in app.store.list()) == ["I like green tea", "I teach maths in Tainan"]
        assert app.store.count(without_vectors=True) == 2  # embedded once the service answers (next start, 'reindex')
    finally:
        app.close()
        http.close()


# -- batching never shows: every write and question comes after its own message's turn ----------
def test_what_a_short_message_causes_is_told_and_asked_after_its_own_turn(make_app, run_repl, server):
    goed = {"original": "I goed home", "corrected": "I went home", "rule": "go → went", "kind": "grammar"}
    level = {"field": "english_level", "action": "set", "value": "B2", "evidence": "I'm B2 now"}
    server.script(
        "extraction",
        extraction(fact("The learner keeps bees.", "hobby")),
        extraction() | {"mistakes": [goed]},
        extraction() | {"asked_words": [{"word": "reluctant", "meaning": "not willing"}]},
        extraction(profile_changes=[level]),
        extraction(fact("The learner has a cat.", "identity")),
    )
    app = make_app()
    app.profiles.set_english_level("B1")
    said = ["I keep bees.", "I goed home.", "What does reluctant mean?", "yes", "I'm B2 now.", "yes", "Cat!"]
    t = run_repl(app, said)

    def after(line: str, nth: int = 0) -> str:
        return t.text.split(f"You: {line}\n")[nth + 1].split("You: ", 1)[0]

    assert "remembered" in after("I keep bees.") and "keeps bees" in after("I keep bees.")
    assert "Add \u201creluctant\u201d to your review cards? (yes/no)" in after("What does reluctant mean?")
    assert "Added \u201creluctant\u201d" in after("yes")
    assert "Update your profile level from B1 to B2? (yes/no)" in after("I'm B2 now.")
    assert "English level is now B2" in after("yes", 1)
    assert "has a cat" in after("Cat!")
    assert [c.input[-1]["content"] for c in server.chats].count("yes") == 0  # an answer, never chat
    assert len(server.of_kind("extraction")) == 5  # each message read after its own reply


# -- the page: single-key answers, keep-one refuses a memory that is gone ------------------------
@pytest.mark.parametrize(
    "keys, forgotten, says",
    [
        ("dy", True, "Forgot"),
        ("dY", True, "Forgot"),
        ("dn", False, "Cancelled"),
        ("dxzy", True, "Forgot"),  # keys that answer nothing are not typed into the answer
        ("d\x03", False, "Cancelled"),  # Ctrl-C
    ],
)
def test_a_y_n_question_on_the_page_takes_one_key(make_app, keys, forgotten, says):
    from prompt_toolkit.input import create_pipe_input
    from prompt_toolkit.output import DummyOutput

    from memora.cli.commands import line_runner
    from memora.cli.page import MemoryPage

    app = make_app()
    record = app.store.add("The learner keeps bees on the roof.").record
    with create_pipe_input() as keyboard:
        page = MemoryPage(app, line_runner, input=keyboard, output=DummyOutput(), background=False)
        page.state.view = "memories"
        application = page.build()
        keyboard.send_text(keys)  # no Enter: the answer is the key
        messages = []
        application.after_render += lambda _: messages.append(page.state.message)
        keyboard.send_text("q")
        application.run(set_exception_handler=False)  # an error fails the test, never waits for Enter
    assert (app.store.get(record.id) is None) is forgotten
    assert any(says in m for m in messages), messages


@pytest.mark.parametrize("gone", ["forgotten", "edited", "superseded"])
def test_keep_one_refuses_a_memory_another_terminal_changed(make_app, gone):
    from memora.cli.page import keep_one

    app = make_app()
    keep = app.store.add("The learner loves coffee.", category="habit").record
    drop = app.store.add("The learner quit coffee.", category="habit").record
    other = make_app()  # another terminal
    if gone == "forgotten":
        other.store.delete(keep.id)
    elif gone == "edited":
        other.store.edit(keep.id, "The learner loves green tea.")
    else:
        other.store.supersede(keep.id, None, reason="correction")
    with pytest.raises(MemoraError, match="gone or was changed"):
        keep_one(app, keep.id, drop.id)
    assert app.store.get(drop.id).is_current  # neither left without a current version


@pytest.mark.parametrize("columns", [80, 60, 40])
def test_the_history_pane_wraps_whole_words(make_app, columns):
    from memora.cli.commands import line_runner
    from memora.cli.page import MemoryPage

    app = make_app()
    record = app.store.add("The learner's husband and daughter live in Kaohsiung near the harbour.").record
    app.store.edit(record.id, "The learner's husband and daughter moved to Tainan with their grandmother.")
    page = MemoryPage(app, line_runner, background=False)
    page.state.pane = page.command(f"history {record.id}")
    drawn = "".join(text for _, text in page.visible(columns, 40))
    words = {w.strip(".,") for w in drawn.split()}
    assert all(len(line) <= columns for line in drawn.splitlines())
    for word in ("husband", "daughter", "Kaohsiung", "grandmother", "harbour"):
        assert word in words, drawn


@pytest.mark.parametrize("columns", [80, 60])
@pytest.mark.parametrize("view", ["m", "t", "x", "c", "p"])
def test_every_view_of_the_page_fits_and_breaks_no_word(make_app, columns, view):
    from memora.cli.commands import line_runner
    from memora.cli.page import MemoryPage
    from memora.teaching.ledger import NewMistake

    app = make_app()
    texts = [
        "The learner's husband and daughter live in Kaohsiung near the harbour with their grandmother.",
        "The learner lives in Taipei.",
        "The learner lives in Tainan.",
        "The learner's grandmother celebrates her ninetieth birthday in Kaohsiung next spring.",
    ]
    for text in texts:
        app.store.add(text, category="identity")
    app.profiles.add_learning_goal("pass the IELTS examination with seven overall before September")
    app.ledger.record(
        NewMistake(
            original="I goed to the supermarket yesterday afternoon",
            corrected="I went to the supermarket yesterday afternoon",
            rule="go: went (irregular past)",
            kind="grammar",
        )
    )
    page = MemoryPage(app, line_runner, background=False)
    page._key(view)
    page.state.cursor = 1
    parts = (page.visible(columns, 20), page.detail(columns), page.footer(columns))
    drawn = "\n".join("".join(text for _, text in part) for part in parts)
    assert all(len(line) <= columns for line in drawn.splitlines()), drawn
    shown = {w.strip(".,()\u2026\u201c\u201d") for w in drawn.split()}
    long_words = ("husband", "grandmother", "Kaohsiung", "harbour", "celebrates", "ninetieth", "examination")
    long_words += ("September", "supermarket", "afternoon", "history", "forget", "filter")
    broken = [w for w in shown if len(w) >= 2 and any(n.startswith(w) and n != w for n in long_words)]
    assert not broken, (broken, drawn)  # a word is shown whole or not at all


def test_first_contact_lines(make_app, run_repl, data_dir):
    import subprocess
    import sys

    from conftest import ROOT

    ignored = subprocess.run(["git", "check-ignore", "-q", "memora_kept_pairs.json"], cwd=ROOT)
    assert ignored.returncode == 0  # learner data is never committed
    usage = subprocess.run([sys.executable, "chatbot.py", "--help"], cwd=ROOT, capture_output=True, text=True)
    assert "~/.local/share/memora" in " ".join(usage.stdout.split())
    app = make_app()
    app.store.add("The learner grows Plimquat tomatoes")
    run_repl(app, ["export"])
    t = run_repl(app, ["forget all", "DELETE", "no"])
    assert "export file in the data folder" in t.text and ") holds these memories too" in t.text


@pytest.mark.parametrize(
    "line, meant",
    [("help forgte", "forget"), ("help memries", "memories"), ("help hepl", "help"), ("/help reviw", "review")],
)
def test_help_with_a_mistyped_command_says_which_was_meant(make_app, run_repl, server, line, meant):
    t = run_repl(make_app(), [line, "help qzxv", "help me with my essay"])
    word = line.split()[1]
    assert f"Error: There is no command '{word}'. Did you mean `{meant}`?" in t.text
    assert "Error: There is no command 'qzxv'. Usage: help [command]" in t.text
    assert [request.last_user for request in server.chats] == ["help me with my essay"]  # only chat reaches the tutor


@pytest.mark.parametrize("columns", [80, 60])
def test_bare_help_fits_a_24_row_terminal_a_line_a_command(make_app, run_repl, monkeypatch, columns):
    from memora.cli.commands import COMMANDS

    monkeypatch.setenv("COLUMNS", str(columns))
    t = run_repl(make_app(), ["help"])
    listing = t.text.split("You: help\n", 1)[1].split("You:", 1)[0].splitlines()
    assert len(listing) + 1 <= 24 and all(len(line) <= columns for line in listing), listing  # the prompt too
    for command in COMMANDS:  # each command on its own line, its description cut at a whole word
        line = next(
            line for line in listing if line.startswith(command.name + " ") or line.startswith(command.name + ",")
        )
        said = line[12:].removesuffix("…")
        assert command.parsed_forms()[0].help.startswith(said) and said.split()[-1] in command.forms[0].split(), line


def test_the_users_table_aligns_after_wide_names(make_app, run_repl):
    from rich.cells import cell_len

    names = ["李明", "ann", "ｍａｒｙ", "さくら", "김민준", "josé"]  # Chinese, full-width Latin, Japanese, Korean
    for name in names:
        make_app(user=name).store.add(f"The learner {name} rows on Sundays")
    t = run_repl(make_app(user="ann"), ["users"])
    table = t.text.split("You: users\n", 1)[1].split("You:", 1)[0].splitlines()
    rows = [line for line in table if line.split() and line.split()[0] in names]
    assert len(rows) == len(names), table
    # The memories column starts at the same screen column on every row, as the header's does.
    header = next(line for line in table if line.startswith("name"))
    starts = {cell_len(line[: line.index(" 1 ")]) + 1 for line in rows}
    assert starts == {header.index("memories")}, table


def test_a_bare_file_name_goes_to_the_data_folder_for_both_exports(make_app, run_repl, tmp_path, monkeypatch):
    app = make_app()
    app.store.add("The learner grows Plimquat tomatoes")
    here = tmp_path / "current"
    here.mkdir()
    monkeypatch.chdir(here)
    folder = app.paths.folder
    lines = ["export mine.json", "review export deck.apkg", "export 'my notes.json'", "review export cards-2026.apkg"]
    t = run_repl(app, [*lines, "export ./here.json", "review export ./here.apkg"])
    for name in ("mine.json", "deck.apkg", "my notes.json", "cards-2026.apkg"):
        assert (folder / name).is_file() and not (here / name).exists(), name
        assert str(folder / name) in t.text  # the line says where it went
    assert (here / "here.json").is_file() and (here / "here.apkg").is_file()  # a path is where it says
    (here / "mine.json").write_text("{}")  # a file of that name here too: the data folder's is read
    t = run_repl(app, ["import mine.json"])
    assert "not valid" not in t.text and "Error" not in t.text.split("You: import mine.json", 1)[1], t.text


@pytest.mark.slow  # a child process
@pytest.mark.parametrize("lines", ["exit\n", "status\nexit\n", "help\nexit\n"])
def test_in_plain_mode_the_offline_token_warning_comes_before_the_first_prompt(tmp_path, lines):
    import subprocess
    import sys

    from conftest import ROOT, child_env

    (tmp_path / "empty").mkdir()
    env = child_env(TIKTOKEN_CACHE_DIR=tmp_path / "empty", MEMORA_EMBEDDING_MODEL="hash")
    command = [sys.executable, "chatbot.py", "--plain", "--data-dir", str(tmp_path / "home")]
    run = subprocess.run(command, input=lines, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.count("Token counts are approximate") == 1, run.stdout
    assert run.stdout.index("Token counts are approximate") < run.stdout.index("You:"), run.stdout


@pytest.mark.parametrize("columns, show_all", [(60, False), (60, True), (70, False), (79, True)])
def test_memories_in_a_narrow_window_keep_the_text_readable(make_app, columns, show_all):
    import io

    from rich.console import Console as RichOutput

    from memora.cli.commands import CommandRouter
    from memora.cli.terminal import RichConsole

    app = make_app()
    text = "The learner's grandmother lives in Kaohsiung and they video-call every Sunday afternoon"
    record = app.store.add(text).record
    app.store.edit(record.id, text.replace("Sunday", "Saturday"))  # a superseded version for --all
    out = RichOutput(width=columns, file=io.StringIO(), highlight=False, color_system=None)
    CommandRouter(app, RichConsole(out=out, reader=lambda prompt: "")).dispatch(
        "memories --all" if show_all else "memories"
    )
    table = out.file.getvalue().splitlines()
    body = [line for line in table if line.startswith("│") and "text" not in line]
    assert all(cell_len(line) <= columns for line in table), table
    # the text column is a readable width (with date and type, 7 lines at 60 columns): each version
    # over at most 4 lines, 6 beside --all's status column, its words whole
    assert len(body) <= (12 if show_all else 4), "\n".join(table)
    words = {w for line in body for w in line.replace("│", " ").split()}
    assert {"grandmother", "Kaohsiung", "video-call", "afternoon"} <= words, "\n".join(table)
