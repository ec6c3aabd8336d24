"""An in-process broker on a free port, and a blocking wire client to poke it.

`make_broker(**configs)` starts a `BrokerThread` (its own event loop in a daemon thread)
on 127.0.0.1:0 with a fresh data directory; `broker` is one with default configs. `Wire` is
the conformance suite's client (kafka_ref/conformance/wire.py): it speaks the protocol over a
plain socket with the project's own codecs, so a test can send exactly the bytes it wants:
pipelined requests, half frames, garbage.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from kafka_ref.conformance import wire
from kafka_ref.conformance.wire import T0, fetch_body, produce_body  # noqa: F401 (re-exported)
from kafka_ref.protocol.messages import apis_for_listener
from kafka_ref.record.batch import build_batch
from kafka_ref.record.compression import Compression
from kafka_ref.record.record import Record
from kafka_ref.server.broker_process import BrokerThread
from kafka_ref.server.kafka_config import KafkaConfig


class Wire(wire.Wire):
    """The conformance suite's wire client, on 127.0.0.1; Metadata may create topics."""

    def __init__(self, port: int, timeout: float = 10.0) -> None:
        super().__init__("127.0.0.1", port, timeout)

    def metadata(self, topics: list[str] | None, version: int = 5, auto: bool = True) -> Any:
        return super().metadata(topics, version, auto)


def batch(
    count: int = 1,
    *,
    ts: int = T0,
    value_size: int = 10,
    compression: Compression = Compression.NONE,
    key_prefix: bytes = b"k",
) -> bytes:
    """A producer batch of `count` records with timestamps ts, ts+1, ..."""
    records = [
        Record(key_prefix + b"%d" % i, b"v" * value_size, timestamp=ts + i) for i in range(count)
    ]
    return build_batch(records, compression=compression)


def assert_all_apis_have_handlers(broker: BrokerThread) -> None:
    assert set(broker.broker.apis.handlers) == set(apis_for_listener("broker"))


@pytest.fixture
def make_broker(tmp_path):
    started: list[BrokerThread] = []

    def make(data_dir=None, props: dict[str, Any] | None = None) -> BrokerThread:
        """A started broker; `props` are broker configs by Kafka's names."""
        props = {
            "listeners": "PLAINTEXT://127.0.0.1:0",
            "log.dirs": str(data_dir or tmp_path / f"data{len(started)}"),
            **(props or {}),
        }
        thread = BrokerThread(KafkaConfig.from_props({k: str(v) for k, v in props.items()}))
        thread.start()
        started.append(thread)
        return thread

    yield make
    for thread in started:
        thread.stop()


@pytest.fixture
def broker(make_broker) -> BrokerThread:
    return make_broker()


@pytest.fixture
def wire(broker):
    connection = Wire(broker.port)
    yield connection
    connection.close()


def wait_until(predicate, timeout: float = 5.0, interval: float = 0.01) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return predicate()
