"""Connection quotas and idle connections (BROKER-56..BROKER-59), with raw sockets and a real
client: a connection over a limit is closed at once and counted, the others are served."""

from __future__ import annotations

import socket
import struct
import time

import pytest
from confluent_kafka import Producer

from kafka_ref.server.kafka_config import ConfigError, KafkaConfig
from tests.unit.server.conftest import Wire, wait_until
from tests.unit.server.test_metrics import scrape

pytestmark = pytest.mark.timeout(120)
REFUSED = "kafka_server_socket_server_metrics_connection_refused_total"


def served(port: int) -> bool:
    """A new connection is answered (True) or closed at once (False)."""
    wire = Wire(port, timeout=5)
    try:
        return bool(wire.api_versions(0).api_keys)
    except (ConnectionError, EOFError, OSError):
        return False
    finally:
        wire.close()


def hold(port: int) -> Wire:
    """A connection the broker has taken (answered once), kept open."""
    wire = Wire(port)
    assert wire.api_versions(0).api_keys
    return wire


def refused(broker, listener: str, limit: str) -> float:
    labels = (("limit", limit), ("listener", listener))
    return scrape(broker.broker.metrics.port).get((REFUSED, labels), 0)


@pytest.mark.spec("BROKER-56")
def test_max_connections_closes_the_connection_over_the_limit(make_broker):
    broker = make_broker(props={"max.connections": 3, "metrics.listener": "http://127.0.0.1:0"})
    held = [hold(broker.port) for _ in range(3)]
    assert not served(broker.port)
    assert refused(broker, "PLAINTEXT", "max.connections") == 1
    assert all(wire.api_versions(0).api_keys for wire in held)  # the others are undisturbed
    held.pop().close()
    assert wait_until(lambda: served(broker.port), timeout=10)  # a slot is free again
    # A real client rides it out: refused while the broker is full, it retries and gets in.
    held.append(hold(broker.port))
    producer = Producer(
        {"bootstrap.servers": f"127.0.0.1:{broker.port}", "reconnect.backoff.max.ms": 200}
    )
    producer.produce("patient", b"in at last")
    assert producer.flush(2) == 1
    held.pop().close()
    assert producer.flush(30) == 0
    for wire in held:
        wire.close()


@pytest.mark.spec("BROKER-56")
def test_a_listener_limit_and_the_protected_inter_broker_listener(make_broker):
    broker = make_broker(
        props={
            "listeners": "PLAINTEXT://127.0.0.1:0,INTERNAL://127.0.0.1:0",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT",
            "inter.broker.listener.name": "INTERNAL",
            "listener.name.internal.max.connections": 3,
            "max.connections": 2,
        }
    )
    ports = broker.broker.socket_server.ports
    clients = [hold(ports["PLAINTEXT"]) for _ in range(2)]
    assert not served(ports["PLAINTEXT"])  # the broker-wide limit
    internal = [hold(ports["INTERNAL"]) for _ in range(3)]  # past it: replication gets in
    assert not served(ports["INTERNAL"])  # but not past its listener's own limit
    for wire in clients + internal:
        wire.close()


@pytest.mark.spec("BROKER-57")
def test_max_connections_per_ip_and_its_overrides(make_broker):
    broker = make_broker(
        props={"max.connections.per.ip": 2, "metrics.listener": "http://127.0.0.1:0"}
    )
    held = [hold(broker.port) for _ in range(2)]
    assert not served(broker.port)
    assert refused(broker, "PLAINTEXT", "max.connections.per.ip") == 1
    generous = make_broker(
        props={"max.connections.per.ip": 0, "max.connections.per.ip.overrides": "localhost:4"}
    )
    held += [hold(generous.port) for _ in range(4)]
    assert not served(generous.port)
    for wire in held:
        wire.close()
    with pytest.raises(ConfigError, match=r"max\.connections\.per\.ip can be set to zero only if"):
        KafkaConfig.from_props({"max.connections.per.ip": "0"})
    with pytest.raises(ConfigError, match="unknown broker config"):  # not per listener
        KafkaConfig.from_props({"listener.name.plaintext.connections.max.idle.ms": "1"})
    with pytest.raises(ConfigError, match="not host:count"):
        KafkaConfig.from_props({"max.connections.per.ip.overrides": "127.0.0.1"})


@pytest.mark.spec("BROKER-58")
def test_max_connection_creation_rate_broker_wide_and_per_listener(make_broker):
    broker = make_broker(
        props={"max.connection.creation.rate": 3, "metrics.listener": "http://127.0.0.1:0"}
    )
    started = time.monotonic()
    outcomes = [served(broker.port) for _ in range(12)]
    if time.monotonic() - started < 1.0:  # all within one window: exactly three get in
        assert outcomes.count(True) == 3
    assert outcomes[:3] == [True] * 3 and outcomes.count(False) >= 1
    assert refused(broker, "PLAINTEXT", "max.connection.creation.rate") == outcomes.count(False)
    assert wait_until(lambda: served(broker.port), timeout=10)  # the window moves on
    per_listener = make_broker(props={"listener.name.plaintext.max.connection.creation.rate": 2})
    outcomes = [served(per_listener.port) for _ in range(8)]
    assert outcomes[:2] == [True, True] and outcomes.count(False) >= 1


@pytest.mark.spec("BROKER-59")
def test_an_idle_connection_is_closed_and_a_busy_one_is_not(make_broker):
    broker = make_broker(
        props={
            "connections.max.idle.ms": 600,
            "queued.max.request.bytes": 1 << 20,
            "socket.request.max.bytes": 1 << 20,
        }
    )
    pool = broker.broker.socket_server.memory_pool
    idle, busy = hold(broker.port), hold(broker.port)
    stalled = socket.create_connection(("127.0.0.1", broker.port), timeout=10)
    stalled.sendall(struct.pack(">i", 500_000) + b"\0" * 10)  # a frame begun, never finished
    assert wait_until(lambda: pool.used >= 500_000, timeout=10)
    deadline = time.monotonic() + 2.0
    while time.monotonic() < deadline:  # a request every 100 ms: never idle for 600 ms
        assert busy.api_versions(0).api_keys
        time.sleep(0.1)
    assert idle.is_closed(timeout=10)
    assert stalled.recv(1) == b""  # closed, and the pool has its memory back
    assert wait_until(lambda: pool.used == 0, timeout=10), pool.used
    assert busy.api_versions(0).api_keys
    never_spoke = socket.create_connection(("127.0.0.1", broker.port), timeout=10)
    assert never_spoke.recv(1) == b""  # closed for idling, too
    busy.close()
