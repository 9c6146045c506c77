"""``help`` at 80 and 60 columns, on a real pseudo-terminal read back through a
terminal emulator: the list fits 24 rows, a line a command; ``help <command>`` wraps
each description inside its own column, and no word, bracketed group or id is split."""

from __future__ import annotations

import pytest
from helpers.pty_terminal import start_memora

from memora.cli.commands import COMMANDS

COMMANDS_BY_NAME = {command.name: command for command in COMMANDS}


@pytest.mark.slow  # a child process on a pty
@pytest.mark.parametrize("columns", [80, 60])
def test_help_fits_the_terminal_without_breaking_words(server, tmp_path, columns):
    term = start_memora(server, tmp_path, columns, 24)
    assert term.wait_for(b"You:")
    term.send(b"help\r")
    assert term.wait_for(b"You:", after=b"Leave Memora")  # the next prompt: keys typed now are read
    term.send(b"help memories\r")
    assert term.wait_for(b"You:", after=b"e.g. memories --page 2")
    term.send(b"help memory\r")
    assert term.wait_for(b"You:", after=b"e.g. memory cap 200")
    assert term.close() == 0
    lines = term.lines()
    shown = "\n".join(lines)
    start = next(i for i, line in enumerate(lines) if line.startswith("Commands"))
    end = next(i for i, line in enumerate(lines) if i > start and line.startswith("You:"))
    assert end - start < 24, shown  # the whole list and the prompt after it fit a 24-row terminal
    assert all(line.split()[0].rstrip(",") in {c.name for c in COMMANDS} for line in lines[start + 2 : end]), shown
    start = next(i for i, line in enumerate(lines) if line.startswith("help memories"))
    listing = lines[start : next(i for i, line in enumerate(lines) if i > start and line.startswith("You:"))]
    listing += lines[next(i for i, line in enumerate(lines) if line.rstrip() == "help memory") :]
    words = {word for line in listing for word in line.split()}
    forms = [form for name in ("memories", "memory") for form in COMMANDS_BY_NAME[name].parsed_forms()]
    for form in forms:  # every word whole: a word broken by the terminal would be two pieces
        assert set(form.usage.split()) | set(form.help.split()) <= words, (form.usage, shown)
    # what a learner must type stays on one line: a bracketed group, an example with an id
    assert any("[--type semantic|episodic]" in line for line in listing), shown
    assert "e.g. memory edit 3fa9c2d1 I moved to Taipei in 2024" in lines, shown
