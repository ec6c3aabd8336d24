"""Group configs on a running broker (config resource GROUP, KIP-848, KIP-932): confluent-kafka's
AdminClient describes and alters them (CONFIG-12, CONFIG-13), a restarted broker keeps them
and DeleteGroups leaves them (CONFIG-13), the share-partitions and both group coordinators
use them (CONFIG-14), and `kafka-ref configs --entity-type groups` (CONFIG-15)."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ResourceType,
)

from kafka_ref.errors import ErrorCode
from kafka_ref.protocol.messages import (
    ApiKey,
    ConsumerGroupHeartbeatRequest,
    DeleteGroupsRequest,
    DescribeConfigsRequest,
    FindCoordinatorRequest,
    ShareFetchRequest,
    ShareGroupHeartbeatRequest,
)
from tests.unit.server.conftest import Wire, batch
from tests.unit.server.test_share_fetch import acquired

pytestmark = pytest.mark.timeout(90)

GROUP, TOPIC = "queue", "work"
LOCK_MS = 20000  # the broker's group.share.record.lock.duration.ms in these tests
GROUP_CONFIG, STATIC, DEFAULT = 8, 4, 5  # ConfigSource


def admin(broker) -> AdminClient:
    return AdminClient({"bootstrap.servers": f"127.0.0.1:{broker.port}"})


def alter(broker, group: str, op=AlterConfigOpType.SET, **configs: str) -> None:
    entries = [
        ConfigEntry(k.replace("_", "."), v, incremental_operation=op) for k, v in configs.items()
    ]
    resource = ConfigResource(ResourceType.GROUP, group, incremental_configs=entries)
    client = admin(broker)  # alive until the answer comes
    client.incremental_alter_configs([resource])[resource].result(timeout=20)


def describe(broker, group: str) -> dict:
    resource = ConfigResource(ResourceType.GROUP, group)
    client = admin(broker)
    found = client.describe_configs([resource])[resource].result(timeout=20)
    return {name: (entry.value, entry.source) for name, entry in found.items()}


def refusal(broker, group: str, name: str, value: str) -> tuple[int, str]:
    try:
        alter(broker, group, **{name: value})
    except KafkaException as err:
        return err.args[0].code(), err.args[0].str()
    raise AssertionError(f"{name}={value} was accepted")


@pytest.fixture
def broker(make_broker, tmp_path):
    return make_broker(tmp_path / "data", {"group.share.record.lock.duration.ms": LOCK_MS})


@pytest.mark.spec("CONFIG-12", "CONFIG-13")
def test_describe_and_alter_a_groups_configs_with_the_admin_client(broker):
    before = describe(broker, "g")
    assert before == {
        "consumer.session.timeout.ms": ("45000", DEFAULT),
        "consumer.heartbeat.interval.ms": ("5000", DEFAULT),
        "share.session.timeout.ms": ("45000", DEFAULT),
        "share.heartbeat.interval.ms": ("5000", DEFAULT),
        "share.record.lock.duration.ms": (str(LOCK_MS), STATIC),  # server.properties
        "share.delivery.count.limit": ("5", DEFAULT),
        "share.partition.max.record.locks": ("2000", DEFAULT),
        "share.auto.offset.reset": ("latest", DEFAULT),
        "share.isolation.level": ("read_uncommitted", DEFAULT),
    }
    alter(broker, "g", share_auto_offset_reset="earliest", share_record_lock_duration_ms="15000")
    after = describe(broker, "g")
    assert after["share.auto.offset.reset"] == ("earliest", GROUP_CONFIG)
    assert after["share.record.lock.duration.ms"] == ("15000", GROUP_CONFIG)
    assert describe(broker, "other") == before  # one group's configs only
    # the bad values, refused in Kafka's words; nothing changes
    INVALID_CONFIG = ErrorCode.INVALID_CONFIG
    assert refusal(broker, "g", "nope", "1") == (INVALID_CONFIG, "Unknown group config name: nope")
    assert refusal(broker, "g", "share.record.lock.duration.ms", "90000") == (
        INVALID_CONFIG,
        "share.record.lock.duration.ms must be in the range 15000 to 60000 inclusive.",
    )
    assert refusal(broker, "g", "share.isolation.level", "x") == (
        INVALID_CONFIG,
        "Invalid value x for configuration share.isolation.level: "
        "String must be one of: read_committed, read_uncommitted",
    )
    assert refusal(broker, "g", "consumer.heartbeat.interval.ms", "abc")[0] == INVALID_CONFIG
    assert describe(broker, "g") == after
    alter(broker, "g", op=AlterConfigOpType.DELETE, share_record_lock_duration_ms="")
    assert describe(broker, "g")["share.record.lock.duration.ms"] == (str(LOCK_MS), STATIC)

    with Wire(broker.port) as wire:  # synonyms, and an empty name
        body = DescribeConfigsRequest(
            resources=[
                DescribeConfigsRequest.DescribeConfigsResource(
                    resource_type=32, resource_name=name, configuration_keys=None
                )
                for name in ("g", "")
            ],
            include_synonyms=True,
        )
        g, empty = wire.request(ApiKey.DESCRIBE_CONFIGS, 4, body).results
        reset = next(c for c in g.configs if c.name == "share.auto.offset.reset")
        assert [(s.name, s.value, s.source) for s in reset.synonyms] == [
            ("share.auto.offset.reset", "earliest", GROUP_CONFIG),
            ("share.auto.offset.reset", "latest", DEFAULT),
        ]
        assert (empty.error_code, empty.error_message) == (
            ErrorCode.INVALID_REQUEST,
            "Group name must not be empty",
        )


@pytest.mark.spec("CONFIG-13")
def test_a_restarted_broker_keeps_them_and_delete_groups_leaves_them(make_broker, tmp_path):
    data = tmp_path / "data"
    first = make_broker(data)
    alter(first, "kept", share_isolation_level="read_committed")
    alter(first, "again", consumer_heartbeat_interval_ms="7000")
    first.stop()
    broker = make_broker(data)
    assert describe(broker, "kept")["share.isolation.level"] == ("read_committed", GROUP_CONFIG)
    assert describe(broker, "again")["consumer.heartbeat.interval.ms"] == ("7000", GROUP_CONFIG)
    with Wire(broker.port) as wire:
        wire.create_topic(TOPIC)
        _coordinator(wire, "again")
        joined = _consumer_heartbeat(wire, "again", "", 0)
        assert joined.heartbeat_interval_ms == 7000
        leave = _consumer_heartbeat(wire, "again", joined.member_id, -1)
        assert leave.error_code == ErrorCode.NO_ERROR
        body = DeleteGroupsRequest(groups_names=["again"])
        assert wire.request(ApiKey.DELETE_GROUPS, 2, body).results[0].error_code == 0
        # the group is gone, its configs stay (as in Kafka 4.4), for the group made again
        assert describe(broker, "again")["consumer.heartbeat.interval.ms"][1] == GROUP_CONFIG
        assert _consumer_heartbeat(wire, "again", "", 0).heartbeat_interval_ms == 7000


def _coordinator(wire: Wire, group: str) -> None:
    for _ in range(100):
        body = FindCoordinatorRequest(key_type=0, coordinator_keys=[group])
        if wire.request(ApiKey.FIND_COORDINATOR, 4, body).coordinators[0].error_code == 0:
            return
        time.sleep(0.1)
    raise AssertionError("no coordinator")


def _consumer_heartbeat(wire: Wire, group: str, member: str, epoch: int):
    body = ConsumerGroupHeartbeatRequest(
        group_id=group,
        member_id=member or "m-" + group,
        member_epoch=epoch,
        rebalance_timeout_ms=30_000,
        subscribed_topic_names=[TOPIC] if epoch == 0 else None,
        topic_partitions=[] if epoch == 0 else None,
    )
    return wire.request(ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, body)


def _share_heartbeat(wire: Wire, group: str):
    body = ShareGroupHeartbeatRequest(
        group_id=group, member_id="m1", member_epoch=0, subscribed_topic_names=[TOPIC]
    )
    return wire.request(ApiKey.SHARE_GROUP_HEARTBEAT, 1, body)


@pytest.mark.spec("CONFIG-14")
def test_the_coordinators_give_the_groups_heartbeat_interval(broker):
    alter(broker, "c", consumer_heartbeat_interval_ms="7000")
    alter(broker, GROUP, share_heartbeat_interval_ms="6000")
    with Wire(broker.port) as wire:
        wire.create_topic(TOPIC)
        for group in ("c", "plain", GROUP):
            _coordinator(wire, group)
        assert _consumer_heartbeat(wire, "c", "", 0).heartbeat_interval_ms == 7000
        assert _consumer_heartbeat(wire, "plain", "", 0).heartbeat_interval_ms == 5000
        assert _share_heartbeat(wire, GROUP).heartbeat_interval_ms == 6000
        assert _share_heartbeat(wire, "plain-share").heartbeat_interval_ms == 5000
    coordinator = broker.broker.groups.coordinator
    assert coordinator.consumer.session_timeout_ms("c") == 45000
    alter(broker, "c", consumer_session_timeout_ms="50000")
    assert coordinator.consumer.session_timeout_ms("c") == 50000
    alter(broker, GROUP, share_session_timeout_ms="55000")
    assert coordinator.share.session_timeout_ms(GROUP) == 55000


def _assigned(wire: Wire, group: str, member: str) -> None:
    """Heartbeat `member` into `group` until it is assigned partition 0 (its share-partition
    initialized by the share coordinator)."""
    epoch = 0
    for _ in range(100):
        body = ShareGroupHeartbeatRequest(
            group_id=group,
            member_id=member,
            member_epoch=epoch,
            subscribed_topic_names=[TOPIC] if epoch == 0 else None,
        )
        answer = wire.request(ApiKey.SHARE_GROUP_HEARTBEAT, 1, body)
        assert answer.error_code == ErrorCode.NO_ERROR, answer
        epoch = answer.member_epoch
        if answer.assignment is not None and answer.assignment.topic_partitions:
            return
        time.sleep(0.05)
    raise AssertionError(f"{member} of {group} never assigned")


def _share_fetch(wire: Wire, group: str, member: str, topic_id) -> tuple[list, int]:
    """A new share session's first ShareFetch: what it acquired, and the lock's duration."""
    body = ShareFetchRequest(
        group_id=group,
        member_id=member,
        share_session_epoch=0,
        max_wait_ms=0,
        min_bytes=1,
        max_records=10,
        batch_size=10,
        topics=[
            ShareFetchRequest.FetchTopic(
                topic_id=topic_id,
                partitions=[
                    ShareFetchRequest.FetchPartition(partition_index=0, acknowledgement_batches=[])
                ],
            )
        ],
        forgotten_topics_data=[],
    )
    answer = wire.request(ApiKey.SHARE_FETCH, 1, body)
    assert answer.error_code == ErrorCode.NO_ERROR, answer
    return acquired(answer), answer.acquisition_lock_timeout_ms


@pytest.mark.spec("CONFIG-14")
def test_share_auto_offset_reset_earliest_makes_a_new_share_group_read_from_offset_0(broker):
    alter(broker, "from-start", share_auto_offset_reset="earliest")
    alter(broker, "from-start", share_record_lock_duration_ms="16000")
    with Wire(broker.port) as wire:
        wire.create_topic(TOPIC)
        wire.produce(TOPIC, 0, batch(3))  # offsets 0-2, before either group starts
        topic_id = wire.metadata([TOPIC], version=12, auto=False).topics[0].topic_id
        for group in ("from-end", "from-start"):
            _coordinator(wire, group)
            _assigned(wire, group, "m-" + group)
        # without the config: the latest offset, nothing to read; with it, offset 0
        assert _share_fetch(wire, "from-end", "m-from-end", topic_id) == ([], LOCK_MS)
        assert _share_fetch(wire, "from-start", "m-from-start", topic_id) == ([(0, 2, 1)], 16000)


def _release_and_fetch(wire: Wire, group: str, member: str, topic_id, epoch: int) -> list:
    """The next ShareFetch of `member`'s session: it releases offset 0 and fetches again."""
    body = ShareFetchRequest(
        group_id=group,
        member_id=member,
        share_session_epoch=epoch,
        max_wait_ms=0,
        min_bytes=1,
        max_records=10,
        batch_size=10,
        topics=[
            ShareFetchRequest.FetchTopic(
                topic_id=topic_id,
                partitions=[
                    ShareFetchRequest.FetchPartition(
                        partition_index=0,
                        acknowledgement_batches=[
                            ShareFetchRequest.AcknowledgementBatch(
                                first_offset=0,
                                last_offset=0,
                                acknowledge_types=[2],  # RELEASE
                            )
                        ],
                    )
                ],
            )
        ],
        forgotten_topics_data=[],
    )
    answer = wire.request(ApiKey.SHARE_FETCH, 1, body)
    assert answer.error_code == ErrorCode.NO_ERROR, answer
    return acquired(answer)


@pytest.mark.spec("CONFIG-14")
def test_share_delivery_count_limit_of_the_group_archives_sooner(broker):
    """The broker's limit is Kafka's 5; the group "impatient" sets 2. A record released at
    each delivery is delivered twice to it, then archived; the other group gets it a third
    time."""
    for group in ("impatient", "patient"):
        alter(broker, group, share_auto_offset_reset="earliest")
    alter(broker, "impatient", share_delivery_count_limit="2")
    with Wire(broker.port) as wire:
        wire.create_topic(TOPIC)
        wire.produce(TOPIC, 0, batch(1))  # offset 0
        topic_id = wire.metadata([TOPIC], version=12, auto=False).topics[0].topic_id
        deliveries = {}
        for group in ("impatient", "patient"):
            _coordinator(wire, group)
            _assigned(wire, group, "m-" + group)
            got = [_share_fetch(wire, group, "m-" + group, topic_id)[0]]
            got += [_release_and_fetch(wire, group, "m-" + group, topic_id, e) for e in (1, 2)]
            deliveries[group] = got
    assert deliveries == {
        "impatient": [[(0, 0, 1)], [(0, 0, 2)], []],
        "patient": [[(0, 0, 1)], [(0, 0, 2)], [(0, 0, 3)]],
    }


@pytest.mark.spec("CONFIG-15")
def test_kafka_ref_configs_entity_type_groups(broker, capsys):
    from kafka_ref.cli import main

    server = f"127.0.0.1:{broker.port}"
    base = ["configs", "--bootstrap-server", server, "--entity-type", "groups"]
    alter_args = [*base, "--entity-name", "q", "--alter"]
    assert main([*alter_args, "--add-config", "share.auto.offset.reset=earliest"]) == 0
    assert capsys.readouterr().out == "Completed updating config for group q.\n"
    assert main([*base, "--entity-name", "q", "--describe"]) == 0
    assert capsys.readouterr().out == (
        "Dynamic configs for group q are:\n"
        "  share.auto.offset.reset=earliest sensitive=false "
        "synonyms={GROUP_CONFIG:share.auto.offset.reset=earliest}\n"
    )
    assert main([*alter_args, "--add-config", "share.isolation.level=x"]) == 1
    assert "Invalid value x" in capsys.readouterr().err
    assert main([*base, "--describe"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "--entity-name" in err
