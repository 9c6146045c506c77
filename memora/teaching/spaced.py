"""Spaced review: FSRS scheduling of the ledger's cards, with the clock passed in.

Choices, each for a tutor the learner opens about once a day:

* Learning and relearning steps are one day, not FSRS's default minutes. The
  minute steps are made for a drill that repeats a card in the same sitting;
  here a card answered wrong comes back tomorrow, and a new card answered right
  graduates at once (due two days later).
* Fuzzing is off. It spreads thousands of Anki reviews over neighbouring days;
  a learner with a few dozen cards gains nothing from it, and a schedule that
  can be stated exactly is easier to trust and to test.
* Days are the learner's calendar days, as Anki counts them: a day starts at
  ``day_start`` o'clock local time (4 am by default, ``MEMORA_DAY_START``), so
  a review at 07:45 after one at 21:30 the evening before is one day later,
  wherever the learner now is. FSRS itself counts 24-hour periods, so it is
  given the learner's days: every time on a card (its due date and last
  review) is the day's midnight UTC on a "day line" (``day_point``), and FSRS's
  whole-day intervals then land on whole days. The real times stay in the
  ledger's review list.
* A repeat of a tracked mistake in conversation is a lapse: FSRS Again on the
  day it was made (``ledger.LedgerStore.record``), once a day at most.
* Mastered: FSRS stability of at least ``MASTERED_STABILITY_DAYS`` (the card
  would still be recalled with 90% probability three weeks after its last
  review) and the last two reviews correct (rated Good or Easy). With the
  default parameters that is three correct reviews in a row, about two weeks
  apart in total.
* A grader's verdict maps to a rating: correct -> Good, partly -> Hard,
  wrong -> Again. A self-rating is the rating itself (1-4, as in Anki).

A stored card is checked against the ranges FSRS itself works in
(``check_card``) before Memora schedules it: fsrs does not check them, and a
card outside them fails only when it is rated (a negative stability raised to a
fractional power is a complex number, and the review is lost).
"""

from __future__ import annotations

import math
from datetime import UTC, date, datetime, time, timedelta

from fsrs import Card, Rating, Scheduler, State
from fsrs.scheduler import MAX_DIFFICULTY, MIN_DIFFICULTY, STABILITY_MIN

from memora.core.config import DEFAULT_DAY_START
from memora.core.storage import checked_time
from memora.core.timeutil import to_aware

MASTERED_STABILITY_DAYS = 21.0
CORRECT_RATING = int(Rating.Good)
VERDICT_RATINGS = {"correct": int(Rating.Good), "partly": int(Rating.Hard), "wrong": int(Rating.Again)}
RATING_NAMES = {1: "again", 2: "hard", 3: "good", 4: "easy"}

SCHEDULER = Scheduler(
    learning_steps=(timedelta(days=1),),
    relearning_steps=(timedelta(days=1),),
    enable_fuzzing=False,
)


# Stability is in days. FSRS clamps it from below (``STABILITY_MIN``) and never
# schedules further than its maximum interval (100 years); a stability past
# 1,000 years could not be reached before Memora's last date, 2999, and makes
# FSRS's arithmetic overflow long before float's own limit would.
MAX_STABILITY_DAYS = 365_000.0
CARD_FIELDS = ("card_id", "state", "step", "stability", "difficulty", "due", "last_review")


def check_card(card: object) -> dict:
    """``card`` if FSRS can schedule it, else ``ValueError`` naming the field
    ("stability is -5; FSRS needs 0.001 to 365000 days")."""
    if not isinstance(card, dict):
        raise ValueError("the review card is not an object")
    missing = [name for name in CARD_FIELDS if name not in card]
    unknown = sorted(str(name)[:30] for name in card if name not in CARD_FIELDS)
    if missing or unknown:
        raise ValueError(f"the review card {'lacks ' + ', '.join(missing) if missing else 'has ' + ', '.join(unknown)}")
    card_id = _whole(card, "card_id")
    if not 0 < card_id < 2**63:
        raise ValueError(f"card_id is {card_id}; it must be a positive 64-bit number")
    state = _whole(card, "state")
    if state not in {s.value for s in State}:
        raise ValueError(f"state is {state}; FSRS knows 1 (learning), 2 (review) and 3 (relearning)")
    step = card["step"]
    if state == State.Review:
        if step is not None:
            raise ValueError("step must be null for a card in review (state 2)")
    elif step is not None or state == State.Relearning:
        # fsrs treats a step past the scheduler's last as finished, so any step from 0 up is one it can run
        if _whole(card, "step") < 0:
            raise ValueError(f"step is {step}; it cannot be negative")
    stability = _number(card, "stability", STABILITY_MIN, MAX_STABILITY_DAYS, "days")
    difficulty = _number(card, "difficulty", MIN_DIFFICULTY, MAX_DIFFICULTY, "")
    if state != State.Learning and (stability is None or difficulty is None):
        raise ValueError(f"a card that was reviewed (state {state}) needs its stability and difficulty")
    if (stability is None) != (difficulty is None):
        raise ValueError("stability and difficulty are set together, or neither is")
    _moment(card, "due")
    if card["last_review"] is not None:
        _moment(card, "last_review")
    elif state != State.Learning:
        raise ValueError(f"a card that was reviewed (state {state}) needs its last_review")
    return card


def _whole(card: dict, name: str) -> int:
    value = card[name]
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name} must be a whole number, not {str(value)[:30]!r}")
    return value


def _number(card: dict, name: str, low: float, high: float, unit: str) -> float | None:
    value = card[name]
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"{name} must be a number, not {str(value)[:30]!r}")
    if not low <= value <= high:
        raise ValueError(f"{name} is {value:g}; FSRS needs {low:g} to {high:g}{' ' + unit if unit else ''}")
    return float(value)


def _moment(card: dict, name: str) -> datetime:
    value = card[name]
    if not isinstance(value, str):
        raise ValueError(f"{name} must be an ISO 8601 string")
    try:
        return checked_time(datetime.fromisoformat(value))
    except ValueError as error:
        raise ValueError(f"{name}: {error}") from None


def _utc(moment: datetime) -> datetime:
    return to_aware(moment).astimezone(UTC)


def learner_day(moment: datetime, day_start: int = DEFAULT_DAY_START) -> date:
    """The learner's calendar day at ``moment`` (aware, in the learner's zone at the
    time): 01:30 after a day start of 4 am still belongs to the day before."""
    return (to_aware(moment) - timedelta(hours=day_start)).date()


def day_point(day: date) -> datetime:
    """Where ``day`` sits on the day line FSRS is given: its midnight UTC."""
    return datetime.combine(day, time(0), tzinfo=UTC)


def card_day(value: datetime | str, day_start: int = DEFAULT_DAY_START) -> date:
    """The learner's day a stored card time stands for. Times on the day line are
    midnight UTC; a card written before Memora counted calendar days holds a
    real time, read as the day it was in this computer's zone."""
    moment = to_aware(datetime.fromisoformat(value) if isinstance(value, str) else value).astimezone(UTC)
    if moment.time() == time(0):
        return moment.date()
    return learner_day(moment.astimezone(), day_start)


def _on_day_line(card: Card, day_start: int) -> Card:
    card.due = day_point(card_day(card.due, day_start))
    if card.last_review is not None:
        card.last_review = day_point(card_day(card.last_review, day_start))
    return card


def new_card(now: datetime, day_start: int = DEFAULT_DAY_START) -> dict:
    """A new card, due today: a mistake is worth drilling the day it was made."""
    # The id is the creation time, from the injected clock (fsrs would read the real one).
    return Card(card_id=int(_utc(now).timestamp() * 1000), due=day_point(learner_day(now, day_start))).to_dict()


def review(card: dict, rating: int, now: datetime, day_start: int = DEFAULT_DAY_START) -> dict:
    """The card after one review rated ``rating`` (1-4) on the learner's day at ``now``."""
    current = _on_day_line(Card.from_dict(card), day_start)
    today = day_point(learner_day(now, day_start))
    if current.last_review is not None:
        # Flying west can make today's date earlier than the last review's: no day has passed.
        today = max(today, current.last_review)
    updated, _ = SCHEDULER.review_card(current, Rating(int(rating)), review_datetime=today)
    # FSRS's Hard on a learning step is 1.5 steps (a day and a half): a card comes back on
    # a day, so it is the nearest whole day, never the same one.
    days = (updated.due - today) / timedelta(days=1)
    if days != int(days):
        updated.due = today + timedelta(days=max(1, round(days)))
    return updated.to_dict()


def make_due(card: dict, now: datetime, day_start: int = DEFAULT_DAY_START) -> dict:
    """The same card, due today (its memory state kept)."""
    restored = _on_day_line(Card.from_dict(card), day_start)
    restored.due = day_point(learner_day(now, day_start))
    return restored.to_dict()


def due_day(card: dict, day_start: int = DEFAULT_DAY_START) -> date:
    """The learner's day the card is next due."""
    return card_day(Card.from_dict(card).due, day_start)


def is_new(card: dict) -> bool:
    return Card.from_dict(card).last_review is None


def retrievability(card: dict, now: datetime, day_start: int = DEFAULT_DAY_START) -> float:
    """FSRS's chance of recall today (1.0 for a card never reviewed)."""
    current = _on_day_line(Card.from_dict(card), day_start)
    return float(SCHEDULER.get_card_retrievability(current, day_point(learner_day(now, day_start))))


def stability(card: dict) -> float:
    return float(Card.from_dict(card).stability or 0.0)


def is_mastered(card: dict, ratings: list[int]) -> bool:
    return (
        stability(card) >= MASTERED_STABILITY_DAYS
        and len(ratings) >= 2
        and all(r >= CORRECT_RATING for r in ratings[-2:])
    )


def in_days(day: date, today: date) -> str:
    """'today', 'tomorrow', 'in 11 days' (or 'overdue since 2026-12-01')."""
    n = (day - today).days
    if n < 0:
        return f"overdue since {day.isoformat()}"
    return "today" if n == 0 else "tomorrow" if n == 1 else f"in {n} days"
