"""What ``forget`` removes besides the memory store itself.

The store wipes its own files (``LongTermMemoryStore.erase_deleted``). A
forgotten memory's text can also sit in three files of the learner's:

* the line history of the prompt (``.memora_history``), which holds every
  ``remember <text>`` and ``memory edit <id> <text>`` line typed, and the chat
  message each memory was read from (its ``said``): every entry that contains a
  forgotten text is removed, from the file and from the
  running prompt's memory;
* the session (``memora_session.json``): a reply may quote the memory, and a
  pending extraction job would read the fact back in from the message it came
  from. Each occurrence of a forgotten text in the recent messages, the
  summary and the pending jobs is replaced by ``[forgotten]``. The rest of the
  conversation stays; ``reset`` deletes all of it;
* the learner's exports in the data folder: ``forget all`` and ``forget user``
  offer to delete them (they hold every memory); after ``forget <id>`` the
  learner is told which of them still hold the text.

Texts match ignoring case and spacing, the way ``remember`` stores them.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Protocol

from memora.core.config import Settings
from memora.core.storage import atomic_write_text
from memora.core.text_utils import YES, counted


class Session(Protocol):
    """What erasure needs of a running session (``assistant.Memora`` is one): named
    here, so that the session can erase a text without this module importing it."""

    settings: Settings
    paths: Any
    conversation: Any  # ``Conversation``: ``rewrite`` passes the session's texts through a function
    profiles: Any
    proposals: Any


FORGOTTEN = "[forgotten]"
# An export starts with its format key (data_transfer writes it first), so a
# session or note that merely mentions the format is never taken for one.
_EXPORT_HEAD = re.compile(rb'\A(?:\xef\xbb\xbf)?\s*\{\s*"format"\s*:\s*"memora-export"')


def _norm(text: str) -> str:
    return " ".join(str(text).split()).casefold()


class TextFinder:
    """Which of many texts occur in a string, in time linear in the string.

    ``forget all`` looks for thousands of texts in every history entry; each
    text is indexed by its first ``KEY`` characters (normalised), so a string
    is scanned once instead of once per text.
    """

    KEY = 8

    def __init__(self, texts: Iterable[str]):
        self.short: set[str] = set()
        self.by_key: dict[str, set[str]] = {}
        for text in texts:
            # A final full stop is the sentence's, not the fact's: "I like tea." is in "I like tea, and".
            norm = _norm(text).rstrip(".!?。！？… ")
            if not norm:
                continue
            if len(norm) < self.KEY:
                self.short.add(norm)
            else:
                self.by_key.setdefault(norm[: self.KEY], set()).add(norm)

    def __bool__(self) -> bool:
        return bool(self.short or self.by_key)

    def found_in(self, text: str) -> set[str]:
        """The texts found as whole words: a memory "cat" is not in "education"."""
        norm = _norm(text)
        found = set()
        for short in self.short:
            start = norm.find(short)
            while start >= 0:
                if _whole(norm, start, len(short)):
                    found.add(short)
                    break
                start = norm.find(short, start + 1)
        if self.by_key:
            for start in range(len(norm) - self.KEY + 1):
                for candidate in self.by_key.get(norm[start : start + self.KEY], ()):
                    if norm.startswith(candidate, start) and _whole(norm, start, len(candidate)):
                        found.add(candidate)
        return found


def _whole(text: str, start: int, length: int) -> bool:
    end = start + length
    return (start == 0 or not text[start - 1].isalnum()) and (end == len(text) or not text[end].isalnum())


def _pattern(norm: str) -> re.Pattern:
    body = r"\s+".join(re.escape(word) for word in norm.split())
    return re.compile(rf"(?<!\w){body}(?!\w)", re.IGNORECASE)


def scrub_text(text: str, finder: TextFinder) -> str:
    for norm in sorted(finder.found_in(text), key=len, reverse=True):
        text = _pattern(norm).sub(FORGOTTEN, text)
    return text


def _history_entries(raw: str) -> list[tuple[list[str], list[str]]]:
    """prompt_toolkit's FileHistory: ``# <time>`` then one ``+<line>`` per line of the entry."""
    entries: list[tuple[list[str], list[str]]] = []
    header: list[str] = []
    lines: list[str] = []
    for line in raw.splitlines():
        if line.startswith("+"):
            lines.append(line)
            continue
        if lines:
            entries.append((header, lines))
            header, lines = [], []
        if line.strip():
            header.append(line)
    if lines:
        entries.append((header, lines))
    return entries


def scrub_input_history(path: Path, finder: TextFinder, console=None) -> int:
    """Remove every history entry holding a forgotten text; the number removed."""
    removed = 0
    path = Path(path)
    if finder and path.exists():
        raw = path.read_text(encoding="utf-8", errors="replace")
        kept = []
        for header, lines in _history_entries(raw):
            entry = "\n".join(line[1:] for line in lines)
            if finder.found_in(entry):
                removed += 1
            else:
                kept.append("\n".join(header + lines))
        if removed:
            atomic_write_text(path, "".join(f"\n{entry}\n" for entry in kept))
    # The running prompt keeps the entries it loaded for the arrow keys.
    # prompt_toolkit has no public way to remove one, so its list is filtered.
    history = getattr(getattr(console, "session", None), "history", None)
    loaded = getattr(history, "_loaded_strings", None)
    if isinstance(loaded, list):
        loaded[:] = [entry for entry in loaded if not finder.found_in(entry)]
    return removed


def learner_exports(app: Session, name: str) -> list[Path]:
    """The learner's exports in their data folder (by name, or by content for a renamed one)."""
    paths = app.settings.paths_for(name)
    folder = paths.folder
    found: list[Path] = []
    if not folder.is_dir():
        return found
    own = set(paths.learner_files)
    user_field = re.compile(rb'"user"\s*:\s*' + re.escape(json.dumps(name).encode()))
    for path in sorted(folder.glob("*.json")):
        if not path.is_file() or path in own:
            continue
        head = b""
        with contextlib.suppress(OSError):
            with open(path, "rb") as handle:
                head = handle.read(4096)
        if _EXPORT_HEAD.match(head):
            if user_field.search(head):
                found.append(path)
        elif path.name.startswith(f"memora-export-{name}-"):  # named as Memora names it, unreadable or torn
            found.append(path)
    return found


def exports_holding(paths: Iterable[Path], texts: Iterable[str]) -> list[Path]:
    """Those of ``paths`` whose bytes hold one of ``texts`` (as an export writes them)."""
    needles = [json.dumps(t, ensure_ascii=False)[1:-1].encode("utf-8") for t in texts if t]
    holding = []
    for path in paths:
        with contextlib.suppress(OSError):
            data = path.read_bytes()
            if any(needle in data for needle in needles):
                holding.append(path)
    return holding


def ask_about_exports(console, exports: list[Path]) -> list[Path]:
    """Ask whether to delete the learner's exports too; the ones to delete."""
    if not exports:
        return []
    names = ", ".join(p.name for p in exports[:3]) + (" ..." if len(exports) > 3 else "")
    try:
        answer = console.read(
            f"Your {counted(len(exports), 'export file')} in the data folder ({names}) "
            f"{'holds' if len(exports) == 1 else 'hold'} these memories too. Delete them as well? (yes/no) "
        )
    except (EOFError, KeyboardInterrupt):
        answer = ""
    if answer.strip().lower().strip(".!。！ ") in YES:
        return exports
    console.say("Keeping the export files.")
    return []


def learner_leftovers(app: Session) -> list[str]:
    """What ``forget all`` deletes besides the memories, mistakes and conversation, as the
    question names it: the profile (with its pending changes) and the prompt's history."""
    history = app.paths.input_history
    return [
        name
        for name, there in (
            ("your profile", not app.profiles.get().is_empty() or bool(app.proposals.pending())),
            ("what you typed at the prompt", history.exists() and history.stat().st_size > 0),
        )
        if there
    ]


def erase_leftovers(app: Session, console=None) -> None:
    """``forget all``: the profile and its pending changes go, and the prompt's history is
    emptied in place (the running prompt appends to it; it stays owner-only)."""
    for path in (app.paths.profile, app.paths.proposals):
        path.unlink(missing_ok=True)
    if app.paths.input_history.exists():
        atomic_write_text(app.paths.input_history, "")
    loaded = getattr(getattr(getattr(console, "session", None), "history", None), "_loaded_strings", None)
    if isinstance(loaded, list):
        loaded.clear()


def erase_notice(console, store) -> None:
    """Say what a forget could not wipe (yet), if anything."""
    if store.connection.url is not None:
        console.notice(
            "Your memories live on a Chroma server; it may keep copies in its own files until it compacts them."
        )
    elif not store.erased:
        why = store.unwiped or "another Memora is using them"
        console.notice(f"The deleted text could not be wiped from the memory files yet ({why}); the next start will.")


def forget_everywhere(app: Session, texts: Iterable[str], console=None) -> None:
    """Remove forgotten texts from the session and the line history."""
    finder = TextFinder(texts)
    if not finder:
        return
    app.conversation.rewrite(lambda text: scrub_text(text, finder))  # the conversation and the unread messages
    scrub_input_history(app.paths.input_history, finder, console)


__all__ = [
    "FORGOTTEN",
    "TextFinder",
    "ask_about_exports",
    "erase_leftovers",
    "erase_notice",
    "exports_holding",
    "forget_everywhere",
    "learner_exports",
    "learner_leftovers",
    "scrub_input_history",
]
