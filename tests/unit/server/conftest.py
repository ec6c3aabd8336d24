"""An in-process broker on a free port, and a tiny blocking wire client to poke it.

`make_broker(**configs)` starts a `BrokerThread` (its own event loop in a daemon thread)
on 127.0.0.1:0 with a fresh data directory; `broker` is one with default configs. `Wire`
speaks the protocol over a plain socket with the project's own codecs, so a test can send
exactly the bytes it wants: pipelined requests, half frames, garbage.
"""

from __future__ import annotations

import socket
import struct
import time
from typing import Any

import pytest

from kafka_ref.protocol import frames
from kafka_ref.protocol.messages import (
    APIS,
    ApiKey,
    CreateTopicsRequest,
    FetchRequest,
    MetadataRequest,
    ProduceRequest,
)
from kafka_ref.record.batch import build_batch
from kafka_ref.record.compression import Compression
from kafka_ref.record.record import Record
from kafka_ref.server.broker import BrokerThread
from kafka_ref.server.kafka_config import KafkaConfig

T0 = 1_700_000_000_000


class Wire:
    """A blocking Kafka connection for tests: send requests, read responses."""

    def __init__(self, port: int, timeout: float = 10.0) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.correlation = 0
        self.pending: list[tuple[int, int, int]] = []  # (correlation, key, version)

    def close(self) -> None:
        self.sock.close()

    def frame(self, api_key: int, version: int, body: Any, client_id: str = "test") -> bytes:
        self.correlation += 1
        self.pending.append((self.correlation, api_key, version))
        return frames.encode_request(api_key, version, self.correlation, client_id, body)

    def send(self, api_key: int, version: int, body: Any, client_id: str = "test") -> int:
        self.sock.sendall(self.frame(api_key, version, body, client_id))
        return self.correlation

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def read_frame(self) -> bytes:
        size = struct.unpack(">i", self._exactly(4))[0]
        return self._exactly(size)

    def _exactly(self, n: int) -> bytes:
        chunks, got = [], 0
        while got < n:
            chunk = self.sock.recv(min(n - got, 1 << 20))
            if not chunk:
                raise ConnectionError("closed by the broker")
            chunks.append(chunk)
            got += len(chunk)
        return b"".join(chunks)

    def receive(self) -> tuple[int, Any]:
        """(correlation id, body) of the next response, decoded as the oldest pending request."""
        payload = self.read_frame()
        correlation, key, version = self.pending.pop(0)
        header, body = frames.decode_response(payload, key, version)
        assert header.correlation_id == correlation, "responses out of order"
        return correlation, body

    def request(self, api_key: int, version: int, body: Any) -> Any:
        self.send(api_key, version, body)
        return self.receive()[1]

    def is_closed(self, timeout: float = 5.0) -> bool:
        """True when the broker closed this connection (recv sees EOF or a reset)."""
        self.sock.settimeout(timeout)
        try:
            return self.sock.recv(1) == b""
        except (ConnectionResetError, BrokenPipeError):
            return True
        except TimeoutError:
            return False

    # -------------------------------------------------------------- common requests
    def create_topic(self, name: str, partitions: int = 1, **configs: str) -> int:
        body = CreateTopicsRequest(
            topics=[
                CreateTopicsRequest.CreatableTopic(
                    name=name,
                    num_partitions=partitions,
                    replication_factor=1,
                    assignments=[],
                    configs=[
                        CreateTopicsRequest.CreatableTopicConfig(name=k, value=v)
                        for k, v in configs.items()
                    ],
                )
            ],
            timeout_ms=5000,
            validate_only=False,
        )
        return self.request(ApiKey.CREATE_TOPICS, 4, body).topics[0].error_code

    def produce(
        self, topic: str, partition: int, records: bytes | None, acks: int = -1, version: int = 7
    ) -> Any:
        body = produce_body(topic, partition, records, acks)
        if acks == 0:
            self.sock.sendall(self.frame(ApiKey.PRODUCE, version, body))
            self.pending.pop()
            return None
        return self.request(ApiKey.PRODUCE, version, body).responses[0].partition_responses[0]

    def fetch(
        self,
        parts: list[tuple[str, int, int]],
        *,
        max_wait_ms: int = 0,
        min_bytes: int = 1,
        max_bytes: int = 50 << 20,
        partition_max_bytes: int = 1 << 20,
        version: int = 10,
        session_epoch: int = -1,
    ) -> Any:
        return self.request(
            ApiKey.FETCH,
            version,
            fetch_body(
                parts,
                max_wait_ms=max_wait_ms,
                min_bytes=min_bytes,
                max_bytes=max_bytes,
                partition_max_bytes=partition_max_bytes,
                session_epoch=session_epoch,
            ),
        )

    def metadata(self, topics: list[str] | None, version: int = 5, auto: bool = True) -> Any:
        body = MetadataRequest(
            topics=None
            if topics is None
            else [MetadataRequest.MetadataRequestTopic(name=t) for t in topics],
            allow_auto_topic_creation=auto,
        )
        return self.request(ApiKey.METADATA, version, body)


def produce_body(topic: str, partition: int, records: bytes | None, acks: int = -1) -> Any:
    return ProduceRequest(
        transactional_id=None,
        acks=acks,
        timeout_ms=5000,
        topic_data=[
            ProduceRequest.TopicProduceData(
                name=topic,
                partition_data=[
                    ProduceRequest.PartitionProduceData(index=partition, records=records)
                ],
            )
        ],
    )


def fetch_body(
    parts: list[tuple[str, int, int]],
    *,
    max_wait_ms: int = 0,
    min_bytes: int = 1,
    max_bytes: int = 50 << 20,
    partition_max_bytes: int = 1 << 20,
    session_epoch: int = -1,
) -> Any:
    topics: list[Any] = []
    for topic, partition, offset in parts:
        if not topics or topics[-1].topic != topic:
            topics.append(FetchRequest.FetchTopic(topic=topic, partitions=[]))
        topics[-1].partitions.append(
            FetchRequest.FetchPartition(
                partition=partition,
                current_leader_epoch=-1,
                fetch_offset=offset,
                log_start_offset=-1,
                partition_max_bytes=partition_max_bytes,
            )
        )
    return FetchRequest(
        replica_id=-1,
        max_wait_ms=max_wait_ms,
        min_bytes=min_bytes,
        max_bytes=max_bytes,
        isolation_level=0,
        session_id=0,
        session_epoch=session_epoch,
        topics=topics,
        forgotten_topics_data=[],
    )


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
    assert set(broker.broker.apis.handlers) == set(APIS)


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
