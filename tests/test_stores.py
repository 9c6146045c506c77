"""Every JSON store Memora keeps stands on one base (``storage.JsonStore``).

The profile, the pending profile changes, the session, the mistake ledger and
the activity log each name their schema and get the same handling: a change is
written atomically into an owner-only file, a change made through another
instance (another process) is seen at the next read, and a corrupt file is
moved aside with one line while a fresh one starts. File formats are unchanged:
tests/test_layout.py opens a data folder written before.
"""

from __future__ import annotations

import json
import stat
from datetime import datetime

import pytest

from memora.app.session import ChatMessage, SessionState, SessionStore
from memora.core.storage import JsonStore
from memora.reading.proposals import ProfileProposal, ProposalStore
from memora.teaching.activity import ActivityLog
from memora.teaching.ledger import LedgerStore, NewMistake
from user_profile import UserProfileStore

NOW = datetime(2026, 12, 2, 10, 0).astimezone()
GOED = NewMistake(original="I goed home", corrected="I went home", rule="go → went", kind="grammar")


def _profile(path, notify):
    store = UserProfileStore(path, notify=notify, clock=lambda: NOW)
    return store, lambda: store.add_learning_goal("pass IELTS"), lambda: store.get().learning_goals


def _proposals(path, notify):
    store = ProposalStore(path, notify=notify)
    proposal = ProfileProposal.new("learning_goal", "add", "pass IELTS", None, "I want to pass IELTS")
    return store, lambda: store.add(proposal), lambda: [p.value for p in store.pending()]


def _session(path, notify):
    store = SessionStore(path, notify=notify)
    state = SessionState(messages=[ChatMessage(role="user", content="hello")])
    return store, lambda: store.save(state), lambda: [m.content for m in store.load().messages]


def _ledger(path, notify):
    store = LedgerStore(path, clock=lambda: NOW, notify=notify)
    return store, lambda: store.record(GOED), lambda: [m.examples[0].original for m in store.all()]


def _activity(path, notify):
    store = ActivityLog(path, clock=lambda: NOW, notify=notify)
    return store, lambda: store.record_turn(), lambda: {d.isoformat(): a.turns for d, a in store.days().items()}


STORES = {
    "user_profile.json": _profile,
    "memora_proposals.json": _proposals,
    "memora_session.json": _session,
    "memora_mistakes.json": _ledger,
    "memora_activity.json": _activity,
}


@pytest.mark.parametrize("name", STORES)
def test_a_change_is_written_owner_only_and_another_instance_sees_it(tmp_path, name):
    path = tmp_path / name
    store, change, shown = STORES[name](path, None)
    other, _, shown_by_other = STORES[name](path, None)
    assert isinstance(store, JsonStore)
    before = shown_by_other()  # read (and kept) before the change
    change()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert shown_by_other() == shown() != before
    assert json.loads(path.read_text(encoding="utf-8"))  # plain JSON, as before


@pytest.mark.parametrize("name", STORES)
def test_a_corrupt_file_is_moved_aside_with_one_line_and_a_fresh_one_starts(tmp_path, name):
    path = tmp_path / name
    path.write_text("{not json", encoding="utf-8")
    notices: list[str] = []
    store, change, shown = STORES[name](path, notices.append)
    fresh = shown()
    change()
    [moved] = [p for p in tmp_path.iterdir() if p.name.startswith(f"{name}.corrupt-")]
    assert moved.read_text(encoding="utf-8") == "{not json"
    assert len(notices) == 1 and moved.name in notices[0]
    assert shown() != fresh


@pytest.mark.parametrize("name", STORES)
def test_deleting_a_store_removes_its_file(tmp_path, name):
    path = tmp_path / name
    store, change, shown = STORES[name](path, None)
    change()
    store.delete()
    assert not path.exists()
    assert shown() == STORES[name](tmp_path / "never-written.json", None)[2]()
