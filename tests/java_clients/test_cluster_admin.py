"""Apache Kafka's Java admin client and tools move partitions and elect leaders on a kafka-ref
cluster: ZooKeeper and three brokers (the `cluster` fixture), for this module alone.

The Java admin client reassigns a partition and elects preferred and unclean leaders;
Kafka's kafka-reassign-partitions generates, executes and verifies a plan, and
kafka-leader-election elects the preferred replica of a partition that lost it. Each outcome
is read back from ZooKeeper, where kafka-ref's controller keeps the partition states.
"""

from __future__ import annotations

import json
import uuid

import pytest

from kafka_ref.conformance.cluster import wait_for
from tests.java_clients.conftest import run_tool

pytestmark = pytest.mark.timeout(240)


def create(java, cluster, topic: str, *assignment: list[int]) -> None:
    spec = {"name": topic, "assignment": {str(p): r for p, r in enumerate(assignment)}}
    created = java.call("create-topics", bootstrap=cluster.bootstrap(), topics=[spec])
    assert created == {topic: "ok"}
    wait_for(lambda: all(cluster.state(topic, p) for p in range(len(assignment))), what=topic)


def replicas(java, cluster, topic: str) -> list[tuple]:
    """(leader, replicas, isr) of each partition, as the Java admin client describes them."""
    described = java.call("describe-topics", bootstrap=cluster.bootstrap(), topics=[topic])
    return [(p["leader"], p["replicas"], p["isr"]) for p in described[topic]["partitions"]]


def bounce_first_replica(cluster, *topics: str) -> None:
    """Broker 1 stops, so 2 leads each topic's partition 0; it returns to the ISR, not to lead."""
    cluster.stop(1)
    for topic in topics:
        wait_for(lambda t=topic: cluster.state(t, 0).leader == 2, what=f"2 to lead {topic}")
    cluster.ensure_running()
    for topic in topics:
        wait_for(lambda t=topic: 1 in cluster.state(t, 0).isr, timeout=45, what="1 in the ISR")
        assert cluster.state(topic, 0).leader == 2


@pytest.mark.spec("JAVA-13")
def test_the_java_admin_client_moves_a_partition_and_its_records(java, cluster):
    topic, bootstrap = f"move-{uuid.uuid4().hex[:6]}", cluster.bootstrap()
    create(java, cluster, topic, [1, 2])
    sent = java.call("produce", bootstrap=bootstrap, topic=topic, count=300)
    assert sent["acked"] == 300

    started = java.call("reassign", bootstrap=bootstrap, reassignments={f"{topic}-0": [2, 3]})
    assert started == {f"{topic}-0": "ok"}
    moving = java.call("list-reassignments", bootstrap=bootstrap)
    if f"{topic}-0" in moving:  # caught while it moves (it may already be done)
        assert moving[f"{topic}-0"]["adding"] == [3] and moving[f"{topic}-0"]["removing"] == [1]
    wait_for(
        lambda: (
            f"{topic}-0" not in java.call("list-reassignments", bootstrap=bootstrap)
            and replicas(java, cluster, topic)[0][1:] == ([2, 3], [2, 3])
        ),
        timeout=60,
        what="the move to end",
    )
    cluster.stop(1)  # the old replica is gone: the records come from the new ones
    try:
        read = java.call("read", bootstrap=cluster.bootstrap(), topic=topic)
    finally:
        cluster.ensure_running()
    assert [value for _, _, value, _ in read["records"]["0"]] == [str(i) for i in range(300)]


@pytest.mark.spec("JAVA-14", "JAVA-23")
def test_preferred_leaders_are_elected_by_the_admin_client_and_the_tool(java, cluster):
    by_java, by_tool = (f"preferred-{who}-{uuid.uuid4().hex[:6]}" for who in ("java", "tool"))
    for topic in (by_java, by_tool):
        create(java, cluster, topic, [1, 2, 3])
    bounce_first_replica(cluster, by_java, by_tool)
    bootstrap = cluster.bootstrap()

    elected = java.call(
        "elect-leaders", bootstrap=bootstrap, type="PREFERRED", partitions=[f"{by_java}-0"]
    )
    assert elected == {f"{by_java}-0": "ok"}
    assert cluster.state(by_java, 0).leader == 1
    again = java.call(
        "elect-leaders", bootstrap=bootstrap, type="PREFERRED", partitions=[f"{by_java}-0"]
    )
    assert again[f"{by_java}-0"].startswith("ElectionNotNeededException")

    args = [
        "--bootstrap-server",
        bootstrap,
        "--election-type",
        "preferred",
        "--topic",
        by_tool,
        "--partition",
        "0",
    ]
    done = run_tool("kafka-leader-election", *args)
    assert done.returncode == 0, done.stderr
    assert f"Successfully completed leader election (PREFERRED) for partitions {by_tool}-0" in (
        done.stdout
    )
    assert cluster.state(by_tool, 0).leader == 1
    done = run_tool("kafka-leader-election", *args)
    assert f"Valid replica already elected for partitions {by_tool}-0" in done.stdout


@pytest.mark.spec("JAVA-14")
def test_an_unclean_election_revives_a_partition_whose_isr_is_gone(java, cluster):
    topic = f"unclean-{uuid.uuid4().hex[:6]}"
    create(java, cluster, topic, [1, 2])
    cluster.stop(2)
    wait_for(lambda: cluster.state(topic, 0).isr == (1,), what="2 to leave the ISR")
    cluster.stop(1)
    wait_for(lambda: cluster.state(topic, 0).leader == -1, what="the partition offline")
    cluster.brokers[2].start()
    try:
        wait_for(lambda: 2 in cluster.zk.get_broker_ids(), what="2 to register again")
        bootstrap = cluster.brokers[2].bootstrap
        preferred = java.call(
            "elect-leaders", bootstrap=bootstrap, type="PREFERRED", partitions=[f"{topic}-0"]
        )
        assert preferred[f"{topic}-0"].startswith("PreferredLeaderNotAvailableException")
        assert cluster.state(topic, 0).leader == -1
        unclean = java.call(
            "elect-leaders", bootstrap=bootstrap, type="UNCLEAN", partitions=[f"{topic}-0"]
        )
        assert unclean == {f"{topic}-0": "ok"}
        state = cluster.state(topic, 0)
        assert (state.leader, state.isr) == (2, (2,))
    finally:
        cluster.ensure_running()


@pytest.mark.spec("JAVA-22")
def test_kafka_reassign_partitions_generates_executes_and_verifies_a_plan(java, cluster, tmp_path):
    topic, bootstrap = f"tool-move-{uuid.uuid4().hex[:6]}", cluster.bootstrap()
    create(java, cluster, topic, [1, 2], [2, 1])
    topics = tmp_path / "topics.json"
    topics.write_text(json.dumps({"version": 1, "topics": [{"topic": topic}]}))
    done = run_tool(
        "kafka-reassign-partitions",
        "--bootstrap-server",
        bootstrap,
        "--generate",
        "--topics-to-move-json-file",
        str(topics),
        "--broker-list",
        "2,3",
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    current = json.loads(lines[lines.index("Current partition replica assignment") + 1])
    assert [p["replicas"] for p in current["partitions"]] == [[1, 2], [2, 1]]
    proposed_at = lines.index("Proposed partition reassignment configuration") + 1
    proposed = json.loads(lines[proposed_at])
    assert all(sorted(p["replicas"]) == [2, 3] for p in proposed["partitions"])

    plan = tmp_path / "plan.json"
    plan.write_text(lines[proposed_at])
    done = run_tool(
        "kafka-reassign-partitions",
        "--bootstrap-server",
        bootstrap,
        "--execute",
        "--reassignment-json-file",
        str(plan),
    )
    assert done.returncode == 0, done.stderr
    assert "Successfully started partition reassignments for" in done.stdout
    for p in proposed["partitions"]:
        wait_for(
            lambda p=p: (
                sorted(cluster.state(topic, p["partition"]).isr) == [2, 3]
                and cluster.zk.get_topic(topic)[0][p["partition"]] == tuple(p["replicas"])
            ),
            timeout=60,
            what=f"{topic}-{p['partition']} to move",
        )
    done = run_tool(
        "kafka-reassign-partitions",
        "--bootstrap-server",
        bootstrap,
        "--verify",
        "--reassignment-json-file",
        str(plan),
    )
    assert done.returncode == 0, done.stderr
    for p in (0, 1):
        assert f"Reassignment of partition {topic}-{p} is completed." in done.stdout
