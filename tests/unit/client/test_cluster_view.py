"""The cluster view: snapshots from Metadata answers, and when to refresh."""

from __future__ import annotations

import threading

import pytest

from kafka_ref.client.cluster_view import Cluster, Metadata
from kafka_ref.common import TopicPartition
from kafka_ref.errors import ErrorCode
from tests.unit.client.conftest import metadata_response


def test_a_cluster_snapshot_knows_leaders_and_controller():
    response = metadata_response(
        {"t": [1, 2, -1]},
        brokers=[(1, "a", 1), (2, "b", 2)],
        controller_id=2,
        errors={"bad": ErrorCode.INVALID_TOPIC},
    )
    cluster = Cluster.from_metadata_response(response)
    assert cluster.leader_for(TopicPartition("t", 1)) == 2
    assert cluster.leader_for(TopicPartition("t", 2)) is None  # no leader
    assert cluster.leader_for(TopicPartition("t", 3)) is None  # no such partition
    assert cluster.partition_count("t") == 3 and cluster.available_partitions("t") == [0, 1]
    assert cluster.controller.host == "b"
    assert cluster.partitions_for_node(1) == [TopicPartition("t", 0)]
    assert cluster.topic_errors == {"bad": ErrorCode.INVALID_TOPIC} and cluster.topics == ["t"]
    bootstrap = Cluster.bootstrap([("x", 1), ("y", 2)])
    assert [n.node_id for n in bootstrap.nodes] == [-1, -2] and bootstrap.is_bootstrap


@pytest.mark.spec("CLIENT-10")
def test_refreshes_are_due_when_requested_after_the_backoff_and_at_max_age():
    metadata = Metadata([("h", 1)], retry_backoff_ms=100, metadata_max_age_ms=10_000)
    assert metadata.time_to_next_update(0) == 0  # the bootstrap view is replaced at once
    metadata.update(metadata_response({}), now_ms=1000)
    assert metadata.time_to_next_update(1000) == 10_000  # fresh: wait for max age
    metadata.request_update()
    assert metadata.time_to_next_update(1050) == 50  # requested, but backing off
    assert metadata.time_to_next_update(1100) == 0
    metadata.failed_update(2000)
    assert metadata.time_to_next_update(2000) == 100


@pytest.mark.spec("CLIENT-10")
def test_a_topic_being_created_or_leaderless_asks_for_another_look():
    metadata = Metadata([("h", 1)], retry_backoff_ms=0)
    metadata.add_topic("new")
    metadata.update(metadata_response({}, errors={"new": ErrorCode.LEADER_NOT_AVAILABLE}), 0)
    assert metadata.update_requested
    metadata.update(metadata_response({"new": [1, -1]}), 0)
    assert metadata.update_requested
    metadata.update(metadata_response({"new": [1, 1]}), 0)
    assert not metadata.update_requested
    metadata.add_topic("other")  # an unknown topic is a reason to refresh
    assert metadata.update_requested


@pytest.mark.timeout(10)
def test_await_update_wakes_on_a_newer_version():
    metadata = Metadata([("h", 1)])
    version = metadata.request_update()
    assert not metadata.await_update(version, 0.05)
    timer = threading.Timer(0.05, lambda: metadata.update(metadata_response({}), 0))
    timer.start()
    assert metadata.await_update(version, 5)
    timer.join()
