"""Latency of Memora's hybrid retrieval against a bare Chroma query, side by side.

    python bench/retrieval_latency.py [--sizes 1000,10000,50000] [--queries 1000]

For each size, one store is filled with synthetic memories (Zipfian words in
tutor-style sentences, ``bench/synthetic.py``) embedded by the deterministic
hash embedding, so the store and the ranking are measured, not a model. The same query vectors then go, interleaved, to
``retrieve_relevant_memories`` (dense + FTS5/BM25 + fusion + recency) and to
a bare ``collection.query(n_results=10)`` on the same collection. p50/p95 of
each and their ratio come from the same run, so machine noise hits both.
Target: Memora's p95 within 1.5x the bare query's at 10k and at 50k memories.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path[:0] = [str(ROOT / "bench"), str(ROOT / "tests")]

from helpers.stores import add_many  # noqa: E402
from synthetic import Vocabulary, memories, queries  # noqa: E402

from long_term_memory import LongTermMemoryStore  # noqa: E402
from memora.model.embeddings import HashEmbedder  # noqa: E402
from memora.store.retrieval import retrieve_relevant_memories  # noqa: E402

TARGET_SIZES = (10000, 50000)
TARGET_RATIO = 1.5


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def measure(size: int, count: int, rng: random.Random) -> dict:
    embedder = HashEmbedder()
    with tempfile.TemporaryDirectory() as tmp:
        store = LongTermMemoryStore(Path(tmp) / "db", embedding_function=embedder)
        started = time.perf_counter()
        vocabulary = Vocabulary()
        add_many(store, ({"content": text, "memory_type": "episodic"} for text in memories(rng, size, vocabulary)))
        build = time.perf_counter() - started
        collection = store.vectors._coll()
        texts = queries(rng, count + 30, vocabulary)
        vectors = embedder.embed(texts).vectors
        memora, bare = [], []
        for index, (text, vector) in enumerate(zip(texts, vectors)):
            order = (0, 1) if index % 2 else (1, 0)  # alternate who goes first
            timings = {}
            for which in order:
                t0 = time.perf_counter()
                if which == 0:
                    retrieve_relevant_memories(store, text, n_results=10, min_score=0, vector=vector)
                else:
                    collection.query(query_embeddings=[vector], n_results=10)
                timings[which] = (time.perf_counter() - t0) * 1000
            if index >= 30:  # warm-up
                memora.append(timings[0])
                bare.append(timings[1])
        store.catalog.close()
    return {
        "size": size,
        "build_s": build,
        "memora_p50": statistics.median(memora),
        "memora_p95": percentile(memora, 0.95),
        "bare_p50": statistics.median(bare),
        "bare_p95": percentile(bare, 0.95),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,50000")
    parser.add_argument("--queries", type=int, default=1000)
    args = parser.parse_args()
    rng = random.Random(42)
    print("retrieve_relevant_memories vs bare Chroma query (n_results=10), hash embedding, times in ms")
    print(
        f"{'memories':>9} {'build s':>8} {'memora p50':>11} {'memora p95':>11} "
        f"{'bare p50':>9} {'bare p95':>9} {'p95 ratio':>10}"
    )
    results = []
    for size in (int(s) for s in args.sizes.split(",")):
        r = measure(size, args.queries, rng)
        results.append(r)
        print(
            f"{r['size']:>9} {r['build_s']:>8.1f} {r['memora_p50']:>11.2f} {r['memora_p95']:>11.2f} "
            f"{r['bare_p50']:>9.2f} {r['bare_p95']:>9.2f} {r['memora_p95'] / r['bare_p95']:>9.2f}x"
        )
    checked = [r for r in results if r["size"] in TARGET_SIZES]
    if checked:
        ratios = ", ".join(f"{r['size'] // 1000}k {r['memora_p95'] / r['bare_p95']:.2f}x" for r in checked)
        ok = all(r["memora_p95"] <= TARGET_RATIO * r["bare_p95"] for r in checked)
        print(f"target (p95 <= {TARGET_RATIO:g}x bare at 10k and 50k): {'met' if ok else 'NOT met'} ({ratios})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
