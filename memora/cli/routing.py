"""Which typed lines are commands: the routing rules, written once.

Every command declares the shape of its arguments (``Command`` in
``memora/cli/commands.py``), and these rules, in order, decide whether a line is
that command, a chat message for the tutor, or a mistyped command. Each rule has
rows in ``tests/test_command_shapes.py`` (``LINES`` and ``TYPOS``). A command is
never sent to the model and never enters the conversation.

1. ``/name ...`` is always the command (its handler judges the arguments:
   ``/forget zzzz`` gets forget's usage); a line that starts with ``\\`` is always
   chat (``\\remember when we met``).
2. A line that ends with ``?`` or ``!`` is said to the tutor ("forget 3fa9c2d1?"), and so is
   one that ends with a full stop or a comma, but for ``remember``'s statement.
3. The command word alone is the command, or its usage when it needs arguments.
4. A word that makes the line a sentence, right after the command word, makes it
   chat: "history is my favourite subject", "memories of my childhood", "reset
   means start again" (``SENTENCE_WORDS``). Words are compared without the
   punctuation and quotes around them ("remember 'when' we met", "search for!").
5. Otherwise the command's shape decides:

   - *nothing* (``why``, ``status``...): any word after it is chat ("why not").
   - *a choice* of sub-commands (``profile level B1``, ``progress --since 30d``),
     or of command names (``help forget``, or one mistyped: ``help forgte``): the first word
     must be one of them, or the line is chat ("review my essay please", "help me with my essay").
   - *ids* (``forget``, ``history``): ids that can only be typed (``typed_id``: "3fa9",
     not "2023"), one lower-case word that is no English word (a mistyped id: ``forget
     zzzz`` gets the usage), or one of its sub-commands, each of which asks for a
     confirmation ("forget all", "forget user ann"); "Forget Paris" is said.
   - *a path* (``export``, ``import``): a path with a folder or an extension, or quoted
     (``typed``): "export tariffs" is said. A sub-command with side effects (``typed``
     in its ``choice``: ``memory edit``, ``review export``, ``profile clear``) takes
     such an argument or none ("review export figures with me" is said).
   - *free text* (``search``'s query, ``memories``' filter): as a path, and not
     opening with words that talk to the tutor ("search for a better word",
     "memories from my trip", ``TALK_OPENINGS``) or holding a pronoun or an article
     ("search results confuse me"). A query may be a question ("search where is my
     passport"); a filter is a word or two ("memories fade over time" is said).
   - *a statement* (``remember``): anything but a request to recall, which opens
     with a question word or a pronoun that is not the learner ("remember when we
     met", "remember me", "remember Jon, ..."), is a noun phrase with no verb ("remember
     our trip to Kyoto", "remember Paris in spring"), or advice ("remember to
     breathe"); see ``remembered_text``. What the tutor
     hears is still read for memories, and ``/remember ...`` stores any text as written.
6. A command whose arguments are malformed prints its usage; nothing is sent
   (``forget all my memories``, ``memory cap abc``, ``export my whole data please``).
7. A first word that is no command and no English word, but one edit from a
   command's name (two for names longer than five letters), followed by what that
   command takes (or nothing), is a typo: one line "Did you mean `help`?", and
   nothing is sent ("hepl", "profil level b2", "forgt 3fa9c2d1"). "hepl me with my
   essay" does not fit help's shape and still goes to the tutor, and so does an
   English word ("held", "starch is in potatoes"), unless memory ids follow it
   ("forgot 3fa9c2d1").
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from string import ascii_uppercase

from memora.core.text_utils import CJK_RANGES

# -- the shapes a command's arguments can have -----------------------------------------------
NOTHING, CHOICE, NAME, IDS, PATH, TEXT, STATEMENT = "nothing", "choice", "name", "ids", "path", "text", "statement"


@dataclass(frozen=True)
class Shape:
    kind: str
    choices: frozenset[str] = frozenset()  # sub-commands (a choice; ids' "all" and "user")
    max_words: int | None = None  # free text as a filter: at most this many words besides --options
    # Sub-commands with side effects: their first argument (if any) must be one that can only be typed.
    typed: frozenset[str] = frozenset()


def nothing() -> Shape:
    return Shape(NOTHING)


def choice(*words: str, typed: tuple[str, ...] = ()) -> Shape:
    return Shape(CHOICE, frozenset(words), typed=frozenset(typed))


def command_name() -> Shape:
    """One of the command names (``help forget``)."""
    return Shape(NAME)


def ids(*subcommands: str) -> Shape:
    return Shape(IDS, frozenset(subcommands))


def path() -> Shape:
    return Shape(PATH)


def text(max_words: int | None = None) -> Shape:
    return Shape(TEXT, max_words=max_words)


def statement() -> Shape:
    return Shape(STATEMENT)


# -- words: English, not commands ------------------------------------------------------------
# After a command word (or its noun use: "search engines are"), these make the line a sentence.
SENTENCE_WORDS = set(
    "is are was were isn't aren't wasn't be been am can could should would will won't does do did doesn't "
    "don't has have had of about and or but so means mean meaning".split()
)
QUESTION_WORDS = set("when how what if whether why who where which".split())
# Pronouns that are not the learner as the subject: "remember me", "forget it".
OBJECT_PRONOUNS = set("me us you it him them yourself yourselves himself herself themselves".split())
# The learner as the subject: "remember I ..." is always a statement to store.
FIRST_PERSON = set("i i'm i've i'd i'll im ive myself we we're we've we'd we'll".split())
# The learner as the owner: "remember my sister lives in Leeds" is a statement,
# "remember our trip to Kyoto" a noun phrase (a request to recall).
POSSESSIVE = set("my mine our ours".split())
DETERMINERS = set("the a an this these those that your his her their its last every".split())
# Words that stand for a noun phrase: "remember yesterday", "forget everything".
NOUN_WORDS = set("everything anything something nothing yesterday today tomorrow".split())
PREPOSITIONS = set("about for from with to up through into".split())
# Free text that opens with these talks to the tutor: "search for a word", "search the
# web", "memories from my trip", "memories I have".
TALK_OPENINGS = (
    PREPOSITIONS | OBJECT_PRONOUNS | FIRST_PERSON | POSSESSIVE | {"that", "online", "google", "the web", "the internet"}
)
_BASE_VERBS = set(
    "live work like love hate want need teach study play speak go come have get keep own run drive use eat "
    "drink visit know think prefer enjoy start stop finish move stay leave take make call".split()
)
_IRREGULAR_PAST = set(
    "said went got had made took saw met lost won left began became came gave told taught bought felt found kept "
    "knew thought ran wrote spoke drove ate drank sang".split()
)
# A word after the first that makes "remember <noun> ..." a statement about someone else.
STATEMENT_VERBS = SENTENCE_WORDS - set("of about and or but so means mean meaning".split()) | set(
    "must may might shall weren't can't couldn't hasn't haven't didn't "
    "lives works likes loves hates wants needs".split()
)
# Around a word, these never change which word it is: "when," "'when'" "“when”" "that!".
_AROUND_WORDS = (
    "\"'`\u2018\u2019\u201c\u201d\u00ab\u00bb\u300c\u300d.,;:!?()[]{}\u2026\u3002\uff0c\uff01\uff1f-\u2014\u2013"
)
_CJK_START = re.compile(f"[{CJK_RANGES}]")
MEMORY_ID = re.compile(r"[0-9a-f]{4,64}|[0-9A-Za-z_-]*[0-9][0-9A-Za-z_-]*")


def bare_words(rest: str) -> list[str]:
    """The words of ``rest``, lower-cased, without punctuation or quotes around them."""
    words = (w.strip(_AROUND_WORDS) for w in rest.lower().replace("\u2019", "'").split())
    return [w for w in words if w]


def _opens_with(bare: list[str], openings: set[str]) -> bool:
    lowered = " ".join(bare)
    return any(lowered == o or lowered.startswith(o + " ") for o in openings)


def remembered_text(rest: str) -> str | None:
    """What ``remember <rest>`` stores, or None when ``rest`` is not a statement
    but a noun phrase (a request to recall): "that I ..." stores "I ...", the
    learner's own words."""
    words = bare_words(rest)
    if not words:
        return None
    if _CJK_START.match(rest.strip().lstrip(_AROUND_WORDS)):
        return rest.strip()
    if words[0] == "that":
        clause = rest.strip().split(maxsplit=1)[1] if len(words) > 1 else ""
        return (
            clause
            if len(words) > 1 and (words[1] in FIRST_PERSON or words[1] in POSSESSIVE) and remembered_text(clause)
            else None
        )
    if words[0] in FIRST_PERSON:
        return rest.strip()  # "remember I ...", "remember we moved ..."
    # A noun phrase ("the lesson", "our trip", "Paris in spring", "Anna's party") is a
    # statement only as a clause ("Tom likes jazz"); "to ..." and a written sentence of a
    # lower-case word ("Remember kindness matters.") are advice to the listener.
    named = rest.strip()[0] in ascii_uppercase  # "Paris", "Tom" ("Ünïcødé ..." is kept as typed)
    if words[0] in DETERMINERS | POSSESSIVE | NOUN_WORDS or words[0].endswith("'s") or named:
        return rest.strip() if _has_verb(words) else None
    return None if words[0] == "to" or rest.rstrip().endswith((".", "!")) else rest.strip()


def _has_verb(words: list[str]) -> bool:
    """Whether a line that opens like a noun phrase ("the lesson", "our trip to Kyoto",
    "Anna's party") goes on as a clause: "our teacher is strict", "my sister lives in
    Leeds". "We" or "I" right after the noun starts a clause that describes it ("the
    time we were in Osaka"), and a plural noun often ends the phrase ("the good old days"), so the
    last word counts only as a verb of being or having."""
    for index in (2, 3):  # "the time we ...", "the first time I ..."; not "my sister and I ..."
        after = words[index - 1] if index < len(words) else ""
        if after and words[index] in FIRST_PERSON and after not in ("and", "or") and not _verb_like(after):
            return False
    return any(w in STATEMENT_VERBS for w in words[1:]) or any(_verb_like(w) for w in words[2:-1])


def _verb_like(word: str) -> bool:
    """A word that makes "my sister ___ ..." a clause: "lives", "moved", "teach", "said"."""
    return (
        word in _BASE_VERBS
        or word in _IRREGULAR_PAST
        or (word.endswith(("s", "ed")) and not word.endswith(("'s", "ss")))
    )


# -- the rules -------------------------------------------------------------------------------
def typed_id(word: str) -> bool:
    """A memory id as only typed: digits and letters ("3fa9"), eight hex digits, or six
    digits ("204817", a shortened id; "2023" is a year, "decade" a word)."""
    if not MEMORY_ID.fullmatch(word):
        return False
    hexed = all(c in "0123456789abcdef" for c in word)
    return (hexed and (len(word) >= 8 or len(word) >= 6 and word.isdigit())) or (
        any(c.isdigit() for c in word) and any(c.isalpha() for c in word)
    )


_TYPED_PATH = re.compile(r"""(["']).+\1|\S*[/\\~]\S*|[^\s.]\S*\.[A-Za-z0-9]{1,6}""")


def typed(rest: str) -> bool:
    """Arguments that can only be typed: a path with a folder or an extension, a quoted
    path, memory ids. A sentence can be none of them: "export tariffs", "forget Paris"."""
    words = rest.split()
    return bool(_TYPED_PATH.fullmatch(rest.strip()) or (words and all(typed_id(w) for w in words)))


def fits(shape: Shape, rest: str, names: Mapping[str, Shape]) -> bool:
    """Whether ``rest``, what follows the command word, has the shape (rules 2-5)."""
    words, bare, end = rest.split(), bare_words(rest), rest.rstrip()[-1:]
    # After a typed id ("memory edit 3fa9 I moved.") or "I" ("remember I won!"), the text is the learner's own.
    own = (
        len(words) > 2 and words[0].lower() in shape.typed and typed(words[1]) or bool(bare) and bare[0] in FIRST_PERSON
    )
    if not own and (end in "?\uff1f!\uff01" or end in ".\u3002," and shape.kind != STATEMENT) and end:
        return False
    if not words:
        return True
    if not bare or bare[0] in SENTENCE_WORDS:
        return False
    return _FITS[shape.kind](shape, words, bare, rest, names)


def _mistyped(rest: str) -> bool:
    """One lower-case word that is no English word, where an id goes ("forget zzzz"):
    the command's usage, never a write ("forget 2023" deletes nothing)."""
    word = rest.strip()
    return word.isalnum() and word.islower() and not is_english_word(word)


def _fits_nothing(shape, words, bare, rest, names) -> bool:
    return False


def _fits_choice(shape, words, bare, rest, names) -> bool:
    sub = words[0].lower().lstrip("/")
    if sub not in shape.choices:
        return False
    after = rest.split(maxsplit=1)[1] if len(words) > 1 else ""
    if sub in shape.typed:  # "memory edit <id> <text>", "review export <file>", "profile clear"
        first = after.split(maxsplit=1)[0] if after else ""
        return not after or typed(first) or _mistyped(first) and len(words) == 2
    return not (set(bare[1:3]) & SENTENCE_WORDS or _is_noun_use(bare))


def _fits_name(shape, words, bare, rest, names) -> bool:
    # A mistyped name ("help forgte") is help's too: it says which command was meant.
    return len(words) == 1 and (words[0].lower().lstrip("/") in names or _mistyped(words[0].lstrip("/")))


def _fits_ids(shape, words, bare, rest, names) -> bool:
    if bare[0] in shape.choices:  # "forget all", "forget user ann": each asks for a confirmation
        return len(bare) <= (2 if bare[0] == "user" else 1)
    return all(typed_id(w) for w in words) or _mistyped(rest)


def _is_noun_use(bare: list[str]) -> bool:
    """The command word as a noun, its verb second: "search engines are useful",
    "search parties found", "search history says a lot"."""
    if len(bare) < 2:
        return False
    verb = bare[1]
    return (
        verb in SENTENCE_WORDS
        or verb in _IRREGULAR_PAST
        or verb.endswith("ed")
        or (len(bare) > 2 and verb.endswith("s") and not verb.endswith("ss"))
    )


def _fits_path(shape, words, bare, rest, names) -> bool:
    return typed(rest)


def _fits_text(shape, words, bare, rest, names) -> bool:
    if shape.max_words is not None and len([w for w in words if not w.startswith("-")]) > shape.max_words:
        return False
    if bare[0] in QUESTION_WORDS:
        return True  # a query phrased as a question is still a query
    # A query is a few key words: a pronoun or an article in it makes a sentence.
    if set(bare[1:]) & (OBJECT_PRONOUNS | FIRST_PERSON | POSSESSIVE | {"the", "a", "an"}):
        return False
    return not _opens_with(bare, TALK_OPENINGS) and not _is_noun_use(bare)


def _fits_statement(shape, words, bare, rest, names) -> bool:
    if bare[0] in QUESTION_WORDS or bare[0] in OBJECT_PRONOUNS or words[0].endswith(","):
        return False  # "remember when ...", "remember me", "Remember Jon, just do it"
    return remembered_text(rest) is not None


_FITS = {
    NOTHING: _fits_nothing,
    CHOICE: _fits_choice,
    NAME: _fits_name,
    IDS: _fits_ids,
    PATH: _fits_path,
    TEXT: _fits_text,
    STATEMENT: _fits_statement,
}

CHAT, COMMAND, TYPO = "chat", "command", "typo"


@dataclass(frozen=True)
class Route:
    kind: str  # CHAT, COMMAND or TYPO
    name: str = ""  # the command, or for a typo the one meant
    args: str = ""


def route(line: str, shapes: Mapping[str, Shape]) -> Route:
    """Where a typed line goes, by the rules above; ``shapes`` maps each command name
    (aliases too) to its shape."""
    parts = line.strip().split(maxsplit=1)
    if not parts:
        return Route(CHAT)
    word = parts[0].lower()
    name = word.lstrip("/")
    rest = parts[1].strip() if len(parts) > 1 else ""
    slashed = word.startswith("/")
    if name in shapes:
        return Route(COMMAND, name, rest) if slashed or fits(shapes[name], rest, shapes) else Route(CHAT)
    meant = near_command(name, shapes)
    if meant and (slashed or fits(shapes[meant], rest, shapes)):
        # An English word is what the learner meant ("held", "starch"), unless what follows
        # can only be typed: memory ids ("forgot 3fa9c2d1").
        if not is_english_word(name) or (shapes[meant].kind == IDS and _all_typed_ids(rest)):
            return Route(TYPO, meant, rest)
    return Route(CHAT)


def _all_typed_ids(rest: str) -> bool:
    words = rest.split()
    return bool(words) and all(MEMORY_ID.fullmatch(w) and any(c.isdigit() for c in w) for w in words)


def near_command(word: str, names: Mapping[str, Shape]) -> str | None:
    """The command ``word`` is a small edit away from (the nearest; the first declared
    on a tie): one edit for names of up to five letters, two for longer ones. Only
    letters: "3fa9" or "help," is no mistyped command."""
    if len(word) < 2 or not (word.isascii() and word.isalpha()):
        return None
    best, best_distance = None, 3
    for name in names:
        allowed = 1 if len(name) <= 5 else 2
        distance = edit_distance(word, name, limit=allowed)
        if distance <= allowed and distance < best_distance:
            best, best_distance = name, distance
    return best


def edit_distance(a: str, b: str, limit: int = 2) -> int:
    """Damerau-Levenshtein distance (optimal string alignment: an adjacent swap is one
    edit, so "hepl" is one from "help"); anything above ``limit`` is ``limit + 1``."""
    if abs(len(a) - len(b)) > limit:
        return limit + 1
    before, row = None, list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i] + [0] * len(b)
        for j, cb in enumerate(b, 1):
            current[j] = min(row[j] + 1, current[j - 1] + 1, row[j - 1] + (ca != cb))
            if before is not None and i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                current[j] = min(current[j], before[j - 2] + 1)
        before, row = row, current
    return min(row[-1], limit + 1)


def is_english_word(word: str) -> bool:
    """Whether ``word`` is in an English dictionary: a real word ("held", "starch",
    "preview", "exist") is never taken for a mistyped command."""
    return word.lower() in _english()


@functools.cache
def _english():
    # pyspellchecker's English word list (loaded once, only when a word is close to a
    # command name): a word the learner meant is never answered with a suggestion.
    from spellchecker import SpellChecker

    return SpellChecker(language="en", distance=1)
