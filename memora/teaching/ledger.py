"""The mistake ledger: the learner's own errors, one entry per mistake, each a review card.

Mistakes are their own kind of record, apart from the facts about the learner:
a fact says who the learner is, a mistake says how they learn, and the two are
listed, merged, reviewed and forgotten differently.

Storage: one JSON file per learner (``memora_mistakes.json`` in the learner's
folder), owner-only, replaced atomically and changed under a lock, like the
profile. A file rather than a table in the catalog database because the ledger
is small (a few hundred entries, capped at ``MAX_MISTAKES``), is read whole on
every turn to pick the relevant entries, and must be forgettable without a
trace: an atomic replace leaves no old bytes in any file, where SQLite keeps
deleted rows in free pages and its write-ahead log until it is vacuumed. The
catalog, besides, is derived data that can be rebuilt from Chroma; the ledger
is not derived from anything.

What the file may hold is checked when it is read, entry by entry, by the
same models an import uses: times aware and within 1970-2999, each review card
within FSRS's own ranges (``spaced.ReviewCard``), counts that can be, ids of the
form Memora makes. An entry that fails is left out with one line and the file
as it was is kept beside it (``storage.load_model_file``), so a hand-edited
entry never makes every later start end in a traceback.

The ledger holds at most ``MAX_MISTAKES`` entries (mistakes and word cards).
At the limit a new one takes the place of the mastered entry made longest ago;
when none is mastered, the new one is not recorded (``LedgerFullError``). An
active entry is never dropped to make room, and the learner is told once.

The merge rule (``same_mistake``) is as careful as the duplicate rule for
facts: a new mistake joins an entry only when it makes the same correction
(the same words replaced by the same words, compared as dictionary words, with
case and apostrophes folded: "did a decision" -> "made" is "do a decision" ->
"make"), whatever its rule says, or states the same rule *and* touches a word
the entry's correction touches. "irregular past tense" alone
does not merge "goed -> went" with "eated -> ate".
"""

from __future__ import annotations

import difflib
import functools
import re
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Annotated, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from memora.core.config import DEFAULT_NEW_CARDS, DEFAULT_REVIEWS_PER_DAY
from memora.core.errors import LedgerFullError, LimitError
from memora.core.storage import JsonStore, StoredTime
from memora.core.text_utils import clean_text, clean_within, quoted
from memora.store import lexical
from memora.store.deletions import DeletionLog
from memora.teaching import spaced
from memora.teaching.spaced import ReviewCard

MistakeKind = Literal["grammar", "vocabulary", "word choice", "spelling", "punctuation"]
MISTAKE_KINDS: tuple[MistakeKind, ...] = get_args(MistakeKind)
MAX_EXAMPLES = 3
MAX_REVIEWS_KEPT = 50  # mastery needs the last two; progress counts come from the activity log
MAX_MISTAKES = 1000
MAX_MISTAKE_CHARS = 300  # a mistake is a phrase or a sentence, not a paragraph
EXAM_DAYS = 14  # an exam this close pulls the cards due before it forward
MAX_COUNT = 1_000_000  # times one mistake was made: more than a lifetime of messages
STATUSES = ("active", "improving", "mastered")
# What ``_new_id`` makes, and all that 'mistakes forget <id>' takes.
MISTAKE_ID = r"m[0-9a-f]{5}"


def clean_mistake_text(text: str, what: str = "text") -> str:
    return clean_within(
        text,
        MAX_MISTAKE_CHARS,
        empty=f"A mistake needs its {what}.",
        too_long=lambda n: f"A mistake's {what} is limited to {MAX_MISTAKE_CHARS} characters; this one has {n}.",
    )


class Example(BaseModel):
    model_config = ConfigDict(extra="forbid")

    original: str
    corrected: str
    seen_at: StoredTime


class Before(BaseModel):
    model_config = ConfigDict(extra="forbid")

    card: ReviewCard
    mastered_at: StoredTime | None = None
    count: int = Field(ge=1, le=MAX_COUNT, strict=True)


class Review(BaseModel):
    model_config = ConfigDict(extra="forbid")

    at: StoredTime
    rating: int = Field(ge=1, le=4, strict=True)
    # "drill": an answer in 'review'; "chat": read from a message (a repeat or a correct use)
    source: Literal["drill", "chat"] = "drill"
    # For a review read from a message: the entry as it was before, so 'undo' can take it back.
    before: Before | None = None

    @property
    def correct(self) -> bool:
        return self.rating >= spaced.CORRECT_RATING


class Mistake(BaseModel):
    """One ledger entry: a mistake, how often it was made, and its review card."""

    model_config = ConfigDict(extra="forbid")

    id: Annotated[str, Field(pattern=f"^{MISTAKE_ID}$")]
    kind: MistakeKind
    rule: str
    examples: list[Example]  # oldest first, the newest MAX_EXAMPLES kept
    count: int = Field(default=1, ge=1, le=MAX_COUNT, strict=True)
    first_seen: StoredTime
    last_seen: StoredTime
    card: ReviewCard
    reviews: list[Review] = Field(default_factory=list)
    mastered_at: StoredTime | None = None
    # "word": a word the learner asked the meaning of and chose to review
    # (its example is the word and its meaning); never merged with a mistake.
    card_type: Literal["mistake", "word"] = "mistake"

    @field_validator("examples")
    @classmethod
    def _some_example(cls, values: list[Example]) -> list[Example]:
        return values[-MAX_EXAMPLES:]

    @model_validator(mode="after")
    def _counts_agree(self) -> Mistake:
        if self.count < len(self.examples):
            raise ValueError(f"count is {self.count}, fewer than the {len(self.examples)} examples it holds")
        return self

    @property
    def latest(self) -> Example | None:
        usable = [e for e in self.examples if clean_text(e.original) and clean_text(e.corrected)]
        return usable[-1] if usable else None

    @property
    def due(self) -> date:
        """The learner's day the card is next due."""
        return self.card.due_day()

    @property
    def is_new(self) -> bool:
        """Never reviewed yet: it counts against the new cards a day."""
        return self.card.is_new

    @property
    def status(self) -> str:
        if self.mastered_at is not None:
            return "mastered"
        # A repeat in conversation is stored as a failed review, so a mistake made
        # an hour ago is "active" until the learner gets it right once.
        if self.reviews and self.reviews[-1].correct:
            return "improving"
        return "active"

    @property
    def active(self) -> bool:
        """Not mastered: it belongs in the drill (and, for a mistake, in the background)."""
        return self.mastered_at is None

    @property
    def is_mistake(self) -> bool:
        return self.card_type == "mistake"


class NewMistake(BaseModel):
    """A mistake as extraction reports it, before it meets the ledger."""

    original: str
    corrected: str
    rule: str
    kind: MistakeKind


class _LedgerFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    version: int = 1
    mistakes: list[Mistake] = Field(default_factory=list)


# -- the merge rule -------------------------------------------------------------------

_TOKEN = re.compile(r"[^\W_]+(?:'[^\W_]+)*|[^\w\s]", re.UNICODE)
# Every apostrophe a keyboard or a model writes is the same one: "It’s" and "It's" are one word.
_APOSTROPHES = str.maketrans(dict.fromkeys("\u2019\u2018\u02bc\u00b4`", "'"))
# Contractions whose stem is not the verb's own form: "won't" is a form of "will not".
_NEGATED_STEMS = {"wo": "will", "ca": "can", "sha": "shall", "ai": "be"}


def _fold_apostrophes(text: str) -> str:
    return clean_text(text or "").translate(_APOSTROPHES)


def _tokens(text: str) -> list[str]:
    return _TOKEN.findall(_fold_apostrophes(text))


@functools.lru_cache(maxsize=8192)
def _lemmas(word: str) -> frozenset[str]:
    """The dictionary forms a word may be a form of ("did" -> do, "made" -> make,
    "goed" -> go, "doesn't" -> do not); a word English does not inflect is its own.
    lemminflect's tables ship in its wheel, so this works offline."""
    import lemminflect

    word = word.casefold()
    stem, negated = (word[:-3], True) if word.endswith("n't") and len(word) > 3 else (word, False)
    if negated and stem in _NEGATED_STEMS:
        found = {_NEGATED_STEMS[stem]}
    else:
        found = {lemma for forms in lemminflect.getAllLemmas(stem).values() for lemma in forms}
        if not found and stem.isalpha():
            # Not in the dictionary: a learner's own form ("goed", "childs") read by the inflection rules.
            found = {lemma for upos in ("VERB", "NOUN") for lemma in lemminflect.getAllLemmasOOV(stem, upos)[upos]}
    found = {lemma.casefold() for lemma in found} or {stem}
    return frozenset(f"{lemma} not" for lemma in found) if negated else frozenset(found)


def _forms_of_one_word(a: str, b: str) -> bool:
    """Whether two words are forms of one another: the same dictionary word
    ("go"/"went", "don't"/"doesn't") or the same letters but for an apostrophe
    ("its"/"it's")."""
    return a.replace("'", "") == b.replace("'", "") or bool(_lemmas(a) & _lemmas(b))


def _edit_key(edit: tuple[str, str]) -> tuple:
    """What makes two edits the same correction. Putting one form of a word in
    place of another ("goed" -> "went", "don't" -> "doesn't") is the forms
    themselves; any other change is compared by dictionary words, so "do a
    decision" -> "make" and "did a decision" -> "made" are one correction."""
    removed, inserted = edit[0].split(), edit[1].split()
    if len(removed) == len(inserted) and all(_forms_of_one_word(a, b) for a, b in zip(removed, inserted, strict=True)):
        return ("forms", edit[0].casefold(), edit[1].casefold())
    return ("words", tuple(min(_lemmas(w)) for w in removed), tuple(min(_lemmas(w)) for w in inserted))


def correction_edits(original: str, corrected: str) -> tuple[tuple[str, str], ...]:
    """What the correction changes: (removed words, inserted words) per change.

    Case is ignored unless the correction changes nothing else ("i know" ->
    "I know"): "i goed home" -> "I went home" is the same correction as "we
    goed home" -> "we went home", a capital fixed on the way notwithstanding.
    """
    left, right = _tokens(original), _tokens(corrected)
    folded = _diff([t.casefold() for t in left], [t.casefold() for t in right])
    return folded or _diff(left, right)


def correction_excerpt(original: str, corrected: str, context: int = 2) -> tuple[str, str]:
    """The words a correction changes, with ``context`` words either side, cut from
    both texts ("...it feel being" → "...it feel beings"): what the tutor must watch
    for, without the rest of a long sentence in every request. A short mistake
    is returned whole."""
    texts = [_fold_apostrophes(original), _fold_apostrophes(corrected)]
    spans = [[m.span() for m in _TOKEN.finditer(t)] for t in texts]
    words = [[texts[n][a:b].casefold() for a, b in spans[n]] for n in (0, 1)]
    opcodes = difflib.SequenceMatcher(a=words[0], b=words[1], autojunk=False).get_opcodes()
    changes = [op[1:] for op in opcodes if op[0] != "equal"]
    if not changes:
        return original, corrected
    cut = []
    for n, (first, last) in enumerate(((0, 1), (2, 3))):
        start = max(0, min(op[first] for op in changes) - context)
        end = min(len(spans[n]), max(op[last] for op in changes) + context)
        if start >= end:
            cut.append(texts[n])
            continue
        piece = texts[n][spans[n][start][0] : spans[n][end - 1][1]]
        cut.append(("..." if start else "") + piece + ("..." if end < len(spans[n]) else ""))
    return cut[0], cut[1]


def _diff(left: list[str], right: list[str]) -> tuple[tuple[str, str], ...]:
    matcher = difflib.SequenceMatcher(a=left, b=right, autojunk=False)
    return tuple(
        (" ".join(left[i1:i2]), " ".join(right[j1:j2])) for op, i1, i2, j1, j2 in matcher.get_opcodes() if op != "equal"
    )


def _touched(edits: Iterable[tuple[str, str]]) -> set[str]:
    return {word.casefold() for removed, inserted in edits for word in f"{removed} {inserted}".split()}


def same_correction(a: tuple[str, str], b: tuple[str, str]) -> bool:
    """Whether two (original, corrected) pairs make exactly the same correction
    (the merge rule's first test, with no rule to fall back on)."""
    edits_a, edits_b = correction_edits(*a), correction_edits(*b)
    return bool(edits_a) and [_edit_key(e) for e in edits_a] == [_edit_key(e) for e in edits_b]


def _specific(edits: Iterable[tuple[str, str]]) -> bool:
    """Whether a correction says which mistake it is: it changes a content word,
    or puts one form of a word in place of another ("don't" -> "doesn't", "its"
    -> "it's", "was" -> "were"), where an inserted, dropped or swapped function
    word ("to", "on", "a") is made for many unrelated reasons."""
    edits = list(edits)
    if any(word.isalpha() and word not in lexical.STOP_WORDS for word in _touched(edits)):
        return True
    return any(_edit_key(edit)[0] == "forms" and edit[0] and edit[1] for edit in edits)


def same_mistake(a: NewMistake | Mistake, b: NewMistake | Mistake) -> bool:
    """True when two mistakes are the same one (see the module docstring).

    An entry's examples are the same mistake by construction, so a new mistake
    may match any of them."""
    edits_a, edits_b = _edit_sets(a), _edit_sets(b)
    # A correction and its reverse ("since" -> "for", "for" -> "since") are two mistakes,
    # whatever rule text the model gave both.
    if _side_words(edits_a, 0) & _side_words(edits_b, 1) or _side_words(edits_a, 1) & _side_words(edits_b, 0):
        return False
    keys_b = [tuple(_edit_key(edit) for edit in edits) for edits in edits_b]
    same_rule = lexical.say_the_same(a.rule, b.rule)
    # The same correction is the same mistake only when it changes a word that
    # carries meaning ("goed" -> "went"). Inserting "to", "on" or a comma, or
    # dropping "am", is the same edit in unrelated mistakes ("want go" / "listen
    # music", "in Monday" / "in the bus"), so there the rules must agree too.
    if any(
        edits and tuple(_edit_key(edit) for edit in edits) in keys_b and (same_rule or _specific(edits))
        for edits in edits_a
    ):
        return True
    if not same_rule:
        return False
    touched_a = _touched(e for edits in edits_a for e in edits)
    touched_b = _touched(e for edits in edits_b for e in edits)
    if not touched_a and not touched_b:
        return True  # the same rule, and no example shows a change: nothing tells them apart
    return bool(touched_a & touched_b)


def _side_words(edit_sets: list[tuple[tuple[str, str], ...]], side: int) -> set[str]:
    """The words every edit removes (side 0) or inserts (side 1)."""
    return {word for edits in edit_sets for edit in edits for word in edit[side].split()}


def _edit_sets(item: NewMistake | Mistake) -> list[tuple[tuple[str, str], ...]]:
    if isinstance(item, NewMistake):
        return [correction_edits(item.original, item.corrected)]
    return [correction_edits(e.original, e.corrected) for e in item.examples]


# -- a use in conversation ----------------------------------------------------------------

# Quoted words are mentioned, not used: “…”, "…", «…», ‘…’ and '…' (an apostrophe inside a word opens none).
_QUOTED = re.compile(r"“[^”]*”|\"[^\"]*\"|«[^»]*»|‘[^’]*’|(?<!\w)'.*?'(?!\w)")
_SENTENCE = re.compile(r"[^.!?…]*(?:[.!?…]+|$)")


def _words(text: str) -> str:
    return f" {' '.join(t.casefold() for t in _tokens(text))} "


def fix_words(entry: Mistake) -> tuple[str, str]:
    """What a correction changes, as the learner reads it: the words ("goed" → "went"), or
    for a word added or dropped the words around it ("If I will have" → "If I have");
    a word card's word twice."""
    example = entry.latest
    if example is None or not entry.is_mistake:
        return (example.original, example.original) if example else (entry.rule, entry.rule)
    edits = correction_edits(example.original, example.corrected)
    if edits and all(a and b for a, b in edits):
        return " ".join(a for a, _ in edits), " ".join(b for _, b in edits)
    wrong, right = correction_excerpt(example.original, example.corrected, context=1)
    return wrong.strip("."), right.strip(".")


def own_use(entry: Mistake, message: str, evidence: str) -> str | None:
    """Why a right use read from ``message`` does not count on ``entry``'s card, or None
    when it does: the evidence holds the right form and stands in a statement of the
    learner's own, not inside quotation marks and not in a question (asking about
    a form, "Why do we say “doesn't”?", is not using it)."""
    statements = " ".join(s for s in _SENTENCE.findall(_QUOTED.sub(" ", message)) if not s.rstrip().endswith("?"))
    if not _words(evidence).strip():
        return "it gives no evidence"
    if _words(fix_words(entry)[1]) not in _words(evidence):
        return "its evidence does not hold the right form"
    if _words(evidence) not in _words(statements):
        return "its evidence is quoted or asked about, not used"
    return None


# -- picking for the background -----------------------------------------------------------


def relevant(mistakes: Iterable[Mistake], message: str, limit: int) -> list[Mistake]:
    """The active mistakes most relevant to ``message``, then the most frequent.

    Relevance is the number of the message's terms (stemmed, stop words dropped)
    found in the entry's rule and examples: a learner writing about yesterday's
    trip shares "yesterday" or "go" with "Yesterday I goed..."; a mistake made
    five times and shared with nothing still comes before one made once.
    """
    query = set(lexical.query_terms(message))

    def overlap(entry: Mistake) -> int:
        text = " ".join([entry.rule] + [f"{e.original} {e.corrected}" for e in entry.examples])
        return len(query & set(lexical.terms(text)))

    active = [m for m in mistakes if m.active and m.is_mistake and m.latest is not None]
    active.sort(key=lambda m: (-overlap(m), -m.count, -m.last_seen.timestamp()))
    return active[:limit]


# -- the store ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Schedule:
    """``LedgerStore.schedule``: what is asked today, and when every active card is next asked."""

    today: date
    queue: list[Mistake]  # today's drill, in order
    day: dict[str, date]  # each active card's next day, today or later (a mastered card is not drilled)
    held: list[Mistake]  # due by today, left by the daily limits for the next days
    exam: tuple[date, str] | None  # the remembered exam, when within EXAM_DAYS
    forward: list[Mistake]  # the cards brought forward for it


class LedgerStore(JsonStore[_LedgerFile]):
    """A learner's ledger in ``memora_mistakes.json`` (locked, atomic)."""

    schema = _LedgerFile
    label = "mistake ledger"
    entries = "mistakes"

    def __init__(
        self,
        path: Path,
        *,
        clock: Callable[[], datetime],
        notify: Callable[[str], None] | None = None,
        deletions: DeletionLog | None = None,
        learner: str = "default",
        day_start: int = spaced.DEFAULT_DAY_START,
        new_per_day: int = DEFAULT_NEW_CARDS,
        reviews_per_day: int = DEFAULT_REVIEWS_PER_DAY,
        exam: Callable[[date], tuple[date, str] | None] = lambda today: None,
    ):
        super().__init__(path, notify=notify)
        self.clock = clock
        self.day_start = day_start
        self.new_per_day = new_per_day
        self.reviews_per_day = reviews_per_day
        # The learner's next remembered exam (its day and what it is), asked with today's date.
        self.exam = exam
        self._told_full: set[str] = set()  # "full" is said once a session, until there is room again
        # A reading that started before 'mistakes forget' or 'forget all' cannot bring a mistake back.
        self.deletions = deletions
        self.learner = learner

    def _guard(self, original: str, corrected: str) -> None:
        """Inside the ledger's lock: refuse a reading's mistake that a deletion since covers."""
        if self.deletions is not None:
            self.deletions.guard("mistake-text", [self.deletions.key("mistake", original, corrected)])

    def _record_deleted(self, entries: list[Mistake]) -> None:
        if self.deletions is not None and entries:
            self.deletions.record(self.learner, "mistake", [m.id for m in entries])
            keys = [self.deletions.key("mistake", e.original, e.corrected) for m in entries for e in m.examples]
            if keys:
                self.deletions.record(self.learner, "mistake-text", keys)

    # Reading and checking a full ledger (a thousand entries, fifty reviews each)
    # takes most of a second, and every turn reads it: ``read`` keeps the parsed
    # file until the file changes.
    def copy(self, state: _LedgerFile) -> _LedgerFile:
        copy = state.model_copy()
        copy.mistakes = list(state.mistakes)  # the entries themselves are replaced, never changed in place
        return copy

    def _change(self, change: Callable[[_LedgerFile], object]):
        def counted(state: _LedgerFile):
            result = change(state)
            if len(state.mistakes) < MAX_MISTAKES:
                self._told_full.clear()
            return result

        return self.change(counted)

    # -- reading --
    def all(self) -> list[Mistake]:
        return list(self.read().mistakes)

    def get(self, mistake_id: str) -> Mistake | None:
        return next((m for m in self.all() if m.id == mistake_id), None)

    def find(self, prefix: str) -> list[Mistake]:
        prefix = prefix.strip().lower()
        return [m for m in self.all() if m.id.startswith(prefix)] if prefix else []

    def today(self, now: datetime | None = None) -> date:
        return spaced.learner_day(now or self.clock(), self.day_start)

    def due(self, now: datetime | None = None) -> list[Mistake]:
        """Today's queue, in the order to drill it (``schedule``)."""
        return self.schedule(now).queue

    def schedule(self, now: datetime | None = None) -> Schedule:
        """The one schedule: today's queue and the day every active card is next asked.
        ``review``, ``mistakes``, the page, the start line and ``progress`` all read it.

        * Reviews due by today, the least likely to be recalled first (FSRS's
          retrievability), at most ``reviews_per_day`` answers a day.
        * New cards, oldest first, ``new_per_day`` a day, interleaved with the
          reviews: a newer mistake never pushes back an older one, or the days
          the drill gives for them.
        * A card answered today is not asked again today unless the answer was wrong.
        * Before an exam within ``EXAM_DAYS``, each card that would next come after
          it, and was not reviewed since the exam came that close, is brought
          forward once, spread evenly over the days left (as FSRS Helper's
          Advance does), soonest due first.

        A card whose example was edited away stays listed: the drill says so
        rather than let it vanish without a word."""
        now = now or self.clock()
        today = self.today(now)
        everything = self.all()
        entries = [m for m in everything if m.active]
        # Today's answers count against today's limits, on cards they mastered too.
        done_today = [r for m in everything for r in m.reviews if r.source == "drill" and self.today(r.at) == today]
        introduced = [
            m
            for m in everything
            if (first := next((r for r in m.reviews if r.source == "drill"), None)) and self.today(first.at) == today
        ]
        answered = {m.id for m in entries if m.reviews and self.today(m.reviews[-1].at) == today}
        answered -= {m.id for m in entries if m.reviews and m.reviews[-1].rating == 1}  # wrong: may come again
        day = {m.id: max(m.due, today + timedelta(days=int(m.id in answered))) for m in entries}
        exam = self.exam(today)
        forward: list[Mistake] = []
        if exam is not None and today < exam[0] <= today + timedelta(days=EXAM_DAYS):
            since = exam[0] - timedelta(days=EXAM_DAYS)
            forward = [
                m
                for m in entries
                if not m.is_new and day[m.id] >= exam[0] and all(self.today(r.at) < since for r in m.reviews)
            ]
            forward.sort(key=lambda m: (m.due, m.id))
            # Each day takes its even share of those still waiting, the rest the later days:
            # the days stay the same from one day to the next, and the last come closest to the exam.
            left, taken = (exam[0] - today).days, 0
            for n in range(left):
                share = (len(forward) - taken) // (left - n)
                for m in forward[taken : taken + share]:
                    day[m.id] = today + timedelta(days=n)
                taken += share
        old = [m for m in entries if not m.is_new and day[m.id] <= today]
        old.sort(key=lambda m: (m.card.retrievability(now, self.day_start), m.due, -m.count))
        new = [m for m in entries if m.is_new and m.due <= today]
        new.sort(key=lambda m: m.first_seen)
        old_room = max(0, self.reviews_per_day - (len(done_today) - len(introduced)))
        new_room = max(0, self.new_per_day - len(introduced))
        fresh = new[:new_room]
        for held, per_day in ((old[old_room:], self.reviews_per_day), (new[new_room:], self.new_per_day)):
            for n, m in enumerate(held):
                day[m.id] = today + timedelta(days=1 + n // max(1, per_day))
        for m in old[:old_room] + fresh:
            day[m.id] = today
        return Schedule(today, _interleave(old[:old_room], fresh), day, old[old_room:] + new[new_room:], exam, forward)

    def count(self) -> int:
        return len(self.read().mistakes)

    # -- writing --
    def record(self, new: NewMistake, seen_at: datetime | None = None) -> tuple[Mistake, bool]:
        """Add a mistake or count it against the entry it repeats; returns (entry, merged).

        Raises ``LedgerFullError`` for a new mistake when the ledger is full and
        none of its entries is mastered (the learner is told once)."""
        new = NewMistake(
            original=clean_mistake_text(new.original, "original words"),
            corrected=clean_mistake_text(new.corrected, "correction"),
            rule=clean_mistake_text(new.rule, "rule"),
            kind=new.kind,
        )
        if correction_edits(new.original, new.corrected) == () and new.original.casefold() == new.corrected.casefold():
            raise LimitError("The correction is the same as the original: not a mistake.")
        when = _aware(seen_at or self.clock())
        example = Example(original=new.original, corrected=new.corrected, seen_at=when)
        dropped: list[Mistake] = []

        def change(state: _LedgerFile) -> tuple[Mistake, bool]:
            self._guard(new.original, new.corrected)
            for index, entry in enumerate(state.mistakes):
                if entry.is_mistake and same_mistake(entry, new):
                    if any(
                        e.original.casefold() == new.original.casefold() and e.seen_at == when for e in entry.examples
                    ):
                        return entry, True  # the same message read again (a retried job): counted once
                    others = [e for e in entry.examples if e.original.casefold() != new.original.casefold()]
                    # Undoing the lapse keeps the count: the mistake was made ('mistakes forget' forgets it).
                    count = min(entry.count + 1, MAX_COUNT)
                    state.mistakes[index] = self._relapse(
                        entry, when, count, examples=[*others[1 - MAX_EXAMPLES :], example]
                    )
                    return state.mistakes[index], True
            dropped.extend(self._make_room(state))
            entry = Mistake(
                id=self._new_id(state),
                kind=new.kind,
                rule=new.rule,
                examples=[example],
                first_seen=when,
                last_seen=when,
                card=ReviewCard.new(when, self.day_start),
            )
            state.mistakes.append(entry)
            return entry, False

        try:
            result = self._change(change)
        except LedgerFullError as error:
            self._tell_full("refused", str(error))
            raise
        self._tell_dropped(dropped)
        return result

    def _relapse(self, entry: Mistake, when: datetime, count_after: int, **update) -> Mistake:
        """``entry`` made again at ``when``: counted once more, not mastered, with ``update``.

        Once reviewed, a repeat is a lapse: FSRS Again on the day it was made,
        so stability falls and mastery must be earned again (stability and the
        last two answers right). A second repeat the same day adds no second
        lapse: one bad day is one failed review, as in a drill. The card is then
        due today, not tomorrow as Again alone would make it: the tutor has just
        corrected it, so now is when a drill helps. A card never reviewed stays
        new; the repeat is one more example of it."""
        card, reviews = entry.card, entry.reviews
        last = reviews[-1] if reviews else None
        # Said before the last review (a held message read late), it is no lapse: that review followed it.
        if last is not None and when >= last.at:
            if last.correct or self.today(last.at) != self.today(when):
                card = card.review(1, when, self.day_start)
                before = Before(card=entry.card, mastered_at=entry.mastered_at, count=count_after)
                reviews = (reviews + [Review(at=when, rating=1, source="chat", before=before)])[-MAX_REVIEWS_KEPT:]
            card = card.made_due(when, self.day_start)
        made = {"count": min(entry.count + 1, MAX_COUNT), "last_seen": max(entry.last_seen, when), "mastered_at": None}
        return entry.model_copy(update={**made, "card": card, "reviews": reviews, **update})

    def has_word(self, word: str) -> bool:
        key = clean_text(word).casefold()
        return any(not m.is_mistake and m.examples and m.examples[0].original.casefold() == key for m in self.all())

    def add_word(self, word: str, meaning: str, at: datetime | None = None) -> tuple[Mistake, bool]:
        """A word card (the learner said yes to reviewing it); returns (card, added).

        Raises ``LedgerFullError`` when the ledger is full and nothing in it is mastered."""
        word = clean_mistake_text(word, "word")
        meaning = clean_mistake_text(meaning, "meaning")
        when = _aware(at or self.clock())
        dropped: list[Mistake] = []

        def change(state: _LedgerFile) -> tuple[Mistake, bool]:
            self._guard(word, meaning)
            for entry in state.mistakes:
                if not entry.is_mistake and entry.examples and entry.examples[0].original.casefold() == word.casefold():
                    return entry, False
            dropped.extend(self._make_room(state))
            entry = Mistake(
                id=self._new_id(state),
                kind="vocabulary",
                rule=f"{word}: {meaning}",
                examples=[Example(original=word, corrected=meaning, seen_at=when)],
                first_seen=when,
                last_seen=when,
                card=ReviewCard.new(when, self.day_start),
                card_type="word",
            )
            state.mistakes.append(entry)
            return entry, True

        result = self._change(change)
        self._tell_dropped(dropped)
        return result

    @staticmethod
    def _new_id(state: _LedgerFile) -> str:
        taken = {m.id for m in state.mistakes}
        while True:
            candidate = "m" + uuid.uuid4().hex[:5]
            if candidate not in taken:
                return candidate

    @staticmethod
    def _make_room(state: _LedgerFile) -> list[Mistake]:
        """Room for one more entry: at the limit the mastered entry made longest ago
        goes (and is returned); an active one never does, so with none mastered
        the new entry is refused."""
        if len(state.mistakes) < MAX_MISTAKES:
            return []
        mastered = [m for m in state.mistakes if m.mastered_at is not None]
        if not mastered:
            raise LedgerFullError(
                f"Your mistake ledger is full ({MAX_MISTAKES:,} entries, none of them mastered), so new mistakes "
                "are not recorded; master some in 'review' or delete some with 'mistakes forget <id>'."
            )
        oldest = min(mastered, key=lambda m: (m.last_seen, m.mastered_at))
        state.mistakes.remove(oldest)
        return [oldest]

    def _tell_dropped(self, dropped: list[Mistake]) -> None:
        for entry in dropped:
            self._tell_full(
                "dropped",
                f"Your mistake ledger is full ({MAX_MISTAKES:,} entries), so each new entry now takes the place of "
                f"the mastered one made longest ago: this time {entry.id} ({quoted(entry.rule, 80, end='')}, "
                f"last made {entry.last_seen.astimezone():%Y-%m-%d}). Active ones are never dropped; "
                "'mistakes forget <id>' makes room.",
            )

    def _tell_full(self, kind: str, message: str) -> None:
        if kind in self._told_full:
            return
        self._told_full.add(kind)
        if self._notify is not None:
            self._notify(message)

    def _update(self, mistake_id: str, update: Callable[[Mistake], Mistake | None]) -> tuple[Mistake | None, bool]:
        """Replace the entry ``mistake_id`` with what ``update`` makes of it (None: nothing);
        returns (the entry as it is now, changed), or (None, False) when it is gone."""

        def change(state: _LedgerFile) -> tuple[Mistake | None, bool]:
            for index, entry in enumerate(state.mistakes):
                if entry.id == mistake_id:
                    state.mistakes[index] = update(entry) or entry
                    return state.mistakes[index], state.mistakes[index] is not entry
            return None, False

        return self._change(change)

    def review(self, mistake_id: str, rating: int, at: datetime | None = None) -> Mistake | None:
        """Save one review of a card; None when the entry is gone (forgotten meanwhile)."""
        when = _aware(at or self.clock())
        return self._update(mistake_id, lambda entry: self._reviewed(entry, rating, when, "drill"))[0]

    def _reviewed(self, entry: Mistake, rating: int, when: datetime, source: Literal["drill", "chat"]) -> Mistake:
        card = entry.card.review(rating, when, self.day_start)
        before = Before(card=entry.card, mastered_at=entry.mastered_at, count=entry.count) if source == "chat" else None
        reviews = (entry.reviews + [Review(at=when, rating=rating, source=source, before=before)])[-MAX_REVIEWS_KEPT:]
        mastered_at = entry.mastered_at
        if mastered_at is None and card.mastered([r.rating for r in reviews]):
            mastered_at = when
        elif mastered_at is not None and rating < spaced.CORRECT_RATING:
            mastered_at = None
        return entry.model_copy(update={"card": card, "reviews": reviews, "mastered_at": mastered_at})

    def passable(self, entry: Mistake, today: date | None = None) -> bool:
        """A right use in conversation would count on this card today: it is active and
        due, was not made today (copying the tutor's correction is not recall), and has
        no review today yet."""
        today = today or self.today()
        return (
            entry.active
            and entry.due <= today
            and self.today(entry.last_seen) != today
            and not any(self.today(r.at) == today for r in entry.reviews)
        )

    def use_in_chat(self, mistake_id: str, correct: bool, at: datetime | None = None) -> tuple[Mistake | None, bool]:
        """The learner used a tracked mistake's corrected form in conversation
        (``correct``) or made the mistake again; returns (entry, counted).

        A correct use is a pass (Good) on a card that is due today, once a day:
        a card answered or passed today already has its review, one not due yet
        would be reviewed early, and one whose mistake was made today is only
        being copied from the tutor's correction, not recalled. A repeat is a
        lapse (``_relapse``) and one more time the mistake was made. One message
        is counted once: a reading run again finds its own time among the
        card's reviews or examples."""
        when = _aware(at or self.clock())
        today = self.today(when)

        def use(entry: Mistake) -> Mistake | None:
            if any(r.at == when and r.source == "chat" for r in entry.reviews):
                return None
            if correct:
                return (
                    self._reviewed(entry, spaced.CORRECT_RATING, when, "chat") if self.passable(entry, today) else None
                )
            if not entry.is_mistake or any(e.seen_at == when for e in entry.examples):
                return None  # a word card is not a mistake; this message already counted it
            return self._relapse(entry, when, entry.count)

        return self._update(mistake_id, use)

    def take_back(self, mistake_id: str, at: datetime) -> Mistake | None:
        """Undo the review a message made at ``at`` (a pass or a lapse read from it):
        the card, mastery and count as they were. None when there is nothing to
        take back: the entry is gone, or the card was reviewed again since (its
        later answers were given to the card as it then was)."""

        def restore(entry: Mistake) -> Mistake | None:
            last = entry.reviews[-1] if entry.reviews else None
            if last is None or last.source != "chat" or last.at != at or last.before is None:
                return None
            before = last.before
            return entry.model_copy(
                update={
                    "card": before.card,
                    "mastered_at": before.mastered_at,
                    "count": max(before.count, len(entry.examples)),
                    "reviews": entry.reviews[:-1],
                }
            )

        entry, restored = self._update(mistake_id, restore)
        return entry if restored else None

    def forget(self, mistake_id: str) -> Mistake | None:
        def change(state: _LedgerFile) -> Mistake | None:
            for entry in state.mistakes:
                if entry.id == mistake_id:
                    self._record_deleted([entry])
                    state.mistakes.remove(entry)
                    return entry
            return None

        return self._change(change)

    def replace_all(self, mistakes: list[Mistake]) -> None:
        """Used by import: the given entries become the ledger. More than the
        limit is refused whole (the import checks first): never a cut by position."""
        if len(mistakes) > MAX_MISTAKES:
            raise LedgerFullError(
                f"{len(mistakes):,} entries would not fit the mistake ledger "
                f"(at most {MAX_MISTAKES:,}); nothing changed."
            )
        self._change(lambda state: setattr(state, "mistakes", list(mistakes)))

    def clear(self) -> int:
        """Forget every entry; returns how many there were. The file is removed."""
        with self.lock():
            n = len(self.read().mistakes)
            if self.deletions is not None:
                self.deletions.record(self.learner, "all")
            self.delete()
        self._told_full.clear()
        return n


def _interleave(reviews: list[Mistake], fresh: list[Mistake]) -> list[Mistake]:
    """The new cards spread evenly among the reviews, the first new card first."""
    if not reviews or not fresh:
        return fresh + reviews
    out: list[Mistake] = []
    gap = len(reviews) / len(fresh)
    taken = 0
    for n, card in enumerate(fresh):
        out.append(card)
        upto = round((n + 1) * gap)
        out.extend(reviews[taken:upto])
        taken = upto
    return out + reviews[taken:]


def _aware(moment: datetime) -> datetime:
    """A time to store: Memora's clocks are aware; a naive one is read as local time."""
    return moment if moment.tzinfo is not None else moment.astimezone()
