"""The REPL, driven through its input and output, in-process and as a real process."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from conftest import ROOT, child_env, run_chatbot
from helpers.fake_openai import Error

from memora.core.config import DEFAULT_SUMMARY_TOKENS


def test_transcript_commands_chat_and_exit(make_app, server, run_repl):
    server.script("chat", "Great! Let's practise **check-in** phrases.")
    app = make_app()
    t = run_repl(
        app,
        [
            "profile level b1",
            "profile goal travel English for my trip to Osaka",
            "profile",
            "Let's start today's practice.",
            "remember I prefer examples about food",
            "exit",
        ],
    )
    assert t.code == 0
    assert t.text.startswith("Memora, your English tutor. Type 'help' for commands, 'exit' to leave.\n")
    assert "You: profile level b1\nProfile updated.\n" in t.text
    assert "English level   B1" in t.text
    assert "travel English for my trip to Osaka" in t.text
    assert "You: Let's start today's practice.\nMemora: Great! Let's practise **check-in** phrases.\n" in t.text
    assert "Remembered (" in t.text
    assert t.text.rstrip().endswith("Goodbye!")
    # commands never reached the model: one chat request, holding only the chat message
    assert len(server.chats) == 1
    sent = json.dumps(server.chats[0].input)
    for command in ("profile level", "profile goal", "remember I prefer", "exit"):
        assert command not in sent
    assert server.chats[0].last_user == "Let's start today's practice."
    assert [m["content"] for m in app.memory.messages if m["role"] == "user"] == ["Let's start today's practice."]


def test_malformed_commands_print_usage_and_bad_levels_list_the_valid_ones(make_app, server, run_repl):
    app = make_app()
    t = run_repl(
        app,
        ["profile level B7", "profile goal", "profile remove hobby x", "forget", "memories --type dream", "history"],
    )
    lines = t.text.splitlines()
    assert "You: profile level B7" in lines
    assert "Error: Unknown level 'B7'. Valid levels: A1, A2, B1, B2, C1, C2." in lines
    assert sum(line.startswith("Error: Usage: profile") for line in lines) == 2
    assert "Error: Usage: forget <id> | forget all | forget user <name>" in lines
    assert "Error: Unknown type 'dream'. Use one of: semantic, episodic." in lines
    assert "Error: Usage: history <id>" in lines
    assert server.requests == []


def test_levels_accept_any_case_and_spaces(make_app, run_repl):
    app = make_app()
    run_repl(app, ["profile level   c1  "])
    assert app.profiles.get().english_level == "C1"


def test_a_failing_model_keeps_the_repl_alive(make_app, server, run_repl):
    server.script("chat", Error(500), "Back again.")
    app = make_app()
    t = run_repl(app, ["first try", "second try"])
    assert "Error: The model request failed with HTTP 500: scripted failure.\n" in t.text
    assert "Memora: Back again.\n" in t.text
    assert [m["content"] for m in app.memory.messages] == ["second try", "Back again."]


def test_ctrl_c_during_a_reply_cancels_it_and_rolls_back(make_app, server, run_repl):
    app = make_app()

    def interrupting(delta):
        raise KeyboardInterrupt

    original = app.chat

    def chat_once_interrupted(text, on_delta):
        if text == "interrupt me":
            return original(text, on_delta=interrupting)
        return original(text, on_delta=on_delta)

    app.chat = chat_once_interrupted
    t = run_repl(app, ["interrupt me", "hello"])
    assert "Note: Reply cancelled; that message was not kept.\n" in t.text
    assert [m["content"] for m in app.memory.messages if m["role"] == "user"] == ["hello"]


def test_ctrl_d_at_the_prompt_exits_cleanly(make_app, run_repl):
    t = run_repl(make_app(), [])
    assert t.code == 0 and t.text.rstrip().endswith("Goodbye!")


HINT = "(To leave, press Ctrl-C again, or Ctrl-D, or type exit.)\n"


# (what the learner does, the commands that ran after it, whether "status" ran at the end)
CTRL_C_AT_THE_PROMPT = {
    "one Ctrl-C: a hint, and the session goes on": ([KeyboardInterrupt], 1, True),
    "two at once: leaves": ([KeyboardInterrupt, KeyboardInterrupt], 1, False),
    "two within the window: leaves": ([KeyboardInterrupt, ("advance", 2.9), KeyboardInterrupt], 1, False),
    "two far apart: two hints": ([KeyboardInterrupt, ("advance", 3.5), KeyboardInterrupt], 2, True),
    "a line typed between: two hints": ([KeyboardInterrupt, "progress", KeyboardInterrupt], 2, True),
    "an empty line between: two hints": ([KeyboardInterrupt, "", KeyboardInterrupt], 2, True),
    "Ctrl-C then Ctrl-D: leaves": ([KeyboardInterrupt, EOFError], 1, False),
    "clock moved back meanwhile: a hint": ([KeyboardInterrupt, ("advance", -60), KeyboardInterrupt], 2, True),
}


@pytest.mark.parametrize("case", CTRL_C_AT_THE_PROMPT, ids=list(CTRL_C_AT_THE_PROMPT))
def test_ctrl_c_at_the_prompt_hints_and_a_second_one_soon_after_leaves(make_app, run_repl, clock, case):
    steps, hints, goes_on = CTRL_C_AT_THE_PROMPT[case]
    lines = [
        (lambda seconds=step[1]: clock.advance(seconds=seconds)) if isinstance(step, tuple) else step for step in steps
    ]
    t = run_repl(make_app(), lines + ["status"])
    assert t.code == 0 and t.text.rstrip().endswith("Goodbye!")
    assert t.text.count(HINT) == hints, t.text
    assert ("token counting" in t.text) is goes_on, t.text
    assert "Traceback" not in t.text


def test_the_ctrl_c_that_cancelled_a_reply_does_not_count_towards_leaving(make_app, server, run_repl):
    app = make_app()

    def interrupting(delta):
        raise KeyboardInterrupt

    original = app.chat
    app.chat = lambda text, on_delta: original(text, on_delta=interrupting)
    t = run_repl(app, ["Tell me a long story", KeyboardInterrupt, "status"])
    assert "Reply cancelled" in t.text
    assert t.text.count(HINT) == 1 and "token counting" in t.text, t.text


def test_backslash_sends_a_command_word_as_chat(make_app, server, run_repl):
    app = make_app()
    run_repl(app, ["\\remember when we practised idioms?"])
    assert server.chats[0].last_user == "remember when we practised idioms?"
    assert app.store.count() == 0


@pytest.mark.slow  # a child process, a kill or hundreds of turns
def test_a_new_process_remembers_the_profile_and_memories(tmp_path):
    home = tmp_path / "home"
    first = run_chatbot(
        ["profile level b1", "remember I am preparing for IELTS", "exit"],
        MEMORA_HOME=home,
        MEMORA_EMBEDDING_MODEL="hash",
    )
    assert first.returncode == 0, first.stderr
    assert "Profile updated." in first.stdout
    assert json.loads((home / "user_profile.json").read_text())["english_level"] == "B1"

    second = run_chatbot(["profile", "memories"], MEMORA_HOME=home, MEMORA_EMBEDDING_MODEL="hash")
    assert second.returncode == 0, second.stderr
    assert "English level   B1" in second.stdout
    assert "I am preparing for IELTS" in second.stdout
    assert "NETWORK-GUARD" not in second.stderr


@pytest.mark.slow  # a child process, a kill or hundreds of turns
def test_a_real_process_chats_with_a_local_responses_server(tmp_path, server):
    server.script("chat", "Hello Ming!")
    home = tmp_path / "home"
    result = run_chatbot(
        ["profile level B2", "profile preference short examples", "Hi, I'm Ming", "exit"],
        MEMORA_HOME=home,
        MEMORA_EMBEDDING_MODEL="hash",
        OPENAI_BASE_URL=server.base_url,
    )
    assert result.returncode == 0, result.stderr
    assert "Memora: Hello Ming!" in result.stdout
    chats = server.chats
    assert len(chats) == 1 and chats[0].conversation_roles == ["user"] and chats[0].background_role == "instructions"
    assert "- English level: B2\n- Preferences: short examples" in chats[0].section("user_profile")
    assert chats[0].section("long_term_memories") is None
    assert "Traceback" not in result.stderr


@pytest.mark.slow  # a child process, a kill or hundreds of turns
def test_invalid_utf8_input_is_replaced_not_fatal(tmp_path):
    result = subprocess.run(
        [sys.executable, str(ROOT / "chatbot.py"), "--plain"],
        input=b"remember I like caf\xe9 \xff bytes\nmemories\nexit\n",
        capture_output=True,
        timeout=120,
        env=child_env(MEMORA_HOME=tmp_path / "home", MEMORA_EMBEDDING_MODEL="hash"),
        cwd=ROOT,
    )
    out = result.stdout.decode()
    assert result.returncode == 0 and "Traceback" not in result.stderr.decode()
    assert "I like caf\ufffd \ufffd bytes" in out


@pytest.mark.slow  # a child process, a kill or hundreds of turns
@pytest.mark.parametrize(
    "env, message",
    [
        ({"MEMORA_TOKEN_BUDGET": "abc"}, "MEMORA_TOKEN_BUDGET must be a number, got 'abc'."),
        (
            {"MEMORA_TOKEN_BUDGET": str(DEFAULT_SUMMARY_TOKENS)},
            f"the summary cap ({DEFAULT_SUMMARY_TOKENS}) must be less than the total budget ({DEFAULT_SUMMARY_TOKENS})",
        ),
        ({"MEMORA_MEMORY_CAP": "-5"}, "memory cap (MEMORA_MEMORY_CAP) must be positive"),
    ],
)
def test_bad_settings_are_one_line_and_exit_2(tmp_path, env, message):
    result = run_chatbot(["exit"], MEMORA_HOME=tmp_path / "home", MEMORA_EMBEDDING_MODEL="hash", **env)
    assert result.returncode == 2
    assert message in result.stderr and "Traceback" not in result.stderr


def test_questions_that_start_with_a_command_word_are_chat(make_app, server, run_repl):
    app = make_app()
    app.store.add("keep me")
    lines = [
        "why is the present perfect so hard?",
        "help me write an email",
        "reset my brain please",
        "status of my exam?",
        "forget it",
        "history is my favourite subject",
        "profile of a good student",
    ]
    t = run_repl(app, lines)
    assert [r.last_user for r in server.chats] == lines
    assert app.store.count() == 1 and len(app.memory.messages) == 2 * len(lines)
    assert "Error" not in t.text


def test_a_slash_always_means_the_command(make_app, server, run_repl):
    app = make_app()
    t = run_repl(app, ["/why is this empty", "/help"])
    assert "No chat request has been made in this session yet." in t.text and "Commands" in t.text
    assert server.chats == []
