"""The driver's questions to the broker: which partitions, and which offsets.

Before Spark can plan a read it needs numbers the broker holds (Spark's `KafkaOffsetReader`):

* **which partitions** - `assign` names them; `subscribe` names topics and `subscribePattern`
  a regular expression over all topic names, and the partitions come from Metadata. A topic
  that does not exist has no partitions yet (nothing is created by reading it);
* **which offsets** - `earliest` is each partition's log start offset and `latest` its
  high watermark (ListOffsets with timestamp -2 and -1), or its last stable offset with
  `kafka.isolation.level=read_committed`, since the consumer asking passes its isolation
  level (SPARK-26); per-partition JSON gives offsets
  directly, -2 and -1 meaning earliest and latest; a timestamp becomes, per partition, the
  first offset whose record timestamp is at or after it (ListOffsets by time, KIP-79).
  When no record is that new, `startingOffsetsByTimestampStrategy` decides: `error` fails
  the query, `latest` starts at the end. An ending timestamp with no such record reads to
  the end.

The reader opens an admin client and a consumer, asks, and closes them: the objects Spark
pickles to executors must not hold sockets, and the driver asks only once per query (batch)
or once per trigger (streaming).

With `failOnDataLoss` (the default) a start offset below the log start offset - records
deleted by retention before they were read - fails the query; without it the read starts
at the log start offset instead.

Spec rules: SPARK-3, SPARK-6, SPARK-26 (spec/spark.md).
"""

from __future__ import annotations

import json
import re

from kafka_ref.client.admin import Admin
from kafka_ref.client.consumer import Consumer
from kafka_ref.common import TopicPartition
from kafka_ref.spark.offsets import parse_partition_values
from kafka_ref.spark.options import SourceOptions

__all__ = ["KafkaRefDataLossError", "OffsetReader"]

EARLIEST, LATEST = -2, -1


class KafkaRefDataLossError(RuntimeError):
    """Offsets the query needs are gone from the log (Spark: failOnDataLoss)."""


class OffsetReader:
    """Short-lived clients on the driver; use as a context manager."""

    def __init__(self, options: SourceOptions) -> None:
        self.options = options
        self.admin = Admin(options.bootstrap_servers)
        self.consumer = Consumer(
            options.bootstrap_servers,
            allow_auto_create_topics=False,
            **options.consumer_configs,
        )

    def close(self) -> None:
        self.consumer.close()
        self.admin.close()

    def __enter__(self) -> OffsetReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- which partitions ----------------------------------------------------------------

    def partitions(self) -> list[TopicPartition]:
        """The topic-partitions the query reads now (assign, subscribe or subscribePattern)."""
        strategy, value = self.options.strategy, self.options.strategy_value
        if strategy == "assign":
            return sorted(
                TopicPartition(topic, p) for topic, ps in json.loads(value).items() for p in ps
            )
        if strategy == "subscribe":
            topics = sorted({t.strip() for t in value.split(",") if t.strip()})
            existing = set(self.admin.list_topics())
            topics = [t for t in topics if t in existing]
        else:
            pattern = re.compile(value)
            topics = [t for t in self.admin.list_topics() if pattern.fullmatch(t)]
        if not topics:
            return []
        return sorted(
            TopicPartition(d.name, p.partition)
            for d in self.admin.describe_topics(topics)
            for p in d.partitions
        )

    # -- which offsets -------------------------------------------------------------------

    def earliest(self, partitions: list[TopicPartition]) -> dict[TopicPartition, int]:
        return self.consumer.beginning_offsets(partitions) if partitions else {}

    def latest(self, partitions: list[TopicPartition]) -> dict[TopicPartition, int]:
        return self.consumer.end_offsets(partitions) if partitions else {}

    def starting_offsets(self, partitions: list[TopicPartition]) -> dict[TopicPartition, int]:
        """Where the query starts: startingTimestamp / ...ByTimestamp / startingOffsets."""
        opts = self.options
        if opts.starting_timestamp is not None:
            return self._by_timestamp(partitions, opts.starting_timestamp, starting=True)
        return self._resolve(partitions, opts.starting, "startingOffsets")

    def ending_offsets(self, partitions: list[TopicPartition]) -> dict[TopicPartition, int]:
        """Where a batch query ends (exclusive): endingTimestamp, ...ByTimestamp, endingOffsets."""
        opts = self.options
        if opts.ending_timestamp is not None:
            return self._by_timestamp(partitions, opts.ending_timestamp, starting=False)
        return self._resolve(partitions, opts.ending, "endingOffsets")

    def _resolve(
        self, partitions: list[TopicPartition], spec: str, option: str
    ) -> dict[TopicPartition, int]:
        if spec == "earliest":
            return self.earliest(partitions)
        if spec == "latest":
            return self.latest(partitions)
        given = parse_partition_values(spec)
        if set(given) != set(partitions):
            raise ValueError(
                f"If {option} contains specific offsets, you must specify all "
                "TopicPartitions.\nUse -1 for latest, -2 for earliest.\n"
                f"Specified: {sorted(map(str, given))} Assigned: {sorted(map(str, partitions))}"
            )
        wanted_earliest = [tp for tp, o in given.items() if o == EARLIEST]
        wanted_latest = [tp for tp, o in given.items() if o == LATEST]
        resolved = {**given, **self.earliest(wanted_earliest), **self.latest(wanted_latest)}
        return resolved

    def _by_timestamp(
        self, partitions: list[TopicPartition], spec: str, *, starting: bool
    ) -> dict[TopicPartition, int]:
        if spec.isdigit():
            targets = dict.fromkeys(partitions, int(spec))
        else:
            targets = parse_partition_values(spec)
            missing = set(partitions) - set(targets)
            if missing:
                raise ValueError(
                    "the offsets by timestamp must name every partition read; missing "
                    f"{sorted(map(str, missing))}"
                )
        if not targets:
            return {}
        found = self.consumer.offsets_for_times(targets)
        none_found = [tp for tp, hit in found.items() if hit is None]
        if starting and none_found and self.options.timestamp_strategy == "error":
            raise ValueError(
                f"No offset matched the starting timestamp in {sorted(map(str, none_found))}; "
                "set startingOffsetsByTimestampStrategy to 'latest' to start at the end instead"
            )
        latest = self.latest(none_found)
        return {tp: latest[tp] if hit is None else hit.offset for tp, hit in found.items()}

    # -- data loss -----------------------------------------------------------------------

    def check_available(
        self, start: dict[TopicPartition, int], earliest: dict[TopicPartition, int]
    ) -> dict[TopicPartition, int]:
        """Start offsets moved to the log start where retention removed records, or an error."""
        lost = {tp: (o, earliest[tp]) for tp, o in start.items() if o < earliest.get(tp, o)}
        if lost and self.options.fail_on_data_loss:
            detail = ", ".join(f"{tp} from {o} (log starts at {e})" for tp, (o, e) in lost.items())
            raise KafkaRefDataLossError(
                f"Some data may have been lost because they are not available in Kafka any "
                f"more: {detail}. Set the source option 'failOnDataLoss' to 'false' if you "
                "do not want the query to fail on this."
            )
        return {tp: max(o, earliest.get(tp, o)) for tp, o in start.items()}
