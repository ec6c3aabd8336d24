"""Which targets get several brokers, and how: the target's own or a cluster of its kind."""

from __future__ import annotations

import pytest

from kafka_ref.conformance import capabilities as caps
from kafka_ref.conformance.cluster import SESSION_TIMEOUT_MS, SIZE
from kafka_ref.conformance.plugin import ConformanceTarget
from kafka_ref.conformance.targets import SUITE_CONFIGS, Target, TargetError, parse


@pytest.mark.spec("CONF-4")
def test_every_broker_of_a_mutant_targets_cluster_runs_the_mutant():
    target = parse("kafka_ref:mutant=hw-past-lagging-isr")
    cluster = target.cluster_maker()  # built, not started
    try:
        assert sorted(cluster.processes) == list(range(1, SIZE + 1))
        for broker in cluster.processes.values():
            assert broker.launcher[:4] == (
                "-m",
                "kafka_ref.conformance.mutant_broker",
                "--mutant",
                "hw-past-lagging-isr",
            )
            assert broker.configs["zookeeper.session.timeout.ms"] == SESSION_TIMEOUT_MS
            assert SUITE_CONFIGS.items() <= broker.configs.items()
            assert broker.zookeeper == cluster.zookeeper.connect
    finally:
        cluster.close()
        target.stop()


@pytest.mark.spec("CONF-4")
def test_only_a_target_that_declares_it_starts_a_cluster():
    with pytest.raises(TargetError, match="cannot start a cluster"):
        parse("bootstrap=127.0.0.1:9092").cluster()
    target = parse("kafka_ref")
    try:
        target.declared.discard("cluster")  # as `--capabilities -cluster` would
        with pytest.raises(TargetError, match="cannot start a cluster"):
            target.cluster()
    finally:
        target.stop()


@pytest.mark.spec("CONF-4", "CONF-1")
def test_several_brokers_come_from_either_capability_killing_needs_cluster():
    def seen_as(brokers: int, declared: set[str]) -> ConformanceTarget:
        found = caps.from_probe({3: (0, 7)}, brokers, declared)
        return ConformanceTarget(Target("x", "x", "127.0.0.1", 1, capabilities=found))

    running_cluster = seen_as(3, set())  # bootstrap=HOST:PORT of a real cluster
    running_cluster.require_any("cluster", "multi-broker")  # no skip
    with pytest.raises(pytest.skip.Exception, match="target lacks cluster: the suite can"):
        running_cluster.require("cluster")
    seen_as(1, {"cluster"}).require_any("cluster", "multi-broker")  # kafka_ref: no skip
    with pytest.raises(pytest.skip.Exception, match="target lacks cluster or multi-broker"):
        seen_as(1, set()).require_any("cluster", "multi-broker")  # tansu


@pytest.mark.spec("CONF-4")
def test_apache_kafkas_cluster_is_three_brokers_and_a_controller_of_their_own():
    from kafka_ref.conformance.cluster import KRAFT_SESSION_CONFIGS

    target = parse("apache_kafka")
    cluster = target.cluster_maker()  # built, not started: nothing is fetched or run
    try:
        assert sorted(cluster.processes) == list(range(1, SIZE + 1))
        assert all(node.roles == "broker" for node in cluster.processes.values())
        (controller,) = cluster.kafka.controllers
        assert controller.roles == "controller" and controller.node_id not in cluster.processes
        configs = cluster.kafka.configs
        assert SUITE_CONFIGS.items() <= configs.items()
        assert KRAFT_SESSION_CONFIGS.items() <= configs.items()
        assert configs["broker.session.timeout.ms"] == SESSION_TIMEOUT_MS
        assert {"restart", "cluster", "sasl", "acls"} <= target.declared
    finally:
        cluster.close()
        target.stop()
