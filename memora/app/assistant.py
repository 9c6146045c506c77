"""The Memora application: one learner's stores, the model and the turn.

``Memora.chat`` runs one turn as a pipeline, each step in its own place::

    route     check_message; a newer 'forget' elsewhere is caught up with
    recall    memories and knowledge notes for the message (recall.py, retrieval.py)
    compose   the background: profile, digest, memories, follow-up, mistakes (recall.py)
    fit       the conversation fitted to the token budget (memory.py)
    send      the Responses API call, streamed (llm.py)
    commit    the turn kept, the session saved once
    read      the message queued to be read for memories (reading_queue.py), by the worker

A failure anywhere before ``commit`` (model error, budget refusal, Ctrl-C)
rolls the message back: the conversation, the session file and the memories are
exactly as before the turn. What a reading changes is recorded in the undo log
(change_log.py) and announced once the reply is over.

State is shared with the extraction worker's thread: ``TurnState``, the
``ReadingQueue`` and the ``ChangeLog`` are changed only under ``self._lock``,
which they check (turn.py).
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime

from long_term_memory import LongTermMemoryStore
from memora.app import recall
from memora.app.change_log import NOTHING_TO_UNDO, ChangeLog, change_line, undo_lines
from memora.app.erasure import forget_everywhere
from memora.app.extraction import (
    ExtractionJob,
    ExtractionOutcome,
    ExtractionWorker,
    Extractor,
    PreparedExtraction,
    looks_like_correction,
    skips_extraction,
)
from memora.app.import_undo import finish_interrupted_import
from memora.app.knowledge import KnowledgeBase
from memora.app.proposals import ProfileProposal, ProposalStore
from memora.app.reading_queue import MAX_EXTRACTION_ATTEMPTS, ReadingQueue, resumed_job
from memora.app.session import PendingExtraction, SessionState, SessionStore, new_owner, release_owner
from memora.app.turn import Notifier, TurnCancelled, TurnResult, TurnState
from memora.engine.activity import ActivityLog
from memora.engine.chroma_backend import ChromaConnection
from memora.engine.config import Settings
from memora.engine.deletions import DeletionLog
from memora.engine.embeddings import Embedder, make_embedder
from memora.engine.errors import (
    EmbeddingError,
    EmbeddingModelMismatch,
    LimitError,
    MemoraError,
    ModelNotConfigured,
    VectorsMissing,
    failure_reason,
)
from memora.engine.ledger import LedgerStore
from memora.engine.llm import ModelClient
from memora.engine.model_facts import shutdown_note
from memora.engine.prompts import SYSTEM_PROMPT
from memora.engine.storage import ensure_private_dir
from memora.engine.text_utils import quoted
from memora.engine.timeutil import Clock, said_day, system_clock
from memora.engine.tokens import TokenCounter
from user_profile import UserProfileStore

log = logging.getLogger("memora")

MAX_MESSAGE_CHARS = 8000


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
        self.settings, self.paths, self.clock = settings, settings.paths, clock
        self.notify = notifier or Notifier(print)
        self._lock = threading.RLock()
        self.turn = TurnState(self._lock)
        self.counter, self.model, self.embedder, self.connection = counter, model, embedder, connection
        self.switch_to: Embedder | None = None  # the configured model, while the store's own is kept
        ensure_private_dir(settings.data_dir)
        ensure_private_dir(self.paths.folder)
        self.profiles = UserProfileStore(
            self.paths.profile, max_items=settings.max_profile_items, notify=self.notify, clock=clock
        )
        # What was forgotten, shared by every learner and process of the data folder:
        # a reading that started before a deletion cannot undo it (deletions.py).
        self.deletions = DeletionLog(settings.db_dir)
        self.owner = new_owner()  # this session's name, for claiming messages to read
        self.ledger = LedgerStore(
            self.paths.mistakes, clock=clock, notify=self._deliver, deletions=self.deletions, learner=settings.user
        )
        self.activity = ActivityLog(self.paths.activity, clock=clock, notify=self.notify)
        self.proposals = ProposalStore(self.paths.proposals, notify=self.notify)
        self.sessions = SessionStore(self.paths.session, notify=self.notify)
        self._open_store()
        self.knowledge = KnowledgeBase(settings.knowledge_dir, connection, self.embedder)
        self.memory = recall.conversation_memory(settings, counter, model.summarize)
        self._resume_session(new_session)
        extractor = Extractor(
            model=model,
            store=self.store,
            profiles=self.profiles,
            proposals=self.proposals,
            on_tokens=lambda n: self.add_usage("extraction", n),
            on_embedding_tokens=lambda n: self.add_usage("embeddings", n),
            counter=counter,
            ledger=self.ledger,
        )
        self.worker = ExtractionWorker(
            extractor, on_outcome=self._extraction_done, on_failure=self._extraction_failed, claim=self._claim
        )
        if model.configured:
            retiring = shutdown_note(settings.model, clock().date())
            if retiring:
                self.notify(retiring)
            for pending in self.pending_jobs:
                self.worker.submit(resumed_job(pending))
        if new_session:
            self.save_session()

    def _open_store(self) -> None:
        settings = self.settings
        self.store = LongTermMemoryStore(
            settings.db_dir,
            embedding_function=self.embedder,
            user_id=settings.user,
            connection=self.connection,
            memory_cap=settings.memory_cap,
            clock=self.clock,
            recency_half_life_days=settings.recency_half_life_days,
            deletions=self.deletions,
        )
        finish_interrupted_import(self.store, self.paths, self.notify)  # a crash cut an import short
        if self.store.mismatch:
            factory = self.model.openai if self.model.configured else None
            kept = recall.settle_embedding_model(self.store, self.embedder, factory, self.counter.count, self.notify)
            if kept is not None:
                self.embedder, self.switch_to = kept, self.embedder

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
        finish_interrupted_import(self.store, self.paths, self.notify)  # it waited for a vanished store's rebuild
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
            f"Your memories' vectors are missing: {cause}. The catalog still lists your {current} "
            f"{'memory' if current == 1 else 'memories'}{versions}. Rebuild the vectors from it now, "
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

    def _resume_session(self, new_session: bool) -> None:
        """The saved conversation, or a fresh one that keeps usage, unread messages and undo."""
        state = SessionState() if new_session else self.sessions.load()
        if new_session:
            previous = self.sessions.load()
            state.usage = previous.usage
            state.pending_extractions = previous.pending_extractions
            state.changes, state.undone = previous.changes, previous.undone
        with self._lock:
            self.memory.load_state(state.model_dump(mode="json"))
        self.queue = ReadingQueue(self._lock, state.pending_extractions)
        self.changes = ChangeLog(self._lock, state.changes, state.undone)
        # The newest 'forget all' (or 'forget user') this session has taken in: a newer one,
        # made by another process, clears this conversation too (_catch_up_deletions).
        self._forgotten_at = self.deletions.newest(self.settings.user)

    # -- notices ----------------------------------------------------------------------
    def set_notify(self, notify: Callable[[str], None]) -> None:
        """Where notices go from now on (the REPL's console once it is ready)."""
        self.notify.target = notify

    def take_unsaved_notes(self) -> list[str]:
        """Notices about messages whose memories could not be saved, once each.

        The REPL prints them at the next prompt rather than when the worker
        fails, so they never land in the middle of a streaming reply."""
        with self._lock:
            notes, self.turn.unsaved_notes = self.turn.unsaved_notes, ()
        return list(notes)

    def unsaved_messages(self) -> int:
        """How many messages still wait to have their memories read (what ``exit`` waits for)."""
        with self._lock:
            return len(self.queue.pending) if self.worker.pending else len(self.queue.held)

    def retry_pending_extractions(self, timeout: float | None = 30.0) -> int:
        """Queue again every message whose extraction failed (``reindex`` calls this
        once the store matches the model again); returns how many."""
        if not self.model.configured:
            return 0
        self.worker.wait_idle(timeout)  # whatever is still pending now is not queued
        jobs = self.queue.requeue()  # a job read before keeps only its remaining items
        for job in jobs:
            self.worker.submit(job)
        return len(jobs)

    def add_usage(self, kind: str, tokens: int) -> None:
        """Count tokens spent outside a chat turn (a 'search', extraction)."""
        with self._lock:
            self.memory.add_token_usage(tokens, kind)

    # -- the turn -----------------------------------------------------------------------
    def chat(self, text: str, *, on_delta: Callable[[str], None]) -> TurnResult:
        """One chat turn (see the module docstring). Raises ``MemoraError`` with
        the conversation unchanged when the turn cannot complete."""
        text, now, notes = self.check_message(text), self.clock(), []
        self._start_turn(text)
        try:
            early = self._read_correction_early(text, now)
            recalled = self._recall(text, now, notes)
            background = recall.compose(
                recalled, text=text, now=now, early=early, store=self.store, profiles=self.profiles,
                ledger=self.ledger, counter=self.counter, settings=self.settings, role=self.model.background_role.role,
            )  # fmt: skip
            prepared = self._fit(background, notes)
            reply = self.model.stream_reply(
                instructions=SYSTEM_PROMPT, messages=prepared.context_messages, on_delta=on_delta
            )
        except KeyboardInterrupt:
            self._roll_back_turn()
            raise TurnCancelled("Reply cancelled; that message was not kept.") from None
        except BaseException:
            self._roll_back_turn()
            raise
        message = self._commit(text, now, reply, prepared, early, notes)
        self._read(message, early, prepared)
        if reply.incomplete:
            notes.append(
                f"(reply cut off: {reply.incomplete}) The reply was kept as far as it got; "
                "raise MEMORA_MAX_OUTPUT_TOKENS for longer answers."
            )
        return TurnResult(reply=reply, prepared=prepared, memories=list(prepared.background.memories), notes=notes)

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

    def _start_turn(self, text: str) -> None:
        self._catch_up_deletions()
        with self._lock:
            self.memory.add_user_message(text)
            self.turn.turn_active = True
            self.turn.awaiting = None  # a new message is not an answer to an earlier question
            self.turn.rebuild_asked = False

    def _read_correction_early(self, text: str, now: datetime) -> PreparedExtraction | None:
        """For a message that looks like a correction, read it before the reply
        (with the messages held from its day: one call reads them all; those of
        another day are read on their own after the reply, see ``reading_queue``)."""
        if self.store.mismatch or self.store.vectors_missing or not looks_like_correction(text):
            return None
        earlier = self.queue.held_on(said_day(now))
        try:
            generation = self.deletions.generation()
            return self.worker.extractor.prepare(ExtractionJob(text, now, earlier=earlier, generation=generation))
        except MemoraError:
            return None  # read after the reply instead, like any message

    def _recall(self, text: str, now: datetime, notes: list[str]) -> recall.Recalled:
        """Memories and knowledge notes for ``text``; an embedding failure means none."""
        if self.store.mismatch or self.store.vectors_missing:
            return recall.Recalled()
        try:
            recalled = recall.recall(self.store, self.knowledge, text, now)
        except (EmbeddingError, EmbeddingModelMismatch) as error:
            with self._lock:
                if not self.turn.embedding_failure_noticed:
                    self.turn.embedding_failure_noticed = True
                    notes.append(f"Answering without memories this time: {error}")
            return recall.Recalled()
        except VectorsMissing as error:  # found vanished just now, mid-session: said once
            notes.append(f"Answering without memory search: {error}")
            return recall.Recalled()
        self.add_usage("embeddings", recalled.tokens)
        return recalled

    def _fit(self, background, notes: list[str]):
        with self._lock:
            prepared = self.memory.prepare_context(background_messages=background)
        if prepared.summary_failed:
            notes.append(f"Could not summarise older turns ({prepared.summary_failed}); kept them in full.")
        return prepared

    def _roll_back_turn(self) -> None:
        with self._lock:
            self.memory.rollback_last_user_message()
            self.turn.turn_active = False

    def _commit(self, text, now, reply, prepared, early, notes) -> PendingExtraction:
        """Keep the turn: the conversation, the request's breakdown, an early-read
        correction applied, the follow-up marked asked, and the message to read for
        memories; then the session is saved, once."""
        with self._lock:
            self.turn.turn_active = False
            self.memory.finish_turn(reply.text, prepared.context_messages, reply.total_tokens)
            self.memory.note_request(prepared, now.isoformat())
            self.turn.last_prepared = prepared
            message = PendingExtraction(
                job_id=uuid.uuid4().hex[:8], text=text, said_at=now, generation=self.deletions.generation()
            )
            self.queue.said(message)
            if skips_extraction(text):
                # An acknowledgement or greeting holds no fact and no mistake: no call,
                # and nothing left in the session file to read at the next start.
                self.turn.extraction_skipped_messages += 1
        if early and early.retractions:
            outcome = ExtractionOutcome()
            self.worker.extractor.retract(early.retractions, outcome)
            notes.extend(outcome.notices)
            self._note_skipped(outcome)
            self.changes.record("turn", [(old, None) for old in outcome.retracted], at=now, job_id=message.job_id)
        hint = prepared.background.hint
        if hint is not None:  # asked once: the catalog knows now, Chroma after the reply
            self.store.mark_followed_up(hint.memory_id, now, sync_chroma=False)
            self.worker.submit_task(lambda: self.store.push_metadata(hint.memory_id))
        self.save_session()
        self.activity.record_turn(now)
        return message

    def _read(self, message: PendingExtraction | None, early: PreparedExtraction | None = None, prepared=None) -> int:
        """Queue what the batching policy reads now (``reading_queue.plan_reading``); the
        rest stays held. ``message`` None: every held message is read (Memora must be up to date)."""
        with self._lock:
            recent = {m["content"] for m in self.memory.messages if m.get("role") == "user"}
            _, batches = self.queue.plan(
                message, early, count=self.counter.count, recent=recent, batch_size=self.settings.extraction_batch
            )
            if self.turn.deleted:
                return 0  # 'forget user' removed this learner: their words are not sent anywhere
        for batch in batches:
            self.worker.submit(batch)
        return sum(len(b.messages) for b in batches)

    def read_held_messages(self) -> int:
        """Queue the held short messages now (exit, a new session, undo: Memora must be up to date)."""
        return self._read(None)

    # -- reading for memories (worker thread) ------------------------------------------
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
            self.queue.drop(lost)
            if not keep:
                self.save_session()  # else saved when the reading lands
        if not keep:
            return None
        self.queue.claimed({m.job_id for m in keep})
        if len(keep) == len(job.messages):
            return job
        last = keep[-1]
        return replace(last, earlier=tuple(keep[:-1]), prepared=job.prepared if last is job else None)

    def _note_skipped(self, outcome: ExtractionOutcome) -> None:
        for item in outcome.skipped:
            log.warning("extraction skipped a %s (%s): %s", item.kind, item.text, item.reason)
        with self._lock:
            self.turn.extraction_skipped = (*self.turn.extraction_skipped, *outcome.skipped)

    def _extraction_done(self, job: ExtractionJob, outcome: ExtractionOutcome) -> None:
        """(worker thread) A reading landed: its changes recorded, the session saved once, then told."""
        self._note_skipped(outcome)
        steps = (
            [(None, new) for new in outcome.added]
            + list(outcome.updated)
            + list(outcome.superseded)
            + [(old, None) for old in outcome.retracted]
        )
        self.changes.record("turn", steps, at=self.clock(), job_id=job.job_id)
        if outcome.retry is not None:  # some items' own calls failed: keep just those
            reason = outcome.retry_reason or "a model call failed"
            self._extraction_failed(job, reason, remaining=outcome.retry.model_dump(mode="json"))
        else:
            self.queue.finished(job)
            self.save_session()
        with self._lock:
            told = self.turn.memory_full_noticed  # "memory is full" is said once, until the cap changes
            self.turn.memory_full_noticed = told or outcome.full
        for notice in outcome.notices:
            if outcome.full and notice == outcome.full_notice:
                if told:
                    continue
                told = True
            self._deliver(notice)
        line = change_line(self.store, steps)
        if line:
            self._deliver(line)
        if outcome.proposals:
            with self._lock:
                if self.turn.awaiting is not None:
                    return
                if self.turn.turn_active:
                    # A reply is streaming: the question waits until it is over, so that
                    # a "yes" can only ever answer the question printed right before it.
                    self.turn.question_due = True
                    return
            self.ask_next_proposal()

    def _extraction_failed(self, job: ExtractionJob, reason: str, remaining: dict | None = None) -> None:
        """(worker thread) Keep the job (or only its ``remaining`` items) for the next
        start, unless it has failed too often."""
        with self._lock:
            self.turn.extraction_failures += 1
            self.turn.extraction_error = f"{self.clock().strftime('%H:%M')} {reason}"
            gave_up = self.queue.failed(job, remaining)
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
            self.turn.unsaved_notes = (*self.turn.unsaved_notes, note)

    def _deliver(self, notice: str) -> None:
        """Show a background notice now, or after the reply when one is streaming:
        never in the middle of the tutor's words."""
        with self._lock:
            if self.turn.turn_active:
                self.turn.due_notices = (*self.turn.due_notices, notice)
                return
        self.notify(notice)

    def after_turn(self) -> None:
        """Called by the REPL once a turn's output is printed: show the notices and
        ask the question that arrived while the reply was streaming."""
        with self._lock:
            due, self.turn.due_notices = self.turn.due_notices, ()
            ask, self.turn.question_due = self.turn.question_due, False
        for notice in due:
            self.notify(notice)
        if ask:
            self.ask_next_proposal()

    def ask_next_proposal(self) -> ProfileProposal | None:
        proposal = self.proposals.first()
        with self._lock:
            self.turn.awaiting = proposal
            if proposal is not None:
                self.turn.rebuild_asked = False  # a newer question: "yes" answers it, not the rebuild
        if proposal is not None:
            self.notify(proposal.question())
        return proposal

    def answer_proposal(self, accept: bool, proposal_id: str | None = None) -> str:
        """Apply or discard a pending proposal (the first one unless ``proposal_id``)."""
        with self._lock:
            target = proposal_id or (self.turn.awaiting.id if self.turn.awaiting else None)
            self.turn.awaiting = None
        proposal = self.proposals.take(target)
        if proposal is None:
            return "There is no pending profile change."
        if accept:
            return proposal.apply(self.profiles, self.ledger)
        if proposal.field == "review_card":
            return f"Okay, no card for {quoted(proposal.value, 60)}"
        return f"Okay, I left your profile as it is ({proposal.describe()} discarded)."

    # -- visible, reversible memory writes ---------------------------------------------
    def record_changes(self, origin: str, steps, *, job_id: str = "") -> None:
        """Remember a memory change so 'undo' can take it back ('remember', 'memory edit')."""
        if self.changes.record(origin, steps, at=self.clock(), job_id=job_id):
            self.save_session()

    def drop_changes(self, ids=None) -> None:
        """A real deletion ends what undo could take back (see ``ChangeLog.drop``)."""
        self.changes.drop(ids)
        self.save_session()

    def undo(self) -> list[str]:
        """Take back the last memory change set; the lines to show the learner."""
        # The learner takes back their last message's memories, read or not: a message
        # not read yet (held to be read with the next ones, being read now, or kept
        # from a failed reading) is newer than any change set, and is taken back
        # without waiting for it (its reading's writes are refused when they land).
        change = self.changes.last()
        unread = self.queue.unread_since(change.at if change else None)
        if unread is not None:
            return self._take_back_unread(unread)
        if change is None:
            return [NOTHING_TO_UNDO]
        result = self.store.revert(change.steps, when=self.clock())  # if this fails, the change stays undoable
        if result.removed:  # taken back is deleted, as with 'forget': no copy of its text is left
            forget_everywhere(self, [r.content for r in result.removed])
        now = self.clock()
        left = self.changes.taken_back(change, result, now)
        self.save_session()
        return undo_lines(change, result, now, left)

    def _take_back_unread(self, message: PendingExtraction) -> list[str]:
        """Undo for a message not read yet: nothing it says will be kept."""
        self.deletions.record(self.settings.user, "reading", [message.job_id])
        self.queue.drop({message.job_id})
        with self._lock:
            left = len(self.changes.changes) + len(self.queue.pending)
        self.save_session()
        at = message.said_at.astimezone(self.clock().tzinfo).strftime("%H:%M")
        lines = [f"Undone: nothing from your message at {at} ({quoted(message.text, 60, end='')}) will be remembered."]
        if left:
            lines.append(f"('undo' again takes back the change before: {left} left.)")
        return lines

    def undone_memory(self, memory_id: str):
        """The undo that deleted ``memory_id`` (or an id starting with it), if any."""
        return self.changes.undone_memory(memory_id)

    # -- sessions -----------------------------------------------------------------------
    def save_session(self) -> None:
        if self.turn.deleted:
            return  # 'forget user' removed this learner: writing now would bring a file back
        self._catch_up_deletions()
        with self._lock:  # snapshot and write together: an older snapshot never lands last
            if self.turn.deleted:
                return
            state = self.memory.to_state()
            session = SessionState(
                saved_at=self.clock(),
                messages=state["messages"],
                summary=state["summary"],
                usage=state["usage"],
                last_request=state["last_request"],
                pending_extractions=list(self.queue.pending),
                changes=[c.model_copy(deep=True) for c in self.changes.changes],
                undone=list(self.changes.undone),
            )
            try:
                self.sessions.save(
                    session, known=set(self.queue.known), owner=self.owner, reading=set(self.queue.reading)
                )
            except OSError as error:
                self.notify(f"Could not save the session to {self.paths.session}: {failure_reason(error)}.")

    def load_conversation(self, state: dict, *, save: bool = False) -> None:
        """Put a conversation back (an import restores one, or undoes its own)."""
        with self._lock:
            self.memory.load_state(state)
        if save:
            self.save_session()

    def reset_session(self) -> None:
        self.read_held_messages()  # they leave the recent turns now
        with self._lock:
            self.memory.reset()
            self.turn.last_prepared = None
        self.save_session()

    def _catch_up_deletions(self) -> None:
        """Another Memora of this learner ran 'forget all' (or 'forget user') since this
        one last looked: its conversation and its messages not read yet go too."""
        newest = self.deletions.newest(self.settings.user)
        with self._lock:
            if newest <= self._forgotten_at:
                return
            self._forgotten_at = newest
        if self.deletions.newest(self.settings.user, ("user",)) >= newest:
            self.forget_learner()  # this learner was deleted elsewhere: write nothing more
            return
        with self._lock:
            self.memory.reset()
            self.queue.keep_from(newest)
            self.turn.last_prepared = None
            self.changes.drop()

    def drop_unread_messages(self) -> int:
        """'forget all': drop every message not read yet, held or kept from a failed
        reading, and the conversation, so nothing said before the deletion is remembered
        after it. A reading under way is not waited for: the deletion record refuses
        its writes when it lands (deletions.py)."""
        elsewhere = self.sessions.unread_on_disk()  # other terminals' too: known now, so the save drops them
        with self._lock:
            dropped = self.queue.clear(elsewhere)
            self.memory.reset()
            self.turn.last_prepared = None
        self.save_session()
        return dropped

    def unread_messages(self) -> int:
        """Messages said and not read for memories yet, in this terminal or another one
        of this learner (what 'forget all' deletes besides the stores)."""
        with self._lock:
            mine = {p.job_id for p in self.queue.pending}
        return len(mine | self.sessions.unread_on_disk())

    def bring_up_to_date(self, say: Callable[[str], None]) -> bool:
        """Before a command shows what Memora knows: read the held messages and wait
        (bounded by the model call's timeout) for the readings under way, saying so in
        one line while it waits. What they change is announced first, as after a reply.
        True when nothing was left unread."""
        if not self.model.configured or self.turn.deleted:
            return True
        with self._lock:
            waiting = bool(self.queue.held) or self.worker.pending > 0
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
        """Finish queued extraction (bounded) and save the session."""
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
        with self._lock:
            changed = self.memory.rewrite(rewrite) | self.queue.rewrite(rewrite)
        if changed:
            self.save_session()
        return changed

    def review_due_line(self) -> str | None:
        """ "3 mistakes to review today (type review)", at most once a day."""
        due = self.ledger.due(self.clock())
        if not due or not self.activity.claim_due_notice(self.clock().date()):
            return None
        mistakes = sum(1 for card in due if card.is_mistake)
        words = len(due) - mistakes  # a word the learner asked to learn is a card, not a mistake
        parts = [f"{n} {noun}{'s' if n != 1 else ''}" for n, noun in ((mistakes, "mistake"), (words, "word")) if n]
        return f"{' and '.join(parts)} to review today (type review)"

    # -- reports ------------------------------------------------------------------------
    @property
    def last_prepared(self):
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
    def extraction_skipped(self):
        return list(self.turn.extraction_skipped)

    @property
    def held_messages(self) -> int:
        """Short messages waiting to be read with the next ones."""
        return len(self.queue.held)

    @property
    def pending_jobs(self) -> list[PendingExtraction]:
        """Messages whose memories are not read yet, oldest first."""
        return list(self.queue.pending)

    def now(self) -> datetime:
        return self.clock()


__all__ = ["MAX_MESSAGE_CHARS", "Memora", "Notifier", "TurnCancelled", "TurnResult", "TurnState"]
