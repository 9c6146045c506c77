"""The slips a new learner hit in their first week (issue: first contact)."""

from __future__ import annotations

import pytest
from conftest import run_chatbot
from helpers.stores import add_many

from memora.app.turn import review_due_line
from memora.core.config import Settings, validate_user_name
from memora.core.errors import ConfigError


def _word_and_mistake(app):
    from memora.teaching.ledger import NewMistake

    app.ledger.record(NewMistake(original="I goed", corrected="I went", rule="go: went", kind="grammar"))
    app.ledger.add_word("ubiquitous", "found everywhere")


def test_a_word_card_is_counted_and_listed_as_a_word_not_a_mistake(make_app, run_repl, clock):
    app = make_app()
    _word_and_mistake(app)
    clock.advance(days=1)
    due = review_due_line(app.ledger, app.activity, app.clock())
    assert due == "1 mistake and 1 word to review today (type review)"
    t = run_repl(app, ["mistakes"])
    mistakes, _, words = t.text.partition("Your word cards")
    assert "I goed" in mistakes and "ubiquitous" not in mistakes  # not a vocabulary mistake
    assert "ubiquitous" in words and "found everywhere" in words


@pytest.mark.parametrize("only", ["words", "mistakes"])
def test_the_due_line_names_only_what_is_due(make_app, clock, only):
    from memora.teaching.ledger import NewMistake

    app = make_app()
    if only == "words":
        app.ledger.add_word("ubiquitous", "found everywhere")
        app.ledger.add_word("serendipity", "a happy accident")
    else:
        app.ledger.record(NewMistake(original="I goed", corrected="I went", rule="go: went", kind="grammar"))
    clock.advance(days=1)
    expected = "2 words to review today (type review)" if only == "words" else "1 mistake to review today (type review)"
    assert review_due_line(app.ledger, app.activity, app.clock()) == expected


@pytest.mark.parametrize("name", ["李明", "José", "Zoë", "ming_2", "Ünal-K", "小林さくら"])
def test_a_learner_name_in_any_script_is_accepted(name):
    assert validate_user_name(name) == name.lower()


@pytest.mark.parametrize(
    "name", ["../x", "a/b", ".hidden", "-flag", "_x", "李 明", "a" * 33, "", "名\u0000", "x.y", "🙂"]
)
def test_a_learner_name_that_could_name_a_path_or_hide_is_refused_in_one_line(name):
    with pytest.raises(ConfigError) as refused:
        validate_user_name(name)
    assert "letters (any language)" in str(refused.value) and "\n" not in str(refused.value)


def test_a_chinese_learner_name_works_end_to_end(make_app, make_settings, run_repl, server, data_dir):
    app = make_app(settings=make_settings(user="李明"))
    t = run_repl(app, ["remember I teach maths in Tainan", "search maths", "users"])
    assert "I teach maths in Tainan" in t.text.split("You: search maths", 1)[1]
    assert "李明" in t.text.split("You: users", 1)[1]
    assert (data_dir / "users" / "李明").is_dir()
    app.close()
    other = make_app()  # the default learner sees none of it
    assert other.store.list() == []
    t = run_repl(other, ["forget user 李明", "李明"])
    assert "Deleted learner '李明'" in t.text and not (data_dir / "users" / "李明").exists()


@pytest.mark.slow  # a child process
def test_user_flag_takes_a_chinese_name(data_dir):
    result = run_chatbot(["users", "exit"], "--user", "李明", MEMORA_HOME=data_dir)
    assert result.returncode == 0, result.stderr
    assert "use 1-32 letters" not in result.stderr and "李明" in result.stdout


def test_memories_shows_a_time_phrase_as_the_tutor_reads_it_and_history_keeps_the_words(make_app, run_repl, clock):
    app = make_app()
    record = app.store.add(
        "The learner has an exam next Friday.", category="schedule", memory_type="semantic"
    ).record  # said on Sunday 29 Nov: next Friday is 4 Dec
    clock.advance(days=9)
    t = run_repl(app, ["memories", f"history {record.id}"])
    listed = t.text.split("You: memories", 1)[1].split("You: history", 1)[0]
    assert "exam next Friday" not in listed and "Fri 4 Dec" in listed and "days ago" in listed
    assert "'history <id>' shows your own words" in listed
    assert "The learner has an exam next Friday." in t.text.split("You: history", 1)[1]


def test_settings_accept_a_chinese_user_from_the_environment(tmp_path):
    assert Settings.from_env({"MEMORA_HOME": str(tmp_path), "MEMORA_USER": "李明"}).user == "李明"


@pytest.mark.parametrize("text", ["latin", pytest.param("chinese", marks=pytest.mark.slow)])
def test_import_accepts_what_export_wrote_at_the_configured_limits(
    make_app, make_settings, run_repl, data_dir, monkeypatch, text
):
    """Everything at its limit: the configured memory cap of current memories, each at the
    longest text and with an earlier version (history has no cap); the profile lists at
    their configured length; a full ledger of entries with their most examples and
    reviews. The export is read back into itself and into an empty data folder. The
    import floors are lowered, and the profile lists are longer than the default limit
    (MEMORA_MAX_PROFILE_ITEMS=150, as a learner may set it), so that the floors and
    defaults alone would refuse it: what decides is that the limits follow the settings
    export wrote under. The Chinese run is also a learner named 李明."""
    from datetime import timedelta

    from memora.core.records import MAX_MEMORY_CHARS
    from memora.data import data_transfer
    from memora.teaching.ledger import MAX_EXAMPLES, MAX_MISTAKES, MAX_REVIEWS_KEPT, Example, Mistake, Review
    from memora.teaching.spaced import ReviewCard
    from user_profile import MAX_PROFILE_VALUE_CHARS

    monkeypatch.setattr(data_transfer, "MAX_IMPORT_MEMORIES", 100)
    monkeypatch.setattr(data_transfer, "MAX_IMPORT_BYTES", 1024 * 1024)
    from memora.core.config import DEFAULT_MAX_PROFILE_ITEMS

    cap, items, changed = 60, 150, 20
    assert items > DEFAULT_MAX_PROFILE_ITEMS
    user = "李明" if text == "chinese" else "default"
    app = make_app(memory_cap=cap, max_profile_items=items, user=user)
    unit = "學" if text == "chinese" else "w"
    long = lambda n: (f"{n} " + unit * MAX_MEMORY_CHARS)[:MAX_MEMORY_CHARS]  # noqa: E731
    add_many(app.store, [{"content": long(n), "category": "hobby"} for n in range(cap)])
    for record in app.store.list()[:changed]:  # with an earlier version (Chroma takes 0.3 s a long Chinese one)
        app.store.supersede(record.id, long(f"v2 {record.content[:6]}"), reason="update")
    for n in range(items):
        app.profiles.add_learning_goal((f"goal {n} " + unit * MAX_PROFILE_VALUE_CHARS)[:MAX_PROFILE_VALUE_CHARS])
        app.profiles.add_preference((f"pref {n} " + unit * MAX_PROFILE_VALUE_CHARS)[:MAX_PROFILE_VALUE_CHARS])
    now = app.clock()
    app.ledger.replace_all(
        [
            Mistake(
                id=f"m{n:05x}",
                kind="grammar",
                rule=("rule " + unit * 300)[:300],
                examples=[
                    Example(original=(f"{n}-{k} " + unit * 300)[:300], corrected=f"fixed {n}-{k}", seen_at=now)
                    for k in range(MAX_EXAMPLES)
                ],
                first_seen=now,
                last_seen=now,
                card=ReviewCard.new(now),
                count=MAX_EXAMPLES,
                reviews=[Review(at=now + timedelta(minutes=r), rating=3) for r in range(MAX_REVIEWS_KEPT)],
            )
            for n in range(MAX_MISTAKES)
        ]
    )
    exported = data_dir / "everything.json"
    t = run_repl(app, [f"export {exported}", f"import {exported}"])
    assert "Exported to" in t.text and "Error" not in t.text, t.text[-600:]
    assert exported.stat().st_size > 1024 * 1024  # over the lowered floor: the settings decided
    fresh = make_app(
        settings=make_settings(data_dir=data_dir.parent / "fresh", memory_cap=cap, max_profile_items=items, user=user)
    )
    t = run_repl(fresh, [f"import {exported}"])
    assert "Error" not in t.text, t.text[-600:]
    assert fresh.store.count() == cap and fresh.store.count(include_superseded=True) == cap + changed
    assert len(fresh.profiles.get().learning_goals) == len(fresh.profiles.get().preferences) == items
    assert len(fresh.ledger.all()) == MAX_MISTAKES


def test_nothing_is_asked_at_exit_and_the_question_waits_for_the_next_start(make_app, server, run_repl):
    """A message whose reading lands at exit may offer a word card and remember a fact: between
    "Saving memories…" and "Goodbye!" no line can be typed, so nothing there asks or
    hints at a command; the offer is asked at the next start, where "yes" answers it."""
    from helpers.scripts import extraction, fact

    asked = {
        **extraction(fact("The learner reads the Economist.", "hobby")),
        "asked_words": [{"word": "ubiquitous", "meaning": "found everywhere"}],
    }
    import chatbot
    from memora.cli.terminal import PlainConsole

    reading = server.hold("extraction", asked)  # still at the server when the learner leaves
    app = make_app()
    lines, out = ["What does ubiquitous mean"], []

    def write(text: str) -> None:
        out.append(text)
        if text.startswith("Saving memories"):
            reading.release()

    console = PlainConsole(lambda prompt: lines.pop(0) if lines else (_ for _ in ()).throw(EOFError), write)
    app.set_notify(console.notice)
    chatbot.run(app, console, raise_unexpected=True)
    assert len(server.of_kind("extraction")) == 1
    at_exit = "".join(out).split("Saving memories from your last message\u2026\n", 1)[1]
    assert at_exit.endswith("Goodbye!\n")
    assert "reads the Economist" in at_exit  # what it remembered is still told
    assert "?" not in at_exit and "yes/no" not in at_exit and "undo" not in at_exit, at_exit
    app.close()
    again = make_app()
    t = run_repl(again, ["yes", "mistakes"])
    before_yes = t.text.split("You: yes", 1)[0]
    assert "Add \u201cubiquitous\u201d to your review cards? (yes/no)" in before_yes
    assert "Added \u201cubiquitous\u201d to your review cards" in t.text
    assert [card.card_type for card in again.ledger.all()] == ["word"]


def test_progress_plain_is_the_command_and_leaves_the_charts_out(make_app, router_with_charts, clock):
    from datetime import timedelta

    app = make_app(base_url=None, api_key=None)
    app.activity.record_turn(clock() - timedelta(days=3))
    app.activity.record_turn()
    router, screen = router_with_charts(app)
    for line in ["progress --plain", "progress --since 30d --plain", "progress --plain --since 30d", "progress"]:
        assert router.is_command(line), line
    router.dispatch("progress")
    charted = screen()
    assert any(block in charted for block in "\u2581\u2582\u2583\u2584\u2585\u2586\u2587\u2588\u25a0")
    for line, period in [("progress --plain", "2 of 56"), ("progress --since 30d --plain", "2 of 30")]:
        router.dispatch(line)
        shown = screen()
        assert f"Days practised: {period}" in shown
        assert not any(block in shown for block in "\u2581\u2582\u2583\u2584\u2585\u2586\u2587\u2588\u25a0"), shown
    for bad in ["progress --plain --plain", "progress --plain 30d"]:
        with pytest.raises(Exception, match="Usage: progress"):
            router.dispatch(bad)


@pytest.fixture
def router_with_charts():
    """A command router printing to a rich console (the one that draws charts), and
    what it printed since the last look."""
    import io

    from rich.console import Console as RichOutput

    from memora.cli.commands import CommandRouter
    from memora.cli.terminal import RichConsole

    def build(app):
        buffer = io.StringIO()
        console = RichConsole(out=RichOutput(file=buffer, width=120, color_system=None), reader=lambda prompt: "")
        seen = [0]

        def screen() -> str:
            text = buffer.getvalue()
            new, seen[0] = text[seen[0] :], len(text)
            return new

        return CommandRouter(app, console), screen

    return build


def test_one_is_said_in_the_singular(make_app, make_settings, run_repl, data_dir):
    app = make_app()
    app.store.add("The learner plays the erhu.", category="hobby")
    exported = data_dir / "one.json"
    run_repl(app, [f"export {exported}"])
    fresh = make_app(settings=make_settings(data_dir=data_dir.parent / "fresh"))
    t = run_repl(fresh, [f"import {exported}", "forget all", "DELETE"])
    assert "Imported 1 memory (0 already here" in t.text
    assert "This deletes the 1 memory" in t.text and "Deleted 1 memory" in t.text
    assert "1 memories" not in t.text
    other = make_app(settings=make_settings(data_dir=data_dir.parent / "fresh", user="ming"))
    other.store.add("The learner plays the pipa.", category="hobby")
    other.close()
    t = run_repl(fresh, ["forget user ming", "ming"])
    assert "Deleted learner 'ming': 1 memory" in t.text


def test_review_export_prints_the_whole_path_and_an_empty_deck_holds_nothing_private(
    make_app, run_repl, tmp_path, monkeypatch
):
    from memora.teaching.ledger import NewMistake

    monkeypatch.chdir(tmp_path)
    app = make_app()
    t = run_repl(app, ["review export empty.apkg"])  # a bare name: the data folder, as for 'export'
    assert f"Wrote 0 cards to {app.paths.folder / 'empty.apkg'};" in t.text
    assert "Keep it private" not in t.text
    app.ledger.record(NewMistake(original="I goed", corrected="I went", rule="go: went", kind="grammar"))
    t = run_repl(app, ["review export ./deck.apkg"])  # the current folder, said so
    assert f"Wrote 1 card to {tmp_path / 'deck.apkg'};" in t.text
    assert "That file holds your own sentences. Keep it private." in t.text


@pytest.mark.parametrize("value", ["0", "-5", "-0", "+0", "-2000", "00"])
def test_a_memory_cap_that_is_not_positive_is_one_kind_of_error(make_app, run_repl, value):
    app = make_app()
    app.set_memory_cap(50)
    t = run_repl(app, [f"memory cap {value}"])
    error = next(line for line in t.text.splitlines() if "Error:" in line)
    assert "The memory cap must be a positive number" in error and "Usage" not in error
    assert "the cap was not changed" in error and app.store.memory_cap == 50


@pytest.mark.parametrize("weekday", range(7))
def test_the_readme_follow_up_comes_once_that_tuesday_has_passed_whatever_day_it_was_said(
    make_app, server, clock, run_repl, weekday
):
    """The README's session: "I have an English test next Tuesday" is followed up once
    that Tuesday has passed, never before and never twice, on whichever weekday it was said."""
    from datetime import timedelta

    from helpers.scripts import extraction, fact

    clock.advance(days=(weekday - clock().weekday()) % 7)
    assert clock().weekday() == weekday
    server.script(
        "extraction",
        extraction(fact("The learner has an English test next Tuesday.", "schedule", event_phrase="next Tuesday")),
    )
    app = make_app()
    run_repl(app, ["I have an English test next Tuesday, can we practise listening?"])
    [plan] = app.store.list(category="schedule")
    assert plan.event_date.weekday() == 1 and plan.event_date > clock().date()
    clock.now = clock.now.replace(hour=10) + timedelta(days=(plan.event_date - clock().date()).days)  # that Tuesday
    run_repl(app, ["Let's practise some vocabulary."])
    assert server.chats[-1].section("follow_up") is None
    clock.advance(days=1)
    run_repl(app, ["Good morning!", "Can we do a listening exercise?"])
    assert "English test on Tue" in (server.chats[-2].section("follow_up") or "")
    assert server.chats[-1].section("follow_up") is None
