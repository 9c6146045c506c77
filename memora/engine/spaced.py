"""Spaced review: FSRS scheduling of the ledger's cards, with the clock passed in.

Choices, each for a tutor the learner opens about once a day:

* Learning and relearning steps are one day, not FSRS's default minutes. The
  minute steps are made for a drill that repeats a card in the same sitting;
  here a card answered wrong comes back tomorrow, and a new card answered right
  graduates at once (due two days later).
* Fuzzing is off. It spreads thousands of Anki reviews over neighbouring days;
  a learner with a few dozen cards gains nothing from it, and a schedule that
  can be stated exactly is easier to trust and to test.
* Mastered: FSRS stability of at least ``MASTERED_STABILITY_DAYS`` (the card
  would still be recalled with 90% probability three weeks after its last
  review) and the last two reviews correct (rated Good or Easy). With the
  default parameters that is three correct reviews in a row, about two weeks
  apart in total.
* A grader's verdict maps to a rating: correct -> Good, partly -> Hard,
  wrong -> Again. A self-rating is the rating itself (1-4, as in Anki).
"""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta

from fsrs import Card, Rating, Scheduler

from memora.engine.timeutil import to_aware

MASTERED_STABILITY_DAYS = 21.0
CORRECT_RATING = int(Rating.Good)
VERDICT_RATINGS = {"correct": int(Rating.Good), "partly": int(Rating.Hard), "wrong": int(Rating.Again)}
RATING_NAMES = {1: "again", 2: "hard", 3: "good", 4: "easy"}

SCHEDULER = Scheduler(
    learning_steps=(timedelta(days=1),),
    relearning_steps=(timedelta(days=1),),
    enable_fuzzing=False,
)


def _utc(moment: datetime) -> datetime:
    return to_aware(moment).astimezone(UTC)


def new_card(now: datetime) -> dict:
    """A new card, due at once: a mistake is worth drilling the day it was made."""
    moment = _utc(now)
    # The id is the creation time, from the injected clock (fsrs would read the real one).
    return Card(card_id=int(moment.timestamp() * 1000), due=moment).to_dict()


def review(card: dict, rating: int, now: datetime) -> dict:
    """The card after one review rated ``rating`` (1-4) at ``now``."""
    updated, _ = SCHEDULER.review_card(Card.from_dict(card), Rating(int(rating)), review_datetime=_utc(now))
    return updated.to_dict()


def make_due(card: dict, now: datetime) -> dict:
    """The same card, due at ``now`` (its memory state kept)."""
    restored = Card.from_dict(card)
    restored.due = _utc(now)
    return restored.to_dict()


def due(card: dict) -> datetime:
    return Card.from_dict(card).due


def stability(card: dict) -> float:
    return float(Card.from_dict(card).stability or 0.0)


def is_mastered(card: dict, ratings: list[int]) -> bool:
    return (
        stability(card) >= MASTERED_STABILITY_DAYS
        and len(ratings) >= 2
        and all(r >= CORRECT_RATING for r in ratings[-2:])
    )


def end_of_day(now: datetime) -> datetime:
    """The end of the learner's local day: a card due at 18:00 is due this morning."""
    local = to_aware(now)
    return datetime.combine(local.date(), time.max, tzinfo=local.tzinfo)
