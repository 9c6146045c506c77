"""Lexical terms for the BM25 side of retrieval, in English and Chinese.

SQLite FTS5 does the indexing (see ``catalog.py``); this module decides what a
"term" is, because FTS5's own tokenizers can neither split Chinese (it has no
spaces) nor stem English. Measured on LoCoMo (README, "Retrieval"), each step
below earns its place:

* Latin-script words are lower-cased, a possessive ``'s`` is dropped, stop
  words are dropped, and the Porter (1980) stemmer folds ``exams``/``exam``
  and ``painting``/``paint`` (+3 points of recall@10 over no stemming);
* queries additionally drop question words (what, when, did...), which only
  ever match noise (+5 points);
* CJK runs become overlapping character bigrams (``咖啡店`` -> ``咖啡``,
  ``啡店``), the standard dictionary-free way to index Chinese; a lone CJK
  character stays a unigram.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

from memora.core.text_utils import CJK_RANGES

_TOKEN = re.compile(rf"[{CJK_RANGES}]+|[^\W_{CJK_RANGES}]+(?:'[^\W_{CJK_RANGES}]+)*", re.UNICODE)
_IS_CJK = re.compile(rf"[{CJK_RANGES}]")

STOP_WORDS = frozenset(
    """
    a about above after again against all also am an and any are aren't as at be because been before being
    below between both but by can can't cannot could couldn't d did didn't do does doesn't doing don't down
    during each few for from further had hadn't has hasn't have haven't having he he'd he'll he's her here
    here's hers herself him himself his how how's i i'd i'll i'm i've if in into is isn't it it's its itself
    just let's ll m me more most mustn't my myself no nor not of off on once only or other ought our ours
    ourselves out over own re s same shan't she she'd she'll she's should shouldn't so some such t than that
    that's the their theirs them themselves then there there's these they they'd they'll they're they've this
    those through to too under until up ve very was wasn't we we'd we'll we're we've were weren't what what's
    when when's where where's which while who who's whom why why's with won't would wouldn't you you'd you'll
    you're you've your yours yourself yourselves
    """.split()
)
# Removed from queries only: in a question they ask, in a memory they may inform.
QUESTION_WORDS = frozenset(
    """
    are can could did do does had has have how is should was were what when where which who whom whose why
    will would remember remind recall
    """.split()
)


# -- Porter stemmer (M. F. Porter, "An algorithm for suffix stripping", 1980) ----------


def _is_consonant(word: str, i: int) -> bool:
    ch = word[i]
    if ch in "aeiou":
        return False
    if ch == "y":
        return i == 0 or not _is_consonant(word, i - 1)
    return True


def _measure(stem: str) -> int:
    """m in [C](VC)^m[V]: the number of vowel-consonant sequences."""
    pattern = "".join("c" if _is_consonant(stem, i) else "v" for i in range(len(stem)))
    return len(re.findall(r"v+c+", pattern))


def _has_vowel(stem: str) -> bool:
    return any(not _is_consonant(stem, i) for i in range(len(stem)))


def _double_consonant(word: str) -> bool:
    return len(word) >= 2 and word[-1] == word[-2] and _is_consonant(word, len(word) - 1)


def _cvc(word: str) -> bool:
    """consonant-vowel-consonant ending, the last not w, x or y (hop, not hoop)."""
    if len(word) < 3:
        return False
    n = len(word) - 1
    return (
        _is_consonant(word, n)
        and not _is_consonant(word, n - 1)
        and _is_consonant(word, n - 2)
        and word[-1] not in "wxy"
    )


def _replace(word: str, suffix: str, replacement: str, min_measure: int) -> str | None:
    """Swap ``suffix`` for ``replacement`` if the stem's measure exceeds ``min_measure``;
    None when ``word`` does not end with ``suffix``."""
    if not word.endswith(suffix):
        return None
    stem = word[: len(word) - len(suffix)]
    return stem + replacement if _measure(stem) > min_measure else word


_STEP2 = (
    ("ational", "ate"),
    ("tional", "tion"),
    ("enci", "ence"),
    ("anci", "ance"),
    ("izer", "ize"),
    ("abli", "able"),
    ("alli", "al"),
    ("entli", "ent"),
    ("eli", "e"),
    ("ousli", "ous"),
    ("ization", "ize"),
    ("ation", "ate"),
    ("ator", "ate"),
    ("alism", "al"),
    ("iveness", "ive"),
    ("fulness", "ful"),
    ("ousness", "ous"),
    ("aliti", "al"),
    ("iviti", "ive"),
    ("biliti", "ble"),
)
_STEP3 = (("icate", "ic"), ("ative", ""), ("alize", "al"), ("iciti", "ic"), ("ical", "ic"), ("ful", ""), ("ness", ""))
_STEP4 = (
    "al",
    "ance",
    "ence",
    "er",
    "ic",
    "able",
    "ible",
    "ant",
    "ement",
    "ment",
    "ent",
    "ion",
    "ou",
    "ism",
    "ate",
    "iti",
    "ous",
    "ive",
    "ize",
)


def _step1a(word: str) -> str:
    """Plurals: -sses and -ies lose -es, a lone -s goes (but not -ss)."""
    if word.endswith("sses") or word.endswith("ies"):
        return word[:-2]
    if word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def _step1b(word: str) -> str:
    """-eed becomes -ee when m > 0; -ed and -ing go when the stem has a vowel,
    and the stem is then tidied (``_after_ed_ing``)."""
    if word.endswith("eed"):
        return word[:-1] if _measure(word[:-3]) > 0 else word
    for suffix in ("ed", "ing"):
        if word.endswith(suffix) and _has_vowel(word[: -len(suffix)]):
            return _after_ed_ing(word[: -len(suffix)])
    return word


def _after_ed_ing(stem: str) -> str:
    """Step 1b's clean-up: conflat(ed) -> conflate, hopp(ing) -> hop, fil(ing) -> file."""
    if stem.endswith(("at", "bl", "iz")):
        return stem + "e"
    if _double_consonant(stem) and stem[-1] not in "lsz":
        return stem[:-1]
    if _measure(stem) == 1 and _cvc(stem):
        return stem + "e"
    return stem


def _step1c(word: str) -> str:
    """y -> i when the stem has a vowel (happy -> happi, sky stays)."""
    if word.endswith("y") and _has_vowel(word[:-1]):
        return word[:-1] + "i"
    return word


def _first_suffix_swap(word: str, table: tuple[tuple[str, str], ...]) -> str:
    """Steps 2 and 3: the first suffix of ``table`` the word ends with is swapped
    for its replacement when m > 0; later rows are not tried."""
    for suffix, replacement in table:
        replaced = _replace(word, suffix, replacement, 0)
        if replaced is not None:
            return replaced
    return word


def _step4(word: str) -> str:
    """Drop the first ``_STEP4`` suffix the word ends with when m > 1 (-ion only
    after s or t)."""
    for suffix in _STEP4:
        if word.endswith(suffix):
            stem = word[: -len(suffix)]
            if _measure(stem) > 1 and (suffix != "ion" or stem.endswith(("s", "t"))):
                return stem
            return word
    return word


def _step5(word: str) -> str:
    """Final -e goes when m > 1 (or m == 1 and not cvc); -ll becomes -l when m > 1."""
    if word.endswith("e"):
        stem = word[:-1]
        if _measure(stem) > 1 or (_measure(stem) == 1 and not _cvc(stem)):
            word = stem
    if _measure(word) > 1 and _double_consonant(word) and word.endswith("l"):
        word = word[:-1]
    return word


@lru_cache(maxsize=50_000)
def porter_stem(word: str) -> str:
    if len(word) <= 2 or not word.isascii() or not word.isalpha():
        return word
    word = _step1c(_step1b(_step1a(word)))
    word = _first_suffix_swap(_first_suffix_swap(word, _STEP2), _STEP3)
    return _step5(_step4(word))


# -- terms ---------------------------------------------------------------------------------


def _terms(text: str, drop: frozenset[str]) -> list[str]:
    text = unicodedata.normalize("NFKC", text or "").lower().replace("\u2019", "'")
    out: list[str] = []
    for match in _TOKEN.finditer(text):
        token = match.group(0)
        if _IS_CJK.match(token):
            out.extend([token] if len(token) == 1 else [token[i : i + 2] for i in range(len(token) - 1)])
            continue
        if token.endswith("'s"):
            token = token[:-2]
        if not token or token in STOP_WORDS or token in drop:
            continue
        out.append(porter_stem(token.replace("'", "")))
    return out


def terms(text: str) -> list[str]:
    """Index terms of a stored memory."""
    return _terms(text, frozenset())


def query_terms(text: str) -> list[str]:
    """Terms of a query: as ``terms``, minus question words."""
    return _terms(text, QUESTION_WORDS)


# -- same meaning in words (the duplicate rule) ---------------------------------------
#
# Two facts may be merged without asking the model only when they say the same
# thing in words. Retrieval's stop words are far too many for that: "up"/"down",
# "before"/"after", "more"/"most", "not", "he"/"she", "was", "can" all decide
# what a fact means. So the comparison drops only words that never carry a fact
# (articles of definiteness, "that", "and", "also"), keeps every other word, and
# keeps the inflection that changes meaning (plural or third person -s, past
# -ed, -ing, comparative -er, superlative -est, -ly) beside the Porter stem, so
# "likes"/"liked" and "happy"/"happier" stay apart while "careful"/"care"-style
# derivations fold. Modals and the auxiliaries "have"/"had"/"did"/"will" are
# ordinary words here: tense and modality change a fact ("has lived" is not
# "lived", "could swim" is not "can swim").
SAME_MEANING_FILLER = frozenset("the that and also".split())
# The forms of "be" (and the present of the auxiliary "do") carry meaning by
# being there: "is bullied" (victim) is not "bullied" (bully), "has been a
# nurse" is not "has a nurse", "was" is not "is", 我是老師 ("I am a teacher") is
# not 我老師 ("my teacher"). But where a copula stands is free: "Sushi is the
# learner's favourite food" says what "The learner's favourite food is sushi"
# says. So these words are taken out of the ordered comparison and compared as
# a count of each form, with its tense: the same words in order, and the same
# be-forms, or no merge.
_COPULA_FORMS = {
    "am": "be",
    "is": "be",
    "are": "be",
    "be": "be",
    "was": "be+ed",
    "were": "be+ed",
    "been": "be+en",
    "being": "be+ing",
    "do": "do",
    "does": "do",
}
_CJK_COPULA = {"是": "是"}
# A minus sign before a number is part of the number: "-10 degrees" is not "10
# degrees". Any dash a learner may type for it counts (after NFKC, which folds
# the full-width and small forms to "-"); a dash between two words or digits
# ("2020-2021", "UTC-8") is not a sign; after a Chinese character it is
# (哈爾濱冬天是-20度). ``MINUS_SIGN`` is shared with the store's specifics.
MINUS_SIGNS = "-\u2212\u2012\u2013\u2010\ufe63\uff0d"
MINUS_SIGN = rf"(?<![^\W_{CJK_RANGES}])[{MINUS_SIGNS}](?=\d)"
_SIGNED_NUMBER = re.compile(MINUS_SIGN)
_MINUS = "minus"
# First person and "the learner" are the same person (``remember I ...`` beside
# an extracted "The learner ..."). A possessive stays a unit of its own: "the
# learner's brother is the teacher" is not "the learner is the brother's teacher".
_LEARNER = frozenset("i me myself learner".split())
_POSSESSIVE = "'s"
_IRREGULAR = {"has": "have+s", "had": "have+ed", "an": "a"}
_NEGATED_BASE = {"wo": "will", "ca": "can", "sha": "shall", "ai": "be"}
_CONTRACTED = {"'m": ("am",), "'re": ("are",), "'s": ("is",), "'ve": ("have",), "'ll": ("will",), "'d": ("would",)}
_INFLECTIONS = ("ing", "est", "ed", "er", "ly", "s")
# Characters that never carry a fact in Chinese: sentence-final interjections.
# 的 stays, as the possessive does in English: "我的哥哥是老師" is not
# "我是哥哥的老師"; 是 is a copula (above).
_CJK_FILLER = frozenset("啊呀啦")
_COPULA_MARK = "="


def _word_units(token: str) -> list[str]:
    """One Latin word as comparison units: contractions opened, filler dropped;
    a be-form comes back marked (``=be``) for ``same_meaning_units`` to set aside."""
    if token.endswith("n't") and len(token) > 3:
        base = token[:-3]
        return [*_word_units(_NEGATED_BASE.get(base, base)), "not"]
    if token == "cannot":
        return ["can", "not"]
    for ending, expansion in _CONTRACTED.items():
        if token.endswith(ending) and len(token) > len(ending):
            head = token[: -len(ending)]
            if ending == "'s" and head not in ("it", "he", "she", "there", "that", "what", "who"):
                return _word_units(head) + [_POSSESSIVE]
            return _word_units(head) + [u for word in expansion for u in _word_units(word)]
    token = token.replace("'", "")
    if token in _LEARNER:
        return ["learner"]
    if token in ("my", "mine"):
        return ["learner", _POSSESSIVE]
    if token in _COPULA_FORMS:
        return [_COPULA_MARK + _COPULA_FORMS[token]]
    if token in SAME_MEANING_FILLER or not token:
        return []
    if token in _IRREGULAR:
        return [_IRREGULAR[token]]
    stem = porter_stem(token)
    if stem == token or not token.isascii():
        return [token]
    suffix = next((e for e in _INFLECTIONS if token.endswith(e) and not token.endswith("ss")), "")
    return [stem + ("+" + suffix if suffix else "")]


def _all_units(text: str) -> list[str]:
    return list(_units_of(text))


@lru_cache(maxsize=16384)
def _units_of(text: str) -> tuple[str, ...]:
    """``_all_units``, kept per text: the conflict detector compares each memory with many."""
    text = unicodedata.normalize("NFKC", text or "").lower().replace("\u2019", "'")
    text = _SIGNED_NUMBER.sub(" \u2212", text)
    out: list[str] = []
    for match in _TOKEN.finditer(text):
        token = match.group(0)
        if match.start() and text[match.start() - 1] == "\u2212" and token[0].isdigit():
            out.append(_MINUS)
        if _IS_CJK.match(token):
            out.extend(
                _COPULA_MARK + _CJK_COPULA[ch] if ch in _CJK_COPULA else ch for ch in token if ch not in _CJK_FILLER
            )
        else:
            out.extend(_word_units(token))
    return tuple(out)


def same_meaning_units(text: str) -> list[str]:
    """The words of ``text`` that carry its meaning, in order (see above), without
    its be-forms (``copula_forms``).

    Latin words become (stem + kept inflection) units, a possessive its own
    unit, a minus sign before a number the unit "minus"; CJK text becomes
    single characters. Order is kept: "dogs, not cats" is not "cats, not dogs".
    """
    return [u for u in _all_units(text) if not u.startswith(_COPULA_MARK)]


def copula_forms(text: str) -> list[str]:
    """The be-forms (and 是, and the present of "do") of ``text``, sorted, with tense."""
    return sorted(u[len(_COPULA_MARK) :] for u in _all_units(text) if u.startswith(_COPULA_MARK))


def say_the_same(a: str, b: str) -> bool:
    """True when two texts hold the same meaning-bearing words in the same order,
    read as a circle, and the same be-forms: a block moved from the front to the
    end is a reordering that keeps the meaning ("Sushi is the learner's
    favourite food" / "The learner's favourite food is sushi", "Every morning I
    drink tea" / "I drink tea every morning"), while swapping roles is not ("the
    learner's sister is older than the learner" / "the learner is older than the
    learner's sister", "我愛他" / "他愛我"), and neither is adding or changing a
    be-form ("is bullied" / "bullied", "has been" / "has", 我是老師 / 我老師)."""
    left, right = same_meaning_units(a), same_meaning_units(b)
    if not left or len(left) != len(right) or copula_forms(a) != copula_forms(b):
        return False
    return any(right[i:] + right[:i] == left for i in range(len(right)))


def fts_query(words: list[str]) -> str:
    """An FTS5 MATCH expression: any of the terms (each quoted)."""
    unique = list(dict.fromkeys(t for t in words if t))
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in unique)
