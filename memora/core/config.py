"""Settings and every path Memora reads or writes, from one place.

All data lives under one data folder: beside ``chatbot.py`` by default, moved by
``MEMORA_HOME`` or ``--data-dir``. The default learner keeps the original
file names at the top of that folder (a data folder from before learners
existed opens as it is); other learners (``--user NAME``) get a
folder of their own under ``users/``. Long-term memories of every learner live
in ``memora_db/``, one Chroma collection and one catalog file per learner.
"""

from __future__ import annotations

import errno
import os
import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from urllib.parse import urlsplit

from memora.core.errors import ConfigError

# The values some settings take. They are the settings' vocabulary, so they live
# here; the model layer (model_facts, servers) reads them from here.
# The default model: one the pinned SDK does not list as deprecated
# (tests/test_server_compat.py checks that against the SDK's own list).
DEFAULT_MODEL = "gpt-5.4-mini"
EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh", "max")
NO_REASONING = "off"  # MEMORA_REASONING_EFFORT=off: never send the parameter
BACKGROUND_ROLES = ("developer", "system")
# The kinds of call, each with its own effort.
CHAT, STRUCTURED = "chat", "structured"


def is_openai_url(base_url: str | None) -> bool:
    """OpenAI itself (no base URL, or one of OpenAI's or Azure OpenAI's hosts)."""
    if not base_url:
        return True
    host = (urlsplit(base_url).hostname or "").lower()
    return host == "api.openai.com" or host.endswith((".openai.com", ".openai.azure.com"))


BASE_DIR = Path(__file__).resolve().parents[2]  # the folder of chatbot.py
# The tutor's notes ship inside the package, so an installed Memora has them too.
KNOWLEDGE_DIR = Path(__file__).resolve().parents[1] / "notes"


def default_data_dir(code_dir: Path = BASE_DIR, env: Mapping[str, str] | None = None) -> Path:
    """Where data lives unless ``MEMORA_HOME`` / ``--data-dir`` say otherwise.

    Run from a checkout (``python chatbot.py``), that is beside ``chatbot.py``, as
    it always was. Installed (``pip install .`` / ``pipx``, the ``memora``
    command), the code sits in a site-packages folder that is shared, replaced on
    upgrade and may not be writable, so data goes to the user's data folder
    instead: ``$XDG_DATA_HOME/memora``, by default ``~/.local/share/memora``.
    """
    if not any(part in ("site-packages", "dist-packages") for part in code_dir.parts):
        return code_dir
    env = os.environ if env is None else env
    base = Path(env["XDG_DATA_HOME"]).expanduser() if env.get("XDG_DATA_HOME") else Path.home() / ".local" / "share"
    return base / "memora"


DEFAULT_USER = "default"
OPENAI_EMBEDDING_MODEL = "text-embedding-3-small"
LOCAL_EMBEDDING_MODEL = "all-MiniLM-L6-v2"

# Token budget defaults. These caps are sent, or nearly, on every turn, so they
# are what a long conversation costs (bench/tokens_per_turn.py):
# - recent 500: the verbatim window. A tutoring exchange needs the last few turns
#   word for word, and 500 tokens are two or three exchanges of a short question
#   and a reply of a few sentences. Past the cap the oldest turns are folded down to
#   half of it, and the last exchange always stays verbatim while it fits (memory.py),
#   so a long explanation survives the fold that follows it. Half is the balance:
#   for the same turns kept after a fold, a wider window (folded further down)
#   costs every request more than its fewer summary calls save, and a narrower one
#   saves little while the reply waits for a summary call more often.
# - summary 150: the running summary of everything older (the prompt asks for at
#   most 90 words). It only has to carry the thread: what was practised, open
#   questions, promised follow-ups; facts about the learner and their mistakes are
#   stored apart and come back through the digest, retrieval and the mistake ledger.
# - background 1200: a ceiling, not a typical size (a usual background is ~500
#   tokens). Only a turn that carries every section at its largest (the capped
#   digest, two mistakes, a follow-up, two knowledge notes, five memories) comes
#   near it; a lower cap would drop retrieved memories, which go first, on exactly
#   the turns where notes and memories are both relevant.
# - total 4000: room for a long question on top of all that.
# Every figure is configurable.
DEFAULT_TOKEN_BUDGET = 4000
DEFAULT_RECENT_TOKENS = 500
DEFAULT_SUMMARY_TOKENS = 150
DEFAULT_BACKGROUND_TOKENS = 1200
DEFAULT_MAX_OUTPUT_TOKENS = 800
DEFAULT_TIMEOUT_SECONDS = 60.0
DEFAULT_MAX_RETRIES = 2
DEFAULT_MEMORY_CAP = 2000
DEFAULT_RECENCY_HALF_LIFE_DAYS = 180.0
DEFAULT_PROACTIVE_DAYS = 3
# Items per profile list (goals, preferences): enough for anyone, and it keeps
# the profile, which is sent every turn, from growing without end.
DEFAULT_MAX_PROFILE_ITEMS = 100
# Review (spaced.py, ledger.py): the hour a learner's day starts, as in Anki, so a
# late-night session still counts as the evening's day (MEMORA_DAY_START); new
# cards a day, so a new mistake is drilled within a day or two (MEMORA_NEW_CARDS);
# answers to earlier cards a day, three drills, so a break's backlog is spread
# over the next days (MEMORA_REVIEWS_PER_DAY).
DEFAULT_DAY_START = 4
DEFAULT_NEW_CARDS = 5
DEFAULT_REVIEWS_PER_DAY = 30
# The Responses API refuses a max_output_tokens below 16.
MIN_OUTPUT_TOKENS = 16

# Letters and digits of any script ("李明", "José"), "_" and "-": never a path separator, a dot or a space.
_USER_NAME = re.compile(r"[^\W_][\w-]{0,31}")


def validate_user_name(name: str) -> str:
    """Return the canonical (NFC, lower-case) learner name or raise ConfigError.

    Names are 1-32 letters or digits of any script, ``_`` or ``-``, starting with
    a letter or digit, so none can name a path outside the data folder (``../x``,
    ``/etc``) or a hidden file.
    """
    name = unicodedata.normalize("NFC", (name or "").strip())
    if not _USER_NAME.fullmatch(name):
        raise ConfigError(
            f"Invalid learner name {name[:40]!r}: use 1-32 letters (any language), digits, '_' or '-', "
            "starting with a letter or digit."
        )
    return name.lower()


@dataclass(frozen=True)
class UserPaths:
    """The files of one learner."""

    user: str
    folder: Path
    profile: Path
    session: Path
    proposals: Path
    input_history: Path
    mistakes: Path  # the mistake ledger and its review cards
    activity: Path  # counts per day, for 'progress'
    kept_pairs: Path  # the conflicting memories the learner kept both of (ids only)

    @property
    def learner_files(self) -> tuple[Path, ...]:
        """Every file of this learner outside the memory store (what 'forget user' deletes)."""
        return (
            self.profile,
            self.session,
            self.proposals,
            self.input_history,
            self.mistakes,
            self.activity,
            self.kept_pairs,
        )


@dataclass(frozen=True)
class Settings:
    data_dir: Path = field(default_factory=default_data_dir)
    user: str = DEFAULT_USER
    model: str = DEFAULT_MODEL
    embedding_model: str | None = None  # None: OpenAI with an API key and OpenAI's URL, else local
    reasoning_effort: str | None = None  # None: per call kind (model_facts); "off": never sent
    context_tokens: int | None = None  # the model's context window; None: what the server says (servers.py)
    background_role: str | None = None  # None: the role the server reads (servers.py)
    api_key: str | None = field(default=None, repr=False)
    base_url: str | None = None
    token_budget: int = DEFAULT_TOKEN_BUDGET
    recent_tokens: int = DEFAULT_RECENT_TOKENS
    summary_tokens: int = DEFAULT_SUMMARY_TOKENS
    background_tokens: int = DEFAULT_BACKGROUND_TOKENS
    max_output_tokens: int = DEFAULT_MAX_OUTPUT_TOKENS
    timeout: float = DEFAULT_TIMEOUT_SECONDS
    max_retries: int = DEFAULT_MAX_RETRIES
    memory_cap: int = DEFAULT_MEMORY_CAP
    recency_half_life_days: float = DEFAULT_RECENCY_HALF_LIFE_DAYS
    proactive_days: int = DEFAULT_PROACTIVE_DAYS
    max_profile_items: int = DEFAULT_MAX_PROFILE_ITEMS
    day_start: int = DEFAULT_DAY_START
    new_cards: int = DEFAULT_NEW_CARDS
    reviews_per_day: int = DEFAULT_REVIEWS_PER_DAY
    debug: bool = False  # the debug log on stderr (MEMORA_DEBUG)
    chroma_url: str | None = None
    knowledge_dir: Path = KNOWLEDGE_DIR
    no_color: bool = False  # NO_COLOR (no-color.org) or --plain

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides) -> Settings:
        """Build settings from environment variables; ``overrides`` (flags) win."""
        env = os.environ if env is None else env
        values: dict = {}
        home = env.get("MEMORA_HOME")
        values["data_dir"] = Path(home).expanduser() if home else default_data_dir(BASE_DIR, env)
        values["no_color"] = bool(env.get("NO_COLOR"))  # set and not empty, as no-color.org defines it
        if env.get("MEMORA_USER"):
            values["user"] = env["MEMORA_USER"]
        if env.get("MEMORA_MODEL"):
            values["model"] = env["MEMORA_MODEL"].strip()
        if env.get("MEMORA_EMBEDDING_MODEL"):
            values["embedding_model"] = env["MEMORA_EMBEDDING_MODEL"].strip()
        for key, var in (
            ("reasoning_effort", "MEMORA_REASONING_EFFORT"),
            ("background_role", "MEMORA_BACKGROUND_ROLE"),
        ):
            if env.get(var, "").strip():
                values[key] = env[var].strip().lower()
        values["api_key"] = env.get("OPENAI_API_KEY") or None
        values["base_url"] = env.get("OPENAI_BASE_URL") or None
        ints = {
            "token_budget": "MEMORA_TOKEN_BUDGET",
            "recent_tokens": "MEMORA_RECENT_TOKENS",
            "summary_tokens": "MEMORA_SUMMARY_TOKENS",
            "background_tokens": "MEMORA_BACKGROUND_TOKENS",
            "max_output_tokens": "MEMORA_MAX_OUTPUT_TOKENS",
            "context_tokens": "MEMORA_CONTEXT_TOKENS",
            "max_retries": "MEMORA_MAX_RETRIES",
            "memory_cap": "MEMORA_MEMORY_CAP",
            "proactive_days": "MEMORA_PROACTIVE_DAYS",
            "max_profile_items": "MEMORA_MAX_PROFILE_ITEMS",
            "day_start": "MEMORA_DAY_START",
            "new_cards": "MEMORA_NEW_CARDS",
            "reviews_per_day": "MEMORA_REVIEWS_PER_DAY",
        }
        for key, var in ints.items():
            if env.get(var):
                values[key] = _parse_number(var, env[var], int)
        floats = {"timeout": "MEMORA_TIMEOUT", "recency_half_life_days": "MEMORA_RECENCY_HALF_LIFE_DAYS"}
        for key, var in floats.items():
            if env.get(var):
                values[key] = _parse_number(var, env[var], float)
        if env.get("MEMORA_KNOWLEDGE_DIR"):
            values["knowledge_dir"] = Path(env["MEMORA_KNOWLEDGE_DIR"]).expanduser()
        values["debug"] = bool(env.get("MEMORA_DEBUG"))
        chroma_url = chroma_url_from_env(env)
        if chroma_url:
            values["chroma_url"] = chroma_url
        values.update({k: v for k, v in overrides.items() if v is not None})
        settings = cls(**values)
        return settings.validated()

    def validated(self) -> Settings:
        user = validate_user_name(self.user)
        positive = {
            "token budget (MEMORA_TOKEN_BUDGET)": self.token_budget,
            "recent tokens (MEMORA_RECENT_TOKENS)": self.recent_tokens,
            "summary tokens (MEMORA_SUMMARY_TOKENS)": self.summary_tokens,
            "background tokens (MEMORA_BACKGROUND_TOKENS)": self.background_tokens,
            "max output tokens (MEMORA_MAX_OUTPUT_TOKENS)": self.max_output_tokens,
            "context window (MEMORA_CONTEXT_TOKENS)": 1 if self.context_tokens is None else self.context_tokens,
            "memory cap (MEMORA_MEMORY_CAP)": self.memory_cap,
            "profile list limit (MEMORA_MAX_PROFILE_ITEMS)": self.max_profile_items,
            "timeout (MEMORA_TIMEOUT)": self.timeout,
            "recency half-life (MEMORA_RECENCY_HALF_LIFE_DAYS)": self.recency_half_life_days,
        }
        for label, value in positive.items():
            if value <= 0:
                raise ConfigError(f"The {label} must be positive, got {value}.")
        for label, value in (
            ("max output tokens (MEMORA_MAX_OUTPUT_TOKENS)", self.max_output_tokens),
            ("summary tokens (MEMORA_SUMMARY_TOKENS)", self.summary_tokens),
        ):
            if 0 < value < MIN_OUTPUT_TOKENS:  # each is an output cap the API refuses below 16
                raise ConfigError(f"The {label} must be at least {MIN_OUTPUT_TOKENS}, got {value}.")
        for name, _, effort in (p.strip().rpartition(":") for p in (self.reasoning_effort or "").split(",") if p):
            if name not in ("", CHAT, STRUCTURED) or effort not in (*EFFORTS, NO_REASONING):
                raise ConfigError(
                    f"MEMORA_REASONING_EFFORT must be one of {', '.join((*EFFORTS, NO_REASONING))} (the reply's), "
                    f"or chat:EFFORT,structured:EFFORT; got {self.reasoning_effort!r}."
                )
        if self.background_role is not None and self.background_role not in BACKGROUND_ROLES:
            raise ConfigError(
                f"MEMORA_BACKGROUND_ROLE must be developer or system, got {self.background_role!r} "
                "(leave it unset to use the role the server reads)."
            )
        if not 0 <= self.day_start <= 23:
            raise ConfigError(f"MEMORA_DAY_START is the hour a day starts, 0 to 23; got {self.day_start}.")
        if self.new_cards < 0 or self.reviews_per_day < 1:
            raise ConfigError("MEMORA_NEW_CARDS cannot be negative, and MEMORA_REVIEWS_PER_DAY must be positive.")
        if self.max_retries < 0 or self.proactive_days < 0:
            raise ConfigError("MEMORA_MAX_RETRIES and MEMORA_PROACTIVE_DAYS cannot be negative.")
        if not self.model:
            raise ConfigError("The model name (MEMORA_MODEL / --model) cannot be empty.")
        if not str(self.data_dir).strip():  # Path("") would quietly mean the current folder
            raise ConfigError("The data folder (--data-dir / MEMORA_HOME) cannot be empty; name a folder.")
        try:
            data_dir = Path(self.data_dir).expanduser().resolve()
            if data_dir.exists() and not data_dir.is_dir():
                raise ConfigError(f"The data folder {data_dir} is a file, not a folder (--data-dir / MEMORA_HOME).")
        except (RuntimeError, OSError) as error:  # a symlink loop (RuntimeError or ELOOP), a name too long
            reason = (
                "its path goes through a symbolic link that loops back on itself"
                if _is_loop(error)
                else (getattr(error, "strerror", None) or str(error))
            )
            raise ConfigError(
                f"The data folder {self.data_dir} cannot be used: {reason} (--data-dir / MEMORA_HOME)."
            ) from None
        if self.chroma_url is not None:
            validate_chroma_url(self.chroma_url)
        return replace(self, user=user, data_dir=data_dir)

    # -- paths -------------------------------------------------------------
    @property
    def db_dir(self) -> Path:
        return self.data_dir / "memora_db"

    @property
    def users_dir(self) -> Path:
        return self.data_dir / "users"

    def paths_for(self, user: str | None = None) -> UserPaths:
        user = validate_user_name(user or self.user)
        folder = self.data_dir if user == DEFAULT_USER else self.users_dir / user
        return UserPaths(
            user=user,
            folder=folder,
            profile=folder / "user_profile.json",
            session=folder / "memora_session.json",
            proposals=folder / "memora_proposals.json",
            input_history=folder / ".memora_history",
            mistakes=folder / "memora_mistakes.json",
            activity=folder / "memora_activity.json",
            kept_pairs=folder / "memora_kept_pairs.json",
        )

    @property
    def paths(self) -> UserPaths:
        return self.paths_for(self.user)

    @property
    def chat_configured(self) -> bool:
        return bool(self.api_key or self.base_url)

    @property
    def effective_embedding_model(self) -> str:
        """The embedding model name: the explicit setting; else OpenAI's, with a key and
        OpenAI itself; else the local model. A key for another server (LiteLLM, vLLM
        ``--api-key``) says nothing about which embedding models it serves, so it never
        switches embeddings to OpenAI's model there."""
        if self.embedding_model:
            return self.embedding_model
        return OPENAI_EMBEDDING_MODEL if self.api_key and is_openai_url(self.base_url) else LOCAL_EMBEDDING_MODEL


def _is_loop(error: BaseException) -> bool:
    return isinstance(error, RuntimeError) or getattr(error, "errno", None) == errno.ELOOP


def validate_chroma_url(url: str) -> None:
    """A Chroma server address is http(s)://host[:port]; anything else is refused
    here, in one line that names the setting, not later as a connection failure."""
    where = "(--chroma-url / CHROMA_HOST, CHROMA_PORT)"
    try:
        parts = urlsplit(url.strip())
        parts.port  # noqa: B018 -- raises ValueError for a port that is not a number in range
    except ValueError as error:
        raise ConfigError(f"The Chroma server address {url!r} is not a valid URL ({error}) {where}.") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(f"The Chroma server address {url!r} must look like http://host:8000 {where}.")


def chroma_url_from_env(env: Mapping[str, str]) -> str | None:
    host = env.get("CHROMA_HOST")
    if not host:
        return None
    ssl = env.get("CHROMA_SSL", "").strip().lower() in {"1", "true", "yes", "on"}
    port = env.get("CHROMA_PORT") or ("443" if ssl else "8000")
    _parse_number("CHROMA_PORT", port, int)
    return f"{'https' if ssl else 'http'}://{host}:{port}"


def _parse_number(name: str, raw: str, kind: type):
    try:
        return kind(raw.strip())
    except ValueError:
        raise ConfigError(f"{name} must be a number, got {raw!r}.") from None
