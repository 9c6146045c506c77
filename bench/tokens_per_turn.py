"""Model tokens per learner turn: everything Memora spends against sending the full history.

    python bench/tokens_per_turn.py [--data ../shared/data/locomo] [--conversation 43]

One LoCoMo conversation is replayed as a chat: speaker A's turns are the
learner's messages, speaker B's turns are the tutor's replies, served by a
scripted model (a local Responses API server; no real API is called).

The scripted extraction answers as a model would: a message yields the facts
the dataset's own annotators noted about the learner from it (its
"observations", reworded "The learner ..."), most messages none, so the store
grows as it would and each fact goes through the real decision-candidate code
(a reconcile call whenever it has related memories). Every third message also
reports a mistake quoting its own words, so the ledger grows and each request
carries the mistakes_to_watch section.

Every model token is counted with tiktoken: each request's instructions,
messages and structured-output schema (the provider puts the schema in front
of the prompt and bills it as input), plus the output of the calls only Memora
makes (extraction, decisions, summaries; the tutor's replies are the same with
or without Memora, so they are left out of both sides). Embeddings are free
with the local model used here; the line shows what text-embedding-3-small
would be sent (cl100k_base). The baseline is what a full-history chat would
send at the same point (instructions + every previous message + the current
one). Target: everything Memora spends <= 15% of the baseline, and no chat
request over the budget. Beside that raw share, the share a provider's prefix
cache would serve (a prefix of 1,024+ tokens shared with the previous request of
the same kind, as OpenAI's prompt caching needs) and what is left uncached.
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

Turn = tuple[str, str, datetime, list[str]]  # learner message, tutor reply, time, dialogue ids


def load_turns(path: Path) -> tuple[list[Turn], str, str, dict[str, list[str]]]:
    """[(learner message, tutor reply, time, dialogue ids)] with consecutive turns of a speaker
    merged, and the learner's annotated observations by dialogue id."""
    data = json.loads(path.read_text(encoding="utf-8"))
    conversation = data.get("conversation", data)
    a, b = conversation["speaker_a"], conversation["speaker_b"]
    sessions = sorted(int(m.group(1)) for key in conversation if (m := re.fullmatch(r"session_(\d+)", key)))
    pairs: list[list] = []
    for number in sessions:
        when = datetime.strptime(
            conversation[f"session_{number}_date_time"].strip(), "%I:%M %p on %d %B, %Y"
        ).astimezone()
        for turn in conversation[f"session_{number}"]:
            text = turn["text"] + (f" [shares a photo: {turn['blip_caption']}]" if turn.get("blip_caption") else "")
            if turn["speaker"] == a:
                if pairs and not pairs[-1][1] and pairs[-1][2] == when:
                    pairs[-1][0] += " " + text
                    pairs[-1][3].append(turn.get("dia_id", ""))
                else:
                    pairs.append([text, "", when, [turn.get("dia_id", "")]])
            elif pairs:
                pairs[-1][1] = (pairs[-1][1] + " " + text).strip()
    observed: dict[str, list[str]] = {}
    for key, value in data.items():
        if key.endswith("_observation") and isinstance(value, dict):
            for fact, evidence in value.get(a, []):
                for dia_id in [evidence] if isinstance(evidence, str) else evidence:
                    observed.setdefault(dia_id, []).append(learner_fact(fact, a))
                    break  # a fact drawn from several messages is said once, at the first
    return [(u, r or "I see.", t, ids) for u, r, t, ids in pairs], a, b, observed


def learner_fact(observation: str, name: str) -> str:
    """The dataset's note about the speaker as an extracted fact ("The learner ...")."""
    text = re.sub(rf"\b{re.escape(name)}'s\b", "the learner's", observation)
    text = re.sub(rf"\b{re.escape(name)}\b", "the learner", text)
    return text[0].upper() + text[1:]


_CATEGORIES = [
    ("schedule", r"\b(will|plans?|planning|going to|upcoming|next)\b"),
    ("learning", r"\b(stud\w*|school|class|exam\w*|learn\w*|English|German|language)\b"),
    ("preference", r"\b(likes?|loves?|favou?rite|enjoys?|prefers?|fan)\b"),
    ("hobby", r"\b(reads?|reading|writ\w+|plays?|playing|violin|piano|books?|novels?)\b"),
    ("identity", r"\b(family|lives?|works?|job|home)\b"),
]


def fact_item(text: str) -> dict:
    """A fact as the extraction returns it, with a category a model would plausibly give."""
    category = next((name for name, pattern in _CATEGORIES if re.search(pattern, text, re.IGNORECASE)), "other")
    past = re.search(r"\b(went|visited|attended|had|got|did|met|joined|was|were|recently|last)\b", text)
    return {
        "text": text,
        "memory_type": "episodic" if past else "semantic",
        "category": category,
        "event_phrase": None,
        "event_date": None,
    }


def scripted_summary(body: dict) -> str:
    """A running summary of the length a model writes: the previous summary plus a
    sentence about each learner message folded in, cut to the prompt's word limit
    from the oldest end, so a long conversation's summary sits at its limit."""
    limit = int(re.search(r"at most (\d+) words", body.get("instructions", "")).group(1))
    content = (body.get("input") or [{}])[-1].get("content", "")
    previous = content.split("Previous summary:\n", 1)[-1].split("\n\nNew messages:", 1)[0]
    previous = "" if previous.startswith("(none") else previous
    said = [line[len("user: ") :] for line in content.splitlines() if line.startswith("user: ")]
    new = ["The learner said: " + re.split(r"(?<=[.!?])\s", line)[0] for line in said]
    words = " ".join([previous, *new]).split()
    return " ".join(words[-limit:])


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


KINDS = [  # (label, fake-server kinds)
    ("chat", ("chat",)),
    ("summaries", ("summary",)),
    ("extraction", ("extraction",)),
    ("decisions (reconcile, correction lookup)", ("reconcile", "reconcile_many", "correction")),
    ("grading (review)", ("grading",)),
]
# OpenAI serves a request's prefix from its cache once the prompt is 1,024 tokens
# or longer, in steps of 128 tokens (the structured-output schema leads the prefix).
CACHE_MIN, CACHE_STEP = 1024, 128


def schema_text(record) -> str:
    """The structured-output schema a request carries, as text ("" for none)."""
    fmt = (record.body.get("text") or {}).get("format") or {}
    return json.dumps(fmt["schema"], ensure_ascii=False) if fmt.get("schema") else ""


def request_parts(counter, record) -> tuple[int, str]:
    """Input tokens of one recorded request (instructions, messages and any
    structured-output schema, which the provider puts before the instructions),
    and its text in the order the provider reads it."""
    schema = schema_text(record)
    instructions = record.body.get("instructions", "")
    tokens = counter.count_request(instructions, record.input) + counter.count(schema)
    return tokens, schema + instructions + "".join(str(m.get("content", "")) for m in record.input)


def request_anatomy(counter, records) -> str:
    """Mean tokens of a kind's requests by part: schema, instructions, input."""
    if not records:
        return "no calls"
    parts = {"schema": 0, "instructions": 0, "input": 0}
    for record in records:
        parts["schema"] += counter.count(schema_text(record))
        parts["instructions"] += counter.count(record.body.get("instructions", ""))
        parts["input"] += counter.count_messages(record.input)
    return ", ".join(f"{name} {total / len(records):.0f}" for name, total in parts.items())


def cached_tokens(counter, previous: str, text: str, total: int) -> int:
    """What a provider could serve from its prompt cache: the prefix this request
    shares with the previous one of its kind, in the cache's steps."""
    if total < CACHE_MIN:
        return 0
    shared = 0
    for a, b in zip(previous, text, strict=False):  # the shorter one ends the shared prefix
        if a != b:
            break
        shared += 1
    prefix = counter.count(text[:shared])
    return 0 if prefix < CACHE_MIN else CACHE_MIN + (prefix - CACHE_MIN) // CACHE_STEP * CACHE_STEP


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "locomo"))
    parser.add_argument("--conversation", default="43", help="file stem of the conversation to replay")
    args = parser.parse_args()
    path = Path(args.data) / f"{args.conversation}.json"
    turns, speaker_a, speaker_b, observed = load_turns(path)

    from helpers.fake_openai import default_answer
    from helpers.scripts import ADD, decisions_input

    from memora.app.assistant import Memora
    from memora.core.config import Settings
    from memora.model.embeddings import LocalEmbedder, local_model_available
    from memora.model.prompts import SYSTEM_PROMPT
    from memora.model.tokens import TokenCounter

    if not local_model_available():
        print("the local all-MiniLM-L6-v2 model is missing: source ../shared/tools/offline-caches.sh", file=sys.stderr)
        return 2
    clock = {"now": turns[0][2]}
    index = {message: n for n, (message, _, _, _) in enumerate(turns)}
    read: set[int] = set()
    outputs: dict[str, int] = {}
    with FakeOpenAIServer() as server, tempfile.TemporaryDirectory() as tmp:
        settings = Settings(data_dir=Path(tmp), base_url=server.base_url, api_key="sk-bench", max_retries=0).validated()
        counter = TokenCounter(settings.model)
        # What text-embedding-3-small would be sent (its tokenizer is cl100k_base).
        embed_counter = TokenCounter("text-embedding-3-small")
        embedded = {"tokens": 0}

        def count_embedded(text: str) -> int:
            n = embed_counter.count(text)
            embedded["tokens"] += n
            return n

        def answered(kind: str, answer) -> object:
            text = answer if isinstance(answer, str) else json.dumps(answer, ensure_ascii=False)
            outputs[kind] = outputs.get(kind, 0) + counter.count(text)
            return answer

        def extraction(body):
            text = "".join(str(m.get("content", "")) for m in body["input"])
            found = sorted(n for message, n in index.items() if message in text)
            read.update(found)
            facts = [fact_item(f) for n in found for dia_id in turns[n][3] for f in observed.get(dia_id, [])]
            mistakes = [m for n in found for m in scripted_mistake(turns[n][0], n + 1)]
            return answered(
                "extraction",
                {"facts": facts, "profile_changes": [], "corrections": [], "mistakes": mistakes, "asked_words": []},
            )

        server.script("chat", *[reply for _, reply, _, _ in turns])
        server.script("extraction", *[extraction] * (2 * len(turns)))
        server.script("summary", *[lambda body: answered("summary", scripted_summary(body))] * (2 * len(turns)))

        def shared_decision(body):  # several facts decided together: each one added, as most are
            decisions = [{"fact": letter, **ADD} for letter in decisions_input(body)[0]]
            return answered("reconcile_many", {"decisions": decisions})

        server.script("reconcile_many", *[shared_decision] * (2 * len(turns)))
        for kind in ("reconcile", "correction", "grading"):
            script = [lambda body, k=kind: answered(k, default_answer(k, body, 0))]
            server.script(kind, *script * (20 * len(turns)))
        app = Memora.from_settings(
            settings, clock=lambda: clock["now"], embedder=LocalEmbedder(counter=count_embedded), notify=lambda m: None
        )
        app.profiles.set_english_level("B2")
        app.profiles.add_learning_goal("talk about family and hobbies")
        embedded["tokens"] = 0
        history: list[dict] = []
        baseline: list[int] = []
        parts: dict[str, int] = {}  # the chat request's sections, summed over the turns
        started = time.perf_counter()
        for message, reply, when, _ in turns:
            clock["now"] = when
            result = app.chat(message, on_delta=lambda _: None)
            for name, tokens in result.prepared.sections.items():
                parts[name] = parts.get(name, 0) + tokens
            # What was queued finishes before the next turn (a deterministic replay);
            # held short messages stay held, as between a learner's turns.
            app.worker.wait_idle(30)
            history.append({"role": "user", "content": message})
            baseline.append(counter.count_request(SYSTEM_PROMPT, history))
            history.append({"role": "assistant", "content": reply})
        app.close()  # reads whatever is still waiting, as exit does
        elapsed = time.perf_counter() - started
        spent: dict[str, tuple[int, int, int]] = {}  # label -> (input, output, cacheable)
        for label, kinds in KINDS:
            total_in = cached = 0
            for kind in kinds:
                previous = ""
                for record in server.of_kind(kind):
                    tokens, text = request_parts(counter, record)
                    total_in += tokens
                    cached += cached_tokens(counter, previous, text, tokens)
                    previous = text
            total_out = 0 if label == "chat" else sum(outputs.get(kind, 0) for kind in kinds)
            spent[label] = (total_in, total_out, cached)
        memora = [request_parts(counter, r)[0] for r in server.chats]
        memories = app.store.count()
        mistakes = app.ledger.count()
        section_tokens = [counter.count(s) for r in server.chats if (s := r.section("mistakes_to_watch"))]
        calls = {label: sum(len(server.of_kind(k)) for k in kinds) for label, kinds in KINDS}
        anatomy = {
            kind: request_anatomy(counter, server.of_kind(kind))
            for kind in ("extraction", "reconcile", "reconcile_many")
        }
    budget = settings.token_budget
    n = len(turns)
    mean_memora, mean_base = statistics.mean(memora), statistics.mean(baseline)
    per_turn_base = sum(baseline) / n
    print(
        f"LoCoMo conversation {args.conversation}: {n} turns ({speaker_a} as the learner, {speaker_b} as the tutor), "
        f"{memories} memories and {mistakes} mistakes at the end, {elapsed:.0f}s"
    )
    print(f"{'input tokens per chat request':<32} {'mean':>8} {'max':>8} {'last':>8}")
    print(f"{'full history (baseline)':<32} {mean_base:>8.0f} {max(baseline):>8} {baseline[-1]:>8}")
    print(f"{'Memora (budget ' + str(budget) + ')':<32} {mean_memora:>8.0f} {max(memora):>8} {memora[-1]:>8}")
    print(f"requests over the budget: {sum(t > budget for t in memora)}")
    print("chat request by section, mean tokens: " + ", ".join(f"{k} {v / n:.0f}" for k, v in parts.items() if v))
    if section_tokens:
        print(
            f"mistakes_to_watch section: in {len(section_tokens)} of {len(memora)} requests, "
            f"mean {statistics.mean(section_tokens):.0f} tokens, max {max(section_tokens)} (counted in chat)"
        )
    for kind, line in anatomy.items():
        print(f"{kind} request by part, mean tokens: {line}")
    print(
        f"messages that skipped extraction: {n - len(read)} of {n}; {calls['extraction']} extraction calls "
        f"read {len(read)} messages ({len(read) / max(1, calls['extraction']):.1f} a call)"
    )
    print(
        f"model tokens per learner turn (input + Memora-only output; "
        f"full-history baseline {per_turn_base:.0f} input tokens a turn):"
    )
    grand = cached_total = 0
    for label, _ in KINDS:
        total_in, total_out, cached = spent[label]
        tokens = total_in + total_out
        grand += tokens
        cached_total += cached
        note = " (no review is run in the replay)" if label.startswith("grading") and not calls[label] else ""
        print(
            f"  {label:<42} {tokens / n:>7.0f} = {tokens / sum(baseline):>6.2%} of {per_turn_base:.0f}"
            f"  ({calls[label]} calls, {total_out / n:.0f} output){note}"
        )
    grand += embedded["tokens"]
    print(
        f"  {'embeddings (text-embedding-3-small, tiktoken)':<42} {embedded['tokens'] / n:>7.0f} = "
        f"{embedded['tokens'] / sum(baseline):>6.2%} of {per_turn_base:.0f}  (free with the local model used here)"
    )
    base = sum(baseline)
    print(
        f"of which a provider could serve from its prompt cache: {cached_total / n:.0f} a turn "
        f"(OpenAI caches prefixes of {CACHE_MIN}+ tokens, in steps of {CACHE_STEP})"
    )
    print(
        f"all model tokens per turn: {grand / base:.2%} of the full-history baseline (raw); "
        f"a prefix cache serves {cached_total / base:.2%} of it, leaving {(grand - cached_total) / base:.2%} uncached"
    )
    fits = max(memora) <= budget
    print(
        "target (all tokens <= 15% of baseline, no chat request over budget): "
        f"raw {'met' if fits and grand <= 0.15 * base else 'NOT met'}, "
        f"uncached {'met' if fits and grand - cached_total <= 0.15 * base else 'NOT met'}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
