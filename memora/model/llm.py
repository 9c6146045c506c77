"""The language model: the real ``openai`` client and the Responses API.

``ModelClient`` creates ``openai.OpenAI`` lazily (importing openai costs a
second at start-up, and with no key the constructor would raise), maps every
client error to one readable ``ModelCallError`` line, and never lets the API
key appear in a message.

* ``stream_reply``: the tutor's answer, streamed (``stream=True``);
* ``parse``: structured output into a pydantic model (extraction, decisions);
* ``summarize``: folds old turns into the running summary (``memory.py``).

Every call goes through ``_create``, which adds what the model and the server
need (``model_facts``, ``servers``): the call kind's reasoning effort and
temperature, and an output cap with room for the thinking the server has
reported this session, within the model's context window. The model's thinking
never reaches the learner or the conversation (``structured.without_thinking``).

Requests are sent with ``store=False``: the learner's data is not kept on the
provider's side for later retrieval.
"""

from __future__ import annotations

import json
import logging
import re
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import date

from memora.core.config import CHAT, DEFAULT_MODEL, MIN_OUTPUT_TOKENS, STRUCTURED, Settings
from memora.core.errors import ModelCallError, ModelNotConfigured
from memora.core.text_utils import clean_text, counted, shorten
from memora.core.timeutil import system_clock
from memora.model.model_facts import REASONING_ROOM, effort_for, shutdown_date
from memora.model.prompts import REPAIR_PROMPT, SCHEMA_HINT, SUMMARY_PROMPT
from memora.model.servers import OPENAI, RoleChoice, ServerInfo, background_role, detect_server
from memora.model.structured import CLOSING, MalformedAnswer, T, parse_answer, without_thinking
from memora.model.tokens import approximate_tokens

log = logging.getLogger("memora")

NOT_CONFIGURED = (
    "No model is configured: set OPENAI_API_KEY (OpenAI), or OPENAI_BASE_URL for a local "
    "OpenAI-compatible server such as Ollama, vLLM or LM Studio. Commands keep working meanwhile."
)
LOCAL_SERVER_PLACEHOLDER_KEY = "memora-local"
# A reply that stops before the server's ``response.completed`` is a failed turn,
# rolled back like any other failure; a reply the server itself ends early for the
# output-token limit (``response.incomplete``, or a completed response that says so)
# is kept, with a notice, when it has text.
CUT_OFF_LEAD = "(reply cut off)"
NOT_KEPT = "That message was not kept; send it again."
CUT_OFF = f"{CUT_OFF_LEAD} The connection closed before the reply was complete. {NOT_KEPT}"
OUTPUT_LIMIT = "max_output_tokens"
# A response cut by its cap before any visible text (the thinking used it all) is asked
# again once with this many times the visible cap: the learner has seen nothing yet.
EMPTY_RETRY_FACTOR = 4
# Two output message items of one response are two paragraphs, not one run-on line.
ITEM_SEPARATOR = "\n\n"
DETECTION_WAIT = 0.5  # the longest calls wait for the server's kind (meanwhile the base URL decides)
PROBE_TIMEOUT_SECONDS = 5.0  # a probe's, in the background
STRUCTURED_TEMPERATURE = 0.2  # the likeliest reading, yet no loop of a model that must think (docs/servers.md)
HOLD_CHARS = len("<reasoning>")  # a streamed reply's last characters may open a thinking tag
# vLLM without --reasoning-parser (its default) passes the thinking on in the text, and a
# template that opens the block itself leaves only its closing tag to tell it by: the
# first reply is shown when complete, later ones too if it thought in its text.
THINKING_AS_TEXT = ("vllm",)


@dataclass
class _Received:
    """What a reply stream has delivered so far."""

    parts: list[str] = field(default_factory=list)
    refusal: list[str] = field(default_factory=list)
    usage: object = None
    incomplete: str | None = None  # why the server stopped early (a token limit), if it did
    finished: bool = False  # the server said the response is over
    item: object = None  # the output item the last text came from
    shown: str = ""  # what the learner has been shown of it

    @property
    def text(self) -> str:
        """The reply, without the model's thinking."""
        return without_thinking("".join(self.parts)).lstrip()


@dataclass(frozen=True)
class ReplyResult:
    text: str
    input_tokens: int | None = None
    output_tokens: int | None = None
    total_tokens: int | None = None
    incomplete: str | None = None


@dataclass
class StructuredStats:
    """How structured answers fared this session ('status')."""

    answers: int = 0
    repaired: int = 0  # needed a repair request (the first answer did not validate)
    failed: int = 0  # still invalid after it


class ModelClient:
    """Lazily-built ``openai.OpenAI`` client plus Memora's three kinds of call.
    ``on_lost(kind, tokens)`` is told the tokens of a failed call, which no caller gets."""

    def __init__(self, settings: Settings, *, http_client=None, clock=system_clock, count=approximate_tokens):
        self.settings = settings
        self.clock = clock
        self.count = count
        self.on_lost: Callable[[str, int], None] = lambda kind, tokens: None
        self._http_client = http_client
        self._client = None
        self._lock = threading.Lock()
        self._server: ServerInfo | None = None
        self._deadline: float | None = None
        self._detected = threading.Event()
        self.refused: set[str] = set()  # parameters the server refused: never sent again this session
        self.reasoned = 0  # the most thinking the server reported for one response this session
        self.thinks_in_text: bool | None = None  # the last reply thought in its text (None: no reply yet)
        self.fitted: tuple[int, int] | None = None  # (input budget, output limit) in the context window
        self.schema_in_instructions = False  # a strict server's answer needed repair: the schema goes along
        self.structured = StructuredStats()

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

    # -- the server and the model --------------------------------------------------------
    @property
    def server(self) -> ServerInfo:
        """The server at the base URL and what it says of the model, found once in the background."""
        with self._lock:
            if self._deadline is None:  # the first to ask starts it; every caller waits until this at most
                self._deadline = time.monotonic() + DETECTION_WAIT
                threading.Thread(target=self._detect, name="memora-detect", daemon=True).start()
        self._detected.wait(max(0.0, self._deadline - time.monotonic()))
        return self._server or detect_server(self.settings.base_url, None)

    def _detect(self) -> None:
        ask = self._ask if self.configured else None  # OpenAI's own URL is never asked
        self._server = detect_server(self.settings.base_url, ask, self.settings.model)
        log.info("server: %s", self._server.describe())
        self._detected.set()

    def _ask(self, method: str, url: str, body: object) -> object:
        send, options = getattr(self.openai(), method.lower()), {"max_retries": 0, "timeout": PROBE_TIMEOUT_SECONDS}
        return send(url, cast_to=object, options=options, **({"body": body} if body else {}))

    @property
    def background_role(self) -> RoleChoice:
        """The role the background message is sent in, and why ('why', 'status')."""
        return background_role(self.server, self.settings.background_role)

    def effort(self, kind: str) -> str | None:
        """The reasoning effort sent with a call of ``kind``; None sends no parameter."""
        if "reasoning" in self.refused:
            return None
        return effort_for(
            kind, self.settings.reasoning_effort, self.settings.model, on_openai=self.server.kind is OPENAI
        )

    def room(self, effort: str | None) -> int:
        """Output tokens a cap leaves for thinking: twice the most the server has reported
        for one response this session, and never less than the effort may use (a medium
        effort's when none is sent: the model may think at its own default)."""
        return max(REASONING_ROOM[effort or "medium"], 2 * self.reasoned)

    def temperature(self, kind: str) -> float | None:
        """None to OpenAI (its reasoning models refuse one); elsewhere a low one for
        structured calls and the server's own for the reply (docs/servers.md)."""
        if self.server.kind is OPENAI or "temperature" in self.refused:
            return None
        return self.server.temperature if kind == CHAT else STRUCTURED_TEMPERATURE

    def fit_context(self, budget: int) -> int:
        """The input budget that fits the context window with the reply's cap (at most
        half of it); from then on no cap sent is more than the window leaves."""
        window = self.settings.context_tokens or self.server.context
        if not window:
            return budget
        budget = min(budget, window - min(self.settings.max_output_tokens + REASONING_ROOM["low"], window // 2))
        self.fitted = (budget, window - budget)
        return budget

    def shutdown(self) -> date | None:
        """OpenAI's announced shutdown date of the configured model, if the SDK lists one."""
        return shutdown_date(self.settings.model)

    def reasoning_line(self) -> str:
        """What 'status' says about reasoning."""
        if "reasoning" in self.refused:
            return "not sent: the server refused the parameter this session"
        chat, rest = self.effort(CHAT) or "not sent", self.effort(STRUCTURED) or "not sent"
        line = f"chat {chat}, extraction and summaries {rest}"
        return line + (f"; the most thinking in one response: {self.reasoned} tokens" if self.reasoned else "")

    def context_line(self) -> str:
        window, source = self.settings.context_tokens, "MEMORA_CONTEXT_TOKENS"
        if not window and not self.server.context:
            return "not said by the server (MEMORA_CONTEXT_TOKENS sets it)"
        window, source = (window, source) if window else (self.server.context, self.server.context_from)
        fitted = f": requests up to {self.fitted[0]} tokens, replies up to {self.fitted[1]}" if self.fitted else ""
        return f"{window} tokens ({source}){fitted}"

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
        elif _names_unknown_model(error):
            message = f"{what} failed: {self._unknown_model(error)}"
        elif isinstance(error, openai.NotFoundError):
            message = (
                f"{what} failed: not found (404) at {where}. Does it serve the Responses API? "
                "OPENAI_BASE_URL usually ends in /v1."
            )
        elif isinstance(error, openai.RateLimitError):
            message = f"{what} failed: {_rate_limited(error)}."
        elif isinstance(error, openai.APITimeoutError):
            message = f"{what} timed out after {self.settings.timeout:g}s (MEMORA_TIMEOUT)."
        elif isinstance(error, openai.APIConnectionError):
            message = f"{what} failed: cannot reach {where}."
        elif isinstance(error, openai.APIStatusError):
            detail = _error_detail(error)
            message = f"{what} failed with HTTP {error.status_code}{': ' + detail if detail else ''}."
        elif isinstance(error, openai.APIError):
            message = f"{what} failed: {shorten(str(error), 160)}"
        else:
            message = f"{what} failed: {type(error).__name__}: {shorten(str(error), 160)}"
        return ModelCallError(self.redact(message))

    def _unknown_model(self, error) -> str:
        """The server does not know the model: say which setting names it, and what to set."""
        model = self.settings.model
        status = getattr(error, "status_code", None)
        head = f"{self.server.kind.label} at {self.server.where} does not know the model '{model}'"
        head += f" ({status})" if status else ""
        day = self.shutdown()
        if day is not None and day <= self.clock().date():
            head += f"; OpenAI shut it down on {day.isoformat()}"
        if self.server.kind.key == "ollama":
            fix = f"'ollama pull {model}' fetches it, 'ollama list' shows the ones it has"
        elif self.server.kind.key == "openai":
            fix = f"for example {DEFAULT_MODEL}"
        else:
            fix = "one the server lists at /v1/models"
        return f"{head}. Set MEMORA_MODEL (or --model) to a model it serves: {fix}."

    # -- one request ---------------------------------------------------------------------
    def _create(self, kind: str, *, cap: int | None = None, **params):
        """``responses.create`` with the model, ``store=False``, the call kind's effort and
        temperature, and ``cap`` (visible output tokens) plus room for thinking. A 400
        naming one of those parameters is answered once more without it, never sent
        again this session: some models (gpt-4.1, a model Ollama knows not to think)
        and servers refuse them, and a tutor that stops answering over it helps no one."""
        client, effort = self.openai(), self.effort(kind)
        chosen = {"reasoning": effort and {"effort": effort}, "temperature": self.temperature(kind)}
        body = {"model": self.settings.model, "store": False, **params}
        body |= {key: value for key, value in chosen.items() if value is not None}
        if cap is not None:  # never more than the context window and the server allow
            limits = [n for n in (self.fitted and self.fitted[1], self.server.max_output) if n]
            body["max_output_tokens"] = max(MIN_OUTPUT_TOKENS, min([cap + self.room(effort), *limits]))
        while True:
            try:
                return client.responses.create(**body), body.get("max_output_tokens")
            except Exception as error:
                refused = _refused(error, body)
                if refused is None:
                    raise
            log.info("the server refused the %s parameter; not sending it again this session", refused)
            self.refused.add(refused)
            body.pop(refused)

    def _reported(self, usage, text: str) -> None:
        """The most thinking reported for one response: ``reasoning_tokens``, or the output
        the visible text does not account for (Ollama reports none; vLLM may pass it as text)."""
        output = getattr(usage, "output_tokens", None) or 0
        details = getattr(getattr(usage, "output_tokens_details", None), "reasoning_tokens", None) or 0
        self.reasoned = max(self.reasoned, details, output - self.count(text))

    # -- calls ------------------------------------------------------------------------
    def stream_reply(
        self, *, instructions: str, messages: Sequence[dict], on_delta: Callable[[str], None]
    ) -> ReplyResult:
        """Stream the tutor's reply; ``on_delta`` receives each text fragment.

        A reply cut by the output cap before any text (the thinking used it all) is
        asked for once more with a larger cap; the learner has seen nothing of it.
        An empty reply raises, so it never enters the conversation. KeyboardInterrupt
        propagates (after closing the stream) so the caller can roll the turn back."""
        self.openai()  # not configured: ModelNotConfigured, before anything else
        spent: list[int | None] = [None, None, None]
        try:
            for factor in (1, EMPTY_RETRY_FACTOR):
                received, sent_cap = self._stream_once(
                    instructions, messages, on_delta, self.settings.max_output_tokens * factor
                )
                spent = [  # a retried attempt is billed too
                    None if a is None and b is None else (a or 0) + (b or 0)
                    for a, b in zip(spent, _usage_counts(received.usage))
                ]
                cut = received.incomplete in (OUTPUT_LIMIT, "incomplete")
                if clean_text(received.text) or received.refusal or not cut:
                    break
                log.info("the reply used its whole cap (%s tokens) before any text; asking again", sent_cap)
            if not clean_text(received.text):  # zero-width characters alone are no reply either
                raise ModelCallError(self._no_reply(received, sent_cap))
        except ModelCallError:
            self.on_lost("chat", spent[2] or 0)
            raise
        return ReplyResult(received.text, spent[0], spent[1], spent[2], incomplete=received.incomplete)

    def _no_reply(self, received: _Received, sent_cap: int | None) -> str:
        if received.refusal:
            refusal = shorten(" ".join("".join(received.refusal).split()), 200)
            return self.redact(f"The model declined to answer: {refusal} {NOT_KEPT}")
        if received.incomplete in (OUTPUT_LIMIT, "incomplete"):
            fix = "Set MEMORA_REASONING_EFFORT=none to turn its thinking off"
            fix = fix if self.effort(CHAT) not in (None, "none") else "Raise MEMORA_MAX_OUTPUT_TOKENS"
            used = f"The model used its whole output allowance ({sent_cap} tokens) before writing any reply."
            return f"{used} {NOT_KEPT} {fix}."
        if received.incomplete:  # content_filter and the like: more room would not help
            return f"The server stopped the reply before any text ({received.incomplete}). {NOT_KEPT}"
        return f"The model returned an empty reply. {NOT_KEPT}"

    def _on_the_wire(self, instructions: str, messages: Sequence[dict]) -> tuple[str, list[dict]]:
        """A leading system background goes into the instructions on servers that make
        the instructions their one system message (``servers.py``)."""
        messages = list(messages)
        if messages and messages[0].get("role") == "system" and self.server.kind is not OPENAI:
            return f"{instructions}\n\n{messages[0]['content']}", messages[1:]
        return instructions, messages

    def _stream_once(self, instructions, messages, on_delta, cap: int) -> tuple[_Received, int | None]:
        received, stream, sent_cap = _Received(), None, None
        instructions, messages = self._on_the_wire(instructions, messages)
        try:
            stream, sent_cap = self._create(CHAT, cap=cap, instructions=instructions, input=list(messages), stream=True)
            for event in stream:
                self._read_event(event, received, on_delta, sent_cap)
            if not received.finished:
                # The stream ended without the server saying the response was over (the
                # connection closed, a proxy gave up): what arrived is a fragment, and
                # keeping it would let the next turns build on half an answer.
                raise ModelCallError(CUT_OFF)
        except ModelCallError:
            self._show(received, on_delta, final=True)  # the fragment as far as it got, above the error
            raise
        except KeyboardInterrupt:
            raise
        except Exception as error:
            raise self._error(error, "The model request") from None
        finally:
            if stream is not None:
                try:
                    stream.close()
                except Exception:
                    pass
        thought = bool(CLOSING.search("".join(received.parts)))
        if received.incomplete and self._may_be_thinking(received):
            thought, received.parts = True, []  # cut before the thinking's closing tag: no reply yet
        self._show(received, on_delta, final=True)
        self._reported(received.usage, received.text)
        self.thinks_in_text = thought
        return received, sent_cap

    def _show(self, received: _Received, on_delta: Callable[[str], None], *, final: bool = False) -> None:
        """Show what is new of the reply, never the model's thinking (``THINKING_AS_TEXT``)."""
        text = received.text if final else received.text[:-HOLD_CHARS]
        if self._may_be_thinking(received) and not received.finished:  # a fragment may be all thinking
            return
        if text.startswith(received.shown) and text != received.shown:
            on_delta(text[len(received.shown) :])
            received.shown = text

    def _may_be_thinking(self, received: _Received) -> bool:
        """No closing tag yet (after one, all before it was thinking, and is over)."""
        known = self.thinks_in_text
        return not CLOSING.search("".join(received.parts)) and (
            self.server.kind.key in THINKING_AS_TEXT if known is None else known
        )

    def _read_event(self, event, received: _Received, on_delta: Callable[[str], None], cap: int | None) -> None:
        """One streamed event: text is shown and kept, the end is noted, a failure raises."""
        kind = getattr(event, "type", "")
        if kind == "response.output_text.delta":
            item = (getattr(event, "output_index", None), getattr(event, "item_id", None))
            if received.parts and received.item is not None and item != received.item and received.text.strip():
                received.parts.append(ITEM_SEPARATOR)  # a second message item: its own paragraph
            received.item = item
            received.parts.append(event.delta)
            self._show(received, on_delta)
        elif kind == "response.refusal.delta":
            received.refusal.append(getattr(event, "delta", "") or "")
        elif kind in ("response.completed", "response.incomplete"):
            response = getattr(event, "response", None)
            received.finished = True
            received.usage = getattr(response, "usage", None)
            received.incomplete = _stopped_early(response, cap, kind == "response.incomplete")
        elif kind == "response.failed":
            error = getattr(getattr(event, "response", None), "error", None)
            detail = getattr(error, "message", None) or "unknown error"
            raise ModelCallError(self.redact(f"{CUT_OFF_LEAD} the model failed: {detail}. {NOT_KEPT}"))
        elif kind == "error":
            detail = getattr(event, "message", None) or "unknown"
            raise ModelCallError(self.redact(f"{CUT_OFF_LEAD} the model reported an error: {detail}. {NOT_KEPT}"))

    def parse(self, *, instructions: str, input_text: str, text_format: type[T], what: str) -> tuple[T, int]:
        """Structured output into ``text_format``; returns (parsed, total tokens).

        The schema goes out as ``text.format`` (``compact_schema``); a server that does
        not enforce it (LM Studio) also gets it in the instructions, and its answer may
        come fenced or after a line of text (``structured.parse_answer``). An answer that
        does not validate gets one repair request quoting the error; if that fails too,
        the call fails (the caller keeps the job, as for any failed call)."""
        self.openai()
        schema = compact_schema(text_format)
        if not self.server.kind.strict_output or self.schema_in_instructions:
            instructions = instructions + SCHEMA_HINT.format(schema=json.dumps(schema, separators=(",", ":")))
        text_param = {"format": {"type": "json_schema", "name": text_format.__name__, "schema": schema, "strict": True}}
        conversation: list[dict] = [{"role": "user", "content": input_text}]
        tokens = 0
        self.structured.answers += 1
        try:
            for attempt in (1, 2):
                try:
                    response, _ = self._create(
                        STRUCTURED, instructions=instructions, input=conversation, text=text_param
                    )
                except Exception as error:
                    raise self._error(error, what) from None
                tokens += _total_tokens(response)
                answer, refusal = response_text(response)
                self._reported(getattr(response, "usage", None), without_thinking(answer))
                try:
                    return parse_answer(answer, text_format, input_text), tokens
                except MalformedAnswer as malformed:
                    problem = str(malformed)
                if refusal and not answer.strip():
                    raise ModelCallError(self.redact(f"{what} failed: the model declined ({shorten(refusal, 120)})."))
                log.warning("%s: malformed structured output (attempt %d): %s", what, attempt, problem)
                if attempt == 1:
                    self.structured.repaired += 1
                    self.schema_in_instructions = True  # this server's answers need the schema spelled out
                    conversation = conversation + [
                        {"role": "assistant", "content": without_thinking(answer).strip() or "(no answer)"},
                        {"role": "user", "content": REPAIR_PROMPT.format(error=shorten(problem, 300))},
                    ]
            self.structured.failed += 1
            # pydantic's own text is for developers; the learner is told what happened
            raise ModelCallError(
                f"{what} failed: the model's answer was not in the expected format, even after a repair request "
                f"({shorten(problem, 120)})."
            )
        except ModelCallError:
            self.on_lost("extraction", tokens)
            raise

    def summarize(self, previous: str, messages: list[dict], max_tokens: int) -> tuple[str, int]:
        """``memory.Summarizer``: previous summary + folded messages -> new summary."""
        self.openai()
        transcript = "\n".join(f"{m['role']}: {m['content']}" for m in messages if str(m.get("content", "")).strip())
        body = f"Previous summary:\n{previous or '(none)'}\n\nNew messages:\n{transcript}"
        params = {
            "instructions": SUMMARY_PROMPT.format(max_words=max(30, int(max_tokens * 0.6))),
            "input": [{"role": "user", "content": body}],
        }
        tokens = 0
        for cap in (max_tokens, max_tokens * EMPTY_RETRY_FACTOR):
            try:
                response, sent_cap = self._create(STRUCTURED, cap=cap, **params)
            except Exception as error:
                self.on_lost("summaries", tokens)
                raise self._error(error, "The summary request") from None
            tokens += _total_tokens(response)
            text = without_thinking(response_text(response)[0]).strip()
            self._reported(getattr(response, "usage", None), text)
            if text or _stopped_early(response, sent_cap, False) != OUTPUT_LIMIT:
                break  # an answer, or an empty one that more room would not change
        return text, tokens


def response_text(response) -> tuple[str, str]:
    """(visible text, refusal) of a non-streamed response: the text parts of each
    output message, messages apart by a blank line; ("", "") for no response at
    all (a 200 whose body is ``null``)."""
    texts, refusals = [], []
    for item in getattr(response, "output", None) or ():
        if getattr(item, "type", None) != "message":
            continue  # reasoning, tool calls: nothing the learner reads
        parts = [c.text for c in item.content or () if getattr(c, "type", None) == "output_text" and c.text]
        refusals += [c.refusal for c in item.content or () if getattr(c, "type", None) == "refusal" and c.refusal]
        if "".join(parts).strip():
            texts.append("".join(parts))
    return ITEM_SEPARATOR.join(texts), " ".join(refusals)


def _usage_counts(usage) -> list[int | None]:
    """(input, output, total) tokens of a usage object; None where it says nothing."""
    return [getattr(usage, name, None) for name in ("input_tokens", "output_tokens", "total_tokens")]


def _total_tokens(response) -> int:
    return int(getattr(getattr(response, "usage", None), "total_tokens", 0) or 0)


def _stopped_early(response, cap: int | None, incomplete_event: bool) -> str | None:
    """Why the response stopped before its end, however the server says it: a
    ``response.incomplete`` event (OpenAI), or a completed response whose status,
    ``incomplete_details`` or output count says the cap was hit (vLLM, Ollama)."""
    details = getattr(getattr(response, "incomplete_details", None), "reason", None)
    if details:
        return str(details)
    if incomplete_event or getattr(response, "status", None) == "incomplete":
        return "incomplete"
    output = getattr(getattr(response, "usage", None), "output_tokens", None)
    if cap is not None and isinstance(output, int) and output >= cap:
        return OUTPUT_LIMIT
    return None


# The parameters a server may refuse, and the words its refusal names them by.
_REFUSABLE = {"reasoning": ("reasoning", "thinking", "effort"), "temperature": ("temperature",)}


def _refused(error: BaseException, body: dict) -> str | None:
    """The parameter of ``body`` a 400 (or 422) refuses: its ``param`` names it (OpenAI),
    or the error's own message does (Ollama's "does not support thinking", LiteLLM's
    unsupported ``reasoning_effort`` or ``temperature``, vLLM's validation error). Only
    the message is read, not the whole body, so a request echoed back cannot trip it."""
    if getattr(error, "status_code", None) not in (400, 422):
        return None
    said = f"{getattr(error, 'param', None) or ''} {_error_detail(error)}".lower()
    return next((p for p, words in _REFUSABLE.items() if p in body and any(w in said for w in words)), None)


def _names_unknown_model(error: BaseException) -> bool:
    """The server does not know the model: OpenAI's ``model_not_found`` code, or a
    404 whose message is about the model (Ollama, vLLM) rather than the path."""
    if getattr(error, "code", None) == "model_not_found":
        return True
    status = getattr(error, "status_code", None)
    said = (_error_detail(error) or str(getattr(error, "message", "") or "")).lower()
    if status == 400:  # LiteLLM: "Invalid model name passed in model=x"
        return "invalid model name" in said
    if status != 404:
        return False
    return "model" in said and ("not found" in said or "does not exist" in said or "not exist" in said)


def _rate_limited(error) -> str:
    """The 429 in words: how many retries were really made (the SDK sends the count
    with each attempt, and does not retry when the server says not to), and how long
    the server asks to wait."""
    request = getattr(getattr(error, "response", None), "request", None)
    headers = getattr(getattr(error, "response", None), "headers", None) or {}
    try:
        retries = int((request.headers if request is not None else {}).get("x-stainless-retry-count", 0))
    except (TypeError, ValueError):
        retries = 0
    quota = getattr(error, "code", None) == "insufficient_quota"
    line = "out of quota (429): check the plan and billing of the API key" if quota else "rate limited (429)"
    if retries:
        line += f" after {counted(retries, 'retry', 'retries')}"
    wait = headers.get("retry-after")
    if wait and str(wait).strip().isdigit():
        line += f"; the server asks to wait {int(wait)} s"
    return line


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
        uses = Counter(re.findall(r'"\$ref": "([^"]*)"', json.dumps(schema)))  # each definition's uses
        _SCHEMA_CACHE[model] = _shortened(schema, schema.get("$defs", {}), uses)
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


def _shortened(node, defs: dict, counts: dict[str, int], *, naming: bool = False):
    if isinstance(node, list):
        return [_shortened(item, defs, counts) for item in node]
    if not isinstance(node, dict):
        return node
    if naming:
        return {key: _shortened(value, defs, counts) for key, value in node.items()}
    ref = node.get("$ref", "")
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
    body = body if isinstance(body, dict) else {}
    inner = body["error"] if isinstance(body.get("error"), dict) else {}
    return shorten(str(body.get("message") or inner.get("message") or ""), 160)
