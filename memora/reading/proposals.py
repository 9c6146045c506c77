"""Profile changes waiting for the learner's yes or no.

A change to an existing profile value, or a removal, is never applied
silently: a misread message must not quietly overwrite what the learner said
before, while a new goal costs nothing to take back. It is stored here (atomically, so it survives a
restart) and asked about at the end of the reply; ``yes``/``no`` or
``profile confirm``/``profile reject`` settles it.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Literal, Self

from pydantic import BaseModel, ConfigDict, Field

from memora.core.storage import JsonStore
from memora.core.text_utils import normalized_key, quoted
from memora.core.timeutil import system_clock
from user_profile import UserProfileStore

MAX_PENDING = 20
ProposalField = Literal["english_level", "learning_goal", "preference", "review_card"]
Action = Literal["set", "remove", "add"]


class ProfileProposal(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str
    # "review_card": not a profile change but the same kind of yes/no question, asked
    # after the reply: make a word the learner asked about a review card (value: the
    # word, evidence: its meaning).
    field: ProposalField
    action: Action
    value: str
    old_value: str | None = None
    evidence: str = ""
    created_at: datetime

    @classmethod
    def new(cls, field: ProposalField, action: Action, value: str, old_value: str | None, evidence: str) -> Self:
        return cls(
            id=uuid.uuid4().hex[:6],
            field=field,
            action=action,
            value=value,
            old_value=old_value,
            evidence=evidence,
            created_at=system_clock(),
        )

    def question(self) -> str:
        """The one question Memora ends its reply with."""
        if self.field == "review_card":
            return f"Add {quoted(self.value, 60, end='')} to your review cards? (yes/no)"
        if self.field == "english_level" and self.action == "set":
            return (
                f"You mentioned you're {self.value} now. Update your profile level from "
                f"{self.old_value} to {self.value}? (yes/no)"
            )
        if self.field == "english_level":
            return f"Remove your English level ({self.value}) from your profile? (yes/no)"
        label = "goal" if self.field == "learning_goal" else "preference"
        return (
            f"You said {quoted(self.evidence, 80)} "
            f"Remove the {label} {quoted(self.value, 60, end='')} from your profile? (yes/no)"
        )

    def describe(self) -> str:
        if self.field == "review_card":
            return f"review card {quoted(self.value, 60, end='')}"
        if self.field == "english_level" and self.action == "set":
            return f"level {self.old_value} -> {self.value}"
        label = {"english_level": "level", "learning_goal": "goal", "preference": "preference"}[self.field]
        return f"remove {label} {quoted(self.value, 60, end='')}"

    def key(self) -> tuple:
        return (self.field, self.action, normalized_key(self.value))

    def apply(self, profiles: UserProfileStore, ledger=None) -> str:
        """Apply to the profile (a review card: to the ledger); returns the confirmation line."""
        if self.field == "review_card":
            card, added = ledger.add_word(self.value, self.evidence)
            return (
                f"Added {quoted(self.value, 60, end='')} to your review cards ({card.id})."
                if added
                else "That word is already a review card."
            )
        if self.field == "english_level":
            if self.action == "set":
                profiles.set_english_level(self.value)
                return f"Profile updated: English level is now {self.value}."
            profiles.clear_level()
            return "Profile updated: English level removed."
        kind = "goal" if self.field == "learning_goal" else "preference"
        profiles.remove(kind, self.value)
        return f"Profile updated: removed the {kind} {quoted(self.value, 60)}"


class _ProposalFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    version: int = 1
    pending: list[ProfileProposal] = Field(default_factory=list)


class ProposalStore(JsonStore[_ProposalFile]):
    """Pending proposals in ``memora_proposals.json`` (locked, atomic)."""

    schema = _ProposalFile
    label = "pending profile changes"

    def pending(self) -> list[ProfileProposal]:
        return list(self.read().pending)

    def first(self) -> ProfileProposal | None:
        pending = self.pending()
        return pending[0] if pending else None

    def add(self, proposal: ProfileProposal) -> bool:
        with self.lock():
            state = self.copy(self.read())
            if any(p.key() == proposal.key() for p in state.pending):
                return False
            # A newer level proposal replaces an older one: only the latest claim matters.
            if proposal.field == "english_level":
                state.pending = [p for p in state.pending if p.field != "english_level"]
            state.pending.append(proposal)
            state.pending = state.pending[-MAX_PENDING:]
            self.write(state)
            return True

    def take(self, proposal_id: str | None = None) -> ProfileProposal | None:
        """Remove and return one proposal (the first one by default)."""
        with self.lock():
            state = self.copy(self.read())
            for index, proposal in enumerate(state.pending):
                if proposal_id is None or proposal.id == proposal_id:
                    del state.pending[index]
                    self.write(state)
                    return proposal
        return None
