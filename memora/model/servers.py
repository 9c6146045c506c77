"""Which server Memora talks to, and what that server needs.

Memora speaks the Responses API to whatever ``OPENAI_BASE_URL`` names. The
servers differ in ways a request cannot see and that cost the learner their
memory without an error, so each difference is a column of ``SERVER_KINDS`` or
a fact the server states (``ServerInfo``), not a branch somewhere in the code:

* **the background role.** OpenAI reads the one background message as
  ``developer``. Ollama's ``/v1/responses`` silently drops ``developer`` items,
  and vLLM answers 400 to them when the chat template has no developer role;
  every template reads ``system``. So every server but OpenAI gets it as
  ``system`` (``MEMORA_BACKGROUND_ROLE`` overrides it), in the request's
  ``instructions`` after Memora's own: each of these servers makes them the
  first system message, and one is all some chat templates take (a second makes
  Mistral's and Qwen's raise, LM Studio answer 500, vLLM's gpt-oss path drop it).
* **strict structured output.** LM Studio ignores ``text.format``: the schema
  also goes into the instructions, and a fenced or prefixed answer is accepted.
* **the model's context window**, which the input budget and the output cap must
  fit in (``llm.ModelClient.fit_context``), and **the temperature** a chat request
  to Ollama must send (it samples at 1.0 otherwise, ``openai/responses.go``).

The kind is told from the base URL (OpenAI's own hosts: nothing is asked), else by
the first of ``PROBES`` to answer: endpoints only one kind answers, each saying the
model's context window (docs/servers.md names their sources). A server answering
none is "an OpenAI-compatible server", or its default port's kind. Never raises.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from memora.core.config import is_openai_url

log = logging.getLogger("memora")

# Ollama's context without a num_ctx in the Modelfile below 23 GiB of VRAM (server/routes.go);
# a larger machine gets more, which only MEMORA_CONTEXT_TOKENS can tell Memora.
OLLAMA_DEFAULT_CONTEXT = 4096
OLLAMA_TEMPERATURE = 0.8  # api.DefaultOptions: what Ollama's own API samples at


@dataclass(frozen=True)
class ServerKind:
    """What one kind of server is and needs."""

    key: str
    label: str
    background_role: str
    role_reason: str  # why that role, for 'why' and 'status'
    strict_output: bool = True  # enforces text.format (else the schema is also put in the instructions)


OPENAI = ServerKind("openai", "OpenAI", "developer", "OpenAI reads the developer role below the instructions")
SERVER_KINDS: dict[str, ServerKind] = {OPENAI.key: OPENAI} | {
    key: ServerKind(key, label, "system", reason, strict_output=key != "lmstudio")
    for key, label, reason in (
        ("ollama", "Ollama", "Ollama's Responses API drops developer messages without an error (ollama/ollama#18305)"),
        ("vllm", "vLLM", "vLLM refuses developer messages when the model's chat template has no developer role"),
        ("lmstudio", "LM Studio", "LM Studio passes messages to the model's chat template, which reads system"),
        ("litellm", "LiteLLM", "LiteLLM hands the background to a chat-completions model, which reads system"),
        (
            "compatible",
            "an OpenAI-compatible server",
            "every chat template reads the system role, not every one reads developer",
        ),
    )
}
COMPATIBLE = SERVER_KINDS["compatible"]


@dataclass(frozen=True)
class ServerInfo:
    """The server Memora talks to, how that was found out, and what it says of the model."""

    kind: ServerKind
    evidence: str  # "no OPENAI_BASE_URL", "answered POST /api/show"...
    where: str  # host[:port], for messages
    context: int | None = None  # the model's context window in tokens, where the server says it
    context_from: str = ""  # where that figure comes from, for 'status'
    max_output: int | None = None  # the most output tokens one request may ask for, where the server says it
    temperature: float | None = None  # what a chat request sends (None: none, the server applies the model's own)

    def describe(self) -> str:
        return f"{self.kind.label} at {self.where} ({self.evidence})"


def _entry(items: object, field: str, model: str) -> dict:
    """The item of a model list that names ``model``, else the only one, else {}."""
    items = [m for m in items if isinstance(m, dict)] if isinstance(items, list) else []
    return next((m for m in items if m.get(field) == model), items[0] if len(items) == 1 else {})


def _ollama(body: dict, model: str) -> dict:
    """``POST /api/show``: the Modelfile's ``parameters`` and the trained ``<arch>.context_length``."""
    lines = str(body.get("parameters") or "").splitlines()
    params = {k: v.strip() for k, _, v in (line.strip().partition(" ") for line in lines)}
    trained = [v for k, v in body["model_info"].items() if k.endswith(".context_length") and isinstance(v, int)]
    num_ctx = int(params["num_ctx"]) if params.get("num_ctx", "").isdigit() else None
    return {
        "context": min([num_ctx or OLLAMA_DEFAULT_CONTEXT, *trained]),
        "context_from": "num_ctx in the model's Modelfile" if num_ctx else "Ollama's default below 23 GiB of VRAM",
        "temperature": float(params.get("temperature", OLLAMA_TEMPERATURE)),
    }


def _lmstudio(body: dict, model: str) -> dict:
    """``GET /api/v1/models``: the loaded instance's context length (none till it is loaded)."""
    loaded = _entry(body["models"], "key", model).get("loaded_instances") or [{}]
    context = (loaded[0].get("config") or {}).get("context_length")
    return {"context": context, "context_from": "the loaded model's context_length in LM Studio"} if context else {}


def _vllm(body: dict, model: str) -> dict:
    """``GET /v1/models``: ``max_model_len`` bounds input and output together, and the output."""
    length = _entry(body["data"], "id", model)["max_model_len"]
    return {"context": length, "max_output": length, "context_from": "max_model_len in vLLM's GET /v1/models"}


def _litellm(body: dict, model: str) -> dict:
    """``GET /model/info``: a deployment's limits (null for a model LiteLLM does not know)."""
    info = _entry([m for m in body["data"] if "litellm_params" in m], "model_name", model)["model_info"]
    facts = {"context": info.get("max_input_tokens"), "max_output": info.get("max_output_tokens")}
    return {k: v for k, v in facts.items() if v} | {"context_from": "max_input_tokens in LiteLLM's GET /model/info"}


# (kind, method, path under the root, what its answer says; failing on any other), asked
# in turn: only that kind answers each, and what it says changes what is sent.
PROBES: tuple[tuple[str, str, str, Callable[[dict, str], dict]], ...] = (
    ("ollama", "POST", "/api/show", _ollama),
    ("lmstudio", "GET", "/api/v1/models", _lmstudio),
    ("vllm", "GET", "/v1/models", _vllm),
    ("litellm", "GET", "/model/info", _litellm),
)
# The port each kind listens on unless told otherwise: the evidence left when no probe answers.
DEFAULT_PORTS = {11434: "ollama", 1234: "lmstudio", 4000: "litellm"}


def server_root(base_url: str) -> str:
    """The server's root URL: the base URL without its trailing ``/v1``."""
    root = base_url.rstrip("/")
    return root[: -len("/v1")] if root.endswith("/v1") else root


def where(base_url: str | None) -> str:
    return (urlsplit(base_url).netloc or base_url) if base_url else "api.openai.com"


def detect_server(base_url: str | None, ask: Callable[[str, str, object], Any] | None, model="") -> ServerInfo:
    """The kind of server at ``base_url`` and what it says of ``model``; ``ask(method,
    url, body)`` returns an answer or raises, and None asks nothing. Never raises."""
    if is_openai_url(base_url):
        return ServerInfo(OPENAI, "no OPENAI_BASE_URL" if not base_url else "OpenAI's own host", where(base_url))
    assert base_url is not None
    if ask is not None:
        for key, method, path, read in PROBES:
            try:
                facts = read(ask(method, server_root(base_url) + path, method == "POST" and {"model": model}), model)
            except Exception as error:  # not this kind, or not reachable
                log.debug("server probe %s: %s", path, type(error).__name__)
                continue
            return ServerInfo(SERVER_KINDS[key], f"answered {method} {path}", where(base_url), **facts)
    port = urlsplit(base_url).port
    if port in DEFAULT_PORTS:
        kind = SERVER_KINDS[DEFAULT_PORTS[port]]
        return ServerInfo(kind, f"port {port}, {kind.label}'s default; no probe answered", where(base_url))
    return ServerInfo(COMPATIBLE, "it answered none of the known servers' probes", where(base_url))


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
    if role == "system" and server.kind is not OPENAI:  # see the module docstring
        reason += "; it travels in the request's instructions, which the server makes its one system message"
    return RoleChoice(role, reason)
