"""Slots: each row's examples are its tests (memora/reading/slots.py)."""

from __future__ import annotations

import pytest

from memora.reading.slots import SLOTS, slots_of

CASES = [(slot.name, text, True) for slot in SLOTS for text in slot.matches] + [
    (slot.name, text, False) for slot in SLOTS for text in slot.misses
]


@pytest.mark.parametrize(
    "slot, text, fills", CASES, ids=[f"{s}-{'fills' if f else 'not'}-{t[:30]}" for s, t, f in CASES]
)
def test_each_slot_example_fills_its_slot_or_not(slot, text, fills):
    assert (slot in slots_of(text)) is fills
