"""Snapshots of the metadata log (spec/metadata.md META-5, META-6)."""

from __future__ import annotations

import os
import uuid

import pytest

from kafka_ref.metadata import records as r
from kafka_ref.metadata.batches import build_metadata_batch
from kafka_ref.metadata.serde import ApiMessageAndVersion
from kafka_ref.metadata.snapshot import (
    CorruptSnapshotError,
    OffsetAndEpoch,
    list_snapshots,
    parse_snapshot_name,
    read_snapshot,
    snapshot_batches,
    snapshot_file_name,
    write_snapshot,
)
from kafka_ref.record.control import ControlRecordType

RECORDS = [
    ApiMessageAndVersion.of(r.FeatureLevelRecord(name="metadata.version", feature_level=27)),
    *(
        ApiMessageAndVersion.of(r.TopicRecord(name=f"t{i}", topic_id=uuid.UUID(int=i + 1)))
        for i in range(20)
    ),
]


@pytest.mark.spec("META-5")
def test_a_snapshot_is_named_by_end_offset_and_epoch():
    assert (
        snapshot_file_name(OffsetAndEpoch(4321, 2)) == "00000000000000004321-0000000002.checkpoint"
    )
    assert parse_snapshot_name("00000000000000004321-0000000002.checkpoint.part") == (
        OffsetAndEpoch(4321, 2),
        ".checkpoint.part",
    )
    assert parse_snapshot_name("00000000000000004321.log") is None


@pytest.mark.spec("META-5")
def test_a_snapshot_is_written_through_a_part_file_then_renamed(tmp_path, monkeypatch):
    sid = OffsetAndEpoch(21, 3)
    data = snapshot_batches(sid, RECORDS, last_contained_log_timestamp=10, now=11)
    # A crash between writing and renaming: the .part is there, fsynced, and ignored.
    monkeypatch.setattr(os, "replace", lambda *a: (_ for _ in ()).throw(OSError("crash")))
    with pytest.raises(OSError, match="crash"):
        write_snapshot(str(tmp_path), sid, data)
    assert os.listdir(tmp_path) == ["00000000000000000021-0000000003.checkpoint.part"]
    assert list_snapshots(str(tmp_path)) == []
    monkeypatch.undo()
    path = write_snapshot(str(tmp_path), sid, data)
    assert sorted(os.listdir(tmp_path)) == ["00000000000000000021-0000000003.checkpoint"]
    assert list_snapshots(str(tmp_path)) == [sid]
    with open(path, "rb") as f:
        assert f.read() == data


@pytest.mark.spec("META-6")
def test_a_snapshot_opens_with_its_header_and_closes_with_its_footer(tmp_path):
    sid = OffsetAndEpoch(21, 3)
    data = snapshot_batches(
        sid, RECORDS, last_contained_log_timestamp=10, now=11, max_batch_bytes=100
    )
    snapshot = read_snapshot(write_snapshot(str(tmp_path), sid, data))
    batches = snapshot.batches
    assert len(batches) > 3  # header, several data batches, footer
    assert [t for t, _ in batches[0].control] == [
        ControlRecordType.SNAPSHOT_HEADER,
        ControlRecordType.KRAFT_VERSION,
    ]
    assert [t for t, _ in batches[-1].control] == [ControlRecordType.SNAPSHOT_FOOTER]
    assert all(not b.is_control for b in batches[1:-1])
    assert batches[0].base_offset == 0 and all(b.epoch == 3 for b in batches)
    offsets = [b.base_offset for b in batches]
    assert offsets == sorted(offsets) and batches[-1].last_offset == len(RECORDS) + 2
    assert snapshot.last_contained_log_timestamp == 10
    assert snapshot.records == RECORDS


@pytest.mark.spec("META-6")
def test_a_snapshot_without_its_header_or_footer_is_refused(tmp_path):
    sid = OffsetAndEpoch(21, 3)
    whole = snapshot_batches(sid, RECORDS, last_contained_log_timestamp=10, now=11)
    body = build_metadata_batch(RECORDS, base_offset=0, leader_epoch=3, append_time=11)
    path = os.path.join(tmp_path, snapshot_file_name(sid))
    with open(path, "wb") as f:
        f.write(body + whole)
    with pytest.raises(CorruptSnapshotError, match="first batch is not a control batch"):
        read_snapshot(path)
    with open(path, "wb") as f:
        f.write(whole + body)
    with pytest.raises(CorruptSnapshotError, match="last batch is not a snapshot footer"):
        read_snapshot(path)
