"""Commands, routed before chat: one declaration and one ``cmd_<name>`` method each.

``COMMANDS`` declares every command once: its name, the shape of its arguments,
its forms (usage and help line), its examples and, by its position, its place in
``help``; the handler is the method named after it. Whether a line is a command,
chat or a typo is decided by the rules in ``memora/cli/routing.py``, from the
declared shapes alone.
"""

from __future__ import annotations

import os
import re
import shlex
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from context_builder import dated_text
from memora.cli.routing import (
    CHAT,
    COMMAND,
    TYPO,
    Route,
    Shape,
    choice,
    command_name,
    ids,
    near_command,
    nothing,
    path,
    remembered_text,
    route,
    statement,
    text,
    typed_id,
)
from memora.cli.terminal import Console, render_definitions
from memora.core.errors import CommandError, EmbeddingUnavailable, MemoraError
from memora.core.records import CATEGORIES, MEMORY_TYPES
from memora.core.text_utils import NO, YES, counted, quoted, shorten
from memora.core.timeutil import time_ago
from memora.model.embeddings import LOCAL_MODEL_NAME
from memora.teaching import spaced
from memora.teaching.ledger import correction_excerpt
from user_profile import CEFR_LEVELS, CORRECTION_STYLES

if TYPE_CHECKING:
    from memora.app.assistant import Memora


@dataclass(frozen=True)
class Form:
    """One way to type a command, as ``help`` lists it."""

    usage: str
    help: str


@dataclass(frozen=True)
class Command:
    """Everything about one command but what it does (its ``cmd_<name>`` method)."""

    name: str
    shape: Shape
    forms: tuple[str, ...]  # "usage -- what it does", one line per form
    examples: tuple[str, ...]  # lines a learner could type ('help <name>'; a test routes each one)
    aliases: tuple[str, ...] = ()
    # It shows or changes what Memora knows, so the messages held to be read with the next
    # ones are read first: a mistake the tutor just corrected is in 'mistakes' and 'review'.
    reads_first: bool = False
    # Sub-commands that delete and so decide at once, as 'forget' and 'undo' do: a reading
    # still to land is refused what they deleted (deletions.py).
    at_once: frozenset[str] = frozenset()

    def parsed_forms(self) -> list[Form]:
        return [Form(*(part.strip() for part in form.split(" -- ", 1))) for form in self.forms]


# Every command, in the order 'help' lists them.
MEMORIES_PAGE = 50  # 'memories' lists this many, newest first: a screen, whatever the store's size
COMMANDS = (
    Command(
        "help",
        command_name(),
        ("help [command] -- List the commands, or show one command's forms and examples.",),
        ("help forget",),
    ),
    Command(
        "profile",
        choice("level", "goal", "preference", "remove", "clear", "confirm", "reject", "corrections", typed=("clear",)),
        (
            "profile -- Show your profile and any pending change.",
            "profile level <A1|A2|B1|B2|C1|C2> -- Set your English level.",
            "profile goal <text> -- Add a learning goal.",
            "profile preference <text> -- Add a preference (how Memora should teach you).",
            "profile remove goal|preference <text> -- Remove a goal or preference.",
            "profile corrections all|important|off -- How much Memora corrects you "
            "(default important; off still records mistakes).",
            "profile clear -- Empty the profile.",
            "profile confirm | profile reject -- Accept or discard the pending profile change.",
        ),
        (
            "profile level B1",
            "profile goal pass IELTS with 7.0",
            "profile remove preference short answers",
            "profile corrections off",
        ),
    ),
    Command(
        "remember",
        statement(),
        ("remember <text> -- Store a memory now, exactly as written.",),
        ("remember I have a job interview on Friday",),
    ),
    Command(
        "memories",
        text(max_words=2),
        (
            "memories [--all] [--page N] [--type semantic|episodic] [--category C] [text] -- List memories, "
            f"newest first, {MEMORIES_PAGE} a page.",
        ),
        ("memories --type episodic", "memories --all coffee", "memories --page 2"),
        reads_first=True,
    ),
    Command(
        "memory",
        choice("edit", "cap", typed=("edit",)),
        (
            "memory edit <id> <text> -- Replace a memory's text (the old text stays in its history).",
            "memory cap [<n>|off] -- Show or set how many current memories you keep.",
        ),
        ("memory edit 3fa9c2d1 I moved to Taipei in 2024", "memory cap 200"),
        reads_first=True,
    ),
    Command(
        "search",
        text(),
        ("search <query> -- Show scored results; * marks those that pass the retrieval threshold.",),
        ("search job interview", "search where is my passport"),
        reads_first=True,
    ),
    Command(
        "forget",
        ids("all", "user"),
        (
            "forget <id> -- Delete one memory (and its earlier versions).",
            "forget all -- Delete all your data: memories, mistakes, conversation, profile, typed lines (asks first).",
            "forget user <name> -- Delete everything of one learner (asks you to type the name).",
        ),
        ("forget 3fa9c2d1", "forget all"),
    ),
    Command(
        "history",
        ids(),
        ("history <id> -- Show every version of a memory, oldest first.",),
        ("history 3fa9c2d1",),
        reads_first=True,
    ),
    Command(
        "undo",
        nothing(),
        ("undo -- Take back the last memory change: your last message's, a remember or a memory edit (not forget).",),
        ("undo",),
    ),
    Command(
        "page",
        nothing(),
        ("page -- Open the memory page: profile, memories, timeline, mistakes and conflicts (also F2).",),
        ("page",),
        reads_first=True,
    ),
    Command(
        "mistakes",
        choice("forget", typed=("forget",)),
        (
            "mistakes -- List your mistakes: how often, first and last seen, status and an example.",
            "mistakes forget <id> -- Delete one mistake and its review card.",
        ),
        ("mistakes", "mistakes forget m3fa9c"),
        reads_first=True,
        at_once=frozenset({"forget"}),
    ),
    Command(
        "review",
        choice("export", typed=("export",)),
        (
            "review -- Drill the mistakes due today (up to 10); an empty line or 'stop' ends it.",
            "review export <file.apkg> -- Write your mistakes as an Anki deck (bare name: data folder).",
        ),
        ("review", "review export ~/memora-mistakes.apkg"),
        reads_first=True,
    ),
    Command(
        "progress",
        choice("--since", "--plain"),  # options, not words: "progress since May is slow" is said
        ("progress [--since <N>d|<N>w] [--plain] -- Days practised, mistakes, reviews and level; --plain: no charts.",),
        ("progress", "progress --since 30d", "progress --plain"),
        reads_first=True,
    ),
    Command(
        "why",
        nothing(),
        ("why -- Show exactly what the last request's background held, with scores and tokens.",),
        ("why",),
        reads_first=True,
    ),
    Command(
        "status",
        nothing(),  # not reads_first: it reports what is held
        ("status -- Model, data locations, memory count, token budget and usage.",),
        ("status",),
    ),
    Command(
        "reset",
        nothing(),
        ("reset -- Start a fresh conversation (profile and memories stay).",),
        ("reset",),
    ),
    Command(
        "export",
        path(),
        ("export [path] -- Write your profile, memories (with history) and session to JSON (bare name: data folder).",),
        ("export ~/memora-backup.json",),
        reads_first=True,
    ),
    Command(
        "import",
        path(),
        ("import <path> -- Restore an export (validated first; all or nothing).",),
        ("import ~/memora-backup.json",),
    ),
    Command(
        "reindex",
        nothing(),
        ("reindex -- Re-embed all memories with the configured embedding model, then retry unsaved messages.",),
        ("reindex",),
    ),
    Command(
        "users",
        nothing(),
        ("users -- List the learners with data here.",),
        ("users",),
    ),
    Command(
        "exit",
        nothing(),
        ("exit -- Leave Memora (also quit, or Ctrl-D).",),
        ("exit",),
        aliases=("quit",),
    ),
)


def looks_like_path(rest: str) -> bool:
    """A single path (quoted if it has spaces) or something with a folder or a .json name."""
    text = rest.strip()
    if not text:
        return False
    if len(text) > 1 and text[0] == text[-1] and text[0] in "'\"":
        return True
    return len(text.split()) == 1 or any(mark in text for mark in ("/", "\\", "~")) or text.lower().endswith(".json")


def _yes_or_no(line: str) -> bool | None:
    word = line.strip().lower().strip(".!。！ ")
    return True if word in YES else False if word in NO else None


def _listed(parts: list[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


CONFIRM_WORD = "DELETE"
_MISTAKE_ID = re.compile(r"m[0-9a-f]{1,5}")
STATUS_ORDER = {"active": 0, "improving": 1, "mastered": 2}


class ExitRequested(Exception):
    """``exit``/``quit`` (the REPL leaves after saving)."""


EXAMPLE_WHOLE_CHARS = 50  # 'mistakes' shows an example this short whole, a longer one around its fix


class CommandRouter:
    """Finds and runs commands against a ``Memora`` app, printing to a ``Console``."""

    def __init__(self, app: Memora, console: Console):
        self.app = app
        self.console = console
        self.commands: dict[str, Command] = {}
        for command in COMMANDS:
            for name in (command.name, *command.aliases):
                self.commands[name] = command
        self.shapes = {name: command.shape for name, command in self.commands.items()}

    # -- routing ------------------------------------------------------------------------
    def route(self, line: str) -> Route:
        """Where ``line`` goes: a command, chat, or a typo of a command (routing.py's rules)."""
        return route(line, self.shapes)

    def is_command(self, line: str) -> bool:
        return self.route(line).kind == COMMAND

    def dispatch(self, line: str) -> bool:
        """Run ``line`` if it is a command (or say which command a typo meant); return False if it is chat."""
        stripped = line.strip()
        if self.app.turn.rebuild_asked:
            # The start's rebuild question: this line answers it or passes it by, so a
            # "yes" typed later can never rebuild the store by accident.
            self.app.turn.drop_rebuild_question()
            rebuild = _yes_or_no(stripped)
            if rebuild is not None:
                if rebuild:
                    self.cmd_reindex("")
                else:
                    self.console.say(
                        "Okay, nothing was changed. Memory search stays off until you type 'reindex'; "
                        "your memories are safe in the catalog."
                    )
                self._ask_next_if_any()
                return True
        answer = _yes_or_no(stripped) if self.app.turn.awaiting is not None else None  # to the question just asked
        if answer is not None:
            self.console.say(self.app.turn.answer_proposal(answer, self.app.profiles, self.app.ledger))
            self._ask_next_if_any()
            return True
        where = self.route(stripped)
        if where.kind == CHAT:
            return False
        command = self.commands[where.name]
        if where.kind == TYPO:
            self.console.say(f"Did you mean `{where.name}`?")
            return True
        first = where.args.split(maxsplit=1)[0].lower() if where.args else ""
        if command.reads_first and first not in command.at_once:
            self.app.bring_up_to_date(self.console.notice)
        getattr(self, f"cmd_{command.name}")(where.args)
        return True

    def _ask_next_if_any(self) -> None:
        if self.app.proposals.first() is not None:
            self.app.turn.ask_next_proposal()

    def usage(self, name: str) -> CommandError:
        return CommandError("Usage: " + " | ".join(form.usage for form in self.forms(name)))

    def forms(self, name: str) -> list[Form]:
        """Every form of a command (what help lists)."""
        return self.commands[name].parsed_forms()

    # -- general --------------------------------------------------------------------------
    def cmd_help(self, args: str) -> None:
        # Printed as plain text, not a rich table: usages hold brackets ("[path]")
        # that a markup renderer would take for style tags and drop.
        name = args.strip().lower().lstrip("/")
        width = self.console.width
        if name:
            if name not in self.commands:
                meant = near_command(name, self.shapes)
                said = f"Did you mean `{meant}`?" if meant else self.usage("help")
                raise CommandError(f"There is no command '{shorten(name, 40)}'. {said}")
            command = self.commands[name]
            rows = [(form.usage, form.help) for form in command.parsed_forms()]
            rows += [("e.g. " + example, "") for example in command.examples]
            self.console.say(render_definitions(f"help {name}", ("usage", "what it does"), rows, width))
            return
        # A line a command, cut at a word to the width: the whole list fits a 24-row terminal.
        names = [", ".join((command.name, *command.aliases)) for command in COMMANDS]
        left = max(map(len, names)) + 2
        lines = [
            f"{n.ljust(left)}{textwrap.shorten(c.parsed_forms()[0].help, width - left, placeholder='…')}"
            for n, c in zip(names, COMMANDS)
        ]
        title = "Commands ('help <command>': its forms and examples; anything else is chat):"
        self.console.say("\n".join([*textwrap.wrap(title, width), *lines]))

    def cmd_exit(self, args: str) -> None:
        raise ExitRequested

    def cmd_status(self, args: str) -> None:
        from memora.cli.reports import status_rows

        for title, columns, rows in status_rows(self.app):
            self.console.table(title, columns, rows)

    def cmd_why(self, args: str) -> None:
        from memora.cli.reports import why_report

        for title, columns, rows in why_report(self.app):
            self.console.table(title, columns, rows)

    def cmd_reset(self, args: str) -> None:
        self.app.reset_session()
        self.console.say("Started a fresh conversation. Your profile and memories are unchanged.")

    # -- profile ----------------------------------------------------------------------------
    def cmd_profile(self, args: str) -> None:
        parts = ("profile " + args).split(maxsplit=2)
        profiles = self.app.profiles
        if len(parts) == 1:
            self._show_profile()
            return
        field = parts[1].lower()
        value = parts[2].strip() if len(parts) > 2 else ""
        if field in ("confirm", "reject") and not value:
            self.console.say(self.app.turn.answer_proposal(field == "confirm", self.app.profiles, self.app.ledger))
            self._ask_next_if_any()
            return
        if field == "corrections":
            if value.lower() not in CORRECTION_STYLES:
                raise self.usage("profile")
            changed = profiles.set_correction_style(value)
            self.console.say(
                f"Corrections: {value.lower()}." if changed else f"Corrections were already {value.lower()}."
            )
            return
        if field == "clear" and not value:
            if not self._confirm("This empties your profile (level, goals, preferences). Type yes to confirm: ", "yes"):
                return
            changed = profiles.clear()
            self.console.say("Profile cleared." if changed else "The profile was already empty.")
            return
        if field == "remove":
            kind, _, text = value.partition(" ")
            kind = kind.lower()
            if kind in ("level", "english_level") and not text:
                self.console.say("Level removed." if profiles.clear_level() else "No level was set.")
                return
            if kind not in ("goal", "preference") or not text.strip():
                raise self.usage("profile")
            removed = profiles.remove(kind, text)
            self.console.say(f"Removed the {kind}." if removed else f"No {kind} matching {quoted(text, 60)}")
            return
        if field not in ("level", "goal", "preference") or not value:
            raise self.usage("profile")
        if field == "level":
            changed = profiles.set_english_level(value)
        elif field == "goal":
            changed = profiles.add_learning_goal(value)
        else:
            changed = profiles.add_preference(value)
        self.console.say("Profile updated." if changed else "Already in your profile; nothing changed.")

    def _show_profile(self) -> None:
        profile = self.app.profiles.get()
        rows = [
            ["English level", profile.english_level or "(not set)"],
            ["Learning goals", "; ".join(profile.learning_goals) or "(none)"],
            ["Preferences", "; ".join(profile.preferences) or "(none)"],
            ["Corrections", profile.corrections + ("" if profile.correction_style else " (default)")],
        ]
        self.console.table(f"Profile of {self.app.settings.user}", ["field", "value"], rows)
        pending = self.app.proposals.pending()
        if pending:
            self.console.table(
                "Pending changes (profile confirm / profile reject)",
                ["id", "change", "because you said"],
                [[p.id, p.describe(), shorten(p.evidence, 60)] for p in pending],
            )

    # -- memories ---------------------------------------------------------------------------
    def cmd_remember(self, args: str) -> None:
        if not args:
            raise self.usage("remember")
        text = remembered_text(args) or args  # "/remember the lesson" stores what it is told
        result = self.app.store.add(text, source="command")
        if result.duplicate:
            self.console.say(f"Already remembered as {result.id}: {quoted(result.content, 80)}")
        else:
            self.app.conversation.record_changes("remember", [(None, result.id)])
            self.console.say(f"Remembered ({result.id}).")
            if self.app.store.count(without_vectors=True):
                self._no_local_model_notice()

    def cmd_memories(self, args: str) -> None:
        try:
            words = shlex.split(args)
        except ValueError:
            raise self.usage("memories") from None
        filters: dict = {"include_superseded": False}
        text: list[str] = []
        page = 1
        index = 0
        while index < len(words):
            word = words[index]
            if word == "--all":
                filters["include_superseded"] = True
            elif word in ("--type", "--category") and index + 1 < len(words):
                value = words[index + 1].lower()
                allowed = MEMORY_TYPES if word == "--type" else CATEGORIES
                if value not in allowed:
                    raise CommandError(f"Unknown {word[2:]} '{shorten(value, 40)}'. Use one of: {', '.join(allowed)}.")
                filters["memory_type" if word == "--type" else "category"] = value
                index += 1
            elif word == "--page" and index + 1 < len(words) and words[index + 1].isdigit():
                page = max(1, int(words[index + 1]))
                index += 1
            elif word.startswith("--"):
                raise self.usage("memories")
            else:
                text.append(word)
            index += 1
        if text:
            filters["text"] = " ".join(text)
        # A page, never the whole store: the row past it only says there is more.
        records = self.app.store.list(**filters, limit=MEMORIES_PAGE + 1, offset=(page - 1) * MEMORIES_PAGE)
        more, records = len(records) > MEMORIES_PAGE, records[:MEMORIES_PAGE]
        now = self.app.clock()
        rows = []
        resolved = False
        for r in records:
            shown = dated_text(r, now)  # "next Friday" as the tutor reads it, not as it was said days ago
            resolved |= shown != r.content
            row = [r.id, r.created_at.astimezone().strftime("%Y-%m-%d"), r.memory_type, r.category, shown]
            if filters["include_superseded"]:
                row.insert(
                    4,
                    r.status
                    if r.is_current
                    else f"superseded {time_ago(r.valid_until, now) if r.valid_until else ''}".strip(),
                )
            rows.append(row)
        columns = ["id", "date", "type", "category", "text"]
        if filters["include_superseded"]:
            columns.insert(4, "status")
        if self.console.width < 80:  # a narrow window keeps its room for the text: no date or type
            columns, rows = columns[:1] + columns[3:], [row[:1] + row[3:] for row in rows]
        cap = self.app.store.memory_cap
        title = counted(len(records), "memory", "memories") + (f" (cap {cap})" if cap else "")
        title += (
            f", page {page}" + (f"; 'memories --page {page + 1}' for more" if more else "") if more or page > 1 else ""
        )
        self.console.table(title, columns, rows)
        if resolved:
            self.console.notice("Times are shown as the tutor reads them today; 'history <id>' shows your own words.")
        if missing := self.app.store.check_vectors():  # listed from the catalog, which is true; search is not
            self.console.notice(missing)
        elif self.app.store.count(without_vectors=True):
            self._no_local_model_notice()

    def cmd_memory(self, args: str) -> None:
        parts = args.split(maxsplit=2)
        if len(parts) >= 3 and parts[0].lower() == "edit":
            new = self.app.store.edit(parts[1], parts[2])
            self.app.conversation.record_changes("edit", [(new.supersedes, new.id)])
            self.console.say(f"Updated: {parts[1]} is now {new.id} (see 'history {new.id}').")
            return
        if parts and parts[0].lower() == "cap" and len(parts) <= 2:
            if len(parts) == 1:
                cap = self.app.store.memory_cap
                self.console.say(f"Memory cap: {cap if cap else 'none'} ({self.app.store.count()} current memories).")
                return
            value = parts[1].lower()
            if value in ("off", "none"):
                self.app.set_memory_cap(None)
                self.console.say("Memory cap removed.")
                return
            number = value[1:] if value[:1] in "+-" else value
            if not number.isdecimal():  # "²".isdigit() is True, but int("²") fails
                raise self.usage("memory")
            cap, current = int(value), self.app.store.count()
            if cap <= 0:  # "0" and "-5" alike: a number, but not a cap
                raise CommandError(
                    f"The memory cap must be a positive number, not {cap}; the cap was not changed. "
                    "'memory cap off' removes it."
                )
            if 0 < cap < current:
                # Accepting it would leave the learner over the cap, with every new memory
                # refused and nothing saying why the number no longer adds up.
                raise CommandError(
                    f"You have {current} memories, more than a cap of {cap}; the cap was not changed. "
                    f"Forget {current - cap} first ('forget <id>'), or choose {current} or more."
                )
            self.app.set_memory_cap(cap)
            if cap == current:
                self.console.say(
                    f"Memory cap set to {cap}. Memory is now full: new memories are not saved until you forget some."
                )
            else:
                self.console.say(f"Memory cap set to {cap} ({current} in use).")
            return
        raise self.usage("memory")

    def cmd_forget(self, args: str) -> None:
        if not args:
            raise self.usage("forget")
        if args.lower() == "all":
            self._forget_all()
            return
        words = args.split()
        if words[0].lower() == "user":
            if len(words) != 2:
                raise self.usage("forget")
            self._forget_user(words[1])
            return
        if len(words) != 1:
            raise self.usage("forget")
        self._forget_memory(words[0])

    def _forget_all(self) -> None:
        """``forget all``: says what there is to delete, asks, then deletes it."""
        from memora.app.erasure import learner_leftovers

        count = self.app.store.count(include_superseded=True)
        mistakes = self.app.ledger.count()
        unread = self.app.conversation.unread()  # said, not read yet (here or in another terminal)
        turns = len(self.app.memory.messages) // 2
        files = learner_leftovers(self.app)
        if count == 0 and mistakes == 0 and unread == 0 and turns == 0 and not files:
            self.console.say("There are no memories to delete.")
            return
        parts = [f"all {counted(count, 'memory', 'memories')}" if count != 1 else "the 1 memory"]
        if mistakes:
            parts.append(counted(mistakes, "mistake"))
        if unread:
            parts.append(f"{counted(unread, 'message')} not read for memories yet")
        if turns:
            parts.append("this conversation")
        parts += files
        if self._confirm(
            f"This deletes {_listed(parts)} of {self.app.settings.user}. Type {CONFIRM_WORD} to confirm: ",
            CONFIRM_WORD,
        ):
            self._erase_all(unread, turns, files)

    def _erase_all(self, unread: int, turns: int, leftovers: list[str]) -> None:
        """The deletion ``forget all`` confirmed, and what was deleted."""
        from memora.app.erasure import (
            ask_about_exports,
            erase_leftovers,
            erase_notice,
            forget_everywhere,
            learner_exports,
        )

        store = self.app.store
        self.app.conversation.drop_unread()  # and the conversation; no wait for a reading under way
        texts = [r.content for r in store.list(include_superseded=True)]
        exports = ask_about_exports(self.console, learner_exports(self.app, self.app.settings.user))
        deleted = store.delete_all()
        forgotten = self.app.ledger.clear()
        self.app.activity.clear()
        self.app.conversation.drop_changes()
        forget_everywhere(self.app, texts, self.console)
        erase_leftovers(self.app, self.console)
        for export in exports:
            export.unlink(missing_ok=True)
        parts = [counted(deleted, "memory", "memories")] + ([counted(forgotten, "mistake")] if forgotten else [])
        if unread:
            parts.append(counted(unread, "unread message"))
        if turns:
            parts.append("the conversation")
        parts += leftovers
        if exports:
            parts.append(counted(len(exports), "export file"))
        self.console.say(f"Deleted {_listed(parts)}.")
        erase_notice(self.console, store)

    def _forget_user(self, word: str) -> None:
        """``forget user <name>``: every file of one learner; forgetting the
        current learner ends the session."""
        from memora.app.erasure import ask_about_exports, erase_notice, learner_exports
        from memora.core.config import validate_user_name
        from memora.data.users import delete_user, has_data

        name = validate_user_name(word)
        if not has_data(self.app, name):
            raise CommandError(f"There is no learner named '{name}' here (see 'users'); nothing was deleted.")
        if not self._confirm(
            f"This deletes the profile, session, memories, mistakes and activity log of '{name}'. "
            "Type the name to confirm: ",
            name,
        ):
            return
        exports = learner_exports(self.app, name)
        remove = ask_about_exports(self.console, exports)
        if name == self.app.settings.user:
            self.app.conversation.drop_changes()
        summary = delete_user(self.app, name, remove_exports=bool(remove) or not exports)
        self.console.say(summary)
        if name == self.app.settings.user:
            erase_notice(self.console, self.app.store)
            raise ExitRequested

    def _forget_memory(self, memory_id: str) -> None:
        """``forget <id>``: the memory and its earlier versions."""
        from memora.app.erasure import erase_notice, forget_everywhere

        self._require_id_shape("forget", memory_id)
        store = self.app.store
        # No wait for readings under way or held messages: a reading of a message said
        # before now cannot bring the forgotten text back (the store's deletion record).
        chain = store.history(memory_id)
        deleted = store.delete(memory_id)
        self.app.conversation.drop_changes(deleted)
        # and the learner's own message each version was read from (``said``), however worded
        texts = [t for r in chain if r.id in deleted for t in (r.content, r.metadata.get("said")) if t]
        forget_everywhere(self.app, texts, self.console)
        extra = f" (and {counted(len(deleted) - 1, 'earlier version')})" if len(deleted) > 1 else ""
        self.console.say(f"Forgot {deleted[-1] if len(deleted) == 1 else memory_id}{extra}.")
        erase_notice(self.console, store)
        self._point_at_exports_holding(texts)

    def _point_at_exports_holding(self, texts: list[str]) -> None:
        """A forgotten text may still sit in an export file: name the files (the
        learner decides whether to delete them)."""
        from memora.app.erasure import exports_holding, learner_exports

        holding = exports_holding(learner_exports(self.app, self.app.settings.user), texts)
        if not holding:
            return
        names = ", ".join(p.name for p in holding[:3]) + (" ..." if len(holding) > 3 else "")
        self.console.notice(
            f"{counted(len(holding), 'export file')} in your data folder "
            f"still hold{'s' if len(holding) == 1 else ''} it "
            f"({names}); delete {'them' if len(holding) != 1 else 'it'} if you want it gone everywhere."
        )

    def _require_id_shape(self, name: str, word: str) -> None:
        if not typed_id(word):
            raise CommandError(f"'{shorten(word, 40)}' is not a memory id (see 'memories'). {self.usage(name)}")

    def _confirm(self, prompt: str, expected: str) -> bool:
        try:
            answer = self.console.read(prompt)
        except (EOFError, KeyboardInterrupt):
            answer = ""
        if answer.strip() != expected:
            self.console.say("Cancelled; nothing was deleted.")
            return False
        return True

    def cmd_history(self, args: str) -> None:
        if not args or len(args.split()) != 1:
            raise self.usage("history")
        self._require_id_shape("history", args)
        try:
            chain = self.app.store.history(args)
        except CommandError:
            undone = self.app.conversation.changes.undone_memory(args)
            if undone is None:
                raise
            when = undone.at.astimezone().strftime("%Y-%m-%d %H:%M")
            self.console.say(f"Memory {undone.id} was taken back by 'undo' on {when}; it is no longer stored.")
            return
        rows = []
        for index, r in enumerate(chain):
            until = r.valid_until.astimezone().strftime("%Y-%m-%d %H:%M") if r.valid_until else ""
            # A version's change_reason is overwritten with why it was replaced, so
            # what made a later version is its predecessor's reason, and the first
            # version was made by where it came from ('remember', chat, an import).
            made = ORIGINS.get(r.source, r.source) if index == 0 else chain[index - 1].change_reason or ""
            ended = "" if r.is_current else r.change_reason or ""
            if ended and r.metadata.get("note"):
                ended += f" (you said: {shorten(r.metadata['note'], 50)})"
            if r.metadata.get("undone"):
                made += f"; current again by undo {r.metadata['undone']}"
            rows.append(
                [r.id, r.created_at.astimezone().strftime("%Y-%m-%d %H:%M"), until, r.status, made, ended, r.content]
            )
        self.console.table(f"History of {args}", ["id", "from", "until", "status", "made by", "ended by", "text"], rows)

    def cmd_page(self, args: str) -> None:
        from memora.cli.page import open_page

        open_page(self.app, self.console, line_runner)

    def cmd_undo(self, args: str) -> None:
        for line in self.app.undo():
            self.console.say(line)

    def cmd_search(self, args: str) -> None:
        if not args:
            raise self.usage("search")
        from long_term_memory import RETRIEVAL_MIN_SCORE
        from memora.store.retrieval import retrieve_relevant_memories

        try:
            results, tokens = retrieve_relevant_memories(
                self.app.store, args, n_results=10, include_below_threshold=True, now=self.app.clock()
            )
        except EmbeddingUnavailable:
            if not self._no_local_model_notice():
                self.console.say(f"Memory search is unavailable without {self._embedding_source()} (see above).")
            return
        self.app.add_usage("embeddings", tokens)
        rows = [
            [
                "*" if r.passed else "",
                f"{r.score:.3f}",
                f"{r.dense_score:.2f}",
                f"{r.lexical_score:.2f}",
                r.id,
                r.created_at.astimezone().strftime("%Y-%m-%d"),
                r.content,
            ]
            for r in results
        ]
        self.console.table(
            f"Search results (threshold {RETRIEVAL_MIN_SCORE:.2f})",
            ["pass", "score", "dense", "lexical", "id", "date", "text"],
            rows,
        )

    def _no_local_model_notice(self) -> bool:
        """Say once a session why memory search is unavailable (the local embedding model
        is not on this machine) and that memories are still kept; True if said now."""
        if not self.app.turn.no_local_model_told_once():
            return False
        why = (
            "could not be reached"
            if self.app.store.embedder.name.startswith("openai:")
            else ("is not on this machine and could not be downloaded (see README, 'Offline use')")
        )
        self.console.notice(
            f"Memory search is unavailable: {self._embedding_source()} {why}. Your memories are still saved; they "
            "become searchable at the next start that reaches it, or with 'reindex'."
        )
        return True

    def _embedding_source(self) -> str:
        name = self.app.store.embedder.name
        return (
            "the embedding service" if name.startswith("openai:") else f"the local embedding model {LOCAL_MODEL_NAME}"
        )

    def cmd_reindex(self, args: str) -> None:
        rebuilding = self.app.store.vectors_missing is not None
        count = self.app.reindex()
        memories = counted(count, "memory", "memories")
        if rebuilding:
            self.console.say(
                f"Rebuilt the vectors of {memories} from the catalog with {self.app.embedder.name}; "
                "memory search works again."
            )
        else:
            self.console.say(f"Re-embedded {memories} with {self.app.embedder.name}.")
        retried = self.app.reader.retry(30.0) if self.app.model.configured else 0
        if retried:  # messages that failed while the store did not match the model
            self.console.say(f"Reading memories again from {counted(retried, 'earlier message')}.")

    # -- learning -----------------------------------------------------------------------------
    def cmd_mistakes(self, args: str) -> None:
        ledger = self.app.ledger
        words = args.split()
        if words:
            if len(words) != 2 or words[0].lower() != "forget" or not _MISTAKE_ID.fullmatch(words[1].lower()):
                raise self.usage("mistakes")
            matches = ledger.find(words[1])
            if len(matches) != 1:
                found = "No mistake has" if not matches else f"{len(matches)} mistakes have"
                raise CommandError(f"{found} the id '{shorten(words[1], 20)}' (see 'mistakes'); nothing was deleted.")
            forgotten = ledger.forget(matches[0].id)
            self.console.say(
                f"Forgot mistake {forgotten.id}: {shorten(forgotten.rule, 80)}."
                if forgotten
                else "It was already gone."
            )
            return
        now = self.app.clock()
        plan = ledger.schedule(now)
        entries = sorted(ledger.all(), key=lambda m: (STATUS_ORDER[m.status], -m.count, -m.last_seen.timestamp()))
        cards = [m for m in entries if not m.is_mistake]  # words asked about: cards, not mistakes
        entries = [m for m in entries if m.is_mistake]
        rows = []
        for m in entries:
            example = m.latest
            # A short example whole; a long one as the changed words with two either side,
            # since a sentence cut at a fixed length could hide the fix.
            excerpt = None
            if example is not None:
                excerpt = (example.original, example.corrected)
                if max(len(example.original), len(example.corrected)) > EXAMPLE_WHOLE_CHARS:
                    excerpt = correction_excerpt(example.original, example.corrected)
            shown = f"{shorten(excerpt[0], 60)} -> {shorten(excerpt[1], 60)}" if excerpt else "(no example)"
            rows.append(
                [
                    m.id,
                    m.kind,
                    shorten(m.rule, 50),
                    str(m.count),
                    m.first_seen.astimezone().strftime("%Y-%m-%d"),
                    time_ago(m.last_seen, now),
                    m.status,
                    _next_review(m, plan),
                    shown,
                ]
            )
        self.console.table(
            "Your mistakes (review drills them; 'mistakes forget <id>' deletes one)",
            ["id", "kind", "rule", "count", "first seen", "last seen", "status", "next review", "example"],
            rows,
        )
        if cards:
            self.console.table(
                "Your word cards (review drills them too; 'mistakes forget <id>' deletes one)",
                ["id", "word", "meaning", "added", "status", "next review"],
                [
                    [
                        m.id,
                        shorten(m.latest.original if m.latest else m.rule, 40),
                        shorten(m.latest.corrected if m.latest else "", 60),
                        m.first_seen.astimezone().strftime("%Y-%m-%d"),
                        m.status,
                        _next_review(m, plan),
                    ]
                    for m in cards
                ],
            )

    def cmd_review(self, args: str) -> None:
        words = args.split(maxsplit=1)
        if words:
            if words[0].lower() != "export" or len(words) != 2:
                raise self.usage("review")
            from memora.teaching.anki import write_deck

            path = self._path_argument("review", words[1]).absolute()  # the whole path, as 'export' prints it
            count = write_deck(self.app.ledger.all(), path, user=self.app.settings.user, now=self.app.clock())
            self.console.say(
                f"Wrote {counted(count, 'card')} to {path}; import it in Anki (File > Import) and tick "
                "“Import scheduling”, or Anki drops their review history."
            )
            if count:  # an empty deck holds none of the learner's sentences
                self.console.notice("That file holds your own sentences. Keep it private.")
            return
        from memora.app.recall import practice_facts
        from memora.teaching.drill import Drill

        drill = Drill(
            ledger=self.app.ledger,
            activity=self.app.activity,
            console=self.console,
            clock=self.app.clock,
            model=self.app.model,
            on_tokens=lambda n: self.app.add_usage("grading", n),
            facts=lambda: practice_facts(self.app.store),
        )
        self.console.say(drill.run())

    def cmd_progress(self, args: str) -> None:
        from memora.teaching.progress import ProgressData, parse_options, report

        try:
            days, plain = parse_options(args)
        except CommandError:
            raise self.usage("progress") from None
        profile = self.app.profiles.get()
        plan = self.app.ledger.schedule(self.app.clock())
        data = ProgressData(
            plan=plan,
            today=self.app.clock().date(),
            days=days,
            activity=self.app.activity.days(),
            mistakes=self.app.ledger.all(),
            level_history=[(change.at.astimezone().date(), change.level) for change in profile.level_history],
        )
        for line in report(data, charts=self.console.charts and not plain):
            self.console.say(line)

    # -- data -------------------------------------------------------------------------------
    def cmd_export(self, args: str) -> None:
        from memora.data.data_transfer import default_export_path, export_data

        path = self._path_argument("export", args) if args else default_export_path(self.app)
        # Path() drops a trailing separator, but "export backups/" names a folder.
        _require_existing_folder(path, folder_typed=args.strip().strip("'\"").endswith(("/", os.sep)))
        written = export_data(self.app, path)
        self.console.say(f"Exported to {written}.")
        self.console.notice("That file holds your personal data (profile, memories, conversation). Keep it private.")

    def cmd_import(self, args: str) -> None:
        if not args:
            raise self.usage("import")
        from memora.data.data_transfer import import_data

        self.console.say(import_data(self.app, self._path_argument("import", args)))

    def _path_argument(self, name: str, args: str) -> Path:
        if not looks_like_path(args):
            raise CommandError(
                f"{name.capitalize()} takes one path; put quotes around a path with spaces. {self.usage(name)}"
            )
        text = args.strip()
        if len(text) > 1 and text[0] == text[-1] and text[0] in "'\"":
            text = text[1:-1]
        # A bare file name is in the (owner-only) data folder; 'import' reads it from there when it is there.
        kept = self.app.paths.folder / text
        bare = Path(text).name == text and not text.startswith((".", "~"))
        return kept if bare and (name != "import" or kept.exists()) else Path(text).expanduser()

    def cmd_users(self, args: str) -> None:
        from memora.data.users import list_users

        rows = [
            [u.name + (" (you)" if u.name == self.app.settings.user else ""), str(u.memories), u.folder]
            for u in list_users(self.app)
        ]
        self.console.table("Learners", ["name", "memories", "folder"], rows)


def _require_existing_folder(path: Path, *, folder_typed: bool = False) -> None:
    """``export`` writes into a folder that exists: a typo in a folder name must
    not silently create a tree of folders somewhere unexpected, nor a file named
    after a folder the learner meant ("export nope/")."""
    try:
        folder = path if folder_typed or path.is_dir() else path.parent
        missing = not folder.is_dir()
    except (OSError, ValueError):
        return  # an unusable path: export_data reports it in one line
    if missing:
        raise CommandError(
            f"Cannot export to {shorten(str(path), 160)}: the folder {shorten(str(folder), 160)} does not exist. "
            "Nothing was exported."
        )


# What the first version of a memory was made by, as 'history' shows it.
ORIGINS = {"command": "remember", "extracted": "from chat", "import": "import"}


def run_command(router: CommandRouter, line: str) -> bool:
    """Dispatch with errors turned into one line on the console."""
    try:
        return router.dispatch(line)
    except (ExitRequested, KeyboardInterrupt):
        raise
    except MemoraError as error:
        router.console.error(str(error))
        return True


def line_runner(app: Memora, console: Console) -> Callable[[str], bool]:
    """What runs one typed line as a command on ``console`` (the memory page's actions)."""
    router = CommandRouter(app, console)
    return lambda line: run_command(router, line)


__all__ = ["CEFR_LEVELS", "CommandRouter", "ExitRequested", "line_runner", "run_command"]


def _next_review(mistake, plan) -> str:
    """'2026-12-14 (in 11 days)' or 'due today', from the one schedule; '-' for a mastered card."""
    day = plan.day.get(mistake.id)
    return "-" if day is None else "due today" if day == plan.today else f"{day} ({spaced.in_days(day, plan.today)})"
