"""The slips a new learner hit in their first week (issue: first contact)."""

from __future__ import annotations

import pytest
from conftest import run_chatbot

from memora.engine.config import Settings, validate_user_name
from memora.engine.errors import ConfigError


def _word_and_mistake(app):
    from memora.engine.ledger import NewMistake

    app.ledger.record(NewMistake(original="I goed", corrected="I went", rule="go: went", kind="grammar"))
    app.ledger.add_word("ubiquitous", "found everywhere")


def test_a_word_card_is_counted_and_listed_as_a_word_not_a_mistake(make_app, run_repl, clock):
    app = make_app()
    _word_and_mistake(app)
    clock.advance(days=1)
    assert app.review_due_line() == "1 mistake and 1 word to review today (type review)"
    t = run_repl(app, ["mistakes"])
    mistakes, _, words = t.text.partition("Your word cards")
    assert "I goed" in mistakes and "ubiquitous" not in mistakes  # not a vocabulary mistake
    assert "ubiquitous" in words and "found everywhere" in words


@pytest.mark.parametrize("only", ["words", "mistakes"])
def test_the_due_line_names_only_what_is_due(make_app, clock, only):
    from memora.engine.ledger import NewMistake

    app = make_app()
    if only == "words":
        app.ledger.add_word("ubiquitous", "found everywhere")
        app.ledger.add_word("serendipity", "a happy accident")
    else:
        app.ledger.record(NewMistake(original="I goed", corrected="I went", rule="go: went", kind="grammar"))
    clock.advance(days=1)
    expected = "2 words to review today (type review)" if only == "words" else "1 mistake to review today (type review)"
    assert app.review_due_line() == expected


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

    from memora.app import data_transfer
    from memora.engine.ledger import MAX_EXAMPLES, MAX_MISTAKES, MAX_REVIEWS_KEPT, Example, Mistake, Review
    from memora.engine.records import MAX_MEMORY_CHARS
    from memora.engine.spaced import new_card
    from user_profile import MAX_PROFILE_VALUE_CHARS

    monkeypatch.setattr(data_transfer, "MAX_IMPORT_MEMORIES", 100)
    monkeypatch.setattr(data_transfer, "MAX_IMPORT_BYTES", 1024 * 1024)
    from memora.engine.config import DEFAULT_MAX_PROFILE_ITEMS

    cap, items, changed = 60, 150, 20
    assert items > DEFAULT_MAX_PROFILE_ITEMS
    user = "李明" if text == "chinese" else "default"
    app = make_app(memory_cap=cap, max_profile_items=items, user=user)
    unit = "學" if text == "chinese" else "w"
    long = lambda n: (f"{n} " + unit * MAX_MEMORY_CHARS)[:MAX_MEMORY_CHARS]  # noqa: E731
    app.store.add_many([{"content": long(n), "category": "hobby"} for n in range(cap)])
    for record in app.store.list()[:changed]:  # with an earlier version (Chroma takes 0.3 s a long Chinese one)
        app.store.supersede(record.id, long(f"v2 {record.content[:6]}"), reason="update")
    for n in range(items):
        app.profiles.add_learning_goal((f"goal {n} " + unit * MAX_PROFILE_VALUE_CHARS)[:MAX_PROFILE_VALUE_CHARS])
        app.profiles.add_preference((f"pref {n} " + unit * MAX_PROFILE_VALUE_CHARS)[:MAX_PROFILE_VALUE_CHARS])
    now = app.now()
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
                card=new_card(now),
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
