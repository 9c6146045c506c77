"""The Memora application: one learner's stores, the model and the turn.

``Memora.chat`` runs one turn as a pipeline, each step in its own place::

    route     check_message; a newer 'forget' elsewhere is caught up with
    recall    memories and knowledge notes for the message (recall.py, retrieval.py)
    compose   the background: profile, digest, memories, follow-up, mistakes (recall.py)
    fit       the conversation fitted to the token budget (memory.py)
    send      the Responses API call, streamed (llm.py)
    commit    the turn kept, its reading planned (reading_queue.py), the session saved once
    read      the planned reading submitted to the worker, which reads the message for memories

A failure anywhere before ``commit`` (model error, budget refusal, Ctrl-C)
rolls the message back: the conversation, the session file and the memories are
exactly as before the turn. What a reading changes is recorded in the undo log
(change_log.py) and announced once the reply is over.

State is shared with the extraction worker's thread: ``TurnState``, the
``ReadingQueue`` and the ``ChangeLog`` are changed only by their own methods, under
``self._lock``, which they check; the ``Conversation`` snapshots them under it
when it saves. Other modules reach the parts (``turn``, ``conversation``,
``reader``, the stores) directly; ``Memora`` keeps the turn and what spans parts.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime

from long_term_memory import LongTermMemoryStore
from memora.app import recall
from memora.app.conversation import Conversation
from memora.app.erasure import forget_everywhere
from memora.app.import_undo import finish_interrupted_import
from memora.app.knowledge import KnowledgeBase
from memora.app.reader import Reader
from memora.app.session import PendingExtraction, SessionStore, new_owner, release_owner
from memora.app.turn import Notifier, TurnCancelled, TurnResult, TurnState, check_message, cut_off_note
from memora.core.config import Settings
from memora.core.errors import (
    EmbeddingError,
    EmbeddingModelMismatch,
    MemoraError,
    VectorsMissing,
)
from memora.core.storage import ensure_private_dir
from memora.core.timeutil import Clock, system_clock
from memora.model.embeddings import Embedder, make_embedder
from memora.model.llm import ModelClient
from memora.model.model_facts import shutdown_note
from memora.model.tokens import TokenCounter
from memora.reading.cues import looks_like_correction, skips_extraction
from memora.reading.extraction import Extractor
from memora.reading.jobs import ExtractionJob, PreparedExtraction
from memora.reading.proposals import ProposalStore
from memora.store.chroma_backend import ChromaConnection
from memora.store.deletions import DeletionLog
from memora.store.index import VectorIndex
from memora.teaching.activity import ActivityLog
from memora.teaching.ledger import LedgerStore
from user_profile import UserProfileStore

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
        vectors: Callable[[str], VectorIndex] | None = None,
    ) -> Memora:
        """The application as configured: the model client, the embedder and the
        Chroma connection the settings name, unless given (tests give them, and
        ``vectors``: a learner's vector index other than their Chroma collection)."""
        notifier = Notifier(notify)
        counter = TokenCounter(settings.model, warn=notifier)
        model = ModelClient(settings, http_client=http_client, clock=clock, count=counter.count)
        embedder = embedder or make_embedder(
            settings.effective_embedding_model,
            client_factory=model.openai if settings.chat_configured else None,
            counter=counter.count,
        )
        if connection is None:
            connection = (
                ChromaConnection(url=settings.chroma_url) if settings.chroma_url else ChromaConnection(settings.db_dir)
            )
        return cls(settings, model=model, embedder=embedder, connection=connection, counter=counter,
                   clock=clock, notifier=notifier, new_session=new_session, vectors=vectors)  # fmt: skip

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
        vectors: Callable[[str], VectorIndex] | None = None,
    ):
        self.settings, self.paths, self.clock, self.vectors_for = settings, settings.paths, clock, vectors
        self.notify = notifier or Notifier(print)
        self._lock = threading.RLock()
        self.counter, self.model, self.embedder, self.connection = counter, model, embedder, connection
        model.on_lost = self.add_usage  # a failed call's tokens, which no caller gets back
        self.switch_to: Embedder | None = None  # the configured model, while the store's own is kept
        ensure_private_dir(settings.data_dir)
        ensure_private_dir(self.paths.folder)
        paths, user = self.paths, settings.user
        self.profiles = UserProfileStore(
            paths.profile, max_items=settings.max_profile_items, notify=self.notify, clock=clock
        )
        self.proposals = ProposalStore(paths.proposals, notify=self.notify)
        self.turn = TurnState(self._lock, self.notify, self.proposals)
        # What was forgotten, shared by every learner and process of the data folder:
        # a reading that started before a deletion cannot undo it (deletions.py).
        self.deletions = DeletionLog(settings.db_dir, self.notify, clock)
        self.owner = new_owner()  # this session's name, for claiming messages to read
        self.ledger = LedgerStore(
            paths.mistakes, clock=clock, notify=self.turn.deliver, deletions=self.deletions, learner=user,
            day_start=settings.day_start, new_per_day=settings.new_cards, reviews_per_day=settings.reviews_per_day,
            exam=lambda today: recall.next_exam(getattr(self, "store", None), today),
        )  # fmt: skip
        self.activity = ActivityLog(paths.activity, clock=clock, notify=self.notify)
        self.sessions = SessionStore(paths.session, notify=self.notify)
        self.memory = recall.conversation_memory(settings, counter, model.summarize)
        opening: list[int] = []  # the store embeds what waited for the model as it opens
        self._open_store(on_embedding_tokens=opening.append)
        self.knowledge = KnowledgeBase(settings.knowledge_dir, connection, self.embedder, on_tokens=self._embedded)
        self.conversation = Conversation(
            lock=self._lock, turn=self.turn, memory=self.memory, sessions=self.sessions, deletions=self.deletions,
            user=user, owner=self.owner, clock=clock, notify=self.notify, on_learner_deleted=self.forget_learner,
            new_session=new_session,
        )  # fmt: skip
        self.queue = self.conversation.queue
        self.store.on_embedding_tokens = self._embedded  # counted from the loaded usage on
        self._embedded(sum(opening))
        self.reader = Reader(
            conversation=self.conversation, turn=self.turn, store=self.store, deletions=self.deletions, user=user
        )
        extractor = Extractor(
            model=model, store=self.store, profiles=self.profiles, proposals=self.proposals, counter=counter,
            ledger=self.ledger, on_tokens=lambda n: self.add_usage("extraction", n),
            on_embedding_tokens=self._embedded, watched=lambda text: recall.watched(self.ledger, text),
        )  # fmt: skip
        self.worker = self.reader.start(extractor)
        if model.configured:
            retiring = shutdown_note(settings.model, clock().date())
            if retiring:
                self.notify(retiring)
            for job in self.queue.requeue():  # what an earlier run left unread
                self.worker.submit(job)
        if new_session:
            self.conversation.save()

    def _open_store(self, on_embedding_tokens) -> None:
        settings = self.settings
        self.store = LongTermMemoryStore(
            settings.db_dir,
            embedding_function=self.embedder,
            user_id=settings.user,
            connection=self.connection,
            vectors=self.vectors_for(settings.user) if self.vectors_for else None,
            memory_cap=settings.memory_cap,
            clock=self.clock,
            recency_half_life_days=settings.recency_half_life_days,
            deletions=self.deletions,
            on_embedding_tokens=on_embedding_tokens,
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

    def set_notify(self, notify: Callable[[str], None]) -> None:
        """Where notices go from now on (the REPL's console once it is ready)."""
        self.notify.target = notify

    def add_usage(self, kind: str, tokens: int) -> None:
        """Count tokens spent outside a chat turn (a 'search', extraction), on any thread."""
        with self._lock:
            self.memory.add_token_usage(tokens, kind)

    def _embedded(self, tokens: int) -> None:
        self.add_usage("embeddings", tokens)

    # -- the turn -----------------------------------------------------------------------
    def chat(self, text: str, *, on_delta: Callable[[str], None]) -> TurnResult:
        """One chat turn: route, recall, compose, fit, send, commit, read (see the module
        docstring). Raises ``MemoraError`` with the conversation unchanged when the turn
        cannot complete."""
        text, now, notes = self._route(text), self.clock(), list[str]()
        try:
            early = self._read_correction_early(text, now)
            recalled = self._recall(text, now, notes)
            background = self._compose(recalled, text, now, early)
            prepared = self._fit(background, notes)
            reply = self.model.stream_reply(
                instructions=self.memory.instructions, messages=prepared.context_messages, on_delta=on_delta
            )
        except KeyboardInterrupt:
            self._roll_back_turn()
            raise TurnCancelled("Reply cancelled; that message was not kept.") from None
        except BaseException:
            self._roll_back_turn()
            raise
        for reading in self._commit(text, now, reply, prepared, early, notes):
            self.worker.submit(reading)
        return TurnResult(reply=reply, prepared=prepared, memories=list(prepared.background.memories), notes=notes)

    def check_message(self, text: str) -> str:
        return check_message(text, MAX_MESSAGE_CHARS, configured=self.model.configured)

    def _route(self, text: str) -> str:
        """The message as it is sent, now the conversation's pending one; a 'forget'
        another terminal ran since the last turn is caught up with first."""
        text = self.check_message(text)
        self.conversation.catch_up()
        with self._lock:
            self.memory.add_user_message(text)
            self.turn.begin()
        return text

    def _read_correction_early(self, text: str, now: datetime) -> PreparedExtraction | None:
        """For a message that looks like a correction, read it before the reply; not while
        an earlier message is being read: the facts it corrects may not be stored yet, and
        after the reply it is read behind them."""
        if self.store.mismatch or self.store.vectors_missing or self.worker.pending or not looks_like_correction(text):
            return None
        try:
            generation = self.deletions.generation()
            return self.worker.extractor.prepare(ExtractionJob(text, now, generation=generation))
        except MemoraError:
            return None  # read after the reply instead, like any message

    def _recall(self, text: str, now: datetime, notes: list[str]) -> recall.Recalled:
        """Memories and knowledge notes for ``text``; an embedding failure means none."""
        if self.store.mismatch or self.store.vectors_missing:
            return recall.Recalled()
        try:
            recalled = recall.recall(self.store, self.knowledge, text, now)
        except (EmbeddingError, EmbeddingModelMismatch) as error:
            notes.extend(self.turn.without_memories(error))
            return recall.Recalled()
        except VectorsMissing as error:  # found vanished just now, mid-session: said once
            notes.append(f"Answering without memory search: {error}")
            return recall.Recalled()
        self._embedded(recalled.tokens)
        return recalled

    def _compose(self, recalled: recall.Recalled, text: str, now: datetime, early: PreparedExtraction | None):
        return recall.compose(
            recalled, text=text, now=now, early=early, store=self.store, profiles=self.profiles,
            ledger=self.ledger, counter=self.counter, settings=self.settings, role=self.model.background_role.role,
        )  # fmt: skip

    def fit_context(self, notes: list[str] | None = None) -> None:
        """The input budget within the model's context window; a smaller one is said once."""
        budget = self.model.fit_context(self.settings.token_budget)
        with self._lock:
            if budget != self.memory.budget.total:  # found at start, or at the first turn from a slow server
                self.memory.budget, line = replace(self.memory.budget, total=budget), self.model.context_line()
                (self.notify if notes is None else notes.append)(f"The model's context window is {line}.")

    def _fit(self, background, notes: list[str]):
        self.fit_context(notes)
        with self._lock:
            prepared = self.memory.prepare_context(background_messages=background)
        if prepared.summary_failed:
            notes.append(f"Could not summarise older turns ({prepared.summary_failed}); kept them in full.")
        return prepared

    def _roll_back_turn(self) -> None:
        with self._lock:
            self.memory.rollback_last_user_message()
            self.turn.end()

    def _commit(self, text, now, reply, prepared, early, notes) -> list[ExtractionJob]:
        """Keep the turn: the conversation, the request's breakdown, an early-read
        correction applied, the follow-up marked asked, and the reading of the message
        planned; then the session is saved, once, claiming what the worker will read.
        Returns those readings."""
        with self._lock:
            self.memory.finish_turn(reply.text, prepared.context_messages, reply.total_tokens)
            self.memory.note_request(prepared, now.isoformat())
            # An acknowledgement or greeting holds no fact and no mistake: no call,
            # and nothing left in the session file to read at the next start.
            self.turn.end(prepared, skipped=skips_extraction(text))
            message = PendingExtraction(
                job_id=uuid.uuid4().hex[:8], text=text, said_at=now, generation=self.deletions.generation()
            )
            self.queue.said(message)
        if early and early.retractions:
            notes.extend(self.reader.retract(self.worker.extractor, early, at=now, job_id=message.job_id))
        hint = prepared.background.hint
        if hint is not None:  # asked once: the catalog knows now, Chroma after the reply
            self.store.mark_followed_up(hint.memory_id, now, sync_chroma=False)
            self.worker.submit(lambda: self.store.mark_followed_up(hint.memory_id))
        notes.extend(cut_off_note(reply))
        readings = [] if self.turn.deleted else self.queue.plan(message, early)  # 'forget user': sent nowhere
        self.conversation.save()
        self.activity.record_turn(now)
        return readings

    def bring_up_to_date(self, say: Callable[[str], None]) -> bool:
        """Before a command shows what Memora knows: wait
        (bounded by the model call's timeout) for the readings under way, saying so in
        one line while it waits. What they change is announced first, as after a reply.
        True when nothing was left unread."""
        if not self.model.configured or self.turn.deleted:
            return True
        if not self.worker.pending:
            return True
        say("Reading your last messages for memories first…")
        done = self.wait_for_extraction(self.settings.timeout + 5)
        if not done:
            say("Still reading; this shows what Memora knows so far.")
        return done

    def wait_for_extraction(self, timeout: float | None = 30.0) -> bool:
        """Wait, bounded, until every message said so far is read."""
        return self.worker.wait_idle(timeout)

    def close(self, timeout: float | None = 10.0) -> bool:
        """Finish queued extraction (bounded), save the session and wipe what it deleted.

        What the last messages' reading finds is still told, but nothing is asked:
        a profile or word-card question waits in the proposals file for the next
        start, and the change line has no 'undo' hint, since no line can be typed
        between "Saving memories…" and "Goodbye!"."""
        self.turn.leaving()
        finished = self.worker.close(timeout)
        self.conversation.save()
        if (self.store.path / "erase-pending").exists():  # this session's forgets and undos leave the disk now
            self.store.erase_deleted()
        release_owner(self.owner)  # its claims lapse: another session may read what is left
        return finished

    # -- what spans the parts -------------------------------------------------------------
    def undo(self) -> list[str]:
        """Take back the last memory change set, or the last message not read yet; the lines to show."""
        return self.conversation.undo(self.store, self.ledger, lambda texts: forget_everywhere(self, texts))

    def reset_session(self) -> None:
        self.conversation.reset()

    def forget_learner(self) -> None:
        """This learner is being deleted: stop the worker and write nothing of theirs from now on."""
        self.turn.learner_deleted()
        # No wait for the reading under way: its writes are refused when it lands (the
        # 'user' deletion, and the worker's cancelled flag), however slow the server is.
        self.worker.cancel(timeout=0)

    def set_memory_cap(self, cap: int | None) -> None:
        self.store.set_memory_cap(cap)
        self.turn.new_cap()


__all__ = ["MAX_MESSAGE_CHARS", "Memora", "Notifier", "TurnCancelled", "TurnResult", "TurnState"]
