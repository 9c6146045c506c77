"""Slots: the things about a learner that hold one value at a time.

A learner has one job, one home, one name, one English level, one date for a
given exam, one target score, one age (and birthday), one partner (or none),
one place they come from and one first language. Two facts that fill the same
slot may replace each other however far apart their words and embeddings are: "The learner works at Google." and
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
            r"\boffice\b",
            r"\bpromot(?:ed|ion)\b",
            r"\bresign",
            r"\blaid off\b",
            r"\bfired\b",
            r"\bintern(?:ship)?\b",
            r"\bfreelanc",
            r"\bself-employed\b",
            r"\bteach(?:es|ing)?\b(?! (?:me|him|her|them|us|myself|herself|himself)\b)",
            # what a learner is by trade ("is a nurse", "became a teacher")
            r"\b(?:nurse|doctor|teacher|engineer|developer|programmer|designer|accountant|lawyer|manager|chef"
            r"|waiter|waitress|cashier|clerk|pharmacist|dentist|architect|scientist|researcher|consultant|"
            r"salesman|saleswoman|salesperson|driver|pilot|farmer|mechanic|electrician|plumber|journalist|"
            r"secretary|receptionist|tutor|professor|lecturer|officer|soldier|barista|baker)s?\b",
            r"工作",
            r"上班",
            r"職業",
            r"公司",
            r"上司",
            r"老闆",
            r"辭職",
            r"升職",
            r"護士",
            r"老師",
            r"醫生",
            r"工程師",
            r"當.{1,4}師",
        ),
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
            r"\brent(?:s|ed|ing)?\b",
            r"\bstudio\b",
            r"\bhouse\b",
            r"\bdorm(?:itory)?\b",
            r"\b(?:flat|room|house)mates?\b",
            r"\blandlord\b",
            r"\bneighbou?rhood\b",
            r"住",
            r"租",
            r"搬",
        ),
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
    Slot(
        "target",
        _cues(
            r"\btarget\b",
            r"\baim(?:s|ed|ing)? (?:for|at)\b",
            r"\bband\s*\d",
            r"\bband score\b",
            r"\bscore\b",
            r"\bneeds? (?:a|an) \d",
            r"目標",
            r"分數",
        ),
        (
            "The learner is aiming for IELTS 7.",
            "The learner's target band is 6.5.",
            "The learner needs a 90 on the TOEFL.",
            "學習者的目標是多益八百分。",
        ),
        ("The learner likes jazz.", "The learner lives in Osaka."),
    ),
    Slot(
        "age",
        _cues(
            r"\b\d{1,3}\s*(?:years?|yrs?)[ -]old\b",
            r"\bturn(?:s|ed|ing)? \d{1,3}\b",
            r"\bage\b",
            r"\baged\b",
            r"\bbirthday\b",
            r"\bborn\b",
            r"歲",
            r"岁",
            r"生日",
            r"出生",
        ),
        (
            "The learner is 29 years old.",
            "The learner just turned 30.",
            "The learner's birthday is on 3 May.",
            "The learner was born on 5 March.",
            "學習者今年二十九歲。",
        ),
        ("The learner likes jazz.", "The learner works at Google."),
    ),
    Slot(
        "partner",
        _cues(
            r"\bsingle\b",
            r"\bmarri(?:ed|age)\b",
            r"\bdivorced?\b",
            r"\bengaged\b",
            r"\bwidow(?:ed|er)?\b",
            r"\bwife\b",
            r"\bhusband\b",
            r"\bspouse\b",
            r"\b(?:girl|boy)friend\b",
            r"\bfianc[eé]e?\b",
            r"\bpartner\b",
            r"\bdating\b",
            r"\bbroke up\b",
            r"單身",
            r"单身",
            r"結婚",
            r"结婚",
            r"離婚",
            r"离婚",
            r"男朋友",
            r"女朋友",
            r"老公",
            r"老婆",
            r"太太",
            r"丈夫",
            r"妻子",
        ),
        (
            "The learner is single.",
            "The learner got married in June.",
            "The learner has a girlfriend called Amy.",
            "The learner's partner is Ben.",
            "學習者六月結婚了。",
        ),
        ("The learner likes jazz.", "The learner lives in Osaka."),
    ),
    Slot(
        "origin",
        _cues(
            r"\bnative\b",
            r"\bmother tongue\b",
            r"\bfirst language\b",
            r"\bnationality\b",
            r"\bcitizen",
            r"\bpassport\b",
            r"\b(?:is|are|comes?|came) from\b",
            r"\bgrew up\b",
            # a nationality ("is Japanese", "is British"): a false match costs one call
            r"\bis (?:[a-z]+(?:ese|ian|ish)|american|korean|mexican|thai|filipin[ao]|dutch|french|greek|swiss)\b",
            r"\bis german\b",
            r"母語",
            r"母语",
            r"國籍",
            r"国籍",
            r"來自",
            r"来自",
        ),
        (
            "The learner's native language is Mandarin.",
            "The learner's mother tongue is Cantonese.",
            "The learner is from Taiwan.",
            "The learner has Japanese citizenship.",
            "The learner is Japanese.",
            "學習者的母語是台語。",
        ),
        ("The learner likes jazz.", "The learner works at Google."),
    ),
)


def slots_of(text: str) -> frozenset[str]:
    """The slots a fact fills: usually none (likes, habits, events), sometimes two
    ("moved to Osaka for a new job" is about the home and the job)."""
    return frozenset(slot.name for slot in SLOTS if slot.cues.search(text))


def slot_cues(name: str) -> re.Pattern:
    """The cues of slot ``name`` (to find its stored memories)."""
    return next(slot.cues for slot in SLOTS if slot.name == name)
