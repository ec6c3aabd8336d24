"""Metadata snapshots on three combined KRaft nodes, as processes (spec/raft.md RAFT-21..
RAFT-24): a node stopped while the others write the metadata log, snapshot it and cut it past
where the stopped node is, rejoins by FetchSnapshot and serves clients.

Snapshots every few kilobytes of metadata and a log cut at once behind each
(`metadata.max.retention.bytes=0`) make the two others' logs start past the stopped
node's end within a few topic creations.
"""

from __future__ import annotations

import os
import re
import time

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from kafka_ref.cluster.embedded import new_cluster_id
from kafka_ref.metadata.snapshot import list_snapshots, read_snapshot, snapshot_file_name
from kafka_ref.raft.kafka_raft_log import METADATA_TOPIC
from kafka_ref.tools.cluster import KRaftNodeProcess, _stop_together
from kafka_ref.tools.metadata_quorum import describe
from kafka_ref.tools.server_process import free_port

WAIT_S = 60.0
SNAPSHOTTING = {
    "broker.heartbeat.interval.ms": 500,
    "broker.session.timeout.ms": 3000,
    "metadata.log.max.record.bytes.between.snapshots": 2048,
    "metadata.max.retention.bytes": 0,
}


def metadata_dir(node: KRaftNodeProcess) -> str:
    return os.path.join(node.data_dir, "data", f"{METADATA_TOPIC}-0")


def log_start(node: KRaftNodeProcess) -> int:
    """The node's metadata log start offset: its earliest snapshot's end (RAFT-22)."""
    snapshots = list_snapshots(metadata_dir(node))
    return snapshots[0].offset if snapshots else 0


def log_end_of(node_id: int, nodes: list[KRaftNodeProcess]) -> int:
    """A voter's log end offset, as the quorum's leader last heard it (DescribeQuorum)."""
    address = ",".join(f"127.0.0.1:{n.controller_port}" for n in nodes if n.alive)
    _, (partition, _) = describe(address.split(",")[0])
    return next(v.log_end_offset for v in partition.current_voters if v.replica_id == node_id)


def create_topics(admin: AdminClient, names: list[str]) -> None:
    """Create `names`, again for those refused while the active controller changed."""
    deadline = time.monotonic() + WAIT_S
    while names:
        futures = admin.create_topics([NewTopic(n, 4, 2) for n in names])
        failed = []
        for name, future in futures.items():
            try:
                future.result(30)
            except KafkaException as err:
                code = err.args[0].code()
                if code not in (KafkaError.NOT_CONTROLLER, KafkaError.TOPIC_ALREADY_EXISTS):
                    raise
                if code == KafkaError.NOT_CONTROLLER:
                    failed.append(name)
        names = failed
        assert time.monotonic() < deadline, names
        if names:
            time.sleep(0.5)


def wait_for(what, condition, timeout: float = WAIT_S):
    deadline = time.monotonic() + timeout
    while not (found := condition()):
        assert time.monotonic() < deadline, what
        time.sleep(0.2)
    return found


@pytest.fixture
def nodes(tmp_path):
    cluster_id = new_cluster_id()
    voters = {i: free_port() for i in (1, 2, 3)}
    started = [
        KRaftNodeProcess(
            i, os.path.join(tmp_path, f"node-{i}"), cluster_id, voters, configs=SNAPSHOTTING
        )
        for i in voters
    ]
    try:
        for node in started:
            node.launch()
        for node in started:
            node.wait_listening(timeout=WAIT_S)
        yield started
    finally:
        _stop_together(started)


@pytest.mark.spec("RAFT-23", "RAFT-24")
def test_a_stopped_node_rejoins_by_fetch_snapshot_and_serves(nodes):
    one, two, three = nodes
    admin = AdminClient({"bootstrap.servers": one.bootstrap})
    create_topics(admin, ["before"])
    three.stop()
    end_when_stopped = log_end_of(3, nodes)
    admin = AdminClient({"bootstrap.servers": f"{one.bootstrap},{two.bootstrap}"})
    made = 0
    # topics whose records fill snapshots until the others' logs start past node 3's end
    while min(log_start(one), log_start(two)) <= end_when_stopped:
        assert made < 200, "the live nodes never cut their logs"
        create_topics(admin, [f"while-away-{made + i}" for i in range(10)])
        made += 10
    leader_snapshots = set(list_snapshots(metadata_dir(one))) | set(
        list_snapshots(metadata_dir(two))
    )
    three.launch()
    three.wait_listening(timeout=WAIT_S)
    # its log now starts at a snapshot it copied from the leader: one it never wrote itself
    copied = wait_for(
        "node 3 installs a snapshot",
        lambda: [s for s in list_snapshots(metadata_dir(three)) if s.offset > end_when_stopped],
    )
    assert set(copied) <= leader_snapshots | set(list_snapshots(metadata_dir(one)))
    with open(three.log_path) as log:  # copied by FetchSnapshot (RAFT-23) after the restart
        installed = re.findall(
            r"installed the snapshot OffsetAndEpoch\(epoch=\d+, offset=(\d+)", log.read()
        )
    assert any(int(offset) > end_when_stopped for offset in installed), installed
    snapshot = read_snapshot(os.path.join(metadata_dir(three), snapshot_file_name(copied[0])))
    names = {r.message.name for r in snapshot.records if r.name == "TopicRecord"}
    assert {"before", "while-away-0"} <= names
    # it serves clients, with the metadata it rebuilt from the snapshot
    only_three = AdminClient({"bootstrap.servers": three.bootstrap})
    topics = wait_for(
        "node 3 knows every topic",
        lambda: len(only_three.list_topics(timeout=10).topics) >= made + 1,
    )
    assert topics
    producer = Producer({"bootstrap.servers": three.bootstrap, "acks": "all"})
    for i in range(50):
        producer.produce("while-away-0", str(i).encode())
    assert producer.flush(30) == 0
    consumer = Consumer(
        {"bootstrap.servers": three.bootstrap, "group.id": "g", "auto.offset.reset": "earliest"}
    )
    consumer.subscribe(["while-away-0"])
    seen = set()
    deadline = time.monotonic() + WAIT_S
    while len(seen) < 50 and time.monotonic() < deadline:
        message = consumer.poll(1)
        if message is not None and not message.error():
            seen.add(message.value())
    consumer.close()
    assert len(seen) == 50
