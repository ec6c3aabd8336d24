"""Three brokers on a real ZooKeeper: registration, controller election and failover, topic
creation, leader election on broker loss (clean and unclean), fencing, NOT_LEADER_OR_FOLLOWER
and real clients following a leader change.

These tests check coordination: who leads, with which epoch and ISR, and that every broker
and client learns it. What happens to the data is tests/cluster/test_replication.py's.
"""

from __future__ import annotations

import json
import signal
from collections import Counter
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kazoo.exceptions import BadVersionError

from kafka_ref.cluster import zookeeper as zkdata
from kafka_ref.cluster.zookeeper import ControllerMovedError
from kafka_ref.conformance.wire import batch, fetch_body, produce_body
from kafka_ref.errors import ErrorCode
from kafka_ref.protocol.messages import ApiKey, MetadataRequest
from tests.cluster.conftest import wait_for

pytestmark = pytest.mark.timeout(120)


def create_topic(cluster, name, partitions=3, rf=3, configs=None, assignment=None) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap()})
    if assignment is not None:
        topic = NewTopic(
            name,
            num_partitions=len(assignment),
            replica_assignment=assignment,
            config=configs or {},
        )
    else:
        topic = NewTopic(name, partitions, rf, config=configs or {})
    admin.create_topics([topic], operation_timeout=10)[name].result(15)
    wait_for(
        lambda: all(cluster.state(name, p) for p in range(len(assignment or range(partitions)))),
        what=f"partition states of {name}",
    )


def leaders_in_metadata(cluster, broker_id, topic):
    """partition -> (leader, leader epoch, isr) in `broker_id`'s Metadata answer (v7+
    carries the leader epoch)."""
    (t,) = cluster.metadata(broker_id, [topic]).topics
    return {
        p.partition_index: (p.leader_id, p.leader_epoch, tuple(p.isr_nodes)) for p in t.partitions
    }


def expected_from_zk(cluster, topic, partitions):
    return {
        p: (s.leader, s.leader_epoch, s.isr)
        for p in range(partitions)
        if (s := cluster.state(topic, p))
    }


def wait_metadata_agrees(cluster, topic, partitions, brokers):
    """Every broker in `brokers` answers Metadata with the leaders and epochs in ZooKeeper."""
    for b in brokers:
        seen = {}

        def agrees(b=b, seen=seen):
            seen["metadata"] = leaders_in_metadata(cluster, b, topic)
            seen["zookeeper"] = expected_from_zk(cluster, topic, partitions)
            return seen["metadata"] == seen["zookeeper"]

        try:
            wait_for(agrees, what=f"broker {b}'s metadata of {topic} to match ZooKeeper")
        except AssertionError as err:
            raise AssertionError(f"{err}: {seen}") from None


# ---------------------------------------------------------------------- registration
@pytest.mark.spec("CTRL-1")
def test_brokers_register_ephemeral_znodes_in_kafkas_format(cluster):
    assert cluster.zk.get_broker_ids() == [1, 2, 3]
    for i, broker in cluster.brokers.items():
        raw, stat = cluster.zk.zk.get(zkdata.broker_path(i))
        data = json.loads(raw)
        assert stat.ephemeralOwner != 0  # dies with the broker's session
        assert data["version"] == 5
        assert (data["host"], data["port"]) == ("127.0.0.1", broker.port)
        assert data["endpoints"] == [f"PLAINTEXT://127.0.0.1:{broker.port}"]
    # Every broker lists all live brokers in Metadata.
    for i in (1, 2, 3):
        nodes = {(b.node_id, b.port) for b in cluster.metadata(i).brokers}
        assert nodes == {(j, b.port) for j, b in cluster.brokers.items()}


@pytest.mark.spec("CTRL-2")
def test_exactly_one_controller_and_the_epoch_was_incremented(cluster):
    controller, epoch = cluster.controller()
    assert controller in (1, 2, 3)
    assert epoch >= 1
    raw, stat = cluster.zk.zk.get(zkdata.CONTROLLER)
    assert json.loads(raw)["version"] == 1 and stat.ephemeralOwner != 0
    # Every broker names the same controller in Metadata.
    assert {cluster.metadata(i).controller_id for i in (1, 2, 3)} == {controller}
    # Exactly one broker logged that it became controller at this epoch.
    claims = [i for i, b in cluster.brokers.items() if f"controller, epoch {epoch}\n" in b.log()]
    assert claims == [controller]


@pytest.mark.spec("CTRL-3")
def test_controller_failover_after_kill_9(cluster, topic_name):
    create_topic(cluster, topic_name, partitions=3, rf=3)
    old, epoch = cluster.controller()
    led = [p for p in range(3) if cluster.state(topic_name, p).leader == old]
    cluster.stop(old, signal.SIGKILL)
    new, new_epoch = wait_for(
        lambda: (c := cluster.controller())[0] not in (None, old) and c, what="a new controller"
    )
    assert new != old and new_epoch > epoch
    # The new controller still elects: the dead broker's partitions get new leaders.
    for p in led:
        state = wait_for(
            lambda p=p: (s := cluster.state(topic_name, p)).leader not in (old, -1) and s,
            what=f"a new leader of partition {p}",
        )
        assert state.controller_epoch == new_epoch
        assert old not in state.isr
    survivors = [i for i in (1, 2, 3) if i != old]
    wait_metadata_agrees(cluster, topic_name, 3, survivors)
    assert {cluster.metadata(i).controller_id for i in survivors} == {new}


# ---------------------------------------------------------------------- topics
@pytest.mark.spec("CTRL-8", "CTRL-9")
def test_create_topic_places_replicas_on_distinct_brokers(cluster, topic_name):
    create_topic(cluster, topic_name, partitions=6, rf=3, configs={"retention.ms": "60000"})
    assignment, topic_id = cluster.zk.get_topic(topic_name)
    raw, _ = cluster.zk.zk.get(zkdata.topic_path(topic_name))
    assert json.loads(raw)["version"] == 2 and topic_id
    assert sorted(assignment) == list(range(6))
    for replicas in assignment.values():
        assert len(set(replicas)) == 3 and set(replicas) <= {1, 2, 3}
    # Round-robin preferred leaders: every broker is first replica of 2 of the 6 partitions.
    assert Counter(r[0] for r in assignment.values()) == {1: 2, 2: 2, 3: 2}
    assert cluster.zk.get_topic_config(topic_name) == {"retention.ms": "60000"}
    _controller, epoch = cluster.controller()
    for p, replicas in assignment.items():
        raw, _ = cluster.zk.zk.get(zkdata.partition_state_path(topic_name, p))
        assert json.loads(raw) == {
            "controller_epoch": epoch,
            "leader": replicas[0],
            "version": 1,
            "leader_epoch": 0,
            "isr": list(replicas),
        }
    wait_metadata_agrees(cluster, topic_name, 6, [1, 2, 3])


@pytest.mark.spec("CTRL-6", "CTRL-7", "CTRL-11")
def test_losing_a_leader_elects_from_the_isr_with_a_bumped_epoch(cluster, topic_name):
    create_topic(cluster, topic_name, partitions=6, rf=3)
    controller, _ = cluster.controller()
    victim = next(i for i in (1, 2, 3) if i != controller)
    before = {p: cluster.state(topic_name, p) for p in range(6)}
    cluster.stop(victim, signal.SIGKILL)
    for p, old in before.items():
        new = wait_for(
            lambda p=p: victim not in (s := cluster.state(topic_name, p)).isr and s,
            what=f"partition {p} to drop broker {victim}",
        )
        assert new.leader_epoch == old.leader_epoch + 1
        assert new.isr == tuple(r for r in old.isr if r != victim)
        if old.leader == victim:
            assert new.leader in old.isr and new.leader != victim
            assert new.leader == new.isr[0]  # the first live ISR member in assignment order
        else:
            assert new.leader == old.leader
    survivors = [i for i in (1, 2, 3) if i != victim]
    wait_metadata_agrees(cluster, topic_name, 6, survivors)
    (t,) = cluster.metadata(survivors[0], [topic_name]).topics
    assert all(victim in p.offline_replicas for p in t.partitions)


@pytest.mark.spec("CTRL-6")
def test_unclean_election_only_when_enabled(cluster, topic_name):
    controller, _ = cluster.controller()
    a, b = [i for i in (1, 2, 3) if i != controller]
    clean, unclean = f"{topic_name}-clean", f"{topic_name}-unclean"
    create_topic(cluster, clean, assignment=[[a, b]])
    create_topic(
        cluster, unclean, assignment=[[a, b]], configs={"unclean.leader.election.enable": "true"}
    )
    # b leaves: the ISR shrinks to {a}. Then a, the last ISR member, leaves too: both
    # partitions go offline and remember a (b cannot rejoin the ISR with no leader to copy).
    cluster.stop(b)
    for t in (clean, unclean):
        wait_for(lambda t=t: cluster.state(t, 0).isr == (a,), what=f"{t} isr [{a}]")
    cluster.stop(a)
    for t in (clean, unclean):
        wait_for(lambda t=t: cluster.state(t, 0).leader == -1, what=f"{t} offline")
    # b returns while a is away: only the partition that allows it elects b from outside
    # the ISR; the other stays offline, keeping its last ISR member.
    cluster.brokers[b].start()
    s = wait_for(lambda: (s := cluster.state(unclean, 0)).leader == b and s, what="unclean leader")
    assert s.isr == (b,) and s.leader_epoch == 3
    s = cluster.state(clean, 0)
    assert (s.leader, s.isr, s.leader_epoch) == (-1, (a,), 2)

    def reported_offline() -> bool:  # UNKNOWN_TOPIC_OR_PARTITION until b has loaded it
        parts = cluster.metadata(b, [clean]).topics[0].partitions
        return bool(parts) and parts[0].error_code == ErrorCode.LEADER_NOT_AVAILABLE

    wait_for(reported_offline, what=f"broker {b} to report {clean} offline")
    # When a returns, the clean partition comes back with it as leader.
    cluster.ensure_running()
    s = wait_for(lambda: (s := cluster.state(clean, 0)).leader == a and s, what="a leads again")
    assert a in s.isr and s.leader_epoch == 3  # b may already have caught up and rejoined


@pytest.mark.spec("BROKER-11")
def test_a_zookeeper_broker_answers_an_auto_created_topic_leader_not_available(cluster, topic_name):
    """A ZooKeeper-era broker wrote the new topic itself and said LEADER_NOT_AVAILABLE until
    the controller had elected its leaders (a KRaft broker says UNKNOWN_TOPIC_OR_PARTITION)."""
    broker = cluster.live()[0]
    body = MetadataRequest(
        topics=[MetadataRequest.MetadataRequestTopic(name=topic_name)],
        allow_auto_topic_creation=True,
    )
    first = cluster.request(broker, ApiKey.METADATA, body).topics[0]
    assert first.error_code == ErrorCode.LEADER_NOT_AVAILABLE, first
    wait_for(
        lambda: cluster.metadata(broker, [topic_name]).topics[0].error_code == 0,
        what=f"{topic_name} described",
    )


@pytest.mark.spec("CTRL-4")
def test_a_write_with_a_stale_controller_epoch_is_rejected(cluster, topic_name):
    create_topic(cluster, topic_name, partitions=1, rf=3)
    state, version = cluster.zk.get_partition_state(topic_name, 0, (1, 2, 3))
    _epoch, epoch_version = cluster.zk.get_controller_epoch()
    forged = state.__class__(
        topic_name,
        0,
        state.leader,
        state.leader_epoch + 5,
        state.replicas,
        (state.leader,),
        state.controller_epoch - 1,
    )
    # A deposed controller still holds the /controller_epoch version of its own term.
    with pytest.raises(ControllerMovedError):
        cluster.zk.update_partition_state(forged, version, epoch_version - 1)
    # A writer that read an older partition state loses the compare-and-set too.
    with pytest.raises(BadVersionError):
        cluster.zk.update_partition_state(forged, version + 1, epoch_version)
    assert cluster.zk.get_partition_state(topic_name, 0, (1, 2, 3)) == (state, version)


# ---------------------------------------------------------------------- clients
def _produce_raw(cluster, broker_id, topic, partition):
    body = produce_body(topic, partition, batch([b"raw"]), acks=1)
    response = cluster.request(broker_id, ApiKey.PRODUCE, body)
    return response.responses[0].partition_responses[0].error_code


@pytest.mark.spec("CTRL-10", "CTRL-11", "BROKER-78")
def test_non_leaders_refuse_and_clients_follow_the_new_leader(cluster, topic_name):
    create_topic(cluster, topic_name, partitions=3, rf=3)
    wait_metadata_agrees(cluster, topic_name, 3, [1, 2, 3])
    leader = cluster.state(topic_name, 0).leader
    follower = next(i for i in (1, 2, 3) if i != leader)
    assert _produce_raw(cluster, follower, topic_name, 0) == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert _produce_raw(cluster, leader, topic_name, 0) == ErrorCode.NO_ERROR
    # a consumer's fetch (our clients send v12) is served by a follower too (KIP-392)
    fetched = cluster.request(follower, ApiKey.FETCH, fetch_body([(topic_name, 0, 0)]))
    assert fetched.responses[0].partitions[0].error_code == ErrorCode.NO_ERROR
    fetched = cluster.request(leader, ApiKey.FETCH, fetch_body([(topic_name, 0, 0)]))
    assert fetched.responses[0].partitions[0].error_code == ErrorCode.NO_ERROR

    bootstrap = ",".join(b.bootstrap for b in cluster.brokers.values())
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": 1,
            "linger.ms": 0,
            "retries": 20,
            "retry.backoff.ms": 200,
            "topic.metadata.refresh.interval.ms": 1000,
        }
    )
    failures = []

    def send(n: int) -> None:
        for i in range(n):
            producer.produce(
                topic_name,
                b"%d" % i,
                partition=i % 3,
                on_delivery=lambda err, _msg: err and failures.append(err),
            )
        assert producer.flush(30) == 0

    send(30)
    controller, _ = cluster.controller()
    victim = next(
        cluster.state(topic_name, p).leader
        for p in range(3)
        if cluster.state(topic_name, p).leader != controller
    )
    cluster.stop(victim)  # a clean stop: the session closes and the controller reacts at once
    survivors = [i for i in (1, 2, 3) if i != victim]
    wait_metadata_agrees(cluster, topic_name, 3, survivors)
    send(30)
    assert failures == []

    from kafka import KafkaProducer  # kafka-python: metadata refresh on NOT_LEADER too

    kp = KafkaProducer(
        bootstrap_servers=[cluster.brokers[i].bootstrap for i in survivors], acks=1, retries=5
    )
    try:
        for p in range(3):
            meta = kp.send(topic_name, b"kafka-python", partition=p).get(timeout=20)
            assert meta.partition == p
    finally:
        kp.close()


@pytest.mark.spec("CTRL-9")
def test_a_broker_in_a_chroot(cluster, tmp_path):
    from kafka_ref.tools.cluster import BrokerProcess

    chroot = "/kafka-ref-chroot-test"
    broker = BrokerProcess(
        7,
        str(tmp_path / "broker-7"),
        cluster.zookeeper.connect + chroot,
        configs={"zookeeper.session.timeout.ms": 3000},
    )
    broker.start()
    try:
        wait_for(
            lambda: cluster.zk.zk.exists(f"{chroot}/brokers/ids/7"), what="chroot registration"
        )
        wait_for(lambda: cluster.zk.zk.exists(f"{chroot}/controller"), what="its own controller")
        assert cluster.zk.get_broker_ids() == [1, 2, 3]  # the root cluster does not see it
    finally:
        broker.stop()


@pytest.mark.spec("CTRL-8", "CTRL-9")
def test_partitions_grow_and_topics_are_deleted_through_zookeeper(cluster, topic_name):
    from confluent_kafka.admin import NewPartitions

    create_topic(cluster, topic_name, partitions=1, rf=2)
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap()})
    admin.create_partitions([NewPartitions(topic_name, 3)])[topic_name].result(15)
    for p in (1, 2):
        state = wait_for(lambda p=p: cluster.state(topic_name, p), what=f"partition {p}")
        assert len(set(state.replicas)) == 2 and state.leader == state.replicas[0]
    for i in (1, 2, 3):
        wait_for(
            lambda i=i: len(leaders_in_metadata(cluster, i, topic_name)) == 3,
            what=f"broker {i} to see 3 partitions",
        )
    hosts = {
        i: b for i, b in cluster.brokers.items() if (Path(b.data_dir) / f"{topic_name}-0").exists()
    }
    assert len(hosts) == 2  # the log exists on both replicas, leader and follower

    admin.delete_topics([topic_name], operation_timeout=10)[topic_name].result(15)
    wait_for(lambda: cluster.zk.get_topic(topic_name) is None, what="the topic znode to go")
    assert topic_name not in cluster.zk.get_topic_deletions()
    for i, broker in cluster.brokers.items():
        wait_for(
            lambda b=broker: not (Path(b.data_dir) / f"{topic_name}-0").exists(),
            what=f"broker {i} to delete the log",
        )
        (t,) = cluster.metadata(i, [topic_name]).topics
        assert t.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_producer_id_blocks_are_claimed_from_zookeeper_without_overlap(cluster):
    first = cluster.zk.allocate_producer_id_block(9, 1000)
    second = cluster.zk.allocate_producer_id_block(9, 1000)
    assert second == first + 1000
    raw, _ = cluster.zk.zk.get(zkdata.PRODUCER_ID_BLOCK)
    assert json.loads(raw) == {
        "version": 1,
        "broker": 9,
        "block_start": str(second),
        "block_end": str(second + 999),
    }
    # An idempotent producer gets its producer id from such a block, on any broker.
    producer = Producer({"bootstrap.servers": cluster.bootstrap(), "enable.idempotence": True})
    errors = []
    producer.produce("pid-probe", b"x", on_delivery=lambda err, _m: err and errors.append(err))
    assert producer.flush(30) == 0 and errors == []
