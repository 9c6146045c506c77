"""Text reaches the terminal as data: shown as typed, never as markup or control.

Every hostile string below goes through every output method of both consoles
(``PlainConsole`` over a transcript, ``RichConsole`` over a real
``rich.console.Console`` writing to a ``StringIO`` as a colour terminal), then
through the real commands and the real streamed reply.
"""

from __future__ import annotations

import io
import re

import pytest
from rich.console import Console as RichOutput

import chatbot
from memora.cli.terminal import PlainConsole, RichConsole, TerminalFilter, for_terminal

# (stored or model-written text, what the learner must see)
HOSTILE = {
    "markup close": ("I like [/red] music", "I like [/red] music"),
    "markup link": ("[link=https://evil.example]click me[/link]", "[link=https://evil.example]click me[/link]"),
    "gap fill": ("I [went] home", "I [went] home"),
    "markup style": ("[bold red]loud[/bold red] and [/]", "[bold red]loud[/bold red] and [/]"),
    "escaped markup": ("a \\[b] c\\", "a \\[b] c\\"),
    "emoji codes": ("I love :pizza: and :red_heart:", "I love :pizza: and :red_heart:"),
    "clear screen": ("before\x1b[2J\x1b[Hafter", "beforeafter"),
    "window title": ("\x1b]0;evil title\x07my memory", "my memory"),
    "osc 8 link": ("\x1b]8;;https://evil.example\x1b\\click\x1b]8;;\x1b\\ here", "click here"),
    "colour": ("\x1b[31mred\x1b[0m text", "red text"),
    "c1 csi": ("x\x9b2Jy", "xy"),
    "c1 osc": ("x\x9d0;evil title\x9cy", "xy"),
    "dcs": ("x\x1bP1$qm\x1b\\y", "xy"),
    "reset": ("x\x1bcy", "xy"),
    "c0 controls": ("bell\x07 back\x08space\rreturn\x00\x0b\x0c\x7f end", "bell backspacereturn end"),
    "bidi override": ("price: \u202e01$\u202c ok \u2066x\u2069", "price: 01$ ok x"),
    "lone surrogate": ("half \ud83d pair", "half \ufffd pair"),
    "stray esc": ("a\x1b", "a"),
    "plain unicode": ("我想加強旅遊英文 👨\u200d👩\u200d👧 café", "我想加強旅遊英文 👨\u200d👩\u200d👧 café"),
}
DATA_SEQUENCES = (
    "\x1b[2J",
    "\x1b]",
    "\x1b[H",
    "\x1bP",
    "\x1bc",
    "\x07",
    "\x9b",
    "\x9d",
    "evil title",
    "\u202e",
    "\x00",
)
_RICH_OWN = re.compile(r"\x1b\[[0-9;]*m|\x1b\[\?25[lh]|\x1b\[\d*A|\x1b\[2K|\r")  # what rich itself writes


def plain_console():
    out: list[str] = []
    console = PlainConsole(lambda prompt: "", out.append)
    return console, lambda: "".join(out)


def rich_console(color_system="truecolor", reader=None):
    buffer = io.StringIO()
    output = RichOutput(file=buffer, force_terminal=True, width=200, color_system=color_system, highlight=False)
    return RichConsole(out=output, reader=reader), buffer.getvalue


CONSOLES = {
    "plain": plain_console,
    "rich": rich_console,
    "rich-no-colour": lambda: rich_console(color_system=None),
}


def assert_shows_as_data(screen: str, expected: str, mode: str, *, live: bool = False) -> None:
    for sequence in DATA_SEQUENCES:
        assert sequence not in screen, (sequence, screen)
    assert "\x1b]8;" not in screen, "no hyperlink"
    if mode == "plain" or (mode == "rich-no-colour" and not live):  # rich's spinner moves the cursor
        assert "\x1b" not in screen, screen  # nothing but the data's own text was printed
    assert "\x1b" not in _RICH_OWN.sub("", screen), screen
    assert expected in _RICH_OWN.sub("", screen), (expected, screen)


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_for_terminal_keeps_text_and_removes_control(name):
    raw, expected = HOSTILE[name]
    assert for_terminal(raw) == expected


def _reply(console, text: str) -> None:
    with console.reply_stream() as emit:
        emit(text)


@pytest.mark.parametrize("mode", sorted(CONSOLES))
@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_every_output_method_shows_hostile_text_literally(mode, name):
    raw, expected = HOSTILE[name]
    methods = {
        "say": lambda c: c.say(f"Already remembered: “{raw}”."),
        "notice": lambda c: c.notice(f"Updated your memory: “{raw}”."),
        "error": lambda c: c.error(f"No memory matching “{raw}”."),
        "table": lambda c: c.table(f"History of {raw}", ["id", raw], [["a1b2c3d4", raw], [raw, "x"]]),
        "reply": lambda c: _reply(c, raw),
    }
    for method, call in methods.items():
        console, screen = CONSOLES[mode]()
        call(console)  # never raises MarkupError
        shown = screen()
        if method == "reply" and mode != "plain":
            expected = expected.replace("\\[", "[")  # Markdown's own escape, the one markup a reply keeps
        assert_shows_as_data(shown, expected, mode, live=method == "reply")
        if method == "table":
            assert _RICH_OWN.sub("", shown).count(expected) >= 4, shown  # title, header and two cells


@pytest.mark.parametrize("mode", sorted(CONSOLES))
def test_an_escape_sequence_split_across_stream_deltas_is_still_removed(mode):
    console, screen = CONSOLES[mode]()
    deltas = ["Good! \x1b", "]0;evil ", "title\x07 Say \x1b[", "2J", " *went*, not \x9b", "31m", "goed."]
    with console.reply_stream() as emit:
        for delta in deltas:
            emit(delta)
    shown = _RICH_OWN.sub("", screen())
    assert_shows_as_data(screen(), "Good!", mode, live=True)
    assert "Say" in shown and "goed." in shown
    assert "2J" not in shown and "31m" not in shown


def test_the_filter_gives_the_same_text_however_the_stream_is_cut():
    whole = "a\x1b]0;title\x07b\x1b[31;1mc\x1b\\d\x9b2Je\x1bP1$q\x1b\\f\x1b(Bg\u202eh\r\ni"
    expected = for_terminal(whole)
    assert expected == "abcdefgh\ni"
    for cut in range(len(whole) + 1):
        screen = TerminalFilter()
        assert screen.feed(whole[:cut]) + screen.feed(whole[cut:]) == expected, cut
    screen = TerminalFilter()
    assert "".join(screen.feed(ch) for ch in whole) == expected


def test_a_string_sequence_never_hides_more_than_its_line():
    assert for_terminal("oops \x1b]0;no end\nthe rest of the reply") == "oops \nthe rest of the reply"


@pytest.mark.parametrize("mode", ["plain", "rich"])
def test_a_markdown_reply_keeps_angle_brackets_and_shows_link_addresses(mode):
    console, screen = CONSOLES[mode]()
    with console.reply_stream() as emit:
        emit("Use **<verb> + ing** after *enjoy*. See [this page](https://evil.example/x).")
    shown = _RICH_OWN.sub("", screen())
    assert "<verb> + ing" in shown
    assert "https://evil.example/x" in shown
    assert "\x1b]8;" not in screen()


# -- through the real commands and the real reply ---------------------------------------------
def run_in(mode: str, app, lines):
    """``chatbot.run`` on a real console; a line may be a callable, evaluated when it is read."""
    out: list[str] = []
    script = list(lines)

    def read(prompt: str) -> str:
        app.wait_for_extraction(10)
        out.append(prompt)
        if not script:
            raise EOFError
        line = script.pop(0)
        return line() if callable(line) else line

    if mode == "plain":
        console = PlainConsole(read, out.append)
        screen = lambda: "".join(out)  # noqa: E731
    else:
        console, screen = rich_console(reader=read)
    app.set_notify(console.notice)
    assert chatbot.run(app, console, raise_unexpected=True) == 0
    return screen()


def _ids(app) -> list[str]:
    return [r.id for r in app.store.list(include_superseded=True)]


@pytest.mark.parametrize("mode", ["plain", "rich"])
def test_markup_in_memories_is_listed_searched_and_shown_in_history(make_app, mode):
    app = make_app()
    typed = ["I like [/red] music", "I [went] home every day", "see [link=https://evil.example]click me[/link] now"]
    lines = [f"remember {t}" for t in typed] + [
        "remember I like [/red] music",  # a duplicate: the reply quotes it
        "memories",
        "search music",
        lambda: f"memory edit {app.store.list(text='went')[0].id} I [went] home :smile: [bold]early[/bold]",
        "memories --all",
        lambda: f"history {app.store.list(text='went')[0].id}",
        "profile goal speak [i]fluently[/i]",
        "profile",
    ]
    shown = run_in(mode, app, lines)
    plain = _RICH_OWN.sub("", shown)
    assert "Error" not in plain and "Unexpected" not in plain
    assert "\x1b]8;" not in shown, "no live hyperlink"
    assert "Already remembered as" in plain and "“I like [/red] music”" in plain
    # each table shows each text once: memories, search, memories --all, history
    assert plain.count("I like [/red] music") == 4  # the three tables and the duplicate's quote
    assert plain.count("see [link=https://evil.example]click me[/link] now") == 3
    assert plain.count("I [went] home every day") == 4  # superseded in --all, first in history
    assert plain.count("I [went] home :smile: [bold]early[/bold]") == 2
    assert "speak [i]fluently[/i]" in plain
    assert len(_ids(app)) == 4


@pytest.mark.parametrize("mode", ["plain", "rich"])
def test_control_sequences_in_stored_text_never_reach_the_screen(make_app, mode):
    """Text that entered the store without the REPL's cleaning (an import, an older store)."""
    from memora.core.records import MemoryRecord

    app = make_app()
    hostile = "coffee\x1b[2J\x1b]0;evil title\x07 every \x9b31mmorning [/red]"
    app.store.restore([MemoryRecord(id="c0ffee01", content=hostile, created_at=app.clock(), user_id=app.settings.user)])
    shown = run_in(mode, app, ["memories", "memories --all", "search coffee", "history c0ffee01"])
    plain = _RICH_OWN.sub("", shown)
    for sequence in DATA_SEQUENCES:
        assert sequence not in shown
    assert "\x1b" not in plain
    assert plain.count("coffee every morning [/red]") == 4


@pytest.mark.parametrize("mode", ["plain", "rich"])
def test_escape_sequences_in_the_streamed_reply_are_removed(make_app, server, mode):
    # The fake server streams 24 characters per delta, so both sequences are cut in two.
    reply = "Well done! You said it:\x1b]0;evil title\x07 *I went home*.\x1b[2J Next, [/red] try again."
    assert reply[:24].endswith("\x1b")
    server.script("chat", reply)
    app = make_app()
    shown = run_in(mode, app, ["I goed home"])
    plain = _RICH_OWN.sub("", shown)
    for sequence in DATA_SEQUENCES:
        assert sequence not in shown
    assert "\x1b" not in plain
    assert "Well done! You said it:" in plain and "Next, [/red] try again." in plain
    assert "I went home" in plain
