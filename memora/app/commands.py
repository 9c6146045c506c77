"""Commands, routed before chat: one ``cmd_<name>`` method per command.

The method's docstring is its help: the first line is the usage, the text
after `` -- `` the description. ``help`` is generated from them, so it cannot
drift from what exists. A line is a command when its first word names one and
the rest has that command's shape (``why`` alone, ``profile level B1``,
``forget 3fa9c2d1``...); a command is never sent to the model and never
enters the conversation. Anything else is chat ("why is this wrong?"). To chat
with a line that would be a command, begin it with a backslash
(``\\remember when...``); ``/why`` always means the command.
"""

from __future__ import annotations

import inspect
import os
import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from context_builder import dated_text
from memora.app.terminal import NO, YES, Console, render_table
from memora.engine.embeddings import LOCAL_MODEL_NAME
from memora.engine.errors import CommandError, LocalModelUnavailable, MemoraError
from memora.engine.records import CATEGORIES, MEMORY_TYPES
from memora.engine.text_utils import counted, quoted, shorten
from memora.engine.timeutil import time_ago
from user_profile import CEFR_LEVELS, CORRECTION_STYLES

if TYPE_CHECKING:
    from memora.app.assistant import Memora

# A line is a command only when it has the command's shape; otherwise it is
# chat. The rules, in order (the README's "Commands" section lists them too):
#   1. "/name ..." is always the command; "\\..." is always chat.
#   2. A line that ends with "?" is a question for the tutor.
#   3. The command word followed by a word that makes it a sentence is chat:
#      "history is my favourite subject", "memories of my childhood",
#      "remember when we...", "search for a better word...", "forget it".
#      So is the command word used as a noun, the verb second: "search engines
#      are useful", "import tariffs are high". Words are compared without the
#      punctuation and quotes around them ("remember 'when' we met", "search for!").
#   4. "remember" is the explicit store, so it stores whatever is not plainly a
#      noun phrase. A noun phrase (it opens with the/this/those/our/my/last/
#      Anna's... and no verb follows) is a request to recall: "remember our trip
#      to Kyoto", "remember the lesson" go to chat, while "remember my sister
#      lives in Leeds", "remember I ...", "remember that I ..." (stored as
#      "I ...") and "remember Tom likes jazz" are stored. "/remember ..."
#      stores anything.
#   5. What is left is a command; if its arguments are malformed ("forget zzzz",
#      "memory cap abc", "export my data") it prints its usage and nothing is sent.
NO_ARGUMENTS = {"why", "status", "reset", "users", "reindex", "undo", "exit", "quit"}
SUBCOMMANDS = {
    "profile": {"level", "goal", "preference", "remove", "clear", "confirm", "reject", "corrections"},
    "memory": {"edit", "cap"},
    # "review my essay" and "progress is slow" are chat: these take only their subcommands.
    "mistakes": {"forget"},
    "review": {"export"},
    "progress": {"--since", "--plain"},
}
_MEMORY_ID = re.compile(r"[0-9a-f]{4,64}|[0-9A-Za-z_-]*[0-9][0-9A-Za-z_-]*")
# After any command word, these turn the line into a sentence ("search is broken").
SENTENCE_WORDS = {
    "is",
    "are",
    "was",
    "were",
    "isn't",
    "aren't",
    "wasn't",
    "be",
    "been",
    "am",
    "can",
    "could",
    "should",
    "would",
    "will",
    "won't",
    "does",
    "do",
    "did",
    "doesn't",
    "don't",
    "has",
    "have",
    "had",
    "of",
    "and",
    "or",
    "but",
    "so",
    "means",
    "mean",
    "meaning",
}
# Per command, openings that read as talking to the tutor rather than as arguments.
CHAT_OPENINGS = {
    "remember": {
        "when",
        "how",
        "what",
        "if",
        "whether",
        "why",
        "who",
        "where",
        "which",
        "me",
        "us",
        "you",
        "it",
        "this",
        "those",
        "yesterday",
        "everything",
        "anything",
        "the time",
        "the day",
        "the first time",
        "the last time",
        "last time",
        "our last",
        "our first",
    },
    "search": {"for", "about", "me", "up", "online", "through", "the web", "the internet", "google"},
    "forget": {
        "it",
        "that",
        "this",
        "them",
        "those",
        "me",
        "him",
        "her",
        "us",
        "you",
        "about",
        "everything",
        "anything",
        "something",
        "nothing",
        "what",
        "how",
        "when",
        "yesterday",
        "today",
        "my",
        "the",
        "all of",
        "all about",
        "i",
        "we",
        "to",
    },
    "memories": {"about", "from", "with", "that", "i", "we", "you", "my"},
    "history": set(),
}
_SENTENCE_END = ".!…。！"
_MISTAKE_ID = re.compile(r"m[0-9a-f]{1,5}")
STATUS_ORDER = {"active": 0, "improving": 1, "mastered": 2}
# Around a word, these never change which word it is: "when," "'when'" "“when”" "that!".
_AROUND_WORDS = (
    "\"'`\u2018\u2019\u201c\u201d\u00ab\u00bb\u300c\u300d.,;:!?()[]{}\u2026\u3002\uff0c\uff01\uff1f-\u2014\u2013"
)
# The learner as the subject: "remember I ..." is always a statement to store.
FIRST_PERSON = {"i", "i'm", "i've", "i'd", "i'll", "im", "ive", "myself", "we", "we're", "we've", "we'd", "we'll"}
# The learner as the owner: "remember my sister lives in Leeds" is a statement,
# "remember our trip to Kyoto" a noun phrase (a request to recall).
POSSESSIVE = {"my", "mine", "our", "ours"}
_BASE_VERBS = set(
    "live work like love hate want need teach study play speak go come have get keep own run drive use eat "
    "drink visit know think prefer enjoy start stop finish move stay leave take make call".split()
)
# A word after the first that makes "remember ..." a statement about someone else.
STATEMENT_VERBS = SENTENCE_WORDS - {"of", "and", "or", "but", "so", "means", "mean", "meaning"} | {
    "must",
    "may",
    "might",
    "shall",
    "isn't",
    "weren't",
    "can't",
    "couldn't",
    "won't",
    "hasn't",
    "haven't",
    "didn't",
    "lives",
    "works",
    "likes",
    "loves",
    "hates",
    "wants",
    "needs",
}
DETERMINERS = {"the", "a", "an", "this", "these", "those", "your", "his", "her", "their", "its", "last", "every"}
_IRREGULAR_PAST = set(
    "said went got had made took saw met lost won left began became came gave told taught bought felt found kept "
    "knew thought ran wrote spoke drove ate drank sang".split()
)
_CJK_START = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")


def bare_words(rest: str) -> list[str]:
    """The words of ``rest``, lower-cased, without punctuation or quotes around them."""
    words = (w.strip(_AROUND_WORDS) for w in rest.lower().replace("\u2019", "'").split())
    return [w for w in words if w]


def _opens_with(rest: str, openings: set[str]) -> bool:
    lowered = " ".join(bare_words(rest))
    return any(lowered == o or lowered.startswith(o + " ") for o in openings)


def remembered_text(rest: str) -> str | None:
    """What ``remember <rest>`` stores, or None when ``rest`` is not a statement
    (rule 4 above): "that I ..." stores "I ...", the learner's own words."""
    words = bare_words(rest)
    if not words:
        return None
    if _CJK_START.match(rest.strip().lstrip(_AROUND_WORDS)):
        return rest.strip()
    if words[0] == "that":
        clause = rest.strip().split(maxsplit=1)[1] if len(words) > 1 else ""
        return (
            clause
            if len(words) > 1 and (words[1] in FIRST_PERSON or words[1] in POSSESSIVE) and remembered_text(clause)
            else None
        )
    if words[0] in DETERMINERS or words[0] in POSSESSIVE or words[0].endswith("'s"):
        # "the lesson", "our trip to Kyoto", "Anna's party": a noun phrase unless a
        # verb follows ("our teacher is strict", "my sister lives in Leeds"); a
        # plural noun often ends the phrase ("the good old days"), so the last
        # word counts only as a verb of being or having.
        if any(w in STATEMENT_VERBS for w in words[1:]) or any(_verb_like(w) for w in words[2:-1]):
            return rest.strip()
        return None
    return rest.strip()  # "remember I ...", "remember Tom likes jazz", "remember fact five"


def _verb_like(word: str) -> bool:
    """A word that makes "my sister ___ ..." a clause: "lives", "moved", "teach", "said"."""
    return (
        word in _BASE_VERBS
        or word in _IRREGULAR_PAST
        or (word.endswith(("s", "ed")) and not word.endswith(("'s", "ss")))
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


CONFIRM_WORD = "DELETE"


class ExitRequested(Exception):
    """``exit``/``quit`` (the REPL leaves after saving)."""


@dataclass(frozen=True)
class CommandSpec:
    name: str
    usage: str
    help: str
    handler: Callable[[str], None]


# Commands that show or change what Memora knows: the messages held to be read with the
# next ones are read first, so what they show includes what the learner just said (a
# mistake the tutor just corrected is in 'mistakes' and 'review'). 'forget' and 'undo' are
# not here: they decide at once and a reading still to land is refused what they
# deleted (deletions.py), and 'status' reports what is held.
SHOWS_WHAT_IS_KNOWN = frozenset(
    {"memories", "memory", "mistakes", "review", "search", "why", "export", "progress", "history", "page"}
)


class CommandRouter:
    """Finds and runs commands against a ``Memora`` app, printing to a ``Console``."""

    def __init__(self, app: Memora, console: Console):
        self.app = app
        self.console = console
        self.specs: dict[str, CommandSpec] = {}
        for attr, method in inspect.getmembers(self, predicate=inspect.ismethod):
            if attr.startswith("cmd_"):
                name = attr[4:]
                doc = inspect.getdoc(method) or name
                for line in doc.splitlines():
                    usage, _, description = line.partition(" -- ")
                    self.specs.setdefault(name, CommandSpec(name, usage.strip(), description.strip(), method))
        self.specs["quit"] = self.specs["exit"]

    # -- routing ------------------------------------------------------------------------
    def is_command(self, line: str) -> bool:
        parts = line.strip().split(maxsplit=1)
        if not parts:
            return False
        name = parts[0].lower().lstrip("/")
        rest = parts[1].strip() if len(parts) > 1 else ""
        return name in self.specs and self._has_command_shape(name, rest, slashed=parts[0].startswith("/"))

    def _has_command_shape(self, name: str, rest: str, *, slashed: bool) -> bool:
        if slashed:
            return True  # "/why ..." is always the command
        if rest.rstrip().endswith(("?", "\uff1f")):
            return False  # a question for the tutor
        words = rest.split()
        if not words:
            return True  # the bare word: the command, or its usage
        if name == "help":
            return len(words) == 1 and words[0].lower().lstrip("/") in self.specs
        if name in NO_ARGUMENTS:
            return False
        bare = bare_words(rest)
        if not bare or bare[0] in SENTENCE_WORDS or _opens_with(rest, CHAT_OPENINGS.get(name, set())):
            return False
        if name == "remember":
            return remembered_text(rest) is not None
        if name == "progress":  # an option, not a word: "progress since May is slow" is said
            return words[0].lower() in SUBCOMMANDS[name]
        if name in SUBCOMMANDS:
            return bare[0] in SUBCOMMANDS[name]
        if len(bare) > 1 and bare[1] in SENTENCE_WORDS:
            return False  # the command word as a noun: "search engines are useful"
        if name == "memories" and len([w for w in words if not w.startswith("-")]) > 2:
            return False  # a filter is a word or two; "memories fade over time" is said
        if name in SUBCOMMANDS:
            return words[0].lower() in SUBCOMMANDS[name]
        if name in ("forget", "history"):
            if words[-1][-1] in _SENTENCE_END:
                return False  # "forget yesterday." is said, not typed as a command
            if name == "forget" and words[0].lower() in ("all", "user"):  # "forget all my memories": its usage
                return True
            # One word is a (perhaps mistyped) id; several words are a sentence unless all are ids.
            return len(words) == 1 or all(_MEMORY_ID.fullmatch(w) for w in words)
        return True  # remember, search, memories, export, import take free text

    def answers_proposal(self, line: str) -> bool | None:
        """True/False when ``line`` is a yes/no to the question just asked."""
        if self.app.awaiting is None:
            return None
        return _yes_or_no(line)

    def dispatch(self, line: str) -> bool:
        """Run ``line`` if it is a command; return False if it is chat."""
        stripped = line.strip()
        if self.app.rebuild_asked:
            # The start's rebuild question: this line answers it or passes it by, so a
            # "yes" typed later can never rebuild the store by accident.
            self.app.drop_rebuild_question()
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
        answer = self.answers_proposal(stripped)
        if answer is not None:
            self.console.say(self.app.answer_proposal(answer))
            self._ask_next_if_any()
            return True
        if not self.is_command(stripped):
            return False
        # Split on any whitespace, as is_command does ("help\tx", "profile\u3000goal x").
        word, *rest = stripped.split(maxsplit=1)
        name = word.lower().lstrip("/")
        spec = self.specs[name]
        argument = rest[0].strip() if rest else ""
        if name in SHOWS_WHAT_IS_KNOWN and not (name == "mistakes" and argument.lower().startswith("forget")):
            self.app.bring_up_to_date(self.console.notice)
        spec.handler(rest[0].strip() if rest else "")
        return True

    def _ask_next_if_any(self) -> None:
        if self.app.proposals.first() is not None:
            self.app.ask_next_proposal()

    def usage(self, name: str) -> CommandError:
        lines = [spec.usage for spec in self.forms(name)]
        return CommandError("Usage: " + " | ".join(lines))

    def forms(self, name: str) -> list[CommandSpec]:
        """Every form of a command, one per line of its handler's docstring (what help lists)."""
        method = self.specs[name].handler
        doc = inspect.getdoc(method) or name
        return [
            CommandSpec(name, ln.partition(" -- ")[0].strip(), ln.partition(" -- ")[2].strip(), method)
            for ln in doc.splitlines()
        ]

    # -- general --------------------------------------------------------------------------
    def cmd_help(self, args: str) -> None:
        """help [command] -- Show this list, or one command's usage with an example."""
        # Printed as plain text, not a rich table: usages hold brackets ("[path]")
        # that a markup renderer would take for style tags and drop.
        name = args.strip().lower().lstrip("/")
        if name:
            if name not in self.specs:
                raise self.usage("help")
            specs = self.forms(name)
            rows = [[spec.usage, spec.help] for spec in specs]
            rows += [["e.g. " + example, ""] for example in EXAMPLES.get(specs[0].name, ())]
            self.console.say(render_table(f"help {name}", ["usage", "what it does"], rows))
            return
        rows = []
        for name in sorted(set(self.specs) - {"quit"}, key=_help_order):
            for spec in self.forms(name):
                rows.append([spec.usage, spec.help])
        self.console.say(
            render_table(
                "Commands (anything else is a chat message; 'help <command>' for examples)",
                ["command", "what it does"],
                rows,
            )
        )

    def cmd_exit(self, args: str) -> None:
        """exit -- Leave Memora (also quit, or Ctrl-D)."""
        raise ExitRequested

    def cmd_status(self, args: str) -> None:
        """status -- Model, data locations, memory count, token budget and usage."""
        from memora.app.reports import status_rows

        for title, columns, rows in status_rows(self.app):
            self.console.table(title, columns, rows)

    def cmd_why(self, args: str) -> None:
        """why -- Show exactly what the last request's background held, with scores and tokens."""
        from memora.app.reports import why_report

        for title, columns, rows in why_report(self.app):
            self.console.table(title, columns, rows)

    def cmd_reset(self, args: str) -> None:
        """reset -- Start a fresh conversation (profile and memories stay)."""
        self.app.reset_session()
        self.console.say("Started a fresh conversation. Your profile and memories are unchanged.")

    # -- profile ----------------------------------------------------------------------------
    def cmd_profile(self, args: str) -> None:
        """profile -- Show your profile and any pending change.
        profile level <A1|A2|B1|B2|C1|C2> -- Set your English level.
        profile goal <text> -- Add a learning goal.
        profile preference <text> -- Add a preference (how Memora should teach you).
        profile remove goal|preference <text> -- Remove a goal or preference.
        profile corrections all|important|off -- How much Memora corrects you (default important; off still records mistakes).
        profile clear -- Empty the profile.
        profile confirm | profile reject -- Accept or discard the pending profile change."""  # noqa: E501 (one help line per form)
        parts = ("profile " + args).split(maxsplit=2)
        profiles = self.app.profiles
        if len(parts) == 1:
            self._show_profile()
            return
        field = parts[1].lower()
        value = parts[2].strip() if len(parts) > 2 else ""
        if field in ("confirm", "reject") and not value:
            self.console.say(self.app.answer_proposal(field == "confirm"))
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
        """remember <text> -- Store a memory now, exactly as written."""
        if not args:
            raise self.usage("remember")
        text = remembered_text(args) or args  # "/remember the lesson" stores what it is told
        result = self.app.store.add(text, source="command")
        if result.duplicate:
            self.console.say(f"Already remembered as {result.id}: {quoted(result.content, 80)}")
        else:
            self.app.record_changes("remember", [(None, result.id)])
            self.console.say(f"Remembered ({result.id}).")
            if self.app.store.waiting_for_vectors:
                self._no_local_model_notice()

    def cmd_memories(self, args: str) -> None:
        """memories [--all] [--type semantic|episodic] [--category C] [text] -- List memories, newest first."""
        try:
            words = shlex.split(args)
        except ValueError:
            raise self.usage("memories") from None
        filters: dict = {"include_superseded": False}
        text: list[str] = []
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
            elif word.startswith("--"):
                raise self.usage("memories")
            else:
                text.append(word)
            index += 1
        if text:
            filters["text"] = " ".join(text)
        records = self.app.store.list(**filters)
        now = self.app.now()
        rows = []
        resolved = False
        for r in records:
            text = dated_text(r, now)  # "next Friday" as the tutor reads it, not as it was said days ago
            resolved |= text != r.content
            row = [r.id, r.created_at.astimezone().strftime("%Y-%m-%d"), r.memory_type, r.category, text]
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
        cap = self.app.store.memory_cap
        title = f"{len(records)} {'memory' if len(records) == 1 else 'memories'}" + (f" (cap {cap})" if cap else "")
        self.console.table(title, columns, rows)
        if resolved:
            self.console.notice("Times are shown as the tutor reads them today; 'history <id>' shows your own words.")
        if self.app.store.check_vectors():  # listed from the catalog, which is true; search is not
            self.console.notice(self.app.store.missing_vectors_message())
        elif self.app.store.waiting_for_vectors:
            self._no_local_model_notice()

    def cmd_memory(self, args: str) -> None:
        """memory edit <id> <text> -- Replace a memory's text (the old text stays in its history).
        memory cap [<n>|off] -- Show or set how many current memories you keep."""
        parts = args.split(maxsplit=2)
        if len(parts) >= 3 and parts[0].lower() == "edit":
            new = self.app.store.edit(parts[1], parts[2])
            self.app.record_changes("edit", [(new.supersedes, new.id)])
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
        """forget <id> -- Delete one memory (and its earlier versions).
        forget all -- Delete all your memories, mistakes and activity log (asks you to type DELETE).
        forget user <name> -- Delete everything of one learner (asks you to type the name)."""
        from memora.app.erasure import (
            ask_about_exports,
            erase_notice,
            exports_holding,
            forget_everywhere,
            learner_exports,
        )

        if not args:
            raise self.usage("forget")
        store = self.app.store
        if args.lower() == "all":
            count = store.count(include_superseded=True)
            mistakes = self.app.ledger.count()
            unread = self.app.unread_messages()  # said, not read yet (here or in another terminal)
            turns = len(self.app.memory.messages) // 2
            if count == 0 and mistakes == 0 and unread == 0 and turns == 0:
                self.console.say("There are no memories to delete.")
                return
            parts = [f"all {counted(count, 'memory', 'memories')}" if count != 1 else "the 1 memory"]
            if mistakes:
                parts.append(f"{mistakes} mistake{'s' if mistakes != 1 else ''}")
            if unread:
                parts.append(f"{unread} message{'s' if unread != 1 else ''} not read for memories yet")
            if turns:
                parts.append("this conversation")
            listed = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
            if self._confirm(
                f"This deletes {listed} of {self.app.settings.user}. Type {CONFIRM_WORD} to confirm: ",
                CONFIRM_WORD,
            ):
                self.app.drop_unread_messages()  # and the conversation; no wait for a reading under way
                texts = [r.content for r in store.all_records()]
                exports = ask_about_exports(self.console, learner_exports(self.app, self.app.settings.user))
                deleted = store.delete_all()
                forgotten = self.app.ledger.clear()
                self.app.activity.clear()
                self.app.drop_changes()
                forget_everywhere(self.app, texts, self.console)
                for path in exports:
                    path.unlink(missing_ok=True)
                parts = [counted(deleted, "memory", "memories")] + (
                    [f"{forgotten} mistake{'s' if forgotten != 1 else ''}"] if forgotten else []
                )
                if unread:
                    parts.append(f"{unread} unread message{'s' if unread != 1 else ''}")
                if turns:
                    parts.append("the conversation")
                if exports:
                    parts.append(f"{len(exports)} export file{'s' if len(exports) != 1 else ''}")
                listed = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
                self.console.say(f"Deleted {listed}.")
                erase_notice(self.console, store)
            return
        words = args.split()
        if words[0].lower() == "user":
            if len(words) != 2:
                raise self.usage("forget")
            from memora.app.users import delete_user
            from memora.engine.config import validate_user_name

            name = validate_user_name(words[1])
            from memora.app.users import has_data

            if not has_data(self.app, name):
                raise CommandError(f"There is no learner named '{name}' here (see 'users'); nothing was deleted.")
            if self._confirm(
                f"This deletes the profile, session, memories, mistakes and activity log of '{name}'. "
                "Type the name to confirm: ",
                name,
            ):
                exports = learner_exports(self.app, name)
                remove = ask_about_exports(self.console, exports)
                if name == self.app.settings.user:
                    self.app.drop_changes()
                summary = delete_user(self.app, name, remove_exports=bool(remove) or not exports)
                self.console.say(summary)
                if name == self.app.settings.user:
                    erase_notice(self.console, store)
                    raise ExitRequested
            return
        if len(words) != 1:
            raise self.usage("forget")
        self._require_id_shape("forget", words[0])
        # No wait for readings under way or held messages: a reading of a message said
        # before now cannot bring the forgotten text back (the store's deletion record).
        chain = store.history(words[0])
        deleted = store.delete(words[0])
        self.app.drop_changes(deleted)
        texts = [r.content for r in chain if r.id in deleted]
        forget_everywhere(self.app, texts, self.console)
        extra = (
            f" (and {len(deleted) - 1} earlier version{'s' if len(deleted) > 2 else ''})" if len(deleted) > 1 else ""
        )
        self.console.say(f"Forgot {deleted[-1] if len(deleted) == 1 else words[0]}{extra}.")
        erase_notice(self.console, store)
        holding = exports_holding(learner_exports(self.app, self.app.settings.user), texts)
        if holding:
            names = ", ".join(p.name for p in holding[:3]) + (" ..." if len(holding) > 3 else "")
            self.console.notice(
                f"{len(holding)} export file{'s' if len(holding) != 1 else ''} in your data folder "
                f"still hold{'s' if len(holding) == 1 else ''} it "
                f"({names}); delete {'them' if len(holding) != 1 else 'it'} if you want it gone everywhere."
            )

    def _require_id_shape(self, name: str, word: str) -> None:
        if not _MEMORY_ID.fullmatch(word):
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
        """history <id> -- Show every version of a memory, oldest first."""
        if not args or len(args.split()) != 1:
            raise self.usage("history")
        self._require_id_shape("history", args)
        try:
            chain = self.app.store.history(args)
        except CommandError:
            undone = self.app.undone_memory(args)
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

    def cmd_undo(self, args: str) -> None:
        """undo -- Take back the last memory change: your last message's, a remember or a memory edit (not forget)."""
        for line in self.app.undo():
            self.console.say(line)

    def cmd_search(self, args: str) -> None:
        """search <query> -- Show scored results; * marks those that pass the retrieval threshold."""
        if not args:
            raise self.usage("search")
        from long_term_memory import RETRIEVAL_MIN_SCORE
        from memora.engine.retrieval import retrieve_relevant_memories

        try:
            results, tokens = retrieve_relevant_memories(
                self.app.store, args, n_results=10, include_below_threshold=True, now=self.app.now()
            )
        except LocalModelUnavailable:
            if not self._no_local_model_notice():
                self.console.say("Memory search is unavailable without the local embedding model (see above).")
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
        if not self.app.telling.no_local_model_told_once():
            return False
        self.console.notice(
            f"Memory search is unavailable: the local embedding model {LOCAL_MODEL_NAME} is not on this machine "
            "and could not be downloaded (see README, 'Offline use'). Your memories are still saved; they become "
            "searchable at the next start with the model, or with 'reindex'."
        )
        return True

    def cmd_reindex(self, args: str) -> None:
        """reindex -- Re-embed all memories with the configured embedding model, then retry unsaved messages."""
        rebuilding = self.app.store.vectors_missing is not None
        count = self.app.reindex()
        noun = "memory" if count == 1 else "memories"
        if rebuilding:
            self.console.say(
                f"Rebuilt the vectors of {count} {noun} from the catalog with {self.app.embedder.name}; "
                "memory search works again."
            )
        else:
            self.console.say(f"Re-embedded {count} {noun} with {self.app.embedder.name}.")
        retried = self.app.retry_pending_extractions()
        if retried:  # messages that failed while the store did not match the model
            self.console.say(f"Reading memories again from {retried} earlier message{'' if retried == 1 else 's'}.")

    # -- learning -----------------------------------------------------------------------------
    def cmd_mistakes(self, args: str) -> None:
        """mistakes -- List your mistakes: how often, first and last seen, status and an example.
        mistakes forget <id> -- Delete one mistake and its review card."""
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
        now = self.app.now()
        entries = sorted(ledger.all(), key=lambda m: (STATUS_ORDER[m.status], -m.count, -m.last_seen.timestamp()))
        words = [m for m in entries if not m.is_mistake]  # words asked about: cards, not mistakes
        entries = [m for m in entries if m.is_mistake]
        rows = []
        for m in entries:
            example = m.latest
            shown = (
                f"{shorten(example.original, 50)} -> {shorten(example.corrected, 50)}" if example else "(no example)"
            )
            rows.append(
                [
                    m.id,
                    m.kind,
                    shorten(m.rule, 50),
                    str(m.count),
                    m.first_seen.astimezone().strftime("%Y-%m-%d"),
                    time_ago(m.last_seen, now),
                    m.status,
                    shown,
                ]
            )
        self.console.table(
            "Your mistakes (review drills them; 'mistakes forget <id>' deletes one)",
            ["id", "kind", "rule", "count", "first seen", "last seen", "status", "example"],
            rows,
        )
        if words:
            self.console.table(
                "Your word cards (review drills them too; 'mistakes forget <id>' deletes one)",
                ["id", "word", "meaning", "added", "status"],
                [
                    [
                        m.id,
                        shorten(m.latest.original if m.latest else m.rule, 40),
                        shorten(m.latest.corrected if m.latest else "", 60),
                        m.first_seen.astimezone().strftime("%Y-%m-%d"),
                        m.status,
                    ]
                    for m in words
                ],
            )

    def cmd_review(self, args: str) -> None:
        """review -- Drill the mistakes due today (up to 10); an empty line or 'stop' ends it.
        review export <file.apkg> -- Write your mistakes as an Anki deck."""
        words = args.split(maxsplit=1)
        if words:
            if words[0].lower() != "export" or len(words) != 2:
                raise self.usage("review")
            from memora.app.anki import write_deck

            path = self._path_argument("review", words[1]).absolute()  # the whole path, as 'export' prints it
            count = write_deck(self.app.ledger.all(), path, user=self.app.settings.user, now=self.app.now())
            self.console.say(f"Wrote {counted(count, 'card')} to {path}; import it in Anki (File > Import).")
            if count:  # an empty deck holds none of the learner's sentences
                self.console.notice("That file holds your own sentences. Keep it private.")
            return
        from memora.app.drill import Drill

        drill = Drill(
            ledger=self.app.ledger,
            activity=self.app.activity,
            console=self.console,
            clock=self.app.now,
            model=self.app.model,
            on_tokens=lambda n: self.app.add_usage("grading", n),
        )
        self.console.say(drill.run())

    def cmd_progress(self, args: str) -> None:
        """progress [--since <N>d|<N>w] [--plain] -- Days practised, mistakes, reviews and level; --plain: no charts."""
        from memora.app.progress import ProgressData, parse_options, report

        try:
            days, plain = parse_options(args)
        except CommandError:
            raise self.usage("progress") from None
        profile = self.app.profiles.get()
        data = ProgressData(
            today=self.app.now().date(),
            days=days,
            activity=self.app.activity.days(),
            mistakes=self.app.ledger.all(),
            level_history=[(change.at.astimezone().date(), change.level) for change in profile.level_history],
        )
        for line in report(data, charts=self.console.charts and not plain):
            self.console.say(line)

    # -- data -------------------------------------------------------------------------------
    def cmd_export(self, args: str) -> None:
        """export [path] -- Write your profile, memories (with history) and session to a JSON file."""
        from memora.app.data_transfer import default_export_path, export_data

        path = self._path_argument("export", args) if args else default_export_path(self.app)
        # Path() drops a trailing separator, but "export backups/" names a folder.
        _require_existing_folder(path, folder_typed=args.strip().strip("'\"").endswith(("/", os.sep)))
        written = export_data(self.app, path)
        self.console.say(f"Exported to {written}.")
        self.console.notice("That file holds your personal data (profile, memories, conversation). Keep it private.")

    def cmd_import(self, args: str) -> None:
        """import <path> -- Restore an export (validated first; all or nothing)."""
        if not args:
            raise self.usage("import")
        from memora.app.data_transfer import import_data

        self.console.say(import_data(self.app, self._path_argument("import", args)))

    def _path_argument(self, name: str, args: str) -> Path:
        if not looks_like_path(args):
            raise CommandError(
                f"{name.capitalize()} takes one path; put quotes around a path with spaces. {self.usage(name)}"
            )
        text = args.strip()
        if len(text) > 1 and text[0] == text[-1] and text[0] in "'\"":
            text = text[1:-1]
        return Path(text).expanduser()

    def cmd_users(self, args: str) -> None:
        """users -- List the learners with data here."""
        from memora.app.users import list_users

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

# One or two lines a learner could type, shown by 'help <command>' (a test runs
# each through the router, so an example can never drift into being chat).
EXAMPLES = {
    "help": ["help forget"],
    "profile": [
        "profile level B1",
        "profile goal pass IELTS with 7.0",
        "profile remove preference short answers",
        "profile corrections off",
    ],
    "remember": ["remember I have a job interview on Friday"],
    "memories": ["memories --type episodic", "memories --all coffee"],
    "memory": ["memory edit 3fa9c2d1 I moved to Taipei in 2024", "memory cap 200"],
    "search": ["search job interview"],
    "forget": ["forget 3fa9c2d1", "forget all"],
    "history": ["history 3fa9c2d1"],
    "undo": ["undo"],
    "why": ["why"],
    "status": ["status"],
    "reset": ["reset"],
    "export": ["export ~/memora-backup.json"],
    "import": ["import ~/memora-backup.json"],
    "reindex": ["reindex"],
    "users": ["users"],
    "mistakes": ["mistakes", "mistakes forget m3fa9c"],
    "review": ["review", "review export ~/memora-mistakes.apkg"],
    "progress": ["progress", "progress --since 30d", "progress --plain"],
    "exit": ["exit"],
}

_ORDER = [
    "help",
    "profile",
    "remember",
    "memories",
    "memory",
    "search",
    "forget",
    "history",
    "undo",
    "mistakes",
    "review",
    "progress",
    "why",
    "status",
    "reset",
    "export",
    "import",
    "reindex",
    "users",
    "exit",
]


def _help_order(name: str) -> int:
    return _ORDER.index(name) if name in _ORDER else len(_ORDER)


def run_command(router: CommandRouter, line: str) -> bool:
    """Dispatch with errors turned into one line on the console."""
    try:
        return router.dispatch(line)
    except (ExitRequested, KeyboardInterrupt):
        raise
    except MemoraError as error:
        router.console.error(str(error))
        return True


__all__ = ["CEFR_LEVELS", "CommandRouter", "ExitRequested", "run_command"]
