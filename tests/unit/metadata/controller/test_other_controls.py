"""Configs, producer ids, ACLs, SCRAM credentials and client quotas in KRaft."""

from __future__ import annotations

import pytest

from kafka_ref.errors import ErrorCode
from kafka_ref.metadata.controller.config_control import (
    APPEND,
    DELETE,
    SET,
    SUBTRACT,
    AlterableConfig,
    AlterConfigsResource,
)
from kafka_ref.metadata.controller.quota_control import QuotaAlteration, QuotaOp
from kafka_ref.metadata.controller.scram_control import ScramDeletion, ScramUpsertion
from kafka_ref.security.acls import (
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from kafka_ref.security.scram import make_credential, salted_password
from tests.unit.metadata.controller.harness import Harness


def _resource(kind: int, name: str, *ops: tuple[str, int, str | None]):
    return AlterConfigsResource(kind, name, [AlterableConfig(*op) for op in ops])


@pytest.mark.spec("KCTRL-10")
def test_incremental_alter_configs_writes_a_record_per_changed_key():
    h = Harness(brokers=1)
    h.create("t", 1, 1, **{"cleanup.policy": "delete", "retention.ms": "100"})
    result = h.qc.incremental_alter_configs(
        [
            _resource(
                2,
                "t",
                ("retention.ms", DELETE, None),
                ("cleanup.policy", APPEND, "compact"),
                ("segment.ms", SET, "60000"),
            ),
            _resource(4, "", ("min.insync.replicas", SET, "2")),
        ]
    )
    assert [(e.message.name, e.message.value) for e in result.records] == [
        ("cleanup.policy", "delete,compact"),
        ("retention.ms", None),
        ("segment.ms", "60000"),
        ("min.insync.replicas", "2"),
    ]
    h.commit(result)
    assert h.image.configs[(2, "t")] == {"cleanup.policy": "delete,compact", "segment.ms": "60000"}
    assert h.image.configs[(4, "")] == {"min.insync.replicas": "2"}
    h.commit(
        h.qc.incremental_alter_configs([_resource(2, "t", ("cleanup.policy", SUBTRACT, "delete"))])
    )
    assert h.image.configs[(2, "t")]["cleanup.policy"] == "compact"


@pytest.mark.spec("KCTRL-10")
def test_incremental_alter_configs_errors_and_validate_only():
    h = Harness(brokers=1)
    h.create("t", 1, 1)
    result = h.qc.incremental_alter_configs(
        [
            _resource(2, "nope", ("retention.ms", SET, "1")),
            _resource(2, "t", ("retention.ms", SET, "soon")),
            _resource(2, "t", ("no.such.config", SET, "1")),
            _resource(4, "abc", ("x", SET, "1")),
            _resource(2, "t", ("retention.ms", SET, "7")),
        ],
        validate_only=True,
    )
    assert [e.code for _, e in result.response] == [
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.INVALID_CONFIG,
        ErrorCode.INVALID_CONFIG,
        ErrorCode.INVALID_REQUEST,
        ErrorCode.NO_ERROR,
    ]
    assert result.records == ()


@pytest.mark.spec("KCTRL-11")
def test_producer_ids_come_in_blocks_of_1000_never_twice():
    h = Harness(brokers=2)
    first = h.commit(h.qc.allocate_producer_ids(0, h.epochs[0]))
    second = h.commit(h.qc.allocate_producer_ids(1, h.epochs[1]))
    assert (first.first_producer_id, first.size) == (0, 1000)
    assert (second.first_producer_id, second.size) == (1000, 1000)
    assert h.image.next_producer_id == 2000
    stale = h.qc.allocate_producer_ids(0, h.epochs[0] + 1)
    assert stale.response.error.code == ErrorCode.STALE_BROKER_EPOCH and stale.records == ()


def _acl(
    name: str, principal: str = "User:alice", op=AclOperation.READ, pattern=PatternType.LITERAL
):
    return AclBinding(
        ResourcePattern(ResourceType.TOPIC, name, pattern),
        AccessControlEntry(principal, "*", op, AclPermissionType.ALLOW),
    )


@pytest.mark.spec("KCTRL-12")
def test_create_and_delete_acls():
    h = Harness(brokers=1)
    bad = AclBinding(
        ResourcePattern(ResourceType.ANY, "t"),
        AccessControlEntry("User:alice", "*", AclOperation.READ, AclPermissionType.ALLOW),
    )
    result = h.qc.create_acls([_acl("t"), _acl("t"), bad, _acl("u", op=AclOperation.WRITE)])
    assert [e.code for e in result.response] == [
        ErrorCode.NO_ERROR,
        ErrorCode.NO_ERROR,
        ErrorCode.INVALID_REQUEST,
        ErrorCode.NO_ERROR,
    ]
    assert len(result.records) == 2  # the same ACL twice is one ACL
    h.commit(result)
    assert len(h.image.acls) == 2
    assert h.qc.create_acls([_acl("t")]).records == ()  # it exists already
    deleted = h.qc.delete_acls(
        [AclBindingFilter(name="t"), AclBindingFilter(principal="User:alice")]
    )
    assert [len(matched) for matched in deleted.response] == [1, 2]
    assert len(deleted.records) == 2  # each ACL removed once
    h.commit(deleted)
    assert h.image.acls == {}


@pytest.mark.spec("KCTRL-13")
def test_alter_user_scram_credentials():
    h = Harness(brokers=1)
    salt = b"salt" * 8
    salted = salted_password("SCRAM-SHA-256", "secret", salt, 4096)
    upsert = ScramUpsertion("alice", 1, 4096, salt, salted)
    result = h.qc.alter_user_scram_credentials([], [upsert])
    h.commit(result)
    stored = h.image.scram[(1, "alice")]
    expected = make_credential("SCRAM-SHA-256", "secret", 4096, salt)
    assert (stored.stored_key, stored.server_key) == (expected.stored_key, expected.server_key)
    errors = h.qc.alter_user_scram_credentials(
        [ScramDeletion("bob", 1), ScramDeletion("alice", 1)],
        [
            ScramUpsertion("carol", 3, 4096, salt, salted),
            ScramUpsertion("dave", 1, 10, salt, salted),
            ScramUpsertion("alice", 1, 4096, salt, salted),
        ],
    )
    assert [e.code for _, e in errors.response] == [
        ErrorCode.RESOURCE_NOT_FOUND,
        ErrorCode.DUPLICATE_RESOURCE,
        ErrorCode.UNSUPPORTED_SASL_MECHANISM,
        ErrorCode.UNACCEPTABLE_CREDENTIAL,
        ErrorCode.DUPLICATE_RESOURCE,
    ]
    assert errors.records == ()
    h.commit(h.qc.alter_user_scram_credentials([ScramDeletion("alice", 1)], []))
    assert h.image.scram == {}


@pytest.mark.spec("KCTRL-14")
def test_alter_client_quotas():
    h = Harness(brokers=1)
    alice = (("user", "alice"),)
    default_client = (("client-id", None),)
    result = h.qc.alter_client_quotas(
        [
            QuotaAlteration(alice, [QuotaOp("producer_byte_rate", 1024.0)]),
            QuotaAlteration(default_client, [QuotaOp("request_percentage", 50.0)]),
            QuotaAlteration((("group", "g"),), [QuotaOp("producer_byte_rate", 1.0)]),
            QuotaAlteration(alice, [QuotaOp("producer_byte_rate", -1.0)]),
        ]
    )
    assert [e.code for e in result.response] == [
        ErrorCode.NO_ERROR,
        ErrorCode.NO_ERROR,
        ErrorCode.INVALID_REQUEST,
        ErrorCode.INVALID_REQUEST,
    ]
    h.commit(result)
    assert h.image.client_quotas == {
        alice: {"producer_byte_rate": 1024.0},
        default_client: {"request_percentage": 50.0},
    }
    h.commit(
        h.qc.alter_client_quotas(
            [QuotaAlteration(alice, [QuotaOp("producer_byte_rate", remove=True)])]
        )
    )
    assert alice not in h.image.client_quotas
