"""Things Memora defines once, and what reads each definition.

The memory categories (records.CATEGORIES): the extraction schema and the
digest's sections follow them. What ends a sentence (text_utils.SENTENCE_END),
the scripts written without spaces (text_utils.CJK_RANGES), a count with its
noun (text_utils.counted) and an error's one line (errors.error_line) each have
one definition that every caller uses.
"""

from __future__ import annotations

import pytest

import context_builder
from memora.cli.commands import remembered_text
from memora.core.errors import error_line, failure_reason
from memora.core.records import CATEGORIES
from memora.core.text_utils import SENTENCE_END, counted, quoted
from memora.reading.jobs import ExtractedFact


def test_the_extraction_schema_and_the_digest_follow_the_stored_categories():
    assert tuple(ExtractedFact.model_json_schema()["properties"]["category"]["enum"]) == CATEGORIES
    assert tuple(key for key, _ in context_builder.DIGEST_SECTIONS) == CATEGORIES


@pytest.mark.parametrize(
    ("n", "word", "many", "expected"),
    [
        (1, "card", None, "1 card"),
        (0, "card", None, "0 cards"),
        (2, "export file", None, "2 export files"),
        (1, "memory", "memories", "1 memory"),
        (5, "memory", "memories", "5 memories"),
        (2, "entry", "entries", "2 entries"),
        (1, "retry", "retries", "1 retry"),
    ],
)
def test_a_count_takes_its_nouns_form(n, word, many, expected):
    assert counted(n, word, many) == expected


@pytest.mark.parametrize("end", SENTENCE_END)
def test_a_quoted_sentence_that_already_ends_gets_no_second_full_stop(end):
    assert quoted(f"I like tea{end}", 60) == f"\u201cI like tea{end}\u201d"


@pytest.mark.parametrize(
    "text", ["我住在台北", "わたしは東京に住んでいます", "저는 서울에 살아요", "東京に住んでいます"]
)
def test_remember_stores_a_line_in_any_script_without_spaces_as_written(text):
    assert remembered_text(text) == text


@pytest.mark.parametrize(
    ("error", "limit", "expected"),
    [
        (RuntimeError("boom"), 200, "boom"),
        (RuntimeError("two\n  lines\tand tabs"), 200, "two lines and tabs"),
        (RuntimeError(""), 200, "RuntimeError"),
        (RuntimeError("x" * 300), 120, "x" * 119 + "\u2026"),
    ],
)
def test_an_error_is_one_short_line(error, limit, expected):
    assert error_line(error, limit) == expected


def test_a_write_failure_reads_as_the_end_of_a_sentence():
    assert failure_reason(RuntimeError("the folder moved.")) == "the folder moved"
    assert failure_reason(OSError(28, "No space left on device")) == "the disk is full"
