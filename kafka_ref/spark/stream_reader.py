"""A Structured Streaming read of topics: micro-batches between offsets Spark checkpoints.

    kafka_ref.spark.register(spark)
    events = (spark.readStream.format("kafka_ref")
              .option("kafka.bootstrap.servers", "127.0.0.1:9092")
              .option("subscribe", "clicks")
              .option("startingOffsets", "earliest")
              .option("maxOffsetsPerTrigger", 10000)
              .load())
    query = (events.writeStream.format("parquet").option("path", "out")
             .option("checkpointLocation", "chk").trigger(availableNow=True).start())

A streaming source does not remember where it is; Spark does (Spark's `KafkaMicroBatchStream`):

1. `initialOffset()` - where a *new* query starts: startingOffsets (default latest) or
   startingTimestamp, as offsets JSON `{"topic": {"0": 42}}`;
2. every trigger, `latestOffset(start, limit)` - the end of the next micro-batch: the high
   watermarks now, capped by the read limit (`maxOffsetsPerTrigger` becomes
   `ReadMaxRows`). Spark writes `start` and this end to the checkpoint's offset log
   *before* the batch runs;
3. `partitions(start, end)` and `read()` - the batch's ranges, read like a batch query
   (reader.py) on the executors;
4. after the sink committed the batch Spark writes the commit log. A restarted query reads
   the last offsets from the checkpoint: a batch that was planned but not committed runs
   again with the *same* offsets, so the input is read exactly once per committed batch
   (the sink decides whether its output is exactly once: Parquet's is, Kafka's is not).

New partitions (a topic created later that matches `subscribePattern`, or partitions
added) start from their earliest offset, as in Spark. `trigger(availableNow=True)` calls
`prepareForTriggerAvailableNow()` first; the high watermarks at that moment are the
target, no micro-batch goes past them, and the query stops when it reaches them - in as
many micro-batches as maxOffsetsPerTrigger needs. On the driver this object lives as long
as the query, so the target is kept in it; on executors only `read()` is called.

Spec rules: SPARK-7, SPARK-8, SPARK-9 (spec/spark.md).
"""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamReader
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)

from kafka_ref.common import TopicPartition
from kafka_ref.spark.offset_reader import KafkaRefDataLossError, OffsetReader
from kafka_ref.spark.offsets import OffsetRange, from_json, rate_limit, to_json
from kafka_ref.spark.options import SourceOptions
from kafka_ref.spark.reader import plan_ranges, read_range

__all__ = ["KafkaRefStreamReader"]


class KafkaRefStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Spark's KafkaMicroBatchStream for the `kafka_ref` format."""

    def __init__(self, options: SourceOptions) -> None:
        self.options = options
        self.target: dict[TopicPartition, int] | None = None  # availableNow's end

    def initialOffset(self) -> dict:
        with OffsetReader(self.options) as offsets:
            partitions = offsets.partitions()
            return to_json(offsets.starting_offsets(partitions))

    def getDefaultReadLimit(self) -> ReadLimit:
        if self.options.max_offsets_per_trigger:
            return ReadMaxRows(self.options.max_offsets_per_trigger)
        return ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        with OffsetReader(self.options) as offsets:
            self.target = offsets.latest(offsets.partitions())

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        begin = from_json(start)
        with OffsetReader(self.options) as offsets:
            if self.target is not None:
                end = dict(self.target)
            else:
                end = offsets.latest(offsets.partitions())
            # A partition the query has not seen yet starts at its earliest offset.
            new = [tp for tp in end if tp not in begin]
            begin.update(offsets.earliest(new))
        for tp, until in end.items():
            if until < begin[tp]:
                self._lost(f"{tp} ends at {until}, before the offset {begin[tp]} already read")
                end[tp] = begin[tp]
        for tp, offset in begin.items():
            end.setdefault(tp, offset)  # a partition gone from metadata stays where it was
        if isinstance(limit, ReadMaxRows):
            end = rate_limit(begin, end, limit.max_rows)
        return to_json(end)

    def partitions(self, start: dict, end: dict) -> list[OffsetRange]:
        begin, until = from_json(start), from_json(end)
        new = [tp for tp in until if tp not in begin]
        if new:
            with OffsetReader(self.options) as offsets:
                earliest = offsets.earliest(new)
            for tp in new:
                if earliest[tp] > 0:
                    self._lost(f"{tp} is new but its log starts at {earliest[tp]}, not 0")
            begin.update(earliest)
        return plan_ranges(self.options, begin, until)

    def read(self, partition: OffsetRange) -> Iterator[pa.RecordBatch]:
        return read_range(self.options, partition)

    def commit(self, end: dict) -> None:
        """Nothing to do: the offsets live in Spark's checkpoint, not in a consumer group."""

    def _lost(self, detail: str) -> None:
        if self.options.fail_on_data_loss:
            raise KafkaRefDataLossError(
                f"Some data may have been lost: {detail}. Set the source option "
                "'failOnDataLoss' to 'false' if you do not want the query to fail on this."
            )
