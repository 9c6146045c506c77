"""Seeing and managing what Memora knows: memories, forget all, export/import, why, sessions."""

from __future__ import annotations

import json
import signal
import subprocess
import sys

import pytest
from conftest import ROOT, child_env
from helpers.scripts import extraction, fact


def test_memories_filters_by_type_category_and_text(make_app, run_repl):
    app = make_app()
    app.store.add("The learner loves hiking.", category="hobby")
    app.store.add("The learner practised hotel check-in.", memory_type="episodic")
    app.store.add("The learner's name is Ming.", category="name")
    t = run_repl(app, ["memories --type episodic", "memories --category name", "memories hiking"])
    blocks = t.text.split("You: ")
    assert "hotel check-in" in blocks[1] and "hiking" not in blocks[1] and "Ming" not in blocks[1]
    assert "Ming" in blocks[2] and "hiking" not in blocks[2]
    assert "hiking" in blocks[3] and "Ming" not in blocks[3]


def test_forget_all_needs_the_typed_word(make_app, run_repl):
    app = make_app()
    app.store.add("one fact")
    app.store.add("another fact")
    t = run_repl(app, ["forget all", "yes", "forget all", "DELETE"])
    assert "Cancelled; nothing was deleted." in t.text
    assert "Deleted 2 memories." in t.text
    assert app.store.count(include_superseded=True) == 0
    assert app.store.add("a new fact after forgetting").duplicate is False


def test_export_then_import_restores_everything_into_an_empty_data_folder(
    make_app, run_repl, server, tmp_path, make_settings
):
    app = make_app()
    app.profiles.set_english_level("B2")
    app.profiles.add_learning_goal("IELTS 7")
    old = app.store.add("The learner lives in Tainan.", category="identity")
    app.store.supersede(old.id, "The learner lives in Taipei.", reason="contradiction")
    app.store.add("The learner practised small talk.", memory_type="episodic")
    app.chat("hello", on_delta=lambda _: None)
    target = tmp_path / "backup.json"
    t = run_repl(app, [f"export {target}"])
    assert f"Exported to {target}." in t.text
    assert "personal data" in t.text
    assert oct(target.stat().st_mode & 0o777) == "0o600"
    exported = json.loads(target.read_text())
    assert exported["format"] == "memora-export" and len(exported["memories"]) == 3
    assert {m["status"] for m in exported["memories"]} == {"current", "superseded"}

    other = make_app(settings=make_settings(data_dir=tmp_path / "elsewhere"))
    t = run_repl(other, [f"import {target}", f"import {target}"])
    assert (
        "Imported 3 memories (0 already here, kept as they are), profile merged, session restored (2 messages)."
        in t.text
    )
    assert "Imported 0 memories (3 already here, kept as they are)" in t.text  # twice adds nothing twice
    assert other.profiles.get().english_level == "B2"
    assert other.store.count() == 2 and other.store.count(include_superseded=True) == 3
    [taipei] = other.store.list(text="Taipei")
    assert [r.content for r in other.store.history(taipei.id)] == [
        "The learner lives in Tainan.",
        "The learner lives in Taipei.",
    ]
    assert [m["content"] for m in other.memory.messages] == ["hello", "Reply 1."]
    assert other.store.search("Where does the learner live? Taipei", min_score=0)[0].id == taipei.id


def test_an_old_export_never_revives_a_superseded_fact(make_app, run_repl, tmp_path):
    app = make_app()
    coffee = app.store.add("I drink coffee every day")
    backup = tmp_path / "old.json"
    run_repl(app, [f"export {backup}"])
    app.store.supersede(coffee.id, "I quit coffee last month", reason="contradiction")
    t = run_repl(app, [f"import {backup}"])
    assert "Imported 0 memories (1 already here, kept as they are)" in t.text
    assert [r.content for r in app.store.list()] == ["I quit coffee last month"]
    assert app.store.get(coffee.id).superseded_by is not None


def test_pending_profile_changes_travel_with_an_export(make_app, make_settings, run_repl, server, tmp_path):
    from helpers.scripts import extraction

    app = make_app()
    app.profiles.set_english_level("B1")
    server.script(
        "extraction",
        extraction(
            profile_changes=[{"field": "english_level", "action": "set", "value": "B2", "evidence": "I'm B2 now"}]
        ),
    )
    run_repl(app, ["I'm B2 now"])
    backup = tmp_path / "with-proposal.json"
    run_repl(app, [f"export {backup}"])
    other = make_app(settings=make_settings(data_dir=tmp_path / "other"))
    t = run_repl(other, [f"import {backup}", "profile"])
    assert "1 pending profile change restored" in t.text and "level B1 -> B2" in t.text


def test_import_is_all_or_nothing(make_app, run_repl, tmp_path):
    app = make_app()
    app.store.add("existing memory")
    bad = tmp_path / "bad.json"
    bad.write_text(
        json.dumps(
            {
                "format": "memora-export",
                "version": 1,
                "exported_at": "2026-11-01T00:00:00",
                "user": "x",
                "profile": {},
                "memories": [
                    {
                        "id": "ok1",
                        "content": "fine",
                        "created_at": "2026-11-01T00:00:00",
                        "memory_type": "semantic",
                        "category": "other",
                        "source": "command",
                        "status": "current",
                    },
                    {
                        "id": "bad",
                        "content": "",
                        "created_at": "nope",
                        "memory_type": "dream",
                        "category": "x",
                        "source": "y",
                        "status": "current",
                    },
                ],
            }
        )
    )
    t = run_repl(app, [f"import {bad}", f"import {tmp_path / 'missing.json'}"])
    assert "is not a valid Memora export" in t.text and "Nothing was imported." in t.text
    assert f"No such file: {tmp_path / 'missing.json'}." in t.text
    assert [r.content for r in app.store.list()] == ["existing memory"]


def test_why_shows_what_the_last_background_held(make_app, server, run_repl):
    app = make_app()
    app.profiles.set_english_level("B1")
    app.store.add("The learner's name is Ming.", category="name")
    app.store.add("The learner practised ordering coffee in English", memory_type="episodic")
    t = run_repl(app, ["why", "The learner practised ordering coffee in English", "why"])
    before, after = t.text.split("You: The learner practised")[0], t.text.split("You: why")[-1]
    assert "No chat request has been made in this session yet." in before
    for expected in (
        "user_profile",
        "learner_digest",
        "long_term_memories",
        "English level: B1",
        "The learner's name is Ming.",
        "ordering coffee",
    ):
        assert expected in after
    section_tokens = dict(
        line.split()[:2]
        for line in after.splitlines()
        if line.startswith(("user_profile ", "learner_digest ", "long_term_memories "))
    )
    assert all(int(v) > 0 for v in section_tokens.values())
    assert "score" in after and "dense" in after


def test_status_shows_budget_sections_and_usage(make_app, server, run_repl):
    app = make_app()
    t = run_repl(app, ["hello", "status"])
    status = t.text.split("You: status")[1]
    for expected in (
        "model",
        "data folder",
        "memories",
        "instructions",
        "background",
        "summary",
        "recent",
        "current",
        "chat",
        "embeddings",
        "summaries",
        "extraction",
        str(app.settings.token_budget),
    ):
        assert expected in status
    assert str(app.paths.profile) in status


def test_session_survives_a_restart_and_reset_starts_fresh(make_app, server, run_repl):
    app = make_app()
    run_repl(app, ["I want to practise job interviews"])
    app.close()
    again = make_app()
    t = run_repl(again, ["And tell me more"])
    assert "Resumed your conversation (1 earlier turn). Type" in t.text
    assert [m["content"] for m in server.chats[-1].input if m["role"] != "developer"] == [
        "I want to practise job interviews",
        "Reply 1.",
        "And tell me more",
    ]
    again.store.add("a memory that must survive reset")
    again.profiles.set_english_level("C1")
    t = run_repl(again, ["reset", "Hi again"])
    assert "Started a fresh conversation." in t.text
    assert [m["role"] for m in server.chats[-1].input if m["role"] != "developer"] == ["user"]
    assert again.store.count() == 1 and again.profiles.get().english_level == "C1"


def test_new_flag_starts_a_fresh_conversation(make_app, make_settings, server, clock):
    from memora.app.assistant import Memora
    from memora.model.embeddings import HashEmbedder

    app = make_app()
    app.chat("first conversation", on_delta=lambda _: None)
    app.close()
    fresh = Memora.from_settings(
        make_settings(), clock=clock, embedder=HashEmbedder(), notify=lambda m: None, new_session=True
    )
    assert fresh.memory.messages == []
    fresh.chat("second conversation", on_delta=lambda _: None)
    assert server.chats[-1].background == "Current local time: 2026-11-29 10:00 (Sunday)"
    assert [m["content"] for m in server.chats[-1].input] == ["second conversation"]
    fresh.close()


@pytest.mark.slow  # a child process, a kill or hundreds of turns
def test_a_killed_process_loses_nothing_that_was_shown(tmp_path, server):
    """SIGKILL right after a reply was printed, its extraction under way: the next start
    has the turn, and reads its message."""
    server.script("extraction", extraction(fact("The learner's dog is called Biscuit.", "identity")))
    home = tmp_path / "home"
    env = child_env(MEMORA_HOME=home, MEMORA_EMBEDDING_MODEL="hash", OPENAI_BASE_URL=server.base_url)
    held = server.hold("extraction")  # the first extraction never finishes
    server.fake.scripts["extraction"].rotate(1)
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "chatbot.py"), "--plain"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=ROOT,
    )
    proc.stdin.write("My dog is called Biscuit.\n")
    proc.stdin.flush()
    held.wait_arrived()  # the reply is out and its extraction asked for: the process is killed now
    proc.send_signal(signal.SIGKILL)
    shown, _ = proc.communicate(timeout=30)
    assert "Memora: Reply 1." in shown

    result = subprocess.run(
        [sys.executable, str(ROOT / "chatbot.py"), "--plain"],
        input="exit\n",
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=120,
    )
    assert "Resumed your conversation (1 earlier turn). Type" in result.stdout
    session = json.loads((home / "memora_session.json").read_text())
    assert [m["content"] for m in session["messages"]] == ["My dog is called Biscuit.", "Reply 1."]
    assert session["pending_extractions"] == []  # the interrupted extraction ran again at start

    from long_term_memory import LongTermMemoryStore
    from memora.model.embeddings import HashEmbedder

    store = LongTermMemoryStore(home / "memora_db", embedding_function=HashEmbedder())
    assert [r.content for r in store.list()] == ["The learner's dog is called Biscuit."]
