"""Terminal input and output.

``PlainConsole`` reads and writes lines through two callables: it serves pipes,
scripts and the tests (which feed inputs and read the transcript).
``RichConsole`` is the interactive terminal: prompt_toolkit for line editing
and persistent history, rich for Markdown replies, tables and a spinner until
the first token arrives. The REPL and the commands only see the ``Console``
methods below, so both behave the same.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from pathlib import Path
from typing import Callable, Iterator, Sequence

from errors import OutputClosed

PROMPT = "You: "
REPLY_LABEL = "Memora: "


class Console:
    """The output and input surface shared by the REPL and the commands."""

    def read(self, prompt: str = PROMPT) -> str:  # raises EOFError / KeyboardInterrupt
        raise NotImplementedError

    def say(self, text: str) -> None:
        raise NotImplementedError

    def notice(self, text: str) -> None:
        self.say(f"Note: {text}")

    def error(self, text: str) -> None:
        self.say(f"Error: {text}")

    def table(self, title: str, columns: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
        self.say(render_table(title, columns, rows))

    def markdown(self, text: str) -> None:
        self.say(text)

    @contextlib.contextmanager
    def reply_stream(self) -> Iterator[Callable[[str], None]]:
        raise NotImplementedError
        yield  # pragma: no cover


def render_table(title: str, columns: Sequence[str], rows: Sequence[Sequence[str]], max_width: int = 160) -> str:
    """A plain-text table: aligned columns, long cells shortened."""
    cells = [[str(c) for c in columns]] + [[_cell(v, max_width) for v in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(columns))]
    lines = [title] if title else []
    for index, row in enumerate(cells):
        lines.append("  ".join(value.ljust(widths[i]) for i, value in enumerate(row)).rstrip())
        if index == 0:
            lines.append("  ".join("-" * w for w in widths))
    if not rows:
        lines.append("(none)")
    return "\n".join(lines)


def _cell(value, limit: int) -> str:
    text = " ".join(str(value).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


class PlainConsole(Console):
    """Line-based console over ``read``/``write`` callables (pipes and tests)."""

    def __init__(self, read: Callable[[str], str] | None = None, write: Callable[[str], None] | None = None):
        self._read = read or _stdin_reader
        self._write = write or _stdout_writer
        self._lock = threading.Lock()

    def read(self, prompt: str = PROMPT) -> str:
        with self._lock:
            pass
        return self._read(prompt)

    def say(self, text: str) -> None:
        with self._lock:
            self._write(text + "\n")

    @contextlib.contextmanager
    def reply_stream(self) -> Iterator[Callable[[str], None]]:
        started = False

        def emit(delta: str) -> None:
            nonlocal started
            with self._lock:
                if not started:
                    self._write(REPLY_LABEL)
                    started = True
                self._write(delta)

        try:
            yield emit
        finally:
            if started:
                with self._lock:
                    self._write("\n")


def _stdin_reader(prompt: str) -> str:
    if _output.closed:
        raise OutputClosed  # a notice from another thread found the reader gone: stop reading too
    _stdout_writer(prompt)
    raw = sys.stdin.buffer.readline() if hasattr(sys.stdin, "buffer") else sys.stdin.readline().encode("utf-8", "replace")
    if not raw:
        raise EOFError
    return raw.decode("utf-8", "replace").rstrip("\r\n")  # invalid bytes become U+FFFD, never an exception


def _stdout_writer(text: str) -> None:
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:
        _output.closed = True
        _stdout_to_devnull()
        raise OutputClosed from None


class _OutputState:
    closed = False


_output = _OutputState()


def _stdout_to_devnull() -> None:
    """Point stdout at /dev/null so later writes, and the flush at interpreter
    exit, cannot raise again once the reader has gone (``| head``)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass


class RichConsole(Console):
    """Interactive terminal: prompt_toolkit input with history, rich output."""

    def __init__(self, history_path: Path | None = None):
        from prompt_toolkit import PromptSession
        from prompt_toolkit.history import FileHistory, InMemoryHistory
        from rich.console import Console as RichOutput

        self.out = RichOutput(highlight=False)
        history = InMemoryHistory()
        if history_path is not None:
            try:
                history_path.parent.mkdir(parents=True, exist_ok=True)
                fd = os.open(history_path, os.O_CREAT | os.O_APPEND | os.O_WRONLY, 0o600)
                os.close(fd)
                os.chmod(history_path, 0o600)
                history = FileHistory(str(history_path))
            except OSError:
                pass
        self.session = PromptSession(history=history)

    def read(self, prompt: str = PROMPT) -> str:
        from prompt_toolkit.formatted_text import HTML
        from prompt_toolkit.patch_stdout import patch_stdout

        label = HTML("<b><ansicyan>You:</ansicyan></b> ") if prompt == PROMPT else prompt
        with patch_stdout(raw=True):
            return self.session.prompt(label)

    def say(self, text: str) -> None:
        self.out.print(text, markup=False)

    def notice(self, text: str) -> None:
        self.out.print(f"[dim]•[/dim] {_escape(text)}", style="yellow")

    def error(self, text: str) -> None:
        self.out.print(f"[bold red]Error:[/bold red] {_escape(text)}")

    def table(self, title: str, columns: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
        from rich.table import Table

        table = Table(title=title or None, title_justify="left", show_lines=False)
        for column in columns:
            table.add_column(column, overflow="fold")
        for row in rows:
            table.add_row(*[str(v) for v in row])
        if not rows:
            self.out.print(f"{title}\n(none)" if title else "(none)")
            return
        self.out.print(table)

    def markdown(self, text: str) -> None:
        from rich.markdown import Markdown

        self.out.print(Markdown(text))

    @contextlib.contextmanager
    def reply_stream(self) -> Iterator[Callable[[str], None]]:
        with _no_echo(), self._live_reply() as emit:
            yield emit

    @contextlib.contextmanager
    def _live_reply(self) -> Iterator[Callable[[str], None]]:
        from rich.live import Live
        from rich.markdown import Markdown

        status = self.out.status("Thinking…", spinner="dots")
        status.start()
        live: Live | None = None
        parts: list[str] = []

        def emit(delta: str) -> None:
            nonlocal live
            parts.append(delta)
            if live is None:
                status.stop()
                self.out.print("[bold magenta]Memora:[/bold magenta]")
                live = Live(Markdown(""), console=self.out, refresh_per_second=12, vertical_overflow="visible")
                live.start()
            live.update(Markdown("".join(parts)))

        try:
            yield emit
        finally:
            status.stop()
            if live is not None:
                live.stop()


@contextlib.contextmanager
def _no_echo() -> Iterator[None]:
    """Stop the terminal echoing keys (and "^C") while a reply streams.

    The live view redraws by moving the cursor up as many lines as it last
    drew. Its lines fill the whole width, so an echoed "^C" (or any key typed
    meanwhile) lands on a line of its own that the view does not know about,
    and the final redraw starts one line too low: the first line showed twice.
    Ctrl-C still interrupts (ISIG stays on); typed keys wait for the prompt."""
    try:
        import termios

        fd = sys.stdin.fileno()
        saved = termios.tcgetattr(fd)
    except (ImportError, OSError, ValueError, AttributeError):
        yield
        return
    quiet = list(saved)
    quiet[3] &= ~(termios.ECHO | getattr(termios, "ECHOCTL", 0))
    try:
        termios.tcsetattr(fd, termios.TCSANOW, quiet)
    except OSError:
        yield
        return
    try:
        yield
    finally:
        try:
            termios.tcsetattr(fd, termios.TCSANOW, saved)
        except OSError:
            pass


def _escape(text: str) -> str:
    from rich.markup import escape

    return escape(text)
