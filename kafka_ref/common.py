"""The names the broker and the clients share: a partition of a topic, a committed offset.

A topic is split into partitions, and a partition is Kafka's unit of almost everything:
ordering (offsets are per partition), storage (one log per partition), replication (one
leader and one ISR per partition), consumption (a group assigns partitions to members) and
commits (a group commits one offset per partition). `TopicPartition` names one (Kafka's
`org.apache.kafka.common.TopicPartition`); it is a tuple, so `("clicks", 0)` and
`TopicPartition("clicks", 0)` are equal and hash alike, and it sorts by topic, then
partition, and prints as `clicks-0`, Kafka's way.

A group's progress on a partition is a committed offset: the offset of the next record to
read, not of the last one read. `OffsetAndMetadata` carries it with the
client's free-form string, kept as is (OFFSET-3), and the leader epoch of the record before
it, which lets a consumer notice that the log was truncated under it. The client sends
those three; the group coordinator adds the time it took the commit and, for commits that
carried a retention time (OffsetCommit v2-v4), when it expires (OFFSET-6). It is Kafka's
client `OffsetAndMetadata` and the coordinator's, in one.

Rules: OFFSET-3, OFFSET-6.
"""

from __future__ import annotations

from typing import NamedTuple


class TopicPartition(NamedTuple):
    """A partition of a topic: the unit of ordering, leadership and fetching."""

    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


class OffsetAndMetadata(NamedTuple):
    """A committed offset (the next record to read) and what is kept with it."""

    offset: int
    metadata: str = ""
    leader_epoch: int = -1
    commit_timestamp: int = 0  # set by the coordinator when it takes the commit
    expire_timestamp: int | None = None  # only from commits with a retention time
