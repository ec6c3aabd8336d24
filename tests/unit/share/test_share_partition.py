"""The share-partition's state machine: examples, then properties over random histories.

The properties run random sequences of fetches by three members, acknowledgements of every
type, clock moves, lock expiries, members leaving and state writes against a log of batches
with holes (compacted offsets), and check them against a model that knows only what the
share-partition answered: which member holds which offset, with which delivery count, and
which offsets are done.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafka_ref.clock import ManualClock
from kafka_ref.errors import ErrorCode
from kafka_ref.share.persister import RecordState, ShareState, StateBatch
from kafka_ref.share.share_partition import (
    AcknowledgementBatch,
    AcknowledgeType,
    AcquiredRecords,
    AcquireMode,
    FetchedBatch,
    SharePartition,
    SharePartitionConfig,
)

LIMIT, LOCK_MS = 3, 1000
CONFIG = SharePartitionConfig(
    delivery_count_limit=LIMIT, record_lock_duration_ms=LOCK_MS, max_record_locks=12
)
MEMBERS = ("m1", "m2", "m3")


def fresh(clock: ManualClock, start: int = 0, config: SharePartitionConfig = CONFIG):
    return SharePartition.from_state(ShareState(), start, config, clock)


def batches(*ranges: tuple[int, int]) -> list[FetchedBatch]:
    return [FetchedBatch(first, last) for first, last in ranges]


def ack(first: int, last: int, kind: AcknowledgeType) -> AcknowledgementBatch:
    return AcknowledgementBatch(first, last, (int(kind),))


@pytest.mark.spec("SHARE-2", "SHARE-3")
def test_acquire_hands_each_record_to_one_member_with_a_delivery_count():
    clock = ManualClock()
    sp = fresh(clock)
    log = batches((0, 3), (4, 9))
    assert sp.acquire("m1", log, max_records=3, bound=10) == [AcquiredRecords(0, 3, 1)]
    assert sp.acquire("m2", log, max_records=3, bound=10) == [AcquiredRecords(4, 9, 1)]
    assert sp.acquire("m1", log, max_records=3, bound=10) == []  # nothing AVAILABLE
    assert sp.end_offset == 10
    # record-limit mode (ShareFetch v2) stops at MaxRecords inside a batch
    sp2 = fresh(clock)
    got = sp2.acquire("m1", log, max_records=3, bound=10, mode=AcquireMode.RECORD_LIMIT)
    assert got == [AcquiredRecords(0, 2, 1)]


@pytest.mark.spec("SHARE-1", "SHARE-3")
def test_acquisition_stops_at_the_bound_and_the_in_flight_window():
    clock = ManualClock()
    sp = fresh(clock, config=SharePartitionConfig(5, LOCK_MS, max_record_locks=4))
    assert sp.acquire("m1", batches((0, 9)), max_records=100, bound=3) == [AcquiredRecords(0, 2, 1)]
    assert sp.acquire("m1", batches((0, 9)), max_records=100, bound=10) == [
        AcquiredRecords(3, 3, 1)
    ]
    assert not sp.can_acquire()


@pytest.mark.spec("SHARE-4", "SHARE-5")
def test_acknowledge_types_and_the_start_offset():
    clock = ManualClock()
    sp = fresh(clock)
    sp.acquire("m1", batches((0, 4)), max_records=10, bound=5)
    # per-offset types: accept, gap, reject, release, accept
    kinds = (1, 0, 3, 2, 1)
    assert sp.acknowledge("m2", [AcknowledgementBatch(0, 4, kinds)]) == (
        ErrorCode.INVALID_RECORD_STATE
    )
    assert sp.acknowledge("m1", [AcknowledgementBatch(0, 4, (1, 9, 1, 1, 1))]) == (
        ErrorCode.INVALID_RECORD_STATE
    )
    assert sp.acknowledge("m1", [AcknowledgementBatch(0, 4, (1, 1))]) == ErrorCode.INVALID_REQUEST
    assert sp.acknowledge("m1", [AcknowledgementBatch(0, 4, kinds)]) == ErrorCode.NO_ERROR
    assert sp.start_offset == 3  # 0 acknowledged, 1 and 2 archived, 3 available again
    assert sp.records[3].state is RecordState.AVAILABLE
    assert sp.records[4].state is RecordState.ACKNOWLEDGED
    assert sp.acknowledge("m1", [ack(3, 3, AcknowledgeType.ACCEPT)]) == (
        ErrorCode.INVALID_RECORD_STATE  # released: no longer held
    )
    # below the SPSO: done already, ignored; past the SPEO: never delivered
    assert sp.acknowledge("m1", [ack(0, 0, AcknowledgeType.REJECT)]) == ErrorCode.NO_ERROR
    assert sp.acknowledge("m1", [ack(5, 5, AcknowledgeType.ACCEPT)]) == ErrorCode.INVALID_REQUEST


@pytest.mark.spec("SHARE-6")
def test_an_expired_lock_makes_the_record_available_until_the_delivery_limit():
    clock = ManualClock()
    sp = fresh(clock)
    for delivery in range(1, LIMIT + 1):
        assert sp.acquire("m1", batches((0, 0)), max_records=1, bound=1) == [
            AcquiredRecords(0, 0, delivery)
        ]
        clock.advance(LOCK_MS - 1)
        assert not sp.expire_locks()
        clock.advance(1)
        assert sp.expire_locks()
    assert sp.start_offset == 1  # archived at the limit: done
    assert sp.acquire("m1", batches((0, 0)), max_records=1, bound=1) == []


@pytest.mark.spec("SHARE-6", "SHARE-12")
def test_renew_extends_the_lock_and_a_leaving_member_releases_what_it_holds():
    clock = ManualClock()
    sp = fresh(clock)
    sp.acquire("m1", batches((0, 1)), max_records=10, bound=2)
    clock.advance(LOCK_MS - 1)
    assert sp.acknowledge("m1", [ack(0, 0, AcknowledgeType.RENEW)]) == ErrorCode.NO_ERROR
    clock.advance(1)
    assert sp.expire_locks()
    assert sp.acquired_by("m1") == [0]
    assert sp.release_member("m1")
    assert sp.acquired_by("m1") == []
    assert sp.acquire("m2", batches((0, 1)), max_records=10, bound=2) == [AcquiredRecords(0, 1, 2)]


@pytest.mark.spec("SHARE-8")
def test_aborted_batches_are_archived_not_delivered():
    clock = ManualClock()
    sp = fresh(clock)
    log = [FetchedBatch(0, 1), FetchedBatch(2, 3, aborted=True), FetchedBatch(4, 5)]
    assert sp.acquire("m1", log, max_records=10, bound=6) == [
        AcquiredRecords(0, 1, 1),
        AcquiredRecords(4, 5, 1),
    ]
    sp.acknowledge("m1", [ack(0, 1, AcknowledgeType.ACCEPT)])
    assert sp.start_offset == 4


@pytest.mark.spec("SHARE-9")
def test_state_round_trip_and_an_unstarted_state():
    clock = ManualClock()
    assert fresh(clock, start=42).start_offset == 42  # SPSO -1: share.auto.offset.reset's
    state = ShareState(
        state_epoch=1,
        start_offset=10,
        leader_epoch=3,
        batches=(
            StateBatch(8, 11, RecordState.ARCHIVED, 1),
            StateBatch(12, 12, RecordState.AVAILABLE, 2),
            StateBatch(14, 15, RecordState.ACKNOWLEDGED, 1),
        ),
    )
    sp = SharePartition.from_state(state, 0, CONFIG, clock)
    assert (sp.start_offset, sp.end_offset) == (12, 16)
    assert sp.next_fetch_offset() == 12
    got = sp.acquire("m1", batches((12, 12), (14, 17)), max_records=10, bound=18)
    assert got == [AcquiredRecords(12, 12, 3), AcquiredRecords(16, 17, 1)]
    assert sp.snapshot().batches == (
        StateBatch(12, 12, RecordState.AVAILABLE, 3),
        StateBatch(14, 15, RecordState.ACKNOWLEDGED, 1),
        StateBatch(16, 17, RecordState.AVAILABLE, 1),
    )


@pytest.mark.spec("SHARE-11")
def test_a_log_start_past_the_start_offset_drops_the_records_below_it():
    clock = ManualClock()
    sp = fresh(clock)
    sp.acquire("m1", batches((0, 9)), max_records=10, bound=10)
    sp.move_start(4)
    assert (sp.start_offset, sp.acquired_by("m1")) == (4, [4, 5, 6, 7, 8, 9])
    assert sp.take_changes()[0] == 4
    sp.move_start(2)  # never backwards
    assert sp.start_offset == 4
    sp.move_start(20)  # past everything delivered: the end moves too
    assert (sp.start_offset, sp.end_offset, sp.records) == (20, 20, {})


# -- properties over random histories -----------------------------------------------------


@st.composite
def logs(draw) -> list[FetchedBatch]:
    """Batches over offsets 0..~40, some offsets missing (compacted away), a few aborted."""
    out, offset = [], 0
    for _ in range(draw(st.integers(3, 10))):
        offset += draw(st.sampled_from([0, 0, 0, 1, 2]))  # a hole before the batch
        size = draw(st.integers(1, 4))
        out.append(FetchedBatch(offset, offset + size - 1, draw(st.booleans()) and size == 1))
        offset += size
    return out


OPS = st.one_of(
    st.tuples(st.just("fetch"), st.sampled_from(MEMBERS), st.integers(1, 6), st.booleans()),
    st.tuples(
        st.just("ack"),
        st.sampled_from(MEMBERS),
        st.integers(0, 40),
        st.integers(0, 3),
        st.sampled_from([0, 1, 2, 3, 4, 7]),
    ),
    st.tuples(st.just("clock"), st.integers(0, LOCK_MS)),
    st.tuples(st.just("expire")),
    st.tuples(st.just("leave"), st.sampled_from(MEMBERS)),
    st.tuples(st.just("write")),
)


class Model:
    """What the share-partition's answers imply: holders, delivery counts, done offsets."""

    def __init__(self) -> None:
        self.holder: dict[int, tuple[str, int]] = {}  # offset -> (member, lock deadline)
        self.count: dict[int, int] = {}
        self.done: set[int] = set()

    def released(self, offset: int) -> None:
        del self.holder[offset]
        if self.count[offset] >= LIMIT:
            self.done.add(offset)


def run(sp: SharePartition, clock: ManualClock, log, ops, on_write=None) -> Model:
    model = Model()
    for op in ops:
        if op[0] == "fetch":
            _, member, max_records, strict = op
            mode = AcquireMode.RECORD_LIMIT if strict else AcquireMode.BATCH_OPTIMIZED
            start = sp.next_fetch_offset()
            fetched = [b for b in log if b.last_offset >= start]
            for b in fetched:  # aborted records are archived when first read
                if b.aborted:
                    model.done.update(range(b.first_offset, b.last_offset + 1))
            for run_ in sp.acquire(member, fetched, max_records, bound=10_000, mode=mode):
                for offset in range(run_.first_offset, run_.last_offset + 1):
                    # SHARE-2: never handed out while another lock on it holds
                    assert offset not in model.holder, (offset, model.holder[offset])
                    assert offset not in model.done
                    model.count[offset] = model.count.get(offset, 0) + 1
                    assert run_.delivery_count == model.count[offset]
                    model.holder[offset] = (member, clock.milliseconds() + LOCK_MS)
        elif op[0] == "ack":
            _, member, pick, length, kind = op
            held = sorted(o for o, (m, _) in model.holder.items() if m == member)
            first = held[pick % len(held)] if held and pick < 35 else pick  # mostly its own
            last = first + length
            start, end = sp.start_offset, sp.end_offset
            error = sp.acknowledge(member, [AcknowledgementBatch(first, last, (kind,))])
            named = range(first, last + 1)
            held = [o for o in named if o >= start]  # below the SPSO: done, ignored
            mine = all(model.holder.get(o, ("",))[0] == member for o in held)
            known = kind in AcknowledgeType._value2member_map_
            delivered = all(o < end for o in named)
            assert (error == ErrorCode.NO_ERROR) == (mine and known and delivered), (op, error)
            if error == ErrorCode.NO_ERROR:
                for offset in held:
                    if kind == AcknowledgeType.RENEW:
                        model.holder[offset] = (member, clock.milliseconds() + LOCK_MS)
                    elif kind == AcknowledgeType.RELEASE:
                        model.released(offset)
                    else:
                        del model.holder[offset]
                        model.done.add(offset)
        elif op[0] == "clock":
            clock.advance(op[1])
        elif op[0] == "expire":
            sp.expire_locks()
            for offset, (_, deadline) in list(model.holder.items()):
                if deadline <= clock.milliseconds():
                    model.released(offset)
        elif op[0] == "leave":
            sp.release_member(op[1])
            for offset, (member, _) in list(model.holder.items()):
                if member == op[1]:
                    model.released(offset)
        elif op[0] == "write" and on_write is not None:
            on_write(sp)
        check_invariants(sp, model)
    return model


def check_invariants(sp: SharePartition, model: Model) -> None:
    for offset, (member, _) in model.holder.items():
        record = sp.records[offset]
        assert record.state is RecordState.ACQUIRED and record.member_id == member
    for offset, record in sp.records.items():
        assert record.delivery_count <= LIMIT, (offset, record)  # SHARE-5
        if record.delivery_count == LIMIT and record.state is not RecordState.ACQUIRED:
            assert record.state in (RecordState.ARCHIVED, RecordState.ACKNOWLEDGED), record
    # SHARE-7: the SPSO never passes an offset that was delivered and is not done
    pending = set(model.count) - model.done
    assert all(offset >= sp.start_offset for offset in pending), (pending, sp.start_offset)


@pytest.mark.spec("SHARE-2", "SHARE-5")
@given(log=logs(), ops=st.lists(OPS, min_size=20, max_size=80))
def test_no_record_is_held_twice_and_the_delivery_limit_archives(log, ops):
    clock = ManualClock()
    model = run(fresh(clock), clock, log, ops)
    assert all(count <= LIMIT for count in model.count.values())


@pytest.mark.spec("SHARE-7")
@given(log=logs(), ops=st.lists(OPS, min_size=20, max_size=80))
def test_the_start_offset_passes_only_done_records(log, ops):
    clock = ManualClock()
    sp = fresh(clock)
    model = run(sp, clock, log, ops)
    # and it does pass them: every offset below the first pending one is behind the SPSO
    pending = set(model.count) - model.done
    first_pending = min(pending, default=sp.end_offset)
    assert sp.start_offset == min(first_pending, sp.next_fetch_offset(), sp.end_offset)


@pytest.mark.spec("SHARE-51")
def test_the_delivery_complete_count_is_the_done_records_above_the_start_offset():
    """Kafka 4.4's measured steps (tests/apache/test_share_lag.py): accepted out of order,
    the done records wait above the start offset in the count; passed, they leave it."""
    clock = ManualClock()
    sp = fresh(clock)
    sp.acquire("m1", batches((0, 9)), max_records=10, bound=10)
    assert (sp.start_offset, sp.delivery_complete_count) == (0, 0)
    sp.acknowledge("m1", [ack(5, 9, AcknowledgeType.ACCEPT)])  # 0-4 still acquired
    assert (sp.start_offset, sp.delivery_complete_count) == (0, 5)
    sp.acknowledge("m1", [ack(0, 1, AcknowledgeType.REJECT)])  # archived, then passed
    assert (sp.start_offset, sp.delivery_complete_count) == (2, 5)
    sp.acknowledge("m1", [ack(2, 3, AcknowledgeType.RELEASE)])  # available: not done
    assert (sp.start_offset, sp.delivery_complete_count) == (2, 5)
    sp.acquire("m1", batches((0, 9)), max_records=10, bound=10)
    sp.acknowledge("m1", [ack(2, 4, AcknowledgeType.ACCEPT)])
    assert (sp.start_offset, sp.delivery_complete_count) == (10, 0)
    # the lag the admin tells from them: high watermark 10, every record done
    assert 10 - sp.start_offset - sp.delivery_complete_count == 0


@pytest.mark.spec("SHARE-51")
@given(log=logs(), ops=st.lists(OPS, min_size=20, max_size=80))
def test_the_delivery_complete_count_counts_what_is_done_and_survives_a_write(log, ops):
    clock = ManualClock()
    sp = fresh(clock)
    store = MergingStore()
    model = run(sp, clock, log, ops, on_write=store.write)
    done = {o for o in model.done if sp.start_offset <= o < sp.end_offset}
    assert sp.delivery_complete_count == len(done), (done, sp.records)
    store.write(sp)  # a new leader reading the written state counts the same
    rebuilt = SharePartition.from_state(store.read(), 0, CONFIG, clock)
    assert rebuilt.delivery_complete_count == sp.delivery_complete_count


class MergingStore:
    """A persister's merge of WriteShareGroupState's changed batches, offset by offset."""

    def __init__(self) -> None:
        self.start = -1
        self.states: dict[int, tuple[RecordState, int]] = {}

    def write(self, sp: SharePartition) -> None:
        start, changed = sp.take_changes()
        self.start = start
        for batch in changed:
            for offset in range(batch.first_offset, batch.last_offset + 1):
                self.states[offset] = (batch.delivery_state, batch.delivery_count)
        self.states = {o: s for o, s in self.states.items() if o >= start}

    def read(self) -> ShareState:
        batches = tuple(
            StateBatch(o, o, state, count) for o, (state, count) in sorted(self.states.items())
        )
        return ShareState(start_offset=self.start, batches=batches)


@pytest.mark.spec("SHARE-9")
@given(log=logs(), ops=st.lists(OPS, min_size=20, max_size=80))
def test_written_state_reads_back_equivalent_with_acquisitions_available(log, ops):
    clock = ManualClock()
    sp = fresh(clock)
    store = MergingStore()
    run(sp, clock, log, ops, on_write=store.write)
    store.write(sp)
    for rebuilt_from in (store.read(), sp.snapshot()):
        rebuilt = SharePartition.from_state(rebuilt_from, 0, CONFIG, clock)
        assert rebuilt.start_offset == sp.start_offset
        assert rebuilt.next_fetch_offset() <= sp.next_fetch_offset()
        for offset, record in sp.records.items():
            again = rebuilt.records[offset]
            expected = (
                RecordState.AVAILABLE if record.state is RecordState.ACQUIRED else record.state
            )
            assert (again.state, again.delivery_count) == (expected, record.delivery_count)
            assert again.member_id is None
        assert set(rebuilt.records) == set(sp.records)
