"""Input tokens per turn: Memora's budgeted context against sending the full history.

    python bench/tokens_per_turn.py [--data ../shared/data/locomo] [--conversation 43]

One LoCoMo conversation is replayed as a chat: speaker A's turns are the
learner's messages, speaker B's turns are the tutor's replies, served by a
scripted model (a local Responses API server; no real API is called). The
scripted extraction stores each message as an episodic memory, so retrieval
and the digest have a growing store to draw on, and every third message
reports a mistake in its own words, so the ledger grows too and each request
carries the ``mistakes_to_watch`` section (its tokens are counted with the
rest, and reported on their own line). Each chat request Memora
sends is counted with tiktoken, as is the request a full-history baseline
would send at the same point (instructions + every previous message + the
current one). Target: Memora's mean <= 15% of the baseline's, and no request
over the budget. Summary and extraction calls are reported beside it.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from helpers.fake_openai import FakeOpenAIServer  # noqa: E402


def load_turns(path: Path) -> tuple[list[tuple[str, str, datetime]], str, str]:
    """[(learner message, tutor reply, time)] with consecutive turns of a speaker merged."""
    data = json.loads(path.read_text(encoding="utf-8"))
    conversation = data.get("conversation", data)
    a, b = conversation["speaker_a"], conversation["speaker_b"]
    sessions = sorted(int(m.group(1)) for key in conversation if (m := re.fullmatch(r"session_(\d+)", key)))
    pairs: list[list] = []
    for number in sessions:
        when = datetime.strptime(conversation[f"session_{number}_date_time"].strip(), "%I:%M %p on %d %B, %Y").astimezone()
        for turn in conversation[f"session_{number}"]:
            text = turn["text"] + (f" [shares a photo: {turn['blip_caption']}]" if turn.get("blip_caption") else "")
            if turn["speaker"] == a:
                if pairs and not pairs[-1][1] and pairs[-1][2] == when:
                    pairs[-1][0] += " " + text
                else:
                    pairs.append([text, "", when])
            elif pairs:
                pairs[-1][1] = (pairs[-1][1] + " " + text).strip()
    return [(u, r or "I see.", t) for u, r, t in pairs], a, b


def scripted_mistake(text: str, n: int) -> list[dict]:
    """Every third message, one mistake quoting its first words (as the learner's
    own words must be): the last of them "misspelt", with a rule of a realistic length."""
    words = text.split()[:8]
    if n % 3 or len(words) < 3:
        return []
    original = " ".join(words)
    corrected = " ".join(words[:-1] + [words[-1] + "s"])
    rule = f"{words[-1]} -> {words[-1]}s: plural after a number or 'many' (pattern {n})"
    return [{"original": original, "corrected": corrected, "rule": rule, "kind": "grammar"}]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "locomo"))
    parser.add_argument("--conversation", default="43", help="file stem of the conversation to replay")
    args = parser.parse_args()
    path = Path(args.data) / f"{args.conversation}.json"
    turns, speaker_a, speaker_b = load_turns(path)

    from memora.app.assistant import Memora
    from memora.engine.config import Settings
    from memora.engine.embeddings import LocalEmbedder, local_model_available
    from memora.engine.prompts import SYSTEM_PROMPT
    from memora.engine.tokens import TokenCounter

    if not local_model_available():
        print("the local all-MiniLM-L6-v2 model is missing: source ../shared/tools/offline-caches.sh", file=sys.stderr)
        return 2
    clock = {"now": turns[0][2]}
    with FakeOpenAIServer() as server, tempfile.TemporaryDirectory() as tmp:
        server.script("chat", *[reply for _, reply, _ in turns])

        said = {"n": 0}

        def remember_message(body):
            text = body["input"][0]["content"]
            said["n"] += 1
            return {"facts": [{"text": text[:900], "memory_type": "episodic", "category": "other", "event_phrase": None, "event_date": None}],
                    "profile_changes": [], "corrections": [], "mistakes": scripted_mistake(text, said["n"])}

        server.script("extraction", *[remember_message] * len(turns))
        settings = Settings(data_dir=Path(tmp), base_url=server.base_url, api_key="sk-bench", max_retries=0).validated()
        app = Memora.from_settings(settings, clock=lambda: clock["now"], embedder=LocalEmbedder(), notify=lambda m: None)
        app.profiles.set_english_level("B2")
        app.profiles.add_learning_goal("talk about family and hobbies")
        counter = TokenCounter(settings.model)
        history: list[dict] = []
        baseline: list[int] = []
        started = time.perf_counter()
        for message, reply, when in turns:
            clock["now"] = when
            app.chat(message, on_delta=lambda _: None)
            app.wait_for_extraction(30)
            history.append({"role": "user", "content": message})
            baseline.append(counter.count_request(SYSTEM_PROMPT, history))
            history.append({"role": "assistant", "content": reply})
        elapsed = time.perf_counter() - started
        memora = [counter.count_request(r.body.get("instructions", ""), r.input) for r in server.chats]
        summaries = server.of_kind("summary")
        summary_in = sum(counter.count_request(r.body.get("instructions", ""), r.input) for r in summaries)
        extraction_in = sum(counter.count_request(r.body.get("instructions", ""), r.input) for r in server.of_kind("extraction"))
        memories = app.store.count()
        mistakes = app.ledger.count()
        sections = [r.section("mistakes_to_watch") for r in server.chats]
        section_tokens = [counter.count(s) for s in sections if s]
        app.close()
    budget = settings.token_budget
    mean_memora, mean_base = statistics.mean(memora), statistics.mean(baseline)
    print(f"LoCoMo conversation {args.conversation}: {len(turns)} turns ({speaker_a} as the learner, {speaker_b} as the tutor), "
          f"{memories} memories and {mistakes} mistakes at the end, {elapsed:.0f}s")
    print(f"{'input tokens per chat request':<32} {'mean':>8} {'max':>8} {'last':>8}")
    print(f"{'full history (baseline)':<32} {mean_base:>8.0f} {max(baseline):>8} {baseline[-1]:>8}")
    print(f"{'Memora (budget ' + str(budget) + ')':<32} {mean_memora:>8.0f} {max(memora):>8} {memora[-1]:>8}")
    print(f"Memora / baseline: mean {mean_memora / mean_base:.1%}, last turn {memora[-1] / baseline[-1]:.1%}")
    print(f"requests over the budget: {sum(t > budget for t in memora)}")
    if section_tokens:
        print(f"mistakes_to_watch section: in {len(section_tokens)} of {len(memora)} requests, "
              f"mean {statistics.mean(section_tokens):.0f} tokens, max {max(section_tokens)} (counted in Memora's figures above)")
    print(f"also spent by Memora: {len(summaries)} summary calls ({summary_in} input tokens), "
          f"extraction {extraction_in} input tokens; chat + summaries mean {(sum(memora) + summary_in) / len(memora):.0f} "
          f"= {(sum(memora) + summary_in) / sum(baseline):.1%} of the baseline")
    ok = mean_memora <= 0.15 * mean_base and max(memora) <= budget
    print(f"target (mean <= 15% of baseline, none over budget): {'met' if ok else 'NOT met'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
