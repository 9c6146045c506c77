"""The memory page (``memora/cli/page.py``), driven on a pseudo-terminal and
read back through pyte as the learner sees it. Each step waits for what the
screen shows (an event), never for a time."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest
from conftest import ROOT, child_env
from helpers.pty_screen import ScreenTerminal
from helpers.stores import add_many, files_holding, new_pieces

from memora.cli.commands import CommandRouter, line_runner
from memora.cli.page import HELP, NOT_INTERACTIVE, MemoryPage
from memora.cli.terminal import PlainConsole
from memora.teaching.ledger import NewMistake

pytestmark = pytest.mark.slow  # child processes on a pty

DOWN, ESC, CLEAR_LINE, F2 = b"\x1b[B", b"\x1b", b"\x15", b"\x1bOQ"
SEEDS = [
    ("The learner loves coffee.", "habit"),
    ("The learner quit coffee.", "habit"),
    ("The learner lives in Taipei.", "identity"),
    ("The learner lives in Tainan.", "identity"),
    ("The learner plays tennis every week.", "hobby"),
    ("The learner has an exam next Friday.", "schedule"),
]


@pytest.fixture
def seeded(make_app):
    app = make_app()
    ids = {text: app.store.add(text, category=category, source="extracted").id for text, category in SEEDS}
    app.profiles.set_english_level("B1")
    app.profiles.add_learning_goal("pass IELTS with 7.0")
    app.ledger.record(NewMistake(original="I goed", corrected="I went", rule="go: went", kind="grammar"))
    app.close(timeout=5)
    return ids


def start(data_dir, server, columns=80, rows=24, **env) -> ScreenTerminal:
    term = ScreenTerminal(
        ROOT / "chatbot.py",
        child_env(
            MEMORA_HOME=data_dir,
            MEMORA_EMBEDDING_MODEL="hash",
            OPENAI_BASE_URL=server.base_url,
            OPENAI_API_KEY="sk-test-not-real",
            TERM="xterm",
            PROMPT_TOOLKIT_NO_CPR="1",
            # The pty's own size: a COLUMNS or LINES inherited from the test process would win.
            COLUMNS=str(columns),
            LINES=str(rows),
            **env,
        ),
        columns=columns,
        rows=rows,
    )
    assert term.wait_for("You:"), term.text()
    return term


def cursor_line(text: str) -> str:
    return next((line for line in text.splitlines() if line.startswith(">")), "")


def body(text: str) -> str:
    """The page's list: between the rule under the filter and the detail lines."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith("\u2500\u2500\u2500")), None)
    if start is None:
        return ""  # not drawn (yet)
    return "\n".join(lines[start + 1 : -3])


def detail(text: str) -> str:
    """The two detail lines above the message line, joined (the selected memory in full)."""
    lines = text.splitlines()
    return lines[-3].rstrip() + " " + lines[-2]  # the second line goes on at a word


@pytest.mark.chroma  # the page runs in a child process, which reads the seeded store from disk
def test_every_memory_action_on_the_page_then_back_to_the_chat(seeded, data_dir, server):
    term = start(data_dir, server)
    term.send(b"Hello, I am practising my English\r")
    assert term.wait_screen(lambda t: t.count("You:") >= 2), term.text()

    # open with the command: profile on top, memories by category in the digest's order
    term.send(b"page\r")
    assert term.wait_for("Memora page of default"), term.text()
    # found beside the page, then marked: wait for the whole redraw, not only its first line
    headings = ("identity (2)", "hobby (1)", "habit (2)", "schedule (1)")
    assert term.wait_screen(lambda t: "conflicts (2)" in t and all(h in body(t) for h in headings)), term.text()
    screen = term.text()
    assert "B1" in screen and "pass IELTS with 7.0" in screen and "conflicts (2)" in screen
    listed = body(screen)
    assert listed.index("identity (2)") < listed.index("hobby (1)") < listed.index("habit (2)")
    assert listed.index("habit (2)") < listed.index("schedule (1)")
    assert "exam on Fri" in listed and "next Friday" not in listed  # resolved as the tutor reads it
    assert re.search(r"!.*loves coffee", listed)  # flagged

    # navigate
    term.send(DOWN)
    assert term.wait_screen(lambda t: "lives in Ta" in cursor_line(t)), term.text()
    # the learner's words a key away
    term.send(b"w")
    assert term.wait_screen(lambda t: "exam next Fr" in body(t)), term.text()
    term.send(b"w")
    assert term.wait_screen(lambda t: "exam next Fr" not in body(t) and "exam on Fri" in body(t)), term.text()

    # filter: narrows as you type, by text or by category
    term.send(b"/tennis")
    assert term.wait_screen(lambda t: "tennis" in body(t) and "coffee" not in body(t)), term.text()
    term.send(b"\r")
    term.send(DOWN)  # the heading is gone: the first row is the memory
    assert term.wait_screen(lambda t: "tennis" in cursor_line(t)), term.text()

    # edit, through 'memory edit'
    term.send(b"e")
    assert term.wait_for("Edit: The learner plays tennis every week."), term.text()
    term.send(CLEAR_LINE + b"The learner plays tennis every Sunday.\r")
    assert term.wait_for("Updated:"), term.text()
    assert term.wait_screen(lambda t: "every Sunday" in body(t)), term.text()

    # the timeline: by month, newest first, the replaced version dimmed right under its replacement
    term.send(b"t")
    assert term.wait_screen(lambda t: "was: The learner plays tennis every week." in body(t)), term.text()
    rows = body(term.text()).splitlines()
    newer = next(i for i, line in enumerate(rows) if "every Sunday" in line)
    assert "was: The learner plays tennis every week." in rows[newer + 1]
    term.send(b"m")

    # history, through 'history'
    term.send(b"/" + CLEAR_LINE + b"Sunday\r")
    assert term.wait_screen(lambda t: "every Sunday" in cursor_line(t) or "every Sunday" in body(t)), term.text()
    term.send(b"h")
    assert term.wait_for("History of"), term.text()
    assert term.wait_screen(lambda t: "every week" in t and "every Sunday" in t), term.text()
    term.send(b"q")  # closes the history, not the page
    assert term.wait_screen(lambda t: "History of" not in t and "Memora page" in t), term.text()

    # undo, through 'undo': the edit is taken back
    term.send(b"u")
    assert term.wait_for("Undone"), term.text()
    term.send(b"/" + CLEAR_LINE + b"tennis\r")
    assert term.wait_screen(lambda t: "every week" in body(t) and "every Sunday" not in body(t)), term.text()

    # add, through 'remember'
    secret = "My cat is called Quixoticmochi"
    pieces = new_pieces(data_dir, secret)
    term.send(b"/" + CLEAR_LINE + b"\r")
    term.send(b"a")
    assert term.wait_for("Remember:"), term.text()
    term.send(secret.encode() + b"\r")
    assert term.wait_for("Remembered ("), term.text()
    assert term.wait_screen(lambda t: "Quixoticmochi" in body(t)), term.text()
    assert files_holding(data_dir, "Quixoticmochi")  # it is stored

    # forget, after a confirmation, through 'forget': no byte of it is left
    term.send(b"/" + CLEAR_LINE + b"quixotic\r" + DOWN)
    assert term.wait_screen(lambda t: "Quixoticmochi" in cursor_line(t)), term.text()
    term.send(b"d")
    assert term.wait_for("(y/n)"), term.text()
    term.send(b"n")
    assert term.wait_for("Cancelled; nothing changed."), term.text()
    term.send(b"d")
    assert term.wait_for("(y/n)"), term.text()
    term.send(b"y")  # one key answers
    assert term.wait_for("Forgot"), term.text()
    assert term.wait_screen(lambda t: "Quixoticmochi" not in body(t)), term.text()

    # back to the chat: the page was on the alternate screen, so the terminal puts the
    # chat back as it was; the conversation goes on with the first message in it
    term.send(b"q")
    assert term.wait_for("Back from the memory page"), term.text()
    opened = term.output.index(b"\x1b[?1049h")
    assert opened < term.output.index(b"Memora page of") < term.output.rindex(b"\x1b[?1049l")
    term.send(b"And what about articles?\r")
    # (pyte has no alternate screen, so the page's last frame stays above: read what follows)
    assert term.wait_screen(lambda t: "You:" in t.rpartition("And what about articles?")[2].partition("Memora:")[2]), (
        term.text()
    )
    sent = server.chats[-1]
    assert "Hello, I am practising my English" in str(sent.input)
    assert sent.last_user.endswith("And what about articles?")
    assert term.close() == 0
    assert files_holding(data_dir, secret, *pieces) == {}  # the session's end wiped it from every file


@pytest.mark.chroma  # the page runs in a child process, which reads the seeded store from disk
def test_conflicts_profile_and_mistakes_on_the_page(seeded, data_dir, server, make_app):
    term = start(data_dir, server, rows=90)  # tall enough to hold all of 'status'; the page fills it
    term.send(b"status\r")
    assert term.wait_screen(lambda t: re.search(r"conflicts\s+\S*\s*2 open", t) is not None), term.text()

    # F2 at the prompt opens the page
    term.send(F2)
    assert term.wait_for("Memora page of default"), term.text()
    term.send(b"c")
    assert term.wait_for("\u201cquit\u201d"), term.text()
    screen = body(term.text())
    assert "coffee" in screen and "taipei" in screen.lower() and "\u201ctaipei\u201d vs \u201ctainan\u201d" in screen

    # keep one: with the filter, the pair's heading and its Tainan row are left; keep Taipei
    term.send(b"/tainan\r")
    assert term.wait_screen(lambda t: "coffee" not in body(t)), term.text()
    tainan = next(line for line in body(term.text()).splitlines() if "Tainan" in line)
    term.send(b"2" if "! 1 " in tainan else b"1")
    assert term.wait_for("and supersede"), term.text()
    term.send(b"y")  # one key answers
    assert term.wait_for("Kept"), term.text()
    assert term.wait_for("conflicts (1)"), term.text()
    # keep both: the coffee pair is never flagged again
    term.send(b"/" + CLEAR_LINE + b"\r")
    assert term.wait_screen(lambda t: "coffee" in body(t)), term.text()
    term.send(b"b")
    assert term.wait_for("Kept both"), term.text()
    assert term.wait_for("conflicts (0)"), term.text()

    # profile: a level change asks first
    term.send(b"p")
    assert term.wait_screen(lambda t: "English level: B1" in cursor_line(t)), term.text()
    term.send(b"e")
    assert term.wait_for("English level (A1-C2): B1"), term.text()
    term.send(CLEAR_LINE + b"B2\r")
    assert term.wait_for("Change your level from B1 to B2? (y/n)"), term.text()
    term.send(b"y")  # one key answers
    assert term.wait_for("Profile updated."), term.text()
    assert term.wait_screen(lambda t: "English level: B2" in t), term.text()

    # a mistake, with its status and next review, forgotten after a confirmation
    term.send(b"x")
    assert term.wait_screen(lambda t: "go: went" in t and "next review" in t), term.text()
    term.send(b"d")
    assert term.wait_for("Forget mistake"), term.text()
    term.send(b"y")  # one key answers
    assert term.wait_for("Forgot mistake"), term.text()
    term.send(ESC)
    assert term.wait_screen(lambda t: "You:" in t.rpartition("Back from the memory page")[2]), term.text()
    term.send(b"status\r")
    assert term.wait_screen(lambda t: re.search(r"conflicts\s+\S*\s*0 open", t) is not None), term.text()
    assert term.close() == 0

    app = make_app()
    kept = app.store.get(seeded["The learner lives in Taipei."])
    dropped = app.store.get(seeded["The learner lives in Tainan."])
    assert kept.is_current and not dropped.is_current and dropped.change_reason == "conflict"
    history = app.store.history(dropped.id)
    assert [r.content for r in history] == ["The learner lives in Tainan."]
    assert app.profiles.get().english_level == "B2"
    assert app.ledger.count() == 0
    assert all(r.is_current for r in app.store.list() if "coffee" in r.content)


HOSTILE = (
    "[/red][link=http://x]click[/link] <b>bold</b> \x1b[31mred\x1b[0m \u202eevil\u202c "
    + "W" * 300
    + " 我住在台北，每天喝咖啡"
)


def test_hostile_text_resize_and_no_color(make_app, data_dir, server):
    app = make_app()
    app.store.add(HOSTILE, category="identity", source="extracted")
    app.store.add("我住在台北", category="identity", source="extracted")
    app.close(timeout=5)
    term = start(data_dir, server, NO_COLOR="1")
    mark = len(term.output)
    term.send(b"page\r")
    assert term.wait_for("Memora page of default"), term.text()
    term.send(b"/link\r")  # the hostile memory is then the first row; its detail shows it in full
    shown = "[/red][link=http://x]click[/link] <b>bold</b> red evil WWW"  # markup literal, escapes gone
    assert term.wait_screen(lambda t: shown in detail(t)), term.text()
    page_bytes = term.output[mark:]
    assert b"\x1b[31m" not in page_bytes and not re.search(rb"\x1b\[[0-9;]*3[0-7]m", page_bytes)  # no colour
    assert "\u202e" not in term.text() and "evil" in term.text()
    assert all(len(line) <= 80 for line in term.lines())
    term.send(b"/" + CLEAR_LINE + b"\r")
    assert term.wait_screen(lambda t: "我住在台北" in body(t)), term.text()

    # a resize is followed: rows are cut to the new width
    term.resize(120, 30)
    assert term.wait_screen(lambda t: any(line.startswith("\u2500" * 120) for line in t.splitlines())), term.text()
    assert term.wait_screen(lambda t: any(len(line) > 80 for line in body(t).splitlines())), term.text()
    term.resize(80, 24)  # cut again at 80, after a whole word (pyte's own resize only truncates, with no "…")
    assert term.wait_screen(
        lambda t: (
            any(line.endswith("[/link]\u2026") for line in body(t).splitlines())
            and all(len(line) <= 80 for line in t.splitlines())
        )
    ), term.text()
    term.send(b"q")
    assert term.wait_screen(lambda t: "You:" in t.rpartition("Back from the memory page")[2]), term.text()
    assert term.close() == 0


def test_plain_or_not_a_terminal_says_so_in_one_line(make_app):
    out: list[str] = []
    app = make_app()
    router = CommandRouter(app, PlainConsole(read=lambda prompt: "", write=out.append))
    assert router.dispatch("page")
    assert "".join(out) == NOT_INTERACTIVE + "\n"


def test_ten_thousand_rows_draw_only_what_fits(make_app):
    """The page draws the visible rows only, whatever the number of memories."""
    app = make_app()
    add_many(app.store, ({"content": f"The learner noted fact number {n}.", "category": "other"} for n in range(300)))
    page = MemoryPage(app, line_runner, background=False)
    drawn = page.visible(80, 15)
    assert len(drawn) == 15 and all(len(text.rstrip("\n")) <= 80 for _, text in drawn)
    page.filter_text = "number 29"
    shown = page.shown_rows()  # every word of the filter, anywhere in the row
    assert len(shown) >= 13 and all("number" in r.search and "29" in r.search for r in shown)
    page.filter_text = ""
    assert re.fullmatch(r"[A-Z][a-z]+ 20\d\d", page.rows_of("timeline")[0].text)  # a month heading first


def test_the_memories_view_reads_a_page_at_a_time_and_scrolls_to_the_oldest(make_app):
    """The page opens on one page of rows, however many memories there are; scrolling
    reads on, in the same order, to the oldest; a filter still finds any row."""
    app = make_app()
    start = datetime(2026, 1, 1, tzinfo=UTC)
    facts = ({"content": f"The learner noted hobby fact {n}.", "category": "hobby"} for n in range(450))
    add_many(app.store, ({**fact, "created_at": start + timedelta(minutes=n)} for n, fact in enumerate(facts)))
    add_many(app.store, [{"content": "The learner is called Ming.", "category": "identity"}])
    add_many(
        app.store,
        (
            {"content": f"The learner said same-minute fact {n}.", "category": "identity", "created_at": start}
            for n in range(9)
        ),
    )
    page = MemoryPage(app, line_runner)  # the other views are made beside the page, once it is on screen
    assert "outline" not in page.state.rows  # opening read no list of every memory
    # Every version is read a chunk at a time (for the timeline and a filter), in the order a
    # listing of them all has, ties in time included, none twice and none left out.
    listed = [r.id for r in app.store.list(include_superseded=True)]
    assert [o.id for o in app.store.catalog.outline(chunk=4)] == listed and len(listed) == 460
    texts = [page.row_text(row) for row in page.rows_of("memories")]
    assert [t.strip() for t in texts if not t.startswith(" ")] == ["identity (10)", "hobby (450)"]
    numbers = [int(m.group(1)) for t in texts if (m := re.search(r"hobby fact (\d+)", t))]
    assert numbers == list(range(449, -1, -1))  # newest first, across pages of 200, none twice
    page.press("end")
    assert "hobby fact 0." in page.row_text(page.selected())
    page.filter_text = "fact 321."
    shown = [page.row_text(r).split("  ")[-1].strip() for r in page.shown_rows()]
    assert shown == ["The learner noted hobby fact 321."]
    # typed letter by letter and deleted again, the filter finds what a new page finds with it typed whole
    for typed in ("fact 3", "fact 32", "fact 321", "fact 32", "f", "", "same", "same-minute fact"):
        page.filter_text = fresh_page(app, typed).filter_text
        assert [r.key for r in page.shown_rows()] == [r.key for r in fresh_page(app, typed).shown_rows()], typed
    assert len(page.shown_rows()) == 9


def fresh_page(app, typed: str) -> MemoryPage:
    page = MemoryPage(app, line_runner, background=False)
    page.filter_text = typed
    return page


def test_keep_one_is_recorded_in_history_and_undone_by_undo(make_app):
    from memora.cli.page import keep_one, open_conflicts

    app = make_app()
    old = app.store.add("The learner loves coffee.", category="habit", source="extracted").id
    new = app.store.add("The learner quit coffee.", category="habit", source="extracted").id
    [conflict] = open_conflicts(app)
    assert {conflict.first.id, conflict.second.id} == {old, new}
    keep_one(app, new, old)
    assert open_conflicts(app) == []
    [version] = app.store.history(old)
    assert not version.is_current and version.change_reason == "conflict"
    assert "kept" in version.metadata.get("note", "")
    lines = app.undo()
    assert "'keep one' on the page" in lines[0]
    assert app.store.get(old).is_current and len(open_conflicts(app)) == 1


@pytest.mark.parametrize("view", list(HELP))
def test_every_key_a_view_s_footer_names_is_bound(make_app, view):
    """The footer is the table the bindings are read from, so a key it names is never dead."""
    from prompt_toolkit.input import create_pipe_input
    from prompt_toolkit.output import DummyOutput

    with create_pipe_input() as keyboard:
        page = MemoryPage(make_app(), line_runner, input=keyboard, output=DummyOutput(), background=False)
        bound = {binding.keys[0] for binding in page.build().key_bindings.bindings}
    named = [item.split()[0] for item in HELP[view].split("  ")]
    assert named and all(key in bound for name in named for key in (name.split("/") if name != "/" else ["/"]))
