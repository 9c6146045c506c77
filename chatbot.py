"""Memora: a terminal English tutor that remembers you.

    python chatbot.py [--model M] [--data-dir DIR] [--user NAME] [--new] [--chroma-url URL] [--plain]

The REPL reads a line, routes commands (``commands.py``) before chat, and
sends everything else through ``Memora.chat`` (``assistant.py``). It never
dies with a traceback: every error a user can cause is one line, and the loop
goes on. Ctrl-D, ``exit`` and ``quit`` leave cleanly; Ctrl-C is a shell's: it
clears a typed line, on an empty line it says how to leave and a second one
soon after leaves, and during a reply it cancels that reply and rolls the turn back.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import logging
import os
import sqlite3
import sys
import threading
from collections.abc import Callable, Sequence
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from memora import __version__
from memora.cli.terminal import Console, PlainConsole
from memora.core.config import Settings
from memora.core.errors import (
    DISK_FULL,
    DISK_READ_ONLY,
    ConfigError,
    MemoraError,
    OutputClosed,
    StoreError,
    disk_problem,
    error_line,
)
from memora.core.text_utils import counted

if TYPE_CHECKING:
    from memora.app.assistant import Memora

WELCOME = "Memora, your English tutor. Type 'help' for commands, 'exit' to leave."
LEAVE_HINT = "(To leave, press Ctrl-C again, or Ctrl-D, or type exit.)"
LEAVE_WINDOW = timedelta(seconds=3)  # how soon the second Ctrl-C must follow the first to leave


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="memora" if Path(sys.argv[0]).name == "memora" else "python chatbot.py",
        description="Memora: a terminal English tutor with a profile and long-term memory.",
        epilog="Environment: OPENAI_API_KEY, OPENAI_BASE_URL, MEMORA_MODEL, MEMORA_EMBEDDING_MODEL, "
        "MEMORA_HOME, MEMORA_USER, CHROMA_HOST/CHROMA_PORT/CHROMA_SSL and the MEMORA_* limits (see README).",
    )
    parser.add_argument("--model", help="model name for chat, extraction and summaries (MEMORA_MODEL)")
    parser.add_argument(
        "--data-dir",
        help="folder for all data (MEMORA_HOME); default: beside chatbot.py, or ~/.local/share/memora",
    )
    parser.add_argument("--user", help="learner name (MEMORA_USER); each learner has separate data")
    parser.add_argument("--new", action="store_true", help="start a fresh conversation (profile and memories stay)")
    parser.add_argument(
        "--chroma-url", help="use a Chroma server, e.g. http://127.0.0.1:8000 (or CHROMA_HOST/PORT/SSL)"
    )
    parser.add_argument(
        "--plain", action="store_true", help="plain line-based input and output (no colours or editing)"
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    return parser


def configure_logging(debug: bool) -> None:
    logger = logging.getLogger("memora")
    logger.propagate = False
    if debug:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
        logger.addHandler(handler)
        logger.setLevel(logging.DEBUG)
    else:
        logger.addHandler(logging.NullHandler())


def run(
    app, console: Console, *, raise_unexpected: bool = False, warm_up: bool = False, startup_notes: Sequence[str] = ()
) -> int:
    """The read-eval loop. ``app`` is a ``Memora``; returns the exit status.

    When the reader of standard output goes away (``| head``) the loop stops
    quietly, still saves what it must, and returns 1, as well-behaved CLIs do."""
    warmer = None
    stop_warming = threading.Event()
    status = 0
    notices = _Notices(app.notify.target)
    app.set_notify(notices)
    try:
        if warm_up:
            warmer = threading.Thread(target=preload, args=(app, stop_warming), name="memora-warm-up", daemon=True)
            console.on_prompt = warmer.start  # not before: beside the start-up, it would hold the prompt back
        _loop(app, console, notices, raise_unexpected=raise_unexpected, startup_notes=startup_notes)
    except OutputClosed:
        status = 1
    try:
        _wait_for_warm_up(warmer, stop_warming, console)
        code = _shutdown(app, console)
    except OutputClosed:
        code = 0
    except MemoraError as error:
        print(f"Error: {with_disk_problem(error)}", file=sys.stderr)
        code = 1
    except Exception as error:  # a disk that filled up during the session
        if is_write_failure(error, app.settings.data_dir):
            print(f"Error: {data_failure(error, app.settings.data_dir, 'save')}", file=sys.stderr)
        elif raise_unexpected:
            raise
        else:
            logging.getLogger("memora").exception("unexpected error at exit")
            print(f"Error: Unexpected {type(error).__name__} while saving at exit: {error}", file=sys.stderr)
        code = 1
    finally:
        app.set_notify(notices.show)  # the loop is over: notices go straight to the console again
    return status or code


def _greet(app: Memora, console: Console, startup_notes: Sequence[str]) -> None:
    from memora.app.turn import review_due_line

    console.say(WELCOME)
    for note in startup_notes:  # after the welcome line, so it reads as part of this session
        console.notice(note)
    if not app.model.configured:
        console.notice("No model configured yet: commands work; chat needs OPENAI_API_KEY or OPENAI_BASE_URL.")
    if app.memory.messages:
        turns = len(app.memory.messages) // 2
        console.notice(f"Resumed your conversation ({counted(turns, 'earlier turn')}). Type 'reset' for a fresh one.")
    due = review_due_line(app.ledger, app.activity, app.clock())
    if due:
        console.notice(due)
    if app.turn.ask_to_rebuild(app.store):
        return  # the last line before the prompt, so "yes" answers it; profile questions follow its answer
    if app.proposals.first() is not None:
        app.turn.ask_next_proposal()


def _loop(
    app: Memora, console: Console, notices: _Notices, *, raise_unexpected: bool, startup_notes: Sequence[str]
) -> None:
    from memora.app.assistant import TurnCancelled
    from memora.cli.commands import CommandRouter, ExitRequested, run_command

    router = CommandRouter(app, console)
    try:
        _greet(app, console, startup_notes)
    except MemoraError as error:
        console.error(with_disk_problem(error))
    except Exception as error:  # e.g. an unreadable proposals file: say so, keep going
        if not is_write_failure(error, app.settings.data_dir):
            raise
        console.error(data_failure(error, app.settings.data_dir))
    interrupted_at = None  # when Ctrl-C last met an empty prompt
    while True:
        for note in app.turn.take_unsaved_notes():  # a message that could not be saved, told at the next prompt
            console.notice(note)
        try:
            line = console.read()
        except EOFError:
            notices.new_line()
            console.say("")
            break
        except KeyboardInterrupt:
            # As in a shell: Ctrl-C on an empty line only says how to leave, and a second
            # one soon after leaves (the terminal console clears a typed line itself and
            # keeps reading). A Ctrl-C that cancelled a reply is not counted: the habitual
            # second press after it must not quit.
            notices.new_line()
            now = app.clock()
            if interrupted_at is not None and timedelta(0) <= now - interrupted_at <= LEAVE_WINDOW:
                console.say("")
                break
            interrupted_at = now
            console.say(LEAVE_HINT)
            continue
        interrupted_at = None
        notices.new_line()
        # Lone surrogates (a terminal with a non-UTF-8 locale) would break JSON and HTTP later.
        line = line.encode("utf-8", "replace").decode("utf-8")
        try:
            text = line.strip()
            if not text:
                continue
            if text.startswith("\\"):
                text = text[1:].strip()
            else:
                if run_command(router, text):
                    continue
            if not text:
                continue
            app.check_message(text)  # fail before the spinner starts
            try:
                with notices.held():
                    with console.reply_stream() as emit:
                        result = app.chat(text, on_delta=emit)
                for note in result.notes:
                    console.notice(note)
                notices.release()
            finally:
                app.turn.after_turn()
        except (ExitRequested, OutputClosed) as stop:
            if isinstance(stop, OutputClosed):
                raise
            break
        except TurnCancelled as error:
            console.notice(str(error))
        except MemoraError as error:
            console.error(with_disk_problem(error))
        except KeyboardInterrupt:
            console.notice("Cancelled.")
        except Exception as error:  # the REPL never dies with a traceback
            if is_write_failure(error, app.settings.data_dir):  # e.g. the disk filled up mid-session
                logging.getLogger("memora").debug("write failed", exc_info=True)
                console.error(data_failure(error, app.settings.data_dir, "save") + " That change was not saved.")
                continue
            if raise_unexpected:
                raise
            # Any other error, an OSError too, is named for what it is: calling it a
            # write problem would send the learner to check a disk that is fine.
            logging.getLogger("memora").exception("unexpected error")
            console.error(unexpected_line(error))
        finally:
            notices.release()  # after the turn's own error line


class _Notices:
    """Where the app's notices go while the REPL runs (``run`` installs it).

    A notice raised while a reply streams (a session that could not be saved, a
    background reading's) waits until the reply's line has ended, so it is never
    printed inside the tutor's words; and a notice already shown since the
    learner last typed is not shown again (a full disk fails the turn's save and
    the reading's save with the same line)."""

    def __init__(self, show: Callable[[str], None]):
        self.show = show
        self._lock = threading.Lock()
        self._shown: set[str] = set()
        self._held: list[str] | None = None
        self._deferred: list[str] = []

    def __call__(self, text: str) -> None:
        with self._lock:
            if self._held is not None:
                self._held.append(text)
                return
            if text in self._shown:
                return
            self._shown.add(text)
        self.show(text)

    @contextlib.contextmanager
    def held(self):
        """Hold notices while a reply streams, until ``release``: what the turn says of
        itself (its error, its cut-off note) comes right under the reply's words, and
        the notices raised meanwhile (an offline token-count warning, say) after it."""
        with self._lock:
            self._held = []
        try:
            yield
        finally:
            with self._lock:
                self._deferred.extend(self._held or [])
                self._held = None

    def release(self) -> None:
        """Show what ``held`` held back."""
        with self._lock:
            waiting, self._deferred = self._deferred, []
        for text in waiting:
            self(text)

    def new_line(self) -> None:
        """The learner typed a line: what comes now is news again."""
        with self._lock:
            self._shown.clear()


def _wait_for_warm_up(warmer: threading.Thread | None, stop: threading.Event, console: Console) -> None:
    """Native libraries must not be mid-call at interpreter exit, so a warm-up
    still loading the embedding model or indexing the knowledge notes is asked
    to stop after its current step and waited for; the learner is told what
    the pause is."""
    stop.set()
    if warmer is not None and warmer.is_alive():  # not alive either if it never started (no prompt was shown)
        try:
            console.say("Finishing start-up first (loading the embedding model and knowledge notes)…")
        finally:
            warmer.join(timeout=60)


def preload(app: Memora, stop: threading.Event) -> None:
    """Load what the first turn needs while the learner types (never raises);
    ``run(warm_up=True)`` runs it in a thread once the prompt is on screen.

    Each step checks ``stop`` first, so leaving right after the start waits for
    at most the step under way."""

    def load_openai() -> None:
        if app.model.configured:
            import openai  # noqa: F401

            app.fit_context()  # ask the server now, not before the first reply

    # The server's kind first: the first reply needs it (which role the background goes in),
    # and a slow server's probe then overlaps the learner's typing, not their wait.
    load_embedder = lambda: getattr(app.embedder, "warm_up", lambda: None)()  # noqa: E731
    steps = (load_openai, lambda: app.counter.count("warm up"), load_embedder, app.knowledge.sync)
    try:
        for step in steps:
            if stop.is_set():
                return
            step()
    except Exception:
        logging.getLogger("memora").debug("warm-up failed", exc_info=True)


def _shutdown(app: Memora, console: Console) -> int:
    pending = app.reader.unsaved()
    if pending:
        console.say(f"Saving memories from your last {counted(pending, 'message') if pending > 1 else 'message'}…")
    try:
        finished = app.close(timeout=15)
    except KeyboardInterrupt:
        finished = False
    if not finished:
        console.notice("Memory extraction did not finish; it will resume next time.")
    if not app.store.erased:
        from memora.app.erasure import erase_notice

        erase_notice(console, app.store)
    console.say("Goodbye!")
    return 0


def reopen_closed_streams() -> None:
    """A standard stream the caller closed (``<&-``, ``>&-``, ``2>&-``) is None in
    Python, and its first use would be a traceback. Each is opened on /dev/null
    instead, on its own descriptor: input reads as empty and output goes nowhere, as
    ``</dev/null`` or ``>/dev/null`` would; and no file Memora opens later (a database,
    the session) can take descriptor 0-2, where a print would land inside it."""
    for fd, name, flags, mode in (
        (0, "stdin", os.O_RDONLY, "r"),
        (1, "stdout", os.O_WRONLY, "w"),
        (2, "stderr", os.O_WRONLY, "w"),
    ):
        if getattr(sys, name) is not None:
            continue
        try:
            null = os.open(os.devnull, flags)
            if null != fd:
                os.dup2(null, fd)
                os.close(null)
            setattr(sys, name, open(fd, mode, encoding="utf-8", errors="replace", closefd=False))
        except OSError:
            pass


def main(argv: Sequence[str] | None = None) -> int:
    reopen_closed_streams()
    args = build_parser().parse_args(argv)
    os.umask(0o077)  # every file Memora (and Chroma) creates is owner-only
    interactive = sys.stdin.isatty() and sys.stdout.isatty() and not args.plain
    try:
        settings = Settings.from_env(
            model=args.model, data_dir=args.data_dir, user=args.user, chroma_url=args.chroma_url
        )
    except ConfigError as error:
        print(f"Error: {error}", file=sys.stderr)
        return 2
    configure_logging(settings.debug)
    if interactive:
        from memora.cli.terminal import RichConsole

        console: Console = RichConsole(history_path=settings.paths.input_history, no_color=settings.no_color)
    else:
        console = PlainConsole()
    from memora.app.assistant import Memora

    early: list[str] = []  # notices raised while opening the stores, shown after the welcome line
    try:
        app = Memora.from_settings(settings, notify=early.append, new_session=args.new)
    except ConfigError as error:
        print(f"Error: {error}", file=sys.stderr)
        return 2
    except (StoreError, MemoraError) as error:
        print(f"Error: {with_disk_problem(error)}", file=sys.stderr)
        return 1
    except Exception as error:  # a full disk, a read-only folder, an unreadable file: one line, never a traceback
        logging.getLogger("memora").debug("start-up failed", exc_info=True)
        print(f"Error: {data_failure(error, settings.data_dir)}", file=sys.stderr)
        return 1
    if not interactive:  # a transcript: the offline token-count warning comes before the first prompt
        app.counter.count("start")
    app.set_notify(console.notice)
    return run(app, console, warm_up=True, startup_notes=early)


def _first_cause(error: BaseException) -> BaseException:
    """The error that started it: a failed rollback after a failed write says
    "no transaction is active", while the reason is the write's "disk I/O error"."""
    seen = {id(error)}
    while True:
        earlier = error.__cause__ or error.__context__
        if earlier is None or id(earlier) in seen or not isinstance(earlier, (OSError, sqlite3.Error)):
            return error
        seen.add(id(earlier))
        error = earlier


def is_write_failure(error: BaseException, data_dir) -> bool:
    """A failure to write (or read) Memora's own data: a full or read-only disk,
    whichever layer says it; a database error; or an OS error on a file in the data
    folder. An OS error anywhere else (a system call, another folder) is not one."""
    if disk_problem(error) is not None:
        return True
    first = _first_cause(error)
    if isinstance(first, sqlite3.Error):
        return True
    if not isinstance(first, OSError):
        return False
    folder = os.path.abspath(data_dir)
    for name in (first.filename, first.filename2):
        if isinstance(name, (str, bytes, os.PathLike)):
            path = os.path.abspath(os.fsdecode(name))
            if path == folder or path.startswith(folder.rstrip(os.sep) + os.sep):
                return True
    return False


def unexpected_line(error: BaseException) -> str:
    """One line naming an error that is not Memora's to explain: its kind and its own
    words (an OSError's errno name and text, and the file it names)."""
    if isinstance(error, OSError) and error.strerror:
        code = errno.errorcode.get(error.errno, "") if error.errno else ""
        where = f": {os.fsdecode(error.filename)}" if isinstance(error.filename, (str, bytes)) else ""
        cause = f"{error.strerror}{f' ({code})' if code else ''}{where}"
    else:
        cause = error_line(error) if str(error).strip() else "no details"
    return f"Unexpected {type(error).__name__}: {cause} (nothing was lost; set MEMORA_DEBUG=1 for details)"


def with_disk_problem(error: MemoraError) -> str:
    """A Memora error's line, saying so when a full or read-only disk is behind it
    and the line does not say it already."""
    line = str(error)
    problem = disk_problem(error)
    if problem is None or problem in line:
        return line
    return f"{line.rstrip().rstrip('.')} ({problem})."


def data_failure(error: BaseException, data_dir, action: str = "open") -> str:
    """One line for an OS or database error while using the data folder, naming
    the error that started it (see ``_first_cause``): "the disk is full" when it
    is, whichever layer said it."""
    problem = disk_problem(error)
    if problem == DISK_FULL:
        return (
            f"Memora cannot {action} its data in {data_dir}: the disk is full. "
            "Free some space on it, or move the data elsewhere (--data-dir / MEMORA_HOME)."
        )
    if problem == DISK_READ_ONLY:
        return (
            f"Memora cannot {action} its data in {data_dir}: the disk is read-only. "
            "Make it writable, or move the data elsewhere (--data-dir / MEMORA_HOME)."
        )
    error = _first_cause(error)
    if isinstance(error, OSError):
        where = f" ({error.filename})" if error.filename else ""
        reason = f"{error.strerror or type(error).__name__}{where}"
    else:
        reason = error_line(error)
    return (
        f"Memora cannot {action} its data in {data_dir}: {reason}. "
        "Check that the disk is not full and the folder is writable (--data-dir / MEMORA_HOME)."
    )


if __name__ == "__main__":
    sys.exit(main())
