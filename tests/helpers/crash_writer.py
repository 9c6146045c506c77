"""Fork server for the crash tests in tests/test_reliability.py.

    python crash_writer.py MODE PATH [PAYLOAD_CHARS]

(with the repository root on PYTHONPATH, as ``conftest.child_env`` sets it)

MODE is ``json`` (``storage.atomic_write_json`` of ``{"version": n, "payload": ...}``
in a tight loop), ``profile`` (``UserProfileStore.add_learning_goal("goal n")`` in a
loop) or ``naive`` (a plain ``open(path, "w")`` + ``json.dump``, used only to show
that the harness notices a torn file).

Memora's modules are imported once here; every writer is a ``fork()`` of this
process, so a test can start and SIGKILL hundreds of writers in a few seconds.
The test (the parent) kills the writer itself and then asks this server to
reap it. Protocol, one line per command and per answer, on stdin/stdout:

    start        -> "<pid>"             fork a writer
    reap <pid>   -> "reaped <status>"   wait for it (status as from os.waitpid)
    quit         -> exit
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from memora.core import storage
from user_profile import UserProfileStore


def payload(version: int, size: int) -> str:
    """The payload of ``version``: every part of it names the version."""
    unit = f"<{version}>"
    return (unit * (size // len(unit) + 1))[:size]


def current_version(path: Path) -> int:
    try:
        return json.loads(path.read_text(encoding="utf-8"))["version"]
    except FileNotFoundError:
        return 0


def write_json_forever(path: Path, size: int) -> None:
    version = current_version(path) + 1
    while True:
        storage.atomic_write_json(path, {"version": version, "payload": payload(version, size)})
        version += 1


def write_naively_forever(path: Path, size: int) -> None:
    version = current_version(path) + 1
    while True:
        with open(path, "w", encoding="utf-8") as handle:
            json.dump({"version": version, "payload": payload(version, size)}, handle)
        version += 1


def add_goals_forever(path: Path) -> None:
    store = UserProfileStore(path, max_items=10**6)
    number = len(store.get().learning_goals) + 1
    while True:
        store.add_learning_goal(f"goal {number}")
        number += 1


def child(mode: str, path: Path, size: int) -> None:
    try:
        if mode == "json":
            write_json_forever(path, size)
        elif mode == "naive":
            write_naively_forever(path, size)
        else:
            add_goals_forever(path)
    except BaseException as error:  # the parent sees a non-signal exit status
        sys.stderr.write(f"writer {os.getpid()} failed: {type(error).__name__}: {error}\n")
        sys.stderr.flush()
        os._exit(3)


def main() -> None:
    mode, path = sys.argv[1], Path(sys.argv[2])
    size = int(sys.argv[3]) if len(sys.argv) > 3 else 200_000
    if mode not in ("json", "naive", "profile"):
        raise SystemExit(f"unknown mode {mode}")
    for line in sys.stdin:
        command = line.split()
        if not command or command[0] == "quit":
            break
        if command[0] == "start":
            sys.stdout.flush()
            pid = os.fork()
            if pid == 0:
                child(mode, path, size)
                os._exit(0)
            print(pid, flush=True)
        elif command[0] == "reap":
            _, status = os.waitpid(int(command[1]), 0)
            print(f"reaped {status}", flush=True)


if __name__ == "__main__":
    main()
