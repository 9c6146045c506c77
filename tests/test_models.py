"""Embedding models and token counting: the right one is used, and nothing crashes offline."""

from __future__ import annotations

import json
import re

import pytest

from memora.core.config import Settings
from memora.model.embeddings import HashEmbedder, LocalEmbedder, OpenAIEmbedder, make_embedder
from memora.model.tokens import TokenCounter, approximate_tokens


def test_with_an_openai_key_memories_are_embedded_by_openai(make_settings, server, clock):
    from helpers.openai_route import openai_http_client

    from memora.app.assistant import Memora

    settings = make_settings(base_url=None)  # OpenAI itself, played by the stand-in
    assert settings.effective_embedding_model == "text-embedding-3-small"
    http = openai_http_client(server.base_url)
    app = Memora.from_settings(settings, clock=clock, notify=lambda m: None, http_client=http)
    assert isinstance(app.embedder, OpenAIEmbedder) and app.embedder.name == "openai:text-embedding-3-small"
    app.store.add("The learner collects stamps", memory_type="episodic")
    app.chat("The learner collects stamps, right?", on_delta=lambda _: None)
    embeddings = server.of_kind("embeddings")
    assert embeddings and all(r.body["model"] == "text-embedding-3-small" for r in embeddings)
    assert any(r.body["input"] == ["The learner collects stamps, right?"] for r in embeddings)
    assert "collects stamps" in server.chats[-1].section("long_term_memories")
    assert app.memory.usage.embeddings > 0  # the API's own usage figures are counted
    app.close()
    http.close()


def test_without_a_key_the_local_model_is_used(data_dir):
    settings = Settings(data_dir=data_dir).validated()
    assert settings.effective_embedding_model == "all-MiniLM-L6-v2"
    assert isinstance(make_embedder(settings.effective_embedding_model, client_factory=None), LocalEmbedder)


def test_local_embedder_gives_chromas_own_vectors(local_embedder):
    from chromadb.utils.embedding_functions import DefaultEmbeddingFunction

    texts = [
        "The learner likes spicy food.",
        "我每天都喝咖啡",
        "A longer sentence about airports, luggage and check-in desks " * 3,
    ]
    ours = local_embedder.model.embed(texts).vectors  # the class itself, not the session's remembered vectors
    chromas = DefaultEmbeddingFunction()(texts)
    for a, b in zip(ours, chromas):
        assert max(abs(x - y) for x, y in zip(a, b)) < 1e-5


def test_a_store_built_with_another_model_keeps_it_and_reindex_switches(make_app, run_repl, local_embedder):
    app = make_app()  # hash embedding
    app.store.add("The learner sings in a choir")
    app.close()
    notices: list[str] = []
    switched = make_app(embedder=local_embedder, notices=notices)  # now set to the local model
    [told] = [n for n in notices if "embedded with hash:v1-384" in n]
    assert "keeps using hash:v1-384 so memory search works" in told and "'reindex'" in told
    assert switched.store.mismatch is None and switched.embedder.name == "hash:v1-384"
    t = run_repl(switched, ["search choir", "reindex", "search choir"])
    before, after = t.text.split("You: reindex", 1)
    assert "The learner sings in a choir" in before and "Error" not in before  # search never went off
    assert "Re-embedded 1 memory with local:all-MiniLM-L6-v2." in t.text
    assert after.count("The learner sings in a choir") == 1
    assert switched.store.embedder.name == "local:all-MiniLM-L6-v2"


@pytest.mark.exact_tokens("o200k_base")
def test_unknown_models_count_with_o200k_base():
    assert TokenCounter("my-local-llama").count("hello world") == TokenCounter("gpt-4o").count("hello world")
    assert TokenCounter("my-local-llama").encoding_name == "o200k_base"


def test_special_token_text_is_counted_not_refused():
    assert TokenCounter("gpt-4.1-mini").count("<|endoftext|> is just text") > 3


def test_without_encoding_files_counting_is_approximate_and_warns_once():
    warnings: list[str] = []

    def offline(model):
        raise ConnectionError("no network")

    counter = TokenCounter("gpt-4.1-mini", warn=warnings.append, loader=offline)
    assert counter.count("hello world, how are you?") == approximate_tokens("hello world, how are you?")
    assert counter.count("我想練習英文") == 6
    counter.count_messages([{"role": "user", "content": "x" * 300}])
    assert len(warnings) == 1 and "approximate" in warnings[0] and "TIKTOKEN_CACHE_DIR" in warnings[0]
    assert counter.approximate


def test_the_approximation_does_not_undercount_english_or_chinese():
    real = TokenCounter("gpt-4.1-mini")
    samples = [
        "The quick brown fox jumps over the lazy dog. " * 20,
        "我想加強旅遊英文與口說能力。" * 20,
        "IELTS 7.5, B2 → C1!? " * 20,
    ]
    for text in samples:
        assert approximate_tokens(text) >= real.count(text)


def test_extraction_runs_after_the_reply_not_before_it(make_app, server):
    held = server.hold("extraction")
    app = make_app()  # every message read after its own reply
    app.chat("My favourite singer is Jay Chou.", on_delta=lambda _: None)
    assert app.worker.pending == 1  # the reply is back while extraction is still running
    assert not app.wait_for_extraction(0.05)
    held.release()
    assert app.wait_for_extraction(10)
    assert app.worker.pending == 0
    assert [r.kind for r in server.requests if r.kind != "embeddings"] == ["chat", "extraction"]


@pytest.mark.parametrize(
    "name, kind, expected",
    [
        ("local", LocalEmbedder, "local:all-MiniLM-L6-v2"),
        ("all-MiniLM-L6-v2", LocalEmbedder, "local:all-MiniLM-L6-v2"),
        ("ALL-MINILM-L6-V2", LocalEmbedder, "local:all-MiniLM-L6-v2"),
        ("local:all-MiniLM-L6-v2", LocalEmbedder, "local:all-MiniLM-L6-v2"),
        ("hash", HashEmbedder, "hash:v1-384"),
        ("text-embedding-3-small", OpenAIEmbedder, "openai:text-embedding-3-small"),
        ("openai:text-embedding-3-large", OpenAIEmbedder, "openai:text-embedding-3-large"),
        ("nomic-embed-text", OpenAIEmbedder, "openai:nomic-embed-text"),
    ],
)
def test_embedding_model_names(name, kind, expected):
    embedder = make_embedder(name, client_factory=lambda: None)
    assert type(embedder) is kind and embedder.name == expected


def test_an_api_embedding_model_without_a_client_is_one_clear_error():
    from memora.core.errors import EmbeddingError

    with pytest.raises(EmbeddingError, match="needs OPENAI_API_KEY or OPENAI_BASE_URL"):
        make_embedder("text-embedding-3-small", client_factory=None)


def test_memories_can_be_forgotten_even_before_reindexing(make_app, run_repl, local_embedder):
    app = make_app()
    keep = app.store.add("The learner's secret is safe")
    app.store.add("Another memory")
    app.close()
    switched = make_app(embedder=local_embedder)
    t = run_repl(switched, [f"forget {keep.id}", "forget all", "DELETE"])
    assert f"Forgot {keep.id}." in t.text and "Deleted 1 memory." in t.text
    assert switched.store.count(include_superseded=True) == 0


TRUNCATE_SAMPLES = [
    "The quick brown fox jumps over the lazy dog while the learner practises the present perfect. " * 8,
    "我想加強旅遊英文與口說能力，也想準備雅思考試。" * 8,
    "IELTS 7.5 → C1!? Let's practise 點餐 and check-in at the airport, okay? " * 8,
]


@pytest.mark.parametrize("approximate", [False, True], ids=["tiktoken", "approximate"])
@pytest.mark.parametrize("text", TRUNCATE_SAMPLES, ids=["english", "chinese", "mixed"])
def test_truncate_keeps_the_longest_prefix_within_the_limit_cut_at_a_word(text, approximate):
    def offline(model):
        raise ConnectionError("no network")

    counter = TokenCounter("gpt-4.1-mini", loader=offline if approximate else None, warn=lambda message: None)
    total = counter.count(text)
    assert counter.truncate(text, total) == text  # what fits is returned whole
    assert counter.truncate(text, total + 50) == text
    assert counter.truncate(text, 0) == ""
    for limit in (1, 5, 17, 40, total // 2, total - 1):
        cut = counter.truncate(text, limit)
        assert counter.count(cut) <= limit, (limit, cut)
        assert text.startswith(cut)
        rest = text[len(cut) :]
        if " " in text:
            assert rest[:1] in (" ", "") or cut == "" or " " not in cut, (limit, cut)  # never half a word
        # nothing much is wasted: at most the part word and the 40% the word cut may drop
        longest = max(n for n in range(len(text) + 1) if counter.count(text[:n]) <= limit)
        assert len(cut) >= 0.6 * longest - 1, (limit, len(cut), longest)


def _keywords(node, naming=False):
    """Every schema keyword used in ``node`` (names of properties and definitions excluded)."""
    if isinstance(node, list):
        return {k for item in node for k in _keywords(item)}
    if not isinstance(node, dict):
        return set()
    found = set() if naming else set(node)
    for key, value in node.items():
        found |= _keywords(value, naming=key in ("properties", "$defs") and not naming)
    return found


def test_structured_calls_send_their_schema_without_titles_and_still_parse(make_app, server):
    from pydantic import BaseModel

    from memora.model.llm import compact_schema

    server.script(
        "extraction",
        {
            "facts": [
                {
                    "text": "The learner is a nurse.",
                    "memory_type": "semantic",
                    "category": "identity",
                    "event_phrase": None,
                    "event_date": None,
                }
            ],
            "profile_changes": [],
            "corrections": [],
            "mistakes": [],
            "asked_words": [],
        },
    )
    app = make_app()
    app.chat("I work as a nurse.", on_delta=lambda _: None)
    assert app.wait_for_extraction(10)
    [request] = server.of_kind("extraction")
    schema = request.body["text"]["format"]["schema"]
    assert request.body["text"]["format"]["strict"] is True
    assert not _keywords(schema) & {"title", "description"}
    assert "mistakes" in schema["required"] and schema["additionalProperties"] is False
    assert [m.content for m in app.store.list()] == ["The learner is a nurse."]

    class Titled(BaseModel):
        """A docstring that is not sent."""

        title: str
        description: str

    compact = compact_schema(Titled)
    assert set(compact["properties"]) == {"title", "description"}  # fields with those names stay
    assert compact["required"] == ["title", "description"] and "title" not in _keywords(compact)


def test_structured_schemas_go_out_in_their_shortest_strict_form():
    """Each definition used once is written where it is used, and a nullable field
    is one type list, so the schema billed in front of every call is shorter;
    a model that refers to itself keeps its definition and stays valid."""
    from pydantic import BaseModel

    from memora.model.llm import compact_schema
    from memora.reading.jobs import ExtractionResult
    from memora.reading.writes import MemoryDecision

    schema = compact_schema(ExtractionResult)
    text = json.dumps(schema)
    assert "$ref" not in text and "$defs" not in text and "anyOf" not in text
    fact = schema["properties"]["facts"]["items"]
    assert fact["properties"]["event_date"] == {"type": ["string", "null"]}
    assert fact["additionalProperties"] is False and "event_date" in fact["required"]
    assert compact_schema(MemoryDecision)["properties"]["memory"] == {"type": ["integer", "null"]}

    class Node(BaseModel):
        label: str
        children: list[Node]

    class Tree(BaseModel):
        root: Node
        spare: Node | None

    tree = compact_schema(Tree)
    refs = {m for m in re.findall(r'"\$ref": "#/\$defs/(\w+)"', json.dumps(tree))}
    assert refs == {"Node"} and set(tree["$defs"]) == {"Node"}  # used three times: kept, and every ref resolves
    assert tree["properties"]["spare"]["anyOf"][1] == {"type": "null"}  # a nullable object keeps its anyOf
