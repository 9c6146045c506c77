"""Embedding models behind one small protocol.

* ``OpenAIEmbedder``: ``text-embedding-3-small`` (or any model name) through the
  OpenAI client, so ``OPENAI_BASE_URL`` reaches compatible servers too; its
  token usage is counted.
* ``LocalEmbedder``: Chroma's ONNX all-MiniLM-L6-v2, used when there is no API
  key. Chroma downloads it on first use; offline it must already be in
  ``~/.cache/chroma/onnx_models/all-MiniLM-L6-v2/onnx/``.
* ``HashEmbedder``: a deterministic bag-of-words hash embedding for tests and
  benchmarks, so they measure the store and the ranking, not a model.

Each embedder has a ``name`` (``"local:all-MiniLM-L6-v2"``...) that the
long-term store records, so a store is never queried with vectors from
another model.
"""

from __future__ import annotations

import hashlib
import math
import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from memora.core.errors import EmbeddingError, EmbeddingUnavailable, LocalModelUnavailable, MemoraError
from memora.core.text_utils import CJK_RANGES

if TYPE_CHECKING:
    import openai
    from tokenizers import Tokenizer

LOCAL_MODEL_NAME = "all-MiniLM-L6-v2"


@dataclass(frozen=True)
class EmbeddingResult:
    vectors: list[list[float]]
    tokens: int = 0


class Embedder(Protocol):
    name: str

    def embed(self, texts: Sequence[str]) -> EmbeddingResult: ...


def local_model_dir() -> Path:
    return Path.home() / ".cache" / "chroma" / "onnx_models" / LOCAL_MODEL_NAME / "onnx"


def local_model_available() -> bool:
    folder = local_model_dir()
    return all((folder / name).exists() for name in ("model.onnx", "tokenizer.json"))


class LocalEmbedder:
    """Chroma's local ONNX all-MiniLM-L6-v2 (384 dimensions, cosine).

    Uses the same files, tokenizer settings (truncation at 256 tokens) and mean
    pooling as Chroma's ``DefaultEmbeddingFunction``, so vectors are the same;
    but it pads each batch to its longest text instead of always to 256
    tokens, which makes short texts (every memory) ~10x cheaper to embed.
    """

    name = f"local:{LOCAL_MODEL_NAME}"
    batch_size = 8  # the activations, and so the memory, grow with the batch (a knowledge note is 128 tokens)

    def __init__(self, counter: Callable[[str], int] | None = None, *, threads: int | None = None):
        """``threads`` caps ONNX Runtime's intra-op threads; None keeps its default, one
        per core. A caller that already runs one process per core (the test suite under
        pytest-xdist) passes 1: a sentence is embedded no slower on one thread, and
        a pool per process on every core only takes turns with the other processes."""
        self._model: tuple[Any, Tokenizer] | None = None  # the ONNX session (untyped) and its tokenizer
        self._lock = threading.Lock()
        self._counter = counter
        self._threads = threads

    def _load(self) -> tuple[Any, Tokenizer]:
        with self._lock:
            if self._model is not None:
                return self._model
            if not local_model_available():
                # Online, Chroma's own function downloads the model on first use.
                from chromadb.utils.embedding_functions import DefaultEmbeddingFunction

                DefaultEmbeddingFunction()(["download"])
            import onnxruntime
            from tokenizers import Tokenizer

            folder = local_model_dir()
            tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
            tokenizer.enable_truncation(max_length=256)
            tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
            options = onnxruntime.SessionOptions()
            options.log_severity_level = 3
            options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
            options.enable_cpu_mem_arena = False  # an arena would keep the largest batch's memory for good
            if self._threads:
                options.intra_op_num_threads = self._threads
            session = onnxruntime.InferenceSession(
                str(folder / "model.onnx"), providers=["CPUExecutionProvider"], sess_options=options
            )
            self._model = (session, tokenizer)
            return self._model

    def _forward(self, texts: list[str]) -> list[list[float]]:
        import numpy as np

        session, tokenizer = self._load()
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out: list = [None] * len(texts)
        for start in range(0, len(order), self.batch_size):
            batch = [texts[i] for i in order[start : start + self.batch_size]]
            encoded = tokenizer.encode_batch(batch)
            ids = np.array([e.ids for e in encoded], dtype=np.int64)
            mask = np.array([e.attention_mask for e in encoded], dtype=np.int64)
            hidden = session.run(
                None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
            )[0]
            weights = mask[:, :, None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
            norms = np.linalg.norm(pooled, axis=1, keepdims=True)
            norms[norms == 0] = 1e-12
            for index, vector in zip(order[start : start + self.batch_size], pooled / norms):
                out[index] = vector.astype(np.float32).tolist()
        return out

    def embed(self, texts: Sequence[str]) -> EmbeddingResult:
        texts = [t if t.strip() else "(empty)" for t in texts]
        try:
            vectors = self._forward(list(texts))
        except Exception as error:
            if not local_model_available():
                raise LocalModelUnavailable(
                    f"The local embedding model {LOCAL_MODEL_NAME} is not available: it downloads on first "
                    f"use and this machine seems to be offline. Put its files in {local_model_dir()} "
                    "(see README, 'Offline use'), or set OPENAI_API_KEY to embed with OpenAI."
                ) from None
            raise EmbeddingError(f"The local embedding model failed: {type(error).__name__}: {error}") from None
        tokens = sum(self._counter(t) for t in texts) if self._counter else 0
        return EmbeddingResult(vectors, tokens)

    def warm_up(self) -> None:
        if local_model_available():
            self.embed(["warm up"])


class OpenAIEmbedder:
    """Embeddings through ``client.embeddings.create``; usage is counted."""

    def __init__(self, client_factory: Callable[[], openai.OpenAI], model: str = "text-embedding-3-small"):
        self._client_factory = client_factory
        self.model = model
        self.name = f"openai:{model}"

    def _refused(self, client, error) -> EmbeddingError:
        """A 400 or 404: the server does not serve this model (LiteLLM: "Invalid model
        name"), so the fix is the setting that names it."""
        where = getattr(getattr(client, "base_url", None), "host", None) or "the server"
        body = getattr(error, "body", None)
        detail = (body.get("message") if isinstance(body, dict) else None) or getattr(error, "message", "") or ""
        detail = " ".join(str(detail).split())[:120]
        return EmbeddingError(
            f"The embedding request failed ({error.status_code}{': ' + detail if detail else ''}): {where} does not "
            f"serve the embedding model '{self.model}'. Set MEMORA_EMBEDDING_MODEL to one it serves, or to "
            f"'local' for the built-in {LOCAL_MODEL_NAME}."
        )

    def embed(self, texts: Sequence[str]) -> EmbeddingResult:
        import openai

        texts = [t if t.strip() else "(empty)" for t in texts]
        client = None
        try:
            client = self._client_factory()
            vectors: list[list[float]] = []
            tokens = 0
            for start in range(0, len(texts), 512):
                response = client.embeddings.create(model=self.model, input=list(texts[start : start + 512]))
                ordered = sorted(response.data, key=lambda d: d.index)
                vectors.extend([list(map(float, d.embedding)) for d in ordered])
                tokens += getattr(response.usage, "total_tokens", 0) or 0
            return EmbeddingResult(vectors, tokens)
        except MemoraError:
            raise
        except openai.APIStatusError as error:
            if error.status_code in (400, 404):
                raise self._refused(client, error) from None
            raise EmbeddingError(f"The embedding request failed ({error.status_code}).") from None
        except openai.APIConnectionError as error:
            raise EmbeddingUnavailable(f"The embedding service is unreachable ({type(error).__name__}).") from None
        except Exception as error:
            raise EmbeddingError(f"The embedding request failed ({type(error).__name__}).") from None


_TOKEN = re.compile(rf"[a-z0-9]+|[{CJK_RANGES}]")


class HashEmbedder:
    """Deterministic embedding: hashed words and CJK characters, L2-normalised.

    Texts sharing words get similar vectors, which is all tests and latency
    benchmarks need; it is not a language model and is never used for chat.
    """

    def __init__(self, dim: int = 384):
        self.dim = dim
        self.name = f"hash:v1-{dim}"

    def _vector(self, text: str) -> list[float]:
        vector = [0.0] * self.dim
        for token in _TOKEN.findall(text.lower()):
            digest = hashlib.blake2b(token.encode("utf-8"), digest_size=8).digest()
            bucket = int.from_bytes(digest[:4], "little") % self.dim
            vector[bucket] += 1.0 if digest[4] & 1 else -1.0
        norm = math.sqrt(sum(x * x for x in vector))
        if norm == 0:
            vector[0] = 1.0
            return vector
        return [x / norm for x in vector]

    def embed(self, texts: Sequence[str]) -> EmbeddingResult:
        return EmbeddingResult([self._vector(t) for t in texts], sum(len(t.split()) for t in texts))


def as_embedder(embedder: Embedder | None) -> Embedder:
    """The given ``Embedder``, or the local model when there is none."""
    return LocalEmbedder() if embedder is None else embedder


def embedder_for_store(
    name: str, *, client_factory: Callable[[], openai.OpenAI] | None, counter=None
) -> tuple[Embedder | None, str]:
    """The embedder a store built with ``name`` needs, if it can run here, else
    (None, what it needs)."""
    kind, _, model = name.partition(":")
    if kind == "local" and model == LOCAL_MODEL_NAME:
        return LocalEmbedder(counter=counter), ""
    if kind == "hash" and model.startswith("v1-") and model[3:].isdigit():
        return HashEmbedder(int(model[3:])), ""
    if kind == "openai" and model:
        if client_factory is None:
            needs = "OPENAI_API_KEY" if model.startswith("text-embedding-") else "OPENAI_API_KEY or OPENAI_BASE_URL"
            return None, f"is served by an embedding endpoint and needs {needs}"
        # Through the configured server, as it was built (a gateway serves OpenAI's models
        # too); if that server does not serve it, the embedding error names the setting.
        return OpenAIEmbedder(client_factory, model), ""
    return None, "is not one Memora knows"


def make_embedder(model: str, *, client_factory: Callable[[], openai.OpenAI] | None, counter=None) -> Embedder:
    """The embedder for a configured model name.

    ``all-MiniLM-L6-v2`` / ``local`` selects the local ONNX model, ``hash``
    the deterministic test embedding; any other name is an OpenAI-compatible
    embedding model reached through the configured client.
    """
    key = model.strip().lower()
    if key in ("local", LOCAL_MODEL_NAME.lower(), f"local:{LOCAL_MODEL_NAME.lower()}"):
        return LocalEmbedder(counter=counter)
    if key.startswith("hash"):
        return HashEmbedder()
    if client_factory is None:
        raise EmbeddingError(f"The embedding model {model} needs OPENAI_API_KEY or OPENAI_BASE_URL.")
    return OpenAIEmbedder(client_factory, model.split(":", 1)[-1] if key.startswith("openai:") else model)
