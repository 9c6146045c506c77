"""Which lines are commands, which are chat, which get a usage line, and which
are typos of a command: the rows of the rules in memora/cli/routing.py.

``chat``: the line reaches the (fake) model as the learner's message.
``command``: it runs, nothing is sent to the model, no usage error.
``usage``: nothing is sent; the command's usage line is printed.
A typo (``TYPOS``): nothing is sent; one line names the command meant.
"""

from __future__ import annotations

import pytest

from memora.cli.routing import typed_id

CHAT, COMMAND, USAGE = "chat", "command", "usage"

LINES = [
    # questions and sentences that start with a command word
    ("Remember when we practised idioms?", CHAT),
    ("remember when we practised idioms", CHAT),
    ("remember that time I got the tense wrong", CHAT),
    ("Remember how to use 'whom'", CHAT),
    ("remember what I told you about my job", CHAT),
    ("remember if I said it right", CHAT),
    ("remember the time we talked about Osaka", CHAT),
    ("remember me", CHAT),
    ("remember is a regular verb, right", CHAT),
    ("search for a better word for happy", CHAT),
    ("Search for synonyms of big", CHAT),
    ("search about phrasal verbs", CHAT),
    ("search is harder to spell than I thought", CHAT),
    ("forget it", CHAT),
    ("forget about it", CHAT),
    ("forget what I said", CHAT),
    ("Forget everything I said about my boss", CHAT),
    ("forget yesterday.", CHAT),
    ("forget 3fa9c2d1?", CHAT),
    ("forget 2023", CHAT),  # a year
    ("forget decade", CHAT),  # hex letters only: a word
    ("help me with my essay", CHAT),
    ("help, I don't get conditionals", CHAT),
    ("help?", CHAT),
    ("history is my favourite subject", CHAT),
    ("history of the English language", CHAT),
    ("History lessons were boring at school, how do I say that better", CHAT),
    ("profile of a good student?", CHAT),
    ("profile picture is a noun phrase", CHAT),
    ("memory is a funny thing", CHAT),
    ("memories of my childhood", CHAT),
    ("memories are important to me", CHAT),
    ("why is the present perfect so hard?", CHAT),
    ("why not", CHAT),
    ("status symbols in English culture", CHAT),
    ("reset means start again", CHAT),
    ("export is a verb and a noun", CHAT),
    ("import of goods, is that correct?", CHAT),
    ("users of English around the world", CHAT),
    ("exit the building — is that formal?", CHAT),
    ("quit smoking is my goal", CHAT),
    ("Can you remember my name?", CHAT),
    ("I want to search for a new job", CHAT),
    ("review my essay please", CHAT),
    ("review is a noun and a verb", CHAT),
    ("mistakes are how we learn", CHAT),
    ("mistakes I make when I speak", CHAT),
    ("progress is slow this month", CHAT),
    ("progress report", CHAT),
    ("progress since May has been slow", CHAT),
    # punctuation and quotes around the words that make a sentence
    ("remember when, in class, we did idioms", CHAT),
    ("remember that!", CHAT),
    ("Remember that, please", CHAT),
    ("remember when\u2026", CHAT),
    ("remember how!", CHAT),
    ("remember \u2018when\u2019 we met", CHAT),
    ('remember "when" we met', CHAT),
    ("remember \u201cwhat\u201d I said", CHAT),
    ("remember (when we met)", CHAT),
    ("search for!", CHAT),
    ("search, for a word that means tired", CHAT),
    ("forget it!", CHAT),
    ('forget "it"', CHAT),
    ("memories, of my childhood", CHAT),
    ("history: is it a hard subject", CHAT),
    # the command word as a noun, the verb second
    ("search engines are useful", CHAT),
    ("search results were bad today", CHAT),
    ("search terms can be tricky", CHAT),
    ("memories fade over time", CHAT),
    ("memories make us who we are", CHAT),
    ("import tariffs are high in my country", CHAT),
    ("import taxes have gone up", CHAT),
    ("export restrictions are strict", CHAT),
    ("export sales were good this year", CHAT),
    ("history repeats itself", CHAT),
    ("history books are heavy", CHAT),
    ("profile pictures are important on LinkedIn", CHAT),
    ("status updates are annoying", CHAT),
    ("users can be rude online", CHAT),
    ("help desks are always busy", CHAT),
    # "remember" + a noun phrase: a request to recall, not a fact to store
    ("remember our trip to Kyoto", CHAT),
    ("remember the good old days", CHAT),
    ("remember the lesson", CHAT),
    ("remember last week's lesson", CHAT),
    ("remember my birthday", CHAT),
    ("remember our first class", CHAT),
    ("remember that song we sang", CHAT),
    ("remember those idioms", CHAT),
    ("remember Anna's party", CHAT),
    # commands
    ("help", COMMAND),
    ("help forget", COMMAND),
    ("/help", COMMAND),
    ("profile", COMMAND),
    ("profile level b2", COMMAND),
    ("profile goal pass IELTS", COMMAND),
    ("remember I have a job interview on Friday", COMMAND),
    ("remember my sister lives in Leeds", COMMAND),
    ("remember that I live in Taipei", COMMAND),
    ("Remember that my exam is on Friday", COMMAND),
    ("remember I'm vegetarian", COMMAND),
    ("remember we moved to Osaka", COMMAND),
    ("remember our teacher is strict", COMMAND),
    ("remember my parents live in Tainan", COMMAND),
    ("remember Anna is my teacher", COMMAND),
    ("remember the exam was moved to Monday", COMMAND),
    ("remember Tom likes jazz", COMMAND),
    ("remember Kept fact: the learner plays the oboe", COMMAND),
    ("remember The learner sings in a choir", COMMAND),
    ("remember the learner's dog is called Mochi", COMMAND),
    ("remember Anna's birthday is in May", COMMAND),
    ("remember 我住在台北", COMMAND),
    ("remember \u201cI\u201d is always capitalised for me", COMMAND),
    ("/remember the lesson", COMMAND),
    ("search job interview", COMMAND),
    ("search Kyoto", COMMAND),
    # a query is free text, a question too
    ("search where is my passport", COMMAND),
    ("search what I said about Kyoto", COMMAND),
    ("search how to say sorry politely", COMMAND),
    ("search when is my exam", COMMAND),
    ("memories Kyoto", COMMAND),
    ("memories job interview", COMMAND),
    ("memories", COMMAND),
    ("memories --all", COMMAND),
    ("memories interview", COMMAND),
    ("memory cap", COMMAND),
    ("status", COMMAND),
    ("why", COMMAND),
    ("users", COMMAND),
    ("/why is this here", COMMAND),
    ("mistakes", COMMAND),
    ("review", COMMAND),
    ("progress", COMMAND),
    ("progress --since 30d", COMMAND),
    ("profile corrections off", COMMAND),
    # malformed commands: the usage line, never the tutor
    ("forget zzzz", USAGE),
    ("forget", USAGE),
    ("forget user", USAGE),
    ("forget 3fa9 5bc2", USAGE),
    ("forget all my memories", CHAT),  # no path, no id: a sentence, said to the tutor
    ("forget all of it", CHAT),
    ("/forget zzzz", USAGE),
    ("history zzzz", USAGE),
    ("history", USAGE),
    ("memory cap abc", USAGE),
    ("memory cap 2 3", USAGE),
    ("memory edit", USAGE),
    ("profile level X9", USAGE),
    ("profile goal", USAGE),
    ("profile remove hobby", USAGE),
    ("remember", USAGE),
    ("search", USAGE),
    ("import", USAGE),
    ("export my whole data please", CHAT),  # no path, no id: a sentence, said to the tutor
    ("/help zzzz", USAGE),
    ("mistakes forget", USAGE),
    ("mistakes forget zzzz", USAGE),
    ("review export", USAGE),
    ("review export my deck please", CHAT),  # no path, no id: a sentence, said to the tutor
    ("progress --since soon", USAGE),
    ("profile corrections sometimes", USAGE),
]


def test_the_table_has_enough_lines_of_every_kind():
    kinds = [kind for _, kind in LINES]
    assert len(LINES) >= 40 and min(kinds.count(k) for k in (CHAT, COMMAND, USAGE)) >= 10


def _segments(transcript: str) -> dict[str, str]:
    """What followed each typed line, up to the next prompt."""
    out: dict[str, str] = {}
    for segment in transcript.split("You: ")[1:]:
        line, _, rest = segment.partition("\n")
        out.setdefault(line, rest)
    return out


def test_each_line_is_chat_a_command_or_its_usage(make_app, server, run_repl):
    app = make_app()
    app.store.add("The learner has a job interview next week.")
    lines = [line for line, _ in LINES]
    t = run_repl(app, lines)
    sent = [request.last_user for request in server.chats]
    segments = _segments(t.text)
    wrong = []
    for line, expected in LINES:
        output = segments[line]
        reached_model = line in sent
        first = output.splitlines()[0] if output else ""
        # the usage line, or for a value outside a fixed set the list of valid ones
        usage = first.startswith("Error: ") and ("Usage: " in first or "Valid levels: " in first)
        actual = CHAT if reached_model else USAGE if usage else COMMAND
        if expected == COMMAND and output.startswith("Error: "):
            actual = f"error: {output.splitlines()[0]}"
        if actual != expected:
            wrong.append(f"{line!r}: expected {expected}, got {actual}")
    assert not wrong, "\n".join(wrong)
    # chat lines went out once each, in order, and only they did
    assert sent == [line for line, kind in LINES if kind == CHAT]


def test_a_mistyped_id_names_itself_and_gives_the_usage(make_app, run_repl):
    app = make_app()
    t = run_repl(app, ["forget zzzz"])
    assert (
        "Error: 'zzzz' is not a memory id (see 'memories'). Usage: forget <id> | forget all | forget user <name>\n"
        in t.text
    )


def test_malformed_commands_work_without_a_model(make_app, server, run_repl):
    """With no model configured, 'forget zzzz' still gets its usage, not 'No model is configured'."""
    app = make_app(base_url=None, api_key=None)
    t = run_repl(app, ["forget zzzz", "memory cap abc"])
    assert "No model" not in t.text.split("You: forget zzzz", 1)[1]
    assert t.text.count("Usage: ") == 2


@pytest.mark.parametrize("name", ["forget", "memory", "profile", "export", "help", "search"])
def test_help_for_one_command_shows_its_usage_and_an_example_literally(make_app, run_repl, name):
    from memora.cli.commands import CommandRouter

    app = make_app()
    t = run_repl(app, [f"help {name}"])
    router = CommandRouter(app, None)
    shown = " ".join(t.text.split())  # a long usage may wrap at a space
    for form in router.forms(name):
        assert form.usage in shown  # brackets and all: "[path]", "[<n>|off]"
    for example in router.commands[name].examples:
        assert f"e.g. {example}" in shown
        assert router.is_command(example), f"the example {example!r} would be chat"


def test_every_command_is_declared_once_with_a_handler_and_examples_that_route_to_it(make_app):
    from memora.cli.commands import COMMANDS, CommandRouter

    router = CommandRouter(make_app(), None)
    names = [command.name for command in COMMANDS]
    handlers = {attr[4:] for attr in dir(router) if attr.startswith("cmd_")}
    assert len(names) == len(set(names)) and set(names) == handlers
    for command in COMMANDS:
        assert command.examples, command.name
        for example in command.examples:
            assert router.route(example).kind == "command" and router.route(example).name == command.name, example


def test_help_lists_every_command_in_its_declared_place(make_app, run_repl):
    """The order of COMMANDS is the order of help, a line a command: a new command shows
    where it is declared, and 'help <command>' lists all its forms."""
    from memora.cli.commands import COMMANDS

    t = run_repl(make_app(), ["help"])
    listing = t.text.split("You: ", 2)[1].splitlines()[1:]  # after the line typed
    firsts = [line.split()[0].rstrip(",") for line in listing if line.strip()]
    names = [command.name for command in COMMANDS]
    assert [w for w in firsts if w in names] == names, listing
    assert "exit, quit  Leave Memora" in t.text


# A first word close to a command's name, followed by what that command takes (or
# nothing), is a typo: a suggestion, and nothing sent. The meant command, or None
# for a line that must still reach the tutor.
TYPOS = [
    ("hepl", "help"),
    ("Hepl", "help"),
    ("/hepl", "help"),
    ("hlep forget", "help"),
    ("memries", "memories"),
    ("memorise --all", "memories"),
    ("exti", "exit"),
    ("exitt", "exit"),
    ("qiut", "quit"),
    ("profil level b2", "profile"),
    ("profiel goal pass IELTS", "profile"),
    ("forgt 3fa9c2d1", "forget"),
    ("forgett all", "forget"),
    ("forgot 3fa9c2d1", "forget"),  # an English word, but only an id follows it
    ("hisory 3fa9 5bc2", "history"),
    ("mistaks", "mistakes"),
    ("mistkaes", "mistakes"),
    ("reveiw", "review"),
    ("revew export deck.apkg", "review"),
    ("histroy 3fa9", "history"),
    ("serach job interview", "search"),
    ("serch Kyoto", "search"),
    ("remeber I have a cat called Tom", "remember"),
    ("memroy cap 200", "memory"),
    ("stauts", "status"),
    ("sttaus", "status"),
    ("wyh", "why"),
    ("undoo", "undo"),
    ("usres", "users"),
    ("reindx", "reindex"),
    ("prgress", "progress"),
    ("progess --since 30d", "progress"),
    ("exprot", "export"),
    ("improt ~/backup.json", "import"),
    # real sentences: a command's word with other words, or a typo without its shape
    ("help me with my essay", None),
    ("hepl me with my essay", None),
    ("hello there", None),
    ("hello", None),
    ("held my breath for a minute", None),
    ("held", None),
    ("memory is weird", None),
    ("I remember her", None),
    ("serach engines are useful", None),
    ("serach for a better word", None),
    ("starch is in potatoes", None),
    ("starch", None),
    ("preview the lesson please", None),
    ("preview", None),
    ("exist", None),
    ("edit my essay please", None),
    ("edit", None),
    ("quiet please", None),
    ("quite", None),
    ("forgot my homework", None),
    ("forgot", None),
    ("forgot all of it", None),
    ("forgot 2 things", None),
    ("forge", None),
    ("expert advice", None),
    ("expert", None),
    ("mistaken identity", None),
    ("mistake", None),
    ("reviews are mixed", None),
    ("statue of liberty", None),
    ("stats", None),
    ("user manual", None),
    ("user", None),
    ("way to go", None),
    ("remembers", None),
    ("memo", None),
    ("profil picture is nice", None),
    ("histroy is my favourite subject", None),
    ("memries of my childhood", None),
    ("forgt it", None),
    ("exti the building", None),
    ("histroy 3fa9?", None),
    ("improt tariffs are high", None),
]


def test_the_typo_table_has_both_kinds_and_the_issue_cases():
    meant = dict(TYPOS)
    for line in ("hepl", "memries", "exti", "profil level b2", "forgt 3fa9c2d1", "mistaks", "reveiw", "histroy 3fa9"):
        assert meant[line]
    assert sum(m is None for m in meant.values()) >= 30 and sum(m is not None for m in meant.values()) >= 25


def test_a_typo_gets_one_suggestion_and_nothing_is_sent(make_app, server, run_repl):
    app = make_app()
    t = run_repl(app, [line for line, _ in TYPOS])
    sent = [request.last_user for request in server.chats]
    segments = _segments(t.text)
    wrong = []
    for line, meant in TYPOS:
        output = segments[line]
        if meant is None and line not in sent:
            wrong.append(f"{line!r}: expected the tutor, got {output.splitlines()[:1]}")
        if meant is not None and (line in sent or output != f"Did you mean `{meant}`?\n"):
            wrong.append(f"{line!r}: expected the suggestion of {meant!r}, got {output!r}")
    assert not wrong, "\n".join(wrong)
    assert sent == [line for line, meant in TYPOS if meant is None]


def test_a_typo_line_costs_no_model_call_and_changes_nothing(make_app, server, run_repl):
    app = make_app()
    app.store.add("The learner has a job interview next week.")
    t = run_repl(app, ["hepl", "forgt 3fa9c2d1", "exti", "remeber I have a cat", "status"])
    assert server.requests == []
    assert [r.content for r in app.store.list()] == ["The learner has a job interview next week."]
    assert t.text.count("Did you mean `") == 4
    assert "Goodbye!" not in t.text.split("You: status")[0]  # "exti" did not leave


@pytest.mark.parametrize(
    "line, stored",
    [
        ("remember that I live in Taipei", "I live in Taipei"),
        ("remember that my sister is a nurse", "my sister is a nurse"),
        ("remember I drink green tea", "I drink green tea"),
        ("/remember the good old days", "the good old days"),
        ("remember 我住在台北", "我住在台北"),
    ],
)
def test_remember_stores_the_statement_and_recall_requests_go_to_the_tutor(make_app, server, run_repl, line, stored):
    app = make_app()
    run_repl(app, [line, "remember the good old days", "remember our trip to Kyoto"])
    assert [r.content for r in app.store.list()] == [stored]
    assert [request.last_user for request in server.chats] == [
        "remember the good old days",
        "remember our trip to Kyoto",
    ]


@pytest.mark.parametrize(
    "typed, name, distance",
    [
        ("hepl", "help", 1),  # two letters swapped: one edit
        ("exti", "exit", 1),
        ("memries", "memories", 1),
        ("mistkaes", "mistakes", 1),
        ("starch", "search", 1),  # one edit, but an English word (see TYPOS)
        ("hello", "help", 2),
        ("profil", "profile", 1),
        ("xyz", "history", 3),  # past the limit: limit + 1
    ],
)
def test_edit_distance_counts_a_swap_as_one_edit(typed, name, distance):
    from memora.cli.routing import edit_distance

    assert edit_distance(typed, name) == distance


@pytest.mark.parametrize(
    ("word", "is_id"),
    [("3fa9", True), ("3fa9c2d1", True), ("204817", True), ("2023", False), ("decade", False), ("zzzz", False)],
)
def test_a_shortened_id_of_six_digits_is_an_id_and_a_year_or_a_word_is_not(word, is_id):
    assert typed_id(word) is is_id
