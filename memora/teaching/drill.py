"""``review``: a short drill of the ledger's due cards.

Each card asks one exercise made from the learner's own example ("Fix this
sentence: ..."). With a model, one structured call grades the answer
(``ReviewGrade``); without one, Memora shows the answer and the learner rates
themselves 1-4, as in Anki. Every answer is saved the moment it is rated, so
an empty line, ``stop``, end of input or Ctrl-C ends the drill with everything
answered kept. A grading call that fails (not valid JSON, the server down)
turns that one card into a self-rating: the answer typed is not lost.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel

from memora.core.errors import MemoraError, ModelNotConfigured
from memora.core.text_utils import clean_text, counted, quoted, shorten
from memora.model.prompts import GRADING_PROMPT, PRACTICE_PROMPT
from memora.teaching import spaced
from memora.teaching.activity import ActivityLog
from memora.teaching.ledger import MAX_MISTAKE_CHARS, Example, LedgerStore, Mistake, same_correction

DEFAULT_DRILL_SIZE = 10
STOP_WORDS = {"", "stop", "quit", "exit"}
SELF_RATING_PROMPT = "How well did you know it? 1 again, 2 hard, 3 good, 4 easy: "
ANSWER_PROMPT = "Your answer: "


class ReviewGrade(BaseModel):
    verdict: Literal["correct", "partly", "wrong"]
    feedback: str


class PracticeSentence(BaseModel):
    id: str
    wrong: str
    right: str


class PracticeSentences(BaseModel):
    sentences: list[PracticeSentence]


MAX_FACTS_SHOWN = 6  # what the practice call is told about the learner: a few lines, not the memory


def exercise(mistake: Mistake) -> str | None:
    """The drill's question for a card; None when its example is gone (edited away)."""
    if (example := mistake.latest) is None:
        return None
    if not mistake.is_mistake:
        return f"What does {quoted(example.original, 80, end='')} mean?"
    return f"Fix this sentence: {quoted(example.original, 200, end='')}"


@dataclass
class DrillSummary:
    answered: int = 0
    correct: int = 0
    partly: int = 0
    skipped: int = 0
    stopped: bool = False
    unrated: bool = False  # the drill ended after an answer was typed, before it was rated

    def line(self, left: int) -> str:
        # An answer that was typed but never rated cannot be scheduled: its card is
        # left as it was, and the learner is told so rather than "nothing answered".
        unrated = "; your last answer was not rated, so its card is unchanged" if self.unrated else ""
        if self.answered == 0 and not self.skipped:
            if not self.stopped:
                return "Review done."
            return (
                f"Review stopped: no answer saved{unrated}."
                if unrated
                else "Review stopped: nothing answered, nothing changed."
            )
        # Each answer as what it means for the learner: right, partly right, or to practise again.
        wrong = self.answered - self.correct - self.partly
        marks = [(self.correct, "right"), (self.partly, "partly right"), (wrong, "to practise again")]
        saved = f"{counted(self.answered, 'answer')} saved ({', '.join(f'{n} {what}' for n, what in marks if n)})"
        if self.stopped:
            rest = f"; {counted(left, 'card')} left for later" if left else ""
            return f"Review stopped: {saved}{unrated}{rest}."
        return f"Review done: {saved}."


class Drill:
    """One run of ``review`` over a console (``read``/``say``)."""

    def __init__(
        self,
        *,
        ledger: LedgerStore,
        activity: ActivityLog,
        console,
        clock: Callable,
        model=None,  # llm.ModelClient, or None: self-rating
        on_tokens: Callable[[int], None] = lambda n: None,
        facts: Callable[[], list[str]] = lambda: [],
    ):
        self.ledger = ledger
        self.activity = activity
        self.console = console
        self.clock = clock
        self.model = model if model is not None and getattr(model, "configured", False) else None
        self.on_tokens = on_tokens
        self.facts = facts
        self.fresh: dict[str, tuple[str, str]] = {}  # card id -> (wrong, right): a new sentence to fix

    def run(self, limit: int = DEFAULT_DRILL_SIZE) -> str:
        cards = self.ledger.due(self.clock())[:limit]
        if not cards:
            return "Nothing to review today. New mistakes from your messages become cards." + self._later()
        self.fresh = self._practice(cards)
        how = "I'll check each answer" if self.model else "You'll see the answer and rate yourself"
        self.console.say(f"Review: {counted(len(cards), 'card')}. {how}; an empty line or 'stop' ends it.")
        summary = DrillSummary()
        for index, card in enumerate(cards, 1):
            try:
                done = self._one(card, index, len(cards), summary)
            except (EOFError, KeyboardInterrupt):
                self.console.say("")  # end the prompt's line before the summary
                done = False
            if not done:
                summary.stopped = True
                return summary.line(len(cards) - index + 1) + self._later()
        return summary.line(0) + self._left()

    def _left(self) -> str:
        """After a full drill: what is still due today, and what waits for later days."""
        left = len(self.ledger.due(self.clock()))
        return (f" {counted(left, 'more card')} due today: type review to go on." if left else "") + self._later()

    def _later(self) -> str:
        """One sentence on the cards today's limits hold back, and when they come (``ledger.schedule``)."""
        plan, per_day, new_per_day = (
            self.ledger.schedule(self.clock()),
            self.ledger.reviews_per_day,
            self.ledger.new_per_day,
        )
        parts = []
        for new, what, order in (
            (False, "overdue card{s} come{v} back", f"at most {per_day} a day, the most urgent first"),
            (True, "new card{s} start{v}", f"{new_per_day} new a day, the oldest first"),
        ):
            if held := [m for m in plan.held if m.is_new == new]:
                days, s = (max(plan.day[m.id] for m in held) - plan.today).days, "s" if len(held) != 1 else ""
                when = "tomorrow" if days == 1 else f"over the next {days} days"
                parts.append(f"{len(held)} {what.format(s=s, v='' if s else 's')} {when} ({order})")
        text = "; ".join(parts)
        return f" {text[0].upper()}{text[1:]}." if parts else ""

    def _practice(self, cards: list[Mistake]) -> dict[str, tuple[str, str]]:
        """With a model, a fresh sentence about the learner's life for each mistake
        drilled before: the same fix in new words shows it was learned, not the one
        sentence remembered. The first drill of a card keeps the learner's own
        sentence. A sentence is used only when it makes exactly the same correction
        (``ledger.same_correction``); any other card, or a failed call, keeps the
        learner's own, and nothing is said (the drill is the same drill)."""
        wanted = {c.id: (c, e) for c in cards if c.is_mistake and c.reviews and (e := c.latest)}
        facts = self.facts()[:MAX_FACTS_SHOWN] if self.model is not None and wanted else []
        if self.model is None or not facts:
            return {}
        payload = json.dumps(
            {
                "facts": facts,
                "mistakes": [
                    {"id": c.id, "wrong": e.original, "right": e.corrected, "rule": c.rule} for c, e in wanted.values()
                ],
            },
            ensure_ascii=False,
        )
        try:
            written, tokens = self.model.parse(
                instructions=PRACTICE_PROMPT, input_text=payload, text_format=PracticeSentences, what="Practice"
            )
        except MemoraError:
            return {}
        self.on_tokens(tokens)
        fresh = {}
        for sentence in written.sentences:
            card, example = wanted.get(sentence.id.strip(), (None, None))
            wrong, right = clean_text(sentence.wrong), clean_text(sentence.right)
            if example is None or not wrong or len(wrong) > MAX_MISTAKE_CHARS or len(right) > MAX_MISTAKE_CHARS:
                continue
            if same_correction((wrong, right), (example.original, example.corrected)):
                fresh[sentence.id.strip()] = (wrong, right)
        return fresh

    def _one(self, card: Mistake, index: int, total: int, summary: DrillSummary) -> bool:
        """Ask one card; False when the learner ended the drill."""
        current = self.ledger.get(card.id)  # another terminal may have changed or forgotten it
        example, question = (current.latest, exercise(current)) if current is not None else (None, None)
        if question is not None and card.id in self.fresh:
            question = f"Fix this sentence: {quoted(self.fresh[card.id][0], 200, end='')}"
        if current is None or example is None or question is None:
            why = (
                "it was forgotten"
                if current is None
                else f"its example was edited away ('mistakes forget {card.id}' removes it)"
            )
            self.console.say(f"Skipped card {card.id}: {why}.")
            summary.skipped += 1
            return True
        self.console.say(f"[{index}/{total}] {question}")
        answer = self.console.read(ANSWER_PROMPT).strip()
        if answer.lower() in STOP_WORDS:
            return False
        summary.unrated = True  # until the rating is saved
        rating = self._grade(current, example, question, answer)
        if rating is None:
            return False
        summary.unrated = False
        return self._save(current, rating, summary)

    def _grade(self, card: Mistake, example: Example, question: str, answer: str) -> int | None:
        if card.id in self.fresh:
            example = Example(original=self.fresh[card.id][0], corrected=self.fresh[card.id][1], seen_at=self.clock())
        if self.model is not None:
            payload = json.dumps(
                {"exercise": question, "expected": example.corrected, "rule": card.rule, "answer": answer},
                ensure_ascii=False,
            )
            try:
                grade, tokens = self.model.parse(
                    instructions=GRADING_PROMPT, input_text=payload, text_format=ReviewGrade, what="Grading"
                )
            except ModelNotConfigured:
                self.model = None
            except MemoraError as error:
                # One failure is enough: a server that is down would fail (and keep the
                # learner waiting) once a card, so the rest of the drill is self-rated.
                self.model = None
                self.console.say(
                    f"Could not grade this answer ({shorten(str(error), 120)}); rate it yourself, "
                    "and the rest of this review too."
                )
            else:
                self.on_tokens(tokens)
                self.console.say(
                    f"{grade.verdict.capitalize()}: {shorten(grade.feedback, 200)} "
                    f"Expected: {quoted(example.corrected, 200, end='')}"
                )
                return spaced.VERDICT_RATINGS[grade.verdict]
        rule = f" ({shorten(card.rule, 120)})" if card.is_mistake else ""  # a word's rule is its meaning again
        self.console.say(f"Answer: {quoted(example.corrected, 200, end='')}{rule}")
        return self._self_rating()

    def _self_rating(self) -> int | None:
        while True:
            reply = self.console.read(SELF_RATING_PROMPT).strip().lower()
            if reply in STOP_WORDS:
                return None
            if reply in ("1", "2", "3", "4"):
                return int(reply)
            self.console.say("Type 1, 2, 3 or 4 (or an empty line to stop).")

    def _save(self, card: Mistake, rating: int, summary: DrillSummary) -> bool:
        now = self.clock()
        saved = self.ledger.review(card.id, rating, now)
        if saved is None:
            self.console.say(f"Card {card.id} was forgotten meanwhile; this answer was not saved.")
            summary.skipped += 1
            return True
        correct = rating >= spaced.CORRECT_RATING
        self.activity.record_review(correct, now)
        summary.answered += 1
        summary.correct += int(correct)
        summary.partly += int(rating == spaced.VERDICT_RATINGS["partly"])
        next_in = spaced.in_days(saved.due, self.ledger.today(now))
        if saved.mastered_at is not None and card.mastered_at is None:
            self.console.say(f"Mastered: {shorten(card.rule, 100)}; next {next_in}.")
        else:
            self.console.say(f"Next {next_in} ({saved.due:%a %d %b}).")
        return True
