"""Short messages are read for memories in batches: one extraction call for several,
and nothing said is lost or read twice on the way."""

from __future__ import annotations

import pytest
from helpers.fake_openai import Error
from helpers.scripts import extraction, fact

from memora.core.config import DEFAULT_EXTRACTION_BATCH, Settings
from memora.core.errors import ConfigError
from memora.reading.reading_queue import BATCH_SHORT_TOKENS


def _chat(app, text):
    app.chat(text, on_delta=lambda _: None)
    assert app.worker.wait_idle(10)  # what was queued is done; held messages stay held


def _read(server):
    return [r.input[-1]["content"] for r in server.of_kind("extraction")]


def test_short_messages_wait_and_are_read_together_in_one_call(make_app, server, clock):
    server.script(
        "extraction",
        extraction(
            fact("The learner has a dog called Biscuit.", "identity"),
            fact("The learner works as a nurse.", "identity"),
        ),
    )
    app = make_app()
    batch = app.settings.extraction_batch
    assert batch == DEFAULT_EXTRACTION_BATCH > 2
    said = ["I have a dog called Biscuit.", "I work as a nurse."] + [
        f"Night shift number {n}." for n in range(batch - 2)
    ]
    for text in said[:-1]:
        _chat(app, text)
        clock.advance(minutes=1)
    assert server.of_kind("extraction") == [] and len(app.queue.held) == batch - 1
    assert app.reader.unsaved() == batch - 1  # what exit would wait for
    _chat(app, said[-1])  # the batch's last message: one call reads them all
    [payload] = _read(server)
    expected = "\n".join(f"[10:{n:02d}] {text}" for n, text in enumerate(said))
    assert payload.endswith("Messages:\n" + expected)
    assert sorted(m.content for m in app.store.list()) == [
        "The learner has a dog called Biscuit.",
        "The learner works as a nurse.",
    ]
    assert len(app.queue.held) == 0 and list(app.queue.pending) == []  # all read, none left for the next start
    assert any("The learner works as a nurse." in n for n in app.notices)  # the write line, once read


def test_a_long_message_is_read_at_once_with_the_held_ones(make_app, server):
    app = make_app()
    _chat(app, "Same here!")
    long = (
        "Yesterday I finally finished the essay for my English class about the history of my home town, "
        "which took three weeks, two libraries and far too much coffee; my teacher says the structure is "
        "much clearer than last term, although my conclusions are still a bit too short for her taste. "
        "Next week we start on formal letters, and after that on the short reports she wants from us every Friday "
        "before the end of the morning lesson."
    )
    assert app.counter.count(long) > BATCH_SHORT_TOKENS
    _chat(app, long)
    [payload] = _read(server)
    assert "] Same here!\n[" in payload and long.strip() in payload
    assert len(app.queue.held) == 0


@pytest.mark.parametrize(
    "text",
    [
        "I'm B2 now.",
        "My goal is to pass IELTS.",
        "I want to work in London.",
        "I prefer short explanations.",
        "我現在是 B2 程度。",
        "I no longer like grammar drills.",
    ],
)
def test_a_message_that_may_change_the_profile_is_read_after_its_own_reply(make_app, server, text):
    app = make_app()
    _chat(app, "Thanks, that helps a lot.")  # held
    _chat(app, text)
    [payload] = _read(server)  # one call, held message included
    assert "Thanks, that helps a lot." in payload and text in payload
    assert len(app.queue.held) == 0


def test_a_correction_reads_the_held_messages_before_the_reply_in_the_same_call(make_app, server):
    app = make_app()
    _chat(app, "Nice, sounds good.")
    _chat(app, "No, I never said I like jazz.")
    [payload] = _read(server)
    assert "Nice, sounds good." in payload and "No, I never said I like jazz." in payload
    assert [r.kind for r in server.requests if r.kind in ("chat", "extraction")] == ["chat", "extraction", "chat"]


def test_a_correction_read_after_the_reply_is_not_held(make_app, server):
    server.script("extraction", Error(500, "down for a moment"))  # the early reading fails
    app = make_app()
    _chat(app, "No, I never said I like jazz.")
    assert len(app.queue.held) == 0 and len(server.of_kind("extraction")) == 2  # read again after the reply


def test_exit_reads_the_held_messages(make_app, server):
    import chatbot
    from memora.cli.terminal import PlainConsole

    server.script("extraction", extraction(fact("The learner has a cat.", "identity")))
    app = make_app()
    _chat(app, "I have a cat.")
    assert server.of_kind("extraction") == []
    out: list[str] = []
    lines = ["exit"]
    assert chatbot.run(app, PlainConsole(lambda prompt: lines.pop(0), out.append)) == 0
    assert "Saving memories from the last 1 message\u2026" in "".join(out)
    assert [m.content for m in app.store.list()] == ["The learner has a cat."]


def test_held_messages_left_by_a_crash_are_read_at_the_next_start(make_app, server):
    server.script("extraction", extraction(fact("The learner has a cat.", "identity")))
    first = make_app()
    _chat(first, "I have a cat.")
    assert [p.text for p in list(first.queue.pending)] == ["I have a cat."]  # in the session file, not only in memory
    # no close(): the process died here
    second = make_app()
    assert second.wait_for_extraction(10)
    assert [m.content for m in second.store.list()] == ["The learner has a cat."]
    assert len(server.of_kind("extraction")) == 1 and list(second.queue.pending) == []


def test_waiting_for_extraction_reads_the_held_messages_first(make_app, server):
    server.script("extraction", extraction(fact("The learner has a cat.", "identity")))
    app = make_app()
    _chat(app, "I have a cat.")
    assert app.wait_for_extraction(10)
    assert [m.content for m in app.store.list()] == ["The learner has a cat."]


LONG = (
    "Yesterday I finally finished the essay for my English class about the history of my home town, "
    "which took three weeks, two libraries and far too much coffee; my teacher says the structure is "
    "much clearer than last term, although my conclusions are still a bit too short for her taste. "
    "Next week we start on formal letters, and after that on the short reports she wants from us every Friday "
    "before the end of the morning lesson."
)


def test_undo_takes_back_a_held_message_first_then_the_change_before(make_app, server):
    """A held message is the learner's last message: undo takes it back (it is never read),
    and undo again takes back the change that was shown before it."""
    server.script(
        "extraction",
        extraction(fact("The learner lives in Taipei.", "identity")),
        extraction(fact("The learner has a cat.", "identity")),
    )
    app = make_app()
    _chat(app, LONG)  # read at once: its change line is shown, with "'undo' takes this back"
    assert any("Taipei" in n and "undo" in n for n in app.notices)
    _chat(app, "I have a cat.")  # held: nothing shown yet
    [line, more] = app.undo()
    assert line.startswith("Undone: nothing from your message at") and "I have a cat." in line
    assert "1 left" in more
    assert len(app.queue.held) == 0 and [m.content for m in app.store.list()] == ["The learner lives in Taipei."]
    lines = app.undo()
    assert any("Taipei" in line for line in lines) and app.store.list() == []
    assert app.wait_for_extraction(10)
    assert app.store.list() == [] and len(server.of_kind("extraction")) == 1  # the cat was never read


def test_forget_all_drops_the_messages_not_read_yet(make_app, server, run_repl):
    server.script(
        "extraction",
        extraction(fact("The learner lives in Taipei.", "identity")),
        extraction(fact("The learner has a cat.", "identity")),
    )
    app = make_app()
    _chat(app, LONG)
    _chat(app, "I have a cat.")  # held
    transcript = run_repl(app, ["forget all", "DELETE"], settle=False)
    assert "Deleted 1 memory" in transcript.text
    assert app.store.list() == [] and len(app.queue.held) == 0 and list(app.queue.pending) == []
    app.close(timeout=5)
    assert app.store.list() == [] and len(server.of_kind("extraction")) == 1  # never read after the deletion


def test_forget_one_memory_first_reads_what_is_held(make_app, server, run_repl):
    """A held message restating the forgotten fact is read before the deletion, so it
    cannot bring the fact back afterwards."""
    server.script("extraction", extraction(fact("The learner has a cat.", "identity")))
    app = make_app()
    cat = app.store.add("The learner has a cat.", category="identity")
    _chat(app, "I have a cat, remember?")  # held
    transcript = run_repl(app, [f"forget {cat.id}"], settle=False)  # exit reads whatever is still held
    assert f"Forgot {cat.id}" in transcript.text
    assert app.store.list() == [] and len(server.of_kind("extraction")) == 1


def test_reindex_reads_only_what_a_partly_failed_batch_left(make_app, server):
    from memora.core.errors import EmbeddingError
    from memora.model.embeddings import HashEmbedder

    class Flaky(HashEmbedder):
        failing = False

        def embed(self, texts):
            if self.failing:
                raise EmbeddingError("The embedding request failed (503).")
            return super().embed(texts)

    server.script(
        "extraction",
        extraction(fact("The learner has a cat.", "identity"), fact("The learner works as a nurse.", "identity")),
    )
    embedder = Flaky()
    app = make_app(embedder=embedder)
    _chat(app, "I have a cat.")
    embedder.failing = True
    assert app.wait_for_extraction(10)  # the batch is read; storing its facts fails
    [kept] = list(app.queue.pending)
    assert kept.remaining is not None  # both facts kept, with the batch's last message
    embedder.failing = False
    assert app.reader.retry(30.0) == 1 and app.wait_for_extraction(10)
    assert sorted(m.content for m in app.store.list()) == ["The learner has a cat.", "The learner works as a nurse."]
    assert len(server.of_kind("extraction")) == 1  # the remaining items, not a second reading


def test_a_batch_never_spans_midnight(make_app, server, clock):
    app = make_app()
    clock.now = clock.now.replace(hour=23, minute=58)
    _chat(app, "I went to a jazz concert yesterday.")  # held
    clock.advance(minutes=7)
    _chat(app, "Wish me luck!")
    [payload] = _read(server)  # the day before was read alone, dated that day
    assert payload.endswith("Message:\nI went to a jazz concert yesterday.")
    assert len(app.queue.held) == 1


def test_a_new_session_reads_what_the_old_one_held(make_app, server):
    server.script("extraction", extraction(fact("The learner has a cat.", "identity")))
    app = make_app()
    _chat(app, "I have a cat.")
    app.reset_session()
    assert app.worker.wait_idle(10)
    assert [m.content for m in app.store.list()] == ["The learner has a cat."]


def test_a_held_message_is_read_once_it_leaves_the_recent_turns(make_app, server):
    app = make_app(recent_tokens=60, summary_tokens=60, extraction_batch=10)
    _chat(app, "I have a cat.")
    for _ in range(5):
        _chat(app, "Ok.")  # acknowledgements: never read, and the turns move on
    assert "I have a cat." not in [m["content"] for m in app.memory.messages]  # folded into the summary
    assert server.of_kind("extraction") == []
    _chat(app, "Tell me more.")
    [payload] = _read(server)
    assert "I have a cat." in payload and "Tell me more." in payload


def test_a_mistake_or_a_plan_in_an_earlier_message_of_the_batch_is_its_own(make_app, server, clock):
    server.script(
        "extraction",
        {
            **extraction(
                fact(
                    "The learner has an exam tomorrow.",
                    "schedule",
                    event_phrase="tomorrow",
                    event_date=None,  # left to Memora: resolved against the message that said it
                )
            ),
            "mistakes": [
                {"original": "I has an exam", "corrected": "I have an exam", "rule": "I + have", "kind": "grammar"}
            ],
        },
    )
    app = make_app()
    _chat(app, "I has an exam tomorrow.")
    clock.advance(minutes=5)
    _chat(app, "Wish me luck!")
    assert app.wait_for_extraction(10)
    [memory] = app.store.list()
    assert memory.event_date.isoformat() == "2026-11-30"  # the day after 29 Nov, when it was said
    [call] = server.of_kind("extraction")
    assert "] I has an exam tomorrow.\n[" in call.input[-1]["content"]  # read in one batch
    [entry] = app.ledger.all()
    assert [(e.original, e.seen_at.day) for e in entry.examples] == [("I has an exam", 29)]


def test_a_failed_batch_keeps_every_message_for_the_next_try(make_app, server):
    server.script("extraction", Error(500, "the server is down"))
    app = make_app()
    _chat(app, "I have a cat.")
    _chat(app, "Cats are great.")
    assert app.wait_for_extraction(10)
    assert [p.text for p in list(app.queue.pending)] == ["I have a cat.", "Cats are great."]
    assert all(p.attempts == 1 for p in list(app.queue.pending))


def test_batch_size_is_a_setting_and_one_reads_every_message_at_once(make_app, server):
    app = make_app(extraction_batch=1)
    _chat(app, "I have a cat.")
    assert len(server.of_kind("extraction")) == 1 and len(app.queue.held) == 0
    assert Settings.from_env({"MEMORA_EXTRACTION_BATCH": "6"}).extraction_batch == 6
    with pytest.raises(ConfigError, match="extraction batch"):
        Settings.from_env({"MEMORA_EXTRACTION_BATCH": "0"})


def test_forgetting_the_learner_drops_their_held_messages_unread(make_app, server, run_repl, data_dir):
    app = make_app()
    _chat(app, "I have a cat.")
    assert len(app.queue.held) == 1
    transcript = run_repl(app, ["forget user default", "default"], settle=False)
    assert "Deleted learner" in transcript.text
    app.close(timeout=5)
    assert server.of_kind("extraction") == []  # never sent after the deletion
    assert not (data_dir / "memora_session.json").exists()
