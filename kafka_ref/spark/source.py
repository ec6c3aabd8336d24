"""The `kafka_ref` data source: Spark's `format("kafka")`, for a kafka-ref (or any Kafka) broker.

A PySpark Python data source (PySpark 4.x, `pyspark.sql.datasource`) is a class Spark
instantiates with the user's options and asks for the parts it needs:

    spark.read.format("kafka_ref")...load()            -> schema(), reader()        reader.py
    spark.readStream.format("kafka_ref")...load()      -> schema(), streamReader()  stream_reader.py
    df.write.format("kafka_ref")...save()              -> writer()                  writer.py
    df.writeStream.format("kafka_ref")...start()       -> streamWriter()            writer.py

Spark runs these calls in Python worker processes, plans on the driver and pickles the
readers and writers to the executors, where `read()` and `write()` run. So everything
here is plain data (validated options, offset ranges) until `read()` or `write()` opens a
connection; a socket could not be pickled, and a connection opened on the driver would be
useless on a cluster anyway.

Options are validated when Spark asks for the reader or writer (options.py), so a wrong
option fails the query before any task runs, with one error that names it.

Spec rules: SPARK-1, SPARK-2 (spec/spark.md).
"""

from __future__ import annotations

from pyspark.sql.datasource import DataSource
from pyspark.sql.types import StructType

from kafka_ref.spark.options import (
    KafkaRefOptionError,
    _bool,
    parse_sink_options,
    parse_source_options,
)
from kafka_ref.spark.reader import KafkaRefBatchReader
from kafka_ref.spark.schema import kafka_schema
from kafka_ref.spark.stream_reader import KafkaRefStreamReader
from kafka_ref.spark.writer import KafkaRefStreamWriter, KafkaRefWriter, check_columns

__all__ = ["KafkaRefDataSource"]


class KafkaRefDataSource(DataSource):
    """`format("kafka_ref")`: topics as DataFrames, DataFrames into topics."""

    @classmethod
    def name(cls) -> str:
        return "kafka_ref"

    def schema(self) -> StructType:
        raw = {str(k).lower(): v for k, v in self.options.items()}
        return kafka_schema(_bool("includeHeaders", raw.get("includeheaders", "false")))

    def reader(self, schema: StructType) -> KafkaRefBatchReader:
        return KafkaRefBatchReader(parse_source_options(self.options, streaming=False))

    def streamReader(self, schema: StructType) -> KafkaRefStreamReader:
        return KafkaRefStreamReader(parse_source_options(self.options, streaming=True))

    def writer(self, schema: StructType, overwrite: bool) -> KafkaRefWriter:
        options = parse_sink_options(self.options)
        _check_mode(overwrite)
        check_columns(schema, options)
        return KafkaRefWriter(options)

    def streamWriter(self, schema: StructType, overwrite: bool) -> KafkaRefStreamWriter:
        options = parse_sink_options(self.options)
        check_columns(schema, options)
        return KafkaRefStreamWriter(options)


def _check_mode(overwrite: bool) -> None:
    if overwrite:  # records cannot be taken back from a log, as in Spark's Kafka sink
        raise KafkaRefOptionError(
            "Save mode Overwrite not allowed for Kafka. Allowed save modes are Append and "
            "ErrorIfExists (default)."
        )
