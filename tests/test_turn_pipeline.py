"""The turn as a pipeline: state changed
only by its owners' methods under its lock while the worker lands a reading mid-reply,
and one session write per turn (its reading's result rides on the next write)."""

from __future__ import annotations

import json
import logging
import os
import threading
from pathlib import Path

import pytest
from helpers.fake_openai import Error
from helpers.scripts import extraction, fact
from helpers.threads import Conductor

import memora.app.session as session_module
from memora.core.storage import UnguardedWrite


def test_guarded_state_refuses_a_write_without_its_lock(make_app):
    app = make_app()
    with pytest.raises(UnguardedWrite):
        app.turn.question_due = True
    with pytest.raises(UnguardedWrite):
        app.queue.pending = ()
    with pytest.raises(UnguardedWrite):
        app.conversation.changes.changes = ()
    # held by another thread is not held: the worker cannot write while the turn holds it
    failed: list[BaseException] = []

    def write() -> None:
        try:
            app.turn.question_due = True
        except UnguardedWrite as error:
            failed.append(error)

    with app._lock:
        writer = threading.Thread(target=write)
        writer.start()
        writer.join()
        app.turn.question_due = False  # the holder may
    assert len(failed) == 1


@pytest.mark.parametrize("lands", ["a reading", "a failed reading"])
def test_the_worker_lands_a_reading_during_the_next_reply_under_the_lock(make_app, server, caplog, lands):
    """The worker's thread writes the turn's state (notices, the question, the undo log,
    the queue) while the next reply streams on the REPL's thread; every write of
    guarded state checks its lock, so one that skipped it fails here."""
    caplog.set_level(logging.WARNING)
    app = make_app()
    app.profiles.set_english_level("B1")
    answer = extraction(
        fact("The learner plays the cello.", "hobby"),
        profile_changes=[{"field": "english_level", "action": "set", "value": "B2", "evidence": "I'm B2 now"}],
    )
    reading = server.hold("extraction", answer if lands == "a reading" else Error(400))
    server.script("chat", "Lovely!")
    second = server.hold("chat", "Shall we practise?")

    def reading_lands_during_the_second_reply() -> None:
        reading.wait_arrived()  # the worker is reading the first message
        second.wait_arrived()  # and the second reply is under way
        reading.release()
        assert app.worker.wait_idle(10)  # the reading landed, on the worker's thread
        assert app.notices == []  # nothing was told in the middle of the reply
        second.release()

    app.chat("I play the cello, and I'm B2 now.", on_delta=lambda _: None)
    conductor = Conductor(lambda: app.chat("Can we practise listening?", on_delta=lambda _: None))
    reading_lands_during_the_second_reply()
    conductor.join()
    assert app.worker.wait_idle(10)  # the second message's own reading
    app.turn.after_turn()  # the REPL, once the reply is printed
    assert not [r for r in caplog.records if "callback failed" in r.getMessage() or r.exc_info]
    if lands == "a reading":
        assert any("remembered" in n and "cello" in n for n in app.notices)
        assert app.notices[-1].endswith("Update your profile level from B1 to B2? (yes/no)")
        assert len(app.conversation.changes.changes) == 1 and list(app.queue.pending) == []
    else:
        assert app.turn.extraction_failures == 1
        assert [(p.text, p.attempts) for p in list(app.queue.pending)] == [("I play the cello, and I'm B2 now.", 1)]
        assert any("Could not save memories" in note for note in app.turn.take_unsaved_notes())


@pytest.fixture
def session_writes(monkeypatch):
    """Every write of a session file, by the thread that made it."""
    writes: list[str] = []
    write = session_module.SessionStore.write

    def counted(store, state):
        writes.append(threading.current_thread().name)
        return write(store, state)

    monkeypatch.setattr(session_module.SessionStore, "write", counted)
    return writes


def test_a_turn_writes_the_session_once_and_its_reading_rides_on_the_next_write(make_app, server, session_writes):
    app = make_app()
    reading = server.hold("extraction", extraction(fact("The learner plays the cello.", "hobby")))
    session_writes.clear()
    app.chat("I play the cello.", on_delta=lambda _: None)
    assert session_writes == ["MainThread"]  # the turn: one write, while its reading waits at the server
    # that write claimed the message for this session's reading (other terminals read the file)
    assert [p.claimed_by for p in app.sessions.load().pending_extractions] == [app.owner]
    reading.release()
    assert app.worker.wait_idle(10)
    assert session_writes == ["MainThread"]  # the reading landed and wrote no file of its own
    app.chat("Thanks!", on_delta=lambda _: None)
    assert session_writes == ["MainThread", "MainThread"]  # one write per turn
    assert app.sessions.load().pending_extractions == []  # the next write took it: not kept to read again
    assert [c.origin for c in app.sessions.load().changes] == ["turn"]  # and what undo needs


def test_a_crash_before_the_next_write_reads_the_message_again_and_stores_nothing_twice(make_app, server):
    from memora.app.session import release_owner

    cello = fact("The learner plays the cello.", "hobby")
    server.script("extraction", extraction(cello))
    app = make_app()
    app.chat("I play the cello.", on_delta=lambda _: None)
    assert app.worker.wait_idle(10) and len(app.store.list()) == 1
    release_owner(app.owner)  # the process died: its claims lapse, and nothing more is written
    server.script("extraction", extraction(cello))
    again = make_app()
    assert again.worker.wait_idle(10)
    assert len(server.of_kind("extraction")) == 2  # read again at the start
    assert [r.content for r in again.store.list()] == ["The learner plays the cello."]


@pytest.mark.parametrize(
    ("text", "reading", "writers", "left_to_read"),
    [
        # nothing to read: nothing left in the file for the next start
        ("Thanks!", None, ["MainThread"], []),
        ("good morning", None, ["MainThread"], []),
        # read and nothing found: dropped from the messages left to read
        ("The weather was grey today.", extraction(), ["MainThread"], []),
        # a failed reading keeps the message, with its failed attempt, for the next start
        ("I moved to Lyon last spring.", Error(400), ["MainThread"], [1]),
    ],
)
def test_every_kind_of_turn_writes_the_session_once_and_exit_keeps_what_its_reading_left(
    make_app, server, session_writes, text, reading, writers, left_to_read
):
    """The turn's write lands before the reply is shown, holding the message (a crash
    while it is read loses nothing); the reading lands later, on the worker, and what it
    left rides on the session's next write: here, exit's."""
    app = make_app()
    if reading is not None:
        server.script("extraction", reading)
    session_writes.clear()
    app.chat(text, on_delta=lambda _: None)
    assert app.worker.wait_idle(10)
    assert session_writes == writers
    app.close()
    assert [p.attempts for p in app.sessions.load().pending_extractions] == left_to_read
    assert len(server.of_kind("extraction")) == (reading is not None)


def test_a_chat_turn_through_the_repl_writes_the_session_file_once(make_app, server, run_repl, monkeypatch):
    """Counted where the file is replaced: the turn's write keeps the conversation and
    claims what it reads; the next write drops the message read before it from those
    left to read."""
    app = make_app()
    writes: list[tuple[str, list]] = []  # (thread, the unread messages written: text and claim)
    replace = os.replace

    def counted(source, target, *args, **kwargs):
        if Path(target) == app.paths.session:
            pending = json.loads(Path(source).read_text())["pending_extractions"]
            writes.append((threading.current_thread().name, [(p["text"], p["claimed_by"]) for p in pending]))
        return replace(source, target, *args, **kwargs)

    monkeypatch.setattr(os, "replace", counted)
    server.script("extraction", extraction(fact("The learner walked to the old market.", "habit")))
    marks: list[int] = []

    def mark() -> None:  # run by the REPL between two lines, once the worker is idle
        assert app.worker.wait_idle(10)
        marks.append(len(writes))

    server.script("extraction", extraction())
    short, longer = "I had noodles for lunch.", "I walked along the river to the old market and bought bread."
    run_repl(app, [mark, short, mark, longer, mark], settle=False)  # each read between lines
    first, second = writes[marks[0] : marks[1]], writes[marks[1] : marks[2]]
    assert first == [("MainThread", [(short, app.owner)])]  # read after its own reply, before the next line
    assert second == [("MainThread", [(longer, app.owner)])]  # without the first: it was read
    assert len(server.of_kind("extraction")) == 2
