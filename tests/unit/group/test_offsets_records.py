"""The `__consumer_offsets` records, byte for byte as Kafka lays them out (OFFSET-9)."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafka_ref.common import OffsetAndMetadata, TopicPartition
from kafka_ref.group import offsets_records as rec
from kafka_ref.group.group_metadata import (
    COMPLETING_REBALANCE,
    EMPTY,
    PREPARE_REBALANCE,
    STABLE,
    GroupMetadata,
    MemberMetadata,
)


def s16(text: str) -> bytes:
    data = text.encode()
    return struct.pack(">h", len(data)) + data


NULL = struct.pack(">h", -1)


def b32(data: bytes) -> bytes:
    return struct.pack(">i", len(data)) + data


@pytest.mark.spec("OFFSET-9")
def test_offset_commit_key_v1_layout():
    key = rec.offset_commit_key("g", TopicPartition("topic", 7))
    assert key == struct.pack(">h", 1) + s16("g") + s16("topic") + struct.pack(">i", 7)
    assert rec.read_key(key) == rec.OffsetKey("g", TopicPartition("topic", 7))
    # version 0 keys (Kafka 0.8.2) have the same fields
    assert rec.read_key(struct.pack(">h", 0) + key[2:]) == rec.read_key(key)


@pytest.mark.spec("OFFSET-9")
def test_group_metadata_key_v2_layout():
    key = rec.group_metadata_key("my-group")
    assert key == struct.pack(">h", 2) + s16("my-group")
    assert rec.read_key(key) == rec.GroupKey("my-group")
    with pytest.raises(rec.UnknownRecordVersionError):
        rec.read_key(struct.pack(">h", 3) + s16("x"))


@pytest.mark.spec("OFFSET-9", "OFFSET-3")
def test_offset_commit_value_v3_and_v1_layouts():
    om = OffsetAndMetadata(42, leader_epoch=5, metadata="m\u00e9", commit_timestamp=1000)
    v3 = rec.offset_commit_value(om)
    assert v3 == struct.pack(">hqi", 3, 42, 5) + s16("m\u00e9") + struct.pack(">q", 1000)
    assert rec.read_offset_commit_value(v3) == om
    expiring = OffsetAndMetadata(42, metadata="m", commit_timestamp=1000, expire_timestamp=9000)
    v1 = rec.offset_commit_value(expiring)
    assert v1 == struct.pack(">hq", 1, 42) + s16("m") + struct.pack(">qq", 1000, 9000)
    assert rec.read_offset_commit_value(v1) == expiring


@pytest.mark.spec("OFFSET-9")
def test_offset_commit_value_v0_and_v2_are_read():
    v0 = struct.pack(">hq", 0, 9) + s16("x") + struct.pack(">q", 77)
    assert rec.read_offset_commit_value(v0) == OffsetAndMetadata(9, "x", commit_timestamp=77)
    v2 = struct.pack(">hq", 2, 9) + s16("") + struct.pack(">q", 78)
    assert rec.read_offset_commit_value(v2) == OffsetAndMetadata(9, commit_timestamp=78)


def _group() -> GroupMetadata:
    g = GroupMetadata("g", EMPTY, 0)
    g.transition(PREPARE_REBALANCE, 1)
    for mid, inst in (("m1", "i1"), ("m2", None)):
        g.add(
            MemberMetadata(
                mid,
                inst,
                "cid",
                "/1.2.3.4",
                300,
                100,
                "consumer",
                [("range", b"sub-" + mid.encode())],
            ),
            None,
        )
    g.init_next_generation(1234)
    assert g.is_(COMPLETING_REBALANCE)
    return g


@pytest.mark.spec("OFFSET-9")
def test_group_metadata_value_v3_layout():
    g = _group()
    value = rec.group_metadata_value(g, {"m1": b"A1"})
    members = (
        s16("m1")
        + s16("i1")
        + s16("cid")
        + s16("/1.2.3.4")
        + struct.pack(">ii", 300, 100)
        + b32(b"sub-m1")
        + b32(b"A1")
        + s16("m2")
        + NULL
        + s16("cid")
        + s16("/1.2.3.4")
        + struct.pack(">ii", 300, 100)
        + b32(b"sub-m2")
        + b32(b"")
    )
    assert value == (
        struct.pack(">h", 3)
        + s16("consumer")
        + struct.pack(">i", 1)
        + s16("range")
        + s16("m1")
        + struct.pack(">q", 1234)
        + struct.pack(">i", 2)
        + members
    )
    loaded = rec.read_group_metadata_value("g", value)
    assert loaded.state is STABLE and loaded.generation_id == 1 and loaded.leader_id == "m1"
    assert loaded.protocol_type == "consumer" and loaded.protocol_name == "range"
    assert loaded.current_state_timestamp == 1234 and loaded.static_members == {"i1": "m1"}
    m1 = loaded.members["m1"]
    assert (m1.rebalance_timeout_ms, m1.session_timeout_ms, m1.assignment) == (300, 100, b"A1")
    assert m1.metadata("range") == b"sub-m1" and m1.client_host == "/1.2.3.4"


@pytest.mark.spec("OFFSET-9")
def test_group_metadata_value_v0_and_an_empty_group():
    # v0: no rebalance timeout (it is the session timeout), no state timestamp, no instance id
    v0 = (
        struct.pack(">h", 0)
        + s16("consumer")
        + struct.pack(">i", 4)
        + s16("range")
        + s16("m")
        + struct.pack(">i", 1)
        + s16("m")
        + s16("c")
        + s16("h")
        + struct.pack(">i", 10)
        + b32(b"s")
        + b32(b"a")
    )
    g = rec.read_group_metadata_value("g", v0)
    assert g.generation_id == 4 and g.members["m"].rebalance_timeout_ms == 10
    assert g.current_state_timestamp is None
    empty = struct.pack(">h", 2) + s16("consumer") + struct.pack(">i", 5) + NULL + NULL
    empty += struct.pack(">qi", 99, 0)
    g = rec.read_group_metadata_value("g", empty)
    assert g.state is EMPTY and g.protocol_name is None and g.leader_id is None


@pytest.mark.spec("OFFSET-4", "OFFSET-5")
def test_fold_keeps_the_latest_record_per_key_and_applies_tombstones():
    tp = TopicPartition("t", 0)
    k = rec.offset_commit_key("g", tp)
    gk = rec.group_metadata_key("g")
    records = [
        (k, rec.offset_commit_value(OffsetAndMetadata(1))),
        (gk, rec.group_metadata_value(_group(), {})),
        (k, rec.offset_commit_value(OffsetAndMetadata(2))),
        (rec.offset_commit_key("h", tp), rec.offset_commit_value(OffsetAndMetadata(3))),
        (rec.offset_commit_key("h", tp), None),
        (gk, None),
        (None, b"junk"),
        (struct.pack(">h", 9) + b"future", b"record"),
    ]
    folded = rec.fold(records)
    assert folded.offsets == {"g": {tp: OffsetAndMetadata(2)}}
    assert folded.groups == {} and folded.removed_groups == {"g"}


@pytest.mark.spec("OFFSET-3", "OFFSET-9")
@given(
    offset=st.integers(-1, 2**63 - 1),
    epoch=st.integers(-1, 2**31 - 1),
    metadata=st.text(max_size=50),
    ts=st.integers(0, 2**62),
    expire=st.one_of(st.none(), st.integers(0, 2**62)),
)
def test_offset_values_round_trip(offset, epoch, metadata, ts, expire):
    om = OffsetAndMetadata(offset, metadata, epoch if expire is None else -1, ts, expire)
    assert rec.read_offset_commit_value(rec.offset_commit_value(om)) == om
