"""Agreement with a real client's record code: kafka-python's builders and readers.

kafka-python is an independent implementation of the same formats, so byte-for-byte
agreement with its builders (BATCH-11, LEGACY-1) and decoding what it writes with every
codec (CODEC-2..CODEC-4, LEGACY-5, LEGACY-6, LEGACY-8) checks our reading of the spec
against someone else's.
"""

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kafka import codec as kp_codec
from kafka.record.default_records import DefaultRecordBatch as KpBatch
from kafka.record.legacy_records import LegacyRecordBatch as KpLegacyBatch

from kafka_ref.record.batch import RecordBatch, build_batch, validate_batch
from kafka_ref.record.compression import Compression, xxhash32
from kafka_ref.record.legacy import build_message_set, iter_messages, iter_records
from kafka_ref.record.record import Header, Record
from tests.unit.record.conftest import (
    codecs,
    kafka_python_legacy,
    kafka_python_v2,
    legacy_record_lists,
    mask_leader_epoch,
    record_lists,
    without_offset,
)

COMPRESSIBLE = [
    Record(b"key-%d" % i, b"value that repeats itself " * 8, 1_700_000_000_000 + i)
    for i in range(20)
] + [Record(None, None, 1_700_000_000_100, (Header("h", None),))]


class _XxhashShim:
    """kafka-python wants the `xxhash` package for magic-0 LZ4; ours is checked against the
    reference values in test_compression.py, so it can stand in."""

    class _Digest:
        def __init__(self, value: int) -> None:
            self.value = value

        def digest(self) -> bytes:
            return self.value.to_bytes(4, "big")

    def xxh32(self, data):
        return self._Digest(xxhash32(bytes(data)))


@pytest.fixture
def kp_xxhash(monkeypatch):
    monkeypatch.setattr(kp_codec, "xxhash", _XxhashShim())


@pytest.mark.spec("BATCH-11")
@given(record_lists)
def test_uncompressed_batch_is_byte_for_byte_kafka_pythons(records):
    theirs = kafka_python_v2(records)
    ours = build_batch(records)
    assert theirs[12:16] == b"\x00\x00\x00\x00" and ours[12:16] == b"\xff\xff\xff\xff"
    assert mask_leader_epoch(ours) == mask_leader_epoch(theirs)


@pytest.mark.spec("BATCH-11")
@given(record_lists, st.integers(0, 2**40), st.integers(0, 2**15 - 1), st.integers(0, 2**30))
def test_idempotent_and_transactional_batch_matches(records, pid, epoch, seq):
    theirs = kafka_python_v2(records, producer=(pid, epoch, seq), txn=True)
    ours = build_batch(
        records, producer_id=pid, producer_epoch=epoch, base_sequence=seq, is_transactional=True
    )
    assert mask_leader_epoch(ours) == mask_leader_epoch(theirs)


@pytest.mark.spec("CODEC-2", "CODEC-3", "CODEC-4")
@pytest.mark.parametrize("codec", [1, 2, 3, 4])
def test_decode_kafka_python_batches_with_each_codec(codec):
    batch = kafka_python_v2(COMPRESSIBLE, codec)
    header = validate_batch(batch)
    assert header.compression == codec
    assert [without_offset(r) for r in RecordBatch(batch).records()] == COMPRESSIBLE


@pytest.mark.spec("CODEC-2")
@given(record_lists, st.sampled_from([0, 1, 2, 3, 4]))
def test_decode_any_kafka_python_batch(records, codec):
    batch = kafka_python_v2(records, codec)
    validate_batch(batch)
    decoded = list(RecordBatch(batch).records())
    assert [without_offset(r) for r in decoded] == records
    assert [r.offset for r in decoded] == list(range(len(records)))


@pytest.mark.spec("BATCH-11", "CODEC-2")
@given(record_lists, codecs)
def test_kafka_python_reads_our_batches(records, codec):
    batch = KpBatch(bytearray(build_batch(records, base_offset=5, compression=codec)))
    assert batch.validate_crc()
    assert batch.compression_type == codec and batch.base_offset == 5
    theirs = list(batch)
    assert [(r.offset, r.timestamp, r.key, r.value) for r in theirs] == [
        (5 + i, r.timestamp, r.key, r.value) for i, r in enumerate(records)
    ]
    assert [list(r.headers) for r in theirs] == [
        [(h.key, h.value) for h in r.headers] for r in records
    ]


@pytest.mark.spec("LEGACY-1")
@given(legacy_record_lists, st.sampled_from([0, 1]))
def test_uncompressed_message_set_is_byte_for_byte_kafka_pythons(records, magic):
    assert build_message_set(records, magic=magic) == kafka_python_legacy(records, magic)


@pytest.mark.spec("LEGACY-5", "LEGACY-6", "LEGACY-8")
@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", [1, 2, 3])
@pytest.mark.usefixtures("kp_xxhash")
def test_decode_kafka_python_wrappers(magic, codec):
    records = [Record(r.key, r.value, r.timestamp) for r in COMPRESSIBLE]
    data = kafka_python_legacy(records, magic, codec)
    (wrapper,) = iter_messages(data)
    assert wrapper.compression == codec and wrapper.offset == 0  # a producer's wrapper
    decoded = list(iter_records(data))
    assert [r.offset for r in decoded] == list(range(len(records)))
    assert [(r.key, r.value) for r in decoded] == [(r.key, r.value) for r in records]
    if magic == 1:
        assert [r.timestamp for r in decoded] == [r.timestamp for r in records]


@pytest.mark.spec("LEGACY-6", "LEGACY-8")
@given(legacy_record_lists, st.sampled_from([0, 1]), st.sampled_from([0, 1, 2, 3]))
def test_kafka_python_reads_our_message_sets(records, magic, codec):
    original, kp_codec.xxhash = kp_codec.xxhash, _XxhashShim()  # for magic-0 LZ4
    try:
        data = build_message_set(
            records, magic=magic, compression=Compression(codec), base_offset=1000
        )
        theirs = []
        pos = 0
        while pos < len(data):
            size = int.from_bytes(data[pos + 8 : pos + 12], "big") + 12
            entry = KpLegacyBatch(bytearray(data[pos : pos + size]), magic)
            assert entry.validate_crc()
            theirs += [(r.offset, r.key, r.value) for r in entry]
            pos += size
    finally:
        kp_codec.xxhash = original
    assert theirs == [(1000 + i, r.key, r.value) for i, r in enumerate(records)]
