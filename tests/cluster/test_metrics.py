"""Metrics on three real brokers: UnderReplicatedPartitions follows a follower out of the
ISR and back (spec/metrics.md). Each broker of the session's cluster serves its metrics on
its own port; the test scrapes them over HTTP as Prometheus would."""

from __future__ import annotations

import pytest

from tests.cluster.conftest import wait_for
from tests.cluster.test_controller import create_topic
from tests.unit.server.test_metrics import scrape

pytestmark = pytest.mark.timeout(60)

URP = ("kafka_server_replicamanager_underreplicatedpartitions", ())


def under_replicated_in_zookeeper(cluster, leader: int) -> int:
    """Partitions `leader` leads whose ISR in ZooKeeper is smaller than their replicas."""
    count = 0
    for topic in cluster.zk.get_all_topics():
        for partition in (cluster.zk.get_topic(topic) or ({},))[0]:
            state = cluster.state(topic, partition)
            count += (
                state is not None
                and state.leader == leader
                and len(state.isr) < len(state.replicas)
            )
    return count


@pytest.mark.spec("MET-3", "MET-4")
def test_under_replicated_partitions_follow_a_follower_out_and_back(cluster, topic_name):
    """On a fresh cluster the new partition is the only one: UnderReplicatedPartitions goes
    0 -> 1 -> 0. Earlier tests' partitions led by the same broker count too, so the gauge is
    compared with what ZooKeeper's partition states say."""
    create_topic(cluster, topic_name, partitions=1, rf=3)
    leader = cluster.state(topic_name, 0).leader
    port = cluster.metrics_ports[leader]
    wait_for(lambda: scrape(port)[URP] == 0, timeout=15, what="no partition under-replicated")
    expands = scrape(port)[("kafka_server_replicamanager_isrexpands_total", ())]
    follower = next(b for b in (1, 2, 3) if b != leader and b != cluster.controller()[0])
    cluster.stop(follower)  # clean: the controller drops it from the ISR at once
    wait_for(lambda: follower not in cluster.state(topic_name, 0).isr, what="the ISR to shrink")
    wait_for(
        lambda: scrape(port)[URP] == under_replicated_in_zookeeper(cluster, leader) >= 1,
        timeout=10,
        what=f"UnderReplicatedPartitions to count the partitions without broker {follower}",
    )
    shrunk = scrape(port)[URP]
    cluster.ensure_running()
    wait_for(lambda: scrape(port)[URP] == 0, timeout=15, what="UnderReplicatedPartitions 0")
    after = scrape(port)
    assert after[("kafka_server_replicamanager_isrexpands_total", ())] == expands + shrunk
    assert after[("kafka_server_replicamanager_leadercount", ())] >= 1


@pytest.mark.spec("MET-5")
def test_exactly_one_broker_reports_the_active_controller(cluster):
    active = "kafka_controller_kafkacontroller_activecontrollercount", ()
    counts = {b: scrape(cluster.metrics_ports[b])[active] for b in (1, 2, 3)}
    assert sorted(counts.values()) == [0, 0, 1]
    assert counts[cluster.controller()[0]] == 1
    controller = cluster.metrics_ports[cluster.controller()[0]]
    assert scrape(controller)[("kafka_controller_kafkacontroller_offlinepartitionscount", ())] == 0
