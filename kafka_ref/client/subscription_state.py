"""Subscription state: which partitions a consumer reads, and where it is in each.

A consumer's progress is nothing but a number per partition: its **position**, the offset
of the next record it will return (Kafka's `SubscriptionState.position`). `poll()` hands out
records from the position and moves it past them; `seek()` sets it. Nothing is stored on
the broker unless the consumer *commits* (offset_committer.py, with consumer groups).

A newly assigned partition has no position yet. Where to start is the **offset reset
strategy**, `auto.offset.reset`:

* `latest` (the default) - the end of the log: only records produced from now on;
* `earliest` - the log start offset: everything still retained;
* `none` - no guess: `poll()` raises `NoOffsetForPartitionError`.

The same strategy applies when a fetch answers OFFSET_OUT_OF_RANGE (the position fell off
the start of the log through retention, or points past its end). `seek_to_beginning` and
`seek_to_end` are just a reset requested explicitly. A reset is *lazy*: it is recorded
here, and the next `poll()` or `position()` looks the offset up with ListOffsets.

Partitions come from one of two places, never both (Kafka raises for a mix, and so do we):
`assign()` - the application picks them - or `subscribe()` - the application names topics
(or a pattern) and the group coordinator hands out partitions, changing them at each
rebalance through `assign_from_subscribed` (consumer_coordinator.py). A group member starts
a new partition at its committed offset; only a partition never committed is reset.

Spec rules: CLIENT-15, CLIENT-22 (spec/client.md).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

from kafka_ref.common import TopicPartition
from kafka_ref.errors import ErrorCode, KafkaError


class OffsetResetStrategy(StrEnum):
    """auto.offset.reset; ListOffsets asks for timestamp -2 (earliest) or -1 (latest)."""

    EARLIEST = "earliest"
    LATEST = "latest"
    NONE = "none"

    @property
    def timestamp(self) -> int:
        return -2 if self is OffsetResetStrategy.EARLIEST else -1


class NoOffsetForPartitionError(KafkaError):
    """A partition has no position and auto.offset.reset is `none`."""

    code = ErrorCode.OFFSET_OUT_OF_RANGE

    def __init__(self, partitions: list[TopicPartition]) -> None:
        self.partitions = partitions
        names = ", ".join(str(tp) for tp in partitions)
        super().__init__(f"Undefined offset with no reset policy for partitions: {names}")


MIXED = "Subscription to topics, partitions and pattern are mutually exclusive"


class IllegalStateError(KafkaError):
    """The consumer was used in a way its state does not allow (Java: IllegalStateException)."""


@dataclass
class TopicPartitionState:
    """One assigned partition: position, pending reset, and what the last fetch said."""

    position: int | None = None
    reset_strategy: OffsetResetStrategy | None = None  # a reset is awaited
    next_reset_allowed_ms: int = 0  # a ListOffsets is in flight or backing off until then
    paused: bool = False
    committed_checked: bool = False  # the group has no committed offset: reset instead
    high_watermark: int = -1
    log_start_offset: int = -1
    last_stable_offset: int = -1
    # KIP-392: the replica the leader named to read from instead of itself, until when
    preferred_read_replica: int | None = None
    preferred_read_replica_expires: float = 0.0


class SubscriptionState:
    """The assignment and each partition's state (Kafka's SubscriptionState)."""

    def __init__(self, default_reset: str | OffsetResetStrategy = "latest") -> None:
        try:
            self.default_reset = OffsetResetStrategy(default_reset)
        except ValueError:
            raise ValueError(
                f"auto_offset_reset must be earliest, latest or none, not {default_reset!r}"
            ) from None
        self._assignment: dict[TopicPartition, TopicPartitionState] = {}
        self.subscription: frozenset[str] = frozenset()  # topics, in subscribe() mode
        self.pattern: re.Pattern | None = None
        self.listener = None  # a ConsumerRebalanceListener
        self._manual = False  # assign() was used

    # -- the two ways to get partitions ---------------------------------------------

    @property
    def is_subscribed(self) -> bool:
        """subscribe() mode: the group decides the partitions."""
        return bool(self.subscription) or self.pattern is not None

    def subscribe(self, topics, listener=None) -> None:
        if self._manual:
            raise IllegalStateError(MIXED)
        self.subscription, self.pattern, self.listener = frozenset(topics), None, listener

    def subscribe_pattern(self, pattern: re.Pattern, listener=None) -> None:
        if self._manual:
            raise IllegalStateError(MIXED)
        self.subscription, self.pattern, self.listener = frozenset(), pattern, listener

    def change_subscription(self, topics) -> None:
        """The topics a pattern matches now."""
        self.subscription = frozenset(topics)

    def unsubscribe(self) -> None:
        self.subscription, self.pattern, self.listener = frozenset(), None, None
        self._manual = False
        self._assignment = {}

    def assign(self, partitions: list[TopicPartition]) -> None:
        """Manual assignment: exactly these partitions (kept ones keep their position)."""
        if self.is_subscribed:
            raise IllegalStateError(MIXED)
        self._manual = bool(partitions)
        self.assign_from_subscribed(partitions)

    def assign_from_subscribed(self, partitions: list[TopicPartition]) -> None:
        """Replace the assignment; partitions kept keep their position."""
        self._assignment = {
            tp: self._assignment.get(tp) or TopicPartitionState()
            for tp in dict.fromkeys(partitions)
        }

    def assigned_partitions(self) -> list[TopicPartition]:
        return list(self._assignment)

    def is_assigned(self, tp: TopicPartition) -> bool:
        return tp in self._assignment

    def state(self, tp: TopicPartition) -> TopicPartitionState:
        try:
            return self._assignment[tp]
        except KeyError:
            raise KafkaError(f"partition {tp} is not assigned to this consumer") from None

    def seek(self, tp: TopicPartition, offset: int) -> None:
        if offset < 0:
            raise ValueError(f"seek offset must not be negative: {offset}")
        state = self.state(tp)
        state.position, state.reset_strategy = offset, None

    def position(self, tp: TopicPartition) -> int | None:
        return self.state(tp).position

    def request_offset_reset(
        self, tp: TopicPartition, strategy: OffsetResetStrategy | None = None
    ) -> None:
        state = self.state(tp)
        state.position = None
        state.reset_strategy = strategy or self.default_reset
        state.next_reset_allowed_ms = 0

    def missing_position(self) -> list[TopicPartition]:
        """Partitions with neither a position nor a reset under way."""
        return [
            tp
            for tp, s in self._assignment.items()
            if s.position is None and s.reset_strategy is None
        ]

    def partitions_needing_reset(self, now_ms: int) -> dict[TopicPartition, OffsetResetStrategy]:
        return {
            tp: s.reset_strategy
            for tp, s in self._assignment.items()
            if s.reset_strategy not in (None, OffsetResetStrategy.NONE)
            and now_ms >= s.next_reset_allowed_ms
        }

    def set_next_reset_allowed(self, partitions, until_ms: int) -> None:
        for tp in partitions:
            if tp in self._assignment:
                self._assignment[tp].next_reset_allowed_ms = until_ms

    def maybe_complete_reset(self, tp: TopicPartition, offset: int) -> None:
        """A ListOffsets answer arrived: use it unless the user has seeked since."""
        state = self._assignment.get(tp)
        if state is not None and state.reset_strategy is not None:
            state.position, state.reset_strategy = offset, None

    def all_consumed(self) -> dict:
        """{tp: OffsetAndMetadata(position)} of every partition with a position: what a
        commit with no explicit offsets commits."""
        from kafka_ref.common import OffsetAndMetadata

        return {
            tp: OffsetAndMetadata(s.position)
            for tp, s in self._assignment.items()
            if s.position is not None
        }

    def fetchable_partitions(self) -> list[TopicPartition]:
        return [tp for tp, s in self._assignment.items() if s.position is not None and not s.paused]

    def pause(self, tp: TopicPartition) -> None:
        self.state(tp).paused = True

    def resume(self, tp: TopicPartition) -> None:
        self.state(tp).paused = False
