"""Token counting with tiktoken, and a documented fallback when it is unavailable.

The configured model's encoding is used; unknown model names fall back to
``o200k_base``. If no encoding file can be loaded (tiktoken downloads them on
first use, which fails offline without ``TIKTOKEN_CACHE_DIR``), Memora counts
with ``approximate_tokens`` and warns once. The approximation (see
``approximate_tokens``) deliberately over-counts, so that a budget computed
with it still holds for the real tokenizer.
"""

from __future__ import annotations

import logging
import math
import re
import threading
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import tiktoken

FALLBACK_ENCODING = "o200k_base"
# Per-message framing the chat formats add around each message's content, and
# the tokens that prime the reply (OpenAI's published counting recipe).
MESSAGE_OVERHEAD_TOKENS = 3
REPLY_PRIMING_TOKENS = 3


# Encodings whose files could not be loaded in this process, with the error. tiktoken
# keeps what it loaded; it does not keep what failed, so offline every new counter would
# try the download again (a DNS lookup or a timeout each). One failure per process is
# enough: the approximation takes over and the next start tries again.
_UNAVAILABLE: dict[str, Exception] = {}
_UNAVAILABLE_LOCK = threading.Lock()


def load_encoding(model: str) -> tiktoken.Encoding:
    """The tiktoken encoding for ``model`` (``o200k_base`` for unknown names); raises
    what loading raised, at once if it already failed in this process."""
    import tiktoken
    from tiktoken.model import encoding_name_for_model

    try:
        name = encoding_name_for_model(model)
    except KeyError:
        name = FALLBACK_ENCODING
    with _UNAVAILABLE_LOCK:
        failed = _UNAVAILABLE.get(name)
        if failed is not None:
            raise failed
        try:
            return tiktoken.get_encoding(name)
        except Exception as error:
            _UNAVAILABLE[name] = error
            raise


_PIECES = re.compile(r"[A-Za-z]+|[0-9]+|\S")


def approximate_tokens(text: str) -> int:
    """Estimate used when no tiktoken encoding can be loaded; it errs high.

    A run of Latin letters counts one token per three letters (real words
    average four or more), a run of digits one per three digits (the encoders
    group digits in threes), and every other visible character one token
    (punctuation, symbols, each CJK character). Spaces are free: encoders fold
    them into the following word.
    """
    total = 0
    for piece in _PIECES.findall(text):
        total += math.ceil(len(piece) / 3) if piece[0].isascii() and piece[0].isalnum() else 1
    return total


class TokenCounter:
    """Counts tokens for one model. Loading is lazy and never raises."""

    def __init__(self, model: str = "gpt-4o", *, warn: Callable[[str], None] | None = None, loader=None):
        self.model = model
        self._warn = warn
        self._loader = loader
        self._encoding: tiktoken.Encoding | None = None  # None: approximate counts
        self._approximate = False
        self._lock = threading.Lock()
        self._encoding_name: str | None = None

    @property
    def encoding_name(self) -> str:
        """The tiktoken encoding in use, or ``"approximate"``."""
        self._load()
        return self._encoding_name or "approximate"

    def _load(self):
        with self._lock:
            if self._encoding is not None or self._approximate:
                return
            try:
                if self._loader is not None:
                    self._encoding = self._loader(self.model)
                else:
                    self._encoding = load_encoding(self.model)
                self._encoding_name = getattr(self._encoding, "name", FALLBACK_ENCODING)
            except Exception:  # offline without cache files, corrupt cache...
                # The cause goes to the debug log: its class name ("ConnectionError") would read
                # as a failure to the learner, while Memora goes on working.
                logging.getLogger("memora").debug("no tiktoken encoding for %s", self.model, exc_info=True)
                self._approximate = True
                self._encoding_name = "approximate"
                if self._warn is not None:
                    self._warn(
                        "Token counts are approximate: tiktoken's encoding files could not be downloaded or read. "
                        "Set TIKTOKEN_CACHE_DIR to a folder with the encoding files."
                    )

    @property
    def approximate(self) -> bool:
        self._load()
        return self._approximate

    def count(self, text: str) -> int:
        if not text:
            return 0
        self._load()
        if self._encoding is None:
            return approximate_tokens(text)
        return len(self._encoding.encode(text, disallowed_special=()))

    def count_message(self, message: dict) -> int:
        return self.count(str(message.get("content", ""))) + MESSAGE_OVERHEAD_TOKENS

    def count_messages(self, messages: Iterable[dict]) -> int:
        return sum(self.count_message(m) for m in messages)

    def count_request(self, instructions: str, messages: Iterable[dict]) -> int:
        """Input tokens of a Responses request: instructions plus every message."""
        total = self.count_messages(messages) + REPLY_PRIMING_TOKENS
        if instructions:
            total += self.count(instructions) + MESSAGE_OVERHEAD_TOKENS
        return total

    def truncate(self, text: str, max_tokens: int) -> str:
        """The longest prefix of ``text`` within ``max_tokens`` (cut at a word where possible)."""
        if self.count(text) <= max_tokens:
            return text
        self._load()
        if self._encoding is None:
            low, high = 0, len(text)
            while low < high:
                mid = (low + high + 1) // 2
                if approximate_tokens(text[:mid]) <= max_tokens:
                    low = mid
                else:
                    high = mid - 1
            cut = text[:low]
        else:
            ids = self._encoding.encode(text, disallowed_special=())[: max(0, max_tokens)]
            cut = self._encoding.decode(ids)
            while cut and self.count(cut) > max_tokens:
                cut = cut[:-1]
        space = cut.rfind(" ")
        if space > len(cut) * 0.6:
            cut = cut[:space]
        return cut.rstrip()
