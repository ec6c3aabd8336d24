"""Dynamic broker configs on a ZooKeeper cluster (CONFIG-6): stored in `/config/brokers`,
announced under `/config/changes`, applied by every broker it concerns, read again at start.

The cluster is the session's; each test removes the configs it set.
"""

from __future__ import annotations

import json

import pytest

from kafka_ref.client.admin import Admin, ConfigResource
from kafka_ref.cluster.config_changes import broker_config_path, read_broker_config
from kafka_ref.cluster.zk_data import CONFIG_CHANGES
from kafka_ref.conformance.wire import Wire, batch
from kafka_ref.errors import ErrorCode
from tests.cluster.conftest import wait_for
from tests.cluster.test_controller import create_topic, leaders_in_metadata

pytestmark = pytest.mark.timeout(180)
SET, DELETE = 0, 1
DYNAMIC_BROKER, DYNAMIC_DEFAULT = 2, 3


def alter(cluster, via: int, name: str, *changes) -> None:
    with Admin(cluster.brokers[via].bootstrap) as admin:
        admin.incremental_alter_configs(ConfigResource(ConfigResource.BROKER, name), changes)


def in_force(cluster, broker_id: int, key: str) -> tuple[str | None, int]:
    with Admin(cluster.brokers[broker_id].bootstrap) as admin:
        resource = ConfigResource(ConfigResource.BROKER, str(broker_id))
        entry = admin.describe_configs([resource], [key])[resource][key]
    return entry.value, entry.source


def produce(cluster, broker_id: int, topic: str) -> int:
    with Wire("127.0.0.1", cluster.brokers[broker_id].port) as wire:
        return wire.produce(topic, 0, batch([b"v" * 1000]), acks=-1).error_code


@pytest.mark.spec("CONFIG-6")
def test_a_cluster_default_reaches_every_broker_and_a_restarted_one(cluster, topic_name):
    create_topic(cluster, topic_name, assignment=[[3]])  # one replica, on broker 3
    wait_for(  # the states are in ZooKeeper; broker 3 leads once its LeaderAndIsr arrives
        lambda: produce(cluster, 3, topic_name) == ErrorCode.NO_ERROR,
        what="broker 3 to lead the new partition",
    )
    try:
        alter(cluster, 1, "", ("message.max.bytes", "500", SET))
        zk = cluster.zk.zk
        assert read_broker_config(zk, "<default>") == {"message.max.bytes": "500"}
        notices = [
            json.loads(zk.get(f"{CONFIG_CHANGES}/{c}")[0]) for c in zk.get_children(CONFIG_CHANGES)
        ]
        assert {"version": 2, "entity_path": "brokers/<default>"} in notices
        for b in (1, 2, 3):
            wait_for(
                lambda b=b: in_force(cluster, b, "message.max.bytes") == ("500", DYNAMIC_DEFAULT),
                what=f"broker {b} to apply the cluster default",
            )
        wait_for(
            lambda: produce(cluster, 3, topic_name) == ErrorCode.MESSAGE_TOO_LARGE,
            what="broker 3's live log to refuse a 1 kB batch",
        )
        cluster.stop(3)
        cluster.ensure_running()
        wait_for(  # the controller's LeaderAndIsr, then its UpdateMetadata, reached broker 3
            lambda: leaders_in_metadata(cluster, 3, topic_name)[0][0] == 3,
            what="broker 3 leading again",
        )
        assert produce(cluster, 3, topic_name) == ErrorCode.MESSAGE_TOO_LARGE, "read at start"
    finally:
        alter(cluster, 1, "", ("message.max.bytes", None, DELETE))
    wait_for(lambda: produce(cluster, 3, topic_name) == ErrorCode.NO_ERROR, what="the default gone")


@pytest.mark.spec("CONFIG-6")
def test_a_per_broker_config_changes_that_broker_only(cluster):
    try:
        alter(cluster, 2, "2", ("log.retention.ms", "1000", SET))
        assert read_broker_config(cluster.zk.zk, "2") == {"log.retention.ms": "1000"}
        assert cluster.zk.zk.exists(broker_config_path("2"))
        assert in_force(cluster, 2, "log.retention.ms") == ("1000", DYNAMIC_BROKER)
        for b in (1, 3):
            assert in_force(cluster, b, "log.retention.ms")[1] != DYNAMIC_BROKER
        with pytest.raises(Exception, match="INVALID_REQUEST"):  # to broker 2, naming 2 only
            alter(cluster, 2, "2", ("num.partitions", "4", SET))
    finally:
        alter(cluster, 2, "2", ("log.retention.ms", None, DELETE))
    assert in_force(cluster, 2, "log.retention.ms")[1] != DYNAMIC_BROKER
