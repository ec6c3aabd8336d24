"""A ZooKeeper-mode broker with two listeners registers both and answers by listener (SEC-2)."""

from __future__ import annotations

import json

import pytest

from kafka_ref.conformance.cluster import wait_for
from kafka_ref.server.broker_process import BrokerThread
from kafka_ref.server.kafka_config import KafkaConfig
from tests.certs import PLAIN_JAAS
from tests.unit.security.conftest import SecureWire, port


@pytest.mark.spec("SEC-2")
def test_a_broker_registers_every_listener_and_answers_with_the_clients_own(cluster, tmp_path):
    chroot = "/kafka-ref-listeners-test"
    config = KafkaConfig.from_props(
        {
            "zookeeper.connect": cluster.zookeeper.connect + chroot,
            "broker.id": "8",
            "zookeeper.session.timeout.ms": "3000",
            "log.dirs": str(tmp_path / "data"),
            "listeners": "PLAINTEXT://127.0.0.1:0,EXTERNAL://127.0.0.1:0",
            "advertised.listeners": "EXTERNAL://localhost:0",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,EXTERNAL:SASL_PLAINTEXT",
            "sasl.enabled.mechanisms": "PLAIN",
            "sasl.jaas.config": PLAIN_JAAS,
        }
    )
    with BrokerThread(config) as broker:
        plain, external = port(broker, "PLAINTEXT"), port(broker, "EXTERNAL")
        path = f"{chroot}/brokers/ids/8"
        wait_for(lambda: cluster.zk.zk.exists(path), what="the registration")
        data = json.loads(cluster.zk.zk.get(path)[0])
        assert data["endpoints"] == [
            f"PLAINTEXT://127.0.0.1:{plain}",
            f"EXTERNAL://localhost:{external}",
        ]
        assert data["listener_security_protocol_map"] == {
            "PLAINTEXT": "PLAINTEXT",
            "EXTERNAL": "SASL_PLAINTEXT",
        }
        assert (data["host"], data["port"]) == ("127.0.0.1", plain)  # the inter-broker one
        with SecureWire(plain) as wire:
            wait_for(lambda: wire.metadata([], 5, False).brokers, what="its own picture")
            brokers = wire.metadata([], 5, False).brokers
            assert [(b.host, b.port) for b in brokers] == [("127.0.0.1", plain)]
        with SecureWire(external) as wire:
            assert wire.plain("alice", "alice-secret").error_code == 0
            brokers = wire.metadata([], 5, False).brokers
            assert [(b.host, b.port) for b in brokers] == [("localhost", external)]
