"""``help`` at 80 and 60 columns, on a real pseudo-terminal read back through a
terminal emulator: each description wraps inside its own column (a hanging indent),
a usage too wide for its column has a line of its own, and no word, bracketed group
or id is split by the terminal."""

from __future__ import annotations

import pytest
from helpers.pty_terminal import start_memora

from memora.cli.commands import COMMANDS


@pytest.mark.slow  # a child process on a pty
@pytest.mark.parametrize("columns", [80, 60])
def test_help_fits_the_terminal_without_breaking_words(server, tmp_path, columns):
    term = start_memora(server, tmp_path, columns, 24)
    assert term.wait_for(b"You:")
    term.send(b"help\r")
    assert term.wait_for(b"You:", after=b"Leave Memora")  # the next prompt: keys typed now are read
    term.send(b"help memory\r")
    assert term.wait_for(b"You:", after=b"e.g. memory cap 200")
    assert term.close() == 0
    lines = term.lines()
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
        continued_usage = line.startswith("  [")  # "memories [--all] ..." at 60 columns
        assert usage_line or continued_usage or line.startswith(" " * indent), (line, shown)
    # what a learner must type stays on one line: a bracketed group, an example with an id
    assert any("[--type semantic|episodic]" in line for line in listing), shown
    assert "e.g. memory edit 3fa9c2d1 I moved to Taipei in 2024" in lines, shown
