r"""``review export <file.apkg>``: the ledger's cards as an Anki deck (genanki).

The deck is named for the learner ("Memora — Lin"; "Memora" for the default
learner). Each note has two cards: fix the sentence, and type the corrected
sentence (a word card has only the first). The first goes with its schedule
and review history (``_write_history``); the typed one starts new, after them.

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

from memora.core.errors import CommandError, failure_reason
from memora.core.storage import FILE_MODE, special_file
from memora.teaching import spaced
from memora.teaching.ledger import Mistake

MODEL_ID = 1_718_204_812  # never change: Anki keys the note type on it
DECK_ID = 1_718_204_813  # never change: Anki keys the deck on it
# "Fix" (the corrected words alone) came last so that the earlier fields keep their places.
FIELDS = ("Question", "Answer", "Rule", "Kind", "MemoraId", "Fix")
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
                "afmt": "{{FrontSide}}<hr id=answer>{{Answer}}{{#Rule}}<br><i>{{Rule}}</i>{{/Rule}}",
            },
            {
                # Typed: the learner types the corrected sentence and Anki compares it. A
                # word card has no Fix, so Anki makes no typed card for it.
                "name": "Type the fix",
                "qfmt": "{{#Fix}}{{Question}}<br>Type the corrected sentence: {{type:Fix}}{{/Fix}}",
                "afmt": "{{FrontSide}}<hr id=answer>{{Answer}}{{#Rule}}<br><i>{{Rule}}</i>{{/Rule}}",
            },
        ],
    )


def deck_name(user: str) -> str:
    """'Memora — Lin'; just 'Memora' for the default learner."""
    from memora.core.config import DEFAULT_USER

    return "Memora" if user == DEFAULT_USER else f"Memora \u2014 {user}"


def _fix(mistake: Mistake) -> str:
    """The corrected sentence, typed whole; empty for a word card (no typed card)."""
    return mistake.latest.corrected if mistake.is_mistake and mistake.latest else ""


def _package(deck, mistakes: dict[str, Mistake]):
    """A genanki package that also writes each card's schedule and review history."""
    import genanki

    class Package(genanki.Package):
        def write_to_db(self, cursor, timestamp, id_gen):
            super().write_to_db(cursor, timestamp, id_gen)
            _write_history(cursor, mistakes)

    return Package(deck)


def _write_history(cursor, mistakes: dict[str, Mistake]) -> None:
    """Each reviewed card as a review card of Anki's, due on Memora's day, with one
    revlog row per answer Memora kept and FSRS's memory state in the card's data:
    Anki's scheduler (FSRS or not) starts from what Memora knows instead of
    treating a card answered for weeks as new."""
    import json

    (crt,) = cursor.execute("SELECT crt FROM col").fetchone()
    first_day = datetime.fromtimestamp(crt).date()
    rows = cursor.execute("SELECT c.id, n.guid, c.ord FROM cards c JOIN notes n ON n.id = c.nid").fetchall()
    for card_id, guid, ordinal in rows:
        mistake = mistakes.get(guid)
        if ordinal:  # the typed card has no history of its own: new, after every first card
            cursor.execute("UPDATE cards SET due = due + ? WHERE id = ?", (len(mistakes), card_id))
        if mistake is None or not mistake.reviews or ordinal:
            continue
        last_day = spaced.learner_day(mistake.reviews[-1].at)
        interval = max(1, (mistake.due - last_day).days)
        lapses = sum(1 for r in mistake.reviews[1:] if r.rating == 1)
        memory = {"s": round(mistake.card.stability or 0.0, 4), "d": round(mistake.card.difficulty or 0.0, 4)}
        cursor.execute(
            "UPDATE cards SET type = 2, queue = 2, due = ?, ivl = ?, factor = 2500, reps = ?, lapses = ?, data = ? "
            "WHERE id = ?",
            ((mistake.due - first_day).days, interval, len(mistake.reviews), lapses, json.dumps(memory), card_id),
        )
        previous = None
        for review in mistake.reviews:
            day = spaced.learner_day(review.at)
            last = 0 if previous is None else (day - previous).days
            kind = 0 if previous is None else (2 if review.rating == 1 else 1)  # learn, relearn, review
            cursor.execute(
                "INSERT INTO revlog (id, cid, usn, ease, ivl, lastIvl, factor, time, type) "
                "VALUES (?, ?, -1, ?, ?, ?, 2500, 0, ?)",
                (int(review.at.timestamp() * 1000), card_id, review.rating, max(last, 1), last, kind),
            )
            previous = day


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
    deck = genanki.Deck(DECK_ID, deck_name(user))
    by_guid: dict[str, Mistake] = {}
    count = 0
    from memora.teaching.drill import exercise

    for mistake in mistakes:
        example, question = mistake.latest, exercise(mistake)
        if example is None or question is None:
            continue
        # A word card's rule is "word: meaning", the answer again: its meaning is shown once.
        rule = mistake.rule if mistake.is_mistake else ""
        texts = (question, example.corrected, rule, mistake.kind, mistake.id, _fix(mistake))
        guid = genanki.guid_for(user, mistake.id)
        deck.add_note(
            genanki.Note(
                model=model, fields=[inert(text) for text in texts], guid=guid, tags=[mistake.kind.replace(" ", "_")]
            )
        )
        by_guid[guid] = mistake
        count += 1
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
    os.close(fd)
    try:
        _package(deck, by_guid).write_to_file(
            tmp, timestamp=now.timestamp()
        )  # note ids come from it: the injected clock
        os.chmod(tmp, FILE_MODE)
        os.replace(tmp, path)
    except (OSError, sqlite3.Error) as error:  # genanki writes a SQLite collection, then the zip
        raise CommandError(f"Cannot write {path}: {failure_reason(error)}. Nothing was exported.") from None
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
    return count
