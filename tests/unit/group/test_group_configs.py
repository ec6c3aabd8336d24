"""The group configs' keys and their validation (CONFIG-11), the accessor the coordinators and
the share-partitions read (CONFIG-14), and the KRaft controller's ConfigRecords of resource
type GROUP (CONFIG-13)."""

from __future__ import annotations

import pytest

from kafka_ref.errors import ErrorCode, InvalidConfigError
from kafka_ref.group.group_configs import (
    BROKER_KEYS,
    GROUP_CONFIGS,
    GroupConfigs,
    validate_group_configs,
)
from kafka_ref.metadata.controller.config_control import (
    DELETE,
    SET,
    AlterableConfig,
    AlterConfigsResource,
)
from kafka_ref.metadata.controller.controller_config import ControllerConfig
from kafka_ref.server.broker_configs import BROKER_CONFIGS
from kafka_ref.server.kafka_config import KafkaConfig
from tests.unit.metadata.controller.harness import Harness

BROKER = KafkaConfig.from_props({})


def problem(configs: dict[str, str], broker=BROKER) -> str | None:
    try:
        validate_group_configs(configs, broker.__getitem__)
    except InvalidConfigError as err:
        assert err.code == ErrorCode.INVALID_CONFIG
        return str(err.args[0])
    return None


@pytest.mark.spec("CONFIG-11")
def test_the_keys_their_broker_synonyms_and_kafkas_bounds():
    assert sorted(GROUP_CONFIGS) == [
        "consumer.heartbeat.interval.ms",
        "consumer.session.timeout.ms",
        "share.auto.offset.reset",
        "share.delivery.count.limit",
        "share.heartbeat.interval.ms",
        "share.isolation.level",
        "share.partition.max.record.locks",
        "share.record.lock.duration.ms",
        "share.session.timeout.ms",
    ]
    assert all(key in BROKER_CONFIGS for key in BROKER_KEYS)  # every bound and synonym exists
    assert BROKER["group.share.min.record.lock.duration.ms"] == 15000
    assert BROKER["group.share.max.record.lock.duration.ms"] == 60000
    assert BROKER["group.consumer.min.session.timeout.ms"] == 45000
    assert BROKER["group.consumer.max.heartbeat.interval.ms"] == 15000
    assert (
        BROKER["group.share.min.delivery.count.limit"],
        BROKER["group.share.max.delivery.count.limit"],
    ) == (2, 10)
    assert (
        BROKER["group.share.min.partition.max.record.locks"],
        BROKER["group.share.max.partition.max.record.locks"],
    ) == (100, 4000)


@pytest.mark.spec("CONFIG-11")
def test_validation_in_kafkas_order_and_words():
    assert (
        problem({"share.auto.offset.reset": "earliest", "share.isolation.level": "read_committed"})
        is None
    )
    assert problem({"share.auto.offset.reset": "by_duration:PT1H"}) is None
    assert problem({"nope": "1", "share.record.lock.duration.ms": "1"}) == (
        "Unknown group config name: nope"
    )
    assert problem({"share.record.lock.duration.ms": "999"}) == (
        "Invalid value 999 for configuration share.record.lock.duration.ms: "
        "Value must be at least 1000"
    )
    assert problem({"consumer.session.timeout.ms": "soon"}) == (
        "Invalid value soon for configuration consumer.session.timeout.ms: Not a number of type INT"
    )
    assert problem({"share.record.lock.duration.ms": "60001"}) == (
        "share.record.lock.duration.ms must be in the range 15000 to 60000 inclusive."
    )
    assert problem({"consumer.heartbeat.interval.ms": "4999"}) == (
        "consumer.heartbeat.interval.ms must be in the range 5000 to 15000 inclusive."
    )
    assert problem({"share.delivery.count.limit": "1"}) == (
        "Invalid value 1 for configuration share.delivery.count.limit: Value must be at least 2"
    )
    assert problem({"share.delivery.count.limit": "11"}) == (
        "share.delivery.count.limit must be in the range 2 to 10 inclusive."
    )
    assert problem({"share.delivery.count.limit": "10"}) is None
    assert problem({"share.partition.max.record.locks": "99"}) == (
        "Invalid value 99 for configuration share.partition.max.record.locks: "
        "Value must be at least 100"
    )
    assert problem({"share.partition.max.record.locks": "5000"}) == (
        "share.partition.max.record.locks must be in the range 100 to 4000 inclusive."
    )
    assert "by_duration:<PnDTnHnMn.nS>" in problem({"share.auto.offset.reset": "by_duration:-PT1H"})
    assert "by_duration:<PnDTnHnMn.nS>" in problem({"share.auto.offset.reset": "soon"})
    assert problem({"share.isolation.level": "READ_COMMITTED"}) == (
        "Invalid value READ_COMMITTED for configuration share.isolation.level: "
        "String must be one of: read_committed, read_uncommitted"
    )
    # the session must exceed the heartbeat: the group's, else the broker's
    narrow = KafkaConfig.from_props(
        {
            "group.share.min.session.timeout.ms": "1000",
            "group.share.max.heartbeat.interval.ms": "20000",
        }
    )
    assert problem({"share.session.timeout.ms": "1000"}, narrow) == (
        "share.session.timeout.ms must be greater than share.heartbeat.interval.ms"
    )
    assert problem(
        {"share.heartbeat.interval.ms": "15000", "share.session.timeout.ms": "15000"}, narrow
    ) == ("share.session.timeout.ms must be greater than share.heartbeat.interval.ms")
    assert problem({"share.session.timeout.ms": "45000"}, narrow) is None


@pytest.mark.spec("CONFIG-14")
def test_for_group_is_the_groups_value_else_the_brokers():
    broker = KafkaConfig.from_props({"group.share.record.lock.duration.ms": "20000"})
    stored = {"g": {"share.auto.offset.reset": "earliest", "consumer.session.timeout.ms": "50000"}}
    configs = GroupConfigs(lambda group: stored.get(group, {}), broker.__getitem__)
    g = configs.for_group("g")
    assert (g["consumer.session.timeout.ms"], g["share.record.lock.duration.ms"]) == (50000, 20000)
    share = configs.share_config("g")
    assert (share.auto_offset_reset, share.read_committed, share.record_lock_duration_ms) == (
        "earliest",
        False,
        20000,
    )
    assert configs.share_config("other").auto_offset_reset == "latest"
    stored["g"] |= {"share.delivery.count.limit": "3", "share.partition.max.record.locks": "150"}
    share = configs.share_config("g")
    assert (share.delivery_count_limit, share.max_record_locks) == (3, 150)
    other = configs.share_config("other")  # the broker's, Kafka's defaults here
    assert (other.delivery_count_limit, other.max_record_locks) == (5, 2000)


@pytest.mark.spec("CONFIG-13")
def test_the_kraft_controller_checks_a_group_with_its_bounds_and_writes_config_records():
    bounds = dict(ControllerConfig().group_broker_values)
    bounds["group.share.min.record.lock.duration.ms"] = 1000
    h = Harness(brokers=1, config=ControllerConfig(group_broker_values=bounds))

    def group(name, *ops):
        return AlterConfigsResource(32, name, [AlterableConfig(*op) for op in ops])

    result = h.qc.incremental_alter_configs(
        [
            group("g", ("share.record.lock.duration.ms", SET, "2000")),
            group("bad", ("share.record.lock.duration.ms", SET, "999999")),
            group("", ("share.isolation.level", SET, "read_committed")),
            group("x", ("no.such", SET, "1")),
        ]
    )
    assert [(e.code, e.message) for _, e in result.response] == [
        (ErrorCode.NO_ERROR, None),
        (
            ErrorCode.INVALID_CONFIG,
            "share.record.lock.duration.ms must be in the range 1000 to 60000 inclusive.",
        ),
        (ErrorCode.INVALID_REQUEST, "Group name must not be empty"),
        (ErrorCode.INVALID_CONFIG, "Unknown group config name: no.such"),
    ]
    assert [(e.message.resource_type, e.message.name) for e in result.records] == [
        (32, "share.record.lock.duration.ms")
    ]
    h.commit(result)
    assert h.image.configs[(32, "g")] == {"share.record.lock.duration.ms": "2000"}
    h.commit(
        h.qc.incremental_alter_configs(
            [group("g", ("share.record.lock.duration.ms", DELETE, None))]
        )
    )
    assert (32, "g") not in h.image.configs
