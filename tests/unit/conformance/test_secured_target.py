"""What each target declares for the security rules (SEC-23): kafka-ref a broker with SASL
users and ACLs, Tansu one that requires SCRAM but can take no users, a bootstrap target
none; a rule needing what a target lacks is reported not applicable, by name."""

from __future__ import annotations

import pytest

from kafka_ref.conformance import capabilities as caps
from kafka_ref.conformance.plugin import ConformanceTarget
from kafka_ref.conformance.security import USERS, login
from kafka_ref.conformance.targets import TargetError, parse

SECURITY = {"sasl", "sasl-users", "acls"}


@pytest.mark.spec("SEC-23")
def test_each_target_declares_what_its_secured_broker_accepts():
    kafka_ref, tansu, elsewhere = parse("kafka_ref"), parse("tansu"), parse("bootstrap=h:1")
    try:
        assert kafka_ref.declared >= SECURITY
        assert SECURITY & tansu.declared == {"sasl"}
        assert not SECURITY & elsewhere.declared
        with pytest.raises(TargetError, match="declares no broker that requires SASL"):
            elsewhere.secured()
        found = caps.from_probe({}, 1, {"sasl"})
        target = ConformanceTarget(parse("bootstrap=h:1"))
        target.capabilities = found
        with pytest.raises(pytest.skip.Exception, match="target lacks acls: that broker has"):
            target.require("sasl", "acls")
    finally:
        kafka_ref.stop()
        tansu.stop()


@pytest.mark.spec("SEC-23")
def test_kafka_refs_secured_broker_takes_its_declared_users_and_refuses_others():
    profile = parse("kafka_ref").secured_maker()
    try:
        assert profile.admin is not None and set(profile.users) == set(USERS)
        for mechanism in profile.mechanisms:
            with profile.wire() as wire:
                assert login(wire, mechanism, "alice", USERS["alice"]).ok
            with profile.wire() as wire:
                assert login(wire, mechanism, "alice", "wrong").error_code == 58
    finally:
        profile.stop()
