"""Errors are named for their cause (issue: first contact, point 7).

Only a failed write of Memora's own data is reported as a write problem ("Memora
cannot save its data in …"); any other error during a turn, an OSError from a
system call too, gets its own line naming it, and a traceback in the debug log
(MEMORA_DEBUG). Retrieval hands no work to another thread by a call that can fail.
"""

from __future__ import annotations

import errno
import logging
import time

import pytest

import chatbot
from memora.cli.terminal import PlainConsole


def _run(app, lines):
    """The real REPL as a learner meets it: unexpected errors are lines, not raised."""
    out: list[str] = []
    queue = list(lines)

    def read(prompt: str) -> str:
        app.wait_for_extraction(10)
        out.append(prompt)
        if not queue:
            raise EOFError
        line = queue.pop(0)
        out.append(line + "\n")
        return line

    console = PlainConsole(read, out.append)
    app.set_notify(console.notice)
    assert chatbot.run(app, console) == 0
    return "".join(out)


def _failing_turn(app, monkeypatch, error: BaseException):
    """The turn's memory search fails with ``error`` (as a system call in it would)."""

    def fail(*args, **kwargs):
        raise error

    monkeypatch.setattr(app.store, "dense_candidates", fail)


NOT_WRITES = [
    # (the error, what its line must name)
    (OSError(errno.EINVAL, "Invalid argument"), "Invalid argument (EINVAL)"),
    (OSError(errno.EINTR, "Interrupted system call"), "Interrupted system call (EINTR)"),
    (OSError(errno.ENOMEM, "Cannot allocate memory"), "Cannot allocate memory (ENOMEM)"),
    (OSError(errno.EIO, "Input/output error", "/dev/tty"), "Input/output error (EIO): /dev/tty"),
    (PermissionError(errno.EACCES, "Permission denied", "/etc/shadow"), "Permission denied (EACCES): /etc/shadow"),
    (FileNotFoundError(errno.ENOENT, "No such file or directory", "/usr/share/x"), "No such file or directory"),
    (TimeoutError("the query thread did not answer"), "the query thread did not answer"),
]


@pytest.mark.parametrize("error, named", NOT_WRITES, ids=[type(e).__name__ + str(e.args[0]) for e, _ in NOT_WRITES])
def test_an_error_that_is_not_a_write_is_named_for_its_cause(make_app, server, monkeypatch, error, named):
    app = make_app()
    _failing_turn(app, monkeypatch, error)
    text = _run(app, ["Can you help me with phrasal verbs today?", "status"])
    [line] = [line for line in text.splitlines() if line.startswith("Error:")]
    assert "cannot save" not in line and "disk" not in line
    assert f"Unexpected {type(error).__name__}: " in line and named in line
    assert "set MEMORA_DEBUG=1 for details" in line
    assert "You: status" in text and "Session token usage" in text  # the REPL went on


@pytest.mark.parametrize(
    "make_error, named",
    [
        (
            lambda folder: PermissionError(errno.EACCES, "Permission denied", str(folder / "memora_session.json")),
            "Permission denied",
        ),
        (lambda folder: OSError(errno.ENOSPC, "No space left on device"), "the disk is full"),
        (lambda folder: OSError(errno.EROFS, "Read-only file system", "/anywhere"), "the disk is read-only"),
        (
            lambda folder: OSError(errno.EIO, "Input/output error", str(folder / "memora_db" / "x")),
            "Input/output error",
        ),
    ],
    ids=["EACCES-in-data", "ENOSPC", "EROFS", "EIO-in-data"],
)
def test_a_failed_write_of_memoras_data_is_still_a_write_problem(
    make_app, server, monkeypatch, data_dir, make_error, named
):
    app = make_app()
    _failing_turn(app, monkeypatch, make_error(data_dir))
    text = _run(app, ["Can you help me with phrasal verbs today?"])
    [line] = [line for line in text.splitlines() if line.startswith("Error:")]
    assert line.startswith(f"Error: Memora cannot save its data in {data_dir}") and named in line
    assert "Unexpected" not in line


def test_under_memora_debug_the_other_error_has_its_traceback(make_app, server, monkeypatch, capsys):
    chatbot.configure_logging(True)  # what MEMORA_DEBUG=1 sets up
    logger = logging.getLogger("memora")
    try:
        app = make_app()
        _failing_turn(app, monkeypatch, OSError(errno.EINVAL, "Invalid argument"))
        text = _run(app, ["Can you help me with phrasal verbs today?"])
    finally:
        for handler in list(logger.handlers):
            logger.removeHandler(handler)
        logger.setLevel(logging.NOTSET)
    assert "Unexpected OSError: Invalid argument (EINVAL)" in text
    log = capsys.readouterr().err
    assert "Traceback (most recent call last)" in log and "OSError: [Errno 22] Invalid argument" in log


def test_search_needs_no_call_that_can_fail_to_hand_over_to_its_query_thread(make_app, run_repl, monkeypatch):
    """The dense query runs in another thread; nothing in retrieval asks the OS to
    switch threads by hand (a ``sleep(0)`` that failed once was reported as a full disk)."""
    app = make_app()
    app.store.add("The learner plays badminton on Sundays.", category="hobby")

    def no_sleep(seconds):
        raise OSError(errno.EINVAL, "Invalid argument")

    from memora.store import retrieval

    monkeypatch.setattr(time, "sleep", no_sleep)
    monkeypatch.setattr(retrieval, "sleep", no_sleep, raising=False)  # as it would be imported there
    t = run_repl(app, ["search badminton"])
    assert "plays badminton" in t.text and "Error" not in t.text
