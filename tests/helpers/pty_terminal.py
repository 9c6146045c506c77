"""Memora on a real pseudo-terminal, read back through a terminal emulator (pyte),
so a test sees the screen a learner sees."""

from __future__ import annotations

import fcntl
import os
import pty
import selectors
import struct
import sys
import termios
import time

import pyte
from conftest import ROOT, child_env

COLUMNS, ROWS = 40, 30


class Terminal:
    """``python chatbot.py`` (interactive: no --plain) on a pty of a fixed size."""

    def __init__(self, columns: int = COLUMNS, rows: int = ROWS, **env):
        self.columns, self.rows = columns, rows
        self.pid, self.fd = pty.fork()
        if self.pid == 0:  # the child: become chatbot.py
            os.execve(sys.executable, [sys.executable, str(ROOT / "chatbot.py")], child_env(**env))
        self.resize(columns, rows)
        self.output = b""

    def resize(self, columns: int, rows: int) -> None:
        """Give the pty a new size (the child gets SIGWINCH), as a learner resizing the window."""
        self.columns, self.rows = columns, rows
        fcntl.ioctl(self.fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))

    def wait_for(self, marker: bytes, timeout: float = 30, after: bytes = b"") -> bool:
        """Read until ``marker`` appears (after ``after``, when given)."""

        def seen() -> bool:
            start = self.output.find(after) if after else 0
            return start >= 0 and marker in self.output[start:]

        deadline = time.monotonic() + timeout
        # epoll, not select(): a worker that has opened many files may hold fds above 1024
        with selectors.DefaultSelector() as selector:
            selector.register(self.fd, selectors.EVENT_READ)
            return self._read_until(seen, deadline, selector)

    def _read_until(self, seen, deadline: float, selector) -> bool:
        while not seen() and time.monotonic() < deadline:
            if selector.select(0.1):
                try:
                    chunk = os.read(self.fd, 65536)
                except OSError:
                    break
                if not chunk:
                    break
                self.output += chunk
        return seen()

    def send(self, data: bytes) -> None:
        os.write(self.fd, data)

    def close(self, timeout: float = 60) -> int | None:
        """Ctrl-D at the prompt; the exit status, or None (and the child killed) if it hangs."""
        self.send(b"\x04")
        self.wait_for(b"Goodbye!")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.wait_for(b"\0never", timeout=0.2)  # keep reading: a full pty would block the child
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                os.close(self.fd)
                return os.waitstatus_to_exitcode(status)
        os.kill(self.pid, 9)
        os.waitpid(self.pid, 0)
        os.close(self.fd)
        return None

    def screen(self, output: bytes | None = None) -> list[str]:
        screen = pyte.Screen(self.columns, self.rows)
        pyte.ByteStream(screen).feed(self.output if output is None else output)
        return [line.rstrip() for line in screen.display]

    def lines(self, output: bytes | None = None) -> list[str]:
        """Every line written, scrolled off the top or not (a screen with history)."""
        screen = pyte.HistoryScreen(self.columns, self.rows, history=10000)
        pyte.ByteStream(screen).feed(self.output if output is None else output)
        above = ["".join(line[x].data for x in range(self.columns)).rstrip() for line in screen.history.top]
        return above + [line.rstrip() for line in screen.display]


def start_memora(server, tmp_path, columns: int = COLUMNS, rows: int = ROWS, **env) -> Terminal:
    """Memora on a pty of that size, talking to the fake server."""
    values = dict(
        MEMORA_HOME=tmp_path / "home",
        MEMORA_EMBEDDING_MODEL="hash",
        OPENAI_BASE_URL=server.base_url,
        OPENAI_API_KEY="sk-test-not-real",
        TERM="xterm",
        PROMPT_TOOLKIT_NO_CPR="1",
        # The pty's own size: a COLUMNS or LINES left in the test process's environment
        # (pytest-xdist workers have them) would make rich wrap for another width.
        COLUMNS=str(columns),
        LINES=str(rows),
    )
    values.update(env)
    return Terminal(columns, rows, **values)
