"""Quota entities, their paths and precedence (QUOTA-1, QUOTA-2, QUOTA-3)."""

from __future__ import annotations

import pytest

from kafka_ref.quota.entity import (
    DEFAULT,
    InvalidQuotaError,
    QuotaEntity,
    governing,
    quota_levels,
    validate_value,
)
from kafka_ref.quota.manager import ClientQuotaManager


@pytest.mark.spec("QUOTA-1")
@pytest.mark.parametrize(
    ("entity", "path"),
    [
        (QuotaEntity("alice", None), "users/alice"),
        (QuotaEntity(None, "app"), "clients/app"),
        (QuotaEntity("alice", "app"), "users/alice/clients/app"),
        (QuotaEntity(DEFAULT, DEFAULT), "users/<default>/clients/<default>"),
        (QuotaEntity("CN=a b*~", None), "users/CN%3Da%20b%2A%7E"),
    ],
)
def test_entities_have_kafkas_znode_paths(entity, path):
    assert entity.path == path
    assert QuotaEntity.from_path(path) == entity


@pytest.mark.spec("QUOTA-1")
def test_protocol_components_use_null_for_the_default():
    entity = QuotaEntity(DEFAULT, "app")
    assert entity.components() == [("user", None), ("client-id", "app")]
    assert QuotaEntity.from_components(entity.components()) == entity
    for bad in ([], [("ip", "1.2.3.4")], [("user", "a"), ("user", "b")], [("user", "")]):
        with pytest.raises(InvalidQuotaError):
            QuotaEntity.from_components(bad)


@pytest.mark.spec("QUOTA-1")
def test_quota_values_are_positive_and_byte_rates_whole():
    assert validate_value("producer_byte_rate", 1048576.0) == 1048576.0
    assert validate_value("request_percentage", 12.5) == 12.5
    for key, value in [
        ("producer_byte_rate", 0.0),
        ("consumer_byte_rate", 1.5),
        ("request_percentage", -1.0),
        ("request_percentage", float("nan")),
        ("controller_mutation_rate", 1.0),
        ("retention.ms", 1.0),
    ]:
        with pytest.raises(InvalidQuotaError):
            validate_value(key, value)


@pytest.mark.spec("QUOTA-2")
def test_the_most_specific_of_the_eight_levels_wins():
    levels = quota_levels("alice", "app")
    assert [e.path for e in levels] == [
        "users/alice/clients/app",
        "users/alice/clients/<default>",
        "users/alice",
        "users/<default>/clients/app",
        "users/<default>/clients/<default>",
        "users/<default>",
        "clients/app",
        "clients/<default>",
    ]
    overrides = {entity: float(rank) for rank, entity in enumerate(levels)}
    for rank, entity in enumerate(levels):  # remove the levels above one by one
        assert governing(overrides, "alice", "app") == (entity, float(rank))
        del overrides[entity]
    assert governing(overrides, "alice", "app") is None
    others = {QuotaEntity("bob", None): 1.0, QuotaEntity(None, "other"): 2.0}
    assert governing(others, "alice", "app") is None


@pytest.mark.spec("QUOTA-3")
def test_a_user_quota_is_shared_by_the_users_client_ids():
    manager = ClientQuotaManager("Produce", "producer_byte_rate", 11, 1)
    manager.overrides = {QuotaEntity("alice", None): 1000.0}
    assert manager.record_and_get_throttle_ms("alice", "one", 10_000, 0) == 0
    assert manager.record_and_get_throttle_ms("alice", "two", 1000, 0) > 0  # the same rate
    assert manager.record_and_get_throttle_ms("bob", "one", 10_000, 0) == 0  # no quota


@pytest.mark.spec("QUOTA-3")
def test_a_client_quota_is_shared_by_its_users_and_a_user_client_quota_is_not():
    manager = ClientQuotaManager("Produce", "producer_byte_rate", 11, 1)
    manager.overrides = {QuotaEntity(None, "app"): 1000.0}
    assert manager.record_and_get_throttle_ms("alice", "app", 10_000, 0) == 0
    assert manager.record_and_get_throttle_ms("bob", "app", 1000, 0) > 0
    manager = ClientQuotaManager("Produce", "producer_byte_rate", 11, 1)
    manager.overrides = {QuotaEntity(DEFAULT, DEFAULT): 1000.0}
    assert manager.record_and_get_throttle_ms("alice", "app", 10_000, 0) == 0
    assert manager.record_and_get_throttle_ms("bob", "app", 10_000, 0) == 0  # bob's own
    assert manager.record_and_get_throttle_ms("alice", "app", 1000, 0) > 0
