"""Clocks: where time comes from.

The core modules never call `time.time()`. They take a `Clock`, so the real broker runs on
`SystemClock` while tests and the simulator run on a `ManualClock` that only moves when told
to. That is what makes time-based behaviour (segment.ms, retention.ms, flush.ms,
replica.lag.time.max.ms) testable without sleeping.

Timers follow the same idea: a core module that needs one (the group coordinator's session
timeouts) takes a `Scheduler`, `loop.call_later` in the broker and a `ManualScheduler` in
tests, whose timers fire only when the test advances its clock.
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Callable
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


class TimerHandle(Protocol):
    def cancel(self) -> None: ...


# schedule(delay_seconds, callback) -> a handle with cancel(): asyncio's `loop.call_later` in
# the broker, `ManualScheduler.schedule` in tests (the same shape as server/purgatory.py's).
Scheduler = Callable[[float, Callable[[], None]], TimerHandle]


class _ManualTimer:
    __slots__ = ("cancelled", "due_ms", "fn", "seq")

    def __init__(self, due_ms: int, seq: int, fn: Callable[[], None]) -> None:
        self.due_ms, self.seq, self.fn = due_ms, seq, fn
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True

    def __lt__(self, other: _ManualTimer) -> bool:
        return (self.due_ms, self.seq) < (other.due_ms, other.seq)


class ManualScheduler:
    """Timers on a `ManualClock`: they fire only inside `advance`, in time order.

    `schedule(delay_s, fn)` is the `Scheduler` shape (`loop.call_later`). `advance(ms)` moves
    the clock step by step to each due timer, so a timer's callback sees the clock at its own
    due time and may schedule more timers, which run in the same `advance` if they fall due
    before its end. Timers due at the same moment run in the order they were scheduled.
    """

    def __init__(self, clock: ManualClock) -> None:
        self.clock = clock
        self._timers: list[_ManualTimer] = []
        self._seq = 0

    def schedule(self, delay_s: float, fn: Callable[[], None]) -> TimerHandle:
        due = self.clock.milliseconds() + max(round(delay_s * 1000), 0)
        self._seq += 1
        timer = _ManualTimer(due, self._seq, fn)
        heapq.heappush(self._timers, timer)
        return timer

    __call__ = schedule  # so the scheduler itself can be passed where a `Scheduler` goes

    def pending(self) -> int:
        """Timers scheduled and not cancelled or run yet."""
        return sum(1 for t in self._timers if not t.cancelled)

    def advance(self, ms: int) -> None:
        """Move the clock `ms` forward, running every timer that falls due on the way."""
        end = self.clock.milliseconds() + ms
        while self._timers and self._timers[0].due_ms <= end:
            timer = heapq.heappop(self._timers)
            if timer.cancelled:
                continue
            if timer.due_ms > self.clock.milliseconds():
                self.clock.set(timer.due_ms)
            timer.cancelled = True  # ran: a late cancel() is harmless
            timer.fn()
        self.clock.set(max(end, self.clock.milliseconds()))

    def run_due(self) -> None:
        """Run the timers due now (a zero-delay timer), without moving the clock."""
        self.advance(0)
