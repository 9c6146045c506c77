"""The turn as a pipeline: the batching policy as one pure function, state changed
only by its owners' methods under its lock while the worker lands a reading mid-reply,
and one session write per turn (its reading, when it reads, writes once more)."""

from __future__ import annotations

import json
import logging
import os
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from helpers.fake_openai import Error
from helpers.scripts import extraction, fact, retracting
from helpers.threads import Conductor

import memora.app.session as session_module
from memora.app.session import PendingExtraction
from memora.core.storage import UnguardedWrite
from memora.model.tokens import TokenCounter
from memora.reading import reading_queue as rq
from memora.reading.reading_queue import plan_reading

COUNT = TokenCounter().count  # the real tokenizer, as the policy counts
NOON = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)


def said(job_id: str, text: str, at: datetime = NOON) -> PendingExtraction:
    return PendingExtraction(job_id=job_id, text=text, said_at=at)


SHORT_TEXT = "I had noodles for lunch."
LONG_TEXT = " ".join(["I walked along the river to the old market and bought bread, cheese and apples."] * 6)
YESTERDAY = NOON - timedelta(days=1)
# Under BATCH_SHORT_TOKENS each (77 tokens), over BATCH_MAX_TOKENS four together.
NEAR_LIMIT = " ".join(["I like green tea"] * 19) + "."

# (case, message, held, recent (None: every held text), batch size, read early, plan)
CASES = [
    ("nothing new, nothing held", None, [], None, 5, False, ((), (), ())),
    (
        "up to date: every held message read, one reading per day",
        None,
        [said("a", SHORT_TEXT, YESTERDAY), said("b", SHORT_TEXT), said("c", "I like tea.")],
        None,
        5,
        False,
        ((("a",), ("b", "c")), (), (rq.UP_TO_DATE,)),
    ),
    (
        "an acknowledgement is never read and leaves the held ones held",
        said("m", "Thanks!"),
        [said("a", SHORT_TEXT)],
        None,
        5,
        False,
        ((), ("a",), (rq.ACKNOWLEDGEMENT,)),
    ),
    ("a short message waits", said("m", SHORT_TEXT), [], None, 5, False, ((), ("m",), (rq.SHORT,))),
    (
        "a short message joins the held ones of its day",
        said("m", SHORT_TEXT),
        [said("a", "I like tea.")],
        None,
        5,
        False,
        ((), ("a", "m"), (rq.SHORT,)),
    ),
    (
        "held from another day: read on its own, the new one waits",
        said("m", SHORT_TEXT),
        [said("a", "I like tea.", YESTERDAY)],
        None,
        5,
        False,
        ((("a",),), ("m",), (rq.ANOTHER_DAY, rq.SHORT)),
    ),
    (
        "a long message is read at once, the held ones with it",
        said("m", LONG_TEXT),
        [said("a", SHORT_TEXT)],
        None,
        5,
        False,
        ((("a", "m"),), (), (rq.LONG,)),
    ),
    ("a level is acted on now", said("m", "I'm B2 now."), [], None, 5, False, ((("m",),), (), (rq.PROFILE,))),
    ("a goal in Chinese too", said("m", "我的目標是雅思。"), [], None, 5, False, ((("m",),), (), (rq.PROFILE,))),
    (
        "a correction is acted on now",
        said("m", "You're wrong about my city."),
        [said("a", SHORT_TEXT)],
        None,
        5,
        False,
        ((("a", "m"),), (), (rq.CORRECTION,)),
    ),
    (
        "read before the reply: the held ones of its day go with it",
        said("m", "You're wrong about my city."),
        [said("a", SHORT_TEXT), said("b", SHORT_TEXT, YESTERDAY)],
        None,
        5,
        True,
        ((("b",), ("a", "m")), (), (rq.ANOTHER_DAY, rq.READ_EARLY, rq.CORRECTION)),
    ),
    (
        "the batch is full",
        said("m", SHORT_TEXT),
        [said("a", "I like tea."), said("b", "I like rice.")],
        None,
        3,
        False,
        ((("a", "b", "m"),), (), (rq.BATCH_FULL,)),
    ),
    (
        "a batch of one reads every message",
        said("m", SHORT_TEXT),
        [],
        None,
        1,
        False,
        ((("m",),), (), (rq.BATCH_FULL,)),
    ),
    (
        "too much held text",
        said("m", NEAR_LIMIT),
        [said(i, NEAR_LIMIT) for i in "abc"],
        None,
        10,
        False,
        ((("a", "b", "c", "m"),), (), (rq.TOO_MUCH,)),
    ),
    (
        "a held message has left the recent turns",
        said("m", SHORT_TEXT),
        [said("a", "I like tea.")],
        {SHORT_TEXT},
        5,
        False,
        ((("a", "m"),), (), (rq.LEFT_RECENT,)),
    ),
]


@pytest.mark.exact_tokens("o200k_base")  # the cases' lengths are chosen against the real counts
@pytest.mark.parametrize(
    "message, held, recent, batch, early, expected", [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_the_batching_policy_holds_or_reads_with_its_reasons(message, held, recent, batch, early, expected):
    assert COUNT(NEAR_LIMIT) <= rq.BATCH_SHORT_TOKENS < COUNT(LONG_TEXT)
    assert 3 * COUNT(NEAR_LIMIT) <= rq.BATCH_MAX_TOKENS < 4 * COUNT(NEAR_LIMIT)
    recent = {p.text for p in held} if recent is None else recent
    before = list(held)
    plan = plan_reading(message, held, count=COUNT, recent=recent, batch_size=batch, read_early=early)
    assert (plan.read, plan.hold, plan.reasons) == expected
    assert held == before  # pure: nothing it was given changed


def test_every_reason_has_a_row():
    reasons = {value for name, value in vars(rq).items() if name.isupper() and isinstance(value, str) and " " in value}
    assert reasons == {why for case in CASES for why in case[-1][2]}


def test_guarded_state_refuses_a_write_without_its_lock(make_app):
    app = make_app()
    with pytest.raises(UnguardedWrite):
        app.turn.question_due = True
    with pytest.raises(UnguardedWrite):
        app.queue.held = ()
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
    app = make_app(extraction_batch=1)
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


def test_a_turn_writes_the_session_once_and_its_reading_once_more(make_app, server, session_writes):
    app = make_app(extraction_batch=1)
    reading = server.hold("extraction", extraction(fact("The learner plays the cello.", "hobby")))
    session_writes.clear()
    app.chat("I play the cello.", on_delta=lambda _: None)
    assert session_writes == ["MainThread"]  # the turn: one write, while its reading waits at the server
    # that write claimed the message for this session's reading (other terminals read the file)
    assert [p.claimed_by for p in app.sessions.load().pending_extractions] == [app.owner]
    reading.release()
    assert app.worker.wait_idle(10)
    assert session_writes == ["MainThread", "memora-extraction"]  # what it read: no claim of its own
    assert app.sessions.load().pending_extractions == []  # read, and not kept to read again


def test_a_chat_turn_through_the_repl_writes_the_session_file_once_and_its_reading_once(
    make_app, server, run_repl, monkeypatch
):
    """Counted where the file is replaced: the turn's write keeps the conversation and
    claims what it reads; the reading's keeps what it found (for 'undo') and drops the
    messages from those left to read. A held message is the turn's write alone."""
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

    run_repl(app, [mark, SHORT_TEXT, mark, LONG_TEXT, mark], settle=False)  # nothing read between lines
    held, read = writes[marks[0] : marks[1]], writes[marks[1] : marks[2]]
    assert held == [("MainThread", [(SHORT_TEXT, None)])]
    assert read == [
        ("MainThread", [(SHORT_TEXT, app.owner), (LONG_TEXT, app.owner)]),  # one batch, claimed by the turn's write
        ("memora-extraction", []),
    ]
    assert len(server.of_kind("extraction")) == 1


def test_a_held_message_and_a_correction_read_early_write_the_session_once(make_app, server, session_writes):
    app = make_app()
    wrong = app.store.add("The learner lives in Paris.")
    session_writes.clear()
    app.chat("I had noodles for lunch.", on_delta=lambda _: None)  # short: held, nothing read
    assert session_writes == ["MainThread"] and len(app.queue.held) == 1
    server.script(
        "extraction",
        extraction(corrections=[{"statement": wrong.content, "evidence": "You're wrong about Paris"}]),
    )
    server.script("correction", retracting(wrong.content))
    reading = server.hold("extraction", extraction())
    session_writes.clear()
    app.chat("You're wrong about Paris, I live in Lyon.", on_delta=lambda _: None)
    # the retraction applied after the reply and the turn itself: one write
    assert session_writes == ["MainThread"]
    assert app.store.get(wrong.id).status == "superseded" and len(app.conversation.changes.changes) == 1
    reading.release()
    assert app.worker.wait_idle(10)
