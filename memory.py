"""Short-term memory: the conversation, its running summary and the token budget.

The turn lifecycle this class serves::

    memory.add_user_message(text)
    memory.add_token_usage(embedding_tokens, "embeddings")
    prepared = memory.prepare_context(background_messages=background)
    ... call the model with prepared.context_messages ...
    memory.finish_turn(reply, prepared.context_messages, usage)   # or
    memory.rollback_last_user_message()                         # on failure

``prepare_context`` never changes the conversation: when older turns must be
folded into the summary it computes the new summary (a model call) and keeps
it as a plan that ``finish_turn`` commits. A failed turn therefore leaves the
conversation exactly as it was.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass

from context_builder import Background
from memora.core.config import (
    DEFAULT_BACKGROUND_TOKENS,
    DEFAULT_RECENT_TOKENS,
    DEFAULT_SUMMARY_TOKENS,
    DEFAULT_TOKEN_BUDGET,
)
from memora.core.errors import ContextBudgetError, MemoraError
from memora.model.tokens import MESSAGE_OVERHEAD_TOKENS, REPLY_PRIMING_TOKENS, TokenCounter, approximate_tokens

# (previous summary, messages to fold, max summary tokens) -> (new summary, tokens spent)
Summarizer = Callable[[str, list[dict], int], "tuple[str, int]"]

USAGE_KINDS = ("chat", "embeddings", "summaries", "extraction", "grading")


@dataclass
class TokenUsage:
    """Tokens spent this session, by what they were spent on."""

    chat: int = 0
    embeddings: int = 0
    summaries: int = 0
    extraction: int = 0
    grading: int = 0  # review answers checked by the model

    def add(self, kind: str, tokens: int | None) -> None:
        if kind not in USAGE_KINDS:
            raise ValueError(f"unknown usage kind {kind!r}")
        setattr(self, kind, getattr(self, kind) + max(0, int(tokens or 0)))

    @property
    def total(self) -> int:
        return self.chat + self.embeddings + self.summaries + self.extraction + self.grading


@dataclass(frozen=True)
class ContextBudget:
    """Input-token limits for one request.

    ``total`` covers everything sent: instructions, background, summary, recent
    messages and the current message. ``recent`` caps the verbatim history
    before older turns are folded into the summary, ``summary`` caps the
    summary, ``background`` caps the profile/digest/hint/notes/memories.
    """

    total: int = DEFAULT_TOKEN_BUDGET
    recent: int = DEFAULT_RECENT_TOKENS
    summary: int = DEFAULT_SUMMARY_TOKENS
    background: int = DEFAULT_BACKGROUND_TOKENS

    def check(self, instructions_tokens: int = 0) -> None:
        if min(self.total, self.recent, self.summary, self.background) <= 0:
            raise ValueError("every token budget must be positive")
        if self.summary >= self.total:
            raise ValueError(f"the summary cap ({self.summary}) must be less than the total budget ({self.total})")
        if instructions_tokens + self.summary + 64 > self.total:
            raise ValueError(
                f"the total budget ({self.total}) leaves no room for a message after the "
                f"instructions ({instructions_tokens}) and the summary ({self.summary})"
            )


def estimate_instruction_tokens(instructions: str) -> int:
    """Instruction tokens for the up-front budget check, by the over-estimating
    counter: loading tiktoken (and maybe downloading its encoding) must not
    delay the first prompt."""
    return approximate_tokens(instructions) + MESSAGE_OVERHEAD_TOKENS if instructions else 0


@dataclass
class PreparedContext:
    """What ``prepare_context`` decided for one request."""

    context_messages: list[dict]
    sections: dict[str, int]
    total_tokens: int
    budget: int
    background: Background
    folded_messages: int = 0
    summary_failed: str | None = None


@dataclass
class _FoldPlan:
    drop: int
    summary: str


class ConversationMemory:
    """The conversation of one session, kept within a token budget."""

    def __init__(
        self,
        *,
        counter: TokenCounter,
        instructions: str = "",
        budget: ContextBudget | None = None,
        summarizer: Summarizer | None = None,
    ):
        self.counter = counter
        self.instructions = instructions
        self.budget = budget or ContextBudget()
        self.budget.check(estimate_instruction_tokens(instructions))
        self.summarizer = summarizer
        self.messages: list[dict] = []
        self.summary: str = ""
        self.usage = TokenUsage()
        self.last_request: dict | None = None
        self._pending: str | None = None
        self._plan: _FoldPlan | None = None
        self._fold_cache: tuple[tuple, str] | None = None

    # -- lifecycle ----------------------------------------------------------------
    def add_user_message(self, text: str) -> None:
        if self._pending is not None:
            raise MemoraError("A turn is already in progress.")
        self._pending = text
        self._plan = None

    def rollback_last_user_message(self) -> None:
        """Forget the message of a failed turn; the conversation is as before it."""
        self._pending = None
        self._plan = None

    def add_token_usage(self, tokens: int | None, kind: str = "embeddings") -> None:
        self.usage.add(kind, tokens)

    def prepare_context(self, background_messages: Sequence[dict] | Background = ()) -> PreparedContext:
        """Fit the request into the budget and return the messages to send.

        Older turns are folded into the running summary when the history no
        longer fits; the background shrinks item by item (memories first, the
        profile last); the current message is never dropped, and a message that
        cannot fit at all raises ``ContextBudgetError`` before anything is sent.
        """
        if self._pending is None:
            raise MemoraError("prepare_context needs a user message first.")
        background = _as_background(background_messages)
        current = {"role": "user", "content": self._pending}
        count = self.counter.count_message
        instructions = self._instruction_tokens()
        current_tokens = count(current)
        fixed = instructions + current_tokens + REPLY_PRIMING_TOKENS
        if fixed > self.budget.total:
            raise ContextBudgetError(
                f"Your message is {current_tokens} tokens; the limit is "
                f"{max(0, self.budget.total - instructions - REPLY_PRIMING_TOKENS)}. Nothing was sent."
            )

        history = list(self.messages)
        summary = self.summary
        drop, summary, failure = self._plan_fold(history, summary, fixed)
        recent = history[drop:]
        recent_tokens = sum(count(m) for m in recent)

        shaped = self._fit_background(background, summary, fixed + recent_tokens)
        developer_tokens = self._developer_tokens(shaped)
        if fixed + recent_tokens + developer_tokens > self.budget.total:
            raise ContextBudgetError(
                "This message does not fit the token budget together with the conversation "
                f"({failure or 'the summary cannot shrink further'}). Nothing was sent; "
                "try a shorter message or type 'reset' to start a fresh conversation."
            )
        self._plan = _FoldPlan(drop=drop, summary=summary) if drop else None

        context = shaped.messages() + [dict(m) for m in recent] + [current]
        summary_tokens = self.counter.count(shaped.summary) if shaped.summary else 0
        sections = {
            "instructions": instructions,
            "background": max(0, developer_tokens - summary_tokens),
            "summary": summary_tokens,
            "recent": recent_tokens,
            "current": current_tokens,
        }
        total = self.counter.count_request(self.instructions, context)
        return PreparedContext(
            context_messages=context,
            sections=sections,
            total_tokens=total,
            budget=self.budget.total,
            background=shaped,
            folded_messages=drop,
            summary_failed=failure,
        )

    def _fit_background(self, background: Background, summary: str, used: int) -> Background:
        """The background with the summary, shrunk item by item to what ``used`` tokens leave."""
        # The summary travels inside the one developer message, with the background.
        # It and the current-time line are outside the background cap: with no
        # summary, ``summary_only`` is the time line alone. Only ``room`` can drop it.
        room = self.budget.total - used
        summary_only = self._developer_tokens(Background(now=background.now, summary=summary))
        limit = min(room, self.budget.background + summary_only)
        shaped = background.with_summary(summary)
        while self._developer_tokens(shaped) > limit:
            smaller = shaped.drop_one()
            if smaller is None:
                break
            shaped = smaller
        if shaped.summary and used + self._developer_tokens(shaped) > self.budget.total:
            # A long message leaves no room even for the summary: send the message without
            # it this turn (the fold plan still keeps it) rather than refuse a message that fits.
            shaped = shaped.without_summary()
        return shaped

    def finish_turn(self, assistant_reply: str, context_messages: Sequence[dict], usage=None) -> None:
        """Commit the turn: the fold plan, the user message and the reply."""
        if self._pending is None:
            raise MemoraError("finish_turn without a pending user message.")
        if not assistant_reply.strip():  # an empty reply is a failed turn: it is never kept
            raise MemoraError("The model returned an empty reply; that message was not kept.")
        if self._plan is not None:
            self.messages = self.messages[self._plan.drop :]
            self.summary = self._plan.summary
        self.messages.append({"role": "user", "content": self._pending})
        self.messages.append({"role": "assistant", "content": assistant_reply})
        tokens = _usage_total(usage)
        if tokens is None:
            tokens = self.counter.count_request(self.instructions, context_messages) + self.counter.count(
                assistant_reply
            )
        self.usage.add("chat", tokens)
        self._pending = None
        self._plan = None

    def note_request(self, prepared: PreparedContext, at: str) -> None:
        """What the last request sent, section by section ('why', 'status')."""
        self.last_request = {
            "sections": prepared.sections,
            "total": prepared.total_tokens,
            "budget": prepared.budget,
            "at": at,
        }

    def rewrite(self, rewrite: Callable[[str], str]) -> bool:
        """Pass every kept message and the summary through ``rewrite`` (what 'forget'
        does to a forgotten text); True when any changed."""
        messages = [{**m, "content": rewrite(m["content"])} for m in self.messages]
        summary = rewrite(self.summary)
        changed = summary != self.summary or any(a["content"] != b["content"] for a, b in zip(messages, self.messages))
        self.messages, self.summary = messages, summary
        return changed

    def reset(self) -> None:
        """A fresh conversation: history and summary go, usage stays."""
        self.messages = []
        self.summary = ""
        self._pending = None
        self._plan = None
        self._fold_cache = None

    # -- persistence ----------------------------------------------------------------
    def to_state(self) -> dict:
        return {
            "messages": [dict(m) for m in self.messages],
            "summary": self.summary,
            "usage": asdict(self.usage),
            "last_request": self.last_request,
        }

    def load_state(self, state: dict) -> None:
        # An empty reply kept by an older version is dropped: it would teach the model to answer nothing.
        self.messages = [
            {"role": m["role"], "content": str(m["content"])}
            for m in state.get("messages", [])
            if m.get("role") in ("user", "assistant") and (m["role"] == "user" or str(m.get("content") or "").strip())
        ]
        self.summary = str(state.get("summary") or "")
        usage = state.get("usage") or {}
        self.usage = TokenUsage(**{k: int(usage.get(k, 0) or 0) for k in USAGE_KINDS})
        self.last_request = state.get("last_request")

    # -- internals --------------------------------------------------------------
    def _instruction_tokens(self) -> int:
        return self.counter.count(self.instructions) + MESSAGE_OVERHEAD_TOKENS if self.instructions else 0

    def _summary_reserve(self) -> int:
        """Room a full-size summary needs: its cap plus the developer message framing."""
        framing = self._developer_tokens(Background(summary="-"))
        return framing + self.budget.summary

    def _developer_tokens(self, background: Background) -> int:
        return sum(self.counter.count_message(m) for m in background.messages())

    def _plan_fold(self, history: list[dict], summary: str, fixed: int) -> tuple[int, str, str | None]:
        """How many of the oldest messages to fold, the summary after folding, and
        why folding failed (if it did)."""
        count = self.counter.count_message
        history_tokens = sum(count(m) for m in history)
        allowance = max(0, min(self.budget.recent, self.budget.total - fixed - self._summary_reserve()))
        if history_tokens <= allowance:
            return 0, summary, None
        # Fold whole user/assistant pairs until the rest fits in half the
        # allowance, so a summary call is needed once every few turns, not every turn.
        # The last exchange stays verbatim while it fits the allowance, even when it is
        # longer than that half (a long explanation): the next message so often refers to
        # it ("the second example") that a summary of it would not do.
        target = allowance // 2
        drop, remaining = 0, history_tokens
        while drop < len(history) and remaining > target:
            if len(history) - drop <= 2 and remaining <= allowance:
                break
            step = 2 if drop + 1 < len(history) else 1
            remaining -= sum(count(m) for m in history[drop : drop + step])
            drop += step
        folded = history[:drop]
        key = (summary, tuple((m["role"], m["content"]) for m in folded))
        if self._fold_cache is not None and self._fold_cache[0] == key:
            return drop, self._fold_cache[1], None
        if self.summarizer is None:
            failure = "no summarizer is configured"
        else:
            try:
                new_summary, spent = self.summarizer(summary, folded, self.budget.summary)
                self.usage.add("summaries", spent)
                new_summary = self.counter.truncate((new_summary or "").strip(), self.budget.summary)
                if new_summary:
                    self._fold_cache = (key, new_summary)
                    return drop, new_summary, None
                failure = "the summary came back empty"
            except MemoraError as error:
                failure = f"the summary call failed: {error}"
            except Exception as error:  # a failing summary must never lose the turn
                failure = f"the summary call failed: {type(error).__name__}"
        # Summary failed: keep the whole window if it still fits the hard budget.
        return 0, summary, failure


def _as_background(background_messages) -> Background:
    if isinstance(background_messages, Background):
        return background_messages
    messages = list(background_messages or [])
    if not messages:
        return Background()
    raise TypeError("prepare_context expects the Background built by build_background_messages")


def _usage_total(usage) -> int | None:
    if usage is None:
        return None
    if isinstance(usage, int):
        return usage
    total = getattr(usage, "total_tokens", None)
    if total is None and isinstance(usage, dict):
        total = usage.get("total_tokens")
    return int(total) if total is not None else None
