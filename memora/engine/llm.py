"""The language model: the real ``openai`` client and the Responses API.

``ModelClient`` creates ``openai.OpenAI`` lazily (importing openai costs a
second at start-up, and with no key the constructor would raise), maps every
client error to one readable ``ModelCallError`` line, and never lets the API
key appear in a message.

* ``stream_reply``: the tutor's answer, streamed (``stream=True``);
* ``parse``: structured output into a pydantic model (extraction, decisions);
* ``summarize``: folds old turns into the running summary (``memory.py``).

Requests are sent with ``store=False``: the learner's data is not kept on the
provider's side for later retrieval.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from memora.engine.config import Settings
from memora.engine.errors import ModelCallError, ModelNotConfigured
from memora.engine.prompts import SUMMARY_PROMPT
from memora.engine.text_utils import shorten

log = logging.getLogger("memora")

T = TypeVar("T")

NOT_CONFIGURED = (
    "No model is configured: set OPENAI_API_KEY (OpenAI), or OPENAI_BASE_URL for a local "
    "OpenAI-compatible server such as Ollama, vLLM or LM Studio. Commands keep working meanwhile."
)
LOCAL_SERVER_PLACEHOLDER_KEY = "memora-local"
# A reply that stops before the server's ``response.completed`` is a failed turn,
# rolled back like any other failure; only a reply the server itself ends as
# ``response.incomplete`` (the output-token limit) is kept, with a notice.
CUT_OFF_LEAD = "(reply cut off)"
NOT_KEPT = "That message was not kept; send it again."
CUT_OFF = f"{CUT_OFF_LEAD} The connection closed before the reply was complete. {NOT_KEPT}"


@dataclass
class _Received:
    """What a reply stream has delivered so far."""

    parts: list[str] = field(default_factory=list)
    usage: object = None
    incomplete: str | None = None  # why the server stopped early (a token limit), if it did
    finished: bool = False  # the server said the response is over


@dataclass(frozen=True)
class ReplyResult:
    text: str
    input_tokens: int | None = None
    output_tokens: int | None = None
    total_tokens: int | None = None
    incomplete: str | None = None


class ModelClient:
    """Lazily-built ``openai.OpenAI`` client plus Memora's three kinds of call."""

    def __init__(self, settings: Settings, *, http_client=None):
        self.settings = settings
        self._http_client = http_client
        self._client = None
        self._lock = threading.Lock()

    @property
    def configured(self) -> bool:
        return self.settings.chat_configured

    def openai(self):
        if not self.configured:
            raise ModelNotConfigured(NOT_CONFIGURED)
        with self._lock:
            if self._client is None:
                import openai

                self._client = openai.OpenAI(
                    api_key=self.settings.api_key or LOCAL_SERVER_PLACEHOLDER_KEY,
                    base_url=self.settings.base_url,
                    timeout=self.settings.timeout,
                    max_retries=self.settings.max_retries,
                    http_client=self._http_client,
                )
            return self._client

    # -- error mapping ----------------------------------------------------------------
    def redact(self, text: str) -> str:
        key = self.settings.api_key
        if key and len(key) >= 6:
            text = text.replace(key, "[redacted]")
        return text

    def _error(self, error: BaseException, what: str) -> ModelCallError:
        import openai

        where = self.settings.base_url or "api.openai.com"
        if isinstance(error, openai.AuthenticationError):
            message = f"{what} failed: the API key was rejected (401). Check OPENAI_API_KEY."
        elif isinstance(error, openai.PermissionDeniedError):
            message = f"{what} failed: permission denied (403) for model {self.settings.model}."
        elif isinstance(error, openai.NotFoundError):
            message = f"{what} failed: not found (404). Is '{self.settings.model}' served at {where}?"
        elif isinstance(error, openai.RateLimitError):
            message = f"{what} failed: rate limited or out of quota (429) after {self.settings.max_retries} retries."
        elif isinstance(error, openai.APITimeoutError):
            message = f"{what} timed out after {self.settings.timeout:g}s (MEMORA_TIMEOUT)."
        elif isinstance(error, openai.APIConnectionError):
            message = f"{what} failed: cannot reach {where}."
        elif isinstance(error, openai.APIStatusError):
            detail = _error_detail(error)
            message = f"{what} failed with HTTP {error.status_code}{': ' + detail if detail else ''}."
        elif isinstance(error, openai.APIError):
            message = f"{what} failed: {shorten(str(error), 160)}"
        elif _is_malformed_answer(error):
            # pydantic's own text ("1 validation error ... [type=json_invalid, input_value=...")
            # is for developers; the learner is told what happened, the log keeps the rest
            log.warning("%s: malformed structured output: %s", what, shorten(str(error), 160))
            message = f"{what} failed: the model's answer was not in the expected format."
        else:
            message = f"{what} failed: {type(error).__name__}: {shorten(str(error), 160)}"
        return ModelCallError(self.redact(message))

    # -- calls ------------------------------------------------------------------------
    def stream_reply(
        self,
        *,
        instructions: str,
        messages: Sequence[dict],
        on_delta: Callable[[str], None],
    ) -> ReplyResult:
        """Stream the tutor's reply; ``on_delta`` receives each text fragment.

        KeyboardInterrupt propagates (after closing the stream) so the caller
        can roll the turn back.
        """
        client = self.openai()
        received = _Received()
        stream = None
        try:
            stream = client.responses.create(
                model=self.settings.model,
                instructions=instructions,
                input=list(messages),
                stream=True,
                store=False,
                max_output_tokens=self.settings.max_output_tokens,
            )
            for event in stream:
                self._read_event(event, received, on_delta)
        except (ModelCallError, KeyboardInterrupt):
            raise
        except Exception as error:
            raise self._error(error, "The model request") from None
        finally:
            if stream is not None:
                try:
                    stream.close()
                except Exception:
                    pass
        text = "".join(received.parts)
        if not received.finished:
            # The stream ended without the server saying the response was over (the
            # connection closed, a proxy gave up): what arrived is a fragment, and
            # keeping it would let the next turns build on half an answer.
            raise ModelCallError(CUT_OFF)
        if not text.strip() and received.incomplete is None:
            raise ModelCallError("The model returned an empty reply.")
        usage = received.usage
        return ReplyResult(
            text=text,
            input_tokens=getattr(usage, "input_tokens", None),
            output_tokens=getattr(usage, "output_tokens", None),
            total_tokens=getattr(usage, "total_tokens", None),
            incomplete=received.incomplete,
        )

    def _read_event(self, event, received: _Received, on_delta: Callable[[str], None]) -> None:
        """One streamed event: text is shown and kept, the end is noted, a failure raises."""
        kind = getattr(event, "type", "")
        if kind == "response.output_text.delta":
            received.parts.append(event.delta)
            on_delta(event.delta)
        elif kind == "response.completed":
            received.usage = getattr(event.response, "usage", None)
            received.finished = True
        elif kind == "response.incomplete":
            received.finished = True
            response = getattr(event, "response", None)
            received.usage = getattr(response, "usage", None)
            details = getattr(response, "incomplete_details", None)
            received.incomplete = getattr(details, "reason", None) or "incomplete"
        elif kind == "response.failed":
            error = getattr(getattr(event, "response", None), "error", None)
            detail = getattr(error, "message", None) or "unknown error"
            raise ModelCallError(self.redact(f"{CUT_OFF_LEAD} the model failed: {detail}. {NOT_KEPT}"))
        elif kind == "error":
            detail = getattr(event, "message", None) or "unknown"
            raise ModelCallError(self.redact(f"{CUT_OFF_LEAD} the model reported an error: {detail}. {NOT_KEPT}"))

    def parse(self, *, instructions: str, input_text: str, text_format: type[T], what: str) -> tuple[T, int]:
        """Structured output into ``text_format``; returns (parsed, total tokens).

        The schema goes out without its titles and descriptions (``compact_schema``):
        the provider puts the schema in front of every such request and bills it
        as input, and those keys carry nothing the prompt does not say."""
        client = self.openai()
        try:
            response = client.responses.create(
                model=self.settings.model,
                instructions=instructions,
                input=[{"role": "user", "content": input_text}],
                text={
                    "format": {
                        "type": "json_schema",
                        "name": text_format.__name__,
                        "schema": compact_schema(text_format),
                        "strict": True,
                    }
                },
                store=False,
            )
            answer = (response.output_text or "").strip()
            parsed = text_format.model_validate_json(answer) if answer else None
        except Exception as error:
            raise self._error(error, what) from None
        if parsed is None:
            raise ModelCallError(f"{what} returned no structured output.")
        usage = getattr(response, "usage", None)
        return parsed, int(getattr(usage, "total_tokens", 0) or 0)

    def summarize(self, previous: str, messages: list[dict], max_tokens: int) -> tuple[str, int]:
        """``memory.Summarizer``: previous summary + folded messages -> new summary."""
        client = self.openai()
        transcript = "\n".join(f"{m['role']}: {m['content']}" for m in messages)
        body = f"Previous summary:\n{previous or '(none)'}\n\nNew messages:\n{transcript}"
        try:
            response = client.responses.create(
                model=self.settings.model,
                instructions=SUMMARY_PROMPT.format(max_words=max(30, int(max_tokens * 0.6))),
                input=[{"role": "user", "content": body}],
                store=False,
                max_output_tokens=max_tokens,
            )
        except Exception as error:
            raise self._error(error, "The summary request") from None
        usage = getattr(response, "usage", None)
        return (response.output_text or "").strip(), int(getattr(usage, "total_tokens", 0) or 0)


_SCHEMA_NOISE = ("title", "description")
_SCHEMA_CACHE: dict[type, dict] = {}


def compact_schema(model: type) -> dict:
    """The strict JSON schema the SDK would send for ``model``, in fewer tokens.

    The provider puts the schema in front of every structured request and bills
    it as input, so it goes out in its shortest equivalent form: without titles
    and descriptions (they change nothing the model may return), with each
    definition used once written where it is used (a ``$ref`` and its ``$defs``
    entry cost more than the object itself), and ``anyOf: [{type: X}, {type:
    null}]`` as ``type: [X, "null"]``. Both forms are in strict mode's subset."""
    if model not in _SCHEMA_CACHE:
        from openai.lib._pydantic import to_strict_json_schema

        schema = _without_noise(to_strict_json_schema(model))
        _SCHEMA_CACHE[model] = _shortened(schema, schema.get("$defs", {}), _ref_counts(schema))
    return _SCHEMA_CACHE[model]


def _without_noise(node, *, naming: bool = False):
    """``naming``: the keys of this mapping are names (of properties or definitions),
    so a field called "title" stays."""
    if isinstance(node, list):
        return [_without_noise(item) for item in node]
    if not isinstance(node, dict):
        return node
    return {
        key: _without_noise(value, naming=key in ("properties", "$defs") and not naming)
        for key, value in node.items()
        if naming or key not in _SCHEMA_NOISE
    }


def _ref_counts(node, counts: dict[str, int] | None = None) -> dict[str, int]:
    counts = {} if counts is None else counts
    if isinstance(node, dict):
        if isinstance(node.get("$ref"), str):
            counts[node["$ref"]] = counts.get(node["$ref"], 0) + 1
        for value in node.values():
            _ref_counts(value, counts)
    elif isinstance(node, list):
        for item in node:
            _ref_counts(item, counts)
    return counts


def _shortened(node, defs: dict, counts: dict[str, int], *, naming: bool = False):
    if isinstance(node, list):
        return [_shortened(item, defs, counts) for item in node]
    if not isinstance(node, dict):
        return node
    if naming:
        return {key: _shortened(value, defs, counts) for key, value in node.items()}
    ref = node.get("$ref")
    name = ref.removeprefix("#/$defs/") if isinstance(ref, str) else None
    if name in defs and counts.get(ref) == 1 and len(node) == 1:
        return _shortened(defs[name], defs, counts)  # recursive models use their ref more than once
    options = node.get("anyOf")
    if isinstance(options, list) and len(node) == 1 and len(options) == 2 and {"type": "null"} in options:
        other = next(o for o in options if o != {"type": "null"})
        if set(other) == {"type"} and isinstance(other["type"], str):
            return {"type": [other["type"], "null"]}
    kept = {
        key: _shortened(value, defs, counts, naming=key == "properties")
        for key, value in node.items()
        if key != "$defs"
    }
    remaining = {
        key: _shortened(value, defs, counts)
        for key, value in (node.get("$defs") or {}).items()
        if counts.get(f"#/$defs/{key}", 0) != 1
    }
    if remaining:
        kept["$defs"] = remaining
    return kept


def _error_detail(error) -> str:
    body = getattr(error, "body", None)
    if isinstance(body, dict):
        message = (
            body.get("message") or (body.get("error") or {}).get("message")
            if isinstance(body.get("error"), dict)
            else body.get("message")
        )
        if message:
            return shorten(str(message), 160)
    return ""


def _is_malformed_answer(error: BaseException) -> bool:
    """Structured output that is not JSON, or JSON of the wrong shape."""
    from pydantic import ValidationError

    return isinstance(error, (ValidationError, json.JSONDecodeError))
