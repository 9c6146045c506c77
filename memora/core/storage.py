"""Durable, private file primitives shared by every JSON file Memora owns.

* ``atomic_write_text``: write a temporary file in the same folder, fsync it,
  rename it over the old file, fsync the folder. A crash at any point leaves
  either the old file or the new one, never a torn mix.
* ``file_lock``: an exclusive advisory lock (``fcntl.flock``) on a sidecar
  ``.lock`` file, so two Memora processes can read-modify-write the same file
  without losing each other's changes.
* ``quarantine``: move a corrupt file aside as ``<name>.corrupt-<timestamp>``
  instead of overwriting it.
* ``load_model_file``: read and validate a JSON file; a file that fails is
  quarantined, or, for a file of entries, only the entries that fail are left
  out (the file as it was is kept beside it).
* ``StoredTime`` / ``StoredDay``: the times a stored file may hold: aware,
  between ``FIRST_YEAR`` and ``LAST_YEAR``.
* ``JsonStore``: the base of every JSON store (profile, pending profile
  changes, session, mistake ledger, activity log): one file of one schema, read
  with the above, changed under its lock, written atomically. Each store's
  schema sits beside its store class.

Files are created 0600 and folders 0700: they hold a learner's personal data.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import stat
import tempfile
import threading
from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Annotated, Any, Generic, TypeVar

from pydantic import AfterValidator, BaseModel, BeforeValidator, ValidationError

from memora.core.text_utils import counted

FILE_MODE = 0o600
DIR_MODE = 0o700

T = TypeVar("T", bound=BaseModel)

# Memora writes times between 1970 and now. Far outside that range a time is
# not one Memora wrote, and near years 1 and 9999 ``astimezone()`` and
# ``timestamp()`` overflow: a mistake dated 0001-01-01 would break every
# listing of it west of UTC.
FIRST_YEAR, LAST_YEAR = 1970, 2999


def checked_time(value: datetime) -> datetime:
    """``value`` if it is a time Memora can compute with, else ``ValueError`` saying why.

    A time without a UTC offset cannot be compared with Memora's own (every
    clock it uses is aware): "can't compare offset-naive and offset-aware"."""
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError("the time has no UTC offset (Memora writes times such as 2026-11-29T10:00:00+01:00)")
    checked_day(value)
    checked_day(value.astimezone(UTC))  # 2999-12-31T23:00-05:00 is already 3000 in UTC
    return value


def checked_day(value: date) -> date:
    if not FIRST_YEAR <= value.year <= LAST_YEAR:
        raise ValueError(f"the year {value.year} is outside {FIRST_YEAR}-{LAST_YEAR}")
    return value


def _iso_text(value):
    """Times in Memora's files are ISO 8601 strings: a bare number is not one Memora wrote."""
    if isinstance(value, (str, date)):
        return value
    raise ValueError("a time must be an ISO 8601 string")


StoredTime = Annotated[datetime, BeforeValidator(_iso_text), AfterValidator(checked_time)]
StoredDay = Annotated[date, BeforeValidator(_iso_text), AfterValidator(checked_day)]


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


def special_file(path: Path) -> str | None:
    """What ``path`` is when it is neither a regular file nor a folder ("a device", "a
    named pipe", "a socket"), following links; None for those, and for nothing there."""
    try:
        kind = os.stat(path).st_mode
    except (OSError, ValueError):
        return None
    if stat.S_ISREG(kind) or stat.S_ISDIR(kind):
        return None
    if stat.S_ISFIFO(kind):
        return "a named pipe"
    if stat.S_ISSOCK(kind):
        return "a socket"
    return "a device"


class NotAFile(OSError):
    """A path where a file is expected names a device, a pipe or a socket."""

    def __init__(self, path: Path, kind: str):
        super().__init__(errno.EINVAL, f"it is {kind}, not a file", str(path))


def refuse_special_file(path: Path) -> None:
    """Raise ``NotAFile`` for a device, pipe or socket: writing a file in its place would
    replace the node itself (``os.replace`` swaps the name, and as root that is /dev/null
    gone), and opening it to read can block forever (a pipe with no writer) or never end
    (/dev/zero)."""
    kind = special_file(path)
    if kind is not None:
        raise NotAFile(path, kind)


def atomic_write_text(path: Path, text: str | Iterable[str], *, mode: int = FILE_MODE) -> None:
    """Replace ``path`` with ``text`` (or its pieces, written as they come) atomically and
    durably (never a device, pipe or socket)."""
    path = Path(path)
    refuse_special_file(path)
    ensure_private_dir(path.parent)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.writelines([text] if isinstance(text, str) else text)
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


_held = threading.local()  # the lock files this thread holds, with their depth


@contextlib.contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """Hold an exclusive lock tied to ``path`` (on ``<path>.lock``) for the block.

    Re-entrant within a thread (a read that must repair the file takes the
    lock, and may be made by a change that holds it already); other threads
    and processes wait, since each takes its own ``flock``."""
    path = Path(path)
    ensure_private_dir(path.parent)
    lock_path = path.with_name(path.name + ".lock")
    held: dict[str, int] = _held.__dict__.setdefault("depth", {})
    key = os.path.abspath(lock_path)
    if held.get(key):
        held[key] += 1
        try:
            yield
        finally:
            held[key] -= 1
        return
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, FILE_MODE)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        held[key] = 1
        try:
            yield
        finally:
            del held[key]
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def _quarantine_name(path: Path, now: datetime | None) -> Path:
    stamp = (now or datetime.now()).strftime("%Y%m%dT%H%M%S")
    target = path.with_name(f"{path.name}.corrupt-{stamp}")
    counter = 1
    while target.exists():
        counter += 1
        target = path.with_name(f"{path.name}.corrupt-{stamp}-{counter}")
    return target


def quarantine(path: Path, *, now: datetime | None = None) -> Path:
    """Move ``path`` aside as ``<name>.corrupt-<timestamp>`` and return the new path."""
    target = _quarantine_name(path, now)
    os.replace(path, target)
    return target


class _Unreadable:
    def __init__(self, reason: str, data: object = None):
        self.reason, self.data = reason, data


def _read_model(path: Path, model: type[T], migrate) -> T | None | _Unreadable:
    try:
        raw = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except UnicodeDecodeError as error:
        return _Unreadable(f"not UTF-8 text ({error.reason})")
    data = None
    try:
        data = json.loads(raw)
        if migrate is not None and isinstance(data, dict):
            data = migrate(data)
        return model.model_validate(data)
    except json.JSONDecodeError as error:
        return _Unreadable(f"invalid JSON at line {error.lineno}")
    except ValidationError as error:
        return _Unreadable(f"unexpected content at {first_problem(error)}", data)
    except (TypeError, ValueError) as error:
        return _Unreadable(f"unreadable content ({error})")


def first_problem(error: ValidationError) -> str:
    """Where a validation failed and why, in one line: ``mistakes.3.card: due has no UTC offset``."""
    first = error.errors()[0]
    where = ".".join(str(part) for part in first.get("loc", ())) or "top level"
    message = str(first.get("msg", "invalid")).removeprefix("Value error, ")
    return " ".join(f"{where}: {message}".split())[:300]


def load_model_file(
    path: Path,
    model: type[T],
    *,
    migrate: Callable[[dict], dict] | None = None,
    notify: Callable[[str], None] | None = None,
    label: str = "file",
    entries: str | None = None,
) -> T | None:
    """Read and validate a JSON file; ``None`` when it does not exist.

    A file that is not valid JSON, or that fails validation, is moved aside with
    ``quarantine`` and reported through ``notify`` in one line; ``None`` is then
    returned so the caller starts fresh without ever overwriting the bad file.
    ``migrate`` may upgrade an older format before validation.

    ``entries`` names the model's list (or mapping) of entries: when only some
    entries fail (a hand-edited ledger), those are left out, the rest is kept
    and written back, and the file as it was is kept as ``<name>.corrupt-…``,
    again with one line. Either way the repair is made under the file's lock.
    """
    path = Path(path)
    loaded = _read_model(path, model, migrate)
    if not isinstance(loaded, _Unreadable):
        return loaded
    with file_lock(path):
        loaded = _read_model(path, model, migrate)  # another process may have repaired it meanwhile
        if not isinstance(loaded, _Unreadable):
            return loaded
        if entries is not None:
            kept = _without_bad_entries(loaded.data, model, entries)
            if kept is not None:
                repaired, problems = kept
                copy = _quarantine_name(path, None)
                atomic_write_text(copy, path.read_text(encoding="utf-8"))
                atomic_write_model(path, repaired)
                if notify is not None:
                    n = len(problems)
                    first = problems[0] if n == 1 else f"the first: {problems[0]}"
                    notify(
                        f"Your {label} {path.name} had {counted(n, 'entry', 'entries')} Memora cannot use "
                        f"({first}); {'it was' if n == 1 else 'they were'} left out, the rest kept, "
                        f"and the file as it was is saved as {copy.name}."
                    )
                return repaired
        return _quarantined(path, loaded.reason, notify, label)


def _without_bad_entries(data: object, model: type[T], field: str) -> tuple[T, list[str]] | None:
    """The file without the entries that fail on their own, and what was wrong
    with each; None when what fails is not an entry (then the whole file goes)."""
    if not isinstance(data, dict) or field not in data:
        return None
    entries = data[field]
    if isinstance(entries, list):
        pieces: list = [[entry] for entry in entries]
    elif isinstance(entries, dict):
        pieces = [{key: value} for key, value in entries.items()]
    else:
        return None
    kept, problems = [], []
    for index, piece in enumerate(pieces):
        try:
            model.model_validate({**data, field: piece})
        except ValidationError as error:
            where = f"{field}.{index}" if isinstance(entries, list) else f"{field}.{next(iter(piece))}"
            problem = first_problem(error)
            problems.append(problem if problem.startswith(f"{field}.") else f"{where}: {problem}")
            continue
        kept.append(piece)
    if not problems:
        return None
    if isinstance(entries, list):
        rebuilt: object = [entry for piece in kept for entry in piece]
    else:
        rebuilt = {key: value for piece in kept for key, value in piece.items()}
    try:
        return model.model_validate({**data, field: rebuilt}), problems
    except ValidationError:
        return None  # something outside the entries, or between them: the whole file goes


def _quarantined(path: Path, reason: str, notify, label: str):
    moved = quarantine(path)
    if notify is not None:
        notify(
            f"Your {label} {path.name} was unreadable ({reason}); it was moved to {moved.name} and a fresh one started."
        )
    return None


R = TypeVar("R")


class JsonStore(Generic[T]):
    """One JSON file of one schema, the base of every JSON store Memora keeps
    (the profile, the pending profile changes, the session, the mistake ledger and
    the activity log): each names its schema, says how the learner is told about
    the file, and gets the same reading, locking and writing.

    * ``read``: the file validated against ``schema``; a missing file is a fresh
      ``schema()``, a corrupt one is quarantined with one line through ``notify``
      (``load_model_file``). What was read is kept until the file changes (its
      inode, size or time: every write replaces it), so a large file is parsed
      once, not every turn; callers treat it as read-only.
    * ``change``: read, change a copy and write it back, under the file's lock,
      so two processes never lose each other's changes.
    * ``write``: atomic and owner-only (``atomic_write_model``), under ``lock``.
    """

    schema: type[T]
    label = "file"  # how a notice names the file: "Your mistake ledger memora_mistakes.json ..."
    entries: str | None = None  # the schema's list of entries: a bad entry is left out, not the whole file
    migrate: Callable[[dict], dict] | None = None  # upgrades an older format before validation

    def __init__(self, path: Path, *, notify: Callable[[str], None] | None = None):
        self.path = Path(path)
        self._notify = notify
        self._cache: tuple[tuple | None, T] | None = None

    def stamp(self) -> tuple | None:
        """What tells the file apart from the one read last, or None when there is none."""
        try:
            stat = self.path.stat()
        except OSError:
            return None
        return (stat.st_ino, stat.st_size, stat.st_mtime_ns)

    def read(self, *, notify: bool = True) -> T:
        """The file as it is now (see the class docstring); ``notify=False`` reads
        without telling the learner about a repair."""
        stamp = self.stamp()
        cached = self._cache
        if stamp is not None and cached is not None and cached[0] == stamp:
            return cached[1]
        state = load_model_file(
            self.path,
            self.schema,
            migrate=type(self).migrate,
            notify=self._notify if notify else None,
            label=self.label,
            entries=self.entries,
        )
        state = state if state is not None else self.schema()
        # Kept only when the file did not change while it was read (a repair while
        # loading rewrites it; another process may have written it meanwhile).
        self._cache = (stamp, state) if stamp is not None and self.stamp() == stamp else None
        return state

    def lock(self) -> contextlib.AbstractContextManager[None]:
        """The file's lock (``file_lock``), re-entrant within a thread."""
        return file_lock(self.path)

    def write(self, state: T) -> None:
        """Replace the file with ``state``, which is kept as read from now on (so
        not changed after); the caller holds ``lock``."""
        atomic_write_model(self.path, state)
        self._cache = (self.stamp(), state)

    def copy(self, state: T) -> T:
        """A copy of ``state`` that ``change`` may edit (a store whose entries are
        replaced, never edited in place, may copy less)."""
        return state.model_copy(deep=True)

    def change(self, change: Callable[[T], R]) -> R:
        """Apply ``change`` to a copy of the file's content and write it, under the lock."""
        with self.lock():
            state = self.copy(self.read())
            result = change(state)
            self.write(state)
            return result

    def delete(self) -> None:
        """Remove the file (deleted means gone from disk)."""
        with self.lock():
            self.path.unlink(missing_ok=True)
            self._cache = None


class UnguardedWrite(AssertionError):
    """Guarded state was changed without holding its lock: a bug, never bad input."""


class Guarded:
    """State changed only under ``lock`` (an ``RLock``, shared by everything one session
    guards): every assignment checks that the thread making it holds the lock, and
    collections are kept as tuples, so that an assignment is the only way to change them.
    A write that skipped the lock would be a race; it fails at once instead."""

    lock: threading.RLock

    def __init__(self, lock: threading.RLock):
        object.__setattr__(self, "lock", lock)

    def __setattr__(self, name: str, value) -> None:
        if not self.lock._is_owned():  # type: ignore[attr-defined]  # RLock's own check (Condition uses it), not in typeshed
            raise UnguardedWrite(f"{type(self).__name__}.{name} changed without holding its lock")
        object.__setattr__(self, name, value)
