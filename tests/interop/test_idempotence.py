"""Idempotent real clients through lost responses and broker restarts (IDEM-16, IDEM-3, IDEM-9).

confluent-kafka with `enable.idempotence=true` and kafka-python with its defaults (idempotent
since 2.1) each stream 10,000 records to a 3-partition topic while the network and the
broker misbehave:

* a fault-injecting TCP proxy sits between the clients and the broker (the broker
  advertises the proxy's port) and, on demand, *loses the response* to produce requests
  the broker has already appended: it closes the connection instead of forwarding the
  answer. The client must send those batches again, and only the broker's duplicate
  detection keeps them from being written twice;
* halfway through the stream the broker process is stopped, by SIGTERM or by SIGKILL, and
  started again on the same data directory while requests are in flight.

Then everything is read back: every record exactly once, each partition in send order,
each at the offset its delivery report gave. The broker runs in its own process and data
directory (not the session's shared broker, which these restarts would disturb).
"""

from __future__ import annotations

import contextlib
import signal
import socket
import struct
import threading
import time

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaProducer

from tests.interop.conftest import BrokerProcess, free_port

pytestmark = pytest.mark.timeout(120)

RECORDS = 10_000
PARTITIONS = 3
LOSE_AT, RESTART_AT, LOST_RESPONSES = 2_000, 5_000, 3
PRODUCE = 0


class FaultyProxy:
    """Forwards Kafka connections to the broker; can lose the responses to produce requests."""

    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        self.lock = threading.Lock()
        self.to_lose = self.lost = 0
        threading.Thread(target=self._accept, daemon=True, name="proxy").start()

    def lose_produce_responses(self, count: int) -> None:
        with self.lock:
            self.to_lose += count

    def close(self) -> None:
        self.server.close()

    def _take_one(self) -> bool:
        with self.lock:
            if self.to_lose == 0:
                return False
            self.to_lose -= 1
            self.lost += 1
            return True

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.server.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        try:
            upstream = socket.create_connection(("127.0.0.1", self.upstream_port), timeout=5)
            upstream.settimeout(None)
        except OSError:  # the broker is down: the client sees a closed connection
            client.close()
            return
        api_keys: dict[int, int] = {}  # correlation id -> api key of requests in flight

        def close() -> None:
            for s in (client, upstream):
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)
                s.close()

        def requests() -> None:
            try:
                while True:
                    frame = read_frame(client)
                    api_key, _, correlation = struct.unpack_from(">hhi", frame, 4)
                    api_keys[correlation] = api_key
                    upstream.sendall(frame)
            except OSError:
                close()

        threading.Thread(target=requests, daemon=True).start()
        try:
            while True:
                frame = read_frame(upstream)
                correlation = struct.unpack_from(">i", frame, 4)[0]
                if api_keys.pop(correlation, None) == PRODUCE and self._take_one():
                    close()  # appended by the broker, never answered: the client must retry
                    return
                client.sendall(frame)
        except OSError:
            close()


def read_frame(sock: socket.socket) -> bytes:
    head = recv_exactly(sock, 4)
    return head + recv_exactly(sock, struct.unpack(">i", head)[0])


def recv_exactly(sock: socket.socket, n: int) -> bytes:
    chunks, got = [], 0
    while got < n:
        chunk = sock.recv(min(n - got, 1 << 20))
        if not chunk:
            raise ConnectionError("closed")
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


class ProxiedBroker(BrokerProcess):
    """The broker process, advertising the proxy's address instead of its own."""

    def __init__(self, data_dir: str, port: int, advertised_port: int) -> None:
        advertised = f"PLAINTEXT://127.0.0.1:{advertised_port}"
        super().__init__(data_dir, port, {"advertised.listeners": advertised})


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """(broker process, proxy); clients bootstrap from the proxy."""
    base = tmp_path_factory.mktemp("idempotence")
    port = free_port()
    proxy = FaultyProxy(port)
    broker = ProxiedBroker(str(base / "data"), port, proxy.port)
    broker.start()
    yield broker, proxy
    broker.stop()
    proxy.close()


def create_topic(bootstrap: str, name: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, PARTITIONS)])[name].result(20)


def value(i: int) -> bytes:
    return b"%06d" % i


def read_back(bootstrap: str, topic: str) -> list[tuple[int, int, bytes]]:
    """(partition, offset, value) of every record in the topic, read from the beginning."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "idem"})
    ends = {
        p: consumer.get_watermark_offsets(TopicPartition(topic, p), 10)[1]
        for p in range(PARTITIONS)
    }
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(PARTITIONS)])
    out: list[tuple[int, int, bytes]] = []
    deadline = time.monotonic() + 60
    while sum(ends.values()) > len(out) and time.monotonic() < deadline:
        for m in consumer.consume(10_000, 0.5):
            assert m.error() is None, m.error()
            out.append((m.partition(), m.offset(), m.value()))
    consumer.close()
    return out


def check(records: list[tuple[int, int, bytes]], acked: dict[bytes, tuple[int, int]]) -> None:
    """Each value exactly once, at its acknowledged place, each partition in send order."""
    got = [v for _, _, v in records]
    assert len(got) == len(set(got)), f"{len(got) - len(set(got))} duplicates"
    assert sorted(got) == [value(i) for i in range(RECORDS)]
    assert len(acked) == RECORDS
    for partition, offset, v in records:
        assert acked[v] == (partition, offset)
    for p in range(PARTITIONS):
        mine = [v for q, _, v in sorted(records) if q == p]
        assert mine == sorted(mine), f"partition {p} is out of send order"


def stream(send, pump, broker: ProxiedBroker, proxy: FaultyProxy, sig: int) -> None:
    """Send RECORDS values, losing responses and restarting the broker on the way."""
    restarter = None
    for i in range(RECORDS):
        send(i)
        if i == LOSE_AT:
            proxy.lose_produce_responses(LOST_RESPONSES)
        if i == RESTART_AT:
            restarter = threading.Thread(target=broker.restart, args=(sig,))
            restarter.start()
        if i % 100 == 99:
            pump()  # keep requests in flight all along, as a steady producer does
    assert restarter is not None
    restarter.join(60)


@pytest.mark.spec("IDEM-16", "IDEM-3", "IDEM-9")
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["kill-9", "sigterm"])
def test_confluent_kafka_idempotent_producer(cluster, sig):
    broker, proxy = cluster
    bootstrap = f"127.0.0.1:{proxy.port}"
    topic = f"idem-ck-{sig.name.lower()}"
    create_topic(bootstrap, topic)
    lost_before = proxy.lost
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "enable.idempotence": True,
            "linger.ms": 2,
            "reconnect.backoff.ms": 20,
            "reconnect.backoff.max.ms": 300,
            "retry.backoff.ms": 20,
        }
    )
    acked: dict[bytes, tuple[int, int]] = {}
    errors: list = []

    def report(err, msg) -> None:
        if err is not None:
            errors.append(err)
        else:
            acked[msg.value()] = (msg.partition(), msg.offset())

    def send(i: int) -> None:
        producer.produce(topic, key=b"k%d" % (i % 11), value=value(i), on_delivery=report)

    stream(send, lambda: producer.poll(0.005), broker, proxy, sig)
    assert producer.flush(60) == 0
    assert errors == []
    assert proxy.lost - lost_before == LOST_RESPONSES, "the proxy lost no response"
    check(read_back(bootstrap, topic), acked)


@pytest.mark.spec("IDEM-16", "IDEM-3", "IDEM-9")
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["kill-9", "sigterm"])
def test_kafka_python_default_producer(cluster, sig):
    broker, proxy = cluster
    bootstrap = f"127.0.0.1:{proxy.port}"
    topic = f"idem-kp-{sig.name.lower()}"
    create_topic(bootstrap, topic)
    lost_before = proxy.lost
    producer = KafkaProducer(
        bootstrap_servers=bootstrap, reconnect_backoff_max_ms=300, retry_backoff_ms=20
    )
    assert producer.config["enable_idempotence"]  # the default since kafka-python 2.1
    futures = []

    def send(i: int) -> None:
        futures.append(producer.send(topic, key=b"k%d" % (i % 11), value=value(i)))

    stream(send, lambda: time.sleep(0.002), broker, proxy, sig)
    producer.flush(60)
    acked = {}
    for i, future in enumerate(futures):
        meta = future.get(30)
        acked[value(i)] = (meta.partition, meta.offset)
    producer.close(5)
    assert proxy.lost - lost_before == LOST_RESPONSES, "the proxy lost no response"
    check(read_back(bootstrap, topic), acked)
