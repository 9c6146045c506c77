"""Learners are kept apart: no read path of one ever shows the other's data."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import timedelta

import pytest
from conftest import ROOT, child_env
from helpers.stores import chroma_collection

from memora.core.errors import ConfigError

ALICE_SECRETS = ["Alice", "violin", "Kaohsiung", "IELTS 8", "tea ceremony"]


def fill(app, name, hobby, city, goal, event):
    app.profiles.set_english_level("B2")
    app.profiles.add_learning_goal(goal)
    app.store.add(f"The learner's name is {name}.", category="name")
    app.store.add(f"The learner plays the {hobby}.", category="hobby")
    app.store.add(f"The learner lives in {city}.", category="identity")
    app.store.add(
        f"The learner has a {event} on Friday.", category="schedule", created_at=app.clock() - timedelta(days=6)
    )


@pytest.fixture
def two_learners(make_app, server):
    alice = make_app(user="alice")
    fill(alice, "Alice", "violin", "Kaohsiung", "IELTS 8", "tea ceremony")
    alice.chat("My violin teacher lives in Kaohsiung", on_delta=lambda _: None)
    bob = make_app(user="bob")
    fill(bob, "Bob", "drums", "Hsinchu", "TOEIC 900", "driving test")
    return alice, bob


def test_no_read_path_shows_the_other_learner(two_learners, server, run_repl, tmp_path):
    alice, bob = two_learners
    server.fake.clear()
    export = tmp_path / "bob.json"
    t = run_repl(
        bob,
        [
            "profile",
            "memories --all",
            "search violin Kaohsiung tea ceremony Alice",
            "status",
            "Tell me about violin and Kaohsiung and the tea ceremony",
            "why",
            f"export {export}",
        ],
    )
    shown = "\n".join(line for line in t.text.splitlines() if not line.startswith("You: "))  # not Bob's own typing
    developer = server.chats[-1].background
    data = json.loads(export.read_text())
    exported = json.dumps([data["profile"], data["memories"], data["pending_profile_changes"]])  # not Bob's own chat
    for secret in ALICE_SECRETS:
        assert secret not in shown, secret
        assert secret not in developer, secret  # digest, hint, memories, profile
        assert secret not in exported, secret
    assert "Bob" in developer and "driving test" in server.chats[-1].section("follow_up")
    assert data["user"] == "bob"


@pytest.mark.chroma  # each learner's Chroma collection
def test_each_learner_has_their_own_files_and_collection(two_learners, data_dir):
    alice, bob = two_learners
    assert alice.paths.profile == data_dir / "users" / "alice" / "user_profile.json"
    assert bob.paths.session == data_dir / "users" / "bob" / "memora_session.json"
    assert (
        chroma_collection(alice.store).name == "memora-alice-memories"
        and chroma_collection(bob.store).name == "memora-bob-memories"
    )
    assert json.loads(alice.paths.profile.read_text())["learning_goals"] == ["IELTS 8"]


def test_users_lists_learners_and_forget_user_deletes_one_after_typing_the_name(
    two_learners, make_app, run_repl, data_dir
):
    alice, bob = two_learners
    default = make_app()
    t = run_repl(default, ["users", "forget user alice", "nope", "forget user alice", "alice", "users"])
    listing = t.text.split("You: forget user")[0]
    assert "alice" in listing and "bob" in listing and "default (you)" in listing
    assert "Cancelled; nothing was deleted." in t.text
    assert (
        "Deleted learner 'alice': 4 memories, user_profile.json, memora_session.json, memora_activity.json." in t.text
    )
    assert not (data_dir / "users" / "alice").exists()
    assert "memora-alice-memories" not in default.connection.list_collection_names()
    assert bob.store.count() == 4 and bob.profiles.get().learning_goals == ["TOEIC 900"]


@pytest.mark.parametrize("name", ["../x", "/etc", "a/b", "..", "", "x" * 40, "名 字", "bob smith", ".名字"])
def test_learner_names_cannot_escape_the_data_folder(make_settings, name):
    with pytest.raises(ConfigError, match="Invalid learner name"):
        make_settings(user=name)


@pytest.mark.slow  # a child process, a kill or hundreds of turns
def test_user_flag_and_environment_select_the_learner(tmp_path):
    home = tmp_path / "home"
    env = child_env(MEMORA_HOME=home, MEMORA_EMBEDDING_MODEL="hash")
    run = lambda args, text, **extra: subprocess.run(  # noqa: E731
        [sys.executable, str(ROOT / "chatbot.py"), "--plain", *args],
        input=text,
        capture_output=True,
        text=True,
        env={**env, **extra},
        cwd=ROOT,
        timeout=120,
    )
    assert run(["--user", "mei"], "profile level c1\nexit\n").returncode == 0
    assert json.loads((home / "users" / "mei" / "user_profile.json").read_text())["english_level"] == "C1"
    shown = run([], "profile\nexit\n", MEMORA_USER="mei").stdout
    assert "Profile of mei" in shown and "C1" in shown
    bad = run(["--user", "../etc"], "exit\n")
    assert bad.returncode == 2 and "Invalid learner name" in bad.stderr and "Traceback" not in bad.stderr


def test_forgetting_the_current_learner_deletes_everything_and_exits(two_learners, run_repl, data_dir):
    alice, bob = two_learners
    t = run_repl(alice, ["forget user alice", "alice", "profile"])
    assert "Deleted learner 'alice'" in t.text
    assert "Profile of alice" not in t.text  # Memora left right after
    assert not (data_dir / "users" / "alice").exists()  # and wrote nothing back on the way out
    assert bob.store.count() == 4


@pytest.mark.parametrize("answer", ["while the deletion waits", "after the deletion gave up waiting"])
def test_forgetting_yourself_while_extraction_runs_brings_nothing_back(
    make_app, server, run_repl, data_dir, monkeypatch, answer
):
    app = make_app()
    held = server.hold(
        "extraction",
        {
            "facts": [],
            "profile_changes": [
                {
                    "field": "learning_goal",
                    "action": "add",
                    "value": "work in London",
                    "evidence": "I want to work in London",
                }
            ],
            "corrections": [],
        },
    )
    worker = app.worker
    cancel = worker.cancel

    def cancel_with_the_extraction_at_the_server(*args, **kwargs):
        held.wait_arrived()  # the learner is deleted while their message is being read
        assert not held.answered.is_set()
        if answer == "while the deletion waits":
            worker.extractor.cancelled = True
            held.release()
            cancel(*args, **kwargs)
        else:
            cancel(timeout=0)  # a model slower than the wait: its answer comes after the files are gone

    close = app.close

    def answer_then_close(*args, **kwargs):
        held.release()  # (the deletion is done by the time Memora closes)
        return close(*args, **kwargs)

    monkeypatch.setattr(worker, "cancel", cancel_with_the_extraction_at_the_server)
    monkeypatch.setattr(app, "close", answer_then_close)
    t = run_repl(app, ["I want to work in London", "forget user default", "default"], settle=False)
    assert "Deleted learner 'default'" in t.text
    held.release()
    assert held.answered.wait(10)  # the extraction's answer did arrive
    assert app.wait_for_extraction(10)
    app.close(timeout=10)
    assert not (data_dir / "user_profile.json").exists()
    assert not (data_dir / "memora_session.json").exists()
    from long_term_memory import LongTermMemoryStore

    assert (
        LongTermMemoryStore(data_dir / "memora_db", embedding_function=app.embedder).count(include_superseded=True) == 0
    )
