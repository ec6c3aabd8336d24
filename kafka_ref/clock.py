"""Clocks: where time comes from.

The core modules never call `time.time()`. They take a `Clock`, so the real broker runs on
`SystemClock` while tests and the simulator run on a `ManualClock` that only moves when told
to. That is what makes time-based behaviour (segment.ms, retention.ms, flush.ms,
replica.lag.time.max.ms) testable without sleeping.
"""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    def milliseconds(self) -> int:
        """Wall-clock time in milliseconds since the epoch (Kafka's `time.milliseconds()`)."""
        ...


class SystemClock:
    """The real wall clock."""

    def milliseconds(self) -> int:
        return time.time_ns() // 1_000_000


class ManualClock:
    """A clock that moves only when `advance` or `set` is called."""

    def __init__(self, now_ms: int = 1_700_000_000_000) -> None:
        self.now_ms = now_ms

    def milliseconds(self) -> int:
        return self.now_ms

    def advance(self, ms: int) -> None:
        self.now_ms += ms

    def set(self, now_ms: int) -> None:
        self.now_ms = now_ms
