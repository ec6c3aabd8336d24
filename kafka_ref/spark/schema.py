"""The rows a Kafka read produces: Spark's Kafka schema, built as Arrow record batches.

Spark's Kafka source gives every record this row (the schema is fixed; values stay bytes
and the user decodes them with `CAST(value AS STRING)` or `from_json`):

    key            binary      null for a record without a key
    value          binary      null for a tombstone
    topic          string
    partition      int
    offset         long
    timestamp      timestamp   the record's time (CreateTime or LogAppendTime), UTC
    timestampType  int         0 CreateTime, 1 LogAppendTime (the batch attribute bit 3)
    headers        array<struct<key: string, value: binary>>   only with includeHeaders;
                   null for a record without headers (not an empty array)

A Python data source may yield tuples or Arrow record batches; batches are several times
faster (one conversion per few thousand rows instead of one per row), so every reader here
gathers columns in lists and yields `pyarrow.RecordBatch`es. Spark checks the Arrow types
exactly: timestamps in microseconds with the UTC zone, list items named `element`.

Spec rules: SPARK-3, SPARK-32 (spec/spark.md).
"""

from __future__ import annotations

import pyarrow as pa
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

__all__ = ["ColumnBuilder", "arrow_schema", "kafka_schema"]

HEADERS_TYPE = ArrayType(
    StructType([StructField("key", StringType()), StructField("value", BinaryType())])
)
ARROW_HEADERS = pa.list_(
    pa.field("element", pa.struct([("key", pa.string()), ("value", pa.binary())]))
)
ARROW_TIMESTAMP = pa.timestamp("us", tz="UTC")


def kafka_schema(include_headers: bool) -> StructType:
    """Spark's Kafka source schema (KafkaRecordToRowConverter)."""
    fields = [
        StructField("key", BinaryType()),
        StructField("value", BinaryType()),
        StructField("topic", StringType()),
        StructField("partition", IntegerType()),
        StructField("offset", LongType()),
        StructField("timestamp", TimestampType()),
        StructField("timestampType", IntegerType()),
    ]
    if include_headers:
        fields.append(StructField("headers", HEADERS_TYPE))
    return StructType(fields)


def arrow_schema(include_headers: bool) -> pa.Schema:
    fields = [
        ("key", pa.binary()),
        ("value", pa.binary()),
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("offset", pa.int64()),
        ("timestamp", ARROW_TIMESTAMP),
        ("timestampType", pa.int32()),
    ]
    if include_headers:
        fields.append(("headers", ARROW_HEADERS))
    return pa.schema(fields)


class ColumnBuilder:
    """Collects records column by column and hands them out as Arrow record batches."""

    def __init__(self, topic: str, partition: int, include_headers: bool) -> None:
        self.topic, self.partition = topic, partition
        self.include_headers = include_headers
        self.schema = arrow_schema(include_headers)
        self.clear()

    def clear(self) -> None:
        self.keys: list = []
        self.values: list = []
        self.offsets: list[int] = []
        self.timestamps: list[int] = []
        self.types: list[int] = []
        self.headers: list = []

    def __len__(self) -> int:
        return len(self.offsets)

    def add(self, key, value, offset: int, timestamp_ms: int, timestamp_type: int, headers):
        self.keys.append(key)
        self.values.append(value)
        self.offsets.append(offset)
        self.timestamps.append(timestamp_ms * 1000)  # Spark's timestamps are microseconds
        self.types.append(timestamp_type)
        if self.include_headers:
            # Spark's KafkaRecordToRowConverter gives null, not [], when there is no header.
            self.headers.append([{"key": k, "value": v} for k, v in headers] if headers else None)

    def columns(self) -> list[pa.Array]:
        n = len(self.offsets)
        columns = [
            pa.array(self.keys, pa.binary()),
            pa.array(self.values, pa.binary()),
            pa.array([self.topic] * n, pa.string()),
            pa.array([self.partition] * n, pa.int32()),
            pa.array(self.offsets, pa.int64()),
            pa.array(self.timestamps, ARROW_TIMESTAMP),
            pa.array(self.types, pa.int32()),
        ]
        if self.include_headers:
            columns.append(pa.array(self.headers, ARROW_HEADERS))
        return columns

    def flush(self) -> pa.RecordBatch:
        """The collected rows as one record batch; the builder starts empty again."""
        batch = pa.RecordBatch.from_arrays(self.columns(), schema=self.schema)
        self.clear()
        return batch
