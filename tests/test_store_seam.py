"""The store seam: every embedding token is counted, on the thread that spent it, and
the app reaches the store only through its own methods (MemoryIndex)."""

from __future__ import annotations

import ast

import pytest
from conftest import ROOT
from helpers.scripts import extraction, fact

from memora.store.index import MemoryIndex


def _tokens_sent(server) -> int:
    """What the stand-in billed for every embeddings request (its usage: words of the input)."""
    total = 0
    for request in server.of_kind("embeddings"):
        inputs = request.body["input"]
        total += sum(len(str(text).split()) for text in ([inputs] if isinstance(inputs, str) else inputs))
    return total


def test_every_embedding_token_is_counted_whichever_thread_spent_it(make_settings, server, clock):
    from helpers.openai_route import openai_http_client

    from memora.app.assistant import Memora

    http = openai_http_client(server.base_url)
    app = Memora.from_settings(make_settings(base_url=None), clock=clock, notify=lambda m: None, http_client=http)
    try:
        app.store.add("The learner collects stamps.")  # the store's own embedding ('remember')
        server.script("extraction", extraction(fact("The learner plays the cello in an orchestra.", "hobby")))
        # the turn's query and the knowledge notes on this thread; the new fact on the worker's
        app.chat("I play the cello in an orchestra, and I collect stamps.", on_delta=lambda _: None)
        assert app.wait_for_extraction(10)
        inputs = [r.body["input"] for r in server.of_kind("embeddings")]
        assert ["The learner plays the cello in an orchestra."] in inputs  # extraction embedded its fact
        sent = _tokens_sent(server)
        assert sent > 0 and app.memory.usage.embeddings == sent
    finally:
        app.close()
        http.close()
    assert f'"embeddings": {sent}' in app.paths.session.read_text()  # and kept, by exit's write


def test_the_store_is_a_memory_index(make_app):
    """Everything retrieval and extraction call is declared by the protocol, and the store has it."""
    store = make_app().store
    declared = {n for n in vars(MemoryIndex) if not n.startswith("_")} | set(MemoryIndex.__annotations__)
    assert {"embed", "dense_candidates", "lexical_candidates", "get_many", "find_exact"} <= declared
    assert [name for name in sorted(declared) if not hasattr(store, name)] == []
    for path in (ROOT / "memora" / "store" / "retrieval.py", ROOT / "memora" / "reading" / "extraction.py"):
        used = {
            chain.split("store.", 1)[1].split(".")[0]
            for chain, _ in _attribute_chains(path)
            if chain.startswith(("store.", "self.store."))
        }
        assert used <= declared, (path.name, used - declared)


def _attribute_chains(path) -> list[tuple[str, int]]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Attribute):
            found.append((ast.unparse(node), node.lineno))
    return found


def test_the_app_reaches_the_store_only_through_its_methods():
    above_store = ("teaching", "reading", "app", "data", "cli")
    app_files = [
        *(p for part in above_store for p in sorted((ROOT / "memora" / part).glob("*.py"))),
        ROOT / "chatbot.py",
    ]
    reaching = [
        f"{path.name}:{line} {chain}"
        for path in app_files
        for chain, line in _attribute_chains(path)
        if chain.endswith(".catalog") and "store" in chain
    ]
    assert reaching == []
    retrieval = (ROOT / "memora" / "store" / "retrieval.py").read_text(encoding="utf-8")
    assert "getattr(store" not in retrieval and "store.catalog" not in retrieval


def test_the_conversation_is_changed_only_by_its_own_methods():
    """No module writes ConversationMemory's fields from outside (memory.py)."""
    fields = {"messages", "summary", "last_request", "usage"}
    writes = []
    for path in [*sorted((ROOT / "memora").rglob("*.py")), ROOT / "chatbot.py"]:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
            for target in targets:
                while isinstance(target, ast.Subscript):
                    target = target.value
                if isinstance(target, ast.Attribute) and target.attr in fields and "memory" in ast.unparse(target):
                    writes.append(f"{path.name}:{node.lineno} {ast.unparse(target)}")
    assert writes == []


MYPY_CONFIG = """
[mypy]
ignore_missing_imports = True
follow_imports = silent
[mypy-chromadb.*,numpy.*,openai.*,tiktoken.*,pydantic.*,httpx.*]
follow_imports = skip
"""
PROBE = """
from long_term_memory import LongTermMemoryStore
from memora.store.chroma_backend import ChromaVectors
from memora.store.index import InMemoryVectors, MemoryIndex, VectorIndex


class WithoutErase(InMemoryVectors):
    erase = None  # type: ignore[assignment]


def check(store: LongTermMemoryStore, chroma: ChromaVectors, memory: InMemoryVectors) -> None:
    seam: MemoryIndex = store
    indexes: list[VectorIndex] = [chroma, memory]
    broken: VectorIndex = WithoutErase()
"""


def test_the_store_layer_type_checks_and_each_index_meets_its_protocol(tmp_path):
    """mypy finds memora/store clean, the store a MemoryIndex and both vector indexes
    VectorIndexes, and it does catch an index that lacks a method."""
    api = pytest.importorskip("mypy.api")
    (tmp_path / "mypy.ini").write_text(MYPY_CONFIG)
    (tmp_path / "probe.py").write_text(PROBE)
    config = ["--config-file", str(tmp_path / "mypy.ini"), "--cache-dir", str(tmp_path / "cache")]
    out, err, status = api.run([*config, str(ROOT / "memora" / "store"), str(tmp_path / "probe.py")])
    errors = [line for line in out.splitlines() if ": error:" in line]
    assert len(errors) == 1, out + err  # only the index without erase()
    assert 'expression has type "WithoutErase", variable has type "VectorIndex"' in errors[0]
