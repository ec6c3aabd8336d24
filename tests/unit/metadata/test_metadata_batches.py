"""Metadata records in batches, and KRaft's control records (spec/metadata.md META-3, META-4)."""

from __future__ import annotations

import uuid

import pytest

from kafka_ref.errors import CorruptRecordError, InvalidRecordError
from kafka_ref.metadata import records as r
from kafka_ref.metadata.batches import (
    build_metadata_batch,
    read_metadata_batches,
    read_metadata_records,
)
from kafka_ref.metadata.serde import ApiMessageAndVersion
from kafka_ref.record.batch import RecordBatch
from kafka_ref.record.control import ControlRecordType
from kafka_ref.record.kraft_control import (
    LeaderChangeMessage,
    VotersRecord,
    build_kraft_control_batch,
    control_record,
    read_kraft_control,
)
from kafka_ref.record.record import Record

TOPIC_ID = uuid.UUID("5d7f1c86-9a3b-4a52-a6f1-3f1e3a0c1b2d")
RECORDS = [
    ApiMessageAndVersion.of(r.TopicRecord(name="clicks", topic_id=TOPIC_ID)),
    ApiMessageAndVersion.of(r.PartitionRecord(partition_id=0, topic_id=TOPIC_ID, replicas=[1])),
    ApiMessageAndVersion.of(r.NoOpRecord()),
]


@pytest.mark.spec("META-3")
def test_a_metadata_batch_is_the_leaders_no_producer_its_epoch_one_append_time():
    data = build_metadata_batch(RECORDS, base_offset=40, leader_epoch=7, append_time=1234)
    batch = RecordBatch(data)
    h = batch.header
    assert (h.producer_id, h.producer_epoch, h.base_sequence) == (-1, -1, -1)
    assert not h.is_transactional and not h.is_control
    assert h.partition_leader_epoch == 7
    assert (h.base_timestamp, h.max_timestamp, h.timestamp_type) == (1234, 1234, 0)
    records = list(batch.records())
    assert [x.offset for x in records] == [40, 41, 42]
    assert all(x.key is None and x.headers == () and x.timestamp == 1234 for x in records)

    (read,) = read_metadata_batches(data)
    assert (read.base_offset, read.last_offset, read.epoch, read.append_time) == (40, 42, 7, 1234)
    assert read.records == RECORDS and not read.is_control


@pytest.mark.spec("META-3")
def test_a_batch_failing_its_crc_is_refused():
    data = bytearray(build_metadata_batch(RECORDS, base_offset=0, leader_epoch=1, append_time=5))
    data[-2] ^= 0xFF
    with pytest.raises(CorruptRecordError, match="CRC mismatch"):
        read_metadata_records(bytes(data))


@pytest.mark.spec("META-4")
def test_kraft_control_records_have_kafkas_key_and_a_version_0_value():
    assert [t.value for t in ControlRecordType][2:] == [2, 3, 4, 5, 6]
    change = LeaderChangeMessage(
        version=0,
        leader_id=2,
        voters=[LeaderChangeMessage.Voter(voter_id=v) for v in (1, 2, 3)],
        granting_voters=[LeaderChangeMessage.Voter(voter_id=2)],
    )
    record = control_record(ControlRecordType.LEADER_CHANGE, change, 99)
    assert record.key == bytes([0, 0, 0, 2])  # version 0, LEADER_CHANGE
    # v0 flexible: version int16, leaderId int32, compact arrays of {voterId, tags}, tags
    assert record.value == bytes.fromhex("0000000000020400000001000000000200") + (
        bytes.fromhex("000000030002000000020000")
    )
    data = build_kraft_control_batch(
        [(ControlRecordType.LEADER_CHANGE, change)], base_offset=10, leader_epoch=4, timestamp=99
    )
    h = RecordBatch(data).header
    assert h.is_control and not h.is_transactional and h.producer_id == -1
    (batch,) = read_metadata_batches(data)
    assert batch.is_control and batch.epoch == 4 and batch.records == []
    assert batch.control == [(ControlRecordType.LEADER_CHANGE, change)]


@pytest.mark.spec("META-4")
def test_voters_round_trip_and_other_control_types_are_refused():
    voters = VotersRecord(
        version=0,
        voters=[
            VotersRecord.Voter(
                voter_id=1,
                voter_directory_id=uuid.UUID(int=9),
                endpoints=[VotersRecord.Endpoint(name="CONTROLLER", host="h", port=9093)],
            )
        ],
    )
    record = control_record(ControlRecordType.KRAFT_VOTERS, voters, 1)
    assert read_kraft_control(record) == (ControlRecordType.KRAFT_VOTERS, voters)
    commit = Record(bytes([0, 0, 0, 1]), bytes(6), 1)
    with pytest.raises(InvalidRecordError, match="not a KRaft type"):
        read_kraft_control(commit)
    with pytest.raises(InvalidRecordError, match="SNAPSHOT_FOOTER"):
        read_kraft_control(Record(bytes([0, 0, 0, 4]), b"\x00", 1))
