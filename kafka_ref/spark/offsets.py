"""Offset ranges: what one Spark task reads, and how a read is cut into tasks.

A read of a Kafka topic is a set of *offset ranges*, one per topic-partition:
`[fromOffset, untilOffset)`, the first offset read and the first one not read (Spark's
`KafkaOffsetRange`). A range is a Spark input partition, so one task reads it; on a cluster
the task runs on an executor, opens its own connection and fetches exactly that range.

Ranges are cut further when asked (Spark's `KafkaOffsetRangeCalculator`):

* `maxRecordsPerPartition=N`: a range of more than N offsets becomes ceil(size / N) pieces;
* `minPartitions=M`: when there are fewer than M ranges, each range is split in proportion
  to its share of all the offsets (never into nothing: at least one piece each), so the
  biggest partitions get the most tasks. The last piece of a range takes the rounding.

Empty ranges are dropped: a task that reads nothing costs a Python worker for nothing.

Offsets travel between the source and Spark's checkpoint as JSON, Kafka's layout:
`{"clicks": {"0": 42, "1": 17}}` - topic, then partition as a *string* (JSON keys are
strings), then the next offset to read. A streaming micro-batch is two such maps, start
and end; `maxOffsetsPerTrigger` caps the rows per micro-batch by sharing the cap across
partitions in proportion to how far each lags behind (Spark's `rateLimit`, which never
starves a small partition: a share below one offset is rounded up to one).

Spec rules: SPARK-4, SPARK-5, SPARK-8 (spec/spark.md).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

from pyspark.sql.datasource import InputPartition

from kafka_ref.common import TopicPartition

__all__ = [
    "OffsetRange",
    "from_json",
    "parse_partition_values",
    "rate_limit",
    "split_ranges",
    "to_json",
]


@dataclass(frozen=True)
class OffsetRange(InputPartition):
    """Offsets [from_offset, until_offset) of one topic-partition: one Spark task's work."""

    topic: str
    partition: int
    from_offset: int
    until_offset: int

    @property
    def size(self) -> int:
        return self.until_offset - self.from_offset

    @property
    def topic_partition(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)


def to_json(offsets: dict[TopicPartition, int]) -> dict[str, dict[str, int]]:
    """{TopicPartition: offset} as Kafka's JSON layout (partition keys are strings)."""
    out: dict[str, dict[str, int]] = {}
    for tp in sorted(offsets):
        out.setdefault(tp.topic, {})[str(tp.partition)] = int(offsets[tp])
    return out


def from_json(offsets: dict | str) -> dict[TopicPartition, int]:
    """The inverse of `to_json`; also accepts the JSON text itself."""
    if isinstance(offsets, str):
        offsets = json.loads(offsets)
    return {
        TopicPartition(topic, int(partition)): int(offset)
        for topic, parts in offsets.items()
        for partition, offset in parts.items()
    }


def parse_partition_values(text: str) -> dict[TopicPartition, int]:
    """An option's per-partition JSON (offsets or timestamps), already checked by options.py."""
    return from_json(text)


def split_ranges(
    ranges: list[OffsetRange],
    min_partitions: int | None = None,
    max_records_per_partition: int | None = None,
) -> list[OffsetRange]:
    """Cut ranges into Spark tasks as Spark's KafkaOffsetRangeCalculator does."""
    ranges = [r for r in ranges if r.size > 0]
    if max_records_per_partition:
        ranges = [
            piece
            for r in ranges
            for piece in _split(r, math.ceil(r.size / max_records_per_partition))
        ]
    if min_partitions and len(ranges) < min_partitions:
        total = sum(r.size for r in ranges)
        ranges = [
            piece
            for r in ranges
            for piece in _split(r, max(round(r.size / total * min_partitions), 1))
        ]
    return ranges


def _split(r: OffsetRange, parts: int) -> list[OffsetRange]:
    """`parts` contiguous pieces of nearly equal size; the last takes the rounding."""
    pieces, remaining, start = [], r.size, r.from_offset
    for part in range(parts):
        this = remaining // (parts - part)
        remaining -= this
        end = min(start + this, r.until_offset)
        if end > start:
            pieces.append(OffsetRange(r.topic, r.partition, start, end))
        start = end
    return pieces


def rate_limit(
    start: dict[TopicPartition, int], end: dict[TopicPartition, int], max_rows: int
) -> dict[TopicPartition, int]:
    """End offsets moved back so that about `max_rows` offsets lie between start and end.

    Each lagging partition gets a share of `max_rows` in proportion to its lag: floor of
    the share, or 1 when the share is below one. Spark's KafkaMicroBatchStream.rateLimit.
    """
    lags = {tp: until - start[tp] for tp, until in end.items() if until - start.get(tp, until) > 0}
    total = sum(lags.values())
    if total < 1:
        return dict(end)
    limited = {}
    for tp, until in end.items():
        if tp not in lags:
            limited[tp] = until
            continue
        share = max_rows * lags[tp] / total
        step = math.ceil(share) if share < 1 else math.floor(share)
        limited[tp] = min(until, start[tp] + step)
    return limited
