"""ShareFetch and ShareAcknowledge on a broker: members of one share group (KIP-932).

Each member joins the group with ShareGroupHeartbeat, as a share consumer does (the share
group coordinator initializes the share-partition at the broker's share coordinator), and
then fetches and acknowledges over a kafka-ref `BrokerConnection` with raw ShareFetch and
ShareAcknowledge. The broker runs with a 1 s acquisition lock and a delivery limit of 2.
What a share-partition wrote is read back from the broker's own share coordinator
(ReadShareGroupState through the broker's persister, tests/unit/server/share_fixtures.py).
"""

from __future__ import annotations

import threading
import time
import uuid

import pytest

from kafka_ref.client.connection import BrokerConnection
from kafka_ref.errors import ErrorCode
from kafka_ref.protocol.messages import (
    ApiKey,
    ShareAcknowledgeRequest,
    ShareFetchRequest,
)
from kafka_ref.share.persister import RecordState, StateBatch
from kafka_ref.share.share_partition_manager import EARLIEST, GroupShareConfig
from tests.unit.server.conftest import Wire, batch, wait_until
from tests.unit.server.share_fixtures import join, read_state, wait_for_state
from tests.unit.server.test_txn import TXN, add_partitions, end, started, txn_batch

pytestmark = pytest.mark.timeout(60)

GROUP, TOPIC = "queue", "work"
ACCEPT, RELEASE, REJECT = 1, 2, 3
LOCK_MS = 1000
AVAILABLE = RecordState.AVAILABLE


class Member:
    """One member's connection and share session epoch."""

    def __init__(self, port: int, member_id: str, topic_id: uuid.UUID) -> None:
        self.connection = BrokerConnection("127.0.0.1", port).connect()
        self.member_id, self.topic_id, self.epoch = member_id, topic_id, 0

    def _next_epoch(self, answer) -> None:
        if answer.error_code == ErrorCode.NO_ERROR:
            self.epoch += 1

    def fetch(self, acks=(), max_records=5, max_wait_ms=0, epoch=None, topic_id=None):
        body = self.fetch_body(acks, max_records, max_wait_ms, epoch, topic_id)
        answer = self.connection.request(ApiKey.SHARE_FETCH, body)
        if epoch is None:
            self._next_epoch(answer)
        return answer

    def fetch_body(self, acks=(), max_records=5, max_wait_ms=0, epoch=None, topic_id=None):
        batches = [
            ShareFetchRequest.AcknowledgementBatch(
                first_offset=first, last_offset=last, acknowledge_types=[kind]
            )
            for first, last, kind in acks
        ]
        body = ShareFetchRequest(
            group_id=GROUP,
            member_id=self.member_id,
            share_session_epoch=self.epoch if epoch is None else epoch,
            max_wait_ms=max_wait_ms,
            min_bytes=1,
            max_records=max_records,
            batch_size=max_records,
            topics=[
                ShareFetchRequest.FetchTopic(
                    topic_id=topic_id or self.topic_id,
                    partitions=[
                        ShareFetchRequest.FetchPartition(
                            partition_index=0, acknowledgement_batches=batches
                        )
                    ],
                )
            ],
            forgotten_topics_data=[],
        )
        return body

    def acknowledge(self, acks, epoch=None):
        body = ShareAcknowledgeRequest(
            group_id=GROUP,
            member_id=self.member_id,
            share_session_epoch=self.epoch if epoch is None else epoch,
            topics=[
                ShareAcknowledgeRequest.AcknowledgeTopic(
                    topic_id=self.topic_id,
                    partitions=[
                        ShareAcknowledgeRequest.AcknowledgePartition(
                            partition_index=0,
                            acknowledgement_batches=[
                                ShareAcknowledgeRequest.AcknowledgementBatch(
                                    first_offset=first, last_offset=last, acknowledge_types=[kind]
                                )
                                for first, last, kind in acks
                            ],
                        )
                    ],
                )
            ],
        )
        answer = self.connection.request(ApiKey.SHARE_ACKNOWLEDGE, body)
        if epoch is None:
            self._next_epoch(answer)
        return answer


def acquired(answer) -> list[tuple[int, int, int]]:
    return [
        (a.first_offset, a.last_offset, a.delivery_count)
        for t in answer.responses
        for p in t.partitions
        for a in p.acquired_records
    ]


def partition_of(answer):
    return answer.responses[0].partitions[0]


def start_queue(make_broker, lock_ms: int):
    """A broker with TOPIC (one partition), members m1 and m2 of GROUP that joined with
    ShareGroupHeartbeat, and 10 records (two batches, 0-4 and 5-9) produced after m1's
    first fetch started the share-partition at the log's end (latest)."""
    broker = make_broker(
        props={
            "group.share.record.lock.duration.ms": lock_ms,
            "group.share.delivery.count.limit": 2,
        }
    )
    wire = Wire(broker.port)
    wire.create_topic(TOPIC)
    topic_id = wire.metadata([TOPIC], version=12, auto=False).topics[0].topic_id
    for name in ("m1", "m2"):
        join(wire, GROUP, name, [TOPIC])  # the share-partition is initialized at the first
    members = [Member(broker.port, name, topic_id) for name in ("m1", "m2")]
    assert acquired(members[0].fetch()) == []
    started = read_state(broker, GROUP, topic_id)  # the start the first fetch wrote
    assert (started.error, started.start_offset, started.batches) == (ErrorCode.NO_ERROR, 0, ())
    for _ in range(2):
        wire.produce(TOPIC, 0, batch(5))  # offsets 0-4 and 5-9
    return broker, wire, topic_id, members


@pytest.fixture
def setup(make_broker):
    broker, wire, topic_id, members = start_queue(make_broker, LOCK_MS)
    yield broker, wire, topic_id, members
    for member in members:
        member.connection.close()
    wire.close()


@pytest.mark.spec("SHARE-19", "SHARE-2")
def test_two_members_get_disjoint_records_and_the_batches_that_hold_them(setup):
    _, _, _, (m1, m2) = setup
    first, second = m1.fetch(), m2.fetch()
    assert acquired(first) == [(0, 4, 1)]
    assert acquired(second) == [(5, 9, 1)]
    assert first.acquisition_lock_timeout_ms == LOCK_MS
    assert len(partition_of(first).records) > 0
    assert acquired(m1.fetch()) == []  # nothing left


@pytest.mark.spec("SHARE-21", "SHARE-6")
def test_an_expired_lock_redelivers_and_acknowledgements_are_written_first(setup):
    broker, _, topic_id, (m1, m2) = setup
    m1.fetch()
    m2.fetch()
    answer = m1.acknowledge([(0, 3, ACCEPT), (4, 4, REJECT)])
    assert partition_of(answer).error_code == ErrorCode.NO_ERROR
    # written before the answer: the share coordinator has it already
    assert read_state(broker, GROUP, topic_id).start_offset == 5
    time.sleep(LOCK_MS / 1000 + 0.3)  # m2 never acknowledges: its lock expires
    assert acquired(m1.fetch()) == [(5, 9, 2)]
    # the expiry was written: 5-9 available after one delivery (m1's second is in flight)
    expired = (5, (StateBatch(5, 9, AVAILABLE, 1),))
    state = wait_for_state(
        broker, GROUP, topic_id, lambda s: (s.start_offset, s.batches) == expired
    )
    assert (state.start_offset, state.batches) == expired
    # m2's acknowledgement is too late: it holds nothing now
    answer = m2.acknowledge([(5, 9, ACCEPT)])
    assert partition_of(answer).error_code == ErrorCode.INVALID_RECORD_STATE


@pytest.mark.spec("SHARE-5", "SHARE-20")
def test_the_delivery_limit_archives_and_piggybacked_acknowledgements(setup):
    broker, _, topic_id, (m1, m2) = setup
    assert acquired(m1.fetch(max_records=10)) == [(0, 9, 1)]
    answer = m1.fetch(acks=[(0, 9, RELEASE)], max_records=10)  # released, then fetched again
    assert partition_of(answer).acknowledge_error_code == ErrorCode.NO_ERROR
    assert acquired(answer) == [(0, 9, 2)]
    answer = m1.fetch(acks=[(0, 9, RELEASE)], max_records=10)  # the second delivery was the last
    assert acquired(answer) == []
    state = read_state(broker, GROUP, topic_id)
    assert (state.start_offset, state.batches) == (10, ())  # all archived: the SPSO passed them
    assert acquired(m2.fetch(max_records=10)) == []


@pytest.mark.spec("SHARE-22")
def test_a_waiting_share_fetch_is_woken_by_an_append(setup):
    _, wire, _, (m1, _) = setup
    assert acquired(m1.fetch(max_records=10)) == [(0, 9, 1)]
    timer = threading.Timer(0.3, lambda: wire.produce(TOPIC, 0, batch(3)))
    timer.start()
    began = time.monotonic()
    answer = m1.fetch(max_records=10, max_wait_ms=20_000)
    timer.join()
    assert acquired(answer) == [(10, 12, 1)]
    assert time.monotonic() - began < 20  # woken, not expired


@pytest.mark.spec("SHARE-13", "SHARE-23")
def test_session_and_topic_errors(setup):
    _, _, _, (m1, m2) = setup
    assert m1.fetch(epoch=7).error_code == ErrorCode.INVALID_SHARE_SESSION_EPOCH
    assert m2.acknowledge([(0, 0, ACCEPT)], epoch=3).error_code == (
        ErrorCode.SHARE_SESSION_NOT_FOUND
    )
    assert m2.acknowledge([(0, 0, ACCEPT)], epoch=0).error_code == (
        ErrorCode.INVALID_SHARE_SESSION_EPOCH
    )
    answer = m2.fetch(topic_id=uuid.uuid4())
    assert partition_of(answer).error_code == ErrorCode.UNKNOWN_TOPIC_ID
    # closing the session (epoch -1) releases what the member holds, at once
    assert acquired(m1.fetch()) == [(0, 4, 1)]
    closed = m1.fetch(epoch=-1)
    assert closed.error_code == ErrorCode.NO_ERROR and acquired(closed) == []
    assert acquired(m2.fetch(max_records=10)) == [(0, 4, 2), (5, 9, 1)]


@pytest.mark.spec("SHARE-22", "SHARE-6")
def test_a_waiting_share_fetch_is_woken_by_a_lock_expiry(setup):
    broker, _, topic_id, (m1, m2) = setup
    assert acquired(m2.fetch(max_records=10)) == [(0, 9, 1)]
    began = time.monotonic()
    answer = m1.fetch(max_records=10, max_wait_ms=20_000)
    assert acquired(answer) == [(0, 9, 2)]
    assert time.monotonic() - began < 20  # woken by the lock timer, not expired
    # the expiry was written (the acquisitions never are)
    expired = (StateBatch(0, 9, AVAILABLE, 1),)
    assert wait_for_state(broker, GROUP, topic_id, lambda s: s.batches == expired).batches == (
        expired
    )


@pytest.mark.spec("SHARE-22")
def test_a_waiting_share_fetch_is_woken_by_another_members_release(setup):
    """m2 holds 0-9 and releases 0-4 while m1 waits: m1 is answered with 0-4 at once. Had it
    waited for m2's locks to expire (1 s), it would have acquired 0-9."""
    _, _, _, (m1, m2) = setup
    assert acquired(m2.fetch(max_records=10)) == [(0, 9, 1)]
    assert acquired(m1.fetch()) == []  # m1 opens its session: nothing to acquire
    release = threading.Timer(0.2, lambda: m2.acknowledge([(0, 4, RELEASE)]))
    release.start()
    answer = m1.fetch(max_records=10, max_wait_ms=20_000)
    release.join()
    assert acquired(answer) == [(0, 4, 2)]


@pytest.mark.spec("SHARE-16")
def test_a_member_leaving_the_group_releases_its_records(setup):
    broker, _, topic_id, (m1, m2) = setup
    assert acquired(m1.fetch(max_records=10)) == [(0, 9, 1)]
    manager = broker.broker.share_partitions
    broker.call(lambda: manager.member_left(GROUP, "m1"))
    assert manager.sessions.get(GROUP, "m1") is None
    assert acquired(m2.fetch(max_records=10)) == [(0, 9, 2)]
    assert m1.fetch().error_code == ErrorCode.SHARE_SESSION_NOT_FOUND
    released = (StateBatch(0, 9, AVAILABLE, 1),)  # the release was written
    assert wait_for_state(broker, GROUP, topic_id, lambda s: s.batches == released).batches == (
        released
    )


@pytest.mark.spec("SHARE-23", "SHARE-24")
def test_a_partition_led_elsewhere_names_its_leader_and_comes_back_from_the_state(setup):
    broker, _, _, (m1, m2) = setup
    assert acquired(m1.fetch(max_records=10)) == [(0, 9, 1)]
    partition = broker.broker.replica_manager.partitions[(TOPIC, 0)]
    epoch = partition.leader_epoch

    def lead(leader_id: int, leader_epoch: int) -> None:
        partition.leader_id, partition.leader_epoch = leader_id, leader_epoch

    broker.call(lambda: lead(7, epoch + 1))  # as if broker 7 had been elected
    answer = m2.fetch()
    data = partition_of(answer)
    assert data.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert (data.current_leader.leader_id, data.current_leader.leader_epoch) == (7, epoch + 1)
    assert answer.node_endpoints == []  # broker 7 is not alive: no endpoint
    # Leadership comes back: the share-partition is read again, m1's locks are gone
    broker.call(lambda: lead(0, epoch + 2))
    assert acquired(m2.fetch(max_records=10)) == [(0, 9, 1)]


@pytest.mark.spec("SHARE-25")
def test_a_session_ends_with_its_connection_and_its_records_come_back_at_once(make_broker):
    long_lock_ms = 30_000  # Kafka's default: what a killed member's records would wait
    broker, wire, topic_id, (m1, m2) = start_queue(make_broker, long_lock_ms)
    manager = broker.broker.share_partitions
    purgatory = broker.broker.replica_manager.fetch_purgatory

    def waiting() -> int:  # ShareFetches in the purgatory, on the share-partition's partition
        return broker.call(lambda: purgatory.watched((TOPIC, 0)))

    try:
        assert acquired(m1.fetch(max_records=10)) == [(0, 9, 1)]
        # m2 long-polls: nothing is available
        began = time.monotonic()
        polling = m2.connection.send(
            ApiKey.SHARE_FETCH, m2.fetch_body(max_records=10, max_wait_ms=20_000)
        )
        assert wait_until(lambda: waiting() == 1)
        m1.connection.close()  # no acknowledgement, no epoch -1: as a member killed with -9
        # the broker sees the connection end: m1's records come back and wake m2's poll,
        # long before m1's locks would expire, as their second delivery
        answer = m2.connection.wait(polling)
        m2.epoch += 1
        assert acquired(answer) == [(0, 9, 2)]
        assert time.monotonic() - began < 20  # woken, not expired
        released = (StateBatch(0, 9, AVAILABLE, 1),)  # the release was written
        state = wait_for_state(broker, GROUP, topic_id, lambda s: s.batches == released)
        assert state.batches == released
        again = Member(broker.port, "m1", topic_id)
        again.epoch = 2  # where m1's session was
        assert again.fetch().error_code == ErrorCode.SHARE_SESSION_NOT_FOUND
        again.connection.close()

        # A member whose ShareFetch is still waiting when its connection ends acquires
        # nothing when records come: they are m2's, not held for the dead connection.
        join(wire, GROUP, "m3", [TOPIC])
        m3 = Member(broker.port, "m3", topic_id)
        m3.connection.send(ApiKey.SHARE_FETCH, m3.fetch_body(max_records=10, max_wait_ms=20_000))
        assert wait_until(lambda: waiting() == 1)
        m3.connection.close()
        assert wait_until(lambda: broker.call(lambda: not manager.sessions.get(GROUP, "m3")))
        wire.produce(TOPIC, 0, batch(3))  # offsets 10-12
        assert acquired(m2.fetch(max_records=10, max_wait_ms=10_000)) == [(10, 12, 1)]
    finally:
        m2.connection.close()
        wire.close()


@pytest.mark.spec("SHARE-8")
def test_read_committed_archives_aborted_transactions_and_stops_at_the_lso(make_broker):
    broker = make_broker()
    manager = broker.broker.share_partitions
    manager.group_config = lambda group: GroupShareConfig(EARLIEST, read_committed=True)
    wire = Wire(broker.port)
    pid, epoch = started(wire, TOPIC)
    for values, commit in (((b"a", b"b"), False), ((b"c",), True)):
        assert add_partitions(wire, pid, epoch, TOPIC, 0) == {0}
        records = txn_batch(pid, epoch, 0 if commit is False else 2, *values)
        assert wire.produce(TOPIC, 0, records, transactional_id=TXN).error_code == 0
        assert end(wire, pid, epoch, commit=commit) == 0  # a marker after each
    # a third transaction stays open: the LSO stays at its first offset, 5
    assert add_partitions(wire, pid, epoch, TOPIC, 0) == {0}
    open_txn = txn_batch(pid, epoch, 3, b"d")
    assert wire.produce(TOPIC, 0, open_txn, transactional_id=TXN).error_code == 0
    topic_id = wire.metadata([TOPIC], version=12, auto=False).topics[0].topic_id
    join(wire, GROUP, "m1", [TOPIC])  # the share group coordinator initializes the state
    member = Member(broker.port, "m1", topic_id)
    try:
        # 0-1 aborted: archived; 2 and 4 the markers, 3 committed; 5 past the LSO
        assert acquired(member.fetch(max_records=100)) == [(2, 4, 1)]
        answer = member.acknowledge([(2, 2, 0), (3, 3, ACCEPT), (4, 4, 0)])  # 0: GAP
        assert partition_of(answer).error_code == ErrorCode.NO_ERROR
        assert read_state(broker, GROUP, topic_id).start_offset == 5
    finally:
        member.connection.close()
        wire.close()
