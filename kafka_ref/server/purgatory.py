"""The purgatory: requests that cannot be answered yet wait here, without holding a thread.

Some requests must wait for something to happen. A consumer's Fetch with `min_bytes=1` and
`max_wait_ms=500` on a partition with no new data should be answered the moment a producer
appends (a long poll), or after 500 ms with nothing. A Produce with `acks=all` must wait
until every in-sync replica has the data. Kafka parks such requests as *delayed
operations* in a *purgatory* (Kafka: `DelayedOperation`, `DelayedOperationPurgatory`;
`DelayedFetch`, `DelayedProduce`) instead of blocking a request handler thread:

* an operation has `try_complete()` (check the condition; if met, complete and return True),
  `on_complete()` (build and send the response: runs exactly once) and `on_expiration()`;
* `try_complete_else_watch(op, keys)` tries once, and if the condition is not met yet
  watches the op under its keys (for a fetch: the topic-partitions it reads) and starts
  its timer;
* whoever changes a key's state calls `check_and_complete(key)`: an append to a partition
  wakes the fetches watching that partition (BROKER-22), they re-check, and the satisfied
  ones complete;
* when the timer fires first, the op is force-completed: `on_expiration()` then
  `on_complete()`, which for a fetch answers with whatever is there (BROKER-23).

`force_complete` is idempotent (a flag set once), so the race between a wake-up and the
timer cannot answer a request twice. Kafka needs locks and a hierarchical timing wheel
(`SystemTimer`) for this because its handlers are threads; on one asyncio loop the
operations never run concurrently, and the timer is the loop's own (`schedule` is
`loop.call_later`), injected so that this module stays free of asyncio and tests can
drive time by hand.

Watch lists are cleaned lazily, as Kafka's `purgeCompleted`: a completed op is removed
from a key's list when that key is next checked, and all lists are swept when the number
of completed-but-watched ops grows past `purge_interval`.

The delayed produce of `acks=all` arrives with replication (the hook is
`ReplicaManager.append_records`); on one broker the leader alone is the ISR, so acks=all is
complete at append time.

Rules: BROKER-22, BROKER-23.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Hashable, Iterable
from typing import Any, Protocol

logger = logging.getLogger("kafka_ref.server.purgatory")


class TimerHandle(Protocol):
    def cancel(self) -> None: ...


# schedule(delay_seconds, callback) -> a handle with cancel(): asyncio's loop.call_later
Scheduler = Callable[[float, Callable[[], None]], TimerHandle]


class DelayedOperation:
    """An operation that completes when its condition holds or its delay passes."""

    def __init__(self, delay_ms: int) -> None:
        self.delay_ms = max(int(delay_ms), 0)
        self.completed = False
        self._timer: TimerHandle | None = None

    # -- to implement -------------------------------------------------------------
    def try_complete(self) -> bool:
        """Check the condition; if it holds, return `self.force_complete()`, else False."""
        raise NotImplementedError

    def on_complete(self) -> None:
        """Do the operation's work (send the response). Called exactly once."""
        raise NotImplementedError

    def on_expiration(self) -> None:
        """Called (before on_complete) when the delay passed without the condition."""

    # -- machinery ----------------------------------------------------------------
    def force_complete(self) -> bool:
        """Complete now, whatever the condition; False if someone else already did."""
        if self.completed:
            return False
        self.completed = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self.on_complete()
        return True

    def run_expiration(self) -> None:
        self._timer = None
        if not self.completed:
            self.on_expiration()
            self.force_complete()


class DelayedOperationPurgatory:
    """Delayed operations watched by key (Kafka: `DelayedOperationPurgatory`)."""

    def __init__(self, name: str, schedule: Scheduler, *, purge_interval: int = 1000) -> None:
        self.name = name
        self._schedule = schedule
        self._watchers: dict[Hashable, list[DelayedOperation]] = {}
        self._purge_interval = purge_interval
        self._completed_since_purge = 0
        self.expired = 0

    def try_complete_else_watch(self, op: DelayedOperation, keys: Iterable[Hashable]) -> bool:
        """Complete `op` now if it can be; otherwise watch it under `keys` and time it.

        Returns True if the op completed during this call.
        """
        if op.try_complete():
            return True
        keys = list(keys)
        for key in keys:
            self._watchers.setdefault(key, []).append(op)
        # An op watched under several keys: one of them might have changed in between
        # (impossible on one loop, but cheap to keep Kafka's double check).
        if op.try_complete():
            return True
        op._timer = self._schedule(op.delay_ms / 1000.0, self._expire_callback(op))
        return False

    def _expire_callback(self, op: DelayedOperation) -> Callable[[], None]:
        def expire() -> None:
            if not op.completed:
                self.expired += 1
                try:
                    op.run_expiration()
                except Exception:  # a bug in one op must not stop the loop's timer
                    logger.exception("%s: delayed operation failed on expiration", self.name)
            self._note_completed()

        return expire

    def check_and_complete(self, key: Hashable) -> int:
        """Something changed for `key`: let every op watching it try to complete."""
        ops = self._watchers.get(key)
        if not ops:
            return 0
        completed = 0
        for op in list(ops):
            if op.completed:
                continue
            try:
                if op.try_complete():
                    completed += 1
            except Exception:
                logger.exception("%s: delayed operation failed", self.name)
                op.force_complete()
        remaining = [op for op in ops if not op.completed]
        if remaining:
            self._watchers[key] = remaining
        else:
            del self._watchers[key]
        for _ in range(completed):
            self._note_completed()
        return completed

    def _note_completed(self) -> None:
        self._completed_since_purge += 1
        if self._completed_since_purge >= self._purge_interval:
            self.purge_completed()

    def purge_completed(self) -> int:
        """Drop completed ops from every watch list; returns how many entries went."""
        removed = 0
        for key in list(self._watchers):
            ops = self._watchers[key]
            live = [op for op in ops if not op.completed]
            removed += len(ops) - len(live)
            if live:
                self._watchers[key] = live
            else:
                del self._watchers[key]
        self._completed_since_purge = 0
        return removed

    def watched(self, key: Hashable | None = None) -> int:
        """Ops not yet completed (under `key`, or in all)."""
        lists: Any = [self._watchers.get(key, [])] if key is not None else self._watchers.values()
        return len({id(op) for ops in lists for op in ops if not op.completed})

    def shutdown(self) -> None:
        """Complete everything still waiting (their responses go out before the close)."""
        for ops in list(self._watchers.values()):
            for op in ops:
                op.force_complete()
        self._watchers.clear()
