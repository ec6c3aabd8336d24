"""Writing a DataFrame to topics, in a batch job or in every micro-batch of a stream.

    kafka_ref.spark.register(spark)
    (df.selectExpr("CAST(user AS STRING) AS key", "to_json(struct(*)) AS value")
       .write.format("kafka_ref")
       .option("kafka.bootstrap.servers", "127.0.0.1:9092")
       .option("topic", "clicks")
       .mode("append").save())

The columns are Spark's Kafka sink's (`KafkaWriter.validateQuery`):

    value      string or binary       required (null: a tombstone)
    key        string or binary       optional; decides the partition through murmur2
    topic      string                 required unless the `topic` option is set (which wins)
    partition  int                    optional; null lets the partitioner choose
    headers    array<struct<key: string, value: binary>>   optional

Other columns are ignored. The columns are checked on the driver when the query starts,
so a DataFrame without `value` fails before any task runs.

Each task opens one producer (our `Producer`, acks=all by default: a record counts as
written once every in-sync replica has it), sends its rows, flushes and closes. The first
failed delivery - a record too large, a partition that does not exist, a broker that does
not answer within `delivery.timeout.ms` - fails the task with that error, so Spark retries
the task and finally fails the job: a write never loses records silently. Like Spark's
Kafka sink it is at-least-once: a retried task sends its rows again. A streaming write is
the same per micro-batch (`DataSourceStreamArrowWriter`); the commit has nothing to do,
since Kafka has no "publish" step here.

Spec rules: SPARK-10, SPARK-11 (spec/spark.md).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSourceArrowWriter,
    DataSourceStreamArrowWriter,
    WriterCommitMessage,
)
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    StringType,
    StructType,
)

from kafka_ref.client.producer import Producer
from kafka_ref.spark.options import KafkaRefOptionError, SinkOptions

__all__ = ["KafkaRefStreamWriter", "KafkaRefWriteError", "KafkaRefWriter", "check_columns"]


class KafkaRefWriteError(RuntimeError):
    """A record the broker did not take; raised in the task, so the task fails."""


@dataclass
class WriteSummary(WriterCommitMessage):
    """What one task wrote: records per topic-partition (returned to the driver)."""

    records: dict


def _is_headers(data_type) -> bool:
    if not isinstance(data_type, ArrayType) or not isinstance(data_type.elementType, StructType):
        return False
    fields = {f.name: type(f.dataType) for f in data_type.elementType.fields}
    return fields == {"key": StringType, "value": BinaryType}


def check_columns(schema: StructType, options: SinkOptions) -> None:
    """The column rules of Spark's Kafka sink; a broken DataFrame fails on the driver."""
    types = {f.name.lower(): f.dataType for f in schema.fields}
    expected = {
        "value": ((StringType, BinaryType), "string or binary"),
        "key": ((StringType, BinaryType), "string or binary"),
        "topic": ((StringType,), "string"),
        "partition": ((IntegerType,), "int"),
    }
    if "value" not in types:
        raise KafkaRefOptionError("Required attribute 'value' not found")
    if options.topic is None and "topic" not in types:
        raise KafkaRefOptionError(
            "topic option required when no 'topic' attribute is present. Use the topic "
            "option for setting a topic."
        )
    for name, (allowed, text) in expected.items():
        if name in types and not isinstance(types[name], allowed):
            raise KafkaRefOptionError(
                f"{name} attribute type must be a {text}, not {types[name].simpleString()}"
            )
    if "headers" in types and not _is_headers(types["headers"]):
        raise KafkaRefOptionError(
            "headers attribute type must be array<struct<key:string,value:binary>>, not "
            f"{types['headers'].simpleString()}"
        )


def produce(options: SinkOptions, batches: Iterator[pa.RecordBatch]) -> WriteSummary:
    """Send every row of `batches`; raise on the first record that was not delivered."""
    configs = {"acks": "all", **options.producer_configs}
    producer = Producer(options.bootstrap_servers, **configs)
    failures: list[BaseException] = []
    written: dict[str, int] = {}

    def delivered(metadata, error) -> None:  # runs on the producer's sender thread
        if error is not None:
            failures.append(error)
        else:
            key = f"{metadata.topic}-{metadata.partition}"
            written[key] = written.get(key, 0) + 1

    try:
        for batch in batches:
            columns = {name.lower(): batch.column(i) for i, name in enumerate(batch.schema.names)}
            n = batch.num_rows
            values = columns["value"].to_pylist()
            keys = columns["key"].to_pylist() if "key" in columns else [None] * n
            parts = columns["partition"].to_pylist() if "partition" in columns else [None] * n
            headers = columns["headers"].to_pylist() if "headers" in columns else [None] * n
            if options.topic is not None:
                topics = [options.topic] * n
            else:
                topics = columns["topic"].to_pylist()
            for topic, key, value, partition, header in zip(
                topics, keys, values, parts, headers, strict=True
            ):
                if topic is None:
                    raise KafkaRefWriteError(
                        "null topic present in the data. Use the topic option for setting a topic."
                    )
                pairs = [(h["key"], h["value"]) for h in header] if header else None
                producer.send(
                    topic, value, key=key, partition=partition, headers=pairs, callback=delivered
                )
                if failures:
                    break
            if failures:
                break
        producer.flush()
    finally:
        producer.close()
    if failures:
        error = failures[0]
        raise KafkaRefWriteError(f"Failed to send a record to Kafka: {error}") from error
    return WriteSummary(written)


class KafkaRefWriter(DataSourceArrowWriter):
    """Batch write: `df.write.format("kafka_ref")` (Spark's KafkaBatchWrite)."""

    def __init__(self, options: SinkOptions) -> None:
        self.options = options

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriteSummary:
        return produce(self.options, iterator)


class KafkaRefStreamWriter(DataSourceStreamArrowWriter):
    """Streaming write: each micro-batch's rows are produced (Spark's KafkaStreamingWrite)."""

    def __init__(self, options: SinkOptions) -> None:
        self.options = options

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriteSummary:
        return produce(self.options, iterator)

    def commit(self, messages: list, batchId: int) -> None:
        """Nothing to publish: the records were acknowledged when write() returned."""

    def abort(self, messages: list, batchId: int) -> None:
        """Records already acknowledged stay written: the sink is at-least-once."""
