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


_TRAILING = re.compile(r"[\s.!?,;:。！？，；：…]+$")


def normalized_key(text: str) -> str:
    """Key for exact-duplicate checks: case, width, spacing and final punctuation
    are ignored; every other character counts ("C++" and "C#" stay different)."""
    text = " ".join(unicodedata.normalize("NFKC", clean_text(text)).casefold().split())
    return _TRAILING.sub("", text) or text


def shorten(text: str, limit: int) -> str:
    text = clean_text(text)
    return text if len(text) <= limit else text[: max(0, limit - 1)].rstrip() + "…"


_SENTENCE_END = (".", "!", "?", "…", "。", "！", "？")


def quoted(text: str, limit: int, end: str = ".") -> str:
    """``“text”`` shortened to ``limit``, followed by ``end`` unless the quoted
    text already closes the sentence (no ``“I like tea.”.``)."""
    inner = shorten(text, limit)
    closes = end == "." and inner.endswith(_SENTENCE_END)
    return f"\u201c{inner}\u201d{'' if closes else end}"
