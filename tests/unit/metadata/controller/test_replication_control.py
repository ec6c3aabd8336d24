"""Topics, partitions and leaders in KRaft: CreateTopics, elections with ELR, AlterPartition,
ElectLeaders."""

from __future__ import annotations

import uuid

import pytest

from kafka_ref.errors import ErrorCode
from kafka_ref.metadata.controller.config_control import AlterableConfig, AlterConfigsResource
from kafka_ref.metadata.controller.partition_change import RECOVERED, RECOVERING
from kafka_ref.metadata.controller.replication_control import (
    PREFERRED,
    UNCLEAN,
    AlterPartitionData,
    CreatableTopic,
    CreatePartitionsTopic,
)
from kafka_ref.metadata.image import NO_LEADER
from tests.unit.metadata.controller.harness import Harness


@pytest.mark.spec("KCTRL-6")
def test_create_topics_writes_topic_partition_and_config_records():
    h = Harness(brokers=3)
    result = h.qc.create_topics([CreatableTopic("clicks", 2, 3, configs={"retention.ms": "1000"})])
    assert [e.name for e in result.records] == [
        "TopicRecord",
        "PartitionRecord",
        "PartitionRecord",
        "ConfigRecord",
    ]
    assert h.image.topic_by_name("clicks") is None  # decided, not yet replayed
    h.commit(result)
    topic = h.image.topic_by_name("clicks")
    assert topic.id == result.response[0].topic_id
    for p in topic.partitions.values():
        assert sorted(p.replicas) == [0, 1, 2] and p.isr == p.replicas
        assert p.leader == p.replicas[0] and (p.leader_epoch, p.partition_epoch) == (0, 0)
    assert len({p.leader for p in topic.partitions.values()}) == 2  # leaders spread (CTRL-8)
    assert h.image.configs[(2, "clicks")] == {"retention.ms": "1000"}


@pytest.mark.spec("KCTRL-6")
def test_create_topics_errors_and_validate_only():
    h = Harness(brokers=2)
    h.create("taken", 1, 1)
    h.fence(1)  # one active broker left
    result = h.qc.create_topics(
        [
            CreatableTopic("taken", 1, 1),
            CreatableTopic("bad/name", 1, 1),
            CreatableTopic("too.many", 1, 2),
            CreatableTopic("dup", 1, 1),
            CreatableTopic("dup", 1, 1),
            CreatableTopic("cfg", 1, 1, configs={"retention.ms": "soon"}),
            CreatableTopic("fenced", assignments={0: [1]}),
            CreatableTopic("ok", 1, 1),
        ]
    )
    codes = [t.error.code for t in result.response]
    assert codes == [
        ErrorCode.TOPIC_ALREADY_EXISTS,
        ErrorCode.INVALID_TOPIC,
        ErrorCode.INVALID_REPLICATION_FACTOR,
        ErrorCode.INVALID_REQUEST,
        ErrorCode.INVALID_REQUEST,
        ErrorCode.INVALID_CONFIG,
        ErrorCode.INVALID_REPLICATION_ASSIGNMENT,
        ErrorCode.NO_ERROR,
    ]
    assert {e.message.name for e in result.records if e.name == "TopicRecord"} == {"ok"}
    only = h.qc.create_topics([CreatableTopic("ok", 1, 1)], validate_only=True)
    assert only.records == () and only.response[0].error.ok


@pytest.mark.spec("KCTRL-6")
def test_delete_topics_and_create_partitions():
    h = Harness(brokers=3)
    h.create("t", 1, 2, **{"retention.ms": "5"})
    grown = h.qc.create_partitions([CreatePartitionsTopic("t", 3), CreatePartitionsTopic("u", 2)])
    assert [e.code for _, e in grown.response] == [
        ErrorCode.NO_ERROR,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    ]
    h.commit(grown)
    assert sorted(h.image.topic_by_name("t").partitions) == [0, 1, 2]
    assert all(len(p.replicas) == 2 for p in h.image.topic_by_name("t").partitions.values())
    shrink = h.qc.create_partitions([CreatePartitionsTopic("t", 2)])
    assert shrink.response[0][1].code == ErrorCode.INVALID_PARTITIONS and shrink.records == ()
    deleted = h.qc.delete_topics(["t", "nope"])
    assert [e.code for _, e in deleted.response] == [
        ErrorCode.NO_ERROR,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    ]
    h.commit(deleted)
    assert h.image.topic_by_name("t") is None and (2, "t") not in h.image.configs


@pytest.mark.spec("KCTRL-7")
def test_fencing_the_last_isr_member_below_min_isr_keeps_it_eligible():
    h = Harness(brokers=3)
    h.create_assigned("t", {0: [0, 1, 2]}, **{"min.insync.replicas": "2"})
    h.fence(0)
    p = h.partition("t")
    assert (p.leader, p.isr, p.elr) == (1, (1, 2), ())
    assert p.leader_epoch == 1 and p.partition_epoch == 1
    h.fence(1, now_ms=200_000)
    p = h.partition("t")
    assert (p.leader, p.isr, p.elr) == (2, (2,), (1,))  # below min ISR: 1 is eligible
    h.fence(2, now_ms=300_000)
    p = h.partition("t")
    assert (p.leader, p.isr, p.elr) == (NO_LEADER, (), (1, 2))
    h.heartbeat(0, 300_001)  # 0 left while the ISR had min ISR members: not eligible
    assert h.partition("t").leader == NO_LEADER
    h.heartbeat(2, 300_002)
    p = h.partition("t")
    assert (p.leader, p.isr, p.elr) == (2, (2,), (1,))
    assert p.leader_recovery_state == RECOVERED  # a clean election


@pytest.mark.spec("KCTRL-7")
def test_unclean_election_only_when_enabled_and_it_marks_the_leader_recovering():
    h = Harness(brokers=2)
    h.create_assigned("t", {0: [0, 1]})
    h.fence(1)
    h.fence(0, now_ms=200_000)  # ISR empty, ELR [0]; 1 is not eligible
    h.heartbeat(1, 200_001)
    assert h.partition("t").leader == NO_LEADER
    h.commit(h.qc.incremental_alter_configs([_set("t", "unclean.leader.election.enable", "true")]))
    result = h.qc.elect_leaders(UNCLEAN, [("t", 0)])
    assert result.response[("t", 0)].ok
    h.commit(result)
    p = h.partition("t")
    assert (p.leader, p.isr, p.elr, p.last_known_elr) == (1, (1,), (), ())
    assert p.leader_recovery_state == RECOVERING


@pytest.mark.spec("KCTRL-7")
def test_min_isr_comes_from_the_topic_then_the_cluster_default_then_the_static_config():
    h = Harness(brokers=3)
    h.create_assigned("t", {0: [0, 1, 2]})
    h.commit(
        h.qc.incremental_alter_configs(
            [AlterConfigsResource(4, "", [AlterableConfig("min.insync.replicas", 0, "3")])]
        )
    )
    h.fence(0)
    assert h.partition("t").elr == (0,)  # 2 < 3: the cluster default counts


def _set(topic: str, key: str, value: str):
    return AlterConfigsResource(2, topic, [AlterableConfig(key, 0, value)])


def _alter(
    h: Harness, broker: int, topic: str, isr, *, leader_epoch=None, partition_epoch=None, **kw
):
    topic_id = h.image.topic_by_name(topic).id
    p = h.partition(topic)
    data = AlterPartitionData(
        0,
        p.leader_epoch if leader_epoch is None else leader_epoch,
        p.partition_epoch if partition_epoch is None else partition_epoch,
        [(b, h.epochs[b]) for b in isr],
        **kw,
    )
    return h.qc.alter_partition(broker, h.epochs[broker], {topic_id: [data]})


@pytest.mark.spec("KCTRL-8")
def test_alter_partition_shrinks_and_expands_the_isr_with_the_elr():
    h = Harness(brokers=3)
    h.create_assigned("t", {0: [0, 1, 2]}, **{"min.insync.replicas": "3"})
    result = _alter(h, 0, "t", [0, 1])
    [answer] = next(iter(result.response.values()))
    assert answer.error.ok and answer.isr == (0, 1) and answer.partition_epoch == 1
    assert answer.leader_epoch == 0  # the leader did not change
    h.commit(result)
    p = h.partition("t")
    assert (p.isr, p.elr, p.partition_epoch) == ((0, 1), (2,), 1)
    h.commit(_alter(h, 0, "t", [0, 1, 2]))
    p = h.partition("t")
    assert (p.isr, p.elr, p.last_known_elr) == ((0, 1, 2), (), ())


@pytest.mark.spec("KCTRL-8")
def test_alter_partition_errors_in_kafkas_order():
    h = Harness(brokers=3)
    h.create_assigned("t", {0: [0, 1, 2]})
    h.commit(_alter(h, 0, "t", [0, 1]))  # partition epoch 1

    def code(result):
        if hasattr(result.response, "code"):
            return result.response.code
        return next(iter(result.response.values()))[0].error.code

    assert code(_alter(h, 0, "t", [0], partition_epoch=0)) == ErrorCode.INVALID_UPDATE_VERSION
    assert code(_alter(h, 0, "t", [0], leader_epoch=-1)) == ErrorCode.FENCED_LEADER_EPOCH
    assert code(_alter(h, 0, "t", [0], leader_epoch=5)) == ErrorCode.NOT_CONTROLLER
    assert code(_alter(h, 1, "t", [1])) == ErrorCode.INVALID_REQUEST  # not the leader
    assert code(_alter(h, 0, "t", [1, 2])) == ErrorCode.INVALID_REQUEST  # without the leader
    h.fence(2)
    assert code(_alter(h, 0, "t", [0, 1, 2])) == ErrorCode.INELIGIBLE_REPLICA
    stale = h.qc.alter_partition(0, h.epochs[0] + 100, {})
    assert stale.response.code == ErrorCode.STALE_BROKER_EPOCH
    nowhere = uuid.UUID(int=7)
    unknown = h.qc.alter_partition(
        0, h.epochs[0], {nowhere: [AlterPartitionData(0, 0, 0, [(0, -1)])]}
    )
    assert unknown.response[nowhere][0].error.code == ErrorCode.UNKNOWN_TOPIC_ID
    assert all(r.records == () for r in (stale, unknown))


@pytest.mark.spec("KCTRL-8")
def test_a_recovering_leader_alone_in_its_isr_may_say_it_recovered():
    h = Harness(brokers=2)
    h.create_assigned("t", {0: [0, 1]}, **{"unclean.leader.election.enable": "true"})
    h.fence(0)  # ISR [1] meets min ISR 1: 0 is not eligible
    h.fence(1, now_ms=200_000)
    h.heartbeat(0, 200_001)  # unclean election at unfencing
    p = h.partition("t")
    assert p.leader == 0 and p.leader_recovery_state == RECOVERING
    h.heartbeat(1, 200_002)
    bad = _alter(h, 0, "t", [0, 1], leader_recovery_state=RECOVERING)
    assert next(iter(bad.response.values()))[0].error.code == ErrorCode.INVALID_REQUEST
    h.commit(_alter(h, 0, "t", [0], leader_recovery_state=RECOVERED))
    assert h.partition("t").leader_recovery_state == RECOVERED
    back = _alter(h, 0, "t", [0], leader_recovery_state=RECOVERING)
    assert next(iter(back.response.values()))[0].error.code == ErrorCode.INVALID_REQUEST


@pytest.mark.spec("KCTRL-9")
def test_preferred_leader_election():
    h = Harness(brokers=2)
    h.create_assigned("t", {0: [0, 1]})
    h.fence(0)
    assert h.partition("t").leader == 1
    result = h.qc.elect_leaders(PREFERRED, [("t", 0), ("nope", 0)])
    assert result.response[("t", 0)].code == ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE
    assert result.response[("nope", 0)].code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    h.heartbeat(0, 100_001)
    h.commit(_alter(h, 1, "t", [1, 0]))
    result = h.qc.elect_leaders(PREFERRED, None)
    assert result.response == {("t", 0): result.response[("t", 0)]} and result.response[("t", 0)].ok
    h.commit(result)
    assert h.partition("t").leader == 0 and h.partition("t").leader_epoch == 2
    again = h.qc.elect_leaders(PREFERRED, [("t", 0)])
    assert again.response[("t", 0)].code == ErrorCode.ELECTION_NOT_NEEDED and again.records == ()


@pytest.mark.spec("KCTRL-9")
def test_unclean_election_needs_a_leaderless_partition_and_a_live_replica():
    h = Harness(brokers=2)
    h.create_assigned("t", {0: [0, 1]})
    assert h.qc.elect_leaders(UNCLEAN, [("t", 0)]).response[("t", 0)].code == (
        ErrorCode.ELECTION_NOT_NEEDED
    )
    h.fence(1)
    h.fence(0, now_ms=200_000)
    result = h.qc.elect_leaders(UNCLEAN, [("t", 0)])
    assert result.response[("t", 0)].code == ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE
    assert result.records == ()


@pytest.mark.spec("KCTRL-16")
def test_a_reassignment_adds_then_completes_when_the_new_replicas_join_the_isr():
    h = Harness(brokers=4)
    h.create_assigned("t", {0: [0, 1]})
    started = h.qc.alter_partition_reassignments({("t", 0): [2, 3]})
    assert started.response[("t", 0)].ok and started.atomic
    h.commit(started)
    p = h.partition("t")
    assert p.replicas == (2, 3, 0, 1) and p.adding_replicas == (2, 3)
    assert p.removing_replicas == (0, 1) and (p.leader, p.isr) == (0, (0, 1))
    h.commit(_alter(h, 0, "t", [0, 1, 2]))  # not every target replica yet
    assert h.partition("t").replicas == (2, 3, 0, 1)
    done = _alter(h, 0, "t", [0, 1, 2, 3])
    [answer] = next(iter(done.response.values()))
    assert answer.error.code == ErrorCode.NEW_LEADER_ELECTED  # the old leader is leaving
    h.commit(done)
    p = h.partition("t")
    assert (p.replicas, p.isr, p.leader) == ((2, 3), (2, 3), 2)
    assert (p.adding_replicas, p.removing_replicas) == ((), ())


@pytest.mark.spec("KCTRL-16")
def test_a_removal_completes_at_once_and_a_cancel_goes_back():
    h = Harness(brokers=3)
    h.create_assigned("t", {0: [0, 1, 2]})
    h.commit(h.qc.alter_partition_reassignments({("t", 0): [1, 2]}))
    p = h.partition("t")
    assert (p.replicas, p.isr, p.leader) == ((1, 2), (1, 2), 1)
    h.commit(h.qc.alter_partition_reassignments({("t", 0): [1, 2, 0]}))
    assert h.partition("t").adding_replicas == (0,)
    h.commit(h.qc.alter_partition_reassignments({("t", 0): None}))
    p = h.partition("t")
    assert (p.replicas, p.adding_replicas, p.isr) == ((1, 2), (), (1, 2))
    result = h.qc.alter_partition_reassignments({("t", 0): None, ("t", 1): [0]})
    assert result.response[("t", 0)].code == ErrorCode.NO_REASSIGNMENT_IN_PROGRESS
    assert result.response[("t", 1)].code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    bad = h.qc.alter_partition_reassignments({("t", 0): [1, 1]})
    assert bad.response[("t", 0)].code == ErrorCode.INVALID_REPLICATION_ASSIGNMENT
    unknown = h.qc.alter_partition_reassignments({("t", 0): [1, 9]})
    assert unknown.response[("t", 0)].code == ErrorCode.INVALID_REPLICATION_ASSIGNMENT
    assert bad.records == unknown.records == ()
