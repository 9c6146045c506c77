"""What Memora knows about models: reasoning efforts and OpenAI's shutdown dates.

**Reasoning.** A model's thinking counts inside ``max_output_tokens``: a cap can
end a response before any text. Structured calls and the summary fill a schema
from a short input, so they ask for the least thinking the model takes; the
tutor's reply asks for ``low`` (or the least above it), which keeps it quick
(``effort_for``; ``MEMORA_REASONING_EFFORT`` overrides it per kind). OpenAI's
families take the efforts of a table (``REASONING_EFFORTS``, first match wins);
any other server's model gets ``none`` and ``low``, which every such server
reads (docs/servers.md), and one that refuses them is asked again without.

**Shutdown dates** come from the installed SDK, whose ``ChatModel`` type lists
deprecated model names with their announced shutdown date, so Memora learns of
a new announcement with an SDK upgrade and no code change.
"""

from __future__ import annotations

import functools
import importlib.util
import re
from datetime import date
from pathlib import Path

from memora.core.config import CHAT, DEFAULT_MODEL, EFFORTS, NO_REASONING
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
ANY_SERVER_EFFORTS = ("none", "low")  # what every other server reads (see above)

# Output tokens a cap leaves for the thinking an effort may do, until the server
# has reported how much the model really thinks (``llm.ModelClient.room``). A cap
# only bounds: the tokens used are billed, not the cap.
REASONING_ROOM = {"none": 0, "minimal": 512, "low": 2048, "medium": 6144, "high": 16384, "xhigh": 32768, "max": 32768}


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


def effort_for(kind: str, setting: str | None, model: str, *, on_openai: bool) -> str | None:
    """The effort a call of ``kind`` asks for (None: no parameter): what
    ``MEMORA_REASONING_EFFORT`` (``setting``) says of it (``medium`` sets the reply's,
    ``off`` every call's, ``chat:low,structured:minimal`` each kind's), else the least
    the model takes, or for the reply ``low`` or the least above it."""
    for part in filter(None, (setting or "").split(",")):
        name, _, effort = part.strip().rpartition(":")
        if name == kind or (not name and (kind == CHAT or effort == NO_REASONING)):
            return None if effort == NO_REASONING else effort
    efforts = efforts_for(model) if on_openai else ANY_SERVER_EFFORTS
    if not efforts:
        return None
    floor = EFFORTS.index(CHAT_EFFORT) if kind == CHAT else 0
    return next((e for e in efforts if EFFORTS.index(e) >= floor), efforts[-1])


_DEPRECATION = re.compile(r"^- ((?:\"[^\"]+\",?\s*)+):\s*Announced shutdown\s+date:\s*(\d{4}-\d\d-\d\d)", re.M)


@functools.cache
def shutdown_dates() -> dict[str, date]:
    """Model name -> announced shutdown date, as the installed SDK lists them
    (the "Deprecated values" note of ``openai.types.shared.chat_model``). Empty
    when the SDK has no such note or cannot be read."""
    try:  # read, not imported: importing the SDK costs most of a second ('status' asks this)
        folder = Path(importlib.util.find_spec("openai").origin).parent  # type: ignore[union-attr,arg-type]
        source = (folder / "types" / "shared" / "chat_model.py").read_text(encoding="utf-8")
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
