"""The memory page at size: open time and keypress redraw time.

    python bench/page.py [--sizes 1000 10000]

For each size, a learner's store (real Chroma and catalog on disk, the hash
embedder) is filled with that many current memories of every category, made
of varied sentences (so the conflict detector has real work: pairs share
words, some contradict), plus 5% superseded versions. Then the page is
opened as ``page`` opens it: ``MemoryPage`` reads the store, finds the
conflicts and builds every view's rows, and the prompt_toolkit application
draws its first frame into an 80x24 terminal (a VT100 output over a buffer).
"open" is the time from the start to that first frame.

Keypresses go through the application's real input (a pipe) while it runs:
cursor moves, view switches, a filter typed and erased character by
character (each narrows all rows), the learner's-words toggle. The conflicts
are found in a thread started after that frame; the time they are in is
printed beside, and the keypresses start then. A keypress's
redraw time is from writing the key to the end of the frame it causes.
Targets: open < 0.5 s and redraw p95 < 50 ms at 10,000 memories.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import threading
import time
from datetime import timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from helpers.stores import add_many  # noqa: E402

NOUNS = """coffee tea tennis jazz football sushi hiking films podcasts grammar idioms articles piano
guitar chess yoga swimming cooking baking painting novels poetry museums trains cycling running dancing
gardening photography karaoke board-games comics anime opera theatre camping fishing skiing surfing climbing
volunteering knitting pottery astronomy history science economics politics marketing design coding""".split()
VERBS = {
    "identity": ["works on", "writes about", "teaches", "studied", "grew up with"],
    "learning": ["finds it hard to talk about", "is practising vocabulary for", "mixes up words about"],
    "preference": ["wants examples about", "prefers explanations using", "likes reading about"],
    "hobby": ["enjoys", "is learning", "spends weekends on", "joined a club for"],
    "habit": ["does", "reads about", "listens to talks on", "watches videos about"],
    "schedule": ["has a lesson about", "is going to a workshop on", "has a meeting about"],
    "other": ["mentioned", "asked about", "told a story about"],
}
PLACES = """with friends|with colleagues|on weekends|after work|before breakfast|at the office|in Taipei|in Tokyo
|on the train|at home|online|with a tutor|in the evenings|during lunch|with the family|at university
|next Friday|last month|every morning|on holiday""".replace("\n", "").split("|")
PEOPLE = [f"{first} {last}" for first in "Anna Ben Chen Dina Emil Fatima Goro Hana Ivan Jun".split()
          for last in "Lee Wang Smith Sato Khan Garcia Novak Ito Brown Silva".split()]  # fmt: skip


def build_store(folder: Path, size: int):
    from memora.app.assistant import Memora
    from memora.core.config import Settings
    from memora.model.embeddings import HashEmbedder

    settings = Settings(data_dir=folder, memory_cap=size * 2).validated()
    app = Memora.from_settings(settings, embedder=HashEmbedder(), notify=lambda _m: None)
    rng = random.Random(size)
    now = app.clock()
    items = []
    categories = list(VERBS)
    for n in range(size):
        category = categories[n % len(categories)]
        noun = rng.choice(NOUNS)
        who = f" with {rng.choice(PEOPLE)}" if n % 10 == 0 else ""  # one fact in ten names someone
        text = f"The learner {rng.choice(VERBS[category])} {noun} {rng.choice(PLACES)}{who}."
        if n % 100 == 1:  # about 1% contradict the memory before them
            text = f"The learner quit {items[-1]['content'].split(' ', 3)[3]}"
            category = items[-1]["category"]
        items.append(
            {
                "content": text,
                "category": category,
                "memory_type": "episodic" if n % 5 == 0 else "semantic",
                "source": "extracted" if n % 3 else "command",
                "created_at": now - timedelta(hours=n * 3),
            }
        )
    records = add_many(app.store, items)
    for record in records[: size // 20]:  # 5% edited once: the timeline shows both versions
        app.store.edit(record.id, record.content.replace("The learner", "The learner now"))
    app.profiles.set_english_level("B1")
    app.profiles.add_learning_goal("pass IELTS with 7.0")
    return app


def measure(app, keys: list[bytes]) -> tuple[float, list[float]]:
    import io

    from prompt_toolkit.data_structures import Size
    from prompt_toolkit.input import create_pipe_input
    from prompt_toolkit.output.vt100 import Vt100_Output

    from memora.cli.commands import line_runner
    from memora.cli.page import MemoryPage

    with create_pipe_input() as pipe:
        started = time.perf_counter()
        out = Vt100_Output(io.StringIO(), lambda: Size(rows=24, columns=80), term="xterm")
        page = MemoryPage(app, line_runner, input=pipe, output=out)
        application = page.build()
        frames: list[float] = []
        drawn = threading.Event()

        def rendered(_app) -> None:
            frames.append(time.perf_counter())
            drawn.set()

        application.after_render += rendered
        timings: list[float] = []

        found: list[float] = []

        def typist() -> None:
            drawn.wait(30)
            found.append(time.perf_counter())
            for key in keys:
                drawn.clear()
                sent = time.perf_counter()
                pipe.send_bytes(key)
                if drawn.wait(10):
                    timings.append(frames[-1] - sent)
            pipe.send_bytes(b"q")

        thread = threading.Thread(target=typist, daemon=True)
        thread.start()
        application.run()
        thread.join(30)
        return frames[0] - started, found[0] - started if found else float("nan"), timings


def keypresses() -> list[bytes]:
    down, up = b"\x1b[B", b"\x1b[A"
    keys = [down] * 40 + [up] * 10 + [b"\x1b[6~"] * 5  # cursor, page down
    keys += [b"t"] + [down] * 20 + [b"x", b"c", b"p", b"m"]  # every view
    keys += [b"/"] + [bytes([c]) for c in b"tennis club"] + [b"\x7f"] * 11 + [b"\r"]  # filter, as typed
    keys += [b"w", down, b"w"]  # the learner's own words
    return keys


def open_conflicts(app):
    from memora.cli.page import open_conflicts as found

    return found(app)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    args = parser.parse_args()
    for size in args.sizes:
        with tempfile.TemporaryDirectory() as folder:
            app = build_store(Path(folder), size)
            try:
                opened, conflicts, timings = measure(app, keypresses())
                count = len(open_conflicts(app))
            finally:
                app.close(timeout=5)
        timings.sort()
        p95 = timings[int(len(timings) * 0.95) - 1] if timings else float("nan")
        print(
            f"{size} memories: open {opened:.3f} s (conflicts found beside it by {conflicts:.2f} s: {count}); "
            "redraw after a keypress: median "
            f"{statistics.median(timings) * 1000:.1f} ms, p95 {p95 * 1000:.1f} ms, max {timings[-1] * 1000:.1f} ms "
            f"({len(timings)} keys)"
        )


if __name__ == "__main__":
    main()
