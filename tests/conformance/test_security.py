"""Authentication and authorization, portable: rules checked against a broker of the
target's kind that requires SASL (the `secured` fixture, kafka_ref/conformance/security.py),
with the mechanisms and users its target declares (SEC-23).

A target that declares no such broker has none of these rules apply (`sasl`); one that
declares no users has only the refusal rules apply (`sasl-users`); the ACL rules need an
authorizer and a super user's listener (`acls`). The report says which, per rule.
"""

from __future__ import annotations

import pytest

from kafka_ref.conformance.security import login
from kafka_ref.protocol.messages import ApiKey, CreateAclsRequest, MetadataRequest

UNSUPPORTED_SASL_MECHANISM, SASL_AUTHENTICATION_FAILED, TOPIC_AUTHORIZATION_FAILED = 33, 58, 29
TOPIC, LITERAL, ALL, DESCRIBE, DENY, ALLOW = 2, 3, 2, 8, 2, 3
WRONG = "not-the-password-7"


def create_acl(profile, principal: str, topic: str, operation: int, permission: int) -> None:
    creation = CreateAclsRequest.AclCreation(
        resource_type=TOPIC,
        resource_name=topic,
        resource_pattern_type=LITERAL,
        principal=principal,
        host="*",
        operation=operation,
        permission_type=permission,
    )
    with profile.admin_wire() as admin:
        answer = admin.request(ApiKey.CREATE_ACLS, 1, CreateAclsRequest(creations=[creation]))
    assert answer.results[0].error_code == 0, answer.results[0].error_message


def logged_in(profile, user: str):
    """A connection authenticated as `user` with the first declared mechanism."""
    wire = profile.wire()
    result = login(wire, profile.mechanisms[0], user, profile.users[user])
    assert result.ok, f"{user} could not log in: {result}"
    return wire


def visible(wire, topic: str) -> tuple[bool, int]:
    """(is the topic in an all-topics Metadata, the error of a Metadata naming it)."""
    everything = {t.name for t in wire.metadata(None).topics}
    return topic in everything, wire.metadata([topic]).topics[0].error_code


@pytest.mark.spec("SEC-6")
def test_nothing_but_authentication_is_served_before_it(secured):
    with secured.wire() as wire:
        assert wire.api_versions(0).error_code == 0  # allowed: clients ask it first
        wire.send(ApiKey.METADATA, 5, MetadataRequest(topics=None, allow_auto_topic_creation=False))
        assert wire.is_closed(), "a Metadata request before SASL authentication was served"


@pytest.mark.spec("SEC-7")
def test_an_unknown_mechanism_is_answered_with_the_enabled_ones_then_closed(secured):
    with secured.wire() as wire:
        try:
            result = login(wire, "NOT-A-MECHANISM", "alice", WRONG)
        except ConnectionError:
            pytest.fail("the broker closed the connection without answering the SaslHandshake")
        assert result.error_code == UNSUPPORTED_SASL_MECHANISM
        assert set(result.handshake_mechanisms) == set(secured.mechanisms)
        assert wire.is_closed()


@pytest.mark.spec("SEC-7")
def test_a_wrong_password_is_refused_and_the_connection_closed(secured):
    user = next(iter(secured.users), "conformance-nobody")  # an unknown user when none declared
    for mechanism in secured.mechanisms:
        with secured.wire() as wire:
            result = login(wire, mechanism, user, WRONG)
            closed = wire.is_closed()
            assert (result.error_code, closed) == (SASL_AUTHENTICATION_FAILED, True), (
                f"{mechanism}: a wrong password was answered with error {result.error_code} "
                f"({result.client_error or result.error_message}) and the connection was "
                f"{'closed' if closed else 'kept open'}"
            )
            assert WRONG not in (result.error_message or "")


@pytest.mark.spec("SEC-10")
def test_a_declared_user_logs_in_with_every_declared_mechanism(secured, target):
    target.require("sasl-users")
    user, password = next(iter(secured.users.items()))
    for mechanism in secured.mechanisms:
        with secured.wire() as wire:
            result = login(wire, mechanism, user, password)
            assert result.ok, f"{mechanism}: {result}"  # SCRAM: the broker proved itself too
            assert wire.metadata([]).brokers  # and serves requests now


@pytest.mark.spec("SEC-17")
def test_a_principal_without_describe_does_not_see_the_topic(secured, target):
    target.require("sasl-users", "acls")
    topic = target.topic_name("hidden")
    with secured.admin_wire() as admin:
        assert admin.create_topic(topic) == 0
    user = sorted(secured.users)[0]
    with logged_in(secured, user) as wire:
        assert visible(wire, topic) == (False, TOPIC_AUTHORIZATION_FAILED)
        create_acl(secured, f"User:{user}", topic, DESCRIBE, ALLOW)
        assert visible(wire, topic) == (True, 0)


@pytest.mark.spec("SEC-15")
def test_a_deny_wins_over_every_allow(secured, target):
    target.require("sasl-users", "acls")
    topic = target.topic_name("denied")
    with secured.admin_wire() as admin:
        assert admin.create_topic(topic) == 0
    user = sorted(secured.users)[-1]
    create_acl(secured, "User:*", topic, ALL, ALLOW)
    create_acl(secured, f"User:{user}", topic, DESCRIBE, DENY)
    with logged_in(secured, user) as wire:
        assert visible(wire, topic) == (False, TOPIC_AUTHORIZATION_FAILED)
