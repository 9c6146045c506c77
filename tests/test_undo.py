"""Visible and reversible memory writes: the change line after a turn, and 'undo'."""

from __future__ import annotations

import pytest
from helpers.scripts import decide, extraction, fact, naming, retracting
from helpers.stores import chroma_collection


def say(app, text):
    app.chat(text, on_delta=lambda _: None)
    assert app.wait_for_extraction(10)


def contents(app, **filters):
    return sorted(r.content for r in app.store.list(**filters))


def stored_then_superseded(app, server, existing, category, facts, *, by_word):
    """Store ``existing``; script a turn with ``facts`` where the one containing
    ``by_word`` supersedes it. Returns the stored memory."""
    app.store.add(existing, category=category)
    [old] = app.store.list()
    server.script("extraction", extraction(*facts))
    answer = decide(**{by_word: naming(old.content, "SUPERSEDE")})
    server.script("reconcile", *[answer] * len(facts))
    server.script("reconcile_many", answer)
    return old


def test_a_turn_that_changed_memory_says_so_in_one_line_after_the_reply(make_app, server, run_repl):
    app = make_app()
    facts = [fact("The learner's name is Ming.", "name"), fact("The learner moved to Tokyo last month.", "identity")]
    taipei = stored_then_superseded(app, server, "The learner lives in Taipei.", "identity", facts, by_word="Tokyo")
    t = run_repl(app, ["My name is Ming and I moved to Tokyo last month.", "memories"])
    name = app.store.list(category="name")[0]
    tokyo = app.store.list(category="identity")[0]
    [line] = [ln for ln in t.text.splitlines() if ln.startswith("Note: Memory: ")]
    assert f"remembered {name.id[:6]} \u201cThe learner's name is Ming.\u201d" in line
    assert f"superseded {taipei.id[:6]} \u201cThe learner lives in Taipei.\u201d \u2192 {tokyo.id[:6]}" in line
    assert "'undo' takes this back" in line
    # after the reply, never inside it, and before the next prompt
    reply_at = t.text.index("Memora: Reply 1.")
    assert reply_at < t.text.index("Note: Memory: ") < t.text.index("You: memories")


def test_a_change_that_lands_while_a_reply_streams_is_shown_after_that_reply(make_app, server, run_repl):
    app = make_app()
    server.script("extraction", extraction(fact("The learner plays the violin.", "hobby")))

    def second_reply(body):
        assert app.wait_for_extraction(10)  # the first message's extraction lands mid-turn
        return "Second reply, in one piece."

    server.script("chat", "First reply.", second_reply)
    t = run_repl(app, ["I play the violin.", "What should I practise?"], settle=False)
    assert "Memora: Second reply, in one piece.\n" in t.text
    assert t.text.index("Second reply, in one piece.") < t.text.index("Note: Memory: remembered")


def test_a_turn_with_nothing_new_prints_no_memory_line(make_app, server, run_repl):
    app = make_app()
    t = run_repl(app, ["Can you explain the present perfect?"])
    assert "Memory:" not in t.text


@pytest.mark.chroma  # what undo puts back is read from Chroma too
def test_undo_takes_back_the_last_turn_added_removed_superseded_current_again(make_app, server, run_repl):
    app = make_app()
    facts = [fact("The learner finds grammar hard.", "learning"), fact("The learner has a cat.", "identity")]
    easy = stored_then_superseded(app, server, "The learner finds grammar easy.", "learning", facts, by_word="hard")
    say(app, "Actually grammar is hard for me. I have a cat.")
    assert contents(app) == ["The learner finds grammar hard.", "The learner has a cat."]
    hard = app.store.list(category="learning")[0]

    t = run_repl(app, ["undo", f"history {easy.id}", f"history {hard.id}", "undo"])
    assert contents(app) == ["The learner finds grammar easy."]
    restored = app.store.get(easy.id)
    assert restored.is_current and restored.valid_until is None and restored.superseded_by is None
    assert restored.change_reason is None  # as it was before the turn
    assert app.store.get(hard.id) is None
    # Chroma, the canonical store, agrees: a catalog rebuilt from it has the same state
    [meta] = chroma_collection(app.store).get(ids=[easy.id], include=["metadatas"])["metadatas"]
    assert meta["status"] == "current" and not {"superseded_by", "valid_until", "change_reason"} & set(meta)
    assert chroma_collection(app.store).get(ids=[hard.id])["ids"] == []
    assert f"removed {hard.id[:6]}" in t.text and f"restored {easy.id[:6]}" in t.text
    history = t.text.split(f"You: history {easy.id}")[1].split("You: history")[0]
    assert "current again by undo 2026-11-29 10:00" in history and hard.id in history
    assert f"Memory {hard.id} was taken back by 'undo' on 2026-11-29 10:00" in t.text
    assert "Nothing to undo" in t.text.split("You: undo")[-1]
    # retrieval and the next background see the restored fact, not the one taken back
    say(app, "Tell me about grammar.")
    digest = server.chats[-1].section("learner_digest")
    assert "grammar easy" in digest and "grammar hard" not in digest


def test_undo_reverts_an_update_and_a_correction(make_app, server, run_repl):
    app = make_app()
    app.store.add("The learner likes jazz.", category="preference")
    app.store.add("The learner wants to work abroad.", category="learning")
    jazz = app.store.list(text="jazz")[0]
    abroad = app.store.list(text="abroad")[0]
    server.script(
        "extraction",
        extraction(
            fact("The learner likes 1960s jazz.", "preference"),
            corrections=[{"statement": "The learner wants to work abroad.", "evidence": "I never said that"}],
        ),
    )
    server.script(
        "reconcile",
        *[decide(jazz=naming(jazz.content, "UPDATE", "The learner likes jazz from the 1960s."))] * 2,
    )
    server.script("correction", retracting(abroad.content))
    say(app, "I like 1960s jazz. And I never said I want to work abroad.")
    assert contents(app) == ["The learner likes jazz from the 1960s."]
    run_repl(app, ["undo"])
    assert contents(app) == ["The learner likes jazz.", "The learner wants to work abroad."]
    assert app.store.count(include_superseded=True) == 2
    assert app.store.get(abroad.id).metadata.get("note") is None


def test_undo_after_remember_and_memory_edit_and_never_after_forget(make_app, server, run_repl):
    app = make_app()
    first = app.store.add("The learner has one sister.")
    t = run_repl(
        app,
        ["remember I drink green tea every morning", f"memory edit {first.id} The learner has two sisters.", "undo"],
    )
    assert contents(app) == ["I drink green tea every morning", "The learner has one sister."]
    assert "Undone (the memory changes of 'memory edit'" in t.text
    t = run_repl(app, ["undo"])
    assert contents(app) == ["The learner has one sister."]
    tea = t.text
    assert "Undone (the memory changes of 'remember'" in tea
    run_repl(app, [f"forget {first.id}"])
    t = run_repl(app, ["undo"])
    assert "Nothing to undo" in t.text and app.store.count(include_superseded=True) == 0


def test_undo_leaves_a_memory_that_changed_again_since(make_app, server, run_repl):
    app = make_app()
    facts = [fact("The learner lives in Tokyo.", "identity")]
    taipei = stored_then_superseded(app, server, "The learner lives in Taipei.", "identity", facts, by_word="Tokyo")
    say(app, "I live in Tokyo now.")
    [tokyo] = app.store.list()
    edited = app.store.edit(
        tokyo.id, "The learner lives in Tokyo, in Shibuya."
    )  # not through 'memory edit': not undoable
    t = run_repl(app, ["undo"])
    assert f"Left {tokyo.id[:6]} as it is: it was changed again since" in t.text
    assert contents(app) == ["The learner lives in Tokyo, in Shibuya."]
    assert app.store.get(taipei.id).superseded_by == tokyo.id and app.store.get(edited.id).is_current


def test_undo_survives_a_restart(make_app, server, run_repl):
    app = make_app()
    server.script("extraction", extraction(fact("The learner is left-handed.", "identity")))
    say(app, "I'm left-handed.")
    assert contents(app) == ["The learner is left-handed."]
    app.close()
    again = make_app()
    t = run_repl(again, ["undo"])
    assert "removed" in t.text and contents(again) == []


def test_undo_while_the_last_message_is_read_decides_at_once_and_the_reading_keeps_nothing(make_app, server, run_repl):
    """The reading of the last message is still at the server: undo does not wait for it
    (a slow server could outlast any wait); what it would remember is refused when it lands."""
    app = make_app()
    held = server.hold("extraction", extraction(fact("The learner plays the violin.", "hobby")))
    app.chat("I play the violin every evening after dinner.", on_delta=lambda _: None)
    held.wait_arrived()  # the reading is at the server, and stays there
    t = run_repl(app, ["undo"], settle=False)
    assert not held.answered.is_set()  # undo answered while the reading ran
    assert "Undone: nothing from your message at 10:00 (\u201cI play the violin every evening" in t.text
    held.release()
    assert app.wait_for_extraction(10)
    assert contents(app) == []
    assert not any("violin" in n and "remembered" in n for n in app.notices)


def test_help_lists_undo_and_undo_with_words_is_chat(make_app, server, run_repl):
    app = make_app()
    t = run_repl(app, ["help", "undo that last sentence please"])
    assert "undo" in t.text.split("You: help")[1].split("You: undo")[0]
    assert server.chats[-1].last_user == "undo that last sentence please"


def test_revert_is_exact_in_chroma_too_embedded_and_server(connection, tmp_path, clock):
    """A catalog rebuilt from Chroma after an undo has the restored memory current, unlinked."""
    import uuid
    from pathlib import Path

    from long_term_memory import LongTermMemoryStore
    from memora.model.embeddings import HashEmbedder
    from memora.store.catalog import catalog_path

    user = f"undo{uuid.uuid4().hex[:6]}"  # the server outlives one test

    def open_store():
        return LongTermMemoryStore(
            tmp_path / "memora_db", user_id=user, connection=connection, clock=clock, embedding_function=HashEmbedder()
        )

    store = open_store()
    first = store.add("The learner is learning Spanish.").record
    second = store.supersede(first.id, "The learner is learning French.", reason="contradiction")
    third = store.supersede(second.id, "The learner is learning French and Italian.", reason="update")
    added = store.add("The learner has a dog.").record
    result = store.revert([(second.id, third.id), (None, added.id)])
    assert {r.id for r in result.removed} == {third.id, added.id} and [r.id for r in result.restored] == [second.id]
    store.catalog.close()
    for suffix in ("", "-wal", "-shm"):
        Path(str(catalog_path(tmp_path / "memora_db", user)) + suffix).unlink(missing_ok=True)
    rebuilt = open_store()
    restored = rebuilt.get(second.id)
    assert restored.is_current and restored.superseded_by is None and restored.valid_until is None
    assert restored.change_reason == "contradiction" and restored.supersedes == first.id  # as it was made
    assert rebuilt.get(third.id) is None and rebuilt.get(added.id) is None
    assert [r.id for r in rebuilt.history(first.id)] == [first.id, second.id]
    # a second revert of the same steps changes nothing and says why
    again = rebuilt.revert([(second.id, third.id)])
    assert again.removed == () and again.restored == () and again.skipped == ((third.id, "deleted since"),)


# -- undo deletes for real, and a real deletion ends what undo could take back ------------

from helpers.stores import files_holding  # noqa: E402


@pytest.mark.chroma  # deleted means gone from Chroma's files too
def test_undo_of_an_added_memory_leaves_no_byte_of_it_in_any_file(make_app, server, run_repl, data_dir):
    app = make_app()
    for i in range(30):
        app.store.add(f"The learner keeps filler note number {i} about grammar.")
    secret, typed = "The learner's bank PIN is Xqvzpin4471.", "I drink Wqortea tea"
    server.script("extraction", extraction(fact(secret, "identity")))
    server.script("reconcile", {"action": "ADD", "memory": None, "text": None})
    run_repl(app, ["Please keep this safe.", f"remember {typed}"])
    assert files_holding(data_dir, "Xqvzpin4471", "Wqortea")  # the premise: both are on disk
    t = run_repl(app, ["undo", "undo"])
    assert t.text.count("Undone (") == 2
    assert secret not in contents(app) and typed not in contents(app) and app.store.count() == 30
    assert files_holding(data_dir, "Xqvzpin4471", "Wqortea") == {}


@pytest.mark.chroma  # deleted means gone from Chroma's files too
def test_undo_of_an_update_wipes_the_taken_back_version(make_app, server, run_repl, data_dir):
    app = make_app()
    old = app.store.add("The learner lives in Taipei.", category="identity")
    server.script("extraction", extraction(fact("The learner lives in Zorbatown near Taipei.", "identity")))
    server.script("reconcile", naming(old.content, "UPDATE"))
    run_repl(app, ["I live in Zorbatown, near Taipei."])
    t = run_repl(app, ["undo"])
    assert "Undone (" in t.text and contents(app) == ["The learner lives in Taipei."]
    holding = files_holding(data_dir, "Zorbatown near Taipei")
    assert holding == {}, holding


@pytest.mark.parametrize("lines", [["forget all", "DELETE"], ["forget user default", "default"]])
def test_forget_all_and_forget_user_clear_the_undo_stack(make_app, server, run_repl, lines):
    app = make_app()
    run_repl(app, ["remember I play the oboe", "remember I drink green tea"])
    t = run_repl(app, lines + ["undo"] if lines[0] == "forget all" else lines)
    if lines[0] == "forget all":
        undo = t.text.split("You: undo", 1)[1]
        assert "Nothing to undo" in undo and "deleted since" not in undo
    again = make_app()  # the session file keeps no undo of what was deleted
    t = run_repl(again, ["undo"])
    assert "Nothing to undo" in t.text and "deleted since" not in t.text


def test_forget_one_id_drops_it_from_the_undo_sets_and_keeps_the_rest(make_app, server, run_repl):
    app = make_app()
    server.script(
        "extraction",
        extraction(fact("The learner plays the oboe.", "habit"), fact("The learner has a cat.", "identity")),
    )
    server.script("reconcile", *[{"action": "ADD", "memory": None, "text": None}] * 2)
    run_repl(app, ["I play the oboe and I have a cat.", "remember I drink green tea"])
    [oboe] = app.store.list(text="oboe")
    [tea] = app.store.list(text="green tea")
    t = run_repl(app, [f"forget {tea.id}", "undo", "undo"])
    after = t.text.split(f"You: forget {tea.id}", 1)[1]
    assert "deleted since" not in after and "Left " not in after
    # the first undo takes back the turn (tea's 'remember' set is gone), the second has nothing left
    assert "Undone (the memory changes of your message" in after and after.count("Undone (") == 1
    assert "Nothing to undo" in after.split("You: undo", 2)[2]
    assert contents(app) == []
    assert oboe.id not in {r.id for r in app.store.list()}
