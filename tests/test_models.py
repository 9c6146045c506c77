"""Embedding models and token counting: the right one is used, and nothing crashes offline."""

from __future__ import annotations

import pytest

from memora.engine.config import Settings
from memora.engine.embeddings import LocalEmbedder, OpenAIEmbedder, make_embedder
from fake_openai import Delay
from memora.engine.tokens import TokenCounter, approximate_tokens


def test_with_an_api_key_memories_are_embedded_by_openai_through_the_base_url(make_settings, server, clock):
    from memora.app.assistant import Memora

    settings = make_settings()
    assert settings.effective_embedding_model == "text-embedding-3-small"
    app = Memora.from_settings(settings, clock=clock, notify=lambda m: None)
    assert isinstance(app.embedder, OpenAIEmbedder) and app.embedder.name == "openai:text-embedding-3-small"
    app.store.add("The learner collects stamps", memory_type="episodic")
    app.chat("The learner collects stamps, right?", on_delta=lambda _: None)
    embeddings = server.of_kind("embeddings")
    assert embeddings and all(r.body["model"] == "text-embedding-3-small" for r in embeddings)
    assert any(r.body["input"] == ["The learner collects stamps, right?"] for r in embeddings)
    assert "collects stamps" in server.chats[-1].section("long_term_memories")
    assert app.memory.usage.embeddings > 0  # the API's own usage figures are counted
    app.close()


def test_without_a_key_the_local_model_is_used(data_dir):
    settings = Settings(data_dir=data_dir).validated()
    assert settings.effective_embedding_model == "all-MiniLM-L6-v2"
    assert isinstance(make_embedder(settings.effective_embedding_model, client_factory=None), LocalEmbedder)


def test_local_embedder_gives_chromas_own_vectors(local_embedder):
    from chromadb.utils.embedding_functions import DefaultEmbeddingFunction

    texts = ["The learner likes spicy food.", "我每天都喝咖啡", "A longer sentence about airports, luggage and check-in desks " * 3]
    ours = local_embedder.embed(texts).vectors
    chromas = DefaultEmbeddingFunction()(texts)
    for a, b in zip(ours, chromas):
        assert max(abs(x - y) for x, y in zip(a, b)) < 1e-5


def test_a_store_built_with_another_model_is_refused_until_reindex(make_app, make_settings, run_repl, local_embedder):
    app = make_app()  # hash embedding
    app.store.add("The learner sings in a choir")
    app.close()
    notices: list[str] = []
    switched = make_app(embedder=local_embedder, notices=notices)
    assert any("embedded with hash:v1-384" in n and "reindex" in n for n in notices)
    t = run_repl(switched, ["search choir", "reindex", "search choir"])
    assert "Error: The memory store was built with hash:v1-384" in t.text
    assert "Re-embedded 1 memory with local:all-MiniLM-L6-v2." in t.text
    assert t.text.rsplit("You: search choir", 1)[1].count("The learner sings in a choir") == 1


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
    samples = ["The quick brown fox jumps over the lazy dog. " * 20, "我想加強旅遊英文與口說能力。" * 20, "IELTS 7.5, B2 → C1!? " * 20]
    for text in samples:
        assert approximate_tokens(text) >= real.count(text)


def test_extraction_runs_after_the_reply_not_before_it(make_app, server):
    server.script("extraction", Delay(1.5))
    app = make_app()
    app.chat("My favourite singer is Jay Chou.", on_delta=lambda _: None)
    assert app.worker.pending == 1  # the reply is back while extraction is still running
    assert app.wait_for_extraction(10)
    assert app.worker.pending == 0


@pytest.mark.parametrize("name", ["local", "all-MiniLM-L6-v2", "hash"])
def test_embedding_model_names(name):
    embedder = make_embedder(name, client_factory=None)
    assert embedder.name in ("local:all-MiniLM-L6-v2", "hash:v1-384")


def test_memories_can_be_forgotten_even_before_reindexing(make_app, run_repl, local_embedder):
    app = make_app()
    keep = app.store.add("The learner's secret is safe")
    app.store.add("Another memory")
    app.close()
    switched = make_app(embedder=local_embedder)
    t = run_repl(switched, [f"forget {keep.id}", "forget all", "DELETE"])
    assert f"Forgot {keep.id}." in t.text and "Deleted 1 memories." in t.text
    assert switched.store.count(include_superseded=True) == 0
