"""Terminal input and output.

``PlainConsole`` reads and writes lines through two callables: it serves pipes,
scripts and the tests (which feed inputs and read the transcript).
``RichConsole`` is the interactive terminal: prompt_toolkit for line editing
and persistent history, rich for Markdown replies, tables and a spinner until
the first token arrives. The REPL and the commands only see the ``Console``
methods below, so both behave the same.

Everything printed is data, never instructions to the terminal or to rich:
``for_terminal`` (one ``TerminalFilter``) removes control and escape sequences
on every output path, and ``RichConsole`` hands rich only ``Text`` objects, so
``[/red]``, ``[link=...]`` or "I [went] home" in a memory print literally.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import shutil
import sys
import textwrap
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from memora.core.errors import OutputClosed
from memora.core.text_utils import CJK_RANGES, TerminalFilter, for_terminal, shorten  # noqa: F401 (re-exported for the consoles' callers)

PROMPT = "You: "
REPLY_LABEL = "Memora: "


class Console:
    """The output and input surface shared by the REPL and the commands."""

    charts = False  # block-character charts (``progress``); plain output prints the figures only
    on_prompt: Callable[[], None] | None = None  # called once, when the first prompt is on screen

    @property
    def width(self) -> int:
        """Columns to lay text out in: the terminal's, or 80 where there is none (a pipe)."""
        return shutil.get_terminal_size((80, 24)).columns

    def read(self, prompt: str = PROMPT) -> str:  # raises EOFError / KeyboardInterrupt
        raise NotImplementedError

    def say(self, text: str) -> None:
        raise NotImplementedError

    def _prompted(self) -> None:
        hook, self.on_prompt = self.on_prompt, None
        if hook:
            hook()

    def notice(self, text: str) -> None:
        self.say(f"Note: {text}")

    def error(self, text: str) -> None:
        self.say(f"Error: {text}")

    def table(self, title: str, columns: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
        self.say(render_table(title, columns, rows))

    @contextlib.contextmanager
    def reply_stream(self) -> Iterator[Callable[[str], None]]:
        raise NotImplementedError
        yield  # pragma: no cover


def render_table(title: str, columns: Sequence[str], rows: Sequence[Sequence[str]], max_width: int = 160) -> str:
    """A plain-text table: columns aligned by display width ("李" is two cells), long cells shortened."""
    from rich.cells import cell_len

    cells = [[for_terminal(c) for c in columns]] + [
        [shorten(v, max_width, for_display=True) for v in row] for row in rows
    ]
    widths = [max(cell_len(row[i]) for row in cells) for i in range(len(columns))]
    lines = [title] if title else []
    for index, row in enumerate(cells):
        lines.append("  ".join(v + " " * (widths[i] - cell_len(v)) for i, v in enumerate(row)).rstrip())
        if index == 0:
            lines.append("  ".join("-" * w for w in widths))
    if not rows:
        lines.append("(none)")
    return "\n".join(lines)


def render_definitions(title: str, columns: Sequence[str], rows: Sequence[Sequence[str]], width: int = 80) -> str:
    """Terms and what they mean, laid out to fit ``width`` columns: each description
    wraps inside its own column (a hanging indent), and a term too wide for the first
    column has a line of its own, its description under it. Lines break only at
    spaces, never inside a word or a bracketed group ("[--type semantic|episodic]"),
    so what a learner must type is never split."""
    width = max(width, 20)
    rows = [(for_terminal(term), for_terminal(text)) for term, text in rows]
    # The first column fits most terms; a term past two fifths of the width would
    # leave the descriptions too narrow, so it takes a line of its own instead.
    limit = max(12, width * 2 // 5)
    left = max([len(columns[0])] + [len(term) for term, _ in rows if len(term) <= limit])
    indent = " " * (left + 2)
    right = width - len(indent)
    lines = textwrap.wrap(for_terminal(title), width, break_long_words=False, break_on_hyphens=False)
    longest = max([len(columns[1])] + [len(text) for _, text in rows])
    lines += [f"{columns[0].ljust(left)}  {columns[1]}", f"{'-' * left}  {'-' * min(right, longest)}"]
    for term, text in rows:
        said = textwrap.wrap(text, right, break_long_words=False, break_on_hyphens=False)
        if len(term) <= left:
            lines.append(f"{term.ljust(left)}  {said[0] if said else ''}".rstrip())
        else:
            lines += _wrap_groups(term, width)
            lines += [indent + said[0]] if said else []
        lines += [indent + line for line in said[1:]]
    if not rows:
        lines.append("(none)")
    return "\n".join(lines)


def _wrap_groups(term: str, width: int) -> list[str]:
    """``term`` in lines of at most ``width`` columns (continued two columns in),
    broken only at spaces outside brackets."""
    groups, depth, current = [], 0, ""
    for char in term:
        depth += (char in "[<(") - (char in "]>)")
        if char == " " and depth <= 0:
            groups.append(current)
            current = ""
        else:
            current += char
    groups.append(current)
    lines = [groups[0]]
    for group in groups[1:]:
        if len(lines[-1]) + 1 + len(group) <= width:
            lines[-1] += " " + group
        else:
            lines.append("  " + group)
    return lines


# A run of letters longer than this (a path, an address) may fold at the column's edge:
# keeping it whole could leave no room for the other columns, and it is not a word a
# reader takes in at a glance.
LONGEST_WORD = 24
_BREAKS = re.compile(rf"\s+|(?=[{CJK_RANGES}])|(?<=[{CJK_RANGES}])")  # CJK text breaks between characters


def column_widths(heads: Sequence[str], rows: Sequence[Sequence[str]], room: int) -> list[int] | None:
    """Widths for a table's columns within ``room`` cells that break no word (up to
    ``LONGEST_WORD``), or None when even that does not fit: each column gets its longest
    word, and the rest of the room goes to the columns whose text is longer than that,
    in proportion to how much longer."""
    from rich.cells import cell_len

    longest, shortest = [], []
    for index, head in enumerate(heads):
        texts = [head] + [row[index] for row in rows]
        lines = [line for text in texts for line in text.splitlines() or [""]]
        longest.append(max(1, *(cell_len(line) for line in lines)))
        words = [word for line in lines for word in _BREAKS.split(line) if word]
        shortest.append(min(LONGEST_WORD, max([1, *(cell_len(word) for word in words)])))
    if sum(longest) <= room:
        return longest
    spare = room - sum(shortest)
    if spare < 0:
        return None
    wants = [most - least for most, least in zip(longest, shortest, strict=True)]
    widths = list(shortest)
    # The columns that need least get all they need while that is within an even share
    # of what is left (a label, a date stays on one line); the rest share the remainder
    # in proportion to their text.
    waiting = sorted(range(len(widths)), key=lambda i: wants[i])
    while waiting and wants[waiting[0]] <= spare // len(waiting):
        index = waiting.pop(0)
        widths[index] = longest[index]
        spare -= wants[index]
    total = sum(wants[i] for i in waiting)
    for index in waiting:
        widths[index] += spare * wants[index] // total
    for index in sorted(waiting, key=lambda i: -wants[i])[: room - sum(widths)]:
        widths[index] += 1  # what the rounding left, to the columns that want the most
    return widths


class PlainConsole(Console):
    """Line-based console over ``read``/``write`` callables (pipes and tests)."""

    def __init__(self, read: Callable[[str], str] | None = None, write: Callable[[str], None] | None = None):
        self._read = read or _stdin_reader
        self._write = write or _stdout_writer
        self._lock = threading.Lock()

    def read(self, prompt: str = PROMPT) -> str:
        with self._lock:
            pass
        self._prompted()
        return self._read(for_terminal(prompt))

    def say(self, text: str) -> None:
        with self._lock:
            self._write(for_terminal(text) + "\n")

    @contextlib.contextmanager
    def reply_stream(self) -> Iterator[Callable[[str], None]]:
        started = False
        screen = TerminalFilter()

        def emit(delta: str) -> None:
            nonlocal started
            with self._lock:
                if not started:
                    self._write(REPLY_LABEL)
                    started = True
                self._write(screen.feed(delta))

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
    raw = (
        sys.stdin.buffer.readline() if hasattr(sys.stdin, "buffer") else sys.stdin.readline().encode("utf-8", "replace")
    )
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
    except (OSError, ValueError) as error:  # a full device (>/dev/full), an I/O error, a closed file
        # Nothing more can be shown, so the session ends as when the reader goes away, and
        # what was saved stays; unlike a reader that left, this is a fault worth one line.
        _output.closed = True
        _stdout_to_devnull()
        reason = getattr(error, "strerror", None) or type(error).__name__
        with contextlib.suppress(Exception):
            sys.stderr.write(f"Error: Memora cannot write to its output ({reason}), so it stops here.\n")
            sys.stderr.flush()
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
    """Interactive terminal: prompt_toolkit input with history, rich output.

    Rich parses markup in every plain string it is given (a ``print`` argument,
    a table cell, a title), so this class never gives it one: every piece of
    text becomes a ``Text`` through ``_text``, which also runs ``for_terminal``.
    ``out`` and ``reader`` let a test drive it without a terminal.
    """

    charts = True

    def __init__(
        self,
        history_path: Path | None = None,
        *,
        out=None,
        reader: Callable[[str], str] | None = None,
        no_color: bool = False,
    ):
        from rich.console import Console as RichOutput

        # NO_COLOR keeps bold and the layout but drops every colour (no-color.org).
        self.out = out if out is not None else RichOutput(highlight=False, no_color=no_color or None)
        self._reader = reader
        self._history_path = history_path

    @property
    def width(self) -> int:
        return self.out.width

    @functools.cached_property  # made on first use: a run given its own reader never needs one
    def session(self):
        from prompt_toolkit import PromptSession
        from prompt_toolkit.history import FileHistory, InMemoryHistory

        history = InMemoryHistory()
        history_path = self._history_path
        if history_path is not None:
            try:
                history_path.parent.mkdir(parents=True, exist_ok=True)
                fd = os.open(history_path, os.O_CREAT | os.O_APPEND | os.O_WRONLY, 0o600)
                os.close(fd)
                os.chmod(history_path, 0o600)
                history = FileHistory(str(history_path))
            except OSError:
                pass
        return PromptSession(history=history, key_bindings=_shell_keys())

    def read(self, prompt: str = PROMPT) -> str:
        if self._reader is not None:
            self._prompted()
            return self._reader(for_terminal(prompt))
        from prompt_toolkit.formatted_text import HTML
        from prompt_toolkit.patch_stdout import patch_stdout

        label = HTML("<b><ansicyan>You:</ansicyan></b> ") if prompt == PROMPT else for_terminal(prompt)
        with patch_stdout(raw=True):
            return self.session.prompt(label, pre_run=self._prompted)  # as the prompt is drawn

    def say(self, text: str) -> None:
        self.out.print(_text(text))

    def notice(self, text: str) -> None:
        from rich.text import Text

        self.out.print(Text.assemble(("•", "dim"), " ", _text(text), style="yellow"))

    def error(self, text: str) -> None:
        from rich.text import Text

        self.out.print(Text.assemble(("Error:", "bold red"), " ", _text(text)))

    def table(self, title: str, columns: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
        """A table as wide as the terminal at most, never breaking a word or an id: the
        columns get room for their longest word and share the rest by what their text
        needs, and long text wraps inside its column. When even that is too wide (a
        narrow window, many columns), each row is shown as a block of "column value"
        lines instead."""
        from rich.table import Table

        if not rows:
            self.say(f"{title}\n(none)" if title else "(none)")
            return
        heads = [for_terminal(c) for c in columns]
        cells = [[for_terminal(v) for v in row] for row in rows]
        # The default box draws a rule at each edge and between columns, and pads each cell by one.
        widths = column_widths(heads, cells, self.out.width - (3 * len(heads) + 1))
        if widths is None:
            self._records(title, heads, cells)
            return
        table = Table(title=_text(title) if title else None, title_justify="left", show_lines=False)
        for head, width in zip(heads, widths, strict=True):
            table.add_column(_text(head), width=width, overflow="fold")
        for row in cells:
            table.add_row(*[_text(v) for v in row])
        self.out.print(table)

    def _records(self, title: str, heads: list[str], cells: list[list[str]]) -> None:
        from rich.table import Table

        if title:
            self.out.print(_text(title))
        for row in cells:
            block = Table.grid(padding=(0, 1))
            block.add_column(no_wrap=True, style="bold")
            block.add_column(overflow="fold")
            for head, value in zip(heads, row, strict=True):
                if value.strip():
                    block.add_row(_text(head), _text(value))
            self.out.print(block)
            self.out.print()

    @contextlib.contextmanager
    def reply_stream(self) -> Iterator[Callable[[str], None]]:
        with _no_echo(), self._live_reply() as emit:
            yield emit

    @contextlib.contextmanager
    def _live_reply(self) -> Iterator[Callable[[str], None]]:
        from rich.live import Live
        from rich.text import Text

        status = self.out.status("Thinking…", spinner="dots")
        status.start()
        live: Live | None = None
        parts: list[str] = []
        screen = TerminalFilter()

        def emit(delta: str) -> None:
            nonlocal live
            parts.append(screen.feed(delta))
            if live is None:
                status.stop()
                self.out.print(Text("Memora:", style="bold magenta"))
                live = Live(_markdown(""), console=self.out, refresh_per_second=12, vertical_overflow="visible")
                live.start()
            live.update(_markdown("".join(parts)))

        try:
            yield emit
        finally:
            status.stop()
            if live is not None:
                live.stop()


# F2 at the prompt opens the memory page, as if "/page" had been typed. F2 and not
# Ctrl-P: Ctrl-P is the previous history line in prompt_toolkit's (Emacs) editing,
# which learners use; F2 is unbound there and the usual "open a panel" key.
PAGE_KEY = "f2"


def _shell_keys():
    """Ctrl-C as in a shell: a typed line is cleared and the prompt stays; on an empty
    line the read is interrupted (``KeyboardInterrupt``), and the REPL decides. F2
    opens the memory page (``PAGE_KEY``)."""
    from prompt_toolkit.key_binding import KeyBindings

    keys = KeyBindings()

    @keys.add("c-c")
    def _(event):
        buffer = event.app.current_buffer
        if buffer.text:
            buffer.reset()
        else:
            event.app.exit(exception=KeyboardInterrupt, style="class:aborting")

    @keys.add(PAGE_KEY)
    def _open_page(event) -> None:
        event.app.exit(result="/page")  # not accepted, so not written to the input history

    return keys


def _termios_error() -> type[BaseException]:
    """``termios.error`` (raised for a stdin that is no terminal), or a stand-in where there is no termios."""
    try:
        import termios

        return termios.error
    except ImportError:
        return OSError


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
    except (ImportError, OSError, ValueError, AttributeError, _termios_error()):  # not a terminal
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


def _text(value):
    """One piece of data for rich: a ``Text`` (never parsed as markup or emoji codes)."""
    from rich.text import Text

    return Text(for_terminal(value))


def _markdown(text: str):
    """A reply rendered as Markdown, with two changes from rich's defaults: inline
    HTML is shown as text ("use <verb> + ing" would otherwise lose "<verb>"), and
    a link shows its address instead of hiding it behind a clickable label."""
    from rich.markdown import Markdown

    rendered = Markdown("", hyperlinks=False)
    rendered.markup = text
    rendered.parsed = _markdown_parser().parse(text)
    return rendered


@functools.cache
def _markdown_parser():
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark", {"html": False}).enable("strikethrough").enable("table")
