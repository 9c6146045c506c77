"""Small text helpers shared by the stores, the parser and the context builder."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable

# A bare answer to a yes/no question (a profile change, a rebuild, deleting exports).
YES = {"yes", "y", "yeah", "yep", "sure", "ok", "okay", "是", "好", "對", "对"}
NO = {"no", "n", "nope", "不", "不要", "否"}

_WHITESPACE = re.compile(r"\s+")


# Scripts written without spaces between words, for a regex character class:
# kana, CJK Extension A, CJK Unified Ideographs, CJK Compatibility Ideographs
# and Hangul syllables. (The Yijing hexagrams between Extension A and the
# unified block are symbols, not writing.)
CJK_RANGES = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"


def clean_text(text: str) -> str:
    """One tidy line: escape sequences and control and format characters removed,
    whitespace collapsed. A whole sequence goes (``ESC ] 0 ; title BEL``), not just
    its ESC byte, so no "]0;title" residue is stored from pasted or imported text."""
    if text.isprintable():  # no control, format or line-break character: one pass in C, not one per character
        return _WHITESPACE.sub(" ", text).strip()
    text = "".join(
        " " if ch in "\t\r\n\v\f\x85\u2028\u2029" else ch
        for ch in for_terminal(text)
        if ch in "\t\r\n\v\f\x85\u2028\u2029" or unicodedata.category(ch) not in ("Cc", "Cf", "Cs", "Co")
    )
    return _WHITESPACE.sub(" ", text).strip()


def clean_within(text: str, limit: int, *, empty: str, too_long: Callable[[int], str]) -> str:
    """``clean_text`` of ``text``, refused with a ``LimitError`` when nothing is left
    (``empty``) or when it is longer than ``limit`` (``too_long(length)``): the one
    check behind every stored value, each kind keeping its own wording."""
    from memora.core.errors import LimitError

    value = clean_text(text or "")
    if not value:
        raise LimitError(empty)
    if len(value) > limit:
        raise LimitError(too_long(len(value)))
    return value


_TRAILING = re.compile(r"[\s.!?,;:。！？，；：…]+$")


def normalized_key(text: str) -> str:
    """Key for exact-duplicate checks: case, width, spacing and final punctuation
    are ignored; every other character counts ("C++" and "C#" stay different)."""
    text = " ".join(unicodedata.normalize("NFKC", clean_text(text)).casefold().split())
    return _TRAILING.sub("", text) or text


def shorten(text: str, limit: int, *, for_display: bool = False) -> str:
    """``text`` as one clean line of at most ``limit`` characters, "…" marking a cut.

    ``for_display`` keeps format characters (the zero-width joiners inside an
    emoji family) that stored text drops; escape sequences go either way.
    """
    text = " ".join(for_terminal(text).split()) if for_display else clean_text(text)
    return text if len(text) <= limit else text[: max(0, limit - 1)].rstrip() + "…"


# What closes a sentence, in English and Chinese: a statement, an exclamation, a
# question or a trailing-off, full-width forms included.
SENTENCE_END = (".", "!", "?", "…", "。", "！", "？")


def quoted(text: str, limit: int, end: str = ".") -> str:
    """``“text”`` shortened to ``limit``, followed by ``end`` unless the quoted
    text already closes the sentence (no ``“I like tea.”.``)."""
    inner = shorten(text, limit)
    closes = end == "." and inner.endswith(SENTENCE_END)
    return f"\u201c{inner}\u201d{'' if closes else end}"


# -- terminal control sequences -----------------------------------------------------------
# Stored and model-written text is shown as the learner typed it. The REPL's
# cleaning already drops control characters from typed text, so nothing a
# learner typed is lost by removing them here: what remains to catch is text
# that came from elsewhere (an import, the model's reply, an old store). Such a
# sequence is removed whole rather than shown as "␛[2J": its bytes were never
# words, and a half-shown sequence is noise in a tutor's reply.
#
# Removed: ANSI/ECMA-48 escape sequences (CSI ``ESC [ ... final``, OSC, DCS,
# SOS, PM and APC strings up to BEL or ST, two-character ``ESC x``), the
# 8-bit C1 forms of the same, every other C0 and C1 control except newline and
# tab, DEL, and the bidirectional embedding/override/isolate controls, which
# reorder what the terminal shows after them (a table's later columns, the
# next line's label) and so can make a memory display as different text.
# Lone surrogates (possible in an imported JSON string) cannot be encoded for
# the terminal and become U+FFFD. U+2028/U+2029 become newlines.
_GROUND, _ESC, _ESC_INTERMEDIATE, _CSI, _STRING, _STRING_ESC = range(6)
_STRING_STARTERS = "]PX^_"  # after ESC: OSC, DCS, SOS, PM, APC
_C1_STRING_STARTERS = "\x9d\x90\x98\x9e\x9f"
_BIDI_CONTROLS = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029" + _BIDI_CONTROLS + "\ud800-\udfff]")


class TerminalFilter:
    """Strips terminal control from text on its way to the screen.

    ``feed`` keeps its state between calls, so a sequence split across two
    pieces of a streamed reply (``"\\x1b]0;ti"`` then ``"tle\\x07"``) is removed
    as a whole. A string sequence (OSC and the like) also ends at a newline:
    a stray ``ESC ]`` hides at most the rest of its line, never the whole reply.
    """

    def __init__(self) -> None:
        self._state = _GROUND

    def feed(self, text: str) -> str:
        if self._state == _GROUND and not _UNSAFE.search(text):
            return text
        out: list[str] = []
        for ch in text:
            self._step(ch, out)
        return "".join(out)

    def _step(self, ch: str, out: list[str]) -> None:
        code = ord(ch)
        state = self._state
        if state == _ESC:
            if ch == "[":
                self._state = _CSI
            elif ch in _STRING_STARTERS:
                self._state = _STRING
            elif 0x20 <= code <= 0x2F:
                self._state = _ESC_INTERMEDIATE
            else:
                self._state = _GROUND
                if not 0x30 <= code <= 0x7E:  # not a sequence after all: only the ESC goes
                    self._ground(ch, out)
        elif state == _ESC_INTERMEDIATE:
            if not 0x20 <= code <= 0x2F:
                self._state = _GROUND
                if not 0x30 <= code <= 0x7E:
                    self._ground(ch, out)
        elif state == _CSI:
            if not 0x20 <= code <= 0x3F:  # parameters and intermediates go on
                self._state = _GROUND
                if not 0x40 <= code <= 0x7E:  # a malformed sequence ends; the character is text
                    self._ground(ch, out)
        elif state == _STRING:
            if ch in "\x07\x9c\x18\x1a":  # BEL, ST, CAN and SUB end it
                self._state = _GROUND
            elif ch == "\x1b":
                self._state = _STRING_ESC
            elif ch == "\n":
                self._state = _GROUND
                out.append(ch)
        elif state == _STRING_ESC:
            if ch == "\\":  # ESC \\ is ST, the end of the string
                self._state = _GROUND
            else:  # any other ESC aborts the string and begins a sequence of its own
                self._state = _ESC
                self._step(ch, out)
        else:
            self._ground(ch, out)

    def _ground(self, ch: str, out: list[str]) -> None:
        if ch == "\x1b":
            self._state = _ESC
        elif ch == "\x9b":
            self._state = _CSI
        elif ch in _C1_STRING_STARTERS:
            self._state = _STRING
        elif ch in "\n\t":
            out.append(ch)
        elif ch in "\u2028\u2029":
            out.append("\n")
        elif "\ud800" <= ch <= "\udfff":
            out.append("\ufffd")
        elif not _UNSAFE.match(ch):
            out.append(ch)


def for_terminal(text: str) -> str:
    """``text`` with every control and escape sequence removed (see ``TerminalFilter``);
    an unfinished sequence at the end is dropped too."""
    return TerminalFilter().feed(str(text))


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """ "1 memory", "2 memories": the number with the noun in the form it takes."""
    return f"{count} {noun if count == 1 else plural or noun + 's'}"
