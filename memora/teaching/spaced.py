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
  wrong -> Again. A self-rating is the rating itself (1-4, as in Anki). Hard
  on a learning or relearning card graduates it (``review``), so a card
  answered "partly" again and again is on a growing interval.

A card is a ``ReviewCard``: fsrs's ``Card`` as the ledger stores it (the same
fields and JSON form, ``fsrs.Card.to_dict()``), each field checked against the
ranges FSRS itself works in when a card is read: fsrs does not check them, and a
card outside them fails only when it is rated (a negative stability raised to a
fractional power is a complex number, and the review is lost). Its methods are
the scheduling, on the learner's days.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta

from fsrs import Card, Rating, Scheduler, State
from fsrs.scheduler import MAX_DIFFICULTY, MIN_DIFFICULTY, STABILITY_MIN
from pydantic import BaseModel, ConfigDict, Field, field_serializer, model_validator

from memora.core.config import DEFAULT_DAY_START
from memora.core.storage import StoredTime
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


def learner_day(moment: datetime, day_start: int = DEFAULT_DAY_START) -> date:
    """The learner's calendar day at ``moment`` (aware, in the learner's zone at the
    time): 01:30 after a day start of 4 am still belongs to the day before."""
    return (to_aware(moment) - timedelta(hours=day_start)).date()


def day_point(day: date) -> datetime:
    """Where ``day`` sits on the day line FSRS is given: its midnight UTC."""
    return datetime.combine(day, time(0), tzinfo=UTC)


def card_day(value: datetime, day_start: int = DEFAULT_DAY_START) -> date:
    """The learner's day a stored card time stands for. Times on the day line are
    midnight UTC; a card written before Memora counted calendar days holds a
    real time, read as the day it was in this computer's zone."""
    moment = to_aware(value).astimezone(UTC)
    if moment.time() == time(0):
        return moment.date()
    return learner_day(moment.astimezone(), day_start)


class ReviewCard(BaseModel):
    """One FSRS card as the ledger keeps it (see the module docstring)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    card_id: int = Field(gt=0, lt=2**63, strict=True)
    state: int = Field(ge=State.Learning, le=State.Relearning, strict=True)  # 1 learning, 2 review, 3 relearning
    step: int | None = Field(ge=0, strict=True)  # fsrs treats a step past the scheduler's last as finished
    stability: float | None = Field(ge=STABILITY_MIN, le=MAX_STABILITY_DAYS, strict=True, allow_inf_nan=False)  # days
    difficulty: float | None = Field(ge=MIN_DIFFICULTY, le=MAX_DIFFICULTY, strict=True, allow_inf_nan=False)
    due: StoredTime
    last_review: StoredTime | None

    @model_validator(mode="before")
    @classmethod
    def _fields(cls, card: object) -> object:
        if not isinstance(card, dict):
            raise ValueError("the review card is not an object")
        missing = [name for name in cls.model_fields if name not in card]
        unknown = sorted(str(name)[:30] for name in card if name not in cls.model_fields)
        if missing or unknown:
            raise ValueError(
                f"the review card {'lacks ' + ', '.join(missing) if missing else 'has ' + ', '.join(unknown)}"
            )
        return card

    @model_validator(mode="after")
    def _schedulable(self) -> ReviewCard:
        if self.state == State.Review and self.step is not None:
            raise ValueError("step must be null for a card in review (state 2)")
        if self.state == State.Relearning and self.step is None:
            raise ValueError("step must be set for a card in relearning (state 3)")
        if (self.stability is None) != (self.difficulty is None):
            raise ValueError("stability and difficulty are set together, or neither is")
        if self.state != State.Learning and (self.stability is None or self.last_review is None):
            raise ValueError(f"a card that was reviewed (state {self.state}) needs its stability and last_review")
        return self

    @field_serializer("due", "last_review", when_used="json")
    def _as_fsrs_writes(self, moment: datetime | None) -> str | None:
        return moment.isoformat() if moment else None

    @classmethod
    def new(cls, now: datetime, day_start: int = DEFAULT_DAY_START) -> ReviewCard:
        """A new card, due today: a mistake is worth drilling the day it was made."""
        # The id is the creation time, from the injected clock (fsrs would read the real one).
        return cls._of(Card(card_id=int(to_aware(now).timestamp() * 1000), due=day_point(learner_day(now, day_start))))

    @classmethod
    def _of(cls, card: Card) -> ReviewCard:
        return cls.model_validate(card.to_dict())

    def _on_day_line(self, day_start: int) -> Card:
        """The card as fsrs takes it, its times on the learner's day line."""
        last = self.last_review and day_point(card_day(self.last_review, day_start))
        fields = self.model_dump(exclude={"state", "due", "last_review"})
        return Card(**fields, state=State(self.state), due=day_point(card_day(self.due, day_start)), last_review=last)

    def review(self, rating: int, now: datetime, day_start: int = DEFAULT_DAY_START) -> ReviewCard:
        """The card after one review rated ``rating`` (1-4) on the learner's day at ``now``."""
        current = self._on_day_line(day_start)
        today = day_point(learner_day(now, day_start))
        if current.last_review is not None:
            # Flying west can make today's date earlier than the last review's: no day has passed.
            today = max(today, current.last_review)
        updated, _ = SCHEDULER.review_card(current, Rating(int(rating)), review_datetime=today)
        if rating == Rating.Hard and updated.state != State.Review:
            # FSRS's Hard repeats a learning step (a day and a half here), and with one
            # step a card answered "partly" every time would come back every other day
            # for ever: it graduates instead, on the interval its stability gives (a review sets it).
            updated.state, updated.step, stability = State.Review, None, updated.stability or STABILITY_MIN
            updated.due = today + timedelta(days=SCHEDULER._next_interval(stability=stability))
        return self._of(updated)

    def made_due(self, now: datetime, day_start: int = DEFAULT_DAY_START) -> ReviewCard:
        """The same card, due today (its memory state kept)."""
        restored = self._on_day_line(day_start)
        restored.due = day_point(learner_day(now, day_start))
        return self._of(restored)

    def due_day(self, day_start: int = DEFAULT_DAY_START) -> date:
        """The learner's day the card is next due."""
        return card_day(self.due, day_start)

    @property
    def is_new(self) -> bool:
        return self.last_review is None

    def retrievability(self, now: datetime, day_start: int = DEFAULT_DAY_START) -> float:
        """FSRS's chance of recall today (1.0 for a card never reviewed)."""
        current = self._on_day_line(day_start)
        return float(SCHEDULER.get_card_retrievability(current, day_point(learner_day(now, day_start))))

    def mastered(self, ratings: list[int]) -> bool:
        """Stable for three weeks, and the last two answers right (see the module docstring)."""
        return (
            (self.stability or 0.0) >= MASTERED_STABILITY_DAYS
            and len(ratings) >= 2
            and all(r >= CORRECT_RATING for r in ratings[-2:])
        )


def in_days(day: date, today: date) -> str:
    """'today', 'tomorrow', 'in 11 days'; a day already past is today (a card is asked from its day on)."""
    n = (day - today).days
    return "today" if n <= 0 else "tomorrow" if n == 1 else f"in {n} days"
