"""The interactive terminal, driven through a real pseudo-terminal and read
back through a terminal emulator (pyte), so the test sees the screen a
learner sees."""

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
import pytest
from conftest import ROOT, child_env

COLUMNS, ROWS = 40, 30
REPLY = "The present perfect links a past action to now, as in I have lived here for ten years and I still do. " * 4


class Terminal:
    """``python chatbot.py`` (interactive: no --plain) on a pty of a fixed size."""

    def __init__(self, **env):
        self.pid, self.fd = pty.fork()
        if self.pid == 0:  # the child: become chatbot.py
            os.execve(sys.executable, [sys.executable, str(ROOT / "chatbot.py")], child_env(**env))
        fcntl.ioctl(self.fd, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLUMNS, 0, 0))
        self.output = b""

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

    def screen(self) -> list[str]:
        screen = pyte.Screen(COLUMNS, ROWS)
        pyte.ByteStream(screen).feed(self.output)
        return [line.rstrip() for line in screen.display]


@pytest.mark.slow  # a child process, a kill or hundreds of turns
def test_ctrl_c_during_a_reply_shows_each_line_once(server, tmp_path):
    held = server.hold("chat", REPLY, after_chars=80)  # two full lines, then the reply waits
    term = Terminal(
        MEMORA_HOME=tmp_path / "home",
        MEMORA_EMBEDDING_MODEL="hash",
        OPENAI_BASE_URL=server.base_url,
        OPENAI_API_KEY="sk-test-not-real",
        TERM="xterm",
        PROMPT_TOOLKIT_NO_CPR="1",
        # The pty's own size: a COLUMNS or LINES left in the test process's environment
        # (pytest-xdist workers have them) would make rich wrap for another width.
        COLUMNS=str(COLUMNS),
        LINES=str(ROWS),
    )
    assert term.wait_for(b"You:")
    term.send(b"Explain the present perfect\r")
    held.wait_arrived()
    assert term.wait_for(b"to now, as in I have")  # the first line is full, the reply still streaming
    term.send(b"\x03")
    assert term.wait_for(b"Reply cancelled"), "\n".join(term.screen())
    assert term.wait_for(b"You:", after=b"Reply cancelled")  # the prompt is back
    code = term.close()
    screen = term.screen()
    first = "The present perfect links a past action"
    assert sum(line == first for line in screen) == 1, "\n".join(screen)
    start = screen.index(first)
    assert screen[start - 1] == "Memora:"
    assert screen[start + 1].startswith("to now, as in I have")
    assert code == 0, "\n".join(screen)
