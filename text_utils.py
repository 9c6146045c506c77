"""Small text helpers shared by the stores, the parser and the context builder."""

from __future__ import annotations

import re
import unicodedata

_WHITESPACE = re.compile(r"\s+")


def clean_text(text: str) -> str:
    """One tidy line: control and format characters removed, whitespace collapsed."""
    text = "".join(
        " " if ch in "\t\r\n\v\f\x85\u2028\u2029" else ch
        for ch in str(text)
        if ch in "\t\r\n\v\f\x85\u2028\u2029" or unicodedata.category(ch) not in ("Cc", "Cf", "Cs", "Co")
    )
    return _WHITESPACE.sub(" ", text).strip()


def normalized_key(text: str) -> str:
    """Case- and width-insensitive key for exact-duplicate checks."""
    text = unicodedata.normalize("NFKC", clean_text(text)).casefold()
    return re.sub(r"[\s\W_]+", " ", text).strip()


def shorten(text: str, limit: int) -> str:
    text = clean_text(text)
    return text if len(text) <= limit else text[: max(0, limit - 1)].rstrip() + "…"
