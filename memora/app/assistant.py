"""The Memora application: one learner's stores, the model and the turn lifecycle.

``Memora.chat`` runs one turn, in this order::

    memory.add_user_message(text)
    retrieve_relevant_memories(query)          # hybrid, time-aware (retrieval.py)
    memory.add_token_usage(embedding tokens)
    build_background_messages(profile, memories, digest, hint, knowledge)
    memory.prepare_context(background_messages=...)
    Responses API call, streamed
    memory.finish_turn(reply, context_messages, usage)
    session saved; memory extraction queued (background worker)

A failure anywhere before ``finish_turn`` (model error, budget refusal, Ctrl-C)
calls ``memory.rollback_last_user_message()``: the conversation, the session
file and the memories are exactly as before the turn.

Every memory change a turn's extraction makes (and every ``remember`` or
``memory edit``) is recorded as a ``ChangeSet`` in the session, announced in
one line once the reply is over, and can be taken back with ``undo``.
"""

from __future__ import annotations

import logging
import re
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import date, datetime

from context_builder import DIGEST_SECTIONS, MistakeNote, build_background_messages, build_user_digest
from long_term_memory import LongTermMemoryStore
from memora.app.extraction import (
    BATCH_MAX_TOKENS,
    BATCH_SHORT_TOKENS,
    ExtractionJob,
    ExtractionOutcome,
    ExtractionResult,
    ExtractionWorker,
    Extractor,
    PreparedExtraction,
    Skipped,
    batches_by_day,
    looks_like_correction,
    may_change_profile,
    skips_extraction,
)
from memora.app.knowledge import KnowledgeBase
from memora.app.proactive import pick_follow_up
from memora.app.proposals import ProfileProposal, ProposalStore
from memora.app.session import (
    ChangeSet,
    PendingExtraction,
    SessionState,
    SessionStore,
    UndoneMemory,
    new_owner,
    release_owner,
)
from memora.engine.activity import ActivityLog
from memora.engine.chroma_backend import ChromaConnection
from memora.engine.config import Settings
from memora.engine.deletions import DeletionLog
from memora.engine.embeddings import Embedder, embedder_for_store, make_embedder
from memora.engine.errors import (
    ConfigError,
    EmbeddingError,
    EmbeddingModelMismatch,
    LimitError,
    LocalModelUnavailable,
    MemoraError,
    ModelNotConfigured,
    VectorsMissing,
    failure_reason,
)
from memora.engine.ledger import LedgerStore, Mistake, correction_excerpt, relevant
from memora.engine.llm import ModelClient, ReplyResult
from memora.engine.model_facts import shutdown_note
from memora.engine.prompts import SYSTEM_PROMPT
from memora.engine.records import MemorySearchResult
from memora.engine.retrieval import retrieve_relevant_memories
from memora.engine.storage import ensure_private_dir
from memora.engine.text_utils import counted, quoted, shorten
from memora.engine.timeutil import Clock, said_day, system_clock
from memora.engine.tokens import TokenCounter
from memory import ContextBudget, ConversationMemory, PreparedContext
from user_profile import UserProfileStore

log = logging.getLogger("memora")

MAX_MESSAGE_CHARS = 8000
MAX_EXTRACTION_ATTEMPTS = 3  # a job that keeps failing (bad model, bad server) is dropped with a notice
MEMORIES_PER_TURN = 5
# A few mistakes in the background: enough to watch for the ones this message
# may repeat, few enough that the section stays short. Two, not three: each
# line quotes the learner's sentence twice (about 60 tokens), and the third cost
# 0.45% of the full-history baseline on bench/tokens_per_turn.py for a mistake
# that is, by construction, the least relevant to the message.
MISTAKES_PER_TURN = 2
# What makes a remembered plan an exam the review prepares for (ledger.EXAM_DAYS).
_EXAM = re.compile(r"\b(exams?|tests?|ielts|toefl|toeic|gept|cambridge|interview)\b|考試|測驗|面試", re.IGNORECASE)
# 'undo' goes back this many change sets; older ones are dropped from the session
# (a learner takes back what they just saw, not last month's turn).
MAX_UNDO = 20
MAX_UNDONE_KEPT = 200  # ids 'history' can still explain after 'undo' deleted them


class TurnCancelled(MemoraError):
    """Ctrl-C during a reply: the turn was rolled back."""


@dataclass
class TurnResult:
    reply: ReplyResult
    prepared: PreparedContext
    memories: list[MemorySearchResult]
    notes: list[str] = field(default_factory=list)


@dataclass
class TurnState:
    """What one running session knows beyond its stores: the turn in progress,
    the profile question being asked, and how background extraction is going.

    Changed only by ``Memora``, under its lock; other modules read it through
    ``Memora``'s properties."""

    turn_active: bool = False  # a reply is streaming: notices and questions wait
    awaiting: ProfileProposal | None = None  # the question just asked, which a bare "yes" answers
    rebuild_asked: bool = False  # the start asked to rebuild a vanished store; only the next line answers
    question_due: bool = False  # a proposal arrived during a reply: ask once it is over
    deleted: bool = False  # 'forget user' removed this learner: write nothing more
    closing: bool = False  # leaving: nothing is asked that could not be answered (see close)
    no_local_model_told: bool = False  # "memory search is unavailable" (no local model) is said once
    last_prepared: PreparedContext | None = None  # what the last request sent ('why', 'status')
    pending_jobs: list[PendingExtraction] = field(default_factory=list)  # messages not yet read for memories
    held: list[str] = field(default_factory=list)  # ids of pending short messages waiting to be read together
    due_notices: list[str] = field(default_factory=list)  # arrived while a reply streamed; shown after it
    unsaved_notes: list[str] = field(default_factory=list)  # told at the next prompt
    extraction_error: str | None = None
    extraction_failures: int = 0
    extraction_skipped_messages: int = 0  # acknowledgements not sent to extraction (skips_extraction)
    extraction_skipped: list[Skipped] = field(default_factory=list)  # items that could not be applied
    memory_full_noticed: bool = False  # "memory is full" is said once, until the cap changes
    embedding_failure_noticed: bool = False


class Notifier:
    """Where notices go; the REPL points it at its console once that is ready,
    and the parts built before then (the token counter, the stores) keep it."""

    def __init__(self, target: Callable[[str], None]):
        self.target = target

    def __call__(self, message: str) -> None:
        try:
            self.target(message)
        except Exception:  # a broken terminal must not break the worker
            log.exception("notify failed")


class Memora:
    """Everything one learner's session needs, wired together."""

    @classmethod
    def from_settings(
        cls,
        settings: Settings,
        *,
        clock: Clock = system_clock,
        http_client=None,
        embedder: Embedder | None = None,
        connection: ChromaConnection | None = None,
        notify: Callable[[str], None] = print,
        new_session: bool = False,
    ) -> Memora:
        """The application as configured: the model client, the embedder and the
        Chroma connection the settings name, unless given (tests give them)."""
        notifier = Notifier(notify)
        counter = TokenCounter(settings.model, warn=notifier)
        model = ModelClient(settings, http_client=http_client, clock=clock)
        embedder = embedder or make_embedder(
            settings.effective_embedding_model,
            client_factory=model.openai if settings.chat_configured else None,
            counter=counter.count,
        )
        if connection is None:
            connection = (
                ChromaConnection(url=settings.chroma_url) if settings.chroma_url else ChromaConnection(settings.db_dir)
            )
        return cls(
            settings,
            model=model,
            embedder=embedder,
            connection=connection,
            counter=counter,
            clock=clock,
            notifier=notifier,
            new_session=new_session,
        )

    def __init__(
        self,
        settings: Settings,
        *,
        model: ModelClient,
        embedder: Embedder,
        connection: ChromaConnection,
        counter: TokenCounter,
        clock: Clock = system_clock,
        notifier: Notifier | None = None,
        new_session: bool = False,
    ):
        self.settings = settings
        self.paths = settings.paths
        self.clock = clock
        self.notify = notifier or Notifier(print)
        self._lock = threading.RLock()
        self.turn = TurnState()
        self.counter = counter
        self.model = model
        self.embedder = embedder
        self.switch_to: Embedder | None = None  # the configured model, while the store's own is kept
        self.connection = connection
        ensure_private_dir(settings.data_dir)
        ensure_private_dir(self.paths.folder)
        self.profiles = UserProfileStore(
            self.paths.profile, max_items=settings.max_profile_items, notify=self.notify, clock=clock
        )
        # What was forgotten, shared by every learner and process of the data folder:
        # a reading that started before a deletion cannot undo it (deletions.py).
        self.deletions = DeletionLog(settings.db_dir)
        self.owner = new_owner()  # this session's name, for claiming messages to read
        self._known_jobs: set[str] = set()  # messages this session has held (SessionStore.save)
        self._reading: set[str] = set()  # messages the worker has claimed and is reading now
        self.ledger = LedgerStore(
            self.paths.mistakes,
            clock=clock,
            notify=self._deliver,
            deletions=self.deletions,
            learner=settings.user,
            day_start=settings.day_start,
            new_per_day=settings.new_cards,
            reviews_per_day=settings.reviews_per_day,
            exam=self.next_exam,
        )
        self.activity = ActivityLog(self.paths.activity, clock=clock, notify=self.notify)
        self.proposals = ProposalStore(self.paths.proposals, notify=self.notify)
        self.sessions = SessionStore(self.paths.session, notify=self.notify)
        self._open_store()
        self.knowledge = KnowledgeBase(settings.knowledge_dir, connection, self.embedder)
        self.memory = self._conversation_memory()
        self._changes: list[ChangeSet] = []
        self._undone: list[UndoneMemory] = []
        self._resume_session(new_session)
        self.worker = ExtractionWorker(
            Extractor(
                model=self.model,
                store=self.store,
                profiles=self.profiles,
                proposals=self.proposals,
                on_tokens=lambda n: self.add_usage("extraction", n),
                counter=self.counter,
                ledger=self.ledger,
                watched=self._watched,
            ),
            on_outcome=self._extraction_done,
            on_failure=self._extraction_failed,
            claim=self._claim,
        )
        if self.model.configured:
            retiring = shutdown_note(settings.model, clock().date())
            if retiring:
                self.notify(retiring)
            for pending in self.turn.pending_jobs:
                self.worker.submit(self._resumed_job(pending))
        if new_session:
            self.save_session()

    def _open_store(self) -> None:
        settings = self.settings
        self.store = store = LongTermMemoryStore(
            settings.db_dir,
            embedding_function=self.embedder,
            user_id=settings.user,
            connection=self.connection,
            memory_cap=settings.memory_cap,
            clock=self.clock,
            recency_half_life_days=settings.recency_half_life_days,
            deletions=self.deletions,
        )
        if store.interrupted_import is not None:  # a crash cut an import short: undo the rest of it
            from memora.app.data_transfer import finish_interrupted_import

            finish_interrupted_import(self)
        if store.mismatch:
            self._settle_embedding_model()

    def _settle_embedding_model(self) -> None:
        """The store was built with another embedding model than the configured one.
        Its own model is kept when it can run here, so search goes on working, and
        'reindex' switches to the configured one; otherwise search is off and one
        line says what the store's model needs. Never a silent switch."""
        built_with, configured = self.store.mismatch, self.embedder
        model = self.model
        kept, needs = embedder_for_store(
            built_with, client_factory=model.openai if model.configured else None, counter=self.counter.count
        )
        if kept is not None:
            self.store.use_embedder(kept)
            self.embedder = kept
            self.switch_to = configured
            keep_for_good = built_with.partition(":")[2]
            self.notify(
                f"Your memories were embedded with {built_with}; Memora is set to {configured.name} now, and keeps "
                f"using {built_with} so memory search works: type 'reindex' to re-embed them with "
                f"{configured.name}, or set MEMORA_EMBEDDING_MODEL={keep_for_good} to keep it for good."
            )
        else:
            self.notify(
                f"Your memories were embedded with {built_with}, which {needs}; memory search is off until then, "
                f"or until you type 'reindex' to re-embed them with {configured.name}."
            )

    def reindex(self) -> int:
        """Re-embed every memory with the configured embedding model (the one a
        mismatched store was kept from, if any), and the knowledge notes with it."""
        kept, target = self.embedder, self.switch_to or self.embedder
        self.store.use_embedder(target)
        try:
            count = self.store.reindex()
        except BaseException:
            self.store.use_embedder(kept)  # nothing was re-embedded: the store's own model stays in use
            raise
        self.embedder, self.switch_to = target, None
        self.knowledge.embedder = target
        self.knowledge.sync()
        if self.store.interrupted_import is not None:  # it waited for a vanished store's rebuild
            from memora.app.data_transfer import finish_interrupted_import

            finish_interrupted_import(self)
        return count

    # -- a vanished store ---------------------------------------------------------------------
    def ask_to_rebuild(self) -> bool:
        """At the start: when Chroma lost the vectors while the catalog lists the
        memories, say so and ask to rebuild them, in one line; True when asked.
        Only the next line can answer it (``answer_rebuild``, ``rebuild_asked``)."""
        cause = self.store.vectors_missing
        if cause is None:
            return False
        current, listed = self.store.count(), self.store.count(include_superseded=True)
        versions = f" ({listed} with earlier versions)" if listed != current else ""
        with self._lock:
            self.turn.rebuild_asked = True
            self.turn.awaiting = None  # a profile question asked before waits: "yes" answers this one
        self.notify(
            f"Your memories' vectors are missing: {cause}. The catalog still lists your "
            f"{counted(current, 'memory', 'memories')}{versions}. Rebuild the vectors from it now, "
            "re-embedding their text? (yes/no)"
        )
        return True

    @property
    def rebuild_asked(self) -> bool:
        """The rebuild question was the last thing asked: a bare yes/no answers it."""
        return self.turn.rebuild_asked

    def drop_rebuild_question(self) -> None:
        """The line after the question was read: it answered it or passed it by."""
        with self._lock:
            self.turn.rebuild_asked = False

    def _conversation_memory(self) -> ConversationMemory:
        settings = self.settings
        try:
            return ConversationMemory(
                counter=self.counter,
                instructions=SYSTEM_PROMPT,
                budget=ContextBudget(
                    total=settings.token_budget,
                    recent=settings.recent_tokens,
                    summary=settings.summary_tokens,
                    background=settings.background_tokens,
                ),
                summarizer=self.model.summarize,
            )
        except ValueError as error:  # checked up front, before any work
            raise ConfigError(
                f"Token budget settings do not fit together: {error} (see README, 'Configuration')."
            ) from None

    def _resume_session(self, new_session: bool) -> None:
        """The saved conversation, or a fresh one that keeps usage, unread messages and undo."""
        state = SessionState() if new_session else self.sessions.load()
        if new_session:
            previous = self.sessions.load()
            state.usage = previous.usage
            state.pending_extractions = previous.pending_extractions
            state.changes, state.undone = previous.changes, previous.undone
        self.memory.load_state(state.model_dump(mode="json"))
        self.turn.pending_jobs = list(state.pending_extractions)
        self._known_jobs |= {p.job_id for p in state.pending_extractions}
        # The newest 'forget all' (or 'forget user') this session has taken in: a newer one,
        # made by another process, clears this conversation too (_catch_up_deletions).
        self._forgotten_at = self.deletions.newest(self.settings.user)
        self._changes = list(state.changes)
        self._undone = list(state.undone)

    # -- notices ----------------------------------------------------------------------
    def set_notify(self, notify: Callable[[str], None]) -> None:
        """Where notices go from now on (the REPL's console once it is ready)."""
        self.notify.target = notify

    def take_unsaved_notes(self) -> list[str]:
        """Notices about messages whose memories could not be saved, once each.

        The REPL prints them at the next prompt rather than when the worker
        fails, so they never land in the middle of a streaming reply."""
        with self._lock:
            notes, self.turn.unsaved_notes = self.turn.unsaved_notes, []
        return notes

    def unsaved_messages(self) -> int:
        """How many messages still wait to have their memories read (what ``exit`` waits for)."""
        with self._lock:
            if not self.worker.pending:
                return len(self.turn.held)
            return len(self.turn.pending_jobs)

    def retry_pending_extractions(self, timeout: float | None = 30.0) -> int:
        """Queue again every message whose extraction failed (``reindex`` calls this
        once the store matches the model again); returns how many."""
        if not self.model.configured:
            return 0
        self.worker.wait_idle(timeout)  # whatever is still pending now is not queued
        with self._lock:
            self.turn.held = []  # queued below with the others
            jobs = list(self.turn.pending_jobs)
        for pending in jobs:  # a job read before keeps only its remaining items
            self.worker.submit(self._resumed_job(pending))
        return len(jobs)

    def add_usage(self, kind: str, tokens: int) -> None:
        """Count tokens spent outside a chat turn (a 'search', extraction)."""
        with self._lock:
            self.memory.add_token_usage(tokens, kind)

    # -- the turn -----------------------------------------------------------------------
    def chat(self, text: str, *, on_delta: Callable[[str], None]) -> TurnResult:
        """One chat turn (see the module docstring). Raises ``MemoraError`` with
        the conversation unchanged when the turn cannot complete."""
        text = self.check_message(text)
        now = self.clock()
        notes: list[str] = []
        self._catch_up_deletions()
        with self._lock:
            self.memory.add_user_message(text)
            self.turn.turn_active = True
            self.turn.awaiting = None  # a new message is not an answer to an earlier question
            self.turn.rebuild_asked = False
        try:
            early = self._read_correction_early(text, now)
            background = self._background(text, now, early, notes)
            with self._lock:
                prepared = self.memory.prepare_context(background_messages=background)
            if prepared.summary_failed:
                notes.append(f"Could not summarise older turns ({prepared.summary_failed}); kept them in full.")
            reply = self.model.stream_reply(
                instructions=SYSTEM_PROMPT, messages=prepared.context_messages, on_delta=on_delta
            )
        except KeyboardInterrupt:
            self._roll_back_turn()
            raise TurnCancelled("Reply cancelled; that message was not kept.") from None
        except BaseException:
            self._roll_back_turn()
            raise
        job = self._commit_turn(text, now, reply, prepared)
        self._after_reply(job, early, prepared, now, notes)
        if reply.incomplete:
            notes.append(
                f"(reply cut off: {reply.incomplete}) The reply was kept as far as it got; "
                "raise MEMORA_MAX_OUTPUT_TOKENS for longer answers."
            )
        return TurnResult(reply=reply, prepared=prepared, memories=list(prepared.background.memories), notes=notes)

    def _background(self, text: str, now: datetime, early: PreparedExtraction | None, notes: list[str]):
        """This turn's background: what a correction read early retracts is left out of it."""
        wrong = {r.record.id for r in early.retractions} if early else set()
        memories, knowledge_items = self._recall(text, notes)
        digest = tuple(item for item in self._digest() if item.memory_id not in wrong)
        in_digest = {item.text for item in digest}
        memories = [m for m in memories if m.content not in in_digest and m.id not in wrong]  # said once is enough
        return build_background_messages(
            self.profiles.get(),
            memories,
            digest=digest,
            hint=pick_follow_up(
                self.store.catalog.follow_up_candidates(now, self.settings.proactive_days),
                now,
                self.settings.proactive_days,
            ),
            knowledge=knowledge_items,
            now=now,
            changes=[r.record.content for r in early.retractions] if early else (),
            mistakes=self._mistake_notes(text),
            role=self.model.background_role.role,
        )

    def _roll_back_turn(self) -> None:
        with self._lock:
            self.memory.rollback_last_user_message()
            self.turn.turn_active = False

    def _commit_turn(
        self, text: str, now: datetime, reply: ReplyResult, prepared: PreparedContext
    ) -> PendingExtraction:
        """Keep the turn: the conversation, the request's breakdown and the message to read for memories."""
        with self._lock:
            self.turn.turn_active = False
            self.memory.finish_turn(reply.text, prepared.context_messages, reply.total_tokens)
            self.memory.last_request = {
                "sections": prepared.sections,
                "total": prepared.total_tokens,
                "budget": prepared.budget,
                "at": now.isoformat(),
            }
            self.turn.last_prepared = prepared
            job = PendingExtraction(
                job_id=uuid.uuid4().hex[:8], text=text, said_at=now, generation=self.deletions.generation()
            )
            self._known_jobs.add(job.job_id)
            if skips_extraction(text):
                # An acknowledgement or greeting holds no fact and no mistake: no call,
                # and nothing left in the session file to read at the next start.
                self.turn.extraction_skipped_messages += 1
            else:
                self.turn.pending_jobs.append(job)
        self.save_session()
        self.activity.record_turn(now)
        return job

    def _after_reply(
        self,
        job: PendingExtraction,
        early: PreparedExtraction | None,
        prepared: PreparedContext,
        now: datetime,
        notes: list[str],
    ) -> None:
        """Once the reply is out: apply an early-read correction, mark the follow-up asked, queue extraction."""
        if early and early.retractions:
            outcome = ExtractionOutcome()
            self.worker.extractor.retract(early.retractions, outcome)
            notes.extend(outcome.notices)
            self._note_skipped(outcome)
            self.record_changes("turn", [(old, None) for old in outcome.retracted], job_id=job.job_id)
        hint = prepared.background.hint
        if hint is not None:  # asked once: the catalog knows now, Chroma after the reply
            self.store.mark_followed_up(hint.memory_id, now, sync_chroma=False)
            self.worker.submit_task(lambda: self.store.push_metadata(hint.memory_id))
        if early is None and skips_extraction(job.text):
            return  # never queued (see _commit_turn)
        # A batch never spans two days: a fact is dated with its batch, and
        # "yesterday" said before midnight must not be read as today's. What is
        # held from another day (each message's day counted where it was said)
        # is read now, on its own; what this day holds stays for this message.
        self.read_held_messages(keep_day=said_day(job.said_at))
        if early is None and self._hold(job):
            return
        with self._lock:
            earlier = self._take_held()
        self.worker.submit(
            ExtractionJob(job.text, job.said_at, job.job_id, prepared=early, earlier=earlier, generation=job.generation)
        )

    def _hold(self, job: PendingExtraction) -> bool:
        """Keep a short message back, to be read with the next ones (see BATCH_SHORT_TOKENS)."""
        tokens = self.counter.count(job.text)
        if tokens > BATCH_SHORT_TOKENS or may_change_profile(job.text) or looks_like_correction(job.text):
            return False  # long enough to pay for its own call, or it must be acted on now
        with self._lock:
            held = self._held_jobs()
            recent = {m["content"] for m in self.memory.messages if m.get("role") == "user"}
            if (
                len(held) + 1 >= self.settings.extraction_batch
                or sum(self.counter.count(h.text) for h in held) + tokens > BATCH_MAX_TOKENS
                or any(h.text not in recent for h in held)  # one has left the recent turns: read them now
            ):
                return False
            self.turn.held.append(job.job_id)
        return True

    def _held_jobs(self) -> tuple[ExtractionJob, ...]:
        """The held messages, oldest first (call under the lock)."""
        held = set(self.turn.held)
        return tuple(
            ExtractionJob(p.text, p.said_at, p.job_id, generation=p.generation)
            for p in self.turn.pending_jobs
            if p.job_id in held
        )

    def _take_held(self, keep_day: date | None = None) -> tuple[ExtractionJob, ...]:
        """The held messages, no longer held (call under the lock): the caller submits them.
        ``keep_day``: those said on that day (``said_day``) stay held."""
        held = self._held_jobs()
        taken = tuple(j for j in held if keep_day is None or said_day(j.said_at) != keep_day)
        kept = {j.job_id for j in held} - {j.job_id for j in taken}
        self.turn.held = [job_id for job_id in self.turn.held if job_id in kept]
        return taken

    def drop_unread_messages(self) -> int:
        """'forget all': drop every message not read yet, held or kept from a failed
        reading, and the conversation, so nothing said before the deletion is remembered
        after it. A reading under way is not waited for: the deletion record refuses
        its writes when it lands (deletions.py)."""
        elsewhere = self.sessions.unread_on_disk()  # other terminals' too: known now, so the save drops them
        with self._lock:
            dropped = len({p.job_id for p in self.turn.pending_jobs} | elsewhere)
            self._known_jobs |= elsewhere
            self.turn.pending_jobs, self.turn.held = [], []
            self.memory.reset()
            self.turn.last_prepared = None
        self.save_session()
        return dropped

    def unread_messages(self) -> int:
        """Messages said and not read for memories yet, in this terminal or another one
        of this learner (what 'forget all' deletes besides the stores)."""
        with self._lock:
            mine = {p.job_id for p in self.turn.pending_jobs}
        return len(mine | self.sessions.unread_on_disk())

    def read_held_messages(self, *, keep_day: date | None = None) -> int:
        """Queue the held short messages now (exit, a new session, undo: Memora must be up to date),
        one reading for each day they were said on; ``keep_day``: those said that day stay held."""
        with self._lock:
            jobs = self._take_held(keep_day)
            if self.turn.deleted:
                return 0  # 'forget user' removed this learner: their words are not sent anywhere
        for batch in batches_by_day(jobs):
            self.worker.submit(batch)
        return len(jobs)

    def _claim(self, job: ExtractionJob) -> ExtractionJob | None:
        """(worker thread) The messages of ``job`` this session reads: not those said
        before a 'forget all', nor those another running Memora has claimed or
        already read; each one claimed atomically in the session file."""
        newest = self.deletions.newest(self.settings.user)
        unforgotten = [m for m in job.messages if m.generation >= newest]
        granted = self.sessions.claim([m.job_id for m in unforgotten if m.job_id], self.owner)
        keep = [m for m in unforgotten if not m.job_id or m.job_id in granted]
        lost = set(job.job_ids) - {m.job_id for m in keep}
        if lost:  # forgotten, or read by another process: not this session's to read or keep
            log.info("not reading %d message(s): forgotten or claimed elsewhere", len(lost))
            with self._lock:
                self.turn.pending_jobs = [p for p in self.turn.pending_jobs if p.job_id not in lost]
                self.turn.held = [i for i in self.turn.held if i not in lost]
            self.save_session()
        if not keep:
            return None
        with self._lock:
            self._reading = {m.job_id for m in keep}
        if len(keep) == len(job.messages):
            return job
        last = keep[-1]
        prepared = job.prepared if last is job else None
        return replace(last, earlier=tuple(keep[:-1]), prepared=prepared)

    def _catch_up_deletions(self) -> None:
        """Another Memora of this learner ran 'forget all' (or 'forget user') since this
        one last looked: its conversation and its messages not read yet go too."""
        newest = self.deletions.newest(self.settings.user)
        if newest <= self._forgotten_at:
            return
        self._forgotten_at = newest
        if self.deletions.newest(self.settings.user, ("user",)) >= newest:
            self.forget_learner()  # this learner was deleted elsewhere: write nothing more
            return
        with self._lock:
            self.memory.reset()
            self.turn.pending_jobs = [p for p in self.turn.pending_jobs if p.generation >= newest]
            self.turn.held = [i for i in self.turn.held if any(p.job_id == i for p in self.turn.pending_jobs)]
            self.turn.last_prepared = None
        self._changes, self._undone = [], []

    def _read_correction_early(self, text: str, now: datetime) -> PreparedExtraction | None:
        """For a message that looks like a correction, read it before the reply
        (with the messages held from its day: one call reads them all; those of
        another day are read on their own after the reply, see ``_after_reply``)."""
        if self.store.mismatch or self.store.vectors_missing or not looks_like_correction(text):
            return None
        with self._lock:
            earlier = tuple(h for h in self._held_jobs() if said_day(h.said_at) == said_day(now))
        try:
            generation = self.deletions.generation()
            return self.worker.extractor.prepare(ExtractionJob(text, now, earlier=earlier, generation=generation))
        except MemoraError:
            return None  # read after the reply instead, like any message

    def check_message(self, text: str) -> str:
        """The message to send, or the one-line reason it cannot be sent."""
        text = text.strip()
        if not text:
            raise LimitError("Empty message: nothing was sent.")
        if len(text) > MAX_MESSAGE_CHARS:
            raise LimitError(
                f"Your message is {len(text)} characters; the limit is {MAX_MESSAGE_CHARS}. Nothing was sent."
            )
        if not self.model.configured:
            raise ModelNotConfigured(
                "No model is configured: set OPENAI_API_KEY, or OPENAI_BASE_URL for a local server "
                "(see README, 'Configuration'). Commands still work."
            )
        return text

    def _recall(self, text: str, notes: list[str]):
        """Memories and knowledge notes for ``text``; an embedding failure means none."""
        if self.store.mismatch or self.store.vectors_missing:
            return [], []
        try:
            vector = self.store.embed([text])[0]
            self.add_usage("embeddings", self.store.last_embedding_tokens)
            memories, _ = retrieve_relevant_memories(
                self.store, text, n_results=MEMORIES_PER_TURN, vector=vector, now=self.clock()
            )
            knowledge_items = self.knowledge.search(vector)
            return memories, knowledge_items
        except (EmbeddingError, EmbeddingModelMismatch) as error:
            # No local model is said once a session, whether chat or 'search' meets it first.
            told = self.turn.embedding_failure_noticed or (
                isinstance(error, LocalModelUnavailable) and self.turn.no_local_model_told
            )
            if not told:
                self.turn.embedding_failure_noticed = True
                self.turn.no_local_model_told |= isinstance(error, LocalModelUnavailable)
                notes.append(f"Answering without memories this time: {error}")
            return [], []
        except VectorsMissing as error:  # found vanished just now, mid-session: said once
            notes.append(f"Answering without memory search: {error}")
            return [], []

    def next_exam(self, today: date) -> tuple[date, str] | None:
        """The learner's nearest remembered exam from today on: (its day, the memory's text).
        A plan with a date whose words name an exam or a test."""
        store = getattr(self, "store", None)
        if store is None:
            return None
        exams = [
            (record.event_date, record.content)
            for record in store.list(category="schedule")
            if record.event_date is not None and record.event_date >= today and _EXAM.search(record.content)
        ]
        return min(exams, default=None)

    def practice_facts(self) -> list[str]:
        """What a fresh practice sentence may be about: the learner's current facts
        about who they are, what they do and plan, newest first."""
        facts = []
        for category in ("identity", "schedule", "hobby", "habit", "preference"):
            facts.extend(r.content for r in self.store.list(category=category, limit=3))
        return facts

    def _watched(self, text: str) -> list[Mistake]:
        """The tracked mistakes the background shows for ``text`` (and the reading asks about)."""
        return relevant(self.ledger.all(), text, MISTAKES_PER_TURN)

    def _mistake_notes(self, text: str) -> list[MistakeNote]:
        notes = []
        for entry in self._watched(text):
            example = entry.latest
            original, corrected = correction_excerpt(example.original, example.corrected)
            notes.append(MistakeNote(original, corrected, entry.rule, entry.count))
        return notes

    def review_due_line(self) -> str | None:
        """ "3 mistakes to review today (type review)", at most once a day."""
        due = self.ledger.due(self.clock())
        if not due or not self.activity.claim_due_notice(self.ledger.today()):
            return None
        mistakes = sum(1 for card in due if card.is_mistake)
        words = len(due) - mistakes  # a word the learner asked to learn is a card, not a mistake
        parts = [counted(n, noun) for n, noun in ((mistakes, "mistake"), (words, "word")) if n]
        return f"{' and '.join(parts)} to review today (type review)"

    def _digest(self):
        records = self.store.catalog.digest_candidates([key for key, _ in DIGEST_SECTIONS])
        return build_user_digest(records, counter=self.counter, now=self.clock())

    # -- extraction callbacks (worker thread) -------------------------------------------
    def _job_finished(self, job: ExtractionJob) -> None:
        done = set(job.job_ids)
        with self._lock:
            self._reading = set()
            self.turn.pending_jobs = [p for p in self.turn.pending_jobs if p.job_id not in done]
        self.save_session()

    @staticmethod
    def _resumed_job(pending: PendingExtraction) -> ExtractionJob:
        """A job kept from an earlier run: only its remaining items, when it has any."""
        prepared = None
        if pending.remaining is not None:
            try:
                prepared = PreparedExtraction(ExtractionResult.model_validate(pending.remaining))
            except ValueError:
                log.warning("unreadable remaining items of job %s; reading the message again", pending.job_id)
        return ExtractionJob(
            pending.text, pending.said_at, pending.job_id, prepared=prepared, generation=pending.generation
        )

    def _note_skipped(self, outcome: ExtractionOutcome) -> None:
        for item in outcome.skipped:
            log.warning("extraction skipped a %s (%s): %s", item.kind, item.text, item.reason)
        with self._lock:
            self.turn.extraction_skipped.extend(outcome.skipped)

    def _extraction_done(self, job: ExtractionJob, outcome: ExtractionOutcome) -> None:
        self._note_skipped(outcome)
        steps = (
            [(None, new) for new in outcome.added]
            + list(outcome.updated)
            + list(outcome.superseded)
            + [(old, None) for old in outcome.retracted]
        )
        self.record_changes("turn", steps, job_id=job.job_id, reviews=outcome.reviews)
        if outcome.retry is not None:  # some items' own calls failed: keep just those
            self._extraction_failed(
                job, outcome.retry_reason or "a model call failed", remaining=outcome.retry.model_dump(mode="json")
            )
        else:
            self._job_finished(job)
        for notice in outcome.notices:
            if "Memory is full" in notice:
                if self.turn.memory_full_noticed:
                    continue
                self.turn.memory_full_noticed = True
            self._deliver(notice)
        line = self._change_line(steps)
        if line:
            self._deliver(line)
        if outcome.proposals and self.turn.awaiting is None:
            with self._lock:
                if self.turn.closing:
                    return  # kept in the proposals file: the next start asks it, where "yes" can answer

                if self.turn.turn_active:
                    # A reply is streaming: the question waits until it is over, so that
                    # a "yes" can only ever answer the question printed right before it.
                    self.turn.question_due = True
                    return
            self.ask_next_proposal()

    def _deliver(self, notice: str) -> None:
        """Show a background notice now, or after the reply when one is streaming:
        never in the middle of the tutor's words."""
        with self._lock:
            if self.turn.turn_active:
                self.turn.due_notices.append(notice)
                return
        self.notify(notice)

    def after_turn(self) -> None:
        """Called by the REPL once a turn's output is printed: show the notices and
        ask the question that arrived while the reply was streaming."""
        with self._lock:
            due, self.turn.due_notices = self.turn.due_notices, []
        for notice in due:
            self.notify(notice)
        if self.turn.question_due:
            self.turn.question_due = False
            self.ask_next_proposal()

    def _extraction_failed(self, job: ExtractionJob, reason: str, remaining: dict | None = None) -> None:
        """Keep the job (or only its ``remaining`` items) for the next start, unless
        it has failed too often."""
        gave_up = False
        with self._lock:
            self._reading = set()  # its claim lapses: it is read again here, or by whoever starts next
            self.turn.extraction_failures += 1
            self.turn.extraction_error = f"{self.clock().strftime('%H:%M')} {reason}"
            if remaining is not None and job.earlier:
                # The batch was read: what is left is in ``remaining``, kept with its last message.
                read = set(job.job_ids[:-1])
                self.turn.pending_jobs = [p for p in self.turn.pending_jobs if p.job_id not in read]
            elif job.earlier:  # the reading itself failed: each message is kept as it was
                ids = set(job.job_ids[:-1])
                self.turn.pending_jobs = [
                    p.model_copy(update={"attempts": p.attempts + 1}) if p.job_id in ids else p
                    for p in self.turn.pending_jobs
                ]
            for index, pending in enumerate(self.turn.pending_jobs):
                if pending.job_id == job.job_id:
                    attempts = pending.attempts + 1
                    if attempts >= MAX_EXTRACTION_ATTEMPTS:
                        del self.turn.pending_jobs[index]
                        gave_up = True
                    else:
                        update = (
                            {"attempts": attempts}
                            if remaining is None
                            else {"attempts": attempts, "remaining": remaining}
                        )
                        self.turn.pending_jobs[index] = pending.model_copy(update=update)
                    break
        self.save_session()
        reason = reason.strip().rstrip(".")  # it sits inside brackets: no "failure.)."
        said = quoted(job.text, 60, end="")
        if job.earlier:  # a batch: every message of it is kept, not only the last
            said = f"{len(job.messages)} messages ending with {said}"
        if gave_up:
            note = (
                f"Gave up reading memories from {said} after {MAX_EXTRACTION_ATTEMPTS} "
                f"failures ({reason}). Use 'remember <text>' to keep something by hand."
            )
        else:
            note = (
                f"Could not save memories from {said} yet ({reason}). "
                "Memora will try again after 'reindex' or at the next start."
            )
        with self._lock:
            self.turn.unsaved_notes.append(note)

    def ask_next_proposal(self) -> ProfileProposal | None:
        proposal = self.proposals.first()
        self.turn.awaiting = proposal
        if proposal is not None:
            self.turn.rebuild_asked = False  # a newer question: "yes" answers it, not the rebuild
            self.notify(proposal.question())
        return proposal

    def answer_proposal(self, accept: bool, proposal_id: str | None = None) -> str:
        """Apply or discard a pending proposal (the first one unless ``proposal_id``)."""
        target = proposal_id or (self.turn.awaiting.id if self.turn.awaiting else None)
        proposal = self.proposals.take(target)
        self.turn.awaiting = None
        if proposal is None:
            return "There is no pending profile change."
        if accept:
            return proposal.apply(self.profiles, self.ledger)
        if proposal.field == "review_card":
            return f"Okay, no card for {quoted(proposal.value, 60)}"
        return f"Okay, I left your profile as it is ({proposal.describe()} discarded)."

    # -- visible, reversible memory writes ---------------------------------------------
    def record_changes(self, origin: str, steps, *, job_id: str = "", reviews=()) -> None:
        """Remember a memory change so 'undo' can take it back (one set per turn:
        a correction applied right after the reply and the turn's extraction merge),
        with the reviews its reading counted on mistake cards."""
        steps = [tuple(step) for step in steps if step[0] or step[1]]
        reviews = [tuple(review) for review in reviews]
        if not steps and not reviews:
            return
        with self._lock:
            if job_id and self._changes and self._changes[-1].job_id == job_id:
                self._changes[-1].steps.extend(steps)
                self._changes[-1].reviews.extend(reviews)
            else:
                self._changes.append(
                    ChangeSet(at=self.clock(), origin=origin, job_id=job_id, steps=steps, reviews=reviews)
                )
                del self._changes[:-MAX_UNDO]
        self.save_session()

    def drop_changes(self, ids=None) -> None:
        """A real deletion ends what undo could take back: ``forget all`` (``ids``
        None) clears every change set, ``forget <id>`` drops the steps naming a
        deleted id, so undo never offers to restore what no longer exists."""
        with self._lock:
            if ids is None:
                self._changes, self._undone = [], []
            else:
                gone = set(ids)
                for change in self._changes:
                    change.steps = [step for step in change.steps if not gone.intersection(step)]
                self._changes = [c for c in self._changes if c.steps]
                self._undone = [u for u in self._undone if u.id not in gone]
        self.save_session()

    def _change_line(self, steps) -> str:
        """One short line: what this turn remembered, updated or superseded."""
        parts = []
        for old_id, new_id in steps:
            new = self.store.get(new_id) if new_id else None
            if new is None:
                continue  # retractions have their own notice
            text = f"{new.id[:6]} {quoted(new.content, 48, end='')}"
            if old_id is None:
                parts.append(f"remembered {text}")
            elif new.change_reason == "update":
                parts.append(f"updated {old_id[:6]} \u2192 {text}")
            else:
                old = self.store.get(old_id)
                before = f" {quoted(old.content, 32, end='')}" if old is not None else ""
                parts.append(f"superseded {old_id[:6]}{before} \u2192 {text}")
        if not parts:
            return ""
        shown = parts[:3] + ([f"and {len(parts) - 3} more"] if len(parts) > 3 else [])
        if self.turn.closing:  # at exit no command can follow: no hint to type one
            return "Memory: " + "; ".join(shown) + "."
        return "Memory: " + "; ".join(shown) + " ('undo' takes this back)."

    def undo(self) -> list[str]:
        """Take back the last memory change set; the lines to show the learner."""
        # The learner takes back their last message's memories, read or not: a message
        # not read yet (held to be read with the next ones, being read now, or kept
        # from a failed reading) is newer than any change set, and is taken back
        # without waiting for it (its reading's writes are refused when they land).
        with self._lock:
            change = self._changes[-1] if self._changes else None
            unread = [p for p in self.turn.pending_jobs if change is None or p.said_at >= change.at]
        if unread:
            return self._take_back_unread(max(unread, key=lambda p: p.said_at))
        if change is None:
            return [
                "Nothing to undo: no recorded memory change is left to take back "
                "('forget' is a real deletion and cannot be undone)."
            ]
        result = self.store.revert(change.steps, when=self.clock())  # if this fails, the change stays undoable
        cards = [self.ledger.take_back(mistake_id, at) for mistake_id, at in change.reviews]
        if result.removed:  # taken back is deleted, as with 'forget': no copy of its text is left
            from memora.app.erasure import forget_everywhere

            forget_everywhere(self, [r.content for r in result.removed])
        now = self.clock()
        with self._lock:
            self._changes = [c for c in self._changes if c is not change]
            restored = {r.id for r in result.restored}
            self._undone.extend(UndoneMemory(id=r.id, at=now) for r in result.removed if r.id not in restored)
            del self._undone[:-MAX_UNDONE_KEPT]
        self.save_session()
        what = {
            "turn": "your message",
            "remember": "'remember'",
            "edit": "'memory edit'",
            "conflict": "'keep one' on the page",
        }[change.origin]
        done = [("removed", r) for r in result.removed] + [("restored", r) for r in result.restored]
        lines = []
        if done:
            # the last quote ends the sentence: quoted() adds the full stop only if the memory has none
            parts = [
                f"{verb} {r.id[:6]} {quoted(r.content, 48, end='.' if i == len(done) - 1 else '')}"
                for i, (verb, r) in enumerate(done)
            ]
            lines.append(
                f"Undone (the memory changes of {what} at {change.at.astimezone(now.tzinfo).strftime('%H:%M')}): "
                + "; ".join(parts)
            )
        for memory_id, why in result.skipped:
            lines.append(f"Left {memory_id[:6]} as it is: it was {why} (see 'history {memory_id[:6]}').")
        for (mistake_id, _), card in zip(change.reviews, cards, strict=True):
            lines.append(
                f"Undone: the review your message counted on card {mistake_id} ({shorten(card.rule, 60)})."
                if card is not None
                else f"Left card {mistake_id} as it is: it was reviewed again since, or forgotten."
            )
        if self._changes:
            lines.append(f"('undo' again takes back the change before: {len(self._changes)} left.)")
        return lines

    def _take_back_unread(self, message: PendingExtraction) -> list[str]:
        """Undo for a message not read yet: nothing it says will be kept."""
        self.deletions.record(self.settings.user, "reading", [message.job_id])
        with self._lock:
            self.turn.pending_jobs = [p for p in self.turn.pending_jobs if p.job_id != message.job_id]
            self.turn.held = [i for i in self.turn.held if i != message.job_id]
            left = len(self._changes) + len(self.turn.pending_jobs)
        self.save_session()
        at = message.said_at.astimezone(self.clock().tzinfo).strftime("%H:%M")
        lines = [f"Undone: nothing from your message at {at} ({quoted(message.text, 60, end='')}) will be remembered."]
        if left:
            lines.append(f"('undo' again takes back the change before: {left} left.)")
        return lines

    def undone_memory(self, memory_id: str) -> UndoneMemory | None:
        """The undo that deleted ``memory_id`` (or an id starting with it), if any."""
        key = (memory_id or "").strip().lower()
        if len(key) < 4:
            return None
        with self._lock:
            return next((u for u in reversed(self._undone) if u.id.startswith(key)), None)

    # -- sessions -----------------------------------------------------------------------
    def save_session(self) -> None:
        if self.turn.deleted:
            return  # 'forget user' removed this learner: writing now would bring a file back
        self._catch_up_deletions()
        if self.turn.deleted:
            return
        with self._lock:  # snapshot and write together: an older snapshot never lands last
            state = self.memory.to_state()
            session = SessionState(
                saved_at=self.clock(),
                messages=state["messages"],
                summary=state["summary"],
                usage=state["usage"],
                last_request=state["last_request"],
                pending_extractions=list(self.turn.pending_jobs),
                changes=[c.model_copy(deep=True) for c in self._changes],
                undone=list(self._undone),
            )
            try:
                self.sessions.save(session, known=self._known_jobs, owner=self.owner, reading=set(self._reading))
            except OSError as error:
                self.notify(f"Could not save the session to {self.paths.session}: {failure_reason(error)}.")

    def reset_session(self) -> None:
        self.read_held_messages()  # they leave the recent turns now
        with self._lock:
            self.memory.reset()
            self.turn.last_prepared = None
        self.save_session()

    def bring_up_to_date(self, say: Callable[[str], None]) -> bool:
        """Before a command shows what Memora knows: read the held messages and wait
        (bounded by the model call's timeout) for the readings under way, saying so in
        one line while it waits. What they change is announced first, as after a reply.
        True when nothing was left unread."""
        if not self.model.configured or self.turn.deleted:
            return True
        with self._lock:
            waiting = bool(self.turn.held) or self.worker.pending > 0
        if not waiting:
            return True
        say("Reading your last messages for memories first…")
        done = self.wait_for_extraction(self.settings.timeout + 5)
        if not done:
            say("Still reading; this shows what Memora knows so far.")
        return done

    def wait_for_extraction(self, timeout: float | None = 30.0) -> bool:
        """Read every message said so far (held ones too) and wait, bounded, until done."""
        self.read_held_messages()
        return self.worker.wait_idle(timeout)

    def close(self, timeout: float | None = 10.0) -> bool:
        """Finish queued extraction (bounded) and save the session.

        What the last messages' reading finds is still told, but nothing is asked:
        a profile or word-card question waits in the proposals file for the next
        start, and the change line has no 'undo' hint, since no line can be typed
        between "Saving memories…" and "Goodbye!"."""
        with self._lock:
            self.turn.closing = True
        self.read_held_messages()
        finished = self.worker.close(timeout)
        self.save_session()
        release_owner(self.owner)  # its claims lapse: another session may read what is left
        return finished

    # -- what other modules ask of the session --------------------------------------------
    def forget_learner(self) -> None:
        """This learner is being deleted: stop the worker and write nothing of theirs from now on."""
        with self._lock:
            self.turn.deleted = True
        # No wait for the reading under way: its writes are refused when it lands (the
        # 'user' deletion, and the worker's cancelled flag), however slow the server is.
        self.worker.cancel(timeout=0)

    def set_memory_cap(self, cap: int | None) -> None:
        self.store.set_memory_cap(cap)
        with self._lock:
            self.turn.memory_full_noticed = False  # a new cap earns a new "memory is full" notice

    def rewrite_session_texts(self, rewrite: Callable[[str], str]) -> bool:
        """Pass the conversation, its summary and the unread messages through
        ``rewrite`` (what 'forget' does to a forgotten text); True when any changed."""
        changed = False
        with self._lock:
            for message in self.memory.messages:
                new = rewrite(message["content"])
                changed |= new != message["content"]
                message["content"] = new
            summary = rewrite(self.memory.summary)
            changed |= summary != self.memory.summary
            self.memory.summary = summary
            jobs = []
            for job in self.turn.pending_jobs:
                new = rewrite(job.text)
                changed |= new != job.text
                jobs.append(job.model_copy(update={"text": new}) if new != job.text else job)
            self.turn.pending_jobs = jobs
        if changed:
            self.save_session()
        return changed

    # -- reports ------------------------------------------------------------------------
    @property
    def last_prepared(self) -> PreparedContext | None:
        return self.turn.last_prepared

    @property
    def awaiting(self) -> ProfileProposal | None:
        """The profile question just asked, which a bare "yes" or "no" answers."""
        return self.turn.awaiting

    @property
    def extraction_error(self) -> str | None:
        return self.turn.extraction_error

    @property
    def extraction_failures(self) -> int:
        return self.turn.extraction_failures

    @property
    def extraction_skipped(self) -> list[Skipped]:
        with self._lock:
            return list(self.turn.extraction_skipped)

    @property
    def held_messages(self) -> int:
        """Short messages waiting to be read with the next ones."""
        with self._lock:
            return len(self.turn.held)

    @property
    def pending_jobs(self) -> list[PendingExtraction]:
        """Messages whose memories are not read yet, oldest first."""
        with self._lock:
            return list(self.turn.pending_jobs)

    def now(self) -> datetime:
        return self.clock()
