"""A replica as leader and follower (Kafka `Partition`), driven directly with values."""

from __future__ import annotations

import pathlib

import pytest

from kafka_ref.clock import ManualClock
from kafka_ref.config import LogConfig
from kafka_ref.errors import ErrorCode
from kafka_ref.log.log import Log
from kafka_ref.record.batch import build_batch, iter_batch_headers
from kafka_ref.record.record import Record
from kafka_ref.replication.follower_fetch_state import FetchState, PartitionFetcher
from kafka_ref.replication.leader_epoch import LeaderEpochFileCache
from kafka_ref.replication.messages import (
    AlterIsrResult,
    EpochRequest,
    FencedLeaderEpochError,
    FetchRequest,
    LeaderAndIsr,
    NotEnoughReplicasError,
    NotLeaderOrFollowerError,
)
from kafka_ref.replication.partition import (
    Partition,
    leader_high_watermark,
    read_high_watermarks,
    write_high_watermarks,
)
from kafka_ref.replication.replica import Replica

T0 = 1_700_000_000_000
LAG = 1_000


def replica(tmp_path, broker: int, clock, **config) -> Partition:
    directory = tmp_path / f"b{broker}" / "t-0"
    log = Log.open(directory, LogConfig(**config), clock)
    cache = LeaderEpochFileCache.load(directory)
    return Partition("t", 0, broker, log, cache, clock, replica_lag_time_max_ms=LAG)


def state(leader, epoch, isr=(0, 1, 2), version=0):
    return LeaderAndIsr("t", 0, leader, epoch, tuple(isr), (0, 1, 2), version)


def batch(value: bytes) -> bytes:
    return build_batch([Record(None, value, timestamp=T0)])


def fetch(leader: Partition, broker: int, offset: int, epoch: int | None = None, last=-1):
    epoch = leader.leader_epoch if epoch is None else epoch
    return leader.fetch(FetchRequest("t", 0, broker, offset, epoch, last))


def accept_alter(p: Partition) -> None:
    alter = p.take_alter_isr()
    assert alter is not None
    new = state(p.broker_id, p.leader_epoch, alter.new_isr, alter.version + 1)
    p.on_alter_isr_result(AlterIsrResult("t", 0, ErrorCode.NO_ERROR, new))


@pytest.fixture
def clock():
    return ManualClock(T0)


@pytest.mark.spec("REPL-1", "REPL-9")
def test_leader_stamps_its_epoch_on_what_it_appends(tmp_path, clock):
    leader = replica(tmp_path, 0, clock)
    leader.make_leader(state(0, 3))
    leader.append_records_to_leader(batch(b"a"), 1)
    data = leader.log.read(0, 1 << 20).read_bytes()
    [(_, header)] = list(iter_batch_headers(data))
    assert header.partition_leader_epoch == 3
    assert [tuple(e) for e in leader.cache.entries] == [(3, 0)]


@pytest.mark.spec("REPL-2")
def test_consumers_read_only_below_the_high_watermark(tmp_path, clock):
    leader = replica(tmp_path, 0, clock)
    leader.make_leader(state(0, 0, isr=(0, 1)))
    for v in (b"a", b"b", b"c"):
        leader.append_records_to_leader(batch(v), 1)
    assert leader.high_watermark == 0  # follower 1 has not fetched
    assert leader.fetch(FetchRequest("t", 0, -1, 0)).records == b""
    fetch(leader, 1, 2)  # the follower has 0 and 1: HW 2
    assert leader.high_watermark == 2
    consumer = leader.fetch(FetchRequest("t", 0, -1, 0))
    assert consumer.error == ErrorCode.NO_ERROR and consumer.high_watermark == 2
    assert [h.base_offset for _, h in iter_batch_headers(consumer.records)] == [0, 1]
    follower = fetch(leader, 1, 0)  # a follower reads past the HW, to the LEO
    assert [h.base_offset for _, h in iter_batch_headers(follower.records)] == [0, 1, 2]


@pytest.mark.spec("REPL-3")
def test_the_hw_rule_is_the_smallest_leo_over_the_isr_and_never_goes_down():
    assert leader_high_watermark(10, [7, 9], high_watermark=3) == 7
    assert leader_high_watermark(10, [], high_watermark=3) == 10  # an ISR of one
    assert leader_high_watermark(10, [7, -1], high_watermark=3) == 3  # one not heard from
    assert leader_high_watermark(10, [2, 9], high_watermark=3) == 3  # a follower went back
    assert leader_high_watermark(5, [8, 9], high_watermark=3) == 5  # the leader is slowest


@pytest.mark.spec("REPL-3", "REPL-4")
def test_hw_is_the_smallest_leo_over_the_isr_and_never_goes_down(tmp_path, clock):
    leader = replica(tmp_path, 0, clock)
    leader.make_leader(state(0, 0))
    info = leader.append_records_to_leader(batch(b"a"), -1)
    leader.append_records_to_leader(batch(b"b"), -1)
    assert leader.check_enough_replicas_reach_offset(info.last_offset + 1) == (
        False,
        ErrorCode.NO_ERROR,
    )
    fetch(leader, 1, 2)
    assert leader.high_watermark == 0  # broker 2 unknown yet (-1)
    result = fetch(leader, 2, 1)
    assert leader.high_watermark == 1 and result.high_watermark == 1
    assert leader.check_enough_replicas_reach_offset(1) == (True, ErrorCode.NO_ERROR)
    fetch(leader, 2, 0)  # a follower that went back (it truncated) does not lower the HW
    assert leader.high_watermark == 1
    fetch(leader, 2, 2)
    assert leader.high_watermark == 2


@pytest.mark.spec("REPL-5")
def test_min_insync_replicas(tmp_path, clock):
    leader = replica(tmp_path, 0, clock, min_insync_replicas=2)
    leader.make_leader(state(0, 0, isr=(0,)))
    with pytest.raises(NotEnoughReplicasError):
        leader.append_records_to_leader(batch(b"a"), -1)
    assert leader.log_end_offset == 0  # nothing written
    leader.append_records_to_leader(batch(b"a"), 1)  # acks=1 is not refused...
    assert leader.log_end_offset == 1
    assert leader.high_watermark == 0  # ...but not committed under min.insync.replicas
    fetch(leader, 1, 1)  # follower 1 caught up: back in the ISR, then the HW moves
    accept_alter(leader)
    assert leader.isr == (0, 1)
    fetch(leader, 1, 1)
    assert leader.high_watermark == 1


@pytest.mark.spec("REPL-5")
def test_min_insync_replicas_is_capped_at_the_replication_factor(tmp_path, clock):
    leader = replica(tmp_path, 0, clock, min_insync_replicas=2)
    leader.make_leader(LeaderAndIsr("t", 0, 0, 0, (0,), (0,), 0))  # one replica
    leader.append_records_to_leader(batch(b"a"), -1)  # min(2, 1 replica) = 1 in the ISR
    assert leader.high_watermark == 1


@pytest.mark.spec("REPL-6")
def test_an_isr_that_shrank_after_the_append_is_not_enough_replicas_after_append(tmp_path, clock):
    leader = replica(tmp_path, 0, clock, min_insync_replicas=2)
    leader.make_leader(state(0, 0, isr=(0, 1)))
    leader.append_records_to_leader(batch(b"a"), -1)
    fetch(leader, 1, 1)
    assert leader.high_watermark == 1  # committed, but the acks=all answer is not out yet
    clock.advance(LAG + 1)  # follower 1 falls behind and leaves the ISR
    leader.maybe_shrink_isr()
    accept_alter(leader)
    assert leader.isr == (0,)
    assert leader.check_enough_replicas_reach_offset(1) == (
        True,
        ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
    )


@pytest.mark.spec("ISR-1")
def test_a_follower_is_caught_up_at_a_fetch_reaching_the_leo_or_the_previous_fetchs_leo():
    follower = Replica(1, now=0, in_isr=False)
    follower.update_fetch_state(5, leader_end_offset=5, now=100)  # reaches the LEO
    assert follower.last_caught_up_time_ms == 100
    follower.update_fetch_state(5, leader_end_offset=8, now=200)  # the LEO of the fetch at 100
    assert follower.last_caught_up_time_ms == 100
    follower.update_fetch_state(7, leader_end_offset=9, now=300)  # 7 < 8, the LEO at 200
    assert follower.last_caught_up_time_ms == 100
    follower.update_fetch_state(9, leader_end_offset=12, now=400)  # 9 >= 9, the LEO at 300
    assert follower.last_caught_up_time_ms == 300
    follower.update_fetch_state(12, leader_end_offset=12, now=500)
    assert follower.last_caught_up_time_ms == 500
    assert follower.log_end_offset == 12


@pytest.mark.spec("ISR-3", "ISR-5")
def test_isr_shrinks_after_the_lag_time_through_the_controller(tmp_path, clock):
    leader = replica(tmp_path, 0, clock)
    leader.make_leader(state(0, 0))
    leader.append_records_to_leader(batch(b"a"), 1)
    fetch(leader, 1, 1)
    clock.advance(LAG)
    leader.maybe_shrink_isr()
    assert leader.pending_isr is None  # broker 2 has had exactly the lag time: kept
    clock.advance(1)
    fetch(leader, 1, 1)  # broker 1 keeps up; broker 2 never fetched
    leader.maybe_shrink_isr()
    assert leader.pending_isr.new_isr == (0, 1)
    assert leader.isr == (0, 1, 2) and leader.maximal_isr == (0, 1, 2)  # until it is applied
    accept_alter(leader)
    assert leader.isr == (0, 1) and leader.high_watermark == 1


@pytest.mark.spec("ISR-2", "ISR-5")
def test_isr_expands_at_the_hw_and_counts_the_joining_replica_at_once(tmp_path, clock):
    leader = replica(tmp_path, 0, clock)
    leader.make_leader(state(0, 0, isr=(0, 1)))
    leader.append_records_to_leader(batch(b"a"), 1)
    fetch(leader, 1, 1)
    leader.append_records_to_leader(batch(b"b"), 1)
    assert leader.high_watermark == 1
    fetch(leader, 2, 0)
    assert leader.pending_isr is None  # 0 < HW 1: not in sync
    fetch(leader, 2, 1)  # reached the HW: joins
    assert leader.pending_isr.new_isr == (0, 1, 2) and leader.isr == (0, 1)
    fetch(leader, 1, 2)  # broker 1 has both; broker 2, in the maximal ISR, only one
    assert leader.high_watermark == 1
    accept_alter(leader)
    assert leader.isr == (0, 1, 2)


@pytest.mark.spec("ISR-4")
def test_a_new_leaders_isr_members_get_the_lag_time_to_fetch(tmp_path, clock):
    """The followers have never fetched from this leader. They stay in the ISR for
    replica.lag.time.max.ms from the moment it became leader, and the HW waits for them."""
    clock.advance(10 * LAG)  # long after time 0: the grace period counts from now
    leader = replica(tmp_path, 0, clock)
    leader.make_leader(state(0, 0))
    leader.append_records_to_leader(batch(b"a"), 1)
    assert leader.high_watermark == 0  # followers' LEOs are unknown: the HW holds
    clock.advance(LAG - 1)
    leader.maybe_shrink_isr()
    assert leader.pending_isr is None
    clock.advance(2)  # lag + 1 ms
    leader.maybe_shrink_isr()
    assert leader.pending_isr is not None and leader.pending_isr.new_isr == (0,)


@pytest.mark.spec("ISR-2")
def test_a_follower_joins_only_after_reaching_the_start_of_the_leaders_epoch(tmp_path, clock):
    leader = replica(tmp_path, 0, clock)
    leader.make_leader(state(0, 0, isr=(0,)))
    for v in (b"a", b"b", b"c"):
        leader.append_records_to_leader(batch(v), 1)
    leader.make_leader(state(0, 1, isr=(0,)))  # epoch 1 starts at 3; HW is 3 already
    leader.high_watermark = 1  # (a leader that took over with a low HW)
    fetch(leader, 1, 2)
    assert leader.pending_isr is None  # past the HW but not at the epoch start
    fetch(leader, 1, 3)
    assert leader.pending_isr.new_isr == (0, 1)


@pytest.mark.spec("REPL-8")
def test_fencing_and_not_leader(tmp_path, clock):
    leader = replica(tmp_path, 0, clock)
    leader.make_leader(state(0, 5))
    with pytest.raises(FencedLeaderEpochError):
        leader.make_leader(state(0, 5))
    with pytest.raises(FencedLeaderEpochError):
        leader.make_follower(state(1, 4))
    assert fetch(leader, 1, 0, epoch=4).error == ErrorCode.FENCED_LEADER_EPOCH
    assert fetch(leader, 1, 0, epoch=6).error == ErrorCode.UNKNOWN_LEADER_EPOCH
    epoch_answer = leader.last_offset_for_leader_epoch(EpochRequest("t", 0, 1, 4, 4))
    assert epoch_answer.error == ErrorCode.FENCED_LEADER_EPOCH
    follower = replica(tmp_path, 1, clock)
    follower.make_follower(state(0, 5))
    with pytest.raises(NotLeaderOrFollowerError):
        follower.append_records_to_leader(batch(b"x"), 1)
    assert fetch(follower, 2, 0, epoch=5).error == ErrorCode.NOT_LEADER_OR_FOLLOWER
    stale = AlterIsrResult("t", 0, ErrorCode.FENCED_LEADER_EPOCH)
    leader.maybe_shrink_isr()
    leader.on_alter_isr_result(stale)  # refused: the ISR stays
    assert leader.isr == (0, 1, 2) and leader.pending_isr is None


@pytest.mark.spec("REPL-7", "TRUNC-8")
def test_a_follower_copies_bytes_and_takes_min_of_leader_hw_and_own_leo(tmp_path, clock):
    leader = replica(tmp_path, 0, clock)
    leader.make_leader(state(0, 2, isr=(0, 1)))
    for v in (b"a", b"b", b"c"):
        leader.append_records_to_leader(batch(v), 1)
    follower = replica(tmp_path, 1, clock)
    follower.make_follower(state(0, 2, isr=(0, 1)))
    fetcher = PartitionFetcher(follower, max_bytes=1)  # one batch per fetch
    assert fetcher.state is FetchState.FETCHING  # an empty follower has nothing to cut
    request = fetcher.next_request()
    assert fetcher.on_fetch_result(request, leader.fetch(request)) > 0
    assert follower.high_watermark == 0  # the leader's HW was 0 when it answered
    while follower.log_end_offset < 3:
        request = fetcher.next_request()
        fetcher.on_fetch_result(request, leader.fetch(request))
    request = fetcher.next_request()
    fetcher.on_fetch_result(request, leader.fetch(request))
    assert leader.high_watermark == 3 and follower.high_watermark == 3
    assert follower.log.read(0, 1 << 20).read_bytes() == leader.log.read(0, 1 << 20).read_bytes()
    assert [tuple(e) for e in follower.cache.entries] == [(2, 0)]


@pytest.mark.spec("TRUNC-5", "TRUNC-6", "TRUNC-8")
def test_a_follower_truncates_by_epoch_before_fetching(tmp_path, clock):
    """The follower led epoch 1 and wrote x, y that nobody else got; the leader of epoch 2
    has a, b. The follower asks, cuts x and y, then fetches."""
    leader = replica(tmp_path, 0, clock)
    follower = replica(tmp_path, 1, clock)
    leader.make_leader(state(0, 0, isr=(0, 1)))
    leader.append_records_to_leader(batch(b"a"), 1)
    follower.make_follower(state(0, 0, isr=(0, 1)))
    fetcher = PartitionFetcher(follower)
    r = fetcher.next_request()
    fetcher.on_fetch_result(r, leader.fetch(r))
    follower.make_leader(state(1, 1, isr=(1,)))
    follower.append_records_to_leader(batch(b"x"), 1)
    follower.append_records_to_leader(batch(b"y"), 1)
    leader.make_leader(state(0, 2, isr=(0,)))
    leader.append_records_to_leader(batch(b"b"), 1)
    follower.make_follower(state(0, 3, isr=(0,)))
    leader.make_leader(state(0, 3, isr=(0,)))
    fetcher = PartitionFetcher(follower)
    assert fetcher.state is FetchState.TRUNCATING
    request = fetcher.next_request()
    assert isinstance(request, EpochRequest) and request.leader_epoch == 1
    fetcher.on_epoch_result(request, leader.last_offset_for_leader_epoch(request))
    assert follower.log_end_offset == 1 and fetcher.state is FetchState.FETCHING
    while (request := fetcher.next_request()).fetch_offset < leader.log_end_offset:
        fetcher.on_fetch_result(request, leader.fetch(request))
    assert follower.log.read(0, 1 << 20).read_bytes() == leader.log.read(0, 1 << 20).read_bytes()


@pytest.mark.spec("TRUNC-5")
@pytest.mark.parametrize("on_fetch", [True, False])
def test_a_follower_sends_its_last_epoch_only_if_it_truncates_on_fetch(tmp_path, clock, on_fetch):
    """Kafka 2.7+ followers send the epoch of their last batch with each fetch, and the
    leader answers a divergence with a diverging epoch; `truncate_on_fetch=False` is a
    2.0-2.6 follower: no epoch in its fetches, so no check, and the fetch goes on."""
    leader = replica(tmp_path, 0, clock)
    follower = replica(tmp_path, 1, clock)
    leader.make_leader(state(0, 1, isr=(0,)))
    for v in (b"a", b"b", b"c"):
        leader.append_records_to_leader(batch(v), 1)
    follower.make_leader(state(1, 0, isr=(1,)))
    for v in (b"x", b"y"):
        follower.append_records_to_leader(batch(v), 1)
    follower.make_follower(state(0, 1, isr=(0,)))
    fetcher = PartitionFetcher(follower, truncate_on_fetch=on_fetch)
    fetcher.state = FetchState.FETCHING  # as if OffsetsForLeaderEpoch had stopped too early
    request = fetcher.next_request()
    assert request.last_fetched_epoch == (0 if on_fetch else -1)
    result = leader.fetch(request)
    fetcher.on_fetch_result(request, result)
    if on_fetch:
        assert result.diverging_epoch == (0, 0) and follower.log_end_offset == 0
    else:  # x, y, c: diverged from a, b, c at offsets 0 and 1
        assert result.diverging_epoch is None and follower.log_end_offset == 3


@pytest.mark.spec("TRUNC-5")
def test_a_fetch_with_a_diverging_last_epoch_gets_a_diverging_epoch(tmp_path, clock):
    leader = replica(tmp_path, 0, clock)
    leader.make_leader(state(0, 0))
    leader.append_records_to_leader(batch(b"a"), 1)
    leader.make_leader(state(0, 2))
    leader.append_records_to_leader(batch(b"b"), 1)
    result = fetch(leader, 1, 3, last=1)  # the follower wrote epoch 1 up to offset 3
    assert result.diverging_epoch == (0, 1) and result.records == b""
    assert fetch(leader, 1, 1, last=0).diverging_epoch is None


@pytest.mark.spec("BROKER-66")
def test_a_consumer_naming_its_last_epoch_gets_the_same_answers(tmp_path, clock):
    leader = replica(tmp_path, 0, clock)
    leader.make_leader(state(0, 0, isr=(0,)))
    leader.append_records_to_leader(batch(b"a"), 1)
    leader.make_leader(state(0, 2, isr=(0,)))
    leader.append_records_to_leader(batch(b"b"), 1)
    consumer = -1
    assert fetch(leader, consumer, 3, last=1).diverging_epoch == (0, 1)  # epoch 1 never was
    assert fetch(leader, consumer, 1, last=0).diverging_epoch is None
    assert fetch(leader, consumer, 1, last=3).error == ErrorCode.OFFSET_OUT_OF_RANGE  # unknown
    leader.delete_records_before(1)
    assert fetch(leader, consumer, 0, last=0).error == ErrorCode.OFFSET_OUT_OF_RANGE  # gone


@pytest.mark.spec("REPL-10")
def test_replication_offset_checkpoint(tmp_path, clock):
    p = replica(tmp_path, 0, clock)
    p.high_watermark = 0
    path = str(tmp_path / "replication-offset-checkpoint")
    write_high_watermarks(path, [p])
    assert pathlib.Path(path).read_text() == "0\n1\nt 0 0\n"
    assert read_high_watermarks(path) == {("t", 0): 0}


@pytest.mark.spec("REPL-7")
def test_a_follower_appends_a_fetch_that_spans_several_of_the_leaders_segments(tmp_path, clock):
    """The leader's read crosses segment boundaries, so one fetch can hold more bytes than a
    segment; the follower appends it in segment-sized pieces instead of refusing it with
    RECORD_LIST_TOO_LARGE (and stalling its replication)."""
    leader = replica(tmp_path, 0, clock, segment_bytes=600)
    follower = replica(tmp_path, 1, clock, segment_bytes=600)
    leader.make_leader(state(0, 1, isr=(0, 1)))
    follower.make_follower(state(0, 1, isr=(0, 1)))
    for i in range(20):
        leader.append_records_to_leader(batch(b"v%03d" % i + b"x" * 100), 1)
    assert len(leader.log.segments) > 3
    fetched = fetch(leader, 1, 0).records
    assert len(fetched) > 600  # more than one segment's worth in one fetch
    follower.append_as_follower(fetched)
    assert follower.log_end_offset == leader.log_end_offset == 20
    assert follower.log.read(0, 1 << 20).read_bytes() == leader.log.read(0, 1 << 20).read_bytes()


@pytest.mark.spec("ISR-4", "ISR-5")
def test_a_leader_that_stays_leader_keeps_its_followers_progress(tmp_path, clock):
    """The controller shrinks the ISR with a new leader epoch (a follower died) and the same
    broker leads on: what it knew of the caught-up follower still counts, so the HW moves
    at once instead of waiting for a fetch that changes that follower's position (Kafka:
    `Partition.makeLeader` resets followers only when `isNewLeader`)."""
    leader = replica(tmp_path, 0, clock)
    leader.make_leader(state(0, 0))
    leader.append_records_to_leader(batch(b"a"), 1)
    fetch(leader, 1, 1)  # broker 1 has offset 0; broker 2 never fetched: the HW holds at 0
    assert leader.high_watermark == 0
    leader.make_leader(state(0, 1, isr=(0, 1)))  # broker 2 left the ISR, 0 still leads
    assert leader.high_watermark == 1


@pytest.mark.spec("REPL-13")
def test_a_high_watermark_outside_the_log_is_a_bug_caught_at_once(tmp_path, clock):
    leader = replica(tmp_path, 0, clock)
    leader.make_leader(state(0, 1, isr=(0,)))
    leader.append_records_to_leader(batch(b"a"), required_acks=1)
    assert leader.high_watermark == 1 == leader.log_end_offset
    with pytest.raises(AssertionError, match="outside"):
        leader.update_high_watermark(2)  # past the LEO
    leader.append_records_to_leader(batch(b"b"), required_acks=1)
    leader.log.delete_records_before(2)
    with pytest.raises(AssertionError, match="outside"):
        leader.update_high_watermark(1)  # below the log start offset
    assert leader.high_watermark == 2


@pytest.mark.spec("ISR-8")
def test_an_isr_outside_the_replicas_or_without_its_leader_is_refused(tmp_path, clock):
    p = replica(tmp_path, 0, clock)
    with pytest.raises(AssertionError, match=r"ISR-8.*not in the replicas"):
        p.make_leader(LeaderAndIsr("t", 0, 0, 1, (0, 3), (0, 1, 2), 0))
    with pytest.raises(AssertionError, match=r"ISR-8.*leader not in ISR"):
        p.make_leader(LeaderAndIsr("t", 0, 0, 1, (1, 2), (0, 1, 2), 0))
    p.make_leader(state(0, 1))  # a leader in its ISR, an ISR among the replicas
    assert p.isr == (0, 1, 2)
