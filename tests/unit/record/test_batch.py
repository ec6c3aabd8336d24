"""v2 record batches (BATCH-1..BATCH-10, CODEC-1, CODEC-2): layout, CRC, stamping, bad input."""

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_ref.errors import (
    CorruptRecordError,
    ErrorCode,
    InvalidRecordError,
    KafkaError,
    UnsupportedCompressionTypeError,
)
from kafka_ref.record.batch import (
    ATTR_CONTROL,
    ATTR_DELETE_HORIZON,
    ATTR_TIMESTAMP_TYPE,
    ATTR_TRANSACTIONAL,
    HEADER_SIZE,
    HEADER_STRUCT,
    BatchHeader,
    RecordBatch,
    TimestampType,
    build_batch,
    iter_batch_headers,
    peek_magic,
    set_log_append_time,
    stamp_batch,
    validate_batch,
    walk_batches,
    walk_buffer,
)
from kafka_ref.record.compression import Compression, compress
from kafka_ref.record.record import MalformedRecordError, Record, encode_record
from tests.unit.record.conftest import codecs, record_lists, recrc, without_offset


def _with_body(batch: bytes, body: bytes, *, count: int | None = None) -> bytes:
    """The batch with its records section replaced (length, count and CRC fixed up)."""
    out = bytearray(batch[:HEADER_SIZE] + body)
    struct.pack_into(">i", out, 8, len(out) - 12)
    if count is not None:
        struct.pack_into(">i", out, 57, count)
    return bytes(recrc(out))


@pytest.mark.spec("BATCH-1", "BATCH-10")
def test_header_layout(sample_records):
    batch = build_batch(
        sample_records,
        base_offset=42,
        producer_id=7,
        producer_epoch=3,
        base_sequence=11,
        partition_leader_epoch=5,
    )
    fields = struct.unpack_from(">qiibIhiqqqhii", batch)
    assert fields[0] == 42 and fields[1] == len(batch) - 12 and fields[2] == 5
    assert fields[3] == 2 and peek_magic(batch) == 2
    assert fields[6] == 3  # lastOffsetDelta
    assert fields[7] == sample_records[0].timestamp  # baseTimestamp: the first record's
    assert fields[8] == max(r.timestamp for r in sample_records)
    assert fields[9:] == (7, 3, 11, 4)
    header = BatchHeader.parse(batch)
    assert (header.last_offset, header.next_offset, header.size) == (45, 46, len(batch))


@pytest.mark.spec("BATCH-10")
def test_empty_batch_has_no_timestamps():
    header = validate_batch(build_batch([], last_offset_delta=0), check_count=False)
    assert (header.base_timestamp, header.max_timestamp, header.records_count) == (-1, -1, 0)


@pytest.mark.spec("BATCH-7", "BATCH-10", "CODEC-2")
@given(
    record_lists,
    codecs,
    st.sampled_from(TimestampType),
    st.booleans(),
    st.booleans(),
    st.integers(0, 2**40),
)
def test_batch_round_trip_every_codec_and_attribute(records, codec, ts_type, txn, control, base):
    batch = build_batch(
        records,
        base_offset=base,
        compression=codec,
        timestamp_type=ts_type,
        is_transactional=txn,
        is_control=control,
        producer_id=9 if txn else -1,
    )
    header = validate_batch(batch)
    assert header.compression == codec and header.is_compressed == (codec != 0)
    assert header.timestamp_type == ts_type
    assert (header.is_transactional, header.is_control) == (txn, control)
    assert header.attributes & ~0x3F == 0  # bits 6-15 unused unless the cleaner sets 6
    decoded = list(RecordBatch(batch).records())
    assert [r.offset for r in decoded] == list(range(base, base + len(records)))
    if ts_type == TimestampType.LOG_APPEND_TIME:
        assert all(r.timestamp == header.max_timestamp for r in decoded)
    else:
        assert [without_offset(r) for r in decoded] == records


@pytest.mark.spec("BATCH-7")
def test_attribute_bits(sample_records):
    cases = {
        ATTR_TIMESTAMP_TYPE: {"timestamp_type": TimestampType.LOG_APPEND_TIME},
        ATTR_TRANSACTIONAL: {"is_transactional": True},
        ATTR_CONTROL: {"is_control": True},
        ATTR_DELETE_HORIZON: {"delete_horizon_ms": 5},
        4: {"compression": Compression.ZSTD},
    }
    for bit, kwargs in cases.items():
        header = validate_batch(build_batch(sample_records, **kwargs))
        assert header.attributes == bit
    header = validate_batch(build_batch(sample_records, delete_horizon_ms=5))
    assert header.delete_horizon_ms == 5 and header.base_timestamp == 5
    decoded = list(RecordBatch(build_batch(sample_records, delete_horizon_ms=5)).records())
    assert [r.timestamp for r in decoded] == [r.timestamp for r in sample_records]
    assert validate_batch(build_batch(sample_records)).delete_horizon_ms is None


@pytest.mark.spec("BATCH-3")
@given(record_lists, codecs, st.data())
def test_crc_covers_attributes_to_the_end(records, codec, data):
    batch = build_batch(records, compression=codec)
    i = data.draw(st.integers(0, len(batch) - 1))
    flipped = bytearray(batch)
    flipped[i] ^= data.draw(st.integers(1, 255))
    if i < 8 or 12 <= i < 16:  # baseOffset, partitionLeaderEpoch: not covered
        assert validate_batch(bytes(flipped)).crc == validate_batch(batch).crc
    else:  # batchLength moves the end; magic, the CRC itself and everything after
        with pytest.raises(CorruptRecordError) as info:
            validate_batch(bytes(flipped))
        assert info.value.code == ErrorCode.CORRUPT_MESSAGE


@pytest.mark.spec("BATCH-3")
def test_crc_is_crc32c_not_crc32(sample_records):
    import zlib

    from crc32c import crc32c

    batch = build_batch(sample_records)
    stored = struct.unpack_from(">I", batch, 17)[0]
    assert stored == crc32c(batch[21:]) != zlib.crc32(batch[21:])


@pytest.mark.spec("BATCH-4")
@given(record_lists, codecs, st.integers(0, 2**62), st.integers(-1, 2**31 - 1))
def test_stamp_batch_keeps_the_crc_valid(records, codec, offset, epoch):
    batch = bytearray(build_batch(records, compression=codec))
    before = bytes(batch[16:])
    stamp_batch(batch, 0, offset, epoch)
    header = validate_batch(bytes(batch))
    assert (header.base_offset, header.partition_leader_epoch) == (offset, epoch)
    assert bytes(batch[16:]) == before  # nothing covered by the CRC moved
    assert next(RecordBatch(bytes(batch)).records()).offset == offset


@pytest.mark.spec("BATCH-4")
def test_stamp_batch_at_a_position_in_a_larger_buffer(sample_records):
    one = build_batch(sample_records[:2])
    two = build_batch(sample_records[2:])
    buf = bytearray(one + two)
    stamp_batch(buf, len(one), 100, 7)
    positions = [
        (pos, h.base_offset, h.partition_leader_epoch) for pos, h in iter_batch_headers(buf)
    ]
    assert positions == [(0, 0, -1), (len(one), 100, 7)]
    validate_batch(bytes(buf), len(one))


@pytest.mark.spec("BATCH-9")
@given(record_lists, codecs, st.integers(0, 2**42))
def test_set_log_append_time_re_checksums(records, codec, now):
    batch = bytearray(build_batch(records, compression=codec))
    set_log_append_time(batch, 0, now)
    header = validate_batch(bytes(batch))
    assert header.timestamp_type == TimestampType.LOG_APPEND_TIME
    assert header.max_timestamp == now and header.compression == codec
    assert header.base_timestamp == records[0].timestamp  # the first create time stays
    assert {r.timestamp for r in RecordBatch(bytes(batch)).records()} == {now}


@pytest.mark.spec("BATCH-9")
def test_set_log_append_time_keeps_the_other_attribute_bits(sample_records):
    batch = bytearray(
        build_batch(
            sample_records,
            compression=Compression.LZ4,
            is_transactional=True,
            producer_id=1,
            producer_epoch=0,
            base_sequence=0,
        )
    )
    set_log_append_time(batch, 0, 99)
    assert validate_batch(bytes(batch)).attributes == 3 | ATTR_TIMESTAMP_TYPE | ATTR_TRANSACTIONAL
    with pytest.raises(CorruptRecordError):
        set_log_append_time(batch[:-1], 0, 99)


@pytest.mark.spec("BATCH-2")
@given(record_lists, st.data())
def test_truncated_batch_is_corrupt(records, data):
    batch = build_batch(records)
    cut = data.draw(st.integers(0, len(batch) - 1))
    with pytest.raises(CorruptRecordError):
        validate_batch(batch[:cut])
    with pytest.raises(CorruptRecordError):
        RecordBatch(batch[:cut])
    if cut:  # an empty buffer holds no batches, and no partial one
        with pytest.raises(CorruptRecordError):
            list(iter_batch_headers(batch[:cut]))


@pytest.mark.spec("BATCH-2")
@pytest.mark.parametrize("length", [-1, -(2**31), 0, 48, 2**31 - 1, 1000])
def test_forged_batch_lengths_are_corrupt(sample_records, length):
    batch = bytearray(build_batch(sample_records))
    struct.pack_into(">i", batch, 8, length)
    with pytest.raises(CorruptRecordError) as info:
        validate_batch(bytes(batch))
    assert info.value.code == ErrorCode.CORRUPT_MESSAGE


@pytest.mark.spec("BATCH-1", "BATCH-2")
@pytest.mark.parametrize("magic", [0, 1, 3, -1, 127])
def test_wrong_magic_is_corrupt(sample_records, magic):
    batch = bytearray(build_batch(sample_records))
    struct.pack_into(">b", batch, 16, magic)
    assert peek_magic(batch) == magic
    with pytest.raises(CorruptRecordError):
        validate_batch(bytes(batch))
    with pytest.raises(CorruptRecordError):
        peek_magic(batch[:16])


@pytest.mark.spec("BATCH-8")
@pytest.mark.parametrize(("count", "delta"), [(2, 3), (5, 3), (0, 0), (-1, 3), (4, -1)])
def test_producer_batch_offsets_must_be_dense(sample_records, count, delta):
    batch = bytearray(build_batch(sample_records))
    struct.pack_into(">i", batch, 23, delta)
    struct.pack_into(">i", batch, 57, count)
    recrc(batch)
    with pytest.raises(InvalidRecordError) as info:
        validate_batch(bytes(batch))
    assert info.value.code == ErrorCode.INVALID_RECORD


@pytest.mark.spec("BATCH-8")
def test_a_cleaned_batch_may_have_gaps(sample_records):
    kept = sample_records[1:3]
    batch = build_batch(kept, offset_deltas=[1, 2], last_offset_delta=3)
    with pytest.raises(InvalidRecordError):
        validate_batch(batch)
    header = validate_batch(batch, check_count=False)
    assert (header.records_count, header.last_offset_delta) == (2, 3)
    assert [r.offset for r in RecordBatch(batch).records()] == [1, 2]
    with pytest.raises(InvalidRecordError):
        build_batch(kept, offset_deltas=[1])


@pytest.mark.spec("BATCH-5", "BATCH-8")
@pytest.mark.parametrize("count", [-1, 3, 5, 2**31 - 1])
def test_records_count_that_lies(sample_records, count):
    batch = bytearray(build_batch(sample_records))
    struct.pack_into(">i", batch, 57, count)
    recrc(batch)
    with pytest.raises(MalformedRecordError) as info:
        list(RecordBatch(bytes(batch)).records())
    assert info.value.code == ErrorCode.INVALID_RECORD


@pytest.mark.spec("BATCH-5")
@pytest.mark.parametrize("codec", list(Compression))
def test_record_whose_declared_length_lies_inside_a_batch(codec):
    body = bytearray(encode_record(Record(b"key", b"value"), 0, 0))
    body[0] += 2  # the length varint claims one more byte than the record has
    batch = build_batch([Record(b"key", b"value")], compression=codec)
    lying = _with_body(batch, compress(codec, bytes(body)))
    validate_batch(lying)
    with pytest.raises(MalformedRecordError):
        list(RecordBatch(lying).records())


@pytest.mark.spec("BATCH-5", "BATCH-8")
def test_negative_count_in_an_empty_batch():
    batch = bytearray(build_batch([]))
    struct.pack_into(">i", batch, 57, -1)
    recrc(batch)
    with pytest.raises(MalformedRecordError, match="negative recordsCount"):
        list(RecordBatch(bytes(batch)).records())
    with pytest.raises(InvalidRecordError):
        validate_batch(bytes(batch), check_count=False)


@pytest.mark.spec("BATCH-5")
def test_bytes_left_after_the_last_record(sample_records):
    batch = build_batch(sample_records)
    with pytest.raises(MalformedRecordError, match="left after"):
        list(RecordBatch(_with_body(batch, batch[HEADER_SIZE:] + b"\x00")).records())


@pytest.mark.spec("CODEC-1")
@pytest.mark.parametrize("codec_id", [5, 6, 7])
def test_unknown_codec_is_unsupported(sample_records, codec_id):
    batch = bytearray(build_batch(sample_records))
    struct.pack_into(">h", batch, 21, codec_id)
    recrc(batch)
    with pytest.raises(UnsupportedCompressionTypeError) as info:
        validate_batch(bytes(batch))
    assert info.value.code == ErrorCode.UNSUPPORTED_COMPRESSION_TYPE
    with pytest.raises(UnsupportedCompressionTypeError):
        list(RecordBatch(bytes(batch)).records())


@pytest.mark.spec("CODEC-2")
@pytest.mark.parametrize("codec", [c for c in Compression if c])
def test_garbage_compressed_payload_is_corrupt(sample_records, codec):
    batch = build_batch(sample_records, compression=codec)
    garbage = _with_body(batch, b"\x00\x01garbage, not compressed at all" * 3)
    validate_batch(garbage)  # the CRC is fine: the producer compressed nonsense
    with pytest.raises(CorruptRecordError) as info:
        list(RecordBatch(garbage).records())
    assert info.value.code == ErrorCode.CORRUPT_MESSAGE


@pytest.mark.spec("BATCH-2", "BATCH-5", "CODEC-2")
@given(record_lists, codecs, st.data())
def test_any_mutation_behind_a_valid_crc_raises_a_kafka_error(records, codec, data):
    """The strongest form of 'typed errors only': corrupt covered bytes, re-checksum, decode."""
    batch = bytearray(build_batch(records, compression=codec))
    for _ in range(data.draw(st.integers(1, 3))):
        i = data.draw(st.integers(21, len(batch) - 1))
        batch[i] = data.draw(st.integers(0, 255))
    if data.draw(st.booleans()):
        cut = data.draw(st.integers(HEADER_SIZE, len(batch)))
        del batch[cut:]
        struct.pack_into(">i", batch, 8, len(batch) - 12)
    recrc(batch)
    try:
        validate_batch(bytes(batch), check_count=False)
        list(RecordBatch(bytes(batch)).records(max_size=1 << 20))
    except KafkaError:
        pass


@pytest.mark.spec("BATCH-2")
def test_iter_batch_headers_walks_whole_batches(sample_records):
    batches = [build_batch(sample_records[:i], base_offset=10 * i) for i in (1, 2, 3)]
    buf = b"".join(batches)
    walked = list(iter_batch_headers(buf))
    assert [pos for pos, _ in walked] == [0, len(batches[0]), len(batches[0]) + len(batches[1])]
    assert [h.base_offset for _, h in walked] == [10, 20, 30]
    with pytest.raises(CorruptRecordError):
        list(iter_batch_headers(buf + batches[0][:30]))


@pytest.mark.spec("BATCH-13")
@settings(max_examples=50, deadline=None, derandomize=True, database=None)
@given(
    counts=st.lists(st.integers(1, 5), min_size=1, max_size=12),
    chunk_size=st.integers(1, 400),
    cut=st.integers(0, 60),
)
def test_walking_in_chunks_finds_what_walking_the_buffer_finds(counts, chunk_size, cut):
    batches, offset = [], 0
    for count in counts:
        records = [Record(None, b"v" * count, timestamp=0) for _ in range(count)]
        batches.append(build_batch(records, base_offset=offset))
        offset += count
    buf = b"".join(batches)
    whole = [(s.position, s.size, s.fields) for s in walk_buffer(buf, header=HEADER_STRUCT)]
    chunked = walk_batches(
        lambda pos, n: buf[pos : pos + n], 0, len(buf), header=HEADER_STRUCT, chunk_size=chunk_size
    )
    assert [(s.position, s.size, s.fields) for s in chunked] == whole
    assert [p for p, _, _ in whole] == [sum(map(len, batches[:i])) for i in range(len(batches))]
    assert [f[0] for _, _, f in whole] == [sum(counts[:i]) for i in range(len(counts))]
    torn = buf[: len(buf) - 1 - cut % (len(batches[-1]) - 1)]  # the last batch cut short
    assert len(list(walk_buffer(torn, partial_tail=True))) == len(batches) - 1
    with pytest.raises(CorruptRecordError):
        list(walk_buffer(torn))
