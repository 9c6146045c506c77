"""Slots: the things about a learner that hold one value at a time.

A learner has one job, one home, one name, one English level, one date for a
given exam. Two facts that fill the same slot may replace each other however
far apart their words and embeddings are: "The learner works at Google." and
"The learner got a new job at a bakery." share no word and are 0.59 apart with
MiniLM, beyond the related distance, yet the second ends the first. So a fact's
slot, told by the cue words below, makes it related to every fact of that slot
(``extraction.Extractor``): they reach the same decision, and a stored memory of
the slot is among the decision's candidates, whatever the category the model
gave each.

Each slot is a row: its cues (a regular expression over the fact's words,
English and Chinese) and examples that must and must not match, which
``tests/test_slots.py`` runs. A slot only ever adds a decision: a false match
costs one call, which may well ADD; a miss leaves a stale fact current. So the
cues err towards matching.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Slot:
    name: str
    cues: re.Pattern
    matches: tuple[str, ...]
    misses: tuple[str, ...]


def _cues(*patterns: str) -> re.Pattern:
    return re.compile("|".join(patterns), re.IGNORECASE)


SLOTS: tuple[Slot, ...] = (
    Slot(
        "name",
        _cues(r"\bname\b", r"\bnamed\b", r"\bcalled\b", r"\bgoes by\b", r"名字", r"叫"),
        (
            "The learner's name is Ming.",
            "The learner is called Lin by friends.",
            "The learner goes by Sam.",
            "學習者的名字是小明。",
        ),
        ("The learner likes jazz.", "The learner works at Google."),
    ),
    Slot(
        "job",
        _cues(
            r"\bjobs?\b",
            r"\bworks?\b(?! out| on (?:her|his|their|my) )",
            r"\bworked\b",
            r"\bworking (?:at|as|for|in)\b",
            r"\bemploy",
            r"\bhired\b",
            r"\bcareer\b",
            r"\bprofession",
            r"\boccupation\b",
            r"\bretired\b",
            r"\bunemployed\b",
            r"\bquit (?:her|his|their|the|my) (?:job|work)\b",
            r"\bcolleagues?\b",
            r"\bboss\b",
            r"\bcompany\b",
            r"工作",
            r"上班",
            r"職業",
            r"公司",
        ),
        (
            "The learner works at Google.",
            "The learner got a new job at a bakery.",
            "The learner is employed as a nurse.",
            "The learner retired last year.",
            "The learner was hired by a bank.",
            "學習者在台北的一家銀行工作。",
        ),
        ("The learner works out at the gym.", "The learner lives in Osaka.", "The learner likes jazz."),
    ),
    Slot(
        "home",
        _cues(
            r"\blives?\b",
            r"\bliving in\b",
            r"\bmoved\b",
            r"\bmoving (?:to|into|from)\b",
            r"\brelocat",
            r"\bhome(?:town)?\b",
            r"\bapartment\b",
            r"\bflat\b",
            r"\bresides?\b",
            r"住",
            r"搬",
        ),
        (
            "The learner lives in Taipei.",
            "The learner moved to Osaka last month.",
            "The learner is moving to Berlin in May.",
            "The learner's hometown is Tainan.",
            "學習者住在高雄。",
            "學習者搬到台中了。",
        ),
        ("The learner works at Google.", "The learner likes living things."),
    ),
    Slot(
        "studies",
        _cues(
            r"\bstud(?:y|ies|ied|ying)\b(?! english)",
            r"\bstudent\b",
            r"\buniversity\b",
            r"\bcollege\b",
            r"\bmajor(?:s|ed|ing)?\b",
            r"\bdegree\b",
            r"\bgraduat",
            r"\bschool\b",
            r"大學",
            r"主修",
            r"畢業",
        ),
        (
            "The learner studies law at NTU.",
            "The learner is a student at Kyoto University.",
            "The learner majors in chemistry.",
            "The learner graduated in June.",
            "學習者主修化學。",
        ),
        ("The learner works at Google.", "The learner wants to study English every day."),
    ),
    Slot(
        "level",
        _cues(r"\b[ABC][12]\b", r"\bCEFR\b", r"\blevel\b", r"\bintermediate\b", r"\bbeginner\b", r"\badvanced\b"),
        (
            "The learner's English is B1.",
            "The learner is at an intermediate level.",
            "The learner passed B2 last week.",
        ),
        ("The learner lives in Taipei.", "The learner likes jazz."),
    ),
    Slot(
        "exam",
        _cues(
            r"\bexams?\b",
            r"\btests?\b",
            r"\bIELTS\b",
            r"\bTOEIC\b",
            r"\bTOEFL\b",
            r"\bGEPT\b",
            r"\bCambridge\b",
            r"考試",
            r"考",
            r"測驗",
        ),
        (
            "The learner has an IELTS exam next Tuesday.",
            "The learner's exam was moved to Friday.",
            "The learner has a driving test on Monday.",
            "學習者下週二要考試。",
        ),
        ("The learner works at Google.", "The learner likes jazz."),
    ),
)


def slots_of(text: str) -> frozenset[str]:
    """The slots a fact fills: usually none (likes, habits, events), sometimes two
    ("moved to Osaka for a new job" is about the home and the job)."""
    return frozenset(slot.name for slot in SLOTS if slot.cues.search(text))


def slot_cues(name: str) -> re.Pattern:
    """The cues of slot ``name`` (to find its stored memories)."""
    return next(slot.cues for slot in SLOTS if slot.name == name)
