"""Slots (memora/store/pairs.py ``SLOTS``): what each must and must not match."""

from __future__ import annotations

import pytest

from memora.store.pairs import SLOTS, slots_of

# (slot, facts that fill it, facts that do not)
EXAMPLES = [
    (
        "name",
        (
            "The learner's name is Ming.",
            "The learner is called Lin by friends.",
            "The learner goes by Sam.",
            "學習者的名字是小明。",
        ),
        (
            "The learner likes jazz.",
            "The learner works at Google.",
        ),
    ),
    (
        "job",
        (
            "The learner works at Google.",
            "The learner got a new job at a bakery.",
            "The learner is employed as a nurse.",
            "The learner retired last year.",
            "The learner was hired by a bank.",
            "學習者在台北的一家銀行工作。",
            "The learner is a nurse.",
            "The learner became a teacher last spring.",
            "The learner now teaches maths at a high school.",
            "The learner was promoted to manager.",
            "The learner resigned from the bank.",
            "學習者現在當老師。",
        ),
        (
            "The learner works out at the gym.",
            "The learner lives in Osaka.",
            "The learner likes jazz.",
            "The learner's friend teaches her to cook.",
        ),
    ),
    (
        "home",
        (
            "The learner lives in Taipei.",
            "The learner moved to Osaka last month.",
            "The learner is moving to Berlin in May.",
            "The learner's hometown is Tainan.",
            "學習者住在高雄。",
            "學習者搬到台中了。",
            "The learner rents a studio downtown.",
            "The learner shares a flat with two flatmates.",
            "The learner stays in a dorm on campus.",
            "學習者在台北租房子。",
        ),
        (
            "The learner works at Google.",
            "The learner likes living things.",
        ),
    ),
    (
        "studies",
        (
            "The learner studies law at NTU.",
            "The learner is a student at Kyoto University.",
            "The learner majors in chemistry.",
            "The learner graduated in June.",
            "學習者主修化學。",
        ),
        (
            "The learner works at Google.",
            "The learner wants to study English every day.",
        ),
    ),
    (
        "level",
        (
            "The learner's English is B1.",
            "The learner is at an intermediate level.",
            "The learner passed B2 last week.",
        ),
        (
            "The learner lives in Taipei.",
            "The learner likes jazz.",
        ),
    ),
    (
        "exam",
        (
            "The learner has an IELTS exam next Tuesday.",
            "The learner's exam was moved to Friday.",
            "The learner has a driving test on Monday.",
            "學習者下週二要考試。",
        ),
        (
            "The learner works at Google.",
            "The learner likes jazz.",
        ),
    ),
    (
        "target",
        (
            "The learner is aiming for IELTS 7.",
            "The learner's target band is 6.5.",
            "The learner needs a 90 on the TOEFL.",
            "學習者的目標是多益八百分。",
        ),
        (
            "The learner likes jazz.",
            "The learner lives in Osaka.",
        ),
    ),
    (
        "age",
        (
            "The learner is 29 years old.",
            "The learner just turned 30.",
            "The learner's birthday is on 3 May.",
            "The learner was born on 5 March.",
            "學習者今年二十九歲。",
        ),
        (
            "The learner likes jazz.",
            "The learner works at Google.",
        ),
    ),
    (
        "partner",
        (
            "The learner is single.",
            "The learner got married in June.",
            "The learner has a girlfriend called Amy.",
            "The learner's partner is Ben.",
            "學習者六月結婚了。",
        ),
        (
            "The learner likes jazz.",
            "The learner lives in Osaka.",
        ),
    ),
    (
        "origin",
        (
            "The learner's native language is Mandarin.",
            "The learner's mother tongue is Cantonese.",
            "The learner is from Taiwan.",
            "The learner has Japanese citizenship.",
            "The learner is Japanese.",
            "學習者的母語是台語。",
        ),
        (
            "The learner likes jazz.",
            "The learner works at Google.",
        ),
    ),
]
CASES = [(slot, text, True) for slot, fills, _ in EXAMPLES for text in fills] + [
    (slot, text, False) for slot, _, misses in EXAMPLES for text in misses
]


def test_every_slot_has_examples():
    assert {slot for slot, *_ in EXAMPLES} == set(SLOTS)


@pytest.mark.parametrize(
    "slot, text, fills", CASES, ids=[f"{s}-{'fills' if f else 'not'}-{t[:30]}" for s, t, f in CASES]
)
def test_each_slot_example_fills_its_slot_or_not(slot, text, fills):
    assert (slot in slots_of(text)) is fills
