"""Memory extraction, off the response path (docs/memory.md, "Extraction" onwards).

After each reply the learner's messages (never the tutor's reply: what the tutor said
is not a fact about the learner) go to a background worker, which makes one
structured-output call (``jobs.ExtractionResult``) and applies what it found, in the
order ``writes.in_order`` gives: corrections, which supersede the memories they match
(a message that looks like one is read before the reply: ``prepare``); facts, written
as ``writes`` plans them from the decisions this module asks for; profile
changes, applied with a notice or proposed for the learner to confirm; mistakes, uses
of tracked ones and asked words, for the ledger.

Each item is applied on its own (``Extractor._isolated``): one that cannot be is
skipped, logged and counted in ``status``, and the others land. Only a failed *call*
is retried: the reading's retries the whole job, an item's own call (its decision, its
correction lookup, its embedding) keeps that item alone to run again
(``ExtractionOutcome.retry``). Running a job again is harmless.
"""

from __future__ import annotations

import json
import logging
import queue
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime
from functools import partial
from typing import Any

from memora.core.errors import (
    EmbeddingError,
    EmbeddingModelMismatch,
    LimitError,
    MemoraError,
    MemoryFullError,
    ModelCallError,
)
from memora.core.records import STATUS_SUPERSEDED, MemoryRecord
from memora.core.text_utils import clean_text, quoted, shorten
from memora.core.timeutil import now_anchor, resolve_event_date
from memora.model import prompts
from memora.model.tokens import TokenCounter
from memora.reading import jobs, writes
from memora.reading.candidates import day, listing, related_memories, when
from memora.reading.jobs import (
    ExtractionJob,
    ExtractionOutcome,
    ExtractionResult,
    PreparedExtraction,
    Retraction,
    Skipped,
)
from memora.reading.proposals import ProfileProposal, ProposalStore
from memora.reading.writes import CorrectionDecision, Decided, MemoryDecision, MemoryDecisions, NewFact, Write
from memora.store.deletions import DeletedMeanwhile, Fence
from memora.store.index import MemoryIndex
from memora.store.pairs import is_near_duplicate
from memora.teaching import spaced
from memora.teaching.ledger import (
    LedgerStore,
    Mistake,
    clean_mistake_text,
    correction_excerpt,
    fix_words,
    own_use,
)
from user_profile import UserProfileStore, normalize_level

log = logging.getLogger("memora.extraction")

# An outside call's failure inside one item: the item is fine, so it is kept to run again.
RETRYABLE_ERRORS = (ModelCallError, EmbeddingError, EmbeddingModelMismatch)


@dataclass
class _Reading:
    """One reading being applied: its job, what came of it so far, the items whose own
    call failed (kept to run again) and the vectors made (a fact planned again is not
    embedded again)."""

    job: ExtractionJob
    outcome: ExtractionOutcome = field(default_factory=ExtractionOutcome)
    again: dict[str, list] = field(default_factory=lambda: {"facts": [], "corrections": []})
    vectors: dict[str, list[float]] = field(default_factory=dict)


class Extractor:
    """Reads learner messages and applies what they say: the model calls, and the writes
    ``writes`` plans (synchronous)."""

    def __init__(
        self,
        *,
        model,  # llm.ModelClient (or anything with .parse)
        store: MemoryIndex,
        profiles: UserProfileStore,
        proposals: ProposalStore,
        on_tokens: Callable[[int], None] = lambda n: None,
        on_embedding_tokens: Callable[[int], None] = lambda n: None,
        counter: TokenCounter | None = None,
        ledger: LedgerStore,
        watched: Callable[[str], list[Mistake]] = lambda text: [],
    ):
        self.model, self.store, self.deletions, self.ledger = model, store, store.deletions, ledger
        # The tracked mistakes the tutor's background shows for a message: the
        # reading reports what the message did with each of them.
        self.watched = watched
        self.profiles, self.proposals = profiles, proposals
        self.on_tokens = on_tokens  # the model's tokens, counted as "extraction"
        self.on_embedding_tokens = on_embedding_tokens  # counted as "embeddings", on this thread
        self.counter = counter or TokenCounter()
        self.cancelled = False  # set when the learner is deleted: write nothing more

    def _parse(self, instructions: str, payload: str, schema, what: str):
        parsed, tokens = self.model.parse(instructions=instructions, input_text=payload, text_format=schema, what=what)
        self.on_tokens(tokens)
        return parsed

    def _embed(self, text: str) -> list[float]:
        embedded = self.store.embed([text])
        self.on_embedding_tokens(embedded.tokens)
        return embedded.vectors[0]

    def read(self, job: ExtractionJob) -> ExtractionResult:
        """One structured-output call: what the learner's message says (no writes)."""
        profile = self.profiles.get()
        shown = profile.model_dump(include={"english_level", "learning_goals", "preferences"})
        shown_text = json.dumps(shown, ensure_ascii=False, separators=(",", ":"))
        instructions = prompts.EXTRACTION_PROMPT.format(mistake_style=prompts.MISTAKE_STYLE[profile.corrections])
        payload = prompts.EXTRACTION_INPUT.format(now=now_anchor(job.said_at), profile=shown_text, message=job.text)
        tracked = self._tracked(job)
        if tracked:
            payload += prompts.EXTRACTION_TRACKED.format(
                mistakes="\n".join(
                    f'- {m.id}: "{shorten(a, 60)}" → "{shorten(b, 60)}"'
                    for m in tracked
                    if (e := m.latest)
                    for a, b in [correction_excerpt(e.original, e.corrected, context=1)]
                )
            )
        return self._parse(instructions, payload, ExtractionResult, "Memory extraction")

    def _tracked(self, job: ExtractionJob) -> list[Mistake]:
        """The tracked mistakes shown in the background for the message on which a right
        use would count today. The others are not listed: a right use of one would
        change nothing, and making it again is read as any mistake is (``mistakes``),
        which counts as a lapse on its card."""
        today = self.ledger.today(job.said_at)
        return [e for e in self.watched(job.text) if e.latest is not None and self.ledger.passable(e, today)]

    def prepare(self, job: ExtractionJob) -> PreparedExtraction:
        """Read the message and match its corrections to memories, writing nothing.

        Used before the reply when a message looks like a correction, so that the
        reply is built without the wrong memory and can confirm what changed. A
        correction that could not be matched now stays in the result, to be matched
        again after the reply.
        """
        result = self.read(job)
        retractions: list[Retraction] = []
        unmatched: list[jobs.Correction] = []
        for correction in result.corrections:
            try:
                matched = self._match_correction(correction)
            except Exception:
                matched = None
            if matched is None:
                unmatched.append(correction)
            for record in matched or ():
                if all(r.record.id != record.id for r in retractions):
                    retractions.append(Retraction(record, shorten(correction.evidence or job.text, 300)))
        return PreparedExtraction(result.model_copy(update={"corrections": unmatched}), tuple(retractions))

    def retract(self, retractions: tuple[Retraction, ...], outcome: ExtractionOutcome) -> None:
        """Supersede each wrongly remembered memory (no successor), each on its own."""
        for r in retractions:
            self._isolated(outcome, "correction", r.record.content, partial(self._retract, r, outcome))

    def _retract(self, retraction: Retraction, outcome: ExtractionOutcome) -> None:
        record = self.store.get(retraction.record.id)
        if record is None or not record.is_current:
            return  # already retracted (a job run again), or forgotten meanwhile
        self.store.supersede(record.id, None, reason="correction", note=retraction.evidence)
        outcome.retracted.append(record.id)
        # Superseded, not deleted: it stays in 'memories --all' and 'history', so the notice says so.
        outcome.notices.append(
            f"Got it, that is superseded ('memories --all' still lists it): {quoted(record.content, 120)}"
        )

    def _correct(self, correction: jobs.Correction, job: ExtractionJob, outcome: ExtractionOutcome) -> None:
        evidence = shorten(correction.evidence or job.text, 300)
        self.retract(tuple(Retraction(r, evidence) for r in self._match_correction(correction)), outcome)

    def _fence(self, message: ExtractionJob) -> Fence:
        return Fence(self.store.user_id, message.generation, message.job_id)

    def extract(self, job: ExtractionJob) -> ExtractionOutcome:
        """Read the message (unless already read) and apply everything it says, item by item.

        Each write is made under the fence of the message it came from: a deletion
        since that message was said covers it, and it is dropped (``deletions.py``)."""
        reading = _Reading(job)
        if self.deletions.covers(self._fence(job)):
            return reading.outcome  # what it said was deleted after it was said (or taken back): not even read
        result = job.prepared.result if job.prepared is not None else self.read(job)
        reading.outcome.skipped.extend(Skipped(*rejected) for rejected in result._rejected)
        for kind, run in writes.in_order(job, result):
            if kind == "facts" and self._apply_facts(reading, run):
                return reading.outcome
            if kind == "corrections" and self._apply_each(reading, "correction", run, self._correct, keep=True):
                return reading.outcome
        others: list[tuple[str, list, Callable]] = [
            ("profile change", result.profile_changes, self._apply_profile_change),
            ("mistake", result.mistakes, self._apply_mistake),
            ("mistake use", result.mistake_uses, self._apply_use),
            ("word", result.asked_words, self._offer_word),
        ]
        cancelled = any(self._apply_each(reading, kind, items, apply) for kind, items, apply in others)
        if not cancelled and any(reading.again.values()):
            reading.outcome.retry = ExtractionResult(profile_changes=[], **reading.again)
        return reading.outcome

    def _apply_each(self, reading: _Reading, kind: str, items: list, apply: Callable, keep: bool = False) -> bool:
        """Each item on its own, under the fence of the message its words are in (a
        profile change's are in none); ``keep``: one whose own call failed is kept to
        run again. True when the learner was deleted meanwhile."""
        for item in items:
            if self.cancelled:
                return True
            fence = None if item.words is None else self._fence(reading.job)
            again = reading.again["corrections"] if keep else None
            apply_one = lambda i=item: apply(i, reading.job, reading.outcome)  # noqa: E731
            self._isolated(reading.outcome, kind, item.label, apply_one, again=again, item=item, fence=fence)
        return False

    def _isolated(
        self,
        outcome: ExtractionOutcome,
        kind: str,
        label: str,
        apply: Callable[[], object],
        *,
        again: list | None = None,
        item=None,
        fence: Fence | None = None,
    ) -> None:
        """Apply one item (its writes under ``fence``); whatever goes wrong stays with that item."""
        try:
            with self.deletions.fenced(fence):
                apply()
        except DeletedMeanwhile as dropped:  # the learner forgot it since: nothing to say, nothing to retry
            log.info("dropped a %s of a reading: %s", kind, dropped)
            outcome.dropped += 1
        except RETRYABLE_ERRORS as error:
            if again is None:
                outcome.skipped.append(Skipped(kind, shorten(label, 60), shorten(str(error), 120)))
                return
            log.warning("%s kept to retry: %s", kind, error)
            again.append(item)
            outcome.retry_reason = str(error)
        except MemoryFullError as error:
            outcome.full, outcome.full_notice = True, str(error)
            outcome.notices.append(str(error))
            outcome.skipped.append(Skipped(kind, shorten(label, 60), writes.FULL))
        except Exception as error:  # one bad item must never cost the others
            reason = str(error) if isinstance(error, MemoraError) else f"{type(error).__name__}: {error}"
            if not isinstance(error, MemoraError):  # a bug, not bad input: keep the traceback
                log.exception("unexpected error applying a %s", kind)
            outcome.skipped.append(Skipped(kind, shorten(label, 60), shorten(reason, 120)))

    # -- facts: found beside the store, decided, and written as ``writes`` plans them ---------------
    def _apply_facts(self, reading: _Reading, run: list[tuple[str, jobs.ExtractedFact]]) -> bool:
        """A round of a reading's facts, by key: each found beside the store, those that
        need a decision decided in one call (``writes.plan_facts``), then each written at
        its turn. True when the learner was deleted meanwhile."""
        outcome, again = reading.outcome, reading.again["facts"]
        found: list[NewFact] = []
        for key, fact in run:
            if self.cancelled:
                return True
            find = lambda k=key, f=fact: found.append(self._find(reading, k, f))  # noqa: E731
            self._isolated(outcome, "fact", fact.text, find, again=again, item=fact)
        facts, deciding = writes.plan_facts(found, self.store.related_distance)
        decided: dict[str, Decided] = {}
        if deciding and not self.cancelled:
            try:
                decided = self._decide_many(deciding)
            except RETRYABLE_ERRORS as error:  # their own (shared) call failed: all kept to run again
                log.warning("%d facts kept to retry: %s", len(deciding), error)
                again.extend(f.fact for f in deciding)
                outcome.retry_reason = str(error)
                facts = [f for f in facts if f.key not in {d.key for d in deciding}]
            except Exception:  # a bug: each fact gets its own call instead
                log.exception("the shared decision failed; deciding each fact on its own")
        left: dict[str, str] = {}  # fact key -> the memory it left (added, changed or seen again)
        for new in facts:
            if self.cancelled:
                return True
            write = partial(self._write_fact, reading, new, decided.get(new.key), left)
            self._isolated(outcome, "fact", new.text, write, again=again, item=new.fact, fence=self._fence(new.said))
        return False

    def _find(self, reading: _Reading, key: str, fact: jobs.ExtractedFact, replanned: bool = False) -> NewFact:
        """One new fact beside the store, short of its decision: checked (raises for an
        empty or over-long text) and dated; unless a memory says it already or it is old
        news, embedded (once: for its candidates and for storing) beside its related memories."""
        store, job = self.store, reading.job
        text, memory_type, category = store.validate(fact.text, fact.memory_type, fact.category)
        event_date = None
        if fact.category == "schedule":
            event_date = resolve_event_date(fact.event_date, fact.event_phrase, job.said_at, sentence=fact.text)
        new = NewFact(key, fact, text, memory_type, category, event_date, job, replanned=replanned)
        seen = store.find_exact(text)
        changed = store.find_exact(text, status=STATUS_SUPERSEDED) if seen is None else None
        if seen is not None or (changed is not None and writes.said_before(job.said_at, changed.valid_until)):
            return replace(new, seen=seen, changed=changed)
        vector = reading.vectors[text] = reading.vectors.get(text) or self._embed(text)
        candidates = related_memories(store, self.counter, text, vector, category)
        name, nearest_first = store.embedder.name, sorted(candidates, key=lambda c: c.distance)
        repeat = next(
            (c.record for c in nearest_first if is_near_duplicate(name, text, c.record.content, c.distance)), None
        )
        return replace(new, vector=vector, candidates=candidates, seen=repeat)

    def _write_fact(self, reading: _Reading, fact: NewFact, decided: Decided | None, left: dict[str, str]) -> None:
        """Plan the fact's write (``writes.plan_write``) and make it, after the steps the
        plan asks for first: planning it again, or its own decision call."""
        if decided is not None and decided.earlier is not None:
            decided = replace(decided, memory=left.get(decided.earlier))
        while True:
            if decided is not None and decided.memory and decided.action != "ADD":
                # A decision that the fact changes or repeats a memory the learner has forgotten
                # since the message was said is about what was forgotten: the fact is dropped
                # (DeletedMeanwhile), not added in its place. Had the reading landed first, the
                # forget would have taken the new version with the old one.
                self.deletions.guard("memory", [decided.memory])
            ids = [c.record.id for c in fact.candidates] + ([decided.memory] if decided and decided.memory else [])
            now = self.store.get_many(ids) if ids else {}
            write = writes.plan_write(fact, decided, now, full=reading.outcome.full)
            if write.action == "replan":
                fact = self._find(reading, fact.key, fact.fact, replanned=True)
            elif write.action == "ask":
                decided = self._decide(fact)
            else:
                break
        memory = self._write(write, fact, reading.outcome)
        if memory is not None:
            left[fact.key] = memory

    def _write(self, write: Write, fact: NewFact, outcome: ExtractionOutcome) -> str | None:
        """Make a planned write; the memory the fact leaves (added, changed or seen again)."""
        if write.action == "skip":
            reason = write.reason.format((write.memory or "")[:6])
            outcome.skipped.append(Skipped("fact", shorten(fact.text, 60), reason))
            return None
        memory, text = write.memory or "", write.text or ""  # the plan names them for every write made
        if write.action == "seen":  # already known: the memory is seen again, nothing is added
            self.store.touch(memory)
            outcome.duplicates.append(memory)
            return memory
        fields: dict[str, Any] = dict(memory_type=fact.memory_type, category=fact.category, event_date=fact.event_date)
        if write.action == "add":
            fields |= {"dedup": False, "vector": fact.vector, "metadata": {"said": fact.said.text}}
            added = self.store.add(text, created_at=fact.said_at, source="extracted", **fields)
            outcome.added.append(added.id)
            return added.id
        # The memory replaced by the new text, with the fact's type, category, date and
        # time said; a contradiction is stored as said, with the vector it was planned with.
        update = write.action == "update"
        new = self.store.supersede(
            memory,
            text,
            reason="update" if update else "contradiction",
            vector=None if update else fact.vector,
            said_at=fact.said_at,
            said=fact.said.text,
            **fields,
        )
        assert new is not None  # a successor to new text
        (outcome.updated if update else outcome.superseded).append((memory, new.id))
        return new.id

    def _decide(self, fact: NewFact) -> Decided:
        """The fact's own decision call, beside its related memories."""
        days = {day(fact.said_at)}
        payload = f"New fact: {fact.text}{when(fact.said_at, days)}\n{listing(fact.candidates, days)}"
        answer = self._parse(prompts.RECONCILE_PROMPT, payload, MemoryDecision, "Memory reconciliation")
        return Decided(answer.action, writes.numbered(fact.candidates, answer.memory), text=answer.text)

    def _decide_many(self, facts: list[NewFact]) -> dict[str, Decided]:
        """One call decides several new facts of a round, each against the union of their
        related memories: the instructions, the schema and the memories they share are
        paid once. A fact is named by its letter (``writes.shared_decisions``)."""
        union: dict[str, writes.Candidate] = {}
        for fact in facts:
            for candidate in fact.candidates:
                union.setdefault(candidate.record.id, candidate)
        listed, days = list(union.values()), {day(fact.said_at) for fact in facts}
        lines = "\n".join(f"{writes.fact_letter(n)}. {f.text}{when(f.said_at, days)}" for n, f in enumerate(facts))
        payload = f"New facts:\n{lines}\n{listing(listed, days)}"
        answer = self._parse(prompts.RECONCILE_MANY_PROMPT, payload, MemoryDecisions, "Memory reconciliation")
        return writes.shared_decisions(answer, facts, listed)

    # -- corrections ------------------------------------------------------------------
    def _match_correction(self, correction: jobs.Correction) -> list[MemoryRecord]:
        """The current memories that state what the learner says is wrong (one decision call)."""
        statement = clean_text(correction.statement)
        if not statement:
            raise LimitError("A correction needs the wrong statement.")
        candidates = related_memories(self.store, self.counter, statement, self._embed(statement))
        if not candidates:
            return []
        payload = f"Wrong fact: {statement}\n{listing(candidates)}"
        decision = self._parse(prompts.CORRECTION_PROMPT, payload, CorrectionDecision, "Correction lookup")
        # Only a current memory listed: another session may have changed it since it was listed.
        named = dict.fromkeys(writes.numbered(candidates, n) for n in decision.memories)
        return [r for i in named if i and (r := self.store.get(i)) is not None and r.is_current]

    # -- mistakes -----------------------------------------------------------------------
    def _apply_mistake(self, mistake: jobs.ExtractedMistake, job: ExtractionJob, outcome: ExtractionOutcome) -> None:
        # Only words the learner wrote: a "mistake" quoting text that is not in the
        # message (the model's own paraphrase, a Chinese gloss) is not theirs.
        if not job.holds(mistake.original):
            raise LimitError("its original words are not in the message")
        if not re.search(r"[A-Za-z]", mistake.original):
            raise LimitError("it is not English")
        entry, merged = self.ledger.record(mistake, seen_at=job.said_at)
        if entry.id not in outcome.mistakes:  # one line a message for one mistake
            self._counted(entry, job.said_at, outcome, "again" if merged else "new")

    def _apply_use(self, use: jobs.MistakeUse, job: ExtractionJob, outcome: ExtractionOutcome) -> None:
        """A tracked mistake used right or made again in the conversation: a review of its card."""
        if not use.evidence.strip() or not job.holds(use.evidence):
            raise LimitError("its evidence is not in the message")
        tracked = self.ledger.get(use.mistake.strip())
        if use.use == "correct" and tracked and (why := own_use(tracked, job.text, use.evidence)):
            raise LimitError(why)
        entry, counted = self.ledger.use_in_chat(use.mistake.strip(), use.use == "correct", job.said_at)
        if entry is None:
            raise LimitError(f"no tracked mistake has the id {shorten(use.mistake, 20)!r}")
        if counted:
            self._counted(entry, job.said_at, outcome, "correct" if use.use == "correct" else "again")

    def _counted(self, entry: Mistake, said_at: datetime, outcome: ExtractionOutcome, what: str) -> None:
        """A mistake a message counted (a review of its card, when it is due, which undo
        can take back), and the after-turn line that says so: 'Used “went” correctly:
        review card passed (next in 9 days).'"""
        outcome.mistakes.append(entry.id)
        if entry.reviews and entry.reviews[-1].at == said_at and entry.reviews[-1].source == "chat":
            outcome.reviews.append((entry.id, said_at))
            what = "correct" if what == "correct" else "lapse"
        wrong, right = (quoted(words, 60, end="") for words in fix_words(entry))
        next_in = spaced.in_days(entry.due, self.ledger.today())
        outcome.notices.append(
            f"Used {right} correctly: that mistake is now mastered. Well done!"
            if what == "correct" and entry.mastered_at is not None
            else f"Used {right} correctly: review card passed (next {next_in})."
            if what == "correct"
            else f"New mistake to review: {wrong} → {right} ({shorten(entry.rule, 80)}); review it {next_in}."
            if what == "new"
            else f"{wrong} again (it is {right}): its review card comes back {next_in}."
            if what == "lapse"
            else f"{wrong} again (it is {right}): made {entry.count} times; review it {next_in}."
        )

    def _offer_word(self, asked: jobs.AskedWord, job: ExtractionJob, outcome: ExtractionOutcome) -> None:
        """Ask (after the reply) whether to review a word the learner asked about."""
        word, meaning = clean_mistake_text(asked.word, "word"), clean_mistake_text(asked.meaning, "meaning")
        if not job.holds(word):
            raise LimitError("the word is not in the message")
        if not self.ledger.has_word(word):
            self._propose(ProfileProposal.new("review_card", "add", word, None, meaning), outcome)

    # -- profile ----------------------------------------------------------------------
    def _apply_profile_change(self, change: jobs.ProfileChange, job: ExtractionJob, outcome: ExtractionOutcome) -> None:
        evidence = shorten(change.evidence or job.text, 300)
        remove = change.action == "remove"
        if change.field == "english_level":
            level = normalize_level(change.value)  # raises for anything outside A1-C2: a skipped item
            current = self.profiles.get().english_level
            if remove and current:
                self._propose(ProfileProposal.new("english_level", "remove", current, current, evidence), outcome)
            elif not remove and current is None:
                self.profiles.set_english_level(level)
                outcome.notices.append(
                    f"Profile: English level set to {level} (from what you said). "
                    "Change it with 'profile level <level>'."
                )
            elif not remove and current != level:
                self._propose(ProfileProposal.new("english_level", "set", level, current, evidence), outcome)
            return
        kind = "goal" if change.field == "learning_goal" else "preference"
        value = clean_text(change.value)
        if not value:
            raise LimitError(f"The {kind} is empty.")
        known = self.profiles.has(kind, value)
        if remove and known:
            self._propose(ProfileProposal.new(change.field, "remove", value, value, evidence), outcome)
        elif not remove and not known:
            if self.profiles.add_learning_goal(value) if kind == "goal" else self.profiles.add_preference(value):
                undo = f"Undo with 'profile remove {kind} {shorten(value, 80)}'."
                outcome.notices.append(f"Added to your {kind}s: {quoted(value, 80)} {undo}")

    def _propose(self, proposal: ProfileProposal, outcome: ExtractionOutcome) -> None:
        if self.proposals.add(proposal):
            outcome.proposals.append(proposal)


class ExtractionWorker:
    """One background thread that runs ``Extractor`` jobs, and small store tasks, in order."""

    def __init__(
        self,
        extractor: Extractor,
        *,
        on_outcome: Callable[[ExtractionJob, ExtractionOutcome], None],
        on_failure: Callable[[ExtractionJob, str], None],
        claim: Callable[[ExtractionJob], ExtractionJob | None] = lambda job: job,
    ):
        self.extractor, self.on_outcome, self.on_failure = extractor, on_outcome, on_failure
        # Before a job is read: the messages of it this process may read (another
        # process may have claimed them), or None to read none.
        self.claim = claim
        self._queue: queue.Queue[ExtractionJob | Callable[[], None] | int] = queue.Queue()
        self._idle = threading.Event()
        self._idle.set()
        self.pending = 0  # jobs and tasks submitted and not done yet
        self._lock = threading.Lock()
        self._threads = 0
        self._start()

    def _start(self) -> None:
        # Each thread stops at its own marker (its number): a marker left in the queue
        # for a thread that is gone must not stop the next one before its first job.
        self._threads += 1
        self._stopping = False
        self._thread = threading.Thread(target=self._run, args=(self._threads,), name="memora-extraction", daemon=True)
        self._thread.start()

    def _stop(self) -> None:
        with self._lock:
            if not self._stopping and self._thread.is_alive():
                self._stopping = True
                self._queue.put(self._threads)

    def submit(self, job: ExtractionJob | Callable[[], None]) -> None:
        """Queue a reading, or a small store write to run after the reply, in order with them."""
        with self._lock:
            self.pending += 1
            self._idle.clear()
            if self._stopping or not self._thread.is_alive():
                self._thread.join(timeout=5)
                self._start()  # closed earlier (the REPL ended) and used again
        self._queue.put(job)

    def wait_idle(self, timeout: float | None = None) -> bool:
        return self._idle.wait(timeout)

    def close(self, timeout: float | None = 10.0) -> bool:
        """Wait (bounded) for queued jobs, then stop the thread."""
        finished = self.wait_idle(timeout)
        self._stop()
        if finished:
            self._thread.join(timeout=5)
        return finished

    def cancel(self, timeout: float = 15.0) -> None:
        """Drop queued jobs, stop the running one before its next write, stop the thread."""
        self.extractor.cancelled = True
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                break
            if not isinstance(item, int):
                self._done_one()
        with self._lock:  # a stop marker close() queued was dropped with the rest
            self._stopping = True
            self._queue.put(self._threads)
        self._thread.join(timeout)

    def _run(self, number: int) -> None:
        job: ExtractionJob | Callable[[], None] | int | None
        while (job := self._queue.get()) != number:
            if isinstance(job, int):
                continue  # the stop marker of a thread that is gone
            try:
                if callable(job):
                    self._safe(job)
                elif (job := self.claim(job)) is not None:
                    self._safe(self.on_outcome, job, self.extractor.extract(job))
            except MemoraError as error:
                log.warning("extraction failed: %s", error)
                self._safe(self.on_failure, job, str(error))
            except Exception as error:  # never let the worker die
                log.exception("extraction crashed")
                self._safe(self.on_failure, job, f"{type(error).__name__}: {error}")
            finally:
                self._done_one()

    def _done_one(self) -> None:
        with self._lock:
            self.pending -= 1
            if self.pending == 0:
                self._idle.set()

    @staticmethod
    def _safe(callback, *args) -> None:
        try:
            callback(*args)
        except Exception:
            log.exception("a background task or callback failed")
