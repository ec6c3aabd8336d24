"""Apache Kafka's Java share consumer (KIP-932) against kafka-ref.

Three KafkaShareConsumers of one share group read a topic of three partitions together,
acknowledging explicitly; on its first delivery every tenth record is released. Every record
must be accepted exactly once, each released record must come back once with delivery count
2, and nothing else may be delivered twice. The admin client then sees the group Stable with
its three members (ShareGroupDescribe).
"""

from __future__ import annotations

import uuid
from collections import Counter

import confluent_kafka
import pytest

from tests.java_clients.test_producer import create_topic, topic_name

pytestmark = pytest.mark.timeout(240)


@pytest.mark.spec("SHARE-90", "SHARE-44")
def test_java_share_consumers_accept_every_record_once(java, broker):
    topic, group, partitions, records = topic_name("share"), f"s-{uuid.uuid4().hex[:6]}", 3, 300
    create_topic(java, broker, topic, partitions)
    producer = confluent_kafka.Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5})
    for i in range(records):
        producer.produce(topic, value=b"%d" % i, partition=i % partitions)
    assert producer.flush(30) == 0
    seen = java.call(
        "share_group",
        bootstrap=broker.bootstrap,
        topic=topic,
        group=group,
        members=3,
        records=records,
        release_every=10,
        wait_seconds=90,
    )
    assert seen["done"], seen
    assert seen["description"] == {"state": "Stable", "members": 3}
    deliveries = [d.split(":") for ds in seen["deliveries"].values() for d in ds]
    accepted = Counter((p, o) for p, o, _, verdict in deliveries if verdict == "accept")
    per_partition = records // partitions
    assert sorted(accepted) == sorted(
        (str(p), str(o)) for p in range(partitions) for o in range(per_partition)
    )
    assert set(accepted.values()) == {1}, "a record accepted twice"
    released = {(p, o) for p, o, count, verdict in deliveries if verdict == "release"}
    assert released == {
        (str(p), str(o)) for p in range(partitions) for o in range(0, per_partition, 10)
    }
    counts = Counter((p, o, count) for p, o, count, _ in deliveries)
    assert all(n == 1 for n in counts.values()), "a delivery count seen twice"
    assert {(p, o) for p, o, count, _ in deliveries if count == "2"} == released
