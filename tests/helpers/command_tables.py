"""The command tables of README.md and docs/commands.md, made from ``COMMANDS``.

``python tests/helpers/command_tables.py`` writes each between its markers;
``tests/test_docs.py`` fails when a file holds anything else there. The rest of
each page is prose, written by hand."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if __name__ == "__main__":  # run as a script: the package sits at the root
    sys.path.insert(0, str(ROOT))

from memora.cli.commands import COMMANDS, Command  # noqa: E402

BEGIN = "<!-- the command table: made from COMMANDS (memora/cli/commands.py) by tests/helpers/command_tables.py -->"
END = "<!-- end of the command table -->"


def _cell(text: str, code: bool = False) -> str:
    text = text.replace("|", "\\|")
    return f"`{text}`" if code else text


def readme_table(commands: tuple[Command, ...] = COMMANDS) -> str:
    """A row a command: its names, what its first form does (``help <command>`` lists the
    others), and the examples ``help <command>`` shows."""
    rows = ["| command | what it does | for example |", "| --- | --- | --- |"]
    for command in commands:
        names = " / ".join(_cell(name, code=True) for name in (command.name, *command.aliases))
        forms = command.parsed_forms()
        more = f" ({len(forms)} forms: `help {command.name}`)" if len(forms) > 1 else ""
        examples = ", ".join(_cell(example, code=True) for example in command.examples)
        rows.append(f"| {names} | {_cell(forms[0].help)}{more} | {examples} |")
    return "\n".join(rows)


def reference_table(commands: tuple[Command, ...] = COMMANDS) -> str:
    """A row a form of each command, as ``help`` lists them."""
    rows = ["| command | what it does |", "| --- | --- |"]
    for command in commands:
        rows += [f"| {_cell(form.usage, code=True)} | {_cell(form.help)} |" for form in command.parsed_forms()]
    return "\n".join(rows)


TABLES = {ROOT / "README.md": readme_table, ROOT / "docs" / "commands.md": reference_table}


def between_markers(text: str) -> str:
    """What a page holds between the markers (they must be there, once each)."""
    before, begin, rest = text.partition(BEGIN + "\n")
    table, end, _ = rest.partition("\n" + END)
    assert begin and end and BEGIN not in rest, "the page lacks the command table's markers"
    return table


def with_table(text: str, table: str) -> str:
    old = between_markers(text)
    return text.replace(BEGIN + "\n" + old + "\n" + END, BEGIN + "\n" + table + "\n" + END)


if __name__ == "__main__":
    for page, make in TABLES.items():
        page.write_text(with_table(page.read_text(encoding="utf-8"), make()), encoding="utf-8")
        print(f"wrote the command table of {page.relative_to(ROOT)}")
