"""The decision rule (security/acls.py) against a reference model written separately from
Kafka's description, over random ACL sets; patterns, filters and Kafka's ZooKeeper JSON."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_ref.security.acls import (
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
    acls_from_json,
    acls_to_json,
    authorize,
    zk_path,
)
from tests.conftest import campaign

Op, Allow, Deny = AclOperation, AclPermissionType.ALLOW, AclPermissionType.DENY
TYPES = [ResourceType.TOPIC, ResourceType.GROUP]
NAMES = ["a", "ab", "abc", "b"]
PRINCIPALS = ["User:alice", "User:bob"]
HOSTS = ["10.0.0.1", "10.0.0.2"]
OPERATIONS = [o for o in AclOperation if o >= Op.ALL]


def reference(acls, principal, host, operation, rtype, name, supers=(), open_if_none=False):
    """Kafka's rules, as its documentation states them, with nothing shared with the code."""
    if principal in supers:
        return True

    def covers(b):
        if b.pattern.resource_type != rtype:
            return False
        if b.pattern.pattern_type == PatternType.LITERAL:
            return b.pattern.name == "*" or b.pattern.name == name
        return name[: len(b.pattern.name)] == b.pattern.name

    def mine(b):
        who = b.entry.principal == principal or b.entry.principal == "User:*"
        where = b.entry.host == host or b.entry.host == "*"
        return who and where

    on_resource = [b for b in acls if covers(b)]
    if len(on_resource) == 0:
        return open_if_none
    for b in on_resource:
        denies = b.entry.operation == operation or b.entry.operation == Op.ALL
        if mine(b) and b.entry.permission == Deny and denies:
            return False
    implied = {
        Op.DESCRIBE: [Op.READ, Op.WRITE, Op.DELETE, Op.ALTER],
        Op.DESCRIBE_CONFIGS: [Op.ALTER_CONFIGS],
    }
    for b in on_resource:
        if mine(b) and b.entry.permission == Allow:
            op = b.entry.operation
            if op == Op.ALL or op == operation or op in implied.get(operation, []):
                return True
    return False


bindings = st.builds(
    lambda t, n, p, who, h, o, perm: AclBinding(
        ResourcePattern(t, n, p), AccessControlEntry(who, h, o, perm)
    ),
    st.sampled_from(TYPES),
    st.sampled_from([*NAMES, "*"]),
    st.sampled_from([PatternType.LITERAL, PatternType.PREFIXED]),
    st.sampled_from([*PRINCIPALS, "User:*"]),
    st.sampled_from([*HOSTS, "*"]),
    st.sampled_from(OPERATIONS),
    st.sampled_from([Allow, Deny]),
)


@pytest.mark.spec("SEC-13", "SEC-15")
@settings(max_examples=campaign(400, 20000), deadline=None)
@given(
    acls=st.lists(bindings, max_size=8),
    principal=st.sampled_from(PRINCIPALS),
    host=st.sampled_from(HOSTS),
    operation=st.sampled_from([o for o in OPERATIONS if o != Op.ALL]),
    rtype=st.sampled_from(TYPES),
    name=st.sampled_from(NAMES),
    open_if_none=st.booleans(),
)
def test_authorize_agrees_with_a_reference_model(
    acls, principal, host, operation, rtype, name, open_if_none
):
    expected = reference(acls, principal, host, operation, rtype, name, (), open_if_none)
    got = authorize(acls, principal, host, operation, rtype, name, allow_if_no_acls=open_if_none)
    assert got == expected


def _acl(name, pattern, op, perm=Allow, who="User:alice", host="*"):
    return AclBinding(
        ResourcePattern(ResourceType.TOPIC, name, pattern), AccessControlEntry(who, host, op, perm)
    )


@pytest.mark.spec("SEC-14")
def test_literal_prefixed_and_wildcard_patterns():
    def may(acls, name):
        return authorize(acls, "User:alice", "1.2.3.4", Op.READ, ResourceType.TOPIC, name)

    literal = [_acl("logs", PatternType.LITERAL, Op.READ)]
    assert may(literal, "logs") and not may(literal, "logs-eu")
    prefixed = [_acl("logs", PatternType.PREFIXED, Op.READ)]
    assert may(prefixed, "logs") and may(prefixed, "logs-eu") and not may(prefixed, "log")
    assert may([_acl("*", PatternType.LITERAL, Op.READ)], "anything")
    assert not may([_acl("*", PatternType.PREFIXED, Op.READ)], "anything")  # a real prefix
    group = AclBinding(
        ResourcePattern(ResourceType.GROUP, "logs"),
        AccessControlEntry("User:alice", "*", Op.READ, Allow),
    )
    assert not may([group], "logs")  # another resource type never matches


@pytest.mark.spec("SEC-15")
def test_deny_wins_and_is_not_widened_by_implication():
    allow_all = _acl("t", PatternType.LITERAL, Op.ALL)
    deny_read = _acl("t", PatternType.PREFIXED, Op.READ, Deny, who="User:*")

    def may(operation):
        acls = [allow_all, deny_read]
        return authorize(acls, "User:alice", "1.2.3.4", operation, ResourceType.TOPIC, "t")

    assert not may(Op.READ)
    assert may(Op.DESCRIBE) and may(Op.WRITE)


@pytest.mark.spec("SEC-16")
def test_super_users_and_the_no_acl_default():
    acls = [_acl("t", PatternType.LITERAL, Op.ALL, Deny, who="User:*")]
    assert authorize(
        acls,
        "User:root",
        "h",
        Op.WRITE,
        ResourceType.TOPIC,
        "t",
        super_users=frozenset({"User:root"}),
    )
    assert not authorize([], "User:bob", "h", Op.READ, ResourceType.TOPIC, "free")
    assert authorize(
        [], "User:bob", "h", Op.READ, ResourceType.TOPIC, "free", allow_if_no_acls=True
    )
    # An ACL for someone else on the resource closes it to everyone else.
    other = [_acl("t", PatternType.LITERAL, Op.READ)]
    assert not authorize(
        other, "User:bob", "h", Op.READ, ResourceType.TOPIC, "t", allow_if_no_acls=True
    )


@pytest.mark.spec("SEC-18")
def test_filters_any_exact_and_match():
    acls = [
        _acl("logs", PatternType.LITERAL, Op.READ),
        _acl("lo", PatternType.PREFIXED, Op.WRITE),
        _acl("*", PatternType.LITERAL, Op.DESCRIBE, who="User:bob"),
        _acl("other", PatternType.LITERAL, Op.READ),
    ]
    pick = lambda f: [a for a in acls if f.matches(a)]  # noqa: E731
    assert pick(AclBindingFilter()) == acls
    assert pick(AclBindingFilter(name="logs", pattern_type=PatternType.LITERAL)) == acls[:1]
    assert pick(AclBindingFilter(name="logs", pattern_type=PatternType.MATCH)) == acls[:3]
    assert pick(AclBindingFilter(principal="User:bob")) == acls[2:3]
    assert pick(AclBindingFilter(operation=Op.WRITE)) == acls[1:2]


@pytest.mark.spec("SEC-19")
def test_kafka_zookeeper_paths_and_json_round_trip():
    entries = {
        AccessControlEntry("User:alice", "*", Op.READ, Allow),
        AccessControlEntry("User:bob", "10.0.0.1", Op.CLUSTER_ACTION, Deny),
    }
    data = acls_to_json(entries)
    assert b'"operation": "ClusterAction"' in data and b'"permissionType": "Deny"' in data
    assert acls_from_json(data) == entries
    literal = ResourcePattern(ResourceType.TRANSACTIONAL_ID, "tx")
    assert zk_path(literal) == "/kafka-acl/TransactionalId/tx"
    prefixed = ResourcePattern(ResourceType.TOPIC, "lo", PatternType.PREFIXED)
    assert zk_path(prefixed) == "/kafka-acl-extended/prefixed/Topic/lo"
