"""The memory page: everything Memora knows about the learner, in one full-screen view.

``page`` (or F2 at the prompt) opens it; Esc or q goes back to the chat, whose
screen the terminal restores (the page draws on the alternate screen).

Built on prompt_toolkit's full-screen ``Application`` rather than Textual.
Measured once on this machine (2 shared cores; import + first render of a
20-line screen, headless, three runs each): prompt_toolkit 0.43-0.81 s
(import 0.37-0.68 s, render 0.07-0.13 s), Textual 0.86 1.11-1.31 s (import
0.89-0.99 s, render 0.22-0.33 s). prompt_toolkit is already loaded for the
prompt, so inside the REPL its import costs nothing at all, and it is a
dependency already; a pty and pyte drive it as the learner sees it, which is
what the tests need anyway (Textual's pilot would not test the real terminal).

Every action runs the line command it stands for, through a ``CommandRouter``
writing to a ``_Captured`` console (``commands.line_runner``, handed in by the
``page`` command, so this module never imports the commands): the same checks, the same undo record,
the same history and the same erasure as typing it. What the command says is
shown on the page's message line (``history`` in a pane of its own).

Every piece of text passes ``for_terminal`` (the same filter as the rest of
Memora) and is handed to prompt_toolkit as a plain ``(style, text)`` fragment,
never as markup; each row is cut to the screen's width, so a 500-character
word or a Chinese sentence cannot break the layout. The page opens on the
memories view read a page of rows at a time (``_Paged``), and only the visible
rows are drawn, so 50,000 memories open and redraw as fast as ten; the other
views, and every row for a filter, are made beside it (``bench/page.py``,
``bench/scale.py``).
"""

from __future__ import annotations

import bisect
import contextlib
import itertools
import sys
import textwrap
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar

from memora.cli.terminal import Console, render_table
from memora.core.errors import CommandError, MemoraError
from memora.core.records import CATEGORIES, MemoryRecord
from memora.core.text_utils import for_terminal
from memora.store.catalog import Outline
from memora.store.pairs import Conflict, KeptPairs, pair_key

if TYPE_CHECKING:
    from memora.app.assistant import Memora

NOT_INTERACTIVE = (
    "The memory page needs an interactive terminal (not --plain, a pipe or a script); "
    "'memories', 'profile', 'mistakes' and 'history <id>' show the same."
)
_T = TypeVar("_T")
VIEWS = ("memories", "timeline", "mistakes", "conflicts", "profile")
VIEW_KEYS = {"m": "memories", "t": "timeline", "x": "mistakes", "c": "conflicts", "p": "profile"}
# What runs one typed line as a command, printing to the given console (commands.line_runner).
LineRunner = Callable[["Memora", Console], Callable[[str], object]]
ORIGINS = {"command": "remembered", "extracted": "from chat", "import": "import"}
# Each view's keys as its footer lists them: the page binds the keys named here (and the views', moves, / and q).
HELP = {
    "memories": "e edit  d forget  a add  h history  u undo  w your words  / filter  q back",
    "timeline": "e edit  d forget  h history  u undo  w your words  / filter  q back",
    "mistakes": "d forget the mistake  / filter  q back",
    "conflicts": "1 keep the first  2 keep the second  b keep both  h history  u undo  q back",
    "profile": "e edit  d remove  a add goal/preference  y/n pending change  q back",
}
ACTION_KEYS = sorted(
    {k for line in HELP.values() for item in line.split("  ") for k in item.split()[0].split("/")} - {"", "q"}
)


# -- conflicts (the page shows them; ``status`` counts them) ------------------------------


def kept_pairs(app: Memora) -> KeptPairs:
    return KeptPairs(app.paths.kept_pairs)


def open_pairs(app: Memora) -> list[tuple[str, str, str]]:
    """The stored pairs of current memories (found when written), less those kept both of."""
    kept = kept_pairs(app).pairs()
    return [p for p in app.store.conflicts() if pair_key(p[0], p[1]) not in kept]


def open_conflicts(app: Memora) -> list[Conflict]:
    """``open_pairs`` as memories, newest first."""
    pairs = open_pairs(app)
    records = app.store.get_many(i for p in pairs for i in p[:2])
    found = [Conflict(records[a], records[b], reason) for a, b, reason in pairs if a in records and b in records]
    return sorted(found, key=lambda c: c.second.created_at, reverse=True)


def keep_one(app: Memora, keep_id: str, drop_id: str) -> str:
    """Keep ``keep_id``: ``drop_id`` is retracted (superseded, with history), undoable as an edit is;
    refused when the kept one is no longer current (another terminal forgot or changed it)."""
    kept = app.store.get(keep_id)
    if kept is None or not kept.is_current:
        raise CommandError(f"{keep_id} is gone or was changed since, so {drop_id} stays as it is.")
    app.store.supersede(drop_id, None, reason="conflict", source="command", note=f"kept {keep_id} instead")
    app.conversation.record_changes("conflict", [(drop_id, None)])
    return f"Kept {keep_id}; {drop_id} is superseded (see 'history {drop_id}', 'undo' takes it back)."


def keep_both(app: Memora, a: str, b: str) -> str:
    kept_pairs(app).add(a, b)
    return f"Kept both {a} and {b}; that pair is not flagged again."


# -- the page -----------------------------------------------------------------------------


class _Captured(Console):
    """What a line command says, kept for the page's message line."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def say(self, text: str) -> None:
        self.lines.extend(for_terminal(text).splitlines() or [""])

    def notice(self, text: str) -> None:
        self.say(text)

    def error(self, text: str) -> None:
        self.say(f"Error: {text}")

    def table(self, title, columns, rows) -> None:
        self.say(render_table(title, columns, rows))

    def read(self, prompt: str = "") -> str:
        return ""  # the page asks its own questions before it runs a command

    @contextlib.contextmanager
    def reply_stream(self) -> Iterator[Callable[[str], None]]:
        yield lambda _delta: None


@dataclass
class Row:
    """One line of a view: its text, its style, and what it stands for (None: a heading)."""

    text: str
    style: str = ""
    kind: str = ""  # "memory", "mistake", "conflict", "level", "goal", "preference", "corrections", "pending"
    key: Any = None  # a memory's or mistake's id, a profile value, a ``Conflict``
    search: str = ""
    record: MemoryRecord | None = None  # a memory row's record (None: read by its key when drawn)


class _Paged(Sequence[Row]):
    """The memories view's rows, read when drawn: each category's heading (its count from
    an index), then its memories a page at a time. ``whole`` makes every row, for a filter."""

    PAGE = 200

    def __init__(self, parts: list[tuple[Row, int]], fetch: Callable[[str, int, int], list[Row]], whole):
        self.parts, self.fetch, self.whole = parts, fetch, whole
        self.starts = list(itertools.accumulate((1 + count for _, count in parts), initial=0))
        self.pages: dict[tuple[int, int], list[Row]] = {}

    def __len__(self) -> int:
        return self.starts[-1]

    def __getitem__(self, index):  # no slices: the page reads rows one by one
        if not 0 <= index < len(self):
            raise IndexError(index)
        part = bisect.bisect_right(self.starts, index) - 1
        heading, offset = self.parts[part][0], index - self.starts[part] - 1
        if offset < 0:
            return heading
        key = (part, offset // self.PAGE)
        if key not in self.pages:
            self.pages[key] = self.fetch(heading.search, key[1] * self.PAGE, self.PAGE)
        rows = self.pages[key]
        return rows[offset % self.PAGE] if offset % self.PAGE < len(rows) else Row("")  # forgotten elsewhere since


@dataclass
class PageState:
    view: str = "memories"
    cursor: int = 0
    top: int = 0
    own_words: bool = False
    message: str = ""
    pane: list[str] | None = None  # a history, shown instead of the rows until Esc
    asking: tuple[str, Callable[[str], object]] | None = None  # (question, what the answer does)
    rows: dict[str, Any] = field(default_factory=dict)  # each view's rows, and what they are made from


def _heading(category: str, count: int) -> Row:
    """A category's heading in the memories view, with how many memories it holds."""
    return Row(f"{category} ({count})", "class:heading", search=category)


def _one_line(text: str) -> str:
    return " ".join(for_terminal(text).split())


def _age(then, now) -> str:
    """A short age: "today", "4d", "3w", "5mo", "2y"."""
    days = (now - then).days
    if days < 1:
        return "today"
    if days < 14:
        return f"{days}d"
    if days < 60:
        return f"{days // 7}w"
    if days < 730:
        return f"{days // 30}mo"
    return f"{days // 365}y"


def _split_cells(text: str, width: int, sep: str = " ") -> tuple[str, str]:
    """``text`` split where ``width`` terminal cells are full (a CJK character takes two),
    after the last whole word (or ``sep``-separated item) that fits."""
    from prompt_toolkit.utils import get_cwidth

    used = 0
    for index, ch in enumerate(text):
        used += get_cwidth(ch)
        if used > width:
            at = text.rfind(sep, 0, index + len(sep))
            end = text.find(" ", index) % (len(text) + 1)  # the end of the word cut (or of the text)
            at = at if 0 < at and end - at <= width else index  # a word longer than a line is split
            return text[:at].rstrip(), text[at:].strip()
    return text, ""


def _fit(text: str, width: int, sep: str = " ") -> str:
    """``text`` within ``width`` terminal cells, cut after a whole word and marked."""
    from prompt_toolkit.utils import get_cwidth

    return text if get_cwidth(text) <= width else _split_cells(text, width - 1, sep)[0] + "\u2026"


class MemoryPage:
    """The page over one app; ``run`` shows it until Esc or q. ``build_rows``,
    ``visible`` and ``press`` are separate so the benchmark can time them."""

    def __init__(
        self,
        app: Memora,
        commands: LineRunner,
        *,
        no_color: bool = False,
        input=None,
        output=None,
        background: bool = True,
    ):
        self.app = app
        self.no_color = no_color
        self.captured = _Captured()
        self.run_line = commands(app, self.captured)
        self.state = PageState()
        self.filter_text = ""
        self._input, self._output = input, output
        self.application = None
        self.background = background
        self.conflicts: list[Conflict] = []
        self.flagged: set[str] = set()
        self._generation = 0
        self._deferred: Callable[[], None] | None = None
        self._found: dict[str, Sequence[Row]] = {}  # what each filter found in the rows under ""
        self._reading = threading.RLock()  # a view is made once, by the page or beside it
        self.refresh()
        self._skip_headings(1)

    # -- data -------------------------------------------------------------------------------
    def refresh(self) -> None:
        """Read everything again (after an action) and rebuild the rows of every view."""
        app = self.app
        self.now = app.clock()
        self._drawn: dict[str, MemoryRecord | None] = {}  # the records of rows read by their key
        self.profile = app.profiles.get()
        self.pending = app.proposals.pending()
        self.mistakes = app.ledger.all()
        self.plan = app.ledger.schedule(self.now)
        self._texts: dict[tuple[str, bool], str] = {}
        self.state.rows = {}  # each view's rows are made when it is first shown (``rows_of``)
        self._find_conflicts()

    @property
    def outline(self) -> list[Outline]:
        """Every version, newest first: read beside the page once its first frame is drawn."""
        return self._made("outline", self.app.store.outline)

    def _find_conflicts(self) -> None:
        """The conflicts kept when memories were written (a read, not a search); every
        other view's rows are made beside the page, which opens without waiting, so that
        switching to the timeline of 10,000 memories is a redraw, not a wait."""
        self.conflicts = open_conflicts(self.app)
        self.flagged = {r.id for c in self.conflicts for r in (c.first, c.second)}
        self._generation += 1
        generation = self._generation

        def find() -> None:
            # Beside the page, a view that fails (a store gone meanwhile) is made again, or says why, when shown.
            with contextlib.suppress(Exception) if self.background else contextlib.nullcontext():
                for view in ("memories", "timeline", "mistakes", "profile", "every"):  # every: for a filter
                    if generation == self._generation:
                        self.rows_of(view)

        if not self.background:
            find()
        elif self.application is None:
            self._deferred = find  # started once the first frame is on screen (``build``)
        else:
            threading.Thread(target=find, name="memora-page-conflicts", daemon=True).start()

    def _first_frame(self, _app) -> None:
        find, self._deferred = self._deferred, None
        if find is not None:
            threading.Thread(target=find, name="memora-page-conflicts", daemon=True).start()

    def _memory_row(self, r: MemoryRecord | Outline, indent: str = "") -> Row:
        """A memory's row. What it shows is made when it is drawn (``row_text``): its
        date, age and resolved time phrases for 10,000 memories take seconds, a
        screen's worth a millisecond."""
        origin = ORIGINS.get(r.source, r.source)
        return Row(
            indent,
            "" if r.is_current else "class:old",
            "memory",
            r.id,
            f"{r.content} {r.category} {r.memory_type} {origin} {r.id}".lower(),
            record=r if isinstance(r, MemoryRecord) else None,
        )

    def _record_of(self, row: Row) -> MemoryRecord | None:
        if row.record is not None or row.kind != "memory":
            return row.record
        if row.key not in self._drawn:  # a row of every memory: its record is read when first drawn
            self._drawn[row.key] = self.app.store.get(row.key)
        return self._drawn[row.key]

    def _memory_prefix(self, row: Row, r: MemoryRecord) -> str:
        mark = "!" if r.id in self.flagged else " "
        when = r.created_at.astimezone().strftime("%Y-%m-%d")
        origin = ORIGINS.get(r.source, r.source)
        # The id is on the detail line (the page never asks for one): the text gets the room.
        meta = f"{when} {_age(r.created_at, self.now):>5} {r.memory_type[:3]} {origin:10}"
        return f"{mark}{row.text}{meta} {'' if r.is_current else 'was: '}"

    def _shown_text(self, record) -> str:
        """A memory as the page shows it: time phrases resolved, or the learner's own words (w)."""
        key = (record.id, self.state.own_words)
        if key not in self._texts:
            from context_builder import dated_text

            text = record.content if self.state.own_words else dated_text(record, self.now)
            self._texts[key] = _one_line(text)
        return self._texts[key]

    def row_text(self, row: Row) -> str:
        record = self._record_of(row)
        if record is None:
            return row.text
        return self._memory_prefix(row, record) + self._shown_text(record)

    def row_style(self, row: Row) -> str:
        record = self._record_of(row)
        if record is not None and record.is_current and record.id in self.flagged:
            return "class:flag"
        return row.style

    def _rows_memories(self) -> Sequence[Row]:
        counts = {c: self.app.store.count(category=c) for c in CATEGORIES}  # from an index: no memory is read

        def fetch(category: str, offset: int, limit: int) -> list[Row]:
            page = self.app.store.list(category=category, limit=limit, offset=offset)
            return [self._memory_row(r, " ") for r in page]

        headings = [(_heading(c, counts[c]), counts[c]) for c in CATEGORIES if counts[c]]
        return _Paged(headings, fetch, lambda: self.rows_of("every"))

    def _rows_every(self) -> list[Row]:
        """The memories view's rows, every one: what a filter looks through."""
        rows: list[Row] = []
        current = [r for r in self.outline if r.is_current]
        for category in CATEGORIES:  # the digest's order
            members = [r for r in current if r.category == category]
            if members:
                rows.append(_heading(category, len(members)))
                rows.extend(self._memory_row(r, " ") for r in members)
        return rows

    def _rows_timeline(self) -> list[Row]:
        rows: list[Row] = []
        by_id = {r.id: r for r in self.outline}
        month = None
        for r in self.outline:  # newest first
            if not r.is_current:
                continue
            label = datetime.fromtimestamp(r.created_ts).strftime("%B %Y")
            if label != month:
                month = label
                rows.append(Row(label, "class:heading", search=label.lower()))
            rows.append(self._memory_row(r, " "))
            older = by_id.get(r.supersedes or "")
            while older is not None:  # what it replaced, dimmed, beside it
                rows.append(self._memory_row(older, "   "))
                older = by_id.get(older.supersedes or "")
        retracted = [r for r in self.outline if not r.is_current and not r.superseded_by]
        if retracted:
            rows.append(Row("superseded without a successor", "class:heading", search="superseded"))
            rows.extend(self._memory_row(r, " ") for r in retracted)
        return rows

    def _rows_mistakes(self) -> list[Row]:
        rows = []
        for m in self.mistakes:
            day = self.plan.day.get(m.id)  # the one schedule: what 'mistakes' and 'review' say
            due = "-" if day is None else "today" if day == self.plan.today else day.strftime("%a %d %b")
            kind = m.kind if m.is_mistake else "word"
            line = f" {m.id:7} {m.status:9} next review {due:10} {kind:10} {_one_line(m.rule)}"
            rows.append(Row(line, "", "mistake", m.id, f"{m.rule} {m.status} {kind} {m.id}".lower()))
        return rows or [Row("(no mistakes recorded)", "class:heading")]

    def _rows_conflicts(self) -> list[Row]:
        rows = []
        for n, c in enumerate(self.conflicts, 1):
            reason = _one_line(c.reason)
            rows.append(
                Row(f"{n}. {reason}", "class:heading", "conflict", c, f"{c.first.content} {c.second.content}".lower())
            )
            for label, r in (("1", c.first), ("2", c.second)):
                row = self._memory_row(r, f" {label} ")
                rows.append(Row(row.text, row.style, "conflict", c, row.search, record=r))
        return rows or [Row("(no conflicting memories)", "class:heading")]

    def _rows_profile(self) -> list[Row]:
        p = self.profile
        history = ", ".join(f"{c.level} {c.at.astimezone().strftime('%d %b %Y')}" for c in p.level_history)
        rows = [
            Row(
                f" English level: {p.english_level or '(not set)'}" + (f"  (history: {history})" if history else ""),
                "",
                "level",
                p.english_level,
                "level",
            ),
        ]
        rows.append(Row("Goals", "class:heading", search="goal"))
        rows += [Row(f"  {_one_line(g)}", "", "goal", g, f"goal {g}".lower()) for g in p.learning_goals]
        rows.append(Row("Preferences", "class:heading", search="preference"))
        rows += [Row(f"  {_one_line(x)}", "", "preference", x, f"preference {x}".lower()) for x in p.preferences]
        style = p.corrections + ("" if p.correction_style else " (default)")
        rows.append(Row(f" Corrections: {style}", "", "corrections", p.corrections, "corrections"))
        if self.pending:
            rows.append(Row("Pending changes (y confirm, n reject)", "class:heading", search="pending"))
            rows += [
                Row(f"  {_one_line(x.describe())}", "", "pending", x.id, f"pending {x.describe()}".lower())
                for x in self.pending
            ]
        return rows

    # -- what is shown ------------------------------------------------------------------------
    def rows_of(self, view: str) -> Sequence[Row]:
        return self._made(view, getattr(self, f"_rows_{view}"))

    def _made(self, key: str, make: Callable[[], _T]) -> _T:
        """What ``make`` makes, once per refresh: beside the page or by it, never twice at once
        (a refresh meanwhile starts a new table; what was being made goes to the old one)."""
        table = self.state.rows
        if key not in table:
            with self._reading:
                if key not in table:
                    table[key] = make()
        return table[key]

    def shown_rows(self) -> Sequence[Row]:
        """The current view's rows the filter lets through, kept per filter until the view or
        its rows change: a frame asks for them several times, and a longer filter looks only
        through what the filter it extends found (a letter typed, or deleted, is a redraw)."""
        rows = self.rows_of(self.state.view)
        if self._found.get("") is not rows:  # held, so never another view's rows at the same address
            self._found = {"": rows}
        found, terms = self._found, self.filter_text.lower().split()
        text = " ".join(terms)
        if text not in found:
            base = max((t for t in found if text.startswith(t)), key=len)
            every = rows.whole() if not base and isinstance(rows, _Paged) else found[base]
            found[text] = [r for r in every if r.kind and all(t in r.search for t in terms)]
        return found[text]

    def header(self, width: int) -> list[tuple[str, str]]:
        p = self.profile
        level = p.english_level or "level not set"
        goals = "; ".join(_one_line(g) for g in p.learning_goals) or "no goals"
        pending = f"  {len(self.pending)} pending change(s)" if self.pending else ""
        user = _one_line(self.app.settings.user)
        top = f"Memora page of {user} \u00b7 {level} \u00b7 corrections {p.corrections}{pending}"
        tabs = []
        for key, view in VIEW_KEYS.items():
            count = f" ({len(self.conflicts)})" if view == "conflicts" else ""
            tabs.append(("class:tab.on" if view == self.state.view else "class:tab", f" {key} {view}{count} "))
        return [
            ("class:title", _fit(top, width) + "\n"),
            ("", _fit(f"Goals: {goals}", width) + "\n"),
            *tabs,
            ("", "\n"),
        ]

    def visible(self, width: int, height: int) -> list[tuple[str, str]]:
        """The fragments of the rows that fit ``height`` lines, the cursor's row reversed."""
        if self.state.pane is not None:  # wrapped, not cut: a history's last column is the text
            wrapped = [part for line in self.state.pane for part in textwrap.wrap(line, width) or [""]]  # whole words
            return [("", _fit(line, width) + "\n") for line in wrapped[: max(height, 1)]]
        rows = self.shown_rows()
        state = self.state
        state.cursor = min(max(state.cursor, 0), max(len(rows) - 1, 0))
        if state.cursor < state.top:
            state.top = state.cursor
        elif state.cursor >= state.top + height:
            state.top = state.cursor - height + 1
        state.top = max(0, min(state.top, max(len(rows) - height, 0)))
        out = []
        for index in range(state.top, min(state.top + height, len(rows))):
            row = rows[index]
            here = index == state.cursor
            style = self.row_style(row) + (" class:cursor" if here else "")
            # ">" marks the cursor in any colour mode (NO_COLOR, a screen reader, a copy of the screen)
            out.append((style, _fit((">" if here else " ") + self.row_text(row), width) + "\n"))
        if not rows:
            out.append(("class:heading", "(nothing matches the filter)\n"))
        return out

    def detail(self, width: int) -> list[tuple[str, str]]:
        """The selected row in full (a long memory is cut on its row), on two lines."""
        row = self.selected() if self.state.pane is None else None
        if row is None or row.kind != "memory":
            return [("", "")]
        record = self.app.store.get(row.key)
        if record is None:
            return [("", "")]
        from context_builder import dated_text

        text = record.content if self.state.own_words else dated_text(record, self.now)
        said = "" if text == record.content else "  (w: your own words)"
        origin = ORIGINS.get(record.source, record.source)
        parts = (record.id, record.category, record.memory_type, origin, f"{text}{said}")
        head, rest = _split_cells(_one_line(" \u00b7 ".join(parts)), width)
        return [("class:detail", head + "\n" + _fit(rest, width))]

    def footer(self, width: int) -> list[tuple[str, str]]:
        if self.state.asking:
            return [("class:ask", _fit(self.state.asking[0], width))]
        message = self.state.message or HELP[self.state.view]
        return [("class:message", _fit(message, width, sep="  "))]  # the help line by whole keys

    # -- actions ----------------------------------------------------------------------------
    def selected(self) -> Row | None:
        rows = self.shown_rows()
        if not rows:
            return None
        return rows[min(self.state.cursor, len(rows) - 1)]

    def command(self, line: str) -> list[str]:
        """Run one line command as typed (``/`` makes it a command whatever it says)."""
        self.captured.lines = []
        self.run_line("/" + line)
        lines = self.captured.lines
        self.state.message = _one_line(" ".join(lines))
        self.refresh()
        return lines

    def say(self, text: str) -> None:
        self.state.message = _one_line(text)

    def ask(self, question: str, then: Callable[[str], object], initial: str = "") -> None:
        """Ask for a line (or a y/n) on the bottom line; ``then`` gets the answer."""
        self.state.asking = (question, then)
        if self.application is not None:
            self.answer.text = initial
            self.answer.cursor_position = len(initial)
            self.application.layout.focus(self.answer)

    def confirm(self, question: str, then: Callable[[], object]) -> None:
        self.ask(
            question + " (y/n)",
            lambda answer: (
                then() if answer.strip().lower() in ("y", "yes") else self.say("Cancelled; nothing changed.")
            ),
        )

    def press(self, key: str) -> None:
        """One key on the list (the benchmark and the key bindings both come here)."""
        state, row = self.state, self.selected()
        moves = {"down": 1, "up": -1, "pagedown": 10, "pageup": -10, "home": -(10**9), "end": 10**9}
        if key in VIEW_KEYS:
            state.view, state.cursor, state.top, state.pane, state.message = VIEW_KEYS[key], 0, 0, None, ""
            self._skip_headings(1)
        elif key in moves:
            rows = self.shown_rows()
            state.cursor = min(max(state.cursor + moves[key], 0), max(len(rows) - 1, 0))
            self._skip_headings(1 if moves[key] > 0 else -1)
        elif key == "w":
            state.own_words = not state.own_words
            self.say(
                "Your own words, as you said them."
                if state.own_words
                else "Time phrases as the tutor reads them today."
            )
        elif key == "u":
            self.command("undo")
        elif key == "a":
            self._add()
        elif row is None or not row.kind:
            return
        elif key == "e":
            self._edit(row)
        elif key == "d":
            self._delete(row)
        elif key == "h" and row.kind in ("memory", "conflict"):
            memory_id = row.key if row.kind == "memory" else None
            if row.kind == "conflict":
                memory_id = self._conflict_side(row)
            if memory_id:
                state.pane = self.command(f"history {memory_id}")
                state.message = "Esc or q: back to the list."
        elif key in ("1", "2") and row.kind == "conflict":
            c: Conflict = row.key
            keep, drop = (c.first, c.second) if key == "1" else (c.second, c.first)
            self.confirm(f"Keep {keep.id[:8]} and supersede {drop.id[:8]}?", lambda: self._keep_one(keep.id, drop.id))
        elif key == "b" and row.kind == "conflict":
            c = row.key
            self.say(keep_both(self.app, c.first.id, c.second.id))
            self.refresh()
        elif key in ("y", "n") and row.kind == "pending":
            self.command("profile confirm" if key == "y" else "profile reject")

    def _skip_headings(self, direction: int) -> None:
        """Move off a heading (a category, a month) onto the next row that is something;
        at either end, the other way."""
        rows, state = self.shown_rows(), self.state
        for step in (direction, -direction):
            index = state.cursor
            while 0 <= index < len(rows) and not rows[index].kind:
                index += step
            if 0 <= index < len(rows):
                state.cursor = index
                return

    def _conflict_side(self, row: Row) -> str:
        c: Conflict = row.key
        return row.record.id if row.record is not None else c.first.id

    def _keep_one(self, keep: str, drop: str) -> None:
        try:
            self.say(keep_one(self.app, keep, drop))
        except MemoraError as error:  # changed since the pair was found: one line, nothing lost
            self.say(f"Error: {error}")
        self.refresh()

    def _add(self) -> None:
        if self.state.view == "profile":
            self.ask(
                "Add a goal or preference (goal ... / preference ...): ",
                lambda text: text.strip() and self.command(f"profile {text.strip()}"),
            )
        elif self.state.view in ("memories", "timeline"):
            self.ask("Remember: ", lambda text: text.strip() and self.command(f"remember {text.strip()}"))

    def _edit(self, row: Row) -> None:
        if row.kind == "memory":
            record = self.app.store.get(row.key)
            if record is None or not record.is_current:
                self.say("Only a current memory can be edited (this one was replaced).")
                return
            self.ask(
                "Edit: ",
                lambda text: text.strip() and self.command(f"memory edit {row.key} {text.strip()}"),
                record.content,
            )
        elif row.kind == "level":

            def set_level(text: str) -> None:
                level = text.strip()
                if not level:
                    return
                old = self.profile.english_level or "not set"
                self.confirm(
                    f"Change your level from {old} to {level.upper()}?", lambda: self.command(f"profile level {level}")
                )

            self.ask("English level (A1-C2): ", set_level, self.profile.english_level or "")
        elif row.kind in ("goal", "preference"):

            def replace(text: str) -> None:
                if text.strip() and text.strip() != row.key:
                    self.command(f"profile remove {row.kind} {row.key}")
                    self.command(f"profile {row.kind} {text.strip()}")

            self.ask(f"Edit the {row.kind}: ", replace, row.key)
        elif row.kind == "corrections":
            self.ask(
                "Corrections (all, important, off): ",
                lambda text: text.strip() and self.command(f"profile corrections {text.strip()}"),
                row.key,
            )

    def _delete(self, row: Row) -> None:
        if row.kind == "memory":
            record = self.app.store.get(row.key)
            shown = _fit(_one_line(record.content), 40) if record else row.key
            self.confirm(
                f"Forget {row.key[:8]} \u201c{shown}\u201d and its earlier versions?",
                lambda: self.command(f"forget {row.key}"),
            )
        elif row.kind == "mistake":
            self.confirm(f"Forget mistake {row.key}?", lambda: self.command(f"mistakes forget {row.key}"))
        elif row.kind in ("goal", "preference"):
            self.confirm(
                f"Remove the {row.kind} \u201c{_fit(_one_line(row.key), 40)}\u201d?",
                lambda: self.command(f"profile remove {row.kind} {row.key}"),
            )
        elif row.kind == "level" and row.key:
            self.confirm("Remove your level?", lambda: self.command("profile remove level"))

    # -- the application ------------------------------------------------------------------
    def build(self):
        from prompt_toolkit.application import Application
        from prompt_toolkit.buffer import Buffer
        from prompt_toolkit.filters import Condition, has_focus
        from prompt_toolkit.key_binding import KeyBindings
        from prompt_toolkit.layout import BufferControl, ConditionalContainer, HSplit, Layout, VSplit, Window
        from prompt_toolkit.layout.controls import FormattedTextControl
        from prompt_toolkit.output.color_depth import ColorDepth
        from prompt_toolkit.styles import Style

        self.filter_buffer = Buffer(multiline=False, on_text_changed=self._filtered)
        self.answer = Buffer(multiline=False)
        size = lambda: self.application.output.get_size()  # noqa: E731 -- read at each redraw: a resize is followed
        body = FormattedTextControl(
            lambda: self.visible(size().columns, max(size().rows - 6, 1)), focusable=True, show_cursor=False
        )
        self.body = body
        asking = Condition(lambda: self.state.asking is not None)
        keys = KeyBindings()
        on_list = has_focus(body)
        # A y/n question takes one key: y or n answers it at once, any other key is not typed.
        yes_no = has_focus(self.answer) & Condition(lambda: (self.state.asking or ("",))[0].endswith("(y/n)"))
        keys.add("<any>", filter=yes_no)(lambda event: None)

        for name in ("down", "up", "pagedown", "pageup", "home", "end"):
            keys.add(name, filter=on_list)(lambda event, name=name: self.press(name))
        for key in (*VIEW_KEYS, *ACTION_KEYS, "j", "k", "delete"):
            mapped = {"j": "down", "k": "up", "delete": "d"}.get(key, key)
            keys.add(key, filter=on_list)(lambda event, mapped=mapped: self._key(mapped))
        keys.add("tab", filter=on_list)(
            lambda event: self._key(VIEW_KEYS_BY_VIEW[VIEWS[(VIEWS.index(self.state.view) + 1) % len(VIEWS)]])
        )
        keys.add("s-tab", filter=on_list)(
            lambda event: self._key(VIEW_KEYS_BY_VIEW[VIEWS[(VIEWS.index(self.state.view) - 1) % len(VIEWS)]])
        )
        keys.add("/", filter=on_list)(lambda event: event.app.layout.focus(self.filter_buffer))

        @keys.add("escape", filter=on_list, eager=True)
        @keys.add("q", filter=on_list)
        def _back(event) -> None:
            if self.state.pane is not None:
                self.state.pane = None
            else:
                event.app.exit()

        @keys.add("enter", filter=has_focus(self.filter_buffer))
        @keys.add("escape", filter=has_focus(self.filter_buffer), eager=True)
        @keys.add("down", filter=has_focus(self.filter_buffer))
        def _to_list(event) -> None:
            event.app.layout.focus(body)

        @keys.add("enter", filter=has_focus(self.answer))
        def _answered(event) -> None:
            _, then = self.state.asking or ("", lambda _: None)  # the key's filter: something is asked
            text = self.answer.text
            self.state.asking = None
            self.answer.text = ""
            event.app.layout.focus(body)
            self.state.message = ""
            then(text)

        for letter in "yYnN":
            keys.add(letter, filter=yes_no)(lambda event, key=letter: (self.answer.insert_text(key), _answered(event)))

        @keys.add("escape", filter=has_focus(self.answer), eager=True)
        @keys.add("c-c", filter=has_focus(self.answer))
        def _cancelled(event) -> None:
            self.state.asking = None
            self.answer.text = ""
            event.app.layout.focus(body)
            self.say("Cancelled; nothing changed.")

        header = Window(FormattedTextControl(lambda: self.header(size().columns)), height=3)
        filter_line = VSplit(
            [Window(FormattedTextControl("Filter: "), width=8), Window(BufferControl(self.filter_buffer), height=1)],
            height=1,
        )
        answer_line = ConditionalContainer(
            VSplit(
                [
                    Window(FormattedTextControl(lambda: self.footer(size().columns)), dont_extend_width=True),
                    Window(BufferControl(self.answer), height=1),
                ],
                height=1,
            ),
            filter=asking,
        )
        footer = ConditionalContainer(
            Window(FormattedTextControl(lambda: self.footer(size().columns)), height=1), filter=~asking
        )
        detail = Window(FormattedTextControl(lambda: self.detail(size().columns)), height=2)
        layout = Layout(
            HSplit([header, filter_line, Window(height=1, char="\u2500"), Window(body), detail, answer_line, footer]),
            focused_element=body,
        )
        style = Style.from_dict(
            {
                "title": "bold",
                "heading": "bold",
                "tab.on": "reverse bold",
                "cursor": "reverse",
                "old": "fg:ansibrightblack italic",
                "flag": "fg:ansiyellow",
                "ask": "bold",
                "detail": "italic",
            }
        )
        self.application = Application(
            layout=layout,
            key_bindings=keys,
            style=style,
            full_screen=True,
            mouse_support=False,
            color_depth=ColorDepth.MONOCHROME if self.no_color else None,
            input=self._input,
            output=self._output,
        )
        self.application.after_render += self._first_frame
        return self.application

    def _key(self, key: str) -> None:
        self.state.message = ""
        self.press(key)

    def _filtered(self, buffer) -> None:
        self.filter_text = buffer.text
        self.state.cursor, self.state.top = 0, 0
        self._skip_headings(1)

    def run(self) -> None:
        # An error ends the page and reaches the command's one-line report, never
        # prompt_toolkit's traceback and "Press ENTER" (which a closed input waits on for ever).
        self.build().run(set_exception_handler=False)


# Lines around the list: the header (3), the filter, the rule, the detail (2), the message.
BODY_MARGIN = 8
VIEW_KEYS_BY_VIEW = {view: key for key, view in VIEW_KEYS.items()}


def can_open(console: Console) -> bool:
    """Only an interactive console on a terminal (not --plain, not a pipe)."""
    from memora.cli.terminal import RichConsole

    return isinstance(console, RichConsole) and console._reader is None and sys.stdin.isatty() and sys.stdout.isatty()


def open_page(app: Memora, console: Console, commands: LineRunner) -> None:
    """The ``page`` command: the page until Esc or q, or one line saying why not."""
    if not can_open(console):
        console.say(NOT_INTERACTIVE)
        return
    page = MemoryPage(app, commands, no_color=app.settings.no_color)
    page.run()
    for line in page_summary(page):
        console.say(line)


def page_summary(page: MemoryPage) -> Sequence[str]:
    """Back in the chat: one line, so the transcript says the page was open."""
    return ["(Back from the memory page.)"]
