"""What Memora knows about OpenAI's models: reasoning efforts and shutdown dates.

**Reasoning.** OpenAI's current small models reason before they answer, and
their reasoning tokens count inside ``max_output_tokens``: an 800-token cap can
end a response before any text. Each call kind gets its own effort:

* structured calls (extraction, decisions, grading) and the summary: the
  lowest effort the model takes. They fill a schema from a short input, and
  reasoning tokens there are pure cost and latency;
* the tutor's reply: ``low`` (or the lowest the model takes above it), which
  keeps replies quick; ``MEMORA_REASONING_EFFORT`` sets it, ``off`` sends no
  reasoning parameter to any call.

The efforts each family takes are a table (``REASONING_EFFORTS``), first match
wins. A model the table does not know (any model on another server) gets no
reasoning parameter unless ``MEMORA_REASONING_EFFORT`` asks for one, and a 400
naming the parameter is answered once without it (``llm.py``).

**Output room.** The caps Memora sets are for visible text; the cap sent adds
``REASONING_ROOM`` for the effort used, so reasoning cannot starve the reply.
A cap is a ceiling, not a charge: only the tokens used are billed.

**Shutdown dates** come from the installed SDK, whose ``ChatModel`` type lists
deprecated model names with their announced shutdown date, so Memora learns of
a new announcement with an SDK upgrade and no code change.
"""

from __future__ import annotations

import functools
import re
from datetime import date
from pathlib import Path

from memora.core.config import DEFAULT_MODEL, EFFORTS
from memora.core.text_utils import counted

CHAT_EFFORT = "low"

# (model name pattern, the efforts it takes, lowest first). First match wins;
# a model that matches nothing is not known to reason.
_DATED = r"(-\d{4}-\d\d-\d\d)?"
REASONING_EFFORTS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (r"gpt-\d+(\.\d+)?-chat(-latest)?", ()),  # the chat aliases take no effort
    (r"gpt-5-pro" + _DATED, ("high",)),
    (r"gpt-\d+(\.\d+)?-pro" + _DATED, ("medium", "high", "xhigh")),
    (r"gpt-5(-mini|-nano|-codex)?" + _DATED, ("minimal", "low", "medium", "high")),
    (r"gpt-5\.1(-codex)?(-mini|-max)?" + _DATED, ("none", "low", "medium", "high")),
    (r"gpt-(5\.([2-9]|\d\d+)|[6-9](\.\d+)?)\S*", ("none", "low", "medium", "high", "xhigh")),
    (r"o\d(-mini|-pro)?" + _DATED, ("low", "medium", "high")),
)

# Output tokens added to a cap for the reasoning an effort may use. Measured
# reasoning on short tutoring turns stays well inside these; a cap only bounds.
REASONING_ROOM = {"none": 0, "minimal": 512, "low": 2048, "medium": 6144, "high": 16384, "xhigh": 32768, "max": 32768}
# A model that reasons at its own default (the parameter was refused, or the
# server's model thinks by itself): room for a medium effort.
UNKNOWN_ROOM = REASONING_ROOM["medium"]


def base_model(model: str) -> str:
    """The OpenAI model a name stands for: a fine-tune (``ft:gpt-5-mini-2025-08-07:org::id``)
    is its base model's, and a gateway's ``openai/`` prefix is dropped."""
    name = model.strip().lower().removeprefix("openai/")
    if name.startswith("ft:"):
        name = name[3:].split(":", 1)[0]
    return name


def efforts_for(model: str) -> tuple[str, ...] | None:
    """The efforts ``model`` takes, lowest first; None when it is not known to reason."""
    name = base_model(model)
    for pattern, efforts in REASONING_EFFORTS:
        if re.fullmatch(pattern, name):
            return efforts or None
    return None


def lowest_effort(model: str) -> str | None:
    efforts = efforts_for(model)
    return efforts[0] if efforts else None


def chat_effort(model: str) -> str | None:
    """``low``, or the lowest effort above it that the model takes."""
    efforts = efforts_for(model)
    if not efforts:
        return None
    floor = EFFORTS.index(CHAT_EFFORT)
    return next((e for e in efforts if EFFORTS.index(e) >= floor), efforts[-1])


def known_model(model: str) -> bool:
    """Whether the table or the SDK knows ``model`` (a reasoning model or not); an
    unknown name on OpenAI (an Azure deployment, a new model) may reason."""
    if efforts_for(model) is not None or any(re.fullmatch(p, base_model(model)) for p, _ in REASONING_EFFORTS):
        return True
    try:
        from typing import get_args

        from openai.types.shared.chat_model import ChatModel

        return base_model(model) in get_args(ChatModel)
    except Exception:
        return False


def room_for(effort: str | None, *, reasons: bool) -> int:
    """Output tokens to add to a cap for reasoning (``reasons``: the model may reason
    even with no effort sent)."""
    if effort is not None:
        return REASONING_ROOM.get(effort, UNKNOWN_ROOM)
    return UNKNOWN_ROOM if reasons else 0


_DEPRECATION = re.compile(r"^- ((?:\"[^\"]+\",?\s*)+):\s*Announced shutdown\s+date:\s*(\d{4}-\d\d-\d\d)", re.M)


@functools.cache
def shutdown_dates() -> dict[str, date]:
    """Model name -> announced shutdown date, as the installed SDK lists them
    (the "Deprecated values" note of ``openai.types.shared.chat_model``). Empty
    when the SDK has no such note or cannot be read."""
    try:
        import openai.types.shared.chat_model as chat_model

        source = Path(chat_model.__file__).read_text(encoding="utf-8")
    except Exception:
        return {}
    note = source.split('"""Deprecated values:', 1)
    if len(note) != 2:
        return {}
    dates: dict[str, date] = {}
    text = re.sub(r"\n\s+", " ", note[1])  # one line per item: the note wraps them
    for names, day in _DEPRECATION.findall(text):
        for name in re.findall(r"\"([^\"]+)\"", names):
            dates[name] = date.fromisoformat(day)
    return dates


def shutdown_date(model: str) -> date | None:
    return shutdown_dates().get(model.strip())


def shutdown_note(model: str, today: date) -> str | None:
    """One line when OpenAI has shut ``model`` down, or will within 30 days; else None."""
    day = shutdown_date(model)
    if day is None:
        return None
    left = (day - today).days
    if left > 30:
        return None
    when = f"was shut down on {day.isoformat()}"
    if left > 0:
        when = f"shuts down on {day.isoformat()} (in {counted(left, 'day')})"
    return f"OpenAI's model {model} {when}: set MEMORA_MODEL to a current one, for example {DEFAULT_MODEL}."
