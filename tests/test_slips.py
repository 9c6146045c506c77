"""The smaller slips a new user hits: each one as the learner would see it."""

from __future__ import annotations

import json

import pytest
from conftest import run_chatbot

from memora.model.embeddings import HashEmbedder

FACT = {
    "facts": [
        {
            "text": "The learner moved to Taipei last year.",
            "memory_type": "semantic",
            "category": "identity",
            "event_phrase": None,
            "event_date": None,
        }
    ],
    "profile_changes": [],
    "corrections": [],
}


def test_export_to_a_missing_folder_is_refused_and_creates_nothing(make_app, run_repl, tmp_path):
    app = make_app()
    target = tmp_path / "no" / "such" / "dir" / "x.json"
    t = run_repl(app, [f"export {target}"])
    assert (
        f"Error: Cannot export to {target}: the folder {target.parent} does not exist. Nothing was exported.\n"
        in t.text
    )
    assert not (tmp_path / "no").exists()
    # an existing folder still works
    t = run_repl(app, [f"export {tmp_path / 'x.json'}"])
    assert (tmp_path / "x.json").is_file() and f"Exported to {tmp_path / 'x.json'}." in t.text


@pytest.mark.parametrize("typed", ["{tmp}/nope/", "{tmp}/nope//", "'{tmp}/nope/'", "{tmp}/a/b/", '"{tmp}/with space/"'])
def test_export_to_a_missing_folder_typed_with_a_trailing_slash_is_refused(make_app, run_repl, tmp_path, typed):
    app = make_app()
    out = tmp_path / "out"
    out.mkdir()
    t = run_repl(app, [f"export {typed.format(tmp=out)}"])
    assert "does not exist. Nothing was exported.\n" in t.text and "Exported to" not in t.text
    assert list(out.iterdir()) == []  # no file named after the folder, no folder made


def test_export_to_an_existing_folder_typed_with_a_trailing_slash_writes_inside_it(make_app, run_repl, tmp_path):
    app = make_app()
    (tmp_path / "backups").mkdir()
    t = run_repl(app, [f"export {tmp_path}/backups/"])
    [written] = (tmp_path / "backups").iterdir()
    assert written.suffix == ".json" and f"Exported to {written}." in t.text


def test_a_memory_cap_below_the_count_is_refused_and_says_what_to_do(make_app, run_repl):
    app = make_app()
    for text in ("I live in Taipei", "I work in a bank", "I play the violin"):
        app.store.add(text)
    t = run_repl(app, ["memory cap 2", "memory cap", "memory cap 3", "remember I have a cat"])
    assert (
        "Error: You have 3 memories, more than a cap of 2; the cap was not changed. "
        "Forget 1 first ('forget <id>'), or choose 3 or more.\n" in t.text
    )
    assert f"Memory cap: {app.settings.memory_cap} (3 current memories)." in t.text  # unchanged
    assert "Memory cap set to 3. Memory is now full: new memories are not saved until you forget some.\n" in t.text
    assert "Memory is full (3 memories)" in t.text  # what the warning said would happen
    assert app.store.memory_cap == 3 and app.store.count() == 3


def test_a_message_that_could_not_be_saved_is_told_at_the_next_prompt_and_reindex_retries_it(
    make_app, server, run_repl, local_embedder
):
    retired = HashEmbedder()
    retired.name = "retired:model-1"  # a model this machine cannot run any more
    old = make_app(embedder=retired)
    old.store.add("The learner sings in a choir")
    old.close()
    server.script("extraction", FACT, FACT)
    app = make_app(embedder=local_embedder)  # now set to another model: the store does not match
    assert app.store.mismatch
    t = run_repl(app, ["I moved to Taipei last year.", "status", "reindex", "memories"])
    told = t.text.split("You: status", 1)[1]
    assert "Note: Could not save memories from \u201cI moved to Taipei last year.\u201d yet (" in told
    assert "Memora will try again after 'reindex' or at the next start." in told
    assert "Reading memories again from 1 earlier message." in t.text
    listed = t.text.rsplit("You: memories", 1)[1]
    assert "The learner moved to Taipei in 2025 (last year)." in listed  # as the tutor reads it
    assert app.turn.take_unsaved_notes() == []
    app.wait_for_extraction(10)
    assert json.loads(app.paths.session.read_text())["pending_extractions"] == []


def test_forget_user_for_a_learner_with_no_data_says_so_without_asking(make_app, run_repl):
    app = make_app()
    t = run_repl(app, ["forget user alice", "profile"])
    assert "Error: There is no learner named 'alice' here (see 'users'); nothing was deleted.\n" in t.text
    assert "Type the name to confirm" not in t.text
    assert "You: profile\n" in t.text  # "profile" was not eaten as a confirmation


def test_exit_counts_the_messages_it_saves_not_the_queued_writes(make_app):
    import threading

    import chatbot
    from memora.cli.terminal import PlainConsole

    app = make_app()
    gate = threading.Event()
    app.worker.submit(gate.wait)  # a queued store write, like the follow-up mark a hint adds
    app.chat("My favourite singer is Jay Chou.", on_delta=lambda _: None)
    assert app.worker.pending == 2  # one write, and the message's reading
    out: list[str] = []
    lines = ["exit"]

    def write(text: str) -> None:
        out.append(text)
        if text.startswith("Saving memories"):
            gate.set()  # the line is printed: let the worker finish

    assert chatbot.run(app, PlainConsole(lambda prompt: lines.pop(0), write)) == 0
    assert "".join(out).endswith("\nSaving memories from your last message\u2026\nGoodbye!\n")


@pytest.mark.slow  # a child process, a kill or hundreds of turns
def test_the_embedding_mismatch_notice_comes_after_the_welcome_line(tmp_path):
    home = tmp_path / "home"
    first = run_chatbot(["remember I sing in a choir", "exit"], MEMORA_HOME=home, MEMORA_EMBEDDING_MODEL="hash")
    assert first.returncode == 0, first.stderr
    second = run_chatbot(["exit"], MEMORA_HOME=home, MEMORA_EMBEDDING_MODEL="local")
    lines = second.stdout.splitlines()
    assert lines[0].startswith("Memora, your English tutor.")
    assert lines[1].startswith("Note: Your memories were embedded with hash:v1-384")


def test_why_and_status_tables_have_no_empty_header_rows(make_app, run_repl):
    app = make_app()
    t = run_repl(app, ["why", "status"])
    lines = t.text.splitlines()
    for title in ("Why", "Memory extraction"):
        header = lines[lines.index(title) + 1]
        assert header.strip(), f"{title} has an empty header row"


def test_history_says_the_first_version_was_made_by_remember_and_the_next_by_the_edit(make_app, run_repl):
    app = make_app()
    t = run_repl(app, ["remember I live in Tainan"])
    first = app.store.list()[0]
    t = run_repl(app, [f"memory edit {first.id} I live in Taipei", f"history {first.id}"])
    rows = t.text.split("You: history", 1)[1].splitlines()
    header = next(line for line in rows if line.startswith("id "))
    assert header.split() == ["id", "from", "until", "status", "made", "by", "ended", "by", "text"]
    old = next(line for line in rows if line.startswith(first.id))
    new = next(line for line in rows if "I live in Taipei" in line)
    assert " remember " in old and " edit " in old and old.rstrip().endswith("I live in Tainan")
    assert " edit " in new and " remember " not in new


def test_quoted_memories_end_with_one_full_stop(make_app, run_repl):
    app = make_app()
    t = run_repl(
        app,
        ["remember I like green tea.", "remember I like green tea.", "remember I like jazz", "remember I like jazz"],
    )
    assert "Already remembered as" in t.text
    assert "\u201cI like green tea.\u201d\n" in t.text and "\u201d." not in t.text.replace(
        "\u201cI like jazz\u201d.", ""
    )
    assert "\u201cI like jazz\u201d.\n" in t.text


def test_quoted_helper_never_doubles_sentence_punctuation():
    from memora.core.text_utils import quoted

    assert quoted("I like tea.", 80) == "\u201cI like tea.\u201d"
    assert quoted("Do I?", 80) == "\u201cDo I?\u201d"
    assert quoted("I like tea", 80) == "\u201cI like tea\u201d."
    assert quoted("x" * 100, 10).endswith("\u2026\u201d")


def test_the_warm_up_starts_once_the_prompt_is_shown_not_before(make_app, monkeypatch):
    """Loading the embedding model beside the start-up would hold the first prompt back."""
    import threading

    import chatbot
    from memora.cli.terminal import PlainConsole

    started = threading.Event()
    monkeypatch.setattr(chatbot, "preload", lambda app, stop: started.set())
    said: list[tuple[str, bool]] = []
    waited: list[bool] = []

    def read(prompt: str) -> str:
        waited.append(started.wait(30))  # the prompt is shown: the warm-up begins beside it
        return "exit"

    console = PlainConsole(read, lambda text: said.append((text, started.is_set())))
    assert chatbot.run(make_app(), console, warm_up=True, raise_unexpected=True) == 0
    assert waited == [True]
    greeting = [warm for text, warm in said if "Memora, your English tutor" in text]
    assert greeting == [False]


def test_exit_during_the_warm_up_says_what_it_waits_for_and_stops_it(make_app, run_repl, monkeypatch):
    import chatbot
    from memora.cli.terminal import PlainConsole

    asked: list[bool] = []

    def slow_warm_up(app, stop):
        asked.append(stop.wait(30))  # a model load that only ends when exit asks it to

    monkeypatch.setattr(chatbot, "preload", slow_warm_up)
    app = make_app()
    out: list[str] = []
    lines = ["exit"]
    console = PlainConsole(lambda prompt: lines.pop(0), out.append)
    assert chatbot.run(app, console, warm_up=True, raise_unexpected=True) == 0
    text = "".join(out)
    assert "Finishing start-up first (loading the embedding model and knowledge notes)…\nGoodbye!\n" in text
    assert asked == [True]  # stopped because exit asked, not by the 30 s timeout


# -- a quote at the end of a sentence is closed once; failures say why in words ---------

from helpers.fake_openai import Error  # noqa: E402

MALFORMED = "Memory extraction failed: the model's answer was not in the expected format, even after a repair request"


@pytest.mark.parametrize(
    "answer, reason",
    [
        (Error(500, "scripted failure."), "Memory extraction failed with HTTP 500: scripted failure)"),
        ("this is not json {", "Memory extraction failed: the model's answer was not in the expected format, even"),
        (
            '{"facts": "not a list"}',
            "Memory extraction failed: the model's answer was not in the expected format, even",
        ),
        (
            '{"facts": [], "profile_changes": []',
            "Memory extraction failed: the model's answer was not in the expected format, even",
        ),
    ],
    ids=["http-500", "not-json", "wrong-shape", "cut-off-json"],
)
def test_an_extraction_failure_is_told_with_a_short_reason_and_one_full_stop(
    make_app, server, run_repl, answer, reason
):
    server.script("extraction", answer, answer)  # the answer, and the same again to the repair request
    app = make_app()
    t = run_repl(app, ["I moved to Taipei last year.", "status"])
    [note] = [line for line in t.text.splitlines() if line.startswith("Note: Could not save memories")]
    assert reason in note, note
    assert ".)" not in note and "..)" not in note and "\u201d." not in note.split("(")[0]
    for raw in ("validation error", "ValidationError", "input_value", "type=", "pydantic"):
        assert raw not in t.text


@pytest.mark.parametrize("text", ["I play chess.", "I play chess!", "I play chess", "我喜歡下棋。"])
def test_undo_closes_the_quoted_memory_with_one_full_stop(make_app, server, run_repl, text):
    app = make_app()
    run_repl(app, [f"remember {text}"])
    t = run_repl(app, ["undo"])
    [line] = [line for line in t.text.splitlines() if line.startswith("Undone (")]
    closed = text.endswith((".", "!", "\u3002"))
    assert line.endswith(f"removed {line.split('removed ')[1][:6]} \u201c{text}\u201d" + ("" if closed else "."))


@pytest.mark.parametrize(
    "evidence", ["I don't like short answers any more.", "I don't like short answers any more", "Short answers? No!"]
)
def test_a_profile_question_quotes_the_learner_once_closed(evidence):
    from memora.reading.proposals import ProfileProposal

    question = ProfileProposal.new("preference", "remove", "Short answers", "Short answers", evidence).question()
    closed = evidence.endswith((".", "!", "?"))
    assert question.startswith(f"You said \u201c{evidence}\u201d{'' if closed else '.'} Remove the ")
