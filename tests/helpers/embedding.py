"""The local embedding model as the tests share it."""

from __future__ import annotations

from collections.abc import Sequence

from memora.model.embeddings import EmbeddingResult, LocalEmbedder


class RememberingEmbedder:
    """The real local model, keeping each text's vector for the rest of the session.

    The model is a pure function of the text, and tests store the same crowds of
    memories and index the same shipped notes again and again; embedding each text
    once saves most of the model's time. Every vector still comes from the model.
    ``model`` is the ``LocalEmbedder`` itself, for the tests of the class."""

    def __init__(self, model: LocalEmbedder):
        self.model = model
        self.name = model.name
        self._vectors: dict[str, list[float]] = {}

    def embed(self, texts: Sequence[str]) -> EmbeddingResult:
        new = [text for text in dict.fromkeys(texts) if text not in self._vectors]
        if new:
            self._vectors.update(zip(new, self.model.embed(new).vectors))
        return EmbeddingResult([list(self._vectors[text]) for text in texts])

    def warm_up(self) -> None:
        self.model.warm_up()
