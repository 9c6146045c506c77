"""The tables a learner reads (``mistakes``, ``memories``, ``status``, ``why``) at 80
and 60 columns, on a real pseudo-terminal read back through a terminal emulator: no
line is wider than the window, no word or id is split across lines, and long text
wraps inside its own column (every line of a table has its rules in the same places)."""

from __future__ import annotations

import re

import pytest
from helpers.pty_terminal import start_memora
from rich.cells import cell_len

from memora.teaching.ledger import NewMistake

MISTAKES = [
    ("Yesterday I goed to the supermarket.", "Yesterday I went to the supermarket.", "go → went: irregular past tense"),
    (
        "She explained me the pronunciation.",
        "She explained the pronunciation to me.",
        "explain takes the thing explained first; the person follows with 'to' (explain something to someone)",
    ),
    (
        "I am interesting in internationalisation.",
        "I am interested in internationalisation.",
        "-ed adjectives describe feelings",
    ),
]
MEMORIES = [
    "The learner is preparing for an IELTS examination in Manchester next spring "
    "and finds listening comprehension unbelievably difficult",
    "The learner's grandmother lives in Kaohsiung and they video-call every Sunday afternoon",
    "學習者想加強旅遊英文，特別是在機場和飯店的對話",
]
# each command, and a word of its last table: the prompt after it means the table is all there
COMMANDS = {"mistakes": b"feelings", "memories": b"Kaohsiung", "status": b"relabelled", "why": b"Sent"}
VERTICAL = "│┃"


def tokens(lines: list[str]) -> set[str]:
    words = set()
    for line in lines:
        for piece in re.split(rf"[\s{VERTICAL}]+", line):
            words.add(piece.strip(".,;:'()\"“”"))
    return words


def rule_positions(line: str) -> list[int]:
    """The screen columns of a line's rules (a CJK character takes two)."""
    return [cell_len(line[:i]) for i, char in enumerate(line) if char in VERTICAL]


def check_tables(lines: list[str]) -> None:
    """Between a table's top and bottom border, every line has its rules where the first has them."""
    inside = None
    for line in lines:
        if line.startswith(("┏", "┌")):
            inside = None
            continue
        if line.startswith(("└", "┗")):
            inside = None
            continue
        if line.startswith(("┃", "│")):
            if inside is None:
                inside = rule_positions(line)
            assert rule_positions(line) == inside, "\n".join(lines)
        elif inside is not None and not line.startswith(("┡", "├")):
            raise AssertionError("a table line without its column rules:\n" + "\n".join(lines))


@pytest.mark.slow  # a child process on a pty
@pytest.mark.chroma  # the child reads the seeded store from disk
@pytest.mark.parametrize("columns", [80, 60])
def test_the_tables_fit_the_window_and_break_no_word_or_id(make_app, server, data_dir, columns):
    app = make_app()
    ids = [app.ledger.record(NewMistake(original=o, corrected=c, rule=r, kind="grammar"))[0].id for o, c, r in MISTAKES]
    ids += [app.store.add(text).id for text in MEMORIES]
    app.close(timeout=5)
    server.script("chat", "Let's practise listening: I will read a short dialogue at a train station.")
    term = start_memora(server, data_dir.parent, columns=columns, rows=24, MEMORA_HOME=data_dir)
    assert term.wait_for(b"You:")
    term.send(b"Can we practise listening for my IELTS examination?\r")
    assert term.wait_for(b"You:", after=b"train station")
    for command, marker in COMMANDS.items():
        term.send(command.encode() + b"\r")
        assert term.wait_for(marker), "\n".join(term.lines())
        assert term.wait_for(b"You:", after=marker), "\n".join(term.lines())
    code = term.close()
    lines = term.lines()
    text = "\n".join(lines)
    assert code == 0, text
    assert "Traceback" not in text
    assert all(len(line) <= columns for line in lines)
    words = tokens(lines)
    for identifier in ids:
        assert identifier in words, (identifier, text)
    seeded = {w.strip(".,;:'()") for entry in MISTAKES for part in entry for w in part.split()}
    seeded |= {w.strip(".,;:'()") for memory in MEMORIES[:2] for w in memory.split()}
    broken = sorted(w for w in seeded if len(w) >= 4 and w not in words)
    assert not broken, (broken, text)
    check_tables(lines)
