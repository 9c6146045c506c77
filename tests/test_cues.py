"""Every row of the wording cues in memora/reading/cues.py is a test.

A cue catches each of its own examples (so no cue goes unrun), and no cue of a
table catches that table's counter-examples; the public questions
(``looks_like_correction``, ``may_change_profile``) answer the same way.

Messages that cannot hold a fact or a mistake are not sent to the extraction
call. That rule is narrow and by kind: acknowledgements and greetings from a
closed list (English and Chinese), emoji or punctuation alone, a command-like
word. Any other word, however short the message, means it is read: with the
mistake ledger, a three-word sentence can hold the mistake the learner most
needs to see. (These rows were tests/test_skip_extraction.py.)
"""

from __future__ import annotations

import pytest

from memora.reading import cues

TABLES = {cues.CORRECTION.name: cues.looks_like_correction, cues.PROFILE.name: cues.may_change_profile}


def _rows(positive: bool):
    for table in (cues.CORRECTION, cues.PROFILE):
        if positive:
            for cue in table.cues:
                for text in cue.examples:
                    yield pytest.param(table, cue, text, id=f"{table.name}-{cue.kind}-{text}")
        else:
            yield from (pytest.param(table, text, id=f"{table.name}-{text}") for text in table.not_cues)


@pytest.mark.parametrize(("table", "cue", "text"), list(_rows(True)))
def test_a_cue_catches_its_examples(table, cue, text):
    assert cue.pattern.search(text), f"the {cue.kind} cue misses {text!r}"
    assert TABLES[table.name](text)


@pytest.mark.parametrize(("table", "text"), list(_rows(False)))
def test_no_cue_catches_a_counter_example(table, text):
    assert table.match(text) is None, f"{table.match(text).kind} cue catches {text!r}"
    assert not TABLES[table.name](text)


@pytest.mark.parametrize("table", [cues.CORRECTION, cues.PROFILE], ids=lambda t: t.name)
def test_every_cue_has_examples_in_english_and_chinese(table):
    for cue in table.cues:
        assert any(text.isascii() for text in cue.examples), cue.kind
        assert any(not text.isascii() for text in cue.examples), cue.kind
    assert any(text.isascii() for text in table.not_cues) and any(not text.isascii() for text in table.not_cues)


@pytest.mark.parametrize("text", cues.ACK_SKIPPED)
def test_acknowledgements_greetings_and_symbols_skip_extraction(text):
    assert cues.skips_extraction(text)


@pytest.mark.parametrize("text", cues.ACK_READ)
def test_a_message_with_any_other_word_is_read(text):
    assert not cues.skips_extraction(text)


# -- in the turn: a skipped message costs no call and is still part of the conversation ------------


def test_an_acknowledgement_costs_no_extraction_call_and_leaves_nothing_to_read(make_app, server):
    app = make_app()
    app.chat("Ok, thanks!", on_delta=lambda _: None)
    app.chat("好的，謝謝！", on_delta=lambda _: None)
    assert app.wait_for_extraction(10)
    assert server.of_kind("extraction") == []
    assert list(app.queue.pending) == []  # nothing in the session file for the next start either
    app.chat("ok I will", on_delta=lambda _: None)
    assert app.wait_for_extraction(10)
    sent = server.of_kind("extraction")
    assert len(sent) == 1 and sent[0].input[-1]["content"].endswith("Message:\nok I will")
    assert len(server.chats) == 3  # every message still got its reply


def test_a_skipped_acknowledgement_still_stays_in_the_conversation(make_app, server):
    app = make_app()
    app.chat("thanks", on_delta=lambda _: None)
    app.chat("What did I just say?", on_delta=lambda _: None)
    assert "thanks" in [m["content"] for m in server.chats[-1].input if m.get("role") == "user"]
