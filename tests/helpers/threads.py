"""Run a step of a test on another thread, and get its failure back."""

from __future__ import annotations

import threading
from collections.abc import Callable


class Conductor:
    """Runs ``steps`` on a thread while the test drives the REPL; ``join()``
    re-raises whatever failed there, so a broken ordering fails the test."""

    def __init__(self, steps: Callable[[], None]):
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(steps,), daemon=True)
        self._thread.start()

    def _run(self, steps: Callable[[], None]) -> None:
        try:
            steps()
        except BaseException as error:  # handed to join()
            self._error = error

    def join(self, timeout: float = 60) -> None:
        self._thread.join(timeout)
        assert not self._thread.is_alive(), "the conductor thread never finished"
        if self._error is not None:
            raise self._error
