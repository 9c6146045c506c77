"""A small local server that speaks the parts of the OpenAI API Memora uses.

It serves ``POST /v1/responses`` (JSON, and SSE when ``stream`` is true) and
``POST /v1/embeddings``, records every request it receives, and answers from
per-kind scripts. The real ``openai.OpenAI`` client talks to it over loopback,
so tests exercise the real client and assert on exactly what was sent.

Kinds are told apart the way Memora's calls differ: structured-output calls by
their schema name, the summary by its instructions, everything else is chat.
"""

from __future__ import annotations

import hashlib
import json
import math
import threading
from collections import defaultdict, deque
from collections.abc import Callable
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
}


@dataclass
class Error:
    """Answer with an HTTP error status (the client may retry 5xx/429)."""

    status: int
    message: str = "scripted failure"
    times: int = 1


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
class Recorded:
    path: str
    body: dict
    headers: dict
    kind: str

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
        from memora.engine.prompts import SYSTEM_PROMPT

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


def hash_embedding(text: str, dim: int = 64) -> list[float]:
    vector = [0.0] * dim
    for word in text.lower().split():
        digest = hashlib.sha256(word.encode()).digest()
        vector[digest[0] % dim] += 1.0 if digest[1] & 1 else -1.0
    norm = math.sqrt(sum(x * x for x in vector)) or 1.0
    return [x / norm for x in vector]


@dataclass
class FakeOpenAI:
    """The scripted state behind the server."""

    requests: list[Recorded] = field(default_factory=list)
    scripts: dict[str, deque] = field(default_factory=lambda: defaultdict(deque))
    lock: threading.Lock = field(default_factory=threading.Lock)
    chat_count: int = 0
    holds: list[Hold] = field(default_factory=list)

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
            return [r for r in self.requests if r.kind == kind]

    @property
    def chats(self) -> list[Recorded]:
        return self.of_kind("chat")

    def clear(self) -> None:
        with self.lock:
            self.requests.clear()

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
    if kind == "summary":
        content = (body.get("input") or [{}])[-1].get("content", "")
        return f"Summary so far ({content.count(chr(10)) + 1} lines folded)."
    return f"Reply {n}."


def response_json(text: str, usage: dict | None = None) -> dict:
    return {
        "id": "resp_fake",
        "object": "response",
        "created_at": 0,
        "model": "fake-model",
        "status": "completed",
        "output": [
            {
                "type": "message",
                "id": "msg_fake",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": text, "annotations": []}],
            }
        ],
        "usage": usage or {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15},
    }


def sse_events(text: str, *, end: str = "completed") -> list[tuple[str, dict]]:
    base = response_json("")
    base["status"] = "in_progress"
    events: list[tuple[str, dict]] = [("response.created", {"response": base})]
    item = {"type": "message", "id": "msg_fake", "role": "assistant", "status": "in_progress", "content": []}
    events.append(("response.output_item.added", {"output_index": 0, "item": item}))
    part = {"type": "output_text", "text": "", "annotations": []}
    events.append(
        ("response.content_part.added", {"output_index": 0, "content_index": 0, "item_id": "msg_fake", "part": part})
    )
    chunks = [text[i : i + 24] for i in range(0, len(text), 24)] or [""]
    for chunk in chunks:
        events.append(
            (
                "response.output_text.delta",
                {"output_index": 0, "content_index": 0, "item_id": "msg_fake", "delta": chunk, "logprobs": []},
            )
        )
    if end == "close":
        return events
    if end == "error":
        events.append(("error", {"code": "server_error", "message": "stream broke", "param": None}))
        return events
    if end in ("failed", "incomplete"):
        final = response_json(text)
        final["status"] = end
        if end == "failed":
            final["error"] = {"code": "server_error", "message": "stream broke"}
        else:
            final["incomplete_details"] = {"reason": "max_output_tokens"}
        events.append((f"response.{end}", {"response": final}))
        return events
    events.append(
        (
            "response.output_text.done",
            {"output_index": 0, "content_index": 0, "item_id": "msg_fake", "text": text, "logprobs": []},
        )
    )
    events.append(
        (
            "response.content_part.done",
            {"output_index": 0, "content_index": 0, "item_id": "msg_fake", "part": {**part, "text": text}},
        )
    )
    done_item = {**item, "status": "completed", "content": [{**part, "text": text}]}
    events.append(("response.output_item.done", {"output_index": 0, "item": done_item}))
    events.append(("response.completed", {"response": response_json(text)}))
    return events


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    fake: FakeOpenAI

    def log_message(self, *args) -> None:  # keep test output clean
        pass

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b"{}"
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            body = {}
        path = self.path.split("?")[0]
        if path.endswith("/embeddings"):
            kind = "embeddings"
        elif path.endswith("/responses"):
            kind = classify(body)
        else:
            self._json(404, {"error": {"message": f"no route {path}"}})
            return
        record = Recorded(path=path, body=body, headers=dict(self.headers), kind=kind)
        with self.fake.lock:
            self.fake.requests.append(record)
        if kind == "embeddings":
            self._embeddings(body)
            return
        item = self.fake.next_item(kind, body)
        if isinstance(item, Hold):
            self._held(item, kind, body)
            return
        self._answer(item, body)

    def _held(self, held: Hold, kind: str, body: dict) -> None:
        if not held.after_chars:
            held.arrived.set()
        then = held.then if held.then is not None else default_answer(kind, body, self.fake.chat_count)
        try:
            if held.after_chars and body.get("stream") and isinstance(then, str):
                events = sse_events(then)
                self._sse(events, hold=held)
            elif held.wait_released():
                self._answer(then, body)
            else:
                self._json(
                    500, {"error": {"message": "a held reply was never released", "type": "server_error", "code": None}}
                )
        finally:
            held.answered.set()

    def _answer(self, item: Any, body: dict) -> None:
        if isinstance(item, Disconnect):
            self.close_connection = True
            self.connection.shutdown(2)
            return
        if isinstance(item, Error):
            self._json(item.status, {"error": {"message": item.message, "type": "server_error", "code": None}})
            return
        if isinstance(item, StreamThenFail):
            self._sse(sse_events(item.text, end=item.end))
            return
        text = json.dumps(item) if isinstance(item, (dict, list)) else str(item)
        if body.get("stream"):
            self._sse(sse_events(text))
        else:
            self._json(200, response_json(text))

    def _embeddings(self, body: dict) -> None:
        inputs = body.get("input")
        inputs = [inputs] if isinstance(inputs, str) else list(inputs or [])
        data = [{"object": "embedding", "index": i, "embedding": hash_embedding(str(t))} for i, t in enumerate(inputs)]
        tokens = sum(len(str(t).split()) for t in inputs)
        self._json(
            200,
            {
                "object": "list",
                "data": data,
                "model": body.get("model"),
                "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
            },
        )

    def _json(self, status: int, payload: dict) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _sse(self, events: list[tuple[str, dict]], hold: Hold | None = None) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        sent = 0
        for number, (kind, data) in enumerate(events):
            payload = {"type": kind, "sequence_number": number, **data}
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


class FakeOpenAIServer:
    """``with FakeOpenAIServer() as server: server.base_url ...``"""

    def __init__(self):
        self.fake = FakeOpenAI()
        handler = type("Handler", (_Handler,), {"fake": self.fake})
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.httpd.daemon_threads = True
        # shutdown() waits for the serving loop to look at its flag, which it does
        # every poll_interval (0.5 s by default): that wait was most of a test's teardown.
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

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
    def chats(self) -> list[Recorded]:
        return self.fake.chats

    def of_kind(self, kind: str) -> list[Recorded]:
        return self.fake.of_kind(kind)

    def hold(self, kind: str, then: Any = None, *, after_chars: int = 0) -> Hold:
        return self.fake.hold(kind, then, after_chars=after_chars)


Responder = Callable[[dict], Any]
