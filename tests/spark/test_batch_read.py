"""Batch reads of topics through `format("kafka_ref")` (SPARK-1..SPARK-6, SPARK-14, SPARK-15)."""

from __future__ import annotations

import pytest
from pyspark.errors import AnalysisException, PythonException
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

from kafka_ref.client.admin import Admin
from kafka_ref.common import TopicPartition
from tests.spark.conftest import T0, produce, read_topic, rows_of


@pytest.mark.spec("SPARK-1", "SPARK-3")
def test_a_batch_read_returns_every_record_as_produced(spark, bootstrap, new_topic):
    topic = new_topic(3)
    records = [(i % 3, b"user-%d" % i, b"event-%d" % i, T0 + i) for i in range(297)]
    records.append((0, None, b"no key", T0 + 500))
    records.append((1, b"tombstone", None, T0 + 501))
    sent = produce(bootstrap, topic, records)

    df = read_topic(spark, bootstrap, subscribe=topic)
    expected = sorted(
        (meta.partition, meta.offset, key, value, ts)
        for meta, (_, key, value, ts) in zip(sent, records, strict=True)
    )
    assert rows_of(df) == expected
    assert df.schema == StructType(
        [
            StructField("key", BinaryType()),
            StructField("value", BinaryType()),
            StructField("topic", StringType()),
            StructField("partition", IntegerType()),
            StructField("offset", LongType()),
            StructField("timestamp", TimestampType()),
            StructField("timestampType", IntegerType()),
        ]
    )
    assert {tuple(r) for r in df.select("topic", "timestampType").distinct().collect()} == {
        (topic, 0)
    }


@pytest.mark.spec("SPARK-3", "SPARK-32")
def test_include_headers_adds_the_headers_column(spark, bootstrap, new_topic):
    topic = new_topic(1)
    produce(
        bootstrap,
        topic,
        [
            (0, b"a", b"1", T0, [("trace", b"t-1"), ("empty", None)]),
            (0, b"b", b"2", T0 + 1, None),
        ],
    )
    df = read_topic(spark, bootstrap, subscribe=topic, includeHeaders="true")
    assert df.schema["headers"].dataType == ArrayType(
        StructType([StructField("key", StringType()), StructField("value", BinaryType())])
    )
    headers = [r.headers for r in df.orderBy("offset").collect()]
    assert [(h.key, h.value) for h in headers[0]] == [("trace", b"t-1"), ("empty", None)]
    assert headers[1] is None  # SPARK-32: no headers, null as Spark's connector gives


@pytest.mark.spec("SPARK-4")
def test_starting_and_ending_offsets_bound_each_partition(spark, bootstrap, new_topic):
    topic = new_topic(2)
    produce(bootstrap, topic, [(i % 2, b"k", b"%d" % i) for i in range(80)])  # 40 each
    df = read_topic(
        spark,
        bootstrap,
        subscribe=topic,
        startingOffsets=f'{{"{topic}": {{"0": 10, "1": -2}}}}',
        endingOffsets=f'{{"{topic}": {{"0": 15, "1": -1}}}}',
    )
    got = rows_of(df, "partition", "offset")
    assert got == [(0, o) for o in range(10, 15)] + [(1, o) for o in range(40)]


@pytest.mark.spec("SPARK-4")
def test_offsets_json_must_name_every_partition(spark, bootstrap, new_topic):
    topic = new_topic(2)
    with pytest.raises(AnalysisException, match="you must specify all TopicPartitions"):
        read_topic(
            spark, bootstrap, subscribe=topic, startingOffsets=f'{{"{topic}": {{"0": 0}}}}'
        ).count()


@pytest.mark.spec("SPARK-4")
def test_assign_subscribe_and_subscribe_pattern_choose_partitions(spark, bootstrap, new_topic):
    first, second, other = new_topic(2), new_topic(1), new_topic(1)
    for topic in (first, second, other):
        produce(
            bootstrap, topic, [(p, b"k", topic.encode()) for p in (0, 1)[: 1 + (topic == first)]]
        )

    assigned = read_topic(spark, bootstrap, assign=f'{{"{first}": [1]}}')
    assert rows_of(assigned, "topic", "partition") == [(first, 1)]

    subscribed = read_topic(spark, bootstrap, subscribe=f"{first},{second},no-such-topic")
    assert rows_of(subscribed, "topic", "partition") == sorted(
        [(first, 0), (first, 1), (second, 0)]
    )

    # The pattern must match the whole name: `first` and `second` differ only in their id.
    pattern = f"({first}|{second})"
    by_pattern = read_topic(spark, bootstrap, subscribePattern=pattern)
    assert rows_of(by_pattern, "topic", "partition") == rows_of(subscribed, "topic", "partition")
    assert read_topic(spark, bootstrap, subscribe="no-such-topic").count() == 0


@pytest.mark.spec("SPARK-5")
def test_max_records_and_min_partitions_split_ranges_into_tasks(spark, bootstrap, new_topic):
    topic = new_topic(2)
    produce(bootstrap, topic, [(0, b"k", b"%d" % i) for i in range(100)] + [(1, b"k", b"x")])
    whole = read_topic(spark, bootstrap, subscribe=topic)
    assert whole.rdd.getNumPartitions() == 2

    by_max = read_topic(spark, bootstrap, subscribe=topic, maxRecordsPerPartition=30)
    assert by_max.rdd.getNumPartitions() == 4 + 1  # ceil(100/30) + the 1-record partition
    by_min = read_topic(spark, bootstrap, subscribe=topic, minPartitions=6)
    assert by_min.rdd.getNumPartitions() == 6 + 1  # round(100/101*6) + at least one
    for df in (by_max, by_min):
        assert rows_of(df, "partition", "offset") == rows_of(whole, "partition", "offset")


@pytest.mark.spec("SPARK-6")
def test_starting_timestamp_starts_at_the_first_record_at_or_after_it(spark, bootstrap, new_topic):
    topic = new_topic(2)
    produce(
        bootstrap, topic, [(p, b"k", b"%d" % i, T0 + 10 * i) for p in (0, 1) for i in range(50)]
    )
    df = read_topic(spark, bootstrap, subscribe=topic, startingTimestamp=T0 + 255)
    assert rows_of(df, "partition", "offset") == [(p, o) for p in (0, 1) for o in range(26, 50)]

    per_partition = read_topic(
        spark,
        bootstrap,
        subscribe=topic,
        startingOffsetsByTimestamp=f'{{"{topic}": {{"0": {T0 + 100}, "1": {T0 + 480}}}}}',
        endingTimestamp=T0 + 105,
    )
    # Partition 0 reads from ts 100 (offset 10) until the first record at ts >= 105 (11);
    # partition 1 starts at ts 480 (offset 48), which is already past its end (offset 11).
    with pytest.raises(Exception, match="before its starting offset"):
        per_partition.count()

    too_late = {"subscribe": topic, "startingTimestamp": T0 + 10_000}
    with pytest.raises(AnalysisException, match="No offset matched the starting timestamp"):
        read_topic(spark, bootstrap, **too_late).count()
    latest = read_topic(spark, bootstrap, **too_late, startingOffsetsByTimestampStrategy="latest")
    assert latest.count() == 0


@pytest.mark.spec("SPARK-14")
def test_fail_on_data_loss_when_the_start_was_deleted(spark, bootstrap, new_topic):
    topic = new_topic(1)
    produce(bootstrap, topic, [(0, b"k", b"%d" % i) for i in range(50)])
    with Admin(bootstrap) as admin:
        admin.delete_records({TopicPartition(topic, 0): 30})
    from_ten = {"subscribe": topic, "startingOffsets": f'{{"{topic}": {{"0": 10}}}}'}
    with pytest.raises(AnalysisException, match=rf"{topic}-0 from 10 \(log starts at 30\)"):
        read_topic(spark, bootstrap, **from_ten).count()
    df = read_topic(spark, bootstrap, **from_ten, failOnDataLoss="false")
    assert rows_of(df, "offset") == [(o,) for o in range(30, 50)]


@pytest.mark.spec("SPARK-2")
def test_spark_reports_a_wrong_option_as_one_error_before_any_task(spark, bootstrap, new_topic):
    topic = new_topic(1)
    with pytest.raises(AnalysisException) as info:
        read_topic(spark, bootstrap, subscribe=topic, startingOffset="earliest").count()
    message = str(info.value)
    assert "KafkaRefOptionError: Unknown option 'startingoffset'" in message
    assert "Did you mean 'startingOffsets'?" in message


@pytest.mark.spec("SPARK-15")
def test_a_range_that_cannot_be_fetched_fails_the_task(spark, bootstrap, new_topic):
    topic = new_topic(1)
    produce(bootstrap, topic, [(0, b"k", b"v")] * 5)
    df = read_topic(
        spark,
        bootstrap,
        subscribe=topic,
        endingOffsets=f'{{"{topic}": {{"0": 8}}}}',  # beyond the end: offsets 5..7 never come
        **{"kafkaConsumer.pollTimeoutMs": 1500},
    )
    with pytest.raises(
        PythonException, match=rf"Timeout of 1500 ms waiting for records of {topic}-0"
    ):
        df.collect()
