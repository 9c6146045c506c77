"""Odd environments never give a traceback or a hang: standard streams closed or not
terminals, special files where a path is expected, and a terminal resized to a few
columns while a reply streams. Each gets one line, or plain working behaviour.

No case here writes to a real device: before this was fixed, an export to /dev/full
replaced the device node with a file (as root). Devices, pipes and sockets are made
in the test's own folder; only reads touch /dev."""

from __future__ import annotations

import os
import socket
import stat
import subprocess
import sys

import pytest
from conftest import ROOT, child_env, run_chatbot
from helpers.pty_terminal import start_memora


def chatbot(tmp_path, *, stdin=subprocess.PIPE, close=(), text="", args=()):
    """``python chatbot.py`` with some standard descriptors closed before it starts;
    its stdout and stderr (when open) captured."""
    env = child_env(MEMORA_HOME=tmp_path / "home", MEMORA_EMBEDDING_MODEL="hash")

    def closing():
        for fd in close:
            os.close(fd)

    piped = {"input": text} if stdin is subprocess.PIPE else {"stdin": stdin}
    return subprocess.run(
        [sys.executable, str(ROOT / "chatbot.py"), *args],
        **piped,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=ROOT,
        preexec_fn=closing,
    )


def memories_of(tmp_path) -> str:
    result = run_chatbot(["memories"], MEMORA_HOME=tmp_path / "home", MEMORA_EMBEDDING_MODEL="hash")
    assert result.returncode == 0, result.stderr
    return result.stdout


# (descriptors closed, what stdin is) -> whether the "remember" typed on stdin is stored
STREAMS = {
    "stdin closed": ((0,), "pipe", False),
    "stdout closed": ((1,), "pipe", True),
    "stderr closed": ((2,), "pipe", True),
    "stdout and stderr closed": ((1, 2), "pipe", True),
    "all three closed": ((0, 1, 2), "pipe", False),
    "stdin /dev/null": ((), "devnull", False),
    "stdin a file, stdout a file": ((), "file", True),
}


@pytest.mark.slow  # child processes
@pytest.mark.parametrize("case", STREAMS, ids=list(STREAMS))
def test_closed_or_redirected_standard_streams_work_without_a_traceback(tmp_path, case):
    closed, source, stores = STREAMS[case]
    typed = "remember I play the oboe\nstatus\n"
    stdin = subprocess.PIPE
    if source == "devnull":
        stdin = subprocess.DEVNULL
    elif source == "file":
        script = tmp_path / "typed.txt"
        script.write_text(typed)
        stdin = open(script)  # noqa: SIM115 (closed below)
    try:
        result = chatbot(tmp_path, stdin=stdin, close=closed, text=typed)
    finally:
        if source == "file":
            stdin.close()
    assert result.returncode == 0, (result.stdout, result.stderr)
    assert "Traceback" not in result.stdout + result.stderr
    assert result.stderr == ""
    if 1 not in closed:
        assert result.stdout.rstrip().endswith("Goodbye!")
    assert ("oboe" in memories_of(tmp_path)) is stores


@pytest.mark.slow  # a child process
def test_output_that_cannot_be_written_is_one_line_on_stderr(tmp_path):
    with open(os.devnull, "w") as _, open("/dev/full", "w") as full:  # reading /dev/full's node, never replacing it
        result = subprocess.run(
            [sys.executable, str(ROOT / "chatbot.py")],
            input="status\n",
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
            env=child_env(MEMORA_HOME=tmp_path / "home", MEMORA_EMBEDDING_MODEL="hash"),
            cwd=ROOT,
        )
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        "Error: Memora cannot write to its output (No space left on device), so it stops here."
    ]


def special_files(tmp_path) -> dict:
    """A named pipe, a socket, a device made here (when this user may) and links to them."""
    made = {}
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    made["a named pipe"] = fifo
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(tmp_path / "sock"))
    made["a socket"] = tmp_path / "sock"
    try:
        os.mknod(tmp_path / "full", 0o600 | stat.S_IFCHR, os.makedev(1, 7))
        made["a device"] = tmp_path / "full"
    except (PermissionError, OSError):
        pass
    (tmp_path / "link-to-pipe").symlink_to(fifo)
    made["a named pipe (through a link)"] = tmp_path / "link-to-pipe"
    return made


@pytest.mark.slow  # a child process
def test_export_and_review_export_refuse_a_device_pipe_or_socket_and_leave_it_in_place(tmp_path):
    targets = special_files(tmp_path)
    kinds = {path: os.stat(path).st_mode for path in targets.values()}
    lines = ["remember I play the oboe"]
    for path in targets.values():
        lines += [f"export {path}", f"review export {path}"]
    deck = tmp_path / "deck.apkg"
    os.mkfifo(deck)
    lines.append(f"review export {deck}")
    result = run_chatbot(lines, MEMORA_HOME=tmp_path / "home", MEMORA_EMBEDDING_MODEL="hash")
    assert result.returncode == 0 and "Traceback" not in result.stdout + result.stderr, result.stderr
    answers = result.stdout.split("You: ")[2:-1]  # one per command after the remember
    assert len(answers) == len(lines) - 1, result.stdout
    for answer, line in zip(answers, lines[1:], strict=True):
        told = answer.strip().splitlines()
        assert len(told) == 1 and told[0].startswith("Error:"), (line, answer)
        if not line.startswith("review export") or line.endswith(".apkg"):  # else: "a deck file ends in .apkg"
            assert told[0].endswith("not a file. Nothing was exported."), (line, answer)
    for path, mode in kinds.items():
        assert os.stat(path).st_mode == mode, path  # still the pipe, socket or device it was
    assert stat.S_ISFIFO(os.stat(deck).st_mode)


@pytest.mark.slow  # a child process
def test_import_from_a_special_file_is_one_line_and_never_blocks(tmp_path):
    targets = special_files(tmp_path)
    sources = [*targets.values(), "/dev/zero", "/dev/null", "/dev/urandom", tmp_path, "/proc/self/mem"]
    lines = [f"import {path}" for path in sources] + ["memories"]
    result = run_chatbot(lines, MEMORA_HOME=tmp_path / "home", MEMORA_EMBEDDING_MODEL="hash")
    assert result.returncode == 0 and "Traceback" not in result.stdout + result.stderr, result.stderr
    answers = result.stdout.split("You: ")[1:-2]
    assert len(answers) == len(sources), result.stdout
    for answer, source in zip(answers, sources, strict=True):
        told = answer.strip().splitlines()
        assert len(told) == 1 and told[0].startswith("Error:"), (source, answer)
        assert "Nothing was imported." in told[0], (source, answer)


@pytest.mark.slow  # child processes
@pytest.mark.parametrize("place", ["/dev/null", "/dev/zero", "pipe", "sock", "pipe/inside"])
def test_a_data_dir_that_is_a_special_file_is_one_line_and_an_exit(tmp_path, place):
    special_files(tmp_path)
    target = place if place.startswith("/") else str(tmp_path / place)
    result = run_chatbot(["status"], "--data-dir", target)
    output = result.stdout + result.stderr
    assert "Traceback" not in output
    lines = [line for line in output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("Error:") and target in lines[0], output
    assert result.returncode in (1, 2), output


REPLY = "The present perfect links a past action to now, as in I have lived here for ten years and I still do. " * 3


@pytest.mark.slow  # a child process on a pty
@pytest.mark.parametrize("columns", [1, 3, 8])
def test_a_terminal_resized_to_a_few_columns_while_a_reply_streams(server, tmp_path, columns):
    held = server.hold("chat", REPLY, after_chars=60)
    term = start_memora(server, tmp_path)
    assert term.wait_for(b"You:")
    term.send(b"Explain the present perfect\r")
    held.wait_arrived()
    assert term.wait_for(b"links a past")  # the reply is streaming
    term.resize(columns, 30)
    held.release()
    assert term.wait_for(b"still do.", after=b"links a past"), term.output[-2000:]
    term.resize(40, 30)
    assert term.wait_for(b"You:", after=b"still do."), term.output[-2000:]
    term.send(b"status\r")
    assert term.wait_for(b"relabelled", after=b"status"), term.output[-3000:]
    assert term.wait_for(b"You:", after=b"relabelled"), term.output[-3000:]
    code = term.close()
    assert b"Traceback" not in term.output
    assert code == 0
