"""Apache Kafka's Java admin client against one kafka-ref broker.

Topics and the cluster, incremental configs (and their effect on a producer), client quotas
(and the throttling they bring), groups and their offsets, log directories: each call's
answer is checked, and where the change should show in the broker's behaviour, that too.
"""

from __future__ import annotations

import os
import uuid

import pytest

from tests.java_clients.harness import JavaError
from tests.java_clients.test_producer import create_topic, topic_name

pytestmark = pytest.mark.timeout(120)


@pytest.mark.spec("JAVA-6")
def test_topics_are_created_described_grown_and_deleted(java, broker):
    bootstrap, topic = broker.bootstrap, topic_name("admin")
    created = java.call(
        "create-topics",
        bootstrap=bootstrap,
        topics=[
            {"name": topic, "partitions": 3, "configs": {"retention.ms": "60000"}},
            {"name": f"{topic}-rf3", "partitions": 1, "replication_factor": 3},
        ],
    )
    assert created[topic] == "ok"
    assert created[f"{topic}-rf3"].startswith("InvalidReplicationFactorException")
    again = java.call("create-topics", bootstrap=bootstrap, topics=[{"name": topic}])
    assert again[topic].startswith("TopicExistsException")

    assert topic in java.call("list-topics", bootstrap=bootstrap)
    cluster = java.call("describe-cluster", bootstrap=bootstrap)
    (node,) = cluster["nodes"]
    assert cluster["controller"] == node and cluster["cluster_id"]
    described = java.call("describe-topics", bootstrap=bootstrap, topics=[topic])[topic]
    assert not described["internal"]
    assert [p["partition"] for p in described["partitions"]] == [0, 1, 2]
    assert all(
        p["leader"] == node and p["replicas"] == p["isr"] == [node] for p in described["partitions"]
    )

    assert java.call("create-partitions", bootstrap=bootstrap, counts={topic: 5}) == {topic: "ok"}
    grown = java.call("describe-topics", bootstrap=bootstrap, topics=[topic])[topic]
    assert len(grown["partitions"]) == 5

    assert java.call("delete-topics", bootstrap=bootstrap, topics=[topic]) == {topic: "ok"}
    assert topic not in java.call("list-topics", bootstrap=bootstrap)
    with pytest.raises(JavaError) as gone:
        java.call("describe-topics", bootstrap=bootstrap, topics=[topic])
    assert gone.value.error.endswith("UnknownTopicOrPartitionException")


@pytest.mark.spec("JAVA-7")
def test_incremental_config_changes_are_described_and_take_effect(java, broker):
    bootstrap, topic = broker.bootstrap, topic_name("configs")
    create_topic(java, broker, topic, 1, **{"retention.ms": "60000"})
    resource = f"topic:{topic}"

    def configs() -> dict:
        names = ["retention.ms", "cleanup.policy", "max.message.bytes"]
        described = java.call(
            "describe-configs", bootstrap=bootstrap, resources=[resource], names=names
        )
        return {name: (c["value"], c["source"]) for name, c in described[resource].items()}

    before = configs()
    assert before["retention.ms"] == ("60000", "DYNAMIC_TOPIC_CONFIG")
    assert before["cleanup.policy"] == ("delete", "DEFAULT_CONFIG")

    altered = java.call(
        "alter-configs",
        bootstrap=bootstrap,
        alterations={
            resource: [
                ["DELETE", "retention.ms"],
                ["APPEND", "cleanup.policy", "compact"],
                ["SET", "max.message.bytes", "1000"],
            ]
        },
    )
    assert altered == {resource: "ok"}
    after = configs()
    assert after["retention.ms"] == ("604800000", "DEFAULT_CONFIG")  # back to the default
    assert after["cleanup.policy"] == ("delete,compact", "DYNAMIC_TOPIC_CONFIG")
    assert after["max.message.bytes"] == ("1000", "DYNAMIC_TOPIC_CONFIG")
    subtracted = java.call(
        "alter-configs",
        bootstrap=bootstrap,
        alterations={resource: [["SUBTRACT", "cleanup.policy", "delete"]]},
    )
    assert subtracted == {resource: "ok"} and configs()["cleanup.policy"][0] == "compact"

    # The new limit holds: a 5000-byte record no longer fits in a batch the topic accepts.
    sent = java.call("produce", bootstrap=bootstrap, topic=topic, count=1, prefix="x" * 5000)
    assert sent["acked"] == 0 and sent["errors"][0].startswith("RecordTooLargeException")


@pytest.mark.spec("JAVA-10")
def test_client_quotas_are_described_removed_and_throttle_a_producer(java, broker):
    bootstrap, topic = broker.bootstrap, topic_name("quota")
    create_topic(java, broker, topic, 1)
    client = f"slow-{uuid.uuid4().hex[:6]}"
    altered = java.call(
        "alter-quotas",
        bootstrap=bootstrap,
        alterations=[
            [{"client-id": client}, {"producer_byte_rate": 1024}],
            [{"user": "alice"}, {"producer_byte_rate": 1024, "consumer_byte_rate": 2048}],
            [{"user": None}, {"request_percentage": 50}],
        ],
    )
    assert set(altered.values()) == {"ok"}
    alice = java.call("describe-quotas", bootstrap=bootstrap, components=[["user", "alice"]])
    assert alice == {"{user=alice}": {"consumer_byte_rate": 2048.0, "producer_byte_rate": 1024.0}}
    users = java.call("describe-quotas", bootstrap=bootstrap, components=[["user"]], strict=True)
    assert set(users) == {"{user=alice}", "{user=null}"}

    # 40 kB in one batch, one request, at 1 kB/s: far over the quota whatever the length of
    # its window. The answer says how long to wait; nothing is left to send after it.
    sent = java.call(
        "produce",
        bootstrap=bootstrap,
        topic=topic,
        count=20,
        prefix="y" * 2000,
        props={"client.id": client, "batch.size": 65536, "linger.ms": 200},
        metrics=["produce-throttle-time-max"],
    )
    assert sent["acked"] == 20 and sent["metrics"]["produce-throttle-time-max"] > 0

    removed = java.call(
        "alter-quotas",
        bootstrap=bootstrap,
        alterations=[
            [{"user": "alice"}, {"producer_byte_rate": None, "consumer_byte_rate": None}],
        ],
    )
    assert removed == {"{user=alice}": "ok"}
    assert java.call("describe-quotas", bootstrap=bootstrap, components=[["user", "alice"]]) == {}


@pytest.mark.spec("JAVA-11")
def test_groups_are_listed_described_and_their_offsets_altered_and_deleted(java, broker):
    bootstrap, topic, group = broker.bootstrap, topic_name("offsets"), f"g-{uuid.uuid4().hex[:6]}"
    create_topic(java, broker, topic, 1)
    # A consumer of the group commits offset 7 with metadata "seven", then leaves.
    java.call("seek", bootstrap=bootstrap, topic=topic, group=group, records=10, base=0)

    # No member ever joined: the group holds only commits, with no protocol type (as in
    # Kafka's GroupMetadata of a group created by an offset commit); a classic group.
    listed = java.call("list-groups", bootstrap=bootstrap)[group]
    assert listed == {"type": "CLASSIC", "protocol": "", "state": "EMPTY"}
    described = java.call("describe-groups", bootstrap=bootstrap, groups=[group])[group]
    assert described["state"] == "EMPTY" and described["members"] == []
    tp = f"{topic}-0"
    assert java.call("list-group-offsets", bootstrap=bootstrap, group=group) == {tp: [7, "seven"]}

    altered = java.call("alter-group-offsets", bootstrap=bootstrap, group=group, offsets={tp: 3})
    assert altered == {tp: "ok"}
    assert java.call("list-group-offsets", bootstrap=bootstrap, group=group) == {tp: [3, ""]}

    assert java.call("delete-groups", bootstrap=bootstrap, groups=[group]) == {group: "ok"}
    assert group not in java.call("list-groups", bootstrap=bootstrap)
    again = java.call("delete-groups", bootstrap=bootstrap, groups=[group])
    assert again[group].startswith("GroupIdNotFoundException")


@pytest.mark.spec("JAVA-12")
def test_log_dirs_show_each_replica_with_its_size_on_disk(java, broker):
    bootstrap, topic = broker.bootstrap, topic_name("logdirs")
    create_topic(java, broker, topic, 2)
    java.call("produce", bootstrap=bootstrap, topic=topic, count=500)
    node = java.call("describe-cluster", bootstrap=bootstrap)["controller"]
    dirs = java.call("describe-log-dirs", bootstrap=bootstrap, brokers=[node])[str(node)]
    assert list(dirs) == [os.path.realpath(broker.data_dir)] or list(dirs) == [broker.data_dir]
    (described,) = dirs.values()
    assert described["error"] is None and described["total_bytes"] > described["usable_bytes"] > 0
    for p in (0, 1):
        directory = os.path.join(broker.data_dir, f"{topic}-{p}")
        on_disk = sum(
            os.path.getsize(os.path.join(directory, name))
            for name in os.listdir(directory)
            if name.endswith(".log")
        )
        replica = described["replicas"][f"{topic}-{p}"]
        assert replica["size"] == on_disk > 0 and not replica["future"]
