"""KRaft nodes as processes: three combined nodes and a broker-only node, the way Kafka's
quickstart runs them, with a real client.

The broker-only node (`process.roles=broker`) is an observer of the metadata quorum: it
fetches the metadata log, registers with the active controller, is unfenced, and leads
partitions like the others; DescribeQuorum lists it among the observers.
"""

from __future__ import annotations

import os
import time

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from kafka_ref.cluster.embedded import new_cluster_id
from kafka_ref.tools.cluster import KRaftNodeProcess, _stop_together
from kafka_ref.tools.metadata_quorum import describe
from kafka_ref.tools.server_process import free_port

WAIT_S = 60.0


@pytest.fixture
def nodes(tmp_path):
    cluster_id = new_cluster_id()
    voters = {i: free_port() for i in (1, 2, 3)}
    fast = {"broker.heartbeat.interval.ms": 500, "broker.session.timeout.ms": 3000}
    started = [
        KRaftNodeProcess(i, os.path.join(tmp_path, f"node-{i}"), cluster_id, voters, configs=fast)
        for i in voters
    ]
    started.append(
        KRaftNodeProcess(
            4, os.path.join(tmp_path, "node-4"), cluster_id, voters, roles="broker", configs=fast
        )
    )
    try:
        for node in started:
            node.launch()
        for node in started:
            node.wait_listening(timeout=WAIT_S)
        yield started
    finally:
        _stop_together(started)


@pytest.mark.spec("KBROKER-17")
def test_a_broker_only_node_observes_the_quorum_and_serves_like_the_others(nodes):
    bootstrap = ",".join(n.bootstrap for n in nodes)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic("spread", 8, 2)])["spread"].result(30)
    deadline = time.monotonic() + WAIT_S
    while True:
        topic = admin.list_topics(timeout=10).topics.get("spread")
        leaders = {p.leader for p in topic.partitions.values()} if topic else set()
        if topic and len(topic.partitions) == 8 and -1 not in leaders:
            break
        assert time.monotonic() < deadline, topic
        time.sleep(0.2)
    assert 4 in admin.list_topics(timeout=10).brokers  # registered and unfenced
    assert 4 in leaders  # placed on it and elected there like any broker
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for i in range(400):
        producer.produce("spread", str(i).encode(), key=str(i).encode())
    assert producer.flush(30) == 0
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "g", "auto.offset.reset": "earliest"}
    )
    consumer.subscribe(["spread"])
    seen = set()
    while len(seen) < 400 and time.monotonic() < deadline + WAIT_S:
        message = consumer.poll(1)
        if message is not None and not message.error():
            seen.add(message.value())
    consumer.close()
    assert len(seen) == 400
    _, (partition, _) = describe(f"127.0.0.1:{nodes[0].controller_port}")
    assert [o.replica_id for o in partition.observers] == [4]
    assert sorted(v.replica_id for v in partition.current_voters) == [1, 2, 3]
