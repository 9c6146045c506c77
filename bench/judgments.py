"""Memora's judgments about text, run on conversations nobody here wrote.

    python bench/judgments.py [--data ../shared/data/locomo]

Every judgment Memora makes from words alone is called as the product calls it,
on the LoCoMo conversations in ``--data`` (nothing of them is written anywhere):

* **routing**: every turn's text as a typed line, through ``routing.route`` with
  the shapes of ``COMMANDS`` (the REPL's rule: a leading ``\\`` is chat). Each
  line that would not go to the tutor is printed with the command it would run.
  Each sentence of a turn is routed too, as a learner who types one sentence a
  line would send it.
* **messages not read**: every turn (with its photo's caption, as
  ``tokens_per_turn`` replays it) through ``cues.skips_extraction``, the rule that
  leaves a message unread for memories; each one skipped is printed, and the
  annotators' observations whose evidence it is are counted (each a memory lost).
* **duplicates and conflicts**: each speaker is one learner. Their observations
  (``session_N_observation``), reworded "The learner ..." as extraction words a
  fact, are stored in session order with ``remember``'s call (``store.add``,
  source "command", category "other") in a real store embedded by the local
  MiniLM, so the duplicate rule (``is_near_duplicate``) runs as it runs for every
  new memory; each merge is printed. Then ``find_conflicts`` reads the store's
  current records as ``status`` and the page do; each flagged pair is printed
  with its reason. A memory stored with ``remember`` has no category of its own
  and is compared with every other, the widest reading; the same facts with the
  categories a model would plausibly give them (``tokens_per_turn.fact_item``)
  are counted too.
* **exams**: each event summary (``events_session_N``) is taken as a dated plan
  of its speaker (category "schedule", the event's day), asked what the plan is
  (``recall.plan_kind``: an exam, an interview or neither) and ``recall.next_exam``
  whether it pulls the review forward on that day;
  each exam and interview is printed. ``timeutil.resolve_event_date``
  is asked which events name a day of their own (a plan's date when the model
  gives no phrase).

The last block is ``name=value`` lines, one per count, to copy before and after a change.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from collections import Counter
from datetime import datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tokens_per_turn import fact_item, learner_fact  # noqa: E402

from long_term_memory import LongTermMemoryStore  # noqa: E402
from memora.app.recall import next_exam, plan_kind  # noqa: E402
from memora.cli.commands import COMMANDS  # noqa: E402
from memora.cli.routing import CHAT, route  # noqa: E402
from memora.core.records import MemoryRecord  # noqa: E402
from memora.core.timeutil import resolve_event_date  # noqa: E402
from memora.model.embeddings import LocalEmbedder, local_model_available  # noqa: E402
from memora.reading.cues import skips_extraction  # noqa: E402
from memora.store.pairs import find_conflicts  # noqa: E402

SHAPES = {name: command.shape for command in COMMANDS for name in (command.name, *command.aliases)}
# Sentences of a turn, as a learner typing one a line would send them.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def load(path: Path) -> dict:
    """One conversation, flat: the files here are flat; the original LoCoMo release
    nests the sessions, observations and event summaries under keys of their own."""
    data = json.loads(path.read_text(encoding="utf-8"))
    flat = dict(data)
    for part in ("conversation", "observation", "event_summary"):
        if isinstance(data.get(part), dict):
            flat.update(data[part])
    return flat


def numbered(conversation: dict, pattern: str) -> list[int]:
    """The session numbers N of the keys that fit ``pattern`` ("session_N_observation")."""
    regex = re.compile(pattern.replace("N", r"(\d+)"))
    return sorted(int(m.group(1)) for key in conversation if (m := regex.fullmatch(key)))


def session_time(conversation: dict, number: int) -> datetime:
    return datetime.strptime(conversation[f"session_{number}_date_time"].strip(), "%I:%M %p on %d %B, %Y").astimezone()


# -- routing ---------------------------------------------------------------------------------
def routed(text: str) -> str | None:
    """What the REPL would do with ``text`` typed as a line, when it is not chat."""
    line = text.strip()
    if not line or line.startswith("\\"):
        return None
    where = route(line, SHAPES)
    return None if where.kind == CHAT else f"{where.kind} {where.name}"


def check_routing(name: str, conversation: dict, counts: Counter) -> None:
    for number in numbered(conversation, "session_N"):
        for turn in conversation[f"session_{number}"]:
            text = turn.get("text", "")
            counts["routing_turns"] += 1
            if (taken := routed(text)) is not None:
                counts["routing_turns_not_chat"] += 1
                print(f"route  {name} {turn.get('dia_id', '')}: {taken} <- {text!r}")
            for sentence in _SENTENCE_END.split(text.strip()):
                counts["routing_sentences"] += 1
                if (taken := routed(sentence)) is not None:
                    counts["routing_sentences_not_chat"] += 1
                    print(f"route  {name} {turn.get('dia_id', '')} (a sentence): {taken} <- {sentence!r}")


# -- messages not read ------------------------------------------------------------------------
def check_skips(name: str, conversation: dict, counts: Counter) -> None:
    evidence = Counter(
        dia_id
        for number in numbered(conversation, "session_N_observation")
        for facts in conversation[f"session_{number}_observation"].values()
        for _, where in facts
        for dia_id in ([where] if isinstance(where, str) else where)
    )
    for number in numbered(conversation, "session_N"):
        for turn in conversation[f"session_{number}"]:
            caption = turn.get("blip_caption")
            text = turn.get("text", "") + (f" [shares a photo: {caption}]" if caption else "")
            if skips_extraction(text):
                counts["turns_not_read"] += 1
                counts["observations_from_turns_not_read"] += evidence[turn.get("dia_id", "")]
                print(f"not read  {name} {turn.get('dia_id', '')}: {text!r}")


# -- duplicates and conflicts ----------------------------------------------------------------
def learners(conversation: dict) -> dict[str, list[tuple[str, datetime]]]:
    """Each speaker's observations as the learner's facts, in the order they were made."""
    facts: dict[str, list[tuple[str, datetime]]] = {}
    for number in numbered(conversation, "session_N_observation"):
        started = session_time(conversation, number)
        for speaker, observed in conversation[f"session_{number}_observation"].items():
            for n, observation in enumerate(observed):
                # A second apart, in the order observed: "older" and "newer" are never a tie.
                said_at = started + timedelta(seconds=n)
                facts.setdefault(speaker, []).append((learner_fact(observation[0], speaker), said_at))
    return facts


def check_facts(name: str, conversation: dict, folder: Path, embedder, counts: Counter, per: list) -> None:
    for speaker, facts in learners(conversation).items():
        user = re.sub(r"[^A-Za-z0-9]", "", f"{name}{speaker}") or "learner"
        store = LongTermMemoryStore(folder / "db", embedding_function=embedder, user_id=user)
        vectors = embedder.embed([text for text, _ in facts]).vectors
        merged = 0
        for (text, said_at), vector in zip(facts, vectors):
            added = store.add(text, created_at=said_at, source="command", vector=vector)
            if added.duplicate:
                merged += 1
                print(f"duplicate  {name} {speaker}: {text!r} merged into {added.content!r}")
        records = store.list()
        flags = find_conflicts(records)
        for flag in sorted(flags, key=lambda f: (f.first.created_at, f.second.created_at)):
            print(f"conflict  {name} {speaker}: {flag.reason}")
            print(f"    older: {flag.first.content}")
            print(f"    newer: {flag.second.content}")
        categorised = find_conflicts(
            [r.evolve(category=fact_item(r.content)["category"], source="extracted") for r in records]
        )
        counts["observations"] += len(facts)
        counts["duplicate_flags"] += merged
        counts["conflict_flags"] += len(flags)
        counts["conflict_flags_categorised"] += len(categorised)
        per.append((f"{name}.{speaker}", len(facts), merged, len(flags)))


# -- exams -------------------------------------------------------------------------------------
class _OnePlan:
    """A store holding one plan, for ``next_exam``: it asks a store for its schedule."""

    def __init__(self, record: MemoryRecord):
        self.record = record

    def list(self, category: str | None = None, **_) -> list[MemoryRecord]:
        return [self.record] if category in (None, self.record.category) else []


def check_events(name: str, conversation: dict, counts: Counter) -> None:
    for number in numbered(conversation, "events_session_N"):
        events = conversation[f"events_session_{number}"]
        day = datetime.strptime(events["date"].strip(), "%d %B, %Y").date()
        said_at = datetime(day.year, day.month, day.day, 12).astimezone()
        for speaker, lines in events.items():
            if speaker == "date":
                continue
            for line in filter(str.strip, lines):
                text = learner_fact(line, speaker)
                counts["events"] += 1
                if resolve_event_date(None, None, said_at, sentence=text) is not None:
                    counts["events_naming_a_day"] += 1
                plan = MemoryRecord(id="plan", content=text, created_at=said_at, category="schedule", event_date=day)
                if (kind := plan_kind(plan)) is not None:
                    counts[f"{kind}_events"] += 1
                    pulls = "pulls the review forward" if next_exam(_OnePlan(plan), day) else "pulls nothing forward"
                    print(f"{kind}  {name} {events['date']} ({pulls}): {text}")


# -- the run -----------------------------------------------------------------------------------
def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--data",
        default=str(ROOT.parent / "shared" / "data" / "locomo"),
        help="LoCoMo JSON files (default ../shared/data/locomo)",
    )
    args = parser.parse_args()
    files = sorted(Path(args.data).glob("*.json"))
    if not files:
        print(f"no JSON files in {args.data}", file=sys.stderr)
        return 2
    if not local_model_available():
        print("the local all-MiniLM-L6-v2 model is missing: source ../shared/tools/offline-caches.sh", file=sys.stderr)
        return 2
    embedder = LocalEmbedder()
    started = time.perf_counter()
    counts: Counter = Counter()
    per: list[tuple[str, int, int, int]] = []
    # On tmpfs where there is one, as the tests are: every Chroma write ends in an fsync.
    with tempfile.TemporaryDirectory(dir="/dev/shm" if Path("/dev/shm").is_dir() else None) as tmp:
        for path in files:
            conversation = load(path)
            check_routing(path.name, conversation, counts)
            check_skips(path.name, conversation, counts)
            check_facts(path.name, conversation, Path(tmp), embedder, counts, per)
            check_events(path.name, conversation, counts)
    print(f"\n{len(files)} conversations judged in {time.perf_counter() - started:.0f}s")
    print(f"{'learner':<20} {'facts':>6} {'merged':>7} {'flags':>6}")
    for learner, facts, merged, flags in per:
        print(f"{learner:<20} {facts:>6} {merged:>7} {flags:>6}")
    print()
    print(f"conversations={len(files)}")
    for key in (
        "routing_turns",
        "routing_turns_not_chat",
        "routing_sentences",
        "routing_sentences_not_chat",
        "turns_not_read",
        "observations_from_turns_not_read",
        "observations",
        "duplicate_flags",
        "conflict_flags",
    ):
        print(f"{key}={counts[key]}")
    print(f"conflict_flags_per_100_facts={100 * counts['conflict_flags'] / max(1, counts['observations']):.2f}")
    print(f"conflict_flags_most_for_one_learner={max((flags for *_, flags in per), default=0)}")
    print(f"conflict_flags_categorised={counts['conflict_flags_categorised']}")
    for key in ("events", "events_naming_a_day", "exam_events", "interview_events"):
        print(f"{key}={counts[key]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
