"""Which server Memora talks to, and what that server needs.

Memora speaks the Responses API to whatever ``OPENAI_BASE_URL`` names. The
servers that implement it differ in ways a request cannot see and that cost the
learner their memory without an error, so each difference is a column of
``SERVER_KINDS`` rather than a branch somewhere in the code:

* **the background role.** OpenAI reads the one background message as
  ``developer``. Ollama's ``/v1/responses`` answers 200 and silently drops
  ``developer`` items, and vLLM answers 400 "Unexpected message role" to them
  when the model's chat template has no developer role; every chat template
  reads ``system``. So every server but OpenAI gets the background as
  ``system`` (``MEMORA_BACKGROUND_ROLE`` overrides it), and it travels in the
  request's ``instructions``, after Memora's own: each of these servers turns
  ``instructions`` into the first system message, and one system message is
  all some chat templates take (a second one makes Mistral's and Qwen's raise,
  LM Studio answers 500, and vLLM's gpt-oss path drops system input items).
  It is still one background message, built and budgeted by ``prepare_context``;
  only the wire puts it beside the instructions.
* **strict structured output.** LM Studio ignores ``text.format``; the schema
  then goes into the instructions as well, and a fenced or prefixed answer is
  accepted (``structured.py``).

The kind is told from the base URL (OpenAI's own hosts), else by a cheap probe
of the endpoints only one kind answers: Ollama ``GET /api/version``, vLLM
``GET /version``, LM Studio ``GET /api/v0/models``, LiteLLM
``GET /health/liveliness``; a server that answers none of them is "an
OpenAI-compatible server" and is treated as the careful choice for it. The
probe runs once, when the first model call needs it, and never raises.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

from memora.core.config import is_openai_url

log = logging.getLogger("memora")

PROBE_TIMEOUT_SECONDS = 2.0


@dataclass(frozen=True)
class ServerKind:
    """What one kind of server is and needs."""

    key: str
    label: str
    background_role: str
    role_reason: str  # why that role, for 'why' and 'status'
    strict_output: bool  # enforces text.format (else the schema is also put in the instructions)
    reasoning_known: bool  # Memora knows which reasoning efforts its models take (only OpenAI's)

    @property
    def system_in_instructions(self) -> bool:
        """A system background travels in ``instructions`` (see the module docstring)."""
        return self.key != "openai"


OPENAI = ServerKind(
    "openai", "OpenAI", "developer", "OpenAI reads the developer role below the instructions", True, True
)
COMPATIBLE = ServerKind(
    "compatible",
    "an OpenAI-compatible server",
    "system",
    "every chat template reads the system role, not every one reads developer",
    True,
    False,
)
SERVER_KINDS: dict[str, ServerKind] = {
    kind.key: kind
    for kind in (
        OPENAI,
        ServerKind(
            "ollama",
            "Ollama",
            "system",
            "Ollama's Responses API drops developer messages without an error (ollama/ollama#18305)",
            True,
            False,
        ),
        ServerKind(
            "vllm",
            "vLLM",
            "system",
            "vLLM refuses developer messages when the model's chat template has no developer role",
            True,
            False,
        ),
        ServerKind(
            "lmstudio",
            "LM Studio",
            "system",
            "LM Studio passes messages to the model's chat template, which reads system",
            False,
            False,
        ),
        ServerKind(
            "litellm",
            "LiteLLM",
            "system",
            "LiteLLM hands the background to a chat-completions model, which reads system",
            True,
            False,
        ),
        COMPATIBLE,
    )
}

# (kind, path under the server's root, what the JSON answer must hold): the
# endpoints only that kind answers, cheapest and most distinctive first.
PROBES: tuple[tuple[str, str, Callable[[object], bool]], ...] = (
    ("ollama", "/api/version", lambda body: isinstance(body, dict) and isinstance(body.get("version"), str)),
    ("vllm", "/version", lambda body: isinstance(body, dict) and isinstance(body.get("version"), str)),
    (
        "lmstudio",
        "/api/v0/models",
        lambda body: (
            isinstance(body, dict)
            and isinstance(body.get("data"), list)
            and any(isinstance(m, dict) and "publisher" in m for m in body["data"])
        ),
    ),
    ("litellm", "/health/liveliness", lambda body: isinstance(body, str) and "alive" in body.lower()),
)
# The port each kind listens on unless told otherwise: the evidence left when no probe answers.
DEFAULT_PORTS = {11434: "ollama", 1234: "lmstudio", 4000: "litellm"}


@dataclass(frozen=True)
class ServerInfo:
    """The server Memora talks to, and how that was found out."""

    kind: ServerKind
    evidence: str  # "no OPENAI_BASE_URL", "answered GET /api/version (0.12.6)"...
    where: str  # host[:port], for messages

    def describe(self) -> str:
        return f"{self.kind.label} at {self.where} ({self.evidence})"


def server_root(base_url: str) -> str:
    """The server's root URL: the base URL without its trailing ``/v1``."""
    root = base_url.rstrip("/")
    return root[: -len("/v1")] if root.endswith("/v1") else root


def where(base_url: str | None) -> str:
    if not base_url:
        return "api.openai.com"
    parts = urlsplit(base_url)
    return parts.netloc or base_url


def detect_server(base_url: str | None, get: Callable[[str], object] | None) -> ServerInfo:
    """The kind of server at ``base_url``; ``get(url)`` returns the decoded JSON
    (or text) of a GET, or raises. Never raises itself."""
    if is_openai_url(base_url):
        evidence = "no OPENAI_BASE_URL" if not base_url else "OpenAI's own host"
        return ServerInfo(OPENAI, evidence, where(base_url))
    assert base_url is not None
    root = server_root(base_url)
    answered = _probe_all(root, get) if get is not None else {}
    for key, path, answers in PROBES:
        if path not in answered:
            continue
        body = answered[path]
        if answers(body):
            version = body.get("version") if isinstance(body, dict) else None
            return ServerInfo(
                SERVER_KINDS[key], f"answered GET {path}" + (f" ({version})" if version else ""), where(base_url)
            )
    port = urlsplit(base_url).port
    if port in DEFAULT_PORTS:
        kind = SERVER_KINDS[DEFAULT_PORTS[port]]
        return ServerInfo(kind, f"port {port}, {kind.label}'s default; no probe answered", where(base_url))
    return ServerInfo(COMPATIBLE, "it answered none of the known servers' probes", where(base_url))


def _probe_all(root: str, get: Callable[[str], object]) -> dict[str, object]:
    """Every probe at once (a server that never answers costs one timeout, not four):
    path -> the answer, for the probes that answered."""
    from concurrent.futures import ThreadPoolExecutor

    def one(path: str):
        try:
            return path, get(root + path)
        except Exception as error:  # not this kind, or not reachable
            log.debug("server probe %s: %s", path, type(error).__name__)
            return path, None

    with ThreadPoolExecutor(max_workers=len(PROBES), thread_name_prefix="memora-probe") as pool:
        results = list(pool.map(one, [path for _, path, _ in PROBES]))
    return {path: body for path, body in results if body is not None}


@dataclass(frozen=True)
class RoleChoice:
    role: str
    reason: str

    def describe(self) -> str:
        return f"{self.role}: {self.reason}"


def background_role(server: ServerInfo, override: str | None) -> RoleChoice:
    """The role the background message is sent in, and why."""
    role = override or server.kind.background_role
    reason = "set by MEMORA_BACKGROUND_ROLE" if override else f"{server.describe()}; {server.kind.role_reason}"
    if role == "system" and server.kind.system_in_instructions:
        reason += "; it travels in the request's instructions, which the server makes its one system message"
    return RoleChoice(role, reason)
