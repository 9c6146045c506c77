"""A clock tests move by hand."""

from __future__ import annotations

from datetime import datetime, timedelta


class FakeClock:
    """A clock tests can move: ``clock.advance(days=3)``."""

    def __init__(self, start: datetime | None = None):
        self.now = (start or datetime(2026, 11, 29, 10, 0)).astimezone()

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta) -> datetime:
        self.now = self.now + timedelta(**delta)
        return self.now
