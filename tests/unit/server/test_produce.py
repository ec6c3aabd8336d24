"""Produce over the wire: acks, per-partition errors, header checks (BROKER-11, 13..16, 27..29)."""

from __future__ import annotations

import errno
import logging
import time

import pytest

from kafka_ref.errors import ErrorCode
from kafka_ref.log import file_records
from kafka_ref.protocol.messages import ApiKey, ProduceRequest
from kafka_ref.record.batch import BatchHeader
from kafka_ref.record.compression import Compression
from kafka_ref.record.legacy import build_message_set
from kafka_ref.record.record import Record
from tests.unit.server.conftest import Wire, batch, produce_body

pytestmark = pytest.mark.timeout(60)


@pytest.mark.spec("BROKER-13")
@pytest.mark.parametrize("acks", [2, -2, 5])
def test_invalid_acks(wire, acks):
    wire.create_topic("acks")
    result = wire.produce("acks", 0, batch(1), acks=acks)
    assert result.error_code == ErrorCode.INVALID_REQUIRED_ACKS
    assert wire.fetch_many([("acks", 0, 0)]).responses[0].partitions[0].high_watermark == 0


@pytest.mark.spec("BROKER-14")
@pytest.mark.parametrize("acks", [1, -1])
def test_success_carries_the_base_offset(wire, acks):
    wire.create_topic("ok")
    first = wire.produce("ok", 0, batch(5), acks=acks)
    second = wire.produce("ok", 0, batch(3), acks=acks)
    assert (first.error_code, first.base_offset) == (0, 0)
    assert (second.error_code, second.base_offset) == (0, 5)
    assert second.log_append_time_ms == -1 and second.log_start_offset == 0


@pytest.mark.spec("BROKER-14")
def test_errors_are_per_partition(wire):
    wire.create_topic("mixed", partitions=2)
    corrupt = bytearray(batch(2))
    corrupt[-1] ^= 0xFF  # the CRC no longer matches
    body = ProduceRequest(
        transactional_id=None,
        acks=-1,
        timeout_ms=1000,
        topic_data=[
            ProduceRequest.TopicProduceData(
                name="mixed",
                partition_data=[
                    ProduceRequest.PartitionProduceData(index=0, records=batch(2)),
                    ProduceRequest.PartitionProduceData(index=1, records=bytes(corrupt)),
                    ProduceRequest.PartitionProduceData(index=7, records=batch(2)),
                ],
            ),
            ProduceRequest.TopicProduceData(
                name="nope",
                partition_data=[ProduceRequest.PartitionProduceData(index=0, records=batch(1))],
            ),
        ],
    )
    response = wire.request(ApiKey.PRODUCE, 7, body)
    codes = {
        (t.name, p.index): (p.error_code, p.base_offset)
        for t in response.responses
        for p in t.partition_responses
    }
    assert codes == {
        ("mixed", 0): (0, 0),
        ("mixed", 1): (ErrorCode.CORRUPT_MESSAGE, -1),
        ("mixed", 7): (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1),
        ("nope", 0): (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1),
    }


@pytest.mark.spec("BROKER-14")
def test_message_too_large(wire):
    wire.create_topic("small", **{"max.message.bytes": "200"})
    too_large = wire.produce("small", 0, batch(1, value_size=500))
    assert too_large.error_code == ErrorCode.MESSAGE_TOO_LARGE
    assert wire.produce("small", 0, batch(1, value_size=10)).error_code == 0


@pytest.mark.spec("BROKER-11")
def test_produce_never_creates_a_topic(wire):
    assert wire.produce("ghost", 0, batch(1)).error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert wire.metadata(["ghost"], auto=False).topics[0].error_code == 3


@pytest.mark.spec("BROKER-15")
def test_failed_acks_0_produce_closes_the_connection(wire):
    wire.produce("missing", 0, batch(1), acks=0)
    assert wire.is_closed()


@pytest.mark.spec("BROKER-16")
@pytest.mark.parametrize("version", [0, 1, 2])
def test_produce_v0_to_v2_is_unsupported(wire, version):
    wire.create_topic("old")
    records = build_message_set([Record(b"k", b"v")], magic=1) if version else None
    result = wire.produce("old", 0, records, version=version)
    assert result.error_code == ErrorCode.UNSUPPORTED_VERSION


@pytest.mark.spec("BROKER-27")
def test_legacy_magic_is_an_invalid_record(wire):
    wire.create_topic("legacy")
    message_set = build_message_set([Record(b"k", b"v")], magic=1)
    assert wire.produce("legacy", 0, message_set).error_code == ErrorCode.INVALID_RECORD
    v0 = build_message_set([Record(b"k", b"v")], magic=0)
    assert wire.produce("legacy", 0, v0).error_code == ErrorCode.INVALID_RECORD


@pytest.mark.spec("BROKER-27")
def test_exactly_one_batch_per_partition(wire):
    wire.create_topic("one")
    assert wire.produce("one", 0, batch(1) + batch(1)).error_code == ErrorCode.INVALID_RECORD
    assert wire.produce("one", 0, b"").error_code == ErrorCode.INVALID_RECORD
    assert wire.produce("one", 0, None).error_code == ErrorCode.INVALID_RECORD
    assert wire.produce("one", 0, batch(2)[:-3]).error_code == ErrorCode.INVALID_RECORD


@pytest.mark.spec("BROKER-27")
def test_zstd_needs_produce_v7(wire):
    wire.create_topic("z")
    zstd = batch(3, compression=Compression.ZSTD)
    refused = wire.produce("z", 0, zstd, version=6)
    assert refused.error_code == ErrorCode.UNSUPPORTED_COMPRESSION_TYPE
    assert wire.produce("z", 0, zstd, version=7).error_code == 0
    assert wire.produce("z", 0, batch(3, compression=Compression.LZ4), version=3).error_code == 0


@pytest.mark.spec("BROKER-28")
def test_log_append_time(wire):
    wire.create_topic("lat", **{"message.timestamp.type": "LogAppendTime"})
    before = int(time.time() * 1000)
    result = wire.produce("lat", 0, batch(2, ts=5))
    after = int(time.time() * 1000)
    assert result.error_code == 0 and before <= result.log_append_time_ms <= after
    records = wire.fetch_many([("lat", 0, 0)]).responses[0].partitions[0].records
    header = BatchHeader.parse(bytes(records))
    assert header.max_timestamp == result.log_append_time_ms
    assert header.timestamp_type == 1


@pytest.mark.spec("BROKER-29")
def test_acks_all_needs_min_insync_replicas(wire):
    wire.create_topic("isr", **{"min.insync.replicas": "2"})
    assert wire.produce("isr", 0, batch(1), acks=-1).error_code == ErrorCode.NOT_ENOUGH_REPLICAS
    assert wire.produce("isr", 0, batch(1), acks=1).error_code == 0
    assert wire.fetch_many([("isr", 0, 0)]).responses[0].partitions[0].high_watermark == 1


@pytest.mark.spec("BROKER-14")
def test_a_partition_listed_twice_is_refused(broker):
    wire = Wire(broker.port)
    wire.create_topic("twice")
    body = produce_body("twice", 0, batch(1))
    body.topic_data[0].partition_data.append(
        ProduceRequest.PartitionProduceData(index=0, records=batch(1))
    )
    response = wire.request(ApiKey.PRODUCE, 7, body)
    codes = [p.error_code for p in response.responses[0].partition_responses]
    assert codes == [ErrorCode.INVALID_REQUEST, ErrorCode.INVALID_REQUEST]


@pytest.mark.spec("DUR-15")
def test_a_full_disk_is_one_error_line_per_log_directory_then_rate_limited(
    make_broker, monkeypatch, caplog
):
    broker = make_broker()
    wire = Wire(broker.port)
    wire.create_topic("disk")
    assert wire.produce("disk", 0, batch(1)).error_code == 0

    def full(fd, data, offset):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(file_records.os, "pwrite", full)
    with caplog.at_level(logging.INFO, logger="kafka_ref"):
        for _ in range(5):
            assert wire.produce("disk", 0, batch(1)).error_code == ErrorCode.KAFKA_STORAGE_ERROR
    monkeypatch.undo()
    lines = [r for r in caplog.records if "disk-0" in r.getMessage()]
    assert len(lines) == 1, [r.getMessage() for r in lines]  # not one per request
    (line,) = lines
    assert line.levelno == logging.ERROR
    log_dir = broker.broker.replica_manager.log_manager.log_dirs[0]
    assert line.getMessage().startswith(f"log directory {log_dir}: append to disk-0 failed")
    assert "bytes free" in line.getMessage()
    assert wire.produce("disk", 0, batch(1)).error_code == 0  # space again: appends again
