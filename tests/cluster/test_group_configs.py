"""A group's configs in a cluster (CONFIG-13): altered through one broker, they reach every
broker and outlive a restart, on ZooKeeper (`/config/groups/<group>` and a change notice)
and in KRaft (ConfigRecords of resource type 32 written by the active controller, which
checks them with its own bounds; three combined nodes as processes, stopped and started
again whole)."""

from __future__ import annotations

import json
import os
import time
import uuid

import pytest

from kafka_ref.client.admin import Admin, ConfigResource
from kafka_ref.cluster.config_changes import group_config_path, read_group_config
from kafka_ref.cluster.embedded import new_cluster_id
from kafka_ref.cluster.zk_data import CONFIG_CHANGES
from kafka_ref.conformance.wire import Wire
from kafka_ref.errors import ErrorCode, KafkaError
from kafka_ref.protocol.messages import (
    ApiKey,
    DescribeConfigsRequest,
)
from kafka_ref.tools.cluster import KRaftNodeProcess, _stop_together
from kafka_ref.tools.server_process import free_port
from tests.cluster.conftest import wait_for

pytestmark = pytest.mark.timeout(300)
SET, DELETE = 0, 1
GROUP_CONFIG, DEFAULT = 8, 5
KEY = "share.auto.offset.reset"


def alter(bootstrap: str, group: str, *changes) -> None:
    with Admin(bootstrap) as admin:
        admin.incremental_alter_configs(ConfigResource(ConfigResource.GROUP, group), changes)


def in_force(bootstrap: str, group: str, key: str = KEY) -> tuple[str | None, int]:
    """What the broker at `bootstrap` answers itself for the group's `key` (an admin
    client would ask any broker)."""
    host, port = bootstrap.rsplit(":", 1)
    body = DescribeConfigsRequest(
        resources=[
            DescribeConfigsRequest.DescribeConfigsResource(
                resource_type=ConfigResource.GROUP, resource_name=group, configuration_keys=[key]
            )
        ]
    )
    with Wire(host, int(port)) as wire:
        [result] = wire.request(ApiKey.DESCRIBE_CONFIGS, 4, body).results
    if result.error_code != ErrorCode.NO_ERROR:
        raise KafkaError(result.error_message or "", code=ErrorCode(result.error_code))
    [entry] = result.configs
    return entry.value, entry.config_source


def seen(bootstrap: str, group: str, key: str = KEY) -> tuple[str | None, int] | None:
    """`in_force`, or None while the broker cannot answer yet (starting, electing)."""
    try:
        return in_force(bootstrap, group, key)
    except (KafkaError, OSError):
        return None


@pytest.mark.spec("CONFIG-13")
def test_on_zookeeper_a_groups_configs_reach_every_broker_and_a_restarted_one(cluster):
    group = f"zk-{uuid.uuid4().hex[:8]}"
    zk = cluster.zk.zk
    bootstrap = {b: cluster.brokers[b].bootstrap for b in (1, 2, 3)}
    try:
        alter(bootstrap[1], group, (KEY, "earliest", SET))
        assert read_group_config(zk, group) == {KEY: "earliest"}
        notices = [
            json.loads(zk.get(f"{CONFIG_CHANGES}/{c}")[0]) for c in zk.get_children(CONFIG_CHANGES)
        ]
        assert {"version": 2, "entity_path": f"groups/{group}"} in notices
        for b in (1, 2, 3):
            wait_for(
                lambda b=b: in_force(bootstrap[b], group) == ("earliest", GROUP_CONFIG),
                what=f"broker {b} to have the group's config",
            )
        cluster.stop(3)
        cluster.ensure_running()
        assert in_force(cluster.brokers[3].bootstrap, group) == ("earliest", GROUP_CONFIG)
    finally:
        alter(bootstrap[1], group, (KEY, None, DELETE))
    assert not zk.exists(group_config_path(group))
    for b in (1, 2, 3):
        wait_for(
            lambda b=b: in_force(cluster.brokers[b].bootstrap, group) == ("latest", DEFAULT),
            what=f"broker {b} to drop the group's config",
        )


@pytest.fixture
def kraft_nodes(tmp_path):
    cluster_id = new_cluster_id()
    voters = {i: free_port() for i in (1, 2, 3)}
    configs = {
        "broker.heartbeat.interval.ms": 500,
        "broker.session.timeout.ms": 3000,
        "offsets.topic.num.partitions": 3,
        "group.share.min.record.lock.duration.ms": 1000,  # the controller's bound
    }
    nodes = [
        KRaftNodeProcess(
            i, os.path.join(tmp_path, f"node-{i}"), cluster_id, voters, configs=configs
        )
        for i in voters
    ]
    try:
        _start_together(nodes)
        yield nodes
    finally:
        _stop_together(nodes)


def _start_together(nodes: list[KRaftNodeProcess]) -> None:
    for node in nodes:
        node.launch()
    for node in nodes:
        node.wait_listening(timeout=60)


def _retrying(action, what: str):
    """`action()`, again while the cluster's controller or coordinator is still settling."""
    deadline = time.monotonic() + 60
    while True:
        try:
            return action()
        except KafkaError as err:
            assert time.monotonic() < deadline, f"{what}: {err}"
            time.sleep(0.5)


@pytest.mark.spec("CONFIG-13")
def test_in_kraft_the_active_controller_stores_them_for_every_broker_and_a_restart(kraft_nodes):
    nodes = kraft_nodes
    first = nodes[0].bootstrap
    _retrying(
        lambda: alter(
            first, "kraft", (KEY, "earliest", SET), ("share.record.lock.duration.ms", "2000", SET)
        ),
        "alter a group's configs",
    )
    for node in nodes:
        wait_for(
            lambda node=node: seen(node.bootstrap, "kraft") == ("earliest", GROUP_CONFIG),
            what=f"node {node.node_id} to have the group's config",
        )
    # the controller's bounds decide: 999999 is above group.share.max.record.lock.duration.ms
    with pytest.raises(KafkaError) as refused:
        alter(nodes[1].bootstrap, "kraft", ("share.record.lock.duration.ms", "999999", SET))
    assert refused.value.code == ErrorCode.INVALID_CONFIG
    assert "must be in the range 1000 to 60000 inclusive." in str(refused.value)

    _stop_together(nodes)
    _start_together(nodes)
    for node in nodes:
        wait_for(
            lambda node=node: (
                seen(node.bootstrap, "kraft", "share.record.lock.duration.ms")
                == ("2000", GROUP_CONFIG)
            ),
            what=f"node {node.node_id} to read the group's config again",
        )
