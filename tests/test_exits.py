"""Where Memora cannot go on it says so in one line and exits 1 or 2, never
with a traceback; a reply that stops half-way is never kept as if complete."""

from __future__ import annotations

import json
import resource
import signal
import subprocess
import sys

import pytest
from conftest import ROOT, child_env, run_chatbot
from helpers.fake_openai import StreamThenFail

PARTIAL = "Here is the first half of a long explanation about the present perfect, and"


def one_line_error(result) -> str:
    output = result.stdout + result.stderr
    assert "Traceback" not in output
    lines = [line for line in output.splitlines() if line.strip()]
    assert len(lines) == 1, output
    return lines[0]


@pytest.mark.slow  # a child process, a kill or hundreds of turns
def test_data_dir_pointing_at_a_file_is_one_line_and_exit_2(tmp_path):
    target = tmp_path / "notes.txt"
    target.write_text("not a folder")
    result = run_chatbot(["profile", "exit"], "--data-dir", str(target), MEMORA_EMBEDDING_MODEL="hash")
    assert result.returncode == 2
    line = one_line_error(result)
    assert str(target) in line and "is a file, not a folder" in line
    assert target.read_text() == "not a folder"


def _loop(tmp_path):
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    return tmp_path / "a"


@pytest.mark.parametrize(
    "make_dir, says",
    [
        (_loop, "symbolic link that loops back on itself"),
        (lambda tmp: _loop(tmp) / "inside", "symbolic link that loops back on itself"),
        (lambda tmp: "", "cannot be empty"),
        (lambda tmp: "   ", "cannot be empty"),
    ],
    ids=["symlink-loop", "below-a-symlink-loop", "empty", "blank"],
)
def test_an_unusable_data_dir_is_one_line_naming_the_cause_and_exit_2(tmp_path, make_dir, says):
    target = make_dir(tmp_path)
    before = sorted(p.name for p in tmp_path.iterdir())
    result = run_chatbot(["profile", "exit"], "--data-dir", str(target), MEMORA_EMBEDDING_MODEL="hash")
    assert result.returncode == 2
    line = one_line_error(result)
    assert says in line and "--data-dir" in line
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing written


@pytest.mark.parametrize(
    "url, says",
    [
        ("http://[::1", "is not a valid URL (Invalid IPv6 URL)"),
        ("http://localhost:99999", "is not a valid URL"),
        ("http://localhost:port", "is not a valid URL"),
        ("ftp://localhost:8000", "must look like http://host:8000"),
        ("localhost:8000", "must look like http://host:8000"),
        ("http://:8000", "must look like http://host:8000"),
    ],
)
def test_a_malformed_chroma_url_is_one_line_naming_it_and_exit_2(tmp_path, url, says):
    result = run_chatbot(
        ["profile", "exit"], "--data-dir", str(tmp_path / "home"), "--chroma-url", url, MEMORA_EMBEDDING_MODEL="hash"
    )
    assert result.returncode == 2
    line = one_line_error(result)
    assert says in line and "--chroma-url" in line and url in line
    assert "disk" not in line  # the cause named is the address, not the data folder
    assert not (tmp_path / "home").exists()


def test_a_malformed_chroma_host_from_the_environment_is_refused_the_same_way(tmp_path):
    result = run_chatbot(
        ["exit"], "--data-dir", str(tmp_path / "home"), MEMORA_EMBEDDING_MODEL="hash", CHROMA_HOST="[::1"
    )
    assert result.returncode == 2
    assert "is not a valid URL" in one_line_error(result)


def _file_size_limit(limit: int):
    """A real write failure from the kernel, portable to any CI runner (root or
    not, no mount needed): every write past ``limit`` bytes fails with EFBIG,
    which SQLite reports as the same "disk I/O error" a full disk gives."""

    def apply() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return apply


@pytest.mark.slow  # a child process, a kill or hundreds of turns
@pytest.mark.parametrize("limit", [0, 16_384])
def test_a_disk_that_cannot_take_writes_at_start_is_one_line_and_exit_1(tmp_path, limit):
    home = tmp_path / "home"
    result = subprocess.run(
        [sys.executable, str(ROOT / "chatbot.py"), "--plain", "--data-dir", str(home)],
        input="remember I like tea\nexit\n",
        capture_output=True,
        text=True,
        timeout=120,
        env=child_env(MEMORA_EMBEDDING_MODEL="hash"),
        cwd=ROOT,
        preexec_fn=_file_size_limit(limit),
    )
    assert result.returncode == 1
    line = one_line_error(result)
    assert line.startswith(f"Error: Memora cannot open its data in {home}: ")
    assert "disk is not full" in line


FULL_DISK_AT_WAL = """
import sqlite3, sys
_connect = sqlite3.connect

class FullDisk(sqlite3.Connection):
    def execute(self, sql, *args):
        if "journal_mode" in sql.lower():
            raise sqlite3.OperationalError("disk I/O error")
        return super().execute(sql, *args)

def connect(*args, **kwargs):
    kwargs.setdefault("factory", FullDisk)
    return _connect(*args, **kwargs)

sqlite3.connect = connect
import chatbot
sys.exit(chatbot.main(["--plain", "--data-dir", {home!r}]))
"""


@pytest.mark.slow  # a child process, a kill or hundreds of turns
def test_a_disk_io_error_from_the_catalogs_wal_pragma_is_one_line_and_exit_1(tmp_path):
    home = tmp_path / "home"
    code = FULL_DISK_AT_WAL.format(home=str(home))
    result = subprocess.run(
        [sys.executable, "-c", code],
        input="exit\n",
        capture_output=True,
        text=True,
        timeout=120,
        env=child_env(MEMORA_EMBEDDING_MODEL="hash"),
        cwd=ROOT,
    )
    assert result.returncode == 1
    line = one_line_error(result)
    assert line == (
        f"Error: Memora cannot open its data in {home}: disk I/O error. "
        "Check that the disk is not full and the folder is writable (--data-dir / MEMORA_HOME)."
    )


@pytest.mark.slow  # a child process, a kill or hundreds of turns
def test_output_closed_by_its_reader_stops_quietly_with_exit_1(tmp_path):
    """``printf 'status\\nexit\\n' | python chatbot.py --plain | head -3``: the
    reader leaves after the first lines; Memora stops at its next write
    without a traceback, also none at interpreter exit."""
    home = tmp_path / "home"
    process = subprocess.Popen(
        [sys.executable, str(ROOT / "chatbot.py"), "--plain", "--data-dir", str(home)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=child_env(MEMORA_EMBEDDING_MODEL="hash"),
        cwd=ROOT,
    )
    head = [process.stdout.readline() for _ in range(2)]  # welcome and the no-model note
    assert head[0].startswith(b"Memora, your English tutor.")
    process.stdout.close()  # what head does after its lines
    _, err = process.communicate(b"status\nstatus\nexit\n", timeout=120)
    assert b"Traceback" not in err and b"BrokenPipe" not in err, err.decode()
    assert err == b""
    assert process.returncode == 1


@pytest.mark.slow  # a child process, a kill or hundreds of turns
def test_the_real_head_pipeline_prints_no_traceback(tmp_path):
    home = tmp_path / "home"
    result = subprocess.run(
        [
            "bash",
            "-c",
            f"printf 'status\\nstatus\\nstatus\\nexit\\n' | {sys.executable} chatbot.py --plain "
            f"--data-dir {home} | head -3",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env=child_env(MEMORA_EMBEDDING_MODEL="hash"),
        cwd=ROOT,
    )
    assert len(result.stdout.splitlines()) == 3
    assert result.stderr == ""


# -- a reply that stops half-way ----------------------------------------------------------------
@pytest.mark.parametrize("end", ["close", "failed", "error"])
def test_a_reply_that_ends_without_completed_is_a_failed_turn_rolled_back(make_app, server, run_repl, end):
    server.script("chat", StreamThenFail(PARTIAL, end=end), "A whole answer.")
    app = make_app()
    t = run_repl(app, ["Explain the present perfect, please.", "Thanks! One more example?"])
    lines = t.text.splitlines()
    cut = next(line for line in lines if line.startswith("Error: (reply cut off)"))
    assert "That message was not kept; send it again." in cut
    assert lines.index(cut) == lines.index(f"Memora: {PARTIAL}") + 1  # right under the fragment
    # nothing of the cut-off turn was kept: not in the conversation, the session file or the next request
    assert [m["content"] for m in app.memory.messages] == ["Thanks! One more example?", "A whole answer."]
    assert PARTIAL not in app.paths.session.read_text()
    assert "present perfect" not in json.dumps(server.chats[1].input)
    assert app.wait_for_extraction(10)
    extractions = server.of_kind("extraction")  # only the kept turn is read for memories
    assert len(extractions) == 1 and "Thanks! One more example?" in json.dumps(extractions[0].body)
    assert "present perfect" not in json.dumps(extractions[0].body)


def test_a_reply_the_server_ends_as_incomplete_is_kept_with_a_cut_off_notice(make_app, server, run_repl):
    server.script("chat", StreamThenFail(PARTIAL, end="incomplete"))
    app = make_app()
    t = run_repl(app, ["Explain the present perfect, please."])
    assert f"Memora: {PARTIAL}\nNote: (reply cut off: max_output_tokens) The reply was kept as far as it got" in t.text
    assert [m["content"] for m in app.memory.messages] == ["Explain the present perfect, please.", PARTIAL]


def test_a_disk_that_fills_up_mid_session_is_one_line_and_the_repl_goes_on(make_app, run_repl, monkeypatch):
    import sqlite3

    app = make_app()
    app.store.add("I like tea")

    def full_disk(*args, **kwargs):
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(app.store.catalog, "insert", full_disk)
    t = run_repl(app, ["remember I like coffee", "memories"])
    assert (
        f"Error: Memora cannot save its data in {app.settings.data_dir}: disk I/O error. "
        "Check that the disk is not full "
        "and the folder is writable (--data-dir / MEMORA_HOME). That change was not saved.\n"
    ) in t.text
    assert [r.content for r in app.store.list()] == ["I like tea"]
    assert "1 memory" in t.text.split("You: memories", 1)[1]


def test_the_reason_shown_is_the_failed_write_not_the_failed_rollback_after_it():
    import sqlite3

    import chatbot

    try:
        try:
            raise sqlite3.OperationalError("disk I/O error")
        except sqlite3.Error:
            raise sqlite3.OperationalError("cannot rollback - no transaction is active") from None
    except sqlite3.Error as error:
        line = chatbot.data_failure(error, "/data", "save")
    assert line.startswith("Memora cannot save its data in /data: disk I/O error. ")
    assert "rollback" not in line
