"""Batched reading is invisible to the learner.

A short message waits to be read with the next ones (one extraction call for
several), but nothing the learner can see may lag behind because of it: every
command that shows or changes what Memora knows reads what is held first, so
the after-turn line comes no later than the next command that could show it,
a mistake the tutor just corrected is in 'mistakes' and 'review', and 'undo'
takes back what the last message said.
"""

from __future__ import annotations

import pytest
from helpers.scripts import extraction, fact

TORTOISE = "The learner keeps a pet tortoise called Shelly."
SAID = "I keep a pet tortoise called Shelly."  # short: held to be read with the next ones
GOED = {"original": "Yesterday I goed", "corrected": "Yesterday I went", "rule": "go: went", "kind": "grammar"}


def reading(*facts, mistakes=()):
    return {**extraction(*facts), "mistakes": list(mistakes)}


def after(transcript: str, line: str) -> str:
    return transcript.split(f"You: {line}\n", 1)[1]


@pytest.mark.parametrize(
    "command, shows",
    [
        ("memories", TORTOISE),
        ("search tortoise", TORTOISE),
        ("export", "Exported"),
        ("why", "No chat request"),  # nothing to show of the request, but the line came first
        ("progress --since 1w", "Days practised"),
        ("mistakes", "Yesterday I goed"),
        ("memory cap", "Memory cap"),
    ],
)
def test_a_command_that_shows_what_memora_knows_reads_the_held_message_first(
    make_app, server, run_repl, command, shows
):
    server.script("extraction", reading(fact(TORTOISE, "identity"), mistakes=[GOED]))
    app = make_app()
    app.chat(SAID + " Yesterday I goed to buy it lettuce.", on_delta=lambda _: None)
    assert app.worker.wait_idle(10) and len(app.queue.held) == 1  # held: nothing read, nothing shown
    if command == "why":
        with app._lock:  # the turn's state is changed only under the session's lock (turn.py)
            app.turn.last_prepared = None  # the line must come before what the command shows
    t = run_repl(app, [command], settle=False)
    lines = after(t.text, command).splitlines()
    reading_line = next(i for i, line in enumerate(lines) if "Reading your last messages" in line)
    remembered = next(i for i, line in enumerate(lines) if "remembered" in line and "tortoise" in line)
    assert reading_line < remembered  # said while it reads, then what it remembered, then the command
    assert shows in "\n".join(lines[remembered + 1 :])
    assert len(app.queue.held) == 0 and len(server.of_kind("extraction")) == 1


def test_undo_right_after_a_held_message_takes_back_what_it_said(make_app, server, run_repl):
    server.script("extraction", reading(fact(TORTOISE, "identity")))
    app = make_app()
    app.chat(SAID, on_delta=lambda _: None)
    t = run_repl(app, ["undo", "memories"], settle=False)
    assert "Nothing to undo" not in t.text
    assert "Undone: nothing from your message at 10:00 (\u201cI keep a pet tortoise called Shelly.\u201d)" in t.text
    app.close()
    assert server.of_kind("extraction") == [] and app.store.list() == []  # never stored later


def test_a_mistake_the_tutor_just_corrected_is_in_review_at_once(make_app, server, run_repl):
    server.script("extraction", reading(mistakes=[GOED]))
    app = make_app()
    app.chat("Yesterday I goed to the park.", on_delta=lambda _: None)  # held
    assert len(app.queue.held) == 1
    t = run_repl(app, ["review", "Yesterday I went to the park."], settle=False)
    assert "Nothing to review today" not in t.text
    assert "Reading your last messages for memories first" in t.text
    assert "[1/1]" in t.text and "Yesterday I goed" in t.text
    assert "Review done: 1 answer saved (1 right)." in t.text


def test_status_still_reports_what_is_held(make_app, server, run_repl):
    app = make_app()
    app.chat(SAID, on_delta=lambda _: None)
    t = run_repl(app, ["status"], settle=False)
    assert "Reading your last messages" not in t.text
    import re

    assert re.search(r"short messages held to read with the\s+next\s+1\b", t.text), t.text


def test_history_reads_the_held_message_first(make_app, server, run_repl):
    app = make_app()
    earlier = app.store.add("The learner lives in Tainan.", category="identity").record
    server.script("extraction", reading(fact(TORTOISE, "identity")))
    app.chat(SAID, on_delta=lambda _: None)
    assert app.worker.wait_idle(10) and len(app.queue.held) == 1
    t = run_repl(app, [f"history {earlier.id}"], settle=False)
    lines = after(t.text, f"history {earlier.id}").splitlines()
    remembered = next(i for i, line in enumerate(lines) if "remembered" in line and "tortoise" in line)
    table = next(i for i, line in enumerate(lines) if line.startswith(f"History of {earlier.id}"))
    assert remembered < table and "lives in Tainan" in "\n".join(lines[table:])
    assert len(app.queue.held) == 0


def test_forget_right_after_a_held_message_is_as_if_it_had_been_read_first(make_app, server, run_repl):
    """'forget' decides at once (a deletion never waits for a reading), and the held
    message is read with what was forgotten already ruled out: the learner sees what
    they would see had it been read first. The forgotten memory does not come back
    from the message that repeats it; what else the message said is remembered, and
    told before the next command that shows memories."""
    cat = "The learner has a cat called Momo."
    app = make_app()
    shelly = app.store.add(TORTOISE, category="identity").record
    server.script("extraction", reading(fact(TORTOISE, "identity"), fact(cat, "identity")))
    app.chat("Shelly is my tortoise. Momo is my cat.", on_delta=lambda _: None)
    assert app.worker.wait_idle(10) and len(app.queue.held) == 1
    t = run_repl(app, [f"forget {shelly.id}", "memories"], settle=False)
    assert f"Forgot {shelly.id}." in t.text
    shown = after(t.text, "memories")
    told = next(i for i, line in enumerate(shown.splitlines()) if "remembered" in line and "Momo" in line)
    table = next(i for i, line in enumerate(shown.splitlines()) if "memor" in line and "cap" in line)
    assert told < table
    assert "1 memory" in shown and "tortoise" not in shown  # not remembered again, not even told
    assert [r.content for r in app.store.list()] == [cat]
    assert len(server.of_kind("extraction")) == 1
