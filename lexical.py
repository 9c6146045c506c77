"""Lexical terms for the BM25 side of retrieval, in English and Chinese.

SQLite FTS5 does the indexing and BM25 scoring (see ``catalog.py``); this
module decides what a "term" is, because FTS5's own tokenizers cannot split
Chinese (it has no spaces) and do not stem English:

* Latin-script words are lower-cased, stop words are dropped and a light
  suffix-stripping stemmer folds ``exams``/``exam``, ``travelled``/``travel``;
* CJK runs become overlapping character bigrams (``咖啡店`` -> ``咖啡``,
  ``啡店``), the standard dictionary-free way to index Chinese; a lone CJK
  character is kept as a unigram.

Documents and queries go through the same function, so they always agree.
"""

from __future__ import annotations

import re
import unicodedata

_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*", re.UNICODE)

STOP_WORDS = frozenset(
    """
    a about above after again against all am an and any are aren't as at be because been before being
    below between both but by can can't cannot could couldn't did didn't do does doesn't doing don't down
    during each few for from further had hadn't has hasn't have haven't having he he'd he'll he's her here
    here's hers herself him himself his how how's i i'd i'll i'm i've if in into is isn't it it's its itself
    let's me more most mustn't my myself no nor not of off on once only or other ought our ours ourselves
    out over own same shan't she she'd she'll she's should shouldn't so some such than that that's the their
    theirs them themselves then there there's these they they'd they'll they're they've this those through
    to too under until up very was wasn't we we'd we'll we're we've were weren't what what's when when's
    where where's which while who who's whom why why's with won't would wouldn't you you'd you'll you're
    you've your yours yourself yourselves
    also just really like yeah yes oh ok okay hey hi so well get got gonna wanna thing things kind lot
    """.split()
)


def _is_cjk(ch: str) -> bool:
    code = ord(ch)
    return (
        0x3400 <= code <= 0x9FFF
        or 0x3040 <= code <= 0x30FF
        or 0xAC00 <= code <= 0xD7AF
        or 0xF900 <= code <= 0xFAFF
        or 0x20000 <= code <= 0x2FFFF
    )


def stem(word: str) -> str:
    """A light English stemmer: plural, -ing, -ed, -ly, -ies. Never below 3 letters."""
    if len(word) <= 3 or not word.isascii():
        return word
    for suffix, replacement in (
        ("ies", "y"),
        ("ied", "y"),
        ("sses", "ss"),
        ("ing", ""),
        ("edly", ""),
        ("ed", ""),
        ("ly", ""),
        ("es", ""),
        ("s", ""),
    ):
        if word.endswith(suffix) and len(word) - len(suffix) + len(replacement) >= 3:
            if suffix == "s" and word.endswith(("ss", "us", "is")):
                return word
            if suffix == "es" and not word.endswith(("ches", "shes", "xes", "zes", "sses", "oes")):
                continue
            base = word[: len(word) - len(suffix)] + replacement
            if suffix in ("ing", "ed") and len(base) >= 4 and base[-1] == base[-2]:
                if base[-1] not in "lsz" or (base[-1] == "l" and len(base) > 5):
                    base = base[:-1]  # running -> run, stopped -> stop, travelled -> travel
            return base
    return word


def terms(text: str, *, keep_stop_words: bool = False) -> list[str]:
    """The index terms of ``text`` (see the module docstring)."""
    text = unicodedata.normalize("NFKC", text or "").lower()
    out: list[str] = []
    for match in _WORD.finditer(text):
        token = match.group(0).replace("’", "'")
        run: list[str] = []
        latin: list[str] = []

        def flush_latin() -> None:
            if latin:
                word = "".join(latin)
                latin.clear()
                if keep_stop_words or word not in STOP_WORDS:
                    word = word.replace("'", "")
                    if word:
                        out.append(stem(word))

        def flush_cjk() -> None:
            if len(run) == 1:
                out.append(run[0])
            else:
                out.extend(run[i] + run[i + 1] for i in range(len(run) - 1))
            run.clear()

        for ch in token:
            if _is_cjk(ch):
                flush_latin()
                run.append(ch)
            else:
                if run:
                    flush_cjk()
                latin.append(ch)
        flush_latin()
        if run:
            flush_cjk()
    return out


def fts_query(query_terms: list[str]) -> str:
    """An FTS5 MATCH expression: any of the terms (each quoted)."""
    unique = list(dict.fromkeys(t for t in query_terms if t))
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in unique)
