"""The metadata records and their serde (spec/metadata.md META-1, META-2)."""

from __future__ import annotations

import uuid

import pytest

from kafka_ref.metadata import records as r
from kafka_ref.metadata.records import METADATA_RECORDS, latest_version
from kafka_ref.metadata.serde import (
    ApiMessageAndVersion,
    MetadataParseError,
    deserialize,
    serialize,
)

TOPIC_ID = uuid.UUID("5d7f1c86-9a3b-4a52-a6f1-3f1e3a0c1b2d")


@pytest.mark.spec("META-1")
def test_every_record_has_its_kafka_api_key_and_newest_version():
    by_name = {m.name: (key, latest_version(m)) for key, m in METADATA_RECORDS.items()}
    assert by_name["RegisterBrokerRecord"] == (0, 4)
    assert by_name["TopicRecord"] == (2, 0)
    assert by_name["PartitionRecord"] == (3, 2)
    assert by_name["PartitionChangeRecord"] == (5, 2)
    assert by_name["BrokerRegistrationChangeRecord"] == (17, 3)
    assert by_name["FeatureLevelRecord"] == (12, 0)
    assert by_name["RegisterControllerRecord"] == (27, 0)
    assert len(METADATA_RECORDS) == 27
    assert all(m.is_flexible(0) for m in METADATA_RECORDS.values())


@pytest.mark.spec("META-1")
def test_partition_change_writes_only_what_changed_as_tagged_fields():
    """An ISR change and its ELR (KIP-966): the fixed fields, then tags 0 and 6 alone."""
    change = r.PartitionChangeRecord(
        partition_id=3, topic_id=TOPIC_ID, isr=[1, 2], eligible_leader_replicas=[4]
    )
    value = serialize(ApiMessageAndVersion.of(change))
    isr = bytes([0, 9, 3]) + (1).to_bytes(4, "big") + (2).to_bytes(4, "big")  # tag 0, 9 bytes
    elr = bytes([6, 5, 2]) + (4).to_bytes(4, "big")  # tag 6, 5 bytes
    fixed = (3).to_bytes(4, "big") + TOPIC_ID.bytes
    expected = bytes([1, 5, 2]) + fixed + bytes([2]) + isr + elr  # frame, 2 tags
    assert value == expected
    back = deserialize(value).message
    assert back.leader == -2 and back.replicas is None and back.last_known_elr is None


@pytest.mark.spec("META-2")
def test_the_frame_is_frame_version_api_key_version_then_the_message():
    value = serialize(ApiMessageAndVersion.of(r.TopicRecord(name="clicks", topic_id=TOPIC_ID)))
    assert value == bytes([1, 2, 0]) + bytes([7]) + b"clicks" + TOPIC_ID.bytes + bytes([0])
    assert deserialize(value) == (r.TopicRecord(name="clicks", topic_id=TOPIC_ID), 0)


@pytest.mark.spec("META-2")
@pytest.mark.parametrize("api_key", sorted(METADATA_RECORDS))
def test_every_record_round_trips_at_every_version(api_key):
    schema = METADATA_RECORDS[api_key]
    for version in schema.valid_versions:
        entry = ApiMessageAndVersion(schema(), version)
        value = serialize(entry)
        assert value[:3] == bytes([1, api_key, version])
        assert deserialize(value) == entry


@pytest.mark.spec("META-2")
@pytest.mark.parametrize(
    ("value", "says"),
    [
        (b"", "Error while reading frame version"),
        (bytes([0, 2, 0]), "frame version 0"),
        (bytes([2, 2, 0]), "unknown frame version 2"),
        (bytes([1, 99, 0]), "Unknown metadata record type 99"),
        (bytes([1, 0x80, 0x80, 0x02, 0]), "Value for type was too large"),
        (bytes([1, 2, 1]), "TopicRecord v1 is not in 0-0"),
        (bytes([1, 2, 0, 7]) + b"cli", "TopicRecord v0): TopicRecord.name"),
        (bytes([1, 20, 0, 0, 0]), "1 byte(s) of garbage after NoOpRecord v0"),
    ],
)
def test_a_value_that_cannot_be_read_is_one_clear_error(value, says):
    with pytest.raises(MetadataParseError) as caught:
        deserialize(value)
    assert says in str(caught.value)
    assert "\n" not in str(caught.value)


@pytest.mark.spec("META-2")
def test_only_metadata_records_are_framed():
    from kafka_ref.record.kraft_control import SnapshotFooterRecord

    with pytest.raises(TypeError, match="not a metadata record"):
        ApiMessageAndVersion.of(SnapshotFooterRecord(version=0))
