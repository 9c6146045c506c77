"""The judgments about two facts (``memora/store/pairs.py``), one table each: pairs of
sentences worded as extraction words a conversation's observations ("The learner ..."),
restatements of the kind the LoCoMo conversations are full of beside real changes."""

from __future__ import annotations

import pytest

from memora.store.pairs import conflict_reason, is_near_duplicate, same_subject, slots_of

# (new, old, merged without asking): only the same words, in the same order up to a moved
# block, with the same numbers, days and negations.
DUPLICATES = [
    ("Every morning the learner runs in the park.", "The learner runs in the park every morning.", True),
    ("The learner runs in the park every morning.", "The learner runs in the park every evening.", False),
    ("The learner has been to Rome once.", "The learner has been to Rome twice.", False),
    ("The learner dances salsa on Mondays.", "The learner dances salsa on Fridays.", False),
    ("The learner finds grammar easy.", "The learner finds grammar hard.", False),
    ("The learner does not eat meat.", "The learner eats meat.", False),
    ("The learner codes in C++.", "The learner codes in C#.", False),
    ("The learner is looking for a dance studio.", "The learner is starting a dance studio.", False),
]


@pytest.mark.parametrize(("new", "old", "merged"), DUPLICATES)
def test_duplicate(new, old, merged):
    assert is_near_duplicate("hash:v1-384", new, old, 0.0) is merged


# (a, b, whether a decision about one must see the other whatever their distance)
RELATED = [
    ("The learner works as a nurse.", "The learner is a software engineer now.", True),
    ("The learner lives alone.", "The learner lives with her parents.", True),
    ("The learner is starting her own dance studio.", "The learner wants Marley flooring for the studio.", True),
    ("The learner lost her job at a delivery company.", "The learner opened a clothing store.", False),
    ("The learner visited Paris recently.", "The learner has been to Rome once.", False),
    ("The learner likes tea.", "The learner plays chess.", False),
    ("The learner's favourite dance style is contemporary.", "The learner lost her job as a banker.", False),
]


@pytest.mark.parametrize(("a", "b", "related"), RELATED)
def test_related(a, b, related):
    assert same_subject(a, b) is related
    assert same_subject(b, a) is related


# (a, b, whether both fill one slot: a job, a home, a name ...)
SAME_SLOT = [
    ("The learner works at Google.", "The learner got a new job at a bakery.", True),
    ("The learner moved to Osaka for a new job.", "The learner lives in Tokyo.", True),
    ("The learner is preparing for IELTS.", "The learner's TOEIC test is in May.", True),
    ("The learner is married.", "The learner has a girlfriend.", True),
    ("My name is Mei.", "My cat is Mochi.", False),
    ("The learner has a dog named Rex.", "The learner enjoys painting.", False),
    ("The learner likes to cook.", "The learner works at a bank.", False),
]


@pytest.mark.parametrize(("a", "b", "same"), SAME_SLOT)
def test_same_slot(a, b, same):
    assert bool(slots_of(a) & slots_of(b)) is same


# (older, newer, whether they may contradict each other)
CONTRADICTIONS = [
    ("The learner encourages Jon to keep going.", "The learner encouraged Jon to keep going.", False),
    ("The learner shares recipes with her friends.", "The learner shares a recipe with her friends.", False),
    ("The learner loves painting landscapes.", "The learner really loves painting landscapes.", False),
    ("The learner's sister is a nurse.", "The learner is a teacher.", False),
    ("The learner is unemployed.", "The learner works at a bank.", True),
    ("The learner is twenty-nine.", "The learner is 31.", True),
    ("The learner lives alone.", "The learner lives in a dorm.", True),
    ("The learner has never tried sushi.", "The learner tried sushi in Osaka.", True),
    ("The learner cannot drive.", "The learner drives to work every day.", True),
    ("The learner lives in Taipei.", "The learner lives in Tainan.", True),
]


@pytest.mark.parametrize(("a", "b", "flagged"), CONTRADICTIONS)
def test_contradiction(a, b, flagged):
    assert (conflict_reason(a, b) is not None) is flagged
