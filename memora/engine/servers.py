"""Which server Memora talks to, and what that server needs.

Memora speaks the Responses API to whatever ``OPENAI_BASE_URL`` names. The
servers that implement it differ in ways a request cannot see and that cost the
learner their memory without an error, so each difference is a column of
``SERVER_KINDS`` or a fact the server states (``ServerInfo``) rather than a
branch somewhere in the code:

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
* **the model's context window**, which the input budget and the output cap
  must fit in (``llm.ModelClient.fit_context``): a prompt longer than Ollama's
  ``num_ctx`` loses its oldest messages without an error (``server/prompt.go``),
  and vLLM answers 400 to a ``max_output_tokens`` above ``max_model_len``
  (``renderers/params.py``).
* **the temperature.** Ollama's Responses API samples at 1.0 when a request
  sends none (``openai/responses.go``), overriding the model's own value, so a
  chat request to Ollama sends the model's own (its Modelfile's, else Ollama's
  native default).

The kind is told from the base URL (OpenAI's own hosts: nothing is asked),
else by asking, all at once, the endpoints that only one kind answers and that
say the model's context window: Ollama ``POST /api/show`` (the model's details),
vLLM ``GET /v1/models`` (``max_model_len``), LM Studio 0.4's ``GET
/api/v1/models`` (the loaded instance's ``context_length``) and LiteLLM ``GET
/model/info`` (``max_input_tokens``, ``max_output_tokens``). A server that
answers none is "an OpenAI-compatible server" of unknown context, told by its
default port if it listens on one. Detection never raises.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

log = logging.getLogger("memora")

BACKGROUND_ROLES = ("developer", "system")
PROBE_TIMEOUT_SECONDS = 5.0  # in the background: the first reply waits for none of it (llm.DETECTION_WAIT)
# Ollama's context when the model's Modelfile sets no num_ctx, on a machine with
# less than 23 GiB of VRAM (server/routes.go); a larger machine gets more, which
# only MEMORA_CONTEXT_TOKENS can tell Memora.
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

    @property
    def system_in_instructions(self) -> bool:
        """A system background travels in ``instructions`` (see the module docstring)."""
        return self.key != "openai"


OPENAI = ServerKind("openai", "OpenAI", "developer", "OpenAI reads the developer role below the instructions")
COMPATIBLE = ServerKind(
    "compatible",
    "an OpenAI-compatible server",
    "system",
    "every chat template reads the system role, not every one reads developer",
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
        ),
        ServerKind(
            "vllm",
            "vLLM",
            "system",
            "vLLM refuses developer messages when the model's chat template has no developer role",
        ),
        ServerKind(
            "lmstudio",
            "LM Studio",
            "system",
            "LM Studio passes messages to the model's chat template, which reads system",
            strict_output=False,
        ),
        ServerKind(
            "litellm",
            "LiteLLM",
            "system",
            "LiteLLM hands the background to a chat-completions model, which reads system",
        ),
        COMPATIBLE,
    )
}


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


def _entry(items: object, field: str, model: str) -> dict | None:
    """The item of a model list that names ``model``, else the only one."""
    items = [m for m in items if isinstance(m, dict)] if isinstance(items, list) else []
    return next((m for m in items if m.get(field) == model), items[0] if len(items) == 1 else None)


def _ollama(body: object, model: str) -> dict | None:
    """``POST /api/show``: ``parameters`` (the Modelfile's, "num_ctx   8192" lines) and
    ``model_info`` ("<arch>.context_length": what the model was trained for)."""
    if not isinstance(body, dict) or not isinstance(body.get("model_info"), dict):
        return None
    params = {
        k: v.strip()
        for k, _, v in (line.strip().partition(" ") for line in str(body.get("parameters") or "").splitlines())
    }
    trained = [v for k, v in body["model_info"].items() if k.endswith(".context_length") and isinstance(v, int)]
    num_ctx = int(params["num_ctx"]) if params.get("num_ctx", "").isdigit() else None
    temperature = params.get("temperature", "")
    return {
        "context": min([num_ctx or OLLAMA_DEFAULT_CONTEXT, *trained]),
        "context_from": "num_ctx in the model's Modelfile" if num_ctx else "Ollama's default below 23 GiB of VRAM",
        "temperature": float(temperature) if temperature.replace(".", "", 1).isdigit() else OLLAMA_TEMPERATURE,
    }


def _vllm(body: object, model: str) -> dict | None:
    """``GET /v1/models``: vLLM's model cards carry ``max_model_len``, the most input
    and output tokens together, and the most output tokens it accepts."""
    card = _entry(body.get("data") if isinstance(body, dict) else None, "id", model)
    if card is None or not isinstance(card.get("max_model_len"), int):
        return None
    length = card["max_model_len"]
    return {"context": length, "max_output": length, "context_from": "max_model_len in vLLM's GET /v1/models"}


def _lmstudio(body: object, model: str) -> dict | None:
    """``GET /api/v1/models`` (LM Studio 0.4's REST API): each model's ``loaded_instances``
    with their ``config.context_length``. A model not loaded yet is loaded with
    LM Studio's own setting when first asked: unknown here."""
    models = body.get("models") if isinstance(body, dict) else None
    if not isinstance(models, list) or not all(isinstance(m, dict) and "loaded_instances" in m for m in models):
        return None
    found = _entry(models, "key", model) or {}
    loaded = [i.get("config") or {} for i in found.get("loaded_instances") or [] if isinstance(i, dict)]
    context = loaded[0].get("context_length") if loaded else None
    return {"context": context, "context_from": "the loaded model's context_length in LM Studio"} if context else {}


def _litellm(body: object, model: str) -> dict | None:
    """``GET /model/info``: each deployment's ``litellm_params`` and ``model_info`` (null
    limits for a model LiteLLM's map does not know and its config does not set)."""
    data = body.get("data") if isinstance(body, dict) else None
    if not isinstance(data, list) or not any(isinstance(m, dict) and "litellm_params" in m for m in data):
        return None
    info = (_entry(data, "model_name", model) or {}).get("model_info") or {}
    context, output = info.get("max_input_tokens"), info.get("max_output_tokens")
    facts = {"max_output": output} if isinstance(output, int) else {}
    if isinstance(context, int):
        facts |= {"context": context, "context_from": "max_input_tokens in LiteLLM's GET /model/info"}
    return facts


# (kind, method, path under the server's root, what its answer says: None when it is
# not that kind's). Only that kind answers each, and each answer changes what is sent.
PROBES: tuple[tuple[str, str, str, Callable[[object, str], dict | None]], ...] = (
    ("ollama", "POST", "/api/show", _ollama),
    ("vllm", "GET", "/v1/models", _vllm),
    ("lmstudio", "GET", "/api/v1/models", _lmstudio),
    ("litellm", "GET", "/model/info", _litellm),
)
# The port each kind listens on unless told otherwise: the evidence left when no probe answers.
DEFAULT_PORTS = {11434: "ollama", 1234: "lmstudio", 4000: "litellm"}

# (method, url, JSON body or None) -> the decoded answer; raises when there is none
Ask = Callable[[str, str, object], object]


def is_openai_url(base_url: str | None) -> bool:
    """OpenAI itself (no base URL, or one of OpenAI's or Azure OpenAI's hosts)."""
    if not base_url:
        return True
    host = (urlsplit(base_url).hostname or "").lower()
    return host == "api.openai.com" or host.endswith((".openai.com", ".openai.azure.com"))


def server_root(base_url: str) -> str:
    """The server's root URL: the base URL without its trailing ``/v1``."""
    root = base_url.rstrip("/")
    return root[: -len("/v1")] if root.endswith("/v1") else root


def where(base_url: str | None) -> str:
    if not base_url:
        return "api.openai.com"
    parts = urlsplit(base_url)
    return parts.netloc or base_url


def detect_server(base_url: str | None, ask: Ask | None, model: str = "") -> ServerInfo:
    """The kind of server at ``base_url`` and what it says of ``model``; ``ask`` None
    asks nothing (the URL alone decides). Never raises."""
    if is_openai_url(base_url):
        evidence = "no OPENAI_BASE_URL" if not base_url else "OpenAI's own host"
        return ServerInfo(OPENAI, evidence, where(base_url))
    assert base_url is not None
    answers = _ask_all(server_root(base_url), ask, model) if ask is not None else {}
    for key, method, path, read in PROBES:
        try:
            facts = read(answers.get(path), model)
        except (TypeError, ValueError, AttributeError):  # an answer of another shape: not this kind
            facts = None
        if facts is not None:
            return ServerInfo(SERVER_KINDS[key], f"answered {method} {path}", where(base_url), **facts)
    port = urlsplit(base_url).port
    if port in DEFAULT_PORTS:
        kind = SERVER_KINDS[DEFAULT_PORTS[port]]
        return ServerInfo(kind, f"port {port}, {kind.label}'s default; no probe answered", where(base_url))
    return ServerInfo(COMPATIBLE, "it answered none of the known servers' probes", where(base_url))


def _ask_all(root: str, ask: Ask, model: str) -> dict[str, object]:
    """Every probe at once (a server that never answers costs one timeout, not four):
    path -> the answer, for the probes that answered."""
    from concurrent.futures import ThreadPoolExecutor

    def one(probe):
        _, method, path, _ = probe
        try:
            return path, ask(method, root + path, {"model": model} if method == "POST" else None)
        except Exception as error:  # not this kind, or not reachable
            log.debug("server probe %s: %s", path, type(error).__name__)
            return path, None

    with ThreadPoolExecutor(max_workers=len(PROBES), thread_name_prefix="memora-probe") as pool:
        return {path: body for path, body in pool.map(one, PROBES) if body is not None}


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
