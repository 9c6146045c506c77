"""Scripted model answers and a settled chat turn."""

from __future__ import annotations


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
