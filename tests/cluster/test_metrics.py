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


@pytest.mark.spec("MET-3", "MET-4")
def test_under_replicated_partitions_follow_a_follower_out_and_back(cluster, topic_name):
    create_topic(cluster, topic_name, partitions=1, rf=3)
    leader = cluster.state(topic_name, 0).leader
    port = cluster.metrics_ports[leader]
    wait_for(lambda: sorted(cluster.state(topic_name, 0).isr) == [1, 2, 3], what="a full ISR")
    wait_for(lambda: scrape(port)[URP] == 0, timeout=10, what="no partition under-replicated")
    expands = scrape(port)[("kafka_server_replicamanager_isrexpands_total", ())]
    follower = next(b for b in (1, 2, 3) if b != leader)
    cluster.stop(follower)  # clean: the controller drops it from the ISR at once
    wait_for(lambda: scrape(port)[URP] == 1, timeout=10, what="UnderReplicatedPartitions 1")
    cluster.ensure_running()
    wait_for(lambda: scrape(port)[URP] == 0, timeout=15, what="UnderReplicatedPartitions 0")
    after = scrape(port)
    assert after[("kafka_server_replicamanager_isrexpands_total", ())] == expands + 1
    assert after[("kafka_server_replicamanager_leadercount", ())] >= 1


@pytest.mark.spec("MET-5")
def test_exactly_one_broker_reports_the_active_controller(cluster):
    active = "kafka_controller_kafkacontroller_activecontrollercount", ()
    counts = {b: scrape(cluster.metrics_ports[b])[active] for b in (1, 2, 3)}
    assert sorted(counts.values()) == [0, 0, 1]
    assert counts[cluster.controller()[0]] == 1
    controller = cluster.metrics_ports[cluster.controller()[0]]
    assert scrape(controller)[("kafka_controller_kafkacontroller_offlinepartitionscount", ())] == 0
