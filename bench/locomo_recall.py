"""Evidence recall of Memora's retrieval on LoCoMo conversations.

    python bench/locomo_recall.py --data ../shared/data/locomo

Every turn of every conversation becomes one memory ("<speaker>: <text>",
plus " [shares a photo: <caption>]"), created at its session's date, with its
dia_id in metadata, in a real Chroma store embedded by the local ONNX
all-MiniLM-L6-v2. For each question of categories 1-4, the top k memories are
retrieved through ``retrieve_relevant_memories`` with the threshold disabled,
and evidence recall@k is the share of the question's evidence dia_ids among
them, averaged over questions. Two baselines use the same store: dense-only
(Chroma's own top k) and lexical-only (Memora's BM25 side alone). "Now" is the
end of each conversation.

The two constants tuned on LoCoMo, ``date_boost`` (how far a memory from a
period the query names moves up) and ``feedback_weight`` (how far the query
moves towards its first result before re-ordering), are checked
leave-one-conversation-out: for each conversation, the pair of ``GRID`` with
the best recall@10 on the other four is chosen and scored on it; each fold and
the mean are printed. Each store is built once and every setting is scored on
it. The last line is ``recall@10=<value>`` (the shipped defaults).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from statistics import mean

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from dataclasses import replace  # noqa: E402

from helpers.stores import add_many  # noqa: E402

from long_term_memory import RETRIEVAL_MIN_SCORE, LongTermMemoryStore  # noqa: E402
from memora.model.embeddings import LocalEmbedder, local_model_available  # noqa: E402
from memora.store import lexical  # noqa: E402
from memora.store.retrieval import DEFAULT_PARAMS, retrieve_relevant_memories  # noqa: E402

KS = (5, 10, 20)
GRID = [(boost, feedback) for boost in (0.0, 0.1, 0.25, 0.5, 1.0) for feedback in (0.0, 0.1, 0.25, 0.5)]


def load_conversation(path: Path) -> tuple[list[dict], list[dict]]:
    data = json.loads(path.read_text(encoding="utf-8"))
    conversation = data.get("conversation", data)
    sessions = sorted(
        (int(m.group(1)) for key in conversation if (m := re.fullmatch(r"session_(\d+)", key))),
    )
    turns = []
    for number in sessions:
        when = datetime.strptime(conversation[f"session_{number}_date_time"].strip(), "%I:%M %p on %d %B, %Y")
        for turn in conversation[f"session_{number}"]:
            content = f"{turn['speaker']}: {turn['text']}"
            if turn.get("blip_caption"):
                content += f" [shares a photo: {turn['blip_caption']}]"
            turns.append({"content": content, "created_at": when.astimezone(), "dia_id": turn["dia_id"]})
    questions = [q for q in data.get("qa", []) if q.get("category") in (1, 2, 3, 4)]
    return turns, questions


def recall(evidence: list[str], ranked: list[str], k: int) -> float:
    top = set(ranked[:k])
    return sum(1 for e in evidence if e in top) / len(evidence)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, help="folder of LoCoMo-format JSON files")
    args = parser.parse_args()
    files = sorted(Path(args.data).glob("*.json"))
    if not files:
        print(f"no JSON files in {args.data}", file=sys.stderr)
        return 2
    if not local_model_available():
        print("the local all-MiniLM-L6-v2 model is missing: source ../shared/tools/offline-caches.sh", file=sys.stderr)
        return 2
    embedder = LocalEmbedder()
    scores: dict[str, dict[int, list[float]]] = {m: {k: [] for k in KS} for m in ("memora", "dense", "lexical")}
    by_category: dict[int, list[float]] = {}
    passing = {"evidence": [], "other": []}
    # folds[conversation][(date_boost, feedback_weight)] = recall@10 of each of its questions
    folds: dict[str, dict[tuple[float, float], list[float]]] = {}
    skipped = 0
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        for index, path in enumerate(files):
            turns, questions = load_conversation(path)
            now = max(t["created_at"] for t in turns)
            store = LongTermMemoryStore(
                Path(tmp) / "db", embedding_function=embedder, user_id=f"conv{index}", clock=lambda now=now: now
            )
            add_many(
                store,
                (
                    {
                        "content": t["content"],
                        "created_at": t["created_at"],
                        "memory_type": "episodic",
                        "metadata": {"dia_id": t["dia_id"]},
                    }
                    for t in turns
                ),
            )
            dia_of = {r.id: r.metadata.get("dia_id") for r in store.list()}
            collection = store.vectors._coll()
            fold = folds.setdefault(path.stem, {setting: [] for setting in GRID})
            for question in questions:
                evidence = [e for e in question.get("evidence", []) if e]
                if not evidence:
                    skipped += 1
                    continue
                text = question["question"]
                vector = store.embed([text]).vectors[0]
                results, _ = retrieve_relevant_memories(
                    store, text, n_results=max(KS), min_score=0, now=now, vector=vector
                )
                ranked = [r.metadata.get("dia_id") for r in results]
                for boost, feedback in GRID:
                    variant, _ = retrieve_relevant_memories(
                        store,
                        text,
                        n_results=10,
                        min_score=0,
                        now=now,
                        vector=vector,
                        params=replace(DEFAULT_PARAMS, date_boost=boost, feedback_weight=feedback),
                    )
                    fold[boost, feedback].append(recall(evidence, [r.metadata.get("dia_id") for r in variant], 10))
                dense = collection.query(query_embeddings=[vector], n_results=max(KS), include=["metadatas"])
                dense_ranked = [m.get("dia_id") for m in dense["metadatas"][0]]
                lexical_ranked = [
                    dia_of[i] for i, _ in store.catalog.lexical_search(lexical.query_terms(text), max(KS))
                ]
                for k in KS:
                    scores["memora"][k].append(recall(evidence, ranked, k))
                    scores["dense"][k].append(recall(evidence, dense_ranked, k))
                    scores["lexical"][k].append(recall(evidence, lexical_ranked, k))
                by_category.setdefault(question["category"], []).append(recall(evidence, ranked, 10))
                for result in results[:10]:
                    passing["evidence" if result.metadata.get("dia_id") in evidence else "other"].append(result.score)
    elapsed = time.perf_counter() - started
    questions_total = len(scores["memora"][10])
    print(
        f"LoCoMo evidence recall: {len(files)} conversations, {questions_total} questions "
        f"(categories 1-4; {skipped} without evidence skipped), {elapsed:.0f}s"
    )
    print(f"{'method':<34} {'R@5':>6} {'R@10':>6} {'R@20':>6}")
    labels = {
        "dense": "dense only (Chroma top-k)",
        "lexical": "lexical only (Memora BM25)",
        "memora": "Memora hybrid (retrieve_relevant_memories)",
    }
    for method in ("dense", "lexical", "memora"):
        row = " ".join(f"{mean(scores[method][k]):>6.3f}" for k in KS)
        print(f"{labels[method]:<34} {row}")
    print(
        "Memora R@10 by category: "
        + ", ".join(f"{c}: {mean(v):.3f} (n={len(v)})" for c, v in sorted(by_category.items()))
    )
    evidence_scores, other_scores = passing["evidence"], passing["other"]
    for threshold in sorted({0.2, RETRIEVAL_MIN_SCORE, 0.3, 0.4}):
        ev = sum(s >= threshold for s in evidence_scores) / max(1, len(evidence_scores))
        ot = sum(s >= threshold for s in other_scores) / max(1, len(other_scores))
        print(
            f"threshold {threshold:.2f}: {ev:.0%} of evidence hits in the top 10 pass, "
            f"{ot:.0%} of other top-10 results pass"
        )
    held_out = []
    for name, fold in folds.items():
        train = {g: [v for other, f in folds.items() if other != name for v in f[g]] for g in GRID}
        chosen = max(GRID, key=lambda g: (mean(train[g]), -sum(g)))
        held_out.append(mean(fold[chosen]))
        print(
            f"leave-one-out fold {name}: date_boost {chosen[0]:g}, feedback_weight {chosen[1]:g} "
            "chosen on the other four "
            f"(R@10 {mean(train[chosen]):.3f}), held-out R@10 {held_out[-1]:.3f}"
        )
    print(f"leave-one-conversation-out mean R@10: {mean(held_out):.3f} over {len(held_out)} folds")
    print(f"recall@10={mean(scores['memora'][10]):.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
