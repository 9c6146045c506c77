"""The README is a front page and docs/ holds the rest; what they cite is real.

A test name quoted in the docs is a promise ("this is shown by ..."), so every
one must name a test that exists: a renamed or deleted test turns the promise
into a dead link. Counts of tests are never written into prose by hand, since
they go stale with the next test added; the test run prints them.
"""

import ast
import re
from dataclasses import replace
from pathlib import Path

import pytest
from helpers.command_tables import BEGIN, END, TABLES, between_markers, readme_table, reference_table, with_table

from memora.cli.commands import COMMANDS

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").glob("*.md"))
PAGES = [README, *DOCS]

# `test_name`, `test_module.py` or `tests/test_module.py` (optionally ::test_name) in backticks
CITED = re.compile(r"`(?:tests/)?(test_[A-Za-z0-9_]+)(\.py)?(?:::(test_[A-Za-z0-9_]+))?")
# "1065 tests", "1,020 passed", "960 tests collected": counts a test run prints, not prose
HAND_COUNT = re.compile(r"\b\d[\d,]* (?:tests?|passed|failed|collected|errors)\b")
LINK = re.compile(r"\]\(((?!https?:|#)[^)#\s]+)(?:#[^)]*)?\)")


def _defined_tests() -> tuple[set[str], set[str]]:
    modules, names = set(), set()
    for path in (ROOT / "tests").rglob("*.py"):
        modules.add(path.stem)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                names.add(node.name)
    return modules, names


MODULES, NAMES = _defined_tests()


def _citations(text: str) -> list[str]:
    found = []
    for match in CITED.finditer(text):
        name, is_module, inner = match.groups()
        if is_module:
            found.append(f"{name}.py")
            if inner:
                found.append(inner)
        else:
            found.append(name)
    return found


def _exists(cited: str) -> bool:
    if cited.endswith(".py"):
        return cited[:-3] in MODULES
    # a parametrized case (`test_x[quick]`) is cited by its function's name
    return cited in NAMES or cited in MODULES


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_test_the_docs_cite_exists(page):
    missing = [cited for cited in _citations(page.read_text(encoding="utf-8")) if not _exists(cited)]
    assert not missing, f"{page.name} cites tests that do not exist: {missing}"


def test_the_citation_check_can_fail():
    assert _citations("shown by `test_no_such_thing_anywhere` and `tests/test_nowhere.py`") == [
        "test_no_such_thing_anywhere",
        "test_nowhere.py",
    ]
    assert not _exists("test_no_such_thing_anywhere") and not _exists("test_nowhere.py")
    assert _exists("test_every_test_the_docs_cite_exists") and _exists("test_docs.py")


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_no_test_count_is_written_by_hand(page):
    counts = HAND_COUNT.findall(page.read_text(encoding="utf-8"))
    assert not counts, f"{page.name} writes test counts into prose (they go stale): {counts}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_relative_link_leads_to_a_file(page):
    targets = LINK.findall(page.read_text(encoding="utf-8"))
    broken = [target for target in targets if not (page.parent / target).exists()]
    assert not broken, f"{page.name} links to files that do not exist: {broken}"


def test_the_readme_is_a_front_page():
    text = README.read_text(encoding="utf-8")
    words = len(re.findall(r"\S+", text))
    longest = max(len(line) for line in text.splitlines())
    assert words < 2500, f"README.md has {words} words; the rest belongs in docs/"
    assert longest <= 300, f"README.md has a line of {longest} characters"
    for section in ("## A session", "## Commands", "## Configuration", "## Where your data lives"):
        assert section in text
    assert "python chatbot.py" in text and "pytest" in text
    assert DOCS, "docs/ holds what the front page links to"
    for doc in DOCS:
        assert f"docs/{doc.name}" in text, f"the README does not link to docs/{doc.name}"


@pytest.mark.parametrize("page", list(TABLES), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_the_command_tables_are_made_from_the_commands_declaration(page):
    made = TABLES[page]()
    assert between_markers(page.read_text(encoding="utf-8")) == made, (
        f"{page.name}'s command table is not what COMMANDS makes: run python tests/helpers/command_tables.py"
    )


def test_a_command_table_out_of_step_with_commands_is_caught():
    renamed = (replace(COMMANDS[0], forms=("help [command] -- Show a different list.",)), *COMMANDS[1:])
    for make in (readme_table, reference_table):
        page = with_table(f"# Page\n\n{BEGIN}\nold\n{END}\n\nprose\n", make())
        assert between_markers(page) == make() != make(renamed)
        assert page.endswith(f"{END}\n\nprose\n")
    assert all(name in reference_table() for name in ("`forget user <name>`", "`review export <file.apkg>`"))
