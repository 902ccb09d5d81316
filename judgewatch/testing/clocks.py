"""Clocks a test moves by hand: code that reads the time takes a clock (a `clock` parameter, or a module's
`utcnow` the test replaces), and the test advances it instead of sleeping."""

from __future__ import annotations

from datetime import datetime, timedelta

from judgewatch.storage.types import utcnow


class ManualClock:
    """Seconds as `time.monotonic` gives them, moving only when the test says."""

    def __init__(self, start: float = 1000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class ShiftedUtcClock:
    """The real UTC time plus an offset the test advances: for stores that other processes write with the
    real time, so their timestamps and this clock's stay in order."""

    def __init__(self) -> None:
        self.offset = timedelta()

    def __call__(self) -> datetime:
        return utcnow() + self.offset

    def advance(self, seconds: float) -> None:
        self.offset += timedelta(seconds=seconds)
