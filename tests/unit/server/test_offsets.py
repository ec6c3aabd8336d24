"""ListOffsets and DeleteRecords over the wire (BROKER-24, BROKER-25, BROKER-26)."""

from __future__ import annotations

import pytest

from kafka_ref.errors import ErrorCode
from kafka_ref.protocol.messages import ApiKey, DeleteRecordsRequest, ListOffsetsRequest
from tests.unit.server.conftest import T0, batch

pytestmark = pytest.mark.timeout(60)


def list_offsets(wire, topic, targets, version=3, isolation=0, replica_id=-1):
    body = ListOffsetsRequest(
        replica_id=replica_id,
        isolation_level=isolation,
        topics=[
            ListOffsetsRequest.ListOffsetsTopic(
                name=topic,
                partitions=[
                    ListOffsetsRequest.ListOffsetsPartition(partition_index=p, timestamp=t)
                    for p, t in targets
                ],
            )
        ],
    )
    parts = wire.request(ApiKey.LIST_OFFSETS, version, body).topics[0].partitions
    return [(p.error_code, p.timestamp, p.offset) for p in parts]


def delete_records(wire, topic, partition, offset, version=1):
    body = DeleteRecordsRequest(
        topics=[
            DeleteRecordsRequest.DeleteRecordsTopic(
                name=topic,
                partitions=[
                    DeleteRecordsRequest.DeleteRecordsPartition(
                        partition_index=partition, offset=offset
                    )
                ],
            )
        ],
        timeout_ms=1000,
    )
    result = wire.request(ApiKey.DELETE_RECORDS, version, body).topics[0].partitions[0]
    return result.error_code, result.low_watermark


@pytest.fixture
def timed(wire):
    """Topic "t": 3 batches of 5 records, timestamps T0+0..4, T0+100..104, T0+200..204."""
    wire.create_topic("t")
    for i in range(3):
        wire.produce("t", 0, batch(5, ts=T0 + 100 * i))
    return wire


@pytest.mark.spec("BROKER-24")
@pytest.mark.parametrize("version", [1, 2, 3])
def test_earliest_and_latest(timed, version):
    assert list_offsets(timed, "t", [(0, -2)], version) == [(0, -1, 0)]
    assert list_offsets(timed, "t", [(0, -1)], version) == [(0, -1, 15)]
    delete_records(timed, "t", 0, 7)
    assert list_offsets(timed, "t", [(0, -2)], version) == [(0, -1, 7)]
    assert list_offsets(timed, "t", [(0, -1)], version, isolation=1) == [(0, -1, 15)]


@pytest.mark.spec("BROKER-24")
def test_unknown_and_duplicate_partitions(timed):
    assert list_offsets(timed, "t", [(5, -1)]) == [(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1, -1)]
    assert list_offsets(timed, "t", [(0, -1), (0, -2)]) == [(ErrorCode.INVALID_REQUEST, -1, -1)] * 2


@pytest.mark.spec("BROKER-25")
def test_by_timestamp(timed):
    cases = [
        (T0 - 1000, (0, T0, 0)),
        (T0 + 3, (0, T0 + 3, 3)),
        (T0 + 50, (0, T0 + 100, 5)),
        (T0 + 104, (0, T0 + 104, 9)),
        (T0 + 204, (0, T0 + 204, 14)),
        (T0 + 205, (0, -1, -1)),
    ]
    for target, expected in cases:
        assert list_offsets(timed, "t", [(0, target)]) == [expected], target


@pytest.mark.spec("BROKER-25")
def test_by_timestamp_stays_below_the_high_watermark(timed, broker, monkeypatch):
    from kafka_ref.server.replica_manager import Partition

    monkeypatch.setattr(Partition, "high_watermark", property(lambda self: 10), raising=False)
    assert list_offsets(timed, "t", [(0, T0 + 200)]) == [(0, -1, -1)]
    assert list_offsets(timed, "t", [(0, -1)]) == [(0, -1, 10)]
    assert list_offsets(timed, "t", [(0, -1)], replica_id=-2) == [(0, -1, 15)]


@pytest.mark.spec("BROKER-26")
@pytest.mark.parametrize("version", [0, 1])
def test_delete_records(timed, version):
    assert delete_records(timed, "t", 0, 7, version) == (0, 7)
    low = timed.fetch_many([("t", 0, 6)]).responses[0].partitions[0]
    assert low.error_code == ErrorCode.OFFSET_OUT_OF_RANGE  # below the new log start
    assert list_offsets(timed, "t", [(0, -2)]) == [(0, -1, 7)]
    assert delete_records(timed, "t", 0, 16, version) == (ErrorCode.OFFSET_OUT_OF_RANGE, -1)
    assert delete_records(timed, "t", 0, -1, version) == (0, 15)
    assert delete_records(timed, "t", 3, 1, version)[0] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


@pytest.mark.spec("BROKER-26")
def test_delete_records_refuses_compacted_topics(wire):
    wire.create_topic("cmp", **{"cleanup.policy": "compact"})
    wire.produce("cmp", 0, batch(3))
    assert delete_records(wire, "cmp", 0, 1) == (ErrorCode.POLICY_VIOLATION, -1)
