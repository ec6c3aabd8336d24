"""Shared strategies and helpers for the record tests (spec/record.md).

The strategies draw the awkward cases on purpose: null and empty keys and values, headers
with null values and non-ASCII keys, timestamps far apart, int32/int64 edges.
"""

from __future__ import annotations

import struct

import pytest
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.legacy_records import LegacyRecordBatchBuilder

from kafka_ref.record.batch import CRC_START
from kafka_ref.record.compression import Compression
from kafka_ref.record.record import Header, Record

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1

int32s = st.one_of(
    st.sampled_from([0, -1, 1, 63, -64, 64, INT32_MIN, INT32_MAX, INT32_MIN + 1, INT32_MAX - 1]),
    st.integers(INT32_MIN, INT32_MAX),
)
int64s = st.one_of(
    st.sampled_from([0, -1, 1, INT64_MIN, INT64_MAX, INT32_MIN - 1, INT32_MAX + 1]),
    st.integers(INT64_MIN, INT64_MAX),
)
nullable_bytes = st.one_of(st.none(), st.just(b""), st.binary(max_size=40))
header_keys = st.one_of(st.just(""), st.text(max_size=12), st.sampled_from(["ключ", "鍵", "🔑"]))
headers = st.lists(st.builds(Header, header_keys, nullable_bytes), max_size=4).map(tuple)
timestamps = st.integers(0, 2**42)
records = st.builds(Record, key=nullable_bytes, value=nullable_bytes, timestamp=timestamps)
records_with_headers = st.builds(
    Record, key=nullable_bytes, value=nullable_bytes, timestamp=timestamps, headers=headers
)
record_lists = st.lists(records_with_headers, min_size=1, max_size=8)
legacy_record_lists = st.lists(records, min_size=1, max_size=8)
codecs = st.sampled_from(list(Compression))


def without_offset(record: Record) -> Record:
    """A record as it was before it had an offset: for comparing decoded with original."""
    return Record(record.key, record.value, record.timestamp, tuple(record.headers))


def mask_leader_epoch(batch: bytes | bytearray) -> bytes:
    """The batch with partitionLeaderEpoch zeroed: kafka-python writes 0, Java -1 (BATCH-11)."""
    out = bytearray(batch)
    out[12:16] = b"\x00\x00\x00\x00"
    return bytes(out)


def recrc(batch: bytearray) -> bytearray:
    """Recompute a v2 batch's CRC after a test edits covered bytes on purpose."""
    from crc32c import crc32c

    struct.pack_into(">I", batch, 17, crc32c(bytes(batch[CRC_START:])))
    return batch


def kafka_python_v2(records, compression: int = 0, *, producer=(-1, -1, -1), txn=False) -> bytes:
    """A v2 batch built by kafka-python's DefaultRecordBatchBuilder (offsets 0..n-1)."""
    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=compression,
        is_transactional=txn,
        producer_id=producer[0],
        producer_epoch=producer[1],
        base_sequence=producer[2],
        batch_size=2**30,
    )
    for i, record in enumerate(records):
        pairs = [(h.key, h.value) for h in record.headers]
        assert builder.append(i, record.timestamp, record.key, record.value, pairs) is not None
    return bytes(builder.build())


def kafka_python_legacy(records, magic: int, compression: int = 0) -> bytes:
    """A v0/v1 message set built by kafka-python's LegacyRecordBatchBuilder."""
    builder = LegacyRecordBatchBuilder(magic=magic, compression_type=compression, batch_size=2**30)
    for i, record in enumerate(records):
        assert builder.append(i, record.timestamp, record.key, record.value) is not None
    return bytes(builder.build())


@pytest.fixture
def sample_records() -> list[Record]:
    """A small, fixed set: null key, empty value, a header with a null value, unicode."""
    return [
        Record(b"key-0", b"value-0", 1_700_000_000_000),
        Record(None, b"", 1_700_000_000_005, (Header("trace", b"abc"),)),
        Record(b"k", None, 1_699_999_999_999, (Header("ключ", None), Header("", b""))),
        Record(b"", b"x" * 300, 1_700_000_000_010),
    ]
