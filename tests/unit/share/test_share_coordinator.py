"""The share coordinator without a broker (spec/share_groups.md SHARE-70, SHARE-71,
SHARE-73..SHARE-77): its records, its fencing and refusals, its snapshots, and a coordinator
rebuilt from its log that holds what the live one held."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_ref.clock import ManualClock
from kafka_ref.errors import ErrorCode
from kafka_ref.group.group_metadata_manager import java_string_hashcode
from kafka_ref.record.batch import RecordBatch
from kafka_ref.share import share_coordinator_records as rec
from kafka_ref.share.persister import RecordState, SharePartitionKey, StateBatch
from kafka_ref.share.share_coordinator import (
    ShareCoordinator,
    ShareCoordinatorConfig,
    partition_for,
)

A, ACK, ARC = RecordState.AVAILABLE, RecordState.ACKNOWLEDGED, RecordState.ARCHIVED
TOPIC = uuid.UUID("5a8c2d1e-0000-4000-8000-000000000001")
KEY = SharePartitionKey("g1", TOPIC, 0)
OK = ErrorCode.NO_ERROR


class Harness:
    """A coordinator over an in-memory `__share_group_state` of one partition; appends are
    committed at once unless `fail_with` says otherwise."""

    def __init__(self, per_snapshot: int = 500) -> None:
        self.config = ShareCoordinatorConfig(
            num_partitions=1, snapshot_update_records_per_snapshot=per_snapshot
        )
        self.clock = ManualClock(1_000)
        self.log: list[tuple[bytes, bytes | None]] = []
        self.fail_with = OK
        self.coordinator = self.new_coordinator()

    def new_coordinator(self, records=None) -> ShareCoordinator:
        coordinator = ShareCoordinator(self.config, self.clock, self.append, self.partitions)
        coordinator.on_elected(0, list(self.log if records is None else records))
        return coordinator

    @staticmethod
    def partitions(topic_id: uuid.UUID) -> int | None:
        return 3 if topic_id == TOPIC else None

    def append(self, partition: int, batch: bytes, on_done) -> None:
        if self.fail_with == OK:
            for record in RecordBatch(batch).records():
                key, value = bytes(record.key), record.value
                self.log.append((key, None if value is None else bytes(value)))
        on_done(self.fail_with)

    # the operations, answered synchronously (every append completes at once)
    def initialize(self, state_epoch=0, start=0, key=KEY):
        out = []
        self.coordinator.initialize(key, state_epoch, start, out.append)
        return out[0][0]

    def write(self, batches=(), state_epoch=0, leader_epoch=0, start=-1, key=KEY):
        out = []
        self.coordinator.write_state(
            key, state_epoch, leader_epoch, start, tuple(batches), out.append
        )
        return out[0][0]

    def read(self, leader_epoch=0, key=KEY):
        out = []
        self.coordinator.read_state(key, leader_epoch, out.append)
        return out[0]

    def delete(self, key=KEY):
        out = []
        self.coordinator.delete_state(key, out.append)
        return out[0][0]


def state_of(coordinator: ShareCoordinator, partition: int = 0) -> dict:
    shard = coordinator.shards[partition]
    return {
        key: (
            s.state_epoch,
            s.leader_epoch,
            s.start_offset,
            s.batches,
            shard.leader_epochs.get(key),
            shard.state_epochs.get(key),
        )
        for key, s in shard.states.items()
    }


@pytest.mark.spec("SHARE-70")
def test_a_share_partition_lives_where_kafka_puts_it():
    key = SharePartitionKey("group", uuid.UUID(int=0), 7)
    assert key.coordinator_key == "group:AAAAAAAAAAAAAAAAAAAAAA:7"
    expected = abs(java_string_hashcode(key.coordinator_key)) % 50
    assert partition_for(key.coordinator_key, 50) == expected
    # computed by Java with Kafka's Uuid.ZERO_UUID: "group:" + uuid + ":7".hashCode()
    assert java_string_hashcode(key.coordinator_key) == 1389676856
    assert partition_for(key.coordinator_key, 50) == 6


@pytest.mark.spec("SHARE-71")
def test_records_have_kafkas_layout():
    key_bytes, value = rec.snapshot_record(
        KEY,
        rec.ShareGroupOffset(
            snapshot_epoch=1,
            state_epoch=2,
            leader_epoch=3,
            start_offset=10,
            create_timestamp=5,
            write_timestamp=6,
            batches=(StateBatch(10, 12, ACK, 1),),
        ),
    )
    # key: type 0, then GroupId (int16 length), TopicId (16 bytes), Partition (int32)
    assert key_bytes == b"\x00\x00" + b"\x00\x02g1" + TOPIC.bytes + b"\x00\x00\x00\x00"
    # value: version 0, flexible: epochs, SPSO, timestamps, compact array, tag buffers
    assert value == (
        b"\x00\x00"
        + b"\x00\x00\x00\x01\x00\x00\x00\x02\x00\x00\x00\x03"
        + (10).to_bytes(8, "big")
        + (5).to_bytes(8, "big")
        + (6).to_bytes(8, "big")
        + b"\x02"  # one batch (compact length + 1)
        + (10).to_bytes(8, "big")
        + (12).to_bytes(8, "big")
        + b"\x02\x00\x01\x00"  # state 2, count 1, the batch's tag buffer
        + b"\x00"  # the value's tag buffer: DeliveryCompleteCount -1 is left out
    )
    update_key, _ = rec.update_record(KEY, rec.ShareUpdate(0, 0, -1, -1, ()))
    assert update_key[:2] == b"\x00\x01" and update_key[2:] == key_bytes[2:]
    assert rec.tombstone(KEY) == (key_bytes, None)


@pytest.mark.spec("SHARE-74")
def test_a_snapshot_every_n_updates_holds_the_same_state():
    h = Harness(per_snapshot=3)
    assert h.initialize(start=0) == OK
    for i in range(7):
        assert h.write([StateBatch(i * 10, i * 10 + 4, ACK, 1)], start=i) == OK
    kinds = [rec.record_type(k) for k, _ in h.log]
    # the initial snapshot, three updates, a snapshot, three updates, a snapshot
    assert kinds == [0, 1, 1, 1, 0, 1, 1, 1]
    snapshots = [rec.decode_snapshot(v) for k, v in h.log if rec.record_type(k) == 0]
    assert [s.snapshot_epoch for s in snapshots] == [0, 1]
    # a coordinator that reads only the last snapshot and what follows has it all
    last = max(i for i, (k, _) in enumerate(h.log) if rec.record_type(k) == 0)
    assert state_of(h.new_coordinator(h.log[last:])) == state_of(h.coordinator)


@pytest.mark.spec("SHARE-75")
def test_fencing():
    h = Harness()
    assert h.initialize(state_epoch=1) == OK
    assert h.write([StateBatch(0, 4, ACK, 1)], state_epoch=1, leader_epoch=5) == OK
    assert h.write(state_epoch=1, leader_epoch=4) == ErrorCode.FENCED_LEADER_EPOCH
    assert h.write(state_epoch=0, leader_epoch=5) == ErrorCode.FENCED_STATE_EPOCH
    assert h.read(leader_epoch=4).error == ErrorCode.FENCED_LEADER_EPOCH
    # a read by a newer leader records its epoch: the old leader's writes are fenced
    state = h.read(leader_epoch=6)
    assert state.error == OK and state.batches == (StateBatch(0, 4, ACK, 1),)
    assert h.write(state_epoch=1, leader_epoch=5) == ErrorCode.FENCED_LEADER_EPOCH
    assert state_of(h.new_coordinator())[KEY][4] == 6  # the read's record is in the log
    # re-initializing below the state epoch is fenced; at or above it starts afresh
    assert h.initialize(state_epoch=0) == ErrorCode.FENCED_STATE_EPOCH
    assert h.initialize(state_epoch=2, start=100) == OK
    state = h.read(leader_epoch=6)
    assert (state.state_epoch, state.start_offset, state.batches) == (2, 100, ())


@pytest.mark.spec("SHARE-76")
def test_refusals():
    h = Harness()
    uninitialized = h.read()
    assert uninitialized.error == ErrorCode.INVALID_REQUEST
    assert uninitialized.error_message == (
        "Read operation on uninitialized share partition not allowed."
    )
    assert h.write() == ErrorCode.INVALID_REQUEST
    assert h.initialize(state_epoch=-1) == ErrorCode.INVALID_REQUEST
    assert h.initialize() == OK
    assert h.write(leader_epoch=-1) == ErrorCode.INVALID_REQUEST
    assert h.read(leader_epoch=-1).error == ErrorCode.INVALID_REQUEST
    unknown = SharePartitionKey("g1", uuid.uuid4(), 0)
    assert h.initialize(key=unknown) == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    beyond = SharePartitionKey("g1", TOPIC, 3)  # the topic has partitions 0..2
    assert h.initialize(key=beyond) == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert h.coordinator.read_summary(beyond).error == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    # a failed append changes nothing and answers a retriable coordinator error
    h.fail_with = ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert h.write([StateBatch(0, 0, ACK, 1)]) == ErrorCode.NOT_COORDINATOR
    h.fail_with = ErrorCode.REQUEST_TIMED_OUT
    assert h.write([StateBatch(0, 0, ACK, 1)]) == ErrorCode.COORDINATOR_NOT_AVAILABLE
    h.fail_with = OK
    assert h.read().batches == ()
    # a partition this coordinator does not lead: NOT_COORDINATOR
    h.coordinator.on_resigned(0)
    assert h.read().error == ErrorCode.NOT_COORDINATOR
    assert h.write() == ErrorCode.NOT_COORDINATOR
    assert h.coordinator.read_summary(KEY).error == ErrorCode.NOT_COORDINATOR


@pytest.mark.spec("SHARE-77")
def test_delete_and_summary():
    h = Harness()
    assert h.coordinator.read_summary(KEY).start_offset == -1  # never initialized
    assert h.delete() == OK and h.log == []  # nothing to delete: nothing written
    assert h.initialize(state_epoch=3, start=40) == OK
    assert h.write([StateBatch(40, 44, ACK, 1)], state_epoch=3, leader_epoch=2, start=42) == OK
    summary = h.coordinator.read_summary(KEY)
    assert (summary.state_epoch, summary.start_offset, summary.leader_epoch) == (3, 42, 2)
    assert h.delete() == OK
    assert rec.record_type(h.log[-1][0]) == 0 and h.log[-1][1] is None  # a tombstone
    assert h.read().error == ErrorCode.INVALID_REQUEST  # gone: uninitialized again
    assert KEY not in state_of(h.new_coordinator())


# ---------------------------------------------------------------------- replay == live
KEYS = [SharePartitionKey(g, TOPIC, p) for g in ("g1", "g2") for p in (0, 1)]


@st.composite
def operations(draw):
    kind = draw(st.sampled_from(["init", "write", "write", "write", "read", "delete"]))
    key = draw(st.sampled_from(KEYS))
    epoch = draw(st.integers(0, 3))
    start = draw(st.sampled_from([-1, 0, 5, 20]))
    batches = draw(
        st.lists(
            st.builds(
                lambda first, length, state, count: StateBatch(first, first + length, state, count),
                st.integers(0, 40),
                st.integers(0, 8),
                st.sampled_from([A, ACK, ARC]),
                st.integers(1, 3),
            ),
            max_size=3,
        )
    )
    return kind, key, epoch, start, tuple(batches)


@pytest.mark.spec("SHARE-73")
@settings(max_examples=150, deadline=None)
@given(st.lists(operations(), max_size=40), st.integers(1, 4))
def test_a_coordinator_rebuilt_from_its_log_holds_the_same_state(ops, per_snapshot):
    h = Harness(per_snapshot=per_snapshot)
    for kind, key, epoch, start, batches in ops:
        if kind == "init":
            h.initialize(state_epoch=epoch, start=start, key=key)
        elif kind == "write":
            h.write(batches, state_epoch=epoch, leader_epoch=epoch, start=start, key=key)
        elif kind == "read":
            h.read(leader_epoch=epoch, key=key)
        else:
            h.delete(key=key)
    live = state_of(h.coordinator)
    assert state_of(h.new_coordinator()) == live
    # as compaction would leave it per key: drop everything of a key before its last
    # snapshot (or tombstone); what remains still loads the same state
    last_snapshot = {}
    for i, (k, _) in enumerate(h.log):
        kind, key = rec.decode_key(k)
        if kind == rec.SHARE_SNAPSHOT:
            last_snapshot[key] = i
    kept = [
        (k, v) for i, (k, v) in enumerate(h.log) if i >= last_snapshot.get(rec.decode_key(k)[1], 0)
    ]
    assert state_of(h.new_coordinator(kept)) == live


@pytest.mark.spec("SHARE-72")
def test_a_write_folds_its_batches_in_and_the_spso_only_moves_forward():
    h = Harness()
    assert h.initialize(start=0) == OK
    assert h.write([StateBatch(0, 9, A, 1)], start=0) == OK
    assert h.write([StateBatch(0, 2, ACK, 1), StateBatch(5, 5, ARC, 1)], start=3) == OK
    state = h.read()
    assert state.start_offset == 3
    assert state.batches == (
        StateBatch(3, 4, A, 1),
        StateBatch(5, 5, ARC, 1),
        StateBatch(6, 9, A, 1),
    )
    assert h.write([StateBatch(6, 6, ACK, 1)], start=-1) == OK  # -1: the SPSO stays
    assert h.write([], start=1) == OK  # behind the SPSO: it stays too
    assert h.read().start_offset == 3
    assert h.read().batches[-2:] == (StateBatch(6, 6, ACK, 1), StateBatch(7, 9, A, 1))
