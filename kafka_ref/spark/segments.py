"""The `kafka_ref_segments` source: read `.log` segment files directly, without a broker.

    kafka_ref.spark.register(spark)
    log = spark.read.format("kafka_ref_segments").load("/tmp/kafka-ref-data")
    log.groupBy("topic", "compression").agg(F.countDistinct("baseOffset").alias("batches"))

A partition's log on disk is a directory `<topic>-<partition>` of segments, each a
`<20-digit base offset>.log` file of record batches laid end to end (log/file_records.py).
This source reads those files the way `kafka-ref dump-log --print-data` does, one Spark
input partition per segment file, and gives one row per record: the topic source's columns
(schema.py; topic and partition come from the directory name) plus the record's batch,
for studying the log's anatomy - batch sizes, codecs, producers, transactions:

    segment               long     the segment's base offset (its file name)
    baseOffset, lastOffset long    the batch's first and last offset
    position              long     the batch's byte position in the file
    batchSize             int      the batch's bytes, header included
    recordCount           int      recordsCount of the batch header
    compression           string   none, gzip, snappy, lz4, zstd
    producerId            long     -1 unless idempotent or transactional
    producerEpoch         int
    baseSequence          int
    partitionLeaderEpoch  int
    isTransactional       boolean
    isControl             boolean  a transaction marker; its records are control records

`load(path)` takes a data directory (every `<topic>-<partition>` directory in it), one
partition directory, or one `.log` file. Control records appear as rows here (the topic
source, like any consumer, hides them). Every batch's CRC is checked; a corrupt batch fails
the task naming the file and position, and a torn batch at the end of a file (a write cut
by a crash, or a segment the broker is appending to) ends that file's rows. On a cluster
the files must be on storage every executor can read.

Spec rules: SPARK-12, SPARK-13 (spec/spark.md).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.types import BooleanType, IntegerType, LongType, StringType, StructField

from kafka_ref.errors import CorruptRecordError
from kafka_ref.record.batch import BatchHeader, RecordBatch, validate_batch
from kafka_ref.spark.options import KafkaRefOptionError, _bool
from kafka_ref.spark.schema import ColumnBuilder, kafka_schema
from kafka_ref.tools.dump_log import mapped

__all__ = ["KafkaRefSegmentsDataSource", "SegmentFile", "find_segments"]

PARTITION_DIR = re.compile(r"^(?P<topic>.+)-(?P<partition>\d+)$")
SEGMENT_FILE = re.compile(r"^(?P<base>\d{20})\.log$")
ROWS_PER_BATCH = 8192

BATCH_COLUMNS = [
    ("segment", LongType(), pa.int64()),
    ("baseOffset", LongType(), pa.int64()),
    ("lastOffset", LongType(), pa.int64()),
    ("position", LongType(), pa.int64()),
    ("batchSize", IntegerType(), pa.int32()),
    ("recordCount", IntegerType(), pa.int32()),
    ("compression", StringType(), pa.string()),
    ("producerId", LongType(), pa.int64()),
    ("producerEpoch", IntegerType(), pa.int32()),
    ("baseSequence", IntegerType(), pa.int32()),
    ("partitionLeaderEpoch", IntegerType(), pa.int32()),
    ("isTransactional", BooleanType(), pa.bool_()),
    ("isControl", BooleanType(), pa.bool_()),
]


@dataclass(frozen=True)
class SegmentFile(InputPartition):
    """One `.log` file of one partition: one Spark task."""

    path: str
    topic: str
    partition: int
    base_offset: int


def find_segments(path: str) -> list[SegmentFile]:
    """The segment files under a data dir, a partition dir, or one `.log` file."""
    path = os.path.abspath(path)
    if os.path.isfile(path):
        return [_segment(path)]
    if not os.path.isdir(path):
        raise KafkaRefOptionError(f"kafka_ref_segments: no such file or directory: {path}")
    if PARTITION_DIR.match(os.path.basename(path)) and _log_files(path):
        directories = [path]
    else:
        directories = sorted(
            os.path.join(path, d)
            for d in os.listdir(path)
            if PARTITION_DIR.match(d) and os.path.isdir(os.path.join(path, d))
        )
    return [_segment(os.path.join(d, f)) for d in directories for f in _log_files(d)]


def _log_files(directory: str) -> list[str]:
    return sorted(f for f in os.listdir(directory) if SEGMENT_FILE.match(f))


def _segment(path: str) -> SegmentFile:
    name, directory = os.path.basename(path), os.path.basename(os.path.dirname(path))
    file_match, dir_match = SEGMENT_FILE.match(name), PARTITION_DIR.match(directory)
    if not file_match or not dir_match:
        raise KafkaRefOptionError(
            f"kafka_ref_segments: {path} is not <topic>-<partition>/<20-digit offset>.log"
        )
    return SegmentFile(
        path, dir_match["topic"], int(dir_match["partition"]), int(file_match["base"])
    )


class _SegmentColumns(ColumnBuilder):
    """The record columns of schema.py plus the batch columns above."""

    def __init__(self, topic: str, partition: int, include_headers: bool) -> None:
        super().__init__(topic, partition, include_headers)
        extra = [pa.field(name, arrow_type) for name, _, arrow_type in BATCH_COLUMNS]
        self.schema = pa.schema([*self.schema, *extra])

    def clear(self) -> None:
        super().clear()
        self.batch: list[tuple] = []

    def add_batch_fields(self, fields: tuple, records: int) -> None:
        self.batch.extend([fields] * records)

    def columns(self) -> list[pa.Array]:
        per_field = list(zip(*self.batch, strict=True)) if self.batch else [()] * len(BATCH_COLUMNS)
        return super().columns() + [
            pa.array(values, arrow_type)
            for values, (_, _, arrow_type) in zip(per_field, BATCH_COLUMNS, strict=True)
        ]


def read_segment(segment: SegmentFile, include_headers: bool) -> Iterator[pa.RecordBatch]:
    """Every record of one `.log` file with its batch's header fields."""
    builder = _SegmentColumns(segment.topic, segment.partition, include_headers)
    with mapped(segment.path) as data:
        position = 0
        while position < len(data):
            try:
                header = BatchHeader.parse(data, position)
            except CorruptRecordError:
                break  # a torn header at the end of the file: the log ends here
            if position + header.size > len(data):
                break  # a torn batch at the end of the file
            try:
                validate_batch(data, position, check_count=False)
            except CorruptRecordError as err:
                raise CorruptRecordError(f"{segment.path} at position {position}: {err}") from err
            fields = (
                segment.base_offset,
                header.base_offset,
                header.last_offset,
                position,
                header.size,
                header.records_count,
                header.compression.name.lower(),
                header.producer_id,
                header.producer_epoch,
                header.base_sequence,
                header.partition_leader_epoch,
                header.is_transactional,
                header.is_control,
            )
            timestamp_type = int(header.timestamp_type)
            count = 0
            for record in RecordBatch(data, position).records():
                builder.add(
                    record.key,
                    record.value,
                    record.offset,
                    record.timestamp,
                    timestamp_type,
                    record.headers,
                )
                count += 1
            builder.add_batch_fields(fields, count)
            position += header.size
            if len(builder) >= ROWS_PER_BATCH:
                yield builder.flush()
        if len(builder):
            yield builder.flush()


class KafkaRefSegmentsReader(DataSourceReader):
    def __init__(self, path: str, include_headers: bool) -> None:
        self.path, self.include_headers = path, include_headers

    def partitions(self) -> list[SegmentFile]:
        segments = find_segments(self.path)
        if not segments:
            raise KafkaRefOptionError(f"kafka_ref_segments: no segment files under {self.path}")
        return segments

    def read(self, partition: SegmentFile) -> Iterator[pa.RecordBatch]:
        return read_segment(partition, self.include_headers)


def _segment_options(options: Mapping[str, str]) -> tuple[str, bool]:
    opts = {str(k).lower(): str(v) for k, v in options.items()}
    for key in opts:
        if key not in ("path", "includeheaders"):
            raise KafkaRefOptionError(
                f"Unknown option '{key}' for the kafka_ref_segments source. Valid options: "
                "path (or load(path)), includeHeaders."
            )
    if not opts.get("path"):
        raise KafkaRefOptionError(
            "kafka_ref_segments needs a path: load(<data dir, partition dir or .log file>)"
        )
    return opts["path"], _bool("includeHeaders", opts.get("includeheaders", "false"))


class KafkaRefSegmentsDataSource(DataSource):
    """`spark.read.format("kafka_ref_segments").load(path)`."""

    @classmethod
    def name(cls) -> str:
        return "kafka_ref_segments"

    def schema(self):
        _, include_headers = _segment_options(self.options)
        schema = kafka_schema(include_headers)
        for name, spark_type, _ in BATCH_COLUMNS:
            schema.add(StructField(name, spark_type))
        return schema

    def reader(self, schema) -> KafkaRefSegmentsReader:
        return KafkaRefSegmentsReader(*_segment_options(self.options))
