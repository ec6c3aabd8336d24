"""Options are Spark's Kafka source's names; a wrong one is one clear error (SPARK-2).

These check the validation itself, without Spark; test_batch_read.py checks that Spark
surfaces the same message when a query is planned.
"""

from __future__ import annotations

import pytest

from kafka_ref.spark.options import (
    KafkaRefOptionError,
    parse_sink_options,
    parse_source_options,
)

BASE = {"kafka.bootstrap.servers": "127.0.0.1:9092", "subscribe": "clicks"}


def error(options, streaming=False) -> str:
    with pytest.raises(KafkaRefOptionError) as info:
        parse_source_options(options, streaming=streaming)
    return str(info.value)


@pytest.mark.spec("SPARK-2")
def test_spark_names_are_accepted_case_insensitively():
    options = parse_source_options(
        {
            "KAFKA.BOOTSTRAP.SERVERS": "h:1",
            "SubscribePattern": "clicks-.*",
            "STARTINGOFFSETS": '{"clicks-1": {"0": 5}}',
            "minpartitions": "4",
            "maxRecordsPerPartition": "100",
            "includeHeaders": "TRUE",
            "failOnDataLoss": "false",
            "kafka.isolation.level": "read_committed",
            "kafka.max.poll.records": "50",
        },
        streaming=False,
    )
    assert (options.strategy, options.strategy_value) == ("subscribePattern", "clicks-.*")
    assert options.min_partitions == 4 and options.max_records_per_partition == 100
    assert options.include_headers and not options.fail_on_data_loss
    assert options.consumer_configs == {"isolation_level": "read_committed", "max_poll_records": 50}
    assert options.ending == "latest"


@pytest.mark.spec("SPARK-2")
def test_defaults_are_sparks():
    batch = parse_source_options(BASE, streaming=False)
    stream = parse_source_options(BASE, streaming=True)
    assert (batch.starting, batch.ending) == ("earliest", "latest")
    assert stream.starting == "latest"
    assert batch.fail_on_data_loss and not batch.include_headers
    assert batch.timestamp_strategy == "error"


@pytest.mark.spec("SPARK-2")
def test_a_misspelt_option_is_named_with_the_nearest_valid_one():
    message = error({**BASE, "startingOffset": "earliest"})
    assert "Unknown option 'startingoffset'" in message
    assert "Did you mean 'startingOffsets'?" in message
    assert "kafka.bootstrap.servers" in message  # the valid ones are listed


@pytest.mark.spec("SPARK-2")
@pytest.mark.parametrize(
    ("options", "streaming", "expected"),
    [
        ({"subscribe": "t"}, False, "'kafka.bootstrap.servers' must be specified"),
        ({"kafka.bootstrap.servers": "h:1"}, False, "One of the following options must be"),
        ({**BASE, "assign": '{"t": [0]}'}, False, "Only one of the following options can be"),
        ({**BASE, "startingOffsets": "latest"}, False, "can't be latest for batch queries"),
        ({**BASE, "endingOffsets": "earliest"}, False, "must be 'latest' or JSON"),
        ({**BASE, "startingOffsets": '{"t": {"0": -1}}'}, False, "t-0 can't be latest"),
        ({**BASE, "endingOffsets": '{"t": {"0": -2}}'}, False, "t-0 can't be earliest"),
        ({**BASE, "startingOffsets": "{oops"}, False, "must be 'earliest' or 'latest' or JSON"),
        ({**BASE, "endingOffsets": "latest"}, True, "not valid in streaming queries"),
        ({**BASE, "maxOffsetsPerTrigger": "10"}, False, "only valid in streaming queries"),
        ({**BASE, "maxOffsetsPerTrigger": "0"}, True, "must be a positive integer"),
        ({**BASE, "minPartitions": "x"}, False, "must be a positive integer"),
        ({**BASE, "includeHeaders": "yes"}, False, "must be 'true' or 'false'"),
        ({**BASE, "startingTimestamp": "noon"}, False, "milliseconds since the epoch"),
        ({**BASE, "subscribe": " , "}, False, "No topics to subscribe to"),
        ({"kafka.bootstrap.servers": "h:1", "assign": "[0]"}, False, "'assign' must be JSON"),
        ({**BASE, "kafka.auto.offset.reset": "earliest"}, False, "set the source option"),
        ({**BASE, "kafka.value.deserializer": "x"}, False, "'value.deserializer' is not"),
        ({**BASE, "kafka.fetch.max.byte": "1"}, False, "Did you mean 'kafka.fetch.max.bytes'"),
        ({**BASE, "kafka.fetch.max.bytes": "lots"}, False, "must be an integer"),
    ],
)
def test_each_wrong_option_is_one_clear_error(options, streaming, expected):
    assert expected in error(options, streaming)


@pytest.mark.spec("SPARK-2")
def test_sink_options():
    options = parse_sink_options(
        {"kafka.bootstrap.servers": "h:1", "topic": "out", "kafka.linger.ms": "7"}
    )
    assert (options.topic, options.producer_configs) == ("out", {"linger_ms": 7})
    with pytest.raises(KafkaRefOptionError, match="Unknown option 'subscribe' for the kafka_ref"):
        parse_sink_options({"kafka.bootstrap.servers": "h:1", "subscribe": "t"})
    with pytest.raises(KafkaRefOptionError, match=r"'key\.serializer' is not supported"):
        parse_sink_options({"kafka.bootstrap.servers": "h:1", "kafka.key.serializer": "x"})
    with pytest.raises(KafkaRefOptionError, match="configuring Kafka producer"):
        parse_sink_options({"topic": "t"})
