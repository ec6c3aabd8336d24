"""Reads from followers (KIP-392) on one in-process broker, with pretend replicas.

As a leader, the broker leads t-0 with the ISR {0, 99} in epoch 1; broker 99 does not
exist: the test plays it by fetching with replica id 99, and the broker's view of which
brokers are alive and in which rack (`ReplicaManager.broker_racks`, what the metadata would
say) is set to rack a for broker 0 and rack b for 99. As a follower, the broker follows
t-0 from the pretend leader 99: the test appends the leader's batches to it and sets its
high watermark, as its fetcher would, and nothing else fetches.
"""

from __future__ import annotations

import threading
import time

import pytest

from kafka_ref.errors import ErrorCode
from kafka_ref.protocol.messages import ApiKey
from kafka_ref.record.batch import build_batch
from kafka_ref.record.record import Record
from kafka_ref.replication import messages as core
from kafka_ref.replication.follower_fetch_state import FetchState
from kafka_ref.replication.messages import LeaderAndIsr
from kafka_ref.replication.replica_selector import RACK_AWARE_REPLICA_SELECTOR
from kafka_ref.replication.truncation import TruncationRule
from kafka_ref.server.follower_fetcher import FetcherPartitions
from tests.unit.server.conftest import T0, Wire, batch, fetch_body
from tests.unit.server.test_replication_leader import wait_parked

PRETEND = 99
SELECTING = {"replica.selector.class": RACK_AWARE_REPLICA_SELECTOR, "broker.rack": "a"}


def consumer_fetch(
    wire: Wire,
    offset: int,
    *,
    version: int = 12,
    rack: str = "",
    epoch: int = -1,
    isolation_level: int = 0,
    max_wait_ms: int = 0,
    min_bytes: int = 1,
):
    body = fetch_body(
        [("r", 0, offset)],
        max_wait_ms=max_wait_ms,
        min_bytes=min_bytes,
        isolation_level=isolation_level,
        current_leader_epoch=epoch,
    )
    body.rack_id = rack
    return wire.request(ApiKey.FETCH, version, body).responses[0].partitions[0]


def offsets(data) -> list[int]:
    from kafka_ref.conformance.wire import decode_batches

    return [b.base_offset + i for b in decode_batches(data.records) for i in range(len(b.records))]


# ---------------------------------------------------------------------- the leader's side
def lead(broker, wire):
    """t-0 with 4 records (0-3), led by broker 0 in epoch 1 with the ISR {0, 99}; broker 99
    in rack b has fetched them all."""
    assert wire.create_topic("r") == 0
    assert wire.produce("r", 0, batch(4)).error_code == 0
    manager = broker.broker.replica_manager
    manager.broker_racks = lambda listener: {0: "a", PRETEND: "b"}
    partition = manager.get_partition("r", 0)
    state = LeaderAndIsr("r", 0, 0, 1, (0, PRETEND), (0, PRETEND))
    broker.call(lambda: partition.make_leader(state))
    follower = fetch_body([("r", 0, 4)])
    follower.replica_id = PRETEND
    follower.topics[0].partitions[0].current_leader_epoch = 1
    follower.topics[0].partitions[0].log_start_offset = 0
    assert wire.request(ApiKey.FETCH, 10, follower).responses[0].partitions[0].error_code == 0
    return partition


@pytest.mark.spec("REPL-16")
def test_the_leader_sends_a_consumer_of_the_followers_rack_there_at_once(make_broker):
    broker = make_broker(props=SELECTING)
    with Wire(broker.port) as wire:
        lead(broker, wire)
        started = time.monotonic()
        data = consumer_fetch(wire, 0, rack="b", max_wait_ms=30_000, min_bytes=1 << 20)
        assert time.monotonic() - started < 20  # answered, not expired after 30 s
        assert data.error_code == ErrorCode.NO_ERROR
        assert data.preferred_read_replica == PRETEND
        assert len(data.records) == 0  # the records come from broker 99
        assert (data.high_watermark, data.last_stable_offset, data.log_start_offset) == (4, 4, 0)
        # from the leader's own rack, or naming none, or below v11: the leader reads
        for rack, version in (("a", 12), ("", 12), ("b", 10)):
            data = consumer_fetch(wire, 0, rack=rack, version=version)
            assert data.preferred_read_replica == -1
            assert offsets(data) == [0, 1, 2, 3], (rack, version)


@pytest.mark.spec("REPL-16", "REPL-8")
def test_a_fenced_consumer_is_told_so_before_it_is_sent_anywhere(make_broker):
    broker = make_broker(props=SELECTING)
    with Wire(broker.port) as wire:
        lead(broker, wire)
        data = consumer_fetch(wire, 0, rack="b", epoch=0)
        assert data.error_code == ErrorCode.FENCED_LEADER_EPOCH
        assert data.preferred_read_replica == -1
        assert consumer_fetch(wire, 0, rack="b", epoch=1).preferred_read_replica == PRETEND


@pytest.mark.spec("REPL-14")
def test_without_a_selector_the_leader_serves_every_rack(make_broker):
    broker = make_broker(props={"broker.rack": "a"})
    with Wire(broker.port) as wire:
        lead(broker, wire)
        data = consumer_fetch(wire, 0, rack="b")
        assert data.preferred_read_replica == -1
        assert offsets(data) == [0, 1, 2, 3]


@pytest.mark.spec("REPL-15", "REPL-16")
def test_a_follower_out_of_the_isr_is_not_named(make_broker):
    broker = make_broker(props=SELECTING)
    with Wire(broker.port) as wire:
        partition = lead(broker, wire)
        assert consumer_fetch(wire, 0, rack="b").preferred_read_replica == PRETEND
        shrunk = LeaderAndIsr("r", 0, 0, 2, (0,), (0, PRETEND))  # 99 left the ISR
        broker.call(lambda: partition.make_leader(shrunk))
        data = consumer_fetch(wire, 0, rack="b")
        assert data.preferred_read_replica == -1
        assert offsets(data) == [0, 1, 2, 3]


# ---------------------------------------------------------------------- the follower's side
def leader_batch(base_offset: int, count: int, **kw) -> bytes:
    records = [Record(b"k", b"v%d" % (base_offset + i), timestamp=T0) for i in range(count)]
    return build_batch(records, base_offset=base_offset, partition_leader_epoch=1, **kw)


@pytest.fixture
def followed(make_broker):
    """Broker 0 follows t-0 from the pretend leader 99 in epoch 1, with the leader's records
    0-4 appended (LEO 5) and its HW at 3: offsets 3 and 4 are held but not committed."""
    broker = make_broker(props=SELECTING | {"broker.rack": "b"})
    with Wire(broker.port) as wire:
        assert wire.create_topic("r") == 0
    partition = broker.broker.replica_manager.get_partition("r", 0)

    def follow() -> None:
        partition.make_follower(LeaderAndIsr("r", 0, PRETEND, 1, (PRETEND, 0), (PRETEND, 0)))
        partition.append_as_follower(leader_batch(0, 3) + leader_batch(3, 2))
        partition.update_follower_high_watermark(3)

    broker.call(follow)
    assert (partition.log_end_offset, partition.high_watermark) == (5, 3)
    return broker, partition


@pytest.mark.spec("REPL-17", "BROKER-78")
def test_a_follower_serves_a_consumer_below_its_own_high_watermark(followed):
    broker, _ = followed
    with Wire(broker.port) as wire:
        data = consumer_fetch(wire, 0, rack="b")
        assert data.error_code == ErrorCode.NO_ERROR
        assert offsets(data) == [0, 1, 2]  # 3 and 4 are on disk here, not yet committed
        assert data.high_watermark == 3
        assert data.preferred_read_replica == -1  # only a leader names one


@pytest.mark.spec("REPL-17", "BROKER-23")
def test_past_the_followers_hw_no_records_at_once_and_past_its_log_out_of_range(followed):
    broker, _ = followed
    with Wire(broker.port) as wire:
        started = time.monotonic()
        data = consumer_fetch(wire, 4, max_wait_ms=30_000)  # held, above the HW
        assert time.monotonic() - started < 20  # answered, not expired after 30 s
        assert (data.error_code, len(data.records), data.high_watermark) == (0, 0, 3)
        beyond = consumer_fetch(wire, 6)  # the leader may have it; this follower does not
        assert beyond.error_code == ErrorCode.OFFSET_OUT_OF_RANGE
        assert beyond.high_watermark == -1  # the client goes back to the leader


@pytest.mark.spec("REPL-17")
def test_a_consumer_waiting_at_the_followers_hw_is_answered_when_it_moves(followed):
    broker, partition = followed
    out = {}

    def long_poll() -> None:
        with Wire(broker.port) as wire:
            out["data"] = consumer_fetch(wire, 3, max_wait_ms=30_000)

    polling = threading.Thread(target=long_poll)
    polling.start()
    wait_parked(broker.broker.replica_manager.fetch_purgatory)
    fetchers = FetcherPartitions(
        TruncationRule.LEADER_EPOCH,
        max_bytes=1 << 20,
        storage_failed=lambda tp, err: None,
        high_watermark_moved=broker.broker.replica_manager.wake,
    )

    def leader_answers() -> None:  # the follower's fetcher hears the leader's HW 5
        fetchers.add(partition)
        fetcher = fetchers.partitions[("r", 0)]
        fetcher.state = FetchState.FETCHING
        request = fetcher.next_request()
        fetchers.on_answers(
            {("r", 0): (fetcher, request)},
            [(("r", 0), core.FetchResult(ErrorCode.NO_ERROR, b"", 5, 0, 5))],
        )

    broker.call(leader_answers)
    polling.join(20)
    assert not polling.is_alive(), "the waiting fetch was not answered"
    assert offsets(out["data"]) == [3, 4]
    assert out["data"].high_watermark == 5


@pytest.mark.spec("REPL-17")
def test_read_committed_at_a_follower_stops_at_its_last_stable_offset(make_broker):
    broker = make_broker(props={"broker.rack": "b"})
    with Wire(broker.port) as wire:
        assert wire.create_topic("r") == 0
    partition = broker.broker.replica_manager.get_partition("r", 0)
    open_transaction = leader_batch(
        2, 2, producer_id=7, producer_epoch=0, base_sequence=0, is_transactional=True
    )

    def follow() -> None:
        partition.make_follower(LeaderAndIsr("r", 0, PRETEND, 1, (PRETEND, 0), (PRETEND, 0)))
        partition.append_as_follower(leader_batch(0, 2) + open_transaction + leader_batch(4, 1))
        partition.update_follower_high_watermark(5)

    broker.call(follow)
    with Wire(broker.port) as wire:
        uncommitted = consumer_fetch(wire, 0)
        assert offsets(uncommitted) == [0, 1, 2, 3, 4]
        committed = consumer_fetch(wire, 0, isolation_level=1)
        assert committed.last_stable_offset == 2  # where the open transaction begins
        assert offsets(committed) == [0, 1]


@pytest.mark.spec("REPL-17")
def test_list_offsets_stays_with_the_leader(followed):
    broker, _ = followed
    with Wire(broker.port) as wire:
        assert wire.list_offset("r", 0, -1).error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
