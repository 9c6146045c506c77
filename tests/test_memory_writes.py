"""How a reading's facts become writes: ``writes`` plans each one, with its reason,
from the new facts, the memories beside them and the model's decisions, a row of a
table per reason (as the reading queue's policy has, test_turn_pipeline.py). Pure:
nothing is stored or sent here; the end of this module plays the corrections of one
batch through a session, in the order said."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest
from helpers.judgment_cases import CORRECTIONS
from helpers.scripts import extraction, fact

from memora.core.records import STATUS_SUPERSEDED, MemoryRecord
from memora.reading import writes as w
from memora.reading.jobs import ExtractedFact, ExtractionJob, ExtractionResult
from memora.reading.writes import Candidate, Decided, MemoryDecisions, NewFact

NOON = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)
DISTANCE = 0.5  # the store's related distance, as a plan is given it


def memory(key: str, text: str, at: datetime = NOON - timedelta(days=30), current: bool = True) -> MemoryRecord:
    status = "current" if current else STATUS_SUPERSEDED
    return MemoryRecord(id=key, content=text, created_at=at, status=status, valid_until=None if current else NOON)


TAIPEI = memory("taipei", "The learner lives in Taipei.")
GOLF = memory("golf", "The learner plays golf.")
GONE = memory("taipei", TAIPEI.content, current=False)  # Taipei, changed since it was listed
LATER = memory("later", "The learner lives in Osaka.", at=NOON + timedelta(hours=2))  # said after the new fact
OLD_TEXT = memory("old", "The learner lives in Tokyo.", current=False)


def new(
    *listed: tuple[MemoryRecord, float],
    text: str = "The learner lives in Tokyo.",
    key: str = "job#0",
    said_at: datetime = NOON,
    vector: tuple[float, ...] = (1.0, 0.0, 0.0),
    **fields,
) -> NewFact:
    read = ExtractedFact(text=text, memory_type="semantic", category="identity", event_phrase=None, event_date=None)
    candidates = [Candidate(record, distance, record.content) for record, distance in listed]
    said = ExtractionJob(text, said_at, "job")
    return NewFact(
        key, read, text, "semantic", "identity", None, said, vector=list(vector), candidates=candidates, **fields
    )


def shared(action: str, memory_id: str | None = None, earlier: str | None = None, text: str | None = None):
    return Decided(action, memory_id, earlier, text, shared=True)


MERGED = "The learner lives in Taipei with a cat."
# (case, new fact, its decision, the memories as the store holds them now, memory full, (action, memory, text, reason))
WRITES = [
    ("the memory cap was reached", new(), Decided("ADD"), [], True, ("skip", None, None, w.FULL)),
    ("a memory says it already", new(seen=TAIPEI), None, [], False, ("seen", "taipei", None, w.KNOWN)),
    (
        "this very text was changed after it was said",
        new(changed=OLD_TEXT),
        None,
        [],
        False,
        ("skip", "old", None, w.OLD_NEWS),
    ),
    ("after a related new fact", new(after_related=True), None, [], False, ("replan", None, None, w.AFTER_RELATED)),
    (
        "a related new fact was written, and this one planned again since",
        new((TAIPEI, 0.3), after_related=True, replanned=True),
        None,
        [TAIPEI],
        False,
        ("ask", None, None, w.UNDECIDED),
    ),
    (
        "a shared decision names a memory changed since it was listed",
        new((TAIPEI, 0.3)),
        shared("SUPERSEDE", "taipei"),
        [GONE],
        False,
        ("replan", None, None, w.NAMED_CHANGED),
    ),
    (
        "a shared decision names an earlier new fact that left no memory",
        new((TAIPEI, 0.3), key="job#1"),
        shared("UPDATE", None, "job#0", MERGED),
        [TAIPEI],
        False,
        ("replan", None, None, w.NAMED_CHANGED),
    ),
    (
        "a shared decision names a memory changed since, and the fact was planned again: its own call",
        new((GOLF, 0.4), replanned=True),
        shared("SUPERSEDE", "taipei"),
        [GONE, GOLF],
        False,
        ("ask", None, None, w.UNDECIDED),
    ),
    (
        "planned again, changed, and nothing related left: added without a call",
        new(replanned=True),
        shared("SUPERSEDE", "taipei"),
        [GONE],
        False,
        ("add", None, "The learner lives in Tokyo.", w.UNRELATED),
    ),
    ("no related memory: no call", new(), None, [], False, ("add", None, "The learner lives in Tokyo.", w.UNRELATED)),
    ("related memories, no decision yet", new((TAIPEI, 0.3)), None, [TAIPEI], False, ("ask", None, None, w.UNDECIDED)),
    (
        "a change of a memory said after the new fact",
        new((LATER, 0.3)),
        Decided("SUPERSEDE", "later"),
        [LATER],
        False,
        ("skip", "later", None, w.NEWER),
    ),
    (
        "a shared change of a memory said after the new fact",
        new((LATER, 0.3)),
        shared("UPDATE", "later", text=MERGED),
        [LATER],
        False,
        ("skip", "later", None, w.NEWER),
    ),
    (
        "NOOP naming a current memory",
        new((TAIPEI, 0.3)),
        Decided("NOOP", "taipei"),
        [TAIPEI],
        False,
        ("seen", "taipei", None, w.NOOP),
    ),
    (
        "NOOP naming nothing current: the nearest listed memory still current",
        new((GOLF, 0.4), (TAIPEI, 0.2), (LATER, 0.3)),
        Decided("NOOP", None),
        [GONE, GOLF, LATER],
        False,
        ("seen", "later", None, w.NOOP),
    ),
    (
        "NOOP, but nothing listed is current any more",
        new((TAIPEI, 0.2)),
        Decided("NOOP", "taipei"),
        [GONE],
        False,
        ("add", None, "The learner lives in Tokyo.", w.NOOP_NONE_CURRENT),
    ),
    ("ADD", new((TAIPEI, 0.3)), Decided("ADD"), [TAIPEI], False, ("add", None, "The learner lives in Tokyo.", w.ADD)),
    (
        "an own ADD that names a memory still adds",
        new((TAIPEI, 0.3)),
        Decided("ADD", "taipei"),
        [TAIPEI],
        False,
        ("add", None, "The learner lives in Tokyo.", w.ADD),
    ),
    (
        "an own change naming no listed memory",
        new((TAIPEI, 0.3)),
        Decided("SUPERSEDE", None),
        [TAIPEI],
        False,
        ("add", None, "The learner lives in Tokyo.", w.NAMES_NOTHING),
    ),
    (
        "an own change naming a memory another session changed meanwhile",
        new((TAIPEI, 0.3)),
        Decided("UPDATE", "taipei", text=MERGED),
        [GONE],
        False,
        ("add", None, "The learner lives in Tokyo.", w.NAMES_NOTHING),
    ),
    (
        "UPDATE with its merged text",
        new((TAIPEI, 0.3)),
        Decided("UPDATE", "taipei", text=f"  {MERGED}\u200b"),
        [TAIPEI],
        False,
        ("update", "taipei", MERGED, w.UPDATE),
    ),
    (
        "UPDATE with no merged text",
        new((TAIPEI, 0.3)),
        Decided("UPDATE", "taipei", text=None),
        [TAIPEI],
        False,
        ("update", "taipei", "The learner lives in Tokyo.", w.UPDATE_AS_SAID),
    ),
    (
        "UPDATE with a merged text too long to store",
        new((TAIPEI, 0.3)),
        shared("UPDATE", "taipei", text="x" * 5000),
        [TAIPEI],
        False,
        ("update", "taipei", "The learner lives in Tokyo.", w.UPDATE_AS_SAID),
    ),
    (
        "SUPERSEDE",
        new((TAIPEI, 0.3)),
        shared("SUPERSEDE", "taipei"),
        [TAIPEI],
        False,
        ("supersede", "taipei", "The learner lives in Tokyo.", w.CONTRADICTS),
    ),
    (
        "SUPERSEDE of what an earlier new fact left",
        new((TAIPEI, 0.3), key="job#1"),
        shared("SUPERSEDE", "tokyo", "job#0"),
        [memory("tokyo", "The learner lives in Tokyo now.", at=NOON)],
        False,
        ("supersede", "tokyo", "The learner lives in Tokyo.", w.CONTRADICTS),
    ),
]


@pytest.mark.parametrize(
    ("fact_", "decided", "now", "full", "expected"), [row[1:] for row in WRITES], ids=[row[0] for row in WRITES]
)
def test_each_fact_is_written_as_its_decision_and_the_store_now_say(fact_, decided, now, full, expected):
    write = w.plan_write(fact_, decided, {r.id: r for r in now}, full=full)
    assert (write.action, write.memory, write.text, write.reason) == expected
    assert write.key == fact_.key


def test_every_reason_has_a_row():
    reasons = {value for name, value in vars(w).items() if name.isupper() and isinstance(value, str) and " " in value}
    assert reasons == {row[-1][-1] for row in WRITES}


def test_a_skip_reads_as_status_shows_it():
    assert w.OLD_NEWS.format("old123") == "said before old123 was changed"
    assert w.NEWER.format("later1") == "said before memory later1, which is newer"
    assert w.FULL.format("") == "memory is full"


# -- a shared answer ------------------------------------------------------------------------------
A, B, C = (new(text=f"The learner has fact {n}.", key=f"job#{n}") for n in range(3))
UNION = [Candidate(TAIPEI, 0.3, TAIPEI.content), Candidate(GOLF, 0.4, GOLF.content)]
# (case, the answer's decisions, what is acted on, by fact key)
SHARED = [
    (
        "a listed memory by its number",
        [{"fact": "A", "action": "SUPERSEDE", "memory": 2}],
        {"job#0": shared("SUPERSEDE", "golf")},
    ),
    (
        "an earlier new fact by its letter",
        [{"fact": "C", "action": "UPDATE", "earlier": "a.", "text": "merged"}],
        {"job#2": shared("UPDATE", None, "job#0", "merged")},
    ),
    (
        "ADD names nothing, whatever it says",
        [{"fact": "B", "action": "ADD", "memory": 1, "earlier": "A"}],
        {"job#1": shared("ADD")},
    ),
    (
        "a second decision for a fact: the first holds",
        [{"fact": "A", "action": "NOOP", "memory": 1}, {"fact": "A", "action": "ADD"}],
        {"job#0": shared("NOOP", "taipei")},
    ),
    ("a letter that is no fact of the call", [{"fact": "D", "action": "ADD"}, {"fact": "", "action": "ADD"}], {}),
    ("a number outside the union", [{"fact": "A", "action": "SUPERSEDE", "memory": 3}], {}),
    ("a number that is not a plain integer", [{"fact": "A", "action": "SUPERSEDE", "memory": "1"}], {}),
    ("a change naming nothing", [{"fact": "A", "action": "UPDATE", "text": "x"}, {"fact": "B", "action": "NOOP"}], {}),
    (
        "a letter not before its own fact",
        [{"fact": "A", "action": "NOOP", "earlier": "B"}, {"fact": "B", "action": "NOOP", "earlier": "B"}],
        {},
    ),
    (
        "a letter that is not an earlier fact names nothing, even beside a number",
        [{"fact": "B", "action": "NOOP", "earlier": "Fact A", "memory": 1}],
        {},
    ),
    (
        "a malformed decision is dropped, its neighbours kept",
        [{"fact": "A", "action": "MAYBE"}, {"fact": "B", "action": "ADD"}],
        {"job#1": shared("ADD")},
    ),
]


@pytest.mark.parametrize(("answer", "expected"), [row[1:] for row in SHARED], ids=[row[0] for row in SHARED])
def test_a_shared_answer_acts_only_on_what_each_decision_may_name(answer, expected):
    decisions = MemoryDecisions.model_validate({"decisions": [{"memory": None, "text": None} | d for d in answer]})
    assert w.shared_decisions(decisions, [A, B, C], UNION) == expected


# -- a round of facts ---------------------------------------------------------------------------------
FAR = {"vector": (0.0, 1.0, 0.0)}  # apart in meaning from the default vector
TOKYO = new((TAIPEI, 0.3), text="The learner moved to Tokyo.", key="j#0")
TENNIS = new((GOLF, 0.4), text="The learner took up tennis.", key="j#1", **FAR)
CAT = new(text="The learner has a cat.", key="j#2", said_at=NOON - timedelta(hours=1))
CAT_TOM = new(text="The learner's cat is called Tom.", key="j#3", **FAR)
KNOWN_ONE = new(text="The learner plays golf.", key="j#4", seen=GOLF, **FAR)
# (case, the facts as found, (the keys in the order written, those after a related one, those decided in one call))
ROUNDS = [
    ("one fact to decide: its own call", [TOKYO], (["j#0"], [], [])),
    ("facts with related memories share one call", [TOKYO, TENNIS], (["j#0", "j#1"], [], ["j#0", "j#1"])),
    ("in the order said", [TENNIS, CAT], (["j#2", "j#1"], [], [])),
    (
        "a related new fact is decided, and planned again after the one before it",
        [CAT_TOM, CAT],
        (["j#2", "j#3"], ["j#3"], ["j#2", "j#3"]),
    ),
    (
        "close in meaning is related",
        [TENNIS, new(text="The learner now swims.", key="j#5", vector=(0.1, 1.0, 0.0))],
        (["j#1", "j#5"], ["j#5"], ["j#1", "j#5"]),
    ),
    (
        "the same slot is related",
        [
            new(text="The learner works at Google.", key="j#6"),
            new(text="The learner got a new job at a bakery.", key="j#7", **FAR),
        ],
        (["j#6", "j#7"], ["j#7"], ["j#6", "j#7"]),
    ),
    (
        "a fact a memory already says comes first and takes no part",
        [TOKYO, TENNIS, KNOWN_ONE],
        (["j#4", "j#0", "j#1"], [], ["j#0", "j#1"]),
    ),
]


@pytest.mark.parametrize(("facts", "expected"), [row[1:] for row in ROUNDS], ids=[row[0] for row in ROUNDS])
def test_a_round_of_facts_is_ordered_and_decided_together(facts, expected):
    ordered, deciding = w.plan_facts(facts, DISTANCE)
    after = [f.key for f in ordered if f.after_related]
    assert ([f.key for f in ordered], after, [f.key for f in deciding]) == expected


# -- a reading's corrections and facts, in the order to apply them ---------------------------------------
def _job(text: str) -> ExtractionJob:
    return ExtractionJob(text, NOON, "m0")


def _result(facts=(), corrections=()) -> ExtractionResult:
    return ExtractionResult.model_validate(
        extraction(
            *(fact(t, "identity") for t in facts), corrections=[{"statement": s, "evidence": e} for s, e in corrections]
        )
    )


# (case, the message, the facts read, the corrections read (statement, evidence), the runs: kind and what)
ORDERS = [
    (
        "its corrections, then its facts",
        "No, I never said I live in Taipei, I live in Tainan.",
        ["The learner lives in Tainan."],
        [("The learner lives in Taipei.", "I never said I live in Taipei")],
        [("corrections", ["The learner lives in Taipei."]), ("facts", ["The learner lives in Tainan."])],
    ),
    (
        "no corrections: one round of facts, in the reading's order",
        "I like tea. I play chess.",
        ["The learner plays chess.", "The learner likes tea."],
        [],
        [("facts", ["The learner plays chess.", "The learner likes tea."])],
    ),
    (
        "no facts: the corrections alone",
        "Sorry, I never said I have a cat.",
        [],
        [("The learner has a cat.", "I never said I have a cat")],
        [("corrections", ["The learner has a cat."])],
    ),
]


@pytest.mark.parametrize(
    ("message", "facts", "corrections", "expected"), [row[1:] for row in ORDERS], ids=[row[0] for row in ORDERS]
)
def test_a_readings_corrections_and_facts_apply_in_order(message, facts, corrections, expected):
    runs = w.in_order(_job(message), _result(facts, corrections))
    shown = [(kind, [i.statement if kind == "corrections" else i[1].text for i in run]) for kind, run in runs]
    assert shown == expected
    keys = [key for kind, run in runs if kind == "facts" for key, _ in run]
    assert keys == [f"m0#{n}" for n in range(len(facts))]  # stable: the job's id and the place


# -- played through a session: a correction finds the facts said before it ----------------------
def _reading(messages, facts, corrections):
    """The extraction answer for whichever of ``messages`` a reading was sent."""

    def answer(body):
        sent = set(body["input"][-1]["content"].split("\n"))
        said = {n for n, text in enumerate(messages) if text in sent}
        return extraction(
            *(fact(text, "identity") for n, text in facts if n in said),
            corrections=[{"statement": s, "evidence": messages[n]} for n, s, _ in corrections if n in said],
        )

    return answer


def _naming(texts):
    """A correction lookup naming whichever of ``texts`` it lists."""

    def answer(body):
        listing = body["input"][-1]["content"].partition("\nMemories:\n")[2]
        numbers = re.findall(r"^(\d+)\. (.*?)(?: \(\d{1,2} \w{3}(?: \d\d:\d\d)?\))?$", listing, re.MULTILINE)
        return {"memories": [int(n) for n, shown in numbers if shown in texts]}

    return answer


def _say(app, text: str) -> list[str]:
    """A turn as the REPL runs it: the reply's notes, then the notices that waited for it."""
    notes = app.chat(text, on_delta=lambda _: None).notes
    app.turn.after_turn()
    return notes


@pytest.mark.parametrize(("stored", "messages", "facts", "corrections", "current"), CORRECTIONS)
def test_a_correction_applies_after_the_facts_said_before_it(
    make_app, server, stored, messages, facts, corrections, current
):
    app = make_app()
    for text in stored:
        app.store.add(text, category="identity")
    server.script("extraction", *[_reading(messages, facts, corrections)] * len(messages))
    server.script("correction", *[_naming({named for *_, named in corrections})] * 2 * len(corrections))
    told = [n for text in messages for n in _say(app, text)]
    assert app.wait_for_extraction(10)
    told += app.notices
    assert sorted(r.content for r in app.store.list()) == sorted(current)
    retracted = [r.content for r in app.store.list(include_superseded=True) if r.change_reason == "correction"]
    assert retracted or not corrections
    for content in retracted:  # told, so that a wrong correction can be seen and undone
        assert any("that is superseded" in n and content in n for n in told), (content, told)


# The first message's reading held at the server while the correction is said: read before
# its reply, the correction would find nothing stored yet and be lost. Rows whose first
# message states the fact the correction takes back.
@pytest.mark.parametrize(("stored", "messages", "facts", "corrections", "current"), CORRECTIONS[:8])
def test_a_correction_said_while_the_fact_is_still_being_read_finds_it(
    make_app, server, stored, messages, facts, corrections, current
):
    app = make_app()
    answer = _reading(messages, facts, corrections)
    held = server.hold("extraction", extraction(*(fact(text, "identity") for n, text in facts if n == 0)))
    server.script("extraction", *[answer] * len(messages))
    server.script("correction", *[_naming({named for *_, named in corrections})] * 2)
    _say(app, messages[0])
    held.wait_arrived()
    for text in messages[1:]:
        _say(app, text)
    held.release()
    assert app.wait_for_extraction(10)
    assert sorted(r.content for r in app.store.list()) == sorted(current)
    assert any("that is superseded" in n for n in app.notices)
