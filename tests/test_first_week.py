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
