"""A second (and third) Memora process for tests/test_reliability.py.

    python concurrent_writer.py goals    DATA_DIR TAG COUNT GO_FILE
    python concurrent_writer.py memories DATA_DIR TAG COUNT GO_FILE
    python concurrent_writer.py probe    DATA_DIR QUERY [QUERY ...]

``goals`` and ``memories`` open their store, print ``ready``, wait until
GO_FILE exists (so two writers start together), then add COUNT learning goals
through ``UserProfileStore`` or COUNT memories through ``LongTermMemoryStore``
(hash embedding, learner ``default``), with the texts of ``goal_text`` and
``memory_text``. ``probe`` opens the store afresh and prints, as JSON,
Chroma's record count and, for each query, the text of its nearest memory by
dense (vector) search. The repository root must be on PYTHONPATH, as
``conftest.child_env`` sets it.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path


def goal_text(tag: str, number: int) -> str:
    return f"goal {tag}-{number}: practise topic {tag}{number}"


def memory_text(tag: str, number: int) -> str:
    # Each text carries its own number, so no two are ever merged as duplicates.
    return f"Writer {tag} noted fact {number}: the learner visited museum {1000 * (ord(tag[0]) - 64) + number}"


def wait_for(go_file: Path) -> None:
    deadline = time.monotonic() + 60
    while not go_file.exists():
        if time.monotonic() > deadline:
            raise SystemExit("the go signal never came")
        time.sleep(0.002)


def open_store(data_dir: Path):
    from long_term_memory import LongTermMemoryStore
    from memora.model.embeddings import HashEmbedder

    return LongTermMemoryStore(data_dir / "memora_db", embedding_function=HashEmbedder(), user_id="default")


def main() -> None:
    mode, data_dir = sys.argv[1], Path(sys.argv[2])
    if mode == "probe":
        store = open_store(data_dir)
        found = {
            query: [store.get(i).content for i, _ in store.dense_candidates(store.embed([query]).vectors[0], 1)]
            for query in sys.argv[3:]
        }
        from stores import chroma_collection  # beside this script

        print(json.dumps({"chroma_count": chroma_collection(store).count(), "nearest": found}))
        return
    tag, count, go_file = sys.argv[3], int(sys.argv[4]), Path(sys.argv[5])
    if mode == "goals":
        from memora.core.config import Settings
        from user_profile import UserProfileStore

        store = UserProfileStore(data_dir / "user_profile.json", max_items=Settings.from_env().max_profile_items)
        print("ready", flush=True)
        wait_for(go_file)
        for number in range(1, count + 1):
            store.add_learning_goal(goal_text(tag, number))
    elif mode == "memories":
        store = open_store(data_dir)
        print("ready", flush=True)
        wait_for(go_file)
        for number in range(1, count + 1):
            store.add(memory_text(tag, number))
    else:
        raise SystemExit(f"unknown mode {mode}")
    print("done", flush=True)


if __name__ == "__main__":
    main()
