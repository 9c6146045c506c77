"""Memora: a terminal English tutor that remembers you.

    python chatbot.py [--model M] [--data-dir DIR] [--user NAME] [--new] [--chroma-url URL] [--plain]

The REPL reads a line, routes commands (``commands.py``) before chat, and
sends everything else through ``Memora.chat`` (``assistant.py``). It never
dies with a traceback: every error a user can cause is one line, and the loop
goes on. Ctrl-D, Ctrl-C at the prompt, ``exit`` and ``quit`` leave cleanly;
Ctrl-C during a reply cancels that reply and rolls the turn back.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import threading
from typing import Sequence

from config import Settings
from errors import ConfigError, MemoraError, StoreError
from terminal import Console, PlainConsole

WELCOME = "Memora, your English tutor. Type 'help' for commands, 'exit' to leave."


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python chatbot.py",
        description="Memora: a terminal English tutor with a profile and long-term memory.",
        epilog="Environment: OPENAI_API_KEY, OPENAI_BASE_URL, MEMORA_MODEL, MEMORA_EMBEDDING_MODEL, "
        "MEMORA_HOME, MEMORA_USER, CHROMA_HOST/CHROMA_PORT/CHROMA_SSL and the MEMORA_* limits (see README).",
    )
    parser.add_argument("--model", help="model name for chat, extraction and summaries (MEMORA_MODEL)")
    parser.add_argument("--data-dir", help="folder for all data files (MEMORA_HOME); default: beside chatbot.py")
    parser.add_argument("--user", help="learner name (MEMORA_USER); each learner has separate data")
    parser.add_argument("--new", action="store_true", help="start a fresh conversation (profile and memories stay)")
    parser.add_argument("--chroma-url", help="use a Chroma server, e.g. http://127.0.0.1:8000 (or CHROMA_HOST/PORT/SSL)")
    parser.add_argument("--plain", action="store_true", help="plain line-based input and output (no colours or editing)")
    return parser


def configure_logging() -> None:
    logger = logging.getLogger("memora")
    logger.propagate = False
    if os.environ.get("MEMORA_DEBUG"):
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
        logger.addHandler(handler)
        logger.setLevel(logging.DEBUG)
    else:
        logger.addHandler(logging.NullHandler())


def run(app, console: Console, *, raise_unexpected: bool = False, warm_up: bool = False) -> int:
    """The read-eval loop. ``app`` is a ``Memora``; returns the exit status."""
    from assistant import TurnCancelled
    from commands import CommandRouter, ExitRequested, run_command

    router = CommandRouter(app, console)
    console.say(WELCOME)
    if not app.model.configured:
        console.notice("No model configured yet: commands work; chat needs OPENAI_API_KEY or OPENAI_BASE_URL.")
    if app.memory.messages:
        console.notice(f"Resumed your conversation ({len(app.memory.messages) // 2} earlier turns). Type 'reset' for a fresh one.")
    if app.proposals.first() is not None:
        app.ask_next_proposal()
    warmer = None
    if warm_up:
        warmer = threading.Thread(target=_warm_up, args=(app,), name="memora-warm-up", daemon=True)
        warmer.start()
    while True:
        try:
            line = console.read()
        except (EOFError, KeyboardInterrupt):
            console.say("")
            break
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
                with console.reply_stream() as emit:
                    result = app.chat(text, on_delta=emit)
                for note in result.notes:
                    console.notice(note)
            finally:
                app.after_turn()
        except ExitRequested:
            break
        except TurnCancelled as error:
            console.notice(str(error))
        except MemoraError as error:
            console.error(str(error))
        except KeyboardInterrupt:
            console.notice("Cancelled.")
        except Exception as error:  # the REPL never dies with a traceback
            if raise_unexpected:
                raise
            logging.getLogger("memora").exception("unexpected error")
            console.error(f"Unexpected {type(error).__name__}: {' '.join(str(error).split())[:200]} (nothing was lost; set MEMORA_DEBUG=1 for details)")
    if warmer is not None:
        warmer.join(timeout=60)  # native libraries must not be mid-call at interpreter exit
    return _shutdown(app, console)


def _warm_up(app) -> None:
    """Load what the first turn needs while the learner types (never raises)."""
    try:
        app.counter.count("warm up")
        warm = getattr(app.embedder, "warm_up", None)
        if warm:
            warm()
        app.knowledge.sync()
        if app.model.configured:
            import openai  # noqa: F401
    except Exception:
        logging.getLogger("memora").debug("warm-up failed", exc_info=True)


def _shutdown(app, console: Console) -> int:
    pending = app.worker.pending if app.worker else 0
    if pending:
        console.say(f"Saving memories from the last {pending} message{'s' if pending > 1 else ''}…")
    try:
        finished = app.close(timeout=15)
    except KeyboardInterrupt:
        finished = False
    if not finished:
        console.notice("Memory extraction did not finish; it will resume next time.")
    console.say("Goodbye!")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    configure_logging()
    os.umask(0o077)  # every file Memora (and Chroma) creates is owner-only
    interactive = sys.stdin.isatty() and sys.stdout.isatty() and not args.plain
    try:
        settings = Settings.from_env(
            model=args.model, data_dir=args.data_dir, user=args.user, chroma_url=args.chroma_url
        )
    except ConfigError as error:
        print(f"Error: {error}", file=sys.stderr)
        return 2
    if interactive:
        from terminal import RichConsole

        console: Console = RichConsole(history_path=settings.paths.input_history)
    else:
        console = PlainConsole()
    from assistant import Memora

    try:
        app = Memora(settings, notify=console.notice, new_session=args.new)
    except ConfigError as error:
        print(f"Error: {error}", file=sys.stderr)
        return 2
    except (StoreError, MemoraError) as error:
        print(f"Error: {error}", file=sys.stderr)
        return 1
    return run(app, console, warm_up=True)


if __name__ == "__main__":
    sys.exit(main())
