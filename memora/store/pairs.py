"""Judgments about two facts, from their words: duplicate (``is_near_duplicate``),
related (``same_subject``), the same slot (``slots_of``) and, the most of it, conflicting:
"The learner loves coffee." and "The learner quit coffee." can both be current
when they were said in different sessions and the decision never saw them
together. The memory page flags such pairs so the learner can keep one (the
other is retracted, with history) or keep both (that pair is never flagged
again). Everything here is local: words, no model call and no vectors, so the
page and ``status`` can run it over thousands of memories.

Two memories are compared when the decision's candidate rule would show one
to the other (``candidates.related_memories``): the same category (not the
catch-all "other"), the same slot (a job, a home: ``SLOTS`` below), or one of them
without a category of its own (a ``remember``). They are then flagged when
they do not say the same thing (``lexical.say_the_same``) and, over the words
that carry meaning (``lexical.same_meaning_units``, synonyms folded):

* one negates what the other says ("drinks coffee" / "does not drink coffee",
  "quit coffee"), the rest mostly shared;
* an antonym pair stands between them ("easy" / "hard", "loves" / "hates");
* they hold different numbers ("2 cats" / "3 cats", "-10" / "10");
* the same words in another order ("from Taipei to Tokyo" / "from Tokyo to
  Taipei", 我愛他 / 他愛我);
* one or two words replaced in an otherwise shared sentence ("lives in
  Taipei" / "lives in Tainan", "was a nurse" / "is a nurse");
* or both fill the same one-value slot with different words ("works at
  Google" / "got a job at a bakery").

Added detail ("has a cat" / "has a black cat") is never a conflict: nothing
is replaced. A false flag costs the learner one key (keep both); a missed one
leaves a stale fact current, so the rules lean towards flagging, and
``tests/test_conflicts.py`` holds the table of what is flagged and what is not.
"""

from __future__ import annotations

import json
import os
import re
import unicodedata
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence, Set
from dataclasses import dataclass
from difflib import SequenceMatcher
from functools import cache, lru_cache
from pathlib import Path

from memora.core.records import MemoryRecord
from memora.core.storage import atomic_write_json
from memora.store.lexical import (
    _IS_CJK,
    _TOKEN,
    MINUS_SIGN,
    MINUS_SIGNS,
    copula_forms,
    porter_stem,
    query_terms,
    same_meaning_units,
    say_the_same,
    terms,
)

# The duplicate rule (``is_near_duplicate``). A false "duplicate" loses a fact
# forever and keeps a stale one current ("finds grammar easy" merged into by
# "finds grammar hard", 0.050 apart with MiniLM; left-/right-handed 0.018), and
# no embedding distance separates antonyms. So a new fact is merged without
# asking only when it says the same thing *in words*: ``lexical.say_the_same``
# (same meaning-bearing words and inflections after case, punctuation,
# stemming and filler words, in the same order up to moving a block from the
# front to the end). Everything else near an existing memory goes to the
# decision call, which may still answer NOOP. The distance below is an extra
# condition per embedding model, so that a wording the lexical rule accepts but
# the model reads differently is still asked about:
# - local MiniLM: the paraphrases in tests/fixtures/dedup_pairs.json that the
#   word test accepts are at most 0.051 apart (reorderings 0.016-0.051), while
#   "I ..." beside "The learner ..." is 0.2-0.5 apart and is asked about.
#   0.10 admits the former with margin; the word test, not the distance, keeps
#   contradictions apart.
# - OpenAI text-embedding-3-small could not be calibrated here (no API
#   access); 0.08 is deliberately tighter.
# - the hash test embedding (a bag of words): reorderings are 0 apart.
# On top of both, ``_differs_in_specifics`` refuses to merge texts whose
# numbers, weekdays, months, times of day, negations or symbols (C++ / C#)
# differ, which the word comparison alone would miss for symbols.
DUPLICATE_DISTANCE = {
    "local:all-MiniLM-L6-v2": 0.10,
    "openai:text-embedding-3-small": 0.08,
    "hash:v1-384": 0.10,
}
DEFAULT_DUPLICATE_DISTANCE = 0.08

_SPECIFIC = re.compile(
    MINUS_SIGN + "|"  # a minus sign: -10 degrees is not 10 degrees
    r"\d+|\b(?:mon|tues|wednes|thurs|fri|satur|sun)day\b|\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\b"
    r"|\b(?:not|never|no|cannot|don't|doesn't|didn't|won't|can't|isn't|aren't|quit|stopped|anymore)\b"
    r"|\b(?:morning|afternoon|evening|night|tonight|today|tomorrow|yesterday|weekend|weekday)s?\b"
    r"|[一二三四五六七八九十百千萬万兩两]|不|沒|没|別|别|週[一二三四五六日天]|星期"
    r"|[^\w\s.,!?;:'\"()\-。，！？；：、]",  # symbols carry meaning: C++ / C#, 50% / $50
    re.IGNORECASE,
)


def _specifics(text: str) -> list[str]:
    # NFKC first, as the word comparison does: a full-width "２０" is "20".
    return sorted(_specific_key(m) for m in _SPECIFIC.findall(unicodedata.normalize("NFKC", text)))


def _specific_key(match: str) -> str:
    # "doesn't" and "does not" negate alike, and "-10" typed with U+2212 is "-10";
    # which negation or which number it is still counts.
    if match.lower().endswith(("n't", "cannot")):
        return "not"
    return "-" if match in MINUS_SIGNS else match.lower()


def _differs_in_specifics(a: str, b: str) -> bool:
    return _specifics(a) != _specifics(b)


def is_near_duplicate(embedder_name: str, new: str, old: str, distance: float) -> bool:
    """The dedup rule: the same thing in words, the same specifics, and close in the model's space.

    The word test decides; it reads Chinese as well as English, so no model
    needs to understand Chinese for a Chinese repeat to be merged.
    """
    threshold = DUPLICATE_DISTANCE.get(embedder_name, DEFAULT_DUPLICATE_DISTANCE)
    return distance <= threshold and say_the_same(new, old) and not _differs_in_specifics(new, old)


# Numbers in words, read as digits: "twenty-nine" is 29 (an age, a count).
_UNITS = "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen".split()
_UNITS += "seventeen eighteen nineteen".split()
_TENS = "twenty thirty forty fifty sixty seventy eighty ninety".split()
_TENS_WORDS = rf"(?:{'|'.join(_TENS)})(?:-(?:{'|'.join(_UNITS[:9])}))?"
_NUM = rf"\d+|{_TENS_WORDS}|{'|'.join(_UNITS)}"
# Jobs, the job slot's cues and a job claim's values ("is a nurse now"): nouns only.
_JOBS = (
    r"nurse|doctor|teacher|engineer|developer|programmer|designer|accountant|lawyer|manager|chef|waiter|waitress"
    r"|cashier|clerk|pharmacist|dentist|architect|scientist|researcher|consultant|driver|pilot|farmer|mechanic"
    r"|electrician|plumber|journalist|secretary|receptionist|tutor|professor|lecturer|officer|soldier|barista|baker"
    r"|dancer|artist|writer|photographer|musician|singer|actor|actress|translator|interpreter|firefighter|policeman"
    r"|salesman|saleswoman|salesperson"
)
# Slots: what about a learner holds one value at a time (a job, a home, a name, a level,
# an exam's date, a target, an age, a partner, an origin). Two facts of one slot may replace
# each other however far apart their words are ("works at Google" / "got a new job at a
# bakery"), so a fact's slot makes it a candidate for every fact of that slot (extraction)
# and for the page. The cues err towards matching: a false match costs one decision, a miss
# leaves a stale fact current. tests/test_slots.py holds what each must and must not match.
SLOTS: dict[str, re.Pattern] = {
    "name": re.compile(
        r"\bname\b|\bnamed\b|\bcalled\b|\bgoes by\b|名字|叫",
        re.IGNORECASE,
    ),
    "job": re.compile(
        r"\bjobs?\b|\bworks?\b(?! out| on (?:her|his|their|my) )|\bworked\b|\bworking (?:at|as|for|in)\b|"
        r"\bemploy|\bhired\b|\bcareer\b|\bprofession|\boccupation\b|\bretired\b|\bunemployed\b|"
        r"\bquit (?:her|his|their|the|my) (?:job|work)\b|\bcolleagues?\b|\bboss\b|\bcompany\b|\boffice\b|"
        r"\bpromot(?:ed|ion)\b|\bresign|\blaid off\b|\bfired\b|\bintern(?:ship)?\b|\bfreelanc|"
        r"\bself-employed\b|\bteach(?:es|ing)?\b(?! (?:me|him|her|them|us|myself|herself|himself)\b)|"
        rf"\b(?:{_JOBS})s?\b|"
        r"工作|上班|職業|公司|上司|老闆|辭職|升職|護士|老師|醫生|工程師|當.{1,4}師",
        re.IGNORECASE,
    ),
    "home": re.compile(
        r"\blives?\b|\bliving in\b|\bmoved\b|\bmoving (?:to|into|from)\b|\brelocat|\bhome(?:town)?\b|"
        r"\bapartment\b|\bflat\b|\bresides?\b|\brent(?:s|ed|ing)?\b|\bstudio\b|\bhouse\b|"
        r"\bdorm(?:itory)?\b|\b(?:flat|room|house)mates?\b|\blandlord\b|\bneighbou?rhood\b|住|租|搬",
        re.IGNORECASE,
    ),
    "studies": re.compile(
        r"\bstud(?:y|ies|ied|ying)\b(?! english)|\bstudent\b|\buniversity\b|\bcollege\b|"
        r"\bmajor(?:s|ed|ing)?\b|\bdegree\b|\bgraduat|\bschool\b|大學|主修|畢業",
        re.IGNORECASE,
    ),
    "level": re.compile(
        r"\b[ABC][12]\b|\bCEFR\b|\blevel\b|\bintermediate\b|\bbeginner\b|\badvanced\b",
        re.IGNORECASE,
    ),
    "exam": re.compile(
        r"\bexams?\b|\btests?\b|\bIELTS\b|\bTOEIC\b|\bTOEFL\b|\bGEPT\b|\bCambridge\b|考試|考|測驗",
        re.IGNORECASE,
    ),
    "target": re.compile(
        r"\btarget\b|\baim(?:s|ed|ing)? (?:for|at)\b|\bband\s*\d|\bband score\b|\bscore\b|"
        r"\bneeds? (?:a|an) \d|目標|分數",
        re.IGNORECASE,
    ),
    "age": re.compile(
        r"\b\d{1,3}\s*(?:years?|yrs?)[ -]old\b|\bturn(?:s|ed|ing)? \d{1,3}\b|\bage\b|\baged\b|"
        r"\bbirthday\b|\bborn\b|歲|岁|生日|出生",
        re.IGNORECASE,
    ),
    "partner": re.compile(
        r"\bsingle\b|\bmarri(?:ed|age)\b|\bdivorced?\b|\bengaged\b|\bwidow(?:ed|er)?\b|\bwife\b|"
        r"\bhusband\b|\bspouse\b|\b(?:girl|boy)friend\b|\bfianc[eé]e?\b|\bpartner\b|\bdating\b|"
        r"\bbroke up\b|單身|单身|結婚|结婚|離婚|离婚|男朋友|女朋友|老公|老婆|太太|丈夫|妻子",
        re.IGNORECASE,
    ),
    "origin": re.compile(
        r"\bnative\b|\bmother tongue\b|\bfirst language\b|\bnationality\b|\bcitizen|\bpassport\b|"
        r"\b(?:is|are|comes?|came) from\b|\bgrew up\b|"
        r"\bis (?:[a-z]+(?:ese|ian|ish)|american|korean|mexican|thai|filipin[ao]|dutch|french|greek|swiss)\b|"
        r"\bis german\b|母語|母语|國籍|国籍|來自|来自",
        re.IGNORECASE,
    ),
}


@lru_cache(maxsize=65536)
def slots_of(text: str) -> frozenset[str]:
    """The slots a fact fills: usually none, sometimes two ("moved to Osaka for a new job")."""
    return frozenset(name for name, cues in SLOTS.items() if cues.search(text))


# Words every extracted fact shares ("The learner ..."): they relate nothing and find nothing.
SUBJECT_TERMS = frozenset(terms("learner"))


def same_subject(a: str, b: str) -> bool:
    """Whether two facts may speak of one thing, however far apart their meaning: the
    same slot (a job, a home) or a word in common besides "the learner"."""
    return bool(slots_of(a) & slots_of(b) or set(query_terms(a)) & set(query_terms(b)) - SUBJECT_TERMS)


# Units that say "not": contractions come out of ``same_meaning_units`` as "not";
# "quit"/"stopped"/"gave up" end what the other fact says ("drinks coffee" / "quit coffee").
NEGATIONS = frozenset(
    "not never no none nobody nothing neither nor without quit longer 不 沒 没 別 别 無 无 未 戒".split()
)
# Verbs that end what follows them: "quit coffee" negates "drinks coffee every day"
# when the thing quit is in the other fact, however little else is shared.
ENDINGS = frozenset("quit longer 戒".split())
# Pairs of words that say opposite things (compared on the stem units, both
# directions). Comparatives keep their -er ("older"/"younger"), the stemmer folds the rest.
_ANTONYM_WORDS = """
easy hard | easy difficult | simple difficult | good bad | good poor | better worse | best worst
like dislike | love hate | enjoy hate | fan scared | fan afraid | love afraid
left right | up down | upstairs downstairs | north south | east west | on off | in out | into out
older younger | old young | big small | large small | long short | tall short | high low
fast slow | faster slower | early late | before after | more less | most least | many few | all some
always never | always rarely | often seldom | often rarely | usually sometimes | daily weekly | day week
week month | year month | morning evening | morning night | day night | child adult
married single | introvert extrovert | beginner advanced | confident nervous | stressful relaxing
pass fail | passed failed | win lose | won lost | open closed | true false | rich poor | cheap expensive
hot cold | warm cold | happy sad | happy unhappy | near far | closer farther | closer further
start stop | started stopped | buy sell | bought sold | arrive leave | full empty | allowed forbidden
大 小 | 高 低 | 好 差 | 好 壞 | 簡單 難 | 容易 難 | 喜歡 討厭 | 喜欢 讨厌 | 愛 恨 | 上升 下降 | 左 右
哥哥 弟弟 | 姐姐 妹妹 | 早上 晚上 | 常常 很少 | 已婚 單身 | 多 少 | 去年 明年 | 上 下
"""
# Words that say the same thing: folded before comparing, so a synonym is no conflict.
_SYNONYM_WORDS = """
enjoy like | fond like | keen like | difficult hard | tough hard | tricky hard | simple easy
daily everyday | prepare study | revise study | learn study | big large | huge large | small little
tiny little | begin start | commence start | end finish | complete finish | buy purchase | film movie
films movies | cinema movies | mum mother | mom mother | dad father | kid child | kids children
job work | employer company | firm company | town city | flat apartment | home house | glad happy
困難 難 | 喜爱 喜歡 | 喜愛 喜歡
"""
# Phrases that say what a shorter one says, folded before the words are read.
_PHRASES = [
    (re.compile(p, re.IGNORECASE), r)
    for p, r in (
        (r"\bevery single day\b|\bevery day\b|\beach day\b", "daily"),
        (r"\bevery week\b|\beach week\b", "weekly"),
        (r"\b(?:is|am|are) based in\b", "lives in"),
        (r"\bworks? as (an?)\b", r"is \1"),
        (r"\bworked as (an?)\b", r"was \1"),
        (r"\b(\w+) (?:is|am) called\b", r"\1's name is"),
        (r"\bgets? better at\b", "improve"),
        (r"\b(?:gave|give|gives|given|giving) up\b|\bstopped\b", "quit"),
        (
            rf"\b{_TENS_WORDS}\b",
            lambda m: _number(m.group(0)),
        ),
        (r"我叫", "我的名字是"),
        (r"非常", "很"),
    )
]
# Words that make a fact stronger, not different: "really loves jazz" still loves jazz.
_INTENSIFIERS = frozenset("really very truly quite so now currently 很 真".split())
# Units that carry no fact of their own when they are all that differs ("a" cat / "the" cat).
_LIGHT = frozenset({"a", "learner", "'s", "their", "his", "her", "very", "really", "just", "also", "的", "很", "都"})
_NUMBER_WORDS = {
    **{word: str(n) for n, word in enumerate(["zero", *_UNITS[:12]])},
    **{word: str(n) for n, word in enumerate("零一二三四五六七八九十", start=0)},
    **{"a": None, "twice": "2x", "once": "1x", "兩": "2", "两": "2"},
}
# A sign before a number, unless it joins two numbers ("2020-2021"): "-10" is not "10",
# "UTC-8" is not "UTC+8".
_SIGN = re.compile(r"(^|[^\d])([-+\u2212\u2012\u2013\u2010\ufe63\uff0d])(?=\d)")
_NAME = re.compile(r"\b\w[\w'\-]*")  # the words; those capitalised after the first are names
# Facts that hold one value at a time whatever their slot: a preference, a favourite, an origin.
ONE_VALUE = frozenset("prefer favourit best main onli usual born name".split())
_TIME_WORDS = frozenset(
    _unit
    for _word in (
        "monday tuesday wednesday thursday friday saturday sunday january february march april may june july "
        "august september october november december morning afternoon evening night weekend weekday noon "
        "daily weekly monthly yearly hourly today tonight tomorrow yesterday next last "
        "天 週 周 月 年 早 晚 日 一 二 三 四 五 六"
    ).split()
    for _unit in (_word, _word + "s")
)
# What ``replace`` may change and still be a conflict: a word or two for a word or two.
# "improve" for "get better at" is three words, a rewording, not a replaced value.
MAX_REPLACED = 2
# How much of the two facts must be shared (difflib's ratio over their units) for
# a replaced word, a negation or a number to mean they speak of the same thing:
# "likes jazz" / "likes football" share half (two likes, no conflict), "drinks
# coffee every day" / "drinks tea every day" three quarters (one habit, changed).
SHARED_FOR_REPLACE = 0.6
SHARED_FOR_SIGNAL = 0.5


def _pairs(table: str) -> list[tuple[str, str]]:
    return [(w[0], w[1]) for p in table.replace("\n", "|").split("|") if len(w := p.split()) == 2]


@cache
def _unit_of(word: str) -> str:
    units = same_meaning_units(word)
    return units[0] if len(units) == 1 else word


def _folded(pairs: list[tuple[str, str]]) -> dict[str, str]:
    out: dict[str, str] = {}
    for a, b in pairs:
        out[_unit_of(a)] = _unit_of(b)
        out[a] = b
    return out


_SYNONYMS = _folded(_pairs(_SYNONYM_WORDS))
_ANTONYMS: dict[str, set[str]] = defaultdict(set)
for _a, _b in _pairs(_ANTONYM_WORDS):
    for _x, _y in ((_a, _b), (_b, _a)):
        _ANTONYMS[_x].add(_y)
        _ANTONYMS[_unit_of(_x).partition("+")[0]].add(_unit_of(_y).partition("+")[0])
_CJK_ANTONYMS = [(a, b) for a, b in _pairs(_ANTONYM_WORDS) if _IS_CJK.match(a)]


@dataclass(frozen=True)
class Words:
    """A fact's words as the detector compares them: shown form and comparison unit."""

    shown: tuple[str, ...]
    units: tuple[str, ...]
    text: str
    names: frozenset[str] = frozenset()  # words capitalised after the first: "Taipei", "Ming", "British"

    @property
    def numbers(self) -> tuple[str, ...]:
        return _numbers_in(self.units)


@lru_cache(maxsize=65536)
def _numbers_in(units: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(u for u in units if u in ("minus", "plus") or any(c.isdigit() for c in u))


@lru_cache(maxsize=65536)
def words_of(text: str) -> Words:
    """Each token of ``text`` with its unit: a Latin word's stem unit (synonyms
    folded, a be-form as ``=be``), a CJK character as itself, a number as digits."""
    normal = unicodedata.normalize("NFKC", text or "").lower().replace("\u2019", "'")
    for pattern, replacement in _PHRASES:
        normal = pattern.sub(replacement, normal)
    normal = _SIGN.sub(lambda m: m.group(1) + " " + ("minus" if m.group(2) != "+" else "plus") + " ", normal)
    shown: list[str] = []
    units: list[str] = []
    for match in _TOKEN.finditer(normal):
        token = match.group(0)
        pieces = list(token) if _IS_CJK.match(token) else [token]
        for piece in pieces:
            found = (
                [piece]
                if piece in ("minus", "plus")
                else same_meaning_units(piece) + ["=" + c for c in copula_forms(piece)]
            )
            for unit in [] if piece in _INTENSIFIERS else found:
                stem, plus, ending = unit.partition("+")
                if plus and ending == "s" and _after_subject(units):
                    unit = stem  # "I like" says what "the learner likes" says
                stem, plus, ending = unit.partition("+")
                unit = _SYNONYMS.get(unit) or (_SYNONYMS[stem] + plus + ending if stem in _SYNONYMS else unit)
                if number := _NUMBER_WORDS.get(piece):  # the word as typed: the stemmer makes "one" "on"
                    unit = number
                shown.append(piece)
                units.append(unit)
    # CJK words of two characters in the tables ("簡單", "喜歡") are matched on the text itself.
    found = _NAME.findall(unicodedata.normalize("NFKC", text or ""))
    names = frozenset(w.lower() for w in found[1:] if w[0].isupper() and w != "I")
    return Words(tuple(shown), tuple(units), normal, names)


_ADVERBS = frozenset("always never often usually sometimes rarely seldom still also already just".split())


def _after_subject(units: Sequence[str]) -> bool:
    """Whether the next unit is the learner's verb ("the learner (still, no longer) smokes")."""
    for unit in reversed(units):
        if unit not in NEGATIONS and unit not in _ADVERBS:
            return unit == "learner"
    return False


def _shared(a: Sequence[str], b: Sequence[str]) -> float:
    return SequenceMatcher(None, a, b, autojunk=False).ratio()


def _without(units: Sequence[str], drop: Set[str]) -> list[str]:
    return [u for u in units if u not in drop]


def _quote(parts: Sequence[str]) -> str:
    if not parts:
        return "nothing"
    joiner = "" if all(_IS_CJK.match(p) for p in parts) else " "
    return "\u201c" + joiner.join(dict.fromkeys(parts)) + "\u201d"


def conflict_reason(a: str, b: str) -> str | None:
    """Why facts ``a`` and ``b`` may contradict each other, in a few words, or None.

    Pure and local (see the module docstring for the rules); the caller decides
    whether the two are related enough to compare (``related``)."""
    wa, wb = words_of(a), words_of(b)
    ua, ub = wa.units, wb.units
    # A sign the duplicate rule reads as a dash ("UTC-8" / "UTC+8") is still a different number.
    numbers = _numbers(wa, wb)
    if numbers is None and (ua == ub or say_the_same(a, b)):
        return None  # the same words once synonyms and phrases are folded
    if _subject(a) != _subject(b):  # "the learner's wife is a nurse" says nothing of the learner's job
        return _reordered(ua, ub)  # but who does what to whom still counts
    return (
        _claims(a, b)
        or numbers
        or _negation(wa, wb)
        or _undone(a, b)
        or _undone(b, a)
        or _antonym(wa, wb)
        or _preference(a, b)
        or _reordered(ua, ub)
        or _replaced(wa, wb, bool(slots_of(a) & slots_of(b)))
        or _same_slot(a, b, ua, ub)
    )


# Whose fact it is: "The learner's wife", "My cat" are someone else; "My name", "my job" the learner.
_WHOSE = re.compile(r"^\W*(?:(?:the learner's|my|their|his|her)\s+(\w+)(?:\s+(\w+))?|我的?(.))", re.IGNORECASE)
_OTHERS = frozenset(
    "mother father mum mom dad parents sister brother son daughter husband wife partner cousin aunt uncle friend "
    "boss colleague kids kid children child baby boyfriend girlfriend roommate cat dog pet grandmother "
    "grandfather 媽 爸 姐 妹 哥 弟 兒 女 夫 妻".split()
)


@lru_cache(maxsize=65536)
def _subject(text: str) -> str:
    whose = _WHOSE.match(text)  # "my sister", "my little sister"
    return next((w.lower() for w in (whose.groups() if whose else ()) if w and w.lower() in _OTHERS), "learner")


# What the learner is, has done and can do, read as claims of one value each (issue 28's
# misses): a change of job, work or none, an age in words or digits, living alone or with
# someone, "never" then done, "cannot" then does, a preference turned round.
_CLAIMS = (  # (slot, pattern, its value, or None for the pattern's group)
    ("age", re.compile(rf"(?:\bis|\bam|'m|\bturned)\s+({_NUM})(?:\s+years?\s+old)?\W*$", re.I), None),
    (
        "job",
        re.compile(rf"\b(?:works? as|is|am|'m|became)\s+(?:now\s+)?an?\s+(?:[\w-]+\s+){{0,2}}?({_JOBS})\b", re.I),
        None,
    ),
    (
        "work",
        re.compile(
            r"\bunemployed|\bout of work|\bjobless|\blooking for (?:a )?(?:job|work)|n't have a job|not have a job",
            re.I,
        ),
        "no",
    ),
    (
        "work",
        re.compile(
            r"\b(?:works?|worked|working) (?:at|for|in|as)\b|\b(?:started|got|has|have) a (?:new )?job\b(?! interview)",
            re.I,
        ),
        "yes",
    ),
    (
        "work",
        re.compile(rf"\b(?:works? as|is|am|'m|became)\s+(?:now\s+)?an?\s+(?:[\w-]+\s+){{0,2}}?(?:{_JOBS})\b", re.I),
        "yes",
    ),
    (
        "household",
        re.compile(
            r"\b(?:lives?|living) (?:alone|by \w+sel(?:f|ves)|on \w+ own)\b|\bown (?:flat|apartment|place)", re.I
        ),
        "alone",
    ),
    (
        "household",
        re.compile(r"\b(?:lives?|living) with (?:\w+ )?(\w+)|\b(?:rents?|shares?) an? \w+ with (?:\w+ )?(\w+)", re.I),
        None,
    ),
    ("household", re.compile(r"\blives? in an? (dorm)", re.I), None),
)


@lru_cache(maxsize=65536)
def _claim(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for slot, pattern, value in _CLAIMS:
        if slot not in out and (m := pattern.search(text)):
            out[slot] = value or next(g for g in m.groups() if g).lower()
    if "age" in out:
        out["age"] = _number(out["age"])
    return out


def _number(word: str) -> str:
    if word.isdigit():
        return word
    tens, _, unit = word.partition("-")
    if tens in _TENS:
        return str(20 + 10 * _TENS.index(tens) + (_UNITS.index(unit) + 1 if unit else 0))
    return str(_UNITS.index(word) + 1)


def _claims(a: str, b: str) -> str | None:
    ca, cb = _claim(a), _claim(b)
    for slot in ("age", "job", "work", "household"):
        if slot in ca and slot in cb and ca[slot] != cb[slot]:
            return f"{_quote([ca[slot]])} vs {_quote([cb[slot]])}" if slot != "work" else "work vs no work"
    return None


_IRREGULAR = {
    "flew": "fly",
    "flown": "fly",
    "saw": "see",
    "seen": "see",
    "ate": "eat",
    "eaten": "eat",
    "went": "go",
    "gone": "go",
    "been": "go",
    "swam": "swim",
    "drove": "drive",
    "spoke": "speak",
    "spent": "go",
    "visited": "go",
    "travelled": "go",
    "traveled": "go",
    "tried": "try",
}
_NEVER = re.compile(
    r"\b(?:has|have|'ve) never (?:really |ever |actually )?(\w+)(?: (?:to |in )?(?:the |a )?(\w+))?", re.I
)
_CANNOT = re.compile(r"\b(?:cannot|can't|can not|(?:does|do)(?: not|n't)) (\w+)(?: (?:the |a )?(\w+))?", re.I)
_PAST = re.compile(r"\b(\w+ed|" + "|".join(_IRREGULAR) + r")\b", re.I)


def _lemma(word: str) -> str:
    word = word.lower()
    return _IRREGULAR.get(word) or porter_stem(word)


@lru_cache(maxsize=65536)
def _lemmas_of(text: str) -> frozenset[str]:
    return frozenset(_lemma(w) for w in re.findall(r"\w+", text))


def _undone(a: str, b: str) -> str | None:
    """ "has never been to Japan" / "went to Japan", "cannot swim" / "swims every morning"."""
    if _own_negations(words_of(b)):
        return None
    stems_b = _lemmas_of(b)
    if (m := _NEVER.search(a)) and (past := _PAST.findall(b)):
        verb, thing = _lemma(m.group(1)), (m.group(2) or "").lower()
        if (
            thing == "abroad"
            and re.search(r"\b(?:in|to) [A-Z]", b)
            or thing
            and _lemma(thing) in stems_b
            or (not thing and verb in {_lemma(p) for p in past})
        ):
            return f"{_quote(['never'])} vs {_quote([past[0]])}"
    if (m := _CANNOT.search(a)) and _lemma(m.group(1)) in stems_b:
        thing = m.group(2)
        if not thing or _lemma(thing) in stems_b or thing.lower() in ("to", "in", "at", "every"):
            return f"{_quote([m.group(0)])} vs {_quote([m.group(1)])}"
    return None


# A preference is the learner's own verb: "The learner prefers ...", "I am tired of ...".
_PREFERS = re.compile(
    r"^\W*(?:the learner|i)(?:'m| am| is| really| still| now)* (?:prefer|like|love|enjoy|want|hate|dislike|finds?|tired"
    r"|sick|can't stand)",
    re.I,
)
_DISLIKES = re.compile(r"\b(?:tired of|sick of|annoying|dislikes?|hates?|fewer|less|no more|can't stand)\b", re.I)
# Kinds of one thing a preference picks between: "long" / "short" answers, "more" / "fewer" drills.
_OPPOSITE_KINDS = {"long": "short", "short": "long detail", "more": "fewer less", "fewer": "more", "less": "more"}
_SAME_THING = {"explan": "answer", "repli": "answer", "respons": "answer"}


def _preference(a: str, b: str) -> str | None:
    """A preference turned round: "likes detailed corrections" / "wants fewer corrections",
    "prefers long explanations" / "wants short answers", "British" / "American English"."""
    sides = []
    for text in (a, b):
        if not _PREFERS.match(text):
            return None
        stems = [_SAME_THING.get(s, s) for s in (porter_stem(w.lower()) for w in re.findall(r"[\w']+", text))]
        sides.append(
            (
                bool(_DISLIKES.search(text)),
                stems,
                {porter_stem(w.lower()): n for n, w in re.findall(r"\b([A-Z][a-z]+) (\w+)", text)},
            )
        )
    (neg_a, stems_a, names_a), (neg_b, stems_b, names_b) = sides
    shared = set(stems_a) & set(stems_b) - set(
        porter_stem(w) for w in "the learner i a to be of with every time prefer like love enjoy want".split()
    )
    if not shared:
        return None
    if neg_a != neg_b:
        return "a preference turned round"
    if any(y in stems_b for x in stems_a for y in _OPPOSITE_KINDS.get(x, "").split()) or (
        any(names_b.get(head, name) != name for head, name in names_a.items())
    ):
        return "another preference"
    return None


def _reordered(ua: Sequence[str], ub: Sequence[str]) -> str | None:
    """The same words in another order (a be-form or 被 aside): who does what to whom."""
    if sorted(_without(ua, _FUNCTION)) == sorted(_without(ub, _FUNCTION)) and _without(ua, _FUNCTION):
        if _without(ua, _FUNCTION) != _without(ub, _FUNCTION):
            return "the same words in another order"
    return None


def _heavy(units: Sequence[str]) -> list[str]:
    return [u for u in units if u not in _LIGHT]


def _own_negations(words: Words) -> list[str]:
    """The negations of the learner's own verb, right after the subject ("the learner does
    not drink", "I never"), not of a verb they tell others ("tells Tim not to quit")."""
    start = words.units.index("learner") if "learner" in words.units else len(words.units)
    return [s for n, (s, u) in enumerate(zip(words.shown, words.units)) if u in NEGATIONS and n <= start + 2]


def _negation(wa: Words, wb: Words) -> str | None:
    """A negation on one side only, the rest shared: "drinks coffee" / "does not drink coffee"."""
    neg_a, neg_b = _own_negations(wa), _own_negations(wb)
    if sorted(neg_a) == sorted(neg_b):
        return None
    said = f"one says {_quote(neg_a or neg_b)}, the other does not"
    drop = NEGATIONS | {"=do", "=be", "have+s", "have"}
    if _shared(_heavy(_without(wa.units, drop)), _heavy(_without(wb.units, drop))) >= SHARED_FOR_SIGNAL:
        # the negated verb itself is in the other ("does not drink" / "drinks"), not a
        # negated paraphrase ("does not panic" / "is calm", "has not forgotten" / "remembers")
        negated, other = (wa, wb) if neg_a else (wb, wa)
        after = [
            u
            for u in negated.units[negated.units.index(next(u for u in negated.units if u in NEGATIONS)) :]
            if u not in NEGATIONS and u not in drop and u not in _LIGHT
        ]
        if not after or _stem(after[0]) in {_stem(u) for u in other.units} or after[0] in ENDINGS:
            return said
    if _shared(_heavy(wa.units), _heavy(wb.units)) < SHARED_FOR_SIGNAL - 0.25:
        return None  # "quit chess in the evenings" says nothing of "asked about chess in Tokyo"
    for words, other in ((wa, wb), (wb, wa)):  # "quit coffee" / "drinks coffee every day"
        for n, unit in enumerate(words.units):
            if unit in ENDINGS and unit not in other.units:
                following = [u for u in words.units[n + 1 :] if u not in _LIGHT and u not in NEGATIONS]
                if following and following[0] in other.units:
                    return said
    return None


def _stem(unit: str) -> str:
    return unit.partition("+")[0]


def _antonym(wa: Words, wb: Words) -> str | None:
    """An antonym pair between them, the rest shared: "easy" / "hard", 喜歡 / 討厭."""
    stems_b = {_stem(u): u for u in wb.units}
    stems_a = {_stem(u) for u in wa.units}
    for x in dict.fromkeys(wa.units):
        sx = _stem(x)
        if sx in stems_b:
            continue
        for sy in _ANTONYMS.get(sx, ()):
            y = stems_b.get(sy)
            if y is None or sy in stems_a:
                continue
            if _shared(_heavy(_without(wa.units, {x})), _heavy(_without(wb.units, {y}))) >= SHARED_FOR_SIGNAL:
                return f"{_quote([_shown(wa, x)])} vs {_quote([_shown(wb, y)])}"
    for x, y in _CJK_ANTONYMS:
        for left, right in ((wa, wb), (wb, wa)):
            if x in left.text and y in right.text and y not in left.text.replace(x, "") and x not in right.text:
                if _shared(left.text.replace(x, ""), right.text.replace(y, "")) >= SHARED_FOR_SIGNAL:
                    first, second = (x, y) if left is wa else (y, x)
                    return f"{_quote([first])} vs {_quote([second])}"
    return None


_MODALS = frozenset("can could will would may might must should shall".split())
_STOP = frozenset("for in on at to of with by from and".split())


def _numbers(wa: Words, wb: Words) -> str | None:
    """Different numbers: "2 cats" / "3 cats", "-10 degrees" / "10 degrees"."""
    if not (wa.numbers and wb.numbers) or wa.numbers == wb.numbers:
        return None
    drop = set(wa.numbers) | set(wb.numbers) | _FUNCTION | _STOP
    content_a, content_b = (_heavy([_stem(u) for u in _without(w.units, drop)]) for w in (wa, wb))
    if _shared(content_a, content_b) < SHARED_FOR_REPLACE:
        return None
    return (
        f"{_quote(_signed(wa)) if wa.numbers else 'no number'} vs {_quote(_signed(wb)) if wb.numbers else 'no number'}"
    )


def _same_word(x: str, y: str) -> bool:
    """One word in two forms: "cat+s" / "cat", "happier" / "happi" (the stemmer keeps -ier)."""
    x, y = _stem(x), _stem(y)
    if x == y:
        return True
    common = len(os.path.commonprefix([x, y]))
    return common >= max(4, min(len(x), len(y)) - 1)


def _value(words: Words, start: int, end: int) -> bool:
    """Whether a replaced block is a value: a name (capitalised in the middle of the
    fact), a number, a day, a month or a time of day."""
    return any(
        words.shown[i] in words.names
        or any(c.isdigit() for c in words.units[i])
        or (words.shown[i] in _TIME_WORDS and words.shown[i] not in _MODALS)
        for i in range(start, end)
    )


def _replaced(wa: Words, wb: Words, one_slot: bool = False) -> str | None:
    """A word or two (``MAX_REPLACED``) replaced in a shared sentence where a fact holds
    one value ("Taipei" / "Tainan"), quoted; not a word in another tense or number
    ("encourages" / "encouraged"), nor a be-form, auxiliary or modal on one side only."""
    opcodes = SequenceMatcher(None, wa.units, wb.units, autojunk=False).get_opcodes()
    if _shared(_heavy(wa.units), _heavy(wb.units)) < SHARED_FOR_REPLACE or not _changed_in_one_place(wa, wb, opcodes):
        return None
    for opcode in opcodes:
        op, i1, i2, j1, j2 = opcode
        left, right = set(wa.units[i1:i2]), set(wb.units[j1:j2])
        if op != "replace" or i2 - i1 > MAX_REPLACED or j2 - j1 > MAX_REPLACED or _possessive(left, right):
            continue
        restated = all(any(_same_word(x, y) for y in right) for x in left)  # said again
        if restated or left | right <= _FUNCTION or set(wa.shown[i1:i2] + wb.shown[j1:j2]) <= _MODALS:
            continue
        if _one_value(wa, wb, opcode, one_slot):
            return f"{_quote(wa.shown[i1:i2])} vs {_quote(wb.shown[j1:j2])}"
    return None


_Opcode = tuple[str, int, int, int, int]


def _possessive(left: set[str], right: set[str]) -> bool:
    """ "has an exam" / "the learner's exam" (and the "is" that comes with it)."""
    return (left <= _LIGHT and right <= _LIGHT | _POSSESSION) or (right <= _LIGHT and left <= _LIGHT | _POSSESSION)


def _changed_in_one_place(wa: Words, wb: Words, opcodes: Sequence[_Opcode]) -> bool:
    """One value replaced: facts that differ in two places ("fishing on weekends" /
    "guitar on holiday") are two facts, not one fact changed."""
    changes = [
        (op, i1, i2, j1, j2)
        for op, i1, i2, j1, j2 in opcodes
        if op != "equal" and not set(wa.units[i1:i2] + wb.units[j1:j2]) <= _LIGHT | _FUNCTION
    ]
    return len(changes) <= 1


def _one_value(wa: Words, wb: Words, opcode: _Opcode, one_slot: bool) -> bool:
    """Another value where a fact holds one ("lives in Taipei" / "Tainan", "exam in March" /
    "May", "prefers British" / "American"), not another of many ("enjoys tennis" / "chess")."""
    _, i1, i2, j1, j2 = opcode
    return (
        one_slot
        or _value(wa, i1, i2)
        or _value(wb, j1, j2)
        or bool(ONE_VALUE & {_stem(u) for u in wa.units} & {_stem(u) for u in wb.units})
    )


# The most words (besides "the learner", articles) of a fact that states a slot's value:
# "The learner works at Google." (3), "The learner got a new job at a bakery." (5).
SLOT_STATEMENT = 5


def _same_slot(a: str, b: str, ua: Sequence[str], ub: Sequence[str]) -> str | None:
    """Both fill one one-value slot, and something in one was replaced (not only added to)."""
    slots = slots_of(a) & slots_of(b)
    if "job" in slots and not ("work" in _claim(a) and "work" in _claim(b)):
        slots -= {"job"}  # "has a job interview" names the job slot but states no job
    if not slots or len(_heavy(ua)) > SLOT_STATEMENT or len(_heavy(ub)) > SLOT_STATEMENT:
        return None  # a long fact mentions the slot; a short one states its value
    # A value must differ (a name, a number, a day): "works at Google" / "got a job at a
    # bakery", not "works on a project" / "finds work stressful".
    wa, wb = words_of(a), words_of(b)
    opcodes = SequenceMatcher(None, ua, ub, autojunk=False).get_opcodes()
    if not any(op == "replace" and (_value(wa, i1, i2) or _value(wb, j1, j2)) for op, i1, i2, j1, j2 in opcodes):
        return None
    return f"both say your {sorted(slots)[0]}"


_POSSESSION = frozenset({"have+s", "have", "=be"})
# Words whose presence alone changes a fact: be-forms, auxiliaries, modals, 是/被/會.
_FUNCTION = frozenset(
    "=be =be+ed =be+en =be+ing =do =是 can could will would may might must should shall have+s have+ed have had "
    "did more less most least other 被 會 会 過 过 可 以 應 该 該 应".split()
)


def _shown(words: Words, unit: str) -> str:
    return next((s for s, u in zip(words.shown, words.units) if u == unit), unit)


def _signed(words: Words) -> list[str]:
    out: list[str] = []
    sign = ""
    for shown, unit in zip(words.shown, words.units):
        if unit in ("minus", "plus"):
            sign = "-" if unit == "minus" else "+"
        elif any(c.isdigit() for c in unit):
            out.append(sign + shown)
            sign = ""
    return out


def related(a: MemoryRecord, b: MemoryRecord) -> bool:
    """Whether the decision's candidate rule would show one of them to the other:
    the same category (not "other"), the same slot, or one without a category."""
    if a.category == b.category:
        return a.category != "other" or a.source == "command" or b.source == "command"
    if "other" in (a.category, b.category):
        return True  # a ``remember`` has no category of its own: a candidate for any fact
    return bool(_profile(a.content).slots & _profile(b.content).slots)


@dataclass(frozen=True)
class Conflict:
    """Two current memories that may contradict each other (``first`` is the older)."""

    first: MemoryRecord
    second: MemoryRecord
    reason: str

    @property
    def key(self) -> tuple[str, str]:
        return pair_key(self.first.id, self.second.id)


def pair_key(a: str, b: str) -> tuple[str, str]:
    return (a, b) if a <= b else (b, a)


# A bucket (memories sharing a word, in one category) larger than this is too
# common to find a pair by ("english", "like"): its pairs are found through their
# rarer words. A slot's bucket keeps its newest members, as the decision's does.
_COMMON = 200
# The most of two facts' words a comparison can find shared (twice the common
# words over both lengths bounds difflib's ratio): below the lowest threshold
# of any rule, the pair is not compared at all. Most pairs that share one word
# end here, which keeps 10,000 memories within a page's opening time.
_LOWEST_SHARE = SHARED_FOR_SIGNAL - 0.2
# Verdicts by pair of texts: a pair is read once per process, however often the
# page opens (the texts are the records' own strings, so the keys cost no copies).
_VERDICTS: dict[tuple[str, str], str | None] = {}
_MAX_VERDICTS = 500_000


@dataclass(frozen=True)
class _Profile:
    heavy: Counter
    keys: frozenset[str]
    slots: frozenset[str]
    ends: bool


@lru_cache(maxsize=65536)
def _profile(text: str) -> _Profile:
    units = words_of(text).units
    heavy = Counter(_stem(u) for u in units if u not in _LIGHT and u not in _FUNCTION)
    stems = set(heavy)
    # A pair shares a word's stem ("cat" / "cats") or stands on two sides of an antonym
    # ("married" / "single"): each is a key the other memory also has.
    keys = stems | {"ant:" + "|".join(sorted((u, v))) for u in stems for v in _ANTONYMS.get(u, ())}
    slots = slots_of(text) | {"claim:" + slot for slot in _claim(text)}
    keys |= {_lemma(w) for w in _NAME.findall(text) if w.lower() in _IRREGULAR}
    undone = _NEVER.search(text) or _CANNOT.search(text) or _PREFERS.match(text)
    return _Profile(heavy, frozenset(keys | {"slot:" + s for s in slots}), slots, bool(ENDINGS & set(units) or undone))


def _worth_comparing(a: _Profile, b: _Profile) -> bool:
    if a.ends or b.ends or any(k.startswith("ant:") for k in a.keys & b.keys):
        return True
    short = sum(a.heavy.values()) <= SLOT_STATEMENT and sum(b.heavy.values()) <= SLOT_STATEMENT
    if a.slots & b.slots and short:
        return True
    total = sum(a.heavy.values()) + sum(b.heavy.values())
    common = sum((a.heavy & b.heavy).values())
    return total > 0 and 2 * common / total >= _LOWEST_SHARE


def _verdict(a: MemoryRecord, b: MemoryRecord) -> str | None:
    key = (a.content, b.content)
    if key not in _VERDICTS:
        if len(_VERDICTS) >= _MAX_VERDICTS:
            _VERDICTS.clear()
        _VERDICTS[key] = conflict_reason(*key)
    return _VERDICTS[key]


def find_conflicts(
    records: Iterable[MemoryRecord], kept: Set[tuple[str, str]] = frozenset(), *, of: str | None = None
) -> list[Conflict]:
    """Every flagged pair among the current ``records``, newest pair first, leaving
    out the pairs in ``kept`` (the learner kept both); ``of``: only the pairs of that
    memory (a new one among its neighbours, whose own pairs were found when written).

    Pairs are found through a shared word, antonym or slot in a bucket per
    category (a memory without a category of its own is in every category's),
    never by comparing all pairs."""
    current = [r for r in records if r.is_current]
    profiles = [_profile(r.content) for r in current]
    buckets: dict[tuple[str, str], list[int]] = defaultdict(list)
    for index, (record, profile) in enumerate(zip(current, profiles)):
        # "other" is no shared subject: its memories meet others through a slot, or when
        # one of the two has no category of its own (a ``remember``).
        category = "*" if record.category == "other" and record.source == "command" else record.category
        for key in profile.keys:
            buckets[(category if not key.startswith("slot:") else "", key)].append(index)
    everywhere = {key: members for (category, key), members in buckets.items() if category == "*"}
    seen: set[tuple[int, int]] = set()
    found: list[Conflict] = []

    def compare(i: int, j: int) -> None:
        pair = (i, j) if i < j else (j, i)
        if i == j or pair in seen:
            return
        seen.add(pair)
        a, b = current[i], current[j]
        if (
            of not in (None, a.id, b.id)
            or pair_key(a.id, b.id) in kept
            or not related(a, b)
            or not _worth_comparing(profiles[i], profiles[j])
        ):
            return
        first, second = sorted((a, b), key=lambda r: r.created_at)
        reason = _verdict(first, second)  # read older first: "a vs b" says what was, then what is
        if reason:
            found.append(Conflict(first, second, reason))

    for (category, key), members in buckets.items():
        if len(members) > _COMMON:
            if not key.startswith("slot:"):
                continue
            members = members[:_COMMON]  # the newest (records come newest first)
        for n, i in enumerate(members):
            for j in members[n + 1 :]:
                compare(i, j)
        if category not in ("*", ""):
            for j in everywhere.get(key, [])[:_COMMON]:
                for i in members:
                    compare(i, j)
    found.sort(key=lambda c: c.second.created_at, reverse=True)
    return found


class KeptPairs:
    """The pairs the learner kept both of: never flagged again (a small JSON file,
    owner-only, written atomically; ids only, never a memory's text)."""

    def __init__(self, path: Path | None):
        self.path = path
        self._pairs: set[tuple[str, str]] | None = None if path is not None else set()

    def pairs(self) -> set[tuple[str, str]]:
        if self._pairs is None:
            try:
                data = json.loads(self.path.read_text(encoding="utf-8")) if self.path else {}
                self._pairs = {pair_key(str(a), str(b)) for a, b in data.get("kept_both", []) if isinstance(a, str)}
            except (OSError, ValueError, TypeError, AttributeError):
                self._pairs = set()
        return self._pairs

    def add(self, a: str, b: str) -> None:
        pairs = self.pairs() | {pair_key(a, b)}
        if self.path is not None:
            atomic_write_json(self.path, {"kept_both": sorted([list(p) for p in pairs])})
        self._pairs = pairs

    def forget_ids(self, ids: Iterable[str]) -> None:
        """Drop the pairs naming a deleted memory (its id says nothing once it is gone, but stays tidy)."""
        gone = set(ids)
        pairs = {p for p in self.pairs() if not gone.intersection(p)}
        if pairs != self.pairs() and self.path is not None:
            atomic_write_json(self.path, {"kept_both": sorted([list(p) for p in pairs])})
        self._pairs = pairs
