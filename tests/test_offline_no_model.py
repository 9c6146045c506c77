"""Offline, without the local embedding model (issue: first contact, point 5).

The local model is found where Chroma keeps it, under the learner's home
(``embeddings.local_model_dir``), and downloaded on first use. Here the home is
empty and the network is down (every request goes to a closed port on this
machine, through the proxy setting every HTTP client reads), as on a fresh
machine offline. Every command still works without a key: ``remember`` stores
(the vector is computed at the next start with the model, or by ``reindex``),
and memory search says once that it is unavailable.
"""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from conftest import local_model_or_skip

from memora.model.embeddings import LocalEmbedder, local_model_available

REAL_HOME = Path.home()


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _empty_home(monkeypatch, tmp_path) -> None:
    """HOME is an empty folder (no model files) for this test only.

    Chroma's model class fixes where it downloads to from HOME when it is first
    imported: import it under the real home, and point it at the empty one only
    while the test runs (monkeypatch puts it back), so a later test in the same
    process still finds the model."""
    from chromadb.utils.embedding_functions.onnx_mini_lm_l6_v2 import ONNXMiniLM_L6_V2

    home = tmp_path / "empty-home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setattr(
        ONNXMiniLM_L6_V2, "DOWNLOAD_PATH", home / ".cache" / "chroma" / "onnx_models" / "all-MiniLM-L6-v2"
    )


@pytest.fixture
def offline_without_model(monkeypatch, tmp_path):
    """An empty home (no model files) and no network: each download is refused at once."""
    _empty_home(monkeypatch, tmp_path)
    proxy = f"http://127.0.0.1:{_closed_port()}"
    for name in ("HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY", "https_proxy", "http_proxy", "all_proxy"):
        monkeypatch.setenv(name, proxy)
    for name in ("NO_PROXY", "no_proxy"):
        monkeypatch.setenv(name, "127.0.0.1,localhost")  # the stand-in chat server is not the network
    assert not local_model_available()
    yield
    monkeypatch.setenv("HOME", str(REAL_HOME))


UNAVAILABLE = "Memory search is unavailable: the local embedding model all-MiniLM-L6-v2 is not on this machine"


def test_remember_stores_and_search_says_once_that_it_is_unavailable(make_app, run_repl, offline_without_model):
    app = make_app(embedder=LocalEmbedder(), base_url=None, api_key=None)
    t = run_repl(
        app,
        [
            "remember I teach maths in Tainan",
            "remember I like green tea",
            "search maths",
            "search tea",
            "memories",
            "status",
        ],
    )
    assert t.text.count("Remembered (") == 2
    assert t.text.count(UNAVAILABLE) == 1  # once, not an error for each command
    assert "Error" not in t.text and "seems to be offline" not in t.text
    assert after(t.text, "search tea").startswith("Memory search is unavailable without the local embedding model")
    listed = after(t.text, "memories")
    assert "I teach maths in Tainan" in listed and "I like green tea" in listed
    assert "2 not searchable until the local embedding model is here" in after(t.text, "status")
    assert sorted(r.content for r in app.store.list()) == ["I like green tea", "I teach maths in Tainan"]


def test_every_memory_command_works_offline_without_a_key(
    make_app, make_settings, run_repl, data_dir, offline_without_model
):
    app = make_app(embedder=LocalEmbedder(), base_url=None, api_key=None)
    t = run_repl(app, ["remember I teach maths in Tainan"])
    [record] = app.store.list()
    exported = data_dir / "mine.json"
    t = run_repl(
        app,
        [f"memory edit {record.id} I teach physics in Tainan", "undo", f"export {exported}", "why", "progress"],
    )
    assert "Error" not in t.text, t.text
    assert "Updated:" in t.text and "Undone" in t.text
    fresh = make_app(
        settings=make_settings(data_dir=data_dir.parent / "fresh", base_url=None, api_key=None),
        embedder=LocalEmbedder(),
    )
    t = run_repl(fresh, [f"import {exported}", "memories"])
    assert "Imported 1 memory" in t.text and "Error" not in t.text, t.text
    assert [r.content for r in fresh.store.list()] == ["I teach maths in Tainan"]


def test_the_next_start_with_the_model_makes_them_searchable(make_app, run_repl, monkeypatch, tmp_path):
    local_model_or_skip()
    _empty_home(monkeypatch, tmp_path)
    monkeypatch.setenv("HTTPS_PROXY", f"http://127.0.0.1:{_closed_port()}")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    offline = make_app(embedder=LocalEmbedder(), base_url=None, api_key=None)
    run_repl(offline, ["remember I teach maths in Tainan", "remember I like green tea"])
    offline.close()
    monkeypatch.setenv("HOME", str(REAL_HOME))  # the model is here now
    assert local_model_available()
    again = make_app(embedder=LocalEmbedder(), base_url=None, api_key=None)
    assert again.store.count(without_vectors=True) == 0
    t = run_repl(again, ["search maths", "status"])
    found = after(t.text, "search maths")
    assert "I teach maths in Tainan" in found.split("You:", 1)[0] and "unavailable" not in t.text
    assert "not searchable" not in t.text


def test_reindex_gives_them_their_vectors_once_the_model_is_here(make_app, run_repl, monkeypatch, tmp_path):
    local_model_or_skip()
    _empty_home(monkeypatch, tmp_path)
    monkeypatch.setenv("HTTPS_PROXY", f"http://127.0.0.1:{_closed_port()}")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    app = make_app(embedder=LocalEmbedder(), base_url=None, api_key=None)
    t = run_repl(app, ["remember I teach maths in Tainan", "reindex"])
    assert "Error" in after(t.text, "reindex")  # reindex needs the model, and says so in one line
    monkeypatch.setenv("HOME", str(REAL_HOME))  # the files were put in place meanwhile
    t = run_repl(app, ["reindex", "search maths"])
    assert "Re-embedded 1 memory" in t.text
    assert "I teach maths in Tainan" in after(t.text, "search maths")
    assert app.store.count(without_vectors=True) == 0


def after(transcript: str, line: str) -> str:
    return transcript.split(f"You: {line}\n", 1)[1]


@pytest.mark.slow  # two child processes
def test_a_fresh_machine_offline_remembers_and_the_next_start_with_the_model_finds_it(tmp_path):
    """``python chatbot.py`` as a learner runs it: no key, an empty home, no network."""
    from conftest import run_chatbot

    local_model_or_skip()
    home, data = tmp_path / "empty-home", tmp_path / "data"
    home.mkdir()
    proxy = f"http://127.0.0.1:{_closed_port()}"
    offline = run_chatbot(
        ["remember I teach maths in Tainan", "search maths", "search Tainan", "exit"],
        HOME=home,
        MEMORA_HOME=data,
        HTTPS_PROXY=proxy,
        HTTP_PROXY=proxy,
        NO_PROXY="",
        no_proxy="",
    )
    assert offline.returncode == 0, offline.stderr
    assert "Remembered (" in offline.stdout and offline.stdout.count(UNAVAILABLE) == 1
    assert "Error" not in offline.stdout + offline.stderr
    online = run_chatbot(["search maths", "exit"], HOME=REAL_HOME, MEMORA_HOME=data)
    assert online.returncode == 0, online.stderr
    assert "I teach maths in Tainan" in online.stdout and "unavailable" not in online.stdout


def test_a_memory_waiting_for_its_vector_can_be_forgotten(make_app, run_repl, data_dir, offline_without_model):
    app = make_app(embedder=LocalEmbedder(), base_url=None, api_key=None)
    run_repl(app, ["remember My locker code is 4417", "remember I like green tea"])
    code = next(r for r in app.store.list() if "4417" in r.content)
    t = run_repl(app, [f"forget {code.id}", "forget all", "DELETE"])
    assert f"Forgot {code.id}." in t.text and "Deleted 1 memory" in t.text and "Error" not in t.text
    assert app.store.count(include_superseded=True) == 0 and app.store.count(without_vectors=True) == 0


def test_with_a_chat_server_the_missing_model_is_said_once_for_chat_and_search(
    make_app, server, run_repl, offline_without_model
):
    """A local chat server (a base URL, no key) embeds with the local model: the turn
    answers without memories, and chat and 'search' together say so once."""
    app = make_app(embedder=LocalEmbedder(), api_key=None)
    t = run_repl(app, ["Can we practise the past tense today, please?", "search past tense", "search tense"])
    said = t.text.count("all-MiniLM-L6-v2 is not")
    assert said == 1, t.text
    assert "Error" not in t.text and len(server.chats) == 1
