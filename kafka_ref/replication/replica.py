"""What a leader knows about each of its followers (Kafka: `Replica`, its `ReplicaState`).

A leader learns about a follower only from the follower's fetches. A fetch from offset `o`
says "I have everything below `o`", so `o` is the follower's log end offset (LEO) as far as
the leader knows. Two more facts decide whether the follower is in sync (ISR-1):

* `last_caught_up_time_ms`: the last time the follower had everything the leader had. A
  fetch reaching the leader's LEO proves it at the fetch time; a fetch reaching the LEO the
  leader had at the *previous* fetch proves it at that previous fetch time. So a follower
  that keeps up with a steady stream of appends is caught up even though each fetch ends
  just behind the newest append (Kafka `Replica.updateFetchState`).
* the LEO itself, which the leader's high watermark may not pass while the follower is in
  the ISR (REPL-3).

The follower's log start offset comes with each fetch too: a consumer may be sent to read
from the follower only at an offset its log holds, between that start and its LEO (REPL-15).

A leader that takes over knows nothing about its followers yet: their LEO is unknown (-1),
so the HW cannot advance until every ISR member has fetched in the new epoch (ISR-4), and
ISR members start "caught up now", so they are not dropped before they could fetch.

Rules: ISR-1, ISR-4.
"""

from __future__ import annotations

UNKNOWN_OFFSET = -1


class Replica:
    """A follower's state as its leader sees it."""

    __slots__ = (
        "broker_id",
        "last_caught_up_time_ms",
        "last_fetch_leader_log_end_offset",
        "last_fetch_time_ms",
        "log_end_offset",
        "log_start_offset",
    )

    def __init__(self, broker_id: int, now: int, in_isr: bool) -> None:
        self.broker_id = broker_id
        self.log_end_offset = UNKNOWN_OFFSET
        self.log_start_offset = UNKNOWN_OFFSET
        self.last_fetch_leader_log_end_offset = UNKNOWN_OFFSET
        self.last_fetch_time_ms = 0
        # ISR members get a grace period of replica.lag.time.max.ms to fetch (ISR-4).
        self.last_caught_up_time_ms = now if in_isr else 0

    def update_fetch_state(
        self,
        fetch_offset: int,
        leader_end_offset: int,
        now: int,
        log_start_offset: int = UNKNOWN_OFFSET,
    ) -> None:
        """A fetch from `fetch_offset` arrived at `now` while the leader's LEO was
        `leader_end_offset`; the follower's log starts at `log_start_offset` (Kafka
        `Replica.updateFetchStateOrThrow`)."""
        if fetch_offset >= leader_end_offset:
            self.last_caught_up_time_ms = max(self.last_caught_up_time_ms, now)
        elif fetch_offset >= self.last_fetch_leader_log_end_offset:
            self.last_caught_up_time_ms = max(self.last_caught_up_time_ms, self.last_fetch_time_ms)
        self.log_end_offset = fetch_offset
        self.log_start_offset = log_start_offset
        self.last_fetch_leader_log_end_offset = leader_end_offset
        self.last_fetch_time_ms = now

    def __repr__(self) -> str:
        return (
            f"Replica({self.broker_id}, leo={self.log_end_offset}, "
            f"caught_up={self.last_caught_up_time_ms})"
        )
