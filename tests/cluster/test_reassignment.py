"""Partition reassignment (KIP-455) and leader elections (KIP-460) on a real cluster,
driven by kafka-python's and confluent-kafka's admin clients."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest
from kafka import TopicPartition as KTP
from kafka.admin import KafkaAdminClient

from kafka_ref.cluster import zk_data as zkdata
from kafka_ref.cluster.zookeeper import KafkaZkClient
from kafka_ref.errors import ErrorCode
from kafka_ref.protocol.messages import (
    AlterPartitionReassignmentsRequest,
    ApiKey,
    ListPartitionReassignmentsRequest,
)
from tests.cluster.conftest import SESSION_TIMEOUT_MS, wait_for
from tests.cluster.test_controller import create_topic, wait_metadata_agrees
from tests.cluster.test_replication import STRICT, consume_all, produce_stream

pytestmark = pytest.mark.timeout(240)


def admin(cluster) -> KafkaAdminClient:
    return KafkaAdminClient(bootstrap_servers=cluster.bootstrap(), request_timeout_ms=30000)


def moves(cluster, topic):
    """The topic's znode: its assignment and the (adding, removing) replicas per partition."""
    data, _ = cluster.zk.zk.get(zkdata.topic_path(topic))
    return zkdata.decode_assignment(data)[0], zkdata.decode_moves(data)


def wait_moved(cluster, topic, partition, target, timeout=90):
    wait_for(
        lambda: (
            moves(cluster, topic)[0][partition] == tuple(target)
            and not moves(cluster, topic)[1]
            and sorted(cluster.state(topic, partition).isr) == sorted(target)
        ),
        timeout=timeout,
        what=f"{topic}-{partition} to move to {target}",
    )


@pytest.mark.spec("CTRL-24", "CTRL-25", "REPL-4")
def test_a_partition_moves_under_acks_all_load_and_loses_no_acknowledged_write(cluster, topic_name):
    """[1, 2] -> [2, 3] while a producer writes with acks=all; broker 1 leads at first, so
    leadership moves to 2; every acknowledged write is read back afterwards, and broker 1's
    copy is deleted."""
    create_topic(cluster, topic_name, assignment=[[1, 2]], configs=STRICT)
    stop, out = threading.Event(), {}
    thread = threading.Thread(
        target=lambda: out.update(r=produce_stream(cluster, topic_name, 1, stop))
    )
    thread.start()
    try:
        time.sleep(2)
        with admin(cluster) as client:
            result = client.alter_partition_reassignments({KTP(topic_name, 0): [2, 3]})
        assert result == {KTP(topic_name, 0): None}
        wait_moved(cluster, topic_name, 0, [2, 3])
        time.sleep(2)  # the producer goes on against the new leader
    finally:
        stop.set()
        thread.join(120)
    acked, failed = out["r"]
    state = cluster.state(topic_name, 0)
    assert state.leader == 2 and state.replicas == (2, 3)
    wait_metadata_agrees(cluster, topic_name, 1, [1, 2, 3])
    seen = consume_all(cluster, topic_name, 1)
    assert acked[0], "nothing was acknowledged"
    lost = set(acked[0]) - set(seen[0])
    assert not lost, f"acknowledged writes lost: {sorted(lost)[:10]} (failed: {failed[:3]})"
    log_dir = Path(cluster.brokers[1].data_dir)
    wait_for(
        lambda: not any(p.name.startswith(f"{topic_name}-0") for p in log_dir.iterdir()),
        what="broker 1 to delete its removed replica",
    )


# A move that cannot finish needs a target replica that cannot catch up: a broker frozen
# with SIGSTOP. Clients would wait on it, so these tests talk to the controller directly,
# and never freeze the controller's broker.
def roles(cluster) -> tuple[int, int, int]:
    """(controller, another broker, the third): the third is the one to freeze."""
    controller, _ = cluster.controller()
    first, third = [b for b in (1, 2, 3) if b != controller]
    return controller, first, third


def to_controller(cluster, api_key, body):
    return cluster.request(cluster.controller()[0], api_key, body)


def reassign(cluster, targets) -> dict:
    R = AlterPartitionReassignmentsRequest
    body = R(
        topics=[
            R.ReassignableTopic(
                name=t, partitions=[R.ReassignablePartition(partition_index=p, replicas=target)]
            )
            for (t, p), target in targets.items()
        ]
    )
    response = to_controller(cluster, ApiKey.ALTER_PARTITION_REASSIGNMENTS, body)
    assert response.error_code == 0, response
    return {
        (t.name, p.partition_index): p.error_code for t in response.responses for p in t.partitions
    }


def listing(cluster) -> dict:
    body = ListPartitionReassignmentsRequest(topics=None)
    response = to_controller(cluster, ApiKey.LIST_PARTITION_REASSIGNMENTS, body)
    assert response.error_code == 0, response
    return {
        (t.name, p.partition_index): (p.replicas, p.adding_replicas, p.removing_replicas)
        for t in response.topics
        for p in t.partitions
    }


@contextlib.contextmanager
def frozen(cluster, broker_id):
    """Broker `broker_id` stopped with SIGSTOP; thawed after, and registered again (its
    ZooKeeper session may have expired meanwhile, CTRL-13)."""
    os.kill(cluster.brokers[broker_id].pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(cluster.brokers[broker_id].pid, signal.SIGCONT)
        cluster.wait_registered()


@pytest.mark.spec("CTRL-24")
def test_list_shows_a_pending_move_with_adding_and_removing_replicas(cluster, topic_name):
    """A move to a frozen broker cannot finish: it stays pending, RS = TRS + ORS, listed
    with its adding and removing replicas, in ZooKeeper as in Kafka's znode; it finishes
    once the broker is back, with a leader from the targets."""
    controller, first, third = roles(cluster)
    create_topic(cluster, topic_name, assignment=[[controller, first]])
    tp = (topic_name, 0)
    assert reassign(cluster, {tp: [first, 9]}) == {tp: ErrorCode.INVALID_REPLICATION_ASSIGNMENT}
    with frozen(cluster, third):
        assert reassign(cluster, {tp: [first, third]}) == {tp: 0}
        rs = [first, third, controller]
        assert listing(cluster)[tp] == (rs, [third], [controller])
        assert moves(cluster, topic_name) == ({0: tuple(rs)}, {0: ((third,), (controller,))})
        assert cluster.state(topic_name, 0).replicas == tuple(rs)
    wait_moved(cluster, topic_name, 0, [first, third])
    assert cluster.state(topic_name, 0).leader == first
    assert tp not in listing(cluster)


@pytest.mark.spec("CTRL-26")
def test_cancel_reverts_to_the_original_replicas(cluster, topic_name):
    controller, first, third = roles(cluster)
    create_topic(cluster, topic_name, assignment=[[controller, first]])
    tp = (topic_name, 0)
    with frozen(cluster, third):
        assert reassign(cluster, {tp: [first, third]}) == {tp: 0}
        assert reassign(cluster, {tp: None}) == {tp: 0}
        assert moves(cluster, topic_name) == ({0: (controller, first)}, {})
        state = cluster.state(topic_name, 0)
        assert (state.replicas, state.leader) == ((controller, first), controller)
        assert tp not in listing(cluster)
        assert reassign(cluster, {tp: None}) == {tp: ErrorCode.NO_REASSIGNMENT_IN_PROGRESS}


@pytest.mark.spec("CTRL-24", "CTRL-25", "CTRL-3")
def test_a_pending_reassignment_survives_a_controller_kill(cluster, topic_name):
    """The move is in ZooKeeper: a new controller reads it and finishes it."""
    controller, first, third = roles(cluster)
    _, epoch = cluster.controller()
    create_topic(cluster, topic_name, assignment=[[controller, first]])
    tp = (topic_name, 0)
    with frozen(cluster, third):
        assert reassign(cluster, {tp: [first, third]}) == {tp: 0}
        cluster.stop(controller, signal.SIGKILL)
    wait_for(
        lambda: (c := cluster.controller())[0] in (first, third) and c[1] > epoch,
        timeout=6 * SESSION_TIMEOUT_MS / 1000,
        what="a new controller",
    )
    wait_moved(cluster, topic_name, 0, [first, third])
    assert cluster.state(topic_name, 0).leader in (first, third)


@pytest.mark.spec("CTRL-27")
def test_preferred_election_returns_leadership_after_a_bounce(cluster, topic_name):
    """Broker 1 leads [1, 2, 3]; it bounces, 2 leads; ElectLeaders PREFERRED (confluent-
    kafka's admin client) gives it back to 1, and a second call has nothing to do."""
    from confluent_kafka import ElectionType, TopicPartition
    from confluent_kafka.admin import AdminClient

    create_topic(cluster, topic_name, assignment=[[1, 2, 3]])
    cluster.stop(1)
    wait_for(lambda: cluster.state(topic_name, 0).leader == 2, what="2 to lead")
    cluster.ensure_running()
    wait_for(lambda: 1 in cluster.state(topic_name, 0).isr, timeout=45, what="1 back in ISR")
    assert cluster.state(topic_name, 0).leader == 2
    client = AdminClient({"bootstrap.servers": cluster.bootstrap()})
    tp = TopicPartition(topic_name, 0)
    results = client.elect_leaders(ElectionType.PREFERRED, [tp]).result(30)
    assert results[tp] is None
    state = cluster.state(topic_name, 0)
    assert state.leader == 1
    wait_metadata_agrees(cluster, topic_name, 1, [1, 2, 3])
    again = client.elect_leaders(ElectionType.PREFERRED, [tp]).result(30)
    assert again[tp].code() == 84  # ELECTION_NOT_NEEDED


@pytest.mark.spec("CTRL-28")
def test_the_automatic_rebalance_returns_leadership_by_itself(cluster, tmp_path):
    """Two brokers in a chroot of the session's ZooKeeper, checking the imbalance every
    second: after broker 11 bounces, 12 leads its partition, and the controller gives it
    back to 11, its preferred replica, with no request."""
    from kafka_ref.tools.cluster import BrokerProcess

    chroot = "/kafka-ref-rebalance-test"
    configs = {"zookeeper.session.timeout.ms": 3000, "leader.imbalance.check.interval.seconds": 1}
    brokers = {
        b: BrokerProcess(
            b, str(tmp_path / f"broker-{b}"), cluster.zookeeper.connect + chroot, configs=configs
        )
        for b in (11, 12)
    }
    zk = KafkaZkClient(cluster.zookeeper.connect + chroot)
    try:
        for broker in brokers.values():
            broker.start()
        zk.start(timeout=60)
        wait_for(lambda: zk.get_broker_ids() == [11, 12], what="both brokers registered")
        zk.create_topic("balanced", str(uuid.uuid4()), {0: [11, 12]}, {})

        def state():
            found = zk.get_partition_state("balanced", 0)
            return None if found is None else found[0]

        wait_for(
            lambda: state() and state().leader == 11 and state().isr == (11, 12),
            timeout=45,
            what="11 to lead with 12 in the ISR",
        )
        brokers[11].stop()
        wait_for(lambda: state().leader == 12, what="12 to lead while 11 is away")
        brokers[11].start()
        wait_for(lambda: state().leader == 11, timeout=60, what="the rebalance to give it back")
    finally:
        for broker in brokers.values():
            broker.stop()
        zk.close()


# ---------------------------------------------------------------------- the tools
def tool(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "kafka_ref.cli", *argv],
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.spec("TOOLS-29", "CTRL-24", "CTRL-25")
def test_the_reassign_tool_generates_executes_and_verifies_a_plan(cluster, topic_name, tmp_path):
    create_topic(cluster, topic_name, partitions=2, assignment=[[1, 2], [2, 1]])
    bootstrap = ["--bootstrap-server", cluster.bootstrap()]
    topics = tmp_path / "topics.json"
    topics.write_text(json.dumps({"version": 1, "topics": [{"topic": topic_name}]}))
    done = tool(
        "reassign",
        *bootstrap,
        "--generate",
        "--topics-to-move-json-file",
        str(topics),
        "--broker-list",
        "2,3",
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "Current partition replica assignment"
    current = json.loads(lines[1])
    assert [p["replicas"] for p in current["partitions"]] == [[1, 2], [2, 1]]
    assert lines[3] == "Proposed partition reassignment configuration"
    proposed = json.loads(lines[4])
    assert all(sorted(p["replicas"]) == [2, 3] for p in proposed["partitions"])
    plan = tmp_path / "plan.json"
    plan.write_text(lines[4])
    done = tool("reassign", *bootstrap, "--execute", "--reassignment-json-file", str(plan))
    assert done.returncode == 0, done.stderr
    assert f"Successfully started partition reassignments for {topic_name}-0,{topic_name}-1" in (
        done.stdout
    )
    for p in proposed["partitions"]:
        wait_moved(cluster, topic_name, p["partition"], p["replicas"])
    done = tool("reassign", *bootstrap, "--verify", "--reassignment-json-file", str(plan))
    assert done.returncode == 0, done.stderr
    assert f"Reassignment of partition {topic_name}-1 is completed." in done.stdout


@pytest.mark.spec("TOOLS-29")
def test_the_reassign_tool_refuses_a_bad_plan_and_a_refused_move(cluster, topic_name, tmp_path):
    create_topic(cluster, topic_name, partitions=1, assignment=[[1, 2]])
    bootstrap = ["--bootstrap-server", cluster.bootstrap()]
    bad = tmp_path / "bad.json"
    bad.write_text('{"version":1,"partitions":[{"topic":"t","partition":0}]}')
    done = tool("reassign", *bootstrap, "--execute", "--reassignment-json-file", str(bad))
    assert done.returncode == 2 and "not a reassignment plan" in done.stderr
    assert "Traceback" not in done.stderr
    plan = tmp_path / "plan.json"
    plan.write_text(
        json.dumps(
            {
                "version": 1,
                "partitions": [{"topic": topic_name, "partition": 0, "replicas": [2, 9]}],
            }
        )
    )
    done = tool("reassign", *bootstrap, "--execute", "--reassignment-json-file", str(plan))
    assert done.returncode == 1
    assert f"{topic_name}-0: Brokers [9] are not registered." in done.stderr
    assert moves(cluster, topic_name) == ({0: (1, 2)}, {})


@pytest.mark.spec("TOOLS-30", "CTRL-27")
def test_the_leader_election_tool_elects_the_preferred_replica(cluster, topic_name):
    create_topic(cluster, topic_name, partitions=1, assignment=[[1, 2, 3]])
    cluster.stop(1)
    wait_for(lambda: cluster.state(topic_name, 0).leader == 2, what="2 to lead")
    cluster.ensure_running()
    wait_for(lambda: 1 in cluster.state(topic_name, 0).isr, timeout=45, what="1 back in ISR")
    bootstrap = ["--bootstrap-server", cluster.bootstrap()]
    args = ["--election-type", "preferred", "--topic", topic_name, "--partition", "0"]
    done = tool("leader-election", *bootstrap, *args)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == (
        f"Successfully completed leader election (PREFERRED) for partitions {topic_name}-0"
    )
    assert cluster.state(topic_name, 0).leader == 1
    done = tool("leader-election", *bootstrap, *args)
    assert done.stdout.strip() == f"Valid replica already elected for partitions {topic_name}-0"
    done = tool(
        "leader-election",
        *bootstrap,
        "--election-type",
        "fastest",
        "--topic",
        "x",
        "--partition",
        "0",
    )
    assert done.returncode == 2 and "--election-type must be preferred or unclean" in done.stderr
    done = tool("leader-election", *bootstrap, *args[:2], "--topic", "no-such", "--partition", "0")
    assert done.returncode == 1 and "UNKNOWN_TOPIC_OR_PARTITION" not in done.stdout
    assert "no-such-0: Unknown partition no-such-0." in done.stderr


@pytest.mark.spec("CTRL-27", "CTRL-6")
def test_an_unclean_election_on_request_revives_a_partition_whose_isr_is_gone(cluster, topic_name):
    """[1, 2]: 2 stops, then 1, the last ISR member: the partition is offline, and stays so
    when 2 returns (unclean election is off). ElectLeaders UNCLEAN makes 2 lead."""
    create_topic(cluster, topic_name, assignment=[[1, 2]])
    cluster.stop(2)
    wait_for(lambda: cluster.state(topic_name, 0).isr == (1,), what="2 to leave the ISR")
    cluster.stop(1)
    wait_for(lambda: cluster.state(topic_name, 0).leader == -1, what="the partition offline")
    cluster.brokers[2].start()
    wait_for(lambda: 2 in cluster.zk.get_broker_ids(), what="2 to register again")
    with admin(cluster) as client:
        preferred = client.elect_leaders(0, {topic_name: [0]}, raise_errors=False)
        assert preferred.replica_election_results[0][1][0][1] == 80  # PREFERRED_LEADER_NOT_...
        assert cluster.state(topic_name, 0).leader == -1
        client.elect_leaders(1, {topic_name: [0]})
    state = cluster.state(topic_name, 0)
    assert (state.leader, state.isr) == (2, (2,))
