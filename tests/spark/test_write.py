"""Writing DataFrames to topics with `format("kafka_ref")` (SPARK-10, SPARK-11)."""

from __future__ import annotations

import pytest
from pyspark.errors import PythonException
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    StringType,
    StructField,
    StructType,
)

from kafka_ref.client.partitioner import partition_for_key
from tests.spark.conftest import kafka_options, produce, read_topic, rows_of

HEADERS = ArrayType(
    StructType([StructField("key", StringType()), StructField("value", BinaryType())])
)


def write(df, bootstrap: str, mode: str = "append", **options) -> None:
    df.write.format("kafka_ref").options(**kafka_options(bootstrap, **options)).mode(mode).save()


@pytest.mark.spec("SPARK-10")
def test_rows_land_with_their_keys_partitions_and_headers(spark, bootstrap, new_topic):
    topic = new_topic(4)
    schema = StructType(
        [
            StructField("key", StringType()),
            StructField("value", BinaryType()),
            StructField("partition", IntegerType()),
            StructField("headers", HEADERS),
            StructField("ignored", StringType()),  # other columns are not part of the record
        ]
    )
    rows = [(f"user-{i}", b"v%d" % i, None, None, "x") for i in range(40)]
    rows += [(None, b"pinned-%d" % i, 3, [("h", b"%d" % i)], "x") for i in range(5)]
    rows += [("user-1", None, 2, None, "x")]  # a tombstone, pinned to partition 2
    write(spark.createDataFrame(rows, schema), bootstrap, topic=topic)

    got = read_topic(spark, bootstrap, subscribe=topic, includeHeaders="true")
    landed = [
        (r.key, r.value, r.partition, r.headers and [(h.key, h.value) for h in r.headers])
        for r in got.collect()
    ]
    # A record written without headers reads back with null headers (SPARK-32).
    expected = [
        (f"user-{i}".encode(), b"v%d" % i, partition_for_key(f"user-{i}".encode(), 4), None)
        for i in range(40)
    ]
    expected += [(None, b"pinned-%d" % i, 3, [("h", b"%d" % i)]) for i in range(5)]
    expected += [(b"user-1", None, 2, None)]
    assert sorted(landed, key=repr) == sorted(expected, key=repr)


@pytest.mark.spec("SPARK-10")
def test_the_topic_column_routes_rows_and_the_topic_option_wins(spark, bootstrap, new_topic):
    first, second, forced = new_topic(1), new_topic(1), new_topic(1)
    df = spark.createDataFrame(
        [(first, "a"), (second, "b"), (first, "c")], "topic string, value string"
    )
    write(df, bootstrap)
    assert rows_of(read_topic(spark, bootstrap, subscribe=first), "value") == [(b"a",), (b"c",)]
    assert rows_of(read_topic(spark, bootstrap, subscribe=second), "value") == [(b"b",)]
    write(df, bootstrap, topic=forced)
    assert read_topic(spark, bootstrap, subscribe=forced).count() == 3


@pytest.mark.spec("SPARK-11")
@pytest.mark.parametrize(
    ("ddl", "options", "mode", "message"),
    [
        ("key string", {"topic": "t"}, "append", "Required attribute 'value' not found"),
        ("value string", {}, "append", "topic option required when no 'topic' attribute"),
        ("value int", {"topic": "t"}, "append", "value attribute type must be a string or binary"),
        ("value string, partition long", {"topic": "t"}, "append", "partition attribute type"),
        ("value string", {"topic": "t"}, "overwrite", "Save mode Overwrite not allowed"),
        ("value string", {"topic": "t", "kafka.acks": "2"}, "append", "acks must be"),
    ],
)
def test_a_wrong_dataframe_fails_before_any_task(spark, bootstrap, ddl, options, mode, message):
    df = spark.createDataFrame([], ddl)
    # Spark wraps the error of the driver-side writer() differently per call path
    # (AnalysisException, a Py4J error); the message is what the user reads.
    with pytest.raises(Exception, match=message):
        write(df, bootstrap, mode=mode, **options)


@pytest.mark.spec("SPARK-11")
def test_a_record_the_broker_refuses_fails_the_job(spark, bootstrap, new_topic):
    topic = new_topic(2)
    big = spark.createDataFrame([("x" * 5000,)], "value string")
    with pytest.raises(PythonException, match=r"Failed to send a record to Kafka: .*larger than"):
        write(big, bootstrap, topic=topic, **{"kafka.max.request.size": 1000})

    missing_partition = spark.createDataFrame([("v", 7)], "value string, partition int")
    with pytest.raises(PythonException, match=f"Partition 7 of topic {topic} not present"):
        write(missing_partition, bootstrap, topic=topic, **{"kafka.max.block.ms": 1000})
    assert read_topic(spark, bootstrap, subscribe=topic).count() == 0


@pytest.mark.spec("SPARK-10")
def test_a_batch_read_can_be_written_back_unchanged(spark, bootstrap, new_topic):
    source, copy = new_topic(3), new_topic(3)
    produce(bootstrap, source, [(i % 3, b"k%d" % i, b"v%d" % i) for i in range(60)])
    original = read_topic(spark, bootstrap, subscribe=source)
    write(original.select("key", "value", "partition"), bootstrap, topic=copy)
    again = read_topic(spark, bootstrap, subscribe=copy)
    columns = ("partition", "key", "value")
    assert rows_of(again, *columns) == rows_of(original, *columns)
