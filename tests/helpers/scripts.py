"""Scripted model answers and a settled chat turn."""

from __future__ import annotations

import re

# Each line of a decision ends with when it was said: " (2 Dec)", or " (2 Dec 10:00)" on a new fact's day.
SAID = re.compile(r" \(\d{1,2} [A-Z][a-z]{2}(?: \d\d:\d\d)?\)$")


def said_when(line: str) -> str | None:
    """The time label a decision line ends with, or None."""
    found = SAID.search(line)
    return found.group(0)[2:-1] if found else None


def unlabelled(line: str) -> str:
    return SAID.sub("", line)


def fact(text, category="habit", memory_type="semantic", event_phrase=None, event_date=None):
    return {
        "text": text,
        "memory_type": memory_type,
        "category": category,
        "event_phrase": event_phrase,
        "event_date": event_date,
    }


def extraction(*facts, profile_changes=(), corrections=()):
    return {"facts": list(facts), "profile_changes": list(profile_changes), "corrections": list(corrections)}


def say(app, text):
    """One chat turn whose extraction has finished."""
    app.chat(text, on_delta=lambda _: None)
    assert app.wait_for_extraction(10)


def decision_input(request) -> tuple[str, dict[int, str]]:
    """What a decision (reconcile or correction lookup) was sent, from its request
    (or its body): the new or wrong fact, and the listed memories by number."""
    body = getattr(request, "body", request)
    fact_line, _, listing = body["input"][0]["content"].partition("\nMemories:\n")
    listed = {int(m.group(1)): unlabelled(m.group(2)) for m in re.finditer(r"^(\d+)\. (.*)$", listing, re.MULTILINE)}
    fact_line = "\n".join(unlabelled(line) for line in fact_line.split("\n"))
    return fact_line.split(": ", 1)[1] if ": " in fact_line else fact_line, listed  # several facts: all of them


def number_of(request, text) -> int | None:
    """The number the decision's listing gives the memory ``text`` (shown as it is,
    or quoted as the learner's own words), as a model reading it would answer; None
    when it is not listed."""
    _, listed = decision_input(request)
    exact = [n for n, shown in listed.items() if shown == text]
    return (exact or [n for n, shown in listed.items() if text in shown] or [None])[0]


def naming(text, action="SUPERSEDE", merged=None):
    """A reconcile answer (to script) that names the listed memory ``text`` by its number."""
    return lambda body: {"action": action, "memory": number_of(body, text), "text": merged}


def retracting(*texts):
    """A correction-lookup answer (to script) naming the listed memories ``texts``."""
    return lambda body: {"memories": [n for t in texts if (n := number_of(body, t)) is not None]}


def decisions_input(request) -> tuple[dict[str, str], dict[int, str]]:
    """What a shared decision (several new facts of one reading) was sent: the new
    facts by letter, and the listed memories by number."""
    body = getattr(request, "body", request)
    facts_part, _, listing = body["input"][0]["content"].partition("\nMemories:\n")
    facts = {m.group(1): unlabelled(m.group(2)) for m in re.finditer(r"^([A-Z]\d*)\. (.*)$", facts_part, re.MULTILINE)}
    listed = {int(m.group(1)): unlabelled(m.group(2)) for m in re.finditer(r"^(\d+)\. (.*)$", listing, re.MULTILINE)}
    return facts, listed


ADD = {"action": "ADD", "memory": None, "text": None}


def decide(**by_word):
    """A decision responder, for one new fact or several decided together: each new
    fact containing a word gets that word's answer (``naming(...)``), the others ADD."""

    def one(new_fact, body):
        for word, decision in by_word.items():
            if word in new_fact:
                return decision(body)
        return dict(ADD)

    def answer(body):
        facts, _ = decisions_input(body)
        if facts:
            return {"decisions": [{"fact": letter, **one(text, body)} for letter, text in facts.items()]}
        return one(decision_input(body)[0], body)

    return answer
