"""Structured answers from servers with and without strict mode.

OpenAI, vLLM and Ollama hold the model to the JSON schema sent as
``text.format``, so the answer is the object itself. LM Studio ignores
``text.format`` and many local models wrap their JSON anyway: in a code fence,
or after a line such as "Here is the JSON:". ``parse_answer`` accepts all three
and validates each candidate with the same pydantic model as a strict answer,
so nothing looser than the schema ever gets in: a candidate that is not the
schema's object is not an answer, whatever it looks like.
"""

from __future__ import annotations

import json
import re
from typing import TypeVar

from pydantic import BaseModel, ValidationError

T = TypeVar("T", bound=BaseModel)

_FENCE = re.compile(r"```[ \t]*(?:json|JSON)?[ \t]*\n?(.*?)```", re.S)
# Thinking a server without a reasoning parser passes on in the text (vLLM's default): <think>
# (Qwen3, DeepSeek-R1), [THINK] (Magistral); a template that opens it leaves only its end (vllm#31045).
OPENING = re.compile(r"<(?:think|thinking|reasoning)>|\[THINK\]", re.IGNORECASE)
CLOSING = re.compile(r"</(?:think|thinking|reasoning)>|\[/THINK\]", re.IGNORECASE)
_DECODER = json.JSONDecoder(strict=False)  # a raw newline inside a string is a slip, not a reason to refuse


class MalformedAnswer(ValueError):
    """No candidate in the answer is a valid object of the schema; ``str()`` says why
    in a line short enough to quote back to the model."""


def without_thinking(text: str) -> str:
    """``text`` without the model's thinking: all before the last closing tag (the
    block, or its end when the template opened it), and all from an opening tag
    never closed (a draft cut short)."""
    return OPENING.split(CLOSING.split(text)[-1], maxsplit=1)[0]


def json_objects(text: str) -> list[str]:
    """Each JSON object in ``text``, in order."""
    objects = []
    for start in (m.start() for m in re.finditer(r"\{", text)):
        try:
            _, end = _DECODER.raw_decode(text, start)
        except ValueError:
            continue
        objects.append(text[start:end])
    return objects


def candidates(text: str) -> list[str]:
    """The texts that may hold the object, most likely first: the whole answer, then
    each fenced block, then each JSON object found in the text, the last first (a
    model that corrects itself ends with its answer). The thinking is left out."""
    text = without_thinking(text or "").strip()
    found = [text] + [block.strip() for block in reversed(_FENCE.findall(text))]
    found += reversed(json_objects(text))
    unique: list[str] = []
    for candidate in found:
        if candidate and candidate not in unique:
            unique.append(candidate)
    return unique


def _fits(value: object, schema: type[BaseModel]) -> bool:
    """An object found inside the text is the answer only if it looks like one: it has
    at least one of the schema's fields (an example object in the prose may have
    none, and a schema whose fields all have defaults would take it), and no field
    the schema forbids. Validation then decides the rest."""
    if not isinstance(value, dict):
        return False
    fields = schema.model_fields
    if not set(value) & set(fields):
        return False
    return schema.model_config.get("extra") != "forbid" or set(value) <= set(fields)


def parse_answer(text: str, schema: type[T], asked: str = "") -> T:
    """The first candidate that validates as ``schema``; ``MalformedAnswer`` otherwise.
    An object found inside the answer that the question ``asked`` holds too is the
    model quoting it (the learner's own words), never its answer."""
    shape_error = json_error = None  # a JSON object of the wrong shape says more than prose does
    quoted = [_DECODER.decode(o) for o in json_objects(asked)] if "{" in asked else []
    for index, candidate in enumerate(candidates(text or "")):
        try:
            value = _DECODER.decode(candidate)
        except ValueError:
            json_error = json_error or "the answer is not a JSON object"
            continue
        if index > 0 and (not _fits(value, schema) or value in quoted):
            continue
        try:
            return schema.model_validate(value)
        except ValidationError as error:
            shape_error = shape_error or describe(error)
    if not (text or "").strip():
        raise MalformedAnswer("the answer was empty")
    raise MalformedAnswer(shape_error or json_error or "the answer holds no JSON object")


def describe(error: ValidationError) -> str:
    """pydantic's errors in one line: where and what, without echoing the input."""
    parts = []
    for item in error.errors(include_url=False, include_input=False)[:3]:
        where = ".".join(str(p) for p in item.get("loc", ())) or "the answer"
        parts.append(f"{where}: {item.get('msg', 'invalid')}")
    more = error.error_count() - len(parts)
    return "; ".join(parts) + (f" (and {more} more)" if more > 0 else "")
