"""Brokers in KRaft: bootstrap, registration, heartbeats, fencing, controlled shutdown."""

from __future__ import annotations

import pytest

from kafka_ref.errors import ErrorCode
from kafka_ref.metadata import records as r
from kafka_ref.metadata.controller.cluster_control import BrokerHeartbeatRequest
from kafka_ref.metadata.controller.features import BOOTSTRAP_FEATURES
from kafka_ref.metadata.controller.quorum_controller import QuorumController
from kafka_ref.metadata.image import NO_LEADER
from tests.unit.metadata.controller.harness import CLUSTER_ID, Harness


@pytest.mark.spec("KCTRL-1")
def test_a_new_cluster_starts_with_kafka_44s_feature_levels():
    qc = QuorumController(CLUSTER_ID)
    result = qc.bootstrap()
    names = [(e.message.name, e.message.feature_level) for e in result.records]
    assert names[0] == ("metadata.version", 33)
    assert dict(names) == {
        "metadata.version": 33,
        "eligible.leader.replicas.version": 1,
        "group.version": 1,
        "share.version": 2,
        "streams.version": 1,
        "transaction.version": 2,
    }
    assert "kraft.version" not in dict(names)  # the quorum's, a control record
    qc.commit(result)
    assert dict(qc.image.features) == BOOTSTRAP_FEATURES


@pytest.mark.spec("KCTRL-2")
def test_a_new_incarnation_gets_a_new_larger_epoch_and_starts_fenced():
    h = Harness(brokers=0)
    first = h.register(1)
    assert first.error.ok and first.broker_epoch == h.qc.next_offset - 1  # the record's offset
    assert h.image.brokers[1].fenced
    again = h.register(1, new=False)  # the same process, registering again
    assert again.broker_epoch == first.broker_epoch
    h.qc.heartbeats.remove(1)  # its session expired
    second = h.register(1)
    assert second.broker_epoch > first.broker_epoch
    assert h.image.brokers[1].epoch == second.broker_epoch


@pytest.mark.spec("KCTRL-2")
def test_registration_errors():
    h = Harness(brokers=1)
    duplicate = h.qc.register_broker(h.registration(0), now_ms=1000)  # session still live
    assert duplicate.response.error.code == ErrorCode.DUPLICATE_BROKER_REGISTRATION
    assert duplicate.records == ()
    other_cluster = h.registration(5)
    other_cluster = type(other_cluster)(5, "another", other_cluster.incarnation_id)
    result = h.qc.register_broker(other_cluster, 0)
    assert result.response.error.code == ErrorCode.INCONSISTENT_CLUSTER_ID
    old = h.registration(6)
    features = {**old.features, "metadata.version": (1, 20)}
    old = type(old)(6, CLUSTER_ID, old.incarnation_id, features=features)
    result = h.qc.register_broker(old, 0)
    assert result.response.error.code == ErrorCode.UNSUPPORTED_VERSION
    assert "metadata.version" in result.response.error.message


@pytest.mark.spec("KCTRL-3")
def test_a_broker_is_unfenced_once_it_has_replayed_its_registration():
    h = Harness(brokers=0)
    h.register(1)
    registered_at = h.qc.next_offset - 1
    behind = h.heartbeat(1, 10, offset=registered_at - 1)
    assert behind.is_fenced and not behind.is_caught_up
    assert h.image.brokers[1].fenced
    caught_up = h.heartbeat(1, 20, offset=registered_at)
    assert not caught_up.is_fenced and caught_up.is_caught_up
    assert not h.image.brokers[1].fenced


@pytest.mark.spec("KCTRL-3")
def test_a_stale_epoch_heartbeat_is_refused_and_want_fence_fences():
    h = Harness(brokers=2)
    h.create("t", 1, 2)
    request = BrokerHeartbeatRequest(0, h.epochs[0] - 1, 100)
    result = h.qc.broker_heartbeat(request, 0)
    assert result.response.error.code == ErrorCode.STALE_BROKER_EPOCH and result.records == ()
    reply = h.heartbeat(0, want_fence=True)
    assert reply.is_fenced and h.image.brokers[0].fenced
    assert 0 not in h.partition("t").isr and h.partition("t").leader == 1


@pytest.mark.spec("KCTRL-3")
def test_unfencing_elects_an_eligible_replica_for_partitions_without_a_leader():
    h = Harness(brokers=2)
    h.create("t", 1, 2)  # min.insync.replicas 1
    h.fence(1)  # the ISR [0] still has min ISR members: 1 is not eligible
    h.fence(0, now_ms=300_000)  # the ISR empties below min ISR: 0 is eligible
    assert h.partition("t").leader == NO_LEADER
    assert h.partition("t").isr == () and h.partition("t").elr == (0,)
    h.heartbeat(1, 300_001)
    assert h.partition("t").leader == NO_LEADER  # 1 may lack committed records
    h.heartbeat(0, 300_002)
    assert h.partition("t").leader == 0 and h.partition("t").isr == (0,)
    assert h.partition("t").elr == ()


@pytest.mark.spec("KCTRL-4")
def test_a_silent_broker_is_fenced_after_the_session_timeout_and_loses_its_leaderships():
    h = Harness(brokers=3)
    h.create("t", 3, 3)
    for b in (1, 2):
        h.heartbeat(b, 9000)
    assert h.commit(h.qc.fence_stale_broker(9000)) is None  # 9 s is not more than 9 s
    for b in (1, 2):
        h.heartbeat(b, 9001)
    result = h.qc.fence_stale_broker(9001)
    assert result.response == 0
    kinds = [e.name for e in result.records]
    assert kinds[-1] == "BrokerRegistrationChangeRecord"
    assert result.records[-1].message.fenced == 1
    h.commit(result)
    assert h.image.brokers[0].fenced
    for index in range(3):
        p = h.partition("t", index)
        assert p.leader != 0 and 0 not in p.isr and p.leader in p.isr


@pytest.mark.spec("KCTRL-4")
def test_an_unclean_restart_leaves_the_isr_and_the_elr_a_clean_one_keeps_the_elr():
    h = Harness(brokers=2)
    h.create("t", 1, 2, **{"min.insync.replicas": "2"})
    h.fence(1)
    assert h.partition("t").elr == (1,)
    h.register(1, now_ms=200_000, previous_epoch=h.epochs[1])  # clean: names its epoch
    assert h.partition("t").elr == (1,)
    h.qc.heartbeats.remove(1)
    h.register(1, now_ms=300_000)  # unclean: it does not
    assert h.partition("t").elr == () and 1 not in h.partition("t").isr


@pytest.mark.spec("KCTRL-4")
def test_unregister_broker():
    h = Harness(brokers=2)
    h.create("t", 1, 2)
    result = h.qc.unregister_broker(0)
    assert result.records[-1].message == r.UnregisterBrokerRecord(
        broker_id=0, broker_epoch=h.epochs[0]
    )
    h.commit(result)
    assert 0 not in h.image.brokers and h.partition("t").leader == 1
    missing = h.qc.unregister_broker(9)
    assert missing.response.code == ErrorCode.BROKER_ID_NOT_REGISTERED and missing.records == ()


@pytest.mark.spec("KCTRL-5")
def test_controlled_shutdown_moves_leaderships_then_lets_the_broker_go():
    h = Harness(brokers=3)
    h.create("t", 3, 3)
    assert any(h.partition("t", i).leader == 0 for i in range(3))
    first = h.heartbeat(0, 10, want_shut_down=True)
    assert first.in_controlled_shutdown and not first.should_shut_down
    assert h.image.brokers[0].in_controlled_shutdown
    for i in range(3):
        assert h.partition("t", i).leader != 0 and 0 not in h.partition("t", i).isr
    shutdown_offset = h.qc.next_offset - 1
    h.heartbeat(1, 20, offset=shutdown_offset - 1)  # broker 1 has not replayed it yet
    waiting = h.heartbeat(0, 30, want_shut_down=True)
    assert waiting.in_controlled_shutdown and not waiting.should_shut_down
    h.heartbeat(1, 40)
    h.heartbeat(2, 40)
    done = h.heartbeat(0, 50, want_shut_down=True)
    assert done.should_shut_down and done.is_fenced and h.image.brokers[0].fenced


@pytest.mark.spec("KCTRL-5")
def test_a_broker_that_leads_nothing_shuts_down_at_once():
    h = Harness(brokers=2)
    h.create_assigned("t", {0: [1, 0]})
    reply = h.heartbeat(0, 10, want_shut_down=True)
    assert reply.should_shut_down and not reply.in_controlled_shutdown
    assert h.image.brokers[0].fenced and h.partition("t").isr == (1,)


@pytest.mark.spec("KCTRL-2")
def test_the_epoch_source_is_injectable():
    epochs = iter([1000, 2000])
    qc = QuorumController(CLUSTER_ID, epoch_source=lambda: next(epochs))
    qc.commit(qc.bootstrap())
    h = Harness(brokers=0)
    first = qc.commit(qc.register_broker(h.registration(1), 0))
    second = qc.commit(qc.register_broker(h.registration(2), 0))
    assert (first.broker_epoch, second.broker_epoch) == (1000, 2000)
