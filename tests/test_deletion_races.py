"""A deletion wins over every reading in flight or held, and newer wins by when it was said.

Each reading here is held at the stand-in server (``server.hold``) while the learner
deletes, so "the reading lands after the deletion" happens in that order every run,
with no sleep. What must hold: the deletion is decided at once, whatever is still
at the server, and nothing said before it comes back when the reading lands, in
this process or in another one on the same data; and a fact said before a memory
never overturns it.
"""

from __future__ import annotations

import json

import pytest
from helpers.scripts import decision_input, decisions_input, extraction, fact, naming, say
from helpers.stores import files_holding, new_pieces, own_word

from memora.cli.commands import ExitRequested

pytestmark = pytest.mark.chroma  # deleted means gone from every file, Chroma's included

BEES = "The learner keeps bees on the roof."
SAID = "I keep bees on the roof of my building, and yesterday I goed to the roof to check them and sell the honey."
SECRET = "zqxjvkq plus 我的密碼是藍色鯨魚"


def with_mistake(*facts):
    return {
        **extraction(*facts),
        "mistakes": [
            {"original": "I goed to the roof", "corrected": "I went to the roof", "rule": "go: went", "kind": "grammar"}
        ],
    }


def no_waiting(app, monkeypatch) -> list[str]:
    """Record every wait for the reading under way (there must be none): a deletion is
    decided at once, since a slow server could outlast any wait."""
    waits: list[str] = []
    worker = app.worker

    def wait_idle(timeout=None):
        waits.append(f"wait_idle({timeout})")
        return worker._idle.is_set()

    monkeypatch.setattr(worker, "wait_idle", wait_idle)
    thread = worker._thread
    monkeypatch.setattr(thread, "join", lambda timeout=None: waits.append(f"join({timeout})") if timeout else None)
    return waits


def command(app, *lines: str) -> str:
    """Type one command (and its confirmations) at the REPL's router, without leaving the REPL."""
    from conftest import Transcript

    from memora.cli.commands import CommandRouter, run_command
    from memora.cli.terminal import PlainConsole

    transcript = Transcript(lines[1:])
    console = PlainConsole(transcript.read, transcript.write)
    app.set_notify(console.notice)
    assert run_command(CommandRouter(app, console), lines[0])
    return transcript.text


def contents(app) -> list[str]:
    return sorted(r.content for r in app.store.list(include_superseded=True))


# -- a deletion while a reading is at the server ----------------------------------------------


def forget_all(app):
    return ["forget all", "DELETE"]


def forget_the_fact(app):
    [record] = app.store.list(text="bees")
    return [f"forget {record.id}"]


def forget_the_mistake(app):
    [entry] = app.ledger.all()
    return [f"mistakes forget {entry.id}"]


def undo_the_remember(app):
    return ["undo"]


@pytest.mark.parametrize(
    "setup, delete, gone",
    [
        (None, forget_all, "everything"),
        ("remember", forget_the_fact, "fact"),
        ("remember-then-say", forget_the_fact, "fact"),
        ("mistake", forget_the_mistake, "mistake"),
        ("say-then-remember", undo_the_remember, "fact"),
    ],
    ids=["forget-all", "forget-id", "forget-id-reworded", "mistakes-forget", "undo-of-an-add"],
)
def test_a_deletion_while_a_reading_runs_is_decided_at_once_and_the_reading_brings_nothing_back(
    make_app, server, run_repl, data_dir, clock, monkeypatch, setup, delete, gone
):
    app = make_app(timeout=60)  # the reading could answer long after a 15 s wait
    unique = new_pieces(data_dir, f"{BEES} {SAID}")  # what no file held before
    if setup in ("remember", "remember-then-say"):
        run_repl(app, [f"remember {BEES}"])
    if setup == "mistake":
        server.script("extraction", with_mistake())
        app.chat("Last week I goed to the roof to see the bees at sunrise, and they were all fine.", on_delta=print)
        assert app.wait_for_extraction(10) and len(app.ledger.all()) == 1
    # the reading of a message said before the deletion repeats the fact and the mistake
    repeat = "The learner keeps bees on the roof" if setup != "remember-then-say" else "The learner keeps roof bees."
    held = server.hold("extraction", with_mistake(fact(repeat, "hobby")))
    app.chat(SAID, on_delta=lambda _: None)
    held.wait_arrived()
    if setup == "say-then-remember":  # the remember is the last change: undo takes it back
        clock.advance(minutes=1)
        run_repl(app, [f"remember {BEES}"], settle=False)
    lines = delete(app)
    waits = no_waiting(app, monkeypatch)
    t = command(app, *lines)
    assert not held.answered.is_set()  # decided while the reading was still at the server
    assert waits == []
    monkeypatch.setattr(app.worker, "wait_idle", type(app.worker).wait_idle.__get__(app.worker))
    assert "Cancelled" not in t and "Error" not in t
    held.release()
    assert app.wait_for_extraction(10)
    if gone in ("everything", "fact"):
        assert not any("bees" in c for c in contents(app))
        assert not any("remembered" in n and "bees" in n for n in app.notices)
    if gone in ("everything", "mistake"):
        assert app.ledger.all() == []
    if gone == "everything":
        assert files_holding(data_dir, "keeps bees", "goed to the roof", *unique) == {}
    app.close()
    again = make_app()
    assert again.store.list(text="bees") == [] if gone != "mistake" else True


def test_forget_all_counts_held_messages_as_data_and_they_are_never_read(make_app, server, run_repl):
    reading = server.hold("extraction", extraction(fact("The learner has a cat.", "identity")))
    app = make_app()
    for line in ("I have a cat.", "Her name is Momo."):  # the first at the server, the second waiting
        app.chat(line, on_delta=lambda _: None)
    reading.wait_arrived()
    assert app.store.count() == 0
    t = run_repl(app, ["forget all", "DELETE"], settle=False)
    assert "There are no memories to delete" not in t.text
    assert "2 messages not read for memories yet and this conversation" in t.text
    assert "Deleted 0 memories, 2 unread messages and the conversation." in t.text
    reading.release()
    app.close()
    assert len(server.of_kind("extraction")) <= 1  # the second is never sent: said before the deletion
    assert make_app().store.count(include_superseded=True) == 0


def test_forget_all_clears_the_conversation_so_the_next_request_carries_none_of_it(make_app, server, run_repl):
    app = make_app()
    app.chat("Hi! My name is Lin and I work as a nurse in Taichung.", on_delta=lambda _: None)
    t = run_repl(app, ["forget all", "DELETE", "Hello again"], settle=False)
    assert "and the conversation." in t.text
    request = server.chats[-1]
    assert all("nurse in Taichung" not in m["content"] for m in request.input)
    assert "Taichung" not in request.body["instructions"]
    assert "Taichung" not in app.paths.session.read_text()


def test_forget_all_in_another_terminal_wins_over_the_message_this_one_holds(make_app, server, run_repl, data_dir):
    reading = server.hold("extraction", extraction(fact("The learner lives in Tokyo.", "identity")))
    first = make_app()
    second = make_app()  # a second terminal, same learner, open before the first reads anything
    first.chat("I live in Tokyo.", on_delta=lambda _: None)
    reading.wait_arrived()  # its reading at the server
    t = run_repl(second, ["forget all", "DELETE"], settle=False)
    assert "Deleted" in t.text
    second.close()
    reading.release()
    first.close()  # the first terminal leaves last: its reading lands
    assert make_app().store.list(include_superseded=True) == []
    assert "I live in Tokyo." not in (data_dir / "memora_session.json").read_text()


@pytest.mark.parametrize(
    "setup, delete, gone",
    [
        (None, forget_all, "everything"),
        ("remember", forget_the_fact, "fact"),
        ("remember-then-say", forget_the_fact, "fact"),
        ("mistake", forget_the_mistake, "mistake"),
    ],
    ids=["forget-all", "forget-id", "forget-id-reworded", "mistakes-forget"],
)
def test_a_deletion_in_another_terminal_wins_over_this_terminals_reading_in_flight(
    make_app, server, run_repl, data_dir, setup, delete, gone
):
    """The reading is at the server in the first terminal when the second deletes:
    the first's write lands after the deletion, in another instance with its own
    connections, and is checked against the deletion log on disk."""
    first = make_app(timeout=60)
    second = make_app()
    unique = new_pieces(data_dir, f"{BEES} {SAID}")
    if setup in ("remember", "remember-then-say"):
        run_repl(first, [f"remember {BEES}"])
    if setup == "mistake":
        server.script("extraction", with_mistake())
        first.chat("Last week I goed to the roof to see the bees at sunrise, and they were all fine.", on_delta=print)
        assert first.wait_for_extraction(10) and len(first.ledger.all()) == 1
    repeat = "The learner keeps bees on the roof" if setup != "remember-then-say" else "The learner keeps roof bees."
    held = server.hold("extraction", with_mistake(fact(repeat, "hobby")))
    first.chat(SAID, on_delta=lambda _: None)
    held.wait_arrived()
    t = command(second, *delete(second))
    assert "Cancelled" not in t and "Error" not in t
    assert not held.answered.is_set()
    held.release()
    assert first.wait_for_extraction(10)
    for app in (first, second, make_app()):
        if gone in ("everything", "fact"):
            assert not any("bees" in r.content for r in app.store.list(include_superseded=True))
        if gone in ("everything", "mistake"):
            assert app.ledger.all() == []
    if gone in ("everything", "fact"):
        assert not any("remembered" in n and "bees" in n for n in first.notices)
    first.close()
    second.close()
    if gone == "everything":
        assert files_holding(data_dir, "keeps bees", "goed to the roof", *unique) == {}


@pytest.mark.parametrize("where", ["this terminal", "another terminal"])
@pytest.mark.parametrize("decision", ["reconcile", "reconcile_many"])
def test_a_forget_while_the_decision_naming_the_memory_is_at_the_server_brings_nothing_back(
    make_app, server, run_repl, where, decision
):
    """Later than the reading: its decision call is held, and will name the forgotten
    memory (UPDATE, with a new wording of it). The forget wins; nothing of it comes back."""
    app = make_app(timeout=60)
    other = make_app() if where == "another terminal" else app
    run_repl(app, [f"remember {BEES}"])
    refined = "The learner keeps bees on the roof and sells the honey."
    facts = [fact(refined, "hobby")]
    if decision == "reconcile_many":  # a second related fact makes the decision a shared one
        facts.append(fact("The learner sells honey from the roof bees at a market.", "hobby"))
        answer = {
            "decisions": [
                {"fact": "A", "action": "UPDATE", "memory": 1, "earlier": None, "text": refined},
                {"fact": "B", "action": "UPDATE", "memory": 1, "earlier": None, "text": None},
            ]
        }
    else:
        answer = {"action": "UPDATE", "memory": 1, "text": refined}
    server.script("extraction", extraction(*facts))
    held = server.hold(decision, answer)
    app.chat(SAID, on_delta=lambda _: None)
    held.wait_arrived()
    command(other, *forget_the_fact(other))
    held.release()
    assert app.wait_for_extraction(10)
    for each in (app, other, make_app()):
        assert not any("bees" in r.content for r in each.store.list(include_superseded=True))


def test_forget_user_while_a_reading_runs_leaves_nothing_and_waits_for_nothing(
    make_app, make_settings, server, run_repl, data_dir, monkeypatch
):
    app = make_app(settings=make_settings(user="ming", timeout=60))
    held = server.hold("extraction", with_mistake(fact(BEES, "hobby")))
    app.chat(SAID, on_delta=lambda _: None)
    held.wait_arrived()
    waits = no_waiting(app, monkeypatch)
    with pytest.raises(ExitRequested):  # the learner deleted themselves: the REPL ends
        command(app, "forget user ming", "ming")
    assert not held.answered.is_set()
    assert waits == []
    held.release()
    app.worker.wait_idle(10)
    assert not (data_dir / "users" / "ming").exists()
    assert files_holding(data_dir, "bees", "goed") == {}


# -- deleted means gone, pieces included -------------------------------------------------------


def forget_id(app, secret):
    [record] = app.store.list(text=secret.split()[-1])
    return [f"forget {record.id}"]


def edited_then_forgotten(app, secret):
    [record] = app.store.list(text=secret.split()[-1])
    edited = app.store.edit(record.id, secret + " edited")
    return [f"forget {edited.id}"]


@pytest.mark.parametrize(
    "delete",
    [forget_id, lambda app, secret: ["forget all", "DELETE"], lambda app, secret: ["undo"], edited_then_forgotten],
    ids=["forget-id", "forget-all", "undo-of-remember", "edited-then-forgotten"],
)
@pytest.mark.parametrize(
    "secret",
    [
        SECRET,
        "The learner's locker code is Qwvxzyk 7291 at Plimbury gym",
        "暗証番号はミドリガメ、비밀번호는파란고래",  # Japanese kana and kanji, Korean hangul
        "Ünïcødé Żółwiątko naïve façade Θάλασσα Москва",  # accents, Greek, Cyrillic
        "zqxjvkq@plimbury.example +886-912-345-678",  # an address and a number
    ],
    ids=["english-and-chinese", "locker-code", "japanese-and-korean", "accented-greek-cyrillic", "email-and-phone"],
)
def test_no_piece_of_forgotten_text_stays_in_any_file(make_app, run_repl, data_dir, delete, secret):
    given, secret = secret, f"{secret} {own_word()}"  # an earlier test's copy leaves it no piece to look for
    app = make_app()
    kept = "The learner plays the oboe in an orchestra."
    app.store.add(kept)
    unique = new_pieces(data_dir, secret, kept)  # its pieces no file held before
    run_repl(app, [f"remember {secret}"])
    lines = delete(app, secret)
    assert files_holding(data_dir, *unique)  # the pieces were really on disk
    t = run_repl(app, lines)
    if not app.store.erased:  # another connection held a file: as it says, the next start wipes it
        assert "the next start will" in t.text
        app.close()
        make_app()
    assert files_holding(data_dir, *unique, given, secret) == {}, "pieces of the forgotten text stay"


def test_no_piece_of_a_forgotten_learner_or_mistake_stays_in_any_file(
    make_app, make_settings, server, run_repl, data_dir
):
    """forget user and mistakes forget, piece by piece: the learner's goal, memory and
    mistake, in English and Chinese."""
    kept = "The learner plays the oboe in an orchestra."
    me = make_app()
    me.store.add(kept)
    secrets = ["Qwvxzyk Plimbury", "我的密碼是藍色鯨魚", "I goed to Zorbplatz"]
    unique = new_pieces(data_dir, " ".join(secrets), kept)
    ming = make_app(settings=make_settings(user="ming"))
    ming.profiles.add_learning_goal("Pass the Qwvxzyk exam at Plimbury")
    ming.store.add("The learner's password is 我的密碼是藍色鯨魚")
    server.script(
        "extraction",
        with_mistake()
        | {
            "mistakes": [
                {
                    "original": "I goed to Zorbplatz",
                    "corrected": "I went to Zorbplatz",
                    "rule": "go: went",
                    "kind": "grammar",
                }
            ]
        },
    )
    ming.chat("Yesterday I goed to Zorbplatz with my friends from the office.", on_delta=lambda _: None)
    assert ming.wait_for_extraction(10) and ming.ledger.all()
    [entry] = ming.ledger.all()
    command(ming, f"mistakes forget {entry.id}")
    assert ming.ledger.all() == []
    ming.close()
    assert files_holding(data_dir, *unique)  # the learner's own pieces are there
    run_repl(me, ["forget user ming", "ming"])
    assert files_holding(data_dir, *unique) == {}


# -- newer wins, by when it was said -----------------------------------------------------------


# (the older fact, the newer one filling the same slot): far apart in words and meaning
SLOT_PAIRS = {
    "job": ("The learner works at Google.", "The learner got a new job at a bakery."),
    "job-trade": ("The learner is a nurse.", "The learner now teaches maths at a high school."),
    "home": ("The learner lives in Taipei.", "The learner moved to Osaka last month."),
    "home-rent": ("The learner lives with her parents.", "The learner rents a studio downtown."),
    "studies": ("The learner studies law at NTU.", "The learner is now a chemistry student at Kyoto University."),
    "exam": ("The learner has an IELTS exam on Friday.", "The learner's test was postponed to next month."),
    "name": ("The learner's name is Ming.", "The learner is called Lin by everyone."),
    "target": ("The learner is aiming for IELTS 7.", "The learner's target band is 6.5."),
    "age": ("The learner is 29 years old.", "The learner just turned 30."),
    "partner": ("The learner is single.", "The learner got married in June."),
    "origin": ("The learner's native language is Mandarin.", "The learner's mother tongue is Cantonese."),
    "job-zh": ("學習者是護士。", "學習者現在當老師。"),
}


@pytest.mark.parametrize("older, newer", SLOT_PAIRS.values(), ids=SLOT_PAIRS.keys())
def test_facts_of_one_reading_filling_one_slot_reach_the_same_decision(make_app, server, local_embedder, older, newer):
    """However far apart their words and embeddings: the same slot is enough."""
    server.script("extraction", extraction(fact(older, "identity"), fact(newer, "other")))

    def answer(body):
        facts, _ = decisions_input(body)
        letters = {text: letter for letter, text in facts.items()}
        return {
            "decisions": [
                {"fact": letters[older], "action": "ADD", "memory": None, "earlier": None, "text": None},
                {
                    "fact": letters[newer],
                    "action": "SUPERSEDE",
                    "memory": None,
                    "earlier": letters[older],
                    "text": None,
                },
            ]
        }

    server.script("reconcile_many", answer)
    app = make_app(embedder=local_embedder)  # the real distances: the gate was there
    app.chat("Some news about me, a lot changed in the last few weeks and I wanted you to know.", on_delta=print)
    assert app.wait_for_extraction(10)
    [decision] = server.of_kind("reconcile_many")
    facts, _ = decisions_input(decision)
    assert set(facts.values()) == {older, newer}
    assert [r.content for r in app.store.list()] == [newer]


@pytest.mark.parametrize("older, newer", SLOT_PAIRS.values(), ids=SLOT_PAIRS.keys())
def test_a_stored_memory_of_the_slot_is_among_a_new_facts_candidates(make_app, server, local_embedder, older, newer):
    """Stored under another category, in a store of unrelated memories: the slot alone
    brings it to the decision, however far apart the two are."""
    app = make_app(embedder=local_embedder)
    for text in ("The learner likes jazz.", "The learner drinks green tea.", "The learner plays the oboe."):
        app.store.add(text, category="preference", source="extracted")
    stored = app.store.add(older, category="other", source="extracted").record  # said, not typed
    server.script("extraction", extraction(fact(newer, "identity")))
    server.script("reconcile", naming(older, "SUPERSEDE"))
    say(app, "Some news about me, a lot changed in the last few weeks and I wanted you to know.")
    [decision] = server.of_kind("reconcile")
    _, listed = decision_input(decision)
    assert older in listed.values()
    assert app.store.get(stored.id).status == "superseded"


def test_a_held_message_read_after_an_edit_never_overturns_it(make_app, server, clock):
    app = make_app()
    record = app.store.add("The learner lives in Tokyo.", category="identity").record
    reading = server.hold("extraction", extraction(fact("The learner lives in Tokyo.", "identity")))
    app.chat("Still in Tokyo, by the way.", on_delta=lambda _: None)
    reading.wait_arrived()
    clock.advance(minutes=5)
    osaka = app.store.edit(record.id, "The learner lives in Osaka.")
    reading.release()
    assert app.wait_for_extraction(10)  # the message's reading lands after the edit
    assert [r.content for r in app.store.list()] == ["The learner lives in Osaka."]
    assert app.store.get(osaka.id).is_current
    assert server.of_kind("reconcile") == []  # the very text the edit replaced: old news, no call
    assert any("said before" in s.reason and "was changed" in s.reason for s in app.turn.extraction_skipped)


def test_an_older_fact_never_supersedes_a_newer_memory_whatever_the_decision_says(make_app, server, clock):
    app = make_app()
    reading = server.hold("extraction", extraction(fact("The learner lives in Kyoto.", "identity")))
    app.chat("By the way, I live in Kyoto.", on_delta=lambda _: None)
    reading.wait_arrived()
    clock.advance(minutes=5)
    osaka = app.store.edit(app.store.add("The learner lives in Nara.", category="identity").record.id, "x")
    osaka = app.store.edit(osaka.id, "The learner lives in Osaka.")
    server.script("reconcile", {"action": "SUPERSEDE", "memory": 1, "text": None})  # the model gets it wrong
    reading.release()
    assert app.wait_for_extraction(10)
    assert app.store.get(osaka.id).is_current
    [decision] = server.of_kind("reconcile")
    sent = decision.input[0]["content"]
    assert sent.startswith("New fact: The learner lives in Kyoto. (29 Nov 10:00)")  # when each was said
    assert "1. The learner lives in Osaka. (29 Nov 10:05)" in sent
    assert any("said before memory" in s.reason for s in app.turn.extraction_skipped)


def test_a_held_message_is_read_by_exactly_one_process(make_app, server):
    server.script("extraction", extraction(fact("The learner lives in Tokyo.", "identity")))
    first = make_app()
    first.chat("I live in Tokyo.", on_delta=lambda _: None)  # held by the first terminal
    second = make_app()  # the second terminal starts: it finds the held message in the session file
    assert second.wait_for_extraction(10)
    first.close()
    second.close()
    assert len(server.of_kind("extraction")) == 1
    assert [r.content for r in make_app().store.list()] == ["The learner lives in Tokyo."]
    saved = json.loads(first.paths.session.read_text())
    assert saved["pending_extractions"] == []


def test_a_held_message_is_read_once_among_three_terminals(make_app, server):
    server.script("extraction", extraction(fact("The learner lives in Tokyo.", "identity")))
    first = make_app()
    first.chat("I live in Tokyo.", on_delta=lambda _: None)  # held by the first terminal
    second, third = make_app(), make_app()  # both find it in the session file at their start
    for app in (second, third, first):
        assert app.wait_for_extraction(10)
    for app in (third, second, first):
        app.close()
    assert len(server.of_kind("extraction")) == 1
    assert [r.content for r in make_app().store.list()] == ["The learner lives in Tokyo."]


def test_a_message_whose_reading_is_at_the_server_is_not_read_again_by_a_terminal_started_meanwhile(make_app, server):
    first = make_app()
    held = server.hold("extraction", extraction(fact("The learner keeps bees on the roof.", "hobby")))
    first.chat(SAID, on_delta=lambda _: None)
    held.wait_arrived()  # claimed by the first terminal, and at the server
    second = make_app()  # starts and leaves while the reading is under way
    assert second.wait_for_extraction(10)
    second.close()
    held.release()
    assert first.wait_for_extraction(10)
    first.close()
    assert len(server.of_kind("extraction")) == 1
    assert [r.content for r in make_app().store.list()] == ["The learner keeps bees on the roof."]


@pytest.mark.parametrize(
    "answer",
    [
        {"action": "SUPERSEDE", "memory": 1, "text": None},
        {"action": "UPDATE", "memory": 1, "text": "The learner lives in Tokyo."},
    ],
    ids=["supersede", "update"],
)
def test_a_message_held_in_one_terminal_never_overturns_what_another_terminal_heard_later(
    make_app, server, clock, answer
):
    """Terminal 1's reading of "I live in Tokyo." is at the server; terminal 2 then hears "I moved to Osaka" and
    reads it at once; terminal 1 leaves last and reads Tokyo: whatever the decision says,
    Osaka, said later, stays current, and the decision was told which was said first."""

    held = server.hold("extraction", extraction(fact("The learner lives in Tokyo.", "identity")))
    server.script("extraction", extraction(fact("The learner moved to Osaka.", "identity")))
    server.script("reconcile", answer)
    first = make_app()
    second = make_app()  # open before the first reads anything
    first.chat("I live in Tokyo.", on_delta=lambda _: None)
    held.wait_arrived()  # at the server until terminal 1 leaves
    clock.advance(minutes=5)
    second.chat("Big news: I moved to Osaka last week, the new flat is lovely and near the river.", on_delta=print)
    assert second.wait_for_extraction(10)
    assert [r.content for r in second.store.list()] == ["The learner moved to Osaka."]
    clock.advance(minutes=5)
    held.release()
    first.close()  # its reading of Tokyo lands now
    second.close()
    assert [r.content for r in make_app().store.list()] == ["The learner moved to Osaka."]
    [decision] = server.of_kind("reconcile")
    sent = decision.input[0]["content"]
    assert sent.startswith("New fact: The learner lives in Tokyo. (29 Nov 10:00)")
    assert "1. The learner moved to Osaka. (29 Nov 10:05)" in sent
