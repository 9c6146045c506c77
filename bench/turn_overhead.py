"""Time Memora adds to each turn outside the model call.

    python bench/turn_overhead.py [--sizes 1000,10000,50000] [--turns 200]

For each store size, a learner's store is filled with synthetic memories
(bench/synthetic.py: Zipfian words; a mix of categories and types, some plans
for the follow-up hint) embedded by the deterministic hash embedding. Then
``Memora.chat`` runs turn after turn with a scripted model that answers
instantly, so what is timed is exactly Memora's own work on the response path:
embedding the query, hybrid retrieval, knowledge notes, digest and follow-up
hint, building the background, ``prepare_context`` and the atomic session
save. Work queued after the reply (extraction, writing the follow-up mark to
Chroma) runs in the background worker and finishes before the next message,
as it does while a learner types; it is not part of the timed path.
Target: p95 under 100 ms at 10k memories.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "bench"), str(ROOT / "tests")]

from helpers.stores import add_many  # noqa: E402
from synthetic import Vocabulary, memories, queries  # noqa: E402

from memora.core.records import CATEGORIES  # noqa: E402


class InstantModel:
    """Stands in for ModelClient: replies at once, so only Memora's work is timed."""

    configured = True

    def __init__(self, settings):
        self.settings = settings

    def stream_reply(self, *, instructions, messages, on_delta):
        from memora.model.llm import ReplyResult

        on_delta("OK.")
        return ReplyResult(text="Sure, let's practise that together.", total_tokens=100)

    def summarize(self, previous, messages, max_tokens):
        return (previous + " " + " ".join(m["content"][:40] for m in messages))[-max_tokens:], 0

    def parse(self, *, instructions, input_text, text_format, what):
        from memora.reading.jobs import ExtractionResult

        return ExtractionResult(facts=[], profile_changes=[], corrections=[]), 0


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def measure(size: int, turns: int) -> dict:
    from memora.app.assistant import Memora
    from memora.core.config import Settings
    from memora.model.embeddings import HashEmbedder

    rng = random.Random(size)
    vocabulary = Vocabulary()
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(data_dir=Path(tmp), api_key="sk-bench", base_url="http://127.0.0.1:9/v1").validated()
        app = Memora.from_settings(settings, embedder=HashEmbedder(), notify=lambda m: None)
        app.model = app.worker.extractor.model = InstantModel(settings)
        app.memory.summarizer = app.model.summarize
        app.profiles.set_english_level("B1")
        app.profiles.add_learning_goal("travel English")
        now = app.clock()
        started = time.perf_counter()
        add_many(
            app.store,
            (
                {
                    "content": text,
                    "memory_type": "semantic" if i % 3 else "episodic",
                    "category": CATEGORIES[i % len(CATEGORIES)],
                    "created_at": now - timedelta(days=rng.randint(0, 400)),
                }
                for i, text in enumerate(memories(rng, size, vocabulary))
            ),
        )
        build = time.perf_counter() - started
        messages = queries(rng, turns + 10, vocabulary)
        timings = []
        for index, message in enumerate(messages):
            app.wait_for_extraction(30)  # work after the reply settles while the learner types
            t0 = time.perf_counter()
            app.chat(message, on_delta=lambda _: None)
            if index >= 10:  # warm-up
                timings.append((time.perf_counter() - t0) * 1000)
        sections = app.turn.last_prepared.sections
        app.close()
    return {
        "size": size,
        "build": build,
        "p50": statistics.median(timings),
        "p95": percentile(timings, 0.95),
        "sections": sections,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,50000")
    parser.add_argument("--turns", type=int, default=200)
    args = parser.parse_args()
    print("Memora's own time per turn (model answers instantly; hash embedding), ms")
    print(f"{'memories':>9} {'build s':>8} {'p50':>8} {'p95':>8}")
    results = []
    for size in (int(s) for s in args.sizes.split(",")):
        r = measure(size, args.turns)
        results.append(r)
        print(f"{r['size']:>9} {r['build']:>8.1f} {r['p50']:>8.1f} {r['p95']:>8.1f}")
    ten = next((r for r in results if r["size"] == 10000), None)
    if ten:
        print(f"target (p95 < 100 ms at 10k): {'met' if ten['p95'] < 100 else 'NOT met'} (p95 {ten['p95']:.1f} ms)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
