"""Synthetic learner memories for the latency benchmarks.

Real text is Zipfian: a few words are everywhere, most are rare. The memories
here draw content words from a Zipf distribution (s = 1.1) over a 6,000-word
pseudo-vocabulary, inside tutor-style sentences, so the lexical index sees
realistic posting lists. Everything is seeded: every run builds the same store.
"""

from __future__ import annotations

import bisect
import itertools
import random

SYLLABLES = (
    "ba be bi bo bu da de di do du ka ke ki ko ku la le li lo lu ma me mi mo mu "
    "na ne ni no nu ra re ri ro ru sa se si so su ta te ti to tu"
).split()
FRAMES = (
    "The learner {verb} {words}.",
    "The learner said that {words} was hard.",
    "The learner wants to practise {words} before the exam.",
    "The learner enjoys {words} on weekends.",
    "The learner asked about {words} yesterday.",
)
VERBS = ("practised", "discussed", "mentioned", "studied", "visited", "booked", "reviewed", "described")


class Vocabulary:
    def __init__(self, size: int = 6000, exponent: float = 1.1, seed: int = 7):
        rng = random.Random(seed)
        words = set()
        for length in itertools.cycle((2, 3, 4)):
            words.add("".join(rng.choice(SYLLABLES) for _ in range(length)))
            if len(words) >= size:
                break
        self.words = sorted(words)
        rng.shuffle(self.words)
        weights = [1 / (rank**exponent) for rank in range(1, size + 1)]
        total = sum(weights)
        self.cumulative = list(itertools.accumulate(w / total for w in weights))

    def draw(self, rng: random.Random, count: int) -> list[str]:
        return [
            self.words[min(bisect.bisect_left(self.cumulative, rng.random()), len(self.words) - 1)]
            for _ in range(count)
        ]


def memories(rng: random.Random, n: int, vocabulary: Vocabulary | None = None) -> list[str]:
    vocabulary = vocabulary or Vocabulary()
    out = []
    for _ in range(n):
        frame = rng.choice(FRAMES)
        words = " ".join(vocabulary.draw(rng, rng.randint(4, 9)))
        out.append(frame.format(verb=rng.choice(VERBS), words=words))
    return out


def queries(rng: random.Random, n: int, vocabulary: Vocabulary | None = None) -> list[str]:
    vocabulary = vocabulary or Vocabulary()
    return ["Can we talk about " + " ".join(vocabulary.draw(rng, rng.randint(2, 6))) + "?" for _ in range(n)]
