"""A batch read of topics: plan offset ranges on the driver, fetch them on the executors.

    kafka_ref.spark.register(spark)
    df = (spark.read.format("kafka_ref")
          .option("kafka.bootstrap.servers", "127.0.0.1:9092")
          .option("subscribe", "clicks")
          .load())                                  # earliest .. latest, as in Spark
    df.selectExpr("CAST(value AS STRING)").show()

Spark's Kafka batch source (`KafkaRelation`) works in two steps, and so does this one:

1. **plan, on the driver** (`partitions()`): ask the broker for the partitions and for the
   start and end offset of each (offset_reader.py), and cut the ranges into tasks
   (offsets.py). The end offsets are fixed now, so a batch read is a snapshot: records
   produced while it runs are not read, and two actions on the same DataFrame plan again;
2. **read, on an executor** (`read()`): each task opens its own consumer, assigns its one
   partition, seeks to `fromOffset` and polls until its position reaches `untilOffset`,
   dropping the records past it. The position, not the last record, decides when a range
   is done: a range can end in offsets without a record (compacted away, or the control
   batch of a transaction) and the consumer's position moves past those too. With
   `kafka.isolation.level=read_committed` the consumer reads up to the last stable offset
   and drops aborted transactions, and the planned ends are last stable offsets (SPARK-26).

`read_range` is shared with the streaming reader: a micro-batch reads ranges the same way.
A fetch that brings nothing for `kafkaConsumer.pollTimeoutMs` fails the task (Spark retries
it; a persistent failure fails the query), so an unreachable broker is an error, not a hang.
With `failOnDataLoss=false` a range whose start was deleted by retention is read from the
log start offset instead.

Spec rules: SPARK-3, SPARK-4, SPARK-5, SPARK-6, SPARK-26 (spec/spark.md).
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader

from kafka_ref.client.consumer import Consumer
from kafka_ref.errors import OffsetOutOfRangeError
from kafka_ref.spark.offset_reader import KafkaRefDataLossError, OffsetReader
from kafka_ref.spark.offsets import OffsetRange, split_ranges
from kafka_ref.spark.options import SourceOptions
from kafka_ref.spark.schema import ColumnBuilder

__all__ = ["KafkaRefBatchReader", "plan_ranges", "read_range"]

ROWS_PER_BATCH = 8192  # rows per Arrow record batch handed to Spark
MAX_POLL_RECORDS = 8192  # one poll fills about one Arrow batch


def plan_ranges(
    options: SourceOptions,
    start: dict,
    end: dict,
) -> list[OffsetRange]:
    """One range per partition in `end`, cut by minPartitions / maxRecordsPerPartition."""
    ranges = [
        OffsetRange(tp.topic, tp.partition, start[tp], until)
        for tp, until in sorted(end.items())
        if tp in start
    ]
    return split_ranges(ranges, options.min_partitions, options.max_records_per_partition)


class KafkaRefBatchReader(DataSourceReader):
    """Spark's KafkaBatch for the `kafka_ref` format."""

    def __init__(self, options: SourceOptions) -> None:
        self.options = options

    def partitions(self) -> list[OffsetRange]:
        with OffsetReader(self.options) as offsets:
            partitions = offsets.partitions()
            start = offsets.starting_offsets(partitions)
            start = offsets.check_available(start, offsets.earliest(partitions))
            end = offsets.ending_offsets(partitions)
        for tp, until in end.items():
            if until < start[tp]:
                raise ValueError(
                    f"The ending offset {until} of {tp} is before its starting offset "
                    f"{start[tp]}; the batch query would read nothing there"
                )
        return plan_ranges(self.options, start, end)

    def read(self, partition: OffsetRange) -> Iterator[pa.RecordBatch]:
        return read_range(self.options, partition)


def read_range(options: SourceOptions, rng: OffsetRange) -> Iterator[pa.RecordBatch]:
    """Fetch offsets [from, until) of one partition as Arrow batches (runs on an executor)."""
    # Spark stands in a bare InputPartition(None) when partitions() returned none at all.
    if not isinstance(rng, OffsetRange) or rng.size <= 0:
        return
    tp = rng.topic_partition
    configs = {"max_poll_records": MAX_POLL_RECORDS, **options.consumer_configs}
    consumer = Consumer(
        options.bootstrap_servers,
        auto_offset_reset="none",  # out of range must be seen, not silently reset
        allow_auto_create_topics=False,
        **configs,
    )
    rows = ColumnBuilder(rng.topic, rng.partition, options.include_headers)
    try:
        consumer.assign([tp])
        consumer.seek(tp, rng.from_offset)
        position, last_progress = rng.from_offset, time.monotonic()
        while position < rng.until_offset:
            try:
                records = consumer.poll(timeout=1.0)
            except OffsetOutOfRangeError:
                position = _after_data_loss(options, consumer, rng, position)
                consumer.seek(tp, position)
                continue
            for r in records:
                if r.offset >= rng.until_offset:
                    break
                rows.add(r.key, r.value, r.offset, r.timestamp, int(r.timestamp_type), r.headers)
            if len(rows) >= ROWS_PER_BATCH:
                yield rows.flush()
            moved = consumer.position(tp)
            if moved > position:
                position, last_progress = moved, time.monotonic()
            elif (time.monotonic() - last_progress) * 1000 > options.poll_timeout_ms:
                raise TimeoutError(
                    f"Timeout of {options.poll_timeout_ms} ms waiting for records of {tp} at "
                    f"offset {position} (reading {rng.from_offset}..{rng.until_offset}); "
                    "is the broker reachable? (option kafkaConsumer.pollTimeoutMs)"
                )
        if len(rows):
            yield rows.flush()
    finally:
        consumer.close()


def _after_data_loss(options: SourceOptions, consumer: Consumer, rng: OffsetRange, at: int) -> int:
    """Where to go on when offset `at` is no longer in the log (failOnDataLoss=false)."""
    tp = rng.topic_partition
    earliest = consumer.beginning_offsets([tp])[tp]
    if options.fail_on_data_loss:
        raise KafkaRefDataLossError(
            f"Cannot fetch offset {at} of {tp}: the log now starts at {earliest}. Some data "
            "may have been lost because they are not available in Kafka any more. Set the "
            "source option 'failOnDataLoss' to 'false' if you do not want the query to fail "
            "on this."
        )
    return min(max(earliest, at), rng.until_offset)
