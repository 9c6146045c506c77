"""The learner's profile: current state, read directly on every turn.

The profile is not searched, it is read: what the learner is now must reach
every turn, even one where retrieval finds nothing. It holds the
three fields that change how Memora teaches: the CEFR level, the learning goals
and the preferences, plus how much the learner wants to be corrected
(``correction_style``) and the dated history of their level, which
``progress`` shows. It is stored as JSON (``user_profile.json``), written
atomically, and every change is a locked read-modify-write so two terminals on
the same data never lose each other's updates.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from memora.core.config import DEFAULT_MAX_PROFILE_ITEMS
from memora.core.errors import InvalidLevelError, LimitError
from memora.core.storage import JsonStore
from memora.core.text_utils import clean_text, clean_within, normalized_key
from memora.core.timeutil import system_clock

CEFR_LEVELS = ("A1", "A2", "B1", "B2", "C1", "C2")
MAX_PROFILE_VALUE_CHARS = 200
MAX_PROFILE_ITEMS = DEFAULT_MAX_PROFILE_ITEMS

PROFILE_FIELDS = {"goal": "learning_goals", "preference": "preferences"}
# How much the learner wants to be corrected. "important" (the default, also when
# nothing is set) corrects what obscures meaning or keeps coming back; "off" still
# records mistakes in the ledger but asks the tutor not to correct them.
CORRECTION_STYLES = ("all", "important", "off")
DEFAULT_CORRECTION_STYLE = "important"
MAX_LEVEL_HISTORY = 100


class LevelChange(BaseModel):
    """The level the learner had from ``at`` on (None: removed)."""

    model_config = ConfigDict(extra="forbid")

    level: str | None
    at: datetime


def normalize_level(text: str) -> str:
    """``" b1 "`` -> ``"B1"``; anything outside CEFR A1-C2 raises InvalidLevelError."""
    level = clean_text(text or "").upper().replace(" ", "")
    if level not in CEFR_LEVELS:
        shown = clean_text(text or "")[:20] or "(empty)"
        raise InvalidLevelError(f"Unknown level '{shown}'. Valid levels: {', '.join(CEFR_LEVELS)}.")
    return level


def clean_profile_value(text: str, what: str = "value") -> str:
    return clean_within(
        text,
        MAX_PROFILE_VALUE_CHARS,
        empty=f"The {what} cannot be empty.",
        too_long=lambda n: f"The {what} is {n} characters; the limit is {MAX_PROFILE_VALUE_CHARS}.",
    )


class UserProfile(BaseModel):
    """The learner's level, goals and preferences, with the level validated as CEFR."""

    model_config = ConfigDict(extra="forbid")

    english_level: str | None = None
    learning_goals: list[str] = Field(default_factory=list)
    preferences: list[str] = Field(default_factory=list)
    correction_style: Literal["all", "important", "off"] | None = None  # None: the default
    level_history: list[LevelChange] = Field(default_factory=list)

    @property
    def corrections(self) -> str:
        return self.correction_style or DEFAULT_CORRECTION_STYLE

    @field_validator("english_level")
    @classmethod
    def _level(cls, value: str | None) -> str | None:
        return None if value is None else normalize_level(value)

    @field_validator("learning_goals", "preferences")
    @classmethod
    def _items(cls, values: list[str]) -> list[str]:
        return [clean_text(v) for v in values if clean_text(v)]

    def is_empty(self) -> bool:
        """Nothing the background shows (the history is for ``progress``)."""
        return not (self.english_level or self.learning_goals or self.preferences or self.correction_style)


class UserProfileStore(JsonStore[UserProfile]):
    """JSON-backed profile. A missing file is an empty profile; saves only on change."""

    schema = UserProfile
    label = "profile"

    def __init__(
        self,
        path: Path,
        *,
        max_items: int | None = None,
        notify: Callable[[str], None] | None = None,
        clock: Callable[[], datetime] = system_clock,
    ):
        super().__init__(path, notify=notify)
        self.clock = clock
        self.max_items = max_items or MAX_PROFILE_ITEMS
        self.profile = self.read()

    def get(self) -> UserProfile:
        """The current profile, re-read if another process changed the file."""
        self.profile = self.read()
        return self.profile.model_copy(deep=True)

    # -- writing -------------------------------------------------------------
    def _update(self, change: Callable[[UserProfile], None]) -> bool:
        with self.lock():
            current = self.read()
            updated = self.copy(current)
            change(updated)
            last = updated.level_history[-1].level if updated.level_history else None
            if updated.english_level != current.english_level and updated.english_level != last:
                updated.level_history = (
                    updated.level_history + [LevelChange(level=updated.english_level, at=self.clock())]
                )[-MAX_LEVEL_HISTORY:]
            updated = UserProfile.model_validate(updated.model_dump())
            if updated == current:
                self.profile = current
                return False
            self.write(updated)
            self.profile = updated
            return True

    def set_english_level(self, level: str) -> bool:
        level = normalize_level(level)
        return self._update(lambda p: setattr(p, "english_level", level))

    def add_learning_goal(self, goal: str) -> bool:
        return self._add("learning_goals", clean_profile_value(goal, "goal"))

    def add_preference(self, preference: str) -> bool:
        return self._add("preferences", clean_profile_value(preference, "preference"))

    def _add(self, field: str, value: str) -> bool:
        def change(profile: UserProfile) -> None:
            items = getattr(profile, field)
            if any(normalized_key(item) == normalized_key(value) for item in items):
                return
            if len(items) >= self.max_items:
                label = field.replace("_", " ")
                raise LimitError(
                    f"You already have {len(items)} {label} (the limit is {self.max_items}); "
                    f"remove one with 'profile remove ...' first."
                )
            items.append(value)

        return self._update(change)

    def remove(self, kind: str, value: str) -> bool:
        """Remove a goal or preference (matching case- and space-insensitively)."""
        field = PROFILE_FIELDS[kind]
        key = normalized_key(value)

        def change(profile: UserProfile) -> None:
            setattr(profile, field, [i for i in getattr(profile, field) if normalized_key(i) != key])

        return self._update(change)

    def clear_level(self) -> bool:
        return self._update(lambda p: setattr(p, "english_level", None))

    def set_correction_style(self, style: str) -> bool:
        style = (style or "").strip().lower()
        if style not in CORRECTION_STYLES:
            raise LimitError(f"Unknown correction style {clean_text(style)[:20]!r}: use all, important or off.")
        return self._update(lambda p: setattr(p, "correction_style", style))

    def clear(self) -> bool:
        """Empty the profile; the level's history is kept, ending with the removal."""
        return self._update(lambda p: UserProfile.__init__(p, level_history=p.level_history))

    def replace(self, profile: UserProfile) -> bool:
        def change(current: UserProfile) -> None:
            current.english_level = profile.english_level
            current.learning_goals = list(profile.learning_goals)
            current.preferences = list(profile.preferences)
            current.correction_style = profile.correction_style
            current.level_history = list(profile.level_history)

        return self._update(change)

    def has(self, kind: str, value: str) -> bool:
        key = normalized_key(value)
        return any(normalized_key(i) == key for i in getattr(self.get(), PROFILE_FIELDS[kind]))
