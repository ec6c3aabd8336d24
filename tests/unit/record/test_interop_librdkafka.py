"""Decoding batches written by librdkafka (through confluent-kafka), a third independent writer.

librdkafka ships an in-process mock cluster (`test.mock.num.brokers`). The producer writes
real batches into it; a hand-written Fetch v4 request reads them back as raw bytes, which
our decoder must then accept. librdkafka writes **raw** snappy where Java and kafka-python
write xerial framing (CODEC-3), and its own LZ4 frames (CODEC-4).
"""

import socket
import struct

import confluent_kafka
import pytest

from kafka_ref.record.batch import RecordBatch, iter_batch_headers, validate_batch
from kafka_ref.record.compression import LZ4_MAGIC, XERIAL_MAGIC, Compression
from kafka_ref.record.record import Header

VALUE = b"value that repeats itself " * 5
COUNT = 20


def _fetch_raw(host: str, port: int, topic: str, offset: int) -> bytes:
    """The records bytes of partition 0 from `offset`: one Fetch v4, parsed by hand."""
    name = topic.encode()
    body = struct.pack(">iiiib", -1, 500, 1, 1 << 20, 0)  # replica, wait, min, max, isolation
    body += struct.pack(">ih", 1, len(name)) + name + struct.pack(">iiqi", 1, 0, offset, 1 << 20)
    request = struct.pack(">hhih", 1, 4, 1, 4) + b"test" + body
    with socket.create_connection((host, port), timeout=10) as sock:
        sock.sendall(struct.pack(">i", len(request)) + request)
        (size,) = struct.unpack(">i", sock.recv(4, socket.MSG_WAITALL))
        data = sock.recv(size, socket.MSG_WAITALL)
    pos = 12  # correlation id, throttle time, topic count
    pos += 2 + struct.unpack_from(">h", data, pos)[0] + 4  # topic name, partition count
    error = struct.unpack_from(">h", data, pos + 4)[0]
    assert error == 0, f"fetch error {error}"
    pos += 22  # partition, error, high watermark, last stable offset
    pos += 4 + 16 * max(struct.unpack_from(">i", data, pos)[0], 0)  # aborted transactions
    (length,) = struct.unpack_from(">i", data, pos)
    return data[pos + 4 : pos + 4 + length]


@pytest.fixture(scope="module")
def librdkafka_batches() -> dict[str, bytes]:
    """codec name -> the raw batches librdkafka produced with that codec."""
    captured = {}
    for codec in ("none", "gzip", "snappy", "lz4", "zstd"):
        producer = confluent_kafka.Producer(
            {
                "test.mock.num.brokers": 1,
                "compression.codec": codec,
                "linger.ms": 20,
                "log_level": 0,
            }
        )
        for i in range(COUNT):
            producer.produce("t", VALUE, b"key-%d" % i, 0, headers=[("h", b"%d" % i)])
        assert producer.flush(10) == 0
        broker = next(iter(producer.list_topics(timeout=10).brokers.values()))
        raw, offset = b"", 0
        while offset < COUNT:  # the mock broker answers one batch per fetch
            fetched = _fetch_raw(broker.host, broker.port, "t", offset)
            assert fetched, f"no data at offset {offset}"
            raw += fetched
            offset = max(header.next_offset for _, header in iter_batch_headers(fetched))
        captured[codec] = raw
    return captured


@pytest.mark.spec("CODEC-2", "CODEC-3", "CODEC-4", "BATCH-3")
@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_decode_librdkafka_batches(librdkafka_batches, codec):
    raw = librdkafka_batches[codec]
    records = []
    for pos, header in iter_batch_headers(raw):
        validate_batch(raw, pos)
        assert header.compression == Compression.from_name(codec)
        records += RecordBatch(raw, pos).records()
    assert [r.offset for r in records] == list(range(COUNT))
    assert [(r.key, r.value) for r in records] == [(b"key-%d" % i, VALUE) for i in range(COUNT)]
    assert [r.headers for r in records] == [(Header("h", b"%d" % i),) for i in range(COUNT)]


@pytest.mark.spec("CODEC-3", "CODEC-4")
def test_librdkafka_snappy_is_raw_and_lz4_is_kafkas_frame(librdkafka_batches):
    snappy_body = librdkafka_batches["snappy"][61:]
    assert not snappy_body.startswith(XERIAL_MAGIC)
    lz4_body = librdkafka_batches["lz4"][61:]
    assert lz4_body[:7] == LZ4_MAGIC + b"\x60\x40\x82"
