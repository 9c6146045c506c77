r"""``review export <file.apkg>``: the ledger's cards as an Anki deck (genanki).

The note type and the deck have fixed ids, chosen once: Anki recognises a
re-exported deck as the same deck. Each note's guid comes from the learner and
the mistake's id, so importing a newer export updates the notes instead of
adding copies.

Every field comes from stored text (the learner's words, the model's rule), so
each is made inert for Anki (``inert``): Anki reads a field as HTML (``<img
src>``, ``<audio>``), then its own syntax in that HTML: ``[sound:file]`` plays
a media file, ``[anki:tts]...[/anki:tts]`` speaks, ``[latex]``, ``[$]`` and
``[$$]`` run LaTeX, ``{{c1::...}}`` is a cloze and ``{{Field}}`` a template
reference; and MathJax typesets ``\(...\)`` and ``\[...\]`` in the card's text.
The file holds the learner's own sentences: it is written owner-only and
atomically, like every file Memora writes.
"""

from __future__ import annotations

import contextlib
import html
import os
import re
import sqlite3
import tempfile
from datetime import datetime
from pathlib import Path

from memora.engine.errors import CommandError, failure_reason
from memora.engine.ledger import Mistake
from memora.engine.storage import FILE_MODE, special_file

MODEL_ID = 1_718_204_812  # never change: Anki keys the note type on it
DECK_ID = 1_718_204_813  # never change: Anki keys the deck on it
FIELDS = ("Question", "Answer", "Rule", "Kind", "MemoraId")
# Anki's parsers read the field's HTML as it is stored, before entities are
# decoded: '[' and '{' as character references never open a tag, a cloze or a
# template reference, and still show as '[' and '{'.
_ANKI_SYNTAX = str.maketrans({"[": "&#91;", "]": "&#93;", "{": "&#123;", "}": "&#125;"})
# MathJax reads the card's text after the entities are decoded, so its
# delimiters get a word joiner (U+2060, invisible) between the backslash and the bracket.
_MATH_DELIMITER = re.compile(r"\\(?=[()\[\]])")


def inert(text: str) -> str:
    """``text`` as an Anki field that shows it and does nothing else: no HTML,
    no media reference, no Anki tag, cloze, template reference, LaTeX or MathJax."""
    escaped = html.escape(text)
    escaped = _MATH_DELIMITER.sub("\\\u2060", escaped)
    return escaped.translate(_ANKI_SYNTAX)


def _model():
    import genanki

    return genanki.Model(
        MODEL_ID,
        "Memora mistake",
        fields=[{"name": name} for name in FIELDS],
        templates=[
            {
                "name": "Fix the sentence",
                "qfmt": "{{Question}}",
                "afmt": "{{FrontSide}}<hr id=answer>{{Answer}}<br><i>{{Rule}}</i>",
            }
        ],
    )


def write_deck(mistakes: list[Mistake], path: Path, *, user: str, now: datetime) -> int:
    """Write ``mistakes`` (those with an example) to ``path``; returns the number of cards."""
    import genanki

    path = Path(path).expanduser()
    if path.suffix.lower() != ".apkg":
        raise CommandError(f"An Anki deck file ends in .apkg; got {path.name}. Usage: review export <file.apkg>")
    folder = path.parent if str(path.parent) else Path(".")
    kind = special_file(path)
    if kind is not None:
        raise CommandError(f"Cannot write {path}: it is {kind}, not a file. Nothing was exported.")
    if not folder.is_dir():
        raise CommandError(f"Cannot write {path}: the folder {folder} does not exist. Nothing was exported.")
    model = _model()
    deck = genanki.Deck(DECK_ID, f"Memora: {user}'s mistakes")
    count = 0
    from memora.app.drill import exercise

    for mistake in mistakes:
        example, question = mistake.latest, exercise(mistake)
        if example is None or question is None:
            continue
        fields = [inert(text) for text in (question, example.corrected, mistake.rule, mistake.kind, mistake.id)]
        deck.add_note(
            genanki.Note(
                model=model,
                fields=fields,
                guid=genanki.guid_for(user, mistake.id),
                tags=[mistake.kind.replace(" ", "_")],
            )
        )
        count += 1
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
    os.close(fd)
    try:
        genanki.Package(deck).write_to_file(tmp, timestamp=now.timestamp())  # note ids come from it: the injected clock
        os.chmod(tmp, FILE_MODE)
        os.replace(tmp, path)
    except (OSError, sqlite3.Error) as error:  # genanki writes a SQLite collection, then the zip
        raise CommandError(f"Cannot write {path}: {failure_reason(error)}. Nothing was exported.") from None
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
    return count
