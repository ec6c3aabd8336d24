"""Log directories in KRaft (KIP-858): where each replica lives, and a failed directory.

Brokers register with their log directories' ids; a partition created on a broker with
several leaves the choice to the broker (UNASSIGNED), which answers with
AssignReplicasToDirs. A heartbeat naming a failed directory takes that directory's replicas
out of their ISRs and ELRs and moves their leaderships, and the broker, unfenced, keeps its
other partitions.
"""

from __future__ import annotations

import uuid

import pytest

from kafka_ref.errors import ErrorCode
from kafka_ref.metadata import directory_id
from kafka_ref.metadata.controller.replication_control import UNCLEAN
from kafka_ref.metadata.image import NO_LEADER
from tests.unit.metadata.controller.harness import Harness

DIRS = {b: (uuid.UUID(int=1000 + 2 * b), uuid.UUID(int=1001 + 2 * b)) for b in range(4)}


def jbod(brokers: int = 3, single: tuple[int, ...] = ()) -> Harness:
    """Brokers registered again with two log directories each (one for those in `single`)."""
    h = Harness(brokers=brokers)
    for b in range(brokers):
        dirs = DIRS[b][:1] if b in single else DIRS[b]
        assert h.register(b, new=False, log_dirs=dirs).error.ok
    return h


def assign(h: Harness, broker: int, directory: uuid.UUID, topic: str, *indexes: int):
    topic_id = h.image.topic_by_name(topic).id
    result = h.qc.assign_replicas_to_dirs(
        broker, h.epochs[broker], {directory: {topic_id: list(indexes)}}
    )
    return result, h.commit(result)


def heartbeat_offline(h: Harness, broker: int, *dirs: uuid.UUID, now_ms: int = 0):
    before = len(h.log)
    reply = h.heartbeat(broker, now_ms, offline_log_dirs=dirs)
    return reply, h.log[before:]


def placed(h: Harness, topic: str, index: int = 0) -> dict[int, uuid.UUID]:
    p = h.partition(topic, index)
    return dict(zip(p.replicas, p.directories, strict=True))


@pytest.mark.spec("KCTRL-22")
def test_the_broker_chooses_a_directory_and_the_controller_records_it():
    h = jbod(single=(2,))
    assert h.image.brokers[0].directories == DIRS[0]
    h.create_assigned("t", {0: [0, 1, 2], 1: [1, 2, 0]})
    # two directories: the broker chooses; one: it is that one
    assert placed(h, "t") == {0: directory_id.UNASSIGNED, 1: directory_id.UNASSIGNED, 2: DIRS[2][0]}
    before = h.partition("t")
    result, response = assign(h, 0, DIRS[0][1], "t", 0, 1)
    assert [e.name for e in result.records] == ["PartitionChangeRecord"] * 2
    [first, second] = [e.message for e in result.records]
    assert first.directories == [DIRS[0][1], directory_id.UNASSIGNED, DIRS[2][0]]
    # nothing else changes: the leader, the ISR, the leader epoch
    assert (first.leader, first.isr, first.replicas) == (-2, None, None)
    assert second.directories == [directory_id.UNASSIGNED, DIRS[2][0], DIRS[0][1]]
    after = h.partition("t")
    assert (after.leader, after.isr, after.leader_epoch) == (
        before.leader,
        before.isr,
        before.leader_epoch,
    )
    assert after.partition_epoch == before.partition_epoch + 1
    topic_id = h.image.topic_by_name("t").id
    assert response == {DIRS[0][1]: {topic_id: {0: ErrorCode.NO_ERROR, 1: ErrorCode.NO_ERROR}}}
    # the same assignment again writes nothing
    result, _ = assign(h, 0, DIRS[0][1], "t", 0)
    assert result.records == ()


@pytest.mark.spec("KCTRL-22")
def test_assign_replicas_to_dirs_errors():
    h = jbod(brokers=4)
    h.create_assigned("t", {0: [0, 1, 2]})
    topic_id = h.image.topic_by_name("t").id
    unknown = uuid.UUID(int=77)
    result = h.qc.assign_replicas_to_dirs(
        3, h.epochs[3], {DIRS[3][0]: {topic_id: [0, 5], unknown: [0]}}
    )
    assert result.records == ()
    assert result.response == {
        DIRS[3][0]: {
            topic_id: {
                0: ErrorCode.NOT_LEADER_OR_FOLLOWER,
                5: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
            },
            unknown: {0: ErrorCode.UNKNOWN_TOPIC_ID},
        }
    }
    stale = h.qc.assign_replicas_to_dirs(0, h.epochs[0] - 1, {DIRS[0][0]: {topic_id: [0]}})
    assert stale.records == () and stale.response.code == ErrorCode.STALE_BROKER_EPOCH


@pytest.mark.spec("KCTRL-21")
def test_a_failed_directory_moves_its_replicas_and_the_broker_keeps_the_others():
    h = jbod()
    h.create_assigned(
        "t",
        {0: [0, 1, 2], 1: [1, 0, 2], 2: [0, 1, 2]},
        **{"min.insync.replicas": "2"},
    )
    assign(h, 0, DIRS[0][0], "t", 0, 1)  # led by 0, followed by 0: the failing directory
    assign(h, 0, DIRS[0][1], "t", 2)  # led by 0 in its other directory
    reply, written = heartbeat_offline(h, 0, DIRS[0][0])
    assert reply.error.ok and not reply.is_fenced
    names = [e.name for e in written]
    assert names == ["PartitionChangeRecord"] * 2 + ["BrokerRegistrationChangeRecord"]
    assert sorted(e.message.partition_id for e in written[:2]) == [0, 1]
    registration = written[-1].message
    assert (registration.broker_id, registration.log_dirs) == (0, [DIRS[0][1]])
    assert h.image.brokers[0].directories == (DIRS[0][1],)
    assert not h.image.brokers[0].fenced
    p0, p1, p2 = (h.partition("t", i) for i in range(3))
    assert (p0.leader, p0.isr, p0.elr) == (1, (1, 2), ())  # led elsewhere, 0 not in the ISR
    assert (p1.leader, p1.isr, p1.elr) == (1, (1, 2), ())
    assert (p2.leader, p2.isr, p2.leader_epoch) == (0, (0, 1, 2), 0)  # untouched
    # every later heartbeat repeats the failed directory: nothing more is written
    _, written = heartbeat_offline(h, 0, DIRS[0][0], now_ms=10)
    assert written == []


@pytest.mark.spec("KCTRL-21")
def test_a_replica_in_a_failed_directory_is_never_elected_until_the_broker_restarts():
    h = jbod(brokers=2)
    h.create_assigned("t", {0: [0, 1]}, **{"min.insync.replicas": "1"})
    assign(h, 0, DIRS[0][0], "t", 0)
    heartbeat_offline(h, 0, DIRS[0][0])
    p = h.partition("t")
    assert (p.leader, p.isr, p.elr) == (1, (1,), ())
    h.fence(1)  # the last ISR member: broker 0 is live, but its replica is offline
    assert h.partition("t").leader == NO_LEADER
    assert h.qc.elect_leaders(UNCLEAN, [("t", 0)]).response[("t", 0)].code == (
        ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE
    )
    # restarted with the directory repaired: the replica is online again (an unclean
    # election may now choose it; a clean one still needs broker 1)
    assert h.register(0, 200_000, previous_epoch=h.epochs[0], log_dirs=DIRS[0]).error.ok
    h.heartbeat(0, 200_001)
    assert h.partition("t").leader == NO_LEADER
    result = h.qc.elect_leaders(UNCLEAN, [("t", 0)])
    assert result.response[("t", 0)].ok
    h.commit(result)
    assert h.partition("t").leader == 0


@pytest.mark.spec("KCTRL-22")
def test_a_replica_placed_in_an_offline_directory_leaves_the_isr_at_once():
    h = jbod()
    h.create_assigned("t", {0: [0, 1, 2], 1: [1, 2, 0]})
    heartbeat_offline(h, 0, DIRS[0][0])  # no replica there yet: only the registration
    assert h.partition("t").isr == (0, 1, 2)
    result, _ = assign(h, 0, DIRS[0][0], "t", 0)  # the broker had created it there
    assert [e.message.partition_id for e in result.records] == [0, 0]
    p = h.partition("t")
    assert (p.leader, p.isr, placed(h, "t")[0]) == (1, (1, 2), DIRS[0][0])
    assert h.partition("t", 1).isr == (1, 2, 0)
