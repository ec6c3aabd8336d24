"""kafka-ref on Spark: topics and log segments as DataFrames (PySpark 4.2+ data sources).

    import kafka_ref.spark
    kafka_ref.spark.register(spark)          # first: Python data sources must be registered
    df = (spark.read.format("kafka_ref")
          .option("kafka.bootstrap.servers", "127.0.0.1:9092")
          .option("subscribe", "clicks").load())

Two formats, each a module of this package:

| format               | reads                                  | module                 |
|----------------------|----------------------------------------|------------------------|
| `kafka_ref`          | topics over the wire (batch, streaming) and writes to them | source.py |
| `kafka_ref_segments` | `.log` segment files, no broker needed | segments.py            |

`kafka_ref` takes the options and gives the columns of Spark's own Kafka source
(`format("kafka")`, a name Spark keeps for its JVM connector), so a job moves between the
two by changing the format name. The rest of the package, one concept per module:
options.py (names and validation), offsets.py (offset ranges and JSON), offset_reader.py
(the driver's ListOffsets/Metadata questions), schema.py (rows as Arrow batches),
reader.py (batch read), stream_reader.py (micro-batches), writer.py (batch and streaming
writes). Installing: `pip install 'kafka-ref[spark]'` (pyspark and pyarrow); the package
must be importable where Spark's Python workers run.

Spec: spec/spark.md.
"""

from __future__ import annotations

from kafka_ref.spark.options import KafkaRefOptionError
from kafka_ref.spark.segments import KafkaRefSegmentsDataSource
from kafka_ref.spark.source import KafkaRefDataSource

__all__ = ["KafkaRefDataSource", "KafkaRefOptionError", "KafkaRefSegmentsDataSource", "register"]


def register(spark) -> None:
    """Register `kafka_ref` and `kafka_ref_segments` on a SparkSession."""
    spark.dataSource.register(KafkaRefDataSource)
    spark.dataSource.register(KafkaRefSegmentsDataSource)
