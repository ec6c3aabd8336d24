"""queued.max.request.bytes: the memory pool for request bytes, and backpressure (BROKER-53, 53).

Over the wire: greedy connections announce large frames and send most of their bytes; with
a pool the broker stops reading once it is spent, so its resident memory stays near the pool
size, and a healthy producer is answered once the greedy connections let go.
"""

from __future__ import annotations

import socket
import struct

import pytest
from confluent_kafka import Producer

from kafka_ref.server.kafka_config import ConfigError, KafkaConfig
from kafka_ref.server.memory_pool import MemoryPool, UnboundedPool, memory_pool
from tests.unit.server.conftest import Wire, batch, wait_until
from tests.unit.server.test_metrics import scrape
from tests.unit.server.test_network import resident_bytes

pytestmark = pytest.mark.timeout(120)

MIB = 1024 * 1024
USED = "kafka_network_socketserver_memorypoolused"
AVAILABLE = "kafka_network_socketserver_memorypoolavailable"


class Waiter:
    def __init__(self, pool: MemoryPool, size: int, log: list[str], name: str) -> None:
        self.pool, self.size, self.log, self.name = pool, size, log, name

    def memory_available(self) -> None:
        if self.pool.try_allocate(self.size):
            self.log.append(self.name)
        else:
            self.pool.wait(self)


@pytest.mark.spec("BROKER-54")
def test_the_pool_is_non_strict_and_wakes_waiters_oldest_first():
    pool = MemoryPool(10)
    assert pool.try_allocate(8) and pool.available == 2
    assert pool.try_allocate(5)  # some memory is left: a larger frame still gets it
    assert pool.available == -3 and pool.out_of_memory
    assert not pool.try_allocate(1)
    woken: list[str] = []
    first, second = Waiter(pool, 4, woken, "first"), Waiter(pool, 4, woken, "second")
    pool.wait(first)
    pool.wait(second)
    pool.release(5)  # 2 left: the first takes it, the second waits on
    assert woken == ["first"] and pool.waiting == 1
    pool.release(8)
    assert woken == ["first", "second"] and pool.waiting == 0 and pool.used == 8
    assert isinstance(memory_pool(-1), UnboundedPool) and memory_pool(-1).try_allocate(10**12)


@pytest.mark.spec("BROKER-54")
def test_a_pool_smaller_than_the_largest_frame_is_a_config_error():
    with pytest.raises(ConfigError, match=r"queued.max.request.bytes .* socket.request.max.bytes"):
        KafkaConfig.from_props(
            {"queued.max.request.bytes": "1000", "socket.request.max.bytes": "2000"}
        )
    for fine in ("-1", "0", "2000"):
        KafkaConfig.from_props(
            {"queued.max.request.bytes": fine, "socket.request.max.bytes": "2000"}
        )


def offer(sock: socket.socket, data: memoryview) -> int:
    """Send what the socket takes without blocking; the bytes sent."""
    sock.setblocking(False)
    sent = 0
    try:
        while sent < len(data):
            sent += sock.send(data[sent:])
    except BlockingIOError:
        pass
    return sent


@pytest.mark.spec("BROKER-53")
def test_an_exhausted_pool_stops_reading_and_bounds_memory(make_broker):
    """30 connections announce 4 MiB frames and send all but 64 KiB: without a pool the broker
    reads about 120 MiB into their buffers; with an 8 MiB pool it reads at most two of them
    (plus one frame when the pool dips below zero) and the rest waits in the kernel."""
    broker = make_broker(
        props={
            "queued.max.request.bytes": 8 * MIB,
            "socket.request.max.bytes": 4 * MIB,
            "metrics.listener": "http://127.0.0.1:0",
        }
    )
    pool = broker.broker.socket_server.memory_pool
    Wire(broker.port).create_topic("healthy")
    before = resident_bytes()
    size = 4 * MIB - 1
    payload = memoryview(struct.pack(">i", size) + bytes(size - 64 * 1024))
    greedy = [socket.create_connection(("127.0.0.1", broker.port)) for _ in range(30)]
    for sock in greedy:
        offer(sock, payload)
    assert wait_until(lambda: pool.waiting >= 25, timeout=20), pool.waiting
    grown = lambda: resident_bytes() - before > 40 * MIB  # noqa: E731
    assert not wait_until(grown, timeout=3), (resident_bytes() - before) // MIB
    assert pool.used >= 8 * MIB
    gauges = scrape(broker.broker.metrics.port)
    assert gauges[(USED, ())] == pool.used and gauges[(AVAILABLE, ())] <= 0

    producer = Producer(
        {
            "bootstrap.servers": f"127.0.0.1:{broker.port}",
            "acks": "all",
            "socket.timeout.ms": 60000,
            "message.timeout.ms": 60000,
        }
    )
    producer.produce("healthy", value=b"waits for memory")
    assert producer.flush(2) == 1  # its requests wait for the pool, unread
    for sock in greedy:
        sock.close()
    assert producer.flush(30) == 0  # memory returned: read, appended, acknowledged
    assert wait_until(lambda: pool.used == 0 and pool.waiting == 0, timeout=10), pool.used
    assert scrape(broker.broker.metrics.port)[(AVAILABLE, ())] == 8 * MIB
    assert Wire(broker.port).read_all("healthy")[0].value == b"waits for memory"


@pytest.mark.spec("BROKER-54")
def test_a_frame_larger_than_what_is_left_is_read_while_any_memory_is_left(make_broker):
    """Non-strict: with 1 MiB in the pool and 200 KiB of it taken by a frame that never
    arrives, a 900 KB produce (more than is left) is still read and answered."""
    broker = make_broker(props={"queued.max.request.bytes": MIB, "socket.request.max.bytes": MIB})
    holder = Wire(broker.port)
    holder.send_raw(struct.pack(">i", 200 * 1024))  # announced, never sent
    wire = Wire(broker.port)
    wire.create_topic("big")
    assert wire.produce("big", 0, batch(3, value_size=300_000)).error_code == 0
    holder.close()
