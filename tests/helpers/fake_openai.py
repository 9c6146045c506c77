"""A small local server that speaks the parts of the OpenAI API Memora uses.

It serves ``POST /v1/responses`` (JSON, and SSE when ``stream`` is true) and
``POST /v1/embeddings``, records every request it receives, and answers from
per-kind scripts. The real ``openai.OpenAI`` client talks to it over loopback,
so tests exercise the real client and assert on exactly what was sent.

Kinds are told apart the way Memora's calls differ: structured-output calls by
their schema name, the summary by its instructions, everything else is chat.
GET requests (a client probing which server it talks to) are kept apart, as
kind ``"probe"`` in ``server.probes`` / ``of_kind("probe")``: ``server.requests``
holds the POSTs only, as it always has.

What it sends conforms to the SDK
---------------------------------
Every body and every SSE event the server emits is checked against the SDK's
own types (``openai.types.responses.Response``, each member of
``ResponseStreamEvent``, ``CreateEmbeddingResponse``, ``shared.ErrorObject``)
with pydantic's strict mode, plus a walk that reports any key the SDK type does
not declare (the SDK's models allow extra keys, so strict mode alone would let a
misspelt field through). Problems are kept in ``server.violations``; the
``server`` fixture fails a test whose server sent any. ``check_response``,
``check_event``, ``check_events``, ``check_embeddings`` and
``check_error_body`` are the same checks, for a test to call directly.

A scripted answer is one of: a string (the text answer), a dict or list (sent
as its JSON text, i.e. a structured answer), a callable of the request body
returning one of these, ``None`` (the default answer), ``Error``, ``Hold``,
``Disconnect``, ``StreamThenFail``, ``Truncated``, ``Events`` (an SSE sequence
sent verbatim) or ``Body`` (a JSON body sent verbatim). The builders below
(``reasoning_events``, ``refusal_body``, ``rate_limited``...) make the
real-format sequences and bodies to put in ``Events`` and ``Body``.

Personas (``FakeOpenAIServer(persona=...)`` or ``server.persona = ...``)
----------------------------------------------------------------------
Each emulates what a real server's source code (or, for LM Studio, its
documentation) says it does; ``docs/servers.md`` names the files. Every persona
answers any GET path it does not know with a 404 JSON error in OpenAI's shape (a
simplification: Ollama's own 404 is plain text, vLLM's is FastAPI's
``{"detail": ...}``). A POST to ``/api/show`` is a probe too: it is recorded with
the GETs (``server.probes``), not with the requests.

Thinking (``server.thinks = {"chat": 4000, "summary": 3000, "structured": 100}``,
words of thinking before the answer of each kind; ``"structured"`` stands for every
schema kind): the ``ollama`` and ``vllm`` personas think unless the request asks for
``reasoning.effort: "none"`` (Ollama maps it to ``think: false``, openai/openai.go
``thinkFromReasoningEffort``; vLLM to the template's ``enable_thinking=False``,
responses/protocol.py ``build_chat_params``). The thinking counts inside
``max_output_tokens`` and in ``usage.output_tokens``. The context window is
``server.context`` (the persona's default when None).

``openai`` (the default)
    The Responses API as OpenAI serves it. A ``Truncated`` answer ends as
    ``response.incomplete`` (JSON: ``status: "incomplete"``) with
    ``incomplete_details.reason == "max_output_tokens"``. ``vllm`` and ``lmstudio``
    report it the same way (nothing checked says they differ).
``ollama``
    ``GET /api/version`` answers ``{"version": "0.12.6"}`` (outside ``/v1``), and
    ``POST /api/show`` the model's details (server/routes.go ``GetModelInfo``): its
    ``capabilities`` (thinking), ``model_info["qwen3.context_length"]`` and
    ``parameters``, the Modelfile's values as ``ollama show`` prints them
    (temperature 0.6, and ``num_ctx`` only when ``server.context`` is not Ollama's
    default of 4,096 below 23 GiB of VRAM, routes.go). The prompt is cut to the
    window as server/prompt.go ``chatPrompt`` cuts it: the oldest non-system
    messages are dropped (counted in words) until the rest fits, without an error;
    ``Recorded.model_input`` is what is left. ``developer``-role input items are
    accepted with a 200 and silently dropped (ollama/ollama#18305, open). ``store``
    is ignored (the ``store: false`` Ollama sends is a key the SDK's ``Response``
    does not declare, so it is left out, see ``request_echo``). A thinking model's
    thinking is streamed as a reasoning item (``response.reasoning_summary_text.delta``,
    openai/responses.go ``processThinking``) and reported as no reasoning tokens
    (``ReasoningTokens: 0``, a TODO there). Truncation is never
    ``response.incomplete``: when ``max_output_tokens`` is smaller than the
    thinking and answer (counted in words, this fake's token unit) the output is cut
    and the stream ends with ``response.completed``, ``status: "completed"``,
    ``incomplete_details: null`` and ``usage.output_tokens == max_output_tokens``, as
    responses.go does (it hardcodes ``IncompleteDetails: nil``; ollama/ollama#17239,
    open, would report ``incomplete``). Other servers put the reason inside
    ``response.completed``; ``truncated_completed_events`` builds that variant.
``vllm``
    ``GET /version`` answers ``{"version": "0.11.0"}`` and ``GET /v1/models`` the
    model card with ``max_model_len`` (entrypoints/openai/models/serving.py;
    ``server.context``, 40,960 by default). A ``max_output_tokens`` above it is
    answered 400 (renderers/params.py ``TokenizeParams``), and so is a prompt longer
    than it; otherwise the output is cut at what the window leaves (serve/utils
    ``get_max_tokens``). Without a reasoning parser (``server.reasoning_parser =
    False``, vLLM's default) the thinking is part of the text, ``<think>...</think>``
    before the answer (the parser's no-parser fallback passes the model's output on as
    content, parser/abstract_parser.py), without its opening tag when
    ``server.opening_tag`` is False (a template that opens the block itself,
    vllm-project/vllm#31045), and a structured answer has none (the grammar holds
    from the first token); with one, thinking is a reasoning item whose tokens the
    usage reports. Any ``developer`` input item is answered 400 ``{"error":
    {"message": "Unexpected message role.", "type": "BadRequestError", "param":
    null, "code": 400}}``: a chat template without a developer role, before
    vllm-project/vllm#43590 folded developer messages into the system prompt (the
    body as quoted in ogx-ai/ogx#6069; vLLM's ``code`` is the HTTP status as an int,
    where OpenAI's is a string). Nothing reaches the model (``model_input == []``)
    and the scripted answer is left for the next request.
``lmstudio``
    ``text.format`` is ignored (lmstudio-bug-tracker #1396, #2403, open): a
    structured answer comes back as fenced JSON (```` ```json ... ``` ````, as
    quoted in #2403) or, with ``server.json_wrapping = "prose"``, after a line
    of prose. ``GET /api/v1/models`` answers LM Studio 0.4's REST API model list,
    the example of its documentation (lmstudio-ai/docs, 1_developer/2_rest/list.md)
    with the loaded instance's ``context_length`` set to ``server.context`` (4,096 by
    default, as there), and ``GET /api/v0/models`` the v0 list it deprecated (not
    checked against a running LM Studio).
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import re
import struct
import threading
import typing
from collections import defaultdict, deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

HOLD_LIMIT = 60.0
SCHEMA_KINDS = {
    "ExtractionResult": "extraction",
    "MemoryDecision": "reconcile",
    "MemoryDecisions": "reconcile_many",  # several facts of one reading decided in one call
    "CorrectionDecision": "correction",
    "ReviewGrade": "grading",
    "PracticeSentences": "practice",  # fresh drill sentences about the learner
}
PROBE = "probe"  # the kind of a recorded GET
CREATED_AT = 1767225600  # 2026-01-01T00:00:00Z: a fixed, plausible timestamp
RESPONSE_ID = "resp_fake"
MESSAGE_ID = "msg_fake"
REASONING_ID = "rs_fake"
CHUNK = 24  # characters per streamed delta

# -- personas ----------------------------------------------------------------------------------
PERSONAS = ("openai", "ollama", "vllm", "lmstudio")
OLLAMA_VERSION = "0.12.6"
VLLM_VERSION = "0.11.0"
LMSTUDIO_MODELS = {  # the example of LM Studio's REST API v0 docs (lmstudio-ai/docs, 1_developer/2_rest/endpoints.mdx)
    "object": "list",
    "data": [
        {
            "id": "qwen2-vl-7b-instruct",
            "object": "model",
            "type": "vlm",
            "publisher": "mlx-community",
            "arch": "qwen2_vl",
            "compatibility_type": "mlx",
            "quantization": "4bit",
            "state": "not-loaded",
            "max_context_length": 32768,
        },
        {
            "id": "meta-llama-3.1-8b-instruct",
            "object": "model",
            "type": "llm",
            "publisher": "lmstudio-community",
            "arch": "llama",
            "compatibility_type": "gguf",
            "quantization": "Q4_K_M",
            "state": "not-loaded",
            "max_context_length": 131072,
        },
        {
            "id": "text-embedding-nomic-embed-text-v1.5",
            "object": "model",
            "type": "embeddings",
            "publisher": "nomic-ai",
            "arch": "nomic-bert",
            "compatibility_type": "gguf",
            "quantization": "Q4_0",
            "state": "not-loaded",
            "max_context_length": 2048,
        },
    ],
}
LMSTUDIO_KEY = "gemma-3-270m-it-qat"  # the LLM of LM Studio's REST API v1 docs example


def lmstudio_v1_models(context: int) -> dict:
    """``GET /api/v1/models`` as LM Studio 0.4 answers it: the example of its docs
    (lmstudio-ai/docs, 1_developer/2_rest/list.md), the LLM loaded with ``context``."""
    return {
        "models": [
            {
                "type": "llm",
                "publisher": "lmstudio-community",
                "key": LMSTUDIO_KEY,
                "display_name": "Gemma 3 270m Instruct Qat",
                "architecture": "gemma3",
                "quantization": {"name": "Q4_0", "bits_per_weight": 4},
                "size_bytes": 241410208,
                "params_string": "270M",
                "loaded_instances": [{"id": LMSTUDIO_KEY, "config": {"context_length": context}}],
                "max_context_length": 32768,
                "format": "gguf",
                "capabilities": {"vision": False, "trained_for_tool_use": False},
                "description": None,
            },
            {
                "type": "embedding",
                "publisher": "gaianet",
                "key": "text-embedding-nomic-embed-text-v1.5-embedding",
                "display_name": "Nomic Embed Text v1.5",
                "quantization": {"name": "F16", "bits_per_weight": 16},
                "size_bytes": 274290560,
                "params_string": None,
                "loaded_instances": [],
                "max_context_length": 2048,
                "format": "gguf",
            },
        ]
    }


OLLAMA_DEFAULT_CONTEXT = 4096  # num_ctx without a Modelfile value, below 23 GiB of VRAM (server/routes.go)
DEFAULT_CONTEXT = {"ollama": OLLAMA_DEFAULT_CONTEXT, "vllm": 40960, "lmstudio": 4096}


def ollama_show(context: int) -> dict:
    """``POST /api/show`` for a qwen3 model (server/routes.go ``GetModelInfo``; api/types.go
    ``ShowResponse``): ``parameters`` as ``ollama show`` prints them, ``"%-30s %#v"`` a line."""
    params = {"temperature": 0.6, "top_k": 20, "top_p": 0.95}
    if context != OLLAMA_DEFAULT_CONTEXT:
        params["num_ctx"] = context
    return {
        "license": "Apache License 2.0",
        "modelfile": '# Modelfile generated by "ollama show"\nFROM qwen3:8b\n',
        "parameters": "\n".join(f"{k:<30} {v}" for k, v in params.items()),
        "template": "{{ .Prompt }}",
        "details": {
            "parent_model": "",
            "format": "gguf",
            "family": "qwen3",
            "families": ["qwen3"],
            "parameter_size": "8.2B",
            "quantization_level": "Q4_K_M",
        },
        "model_info": {"general.architecture": "qwen3", "qwen3.context_length": 40960},
        "capabilities": ["completion", "tools", "thinking"],
        "modified_at": "2026-01-01T00:00:00Z",
    }


def vllm_models(context: int) -> dict:
    """``GET /v1/models`` as vLLM answers it (entrypoints/openai/models/serving.py ``ModelCard``)."""
    card = {"id": "Qwen/Qwen3-8B", "object": "model", "created": CREATED_AT, "owned_by": "vllm"}
    card |= {"root": "Qwen/Qwen3-8B", "parent": None, "max_model_len": context, "permission": []}
    return {"object": "list", "data": [card]}


PROBE_ANSWERS: dict[tuple[str, str], Callable[[int], dict]] = {
    ("ollama", "/api/version"): lambda _: {"version": OLLAMA_VERSION},
    ("ollama", "/api/show"): ollama_show,
    ("vllm", "/version"): lambda _: {"version": VLLM_VERSION},
    ("vllm", "/v1/models"): vllm_models,
    ("lmstudio", "/api/v0/models"): lambda _: LMSTUDIO_MODELS,
    ("lmstudio", "/api/v1/models"): lmstudio_v1_models,
}
VLLM_ROLE_ERROR = {
    "error": {"message": "Unexpected message role.", "type": "BadRequestError", "param": None, "code": 400}
}


# -- scripted answers --------------------------------------------------------------------------
@dataclass
class Error:
    """Answer with an HTTP error status (the client may retry 5xx/429), in OpenAI's shape:
    ``{"error": {"message", "type", "param", "code"}}``. ``type`` and ``code`` default to
    what OpenAI sends for the status (``error_type``); ``headers`` go out with it."""

    status: int
    message: str = "scripted failure"
    times: int = 1
    type: str | None = None
    code: str | None = None
    param: str | None = None
    headers: dict[str, str] = field(default_factory=dict)

    def body(self) -> dict:
        kind, code = error_type(self.status)
        return error_body(self.message, type=self.type or kind, param=self.param, code=self.code or code)


class Hold:
    """Answer nothing until the test calls ``release()``, then answer ``then``.

    Tests order events with it instead of racing a timer: ``wait_arrived()``
    returns once the request is at the server (so the caller is blocked on
    it), and the reply leaves only when the test says so. With
    ``after_chars``, a streamed text reply sends that much text first, then
    waits (a reply caught midway). A hold nobody releases answers HTTP 500
    after ``HOLD_LIMIT`` seconds, so a test that forgets fails instead of
    hanging."""

    def __init__(self, then: Any = None, *, after_chars: int = 0):
        self.then = then
        self.after_chars = after_chars
        self.arrived = threading.Event()
        self.released = threading.Event()
        self.answered = threading.Event()
        self.expired = False

    def release(self) -> None:
        self.released.set()

    def wait_arrived(self, timeout: float = HOLD_LIMIT) -> Hold:
        if not self.arrived.wait(timeout):
            raise AssertionError("the held request never reached the server")
        return self

    def wait_released(self) -> bool:
        """(server side) True once released; False if the test never did."""
        if not self.released.wait(HOLD_LIMIT):
            self.expired = True
        return not self.expired


@dataclass
class Disconnect:
    """Close the connection without answering (a connection error)."""

    times: int = 1


@dataclass
class StreamThenFail:
    """Stream some text, then end without ``response.completed``.

    ``end``: ``"failed"`` sends ``response.failed``; ``"error"`` an ``error``
    event; ``"close"`` just closes the connection; ``"incomplete"`` sends
    ``response.incomplete`` (the output-token limit)."""

    text: str
    end: str = "failed"


@dataclass
class Truncated:
    """The model ran into the output-token cap while writing ``text``.

    The text is cut after as many words (this fake's token unit) as the request's
    ``max_output_tokens``, or ``max_output_tokens`` here when the request has none
    (and half the text's words when neither says), and the cut is reported the
    way the persona does: ``response.incomplete`` / ``status: "incomplete"`` for
    ``openai``, inside ``response.completed`` for ``ollama``."""

    text: str
    max_output_tokens: int | None = None


@dataclass
class Events:
    """Send these ``(event_type, data)`` events as the SSE stream, verbatim; a
    ``sequence_number`` is added to an event that has none. ``check=False`` for a
    deliberately malformed sequence (it is then not held to the SDK's types)."""

    events: list[tuple[str, dict]]
    check: bool = True


@dataclass
class Body:
    """Send this JSON (any value, ``None`` for ``null``) with ``status`` and
    ``headers``, verbatim. It is checked as a response, an embeddings list or an
    error body (by path and status) unless ``check=False``."""

    json: Any
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    check: bool = True


@dataclass
class Recorded:
    path: str
    body: dict
    headers: dict
    kind: str
    method: str = "POST"
    model_input: list | None = None  # the input as it reached the model (after the persona's changes)
    status: int | None = None  # the HTTP status answered (None: the connection was closed)

    def __post_init__(self) -> None:
        if self.model_input is None:
            self.model_input = list(self.input) if isinstance(self.input, list) else self.input

    @property
    def input(self) -> list[dict]:
        return self.body.get("input") or []

    @property
    def developer_messages(self) -> list[str]:
        return [m["content"] for m in self.input if m.get("role") == "developer"]

    @property
    def background_role(self) -> str | None:
        """How the background was sent: ``developer`` or ``system`` (an input item), or
        ``instructions`` (after Memora's own, where servers other than OpenAI get it)."""
        for m in self.input:
            if m.get("role") in ("developer", "system"):
                return m["role"]
        return "instructions" if self._in_instructions() else None

    def _in_instructions(self) -> str:
        from memora.model.prompts import SYSTEM_PROMPT

        instructions = str(self.body.get("instructions") or "")
        return (
            instructions.removeprefix(SYSTEM_PROMPT + "\n\n") if instructions.startswith(SYSTEM_PROMPT + "\n\n") else ""
        )

    @property
    def background(self) -> str:
        """The background message's text, however it was sent."""
        for m in self.input:
            if m.get("role") in ("developer", "system"):
                return m["content"]
        return self._in_instructions()

    @property
    def conversation_roles(self) -> list[str]:
        """The roles of the input items after the background."""
        return [m.get("role") for m in self.input if m.get("role") not in ("developer", "system")]

    def section(self, tag: str) -> str | None:
        """The body of ``<tag>...</tag>`` in the background message, or None."""
        text = self.background
        start, end = f"<{tag}>\n", f"\n</{tag}>"
        if start not in text:
            return None
        body = text.split(start, 1)[1]
        return body.split(end, 1)[0]

    @property
    def roles(self) -> list[str]:
        return [m.get("role") for m in self.input]

    @property
    def last_user(self) -> str:
        users = [m["content"] for m in self.input if m.get("role") == "user"]
        return users[-1] if users else ""

    @property
    def model_roles(self) -> list[str]:
        """The roles of the input that reached the model."""
        return [m.get("role") for m in self.model_input or [] if isinstance(m, dict)]


def hash_embedding(text: str, dim: int = 64) -> list[float]:
    vector = [0.0] * dim
    for word in text.lower().split():
        digest = hashlib.sha256(word.encode()).digest()
        vector[digest[0] % dim] += 1.0 if digest[1] & 1 else -1.0
    norm = math.sqrt(sum(x * x for x in vector)) or 1.0
    return [x / norm for x in vector]


# -- the fake's token unit: a word -------------------------------------------------------------
def count_tokens(text: str) -> int:
    """Tokens as this fake counts them: whitespace-separated words."""
    return len(text.split())


def cut_to_tokens(text: str, tokens: int) -> str:
    """``text`` up to the end of its ``tokens``-th word (all of it if it has fewer)."""
    if tokens <= 0:
        return ""
    for number, match in enumerate(re.finditer(r"\S+", text), 1):
        if number == tokens:
            return text[: match.end()]
    return text


# -- state -------------------------------------------------------------------------------------
@dataclass
class FakeOpenAI:
    """The scripted state behind the server."""

    requests: list[Recorded] = field(default_factory=list)
    scripts: dict[str, deque] = field(default_factory=lambda: defaultdict(deque))
    lock: threading.Lock = field(default_factory=threading.Lock)
    chat_count: int = 0
    holds: list[Hold] = field(default_factory=list)
    probes: list[Recorded] = field(default_factory=list)  # GET requests (kind "probe")
    violations: list[str] = field(default_factory=list)  # payloads sent that the SDK's types reject
    checked: int = 0  # payloads sent and checked against the SDK's types
    persona: str = "openai"
    json_wrapping: str = "fenced"  # lmstudio: how a structured answer is wrapped ("fenced" or "prose")
    context: int | None = None  # the model's context window in words (None: the persona's default)
    thinks: dict[str, int] = field(default_factory=dict)  # words of thinking before an answer, by kind
    reasoning_parser: bool = False  # vllm: served with --reasoning-parser (thinking as a reasoning item)
    opening_tag: bool = True  # vllm without a parser: the model writes <think> (False: its template did)
    probe_hold: Hold | None = None  # probes wait for its release (a server slow to answer them)

    @property
    def window(self) -> int | None:
        return self.context or DEFAULT_CONTEXT.get(self.persona)

    def thinking(self, kind: str, body: dict) -> int:
        """Words of thinking before the answer to ``body``: none when it asks for none."""
        if ((body.get("reasoning") or {}).get("effort")) == "none":
            return 0
        return self.thinks.get(kind, self.thinks.get("structured", 0) if kind in SCHEMA_KINDS.values() else 0)

    def hold(self, kind: str, then: Any = None, *, after_chars: int = 0) -> Hold:
        """Script a ``Hold`` as the next answer of ``kind`` and return it."""
        held = Hold(then, after_chars=after_chars)
        self.script(kind, held)
        return held

    def script(self, kind: str, *items: Any) -> FakeOpenAI:
        with self.lock:
            self.scripts[kind].extend(items)
            self.holds.extend(item for item in items if isinstance(item, Hold))
        return self

    def of_kind(self, kind: str) -> list[Recorded]:
        with self.lock:
            if kind == PROBE:
                return list(self.probes)
            return [r for r in self.requests if r.kind == kind]

    @property
    def chats(self) -> list[Recorded]:
        return self.of_kind("chat")

    def clear(self) -> None:
        with self.lock:
            self.requests.clear()
            self.probes.clear()

    def next_item(self, kind: str, body: dict) -> Any:
        with self.lock:
            queue = self.scripts[kind]
            if queue:
                item = queue[0]
                if isinstance(item, (Error, Disconnect)) and item.times > 1:
                    item.times -= 1
                else:
                    queue.popleft()
            else:
                item = None
            if kind == "chat" and not isinstance(item, (Error, Disconnect)):
                self.chat_count += 1
        if callable(item) and not isinstance(item, type):
            item = item(body)
        if item is None:
            item = default_answer(kind, body, self.chat_count)
        return item

    def note(self, where: str, problems: list[str]) -> None:
        """Count one checked payload and keep its problems."""
        with self.lock:
            self.checked += 1
            self.violations.extend(f"{where}: {problem}" for problem in problems)


def classify(body: dict) -> str:
    fmt = ((body.get("text") or {}).get("format") or {}) if isinstance(body.get("text"), dict) else {}
    name = fmt.get("name") if isinstance(fmt, dict) else None
    if name in SCHEMA_KINDS:
        return SCHEMA_KINDS[name]
    if str(body.get("instructions", "")).startswith("You maintain the running summary"):
        return "summary"
    return "chat"


def default_answer(kind: str, body: dict, n: int) -> Any:
    if kind == "extraction":
        return {"facts": [], "profile_changes": [], "corrections": [], "mistakes": []}
    if kind == "reconcile":
        return {"action": "ADD", "memory": None, "text": None}
    if kind == "reconcile_many":
        return {"decisions": []}  # no decision names a fact: each is added
    if kind == "correction":
        return {"memories": []}
    if kind == "grading":
        return {"verdict": "correct", "feedback": "Well done."}
    if kind == "practice":
        return {"sentences": []}  # none written: each card keeps the learner's own sentence
    if kind == "summary":
        content = (body.get("input") or [{}])[-1].get("content", "")
        return f"Summary so far ({content.count(chr(10)) + 1} lines folded)."
    return f"Reply {n}."


# -- payload builders: output items ------------------------------------------------------------
def url_citation(url: str, title: str, start_index: int, end_index: int) -> dict:
    """A ``url_citation`` annotation of ``text[start_index:end_index]``."""
    return {"type": "url_citation", "url": url, "title": title, "start_index": start_index, "end_index": end_index}


def output_text(text: str, annotations: list[dict] | tuple = ()) -> dict:
    return {"type": "output_text", "text": text, "annotations": list(annotations), "logprobs": []}


def refusal(text: str) -> dict:
    return {"type": "refusal", "refusal": text}


def message_item(*parts: dict | str, id: str = MESSAGE_ID, status: str = "completed") -> dict:
    """An assistant ``message`` output item; a plain string part is ``output_text``."""
    content = [output_text(part) if isinstance(part, str) else part for part in parts]
    return {"type": "message", "id": id, "role": "assistant", "status": status, "content": content}


def reasoning_item(*summary: str, id: str = REASONING_ID, status: str | None = None) -> dict:
    """A ``reasoning`` output item with these summary texts (none: an empty summary)."""
    item = {"type": "reasoning", "id": id, "summary": [{"type": "summary_text", "text": s} for s in summary]}
    if status is not None:
        item["status"] = status
    return item


def usage_json(
    input_tokens: int = 10, output_tokens: int = 5, *, reasoning_tokens: int = 0, cached_tokens: int = 0
) -> dict:
    """``usage`` as the SDK's ``ResponseUsage`` has it (both details objects are required)."""
    return {
        "input_tokens": input_tokens,
        "input_tokens_details": {"cached_tokens": cached_tokens, "cache_write_tokens": 0},
        "output_tokens": output_tokens,
        "output_tokens_details": {"reasoning_tokens": reasoning_tokens},
        "total_tokens": input_tokens + output_tokens,
    }


def _full_usage(usage: dict | None) -> dict | None:
    """A caller's partial usage (``{"input_tokens", "output_tokens", ...}``) completed."""
    if usage is None:
        return None
    full = usage_json(
        usage.get("input_tokens", 10),
        usage.get("output_tokens", 5),
        reasoning_tokens=(usage.get("output_tokens_details") or {}).get("reasoning_tokens", 0),
        cached_tokens=(usage.get("input_tokens_details") or {}).get("cached_tokens", 0),
    )
    full.update(usage)
    return full


def _item_usage(output: list[dict], input_tokens: int = 10) -> dict:
    """Usage counted from the output: words of text and refusals, plus the reasoning summary's
    words as reasoning tokens."""
    reasoning = sum(count_tokens(s["text"]) for item in output if item["type"] == "reasoning" for s in item["summary"])
    written = sum(
        count_tokens(part.get("text") or part.get("refusal") or "")
        for item in output
        if item["type"] == "message"
        for part in item["content"]
    )
    return usage_json(input_tokens, reasoning + written, reasoning_tokens=reasoning)


# -- payload builders: the response object -----------------------------------------------------
def request_echo(request: dict | None) -> dict:
    """The request parameters a response repeats back (OpenAI's defaults where it sent none).

    Real servers also send ``store`` (and Ollama ``presence_penalty`` and
    ``frequency_penalty``), which the SDK's ``Response`` does not declare: they are left
    out, so no test can come to rely on a field the SDK does not type."""
    request = request if isinstance(request, dict) else {}
    instructions = request.get("instructions")
    max_tokens = request.get("max_output_tokens")
    return {
        "model": str(request.get("model") or "fake-model"),
        "instructions": instructions if isinstance(instructions, str) else None,
        "max_output_tokens": max_tokens if isinstance(max_tokens, int) else None,
        "max_tool_calls": None,
        "previous_response_id": request.get("previous_response_id"),
        "temperature": request.get("temperature", 1.0),
        "top_p": request.get("top_p", 1.0),
        "top_logprobs": 0,
        "text": request.get("text") or {"format": {"type": "text"}, "verbosity": "medium"},
        "reasoning": request.get("reasoning") or {"effort": None, "summary": None},
        "tool_choice": request.get("tool_choice", "auto"),
        "tools": request.get("tools") or [],
        "parallel_tool_calls": bool(request.get("parallel_tool_calls", True)),
        "truncation": request.get("truncation", "disabled"),
        "metadata": request.get("metadata") or {},
        "background": False,
        "service_tier": "default",
        "safety_identifier": None,
        "prompt_cache_key": None,
        "user": None,
    }


def response_json(
    text: str | None = "",
    usage: dict | None = None,
    *,
    output: list[dict] | None = None,
    status: str = "completed",
    incomplete_reason: str | None = None,
    error: dict | None = None,
    request: dict | None = None,
    id: str = RESPONSE_ID,
) -> dict:
    """A Responses API response object. ``text`` makes the output one message with that text
    (``output`` gives the items instead); ``usage`` defaults to 10 in, 5 out (or, with
    ``output``, counted from it); ``request`` is echoed where the real API echoes it."""
    counted = output is not None
    if output is None:
        message_status = "incomplete" if status in ("incomplete", "failed") else "completed"
        output = [message_item(text or "", status=message_status)] if status != "in_progress" else []
    if usage is None and status != "in_progress":
        usage = _item_usage(output) if counted else usage_json()
    return {
        "id": id,
        "object": "response",
        "created_at": CREATED_AT,
        "completed_at": CREATED_AT + 1 if status == "completed" else None,
        "status": status,
        "error": error,
        "incomplete_details": {"reason": incomplete_reason} if incomplete_reason else None,
        **request_echo(request),
        "output": output,
        "usage": _full_usage(usage),
    }


# -- payload builders: SSE sequences -----------------------------------------------------------
def _chunks(text: str, size: int = CHUNK) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def _item_events(index: int, item: dict, *, finish: bool, cut: bool = False) -> list[tuple[str, dict]]:
    """The events that stream one output item: added, its parts and deltas, and (``finish``) the
    done events. ``cut``: the stream breaks after this item's deltas."""
    where = {"output_index": index, "item_id": item["id"]}
    events: list[tuple[str, dict]] = []
    if item["type"] == "reasoning":
        started = {k: v for k, v in item.items() if k != "status"} | {"summary": []}
        events.append(("response.output_item.added", {"output_index": index, "item": started}))
        for number, part in enumerate(item["summary"]):
            at = {**where, "summary_index": number}
            events.append(("response.reasoning_summary_part.added", {**at, "part": {**part, "text": ""}}))
            for chunk in _chunks(part["text"]):
                events.append(("response.reasoning_summary_text.delta", {**at, "delta": chunk}))
            if cut:
                return events
            events.append(("response.reasoning_summary_text.done", {**at, "text": part["text"]}))
            events.append(("response.reasoning_summary_part.done", {**at, "part": part}))
    elif item["type"] == "message":
        started = {**item, "status": "in_progress", "content": []}
        events.append(("response.output_item.added", {"output_index": index, "item": started}))
        for number, part in enumerate(item["content"]):
            at = {**where, "content_index": number}
            if part["type"] == "refusal":
                events.append(("response.content_part.added", {**at, "part": refusal("")}))
                for chunk in _chunks(part["refusal"]):
                    events.append(("response.refusal.delta", {**at, "delta": chunk}))
                if cut:
                    return events
                events.append(("response.refusal.done", {**at, "refusal": part["refusal"]}))
            else:
                events.append(("response.content_part.added", {**at, "part": output_text("")}))
                for chunk in _chunks(part["text"]):
                    events.append(("response.output_text.delta", {**at, "delta": chunk, "logprobs": []}))
                if cut:
                    return events
                for number_a, annotation in enumerate(part["annotations"]):
                    events.append(
                        (
                            "response.output_text.annotation.added",
                            {**at, "annotation_index": number_a, "annotation": annotation},
                        )
                    )
                events.append(("response.output_text.done", {**at, "text": part["text"], "logprobs": []}))
            events.append(("response.content_part.done", {**at, "part": part}))
    else:
        raise ValueError(f"no stream for output items of type {item['type']!r}")
    if finish:
        events.append(("response.output_item.done", {"output_index": index, "item": item}))
    return events


def stream_events(
    output: list[dict],
    *,
    end: str = "completed",
    usage: dict | None = None,
    request: dict | None = None,
    status: str | None = None,
    incomplete_reason: str | None = None,
    error: dict | None = None,
) -> list[tuple[str, dict]]:
    """The SSE events that stream ``output`` (finished output items, as in the final response).

    ``end``: ``"completed"`` (every done event, then ``response.completed``), ``"incomplete"``
    (every done event, then ``response.incomplete``; the items carry their own status),
    ``"failed"`` / ``"error"`` / ``"close"`` (the last item breaks after its deltas, then
    ``response.failed``, an ``error`` event, or nothing). ``status`` and
    ``incomplete_reason`` override what the final response says (a ``response.completed``
    that reports a cut, as some servers send). ``usage`` defaults to one counted from the
    output."""
    started = response_json(status="in_progress", output=[], request=request)
    events: list[tuple[str, dict]] = [
        ("response.created", {"response": started}),
        ("response.in_progress", {"response": started}),
    ]
    broken = end in ("failed", "error", "close")
    for index, item in enumerate(output):
        last = index == len(output) - 1
        events.extend(_item_events(index, item, finish=not (broken and last), cut=broken and last))
    usage = usage if usage is not None else _item_usage(output)
    if end == "close":
        return events
    if end == "error":
        events.append(("error", error or {"code": "server_error", "message": "stream broke", "param": None}))
        return events
    if end == "failed":
        sent = [*output[:-1], *([{**output[-1], "status": "incomplete"}] if output else [])]
        final = response_json(
            output=sent,
            status="failed",
            usage=usage,
            request=request,
            error=error or {"code": "server_error", "message": "stream broke"},
        )
        events.append(("response.failed", {"response": final}))
        return events
    if end == "incomplete":
        final = response_json(
            output=output,
            status=status or "incomplete",
            incomplete_reason=incomplete_reason or "max_output_tokens",
            usage=usage,
            request=request,
        )
        events.append(("response.incomplete", {"response": final}))
        return events
    if end != "completed":
        raise ValueError(f"unknown stream end {end!r}")
    final = response_json(
        output=output, status=status or "completed", incomplete_reason=incomplete_reason, usage=usage, request=request
    )
    events.append(("response.completed", {"response": final}))
    return events


def sse_events(text: str, *, end: str = "completed", request: dict | None = None) -> list[tuple[str, dict]]:
    """One message with ``text``, streamed; ``end`` as in ``StreamThenFail`` (``"completed"``,
    ``"failed"``, ``"error"``, ``"close"``, ``"incomplete"``). Usage is 10 in, 5 out."""
    status = "incomplete" if end == "incomplete" else "completed"
    return stream_events([message_item(text, status=status)], end=end, usage=usage_json(), request=request)


# -- named builders: what real servers send ----------------------------------------------------
def reasoning_events(
    text: str, summary: str = "Thinking about the answer.", *, request: dict | None = None
) -> list[tuple[str, dict]]:
    """A reasoning item (its summary streamed), then the message; usage counts the summary's
    words as ``output_tokens_details.reasoning_tokens``."""
    return stream_events([reasoning_item(summary), message_item(text)], request=request)


def reasoning_body(text: str, summary: str = "Thinking about the answer.", *, request: dict | None = None) -> dict:
    """``reasoning_events`` as one JSON body."""
    return response_json(None, output=[reasoning_item(summary), message_item(text)], request=request)


def annotated_events(
    text: str, citations: list[dict] | None = None, *, request: dict | None = None
) -> list[tuple[str, dict]]:
    """``output_text`` with annotations (default: one ``url_citation`` of the whole text), each
    announced by ``response.output_text.annotation.added`` before ``output_text.done``."""
    if citations is None:
        citations = [url_citation("https://example.com/grammar", "A grammar note", 0, len(text))]
    return stream_events([message_item(output_text(text, citations))], request=request)


def annotated_body(text: str, citations: list[dict] | None = None, *, request: dict | None = None) -> dict:
    if citations is None:
        citations = [url_citation("https://example.com/grammar", "A grammar note", 0, len(text))]
    return response_json(None, output=[message_item(output_text(text, citations))], request=request)


def refusal_events(
    text: str = "I'm sorry, but I can't help with that.", *, request: dict | None = None
) -> list[tuple[str, dict]]:
    """A message whose content is a ``refusal`` part (``response.refusal.delta`` / ``.done``)."""
    return stream_events([message_item(refusal(text))], request=request)


def refusal_body(text: str = "I'm sorry, but I can't help with that.", *, request: dict | None = None) -> dict:
    return response_json(None, output=[message_item(refusal(text))], request=request)


def _incomplete_output(text: str, summary: str) -> list[dict]:
    output = [reasoning_item(summary, status="incomplete" if not text else None)] if summary else []
    if text:
        output.append(message_item(text, status="incomplete"))
    return output


def incomplete_events(
    text: str = "",
    max_output_tokens: int = 16,
    *,
    summary: str = "Thinking about the answer at some length.",
    request: dict | None = None,
) -> list[tuple[str, dict]]:
    """``response.incomplete``, ``incomplete_details.reason == "max_output_tokens"``: the cap was
    reached with ``text`` written (the message item ``incomplete``), or, with no text, in the
    reasoning, so the output is only a reasoning item. ``usage.output_tokens`` is the cap."""
    output = _incomplete_output(text, summary)
    reasoning = count_tokens(summary) if summary else 0
    usage = usage_json(10, max_output_tokens, reasoning_tokens=min(reasoning, max_output_tokens))
    request = {"max_output_tokens": max_output_tokens, **(request or {})}
    return stream_events(output, end="incomplete", usage=usage, request=request)


def incomplete_body(
    text: str = "",
    max_output_tokens: int = 16,
    *,
    summary: str = "Thinking about the answer at some length.",
    request: dict | None = None,
) -> dict:
    """``incomplete_events`` as one JSON body (by default with no text at all)."""
    reasoning = count_tokens(summary) if summary else 0
    return response_json(
        None,
        output=_incomplete_output(text, summary),
        status="incomplete",
        incomplete_reason="max_output_tokens",
        usage=usage_json(10, max_output_tokens, reasoning_tokens=min(reasoning, max_output_tokens)),
        request={"max_output_tokens": max_output_tokens, **(request or {})},
    )


def error_midstream_events(
    text: str = "Here is the first part of",
    *,
    code: str = "server_error",
    message: str = "The server had an error while processing your request.",
    request: dict | None = None,
) -> list[tuple[str, dict]]:
    """Some deltas, then an ``error`` event (and nothing after it)."""
    error = {"code": code, "message": message, "param": None}
    return stream_events([message_item(text, status="in_progress")], end="error", error=error, request=request)


def two_messages_events(
    first: str = "First message.", second: str = "Second message.", *, request: dict | None = None
) -> list[tuple[str, dict]]:
    """Two message items in one response: output_index 0 and 1, ids ``msg_fake_0`` and ``msg_fake_1``."""
    output = [message_item(first, id=f"{MESSAGE_ID}_0"), message_item(second, id=f"{MESSAGE_ID}_1")]
    return stream_events(output, request=request)


def two_messages_body(first: str = "First message.", second: str = "Second message.", *, request=None) -> dict:
    output = [message_item(first, id=f"{MESSAGE_ID}_0"), message_item(second, id=f"{MESSAGE_ID}_1")]
    return response_json(None, output=output, request=request)


def truncated_completed_events(
    text: str,
    max_output_tokens: int,
    *,
    status: str = "completed",
    reason: str | None = "max_output_tokens",
    request: dict | None = None,
) -> list[tuple[str, dict]]:
    """A cut reported inside ``response.completed`` (never ``response.incomplete``): the text cut
    after ``max_output_tokens`` words, every done event, then ``response.completed`` whose
    response has ``status`` (``"completed"``, or ``"incomplete"`` inside the completed event),
    ``incomplete_details: {"reason": reason}`` (``reason=None``: ``null``, as Ollama sends it)
    and ``usage.output_tokens == max_output_tokens``."""
    cut = cut_to_tokens(text, max_output_tokens)
    item_status = "incomplete" if status == "incomplete" else "completed"
    return stream_events(
        [message_item(cut, status=item_status)],
        status=status,
        incomplete_reason=reason,
        usage=usage_json(10, max_output_tokens),
        request={"max_output_tokens": max_output_tokens, **(request or {})},
    )


def truncated_completed_body(
    text: str,
    max_output_tokens: int,
    *,
    status: str = "completed",
    reason: str | None = "max_output_tokens",
    request=None,
) -> dict:
    cut = cut_to_tokens(text, max_output_tokens)
    item_status = "incomplete" if status == "incomplete" else "completed"
    return response_json(
        cut,
        output=[message_item(cut, status=item_status)],
        status=status,
        incomplete_reason=reason,
        usage=usage_json(10, max_output_tokens),
        request={"max_output_tokens": max_output_tokens, **(request or {})},
    )


# -- named builders: HTTP answers --------------------------------------------------------------
def error_type(status: int) -> tuple[str, str | None]:
    """The ``type`` and ``code`` OpenAI sends with an HTTP error status."""
    if status == 401:
        return "invalid_request_error", "invalid_api_key"
    if status == 404:
        return "invalid_request_error", None
    if status == 429:
        return "requests", "rate_limit_exceeded"
    if status >= 500:
        return "server_error", None
    return "invalid_request_error", None


def error_body(message: str, *, type: str = "invalid_request_error", param: str | None = None, code=None) -> dict:
    """``{"error": {"message", "type", "param", "code"}}``, the shape OpenAI sends."""
    return {"error": {"message": message, "type": type, "param": param, "code": code}}


def rate_limited(
    retry_after: float | None = 1, *, should_retry: bool | None = None, message: str | None = None
) -> Body:
    """HTTP 429 with ``Retry-After`` (seconds) and, if given, ``x-should-retry``."""
    headers = {}
    if retry_after is not None:
        headers["Retry-After"] = f"{retry_after:g}"
    if should_retry is not None:
        headers["x-should-retry"] = "true" if should_retry else "false"
    text = message or (
        "Rate limit reached for fake-model in organization org-fake on requests per min (RPM): "
        "Limit 3, Used 3, Requested 1. Please try again in 20s."
    )
    return Body(error_body(text, type="requests", code="rate_limit_exceeded"), status=429, headers=headers)


def model_not_found(model: str = "x") -> Body:
    """HTTP 404 ``model_not_found``, as OpenAI words it."""
    text = f"The model `{model}` does not exist or you do not have access to it."
    return Body(error_body(text, code="model_not_found"), status=404)


def unsupported_parameter(param: str = "reasoning.effort", message: str | None = None) -> Body:
    """HTTP 400 ``unsupported_parameter``, as OpenAI words it."""
    text = message or f"Unsupported parameter: '{param}' is not supported with this model."
    return Body(error_body(text, param=param, code="unsupported_parameter"), status=400)


def null_body() -> Body:
    """HTTP 200 whose body is JSON ``null`` (a broken proxy); it is not a response, so unchecked."""
    return Body(None, status=200, check=False)


# -- conformance to the SDK's types ------------------------------------------------------------
_EVENT_MODELS: dict[str, type] | None = None


def _event_models() -> dict[str, type]:
    """Each member of ``ResponseStreamEvent`` by its ``type``. The union carries the SDK's own
    discriminator marker, which pydantic does not read: validating against the union would try
    all 59 members; validating against the one the ``type`` names gives its own errors."""
    global _EVENT_MODELS
    if _EVENT_MODELS is None:
        from openai.types.responses import ResponseStreamEvent

        union = typing.get_args(ResponseStreamEvent)[0]
        models = {}
        for model in typing.get_args(union):
            for name in typing.get_args(model.model_fields["type"].annotation):
                models[name] = model
        _EVENT_MODELS = models
    return _EVENT_MODELS


def _unknown_keys(value: Any, path: str) -> Iterator[str]:
    """Keys the SDK types do not declare (its models accept and keep extra keys)."""
    import pydantic

    if isinstance(value, pydantic.BaseModel):
        for key in value.model_extra or {}:
            yield f"{path}.{key}" if path else key
        for name in type(value).model_fields:
            yield from _unknown_keys(getattr(value, name), f"{path}.{name}" if path else name)
    elif isinstance(value, (list, tuple)):
        for number, element in enumerate(value):
            yield from _unknown_keys(element, f"{path}[{number}]")
    elif isinstance(value, dict):
        for key, element in value.items():
            yield from _unknown_keys(element, f"{path}.{key}")


def _validate(model: type, payload: Any, what: str) -> list[str]:
    """``model.model_validate(payload, strict=True)``'s errors, then any undeclared key.

    Strict mode turns off coercion (a string for an int, an int for a string...); a
    required field is required in either mode; extra keys pass either way, hence the walk."""
    from pydantic import ValidationError

    try:
        parsed = model.model_validate(payload, strict=True)
    except ValidationError as error:
        found = error.errors(include_url=False, include_input=False)
        problems = [f"{what}: {'.'.join(map(str, e['loc'])) or '(root)'}: {e['msg']}" for e in found[:8]]
        if len(found) > 8:
            problems.append(f"{what}: ... {len(found) - 8} more")
        return problems
    return [f"{what}: key {key!r} is not in the SDK's {model.__name__}" for key in _unknown_keys(parsed, "")]


def check_response(payload: Any) -> list[str]:
    """Problems of a Responses API body against ``openai.types.responses.Response``."""
    from openai.types.responses import Response

    return _validate(Response, payload, "response")


def check_event(payload: Any) -> list[str]:
    """Problems of one SSE event's data (``type`` and ``sequence_number`` included) against the
    member of ``openai.types.responses.ResponseStreamEvent`` its ``type`` names."""
    kind = payload.get("type") if isinstance(payload, dict) else None
    model = _event_models().get(kind)
    if model is None:
        return [f"event {kind!r}: not a ResponseStreamEvent type"]
    return _validate(model, payload, f"event {kind}")


def check_events(events: list[tuple[str, dict]]) -> list[str]:
    """``check_event`` for each ``(event_type, data)`` of a builder's list (numbered as sent)."""
    problems = []
    for number, (kind, data) in enumerate(events):
        problems.extend(check_event({"type": kind, "sequence_number": number, **data}))
    return problems


def check_embeddings(payload: Any) -> list[str]:
    """Problems of an embeddings body against ``openai.types.CreateEmbeddingResponse``, as the
    SDK reads it: base64 vectors (what it asks for by default) decoded to floats first, as
    its own post-parser does (``Embedding.embedding`` is typed ``List[float]``)."""
    from openai.types import CreateEmbeddingResponse

    if isinstance(payload, dict) and isinstance(payload.get("data"), list):
        data = []
        for entry in payload["data"]:
            vector = entry.get("embedding") if isinstance(entry, dict) else None
            if isinstance(vector, str):
                raw = base64.b64decode(vector)
                if len(raw) % 4:
                    return [f"embeddings: base64 vector of {len(raw)} bytes is not float32s"]
                entry = {**entry, "embedding": list(struct.unpack(f"<{len(raw) // 4}f", raw))}
            data.append(entry)
        payload = {**payload, "data": data}
    return _validate(CreateEmbeddingResponse, payload, "embeddings")


def check_error_body(payload: Any, *, int_code: bool = False) -> list[str]:
    """Problems of an error body against OpenAI's shape, ``{"error": {"message", "type",
    "param", "code"}}`` (``openai.types.shared.ErrorObject``, all four keys present).
    ``int_code``: allow vLLM's integer ``code``."""
    from openai.types.shared import ErrorObject

    if not isinstance(payload, dict) or set(payload) != {"error"} or not isinstance(payload["error"], dict):
        return [f"error body: not {{'error': {{...}}}}: {str(payload)[:120]}"]
    inner = payload["error"]
    problems = [f"error body: no {key!r}" for key in ("message", "type", "param", "code") if key not in inner]
    if int_code and isinstance(inner.get("code"), int):
        inner = {**inner, "code": str(inner["code"])}
    return problems + _validate(ErrorObject, inner, "error body")


# -- the HTTP handler --------------------------------------------------------------------------
def _is_structured(body: dict) -> bool:
    fmt = (body.get("text") or {}).get("format") if isinstance(body.get("text"), dict) else None
    return isinstance(fmt, dict) and fmt.get("type") in ("json_schema", "json_object")


def _prompt_words(items: Any, instructions: Any = None) -> int:
    """The prompt's length in this fake's token unit (words): instructions and every item."""
    texts = [str(instructions or "")] + [str(m.get("content", "")) for m in items or [] if isinstance(m, dict)]
    return sum(count_tokens(t) for t in texts)


def _fitted(items: list, instructions: Any, window: int | None) -> list:
    """What of the input reaches an Ollama model with a ``window``-word context: the
    oldest non-system messages dropped until the rest fits, the last one always kept
    (server/prompt.go ``chatPrompt``)."""
    if window is None:
        return items
    start = 0
    while start < len(items) - 1 and _prompt_words(items[start:], instructions) > window:
        start += 1
    return [m for m in items[:start] if isinstance(m, dict) and m.get("role") == "system"] + items[start:]


def _has_developer(body: dict) -> bool:
    items = body.get("input")
    return isinstance(items, list) and any(isinstance(m, dict) and m.get("role") == "developer" for m in items)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    fake: FakeOpenAI
    record: Recorded | None = None

    def log_message(self, *args) -> None:  # keep test output clean
        pass

    # -- GET: probes ---------------------------------------------------------------------------
    def do_GET(self) -> None:
        self.record = None  # one handler serves every request of a kept-alive connection
        path = self.path.split("?")[0]
        self.record = Recorded(path=path, body={}, headers=dict(self.headers), kind=PROBE, method="GET")
        with self.fake.lock:
            self.fake.probes.append(self.record)
        self._probe_answer("GET", path)

    def _probe_answer(self, method: str, path: str) -> None:
        held = self.fake.probe_hold
        if held is not None:
            held.arrived.set()
            held.wait_released()
        answer = PROBE_ANSWERS.get((self.fake.persona, path))
        if answer is None:
            self._json(404, error_body(f"Invalid URL ({method} {path})"), shape="error")
        else:
            self._json(200, answer(self.fake.window), shape=None)

    # -- POST: the API -------------------------------------------------------------------------
    def do_POST(self) -> None:
        self.record = None
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b"{}"
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            body = {}
        if not isinstance(body, dict):
            body = {}
        path = self.path.split("?")[0]
        if path == "/api/show":  # Ollama's model details: a probe, as the GETs are
            self.record = Recorded(path=path, body=body, headers=dict(self.headers), kind=PROBE, method="POST")
            with self.fake.lock:
                self.fake.probes.append(self.record)
            self._probe_answer("POST", path)
            return
        if path.endswith("/embeddings"):
            kind = "embeddings"
        elif path.endswith("/responses"):
            kind = classify(body)
        else:
            self._json(404, error_body(f"Invalid URL (POST {path})"), shape="error")
            return
        persona = self.fake.persona
        record = Recorded(path=path, body=body, headers=dict(self.headers), kind=kind)
        if kind != "embeddings" and persona == "ollama" and isinstance(record.input, list):
            record.model_input = [m for m in record.input if not (isinstance(m, dict) and m.get("role") == "developer")]
        if kind != "embeddings" and persona == "ollama" and isinstance(record.model_input, list):
            record.model_input = _fitted(record.model_input, body.get("instructions"), self.fake.window)
        refusal = self._vllm_refusal(body) if kind != "embeddings" and persona == "vllm" else None
        if refusal is not None:
            record.model_input = []
        self.record = record
        with self.fake.lock:
            self.fake.requests.append(record)
        if refusal is not None:  # refused before anything runs: the script is kept
            self._json(400, refusal, shape="error")
            return
        if kind == "embeddings":
            with self.fake.lock:
                scripted = bool(self.fake.scripts["embeddings"])
            if scripted:
                self._answer(self.fake.next_item(kind, body), body)
            else:
                self._embeddings(body)
            return
        item = self.fake.next_item(kind, body)
        if isinstance(item, Hold):
            self._held(item, kind, body)
            return
        self._answer(item, body)

    def _vllm_refusal(self, body: dict) -> dict | None:
        """vLLM's 400s before a request runs: a developer item its chat template does not
        take, a ``max_output_tokens`` above ``max_model_len`` (renderers/params.py) and a
        prompt longer than it."""
        if _has_developer(body):
            return VLLM_ROLE_ERROR
        window, cap = self.fake.window, body.get("max_output_tokens")
        if isinstance(cap, int) and cap > window:
            message = (
                f"max_output_tokens={cap} cannot be greater than max_model_len={window}. "
                "Please request fewer output tokens."
            )
            return {"error": {"message": message, "type": "BadRequestError", "param": "max_output_tokens", "code": 400}}
        prompt = _prompt_words(body.get("input"), body.get("instructions"))
        if prompt > window:
            message = f"This model's maximum context length is {window} tokens. However, your prompt has {prompt}."
            return {"error": {"message": message, "type": "BadRequestError", "param": "input_text", "code": 400}}
        return None

    def _thought(self, text: str, body: dict) -> bool:
        """A thinking model's answer, as the persona serves it (the module docstring);
        False when it does not think now, and the answer goes out as usual."""
        fake, kind = self.fake, self.record.kind if self.record else "chat"
        words = fake.thinking(kind, body) if fake.persona in ("ollama", "vllm") else 0
        in_text = fake.persona == "vllm" and not fake.reasoning_parser
        if not words or (in_text and kind != "chat"):  # a structured answer's grammar leaves no room to think
            return False
        thought = " ".join(["hmm,"] * words)
        cap = body.get("max_output_tokens") if isinstance(body.get("max_output_tokens"), int) else None
        if fake.persona == "vllm" and isinstance(cap, int):
            cap = min(cap, fake.window - _prompt_words(body.get("input"), body.get("instructions")))
        if in_text:
            tagged = ("<think>\n" if fake.opening_tag else "") + thought + "\n</think>\n\n" + text
            if cap is not None and count_tokens(tagged) > cap:
                self._truncated(tagged, cap, body)
            elif body.get("stream"):
                self._sse(
                    stream_events([message_item(tagged)], usage=usage_json(10, count_tokens(tagged)), request=body)
                )
            else:
                self._json(
                    200, response_json(tagged, usage_json(10, count_tokens(tagged)), request=body), shape="response"
                )
            return True
        cut = cap is not None and words + count_tokens(text) > cap
        spent = min(words, cap) if cap is not None else words
        output = [reasoning_item(cut_to_tokens(thought, spent))]
        answer = cut_to_tokens(text, cap - spent) if cap is not None else text
        if answer:
            output.append(
                message_item(answer, status="incomplete" if cut and fake.persona != "ollama" else "completed")
            )
        reported = 0 if fake.persona == "ollama" else spent  # Ollama's ReasoningTokens: 0 (responses.go TODO)
        usage = usage_json(10, spent + count_tokens(answer), reasoning_tokens=reported)
        ending = {"status": "completed", "incomplete_reason": None}
        if cut and fake.persona != "ollama":
            ending = {"status": "incomplete", "incomplete_reason": "max_output_tokens"}
        if body.get("stream"):
            end = "incomplete" if ending["status"] == "incomplete" else "completed"
            self._sse(stream_events(output, end=end, usage=usage, request=body))
        else:
            self._json(200, response_json(None, usage, output=output, request=body, **ending), shape="response")
        return True

    def _held(self, held: Hold, kind: str, body: dict) -> None:
        if not held.after_chars:
            held.arrived.set()
        then = held.then if held.then is not None else default_answer(kind, body, self.fake.chat_count)
        try:
            if held.after_chars and body.get("stream") and isinstance(then, str):
                self._sse(sse_events(then, request=body), hold=held)
            elif held.wait_released():
                self._answer(then, body)
            else:
                self._json(500, error_body("a held reply was never released", type="server_error"), shape="error")
        finally:
            held.answered.set()

    def _answer(self, item: Any, body: dict) -> None:
        if isinstance(item, Disconnect):
            self.close_connection = True
            self.connection.shutdown(2)
            return
        if isinstance(item, Error):
            self._json(item.status, item.body(), shape="error", headers=item.headers)
            return
        if isinstance(item, Body):
            self._json(
                item.status, item.json, shape=self._shape(item.status) if item.check else None, headers=item.headers
            )
            return
        if isinstance(item, Events):
            self._sse(item.events, check=item.check)
            return
        if isinstance(item, StreamThenFail):
            self._sse(sse_events(item.text, end=item.end, request=body))
            return
        if isinstance(item, Truncated):
            cap = body.get("max_output_tokens") if isinstance(body.get("max_output_tokens"), int) else None
            cap = cap if cap is not None else item.max_output_tokens
            cap = cap if cap is not None else max(1, count_tokens(item.text) // 2)
            self._truncated(item.text, cap, body)
            return
        text = json.dumps(item) if isinstance(item, (dict, list)) else str(item)
        if self.fake.persona == "lmstudio" and _is_structured(body):
            text = self._wrapped(text)
        if self._thought(text, body):
            return
        cap = body.get("max_output_tokens")
        if self.fake.persona == "ollama" and isinstance(cap, int) and count_tokens(text) > cap:
            self._truncated(text, cap, body)  # the model stopped at the cap, and Ollama says "completed"
            return
        if body.get("stream"):
            self._sse(sse_events(text, request=body))
        else:
            self._json(200, response_json(text, request=body), shape="response")

    def _truncated(self, text: str, cap: int, body: dict) -> None:
        """The answer cut at ``cap`` words, reported as the persona reports it."""
        request = {**body, "max_output_tokens": cap}  # echoed in the response
        cut = cut_to_tokens(text, cap)
        if self.fake.persona == "ollama":
            events = truncated_completed_events(text, cap, reason=None, request=request)
            answer = truncated_completed_body(text, cap, reason=None, request=request)
        else:
            usage = usage_json(10, cap)
            events = stream_events(
                [message_item(cut, status="incomplete")], end="incomplete", usage=usage, request=request
            )
            answer = response_json(
                cut, usage, status="incomplete", incomplete_reason="max_output_tokens", request=request
            )
        if body.get("stream"):
            self._sse(events)
        else:
            self._json(200, answer, shape="response")

    def _wrapped(self, text: str) -> str:
        if self.fake.json_wrapping == "prose":
            return f"Here is the JSON you asked for:\n{text}"
        return f"```json\n{text}\n```"

    def _shape(self, status: int) -> str:
        if status >= 400:
            return "error"
        return "embeddings" if self.record is not None and self.record.kind == "embeddings" else "response"

    def _embeddings(self, body: dict) -> None:
        inputs = body.get("input")
        inputs = [inputs] if isinstance(inputs, str) else list(inputs or [])
        vectors = [hash_embedding(str(t)) for t in inputs]
        if body.get("encoding_format") == "base64":  # what the SDK asks for unless told otherwise
            vectors = [base64.b64encode(struct.pack(f"<{len(v)}f", *v)).decode("ascii") for v in vectors]
        data = [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)]
        tokens = sum(len(str(t).split()) for t in inputs)
        payload = {
            "object": "list",
            "data": data,
            "model": str(body.get("model") or "fake-embedding"),
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        }
        self._json(200, payload, shape="embeddings")

    # -- sending -------------------------------------------------------------------------------
    def _where(self) -> str:
        record = self.record
        return f"{record.method} {record.path} ({record.kind})" if record else f"{self.command} {self.path}"

    def _check(self, shape: str | None, payload: Any) -> None:
        if shape == "response":
            problems = check_response(payload)
        elif shape == "embeddings":
            problems = check_embeddings(payload)
        elif shape == "error":
            problems = check_error_body(payload, int_code=self.fake.persona == "vllm")
        else:
            return
        self.fake.note(self._where(), problems)

    def _json(self, status: int, payload: Any, *, shape: str | None, headers: dict | None = None) -> None:
        self._check(shape, payload)
        if self.record is not None:
            self.record.status = status
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _sse(self, events: list[tuple[str, dict]], hold: Hold | None = None, *, check: bool = True) -> None:
        if self.record is not None:
            self.record.status = 200
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        sent = 0
        for number, (kind, data) in enumerate(events):
            payload = {"type": kind, "sequence_number": number, **data}
            if check:
                self.fake.note(self._where(), check_event(payload))
            try:
                self.wfile.write(f"event: {kind}\ndata: {json.dumps(payload)}\n\n".encode())
                self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                return
            if hold is not None and kind == "response.output_text.delta":
                sent += len(data["delta"])
                if sent >= hold.after_chars:
                    hold.arrived.set()
                    if not hold.wait_released():
                        return  # nobody released it: end without response.completed
                    hold = None


_FORWARDED = ("context", "thinks", "reasoning_parser", "opening_tag")


class FakeOpenAIServer:
    """``with FakeOpenAIServer() as server: server.base_url ...``

    ``persona``: which real server to behave like (``PERSONAS``; see the module docstring);
    ``json_wrapping``: how the ``lmstudio`` persona wraps a structured answer."""

    def __init__(self, persona: str = "openai", *, json_wrapping: str = "fenced"):
        self.fake = FakeOpenAI()
        self.persona = persona
        self.json_wrapping = json_wrapping
        handler = type("Handler", (_Handler,), {"fake": self.fake})
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.httpd.daemon_threads = True
        # shutdown() waits for the serving loop to look at its flag, which it does
        # every poll_interval (0.5 s by default): that wait was most of a test's teardown.
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)

    @property
    def base_url(self) -> str:
        return f"{self.root_url}/v1"

    @property
    def root_url(self) -> str:
        """The server's root, where ``/api/version`` and ``/version`` live."""
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def persona(self) -> str:
        return self.fake.persona

    @persona.setter
    def persona(self, name: str) -> None:
        if name not in PERSONAS:
            raise ValueError(f"unknown persona {name!r}: one of {', '.join(PERSONAS)}")
        self.fake.persona = name

    def __getattr__(self, name: str):  # the persona's settings live in the state
        if name in _FORWARDED:
            return getattr(self.fake, name)
        raise AttributeError(name)

    def __setattr__(self, name: str, value) -> None:
        if name in _FORWARDED:
            setattr(self.fake, name, value)
        else:
            super().__setattr__(name, value)

    @property
    def json_wrapping(self) -> str:
        return self.fake.json_wrapping

    @json_wrapping.setter
    def json_wrapping(self, style: str) -> None:
        if style not in ("fenced", "prose"):
            raise ValueError(f"json_wrapping is 'fenced' or 'prose', not {style!r}")
        self.fake.json_wrapping = style

    def start(self) -> FakeOpenAIServer:
        self.thread.start()
        return self

    def stop(self) -> None:
        for held in self.fake.holds:  # no handler thread outlives the server
            held.release()
        self.httpd.shutdown()
        self.httpd.server_close()

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # conveniences forwarded to the state
    def script(self, kind: str, *items: Any) -> FakeOpenAI:
        return self.fake.script(kind, *items)

    @property
    def requests(self) -> list[Recorded]:
        return self.fake.requests

    @property
    def probes(self) -> list[Recorded]:
        return self.fake.probes

    @property
    def violations(self) -> list[str]:
        """What the server sent that the SDK's types reject (see the module docstring)."""
        return self.fake.violations

    @property
    def chats(self) -> list[Recorded]:
        return self.fake.chats

    def of_kind(self, kind: str) -> list[Recorded]:
        return self.fake.of_kind(kind)

    def hold(self, kind: str, then: Any = None, *, after_chars: int = 0) -> Hold:
        return self.fake.hold(kind, then, after_chars=after_chars)

    def hold_probes(self) -> Hold:
        """Every probe (GET, and POST /api/show) waits until the returned hold is released."""
        held = self.fake.probe_hold = Hold()
        self.fake.holds.append(held)
        return held


Responder = Callable[[dict], Any]
