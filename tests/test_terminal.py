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

    def __init__(self, columns: int = COLUMNS, rows: int = ROWS, **env):
        self.columns, self.rows = columns, rows
        self.pid, self.fd = pty.fork()
        if self.pid == 0:  # the child: become chatbot.py
            os.execve(sys.executable, [sys.executable, str(ROOT / "chatbot.py")], child_env(**env))
        fcntl.ioctl(self.fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
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
        screen = pyte.Screen(self.columns, self.rows)
        pyte.ByteStream(screen).feed(self.output)
        return [line.rstrip() for line in screen.display]

    def scrollback(self) -> list[str]:
        """Every line the terminal showed, those scrolled off the top included."""
        screen = pyte.HistoryScreen(self.columns, self.rows, history=10_000)
        pyte.ByteStream(screen).feed(self.output)
        top = ["".join(row[x].data for x in range(self.columns)).rstrip() for row in screen.history.top]
        return top + [line.rstrip() for line in screen.display]


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


@pytest.mark.slow  # a child process on a pty
@pytest.mark.parametrize("columns", [80, 60])
def test_help_fits_the_terminal_without_breaking_words(server, tmp_path, columns):
    """Each description wraps inside its own column (a hanging indent), a long usage has
    a line of its own, and no word, bracketed group or id is split by the terminal."""
    from memora.app.commands import COMMANDS

    term = Terminal(
        columns,
        24,
        MEMORA_HOME=tmp_path / "home",
        MEMORA_EMBEDDING_MODEL="hash",
        OPENAI_BASE_URL=server.base_url,
        OPENAI_API_KEY="sk-test-not-real",
        TERM="xterm",
        PROMPT_TOOLKIT_NO_CPR="1",
        COLUMNS=str(columns),
        LINES="24",
    )
    assert term.wait_for(b"You:")
    term.send(b"help\r")
    assert term.wait_for(b"You:", after=b"Leave Memora")  # the next prompt: keys typed now are read
    term.send(b"help memory\r")
    assert term.wait_for(b"You:", after=b"e.g. memory cap 200")
    assert term.close() == 0
    lines = term.scrollback()
    shown = "\n".join(lines)
    start = next(i for i, line in enumerate(lines) if line.startswith("Commands"))
    listing = lines[start : next(i for i, line in enumerate(lines) if i > start and line.startswith("You:"))]
    words = {word for line in listing for word in line.split()}
    forms = [form for command in COMMANDS for form in command.parsed_forms()]
    for form in forms:  # every word whole: a word broken by the terminal would be two pieces
        assert set(form.usage.split()) | set(form.help.split()) <= words, (form.usage, shown)
    indent = max(len(line) - len(line.lstrip()) for line in listing)
    assert indent > 10, shown
    dashes = next(i for i, line in enumerate(listing) if line.startswith("---"))
    for line in listing[dashes + 1 :]:  # after the title (wrapped too), the header and its dashes
        usage_line = any(line.startswith(form.usage.split()[0]) for form in forms)
        assert usage_line or line.startswith(" " * indent) or line.startswith("  ["), (line, shown)
    assert any(line.startswith("  [") or "[--type semantic|episodic]" in line for line in listing)
    # what a learner must type stays on one line: a bracketed group, an example with an id
    assert any("[--type semantic|episodic]" in line for line in listing), shown
    assert any(line == "e.g. memory edit 3fa9c2d1 I moved to Taipei in 2024" for line in lines), shown
