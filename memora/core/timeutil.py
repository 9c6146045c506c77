"""Time helpers: the clock, relative-time labels and resolving "next Tuesday".

Memora never calls ``datetime.now()`` directly outside this module: every
component takes a ``clock``, so a test can move time forward ("three days
later") and check follow-ups and relative labels without waiting or faking
stored timestamps.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

from memora.core.text_utils import counted

Clock = Callable[[], datetime]


def system_clock() -> datetime:
    """The current local time, timezone-aware."""
    return datetime.now().astimezone()


def to_aware(value: datetime) -> datetime:
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def parse_iso(value: str | None) -> datetime | None:
    if not value:
        return None
    try:
        return to_aware(datetime.fromisoformat(str(value)))
    except ValueError:
        return None


def parse_date(value: str | None) -> date | None:
    if not value:
        return None
    try:
        return date.fromisoformat(str(value)[:10])
    except ValueError:
        return None


def now_anchor(now: datetime) -> str:
    """``2026-11-29 14:05 (Sunday)``: the 'now' line of the background."""
    return f"{now.strftime('%Y-%m-%d %H:%M')} ({now.strftime('%A')})"


def time_ago(then: datetime, now: datetime) -> str:
    """A short relative label: 'just now', '5 hours ago', 'yesterday', '3 days ago'..."""
    then, now = to_aware(then), to_aware(now)
    seconds = (now - then).total_seconds()
    if seconds < 0:
        return "in the future"
    minutes = seconds / 60
    if minutes < 1:
        return "just now"
    if minutes < 60:
        return counted(int(minutes), "minute") + " ago"
    hours = minutes / 60
    if hours < 24:
        return counted(int(hours), "hour") + " ago"
    days = (now.astimezone().date() - then.astimezone(now.tzinfo).date()).days
    days = max(days, 1)
    if days == 1:
        return "yesterday"
    if days < 14:
        return counted(days, "day") + " ago"
    if days < 60:
        return counted(days // 7, "week") + " ago"
    if days < 730:
        return counted(days // 30, "month") + " ago"
    return counted(days // 365, "year") + " ago"


# -- one grammar for spoken dates ------------------------------------------------------
# The same phrases are read twice: when a fact is extracted (to give a plan its
# day) and every time a stored memory is shown to the model (to reword "next
# Tuesday" against the day it was said). Both go through ``_mentions`` below, so
# a phrase the one understands the other understands too, and they can never
# disagree about which day it names.

WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
_WEEKDAY_ABBR = {
    "mon": 0,
    "tue": 1,
    "tues": 1,
    "wed": 2,
    "weds": 2,
    "thu": 3,
    "thur": 3,
    "thurs": 3,
    "fri": 4,
    "sat": 5,
    "sun": 6,
}
_WORD_ABBR = ("sun", "sat", "wed")
_ZH_WEEKDAY = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6}
_NUMBER_WORDS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "a couple of": 2,
    "a few": 3,
    "several": 3,
}
_MONTH_NUMBERS = {
    name: i + 1
    for i, name in enumerate(
        [
            "january",
            "february",
            "march",
            "april",
            "may",
            "june",
            "july",
            "august",
            "september",
            "october",
            "november",
            "december",
        ]
    )
}
_ZH_DIGITS = {
    "零": 0,
    "一": 1,
    "二": 2,
    "兩": 2,
    "两": 2,
    "三": 3,
    "四": 4,
    "五": 5,
    "六": 6,
    "七": 7,
    "八": 8,
    "九": 9,
    "十": 10,
}
# A month and day said without a year that lies this many days or fewer in the
# past is the one just gone ("my test on Nov 20 went well"); further back, the
# speaker means next year's ("my exam is on Jan 5", said in December). In a
# sentence about the past it is always the one just gone.
_RECENT_PAST_DAYS = 30
# A plan further away than this is a slip or a joke ("in 100000000 days"): no date.
_PLAUSIBLE_YEARS = 100
_SEASONS = {"spring": 3, "summer": 6, "autumn": 9, "fall": 9, "winter": 12}  # first month, northern hemisphere
_ZH_SEASONS = {"春天": "spring", "夏天": "summer", "秋天": "autumn", "冬天": "winter"}

_NUM = r"(?:\d+|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|a couple of|a few|several)"
_UNIT = r"(?:day|week|wk|fortnight|month|year|yr)"
# Full names first so "Monday" is never read as "Mon"; an abbreviation's full
# stop is taken only mid-sentence ("next Mon. at 5"), never a sentence's own.
_WD = (
    r"(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday|mon|tues?|weds?|thu(?:rs?)?|fri|sat|sun)\b"
    r"(?:\.(?=\s+[a-z0-9]))?"
)
_MONTH = (
    r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
    r"|sept?(?:ember)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
)
_REL = r"(?:next|this coming|this past|the coming|the past|this|coming|last|past)"
_PART = r"(?:\s+(?P<{}>morning|afternoon|evening|night))?"
_ZH_N = r"(?:\d+|[零一兩两二三四五六七八九十]{1,3})"
_ZH_WEEK = r"(?:週|周|星期|禮拜|礼拜)"
_ZH_STEP = r"(?:下下個|下下个|下下|下個|下个|下|這個|这个|這|这|本|上上個|上上个|上上|上個|上个|上)"
_TOMORROW = r"(?:tomorrow|tmrw|tmr|tmw|tomorow|tommorow|tommorrow|2morrow|2moro)"

# A verb that moves a plan to another day points forward, whatever its tense:
# "the exam was moved to Friday" is the coming Friday, as "has been moved to
# Friday" is, and "moved to the 15th", "postponed until the weekend", "改到週五了"
# likewise. These rows are part of the grammar: a day right after one of them is
# never read as past, and in running text a bare weekday, "the weekend" or "the
# 15th" after one names a day, as "on Friday" does. Only right after it: in "moved
# to Osaka on Friday" and "was moved on Friday" the day is when the moving happened.
# Each row: the verb's forms, the particle it needs when the verb alone does not
# move a plan ("put off", "bring forward"; empty for one that does), the words
# before the day. A verb that moves a plan on its own may take any particle
# ("moved up to", "shifted back to", "changed over to") and say by how much
# ("postponed by a day to Friday").
_RESCHEDULE_ROWS = (
    (r"mov(?:e|es|ed|ing)", r"", r"to"),
    (r"chang(?:e|es|ed|ing)", r"", r"to"),
    (r"switch(?:es|ed|ing)?", r"", r"to"),
    (r"shift(?:s|ed|ing)?", r"", r"to"),
    (r"put(?:s|ting)?", r"off|back", r"to|till|until"),
    (r"postpon(?:e|es|ed|ing)", r"", r"to|till|until"),
    (r"defer(?:s|red|ring)?", r"", r"to|till|until"),
    (r"delay(?:s|ed|ing)?", r"", r"to|till|until"),
    (r"push(?:es|ed|ing)?", r"", r"to|till|until"),
    (r"bump(?:s|ed|ing)?", r"", r"to"),
    (r"reschedul(?:e|es|ed|ing)", r"", r"to|for|till|until"),
    (r"rebook(?:s|ed|ing)?", r"", r"to|for"),
    (r"rearrang(?:e|es|ed|ing)", r"", r"to|for"),
    (r"br(?:ing|ings|inging|ought)", r"forward", r"to"),
    (r"pull(?:s|ed|ing)?", r"forward", r"to"),
)
_ZH_RESCHEDULE = (
    r"改到|改成|改在|改為|改为|延到|延後到|延后到|延期到|延遲到|延迟到|推遲到|推迟到|推到|推後到|推后到"
    r"|挪到|換到|换到|調到|调到|提前到|順延到|顺延到"
)
# What may stand between the verb and the day: what is moved ("moved the exam to
# Friday"), a particle, by how much, and where from ("from Saturday to Sunday").
_MOVED_THING = r"(?:\s+(?:it|them|this|that|(?:the|my|our|his|her|their|your|a|an)(?:\s+[\w'\u2019-]+){1,2}))?"
_MOVED_FROM = r"(?:\s+from\s+[^.,;:!?\n]{1,30}?)?"
_ANY_PARTICLE = r"up|forward|back|over|out|off|ahead|along|around|round"
_MOVED_BY = r"(?:\s+by\s+(?:a|an|one|two|three|a\s+few|a\s+couple\s+of|\d+|half\s+a)(?:\s+[\w-]+)?)?"
_RESCHEDULED_BEFORE = re.compile(
    r"(?:\b(?:"
    + "|".join(
        verb
        + _MOVED_THING
        + (rf"\s+(?:{needed})" if needed else rf"(?:\s+(?:{_ANY_PARTICLE}))?")
        + _MOVED_THING
        + _MOVED_BY
        + _MOVED_FROM
        + rf"\s+(?:{before})"
        for verb, needed, before in _RESCHEDULE_ROWS
    )
    + r")\s+|(?:"
    + _ZH_RESCHEDULE
    + r")\s*)$",
    re.IGNORECASE,
)
# A bare weekday after such a verb names a day unless a word follows it that
# makes it part of a name ("switched to Monday classes").
_DAY_ENDS = re.compile(
    r"(?!\s+(?!(?:at|and|or|but|to|until|till|before|after|in|for|instead|because|so|then|this|next|from|when|with)\b)[a-z])"
)


def _rescheduled(text: str, start: int) -> bool:
    """Whether the time phrase at ``start`` comes right after a verb that moves a plan."""
    return bool(_RESCHEDULED_BEFORE.search(text[max(0, start - 120) : start]))


def _moved_to(sentence: str, phrase: str) -> bool:
    """Whether ``phrase`` stands in ``sentence`` right after a verb that moves a plan
    (the phrase may begin with the verb's own last word: "to Friday")."""
    found = re.search(re.escape(phrase.strip()), sentence, re.IGNORECASE)
    return found is not None and any(
        _rescheduled(sentence, found.start() + m.start()) for m in _GRAMMAR.finditer(phrase.strip())
    )


# Tense decides a bare day ("had a test on Friday" is the Friday gone, "has a
# test on Friday" the coming one). A clause reads as past when it has a past
# verb and nothing present or future beside it.
_CLAUSE_BREAK = re.compile(
    r"[.!?;\u3002\uff01\uff1f\uff1b\uff0c](?:\s|$)|\b(?:and|but|while|whereas)\b|[\uff0c\u4f46]", re.IGNORECASE
)
_PAST_VERB = re.compile(
    r"\b(?:was|were|had|did|went|came|got|took|made|met|saw|gave|left|began|wrote|ate|drank|flew|spoke|told|felt|"
    r"found|lost|won|thought|bought|brought|caught|taught|ran|swam|sang|forgot|sent|spent|paid|sat|wore|rode|drove|"
    r"broke|chose|fell|heard|kept|slept|stood|understood|woke|became|knew|\w{3,}ed)\b|[了過过]|剛|刚|已經|已经",
    re.IGNORECASE,
)
_NOT_PAST_ED = {
    "need",
    "speed",
    "proceed",
    "exceed",
    "succeed",
    "indeed",
    "breed",
    "embed",
    "interested",
    "excited",
    "tired",
    "scared",
    "worried",
    "bored",
    "pleased",
    "supposed",
    "used",
    "married",
    "retired",
    "qualified",
    "experienced",
    "advanced",
    "based",
    "related",
    "named",
    "called",
    "scheduled",
    "planned",
    "booked",
    "expected",
    "required",
    "allowed",
    "prepared",
    "determined",
    "concerned",
    "stressed",
    "nervous",
}
_NOT_PAST = re.compile(
    r"\b(?:is|are|am|will|shall|has|have|can|must|should|going to|gonna|plans?|planning|wants?|hopes?|hoping|"
    r"intends?|expects?|needs?|next|upcoming|coming|tomorrow)\b|['\u2019]ll\b|[要會会將将想]|打算|準備|准备|計劃|计划",
    re.IGNORECASE,
)
# A date that comes round every year is not one day to place on the calendar.
_RECURRING = re.compile(r"\b(?:birthday|anniversary|every|each|annual|annually|yearly)\b|生日|每", re.IGNORECASE)
# Words that point back in time: such a phrase never takes the plan's stored date.
_PAST_POINTING = re.compile(r"\b(?:yesterday|yday|last|past|ago)\b|昨|前|上|去年", re.IGNORECASE)
# After these, a label's own "on"/"in" is dropped: "by Fri 4 Dec", "since Oct 2026".
_PREPOSITION_BEFORE = re.compile(
    r"\b(?:by|until|till|til|before|after|since|from|of|during|through|to|for|about|around)\s+$", re.IGNORECASE
)


def _clause(text: str, start: int, end: int) -> str:
    breaks = [m for m in _CLAUSE_BREAK.finditer(text)]
    left = max((m.end() for m in breaks if m.end() <= start), default=0)
    right = min((m.start() for m in breaks if m.start() >= end), default=len(text))
    return text[left:start] + " " + text[end:right]


def _is_past(clause: str) -> bool:
    past = any(m.group(0).lower() not in _NOT_PAST_ED for m in _PAST_VERB.finditer(clause))
    return past and not _NOT_PAST.search(clause)


def _amount(raw: str) -> int:
    raw = " ".join(raw.lower().split())
    return int(raw) if raw.isdigit() else _NUMBER_WORDS.get(raw, 1)


def _zh_number(text: str) -> int | None:
    """``3``, ``三``, ``十二``, ``二十``: small numbers as Chinese speakers write them."""
    if text.isdigit():
        return int(text)
    if not text or any(ch not in _ZH_DIGITS for ch in text):
        return None
    if "十" not in text:
        return _ZH_DIGITS[text] if len(text) == 1 else None
    tens, _, ones = text.partition("十")
    return (_ZH_DIGITS.get(tens, 1) if tens else 1) * 10 + (_ZH_DIGITS.get(ones, 0) if ones else 0)


def _month_number(word: str) -> int:
    return next(number for name, number in _MONTH_NUMBERS.items() if name.startswith(word.lower()[:3]))


# A month's name as a regex group, and the two number readers, for the query-date
# reader in retrieval.py (which looks for the periods a question names).
MONTH_WORD = (
    r"(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
    r"|sept?(?:ember)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
)
month_number = _month_number
zh_number = _zh_number


def _add_months(day: date, months: int) -> date:
    """``day`` moved by whole months, on the same day or the month's last when it is shorter."""
    index = day.year * 12 + day.month - 1 + months
    year, month = index // 12, index % 12 + 1
    for last in (31, 30, 29, 28):
        try:
            return date(year, month, min(day.day, last))
        except ValueError:
            if not 1 <= year <= 9999:
                raise
    raise ValueError(day)  # pragma: no cover - every month has 28 days


def _month_day(month: int, day: int, base: date, year: int | None, past: bool) -> date:
    """The date of ``month``/``day`` nearest to what a speaker means (see ``_RECENT_PAST_DAYS``)."""
    if year is not None:
        return date(year, month, day)
    for candidate_year in (base.year, base.year - 1) if past else (base.year, base.year + 1):
        candidate = date(candidate_year, month, day)
        if (past and candidate <= base) or (not past and (base - candidate).days <= _RECENT_PAST_DAYS):
            return candidate
    raise ValueError("no such day")  # pragma: no cover - one of the two years always fits


def _day_of_month(number: int, base: date, past: bool, weekday: int | None) -> date:
    """ "the 3rd" ("Monday the 7th"): the nearest such day ahead, or just gone in a
    sentence about the past; with a weekday, the nearest month where the two agree."""
    step = -1 if past else 1
    for months in range(0, 12 * step, step):
        month_start = _add_months(base.replace(day=1), months)
        try:
            candidate = month_start.replace(day=number)
        except ValueError:
            continue
        if (candidate < base if past else candidate >= base) or candidate == base:
            if weekday is None or candidate.weekday() == weekday:
                return candidate
    raise ValueError("no such day")


def _weekday_on(target: int, base: date, relation: str) -> date:
    if relation == "last":
        return base - timedelta(days=(base.weekday() - target) % 7 or 7)
    ahead = (target - base.weekday()) % 7
    if relation == "this":
        return base + timedelta(days=ahead)
    return base + timedelta(days=ahead or 7)  # next, coming, on: the first one after today


def _weekday_index(word: str) -> int:
    word = word.lower().rstrip(".")
    return WEEKDAYS.index(word) if word in WEEKDAYS else _WEEKDAY_ABBR[word]


def _relation(words: str | None, default: str = "on") -> str:
    """``next`` / ``this`` / ``last`` / ``on`` from the words before a weekday or span."""
    words = " ".join((words or "").lower().split())
    if words in ("this past", "the past", "past", "last"):
        return "last"
    if words in ("next", "this coming", "the coming", "coming"):
        return "next"
    return "this" if words == "this" else default


def _resolve_weekend(relation: str, base: date) -> tuple[str, date, str]:
    saturday = base + timedelta(days=(5 - base.weekday()) % 7)
    if base.weekday() == 6:
        saturday = base - timedelta(days=1)  # on a Sunday, "this weekend" is the one under way
    saturday += timedelta(days={"next": 7, "last": -7, "after_next": 14}.get(relation, 0))
    return "weekend", saturday, ""


def _span(span: str, step: int, base: date) -> tuple[str, date, str]:
    if span == "week":
        return "week", base - timedelta(days=base.weekday()) + timedelta(days=7 * step), ""
    if span == "month":
        return "month", _add_months(base.replace(day=1), step), ""
    return "year", date(base.year + step, 1, 1), ""


def _season(name: str, relation: str, base: date) -> tuple[str, date, str]:
    """The season's first day: "next" is the first to start after today, "last" the
    last to end before it, "this" the one under way or else the nearer one."""
    first_month = _SEASONS[name]
    starts = [date(year, first_month, 1) for year in range(base.year - 2, base.year + 2)]
    spans = [(start, _add_months(start, 3) - timedelta(days=1)) for start in starts]
    if relation == "next":
        start = next(s for s, _ in spans if s > base)
    elif relation == "last":
        start = [s for s, e in spans if e < base][-1]
    else:
        start = min(
            spans,
            key=lambda span: (
                0 if span[0] <= base <= span[1] else min(abs((span[0] - base).days), abs((span[1] - base).days))
            ),
        )[0]
    return "season", start, ""


def _zh_step(prefix: str) -> int:
    return {"下下": 2, "下": 1, "上上": -2, "上": -1}.get(prefix.rstrip("個个"), 0)


def _offset(unit: str, n: int, base: date) -> tuple[str, date, str]:
    """``n`` days, weeks, fortnights, months or years from ``base`` (negative: before it)."""
    unit = {"wk": "week", "yr": "year"}.get(unit, unit)
    if unit == "day":
        return "day", base + timedelta(days=n), ""
    if unit in ("week", "fortnight"):
        return "about", base + timedelta(days=n * (14 if unit == "fortnight" else 7)), ""
    return "about", _add_months(base, n * (12 if unit == "year" else 1)), ""


# -- the rules of the grammar ----------------------------------------------------------
# Each rule is one kind of time phrase: its pattern, the handler that turns a
# match into (granularity, first day, part of day), and examples said on
# ``EXAMPLE_DAY`` that tests/test_timeutil.py runs (a rule without an example
# fails there). The rules join into one regex (``_GRAMMAR``), each in a group of
# its own, so a match names the rule that matched (``match.lastgroup``). At one
# position the first rule that matches wins, so longer phrases come first ("the
# day after tomorrow" before "tomorrow", "Friday after next" before "on Friday").
# An example reads "phrase -> granularity YYYY-MM-DD [part]"; "past: " before
# it says the phrase comes from a sentence about the past.

EXAMPLE_DAY = date(2026, 12, 2)  # a Wednesday

Resolved = tuple[str, date, str]
Groups = dict[str, str]


def _always(groups: Groups, text: str, end: int, *, moved: bool, phrase: bool) -> bool:
    return True


def _never_bare(groups: Groups) -> bool:
    return False


@dataclass(frozen=True)
class _Rule:
    key: str  # the group every match of this rule sets; the rule's own group is "r_" + key
    pattern: str
    resolve: Callable[[Groups, date, bool], Resolved | None]
    examples: tuple[str, ...]
    absolute: bool  # a calendar date ("Dec 3", "12月3日")
    bare: Callable[[Groups], bool]  # a bare weekday or weekend: a day only in a plan or an event
    # Whether a match counts where it stands (``phrase``: the text is itself the time expression).
    accept: Callable[..., bool]

    @property
    def group(self) -> str:
        return "r_" + self.key


_RULES: list[_Rule] = []


def _rule(key: str, pattern: str, *examples: str, absolute=False, bare=_never_bare, accept=_always):
    """Register the decorated handler as the next rule of the grammar."""

    def register(resolve: Callable[[Groups, date, bool], Resolved | None]):
        _RULES.append(_Rule(key, pattern, resolve, examples, absolute, bare, accept))
        return resolve

    return register


@_rule("iso", r"(?:\bon\s+)?\b(?P<iso>\d{4}-\d{1,2}-\d{1,2})\b", "2026-12-03 -> day 2026-12-03", absolute=True)
def _iso_date(g: Groups, base: date, past: bool) -> Resolved:
    year, month, day = (int(part) for part in g["iso"].split("-"))
    return "day", date(year, month, day), ""


@_rule(
    "md_m",
    r"(?:\bon\s+)?\b(?P<md_m>"
    + _MONTH
    + r")\.?\s+(?:the\s+)?(?P<md_d>\d{1,2})(?:st|nd|rd|th)?\b(?:,?\s+(?P<md_y>\d{4})\b)?",
    "Dec 25 -> day 2026-12-25",
    "on January 5th, 2028 -> day 2028-01-05",
    "Nov 20 -> day 2026-11-20",
    "Oct 20 -> day 2027-10-20",
    "past: Dec 25 -> day 2025-12-25",
    absolute=True,
)
def _month_and_day(g: Groups, base: date, past: bool) -> Resolved:
    month, day, year = (g["md_m"], g["md_d"], g.get("md_y")) if "md_m" in g else (g["dm_m"], g["dm_d"], g.get("dm_y"))
    return "day", _month_day(_month_number(month), int(day), base, int(year) if year else None, past), ""


_rule(
    "dm_m",
    r"(?:\bon\s+)?(?:\bthe\s+)?\b(?P<dm_d>\d{1,2})(?:st|nd|rd|th)?\s+(?:of\s+)?(?P<dm_m>"
    + _MONTH
    + r")\b(?:,?\s+(?P<dm_y>\d{4})\b)?",
    "3rd of December -> day 2026-12-03",
    "the 5th of Jan -> day 2027-01-05",
    "14 Feb 2027 -> day 2027-02-14",
    absolute=True,
)(_month_and_day)


@_rule(
    "zd_m",
    r"(?:(?P<zd_y>\d{4})年)?(?P<zd_m>[0-9一二三四五六七八九十]{1,3})月(?P<zd_d>[0-9一二三四五六七八九十]{1,3})[日號号]",
    "12月25日 -> day 2026-12-25",
    "2027年1月3號 -> day 2027-01-03",
    "十二月三十一号 -> day 2026-12-31",
    absolute=True,
)
def _zh_month_and_day(g: Groups, base: date, past: bool) -> Resolved | None:
    month, day = _zh_number(g["zd_m"]), _zh_number(g["zd_d"])
    if not month or not day:
        return None
    return "day", _month_day(month, day, base, int(g["zd_y"]) if "zd_y" in g else None, past), ""


@_rule(
    "dat",
    r"\b(?P<dat>(?:the\s+)?day\s+after\s+" + _TOMORROW + r")\b",
    "the day after tomorrow -> day 2026-12-04",
    "day after tmrw -> day 2026-12-04",
)
def _day_after_tomorrow(g: Groups, base: date, past: bool) -> Resolved:
    return "day", base + timedelta(days=2), ""


@_rule("dby", r"\b(?P<dby>(?:the\s+)?day\s+before\s+yesterday)\b", "the day before yesterday -> day 2026-11-30")
def _day_before_yesterday(g: Groups, base: date, past: bool) -> Resolved:
    return "day", base - timedelta(days=2), ""


@_rule(
    "tomorrow",
    r"\b(?P<tomorrow>" + _TOMORROW + r")" + _PART.format("tpart") + r"\b",
    "tomorrow -> day 2026-12-03",
    "tmrw morning -> day 2026-12-03 morning",
    "Tomorrow Night -> day 2026-12-03 night",
)
def _tomorrow(g: Groups, base: date, past: bool) -> Resolved:
    return "day", base + timedelta(days=1), g.get("tpart", "").lower()


@_rule(
    "yesterday",
    r"\b(?P<yesterday>yesterday|yday)" + _PART.format("ypart") + r"\b",
    "yesterday -> day 2026-12-01",
    "yesterday evening -> day 2026-12-01 evening",
)
def _yesterday(g: Groups, base: date, past: bool) -> Resolved:
    return "day", base - timedelta(days=1), g.get("ypart", "").lower()


@_rule("last_night", r"\b(?P<last_night>last night)\b", "last night -> day 2026-12-01 night")
def _last_night(g: Groups, base: date, past: bool) -> Resolved:
    return "day", base - timedelta(days=1), "night"


@_rule(
    "today",
    r"\b(?P<today>(?:later )?today|tonight|tonite|this (?:morning|afternoon|evening))\b",
    "today -> day 2026-12-02",
    "later today -> day 2026-12-02",
    "tonight -> day 2026-12-02 night",
    "this afternoon -> day 2026-12-02 afternoon",
)
def _today(g: Groups, base: date, past: bool) -> Resolved:
    text = g["today"].lower()
    part = "night" if text in ("tonight", "tonite") else text.split()[1] if text.startswith("this ") else ""
    return "day", base, part


@_rule(
    "wan",
    r"(?:\bon\s+)?(?:\bthe\s+)?\b(?P<wan>" + _WD + r")\s+after\s+next\b",
    "Friday after next -> day 2026-12-11",
    "the Monday after next -> day 2026-12-14",
)
def _weekday_after_next(g: Groups, base: date, past: bool) -> Resolved:
    return "day", _weekday_on(_weekday_index(g["wan"]), base, "next") + timedelta(days=7), ""


@_rule(
    "wiw",
    r"(?:\bon\s+)?\b(?P<wiw>" + _WD + r")\s+(?P<wiw_rel>next|this|last)\s+week\b",
    "Tuesday next week -> day 2026-12-08",
    "Friday this week -> day 2026-12-04",
    "Monday last week -> day 2026-11-23",
)
def _weekday_in_week(g: Groups, base: date, past: bool) -> Resolved:
    """ "Tuesday next week": that week's Tuesday."""
    _, monday, _ = _span("week", {"next": 1, "last": -1}.get(g["wiw_rel"].lower(), 0), base)
    return "day", monday + timedelta(days=_weekday_index(g["wiw"])), ""


@_rule(
    "wd",
    r"(?:\bon\s+)?\b(?<!the )(?<!The )(?P<wd_rel>"
    + _REL
    + r")\s+(?P<wd>"
    + _WD
    + r")"
    + _PART.format("wpart")
    + r"(?!\w)",
    "next Tuesday -> day 2026-12-08",
    "this Friday -> day 2026-12-04",
    "last Mon -> day 2026-11-30",
    "this coming Sat evening -> day 2026-12-05 evening",
    "this Monday -> day 2026-12-07",
    "past: this Monday -> day 2026-11-30",
    "past: this Wednesday -> day 2026-12-02",
)
def _related_weekday(g: Groups, base: date, past: bool) -> Resolved:
    relation = _relation(g["wd_rel"])
    if past and relation == "this":
        relation = "last" if _weekday_index(g["wd"]) != base.weekday() else "this"
    return "day", _weekday_on(_weekday_index(g["wd"]), base, relation), g.get("wpart", "").lower()


@_rule(
    "wdom",
    r"(?:\bon\s+)?\b(?P<wdom>" + _WD + r"),?\s+(?:the\s+)?(?P<wdom_d>\d{1,2})(?:st|nd|rd|th)\b(?!\s+of\b)",
    "Monday the 7th -> day 2026-12-07",
    "Fri 18th -> day 2026-12-18",
    "Friday the 1st -> day 2027-01-01",
)
def _day_of_month_rule(g: Groups, base: date, past: bool) -> Resolved:
    weekday = _weekday_index(g["wdom"]) if "wdom" in g else None
    return "day", _day_of_month(int(g.get("wdom_d") or g["dom"]), base, past, weekday), ""


@_rule(
    "domm",
    r"(?:\bon\s+)?\bthe\s+(?P<domm>\d{1,2})(?:st|nd|rd|th)\s+of\s+(?P<domm_rel>next|this|last)\s+month\b",
    "the 3rd of next month -> day 2027-01-03",
    "the 15th of last month -> day 2026-11-15",
)
def _day_of_named_month(g: Groups, base: date, past: bool) -> Resolved:
    """ "the 3rd of next month"."""
    _, first, _ = _span("month", {"next": 1, "last": -1}.get(g["domm_rel"].lower(), 0), base)
    return "day", first.replace(day=int(g["domm"])), ""


def _day_of_month_counts(g: Groups, text: str, end: int, *, moved: bool, phrase: bool) -> bool:
    return phrase or moved or "dom_on" in g  # in running text, "on the 3rd" (or "moved to the 3rd") only


# "on the 3rd", not "the 3rd floor": a bare ordinal is a day only before a pause or "at 5"
_rule(
    "dom",
    r"(?P<dom_on>\bon\s+)?\bthe\s+(?P<dom>\d{1,2})(?:st|nd|rd|th)\b(?!\s+of\b)"
    r"(?!\s+(?!(?:at|and|or|to|until|till|before|after|in|for)\b)[a-z])",
    "on the 15th -> day 2026-12-15",
    "the 2nd -> day 2026-12-02",
    "the 1st -> day 2027-01-01",
    "past: the 15th -> day 2026-11-15",
    accept=_day_of_month_counts,
)(_day_of_month_rule)


@_rule(
    "in_n",
    r"\b(?P<in_word>in|within)\s+(?P<in_n>"
    + _NUM
    + r")\s+(?P<in_unit>"
    + _UNIT
    + r")s?\b(?:['\u2019]s?(?:\s+time\b)?|\s+time\b)?",
    "in 3 days -> day 2026-12-05",
    "within two weeks -> about 2026-12-16",
    "in a fortnight -> about 2026-12-16",
    "in 2 months' time -> about 2027-02-02",
    "in a couple of yrs -> about 2028-12-02",
)
def _amount_from(g: Groups, base: date, past: bool) -> Resolved:
    """ "in 3 days", "3 days from tomorrow", "3 days ago"."""
    key = next(key for key in ("in", "fn", "ago") if f"{key}_n" in g)
    start = base + timedelta(days=1) if g.get("fn_from", "now").lower() not in ("now", "today") else base
    return _offset(g[f"{key}_unit"].lower(), (-1 if key == "ago" else 1) * _amount(g[f"{key}_n"]), start)


_rule(
    "fn_n",
    r"\b(?P<fn_n>" + _NUM + r")\s+(?P<fn_unit>" + _UNIT + r")s?\s+from\s+(?P<fn_from>now|today|" + _TOMORROW + r")\b",
    "two days from now -> day 2026-12-04",
    "3 weeks from tomorrow -> about 2026-12-24",
    "a month from today -> about 2027-01-02",
)(_amount_from)
_rule(
    "ago_n",
    r"\b(?P<ago_n>" + _NUM + r")\s+(?P<ago_unit>" + _UNIT + r")s?\s+ago\b",
    "three days ago -> day 2026-11-29",
    "a month ago -> about 2026-11-02",
    "several years ago -> about 2023-12-02",
)(_amount_from)


@_rule(
    "an_span",
    r"\b(?:the\s+)?(?P<an_span>week|weekend|month|year)\s+after\s+next\b",
    "the week after next -> week 2026-12-14",
    "the weekend after next -> weekend 2026-12-19",
    "the month after next -> month 2027-02-01",
    "the year after next -> year 2028-01-01",
)
def _span_after_next(g: Groups, base: date, past: bool) -> Resolved:
    span = g["an_span"].lower()
    return _resolve_weekend("after_next", base) if span == "weekend" else _span(span, 2, base)


@_rule(
    "we_rel",
    r"\b(?:on\s+|at\s+|over\s+)?(?P<we_rel>" + _REL + r")\s+weekend\b",
    "next weekend -> weekend 2026-12-12",
    "this weekend -> weekend 2026-12-05",
    "last weekend -> weekend 2026-11-28",
    "past: this weekend -> weekend 2026-11-28",
)
def _weekend(g: Groups, base: date, past: bool) -> Resolved:
    relation = _relation(g.get("we_rel"), default="this")
    return _resolve_weekend("last" if past and relation == "this" and base.weekday() < 5 else relation, base)


def _bare(groups: Groups) -> bool:
    return True


_rule(
    "we_the",
    r"\b(?:on|at|over)\s+the\s+(?P<we_the>weekend)\b",
    "on the weekend -> weekend 2026-12-05",
    "past: over the weekend -> weekend 2026-11-28",
    bare=_bare,
)(_weekend)


@_rule(
    "span",
    r"\b(?P<span_rel>next|this coming|this past|the coming|this|last|coming)\s+(?P<span>week|month|year)\b",
    "next week -> week 2026-12-07",
    "last month -> month 2026-11-01",
    "this year -> year 2026-01-01",
    "this past week -> week 2026-11-23",
)
def _related_span(g: Groups, base: date, past: bool) -> Resolved:
    return _span(g["span"].lower(), {"next": 1, "last": -1}.get(_relation(g["span_rel"]), 0), base)


@_rule(
    "season",
    r"\b(?P<se_rel>" + _REL + r")\s+(?P<season>spring|summer|autumn|fall|winter)\b",
    "next summer -> season 2027-06-01",
    "last winter -> season 2025-12-01",
    "this fall -> season 2026-09-01",
    "this winter -> season 2026-12-01",
)
def _related_season(g: Groups, base: date, past: bool) -> Resolved:
    return _season(g["season"].lower().replace("fall", "autumn"), _relation(g["se_rel"], default="this"), base)


_ZH_DAY_SHIFT = {"大後天": 3, "大后天": 3, "後天": 2, "后天": 2, "明天": 1, "明晚": 1, "明早": 1}
_ZH_DAY_SHIFT |= {"昨天": -1, "昨晚": -1, "前天": -2, "大前天": -3}


@_rule(
    "zh_fixed",
    r"(?P<zh_fixed>大後天|大后天|大前天|後天|后天|明天|明晚|明早|今天|今晚|今早|昨天|昨晚|前天)",
    "明天 -> day 2026-12-03",
    "大後天 -> day 2026-12-05",
    "昨晚 -> day 2026-12-01 night",
    "今早 -> day 2026-12-02 morning",
    "大前天 -> day 2026-11-29",
)
def _zh_day(g: Groups, base: date, past: bool) -> Resolved:
    text = g["zh_fixed"]
    part = "night" if text.endswith("晚") else "morning" if text.endswith("早") else ""
    return "day", base + timedelta(days=_ZH_DAY_SHIFT.get(text, 0)), part


@_rule(
    "zse",
    r"(?P<zse_rel>明年|今年|去年)(?P<zse>春天|夏天|秋天|冬天)",
    "明年夏天 -> season 2027-06-01",
    "去年冬天 -> season 2025-12-01",
)
def _zh_season(g: Groups, base: date, past: bool) -> Resolved:
    year = base.year + {"明年": 1, "今年": 0, "去年": -1}[g["zse_rel"]]
    return "season", date(year, _SEASONS[_ZH_SEASONS[g["zse"]]], 1), ""


@_rule(
    "zh_wd",
    r"(?<!每)(?P<zh_rel>" + _ZH_STEP + r")?" + _ZH_WEEK + r"(?P<zh_wd>[一二三四五六日天])",
    "下週二 -> day 2026-12-08",
    "上星期五 -> day 2026-11-27",
    "下下個禮拜一 -> day 2026-12-14",
    "這週日 -> day 2026-12-06",
    "週三 -> day 2026-12-09",
    "past: 週一 -> day 2026-11-30",
    bare=lambda g: "zh_rel" not in g,
)
def _zh_weekday(g: Groups, base: date, past: bool) -> Resolved:
    prefix = g.get("zh_rel", "")
    target = _ZH_WEEKDAY[g["zh_wd"]]
    if not prefix:
        return "day", _weekday_on(target, base, "last" if past else "on"), ""
    monday = base - timedelta(days=base.weekday())
    return "day", monday + timedelta(days=7 * _zh_step(prefix) + target), ""


@_rule(
    "zh_we",
    r"(?<!每)(?P<zh_we_rel>下下|下|這|这|本|上上|上)?(?:個|个)?(?P<zh_we>週末|周末)",
    "這個週末 -> weekend 2026-12-05",
    "下週末 -> weekend 2026-12-12",
    "下下週末 -> weekend 2026-12-19",
    "past: 週末 -> weekend 2026-11-28",
    bare=lambda g: "zh_we_rel" not in g,
)
def _zh_weekend(g: Groups, base: date, past: bool) -> Resolved:
    prefix = g.get("zh_we_rel", "")
    step = _zh_step(prefix)
    if not prefix and past and base.weekday() < 5:
        step = -1
    relation = {2: "after_next", 1: "next", -1: "last"}.get(step, "this")
    granularity, saturday, part = _resolve_weekend(relation, base)
    return granularity, saturday - timedelta(days=7) if step == -2 else saturday, part


@_rule(
    "zh_span",
    r"(?P<zh_span_rel>" + _ZH_STEP + r")(?P<zh_span>週|周|星期|禮拜|礼拜|月)",
    "下個月 -> month 2027-01-01",
    "上週 -> week 2026-11-23",
    "下下週 -> week 2026-12-14",
)
def _zh_related_span(g: Groups, base: date, past: bool) -> Resolved:
    return _span("month" if g["zh_span"] == "月" else "week", _zh_step(g["zh_span_rel"]), base)


@_rule(
    "zh_year",
    r"(?P<zh_year>明年|今年|去年|前年|後年|后年)",
    "明年 -> year 2027-01-01",
    "去年 -> year 2025-01-01",
    "後年 -> year 2028-01-01",
)
def _zh_related_year(g: Groups, base: date, past: bool) -> Resolved:
    step = {"明年": 1, "今年": 0, "去年": -1, "前年": -2, "後年": 2, "后年": 2}[g["zh_year"]]
    return _span("year", step, base)


@_rule(
    "zh_n",
    r"(?P<zh_n>" + _ZH_N + r")(?:個|个)?(?P<zh_unit>天|週|周|星期|禮拜|礼拜|月|年)(?:以|之)?(?P<zh_dir>後|后|前)",
    "3天後 -> day 2026-12-05",
    "兩週後 -> about 2026-12-16",
    "三個月前 -> about 2026-09-02",
    "十年以後 -> about 2036-12-02",
)
def _zh_amount(g: Groups, base: date, past: bool) -> Resolved | None:
    n = _zh_number(g["zh_n"])
    if not n:
        return None
    unit = {"天": "day", "月": "month", "年": "year"}.get(g["zh_unit"], "week")
    return _offset(unit, -n if g["zh_dir"] == "前" else n, base)


def _weekday_counts(g: Groups, text: str, end: int, *, moved: bool, phrase: bool) -> bool:
    word = g["bare_wd"].rstrip(".")
    # "sun", "sat" and "wed" are words too: a weekday only when capitalised
    if word.lower() in _WORD_ABBR and not word[0].isupper():
        return False
    # in running text only "on Friday", "on Thurs" (or "moved to Friday") name a day
    named = "bare_on" in g or (moved and _DAY_ENDS.match(text, end))
    return phrase or (bool(named) and (word.lower() in WEEKDAYS or word[0].isupper()))


# Only a plan or an event names a day with a bare weekday ("on Friday"): in a
# habit it recurs; see ``_Mention.bare``.
@_rule(
    "bare_wd",
    r"(?P<bare_on>\bon\s+)?\b(?P<bare_wd>" + _WD + r")" + _PART.format("bpart") + r"(?!\w)",
    "Friday -> day 2026-12-04",
    "on Thurs -> day 2026-12-03",
    "Sat morning -> day 2026-12-05 morning",
    "Wednesday -> day 2026-12-09",
    "past: Friday -> day 2026-11-27",
    bare=_bare,
    accept=_weekday_counts,
)
def _weekday(g: Groups, base: date, past: bool) -> Resolved:
    return "day", _weekday_on(_weekday_index(g["bare_wd"]), base, "last" if past else "on"), g.get("bpart", "").lower()


def _weekend_counts(g: Groups, text: str, end: int, *, moved: bool, phrase: bool) -> bool:
    return phrase or moved  # "the weekend" in running text names no day ("I love the weekend")


_rule(
    "we_bare",
    r"\b(?:the\s+)?(?P<we_bare>weekend)\b",
    "the weekend -> weekend 2026-12-05",
    "weekend -> weekend 2026-12-05",
    bare=_bare,
    accept=_weekend_counts,
)(_weekend)

_GRAMMAR = re.compile("|".join(f"(?P<{rule.group}>{rule.pattern})" for rule in _RULES), re.IGNORECASE)
_RULE_OF_GROUP: dict[str | None, _Rule] = {rule.group: rule for rule in _RULES}  # read by Match.lastgroup


def _span_of(granularity: str, day: date) -> tuple[date, date]:
    """The days a resolved phrase covers."""
    if granularity == "about":
        return day - timedelta(days=3), day + timedelta(days=3)
    if granularity == "weekend":
        return day, day + timedelta(days=1)
    if granularity == "week":
        return day, day + timedelta(days=6)
    if granularity in ("month", "season", "year"):
        months = {"month": 1, "season": 3, "year": 12}[granularity]
        return day, _add_months(day, months) - timedelta(days=1)
    return day, day


@dataclass(frozen=True)
class _Mention:
    start: int
    end: int
    granularity: str
    day: date
    part: str
    bare: bool  # a bare weekday or weekend: a day only in a plan or an event
    absolute: bool  # a calendar date ("Dec 3", "12月3日")
    backward: bool  # worded as past ("last", "ago", "上")
    within: bool = False  # "within 3 days": by that day, not on it


# Every rule needs a digit, a CJK time character or a time word (on casefolded text, as IGNORECASE
# reads): most sentences have none and skip the grammar's scan, 60x slower (test_timeutil). A word's
# start is a word's start: "friend", "money", "sunny" and "wedding" name no time.
_TIME_HINT = re.compile(
    r"[\d天晚早年週周期拜月]|day|night|nite|week|\b(?:mon(?:d|th|s?\b)|tue|wed(?:n|s?\b)|thu|fri(?:d|s?\b)"
    r"|sat(?:u|s?\b)|sun(?:d|s?\b)|tom|tmr|tmw|2mor|morning|afternoon|evening|wk|yr|year|spring|summer|autumn|fall|winter)"
)


def _mentions(text: str, base: date, *, phrase: bool = False, past: bool | None = None) -> list[_Mention]:
    """Every time phrase in ``text`` said on ``base``, resolved; phrases past the calendar are skipped.

    ``phrase``: ``text`` is itself the time expression (an extracted event
    phrase), so a weekday needs no "on" before it. ``past``: the tense of the
    sentence it comes from; by default each phrase's own clause decides.
    """
    if not _TIME_HINT.search(text.casefold()):
        return []
    found = []
    for match in _GRAMMAR.finditer(text):
        rule = _RULE_OF_GROUP[match.lastgroup]
        g = {key: value for key, value in match.groupdict().items() if value is not None}
        moved = _rescheduled(text, match.start())  # "was moved to Friday": ahead, whatever the tense
        if not rule.accept(g, text, match.end(), moved=moved, phrase=phrase):
            continue
        try:
            if moved:
                tense = False
            else:
                tense = _is_past(_clause(text, match.start(), match.end())) if past is None else past
            resolved = rule.resolve(g, base, tense)
        except (ValueError, OverflowError):  # "in 99999 years", "Feb 30": left as said
            continue
        if resolved is None:
            continue
        granularity, day, part = resolved
        found.append(
            _Mention(
                match.start(),
                match.end(),
                granularity,
                day,
                part,
                rule.bare(g),
                rule.absolute,
                bool(_PAST_POINTING.search(match.group(0))),
                g.get("in_word", "").lower() == "within",
            )
        )
    return found


def _plausible(day: date, base: date) -> bool:
    return abs(day.year - base.year) <= _PLAUSIBLE_YEARS


def resolve_relative_date(phrase: str | None, now: datetime, *, sentence: str | None = None) -> date | None:
    """The day a spoken time expression names, said at ``now``; ``None`` when it names none.

    Reads what ``resolve_time_phrases`` reads (one grammar): calendar dates
    ("2026-12-03", "Dec 3", "3rd of December", "12月3日"), days ("tomorrow",
    "tmrw", "後天"), weekdays ("next Tues", "last Friday", "this past Fri",
    "下週二", "上週五", "Friday after next"), amounts ("in 3 days", "in a
    fortnight", "two days from now", "three days ago", "3天後", "兩週後"), and
    weeks, weekends, months, seasons and years ("next week", "the week after
    next", "last month", "next summer", "下下週", "上個月"). A span resolves
    to its first day, or to today when it is under way, the earliest day the
    plan can fall on, so a follow-up never comes before the event.
    ``sentence``: the sentence the phrase comes from; its tense decides a bare
    day ("had a test on Friday" is the Friday just gone), except after a verb
    that moves a plan ("was moved to Friday" is the coming one).
    """
    if not phrase or not phrase.strip():
        return None
    past = _is_past(sentence) and not _moved_to(sentence, phrase) if sentence else None
    return _first_day(phrase.strip(), now.date(), phrase=True, past=past)


def _first_day(text: str, base: date, *, phrase: bool, past: bool | None = None) -> date | None:
    """The plan day of the first time phrase in ``text`` (see ``resolve_relative_date``)."""
    for mention in _mentions(text, base, phrase=phrase, past=past):
        day = mention.day
        first, last = _span_of(mention.granularity, day)
        if mention.granularity not in ("day", "about") and first <= base <= last:
            day = base
        return day if _plausible(day, base) else None
    return None


def resolve_event_date(
    stated: str | None, phrase: str | None, said_at: datetime, *, sentence: str | None = None
) -> date | None:
    """A plan's day from what extraction returned: the model's ``stated`` date
    (it read the whole sentence, tense included) when it is a real, plausible
    day, else the day ``phrase`` (or, lacking one, ``sentence``) names. A bad
    date is ``None``: the fact is kept without one.
    """
    base = said_at.date()
    day = parse_date(stated)
    if day is not None and _plausible(day, base):
        return day
    if phrase and phrase.strip():
        return resolve_relative_date(phrase, said_at, sentence=sentence)
    # No phrase given: the sentence is read as running text, where "sat" is a verb
    # and only "on Friday" names a day.
    return _first_day(sentence, base, phrase=False) if sentence else None


# -- dates as the model should read them ------------------------------------------------
# The background shows every memory with the day it was said, and rewrites the
# time phrases inside it ("next Tuesday", "明天", "last month", "Dec 3") into
# absolute dates placed relative to *now*. A phrase is only true at the moment
# it was said: "has a test next Tuesday", read ten days later, names a day that
# has already passed, and a model reading it literally would wish the learner
# luck for a test that is over.

_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_DAY_ABBR = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")


def local_date(moment: datetime, now: datetime) -> date:
    """The calendar day of ``moment`` in the time zone of ``now``."""
    return to_aware(moment).astimezone(to_aware(now).tzinfo).date()


def said_day(moment: datetime, now: datetime | None = None) -> date:
    """The calendar day ``moment`` fell on where it was said: its date at its own UTC offset.

    Memora's clock is local, and every moment is stored with the offset it was
    taken at; the offset is all a day needs (the zone's name would matter only
    for arithmetic across its changes of offset, and a said moment is only ever
    read, never moved). So "tomorrow", said on Thursday at 23:30 in Los Angeles,
    is Friday wherever it is read. A moment with no offset (naive) is read in
    the zone of ``now``, as before offsets were kept.
    """
    if moment.tzinfo is not None or now is None:
        return moment.date()
    return local_date(moment, now)


def short_date(day: date, today: date, *, weekday: bool = False) -> str:
    """``Tue 24 Nov`` (``24 Nov`` without the weekday); the year only when it is not this one."""
    text = f"{day.day} {_MONTHS[day.month - 1]}"
    if weekday:
        text = f"{_DAY_ABBR[day.weekday()]} {text}"
    return text if day.year == today.year else f"{text} {day.year}"


def relative_days(day: date, today: date) -> str:
    """``today``, ``tomorrow``, ``in 4 days``, ``6 days ago``, ``in 3 weeks``, ``2 months ago``..."""
    delta = (day - today).days
    if delta == 0:
        return "today"
    if delta == 1:
        return "tomorrow"
    if delta == -1:
        return "yesterday"
    size = abs(delta)
    if size < 14:
        amount = counted(size, "day")
    elif size < 60:
        amount = counted(size // 7, "week")
    elif size < 730:
        amount = counted(size // 30, "month")
    else:
        amount = counted(size // 365, "year")
    return f"in {amount}" if delta > 0 else f"{amount} ago"


def on_day(day: date, today: date) -> str:
    """``on Tue 24 Nov (6 days ago)``: a dated plan, absolute and relative to today."""
    return f"on {short_date(day, today, weekday=True)} ({relative_days(day, today)})"


def _label(granularity: str, day: date, today: date, part: str = "") -> str:
    if granularity == "day":
        if part:
            return f"on the {part} of {short_date(day, today, weekday=True)} ({relative_days(day, today)})"
        return on_day(day, today)
    if granularity == "about":
        return f"around {short_date(day, today, weekday=True)} ({relative_days(day, today)})"
    if granularity == "weekend":
        if 0 <= (today - day).days <= 1:
            where = "this weekend"
        else:
            where = relative_days(day, today)
        return f"on the weekend of {short_date(day, today, weekday=True)} ({where})"
    if granularity == "week":
        offset = (day - (today - timedelta(days=today.weekday()))).days // 7
        where = {0: "this week", 1: "next week", -1: "last week"}.get(offset) or relative_days(day, today)
        return f"in the week of {short_date(day, today, weekday=True)} ({where})"
    if granularity == "season":
        first, last = _span_of("season", day)
        name = next(name for name, month in _SEASONS.items() if month == day.month)
        year = f"{day.year}/{(day.year + 1) % 100:02d}" if day.month == 12 else str(day.year)
        where = "under way" if first <= today <= last else relative_days(first, today)
        return f"in {name} {year} ({where})"
    if granularity == "month":
        offset = (day.year - today.year) * 12 + day.month - today.month
        where = {0: "this month", 1: "next month", -1: "last month"}.get(offset) or (
            f"in {offset} months" if offset > 0 else f"{-offset} months ago"
        )
        return f"in {_MONTHS[day.month - 1]} {day.year} ({where})"
    offset = day.year - today.year
    where = {0: "this year", 1: "next year", -1: "last year"}.get(offset) or (
        f"in {offset} years" if offset > 0 else f"{-offset} years ago"
    )
    return f"in {day.year} ({where})"


def _event_mention(mentions: list[_Mention], event_date: date) -> int | None:
    """Which phrase the plan's stored date belongs to: the one whose days hold it,
    else the first that does not point back in time."""
    for index, mention in enumerate(mentions):
        first, last = _span_of(mention.granularity, mention.day)
        if first <= event_date <= last:
            return index
    return next((index for index, mention in enumerate(mentions) if not mention.backward), None)


def resolve_time_phrases(
    text: str,
    said_at: datetime,
    now: datetime,
    *,
    event_date: date | None = None,
    bare_weekdays: bool = False,
) -> str:
    """``text`` with its time phrases replaced by absolute dates placed relative
    to ``now`` ("next Tuesday", said on Sun 29 Nov and read on 9 Dec, becomes
    "on Tue 1 Dec (8 days ago)"; "on Dec 3" becomes "on Thu 3 Dec (6 days ago)").
    A phrase is read on the day it was said, where it was said (``said_day``),
    and placed relative to today in ``now``'s zone, where the learner is now.

    ``event_date``, when known, is the authority for the phrase it belongs to
    (it was settled when the learner spoke, by a model that read the whole
    sentence); with no phrase to replace it is appended, so a dated plan always
    shows its date. ``bare_weekdays`` also rewrites "on Friday" (plans and
    events only: in a habit it recurs).
    """
    today = local_date(now, now)
    base = said_day(said_at, now)  # resolved where it was said, placed relative to today here
    mentions = [
        m
        for m in _mentions(text, base)
        if (bare_weekdays or not m.bare) and not (m.absolute and _RECURRING.search(_clause(text, m.start, m.end)))
    ]
    target = _event_mention(mentions, event_date) if event_date is not None else None
    pieces: list[str] = []
    last = 0
    for index, mention in enumerate(mentions):
        granularity, day, part = mention.granularity, mention.day, mention.part
        if index == target and event_date is not None:
            granularity, day = "day", event_date
        before, after = text[last : mention.start], text[mention.end : mention.end + 1]
        label = _label(granularity, day, today, part)
        possessive = text[mention.end : mention.end + 2] in ("'s", "\u2019s")  # "next week's lesson"
        if possessive or mention.within or _PREPOSITION_BEFORE.search(before):
            label = label.removeprefix("on ").removeprefix("in ")  # "by Fri 4 Dec", "since Oct 2026"
        if mention.within:
            label = "by " + label  # "within 3 days": by the day it names
        if text[mention.start].isupper() and (not before.strip() or before.rstrip()[-1] in ".!?"):
            label = label[0].upper() + label[1:]  # "On Friday, ..." opens a sentence
        if before and not before[-1].isspace() and before[-1] not in "([\"'\u201c":
            label = " " + label  # Chinese has no spaces around words: "下週二有考試"
        if after and not after.isspace() and after not in ".,;:!?)]\"'\u201d\u3002\uff0c\uff1b\uff1a\uff01\uff1f":
            label += " "
        pieces.extend((before, label))
        last = mention.end
    pieces.append(text[last:])
    result = "".join(pieces)
    if event_date is not None and target is None:
        result = f"{result.rstrip().rstrip('.')} \u2014 {on_day(event_date, today)}"
    return result
