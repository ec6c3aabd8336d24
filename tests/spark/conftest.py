"""One in-process kafka-ref broker for all the Spark tests; their SparkSession, `spark`, is
tests/conftest.py's, the one every test of the run shares.

The broker is a `BrokerThread` on a free port; each test creates its own topics
(`new_topic`) so tests never see each other's records.
"""

from __future__ import annotations

import itertools
import time

import pytest

from kafka_ref.client.admin import Admin, NewTopic
from kafka_ref.client.producer import Producer
from kafka_ref.server.broker_process import BrokerThread
from kafka_ref.server.kafka_config import KafkaConfig

T0 = 1_700_000_000_000  # record timestamps in the tests start here (2023-11-14)
_topic_ids = itertools.count(1)


@pytest.fixture(scope="session")
def kafka_broker(tmp_path_factory):
    data_dir = tmp_path_factory.mktemp("broker") / "data"
    config = KafkaConfig.from_props(
        {
            "listeners": "PLAINTEXT://127.0.0.1:0",
            "log.dirs": str(data_dir),
            # The records carry timestamps from T0 (2023): under the default retention.ms of
            # seven days the retention check, 5 minutes after start, would delete them all.
            "log.retention.ms": "-1",
        }
    )
    broker = BrokerThread(config).start()
    broker.data_dir = str(data_dir)
    yield broker
    broker.stop()


@pytest.fixture(scope="session")
def bootstrap(kafka_broker) -> str:
    return kafka_broker.bootstrap


def create_topic(bootstrap: str, partitions: int = 1, **configs) -> str:
    """A fresh topic (configs with `_` for `.`: segment_bytes=...); returns its name."""
    name = f"spark-{next(_topic_ids)}-{int(time.time() * 1000) % 100000}"
    topic_configs = {k.replace("_", "."): str(v) for k, v in configs.items()}
    with Admin(bootstrap) as admin:
        admin.create_topics([NewTopic(name, partitions, 1, topic_configs)])
    return name


@pytest.fixture
def new_topic(bootstrap):
    """new_topic(partitions, **configs) -> the name of a fresh topic."""

    def create(partitions: int = 1, **configs) -> str:
        return create_topic(bootstrap, partitions, **configs)

    return create


def produce(bootstrap: str, topic: str, records, **producer_configs) -> list:
    """Send (partition, key, value[, timestamp[, headers]]) tuples; return RecordMetadata each."""
    producer = Producer(bootstrap, linger_ms=2, **producer_configs)
    try:
        futures = []
        for i, record in enumerate(records):
            partition, key, value, *rest = record
            timestamp = rest[0] if rest else T0 + i
            headers = rest[1] if len(rest) > 1 else None
            sent = producer.send(
                topic, value, key=key, partition=partition, timestamp=timestamp, headers=headers
            )
            futures.append(sent)
        producer.flush()
        return [f.result(timeout=30) for f in futures]
    finally:
        producer.close()


def kafka_options(bootstrap: str, **options) -> dict[str, str]:
    return {"kafka.bootstrap.servers": bootstrap, **{k: str(v) for k, v in options.items()}}


def read_topic(spark, bootstrap: str, **options):
    """spark.read.format("kafka_ref") with these options."""
    return spark.read.format("kafka_ref").options(**kafka_options(bootstrap, **options)).load()


ROW_COLUMNS = ("partition", "offset", "key", "value", "unix_millis(timestamp) AS ts")


def rows_of(df, *columns: str) -> list[tuple]:
    """The rows as sorted tuples (timestamps as epoch milliseconds, UTC)."""
    return sorted(tuple(r) for r in df.selectExpr(*(columns or ROW_COLUMNS)).collect())
