"""Durable, private file primitives shared by every JSON file Memora owns.

* ``atomic_write_text``: write a temporary file in the same folder, fsync it,
  rename it over the old file, fsync the folder. A crash at any point leaves
  either the old file or the new one, never a torn mix.
* ``file_lock``: an exclusive advisory lock (``fcntl.flock``) on a sidecar
  ``.lock`` file, so two Memora processes can read-modify-write the same file
  without losing each other's changes.
* ``quarantine``: move a corrupt file aside as ``<name>.corrupt-<timestamp>``
  instead of overwriting it.

Files are created 0600 and folders 0700: they hold a learner's personal data.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import tempfile
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

FILE_MODE = 0o600
DIR_MODE = 0o700

T = TypeVar("T", bound=BaseModel)


def ensure_private_dir(path: Path) -> Path:
    """Create ``path`` (and parents) as 0700 if missing; return it."""
    path = Path(path)
    if not path.exists():
        path.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
        with contextlib.suppress(OSError):
            os.chmod(path, DIR_MODE)
    return path


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    except OSError as error:  # some filesystems refuse fsync on a directory
        if error.errno not in (errno.EINVAL, errno.ENOTSUP):
            raise
    finally:
        os.close(fd)


def atomic_write_text(path: Path, text: str, *, mode: int = FILE_MODE) -> None:
    """Replace ``path`` with ``text`` atomically and durably."""
    path = Path(path)
    ensure_private_dir(path.parent)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp_name, mode)
        os.replace(tmp_name, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp_name)
        raise
    fsync_dir(path.parent)


def atomic_write_json(path: Path, data: Any) -> None:
    atomic_write_text(path, json.dumps(data, ensure_ascii=False, indent=2) + "\n")


def atomic_write_model(path: Path, model: BaseModel) -> None:
    atomic_write_text(path, model.model_dump_json(indent=2) + "\n")


@contextlib.contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """Hold an exclusive lock tied to ``path`` (on ``<path>.lock``) for the block."""
    path = Path(path)
    ensure_private_dir(path.parent)
    lock_path = path.with_name(path.name + ".lock")
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, FILE_MODE)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def quarantine(path: Path, *, now: datetime | None = None) -> Path:
    """Move ``path`` aside as ``<name>.corrupt-<timestamp>`` and return the new path."""
    stamp = (now or datetime.now()).strftime("%Y%m%dT%H%M%S")
    target = path.with_name(f"{path.name}.corrupt-{stamp}")
    counter = 1
    while target.exists():
        counter += 1
        target = path.with_name(f"{path.name}.corrupt-{stamp}-{counter}")
    os.replace(path, target)
    return target


def load_model_file(
    path: Path,
    model: type[T],
    *,
    migrate: Callable[[dict], dict] | None = None,
    notify: Callable[[str], None] | None = None,
    label: str = "file",
) -> T | None:
    """Read and validate a JSON file; ``None`` when it does not exist.

    A file that is not valid JSON, or that fails validation, is moved aside with
    ``quarantine`` and reported through ``notify`` in one line; ``None`` is then
    returned so the caller starts fresh without ever overwriting the bad file.
    ``migrate`` may upgrade an older format before validation.
    """
    path = Path(path)
    try:
        raw = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except UnicodeDecodeError as error:
        return _quarantined(path, f"not UTF-8 text ({error.reason})", notify, label)
    try:
        data = json.loads(raw)
        if migrate is not None and isinstance(data, dict):
            data = migrate(data)
        return model.model_validate(data)
    except json.JSONDecodeError as error:
        reason = f"invalid JSON at line {error.lineno}"
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first.get("loc", ())) or "top level"
        reason = f"unexpected content at {where}: {first.get('msg', 'invalid')}"
    except (TypeError, ValueError) as error:
        reason = f"unreadable content ({error})"
    return _quarantined(path, reason, notify, label)


def _quarantined(path: Path, reason: str, notify, label: str):
    moved = quarantine(path)
    if notify is not None:
        notify(
            f"Your {label} {path.name} was unreadable ({reason}); it was moved to {moved.name} and a fresh one started."
        )
    return None
