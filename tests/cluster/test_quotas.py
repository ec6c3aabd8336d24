"""Client quotas in ZooKeeper mode (QUOTA-4): Kafka's znodes, a change notification under
`/config/changes`, the SCRAM keys that share `/config/users/<user>` kept, and a quota set
through one broker in force on another; followers' fetches are exempt (QUOTA-7)."""

from __future__ import annotations

import json

import pytest
from confluent_kafka import Producer

from kafka_ref.client.admin import Admin, NewTopic
from kafka_ref.conformance.cluster import wait_for
from kafka_ref.quota.entity import QuotaEntity
from kafka_ref.server.broker_process import BrokerThread
from kafka_ref.server.kafka_config import KafkaConfig

CHROOT = "/kafka-ref-quotas-test"
SCRAM = "salt=c2FsdA==,stored_key=a2V5,server_key=a2V5,iterations=4096"


def start(cluster, tmp_path, broker_id: int, chroot: str = CHROOT) -> BrokerThread:
    props = {
        "listeners": "PLAINTEXT://127.0.0.1:0",
        "log.dirs": str(tmp_path / f"d{broker_id}"),
        "zookeeper.connect": cluster.zookeeper.connect + chroot,
        "broker.id": broker_id,
        "zookeeper.session.timeout.ms": 3000,
    }
    return BrokerThread(KafkaConfig.from_props(props))  # started by `with`


@pytest.mark.spec("QUOTA-4")
def test_a_quota_set_on_one_broker_applies_on_another(cluster, tmp_path):
    zk = cluster.zk.zk
    zk.ensure_path(f"{CHROOT}/config/users")  # a SCRAM user, as kafka-configs.sh writes it
    zk.create(
        f"{CHROOT}/config/users/alice",
        json.dumps({"version": 1, "config": {"SCRAM-SHA-256": SCRAM}}).encode(),
    )
    with start(cluster, tmp_path, 21) as one, start(cluster, tmp_path, 22) as two:
        with Admin(one.bootstrap) as admin:
            admin.alter_client_quotas(QuotaEntity("alice", None), {"producer_byte_rate": 2048})
            admin.alter_client_quotas(QuotaEntity(None, "a b"), {"consumer_byte_rate": 4096})
        stored = json.loads(zk.get(f"{CHROOT}/config/users/alice")[0])
        assert stored == {
            "version": 1,
            "config": {"SCRAM-SHA-256": SCRAM, "producer_byte_rate": "2048"},
        }
        assert json.loads(zk.get(f"{CHROOT}/config/clients/a%20b")[0])["config"] == {
            "consumer_byte_rate": "4096"
        }
        notices = sorted(zk.get_children(f"{CHROOT}/config/changes"))
        last = json.loads(zk.get(f"{CHROOT}/config/changes/{notices[-1]}")[0])
        assert last == {"version": 2, "entity_path": "clients/a%20b"}

        def quota_on_two() -> float | None:
            return two.call(lambda: two.broker.apis.quotas.produce.quota("alice", "any"))

        wait_for(lambda: quota_on_two() == 2048, what="the quota on the other broker")
        with Admin(two.bootstrap) as admin:  # removed through the other broker
            admin.alter_client_quotas(QuotaEntity("alice", None), remove=["producer_byte_rate"])
        wait_for(
            lambda: one.call(lambda: one.broker.apis.quotas.produce.quota("alice", "x")) is None,
            what="the removal on the first broker",
        )
        stored = json.loads(zk.get(f"{CHROOT}/config/users/alice")[0])
        assert stored["config"] == {"SCRAM-SHA-256": SCRAM}  # the credential stays


@pytest.mark.spec("QUOTA-7")
def test_followers_fetches_are_not_throttled(cluster, tmp_path):
    chroot = CHROOT + "-followers"
    with start(cluster, tmp_path, 31, chroot) as one, start(cluster, tmp_path, 32, chroot):
        with Admin(one.bootstrap) as admin:
            admin.create_topics([NewTopic("replicated", 1, 2)])
            for follower, leader in ((31, 32), (32, 31)):  # the fetchers' client ids
                admin.alter_client_quotas(
                    QuotaEntity(None, f"broker-{follower}-fetcher-{leader}"),
                    {"consumer_byte_rate": 1, "request_percentage": 0.001},
                )
        failed: list = []
        producer = Producer(
            {"bootstrap.servers": one.bootstrap, "acks": "all", "message.timeout.ms": 20_000}
        )
        for _ in range(20):  # 200 kB: acks=all needs the follower to fetch every byte
            producer.produce(
                "replicated", b"r" * 10_000, on_delivery=lambda err, _m: err and failed.append(err)
            )
        assert producer.flush(40) == 0 and not failed
