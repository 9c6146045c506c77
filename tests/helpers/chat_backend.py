"""A small scripted OpenAI chat-completions server, for a bridge in front of it.

``fake_openai.py`` speaks the Responses API to Memora directly. This one speaks the
older chat-completions API (``POST /v1/chat/completions``, JSON, and SSE when
``stream`` is true), so that an independent implementation of the Responses API
(LiteLLM's proxy, whose ``/v1/responses`` is bridged to chat completions) can sit
between Memora and it. It records every request as the bridge forwarded it, so a
test can assert on the real messages the model would have read, and answers from
per-kind scripts, telling kinds apart the way ``fake_openai`` does: structured calls
by ``response_format.json_schema.name``, the summary by its system text, everything
else is chat.

Everything it sends is checked against the ``openai`` SDK's own types
(``ChatCompletion``, ``ChatCompletionChunk``) first: a payload that does not fit is
answered with HTTP 500 and kept in ``problems``, so a test cannot pass on an answer
no real server would give.

A thinking model (``backend.think(chat=4000, summary=3000, structured=3000)``, words
of thinking before the answer of each kind) answers as Ollama's chat-completions
endpoint does for one (openai/openai.go): the thinking comes in the message's and
each delta's ``reasoning`` field, before the content; it counts inside ``max_tokens``
(``num_predict``), so a cap it reaches ends the answer with ``finish_reason:
"length"`` and no content; ``usage.completion_tokens`` counts it (``EvalCount``); and
``reasoning_effort: "none"`` turns it off (``think: false``) unless
``obeys_none=False``, as for a model whose thinking cannot be turned off.
``backend.generated`` adds up the tokens of every answer it sent.
"""

from __future__ import annotations

import json
import threading
from collections import defaultdict, deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from helpers.fake_openai import SCHEMA_KINDS, Error

SUMMARY_LEAD = "You maintain the running summary"
INSTRUCTION_ROLES = ("system", "developer")  # a bridge may send either
CHUNK_CHARS = 24


@dataclass
class Cut:
    """An answer that stops early. ``"length"``: it ends with ``finish_reason:
    "length"``, as a server stopped by the output-token limit ends it (streamed or
    not). ``"close"``: a streamed answer's connection closes after the text, with no
    finish reason and no ``[DONE]`` (the server died or a proxy gave up)."""

    text: str
    end: str = "length"


@dataclass
class Received:
    """One request as the backend received it."""

    path: str
    body: dict
    headers: dict
    kind: str
    reply: str | None = None  # the text answered, once it was
    thought: str = ""  # the thinking sent before it
    usage: dict | None = None  # the usage reported with it

    def header(self, name: str) -> str | None:
        return next((v for k, v in self.headers.items() if k.lower() == name.lower()), None)

    @property
    def messages(self) -> list[dict]:
        return self.body.get("messages") or []

    @property
    def roles(self) -> list[str]:
        return [m.get("role") for m in self.messages]

    @property
    def instruction_messages(self) -> list[str]:
        """The text of every system or developer message, in order."""
        return [content_text(m.get("content")) for m in self.messages if m.get("role") in INSTRUCTION_ROLES]

    @property
    def conversation(self) -> list[tuple[str, str]]:
        """The user and assistant turns, as (role, text)."""
        return [
            (m["role"], content_text(m.get("content"))) for m in self.messages if m.get("role") in ("user", "assistant")
        ]

    def section(self, tag: str) -> str | None:
        """The body of ``<tag>...</tag>`` in any system or developer message, or None."""
        start, end = f"<{tag}>\n", f"\n</{tag}>"
        for text in self.instruction_messages:
            if start in text:
                return text.split(start, 1)[1].split(end, 1)[0]
        return None

    @property
    def last_user(self) -> str:
        users = [text for role, text in self.conversation if role == "user"]
        return users[-1] if users else ""

    @property
    def json_schema(self) -> dict:
        """``response_format.json_schema`` ({} when the request asked for plain text)."""
        fmt = self.body.get("response_format")
        return (fmt.get("json_schema") or {}) if isinstance(fmt, dict) else {}


def content_text(content: Any) -> str:
    """A message's content as text: a string, or the text of its parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def classify(body: dict) -> str:
    fmt = body.get("response_format")
    schema = (fmt.get("json_schema") or {}) if isinstance(fmt, dict) else {}
    name = schema.get("name") if isinstance(schema, dict) else None
    if name in SCHEMA_KINDS:
        return SCHEMA_KINDS[name]
    first = next((m for m in body.get("messages") or [] if m.get("role") in INSTRUCTION_ROLES), None)
    if first is not None and content_text(first.get("content")).startswith(SUMMARY_LEAD):
        return "summary"
    return "chat"


def default_answer(kind: str, body: dict, n: int) -> Any:
    if kind == "extraction":
        return {"facts": [], "profile_changes": [], "corrections": [], "mistakes": []}
    if kind == "reconcile":
        return {"action": "ADD", "memory": None, "text": None}
    if kind == "reconcile_many":
        return {"decisions": []}
    if kind == "correction":
        return {"memories": []}
    if kind == "grading":
        return {"verdict": "correct", "feedback": "Well done."}
    if kind == "summary":
        last = content_text(((body.get("messages") or [{}])[-1]).get("content"))
        return f"Summary so far ({last.count(chr(10)) + 1} lines folded)."
    return f"Reply {n}."


def usage(body: dict, text: str, thought: str = "") -> dict:
    """Made-up but consistent token counts: about four characters a token, and a word
    of thinking a token."""
    prompt = max(1, len(json.dumps(body.get("messages") or [])) // 4)
    completion = max(1, len(text) // 4) + len(thought.split())
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def completion_json(body: dict, text: str, number: int, finish: str = "stop", thought: str = "") -> dict:
    message = {"role": "assistant", "content": text, "refusal": None} | ({"reasoning": thought} if thought else {})
    return {
        "id": f"chatcmpl-backend-{number}",
        "object": "chat.completion",
        "created": 1_700_000_000 + number,
        "model": body.get("model") or "backend-model",
        "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
        "usage": usage(body, text, thought),
    }


def completion_chunks(body: dict, text: str, number: int, finish: str | None = "stop", thought: str = "") -> list[dict]:
    """The ``chat.completion.chunk`` events of a streamed answer: the role first, the
    thinking in ``reasoning`` deltas (Ollama's), the text in pieces, the finish reason,
    then (when ``stream_options.include_usage``) the usage in a chunk of its own with no
    choices, as OpenAI sends it. ``finish`` None: the text only (a stream cut off before
    its end)."""
    base = {
        "id": f"chatcmpl-backend-{number}",
        "object": "chat.completion.chunk",
        "created": 1_700_000_000 + number,
        "model": body.get("model") or "backend-model",
    }

    def chunk(delta: dict, finish: str | None = None) -> dict:
        return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}]}

    chunks = [chunk({"role": "assistant", "content": ""})]
    words = thought.split()
    chunks += [chunk({"reasoning": " ".join(words[i : i + 200]) + " "}) for i in range(0, len(words), 200)]
    chunks += [chunk({"content": text[i : i + CHUNK_CHARS]}) for i in range(0, len(text), CHUNK_CHARS)]
    if finish is None:
        return chunks
    chunks.append(chunk({}, finish))
    if (body.get("stream_options") or {}).get("include_usage"):
        chunks.append({**base, "choices": [], "usage": usage(body, text, thought)})
    return chunks


def checked(payload: dict, *, chunk: bool) -> dict:
    """``payload``, after the SDK's own type accepted it (raises ``pydantic.ValidationError``)."""
    from openai.types.chat import ChatCompletion, ChatCompletionChunk

    (ChatCompletionChunk if chunk else ChatCompletion).model_validate(payload)
    return payload


@dataclass
class ChatBackendState:
    received: list[Received] = field(default_factory=list)
    scripts: dict[str, deque] = field(default_factory=lambda: defaultdict(deque))
    problems: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    answered: int = 0
    chat_count: int = 0
    thinks: dict[str, int] = field(default_factory=dict)  # words of thinking before an answer, by kind
    obeys_none: bool = True  # reasoning_effort "none" turns the thinking off
    generated: int = 0  # the tokens of every answer sent (their usage.total_tokens)

    def thought(self, kind: str, body: dict) -> str:
        if self.obeys_none and body.get("reasoning_effort") == "none":
            return ""
        words = self.thinks.get(kind, self.thinks.get("structured", 0) if kind in SCHEMA_KINDS.values() else 0)
        return " ".join(["hmm,"] * words)

    def next_item(self, kind: str, body: dict) -> tuple[Any, int]:
        with self.lock:
            queue = self.scripts[kind]
            item = queue.popleft() if queue else None
            if isinstance(item, Error) and item.times > 1:
                item.times -= 1
                queue.appendleft(item)
            self.answered += 1
            number = self.answered
            if kind == "chat" and not isinstance(item, Error):
                self.chat_count += 1
            chat_count = self.chat_count
        if callable(item) and not isinstance(item, type):
            item = item(body)
        if item is None:
            item = default_answer(kind, body, chat_count)
        return item, number


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    state: ChatBackendState

    def log_message(self, *args) -> None:
        pass

    def do_GET(self) -> None:
        with self.state.lock:
            self.state.problems.append(f"unexpected request: GET {self.path}")
        self._json(404, {"error": {"message": f"no route {self.path}", "type": "invalid_request_error"}})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b"{}"
        path = self.path.split("?")[0]
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            body = {}
        if not path.endswith("/chat/completions"):
            with self.state.lock:
                self.state.problems.append(f"unexpected request: POST {path}")
            self._json(404, {"error": {"message": f"no route {path}", "type": "invalid_request_error"}})
            return
        kind = classify(body)
        record = Received(path=path, body=body, headers=dict(self.headers), kind=kind)
        with self.state.lock:
            self.state.received.append(record)
        item, number = self.state.next_item(kind, body)
        if isinstance(item, Error):
            self._json(item.status, {"error": {"message": item.message, "type": "server_error", "code": None}})
            return
        finish: str | None = "stop"
        if isinstance(item, Cut):
            item, finish = item.text, (item.end if item.end == "length" else None)
        text = json.dumps(item) if isinstance(item, (dict, list)) else str(item)
        thought = self.state.thought(kind, body)
        cap = body.get("max_tokens") or body.get("max_completion_tokens")
        if thought and isinstance(cap, int) and len(thought.split()) >= cap:  # the cap ends it while thinking
            thought, text, finish = " ".join(thought.split()[:cap]), "", "length"
        elif thought and isinstance(cap, int) and len(text) // 4 > cap - len(thought.split()):  # or in the text
            text, finish = text[: (cap - len(thought.split())) * 4], "length"
        try:
            if body.get("stream"):
                events = [checked(c, chunk=True) for c in completion_chunks(body, text, number, finish, thought)]
            else:
                payload = checked(completion_json(body, text, number, finish or "stop", thought), chunk=False)
        except Exception as error:  # our own answer does not fit the SDK's types: say so loudly
            with self.state.lock:
                self.state.problems.append(f"invalid answer for {kind}: {error}")
            self._json(500, {"error": {"message": "the backend built an invalid answer", "type": "server_error"}})
            return
        record.reply, record.thought, record.usage = text, thought, usage(body, text, thought)
        with self.state.lock:
            self.state.generated += record.usage["total_tokens"]
        if body.get("stream"):
            self._sse(events, done=finish is not None)
        else:
            self._json(200, payload)

    def _json(self, status: int, payload: dict) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _sse(self, chunks: list[dict], *, done: bool = True) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        try:
            for payload in chunks:
                self.wfile.write(f"data: {json.dumps(payload)}\n\n".encode())
                self.wfile.flush()
            if done:
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass


class ChatBackend:
    """``with ChatBackend() as backend: backend.base_url ...`` (loopback, a free port)."""

    def __init__(self):
        self.state = ChatBackendState()
        handler = type("Handler", (_Handler,), {"state": self.state})
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def start(self) -> ChatBackend:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def __enter__(self) -> ChatBackend:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def script(self, kind: str, *items: Any) -> ChatBackend:
        """Answer the next requests of ``kind`` with ``items`` (text, JSON-able values,
        ``Cut``, ``Error``, or a callable given the request body); then the defaults."""
        with self.state.lock:
            self.state.scripts[kind].extend(items)
        return self

    def think(self, *, obeys_none: bool = True, **words: int) -> ChatBackend:
        """From now on a thinking model: ``words`` of thinking before each answer, by kind."""
        with self.state.lock:
            self.state.thinks, self.state.obeys_none = dict(words), obeys_none
        return self

    @property
    def generated(self) -> int:
        with self.state.lock:
            return self.state.generated

    def reset(self) -> None:
        """Forget what was received and scripted (the backend outlives a test)."""
        with self.state.lock:
            self.state.received.clear()
            self.state.scripts.clear()
            self.state.problems.clear()
            self.state.chat_count = self.state.generated = 0
            self.state.thinks, self.state.obeys_none = {}, True

    @property
    def received(self) -> list[Received]:
        with self.state.lock:
            return list(self.state.received)

    def of_kind(self, kind: str) -> list[Received]:
        return [r for r in self.received if r.kind == kind]

    @property
    def chats(self) -> list[Received]:
        return self.of_kind("chat")

    @property
    def problems(self) -> list[str]:
        with self.state.lock:
            return list(self.state.problems)
