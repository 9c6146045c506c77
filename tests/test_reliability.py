"""Reliability: what a learner keeps when things go wrong.

Crashes (SIGKILL mid-write), two terminals on the same data, corrupt or foreign
files, a memory store that cannot be opened, failing outside calls, limits,
and the privacy of the data and of the API key. Crash and multi-process tests
use real child processes (``tests/helpers/``); REPL tests run
``python chatbot.py --plain`` as a user would.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import conftest
import pytest
from conftest import ROOT, TESTS, child_env
from helpers.crash_writer import payload
from helpers.fake_openai import Error

from memora.core.errors import EmbeddingError, ModelCallError

HELPERS = TESTS / "helpers"

# SIGKILLs delivered to a process writing a JSON file with atomic_write_json
# (each at a random moment of a tight write loop), and to one adding goals to
# the profile. A writer needs ~5 ms to finish its first 200 kB write and then
# writes every ~2.5 ms; each kill costs a fork, a random wait of up to
# KILL_WINDOW seconds and a check, ~15 ms, so the 300 kills take ~5 s.
KILL_ITERATIONS = 300
KILL_WINDOW = 0.02
# A goal-adding writer starts slower (it loads the profile first): a wider window.
PROFILE_KILL_ITERATIONS = 60
PROFILE_KILL_WINDOW = 0.04
PAYLOAD_CHARS = 200_000
# The harness must catch a plain (non-atomic) writer within this many kills.
NAIVE_KILL_ITERATIONS = 100

CONCURRENT_ITEMS = 100
API_KEY = "sk-memora-LEAKCANARY-7f3a9c2e51d04b8a"


# -- helpers -------------------------------------------------------------------------------
class ForkServer:
    """Drives tests/helpers/crash_writer.py: start a writer, SIGKILL it, reap it."""

    def __init__(self, mode: str, path: Path, size: int = PAYLOAD_CHARS, **env):
        self.proc = subprocess.Popen(
            [sys.executable, str(HELPERS / "crash_writer.py"), mode, str(path), str(size)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=child_env(**env),
            cwd=ROOT,
        )
        self.live: int | None = None

    def _ask(self, command: str) -> str:
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()
        answer = self.proc.stdout.readline()
        if not answer:
            raise AssertionError(f"the fork server died: {self.proc.stderr.read()}")
        return answer.strip()

    def start(self) -> int:
        self.live = int(self._ask("start"))
        return self.live

    def kill(self, pid: int) -> int:
        """SIGKILL the writer and wait until it is gone; returns its wait status."""
        os.kill(pid, signal.SIGKILL)
        status = int(self._ask(f"reap {pid}").split()[1])
        self.live = None
        return status

    def close(self) -> str:
        if self.live is not None:  # a test failed between start and kill: stop that writer too
            os.kill(self.live, signal.SIGKILL)
            self.live = None
        try:
            self.proc.stdin.write("quit\n")
            self.proc.stdin.close()
        except BrokenPipeError:
            pass
        self.proc.wait(timeout=30)
        return self.proc.stderr.read()


def assert_killed(status: int, server: ForkServer) -> None:
    """The writer died from our SIGKILL, not from an error of its own."""
    if not (os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL):
        raise AssertionError(f"the writer exited by itself (status {status}): {server.close()}")


def temp_leftovers(folder: Path, name: str) -> set[str]:
    """Files in ``folder`` other than ``name`` and its lock; each must be a write's temp file."""
    pattern = re.compile(rf"^\.{re.escape(name)}\.[^/]+\.tmp$")
    others = {p.name for p in folder.iterdir()} - {name, name + ".lock"}
    strangers = {n for n in others if not pattern.match(n)}
    assert not strangers, f"unexpected files beside {name}: {sorted(strangers)}"
    return others


def run_chatbot(home: Path, lines: list[str], *, umask: int | None = None, **env) -> subprocess.CompletedProcess:
    """``python chatbot.py --plain`` on ``home`` with the hash embedding, as a learner runs it."""
    env.setdefault("MEMORA_EMBEDDING_MODEL", "hash")
    return conftest.run_chatbot(lines, umask=umask, MEMORA_HOME=home, **env)


def folder_fingerprint(path: Path) -> dict[str, str]:
    """Every file and folder under ``path`` (or ``path`` itself) with a hash of its bytes."""
    if path.is_file():
        return {".": hashlib.sha256(path.read_bytes()).hexdigest()}
    found = {}
    for item in sorted(path.rglob("*")):
        rel = str(item.relative_to(path))
        found[rel] = hashlib.sha256(item.read_bytes()).hexdigest() if item.is_file() else "<dir>"
    return found


def chat(app, text):
    return app.chat(text, on_delta=lambda _: None)


def error_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("Error:") or "Error: " in line]


# -- 1. atomic durable writes -----------------------------------------------------------------
@pytest.mark.slow  # a child process, a kill or hundreds of turns
def test_atomic_write_leaves_the_old_or_the_new_version_after_every_sigkill(disk_path):
    folder = disk_path / "data"
    target = folder / "state.json"
    from memora.core.storage import atomic_write_json

    atomic_write_json(target, {"version": 0, "payload": payload(0, PAYLOAD_CHARS)})
    rng = random.Random(20261129)
    server = ForkServer("json", target)
    seen_version = 0
    versions = {0}
    interrupted = 0  # kills that landed inside a write (they leave its temp file behind)
    leftovers: set[str] = set()
    try:
        for iteration in range(KILL_ITERATIONS):
            pid = server.start()
            if iteration % 10:  # random moments; every tenth kill as the writer starts
                time.sleep(rng.uniform(0, KILL_WINDOW))
            assert_killed(server.kill(pid), server)

            text = target.read_text(encoding="utf-8")
            data = json.loads(text)  # never torn: always parses
            version = data["version"]
            assert data == {"version": version, "payload": payload(version, PAYLOAD_CHARS)}, (
                f"kill {iteration}: the file mixes versions"
            )
            assert version >= seen_version, f"kill {iteration}: went back from version {seen_version} to {version}"
            seen_version = version
            versions.add(version)

            now = temp_leftovers(folder, target.name)
            interrupted += len(now - leftovers)
            leftovers = now
            # a temp file is never taken for the data: only the real name matches *.json
            assert [p.name for p in folder.glob("*.json")] == [target.name]
    finally:
        server.close()
    print(f"{KILL_ITERATIONS} kills: {interrupted} inside a write, {len(versions) - 1} versions completed")
    # The kills really hit the dangerous window, and the writer made progress.
    assert interrupted >= KILL_ITERATIONS // 10, f"only {interrupted} kills landed inside a write"
    assert len(versions) > KILL_ITERATIONS // 4, f"the writer only completed {len(versions) - 1} versions"


@pytest.mark.slow  # a child process, a kill or hundreds of turns
def test_kill_harness_catches_a_torn_file_from_a_plain_writer(disk_path):
    """The check above can fail: a plain open-and-write is caught torn within a few kills."""
    target = disk_path / "state.json"
    target.write_text(json.dumps({"version": 0, "payload": payload(0, PAYLOAD_CHARS)}))
    rng = random.Random(7)
    server = ForkServer("naive", target)
    torn_after = None
    try:
        for iteration in range(NAIVE_KILL_ITERATIONS):
            pid = server.start()
            time.sleep(rng.uniform(0, KILL_WINDOW))
            assert_killed(server.kill(pid), server)
            try:
                data = json.loads(target.read_text(encoding="utf-8"))
                intact = data == {"version": data["version"], "payload": payload(data["version"], PAYLOAD_CHARS)}
            except (OSError, ValueError, KeyError):
                intact = False
            if not intact:
                torn_after = iteration + 1
                break
    finally:
        server.close()
    print(f"a plain writer was caught torn after {torn_after} kills")
    assert torn_after is not None, f"{NAIVE_KILL_ITERATIONS} kills of a plain writer never left a torn file"


@pytest.mark.slow  # a child process, a kill or hundreds of turns
def test_profile_always_parses_after_sigkill_during_add_learning_goal(disk_path):
    """A kill while a goal is being added leaves the profile before or after that goal."""
    from user_profile import UserProfile, UserProfileStore

    folder = disk_path / "data"
    folder.mkdir()
    path = folder / "user_profile.json"
    rng = random.Random(42)
    server = ForkServer("profile", path)
    goals_before = 0
    interrupted = 0
    leftovers: set[str] = set()
    try:
        for iteration in range(PROFILE_KILL_ITERATIONS):
            pid = server.start()
            time.sleep(rng.uniform(0, PROFILE_KILL_WINDOW))
            assert_killed(server.kill(pid), server)
            if not path.exists():
                assert goals_before == 0
                continue
            profile = UserProfile.model_validate_json(path.read_text(encoding="utf-8"))
            goals = profile.learning_goals
            # every goal added so far, in order: none lost, none doubled
            assert goals == [f"goal {n}" for n in range(1, len(goals) + 1)], f"kill {iteration}"
            assert len(goals) >= goals_before
            goals_before = len(goals)
            now = temp_leftovers(folder, path.name)
            interrupted += len(now - leftovers)
            leftovers = now
    finally:
        server.close()
    print(f"{PROFILE_KILL_ITERATIONS} kills: {interrupted} inside a write, {goals_before} goals added")
    assert interrupted > 0, "no kill landed inside a write"
    assert goals_before > PROFILE_KILL_ITERATIONS // 2, "the writer hardly ever got a goal in"
    notices: list[str] = []
    reopened = UserProfileStore(path, notify=notices.append)
    assert len(reopened.get().learning_goals) == goals_before
    assert notices == [] and not list(folder.glob("*.corrupt-*"))


# -- 2. two processes on the same data -----------------------------------------------------------
def run_two_writers(mode: str, home: Path) -> None:
    home.mkdir(parents=True, exist_ok=True)
    go = home.parent / f"go-{mode}"
    env = child_env(MEMORA_MAX_PROFILE_ITEMS=500)
    writers = [
        subprocess.Popen(
            [
                sys.executable,
                str(HELPERS / "concurrent_writer.py"),
                mode,
                str(home),
                tag,
                str(CONCURRENT_ITEMS),
                str(go),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            cwd=ROOT,
        )
        for tag in ("A", "B")
    ]
    try:
        for writer in writers:
            assert writer.stdout.readline().strip() == "ready", writer.stderr.read()
        go.touch()  # both start adding at the same moment
        for writer in writers:
            out, err = writer.communicate(timeout=180)
            assert writer.returncode == 0 and out.strip() == "done", err
    finally:
        for writer in writers:
            if writer.poll() is None:
                writer.kill()
                writer.wait()


@pytest.mark.slow  # a child process, a kill or hundreds of turns
def test_two_processes_adding_learning_goals_lose_none(tmp_path):
    from helpers.concurrent_writer import goal_text

    from user_profile import UserProfileStore

    home = tmp_path / "home"
    run_two_writers("goals", home)
    goals = UserProfileStore(home / "user_profile.json", max_items=500).get().learning_goals
    expected = {goal_text(tag, n) for tag in "AB" for n in range(1, CONCURRENT_ITEMS + 1)}
    assert len(goals) == 2 * CONCURRENT_ITEMS
    assert set(goals) == expected
    turns = sum(a.split("-")[0] != b.split("-")[0] for a, b in zip(goals, goals[1:]))
    assert turns > 1, "the two writers never overlapped"


@pytest.mark.slow  # a child process, a kill or hundreds of turns
def test_two_processes_adding_memories_lose_none(tmp_path):
    from helpers.concurrent_writer import memory_text

    from long_term_memory import LongTermMemoryStore
    from memora.model.embeddings import HashEmbedder

    home = tmp_path / "home"
    run_two_writers("memories", home)

    store = LongTermMemoryStore(home / "memora_db", embedding_function=HashEmbedder(), user_id="default")
    records = store.list(newest_first=False)
    expected = {memory_text(tag, n) for tag in "AB" for n in range(1, CONCURRENT_ITEMS + 1)}
    assert store.count() == 2 * CONCURRENT_ITEMS
    assert {r.content for r in records} == expected
    store.catalog.close()
    writers = [r.content.split()[1] for r in records]
    assert sum(a != b for a, b in zip(writers, writers[1:])) > 1, "the two writers never overlapped"

    # Chroma itself (not only the catalog) holds both writers' memories: a fresh process finds them by vector.
    queries = [memory_text("A", 37), memory_text("B", 64)]
    probe = subprocess.run(
        [sys.executable, str(HELPERS / "concurrent_writer.py"), "probe", str(home), *queries],
        capture_output=True,
        text=True,
        timeout=120,
        env=child_env(),
        cwd=ROOT,
    )
    assert probe.returncode == 0, probe.stderr
    found = json.loads(probe.stdout.strip().splitlines()[-1])
    assert found["chroma_count"] == 2 * CONCURRENT_ITEMS
    assert found["nearest"] == {query: [query] for query in queries}


# -- 3. corrupt or foreign files --------------------------------------------------------------------
PROFILE_JSON = '{"english_level": "B1", "learning_goals": ["travel English"], "preferences": []}'
CORRUPT_FILES = {
    "truncated profile": ("user_profile.json", PROFILE_JSON[:37].encode()),
    "profile not JSON": ("user_profile.json", b"english_level = B1\nlearning_goals = travel\n"),
    "profile with wrong types": ("user_profile.json", b'{"english_level": 5, "learning_goals": "x"}'),
    "session from a newer Memora": (
        "memora_session.json",
        json.dumps({"version": 7, "messages": [{"role": "user", "content": "hi", "attachments": []}]}).encode(),
    ),
    "corrupt pending changes": ("memora_proposals.json", b'{"version": 1, "pending": [{"id": "ab12'),
}


@pytest.mark.slow  # a child process, a kill or hundreds of turns
@pytest.mark.parametrize("case", list(CORRUPT_FILES), ids=lambda c: c.replace(" ", "-"))
def test_a_corrupt_file_is_moved_aside_with_one_line_and_memora_starts(tmp_path, case):
    name, original = CORRUPT_FILES[case]
    home = tmp_path / "home"
    home.mkdir()
    (home / name).write_bytes(original)

    result = run_chatbot(home, ["profile level b2", "profile", "exit"])

    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "Traceback" not in output
    moved = list(home.glob(f"{name}.corrupt-*"))
    assert len(moved) == 1, sorted(p.name for p in home.iterdir())
    assert moved[0].read_bytes() == original  # the bad file is kept, byte for byte
    naming = [line for line in output.splitlines() if moved[0].name in line]
    assert len(naming) == 1, output
    assert name in naming[0] and "unreadable" in naming[0]
    assert sum("unreadable" in line for line in output.splitlines()) == 1
    # the REPL works: the profile can be changed and shown, and the session ends normally
    assert "Profile updated." in result.stdout
    assert re.search(r"^English level\s+B2$", result.stdout, re.M)
    assert result.stdout.rstrip().endswith("Goodbye!")


@pytest.mark.slow  # a child process, a kill or hundreds of turns
def test_a_version_1_session_is_migrated_and_resumed(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    history = [
        {"role": "user", "content": "How do I say 'I am tired' politely?"},
        {"role": "assistant", "content": "You could say 'I'm a bit worn out today.'"},
    ]
    old = {"history": history, "summary": "The learner asked about polite phrases.", "token_usage": 12}
    (home / "memora_session.json").write_text(json.dumps(old))

    result = run_chatbot(home, ["status", "exit"])

    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "Resumed your conversation (1 earlier turn). Type" in result.stdout
    assert re.search(r"^chat\s+12$", result.stdout, re.M)  # the old token count survived
    assert "unreadable" not in output and not list(home.glob("*.corrupt-*"))
    saved = json.loads((home / "memora_session.json").read_text())
    assert saved["version"] == 2
    assert saved["messages"] == history
    assert saved["summary"] == old["summary"]
    assert saved["usage"]["chat"] == 12


@pytest.mark.slow  # a child process, a kill or hundreds of turns
def test_a_corrupt_catalog_is_rebuilt_from_chroma(tmp_path):
    home = tmp_path / "home"
    first = run_chatbot(
        home, ["remember My sister lives in Lisbon", "remember I practise English every morning", "exit"]
    )
    assert first.returncode == 0, first.stderr
    catalog = home / "memora_db" / "catalog-default.sqlite3"
    assert catalog.exists()
    for suffix in ("-wal", "-shm"):
        Path(str(catalog) + suffix).unlink(missing_ok=True)
    catalog.write_bytes(b"\x00garbage, not a database\x00" * 512)

    result = run_chatbot(home, ["memories", "remember I drink green tea after class", "memories", "exit"])

    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "Traceback" not in output and "Error" not in output
    listed, after_write = result.stdout.split("Remembered (")
    assert "2 memories" in listed
    assert "My sister lives in Lisbon" in listed and "I practise English every morning" in listed
    assert "3 memories" in after_write  # the rebuilt catalog takes new memories too


# -- 4. a Chroma store that cannot be opened ----------------------------------------------------
def _db_is_a_file(db: Path) -> None:
    db.write_text("I am a file where the memory folder should be.\n")


def _db_not_sqlite(db: Path) -> None:
    db.mkdir()
    (db / "chroma.sqlite3").write_bytes(b"PK\x03\x04 this is a zip, not SQLite" * 64)
    (db / "notes.txt").write_text("the learner's own file\n")


@pytest.mark.slow  # a child process, a kill or hundreds of turns
@pytest.mark.parametrize(
    "make_bad, reason",
    [(_db_is_a_file, "it is a file, not a folder"), (_db_not_sqlite, "chroma.sqlite3 is not a SQLite database")],
    ids=["memora_db-is-a-file", "chroma.sqlite3-not-sqlite"],
)
def test_an_unopenable_memory_store_stops_memora_with_one_line_and_is_not_touched(tmp_path, make_bad, reason):
    home = tmp_path / "home"
    home.mkdir()
    db = home / "memora_db"
    make_bad(db)
    before = folder_fingerprint(db)

    result = run_chatbot(home, ["profile", "exit"])

    assert result.returncode != 0
    output = result.stdout + result.stderr
    assert "Traceback" not in output
    lines = [line for line in output.splitlines() if line.strip()]
    assert len(lines) == 1, output
    assert str(db) in lines[0] and reason in lines[0]
    assert folder_fingerprint(db) == before


# -- 5. failures of outside calls ------------------------------------------------------------------
class QueryFailingEmbedder:
    """The hash embedding, until ``failing`` is set: then every embed() raises."""

    def __init__(self):
        from memora.model.embeddings import HashEmbedder

        self._inner = HashEmbedder()
        self.name = self._inner.name
        self.failing = False

    def embed(self, texts):
        if self.failing:
            raise EmbeddingError("The embedding request failed (503).")
        return self._inner.embed(texts)


def test_embedding_failure_answers_without_memories_and_says_so_once(make_app, server, run_repl):
    embedder = QueryFailingEmbedder()
    app = make_app(embedder=embedder)
    app.store.add("The learner practised airport check-in dialogues", memory_type="episodic")

    working = run_repl(app, ["Can we practise the airport check-in dialogue again?"])
    assert "airport check-in dialogues" in (server.chats[-1].section("long_term_memories") or "")
    assert "Answering without memories" not in working.text

    embedder.failing = True
    t = run_repl(app, ["Let's do the airport check-in dialogue once more.", "One more airport check-in, please."])

    assert len(server.chats) == 3
    for request in server.chats[1:]:
        assert request.section("long_term_memories") is None
        assert "airport check-in dialogues" not in request.background
    assert t.text.count("Memora: Reply") == 2  # both turns answered
    notes = [line for line in t.text.splitlines() if "Answering without memories" in line]
    assert notes == ["Note: Answering without memories this time: The embedding request failed (503)."]
    assert "Error:" not in t.text


def test_a_model_timeout_is_bounded_configurable_and_changes_nothing(make_app, server):
    app = make_app(timeout=1, max_retries=0)
    chat(app, "first message")
    app.wait_for_extraction(10)
    before = app.memory.to_state()
    before_file = json.loads(app.paths.session.read_text())

    held = server.hold("chat")  # answered only after the client gave up
    with pytest.raises(ModelCallError) as raised:
        chat(app, "this one is too slow")
    assert held.arrived.is_set() and not held.answered.is_set()
    held.release()
    message = str(raised.value)
    assert "timed out after 1s" in message and "MEMORA_TIMEOUT" in message
    assert "\n" not in message

    after = app.memory.to_state()
    assert (after["messages"], after["summary"]) == (before["messages"], before["summary"])
    after_file = json.loads(app.paths.session.read_text())
    for key in ("messages", "summary", "pending_extractions"):
        assert after_file[key] == before_file[key]

    assert chat(app, "next one works").reply.text.startswith("Reply")
    users = [m["content"] for m in server.chats[-1].input if m["role"] == "user"]
    assert users == ["first message", "next one works"]


# Extraction failure -> status: tests/test_chat_turn.py::test_extraction_failure_keeps_the_turn_and_shows_in_status.


# -- 6. limits ---------------------------------------------------------------------------------------
def words(n_chars: int) -> str:
    text = ("practise " * (n_chars // 9 + 1))[:n_chars]
    return text[:-1] + "x" if text.endswith(" ") else text


def test_a_memory_over_1000_characters_is_refused_and_not_stored(make_app, server, run_repl):
    app = make_app()
    t = run_repl(app, ["remember " + words(1001), "remember " + words(1000)])
    assert "Error: A memory is limited to 1000 characters; this one has 1001." in t.text.splitlines()
    assert len(error_lines(t.text)) == 1
    assert [len(r.content) for r in app.store.list(include_superseded=True)] == [1000]  # only the one at the limit


def test_a_profile_value_over_200_characters_is_refused_and_not_stored(make_app, run_repl):
    app = make_app()
    t = run_repl(app, ["profile goal " + words(201), "profile preference " + words(201)])
    lines = t.text.splitlines()
    assert "Error: The goal is 201 characters; the limit is 200." in lines
    assert "Error: The preference is 201 characters; the limit is 200." in lines
    assert len(error_lines(t.text)) == 2
    assert app.profiles.get().is_empty()
    assert not app.paths.profile.exists()


def test_the_profile_list_limit_is_a_setting_read_from_the_environment(data_dir):
    from memora.core.config import ConfigError, Settings

    assert Settings.from_env({"MEMORA_HOME": str(data_dir), "MEMORA_MAX_PROFILE_ITEMS": "3"}).max_profile_items == 3
    with pytest.raises(ConfigError, match="MEMORA_MAX_PROFILE_ITEMS"):
        Settings.from_env({"MEMORA_HOME": str(data_dir), "MEMORA_MAX_PROFILE_ITEMS": "0"})


def test_a_full_profile_list_refuses_one_more_and_keeps_the_file(make_app, run_repl):
    app = make_app(max_profile_items=3)
    run_repl(app, ["profile goal pass IELTS", "profile goal travel English", "profile goal business emails"])
    saved = app.paths.profile.read_bytes()

    t = run_repl(app, ["profile goal job interviews"])

    assert error_lines(t.text) == [
        "Error: You already have 3 learning goals (the limit is 3); remove one with 'profile remove ...' first."
    ]
    assert app.paths.profile.read_bytes() == saved
    assert app.profiles.get().learning_goals == ["pass IELTS", "travel English", "business emails"]


def test_a_chat_message_over_8000_characters_is_not_sent(make_app, server, run_repl):
    app = make_app()
    t = run_repl(app, [words(8001)])
    assert error_lines(t.text) == ["Error: Your message is 8001 characters; the limit is 8000. Nothing was sent."]
    assert server.requests == []
    assert app.memory.messages == []
    assert "practise practise" not in (app.paths.session.read_text() if app.paths.session.exists() else "")


def _with_some_data(app):
    app.profiles.set_english_level("B1")
    app.store.add("The learner's sister lives in Lisbon")
    return app.profiles.get(), [r.content for r in app.store.list(include_superseded=True)]


def test_an_import_file_over_the_size_limit_is_refused_and_nothing_imported(make_app, run_repl, tmp_path):
    from memora.data import data_transfer

    app = make_app()
    profile, memories = _with_some_data(app)
    big = tmp_path / "huge-export.json"
    most = data_transfer.import_limits(app.store.memory_cap).bytes  # it follows the memory cap
    with open(big, "wb") as handle:  # sparse: the size is real, the disk is not used
        handle.truncate(most + 1)

    t = run_repl(app, [f"import {big}"])

    errors = error_lines(t.text)
    assert len(errors) == 1, t.text
    assert "huge-export.json" in errors[0] and "Nothing was imported" in errors[0]
    shown = [int(n.replace(",", "")) for n in re.findall(r"\d[\d,]*", errors[0])]
    assert most + 1 in shown and most in shown, errors[0]
    assert app.profiles.get() == profile
    assert [r.content for r in app.store.list(include_superseded=True)] == memories


def _valid_export_with_a_bad_memory() -> str:
    memory = {
        "id": "aaaa1111",
        "content": "The learner plays the cello",
        "created_at": "2026-11-01T10:00:00+00:00",
        "memory_type": "semantic",
        "category": "hobby",
        "source": "command",
        "status": "current",
    }
    return json.dumps(
        {
            "format": "memora-export",
            "version": 1,
            "exported_at": "2026-11-02T10:00:00+00:00",
            "user": "default",
            "profile": {"english_level": "C1", "learning_goals": ["write a novel"], "preferences": []},
            "memories": [memory, {**memory, "id": "bbbb2222", "content": words(1001)}],
        }
    )


NOT_AN_EXPORT = {
    "another app's JSON": json.dumps([{"note": "The learner plays the cello", "tags": ["hobby"]}]),
    "plain text": "name: Ming\nlevel: C1\n",
    "an export with one bad memory": _valid_export_with_a_bad_memory(),
}


@pytest.mark.parametrize("case", list(NOT_AN_EXPORT), ids=lambda c: c.replace(" ", "-"))
def test_an_import_file_that_is_not_a_memora_export_imports_nothing(make_app, run_repl, tmp_path, case):
    app = make_app()
    profile, memories = _with_some_data(app)
    path = tmp_path / "notes.json"
    path.write_text(NOT_AN_EXPORT[case])

    t = run_repl(app, [f"import {path}"])

    errors = error_lines(t.text)
    assert len(errors) == 1, t.text
    assert "notes.json" in errors[0] and "Nothing was imported" in errors[0]
    assert app.profiles.get() == profile  # the C1 level and the goal of the bad export were not merged
    assert [r.content for r in app.store.list(include_superseded=True)] == memories


# -- 7. security hygiene ------------------------------------------------------------------------------
@pytest.mark.slow  # a child process, a kill or hundreds of turns
def test_the_api_key_never_appears_in_output_data_or_exports(tmp_path, server):
    leak = f"Incorrect API key provided: {API_KEY}. You can find your API key at platform."
    server.script("chat", Error(401, leak), "Of course!")
    server.script("extraction", Error(400, leak))
    home = tmp_path / "home"
    export = tmp_path / "export.json"

    result = run_chatbot(
        home,
        [
            "profile level b1",
            "remember I like green tea",
            "Hello, can you help me?",
            "Hello again, can you help me now?",
            f"export {export}",
            "status",
            "exit",
        ],
        MEMORA_EMBEDDING_MODEL="",  # with a key, embeddings go to the (fake) OpenAI server too
        OPENAI_API_KEY=API_KEY,
        OPENAI_BASE_URL=server.base_url,
        MEMORA_MAX_RETRIES=0,
        MEMORA_DEBUG=1,  # the debug log on stderr must not carry it either
    )

    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "the API key was rejected (401)" in output  # the failing call really happened
    assert "Memora: Of course!" in output
    sent = {k.lower(): v for k, v in server.chats[0].headers.items()}
    assert sent["authorization"] == f"Bearer {API_KEY}"  # the key was really in use
    assert API_KEY not in output
    assert "LEAKCANARY" not in output
    assert export.exists()
    files = [p for p in home.rglob("*") if p.is_file()] + [export]
    leaking = [str(p) for p in files if b"LEAKCANARY" in p.read_bytes()]
    assert leaking == []


def test_the_api_key_is_redacted_from_a_failure_shown_in_status(make_app, server, run_repl):
    server.script("extraction", Error(400, f"Incorrect API key provided: {API_KEY}."))
    app = make_app(api_key=API_KEY)
    t = run_repl(app, ["I have a dog called Biscuit.", "status"])  # the REPL lets extraction settle between lines
    assert app.turn.extraction_failures == 1
    assert re.search(r"^last failure\s+\d\d:\d\d Memory extraction failed with HTTP 400", t.text, re.M), t.text
    assert "[redacted]" in t.text
    assert "LEAKCANARY" not in t.text


@pytest.mark.slow  # a child process, a kill or hundreds of turns
def test_data_files_are_private_and_export_warns(tmp_path, server):
    server.script("chat", "Congratulations on your exam!")
    server.script(
        "extraction",
        {
            "facts": [
                {
                    "text": "The learner passed a B2 exam.",
                    "memory_type": "episodic",
                    "category": "learning",
                    "event_phrase": None,
                    "event_date": None,
                }
            ],
            "profile_changes": [
                {"field": "english_level", "action": "set", "value": "B2", "evidence": "I passed my B2 exam"}
            ],
            "corrections": [],
        },
    )
    home = tmp_path / "home"  # created by Memora
    result = run_chatbot(
        home,
        ["profile level b1", "remember I like green tea", "I passed my B2 exam last week!", "export", "exit"],
        umask=0o022,  # a permissive shell: chatbot.py must tighten it itself
        OPENAI_BASE_URL=server.base_url,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    warning = [line for line in result.stdout.splitlines() if "personal data" in line]
    assert len(warning) == 1 and "private" in warning[0].lower()

    exports = list(home.glob("memora-export-default-*.json"))
    db = home / "memora_db"
    ours = [
        home / "user_profile.json",
        home / "memora_session.json",
        home / "memora_proposals.json",
        db / "catalog-default.sqlite3",
        *exports,
    ]
    assert len(exports) == 1
    for path in ours:
        assert path.exists(), f"{path.name} was not written"
    assert json.loads((home / "memora_proposals.json").read_text())["pending"], "no pending change was stored"

    modes = {}
    for path in [home, *home.rglob("*")]:
        modes[str(path.relative_to(tmp_path))] = stat.S_IMODE(path.stat().st_mode)
    for path in ours + [p for p in home.rglob("*.lock")]:
        assert modes[str(path.relative_to(tmp_path))] == 0o600, path
    for folder in (home, db):
        assert modes[str(folder.relative_to(tmp_path))] == 0o700, folder
    readable = {name: oct(mode) for name, mode in modes.items() if mode & 0o077}
    assert readable == {}, "group/world can read these"


def test_files_memora_writes_are_owner_only_even_under_a_permissive_umask(make_app, server, tmp_path):
    previous = os.umask(0o022)
    try:
        app = make_app()
        app.profiles.set_english_level("B1")
        app.store.add("The learner's sister lives in Lisbon")
        chat(app, "Hello!")
        app.wait_for_extraction(10)
        from memora.data.data_transfer import export_data
        from memora.reading.proposals import ProfileProposal

        app.proposals.add(ProfileProposal.new("english_level", "set", "B2", "B1", "I passed B2"))
        written = export_data(app, tmp_path / "export.json")
    finally:
        os.umask(previous)
    files = [
        app.paths.profile,
        app.paths.session,
        app.paths.proposals,
        app.settings.db_dir / "catalog-default.sqlite3",
        written,
    ]
    for path in files:
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
    for folder in (app.settings.data_dir, app.settings.db_dir):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700, folder
