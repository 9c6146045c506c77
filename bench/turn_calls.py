"""Calls, modules and threads of Memora's own code in one chat turn, and its session writes.

    python bench/turn_calls.py [--turns 3]

Memora runs against the test suite's fake Responses-API server (real openai client,
hash embeddings, the in-memory vector index); after one warm-up turn each measured turn
is ``Memora.chat`` plus the reading of its message, until the worker is idle. Every call
of a function defined in the product (``memora/`` and the root modules) is counted by a
profile hook on every thread, with the module it is in and the thread it ran on; the
session file's replacements are counted at ``os.replace``.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from helpers.fake_openai import FakeOpenAIServer  # noqa: E402
from helpers.scripts import extraction, fact  # noqa: E402

PRODUCT = tuple(str(p) for p in [ROOT / "memora", *ROOT.glob("*.py")])
MESSAGES = ["I play the cello on Sundays.", "I am going to visit my sister in Porto next month.", "I like tea."]


def measure(turns: int) -> list[dict]:
    from memora.app.assistant import Memora
    from memora.core.config import Settings
    from memora.model.embeddings import HashEmbedder
    from memora.store.index import InMemoryVectors

    results = []
    calls: Counter[tuple[str, str]] = Counter()  # (module file, thread name)
    counting = threading.Event()

    def profile(frame, event, arg):
        if event == "call" and counting.is_set() and frame.f_code.co_filename.startswith(PRODUCT):
            calls[frame.f_code.co_filename, threading.current_thread().name] += 1

    threading.setprofile(profile)  # every thread started from here on (the worker, the server's)
    sys.setprofile(profile)
    with FakeOpenAIServer() as server, tempfile.TemporaryDirectory() as tmp:
        settings = Settings(data_dir=Path(tmp), base_url=server.base_url, api_key="sk-bench", max_retries=0).validated()
        vectors = InMemoryVectors()
        app = Memora.from_settings(settings, embedder=HashEmbedder(), notify=lambda m: None, vectors=lambda u: vectors)
        session_writes: list[str] = []
        replace = os.replace

        def counted_replace(source, target, *args, **kwargs):
            if Path(target) == app.paths.session:
                session_writes.append(threading.current_thread().name)
            return replace(source, target, *args, **kwargs)

        os.replace = counted_replace
        try:
            for index in range(turns + 1):
                text = MESSAGES[index % len(MESSAGES)]
                server.script("chat", "Lovely! Tell me more.")
                server.script("extraction", extraction(fact(f"The learner said: {text}", "habit")))
                calls.clear()
                session_writes.clear()
                counting.set()
                app.chat(text, on_delta=lambda _: None)
                assert app.wait_for_extraction(30)
                counting.clear()
                if index:  # the first turn warms up (the server's kind, the context window)
                    results.append(
                        {
                            "calls": sum(calls.values()),
                            "modules": len({module for module, _ in calls}),
                            "threads": sorted({thread for _, thread in calls}),
                            "session_writes": len(session_writes),
                            "writers": ",".join(session_writes),
                        }
                    )
        finally:
            os.replace = replace
            sys.setprofile(None)
            threading.setprofile(None)
            app.close()
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=3)
    args = parser.parse_args()
    for n, row in enumerate(measure(args.turns), 1):
        print(
            f"turn {n}: {row['calls']} calls in {row['modules']} modules on {len(row['threads'])} threads "
            f"({', '.join(row['threads'])}); "
            f"session file written {row['session_writes']} time(s) ({row['writers']})"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
