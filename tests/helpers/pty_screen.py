"""``python chatbot.py`` on a pseudo-terminal, read back through a terminal
emulator (pyte) as the learner sees it. ``wait_screen`` reads until the screen
shows what a test waits for (an event, never a sleep)."""

from __future__ import annotations

import fcntl
import os
import pty
import selectors
import struct
import sys
import termios
import time
from collections.abc import Callable
from pathlib import Path

import pyte


class ScreenTerminal:
    def __init__(self, script: Path, env: dict, columns: int = 80, rows: int = 24):
        self.columns, self.rows = columns, rows
        self.pid, self.fd = pty.fork()
        if self.pid == 0:  # the child: become chatbot.py
            os.execve(sys.executable, [sys.executable, str(script)], env)
        self._set_size()
        self.screen = pyte.Screen(columns, rows)
        self.stream = pyte.ByteStream(self.screen)
        self.output = b""

    def _set_size(self) -> None:
        fcntl.ioctl(self.fd, termios.TIOCSWINSZ, struct.pack("HHHH", self.rows, self.columns, 0, 0))

    def resize(self, columns: int, rows: int) -> None:
        """Resize the terminal as a window manager does (the child gets SIGWINCH)."""
        self.columns, self.rows = columns, rows
        self.screen.resize(rows, columns)
        self._set_size()

    def lines(self) -> list[str]:
        return [line.rstrip() for line in self.screen.display]

    def text(self) -> str:
        return "\n".join(self.lines())

    def wait_screen(self, seen: Callable[[str], bool], timeout: float = 30) -> bool:
        """Read until ``seen(screen text)`` holds; False if it never did."""
        deadline = time.monotonic() + timeout
        with selectors.DefaultSelector() as selector:
            selector.register(self.fd, selectors.EVENT_READ)
            while not seen(self.text()) and time.monotonic() < deadline:
                if selector.select(0.1):
                    try:
                        chunk = os.read(self.fd, 65536)
                    except OSError:
                        break
                    if not chunk:
                        break
                    self.output += chunk
                    self.stream.feed(chunk)
        return seen(self.text())

    def wait_for(self, marker: str, timeout: float = 30) -> bool:
        return self.wait_screen(lambda text: marker in text, timeout)

    def send(self, data: bytes) -> None:
        os.write(self.fd, data)

    def close(self, timeout: float = 60) -> int | None:
        """Ctrl-D at the prompt; the exit status, or None (and the child killed) if it hangs."""
        self.send(b"\x04")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.wait_for("\0never", timeout=0.2)  # keep reading: a full pty would block the child
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                os.close(self.fd)
                return os.waitstatus_to_exitcode(status)
        os.kill(self.pid, 9)
        os.waitpid(self.pid, 0)
        os.close(self.fd)
        return None
