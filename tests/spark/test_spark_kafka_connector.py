"""Spark's own Kafka connector against kafka-ref, and the `kafka_ref` format against it.

`format("kafka")` is Spark's spark-sql-kafka-0-10 (the JVM connector on Apache Kafka's Java
client, kafka_ref/spark/connector.py); `format("kafka_ref")` is kafka-ref's Python data
source. Both run in the one session of tests/spark/conftest.py on the same topics of a
kafka-ref broker: batch and streaming reads, read_committed over committed and aborted
transactions, batch and streaming writes. Each test checks that the connector gets what the
data says, and that `kafka_ref` gets the same rows (SPARK-27..SPARK-31).
"""

from __future__ import annotations

import json

import pytest
from confluent_kafka import Producer as TransactionalProducer

from kafka_ref.spark import connector
from tests.spark.conftest import T0, create_topic, kafka_options, produce

FORMATS = ("kafka", "kafka_ref")
ROW = ("partition", "offset", "key", "value")
COLUMNS = ("topic", *ROW, "unix_millis(timestamp) AS ts", "timestampType")


def rows(df, columns=COLUMNS) -> list[tuple]:
    """The rows as sorted tuples; headers become tuples of (key, value) pairs."""
    return sorted(
        (tuple(normal(v) for v in row) for row in df.selectExpr(*columns).collect()), key=repr
    )


def normal(value):
    if isinstance(value, bytearray):
        return bytes(value)
    if isinstance(value, list):  # headers: array<struct<key, value>>
        return tuple((h["key"], None if h["value"] is None else bytes(h["value"])) for h in value)
    return value


def read(spark, fmt: str, bootstrap: str, **options):
    return spark.read.format(fmt).options(**kafka_options(bootstrap, **options)).load()


def read_both(spark, bootstrap: str, columns=COLUMNS, **options) -> list[list[tuple]]:
    """The same batch read through Spark's connector, then through kafka_ref."""
    return [rows(read(spark, fmt, bootstrap, **options), columns) for fmt in FORMATS]


def positions(found: list[tuple]) -> set[tuple[int, int]]:
    return {(row[0], row[1]) for row in found}


@pytest.fixture(scope="module")
def mixed_topic(bootstrap):
    """Three partitions of 20 records each: keyed, unkeyed, headered, set timestamps."""
    topic = create_topic(bootstrap, 3)
    records = []
    for i in range(60):
        key = None if i % 5 == 0 else b"user-%d" % (i % 7)
        headers = [("trace", b"t-%d" % i), ("empty", None)] if i % 4 == 0 else None
        records.append((i % 3, key, b"event-%d" % i, T0 + 1000 * i, headers))
    produce(bootstrap, topic, records)
    return topic


@pytest.mark.spec("SPARK-27")
def test_format_kafka_is_spark_s_own_connector_at_spark_s_version(spark):
    lookup = spark._jvm.org.apache.spark.sql.execution.datasources.DataSource.lookupDataSource
    provider = lookup("kafka", spark._jsparkSession.sessionState().conf())
    assert provider.getName() == "org.apache.spark.sql.kafka010.KafkaSourceProvider"
    jar = provider.getProtectionDomain().getCodeSource().getLocation().getPath()
    assert jar.endswith(f"spark-sql-kafka-0-10_2.13-{spark.version}.jar")
    assert connector.version() == spark.version
    with pytest.raises(connector.SparkConnectorUnavailable, match=r"this PySpark is 4\.9\.9"):
        connector.check_spark_version("4.9.9")


@pytest.mark.spec("SPARK-28")
def test_a_batch_read_of_a_whole_topic_gives_the_same_rows(spark, bootstrap, mixed_topic):
    spark_rows, ours = read_both(spark, bootstrap, ("topic", *ROW[:2]), subscribe=mixed_topic)
    assert {(r[1], r[2]) for r in spark_rows} == {(p, o) for p in range(3) for o in range(20)}
    spark_rows, ours = read_both(spark, bootstrap, subscribe=mixed_topic)
    assert spark_rows[0] == (mixed_topic, 0, 0, None, b"event-0", T0, 0)
    assert ours == spark_rows


OFFSET_CASES = {
    # name: (startingOffsets, endingOffsets, the offsets each partition gives)
    "earliest-latest": ("earliest", "latest", {0: range(20), 1: range(20), 2: range(20)}),
    "json-ranges": (
        {"0": 3, "1": -2, "2": 19},
        {"0": 8, "1": 5, "2": -1},
        {0: range(3, 8), 1: range(5), 2: range(19, 20)},
    ),
    "empty-and-one": ({"0": 20, "1": 0, "2": 0}, {"0": -1, "1": 1, "2": 0}, {1: range(1)}),
}


@pytest.mark.spec("SPARK-28")
@pytest.mark.parametrize("case", OFFSET_CASES)
def test_a_batch_read_between_offsets_gives_the_same_rows(spark, bootstrap, mixed_topic, case):
    start, end, expected = OFFSET_CASES[case]
    options = {
        name: value if isinstance(value, str) else json.dumps({mixed_topic: value})
        for name, value in (("startingOffsets", start), ("endingOffsets", end))
    }
    assign = json.dumps({mixed_topic: [0, 1, 2]})
    spark_rows, ours = read_both(spark, bootstrap, ROW, assign=assign, **options)
    assert positions(spark_rows) == {(p, o) for p, offsets in expected.items() for o in offsets}
    assert ours == spark_rows


@pytest.mark.spec("SPARK-28", "SPARK-32")
def test_headers_are_read_the_same(spark, bootstrap, mixed_topic):
    columns = ("partition", "offset", "headers")
    spark_rows, ours = read_both(
        spark, bootstrap, columns, subscribe=mixed_topic, includeHeaders="true"
    )
    assert (0, 0, (("trace", b"t-0"), ("empty", None))) in spark_rows
    assert (1, 0, None) in spark_rows  # a record without headers: null, not an empty array
    assert ours == spark_rows


# ---------------------------------------------------------------- read_committed


def transaction(producer, topic: str, tag: str, end: str | None) -> list[bytes]:
    """Six records over two partitions; end: "commit", "abort" or None (left open)."""
    producer.begin_transaction()
    values = [b"%s-%d" % (tag.encode(), i) for i in range(6)]
    for i, value in enumerate(values):
        producer.produce(topic, value, partition=i % 2)
    producer.flush(30)
    if end == "commit":
        producer.commit_transaction(30)
    elif end == "abort":
        producer.abort_transaction(30)
    return values


@pytest.mark.spec("SPARK-29")
def test_read_committed_over_committed_and_aborted_transactions(spark, bootstrap):
    topic = create_topic(bootstrap, 2)
    produce(bootstrap, topic, [(p, None, b"plain-%d" % p) for p in (0, 1)])
    producer = TransactionalProducer({"bootstrap.servers": bootstrap, "transactional.id": topic})
    producer.init_transactions(30)
    committed = transaction(producer, topic, "c1", "commit")
    aborted = transaction(producer, topic, "a1", "abort")
    committed += transaction(producer, topic, "c2", "commit")
    still_open = transaction(producer, topic, "open", None)
    plain = [b"plain-0", b"plain-1"]

    def values(found):
        return sorted(row[3] for row in found)

    read_committed = {"kafka.isolation.level": "read_committed"}
    spark_rows, ours = read_both(spark, bootstrap, ROW, subscribe=topic, **read_committed)
    assert values(spark_rows) == sorted(plain + committed)
    assert ours == spark_rows
    # read_uncommitted: everything up to the high watermark, aborted and open records too;
    # the markers are never rows, so both leave the same gaps in the offsets.
    spark_rows, ours = read_both(spark, bootstrap, ROW, subscribe=topic)
    assert values(spark_rows) == sorted(plain + committed + aborted + still_open)
    assert ours == spark_rows
    producer.abort_transaction(30)


# ---------------------------------------------------------------- streaming reads


def micro_batches(spark, fmt: str, bootstrap: str, checkpoint: str, **options) -> list[list]:
    """An availableNow query through `fmt`: each micro-batch's (partition, offset, value)."""
    batches: dict[int, list] = {}

    def collect(batch_df, batch_id):
        found = rows(batch_df, ("partition", "offset", "value"))
        if found:
            batches[batch_id] = found

    query = (
        spark.readStream.format(fmt)
        .options(**kafka_options(bootstrap, **options))
        .load()
        .writeStream.foreachBatch(collect)
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(180)
    assert not query.isActive and query.exception() is None
    return [batches[i] for i in sorted(batches)]


@pytest.mark.spec("SPARK-30")
@pytest.mark.parametrize(
    ("start", "limit"),
    [("earliest", None), ("earliest", 7), ({"0": 4, "1": -2, "2": -2}, 10)],
    ids=["earliest", "max-7-per-trigger", "json-start-max-10"],
)
def test_a_streaming_read_gives_the_same_micro_batches(spark, bootstrap, tmp_path, start, limit):
    topic = create_topic(bootstrap, 3)
    # Uneven partitions, so that a rate limit has to share a micro-batch among them.
    sizes = {0: 17, 1: 5, 2: 0}
    produce(
        bootstrap, topic, [(p, None, b"%d-%d" % (p, i)) for p in sizes for i in range(sizes[p])]
    )
    options = {"subscribe": topic}
    options["startingOffsets"] = start if isinstance(start, str) else json.dumps({topic: start})
    if limit:
        options["maxOffsetsPerTrigger"] = limit
    spark_batches, ours = (
        micro_batches(spark, fmt, bootstrap, str(tmp_path / fmt), **options) for fmt in FORMATS
    )
    first = 0 if isinstance(start, str) else start["0"]
    read_all = {(0, o) for o in range(first, 17)} | {(1, o) for o in range(5)}
    assert {(p, o) for batch in spark_batches for p, o, _ in batch} == read_all
    if limit:
        assert len(spark_batches) > 1 and all(len(batch) <= limit for batch in spark_batches)
    assert ours == spark_batches


# ---------------------------------------------------------------- writes


def rows_to_write(spark):
    data = [
        (
            b"user-%d" % (i % 4) if i % 6 else None,
            b"value-%d" % i,
            i % 2,
            [("n", b"%d" % i)] if i % 3 == 0 else [],
        )
        for i in range(40)
    ]
    schema = (
        "key binary, value binary, partition int, headers array<struct<key:string,value:binary>>"
    )
    return spark.createDataFrame(data, schema).coalesce(1)


WRITTEN = ("partition", "offset", "key", "value", "headers")


@pytest.mark.spec("SPARK-31")
def test_a_batch_write_lands_the_same_records(spark, bootstrap):
    df = rows_to_write(spark)
    topics = {fmt: create_topic(bootstrap, 2) for fmt in FORMATS}
    for fmt, topic in topics.items():
        df.write.format(fmt).options(**kafka_options(bootstrap, topic=topic)).mode("append").save()
    landed = {
        fmt: rows(read(spark, "kafka", bootstrap, subscribe=topic, includeHeaders="true"), WRITTEN)
        for fmt, topic in topics.items()
    }
    assert len(landed["kafka"]) == 40
    assert (0, 0, None, b"value-0", (("n", b"0"),)) in landed["kafka"]
    assert landed["kafka_ref"] == landed["kafka"]


@pytest.mark.spec("SPARK-31")
def test_a_streaming_write_lands_the_same_records(spark, bootstrap, tmp_path):
    source = create_topic(bootstrap, 2)
    produce(bootstrap, source, [(i % 2, b"k-%d" % (i % 5), b"v-%d" % i) for i in range(30)])
    sinks = {fmt: create_topic(bootstrap, 2) for fmt in FORMATS}
    for fmt, sink in sinks.items():
        query = (
            spark.readStream.format(fmt)
            .options(**kafka_options(bootstrap, subscribe=source, startingOffsets="earliest"))
            .load()
            .selectExpr("key", "value", "partition")
            .writeStream.format(fmt)
            .options(**kafka_options(bootstrap, topic=sink))
            .option("checkpointLocation", str(tmp_path / fmt))
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination(180)
        assert not query.isActive and query.exception() is None
    landed = {
        fmt: rows(read(spark, "kafka", bootstrap, subscribe=sink), ROW)
        for fmt, sink in sinks.items()
    }
    assert rows(read(spark, "kafka", bootstrap, subscribe=source), ROW) == landed["kafka"]
    assert landed["kafka_ref"] == landed["kafka"]
