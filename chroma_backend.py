"""Opening Chroma: an embedded ``PersistentClient`` on disk, or a Chroma server.

``ChromaConnection`` hands out collections and can ``refresh()`` itself. An
embedded client keeps its vector index in memory, so a second Memora process
writing to the same folder is invisible to the first until it reopens; the
long-term store calls ``refresh()`` when the catalog's generation shows such a
write (see ``catalog.py``).

Opening never repairs or creates anything inside an existing store that looks
wrong: a path that is a file, a folder we may not write, or a
``chroma.sqlite3`` that is not SQLite is reported as a ``StoreError`` naming
the path and the reason.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from urllib.parse import urlparse

from errors import StoreError
from storage import ensure_private_dir, file_lock

SQLITE_HEADER = b"SQLite format 3\x00"


def check_local_store(path: Path) -> None:
    """Raise ``StoreError`` if ``path`` exists but cannot be a usable Chroma store."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise StoreError(f"Cannot open the memory store at {path}: it is a file, not a folder.")
    if path.is_dir():
        if not os.access(path, os.R_OK | os.W_OK | os.X_OK):
            raise StoreError(f"Cannot open the memory store at {path}: permission denied.")
        database = path / "chroma.sqlite3"
        if database.exists():
            try:
                with open(database, "rb") as handle:
                    header = handle.read(16)
            except OSError as error:
                raise StoreError(f"Cannot open the memory store at {path}: {error.strerror}.") from None
            if header and header != SQLITE_HEADER:
                raise StoreError(
                    f"Cannot open the memory store at {path}: {database.name} is not a SQLite database "
                    "(corrupt or foreign file). Nothing was changed; move the folder aside to start afresh."
                )


class ChromaConnection:
    """One Chroma client (embedded or HTTP) shared by the stores of a process."""

    def __init__(self, path: Path | None = None, *, url: str | None = None):
        if path is None and url is None:
            raise ValueError("ChromaConnection needs a path or a url")
        self.path = Path(path) if path is not None else None
        self.url = url
        self._client = None
        self._lock = threading.RLock()
        self._epoch = 0

    @property
    def location(self) -> str:
        return self.url if self.url else str(self.path)

    @property
    def epoch(self) -> int:
        """Bumped by every ``refresh()``; collections fetched before are stale."""
        return self._epoch

    def client(self):
        with self._lock:
            if self._client is None:
                self._client = self._open()
            return self._client

    def _open(self):
        try:
            import chromadb
            from chromadb.config import Settings as ChromaSettings
        except ImportError as error:  # pragma: no cover - install problem
            raise StoreError(f"chromadb is not installed ({error}); run pip install -r requirements.txt") from None
        settings = ChromaSettings(anonymized_telemetry=False)
        if self.url:
            parsed = urlparse(self.url if "://" in self.url else f"http://{self.url}")
            if not parsed.hostname:
                raise StoreError(f"Invalid Chroma server URL {self.url!r}.")
            ssl = parsed.scheme == "https"
            port = parsed.port or (443 if ssl else 8000)
            try:
                client = chromadb.HttpClient(host=parsed.hostname, port=port, ssl=ssl, settings=settings)
                client.heartbeat()
            except Exception as error:
                raise StoreError(
                    f"Cannot reach the Chroma server at {self.url}: {type(error).__name__}: {_short(error)}"
                ) from None
            return client
        check_local_store(self.path)
        ensure_private_dir(self.path)
        try:
            # Chroma creates and migrates its database on open; two processes doing
            # that at once fail with "database is locked", so opening is serialised.
            with file_lock(self.path / "chroma.sqlite3"):
                return chromadb.PersistentClient(path=str(self.path), settings=settings)
        except Exception as error:
            raise StoreError(
                f"Cannot open the memory store at {self.path}: {type(error).__name__}: {_short(error)}"
            ) from None

    def collection(self, name: str, *, metadata: dict | None = None, create: bool = True):
        """Get (or create) a cosine-space collection that we embed for ourselves."""
        client = self.client()
        try:
            if not create:
                return client.get_collection(name, embedding_function=None)
            return client.get_or_create_collection(
                name,
                configuration={"hnsw": {"space": "cosine"}},
                metadata=metadata,
                embedding_function=None,
            )
        except StoreError:
            raise
        except Exception as error:
            if not create:
                raise
            raise StoreError(
                f"Cannot open collection {name} in {self.location}: {type(error).__name__}: {_short(error)}"
            ) from None

    def has_collection(self, name: str) -> bool:
        try:
            self.client().get_collection(name, embedding_function=None)
            return True
        except StoreError:
            raise
        except Exception:
            return False

    def delete_collection(self, name: str) -> None:
        try:
            self.client().delete_collection(name)
        except Exception as error:
            if "does not exist" not in str(error).lower():
                raise

    def list_collection_names(self) -> list[str]:
        return [c if isinstance(c, str) else c.name for c in self.client().list_collections()]

    def refresh(self) -> None:
        """Reopen the client so writes by other processes become visible."""
        with self._lock:
            if self._client is None:
                return
            if self.url is None:
                from chromadb.api.shared_system_client import SharedSystemClient

                SharedSystemClient.clear_system_cache()
            self._client = None
            self._epoch += 1


def _short(error: Exception, limit: int = 200) -> str:
    text = " ".join(str(error).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
